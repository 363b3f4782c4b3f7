from fluss_fast.codec.rows._rowbase cimport _RowDecoder, _RowEncoder


cdef class CompactedRowEncoder(_RowEncoder):
    cdef bint _key  # CompactedKeyEncoder: no null bitset, nulls refused


cdef class CompactedKeyEncoder(CompactedRowEncoder):
    pass


cdef class CompactedRowDecoder(_RowDecoder):
    cdef tuple _decode(self, bytes buf, Py_ssize_t pos, Py_ssize_t end)
