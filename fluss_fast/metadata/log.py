"""Positions in a table's log (the subscription constants, ``OffsetSpec``) and what a log
record means (``ChangeType``)."""
from __future__ import annotations

from enum import IntEnum

from ._args import want_int

EARLIEST_OFFSET = -2
LATEST_OFFSET = -1


class ChangeType(IntEnum):
    """Represents the type of change for a record in a log."""

    AppendOnly = 0
    Insert = 1
    UpdateBefore = 2
    UpdateAfter = 3
    Delete = 4

    def short_string(self) -> str:
        """The change type as Fluss prints it: ``+A``, ``+I``, ``-U``, ``+U`` or ``-D``."""
        return _SHORT[self]

    def __str__(self) -> str:
        return _SHORT[self]

    def __repr__(self) -> str:
        return f"ChangeType.{self.name}"

    @classmethod
    def from_byte(cls, value: int) -> ChangeType:
        """The change type stored as ``value`` in a log record.

        Args:
            value: 0 (append-only) to 4 (delete).

        Returns:
            The `ChangeType`.

        Raises:
            KeyError: ``value`` is not a change type.
        """
        return _BY_BYTE[value]


_SHORT = {0: "+A", 1: "+I", 2: "-U", 3: "+U", 4: "-D"}
_BY_BYTE = {int(c): c for c in ChangeType}


class OffsetSpec:
    """Offset specification for list_offsets(): ``earliest()``, ``latest()`` or ``timestamp(ts)``."""

    EARLIEST = 0
    LATEST = 1
    TIMESTAMP = 2

    __slots__ = ("_type", "_ts")

    def __init__(self, offset_type: int = 1, timestamp: int | None = None):
        self._type = offset_type
        self._ts = timestamp

    @staticmethod
    def earliest() -> OffsetSpec:
        """The first offset each bucket still holds (remote segments included)."""
        return OffsetSpec(OffsetSpec.EARLIEST)

    @staticmethod
    def latest() -> OffsetSpec:
        """The offset the next record will get (the end of the log)."""
        return OffsetSpec(OffsetSpec.LATEST)

    @staticmethod
    def timestamp(ts: int) -> OffsetSpec:
        """The first offset whose commit time is at or after ``ts``.

        Args:
            ts: Milliseconds since the epoch.

        Returns:
            The `OffsetSpec`.
        """
        return OffsetSpec(OffsetSpec.TIMESTAMP, want_int("ts", ts))

    @property
    def offset_type(self) -> int:
        """``OffsetSpec.EARLIEST`` (0), ``LATEST`` (1) or ``TIMESTAMP`` (2)."""
        return self._type

    @property
    def timestamp_ms(self) -> int | None:
        """The timestamp of a ``timestamp`` spec, else ``None``."""
        return self._ts

    def __repr__(self) -> str:
        if self._type == OffsetSpec.EARLIEST:
            return "OffsetSpec.earliest()"
        if self._type == OffsetSpec.LATEST:
            return "OffsetSpec.latest()"
        return f"OffsetSpec.timestamp({self._ts})"

    def __eq__(self, other):
        if not isinstance(other, OffsetSpec):
            return NotImplemented
        return self._type == other._type and self._ts == other._ts

    def __hash__(self):
        return hash((self._type, self._ts))

    def __reduce__(self):
        return (OffsetSpec, (self._type, self._ts))
