# The hot slot's layout, shared with _upsertrow (its KvSlot extends HotSlot and reads the fields directly).
cdef class HotSlot:
    cdef object _acquire
    cdef object _release
    cdef public object builder
    cdef public object handle
    cdef public Py_ssize_t size
    cdef public Py_ssize_t cap
