# cython: language_level=3, cdivision=True
"""Compiled twin of ``columns.py``: rows are written straight into Arrow buffers.

Flat types (bool, ints, floats, str, bytes, decimal, date, time, timestamp) go into C buffers that
become ``pa.Array.from_buffers`` at build time, with no Python object kept per value. Only the
common, exactly-typed values take the C path (aware datetimes too: fixed-offset zones are asked
for their offset once per tzinfo object); anything else (numpy scalars, pandas timestamps,
subclasses, wrong types) goes through the pure converter of ``columns.py``, so acceptance rules and
error messages are the pure module's. Nested columns keep converted values in a list and use
pyarrow's converter.
"""
cimport cython
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XDECREF
from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.datetime cimport (
    import_datetime, PyDateTime_CheckExact, PyDate_CheckExact, PyTime_CheckExact,
    datetime_tzinfo, time_tzinfo,
)
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t

from fluss_fast.codec.wire.bytebuf cimport HeapBuf, bitmap_set, heapbuf_free, heapbuf_reserve

import sys

import pyarrow as pa
from decimal import Decimal

from datetime import timezone as _timezone

from fluss_fast import datatypes as T
from fluss_fast.errors import FlussError

try:
    from zoneinfo import ZoneInfo as _ZoneInfo
except ImportError:  # pragma: no cover - stdlib since 3.9
    _ZoneInfo = None

import_datetime()

cdef object _MISSING = object()
# columns.BadValue, bound by the first builder: columns.py imports this module at its end
BadValue = None
# distinct tzinfo objects remembered per column; a stream of throwaway tzinfos must not grow it
cdef Py_ssize_t _TZ_CACHE_MAX = 64

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object o, Py_ssize_t* size) except NULL
    # the same, with the error left for the caller to look at (no try block per value)
    const char* utf8_or_null "PyUnicode_AsUTF8AndSize"(object o, Py_ssize_t* size)
    void PyErr_Clear()
    long long PyLong_AsLongLongAndOverflow(object o, int* overflow) except? -1
    bint PyLong_CheckExact(object o)
    bint PyFloat_CheckExact(object o)
    bint PyUnicode_CheckExact(object o)
    bint PyBytes_CheckExact(object o)
    bint PyDict_Check(object o)
    bint PyList_Check(object o)
    bint PyTuple_Check(object o)
    double PyFloat_AS_DOUBLE(object o)
    double PyFloat_AsDouble(object o) except? -1.0
    int PyDateTime_GET_YEAR(object o)
    int PyDateTime_GET_MONTH(object o)
    int PyDateTime_GET_DAY(object o)
    int PyDateTime_DATE_GET_HOUR(object o)
    int PyDateTime_DATE_GET_MINUTE(object o)
    int PyDateTime_DATE_GET_SECOND(object o)
    int PyDateTime_DATE_GET_MICROSECOND(object o)
    int PyDateTime_TIME_GET_HOUR(object o)
    int PyDateTime_TIME_GET_MINUTE(object o)
    int PyDateTime_TIME_GET_SECOND(object o)
    int PyDateTime_TIME_GET_MICROSECOND(object o)
    int PyDateTime_DELTA_GET_DAYS(object o)
    int PyDateTime_DELTA_GET_SECONDS(object o)
    int PyDateTime_DELTA_GET_MICROSECONDS(object o)
    Py_ssize_t PyDict_Size(object o)
    PyObject* PyList_GET_ITEM(object o, Py_ssize_t i)
    PyObject* PyTuple_GET_ITEM(object o, Py_ssize_t i)
    Py_ssize_t PyList_GET_SIZE(object o)
    Py_ssize_t PyTuple_GET_SIZE(object o)

cdef extern from *:
    ctypedef long long int128 "__int128"
    ctypedef unsigned long long uint128 "unsigned __int128"

cdef enum Kind:
    K_BOOL
    K_INT
    K_FLOAT
    K_DOUBLE
    K_STR
    K_BIN
    K_FIXED
    K_DATE
    K_TIME
    K_TS
    K_DEC
    K_OBJ

