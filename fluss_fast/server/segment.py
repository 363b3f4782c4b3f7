"""One log segment of a bucket: its ``.log`` file and the two sparse indexes beside it, mirrored
in memory for lookups (docs/contributing/formats.md §1.6, §1.7). Files are named by base offset::

    00000000000000000000.log         batches as appended (offsets / commit timestamp filled in)
    00000000000000000000.index       sparse offset index, big-endian [int32 rel offset][int32 position]
    00000000000000000000.timeindex   big-endian [int64 timestamp][int32 rel offset]
"""
from __future__ import annotations

import array
import bisect
import contextlib
import os
import struct
from collections.abc import Iterator

from ..codec.log import logbatch

DEFAULT_INDEX_INTERVAL_BYTES = 4096      # log.index.interval-size

INDEX_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
BATCH_PREFIX = struct.Struct("<qi")       # BaseOffset, Length
_SCAN_WINDOW = 64 << 10

_EMPTY = b""


class Segment:
    """One ``.log`` file with its two sparse indexes, mirrored in memory for lookups."""

    __slots__ = ("base_offset", "stem", "fd", "index_fd", "time_fd", "size", "next_offset",
                 "max_timestamp", "max_ts_offset", "idx_off", "idx_pos", "tidx_ts", "tidx_off",
                 "bytes_since_index")

    def __init__(self, directory: str, base_offset: int):
        self.base_offset = base_offset
        self.stem = os.path.join(directory, f"{base_offset:020d}")
        self.fd = os.open(self.stem + ".log", os.O_RDWR | os.O_CREAT, 0o644)
        self.index_fd = os.open(self.stem + ".index", os.O_RDWR | os.O_CREAT, 0o644)
        self.time_fd = os.open(self.stem + ".timeindex", os.O_RDWR | os.O_CREAT, 0o644)
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.max_ts_offset = base_offset
        self.idx_off = array.array("q")   # relative offsets (last offset of an indexed append)
        self.idx_pos = array.array("q")
        self.tidx_ts = array.array("q")
        self.tidx_off = array.array("q")  # relative offsets
        self.bytes_since_index = 0

    # -- index maintenance ------------------------------------------------------------------
    def index_entries_for(self, last_offset: int, position: int, nbytes: int, max_ts: int,
                          max_ts_offset: int) -> tuple[bytes, bytes]:
        """Index bytes to write for an append of ``nbytes`` at ``position`` (Java's rule: an entry
        when more than the interval was appended since the previous one), updating memory."""
        idx = tim = _EMPTY
        if self.bytes_since_index > DEFAULT_INDEX_INTERVAL_BYTES:
            rel = last_offset - self.base_offset
            self.idx_off.append(rel)
            self.idx_pos.append(position)
            idx = INDEX_ENTRY.pack(rel, position)
            tim = self._time_entry(max_ts, max_ts_offset)
            self.bytes_since_index = 0
        self.bytes_since_index += nbytes
        return idx, tim

    def _time_entry(self, ts: int, offset: int) -> bytes:
        if ts < 0 or (self.tidx_ts and ts <= self.tidx_ts[-1]):
            return _EMPTY
        rel = offset - self.base_offset
        self.tidx_ts.append(ts)
        self.tidx_off.append(rel)
        return TIME_ENTRY.pack(ts, rel)

    def seal(self) -> None:
        """On roll: the time index's last entry must carry the segment's max timestamp, since that
        is all a later start knows of it without scanning; bytes of a failed write past the end
        must not survive into a closed segment."""
        os.ftruncate(self.fd, self.size)
        tim = self._time_entry(self.max_timestamp, self.max_ts_offset)
        if tim:
            os.pwrite(self.time_fd, tim, len(self.tidx_ts) * TIME_ENTRY.size - TIME_ENTRY.size)

    def scan_start(self, offset: int) -> int:
        """File position from which a forward scan finds the batch holding ``offset``."""
        i = bisect.bisect_right(self.idx_off, offset - self.base_offset) - 1
        return self.idx_pos[i] if i >= 0 else 0

    def time_scan_start(self, ts: int) -> int:
        """File position from which a scan finds the first batch with commit timestamp >= ts."""
        i = bisect.bisect_left(self.tidx_ts, ts) - 1  # last entry strictly below ts
        if i < 0:
            return 0
        return self.scan_start(self.base_offset + self.tidx_off[i])

    def rewrite_indexes(self) -> None:
        idx = b"".join(INDEX_ENTRY.pack(o, p) for o, p in zip(self.idx_off, self.idx_pos, strict=True))
        tim = b"".join(TIME_ENTRY.pack(t, o) for t, o in zip(self.tidx_ts, self.tidx_off, strict=True))
        os.ftruncate(self.index_fd, 0)
        os.pwrite(self.index_fd, idx, 0)
        os.ftruncate(self.time_fd, 0)
        os.pwrite(self.time_fd, tim, 0)

    def close(self) -> None:
        for fd in (self.fd, self.index_fd, self.time_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fd = self.index_fd = self.time_fd = -1


def batch_headers(fd: int, pos: int, end: int) -> Iterator[tuple[int, object]]:
    """``(position, header)`` of the complete batches in ``[pos, end)`` of a file, reading only
    windows of headers (no CRC check). Stops at a truncated batch."""
    while end - pos >= logbatch.LOG_OVERHEAD:
        buf = os.pread(fd, min(_SCAN_WINDOW, end - pos), pos)
        consumed = 0
        for h in logbatch.iter_batches(buf):
            yield pos + h.position, h
            consumed = h.position + h.total_size
        if consumed:
            pos += consumed
            continue
        # The first batch is larger than the window (or cut off): its header is enough.
        if len(buf) < logbatch.LOG_OVERHEAD:
            return
        h = logbatch.parse_header(buf)
        if pos + h.total_size > end:
            return
        yield pos, h
        pos += h.total_size

