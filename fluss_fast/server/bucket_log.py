"""The log of one bucket: appends, recovery, reads and retention over its segments
(docs/contributing/formats.md §1.5, §1.6, §1.7, §9.1, §10).

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

import asyncio
import bisect
import contextlib
import logging
import os
import time
from typing import TYPE_CHECKING

from ..codec.errors import CorruptBatchError
from ..codec.log import logbatch
from ..error_codes import Errors
from ..errors import FlussError
from .segment import BATCH_PREFIX, INDEX_ENTRY, TIME_ENTRY, Segment, batch_headers
from .segment_read import read_segment
from .writer_state import WriterState, expected_last_sequence, in_sequence, load_snapshot, write_snapshot

if TYPE_CHECKING:
    from .flush_policy import FlushPolicy

log = logging.getLogger("fluss_fast.server.log")

# Appends have their own threshold (reads: ``segment_read.THREAD_IO_BYTES``). Re-measured once
# produce payloads arrived in pooled buffers and were appended in place (raw replay, 8 in flight,
# 2-core box): inline writes cost less server CPU per GB than the thread hop (1 MiB frames
# 0.61-0.65 vs 0.67 cpu-s/GB, 1.49-1.56 vs 1.45 GB/s; 8 MiB frames 0.55-0.80 vs 1.04-1.30 cpu-s/GB)
# and were no worse into cold page cache (0.45-0.54 vs 0.41-0.52 GB/s). The cap keeps the loop from
# stalling more than a few ms on one write, so client batches (2 MiB by default) go inline and only
# rare huge blobs take the thread.
THREAD_WRITE_BYTES = int(os.environ.get("FLUSS_FAST_THREAD_WRITE_BYTES", str(4 * 1024 * 1024)))

_RECOVERY_WINDOW = 8 << 20
# a segment's offsets are int32 relative to its base: an append that would pass this rolls first
_INT32_MAX = (1 << 31) - 1

_EMPTY = b""


def now_ms() -> int:
    return int(time.time() * 1000)


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


class BucketLog:
    """The log of one bucket: segments, high watermark, writer state, fetch waiters.

    Single replica: the high watermark is the log end offset as soon as an append returns.
    """

    def __init__(self, directory: str, table_id: int, partition_id: int | None, bucket: int,
                 name: str, segment_bytes: int):
        self.dir = directory
        self.table_id = table_id
        self.partition_id = partition_id
        self.bucket = bucket
        self.name = name  # for messages: "db.table bucket 3" / "db.table partition p bucket 3"
        self.segment_bytes = segment_bytes
        self.segments: list[Segment] = []
        self._bases: list[int] = []
        self.writers: dict[int, WriterState] = {}
        self.waiters: list[asyncio.Future] = []
        self.closed = False
        self._lock: asyncio.Lock | None = None
        self._pending = 0  # appends waiting for / holding the lock; later ones must queue behind
        # first offset of recent appends -> (segment, position, size of its first batch): tail
        # readers land exactly there, so most fetches need no index lookup or header scan.
        self._recent: dict[int, tuple[Segment, int, int]] = {}
        self.flush_policy: FlushPolicy | None = None  # set by the LogManager
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
        snapshot = load_snapshot(self.dir, last.base_offset, self.name)
        if snapshot is None:
            self.writers = {}
            for seg in self.segments[:-1]:
                for _pos, h in batch_headers(seg.fd, 0, seg.size):
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
        for o, p in INDEX_ENTRY.iter_unpack(idx):
            if o <= prev_o or p <= prev_p or p >= seg.size or seg.base_offset + o >= next_offset:
                return False
            prev_o, prev_p = o, p
            seg.idx_off.append(o)
            seg.idx_pos.append(p)
        prev_t = -1
        for t, o in TIME_ENTRY.iter_unpack(tim):
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
        for pos, h in batch_headers(seg.fd, 0, seg.size):
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
                length = BATCH_PREFIX.unpack_from(buf, off)[1]
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

    def _recover_batch(self, seg: Segment, buf, off: int, position: int, total: int) -> str | None:
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
        write_snapshot(self.dir, base, self.writers)
        return self._add_segment(base)

    def _segment_for(self, offset: int) -> Segment:
        i = bisect.bisect_right(self._bases, offset) - 1
        return self.segments[max(i, 0)]

    # -- append --------------------------------------------------------------------------------
    def check_writer(self, info) -> AppendResult | None:
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
            expect = expected_last_sequence(info.first_sequence, info.batch_count)
            if info.last_sequence != expect:
                raise FlussError(
                    f"Batch sequences {info.first_sequence}..{info.last_sequence} of writer "
                    f"{info.writer_id} in one request to {self.name} are not consecutive",
                    Errors.OUT_OF_ORDER_SEQUENCE_EXCEPTION)
        if not in_sequence(last, info.first_sequence):
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
        recent[base] = (seg, position, BATCH_PREFIX.unpack_from(buf, 0)[1] + logbatch.LOG_OVERHEAD)
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
    def locate(self, offset: int) -> tuple[Segment, int, int]:
        """``(segment, position, size of the batch there)`` of the batch holding ``offset``
        (< high watermark). Size 0 when the offset is at the end of the segment."""
        hit = self._recent.get(offset)
        if hit is not None:
            return hit
        seg = self._segment_for(offset)
        for pos, h in batch_headers(seg.fd, seg.scan_start(offset), seg.size):
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

    def plan_read(self, offset: int, max_bytes: int, min_one: bool) -> tuple[Segment | None, int, int]:
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
            first = BATCH_PREFIX.unpack(os.pread(seg.fd, 12, 0))[1] + logbatch.LOG_OVERHEAD
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

    def whole_batches(self, start_offset: int) -> list[tuple[Segment, int, int]]:
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

    def offset_for_timestamp(self, ts: int) -> int | None:
        """Base offset of the first batch whose commit timestamp >= ts; None if no batch is."""
        for seg in self.segments:
            if seg.max_timestamp < ts:
                continue
            for _pos, h in batch_headers(seg.fd, seg.time_scan_start(ts), seg.size):
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
                with contextlib.suppress(OSError):
                    os.unlink(seg.stem + suffix)
        return count

    def add_waiter(self, fut: asyncio.Future) -> None:
        self.waiters.append(fut)

    def remove_waiter(self, fut: asyncio.Future) -> None:
        with contextlib.suppress(ValueError):
            self.waiters.remove(fut)

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