cdef inline object buf_take(HeapBuf* b, Py_ssize_t n):
    # a copy: the builder keeps its memory for the next batch
    return pa.py_buffer(PyBytes_FromStringAndSize(b.p, n))

cdef inline int buf_set_bit(HeapBuf* b, Py_ssize_t i, bint bit) except -1:
    heapbuf_reserve(b, (i >> 3) + 1)
    bitmap_set(b.p, i, bit)
    return 0

cdef extern from "civil_days.h":
    # shared with _rows.pyx: proleptic Gregorian day numbers relative to 1970-01-01
    int64_t ff_days_from_civil(int64_t y, int64_t m, int64_t d) nogil

cdef inline int64_t delta_micros(object d):
    return ((<int64_t>PyDateTime_DELTA_GET_DAYS(d) * 86400 + PyDateTime_DELTA_GET_SECONDS(d)) * 1000000
            + PyDateTime_DELTA_GET_MICROSECONDS(d))



cdef object fixed_utcoffset(object v, object tz):
    """The offset of a zone that has one offset for every instant, else None.

    Only called for ``timezone`` and ``ZoneInfo``, whose ``utcoffset(None)`` is the offset exactly
    when it does not depend on the datetime; a ZoneInfo is cross-checked against ``v`` once as well.
    """
    try:
        off = tz.utcoffset(None)
        if off is not None and type(tz) is not _timezone and v.utcoffset() != off:
            return None
    except Exception:  # noqa: BLE001 - the per-value path then reports whatever it raises
        return None
    return off


cdef inline int64_t floor_div(int64_t a, int64_t b):
    # cdivision is on: / and % truncate toward zero as in C
    cdef int64_t q = a // b
    if (a % b != 0) and ((a < 0) != (b < 0)):
        q -= 1
    return q


include "columns_decimal.pxi"


