# Declarations of le_bytes.h, the little-endian loads and stores every Cython codec uses:
# ``from fluss_fast.codec.le_bytes cimport ff_le_get32, ...``. Declarations only (no module).
from libc.stdint cimport int16_t, int32_t, int64_t

cdef extern from "le_bytes.h":
    int16_t ff_le_get16(const unsigned char *p) nogil
    int32_t ff_le_get32(const unsigned char *p) nogil
    int64_t ff_le_get64(const unsigned char *p) nogil
    void ff_le_put16(unsigned char *p, int16_t x) nogil
    void ff_le_put32(unsigned char *p, int32_t x) nogil
    void ff_le_put64(unsigned char *p, int64_t x) nogil
