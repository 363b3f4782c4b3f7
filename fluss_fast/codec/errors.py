"""Exceptions raised by the byte codecs (shared by every module of ``fluss_fast.codec``)."""
from __future__ import annotations

from ..error_codes import Errors

# Fluss server error code of CorruptRecordException, so the server can answer with it directly.
CORRUPT_MESSAGE = Errors.CORRUPT_MESSAGE


class CorruptBatchError(ValueError):
    """A record batch (or a records blob) is malformed: bad size, magic, CRC or counts.

    ``batch_index`` and ``position`` (absolute byte offset of the offending batch) are set when the
    error concerns one batch of a blob; ``error_code`` is the Fluss error code to report.
    """

    error_code = CORRUPT_MESSAGE

    def __init__(self, message: str, *, batch_index: int | None = None,
                 position: int | None = None) -> None:
        super().__init__(message)
        self.batch_index = batch_index
        self.position = position

    def __reduce__(self):
        # keyword-only attributes are not in ``args``; keep them across pickling (multiprocessing)
        return (_rebuild, (type(self), str(self), self.batch_index, self.position))


def _rebuild(cls, message, batch_index, position):
    return cls(message, batch_index=batch_index, position=position)
