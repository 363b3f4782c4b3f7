# cython: language_level=3
"""Compiled twin of :mod:`fluss_fast.codec.rows` (see there for the formats and the value model).

Scalars (integers, floats, strings, bytes, dates, times, plain datetimes) are converted and written
in C. Everything else (decimals, nested ARRAY/MAP/ROW, pandas/numpy timestamps, and the formatting
of every error message) goes through the pure module's helpers, so both twins accept the same
values, produce the same bytes and raise the same messages.
"""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, realloc, free
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.unicode cimport PyUnicode_CheckExact, PyUnicode_DecodeUTF8
from cpython.long cimport PyLong_CheckExact, PyLong_AsLongLong, PyLong_FromLongLong
from cpython.float cimport PyFloat_CheckExact, PyFloat_AS_DOUBLE
cimport cpython.datetime as cdt

import datetime as _dt
import struct as _struct

from fluss_fast.codec.le_bytes cimport (ff_le_get16, ff_le_get32, ff_le_get64, ff_le_put16, ff_le_put32,
                                        ff_le_put64)

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except NULL

cdef extern from *:
    """
    #include "le_bytes.h"
    #include "civil_days.h"
    #include <math.h>
    /* Java's canonical NaNs; Python floats may carry other NaN payloads */
    static inline uint32_t ff_rw_f32bits(double x)
    { if (x != x) return 0x7FC00000u; float f = (float)x; uint32_t v; memcpy(&v, &f, 4); return v; }
    static inline uint64_t ff_rw_f64bits(double x)
    { if (x != x) return 0x7FF8000000000000ull; uint64_t v; memcpy(&v, &x, 8); return v; }
    static inline double ff_rw_f32(const unsigned char *p)
    { uint32_t v; float f; memcpy(&v, p, 4); v = FF_LE_BSWAP32(v); memcpy(&f, &v, 4); return (double)f; }
    static inline double ff_rw_f64(const unsigned char *p)
    { uint64_t v; double d; memcpy(&v, p, 8); v = FF_LE_BSWAP64(v); memcpy(&d, &v, 8); return d; }
    """
    uint32_t ff_rw_f32bits(double x) nogil
    uint64_t ff_rw_f64bits(double x) nogil
    double ff_rw_f32(const unsigned char *p) nogil
    double ff_rw_f64(const unsigned char *p) nogil
    int64_t ff_days_from_civil(int64_t y, int64_t m, int64_t d) nogil
    void ff_civil_from_days(int64_t z, int *y, int *m, int *d) nogil

cdt.import_datetime()

from fluss_fast.codec.row_type_codes cimport *  # C_BOOLEAN .. C_ROW

# datetime's range, in days / millis since the epoch: outside it the pure helpers raise properly
cdef int64_t MIN_DAYS = -719162
cdef int64_t MAX_DAYS = 2932896
cdef int64_t MIN_MILLIS = -62135596800000
cdef int64_t MAX_MILLIS = 253402300799999

cdef object _UTC = _dt.timezone.utc
try:  # pyarrow's aware values carry this zone; its offset is always zero, no need to ask it
    import zoneinfo as _zoneinfo
    _ZONE_UTC = _zoneinfo.ZoneInfo("UTC")
except Exception:  # no tz database here: nothing can carry it either
    _ZONE_UTC = _UTC
cdef object _ZUTC = _ZONE_UTC
cdef object _py = None  # fluss_fast.codec.rows, imported on first use (it imports this module)
cdef object _Decimal = None
cdef object _conv_decimal = None
cdef object _make_decimal = None
cdef object _bigint_bytes = None


cdef object _pure():
    global _py, _Decimal, _conv_decimal, _make_decimal, _bigint_bytes
    if _py is None:
        from fluss_fast.codec import rows as module
        _Decimal = module._Decimal
        _conv_decimal = module.conv_decimal
        _make_decimal = module.make_decimal
        _bigint_bytes = module.bigint_bytes
        _py = module
    return _py


# ----------------------------------------------------------------------------------------------
# growable output buffer (per call: encoders may be shared between threads)
# ----------------------------------------------------------------------------------------------
# (the WBuf struct with wb_init / wb_free, like the codec classes' C attributes, is in _rows.pxd)


