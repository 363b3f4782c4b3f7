# The compiled row codecs' base classes, for _compacted / _indexed (which extend them) and for
# client/write/_upsertrow.pyx (which encodes a row straight into its own WBuf through ``_put``).
from fluss_fast.codec.wire.bytebuf cimport WBuf


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
