# The one CRC-32C of the compiled codecs: ``from fluss_fast.codec.wire._crc32c cimport crc32c_update``.
# The tables and the SSE4.2 probe live in _crc32c alone, set up once when it is imported.
from libc.stdint cimport uint32_t

cdef uint32_t crc32c_update(uint32_t crc, const void *data, size_t n) noexcept nogil