cdef int wb_grow(WBuf *b, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap = b.cap * 2
    cdef unsigned char *q
    if cap < b.n + need:
        cap = b.n + need
    if b.p == b.small:
        q = <unsigned char *> malloc(cap)
        if q != NULL:
            memcpy(q, b.small, b.n)
    else:
        q = <unsigned char *> realloc(b.p, cap)
    if q == NULL:
        raise MemoryError()
    b.p = q
    b.cap = cap
    return 0


cdef inline int wb_reserve(WBuf *b, Py_ssize_t k) except -1:
    if b.n + k > b.cap:
        wb_grow(b, k)
    return 0


cdef inline int wb_write(WBuf *b, const char *data, Py_ssize_t k) except -1:
    wb_reserve(b, k)
    memcpy(b.p + b.n, data, k)
    b.n += k
    return 0


cdef inline int wb_varint(WBuf *b, uint64_t u) except -1:
    wb_reserve(b, 10)
    while u > 0x7F:
        b.p[b.n] = <unsigned char> ((u & 0x7F) | 0x80)
        b.n += 1
        u >>= 7
    b.p[b.n] = <unsigned char> u
    b.n += 1
    return 0


cdef inline int wb_bytes_obj(WBuf *b, bytes data) except -1:
    return wb_write(b, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))


# ----------------------------------------------------------------------------------------------
# per-field plan
# ----------------------------------------------------------------------------------------------
cdef class _Field:  # attributes in _rows.pxd
    pass


cdef list _plan(infos, str fmt):
    py = _pure()
    cdef list out = []
    cdef _Field f
    for t in infos:
        f = _Field()
        f.code = t.code
        f.nullable = t.nullable
        f.compact = t.compact
        f.fixed = t.fixed
        f.size = t.size
        f.scale = t.scale
        f.precision = t.precision
        f.info = t
        if fmt == "COMPACTED":
            f.slow_write = py._compacted_writer(t)
            f.slow_read = py._compacted_reader(t)
        elif t.fixed:
            f.slow_write = py._indexed_fixed_writer(t)
            f.slow_read = py._indexed_fixed_reader(t)
        else:
            f.slow_write = py._indexed_var_writer(t)
            f.slow_read = py._indexed_var_reader(t)
        out.append(f)
    return out


# ----------------------------------------------------------------------------------------------
# scalar conversions; return 1 when done in C, 0 to let the pure helper handle the value
# ----------------------------------------------------------------------------------------------
cdef inline int int_value(object v, int code, int64_t *out) except -1:
    cdef long long x
    if not PyLong_CheckExact(v):
        return 0
    try:
        x = PyLong_AsLongLong(v)
    except OverflowError:
        return 0
    if code == C_TINYINT:
        if x < -128 or x > 127:
            return 0
    elif code == C_SMALLINT:
        if x < -32768 or x > 32767:
            return 0
    elif code == C_INT:
        if x < -2147483648 or x > 2147483647:
            return 0
    out[0] = x
    return 1


cdef inline int float_value(object v, double *out) except -1:
    if PyFloat_CheckExact(v):
        out[0] = PyFloat_AS_DOUBLE(v)
        return 1
    return 0


cdef inline int date_value(object v, int64_t *out) except -1:
    if not cdt.PyDate_CheckExact(v):
        return 0
    out[0] = ff_days_from_civil(cdt.date_year(v), cdt.date_month(v), cdt.date_day(v))
    return 1


cdef inline int time_value(object v, int64_t *out) except -1:
    if not cdt.PyTime_CheckExact(v):
        return 0
    cdef int us = cdt.time_microsecond(v)
    if us % 1000:
        return 0
    out[0] = ((cdt.time_hour(v) * 60 + cdt.time_minute(v)) * 60 + cdt.time_second(v)) * 1000 + us // 1000
    return 1


cdef inline int timestamp_value(object v, bint ltz, int64_t *millis, int32_t *nanos) except -1:
    if not cdt.PyDateTime_CheckExact(v):
        return 0
    tz = cdt.datetime_tzinfo(v)
    cdef int64_t shift = 0
    if tz is not None and not (ltz and (tz is _UTC or tz is _ZUTC)):
        if not ltz:
            return 0  # aware values are rejected for NTZ by the pure helper, with its message
        # LTZ: any zone (zoneinfo's UTC from pyarrow, fixed offsets, DST zones) by its offset
        off = v.utcoffset()
        if off is None:
            return 0
        shift = ((<int64_t> cdt.timedelta_days(off) * 86400 + cdt.timedelta_seconds(off)) * 1000000
                 + cdt.timedelta_microseconds(off))
    cdef int64_t days = ff_days_from_civil(cdt.datetime_year(v), cdt.datetime_month(v),
                                              cdt.datetime_day(v))
    cdef int64_t micros = ((days * 86400 + cdt.datetime_hour(v) * 3600 + cdt.datetime_minute(v) * 60
                            + cdt.datetime_second(v)) * 1000000 + cdt.datetime_microsecond(v)) - shift
    cdef int64_t ms = micros // 1000
    cdef int64_t rem = micros % 1000
    if rem < 0:
        rem += 1000
        ms -= 1
    millis[0] = ms
    nanos[0] = <int32_t> (rem * 1000)
    return 1


