"""The cursors of SCAN_KV (and the value batches of SCAN_KV and LIMIT_SCAN answers), read in chunks.

A cursor reads its bucket's RocksDB snapshot through rocksdict's value iterator a chunk of values
at a time (one call into the binding per chunk, not four per row; ``Scanner`` says how many) and
cuts each answer from the chunk with running sums (``itertools.accumulate`` and ``bisect``): no
Python statement runs per row. The answers are the same bytes as a row-by-row cursor's: an answer
holds whole rows, at least one, and no more than fit in the request's ``batch_size_bytes`` (each
row counted with its 4-byte length).

The value batches are joined from the stored values without decoding one
(``codec.kv.valuebatch.stored_value_batch_parts``).
"""
from __future__ import annotations

import time
from bisect import bisect_right
from itertools import accumulate, islice, repeat
from operator import add

from ..codec.kv.valuebatch import stored_value_batch_parts
from ..codec.wire.varint import encode_varint
from .kvstore import FIRST_KEY

__all__ = ["READ_CHUNK", "Scanner", "scan_answer"]

READ_CHUNK = 8192  # at most this many values per call into the binding
FIRST_READ = 8  # values of a cursor's first read, before it knows their size


_RECORDS_TAG = b"\x2a"  # ScanKvResponse.records: field 5, length-delimited


def scan_answer(resp, values: list[bytes]) -> bytes:
    """The serialized ScanKvResponse ``resp`` (no error, no records yet) with the value batch of
    ``values`` as its records: the bytes of ``resp.records = value_batch(values)`` then
    ``resp.SerializeToString()`` (fields in number order), with the values copied once instead of
    three times. ``resp`` is used up."""
    parts, size = stored_value_batch_parts(values)
    tail = b""
    if resp.HasField("log_offset"):  # field 6, after the records
        tail = type(resp)(log_offset=resp.log_offset).SerializeToString()
        resp.ClearField("log_offset")
    parts[0] = resp.SerializeToString() + _RECORDS_TAG + encode_varint(size) + parts[0]
    parts.append(tail)
    return b"".join(parts)


class Scanner:
    """A cursor over a RocksDB snapshot of one bucket (later writes do not show).

    Values are read in chunks sized by the bytes an answer still needs (the mean size of the values
    read so far says how many that is, at most ``READ_CHUNK``), so between two requests a cursor
    holds about one chunk of values it has not sent, whatever the size of its rows. (A read ahead of
    the next request, on the loop's next turn, measured no faster on two busy cores, and would keep
    up to an answer of 10 MiB per open cursor.)"""

    __slots__ = ("key", "snapshot", "_it", "_chunk", "_pos", "_mean", "_read_n", "_read_bytes", "left", "seq",
                 "touched")

    def __init__(self, key, bkv, limit: int | None):
        self.key = key
        self.snapshot = bkv.snapshot()
        self._it = self.snapshot.values(from_key=FIRST_KEY)  # past the store's applied-offset entry
        self._chunk: list[bytes] = []  # values read from the snapshot, not yet answered from _pos on
        self._pos = 0
        self._mean = 0  # mean bytes of a value read so far, with its 4-byte length (0: none read yet)
        self._read_n = self._read_bytes = 0
        self.left = limit
        self.seq = 0
        self.touched = time.monotonic()

    def _read(self, want: int) -> bool:
        """Reads values worth about ``want`` bytes (at least one) behind the unanswered ones; False
        when the snapshot (or the limit) has no more."""
        if self._it is None:
            return False
        n = FIRST_READ if not self._mean else min(READ_CHUNK, max(1, want // self._mean + 1))
        if self.left is not None:
            n = min(n, self.left - (len(self._chunk) - self._pos))
            if n <= 0:
                return False
        got = list(islice(self._it, n))
        if not got:
            self._it = None  # the end: RocksDB is not asked again
            return False
        self._read_n += len(got)
        self._read_bytes += sum(map(len, got))
        self._mean = self._read_bytes // self._read_n + 4
        if self._pos >= len(self._chunk):
            self._chunk = got
        else:
            self._chunk = self._chunk[self._pos:] + got
        self._pos = 0
        return True

    def more(self) -> bool:
        """Whether rows are left (reads one value when none is at hand)."""
        if self.left is not None and self.left <= 0:
            return False
        return self._pos < len(self._chunk) or self._read(0)

    def held(self) -> int:
        """Bytes of the values read and not answered yet."""
        return sum(map(len, self._chunk[self._pos:]))

    def take(self, size: int) -> list[bytes]:
        """The values of the next answer: at least one (when any is left), then as many as fit in
        ``size`` bytes counting 4 bytes of length with each."""
        out: list[bytes] = []
        used = 0
        while self.left is None or self.left > 0:
            if self._pos >= len(self._chunk) and not self._read(size - used):
                break
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
