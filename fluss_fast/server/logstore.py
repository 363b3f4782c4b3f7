"""Per-bucket log storage of the embedded server (docs/contributing/formats.md §1.5, §1.6, §1.7, §9.1, §10).

Layout under the log root (``DATA_DIR/log``)::

    {db}/{table}-{tableId}/log-{bucket}/                              non-partitioned
    {db}/{table}-{tableId}/{partitionName}-p{partitionId}/log-{bucket}/
        00000000000000000000.log         batches as appended (offsets / commit timestamp filled in)
        00000000000000000000.index       sparse offset index, big-endian [int32 rel offset][int32 position]
        00000000000000000000.timeindex   big-endian [int64 timestamp][int32 rel offset]
        00000000000000000000.writers.json  idempotence state as of the segment's base offset

Durability: an append is acknowledged once ``os.pwrite`` returned, i.e. the bytes sit in the OS page
cache; a SIGKILL of the server cannot lose them (a machine crash can, as with Java's default of no
fsync per append). On start every bucket log is recovered: the last segment is re-read with CRC checks,
a torn tail (partial batch / bad CRC left by a kill mid-write) is cut off, its indexes are rebuilt, and
the writer (idempotence) state is rebuilt from a snapshot plus the batches after it.

Threading: every method is called on the server's event loop. Large writes and reads may run their
``os.pwrite``/``os.pread`` in a worker thread; those threads only ever see ``os.dup``-ed descriptors so
that a concurrent drop (which closes the originals) can never make them touch a reused descriptor.
"""
from __future__ import annotations

import array
import asyncio
import bisect
import json
import logging
import os
import shutil
import struct
import threading
import time
from collections import deque
from typing import Dict, Iterator, List, Optional, Tuple

from ..codec import logbatch
from ..codec.errors import CorruptBatchError
from ..errors import FlussError
from ..rpc.errors import Errors
from ..rpc.frame_pool import FramePool

log = logging.getLogger("fluss_fast.server.log")

DEFAULT_SEGMENT_BYTES = 1 << 30          # log.segment.file-size
DEFAULT_INDEX_INTERVAL_BYTES = 4096      # log.index.interval-size
WRITER_STATE_BATCHES = 5                 # batches remembered per writer for duplicate detection
# Above this many bytes, the part of a read the page cache does not hold runs in a worker thread
# instead of on the event loop (see read_segment; the numbers below are from before cached bytes
# were copied on the loop).
# Measured on the 2-core test machine with 1 MiB produce / 4 MiB fetch frames over loopback: the
# thread version was faster both ways (fetch 1.3-1.6 vs 0.8-1.05 GB/s, ingest 0.20-0.33 vs
# 0.16-0.21 GB/s into cold page cache), since the loop keeps receiving while the copy runs; below a
# few hundred KiB the ~50 us hop costs more than it saves.
THREAD_IO_BYTES = int(os.environ.get("FLUSS_FAST_THREAD_IO_BYTES", str(256 * 1024)))
# Appends have their own threshold. Re-measured once produce payloads arrived in pooled buffers and
# were appended in place (raw replay, 8 in flight, 2-core box): inline writes cost less server CPU
# per GB than the thread hop (1 MiB frames 0.61-0.65 vs 0.67 cpu-s/GB, 1.49-1.56 vs 1.45 GB/s;
# 8 MiB frames 0.55-0.80 vs 1.04-1.30 cpu-s/GB) and were no worse into cold page cache (0.45-0.54
# vs 0.41-0.52 GB/s). The cap keeps the loop from stalling more than a few ms on one write, so
# client batches (2 MiB by default) go inline and only rare huge blobs take the thread.
THREAD_WRITE_BYTES = int(os.environ.get("FLUSS_FAST_THREAD_WRITE_BYTES", str(4 * 1024 * 1024)))

_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_PREFIX = struct.Struct("<qi")            # BaseOffset, Length
_RECOVERY_WINDOW = 8 << 20
_SCAN_WINDOW = 64 << 10
_INT32_MAX = (1 << 31) - 1

_EMPTY = b""


def now_ms() -> int:
    return int(time.time() * 1000)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


