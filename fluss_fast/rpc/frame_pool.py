"""Buffers for frames too big for a connection's ring buffer (see ``FramePool``): the server's
big requests, the client's fetch responses."""
from __future__ import annotations

import sys

from ..codec.wire.memory import advise_huge_pages, earn_huge_pages, huge_span, private_mapping

_POOL_MIN_CLASS = 128 * 1024
_POOL_MAX_CLASS = 16 * 1024 * 1024   # bigger frames are rare; their buffers are simply dropped
_POOL_MAX_FREE_BYTES = 64 * 1024 * 1024
_POOL_MAX_BUSY = 64
def _size_class(n: int) -> int:
    if n <= _POOL_MIN_CLASS:
        return _POOL_MIN_CLASS
    return 1 << (n - 1).bit_length()


class FramePool:
    """Buffers for frames that do not fit a connection's ring buffer, shared by all connections of a
    server, or owned by one client connection (one event loop either way, so no locking).

    Fresh buffers are anonymous mmaps: the kernel commits pages only as bytes arrive, so a header
    that announces 100 MiB and then stalls costs address space, not memory, and nothing is zero-filled
    in user space. A buffer handed out with a frame goes to ``_busy``; handlers may keep views of it
    (the produce path writes offsets into the request bytes and appends them as they are), so it is
    reused only once ``sys.getrefcount`` shows that no view exists any more: every live memoryview of
    an mmap keeps one reference to it through its managed buffer.
    """

    __slots__ = ("_free", "_free_bytes", "_busy", "_max_free", "allocated", "reused")

    def __init__(self, max_free_bytes: int = _POOL_MAX_FREE_BYTES):
        self._max_free = max_free_bytes
        self._free: dict[int, list] = {}
        self._free_bytes = 0
        self._busy: list = []
        self.allocated = 0
        self.reused = 0

    def take(self, n: int):
        """A writable buffer of at least ``n`` bytes."""
        cap = _size_class(n)
        if cap > _POOL_MAX_CLASS:
            self.allocated += 1
            return private_mapping(n)
        if self._busy:
            self._reclaim()
        free = self._free.get(cap)
        if free:
            self._free_bytes -= cap
            self.reused += 1
            return free.pop()
        self.allocated += 1
        buf = private_mapping(cap)
        # the kernel puts a mapping of whole 2 MiB blocks on a 2 MiB boundary, so the blocks the
        # frame fills can be huge pages: a fetch answer of megabytes then costs a few faults, not
        # hundreds. A block the frame fills at least half of is a huge page too (fetch answers hold
        # whole batches, so they end just short of the 2 MiB budget): up to 1 MiB more of the
        # buffer becomes resident while it is in use, for ~250 fewer faults
        advise_huge_pages(buf, 0, huge_span(n, cap))
        return buf

    def handed_out(self, buf) -> None:
        """``buf`` now backs a frame; reclaim it once nothing looks at it."""
        if len(buf) > _POOL_MAX_CLASS:
            return
        busy = self._busy
        busy.append(buf)
        if len(busy) > _POOL_MAX_BUSY:
            self._reclaim()
            if len(busy) > _POOL_MAX_BUSY:
                del busy[0]  # held for long by someone; it is freed whenever they let go

    def _reclaim(self) -> None:
        busy = self._busy
        keep = []
        for i in range(len(busy)):
            # references: the list slot and getrefcount's argument; a live view adds one more
            if sys.getrefcount(busy[i]) > 2:
                keep.append(busy[i])
                continue
            buf = busy[i]
            cap = len(buf)
            if self._free_bytes + cap <= self._max_free:
                self._free.setdefault(cap, []).append(buf)
                self._free_bytes += cap
            del buf
        busy[:] = keep

    def trim(self) -> int:
        """Give the buffers nothing uses back to the OS (an idle client keeps no receive memory);
        the busy ones go once their views are gone, at the next ``take`` or ``trim``. Returns how
        many are still busy."""
        if self._busy:
            self._reclaim()
        if self._free:
            # what goes back now is what a next fresh buffer's huge pages would come from
            earn_huge_pages()
        self._free.clear()
        self._free_bytes = 0
        return len(self._busy)

    def stats(self) -> dict:
        return {"allocated": self.allocated, "reused": self.reused, "busy": len(self._busy),
                "free_bytes": self._free_bytes}
