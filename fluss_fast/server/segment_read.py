"""Reading a segment's bytes for a fetch: what the page cache holds is copied on the event loop,
the rest waits in a worker thread, into pooled buffers; and where a fetch answer ends (at its last
whole batch)."""
from __future__ import annotations

import asyncio
import bisect
import os
import threading

from ..codec.log import logbatch
from ..error_codes import Errors
from ..errors import FlussError
from ..rpc.frame_pool import FramePool
from .segment import BATCH_PREFIX, Segment

# Above this many bytes, the part of a read the page cache does not hold runs in a worker thread
# instead of on the event loop (see read_segment; the numbers below are from before cached bytes
# were copied on the loop).
# Measured on the 2-core test machine with 1 MiB produce / 4 MiB fetch frames over loopback: the
# thread version was faster both ways (fetch 1.3-1.6 vs 0.8-1.05 GB/s, ingest 0.20-0.33 vs
# 0.16-0.21 GB/s into cold page cache), since the loop keeps receiving while the copy runs; below a
# few hundred KiB the ~50 us hop costs more than it saves.
THREAD_IO_BYTES = int(os.environ.get("FLUSS_FAST_THREAD_IO_BYTES", str(256 * 1024)))


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
        size = BATCH_PREFIX.unpack_from(data, pos)[1] + logbatch.LOG_OVERHEAD
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


def _nowait_flag() -> int:
    """preadv's RWF_NOWAIT (read only what the page cache holds), or 0 where ``os`` lacks it: not
    Linux, or a CPython built against a C library without the flag."""
    try:
        from os import RWF_NOWAIT
    except ImportError:
        return 0
    return RWF_NOWAIT


_RWF_NOWAIT = _nowait_flag()


# spare read buffers a server thread keeps (see ``_read_buffer``)
_READ_POOL_FREE_BYTES = 32 * 1024 * 1024


class _ReadPools(threading.local):
    """Each server thread runs its own event loop, so each gets its own pool: ``__init__`` runs
    once per thread, on its first read."""

    def __init__(self) -> None:
        self.pool = FramePool(_READ_POOL_FREE_BYTES)


_read_pools = _ReadPools()


def _read_buffer(n: int):
    """A buffer of at least ``n`` bytes for a large segment read. A fresh ``bytearray(n)`` was
    zero-filled twice (by the kernel as its pages faulted in, then by ``bytearray`` itself) before
    the read overwrote it: ~30 % of the server's CPU in a scan went to reading. Pooled buffers (one
    pool per server thread, as each event loop has its own) are reused once nothing looks at the
    last answer read into them any more: the socket has sent it and no projection refers to it."""
    pool = _read_pools.pool
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
        if got == n or (got > 0 and position + got >= seg.size):
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