class AppendResult:
    """What one append did: offsets given to the first and last record (``duplicate``: the same
    writer batch was appended before, nothing was written and these are the original offsets)."""

    __slots__ = ("base_offset", "last_offset", "commit_timestamp", "duplicate")

    def __init__(self, base_offset: int, last_offset: int, commit_timestamp: int, duplicate: bool):
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.commit_timestamp = commit_timestamp
        self.duplicate = duplicate

    def __repr__(self) -> str:
        return (f"AppendResult(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"duplicate={self.duplicate})")


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
                          max_ts_offset: int) -> Tuple[bytes, bytes]:
        """Index bytes to write for an append of ``nbytes`` at ``position`` (Java's rule: an entry
        when more than the interval was appended since the previous one), updating memory."""
        idx = tim = _EMPTY
        if self.bytes_since_index > DEFAULT_INDEX_INTERVAL_BYTES:
            rel = last_offset - self.base_offset
            self.idx_off.append(rel)
            self.idx_pos.append(position)
            idx = _INDEX_ENTRY.pack(rel, position)
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
        return _TIME_ENTRY.pack(ts, rel)

    def seal(self) -> None:
        """On roll: the time index's last entry must carry the segment's max timestamp, since that
        is all a later start knows of it without scanning; bytes of a failed write past the end
        must not survive into a closed segment."""
        os.ftruncate(self.fd, self.size)
        tim = self._time_entry(self.max_timestamp, self.max_ts_offset)
        if tim:
            os.pwrite(self.time_fd, tim, len(self.tidx_ts) * _TIME_ENTRY.size - _TIME_ENTRY.size)

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
        idx = b"".join(_INDEX_ENTRY.pack(o, p) for o, p in zip(self.idx_off, self.idx_pos))
        tim = b"".join(_TIME_ENTRY.pack(t, o) for t, o in zip(self.tidx_ts, self.tidx_off))
        os.ftruncate(self.index_fd, 0)
        os.pwrite(self.index_fd, idx, 0)
        os.ftruncate(self.time_fd, 0)
        os.pwrite(self.time_fd, tim, 0)

    def close(self) -> None:
        for fd in (self.fd, self.index_fd, self.time_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.fd = self.index_fd = self.time_fd = -1


def _headers(fd: int, pos: int, end: int) -> Iterator[Tuple[int, object]]:
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


class WriterState:
    """Idempotence state of one writer on one bucket: its last few batches."""

    __slots__ = ("batches",)

    def __init__(self):
        # (batch_sequence, first_offset, last_offset, commit_timestamp), oldest first
        self.batches: deque = deque(maxlen=WRITER_STATE_BATCHES)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][0] if self.batches else -1

    def find(self, seq: int):
        for entry in self.batches:
            if entry[0] == seq:
                return entry
        return None


def _in_sequence(last_seq: int, seq: int) -> bool:
    return seq == last_seq + 1 or (seq == 0 and last_seq == _INT32_MAX)


