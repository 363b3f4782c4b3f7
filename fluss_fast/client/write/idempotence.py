"""Idempotent writes: one writer id per writer, a batch sequence per bucket.

The server remembers the last five batches of every (writer, bucket) (docs/contributing/formats.md §1.5): a batch
whose sequence it has seen is answered as a duplicate (32) with the original offsets, a gap is
out-of-order (31), an unknown writer is 33. A retried batch therefore keeps its sequence, so a
resend after a lost acknowledgement can never be appended twice. All state lives on the runtime
thread.
"""
from __future__ import annotations

from ...codec.log.logbatch import NO_WRITER_ID

INT32_MAX = (1 << 31) - 1
#: the server's per-writer window; more in flight could not be de-duplicated
MAX_INFLIGHT_FOR_IDEMPOTENCE = 5


class _BucketSeq:
    __slots__ = ("next_seq", "last_acked")

    def __init__(self):
        self.next_seq = 0
        self.last_acked = -1


class IdempotenceManager:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.writer_id = NO_WRITER_ID
        self._buckets = {}  # (partition_id, bucket) -> _BucketSeq
        self.resets = 0

    @property
    def has_writer_id(self) -> bool:
        return self.writer_id > NO_WRITER_ID

    def set_writer_id(self, writer_id: int) -> None:
        self.writer_id = writer_id
        self._buckets.clear()

    def reset(self) -> None:
        """Forget the writer id: the next drain asks for a new one and every bucket restarts at 0."""
        self.writer_id = NO_WRITER_ID
        self._buckets.clear()
        self.resets += 1

    def _entry(self, key) -> _BucketSeq:
        e = self._buckets.get(key)
        if e is None:
            e = self._buckets[key] = _BucketSeq()
        return e

    def assign(self, batch) -> None:
        """Give ``batch`` the current writer id and the next sequence of its bucket, once."""
        if batch.writer_id == self.writer_id and batch.sequence >= 0:
            return
        e = self._entry((batch.partition_id, batch.bucket))
        batch.writer_id = self.writer_id
        batch.sequence = e.next_seq
        e.next_seq = 0 if e.next_seq == INT32_MAX else e.next_seq + 1

    def acked(self, batch) -> None:
        if batch.writer_id != self.writer_id:
            return
        e = self._entry((batch.partition_id, batch.bucket))
        if batch.sequence > e.last_acked:
            e.last_acked = batch.sequence

    def last_acked(self, batch) -> int:
        e = self._buckets.get((batch.partition_id, batch.bucket))
        return -1 if e is None else e.last_acked

    def is_next(self, batch) -> bool:
        return batch.sequence == self.last_acked(batch) + 1

    def already_committed(self, batch) -> bool:
        return batch.writer_id == self.writer_id and 0 <= batch.sequence <= self.last_acked(batch)
