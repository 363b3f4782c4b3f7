"""Fresh memory for big buffers: private anonymous mappings, 2 MiB aligned, advised for transparent
huge pages once the process has earned them. The client's receive pool (``rpc/frame_pool.py``) and the
decoded batch bodies (``codec/log``) both take their memory here."""
from __future__ import annotations

import ctypes
import mmap

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


def aligned_mapping(n: int) -> tuple[mmap.mmap, int]:
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
