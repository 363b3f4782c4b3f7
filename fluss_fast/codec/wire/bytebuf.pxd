# The byte-buffer toolkit of the compiled codecs: ``from fluss_fast.codec.wire.bytebuf cimport ...``.
# Everything is inline (or a C declaration), so cimporting it costs no call and no module import;
# ``bytebuf.py`` is the same toolkit for the pure-Python codecs.
#
# - little-endian loads and stores on raw pointers (``le_bytes.h``): ff_le_get16/32/64, ff_le_put16/32/64;
# - ``ff_put_varint``: an unsigned LEB128 varint into memory the caller has reserved;
# - ``WBuf``: a growable write buffer that starts in 256 bytes of its own (a row, a key: no malloc),
#   with reserve / write / varint / little-endian puts, and patch32 for a length written after its body;
#   ``wb_reserve_nogil`` grows without the GIL (0, or -1 when out of memory);
# - ``grown_capacity``: the one growth policy, also for buffers whose memory someone else allocates;
# - a bounded reader over ``(p, *pos, end)``: need / read_varint / read_v32 / read_v64 / read_len,
#   each raising ValueError (with the byte offset) instead of reading past ``end``.
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

cdef extern from "le_bytes.h":
    int16_t ff_le_get16(const unsigned char *p) nogil
    int32_t ff_le_get32(const unsigned char *p) nogil
    int64_t ff_le_get64(const unsigned char *p) nogil
    void ff_le_put16(unsigned char *p, int16_t x) nogil
    void ff_le_put32(unsigned char *p, int32_t x) nogil
    void ff_le_put64(unsigned char *p, int64_t x) nogil


cdef inline Py_ssize_t ff_put_varint(unsigned char *p, uint64_t u) noexcept nogil:
    cdef Py_ssize_t i = 0
    while u > 0x7F:
        p[i] = <unsigned char>((u & 0x7F) | 0x80)
        u >>= 7
        i += 1
    p[i] = <unsigned char>u
    return i + 1


cdef inline Py_ssize_t grown_capacity(Py_ssize_t cap, Py_ssize_t need, Py_ssize_t floor) noexcept nogil:
    # doubling keeps appends amortised O(1)
    cap *= 2
    if cap < need:
        cap = need
    if cap < floor:
        cap = floor
    return cap


# ---- write buffer ---------------------------------------------------------------------------
# One per call on the stack: encoders may be shared between threads, so none keeps one.
cdef struct WBuf:
    unsigned char *p
    Py_ssize_t n
    Py_ssize_t cap
    unsigned char small[256]


cdef inline void wb_init(WBuf *b) noexcept nogil:
    b.p = b.small
    b.n = 0
    b.cap = 256


cdef inline void wb_free(WBuf *b) noexcept nogil:
    if b.p != b.small:
        free(b.p)
    b.p = b.small


cdef inline int wb_reserve_nogil(WBuf *b, Py_ssize_t k) noexcept nogil:
    # the first buffer is ``small`` (never freed); growth leaves it for the heap
    cdef Py_ssize_t cap
    cdef unsigned char *q
    if b.n + k <= b.cap:
        return 0
    cap = grown_capacity(b.cap, b.n + k, 0)
    if b.p == b.small:
        q = <unsigned char *> malloc(cap)
        if q != NULL:
            memcpy(q, b.small, b.n)
    else:
        q = <unsigned char *> realloc(b.p, cap)
    if q == NULL:
        return -1
    b.p = q
    b.cap = cap
    return 0


cdef inline int wb_reserve(WBuf *b, Py_ssize_t k) except -1:
    if b.n + k > b.cap and wb_reserve_nogil(b, k):
        raise MemoryError()
    return 0


cdef inline int wb_write(WBuf *b, const char *data, Py_ssize_t k) except -1:
    wb_reserve(b, k)
    memcpy(b.p + b.n, data, k)
    b.n += k
    return 0


cdef inline int wb_bytes_obj(WBuf *b, bytes data) except -1:
    return wb_write(b, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))


cdef inline int wb_varint(WBuf *b, uint64_t u) except -1:
    wb_reserve(b, 10)
    b.n += ff_put_varint(b.p + b.n, u)
    return 0


cdef inline int wb_le16(WBuf *b, int16_t x) except -1:
    wb_reserve(b, 2)
    ff_le_put16(b.p + b.n, x)
    b.n += 2
    return 0


cdef inline int wb_le32(WBuf *b, int32_t x) except -1:
    wb_reserve(b, 4)
    ff_le_put32(b.p + b.n, x)
    b.n += 4
    return 0


cdef inline int wb_le64(WBuf *b, int64_t x) except -1:
    wb_reserve(b, 8)
    ff_le_put64(b.p + b.n, x)
    b.n += 8
    return 0


cdef inline void wb_patch32(WBuf *b, Py_ssize_t at, int32_t x) noexcept nogil:
    # a length prefix, once the body after it is written
    ff_le_put32(b.p + at, x)


# ---- bounded reader -------------------------------------------------------------------------
cdef inline void need(Py_ssize_t pos, Py_ssize_t k, Py_ssize_t end) except *:
    if pos + k > end:
        raise ValueError(f"needs {k} bytes at byte {pos}, {end - pos} left")


cdef inline int read_varint(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end, int maxb,
                            uint64_t *out) except -1:
    cdef uint64_t r = 0
    cdef int shift = 0
    cdef int k
    cdef unsigned char c
    for k in range(maxb):
        if pos[0] >= end:
            raise ValueError(f"truncated varint at byte {pos[0]}")
        c = p[pos[0]]
        pos[0] += 1
        r |= (<uint64_t> (c & 0x7F)) << shift
        if c < 0x80:
            out[0] = r
            return 0
        shift += 7
    raise ValueError(f"malformed varint ending at byte {pos[0]}: more than {maxb} bytes")


cdef inline int32_t read_v32(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end) except? -1:
    cdef uint64_t u
    read_varint(p, pos, end, 5, &u)
    return <int32_t> <uint32_t> (u & 0xFFFFFFFFu)


cdef inline int64_t read_v64(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end) except? -1:
    cdef uint64_t u
    read_varint(p, pos, end, 10, &u)
    return <int64_t> u


cdef inline Py_ssize_t read_len(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end) except -1:
    cdef int32_t n = read_v32(p, pos, end)
    if n < 0 or pos[0] + n > end:
        raise ValueError(f"bad length {n} at byte {pos[0]}: only {end - pos[0]} bytes left")
    return n