cdef int64_t _P10[19]
_P10[0] = 1
for _k in range(1, 19):
    _P10[_k] = _P10[_k - 1] * 10


cdef int decimal_value(object v, int scale, int precision, int64_t *out) except -1:
    """The unscaled value of an exact Decimal from its text, HALF_UP; 0 when the pure helper must
    decide (special values, too many digits, overflow, or an error to report)."""
    cdef Py_ssize_t n, i = 0
    cdef const char *s
    cdef bint neg = False, dot = False
    cdef uint64_t mant = 0
    cdef int ndig = 0, frac = 0, k
    cdef long e = 0
    cdef bint eneg = False
    cdef int64_t q, r, p
    cdef char c
    text = str(v)
    s = PyUnicode_AsUTF8AndSize(text, &n)
    if n == 0:
        return 0
    if s[0] == 45 or s[0] == 43:  # '-' '+'
        neg = s[0] == 45
        i = 1
    while i < n:
        c = s[i]
        if 48 <= c <= 57:
            if mant or c != 48:
                ndig += 1
                if ndig > 18:
                    return 0
            mant = mant * 10 + (c - 48)
            if dot:
                frac += 1
        elif c == 46 and not dot:
            dot = True
        else:
            break
        i += 1
    if i < n:
        if s[i] != 69 and s[i] != 101:  # 'E' 'e'
            return 0
        i += 1
        if i < n and (s[i] == 45 or s[i] == 43):
            eneg = s[i] == 45
            i += 1
        if i >= n:
            return 0
        while i < n:
            c = s[i]
            if not (48 <= c <= 57) or e > 100000:
                return 0
            e = e * 10 + (c - 48)
            i += 1
        if eneg:
            e = -e
    k = <int> (e - frac + scale) if -100000 < e < 100000 else 1000000
    if k >= 0:
        if k > 18 or (mant and mant > <uint64_t> (999999999999999999 // _P10[k])):
            return 0
        q = <int64_t> mant * _P10[k]
    else:
        if -k > 18:
            return 0
        p = _P10[-k]
        q = <int64_t> mant // p
        r = <int64_t> mant % p
        if r + r >= p:
            q += 1
    if precision <= 18 and q >= _P10[precision]:
        return 0
    out[0] = -q if neg else q
    return 1


cdef object decimal_object(int64_t u, int scale):
    # "<unscaled>E-<scale>" is exact for the Decimal constructor; formatted by hand (snprintf is slow)
    cdef char buf[48]
    cdef char *q = buf + 48
    cdef uint64_t m = (<uint64_t> 0) - <uint64_t> u if u < 0 else <uint64_t> u
    cdef int sc = scale
    while True:
        q -= 1
        q[0] = <char> (48 + sc % 10)
        sc //= 10
        if sc == 0:
            break
    q -= 2
    q[0] = 69   # 'E'
    q[1] = 45   # '-'
    while True:
        q -= 1
        q[0] = <char> (48 + m % 10)
        m //= 10
        if m == 0:
            break
    if u < 0:
        q -= 1
        q[0] = 45
    return _Decimal(PyUnicode_DecodeUTF8(q, buf + 48 - q, NULL))


cdef inline object make_date(int64_t days):
    cdef int y, m, d
    if days < MIN_DAYS or days > MAX_DAYS:
        return _pure().make_date(days)
    ff_civil_from_days(days, &y, &m, &d)
    return cdt.date_new(y, m, d)


cdef inline object make_time(int64_t ms):
    if ms < 0 or ms >= 86400000:
        return _pure().make_time(ms)
    return cdt.time_new(<int> (ms // 3600000), <int> ((ms // 60000) % 60), <int> ((ms // 1000) % 60),
                        <int> ((ms % 1000) * 1000), None)


cdef inline object make_ts(int64_t millis, int64_t nanos, bint ltz):
    cdef int y, m, d
    if millis < MIN_MILLIS or millis > MAX_MILLIS or nanos < 0 or nanos > 999999:
        return (_pure().make_timestamp_ltz if ltz else _pure().make_timestamp)(millis, nanos)
    cdef int64_t micros = millis * 1000 + nanos // 1000
    cdef int64_t days = micros // 86400000000
    cdef int64_t rem = micros % 86400000000
    if rem < 0:
        rem += 86400000000
        days -= 1
    ff_civil_from_days(days, &y, &m, &d)
    cdef int64_t secs = rem // 1000000
    return cdt.datetime_new(y, m, d, <int> (secs // 3600), <int> ((secs // 60) % 60), <int> (secs % 60),
                            <int> (rem % 1000000), _UTC if ltz else None)


cdef inline object label_error(object exc, object names, Py_ssize_t i):
    return _pure()._with_field(exc, names, i)


cdef inline int utf8_of(object v, const char **s, Py_ssize_t *n) except -1:
    """The UTF-8 of an exact str; 0 for anything else and for text UTF-8 cannot encode."""
    if not PyUnicode_CheckExact(v):
        return 0
    try:
        s[0] = PyUnicode_AsUTF8AndSize(v, n)
    except UnicodeEncodeError:
        return 0
    return 1


cdef inline int put_fixed_scalar(WBuf *b, int code, object v) except -1:
    """DOUBLE, FLOAT, BOOLEAN, TINYINT, SMALLINT: little-endian, the same in both row formats."""
    cdef int64_t x
    cdef double d
    if code == C_DOUBLE:
        if not float_value(v, &d):
            return 0
        wb_reserve(b, 8)
        ff_le_put64(b.p + b.n, <int64_t> ff_rw_f64bits(d))
        b.n += 8
    elif code == C_FLOAT:
        if not float_value(v, &d):
            return 0
        wb_reserve(b, 4)
        ff_le_put32(b.p + b.n, <int32_t> ff_rw_f32bits(d))
        b.n += 4
    elif code == C_BOOLEAN:
        if v is True:
            wb_write(b, b"\x01", 1)
        elif v is False:
            wb_write(b, b"\x00", 1)
        else:
            return 0
    elif code == C_TINYINT:
        if not int_value(v, code, &x):
            return 0
        wb_reserve(b, 1)
        b.p[b.n] = <unsigned char> (x & 0xFF)
        b.n += 1
    elif code == C_SMALLINT:
        if not int_value(v, code, &x):
            return 0
        wb_reserve(b, 2)
        ff_le_put16(b.p + b.n, <int16_t> x)
        b.n += 2
    else:
        return 0
    return 1


cdef inline bint is_fixed_scalar(int code) noexcept:
    return (code == C_DOUBLE or code == C_FLOAT or code == C_BOOLEAN or code == C_TINYINT
            or code == C_SMALLINT)


# ----------------------------------------------------------------------------------------------
# what every row encoder/decoder shares
# ----------------------------------------------------------------------------------------------
cdef class _RowCodec:
    cdef _setup(self, types, names, str fmt):
        cdef Py_ssize_t nvar = 0
        self._infos = _pure()._infos(types)
        self._names = list(names) if names is not None else None
        self._n = len(self._infos)
        self._nbytes = (self._n + 7) >> 3
        self._fields = _plan(self._infos, fmt)
        if fmt == "INDEXED":
            for t in self._infos:
                if not t.fixed:
                    nvar += 1
        self._header = self._nbytes + 4 * nvar

    @property
    def arity(self):
        return self._n


cdef class _RowEncoder(_RowCodec):
    def encode(self, values):
        cdef WBuf b
        wb_init(&b)
        try:
            self._put(&b, values)
            return PyBytes_FromStringAndSize(<char *> b.p, b.n)
        finally:
            wb_free(&b)

    def encode_records(self, rows, change_types=None):
        """Log records ``int32 length | change type | row`` for every row, concatenated."""
        return _encode_records(self, rows, change_types)

    cdef int _put(self, WBuf *b, object values) except -1:
        raise NotImplementedError

    cdef int _null(self, WBuf *b, Py_ssize_t base, Py_ssize_t i, _Field f) except -1:
        """Mark field i null in the bitset at ``base``, refusing NOT NULL fields."""
        if not f.nullable:
            raise _pure()._null_error(self._names, i, f.info)
        b.p[base + (i >> 3)] |= <unsigned char> (1 << (i & 7))
        return 0


cdef class _RowDecoder(_RowCodec):
    def decode(self, buf, Py_ssize_t pos=0, end=None):
        if not PyBytes_CheckExact(buf):
            buf, pos, end = _pure()._as_bytes(buf, pos, end)
        return self._values(buf, pos, len(buf) if end is None else end)

    def decode_dict(self, buf, Py_ssize_t pos, Py_ssize_t end):
        if not PyBytes_CheckExact(buf):
            buf, pos, end = _pure()._as_bytes(buf, pos, end)
        return dict(zip(self._names, self._values(buf, pos, end)))

    cdef list _values(self, bytes buf, Py_ssize_t pos, Py_ssize_t end):
        raise NotImplementedError


cdef inline int check_bounds(bytes buf, Py_ssize_t pos, Py_ssize_t end) except -1:
    if end > PyBytes_GET_SIZE(buf) or pos < 0 or pos > end:
        raise ValueError(f"row bounds [{pos}, {end}) outside a buffer of {PyBytes_GET_SIZE(buf)} bytes")
    return 0


# ----------------------------------------------------------------------------------------------
# CompactedRow
# ----------------------------------------------------------------------------------------------
cdef int compacted_field(WBuf *b, _Field f, object v) except -1:
    """Write one non-null field; 0 when it has to go through the pure writer."""
    cdef int code = f.code
    cdef int64_t x
    cdef int32_t nanos
    cdef const char *s
    cdef Py_ssize_t n
    if code == C_INT or code == C_BIGINT:
        if not int_value(v, code, &x):
            return 0
        wb_varint(b, (<uint64_t> x) & 0xFFFFFFFFu if code == C_INT else <uint64_t> x)
    elif code == C_STRING or code == C_CHAR:
        if not utf8_of(v, &s, &n):
            return 0
        wb_varint(b, <uint64_t> n)
        wb_write(b, s, n)
    elif code == C_BYTES or code == C_BINARY:
        if not PyBytes_CheckExact(v):
            return 0
        n = PyBytes_GET_SIZE(v)
        wb_varint(b, <uint64_t> n)
        wb_write(b, PyBytes_AS_STRING(v), n)
    elif is_fixed_scalar(code):
        return put_fixed_scalar(b, code, v)
    elif code == C_DATE:
        if not date_value(v, &x):
            return 0
        wb_varint(b, (<uint64_t> x) & 0xFFFFFFFFu)
    elif code == C_TIME:
        if not time_value(v, &x):
            return 0
        wb_varint(b, (<uint64_t> x) & 0xFFFFFFFFu)
    elif code == C_TIMESTAMP or code == C_TIMESTAMP_LTZ:
        if not timestamp_value(v, code == C_TIMESTAMP_LTZ, &x, &nanos):
            return 0
        wb_varint(b, <uint64_t> x)
        if not f.compact:
            wb_varint(b, <uint64_t> nanos)
    elif code == C_DECIMAL:
        if type(v) is not _Decimal:
            return 0
        if f.compact:
            if not decimal_value(v, f.scale, f.precision, &x):
                x = _conv_decimal(v, f.info)  # raises the same errors as the pure writer
            wb_varint(b, <uint64_t> x)
        else:
            data = _bigint_bytes(_conv_decimal(v, f.info))
            wb_varint(b, <uint64_t> PyBytes_GET_SIZE(data))
            wb_bytes_obj(b, data)
    else:
        return 0
    return 1


cdef class CompactedRowEncoder(_RowEncoder):
    """``encode(values) -> bytes``: one CompactedRow (null bitset + fields, no padding)."""

    def __init__(self, types, names=None):
        self._setup(types, names, "COMPACTED")
        self._key = False

    cdef int _put(self, WBuf *b, object values) except -1:
        cdef Py_ssize_t i, base = b.n, nb = 0 if self._key else self._nbytes
        cdef _Field f
        cdef bytearray tmp
        if len(values) != self._n:
            if self._key:
                raise ValueError(f"key has {len(values)} values but {self._n} key columns")
            raise _pure()._arity_error(len(values), self._n)
        wb_reserve(b, nb)
        memset(b.p + base, 0, nb)
        b.n += nb
        for i in range(self._n):
            f = <_Field> self._fields[i]
            v = values[i]
            if v is None:
                if self._key:
                    raise ValueError(f"key {_pure()._field_label(self._names, i)} is null; key "
                                     f"columns must not be null ({f.info.dtype})")
                self._null(b, base, i, f)
                continue
            try:
                if not compacted_field(b, f, v):
                    tmp = bytearray()
                    f.slow_write(tmp, v)
                    wb_write(b, tmp, len(tmp))
            except (TypeError, ValueError) as exc:
                raise label_error(exc, self._names, i) from None
        return 0


cdef class CompactedKeyEncoder(CompactedRowEncoder):
    """``encode(values) -> bytes``: key columns as CompactedRow fields, no null bitset."""

    def __init__(self, types, names=None):
        CompactedRowEncoder.__init__(self, types, names)
        self._key = True


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


cdef inline void need(Py_ssize_t pos, Py_ssize_t k, Py_ssize_t end) except *:
    if pos + k > end:
        raise ValueError(f"needs {k} bytes at byte {pos}, {end - pos} left")


cdef class CompactedRowDecoder(_RowDecoder):
    """``decode(buf, pos=0, end=None) -> list``: the values of one CompactedRow."""

    def __init__(self, types, names=None):
        self._setup(types, names, "COMPACTED")

    def decode_with_end(self, buf, Py_ssize_t pos=0, end=None):
        cdef Py_ssize_t start = pos
        if PyBytes_CheckExact(buf):
            return self._decode(buf, pos, len(buf) if end is None else end)
        buf, pos, end = _pure()._as_bytes(buf, pos, end)
        values, stop = self._decode(buf, pos, end)
        return values, stop + start

    cdef list _values(self, bytes buf, Py_ssize_t pos, Py_ssize_t end):
        return self._decode(buf, pos, end)[0]

    cdef tuple _decode(self, bytes buf, Py_ssize_t pos, Py_ssize_t end):
        cdef const unsigned char *p = <const unsigned char *> PyBytes_AS_STRING(buf)
        cdef Py_ssize_t nb = self._nbytes, i = 0, n
        cdef Py_ssize_t nulls
        cdef _Field f
        cdef int code
        cdef int64_t x
        cdef list out = [None] * self._n
        check_bounds(buf, pos, end)
        if pos + nb > end:
            raise ValueError(f"truncated CompactedRow: {end - pos} bytes, null bitset needs {nb}")
        nulls = pos
        pos += nb
        try:
            for i in range(self._n):
                if p[nulls + (i >> 3)] & (1 << (i & 7)):
                    continue
                f = <_Field> self._fields[i]
                code = f.code
                if code == C_INT:
                    out[i] = read_v32(p, &pos, end)
                elif code == C_BIGINT:
                    out[i] = read_v64(p, &pos, end)
                elif code == C_STRING or code == C_CHAR:
                    n = read_len(p, &pos, end)
                    out[i] = PyUnicode_DecodeUTF8(<const char *> (p + pos), n, NULL)
                    pos += n
                elif code == C_BYTES or code == C_BINARY:
                    n = read_len(p, &pos, end)
                    out[i] = PyBytes_FromStringAndSize(<const char *> (p + pos), n)
                    pos += n
                elif code == C_DOUBLE:
                    need(pos, 8, end)
                    out[i] = ff_rw_f64(p + pos)
                    pos += 8
                elif code == C_FLOAT:
                    need(pos, 4, end)
                    out[i] = ff_rw_f32(p + pos)
                    pos += 4
                elif code == C_BOOLEAN:
                    need(pos, 1, end)
                    out[i] = p[pos] != 0
                    pos += 1
                elif code == C_TINYINT:
                    need(pos, 1, end)
                    out[i] = <int8_t> p[pos]
                    pos += 1
                elif code == C_SMALLINT:
                    need(pos, 2, end)
                    out[i] = ff_le_get16(p + pos)
                    pos += 2
                elif code == C_DATE:
                    out[i] = make_date(read_v32(p, &pos, end))
                elif code == C_TIME:
                    out[i] = make_time(read_v32(p, &pos, end))
                elif code == C_DECIMAL and f.compact:
                    out[i] = decimal_object(read_v64(p, &pos, end), f.scale)
                elif code == C_TIMESTAMP or code == C_TIMESTAMP_LTZ:
                    x = read_v64(p, &pos, end)
                    out[i] = make_ts(x, read_v32(p, &pos, end) if not f.compact else 0,
                                     code == C_TIMESTAMP_LTZ)
                else:
                    v, pos = f.slow_read(buf, pos, end)
                    out[i] = v
        except (ValueError, OverflowError, IndexError, UnicodeDecodeError, _struct.error) as exc:
            raise ValueError(f"corrupt CompactedRow, {_pure()._field_label(self._names, i)}: {exc}") from None
        if pos > end:
            raise ValueError(f"corrupt CompactedRow: fields run {pos - end} bytes past its end")
        return out, pos


# ----------------------------------------------------------------------------------------------
# IndexedRow
# ----------------------------------------------------------------------------------------------
cdef int indexed_field(WBuf *b, _Field f, object v, Py_ssize_t *var_len) except -1:
    """Write one non-null field; 0 when it has to go through the pure writer. Sets var_len to the
    byte length of variable-length fields."""
    cdef int code = f.code
    cdef int64_t x
    cdef int32_t nanos
    cdef const char *s
    cdef Py_ssize_t n
    if code == C_INT or code == C_DATE or code == C_TIME:
        if code == C_INT:
            if not int_value(v, code, &x):
                return 0
        elif code == C_DATE:
            if not date_value(v, &x):
                return 0
        elif not time_value(v, &x):
            return 0
        wb_reserve(b, 4)
        ff_le_put32(b.p + b.n, <int32_t> x)
        b.n += 4
    elif code == C_BIGINT:
        if not int_value(v, code, &x):
            return 0
        wb_reserve(b, 8)
        ff_le_put64(b.p + b.n, x)
        b.n += 8
    elif code == C_STRING:
        if not utf8_of(v, &s, &n):
            return 0
        wb_write(b, s, n)
        var_len[0] = n
    elif code == C_BYTES:
        if not PyBytes_CheckExact(v):
            return 0
        n = PyBytes_GET_SIZE(v)
        wb_write(b, PyBytes_AS_STRING(v), n)
        var_len[0] = n
    elif is_fixed_scalar(code):
        return put_fixed_scalar(b, code, v)
    elif code == C_TIMESTAMP or code == C_TIMESTAMP_LTZ:
        if not timestamp_value(v, code == C_TIMESTAMP_LTZ, &x, &nanos):
            return 0
        wb_reserve(b, 12)
        ff_le_put64(b.p + b.n, x)
        b.n += 8
        if not f.compact:
            ff_le_put32(b.p + b.n, nanos)
            b.n += 4
    elif code == C_CHAR or code == C_BINARY:
        if code == C_CHAR:
            if not utf8_of(v, &s, &n):
                return 0
        else:
            if not PyBytes_CheckExact(v):
                return 0
            s = PyBytes_AS_STRING(v)
            n = PyBytes_GET_SIZE(v)
        if n > f.size:
            return 0  # the pure writer raises the "does not fit" error
        wb_reserve(b, f.size)
        memcpy(b.p + b.n, s, n)
        memset(b.p + b.n + n, 0, f.size - n)
        b.n += f.size
    elif code == C_DECIMAL:
        if type(v) is not _Decimal:
            return 0
        if f.compact:
            if not decimal_value(v, f.scale, f.precision, &x):
                x = _conv_decimal(v, f.info)
            wb_reserve(b, 8)
            ff_le_put64(b.p + b.n, x)
            b.n += 8
        else:
            u = _conv_decimal(v, f.info)
            data = _bigint_bytes(u)
            wb_bytes_obj(b, data)
            var_len[0] = PyBytes_GET_SIZE(data)
    else:
        return 0
    return 1


cdef class IndexedRowEncoder(_RowEncoder):
    """``encode(values) -> bytes``: one IndexedRow (null bitset, var-length list, packed fields)."""

    def __init__(self, types, names=None):
        self._setup(types, names, "INDEXED")

    cdef int _put(self, WBuf *b, object values) except -1:
        cdef Py_ssize_t i, base = b.n, vslot = b.n + self._nbytes, var_len
        cdef _Field f
        cdef bytes data
        if len(values) != self._n:
            raise _pure()._arity_error(len(values), self._n)
        wb_reserve(b, self._header)
        memset(b.p + base, 0, self._header)
        b.n += self._header
        for i in range(self._n):
            f = <_Field> self._fields[i]
            v = values[i]
            if v is None:
                self._null(b, base, i, f)
                continue
            var_len = -1
            try:
                if not indexed_field(b, f, v, &var_len):
                    data = f.slow_write(v)
                    wb_bytes_obj(b, data)
                    var_len = len(data)
            except (TypeError, ValueError) as exc:
                raise label_error(exc, self._names, i) from None
            if not f.fixed:
                ff_le_put32(b.p + vslot, <int32_t> var_len)
                vslot += 4
        return 0


cdef object _encode_records(object encoder, object rows, object change_types):
    cdef WBuf b
    cdef Py_ssize_t i, start, n = len(rows)
    cdef long ct
    if change_types is not None and len(change_types) != n:
        raise ValueError(f"{len(change_types)} change types for {n} rows")
    wb_init(&b)
    try:
        for i in range(n):
            ct = 0 if change_types is None else change_types[i]
            if ct < 0 or ct > 4:
                raise ValueError(f"row {i}: change type {ct} is not one of 0..4")
            wb_reserve(&b, 5)
            start = b.n
            b.n += 5
            try:
                (<_RowEncoder> encoder)._put(&b, rows[i])
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"row {i}: {exc}") from None
            ff_le_put32(b.p + start, <int32_t> (b.n - start - 4))
            b.p[start + 4] = <unsigned char> ct
        return PyBytes_FromStringAndSize(<char *> b.p, b.n)
    finally:
        wb_free(&b)


cdef inline object strip_zeros(const unsigned char *p, Py_ssize_t n, bint text):
    while n > 0 and p[n - 1] == 0:
        n -= 1
    if text:
        return PyUnicode_DecodeUTF8(<const char *> p, n, NULL)
    return PyBytes_FromStringAndSize(<const char *> p, n)


cdef class IndexedRowDecoder(_RowDecoder):
    """``decode(buf, pos=0, end=None) -> list``: the values of one IndexedRow."""

    def __init__(self, types, names=None):
        self._setup(types, names, "INDEXED")

    cdef list _values(self, bytes buf, Py_ssize_t pos, Py_ssize_t end):
        cdef const unsigned char *p = <const unsigned char *> PyBytes_AS_STRING(buf)
        cdef Py_ssize_t i = 0, n, size, vslot, q
        cdef _Field f
        cdef int code
        cdef list out = [None] * self._n
        check_bounds(buf, pos, end)
        if pos + self._header > end:
            raise ValueError(f"truncated IndexedRow: {end - pos} bytes, header needs {self._header}")
        vslot = pos + self._nbytes
        q = pos + self._header
        try:
            for i in range(self._n):
                if p[pos + (i >> 3)] & (1 << (i & 7)):
                    continue
                f = <_Field> self._fields[i]
                code = f.code
                if f.fixed:
                    size = f.size
                    if q + size > end:
                        raise ValueError(f"needs {size} bytes, {end - q} left")
                    if code == C_INT:
                        out[i] = ff_le_get32(p + q)
                    elif code == C_BIGINT:
                        out[i] = ff_le_get64(p + q)
                    elif code == C_DOUBLE:
                        out[i] = ff_rw_f64(p + q)
                    elif code == C_FLOAT:
                        out[i] = ff_rw_f32(p + q)
                    elif code == C_BOOLEAN:
                        out[i] = p[q] != 0
                    elif code == C_TINYINT:
                        out[i] = <int8_t> p[q]
                    elif code == C_SMALLINT:
                        out[i] = ff_le_get16(p + q)
                    elif code == C_DATE:
                        out[i] = make_date(ff_le_get32(p + q))
                    elif code == C_TIME:
                        out[i] = make_time(ff_le_get32(p + q))
                    elif code == C_TIMESTAMP or code == C_TIMESTAMP_LTZ:
                        out[i] = make_ts(ff_le_get64(p + q), 0 if f.compact else ff_le_get32(p + q + 8),
                                         code == C_TIMESTAMP_LTZ)
                    elif code == C_CHAR or code == C_BINARY:
                        out[i] = strip_zeros(p + q, size, code == C_CHAR)
                    elif code == C_DECIMAL:
                        out[i] = decimal_object(ff_le_get64(p + q), f.scale)
                    else:
                        out[i] = f.slow_read(buf, q)
                    q += size
                else:
                    n = ff_le_get32(p + vslot)
                    vslot += 4
                    if n < 0 or q + n > end:
                        raise ValueError(f"bad length {n}, {end - q} bytes left")
                    if code == C_STRING:
                        out[i] = PyUnicode_DecodeUTF8(<const char *> (p + q), n, NULL)
                    elif code == C_BYTES:
                        out[i] = PyBytes_FromStringAndSize(<const char *> (p + q), n)
                    else:
                        out[i] = f.slow_read(buf, q, n)
                    q += n
        except (ValueError, OverflowError, IndexError, UnicodeDecodeError, _struct.error) as exc:
            raise ValueError(f"corrupt IndexedRow, {_pure()._field_label(self._names, i)}: {exc}") from None
        return out
