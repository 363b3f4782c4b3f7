# cython: language_level=3, cdivision=True, boundscheck=False, wraparound=False
"""Compiled twin of :mod:`fluss_fast.codec.rows.rowarrow` (see there for the API and the rules).

Flat columns are decoded from the row bytes straight into Arrow buffers from pyarrow's memory pool
(validity bitmap, data, int32 offsets) that become ``pa.Array.from_buffers`` without a copy; no
Python object is made per value. Nested
columns (ARRAY, MAP, ROW) go through the pure module's converter, one Python value each. Every read
is bounds-checked against the row's end: a malformed row raises ValueError, never reads past it.

Calls of NOGIL_MIN_ROWS rows or more on a table without nested columns (value_list, value_batch,
values, rows) run the row loop with the GIL released: the server builds its changelogs on a worker
thread and the event loop thread needs the GIL meanwhile. The decode functions are nogil and take
the GIL back only to raise, for a nested field, another schema's plan or a buffer's growth, so one
code path serves both modes and the errors are the same. No Python local may enter them: Cython
would take the GIL at every exit to release it.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF

import array as _array

import pyarrow as pa

from fluss_fast.codec.rows.rowtypes import type_info as _type_info

cdef extern from *:
    """
    #include "utf8_valid.h"
    """
    int ff_utf8_valid(const unsigned char *s, Py_ssize_t n) nogil
    ctypedef long long int128 "__int128"
    ctypedef unsigned long long uint128 "unsigned __int128"
    bint mul_overflow "__builtin_mul_overflow"(int64_t a, int64_t b, int64_t* out) nogil
    bint add_overflow "__builtin_add_overflow"(int64_t a, int64_t b, int64_t* out) nogil
    int popcount64 "__builtin_popcountll"(unsigned long long x) nogil

from fluss_fast.codec.rows.row_type_codes cimport *  # C_BOOLEAN .. C_ROW
from fluss_fast.codec.wire.bytebuf cimport (ColBuf, bitmap_set, colbuf_free, colbuf_reserve, colbuf_take,
                                           ff_le_get16, ff_le_get32, ff_le_get64, read_varint_status)

# How a column is stored in Arrow
cdef enum:
    O_BOOL = 0
    O_FIXED = 1    # little-endian values of ``width`` bytes (ints, floats, dates, times, timestamps)
    O_VAR = 2      # utf8 / binary: int32 offsets + data
    O_FSB = 3      # fixed_size_binary(width)
    O_DEC = 4      # decimal128: 16 bytes
    O_NESTED = 5   # Python values, pa.array at the end

cdef enum:
    MILLIS_PER_DAY = 86400000

# Calls with at least this many rows decode them with the GIL released (flat schemas). Fewer rows
# keep it: taking the GIL back can wait a switch interval (5 ms) behind another thread, which costs
# more than a short loop that held it; the server's PUT_KV builds changelogs this long on a worker
# thread (kvfast.THREAD_BUILD_ROWS), where releasing lets the event loop thread run meanwhile.
cdef Py_ssize_t NOGIL_MIN_ROWS = 512

cdef struct Col:
    int out
    int width
    bint nullable
    ColBuf valid
    ColBuf data
    ColBuf offs

cdef struct Field:
    int code
    int target      # column of the latest schema, -1 when the column is gone
    int length      # CHAR(n) / BINARY(n)
    int precision
    int scale
    bint compact    # DECIMAL(p <= 18), TIMESTAMP(p <= 3)
    bint fixed      # IndexedRow: fixed-length field
    int size        # IndexedRow: its size

cdef uint128 POW10[39]
cdef int _i
POW10[0] = 1
for _i in range(1, 39):
    POW10[_i] = POW10[_i - 1] * 10


# The per-row buffers (validity and BOOLEAN bitmaps, fixed-width data, offsets) always have room for
# the row being added: RowArrowBuilder grows them all before a row starts (``_room``), so these
# writers need no checks. Only variable-length data grows inside a row.
cdef inline void put_fixed(Col* c, const void* src) noexcept nogil:
    """Appends one value of c.width bytes (src in native = little-endian order)."""
    memcpy(c.data.p + c.data.n, src, c.width)
    c.data.n += c.width


cdef inline int put_var(Col* c, const uint8_t* src, Py_ssize_t n) except -1 nogil:
    # runs without the GIL on the decode fast path: only growing the Arrow buffer (a pyarrow call,
    # rare once the caller reserved from the input size) and raising take it back
    cdef Py_ssize_t at = c.data.n
    if at + n > 0x7FFFFFFF:
        with gil:
            raise ValueError("more than 2 GiB of variable-length data in one column")
    if at + n > c.data.cap:
        with gil:
            colbuf_reserve(&c.data, at + n)
    memcpy(c.data.p + at, src, n)
    c.data.n = at + n
    (<int32_t*>(c.offs.p + c.offs.n))[0] = <int32_t>(at + n)
    c.offs.n += 4
    return 0


cdef inline void put_null(Col* c, Py_ssize_t row) noexcept nogil:
    bitmap_set(c.valid.p, row, 0)
    if c.out == O_BOOL:
        bitmap_set(c.data.p, row, 0)
    elif c.out == O_VAR:
        (<int32_t*>(c.offs.p + c.offs.n))[0] = <int32_t>c.data.n
        c.offs.n += 4
    elif c.out != O_NESTED:
        memset(c.data.p + c.data.n, 0, c.width)
        c.data.n += c.width


cdef inline Py_ssize_t count_bits(const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """Set bits among the first ``n`` of bitmap ``b`` (bits past ``n`` may be stale: masked)."""
    cdef Py_ssize_t i, words = n >> 6, r = 0
    cdef uint64_t w
    for i in range(words):
        memcpy(&w, b + (i << 3), 8)
        r += popcount64(w)
    for i in range(words << 3, n >> 3):
        r += popcount64(b[i])
    if n & 7:
        r += popcount64(b[n >> 3] & ((1 << (n & 7)) - 1))
    return r


cdef object _as_i64(object x):
    """A contiguous int64 buffer holding the values of ``x``."""
    cdef object mv
    if isinstance(x, _array.array) and x.typecode == "q":
        return x
    try:
        mv = memoryview(x)
    except TypeError:
        return _array.array("q", x)
    if mv.ndim == 1 and mv.itemsize == 8 and mv.format in ("q", "l", "<q", "<l", "=q", "=l") \
            and mv.c_contiguous:
        return x
    return _array.array("q", [int(v) for v in x])


include "rowarrow_convert.pxi"


cdef class RowArrowBuilder:
    """Rows added one at a time (decoded at once, the bytes are not kept); ``finish()`` returns
    them as a RecordBatch of the latest schema and starts over."""
    cdef RowsToArrow conv
    cdef Col* cols
    cdef int ncols
    cdef Py_ssize_t n
    cdef Py_ssize_t room   # rows the per-row buffers have space for
    cdef list nested
    cdef int last_sid
    cdef _Plan last_plan

    def __cinit__(self, RowsToArrow conv):
        cdef int j
        self.conv = conv
        self.ncols = conv.ncols
        self.cols = <Col*>calloc(max(self.ncols, 1), sizeof(Col))
        if self.cols == NULL:
            raise MemoryError()
        self.nested = [None] * self.ncols
        for j in range(self.ncols):
            self.cols[j].out = conv._outs[j]
            self.cols[j].width = conv._widths[j]
            self.cols[j].nullable = conv._nullable[j]
            if conv._outs[j] == O_NESTED:
                self.nested[j] = []
        self._start()

    def __dealloc__(self):
        cdef int j
        if self.cols != NULL:
            for j in range(self.ncols):
                colbuf_free(&self.cols[j].valid)
                colbuf_free(&self.cols[j].data)
                colbuf_free(&self.cols[j].offs)
            free(self.cols)

    cdef int _start(self) except -1:
        cdef int j
        cdef Col* c
        self.n = 0
        self.room = 0
        for j in range(self.ncols):
            c = &self.cols[j]
            c.data.n = 0
            c.offs.n = 0
            if c.out == O_VAR:
                colbuf_reserve(&c.offs, 4)
                (<int32_t*>c.offs.p)[0] = 0
                c.offs.n = 4
            if c.out == O_NESTED:
                self.nested[j] = []
        return 0

    cdef int _reserve(self, Py_ssize_t rows) except -1:
        cdef int j
        cdef Col* c
        for j in range(self.ncols):
            c = &self.cols[j]
            colbuf_reserve(&c.valid, (rows >> 3) + 1)
            if c.out == O_BOOL:
                colbuf_reserve(&c.data, (rows >> 3) + 1)
            elif c.out == O_VAR:
                colbuf_reserve(&c.offs, (rows + 1) * 4)
            elif c.out != O_NESTED:
                colbuf_reserve(&c.data, rows * c.width)
        if rows > self.room:
            self.room = rows
        return 0

    cdef int _reserve_var(self, Py_ssize_t rows, Py_ssize_t total) except -1:
        """Room in every variable-length column for ``rows`` more rows whose stored values hold
        ``total`` bytes, so a decode without the GIL rarely has to take it back to grow one.

        A column's data is at most ``total`` (a field is part of its row): the last batch's bytes
        per row with a quarter to spare, capped there; before a first batch an even share of
        ``total`` (all columns together never reserve more than the input holds).
        """
        cdef int j, nvar = 0
        cdef Col* c
        cdef double hint
        cdef Py_ssize_t want
        for j in range(self.ncols):
            if self.cols[j].out == O_VAR:
                nvar += 1
        for j in range(self.ncols):
            c = &self.cols[j]
            if c.out != O_VAR:
                continue
            hint = self.conv._var_hint[j]
            if hint < 0:
                want = total // nvar + 256
            elif rows * hint * 1.25 + 256 < total:
                want = <Py_ssize_t>(rows * hint * 1.25) + 256
            else:
                want = total
            if want > 0x7FFFFFFF - c.data.n:
                want = 0x7FFFFFFF - c.data.n
            colbuf_reserve(&c.data, c.data.n + want)
        return 0

    cdef void _rollback(self) noexcept nogil:
        """Forgets a partly added row: every column back to ``self.n`` rows."""
        cdef int j
        cdef Col* c
        for j in range(self.ncols):
            c = &self.cols[j]
            if c.out == O_VAR:
                c.offs.n = (self.n + 1) * 4
                c.data.n = (<int32_t*>c.offs.p)[self.n]
            elif c.out == O_NESTED:
                with gil:
                    del self.nested[j][self.n:]
            elif c.out != O_BOOL:
                c.data.n = self.n * c.width

    def __len__(self):
        return self.n

    def add_value(self, buf, Py_ssize_t start=0, end=None):
        """A stored value ``buf[start:end]``: int16 LE schema id, then the row."""
        self._add_obj(buf, start, end, True, -1)

    def add_row(self, buf, Py_ssize_t start=0, end=None, int schema_id=-1):
        """A bare row ``buf[start:end]`` written under ``schema_id`` (-1: the latest schema)."""
        self._add_obj(buf, start, end, False, schema_id)

    cdef int _add_obj(self, object buf, Py_ssize_t start, object end, bint value, int schema_id) except -1:
        cdef Py_buffer view
        cdef Py_ssize_t stop
        if PyBytes_CheckExact(buf):
            stop = PyBytes_GET_SIZE(buf) if end is None else end
            return self._add_span(<const uint8_t*>PyBytes_AS_STRING(buf), PyBytes_GET_SIZE(buf), start, stop,
                                  value, schema_id)
        PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
        try:
            stop = view.len if end is None else end
            return self._add_span(<const uint8_t*>view.buf, view.len, start, stop, value, schema_id)
        finally:
            PyBuffer_Release(&view)

    cdef int _add_span(self, const uint8_t* d, Py_ssize_t size, int64_t start, int64_t end, bint value,
                       int schema_id) except -1 nogil:
        # nogil so that the value_list / value_batch / values loops can run without the GIL; the
        # rare steps that need Python (a new schema's plan, more room, errors) take it back
        cdef bint done = False
        if not (0 <= start <= end <= size):
            with gil:
                raise ValueError(f"span {start}..{end} is outside the {size}-byte buffer")
        if value:
            if end - start < 2:
                with gil:
                    raise ValueError(f"row {self.n}: a value of {end - start} bytes has no schema id")
            schema_id = ff_le_get16(d + start)
            start += 2
        if schema_id != self.last_sid or self.last_plan is None:
            with gil:
                self._use_plan(schema_id)
        if self.n >= self.room:
            with gil:
                self._reserve(max(self.room * 2, 64))
        try:
            self._decode(d, start, end, self.last_plan)
            done = True
        finally:
            if not done:
                self._rollback()
        self.n += 1
        return 0

    cdef int _use_plan(self, int schema_id) except -1:
        cdef _Plan plan = self.conv._plan(schema_id)
        self.last_sid = schema_id
        self.last_plan = plan
        return 0

    cdef object _fail(self, _Plan plan, int k, detail):
        from fluss_fast.codec.rows.rowarrow import row_error
        name = plan.names[k] if 0 <= k < plan.nfields else "?"
        return row_error(self.conv.kv_format, self.conv.table_name, self.n, name, detail)

    cdef int _decode(self, const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, _Plan plan) except -1 nogil:
        # callable with or without the GIL: flat fields touch only C memory; raising, nested fields
        # and growing a variable-length column take the GIL (``with gil`` nests when it is held)
        cdef Py_ssize_t row = self.n
        cdef bint indexed = self.conv._indexed
        cdef Py_ssize_t p = pos + plan.header
        cdef Py_ssize_t vslot = pos + plan.nbytes
        cdef Py_ssize_t n, q
        cdef int k, rc, j, code
        cdef Field* f
        cdef Col* c
        cdef uint64_t u
        cdef int64_t v64, millis, out64
        cdef int32_t v32, nanos
        cdef uint128 big
        cdef int128 dec
        cdef const uint8_t* s
        cdef uint8_t b8
        if pos + plan.header > end:
            with gil:
                raise self._fail(plan, 0 if plan.nfields else -1,
                                 f"{end - pos} bytes, the header needs {plan.header}")
        for k in range(plan.nfields):
            f = &plan.fields[k]
            c = NULL if f.target < 0 else &self.cols[f.target]
            if d[pos + (k >> 3)] & (1 << (k & 7)):
                if c != NULL:
                    if not c.nullable:
                        with gil:
                            raise self._fail(plan, k, "NULL in a NOT NULL column")
                    put_null(c, row)
                    if c.out == O_NESTED:
                        with gil:
                            self.nested[f.target].append(None)
                continue
            code = f.code
            # -- fixed-size scalars, the same bytes in both formats
            if code == C_BOOLEAN or code == C_TINYINT:
                if p + 1 > end:
                    with gil:
                        raise self._fail(plan, k, "truncated")
                if c != NULL:
                    if code == C_BOOLEAN:
                        bitmap_set(c.data.p, row, d[p] != 0)
                    else:
                        put_fixed(c, d + p)
                    bitmap_set(c.valid.p, row, 1)
                p += 1
                continue
            if code == C_SMALLINT or code == C_FLOAT or code == C_DOUBLE:
                n = 2 if code == C_SMALLINT else 4 if code == C_FLOAT else 8
                if p + n > end:
                    with gil:
                        raise self._fail(plan, k, "truncated")
                if c != NULL:
                    put_fixed(c, d + p)
                    bitmap_set(c.valid.p, row, 1)
                p += n
                continue
            # -- 32-bit integers: INT, DATE, TIME
            if code == C_INT or code == C_DATE or code == C_TIME:
                if indexed:
                    if p + 4 > end:
                        with gil:
                            raise self._fail(plan, k, "truncated")
                    v32 = ff_le_get32(d + p)
                    p += 4
                else:
                    rc = read_varint_status(d, &p, end, 5, &u)
                    if rc:
                        with gil:
                            raise self._fail(plan, k, "varint runs past the row's end" if rc == 1
                                             else "malformed varint: more than 5 bytes")
                    v32 = <int32_t><uint32_t>u
                if code == C_TIME:
                    if v32 < 0 or v32 >= MILLIS_PER_DAY:
                        with gil:
                            raise self._fail(plan, k, f"TIME value {v32} ms is outside a day")
                    if f.precision == 0:
                        v32 = v32 // 1000
                if c != NULL:
                    if c.width == 8:
                        v64 = <int64_t>v32 * (1000 if f.precision <= 6 else 1000000)
                        put_fixed(c, &v64)
                    else:
                        put_fixed(c, &v32)
                    bitmap_set(c.valid.p, row, 1)
                continue
            # -- 64-bit integers: BIGINT, compact DECIMAL, TIMESTAMP millis (+ nanos)
            if code == C_BIGINT or (code == C_DECIMAL and f.compact) or code == C_TIMESTAMP \
                    or code == C_TIMESTAMP_LTZ:
                if indexed:
                    if p + 8 > end:
                        with gil:
                            raise self._fail(plan, k, "truncated")
                    v64 = ff_le_get64(d + p)
                    p += 8
                else:
                    rc = read_varint_status(d, &p, end, 10, &u)
                    if rc:
                        with gil:
                            raise self._fail(plan, k, "varint runs past the row's end" if rc == 1
                                             else "malformed varint: more than 10 bytes")
                    v64 = <int64_t>u
                if code == C_BIGINT:
                    if c != NULL:
                        put_fixed(c, &v64)
                        bitmap_set(c.valid.p, row, 1)
                    continue
                if code == C_DECIMAL:
                    if not (-<int64_t>POW10[f.precision] < v64 < <int64_t>POW10[f.precision]):
                        with gil:
                            raise self._fail(plan, k, f"unscaled decimal {v64} has more than "
                                                      f"{f.precision} digits")
                    if c != NULL:
                        dec = v64
                        put_fixed(c, &dec)
                        bitmap_set(c.valid.p, row, 1)
                    continue
                millis = v64
                nanos = 0
                if not f.compact:
                    if indexed:
                        if p + 4 > end:
                            with gil:
                                raise self._fail(plan, k, "truncated")
                        nanos = ff_le_get32(d + p)
                        p += 4
                    else:
                        rc = read_varint_status(d, &p, end, 5, &u)
                        if rc:
                            with gil:
                                raise self._fail(plan, k, "varint runs past the row's end" if rc == 1
                                                 else "malformed varint: more than 5 bytes")
                        nanos = <int32_t><uint32_t>u
                    if nanos < 0 or nanos >= 1000000:
                        with gil:
                            raise self._fail(plan, k, f"nanosecond of millisecond {nanos} is outside 0..999999")
                if f.precision == 0:
                    out64 = millis // 1000
                elif f.precision <= 3:
                    out64 = millis
                elif f.precision <= 6:
                    if mul_overflow(millis, 1000, &out64) or add_overflow(out64, nanos // 1000, &out64):
                        with gil:
                            raise self._fail(plan, k, f"timestamp {millis} ms + {nanos} ns is out of range "
                                                      f"for precision {f.precision}")
                else:
                    if mul_overflow(millis, 1000000, &out64) or add_overflow(out64, nanos, &out64):
                        with gil:
                            raise self._fail(plan, k, f"timestamp {millis} ms + {nanos} ns is out of range "
                                                      f"for precision {f.precision}")
                if c != NULL:
                    put_fixed(c, &out64)
                    bitmap_set(c.valid.p, row, 1)
                continue
            # -- everything else is a span of bytes
            if indexed:
                if f.fixed:
                    n = f.size
                else:
                    n = ff_le_get32(d + vslot)
                    vslot += 4
                if n < 0 or p + n > end:
                    with gil:
                        raise self._fail(plan, k, f"length {n} at byte {p - pos} runs past the row's end")
                q = p
            else:
                q = p
                rc = read_varint_status(d, &q, end, 5, &u)
                if rc:
                    with gil:
                        raise self._fail(plan, k, "varint runs past the row's end" if rc == 1
                                         else "malformed varint: more than 5 bytes")
                n = <int32_t><uint32_t>u
                if n < 0 or q + n > end:
                    with gil:
                        raise self._fail(plan, k, f"length {n} at byte {p - pos} runs past the row's end")
            p = q + n
            s = d + q
            if code == C_STRING or code == C_CHAR:
                if indexed and code == C_CHAR:
                    while n > 0 and s[n - 1] == 0:
                        n -= 1
                if not ff_utf8_valid(s, n):
                    with gil:
                        raise self._fail(plan, k, "invalid UTF-8")
                if c != NULL:
                    put_var(c, s, n)
                    bitmap_set(c.valid.p, row, 1)
            elif code == C_BYTES:
                if c != NULL:
                    put_var(c, s, n)
                    bitmap_set(c.valid.p, row, 1)
            elif code == C_BINARY:
                if n > f.length:
                    with gil:
                        raise self._fail(plan, k, f"{n} bytes do not fit BINARY({f.length})")
                if c != NULL:
                    if c.data.n + c.width > c.data.cap:
                        with gil:
                            colbuf_reserve(&c.data, c.data.n + c.width)
                    memcpy(c.data.p + c.data.n, s, n)
                    memset(c.data.p + c.data.n + n, 0, c.width - n)
                    c.data.n += c.width
                    bitmap_set(c.valid.p, row, 1)
            elif code == C_DECIMAL:
                if n > 16:
                    with gil:
                        raise self._fail(plan, k, f"decimal of {n} bytes, at most 16")
                big = <uint128>0
                if n > 0 and s[0] & 0x80:
                    big = ~big
                for j in range(n):
                    big = (big << 8) | s[j]
                dec = <int128>big
                if not (-<int128>POW10[f.precision] < dec < <int128>POW10[f.precision]):
                    with gil:
                        raise self._fail(plan, k, f"unscaled decimal {_i128(dec)} has more than "
                                                  f"{f.precision} digits")
                if c != NULL:
                    put_fixed(c, &dec)
                    bitmap_set(c.valid.p, row, 1)
            else:  # ARRAY, MAP, ROW
                with gil:
                    self._nested_value(plan, k, s, n, f.target if c != NULL else -1)
                if c != NULL:
                    bitmap_set(c.valid.p, row, 1)
        if p > end:
            with gil:
                raise self._fail(plan, plan.nfields - 1, f"fields run {p - end} bytes past the row's end")
        for k in range(plan.nmissing):
            j = plan.missing[k]
            c = &self.cols[j]
            if not c.nullable:
                with gil:
                    raise self._missing(plan, j)
            put_null(c, row)
            if c.out == O_NESTED:
                with gil:
                    self.nested[j].append(None)
        return 0

    cdef object _missing(self, _Plan plan, int j):
        # a helper, not an import inside _decode: a Python local there would make every call take
        # the GIL at its exit to release it
        from fluss_fast.codec.rows.rowarrow import row_error
        return row_error(self.conv.kv_format, self.conv.table_name, self.n, self.conv._names[j],
                         f"schema {plan.schema_id} has no value for this NOT NULL column")

    cdef int _nested_value(self, _Plan plan, int k, const uint8_t* s, Py_ssize_t n, int target) except -1:
        """An ARRAY / MAP / ROW field through the pure module's reader (needs the GIL)."""
        try:
            value = plan.readers[k](PyBytes_FromStringAndSize(<const char*>s, n), 0, n)
        except Exception as e:  # noqa: BLE001 - ValueError, struct.error, IndexError, BadValue...
            raise self._fail(plan, k, e) from None
        if target >= 0:
            self.nested[target].append(value)
        return 0

    def finish(self):
        """The rows added so far as a RecordBatch of the latest schema; then starts over."""
        return self._finish(True)

    cdef object _finish(self, bint restart):
        """``finish``; ``restart`` False for a builder about to go (RowsToArrow's one-call
        methods): it then does not allocate the next batch's first offsets."""
        cdef int j
        cdef Col* c
        cdef Py_ssize_t n = self.n, nulls, nb = (self.n + 7) >> 3
        arrays = []
        try:
            for j in range(self.ncols):
                c = &self.cols[j]
                t = self.conv._arrow_types[j]
                if c.out == O_NESTED:
                    try:
                        arrays.append(pa.array(self.nested[j], type=t))
                    except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
                        raise ValueError(f"column '{self.conv._names[j]}': cannot build the Arrow "
                                         f"column: {e}") from None
                    continue
                if c.out == O_VAR and n > 0:
                    self.conv._var_hint[j] = <double>c.data.n / n
                nulls = n - count_bits(<const uint8_t*>c.valid.p, n)
                validity = None if nulls == 0 else colbuf_take(&c.valid, nb)
                if c.out == O_BOOL:
                    bufs = [validity, colbuf_take(&c.data, nb)]
                elif c.out == O_VAR:
                    bufs = [validity, colbuf_take(&c.offs, (n + 1) * 4), colbuf_take(&c.data, c.data.n)]
                else:
                    bufs = [validity, colbuf_take(&c.data, c.data.n)]
                arrays.append(pa.Array.from_buffers(t, n, bufs, null_count=nulls))
        finally:
            if restart:
                self._start()
            else:
                self.n = 0
                self.room = 0
        return pa.RecordBatch.from_arrays(arrays, schema=self.conv.arrow_schema)


cdef object _i128(int128 v):
    """A Python int of an int128 (only for error messages)."""
    cdef bint neg = v < 0
    cdef uint128 m = <uint128>v
    if neg:
        m = (~m) + 1
    r = int(<uint64_t>(m >> 64)) * (1 << 64) + int(<uint64_t>m)
    return -r if neg else r
