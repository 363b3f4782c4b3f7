"""FlussError and ErrorCode, shaped exactly like pyfluss's (``str(e)`` == ``"FlussError(code=7): msg"``)."""
from __future__ import annotations

from . import error_codes as _table


class FlussError(Exception):
    """Every failure reaches the user as this: a message naming what failed where, and a code.

    ``error_code`` is the server's code (-1 or > 0) or ``ErrorCode.CLIENT_ERROR`` (-2) for failures
    detected in the client.
    """

    # Class-level defaults, as pyfluss's FlussError exposes both names on the class too.
    message: str = ""
    error_code: int = _table.CLIENT_ERROR

    def __init__(self, message: str, error_code: int = _table.CLIENT_ERROR):
        super().__init__(message, error_code)
        self.message = message
        self.error_code = error_code

    @property
    def is_retriable(self) -> bool:
        """Whether the same request may succeed if sent again (network errors, leader changes, timeouts).

        The client already retries these where it can; this tells callers which remaining errors are
        worth retrying themselves.
        """
        return _table.is_retriable(self.error_code)

    def __str__(self) -> str:
        if self.error_code == _table.CLIENT_ERROR:
            return f"FlussError: {self.message}"
        return f"FlussError(code={self.error_code}): {self.message}"

    def __repr__(self) -> str:
        return f"FlussError({self.message!r}, {self.error_code})"

    def __reduce__(self):
        # Spark ships exceptions between processes; keep them picklable.
        return (type(self), (self.message, self.error_code))

    @classmethod
    def from_code(cls, code: int, message: str | None = None) -> FlussError:
        """A `FlussError` for an error code, with the code's standard message unless one is given.

        Args:
            code: An `ErrorCode` value.
            message: The message; ``None`` for the code's default.

        Returns:
            The error (not raised).
        """
        return cls(message or _table.default_message(code), code)


class ErrorCode(_table.Errors):
    """Named constants for Fluss API error codes (every code of the server table, plus CLIENT_ERROR)."""
