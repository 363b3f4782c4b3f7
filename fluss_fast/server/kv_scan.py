"""The cursors of SCAN_KV (and the value batches of SCAN_KV and LIMIT_SCAN answers), read in chunks.

A cursor reads its bucket's RocksDB snapshot through rocksdict's value iterator a chunk of values
at a time (one call into the binding per chunk, not four per row) and cuts each answer from the
chunk with running sums (``itertools.accumulate`` and ``bisect``): no Python statement runs per row.
The answers are the same bytes as a row-by-row cursor's: an answer holds whole rows, at least one,
and no more than fit in the request's ``batch_size_bytes`` (each row counted with its 4-byte length).

A stored value is the int16 schema id and the row (``kvbatch.encode_value``), and a value batch's
record is its int32 length and those same bytes (``codec.kv.valuebatch``), so the batch is built by
joining the stored values with their lengths, without decoding a single one.
"""
from __future__ import annotations

import struct
import time
from bisect import bisect_right
from itertools import accumulate, islice, repeat
from operator import add

from ..codec.kv.valuebatch import VALUE_HEADER_SIZE, VALUE_MAGIC
from .kvstore import FIRST_KEY

__all__ = ["READ_CHUNK", "Scanner", "value_batch"]

READ_CHUNK = 8192  # values a cursor takes from RocksDB per call into the binding
_HEAD = struct.Struct("<ibi")
_LEN = struct.Struct("<i")


def value_batch(values: list[bytes]) -> bytes:
    """The value batch of stored values (int16 schema id + row each): the bytes
    ``valuebatch.build_value_batch([kvbatch.decode_value(v) for v in values])`` makes."""
    n = len(values)
    if any(len(v) < 2 for v in values):
        raise ValueError("a stored value of fewer than 2 bytes has no schema id")
    size = VALUE_HEADER_SIZE + 4 * n + sum(map(len, values))
    parts: list[bytes] = [b""] * (2 * n + 1)
    parts[0] = _HEAD.pack(size - 4, VALUE_MAGIC, n)
    parts[1::2] = list(map(_LEN.pack, map(len, values)))
    parts[2::2] = values
    return b"".join(parts)


class Scanner:
    """A cursor over a RocksDB snapshot of one bucket (later writes do not show)."""

    __slots__ = ("key", "snapshot", "_it", "_chunk", "_pos", "left", "seq", "touched")

    def __init__(self, key, bkv, limit: int | None):
        self.key = key
        self.snapshot = bkv.snapshot()
        self._it = self.snapshot.values(from_key=FIRST_KEY)  # past the store's applied-offset entry
        self._chunk: list[bytes] = []  # values read from the snapshot, not yet answered from _pos on
        self._pos = 0
        self.left = limit
        self.seq = 0
        self.touched = time.monotonic()

    def more(self) -> bool:
        """Whether rows are left (reads the next chunk when the current one is used up)."""
        if self.left is not None and self.left <= 0:
            return False
        if self._pos < len(self._chunk):
            return True
        if self._it is None:
            return False
        n = READ_CHUNK if self.left is None else min(READ_CHUNK, self.left)
        self._chunk = list(islice(self._it, n))
        self._pos = 0
        if not self._chunk:
            self._it = None  # the end: RocksDB is not asked again
            return False
        return True

    def take(self, size: int) -> list[bytes]:
        """The values of the next answer: at least one (when any is left), then as many as fit in
        ``size`` bytes counting 4 bytes of length with each."""
        out: list[bytes] = []
        used = 0
        while self.more():
            chunk, pos = self._chunk, self._pos
            end = len(chunk) if self.left is None else min(len(chunk), pos + self.left)
            avail = chunk[pos:end]
            # ends[i]: the bytes used once avail[:i] are taken (ends[0] = used)
            ends = list(accumulate(map(add, map(len, avail), repeat(4)), initial=used))
            k = bisect_right(ends, size, 1) - 1
            if k == 0 and not out:
                k = 1  # one row always goes, however large
            out += avail[:k] if k < len(avail) else avail
            used = ends[k]
            self._pos = pos + k
            if self.left is not None:
                self.left -= k
            if k < len(avail):
                break  # the next row does not fit
        return out