class BucketLog:
    """The log of one bucket: segments, high watermark, writer state, fetch waiters.

    Single replica: the high watermark is the log end offset as soon as an append returns.
    """

    def __init__(self, directory: str, table_id: int, partition_id: Optional[int], bucket: int,
                 name: str, segment_bytes: int):
        self.dir = directory
        self.table_id = table_id
        self.partition_id = partition_id
        self.bucket = bucket
        self.name = name  # for messages: "db.table bucket 3" / "db.table partition p bucket 3"
        self.segment_bytes = segment_bytes
        self.segments: List[Segment] = []
        self._bases: List[int] = []
        self.writers: Dict[int, WriterState] = {}
        self.waiters: List[asyncio.Future] = []
        self.closed = False
        self._lock: Optional[asyncio.Lock] = None
        self._pending = 0  # appends waiting for / holding the lock; later ones must queue behind
        # first offset of recent appends -> (segment, position, size of its first batch): tail
        # readers land exactly there, so most fetches need no index lookup or header scan.
        self._recent: Dict[int, Tuple[Segment, int, int]] = {}
        self.flush_policy = None  # server.flush_policy.FlushPolicy, set by the LogManager
        self.flushed_offset = 0  # everything below is known to be fsynced
        self.unflushed_records = 0  # appended since the last fsync (FlushPolicy)
        os.makedirs(directory, exist_ok=True)
        self._recover()

    # -- properties ------------------------------------------------------------------------------
    @property
    def high_watermark(self) -> int:
        return self.segments[-1].next_offset

    log_end_offset = high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.segments[0].base_offset

    @property
    def max_timestamp(self) -> int:
        for seg in reversed(self.segments):
            if seg.max_timestamp >= 0:
                return seg.max_timestamp
        return -1

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- recovery ------------------------------------------------------------------------------
    def _recover(self) -> None:
        bases = sorted(int(f[:-4]) for f in os.listdir(self.dir)
                       if f.endswith(".log") and f[:-4].isdigit())
        if not bases:
            self._add_segment(0)
            return
        for base in bases[:-1]:
            seg = Segment(self.dir, base)
            seg.size = os.fstat(seg.fd).st_size
            self.segments.append(seg)
            self._bases.append(base)
        for i, seg in enumerate(self.segments):
            nxt = bases[i + 1]
            if not self._load_indexes(seg, nxt):
                self._rebuild_closed(seg)
            seg.next_offset = nxt
        last = Segment(self.dir, bases[-1])
        self.segments.append(last)
        self._bases.append(last.base_offset)
        snapshot = self._load_writer_snapshot(last.base_offset)
        if snapshot is None:
            self.writers = {}
            for seg in self.segments[:-1]:
                for _pos, h in _headers(seg.fd, 0, seg.size):
                    self._remember(h, h.base_offset, h.commit_timestamp)
        else:
            self.writers = snapshot
        self._recover_active(last)

    def _load_indexes(self, seg: Segment, next_offset: int) -> bool:
        """Trust a closed segment's index files if they look sane."""
        try:
            idx = os.pread(seg.index_fd, os.fstat(seg.index_fd).st_size, 0)
            tim = os.pread(seg.time_fd, os.fstat(seg.time_fd).st_size, 0)
        except OSError:
            return False
        if len(idx) % 8 or len(tim) % 12:
            return False
        prev_o = prev_p = -1
        for o, p in _INDEX_ENTRY.iter_unpack(idx):
            if o <= prev_o or p <= prev_p or p >= seg.size or seg.base_offset + o >= next_offset:
                return False
            prev_o, prev_p = o, p
            seg.idx_off.append(o)
            seg.idx_pos.append(p)
        prev_t = -1
        for t, o in _TIME_ENTRY.iter_unpack(tim):
            if t <= prev_t or seg.base_offset + o >= next_offset:
                return False
            prev_t = t
            seg.tidx_ts.append(t)
            seg.tidx_off.append(o)
        if seg.size and not seg.tidx_ts:
            return False  # a sealed non-empty segment always has its max timestamp entry
        if seg.tidx_ts:
            seg.max_timestamp = seg.tidx_ts[-1]
            seg.max_ts_offset = seg.base_offset + seg.tidx_off[-1]
        return True

    def _rebuild_closed(self, seg: Segment) -> None:
        for arr in (seg.idx_off, seg.idx_pos, seg.tidx_ts, seg.tidx_off):
            del arr[:]
        seg.bytes_since_index = 0
        for pos, h in _headers(seg.fd, 0, seg.size):
            self._index_batch(seg, pos, h)
        seg.seal()
        seg.rewrite_indexes()

    def _index_batch(self, seg: Segment, pos: int, h) -> None:
        if h.commit_timestamp > seg.max_timestamp:
            seg.max_timestamp = h.commit_timestamp
            seg.max_ts_offset = h.base_offset
        seg.index_entries_for(h.base_offset + h.last_offset_delta, pos, h.total_size,
                              seg.max_timestamp, seg.max_ts_offset)
        seg.next_offset = h.base_offset + h.last_offset_delta + 1

    def _recover_active(self, seg: Segment) -> None:
        """Re-read the last segment with CRC checks; cut a torn tail; rebuild its indexes."""
        size = os.fstat(seg.fd).st_size
        seg.next_offset = seg.base_offset
        pos = 0
        reason = None
        while pos < size and reason is None:
            if size - pos < logbatch.LOG_OVERHEAD:
                reason = f"{size - pos} trailing bytes"
                break
            buf = os.pread(seg.fd, min(_RECOVERY_WINDOW, size - pos), pos)
            off = 0
            while len(buf) - off >= logbatch.LOG_OVERHEAD:
                length = _PREFIX.unpack_from(buf, off)[1]
                total = length + logbatch.LOG_OVERHEAD
                if length < 0 or total > size - pos - off:
                    reason = f"incomplete batch (size {total})"
                    break
                if off + total > len(buf):
                    if off:
                        break  # continue with the next window
                    buf = os.pread(seg.fd, total, pos)  # one batch bigger than the window
                    if len(buf) < total:
                        reason = "short read"
                        break
                reason = self._recover_batch(seg, buf, off, pos + off, total)
                if reason is not None:
                    break
                off += total
            pos += off
        if reason is not None:
            log.warning("%s: truncating torn tail of %s.log at byte %d of %d (%s)",
                        self.name, seg.stem, pos, size, reason)
            os.ftruncate(seg.fd, pos)
        seg.size = pos
        seg.rewrite_indexes()

    def _recover_batch(self, seg: Segment, buf, off: int, position: int, total: int) -> Optional[str]:
        try:
            logbatch.validate_records(memoryview(buf)[off:off + total])
            h = logbatch.parse_header(buf, off)
        except CorruptBatchError as e:
            return f"corrupt batch: {e}"
        if h.base_offset != seg.next_offset:
            return f"base offset {h.base_offset}, expected {seg.next_offset}"
        self._index_batch(seg, position, h)
        self._remember(h, h.base_offset, h.commit_timestamp)
        return None

    def _remember(self, h, first_offset: int, ts: int) -> None:
        if h.writer_id < 0:
            return
        st = self.writers.get(h.writer_id)
        if st is None:
            st = self.writers[h.writer_id] = WriterState()
        st.batches.append((h.batch_sequence, first_offset, first_offset + h.last_offset_delta, ts))

    def _load_writer_snapshot(self, base: int) -> Optional[Dict[int, WriterState]]:
        path = os.path.join(self.dir, f"{base:020d}.writers.json")
        try:
            with open(path, "rb") as f:
                obj = json.loads(f.read())
            out = {}
            for wid, batches in obj["writers"].items():
                st = WriterState()
                for b in batches:
                    st.batches.append(tuple(int(x) for x in b))
                out[int(wid)] = st
            return out
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("%s: ignoring unreadable writer snapshot %s: %s", self.name, path, e)
            return None

    def _write_writer_snapshot(self, base: int) -> None:
        path = os.path.join(self.dir, f"{base:020d}.writers.json")
        data = json.dumps({"writers": {str(w): [list(b) for b in st.batches]
                                       for w, st in self.writers.items()}}).encode()
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    # -- segments ------------------------------------------------------------------------------
    def _add_segment(self, base: int) -> Segment:
        seg = Segment(self.dir, base)
        self.segments.append(seg)
        self._bases.append(base)
        return seg

    def _roll(self) -> Segment:
        active = self.segments[-1]
        active.seal()
        base = active.next_offset
        # The snapshot first: a crash before the new .log exists leaves it unused and harmless.
        self._write_writer_snapshot(base)
        return self._add_segment(base)

    def _segment_for(self, offset: int) -> Segment:
        i = bisect.bisect_right(self._bases, offset) - 1
        return self.segments[max(i, 0)]

    # -- append --------------------------------------------------------------------------------
    def check_writer(self, info) -> Optional[AppendResult]:
        """Idempotence check of a validated records blob against this bucket's writer state.

        Returns the original AppendResult for a duplicate, None if the blob may be appended, and
        raises FlussError(31) for a sequence gap. Every batch of one blob has the same writer id
        (validate_records enforces it); sequences inside the blob must be consecutive.
        """
        if info.writer_id < 0 or info.batch_count == 0:
            return None
        st = self.writers.get(info.writer_id)
        if st is not None:
            dup = st.find(info.first_sequence)
            if dup is not None:
                return AppendResult(dup[1], dup[2], dup[3], True)
        last = st.last_sequence if st is not None else -1
        if info.batch_count > 1:
            expect = (info.first_sequence + info.batch_count - 1) % (_INT32_MAX + 1)
            if info.last_sequence != expect:
                raise FlussError(
                    f"Batch sequences {info.first_sequence}..{info.last_sequence} of writer "
                    f"{info.writer_id} in one request to {self.name} are not consecutive",
                    Errors.OUT_OF_ORDER_SEQUENCE_EXCEPTION)
        if not _in_sequence(last, info.first_sequence):
            raise FlussError(
                f"Out of order batch sequence for writer {info.writer_id} on {self.name}: "
                f"{info.first_sequence} (incoming batch seq.), {last} (current batch seq.)",
                Errors.OUT_OF_ORDER_SEQUENCE_EXCEPTION)
        return None

    async def append(self, records, info=None) -> AppendResult:
        """Append a records blob (already checked with ``logbatch.validate_records``; ``info`` is its
        summary). Offsets and the commit timestamp are written into the batch headers; the bytes
        are on their way to the page cache before this returns. Appends are serialised per bucket
        in arrival order."""
        if info is None:
            info = logbatch.validate_records(records)
        threaded = len(records) > THREAD_WRITE_BYTES
        if not threaded and not self._pending:
            # nothing queued: the whole append runs without yielding, so it is atomic as it is
            return await self._append_locked(records, info, threaded=False)
        if self._lock is None:
            self._lock = asyncio.Lock()
        self._pending += 1
        try:
            async with self._lock:
                return await self._append_locked(records, info, threaded=threaded)
        finally:
            self._pending -= 1

    async def _append_locked(self, records, info, threaded: bool) -> AppendResult:
        if self.closed:
            raise FlussError(f"{self.name} was dropped", Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        if info.batch_count == 0:
            hw = self.high_watermark
            return AppendResult(hw, hw - 1, -1, False)
        dup = self.check_writer(info)
        if dup is not None:
            return dup
        n = len(records)
        seg = self.segments[-1]
        if seg.size > 0 and (seg.size + n > self.segment_bytes
                             or seg.next_offset + info.offset_count - seg.base_offset > _INT32_MAX):
            seg = self._roll()
        base = seg.next_offset
        ts = max(now_ms(), self.max_timestamp)
        # a writable view (the request frame itself, see tablet.parse_produce_request) is stamped
        # and written in place; read-only bytes need a private copy first
        if isinstance(records, bytearray) or (isinstance(records, memoryview) and not records.readonly):
            buf = records
        else:
            buf = bytearray(records)
        next_offset = logbatch.assign_offsets(buf, base, ts)
        last = next_offset - 1
        position = seg.size
        saved = (seg.bytes_since_index, len(seg.idx_off), len(seg.tidx_ts))
        # the segment's max timestamp moves only once the bytes are written: a timestamp lookup
        # meanwhile must not be pointed at data a reader cannot see yet
        if ts > seg.max_timestamp:
            max_ts, max_ts_offset = ts, base
        else:
            max_ts, max_ts_offset = seg.max_timestamp, seg.max_ts_offset
        idx, tim = seg.index_entries_for(last, position, n, max_ts, max_ts_offset)
        idx_at = (len(seg.idx_off) - 1) * 8
        tim_at = (len(seg.tidx_ts) - 1) * 12
        try:
            if threaded:
                fds = (os.dup(seg.fd), os.dup(seg.index_fd), os.dup(seg.time_fd))
                try:
                    await asyncio.to_thread(_write_all, fds, buf, position, idx, idx_at, tim, tim_at)
                finally:
                    for fd in fds:
                        os.close(fd)
                if self.closed:
                    raise FlussError(f"{self.name} was dropped during the append",
                                     Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
            else:
                _write_all((seg.fd, seg.index_fd, seg.time_fd), buf, position, idx, idx_at, tim, tim_at)
        except OSError as e:
            seg.bytes_since_index = saved[0]
            del seg.idx_off[saved[1]:], seg.idx_pos[saved[1]:]
            del seg.tidx_ts[saved[2]:], seg.tidx_off[saved[2]:]
            raise FlussError(f"Failed to append {n} bytes to {self.name}: {e}",
                             Errors.LOG_STORAGE_EXCEPTION) from e
        seg.size = position + n
        seg.next_offset = next_offset
        seg.max_timestamp, seg.max_ts_offset = max_ts, max_ts_offset
        if info.writer_id >= 0:
            self._remember_blob(buf, info, base, ts)
        recent = self._recent
        recent[base] = (seg, position, _PREFIX.unpack_from(buf, 0)[1] + logbatch.LOG_OVERHEAD)
        if len(recent) > 256:
            del recent[next(iter(recent))]
        self._wake()
        if self.flush_policy is not None:
            await self.flush_policy.appended(self, seg, info.offset_count)
        return AppendResult(base, last, ts, False)

    def _remember_blob(self, buf, info, base: int, ts: int) -> None:
        if info.batch_count == 1:
            st = self.writers.get(info.writer_id)
            if st is None:
                st = self.writers[info.writer_id] = WriterState()
            st.batches.append((info.first_sequence, base, base + info.offset_count - 1, ts))
            return
        for h in logbatch.iter_batches(buf):
            self._remember(h, h.base_offset, ts)

    def _wake(self) -> None:
        waiters, self.waiters = self.waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    # -- read ----------------------------------------------------------------------------------
    def locate(self, offset: int) -> Tuple[Segment, int, int]:
        """``(segment, position, size of the batch there)`` of the batch holding ``offset``
        (< high watermark). Size 0 when the offset is at the end of the segment."""
        hit = self._recent.get(offset)
        if hit is not None:
            return hit
        seg = self._segment_for(offset)
        for pos, h in _headers(seg.fd, seg.scan_start(offset), seg.size):
            if h.base_offset + h.last_offset_delta >= offset:
                return seg, pos, h.total_size
        return seg, seg.size, 0

    def check_fetch_offset(self, offset: int) -> int:
        """The effective fetch offset (-2 = earliest), or FlussError(19) when out of range."""
        if offset == -2:
            return self.log_start_offset
        if offset < self.log_start_offset or offset > self.high_watermark:
            raise FlussError(
                f"Fetch offset {offset} is out of range for {self.name}: the log holds "
                f"[{self.log_start_offset}, {self.high_watermark})",
                Errors.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION)
        return offset

    def plan_read(self, offset: int, max_bytes: int, min_one: bool) -> Tuple[Optional[Segment], int, int]:
        """``(segment, position, length)`` of the bytes a fetch from ``offset`` returns: from the
        batch holding ``offset`` up to ``max_bytes`` within one segment (the last batch may be cut,
        as in Java; FetchLog answers then stop at ``whole_batches_end``), or the whole first batch
        when ``min_one`` and it is bigger than the budget."""
        if offset >= self.high_watermark:
            return None, 0, 0
        seg, pos, first = self.locate(offset)
        if first == 0:
            # the offset starts the next segment (a roll boundary)
            i = self.segments.index(seg)
            if i + 1 >= len(self.segments):
                return None, 0, 0
            seg = self.segments[i + 1]
            pos = 0
            if seg.size < logbatch.LOG_OVERHEAD:
                return None, 0, 0
            first = _PREFIX.unpack(os.pread(seg.fd, 12, 0))[1] + logbatch.LOG_OVERHEAD
        avail = seg.size - pos
        n = min(avail, max_bytes)
        if min_one and first > n:
            n = min(first, avail)
        if n <= 0:
            return None, 0, 0
        return seg, pos, n

    async def read(self, offset: int, max_bytes: int, min_one: bool = True) -> bytes:
        seg, pos, n = self.plan_read(offset, max_bytes, min_one)
        if seg is None:
            return _EMPTY
        return await read_segment(seg, pos, n)

    def whole_batches(self, start_offset: int) -> List[Tuple[Segment, int, int]]:
        """Every (segment, position, length) span from the batch holding ``start_offset`` to the
        high watermark (whole batches), for limit scans."""
        spans = []
        if start_offset >= self.high_watermark:
            return spans
        seg, pos, _ = self.locate(max(start_offset, self.log_start_offset))
        i = self.segments.index(seg)
        for s in self.segments[i:]:
            p = pos if s is seg else 0
            if s.size > p:
                spans.append((s, p, s.size - p))
        return spans

    def offset_for_timestamp(self, ts: int) -> Optional[int]:
        """Base offset of the first batch whose commit timestamp >= ts; None if no batch is."""
        for seg in self.segments:
            if seg.max_timestamp < ts:
                continue
            for _pos, h in _headers(seg.fd, seg.time_scan_start(ts), seg.size):
                if h.commit_timestamp >= ts:
                    return h.base_offset
        return None

    # -- tiering / retention (see remote.py) -------------------------------------------------------
    def roll(self) -> bool:
        """Close a non-empty active segment now (retention may then expire it); False when busy
        or empty."""
        if self.closed or self._pending or self.segments[-1].size == 0:
            return False
        self._roll()
        return True

    def drop_oldest(self, count: int) -> int:
        """Delete the ``count`` oldest segments (never the active one); the local log then starts
        at the next segment. Returns how many went."""
        count = min(count, len(self.segments) - 1)
        if count <= 0 or self.closed:
            return 0
        gone = self.segments[:count]
        del self.segments[:count]
        del self._bases[:count]
        keep = set(map(id, self.segments))
        self._recent = {k: v for k, v in self._recent.items() if id(v[0]) in keep}
        for seg in gone:
            seg.close()
            # the .log goes last: a crash meanwhile leaves a segment recovery can still rebuild
            for suffix in (".index", ".timeindex", ".writers.json", ".log"):
                try:
                    os.unlink(seg.stem + suffix)
                except OSError:
                    pass
        return count

    def add_waiter(self, fut: asyncio.Future) -> None:
        self.waiters.append(fut)

    def remove_waiter(self, fut: asyncio.Future) -> None:
        try:
            self.waiters.remove(fut)
        except ValueError:
            pass

    # -- life cycle ----------------------------------------------------------------------------
    def close(self) -> None:
        self.closed = True
        self._wake()
        for seg in self.segments:
            seg.close()
        self._recent.clear()


def _write_all(fds, buf, position, idx, idx_at, tim, tim_at) -> None:
    fd, index_fd, time_fd = fds
    mv = memoryview(buf)
    done = 0
    total = len(mv)
    while done < total:
        done += os.pwrite(fd, mv[done:], position + done)
    if idx:
        os.pwrite(index_fd, idx, idx_at)
    if tim:
        os.pwrite(time_fd, tim, tim_at)


def whole_batches_end(data) -> int:
    """Bytes of ``data`` (read from a batch boundary) taken by its complete batches; 0 when even
    the first batch is cut off.

    A fetch answer ends at the last whole batch: the tail of a batch cut at the byte budget is
    dropped by every client and read again next time, so sending it only costs wire bytes and
    receive memory (up to a quarter of a scan of ~600 KB batches). Java answers filtered fetches
    this way too; any client accepts it, since a cut batch may always be absent."""
    n = len(data)
    pos = 0
    while n - pos >= logbatch.LOG_OVERHEAD:
        size = _PREFIX.unpack_from(data, pos)[1] + logbatch.LOG_OVERHEAD
        if size <= logbatch.LOG_OVERHEAD or size > n - pos:
            break
        pos += size
    return pos


def indexed_whole_span(seg: Segment, position: int, n: int) -> int:
    """How many of the ``n`` bytes planned from ``position`` (a batch start) a FetchLog reads: up
    to the last batch start the offset index knows within them when that keeps at least half,
    else all ``n`` (``whole_batches_end`` then drops the cut tail after the read).

    The answer ends at its last whole batch either way; this only spares reading the bytes of the
    batch it leaves out: with batches of a few MiB (orders, 2.6 MiB) a third of every read."""
    end = position + n
    if end >= seg.size:
        return n  # a segment holds whole batches: nothing is cut
    i = bisect.bisect_right(seg.idx_pos, end) - 1
    if i >= 0:
        boundary = seg.idx_pos[i]
        if boundary > position and 2 * (boundary - position) >= n:
            return boundary - position
    return n


_RWF_NOWAIT = getattr(os, "RWF_NOWAIT", 0)


# spare read buffers a server thread keeps (see ``_read_buffer``)
_READ_POOL_FREE_BYTES = 32 * 1024 * 1024
_read_pools = threading.local()


def _read_buffer(n: int):
    """A buffer of at least ``n`` bytes for a large segment read. A fresh ``bytearray(n)`` was
    zero-filled twice (by the kernel as its pages faulted in, then by ``bytearray`` itself) before
    the read overwrote it: ~30 % of the server's CPU in a scan went to reading. Pooled buffers (one
    pool per server thread, as each event loop has its own) are reused once nothing looks at the
    last answer read into them any more: the socket has sent it and no projection refers to it."""
    pool = getattr(_read_pools, "pool", None)
    if pool is None:
        pool = _read_pools.pool = FramePool(_READ_POOL_FREE_BYTES)
    buf = pool.take(n)
    pool.handed_out(buf)
    return buf


def _read_cached(fd: int, position: int, n: int):
    """The bytes the page cache holds now at ``position`` (up to ``n``), read without waiting for
    the disk: ``(buffer, count)``, count 0 when nothing could be read that way. The buffer may be
    larger than ``n``."""
    buf = _read_buffer(n)
    view = memoryview(buf)[:n]
    try:
        got = os.preadv(fd, [view], position, _RWF_NOWAIT)
    except OSError:
        # EAGAIN (not cached) or a file system / kernel without RWF_NOWAIT: the thread reads it,
        # and reports a real error
        return view, 0
    return view, got


async def read_segment(seg: Segment, position: int, n: int) -> bytes:
    """``n`` bytes of a segment's file at ``position``. Large reads of bytes the page cache holds
    (a scan of recent data) copy them right here; only what must come from the disk waits in a
    worker thread. In a scan the client's decoding keeps every core busy, and two thread hops per
    read cost more than the copy (1 M rows, 3 buckets, runs alternating: server CPU per full scan
    4.2-4.5 vs 5.5-5.8 ms on clicks, 16 vs 19-22 ms on orders; the scans no slower)."""
    if n <= THREAD_IO_BYTES:
        try:
            return os.pread(seg.fd, n, position)
        except OSError as e:
            raise FlussError(f"Failed to read {seg.stem}.log: {e}", Errors.LOG_STORAGE_EXCEPTION) from e
    got = 0
    if _RWF_NOWAIT:
        buf, got = _read_cached(seg.fd, position, n)
        if got == n or (0 < got and position + got >= seg.size):
            return buf if got == n else buf[:got]
    try:
        fd = os.dup(seg.fd)
    except OSError as e:
        raise FlussError(f"Failed to read {seg.stem}.log: {e}", Errors.LOG_STORAGE_EXCEPTION) from e
    try:
        rest = await asyncio.to_thread(os.pread, fd, n - got, position + got)
    except OSError as e:
        raise FlussError(f"Failed to read {seg.stem}.log: {e}", Errors.LOG_STORAGE_EXCEPTION) from e
    finally:
        os.close(fd)
    if not got:
        return rest
    buf[got:got + len(rest)] = rest
    return buf if len(rest) == n - got else buf[:got + len(rest)]


def _remove_tree(path: str) -> None:
    # Renamed first, so that a restart never recovers a half-deleted log as a live one.
    trash = f"{path}.deleted-{os.getpid()}-{time.monotonic_ns()}"
    try:
        os.rename(path, trash)
    except OSError:
        trash = path
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        shutil.rmtree(trash, ignore_errors=True)
        return
    loop.run_in_executor(None, shutil.rmtree, trash, True)


def _table_dir_name(table_name: str, table_id: int) -> str:
    return f"{table_name}-{table_id}"


class LogManager:
    """Every bucket log of the server, keyed by (table id, partition id or None, bucket).

    Opening recovers every log found under ``root_dir`` (``DATA_DIR/log``), so torn tails are cut
    before the first request is served. ``segment_bytes`` defaults to 1 GiB
    (env ``FLUSS_FAST_LOG_SEGMENT_BYTES`` overrides it, for tests that want rolls).
    """

    def __init__(self, root_dir: str, segment_bytes: Optional[int] = None, flush_policy=None):
        self.root = os.path.abspath(root_dir)
        self.flush_policy = flush_policy
        self.segment_bytes = int(segment_bytes or _env_int("FLUSS_FAST_LOG_SEGMENT_BYTES", DEFAULT_SEGMENT_BYTES))
        if self.segment_bytes < 1:
            raise ValueError(f"segment_bytes must be positive, got {self.segment_bytes}")
        self.logs: Dict[Tuple[int, Optional[int], int], BucketLog] = {}
        self._table_dirs: Dict[int, str] = {}
        os.makedirs(self.root, exist_ok=True)
        self._writer_id_path = os.path.join(self.root, "writer-id")
        self._next_writer_id = self._load_writer_id()
        self._recover_all()

    # -- writer ids ----------------------------------------------------------------------------
    def _load_writer_id(self) -> int:
        try:
            with open(self._writer_id_path, "rb") as f:
                return int(f.read().decode().strip() or 0)
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as e:
            raise RuntimeError(f"unreadable writer id counter {self._writer_id_path}: {e}") from e

    def next_writer_id(self) -> int:
        """A writer id never handed out before, also across restarts (persisted before returned)."""
        wid = self._next_writer_id
        tmp = self._writer_id_path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(str(wid + 1).encode())
        os.replace(tmp, self._writer_id_path)
        self._next_writer_id = wid + 1
        return wid

    # -- discovery -----------------------------------------------------------------------------
    def _recover_all(self) -> None:
        started = time.monotonic()
        count = 0
        for db in sorted(os.listdir(self.root)):
            db_dir = os.path.join(self.root, db)
            if not os.path.isdir(db_dir):
                continue
            for tdir in sorted(os.listdir(db_dir)):
                if ".deleted-" in tdir:
                    shutil.rmtree(os.path.join(db_dir, tdir), ignore_errors=True)
                    continue
                name, sep, tid = tdir.rpartition("-")
                if not sep or not tid.isdigit():
                    continue
                table_id = int(tid)
                tpath = os.path.join(db_dir, tdir)
                self._table_dirs[table_id] = tpath
                for sub in sorted(os.listdir(tpath)):
                    spath = os.path.join(tpath, sub)
                    if ".deleted-" in sub:
                        shutil.rmtree(spath, ignore_errors=True)
                        continue
                    if sub.startswith("log-") and sub[4:].isdigit():
                        self._open(spath, table_id, None, int(sub[4:]), f"{db}.{name} bucket {sub[4:]}")
                        count += 1
                        continue
                    pname, psep, pid = sub.rpartition("-p")
                    if not psep or not pid.isdigit() or not os.path.isdir(spath):
                        continue
                    for bdir in sorted(os.listdir(spath)):
                        if bdir.startswith("log-") and bdir[4:].isdigit():
                            self._open(os.path.join(spath, bdir), table_id, int(pid), int(bdir[4:]),
                                       f"{db}.{name} partition {pname} bucket {bdir[4:]}")
                            count += 1
        if count:
            log.info("recovered %d bucket logs in %.3f s", count, time.monotonic() - started)

    def _open(self, path: str, table_id: int, partition_id: Optional[int], bucket: int, name: str) -> BucketLog:
        blog = BucketLog(path, table_id, partition_id, bucket, name, self.segment_bytes)
        blog.flush_policy = self.flush_policy
        self.logs[(table_id, partition_id, bucket)] = blog
        return blog

    # -- access --------------------------------------------------------------------------------
    def get(self, table_entry, partition_entry, bucket: int) -> BucketLog:
        """The log of a bucket, created (empty) on first use."""
        pid = partition_entry.partition_id if partition_entry is not None else None
        key = (table_entry.table_id, pid, bucket)
        blog = self.logs.get(key)
        if blog is not None:
            return blog
        tdir = self._table_dirs.get(table_entry.table_id)
        if tdir is None:
            tdir = os.path.join(self.root, table_entry.database,
                                _table_dir_name(table_entry.table_name, table_entry.table_id))
            self._table_dirs[table_entry.table_id] = tdir
        name = f"{table_entry.database}.{table_entry.table_name}"
        if partition_entry is not None:
            path = os.path.join(tdir, f"{partition_entry.name}-p{pid}", f"log-{bucket}")
            name += f" partition {partition_entry.name}"
        else:
            path = os.path.join(tdir, f"log-{bucket}")
        return self._open(path, table_entry.table_id, pid, bucket, f"{name} bucket {bucket}")

    def find(self, table_id: int, partition_id: Optional[int], bucket: int) -> Optional[BucketLog]:
        return self.logs.get((table_id, partition_id, bucket))

    def table_ids(self) -> set:
        return set(self._table_dirs)

    # -- drops ---------------------------------------------------------------------------------
    def drop_table(self, table_id: int) -> None:
        """Forget the table's logs at once; their files go in the background when a loop runs."""
        for key in [k for k in self.logs if k[0] == table_id]:
            self.logs.pop(key).close()
        tdir = self._table_dirs.pop(table_id, None)
        if tdir is not None:
            _remove_tree(tdir)

    def drop_partition(self, table_id: int, partition_id: int) -> None:
        for key in [k for k in self.logs if k[0] == table_id and k[1] == partition_id]:
            self.logs.pop(key).close()
        tdir = self._table_dirs.get(table_id)
        if tdir is None or not os.path.isdir(tdir):
            return
        suffix = f"-p{partition_id}"
        for sub in os.listdir(tdir):
            if sub.endswith(suffix) and sub[:-len(suffix)]:
                _remove_tree(os.path.join(tdir, sub))

    def purge(self, is_live) -> None:
        """Delete logs whose table (or partition) ``is_live(table_id, partition_id)`` denies:
        leftovers of drops that a crash interrupted."""
        for table_id in list(self._table_dirs):
            if not is_live(table_id, None):
                self.drop_table(table_id)
        for (table_id, pid, _b) in list(self.logs):
            if pid is not None and (table_id, pid, _b) in self.logs and not is_live(table_id, pid):
                self.drop_partition(table_id, pid)

    def close(self) -> None:
        for blog in self.logs.values():
            if self.flush_policy is not None:
                self.flush_policy.sync_now(blog)  # a clean stop leaves nothing in the page cache only
            blog.close()
        self.logs.clear()
