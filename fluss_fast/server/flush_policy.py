"""When appended log bytes are forced to disk (the Java server's ``log.flush.interval-messages``).

An append is acknowledged once its bytes are in the OS page cache, which survives ``kill -9`` of
the server but not a power loss or kernel crash. With an interval of N, a bucket's log is fsynced
(before the append that crossed the interval is acknowledged) once N records were appended since
its last fsync: 1 makes every acknowledged record durable against power loss. The default is the
Java server's: never, except when the server stops cleanly.

What was not fsynced may come back after a power loss as a torn or zero-filled tail; restart
recovery re-reads the active segment batch by batch with CRC checks and cuts the log at the first
bad batch, so such a tail is dropped and never served.
"""
from __future__ import annotations

import asyncio
import contextlib
import os

#: Java's default (Long.MAX_VALUE): no fsync per append
NEVER = None


class FlushPolicy:
    def __init__(self, interval_messages: int | None = NEVER):
        if interval_messages is not None and interval_messages < 1:
            raise ValueError(f"log.flush.interval-messages must be >= 1, got {interval_messages}")
        self.interval = interval_messages
        self._dirs_synced: set = set()  # segment files whose directory entry is known durable

    @property
    def enabled(self) -> bool:
        return self.interval is not None

    async def appended(self, blog, seg, records: int) -> None:
        """Called after an append to ``seg`` of ``blog``, before it is acknowledged."""
        if self.interval is None:
            return
        blog.unflushed_records += records
        if blog.unflushed_records < self.interval:
            return
        blog.unflushed_records = 0
        upto = seg.next_offset
        fd = os.dup(seg.fd)  # a concurrent drop may close the original
        try:
            await asyncio.to_thread(os.fsync, fd)
        finally:
            os.close(fd)
        if seg.stem not in self._dirs_synced:
            # a new segment file is only durable once its directory entry is
            await asyncio.to_thread(_fsync_dir, os.path.dirname(seg.stem))
            self._dirs_synced.add(seg.stem)
        blog.flushed_offset = max(blog.flushed_offset, upto)

    def sync_now(self, blog) -> None:
        """Clean shutdown: everything appended so far goes to disk (as Java flushes on close)."""
        for seg in blog.segments:
            if seg.fd >= 0:
                with contextlib.suppress(OSError):
                    os.fsync(seg.fd)
        blog.flushed_offset = blog.high_watermark


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
