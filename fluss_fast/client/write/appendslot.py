"""The writer's per-row fast path: one lock, one row-builder call.

``HotSlot`` holds the row builder of the accumulator's "hot" batch (the open batch of the sticky
bucket) with its handle, the builder's size after the last row, and the size up to which rows may
still go in (``cap``: the batch's target and the memory budget, worked out by the accumulator).
``append`` adds a row under the accumulator's lock when it fits and returns the batch's handle;
``None`` sends the caller down the accumulator's general path, which books what the slot added
and refills the slot. ``_appendslot.pyx`` is the compiled twin.
"""
from __future__ import annotations

from ...codec._select import pick

__all__ = ["HotSlot"]


class HotSlot:
    __slots__ = ("_acquire", "_release", "builder", "handle", "size", "cap")

    def __init__(self, lock) -> None:
        self._acquire = lock.acquire
        self._release = lock.release
        self.builder = None
        self.handle = None
        self.size = 0
        self.cap = 0

    def append(self, row):
        """Add ``row`` if the hot batch has room; its handle, or None (nothing was added)."""
        self._acquire()
        try:
            builder = self.builder
            if builder is None or self.size >= self.cap:
                return None
            # the builder validates first and leaves everything as it was when it rejects a row
            self.size = builder.append(row)
            return self.handle
        finally:
            self._release()


HotSlot_py = HotSlot

pick("_appendslot", globals(), __all__)
