# The unsigned LEB128 varint store of KV records (key lengths, compacted-row integers), shared by
# the compiled KV encoders: ``from fluss_fast.codec.varint_put cimport ff_put_varint``.
from libc.stdint cimport uint64_t


cdef inline Py_ssize_t ff_put_varint(unsigned char *p, uint64_t u) noexcept nogil:
    cdef Py_ssize_t i = 0
    while u > 0x7F:
        p[i] = <unsigned char>((u & 0x7F) | 0x80)
        u >>= 7
        i += 1
    p[i] = <unsigned char>u
    return i + 1
