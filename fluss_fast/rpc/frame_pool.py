"""Buffers for frames too big for a connection's ring buffer (see ``FramePool``): the server's
big requests, the client's fetch responses."""
from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Tuple

_POOL_MIN_CLASS = 128 * 1024
_POOL_MAX_CLASS = 16 * 1024 * 1024   # bigger frames are rare; their buffers are simply dropped
_POOL_MAX_FREE_BYTES = 64 * 1024 * 1024
_POOL_MAX_BUSY = 64
# private, not mmap's default MAP_SHARED: a shared anonymous mapping is shmem, whose page faults go
# through the page cache (~30 % more CPU per fresh page) for a sharing nobody here needs
PRIVATE_MAP_FLAGS = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)


HUGE_PAGE = 2 << 20
_MADV_HUGEPAGE = getattr(mmap, "MADV_HUGEPAGE", None)


class _HugePages:
    """Whether fresh buffers are advised for transparent huge pages: not until the process has
    finished a bounded read (``codec.bodypool``) or a pool gave buffers back (``FramePool.trim``).

    A huge page is one fault instead of 512, but it needs a free 2 MiB block, and in a VM whose
    balloon reports free memory to the host (free page reporting hands back whole 2 MiB blocks) the
    free blocks are mostly ones the host has taken back: faulting one in makes the host supply and
    zero it. The first 4 M-row scan of a process spent 0.3-0.5 s in the kernel that way, against
    ~0.1 s in small pages, whose allocations come from split, still-backed blocks. Blocks this process
    freed a moment ago are still backed, and that is the case of a process that reads again: its
    earlier result's memory has just gone back. So a process that reads once never asks, and one that
    reads in a loop asks from its second read on, when the advice pays."""

    earned = False


HUGE_PAGES = _HugePages()


def earn_huge_pages() -> None:
    """The process reuses memory: from now on fresh buffers are advised for huge pages."""
    HUGE_PAGES.earned = True


def private_mapping(n: int) -> mmap.mmap:
    """``n`` fresh bytes in an anonymous mapping, private where the platform allows (also used
    for the decoded batch bodies of ``codec/arrowlog.py``)."""
    return mmap.mmap(-1, n, flags=PRIVATE_MAP_FLAGS) if PRIVATE_MAP_FLAGS else mmap.mmap(-1, n)


def aligned_mapping(n: int) -> Tuple[mmap.mmap, int]:
    """``(mapping, start)``: a private mapping with room for ``n`` bytes from ``start``, its first
    2 MiB boundary (huge pages back only whole, aligned 2 MiB blocks; the slack in front is never
    touched, so it costs address space only)."""
    m = private_mapping(n + HUGE_PAGE)
    probe = ctypes.c_char.from_buffer(m)
    address = ctypes.addressof(probe)
    del probe  # the buffer export it holds would keep the mapping from being unmapped
    return m, -address % HUGE_PAGE


def advise_huge_pages(m: mmap.mmap, start: int, length: int) -> bool:
    """Ask for transparent huge pages on ``length`` bytes of ``m`` from ``start``, once the process
    has earned them (``_HugePages``): with THP in ``madvise`` mode (the common default) a fresh 4 KiB
    page otherwise faults in one at a time, and a 2 MiB buffer filled from a socket paid 512 faults
    instead of one. Returns whether it asked."""
    if _MADV_HUGEPAGE is None or length < HUGE_PAGE or not HUGE_PAGES.earned:
        return False
    try:
        m.madvise(_MADV_HUGEPAGE, start, length)
    except OSError:
        return False  # THP off or unsupported: small pages, same bytes
    return True


def huge_span(n: int, cap: int) -> int:
    """How much of a ``cap``-byte buffer that will hold ``n`` bytes to advise for huge pages: the
    2 MiB blocks ``n`` fills at least half of."""
    return min(cap, (n + HUGE_PAGE // 2) // HUGE_PAGE * HUGE_PAGE)


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
