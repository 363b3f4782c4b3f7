# The compiled row codecs' C side, for the modules that encode into a row buffer without a Python
# call (codec/_upsertrow.pyx: a row's key and value written straight into a KV batch).
from libc.stdlib cimport free


cdef struct WBuf:
    unsigned char *p
    Py_ssize_t n
    Py_ssize_t cap
    unsigned char small[256]


cdef inline void wb_init(WBuf *b) noexcept:
    b.p = b.small
    b.n = 0
    b.cap = 256


cdef inline void wb_free(WBuf *b) noexcept:
    if b.p != b.small:
        free(b.p)
    b.p = b.small


cdef class _Field:
    cdef int code
    cdef bint nullable
    cdef bint compact
    cdef bint fixed
    cdef Py_ssize_t size
    cdef int scale
    cdef int precision
    cdef object info
    cdef object slow_write      # pure writer for the cases handled in Python
    cdef object slow_read


cdef class _RowCodec:
    cdef list _fields
    cdef object _infos
    cdef object _names
    cdef Py_ssize_t _n
    cdef Py_ssize_t _nbytes
    cdef Py_ssize_t _header  # null bitset, plus the IndexedRow's var-length slots

    cdef _setup(self, types, names, str fmt)


cdef class _RowEncoder(_RowCodec):
    cdef int _put(self, WBuf *b, object values) except -1
    cdef int _null(self, WBuf *b, Py_ssize_t base, Py_ssize_t i, _Field f) except -1


cdef class _RowDecoder(_RowCodec):
    cdef list _values(self, bytes buf, Py_ssize_t pos, Py_ssize_t end)


cdef class CompactedRowEncoder(_RowEncoder):
    cdef bint _key  # CompactedKeyEncoder: no null bitset, nulls refused


cdef class CompactedKeyEncoder(CompactedRowEncoder):
    pass


cdef class CompactedRowDecoder(_RowDecoder):
    cdef tuple _decode(self, bytes buf, Py_ssize_t pos, Py_ssize_t end)


cdef class IndexedRowEncoder(_RowEncoder):
    pass


cdef class IndexedRowDecoder(_RowDecoder):
    pass
