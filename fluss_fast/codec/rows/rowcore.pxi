# The row codecs' shared C helpers, included by _rowbase.pyx, _compacted.pyx and _indexed.pyx: value
# conversions run once per field, so they are compiled into each module (inline) rather than called
# across modules. Not a module of its own (``include``d, never imported).
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.unicode cimport PyUnicode_CheckExact, PyUnicode_DecodeUTF8
from cpython.long cimport PyLong_CheckExact, PyLong_AsLongLong, PyLong_FromLongLong
from cpython.float cimport PyFloat_CheckExact, PyFloat_AS_DOUBLE
cimport cpython.datetime as cdt

import datetime as _dt
import struct as _struct

from fluss_fast.codec.wire.bytebuf cimport (WBuf, ff_le_get16, ff_le_get32, ff_le_get64, ff_le_put16,
                                           ff_le_put32, ff_le_put64, need, read_len, read_v32, read_v64,
                                           read_varint, wb_bytes_obj, wb_free, wb_init, wb_reserve, wb_varint,
                                           wb_write)

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

from fluss_fast.codec.rows.row_type_codes cimport *  # C_BOOLEAN .. C_ROW

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
cdef object _py = None  # the pure helpers, imported on first use (compacted.py and indexed.py import this module)
cdef object _Decimal = None
cdef object _conv_decimal = None
cdef object _make_decimal = None
cdef object _bigint_bytes = None


cdef object _pure():
    global _py, _Decimal, _conv_decimal, _make_decimal, _bigint_bytes
    if _py is None:
        from types import SimpleNamespace
        from fluss_fast.codec.rows import compacted, indexed, rowbase, scalars
        names = dict(vars(scalars))
        names.update((k, v) for k, v in vars(rowbase).items() if not k.startswith("__"))
        module = SimpleNamespace(**names,
                                 _compacted_writer=compacted._compacted_writer,
                                 _compacted_reader=compacted._compacted_reader,
                                 _indexed_fixed_writer=indexed._indexed_fixed_writer,
                                 _indexed_fixed_reader=indexed._indexed_fixed_reader,
                                 _indexed_var_writer=indexed._indexed_var_writer,
                                 _indexed_var_reader=indexed._indexed_var_reader)
        _Decimal = module._Decimal
        _conv_decimal = module.conv_decimal
        _make_decimal = module.make_decimal
        _bigint_bytes = module.bigint_bytes
        _py = module
    return _py


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

cdef inline int check_bounds(bytes buf, Py_ssize_t pos, Py_ssize_t end) except -1:
    if end > PyBytes_GET_SIZE(buf) or pos < 0 or pos > end:
        raise ValueError(f"row bounds [{pos}, {end}) outside a buffer of {PyBytes_GET_SIZE(buf)} bytes")
    return 0
