# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of ``appendslot.py``: the per-row fast path without interpreter overhead."""


cdef class HotSlot:
    # the fields are declared in _appendslot.pxd, where _upsertrow.KvSlot cimports them

    def __init__(self, lock):
        self._acquire = lock.acquire
        self._release = lock.release
        self.builder = None
        self.handle = None
        self.size = 0
        self.cap = 0

    def append(self, row):
        """Add ``row`` if the hot batch has room; its handle, or None (nothing was added)."""
        cdef object builder
        self._acquire()
        try:
            builder = self.builder
            if builder is None or self.size >= self.cap:
                return None
            self.size = builder.append(row)
            return self.handle
        finally:
            self._release()