@cython.final
cdef class _Col:
    cdef int kind
    cdef int width
    cdef int precision
    cdef bint nullable
    cdef int64_t lo, hi
    cdef Py_ssize_t count, nulls
    cdef HeapBuf data, offsets, valid
    cdef object conv
    cdef object arrow_type
    cdef list objs
    cdef object size_of
    cdef int scale
    cdef object dec_type
    cdef bint ltz
    cdef object last_tz  # the last fixed-offset tzinfo seen, and its offset in micros
    cdef int64_t last_off
    cdef dict tz_offsets  # tzinfo -> fixed offset (timedelta) or None when it varies

    def __dealloc__(self):
        heapbuf_free(&self.data)
        heapbuf_free(&self.offsets)
        heapbuf_free(&self.valid)

    cdef int reset(self) except -1:
        self.count = 0
        self.nulls = 0
        self.data.n = 0
        self.valid.n = 0
        self.offsets.n = 0
        if self.kind == K_STR or self.kind == K_BIN:
            heapbuf_reserve(&self.offsets, 4)
            (<int32_t*>self.offsets.p)[0] = 0
            self.offsets.n = 4
        if self.kind == K_OBJ:
            self.objs = []
        return 0

    cdef inline int set_valid(self, bint is_valid) except -1:
        return buf_set_bit(&self.valid, self.count, is_valid)

    cdef int put_null(self) except -1:
        cdef int k = self.kind
        if self.nulls == 0:
            # the bitmap is only kept once a null shows up: mark every earlier row valid now
            heapbuf_reserve(&self.valid, (self.count >> 3) + 1)
            memset(self.valid.p, 0xFF, (self.count >> 3) + 1)
        self.set_valid(False)
        if k == K_OBJ:
            self.objs.append(None)
        elif k == K_STR or k == K_BIN:
            self.push_offset()
        elif k == K_BOOL:
            self.put_bit(False)
        else:
            heapbuf_reserve(&self.data, self.data.n + self.width)
            memset(self.data.p + self.data.n, 0, self.width)
            self.data.n += self.width
        self.nulls += 1
        self.count += 1
        return 0

    cdef inline int put_bit(self, bint bit) except -1:
        return buf_set_bit(&self.data, self.count, bit)

    cdef inline int push_offset(self) except -1:
        if self.data.n > 0x7FFFFFFF:
            raise OverflowError("more than 2 GiB of string data in one batch")
        heapbuf_reserve(&self.offsets, self.offsets.n + 4)
        (<int32_t*>(self.offsets.p + self.offsets.n))[0] = <int32_t>self.data.n
        self.offsets.n += 4
        return 0

    cdef inline int put_bytes(self, const char* p, Py_ssize_t n) except -1:
        heapbuf_reserve(&self.data, self.data.n + n)
        memcpy(self.data.p + self.data.n, p, n)
        self.data.n += n
        return 0

    cdef inline int put_i64(self, int64_t x) except -1:
        cdef char* at
        heapbuf_reserve(&self.data, self.data.n + 8)
        at = self.data.p + self.data.n
        if self.width == 8:
            (<int64_t*>at)[0] = x
        elif self.width == 4:
            (<int32_t*>at)[0] = <int32_t>x
        elif self.width == 2:
            (<int16_t*>at)[0] = <int16_t>x
        else:
            (<int8_t*>at)[0] = <int8_t>x
        self.data.n += self.width
        return 0

    cdef int utc_shift(self, object v, object tz, int64_t* us) except -1:
        """Turns the wall-clock micros ``us`` of aware datetime ``v`` into UTC micros.

        Fixed-offset zones (``timezone``, ZoneInfo('UTC') and the like) are asked once per tzinfo
        object; other zones once per value, as the pure converter does. Returns 1 when
        ``v.utcoffset()`` raised, so that the pure converter raises its own error.
        """
        cdef object off
        if tz is self.last_tz:
            us[0] -= self.last_off
            return 0
        t = type(tz)
        if t is _timezone or t is _ZoneInfo:
            off = self.tz_offsets.get(tz, _MISSING)
            if off is _MISSING:
                off = fixed_utcoffset(v, tz)
                if len(self.tz_offsets) >= _TZ_CACHE_MAX:
                    self.tz_offsets.clear()
                self.tz_offsets[tz] = off
            if off is not None:
                self.last_tz = tz
                self.last_off = delta_micros(off)
                us[0] -= self.last_off
                return 0
        try:
            off = v.utcoffset()
        except Exception:  # noqa: BLE001 - the pure converter raises it again, with its wording
            return 1
        if off is not None:  # None: the pure twin treats the value as naive
            us[0] -= delta_micros(off)
        return 0

    cdef Py_ssize_t put(self, object v) except -1:
        """Appends non-None ``v``; returns the variable-length bytes it added."""
        cdef int k = self.kind
        cdef long long x
        cdef int ovf = 0
        cdef double d
        cdef float f
        cdef const char* s
        cdef Py_ssize_t n = 0
        cdef int64_t us, ms
        cdef int128 big = 0
        cdef object c
        if k == K_INT:
            if PyLong_CheckExact(v):
                x = PyLong_AsLongLongAndOverflow(v, &ovf)
                if ovf or x < self.lo or x > self.hi:
                    self.conv(v)  # raises the range error
                    raise AssertionError("range check disagrees with the converter")
            else:
                x = self.conv(v)
            self.put_i64(x)
        elif k == K_STR:
            if not PyUnicode_CheckExact(v):
                v = self.conv(v)
            s = utf8_or_null(v, &n)
            if s == NULL:  # lone surrogates: the converter explains
                PyErr_Clear()
                self.conv(v)
                raise AssertionError("UTF-8 encoding disagrees with the converter")
            self.put_bytes(s, n)
            self.push_offset()
            n += 4
        elif k == K_DOUBLE or k == K_FLOAT:
            if PyFloat_CheckExact(v):
                d = PyFloat_AS_DOUBLE(v)
            else:
                d = self.conv(v)
            heapbuf_reserve(&self.data, self.data.n + 8)
            if k == K_DOUBLE:
                (<double*>(self.data.p + self.data.n))[0] = d
            else:
                f = <float>d
                (<float*>(self.data.p + self.data.n))[0] = f
            self.data.n += self.width
        elif k == K_TS:
            if PyDateTime_CheckExact(v):
                us = ((ff_days_from_civil(PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v),
                                       PyDateTime_GET_DAY(v)) * 86400
                       + PyDateTime_DATE_GET_HOUR(v) * 3600 + PyDateTime_DATE_GET_MINUTE(v) * 60
                       + PyDateTime_DATE_GET_SECOND(v)) * 1000000
                      + PyDateTime_DATE_GET_MICROSECOND(v))
                if datetime_tzinfo(v) is not None and (
                        not self.ltz or self.utc_shift(v, datetime_tzinfo(v), &us) != 0):
                    self.put_i64(self.conv(v))
                elif self.precision == 0:
                    self.put_i64(floor_div(us, 1000) // 1000)  # Java: millis / 1000, truncated
                elif self.precision <= 3:
                    self.put_i64(floor_div(us, 1000))
                elif self.precision <= 6:
                    self.put_i64(us)
                elif -9223372036854775 <= us <= 9223372036854774:
                    self.put_i64(us * 1000)
                else:
                    self.conv(v)
                    raise AssertionError("range check disagrees with the converter")
            else:
                self.put_i64(self.conv(v))
        elif k == K_BIN or k == K_FIXED:
            if not PyBytes_CheckExact(v) or (k == K_FIXED and PyBytes_GET_SIZE(v) != self.width):
                v = self.conv(v)
            n = PyBytes_GET_SIZE(v)
            self.put_bytes(PyBytes_AS_STRING(v), n)
            if k == K_BIN:
                self.push_offset()
                n += 4
            else:
                n = 0
        elif k == K_BOOL:
            if v is True:
                self.put_bit(True)
            elif v is False:
                self.put_bit(False)
            else:
                self.put_bit(self.conv(v))
        elif k == K_DATE:
            if PyDate_CheckExact(v):
                self.put_i64(ff_days_from_civil(PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v),
                                             PyDateTime_GET_DAY(v)))
            else:
                self.put_i64(self.conv(v))
        elif k == K_TIME:
            if PyTime_CheckExact(v) and PyDateTime_TIME_GET_MICROSECOND(v) % 1000 == 0:
                ms = (((PyDateTime_TIME_GET_HOUR(v) * 60 + PyDateTime_TIME_GET_MINUTE(v)) * 60
                       + PyDateTime_TIME_GET_SECOND(v)) * 1000
                      + PyDateTime_TIME_GET_MICROSECOND(v) // 1000)
                if self.precision == 0:
                    ms = ms // 1000
                elif self.precision <= 3:
                    pass
                elif self.precision <= 6:
                    ms = ms * 1000
                else:
                    ms = ms * 1000000
                self.put_i64(ms)
            else:
                self.put_i64(self.conv(v))
        elif k == K_DEC:
            if type(v) is not self.dec_type or (
                    mpd_unscaled(v, self.precision, self.scale, &big) != 0 if MPD_OK
                    else parse_decimal(str(v), self.precision, self.scale, &big) != 0):
                c = self.conv(v)  # raises, or gives the rounded Decimal
                if parse_decimal(str(c), self.precision, self.scale, &big) != 0:
                    raise AssertionError(f"decimal {c!r} rejected after conversion")
            heapbuf_reserve(&self.data, self.data.n + 16)
            (<int128*>(self.data.p + self.data.n))[0] = big
            self.data.n += 16
        else:
            c = self.conv(v)
            self.objs.append(c)
            n = self.size_of(c) if self.size_of is not None else 0
        if self.nulls:
            self.set_valid(True)
        self.count += 1
        return n

    cdef int pop(self) except -1:
        """Removes the last row (rollback of a half-appended row)."""
        cdef int k = self.kind
        cdef Py_ssize_t i
        if self.count == 0:
            return 0
        self.count -= 1
        i = self.count
        if self.nulls and not ((<uint8_t*>self.valid.p)[i >> 3] >> (i & 7)) & 1:
            self.nulls -= 1
        if k == K_OBJ:
            self.objs.pop()
        elif k == K_STR or k == K_BIN:
            self.offsets.n -= 4
            self.data.n = (<int32_t*>(self.offsets.p + self.offsets.n - 4))[0]
        elif k != K_BOOL:
            self.data.n -= self.width
        return 0

    cdef Py_ssize_t fixed_bytes(self):
        cdef int k = self.kind
        if k == K_STR or k == K_BIN:
            return self.data.n + self.offsets.n
        if k == K_BOOL:
            return (self.count + 7) >> 3
        if k == K_OBJ:
            return 0
        return self.data.n

    cdef object build(self):
        cdef Py_ssize_t n = self.count
        cdef object validity = None
        cdef int k = self.kind
        if self.nulls:
            validity = buf_take(&self.valid, (n + 7) >> 3)
        if k == K_OBJ:
            arr = pa.array(self.objs, type=self.arrow_type)
        elif k == K_STR or k == K_BIN:
            arr = pa.Array.from_buffers(self.arrow_type, n, [
                validity, buf_take(&self.offsets, self.offsets.n), buf_take(&self.data, self.data.n)],
                null_count=self.nulls)
        elif k == K_BOOL:
            arr = pa.Array.from_buffers(self.arrow_type, n, [validity, buf_take(&self.data, (n + 7) >> 3)],
                                        null_count=self.nulls)
        else:
            arr = pa.Array.from_buffers(self.arrow_type, n, [validity, buf_take(&self.data, self.data.n)],
                                        null_count=self.nulls)
        self.reset()
        return arr


_INT_WIDTH = {T.TINYINT: 1, T.SMALLINT: 2, T.INTEGER: 4, T.BIGINT: 8}


cdef _Col make_col(dt, arrow_type, conv, size_of, int_ranges):
    cdef _Col c = _Col()
    r = dt.root
    c.nullable = dt.nullable
    c.conv = conv
    c.arrow_type = arrow_type
    c.precision = dt.precision or 0
    c.size_of = None
    if r == T.BOOLEAN:
        c.kind, c.width = K_BOOL, 0
    elif r in _INT_WIDTH:
        c.kind, c.width = K_INT, _INT_WIDTH[r]
        c.lo, c.hi = int_ranges[r]
    elif r == T.FLOAT:
        c.kind, c.width = K_FLOAT, 4
    elif r == T.DOUBLE:
        c.kind, c.width = K_DOUBLE, 8
    elif r in (T.STRING, T.CHAR):
        c.kind, c.width = K_STR, 0
    elif r == T.BYTES:
        c.kind, c.width = K_BIN, 0
    elif r == T.BINARY:
        c.kind, c.width = K_FIXED, dt.length
    elif r == T.DATE:
        c.kind, c.width = K_DATE, 4
    elif r == T.TIME:
        c.kind, c.width = K_TIME, (4 if c.precision <= 3 else 8)
    elif r in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        c.kind, c.width = K_TS, 8
        c.ltz = r == T.TIMESTAMP_LTZ
        c.tz_offsets = {}
    elif r == T.DECIMAL:
        c.kind, c.width = K_DEC, 16
        c.scale = dt.scale
        c.dec_type = Decimal
    else:
        c.kind, c.width = K_OBJ, 0
        if dt.is_nested:
            c.size_of = size_of
    c.reset()
    return c


cdef class RowBatchBuilder:
    """Accumulates validated rows of one table; ``build()`` returns them as a RecordBatch."""

    cdef readonly object schema
    cdef readonly str table_name
    cdef readonly object arrow_schema
    cdef list _cols
    cdef list _names
    cdef list _types
    cdef dict _index
    cdef Py_ssize_t _ncols
    cdef Py_ssize_t _rows
    cdef Py_ssize_t _var_size
    cdef Py_ssize_t _row_width
    # per column, the key object dict rows last used for it: callers reuse one str object per
    # column (literals, pyarrow's to_pylist), so matching a row's keys is a pointer compare
    cdef list _keys
    cdef PyObject** _colp  # borrowed from _cols
    cdef PyObject** _vals  # the row being appended, owned references; all NULL between calls
    cdef bint _busy  # an append is under way: converters run Python code that could re-enter
    cdef object _describe

    def __cinit__(self):
        self._colp = NULL
        self._vals = NULL

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self._vals != NULL:
            for i in range(self._ncols):
                Py_XDECREF(self._vals[i])
            free(self._vals)
        free(self._colp)

    def __init__(self, schema, str table_name):
        global BadValue
        from fluss_fast.codec.rows import columns as pure
        cdef Py_ssize_t i
        BadValue = pure.BadValue
        if self._vals != NULL:
            raise TypeError("RowBatchBuilder is already initialised")
        self.schema = schema
        self.table_name = table_name
        self.arrow_schema = schema.to_arrow()
        # interned: dict literals' keys are, so the lookups below match on identity
        self._names = [sys.intern(c.name) for c in schema.columns]
        self._types = [c.type for c in schema.columns]
        self._index = {n: i for i, n in enumerate(self._names)}
        self._ncols = len(self._names)
        self._describe = pure.describe_value
        self._cols = [make_col(c.type, f.type, pure.converter_for(c.type), pure._value_size,
                               pure.INT_RANGES)
                      for c, f in zip(schema.columns, self.arrow_schema)]
        self._row_width = sum(pure.fixed_width_of(t) for t in self._types) + (self._ncols + 7) // 8
        self._keys = list(self._names)
        self._colp = <PyObject**>calloc(self._ncols + 1, sizeof(PyObject*))
        self._vals = <PyObject**>calloc(self._ncols + 1, sizeof(PyObject*))
        if self._colp == NULL or self._vals == NULL:
            raise MemoryError()
        for i in range(self._ncols):
            self._colp[i] = <PyObject*>self._cols[i]
        self._rows = 0
        self._var_size = 0

    def __len__(self):
        return self._rows

    @property
    def estimated_size(self):
        """Approximate uncompressed Arrow bytes of the rows so far."""
        return self._rows * self._row_width + self._var_size

    cdef _fail(self, Py_ssize_t col, Py_ssize_t row_index, str msg):
        return FlussError(f"table '{self.table_name}', column '{self._names[col]}' "
                          f"({self._types[col]}), row {row_index}: {msg}")

    cdef _row_error(self, Py_ssize_t row_index, str msg):
        return FlussError(f"table '{self.table_name}', row {row_index}: {msg}")

    cdef int _rollback(self, Py_ssize_t upto) except -1:
        cdef Py_ssize_t j
        for j in range(upto):
            (<_Col>self._colp[j]).pop()
        return 0

    cdef inline void _release(self):
        cdef Py_ssize_t i
        cdef PyObject* p
        for i in range(self._ncols):
            p = self._vals[i]
            if p != NULL:
                self._vals[i] = NULL
                Py_DECREF(<object>p)

    cdef int _unknown_key(self, dict row, Py_ssize_t row_index) except -1:
        for k in row:
            if k not in self._index:
                if not isinstance(k, str):
                    raise self._row_error(row_index, f"dict keys must be column names (str), "
                                                     f"got {self._describe(k)}")
                raise self._row_error(row_index, f"unknown column '{k}'; expected: "
                                                 f"{', '.join(self._names)}")
        return 0

    cdef bint _gather_ordered(self, object row):
        """Takes a dict row whose keys are columns in schema order, some perhaps left out (the
        usual shapes); False, with nothing taken, for anything else."""
        cdef Py_ssize_t j = 0, n = self._ncols, pos = 0
        cdef PyObject* k
        cdef PyObject* p
        cdef PyObject** vals = self._vals
        while PyDict_Next(row, &pos, &k, &p):
            while True:
                if j == n:
                    self._release()
                    return False
                if k == PyList_GET_ITEM(self._keys, j):
                    break
                if PyUnicode_CheckExact(<object>k) and <str>k == <str>self._names[j]:
                    self._keys[j] = <object>k
                    break
                j += 1  # column j is not in the row
            Py_INCREF(<object>p)
            vals[j] = p
            j += 1
        return True

    cdef int _gather(self, object row, Py_ssize_t row_index) except -1:
        """Fills ``_vals`` (NULL = missing key) or raises the row-shape error the pure twin does."""
        cdef Py_ssize_t i, n = self._ncols, found = 0
        cdef PyObject* p
        cdef PyObject** vals = self._vals
        if PyDict_Check(row):
            if PyDict_Size(row) <= n and self._gather_ordered(row):
                if PyDict_Size(row) < n:
                    for i in range(n):
                        if vals[i] == NULL and not (<_Col>self._colp[i]).nullable:
                            self._release()
                            raise self._fail(i, row_index, "missing value for NOT NULL column")
                return 0
            for i in range(n):
                p = PyDict_GetItem(row, self._names[i])
                if p == NULL:
                    if not (<_Col>self._colp[i]).nullable:
                        self._release()
                        raise self._fail(i, row_index, "missing value for NOT NULL column")
                else:
                    Py_INCREF(<object>p)
                    vals[i] = p
                    found += 1
            if found != PyDict_Size(row):
                self._release()
                self._unknown_key(row, row_index)
            return 0
        if PyTuple_Check(row):
            if PyTuple_GET_SIZE(row) == n:
                for i in range(n):
                    p = PyTuple_GET_ITEM(row, i)
                    Py_INCREF(<object>p)
                    vals[i] = p
                return 0
        elif PyList_Check(row):
            if PyList_GET_SIZE(row) == n:
                for i in range(n):
                    p = PyList_GET_ITEM(row, i)
                    Py_INCREF(<object>p)
                    vals[i] = p
                return 0
        else:
            raise self._row_error(row_index, f"a row must be a dict, list or tuple, "
                                             f"got {self._describe(row)}")
        raise self._row_error(row_index, f"expected {n} values "
                                         f"({', '.join(self._names)}), got {len(row)}")

    def append(self, row, Py_ssize_t row_index=-1):
        """Validates and adds one row; returns the estimated batch size so far.

        ``row_index`` (default: the row's position in this batch) is what errors report.
        """
        cdef Py_ssize_t i = 0, n = self._ncols, added = 0
        cdef PyObject* p
        cdef _Col col
        if row_index < 0:
            row_index = self._rows
        if self._busy:
            # the row so far sits half in the column buffers and _vals holds it: another append
            # now would interleave two rows
            raise RuntimeError(f"table '{self.table_name}': RowBatchBuilder.append re-entered "
                               f"(from a converter, or another thread without a lock)")
        self._busy = True
        try:
            self._gather(row, row_index)
            for i in range(n):
                col = <_Col>self._colp[i]
                p = self._vals[i]
                if p == NULL or p == <PyObject*>None:
                    if not col.nullable:
                        raise self._fail(i, row_index, "column is NOT NULL but got None")
                    col.put_null()
                else:
                    added += col.put(<object>p)
        except FlussError:
            self._rollback(i)
            raise
        except BadValue as exc:
            self._rollback(i)
            raise self._fail(i, row_index, str(exc)) from None
        except BaseException:
            self._rollback(i)
            raise
        finally:
            self._release()
            self._busy = False
        self._rows += 1
        self._var_size += added
        return self._rows * self._row_width + self._var_size

    def extend(self, rows):
        """Appends every row (errors name the row's index in ``rows``); returns the size so far."""
        cdef Py_ssize_t i = 0
        for row in rows:
            self.append(row, i)
            i += 1
        return self._rows * self._row_width + self._var_size

    def build(self):
        """The rows appended so far as a RecordBatch of the table's Arrow schema; then resets."""
        arrays = []
        cdef Py_ssize_t i
        for i in range(self._ncols):
            try:
                arrays.append((<_Col>self._cols[i]).build())
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
                self.reset()
                raise FlussError(f"table '{self.table_name}', column '{self._names[i]}': "
                                 f"cannot build the Arrow column: {exc}") from None
        rb = pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)
        self._rows = 0
        self._var_size = 0
        return rb

    def reset(self):
        """Drops the rows appended so far."""
        for c in self._cols:
            (<_Col>c).reset()
        self._rows = 0
        self._var_size = 0
