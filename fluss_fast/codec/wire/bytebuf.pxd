# The byte-buffer toolkit of the compiled codecs: ``from fluss_fast.codec.wire.bytebuf cimport ...``.
# Everything is inline (or a C declaration), so cimporting it costs no call and no module import;
# ``bytebuf.py`` is the same toolkit for the pure-Python codecs.
#
# - little-endian loads and stores on raw pointers (``le_bytes.h``): ff_le_get16/32/64, ff_le_put16/32/64;
# - ``ff_put_varint``: an unsigned LEB128 varint into memory the caller has reserved;
# - ``WBuf``: a growable write buffer that starts in 256 bytes of its own (a row, a key: no malloc),
#   with reserve / write / varint / little-endian puts, and skip + patch32 for a length written after
#   its body;
#   ``wb_reserve_nogil`` grows without the GIL (0, or -1 when out of memory), ``wb_grow_to`` to a size
#   the caller chose;
# - ``ColBuf``: a growable, zero-filled column buffer whose memory is a resizable Arrow buffer from
#   pyarrow's pool, for column builders that keep it across rows and hand it to an Arrow array
#   without a copy (``colbuf_take``); ``HeapBuf``, the same zero-filled growth on the heap, for builders
#   that reuse their memory batch after batch; ``bitmap_set`` for the Arrow bitmaps in either;
# - ``grown_capacity``: the one growth policy of all three;
# - a bounded reader over ``(p, *pos, end)``: need / read_varint / read_v32 / read_v64 / read_len,
#   each raising ValueError (with the byte offset) instead of reading past ``end``, and
#   read_varint_status, the same varint read without the GIL (a status instead of an exception).
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF

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


cdef inline int wb_grow_to(WBuf *b, Py_ssize_t cap) noexcept nogil:
    # to ``cap`` bytes exactly (a caller with its own sizing policy); 0, or -1 when out of memory.
    # The first buffer is ``small`` (never freed): growth leaves it for the heap.
    cdef unsigned char *q
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


cdef inline int wb_reserve_nogil(WBuf *b, Py_ssize_t k) noexcept nogil:
    if b.n + k <= b.cap:
        return 0
    return wb_grow_to(b, grown_capacity(b.cap, b.n + k, 0))


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


cdef inline Py_ssize_t wb_skip(WBuf *b, Py_ssize_t k) except -1:
    # room for ``k`` bytes written later (a length before its body): where they start
    cdef Py_ssize_t start
    wb_reserve(b, k)
    start = b.n
    b.n += k
    return start


cdef inline void wb_patch32(WBuf *b, Py_ssize_t at, int32_t x) noexcept nogil:
    # a length prefix, once the body after it is written
    ff_le_put32(b.p + at, x)


# ---- column buffer --------------------------------------------------------------------------
cdef struct ColBuf:
    char *p
    Py_ssize_t n
    Py_ssize_t cap
    PyObject *owner  # the pa.ResizableBuffer holding p (a strong reference)


cdef inline int colbuf_reserve(ColBuf *b, Py_ssize_t need) except -1:
    # new bytes are zeroed: validity and BOOLEAN bitmaps rely on it; the pool keeps freed pages
    # warm for the next batch
    cdef Py_ssize_t cap
    cdef object owner
    if need <= b.cap:
        return 0
    cap = grown_capacity(b.cap, need, 64)
    if b.owner == NULL:
        import pyarrow
        owner = pyarrow.allocate_buffer(cap, resizable=True)
        Py_INCREF(owner)
        b.owner = <PyObject *> owner
    else:
        owner = <object> b.owner
        owner.resize(cap)
    b.p = <char *> <uintptr_t> owner.address
    memset(b.p + b.cap, 0, cap - b.cap)
    b.cap = cap
    return 0


cdef inline void colbuf_free(ColBuf *b) noexcept:
    Py_XDECREF(b.owner)
    b.owner = NULL
    b.p = NULL
    b.n = 0
    b.cap = 0


cdef inline object colbuf_take(ColBuf *b, Py_ssize_t nbytes):
    """The first ``nbytes`` as an Arrow buffer; the ColBuf lets go of its memory."""
    if b.owner == NULL:
        import pyarrow
        return pyarrow.py_buffer(b"")
    out = (<object> b.owner).slice(0, nbytes)
    colbuf_free(b)
    return out


# ---- zero-filled heap buffer ---------------------------------------------------------------
# For builders that keep their buffers across batches and copy out what they hand over: cheaper
# to grow than an Arrow buffer (no Python call), and the memory is reused batch after batch.
cdef struct HeapBuf:
    char *p
    Py_ssize_t n
    Py_ssize_t cap


cdef inline int heapbuf_reserve(HeapBuf *b, Py_ssize_t need) except -1:
    # new bytes are zeroed, as ColBuf's
    cdef Py_ssize_t cap
    cdef char *q
    if need <= b.cap:
        return 0
    cap = grown_capacity(b.cap, need, 64)
    q = <char *> realloc(b.p, cap)
    if q == NULL:
        raise MemoryError()
    memset(q + b.cap, 0, cap - b.cap)
    b.p = q
    b.cap = cap
    return 0


cdef inline void heapbuf_free(HeapBuf *b) noexcept nogil:
    free(b.p)
    b.p = NULL
    b.n = 0
    b.cap = 0


cdef inline void bitmap_set(char *p, Py_ssize_t i, bint bit) noexcept nogil:
    # Arrow bitmaps (validity, BOOLEAN data), LSB first; the caller reserved the byte
    if bit:
        (<uint8_t *> p)[i >> 3] |= <uint8_t> (1 << (i & 7))
    else:
        (<uint8_t *> p)[i >> 3] &= <uint8_t> ~(1 << (i & 7))


# ---- bounded reader -------------------------------------------------------------------------
cdef inline void need(Py_ssize_t pos, Py_ssize_t k, Py_ssize_t end) except *:
    if pos + k > end:
        raise ValueError(f"needs {k} bytes at byte {pos}, {end - pos} left")


cdef inline int read_varint_status(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end, int maxb,
                                   uint64_t *out) noexcept nogil:
    # for loops that run without the GIL: 0 read (``pos`` moves past it), 1 runs past ``end``,
    # 2 longer than ``maxb`` bytes (``pos`` stays)
    cdef uint64_t r = 0
    cdef int shift = 0
    cdef int k
    cdef unsigned char c
    cdef Py_ssize_t q = pos[0]
    for k in range(maxb):
        if q >= end:
            return 1
        c = p[q]
        q += 1
        r |= (<uint64_t> (c & 0x7F)) << shift
        if c < 0x80:
            out[0] = r
            pos[0] = q
            return 0
        shift += 7
    return 2


cdef inline int read_varint(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end, int maxb,
                            uint64_t *out) except -1:
    cdef Py_ssize_t start = pos[0]
    cdef int rc = read_varint_status(p, pos, end, maxb, out)
    if rc == 0:
        return 0
    if rc == 1:
        raise ValueError(f"truncated varint at byte {start if start >= end else end}")
    raise ValueError(f"malformed varint ending at byte {start + maxb}: more than {maxb} bytes")


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
