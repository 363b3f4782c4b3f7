# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the record-building parts of ``records.py`` (same names, same behaviour).

A record poll makes one ScanRecord per row and, when rows are read, one dict per row; done in
Python that costs microseconds per row, here a few tens of nanoseconds.
"""
from cpython.dict cimport PyDict_New, PyDict_SetItem, PyDict_Copy
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_GET_ITEM
from cpython.ref cimport Py_INCREF, PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.long cimport PyLong_FromLongLong
from cpython.float cimport PyFloat_FromDouble
from cpython.mem cimport PyMem_Malloc, PyMem_Calloc, PyMem_Free
from cpython.ref cimport Py_XDECREF
from libc.string cimport memcmp

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    void* PyUnicode_DATA(object o)
    bint PyUnicode_IS_ASCII(object o)
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t, uintptr_t
cimport cpython.datetime as cdt
cimport cython

import datetime as _dt

cdt.import_datetime()
_UTC = _dt.timezone.utc


@cython.final
@cython.no_gc
cdef class _ChunkRows:
    """The row dicts of one chunk, shared by its records: a record's first ``row`` costs a C
    field read, not a Python call, once the chunk's rows exist."""
    cdef object chunk
    cdef list rows


# A record never takes part in a reference cycle (it points at its chunk's rows holder only), so
# it stays out of the cyclic GC: polls allocate records by the hundred thousand, and free them a
# poll's worth at a time, which the free list hands back to the next poll without malloc/free.
@cython.final
@cython.no_gc
@cython.freelist(1024)
cdef class ScanRecord:
    """A single scan record: ``offset``, ``timestamp``, ``change_type`` and the ``row`` dict."""

    cdef _ChunkRows _rows
    cdef Py_ssize_t _k
    cdef long long _offset
    cdef long long _ts
    cdef object _ct

    def __init__(self):
        raise TypeError("No constructor defined for ScanRecord")

    @property
    def offset(self):
        """The record's offset in its bucket's log."""
        return self._offset

    @property
    def timestamp(self):
        """The record's commit time, milliseconds since the epoch."""
        return self._ts

    @property
    def change_type(self):
        """The `ChangeType`: ``APPEND_ONLY`` for log tables, ``+I``/``-U``/``+U``/``-D`` for changelogs."""
        return self._ct

    @property
    def row(self):
        """The row as ``{column: value}``, built on first access (values as pyfluss returns them)."""
        cdef _ChunkRows h = self._rows
        if h.rows is None:
            h.rows = h.chunk.rows()
        return <object>PyList_GET_ITEM(h.rows, self._k)

    def __str__(self):
        return (f"ScanRecord(offset={self._offset}, timestamp={self._ts}, "
                f"change_type={self._ct.short_string()})")

    def __repr__(self):
        return self.__str__()


def make_records(chunk, list change_types_table, append_only):
    """The ScanRecords of ``chunk`` (a records.Chunk), in row order."""
    cdef Py_ssize_t count = chunk.count
    cdef Py_ssize_t start = chunk.start
    cdef long long base = chunk.base_offset
    cdef long long ts = chunk.timestamp
    cdef object offsets = chunk.offsets
    cdef object cts = chunk.change_types
    cdef const unsigned char[:] ctv
    cdef bint has_ct = cts is not None
    cdef list out = PyList_New(count)
    cdef Py_ssize_t k
    cdef ScanRecord r
    cdef _ChunkRows h = _ChunkRows.__new__(_ChunkRows)
    h.chunk = chunk
    h.rows = None
    if has_ct:
        ctv = cts
    for k in range(count):
        r = ScanRecord.__new__(ScanRecord)
        r._rows = h
        r._k = k
        r._offset = base + k if offsets is None else offsets[k]
        r._ts = ts
        r._ct = change_types_table[ctv[start + k]] if has_ct else append_only
        Py_INCREF(r)
        PyList_SET_ITEM(out, k, r)
    return out


def build_rows(list names, list columns, Py_ssize_t start, Py_ssize_t count):
    """One dict per row ``start .. start+count`` from per-column value lists."""
    cdef Py_ssize_t ncols = len(names)
    cdef list out = PyList_New(count)
    cdef Py_ssize_t i, j
    cdef dict d
    cdef list col
    for i in range(count):
        d = PyDict_New()
        for j in range(ncols):
            col = <list>columns[j]
            PyDict_SetItem(d, names[j], col[start + i])
        Py_INCREF(d)
        PyList_SET_ITEM(out, i, d)
    return out


def attach_utc(list values):
    """The naive datetimes of ``values`` as UTC-aware ones (None stays None), in place."""
    cdef Py_ssize_t i, n = len(values)
    cdef object v
    for i in range(n):
        v = values[i]
        if v is None:
            continue
        values[i] = cdt.datetime_new(
            cdt.datetime_year(v), cdt.datetime_month(v), cdt.datetime_day(v),
            cdt.datetime_hour(v), cdt.datetime_minute(v), cdt.datetime_second(v),
            cdt.datetime_microsecond(v), _UTC)
    return values


# Column kinds RowBuilder reads straight from the Arrow buffers; SLOW columns come as Python lists
# from the caller (convert.py). The numbers are shared with the pure twin through KIND_CODES.
cdef enum:
    K_SLOW = 0
    K_I8 = 1
    K_I16 = 2
    K_I32 = 3
    K_I64 = 4
    K_F32 = 5
    K_F64 = 6
    K_BOOL = 7
    K_STR = 8
    K_BIN = 9
    K_TS = 10
    K_DATE = 11
    K_DEC = 12

KIND_CODES = {"slow": K_SLOW, "int8": K_I8, "int16": K_I16, "int32": K_I32, "int64": K_I64,
              "float": K_F32, "double": K_F64, "bool": K_BOOL, "string": K_STR, "binary": K_BIN,
              "timestamp": K_TS, "date": K_DATE, "decimal": K_DEC}

# datetime's range in microseconds since the epoch (0001-01-01 .. 9999-12-31T23:59:59.999999)
# and date's in days: a value outside is converted by convert.py, as a slow column would be
# (typed C constants: DEF would make the large ones Python ints, and the arithmetic Python's)
cdef int64_t MIN_US = -62135596800000000
cdef int64_t MAX_US = 253402300799999999
cdef int64_t MIN_DAYS = -719162
cdef int64_t MAX_DAYS = 2932896
cdef int64_t US_PER_DAY = 86400000000
cdef int64_t US_PER_HOUR = 3600000000

# Short strings of a column are looked up in a small cache of the ones made last (slot by length
# and a few bytes): columns of few distinct values (categories, codes, actions) then share str
# objects instead of decoding and freeing the same text row after row, as pyarrow's to_pandas
# deduplicates strings. Sharing is invisible: str is immutable.
DEF STR_CACHE_SLOTS = 64
DEF STR_CACHE_MAX_LEN = 24

cdef struct ColView:
    int kind
    PyObject** strs
    Py_ssize_t slow_index
    Py_ssize_t offset
    const uint8_t* valid
    const uint8_t* data
    const int32_t* offs
    # K_TS: microseconds per unit (0 for nanoseconds, divided instead), tz-aware in UTC;
    # K_DEC: scale
    int64_t per_unit
    bint aware
    int scale


cdef inline int64_t _floor_div(int64_t a, int64_t b) noexcept:
    cdef int64_t q = a // b
    if (a % b != 0) and ((a < 0) != (b < 0)):
        q -= 1
    return q


cdef inline void _civil(int64_t days, int* y, int* m, int* d) noexcept:
    # days since 1970-01-01 -> proleptic Gregorian date, counting in 400-year eras from 0000-03-01
    # (``//`` truncates here: C division, see the cdivision directive)
    cdef int64_t z = days + 719468
    cdef int64_t era = (z if z >= 0 else z - 146096) // 146097
    cdef int64_t doe = z - era * 146097
    cdef int64_t yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef int64_t doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef int64_t mp = (5 * doy + 2) // 153
    d[0] = <int>(doy - (153 * mp + 2) // 5 + 1)
    m[0] = <int>(mp + 3 if mp < 10 else mp - 9)
    y[0] = <int>(yoe + era * 400 + (1 if m[0] <= 2 else 0))

cdef inline object _short_str(PyObject** cache, const char* s, Py_ssize_t n):
    cdef size_t slot = <size_t>n * 7
    cdef PyObject* hit
    if n:
        slot += <unsigned char>s[0] * 31 + <unsigned char>s[n - 1] * 3 + <unsigned char>s[n >> 1]
    slot &= STR_CACHE_SLOTS - 1
    hit = cache[slot]
    if (hit != NULL and PyUnicode_GET_LENGTH(<object>hit) == n
            and memcmp(PyUnicode_DATA(<object>hit), s, n) == 0):
        return <object>hit
    v = PyUnicode_DecodeUTF8(s, n, NULL)
    if PyUnicode_IS_ASCII(v):  # then its characters are the UTF-8 bytes compared above
        Py_XDECREF(hit)
        Py_INCREF(v)
        cache[slot] = <PyObject*>v
    return v


cdef const uint8_t* _address(buf):
    return NULL if buf is None or buf.size == 0 else <const uint8_t*><uintptr_t>buf.address

cdef char _EMPTY[1]


cdef class RowBuilder:
    """Row dicts of one Arrow batch: flat numeric, bool, string and binary values are made
    straight from the column buffers (no per-column value lists, no pyarrow call per value), the
    other columns are taken from Python lists the caller converted (``slow`` gives their indices)."""

    cdef ColView* _cols
    cdef Py_ssize_t _ncols
    cdef Py_ssize_t _nrows
    cdef list _names
    cdef dict _template
    cdef object _batch
    cdef object _decimal
    cdef readonly list slow

    def __cinit__(self):
        self._cols = NULL

    def __init__(self, batch, kinds):
        cdef Py_ssize_t j, n = batch.num_columns
        cdef ColView* c
        cdef int k
        if len(kinds) != n:
            raise ValueError(f"{len(kinds)} column kinds for a batch of {n} columns")
        self._batch = batch
        self._nrows = batch.num_rows
        self._names = list(batch.schema.names)
        # every row dict is a copy of this one with its values replaced: no growing, no rehashing
        self._template = dict.fromkeys(self._names)
        self.slow = []
        # zeroed: a failure half-way leaves the rest for __dealloc__ to skip
        self._cols = <ColView*>PyMem_Calloc(max(n, 1), sizeof(ColView))
        if self._cols == NULL:
            raise MemoryError()
        self._ncols = n
        for j in range(n):
            k = kinds[j]
            c = &self._cols[j]
            c.kind = k
            c.slow_index = -1
            c.valid = c.data = NULL
            c.offs = NULL
            c.strs = NULL
            c.offset = 0
            if k == K_SLOW:
                c.slow_index = len(self.slow)
                self.slow.append(j)
                continue
            if k < K_SLOW or k > K_DEC:
                raise ValueError(f"unknown column kind {k}")
            arr = batch.column(j)
            bufs = arr.buffers()
            c.offset = arr.offset
            c.per_unit = 0
            c.aware = False
            c.scale = 0
            t = arr.type
            if k == K_TS:
                c.per_unit = {"s": 1000000, "ms": 1000, "us": 1, "ns": 0}[t.unit]
                c.aware = t.tz is not None
            elif k == K_DEC:
                if t.precision > 18 or t.scale < 0 or t.bit_width != 128:
                    raise ValueError(f"column {self._names[j]!r}: {t} is not read from its buffers")
                c.scale = t.scale
                if self._decimal is None:
                    import decimal
                    self._decimal = decimal.Decimal
            if arr.null_count:
                c.valid = _address(bufs[0])
            if k == K_STR:
                c.strs = <PyObject**>PyMem_Calloc(STR_CACHE_SLOTS, sizeof(PyObject*))
                if c.strs == NULL:
                    raise MemoryError()
            if k == K_STR or k == K_BIN:
                c.offs = <const int32_t*>_address(bufs[1])
                c.data = _address(bufs[2])
                if c.data == NULL:
                    c.data = <const uint8_t*>_EMPTY
            else:
                c.data = _address(bufs[1])
            if c.data == NULL and self._nrows:
                raise ValueError(f"column {self._names[j]!r} has no data buffer")

    def __dealloc__(self):
        cdef Py_ssize_t j, k
        if self._cols != NULL:
            for j in range(self._ncols):
                if self._cols[j].strs != NULL:
                    for k in range(STR_CACHE_SLOTS):
                        Py_XDECREF(self._cols[j].strs[k])
                    PyMem_Free(self._cols[j].strs)
            PyMem_Free(self._cols)
            self._cols = NULL

    def rows(self, Py_ssize_t start, Py_ssize_t count, list slow_cols, Py_ssize_t slow_first):
        """The row dicts of rows ``start .. start+count``; ``slow_cols[i]`` holds the values of
        column ``slow[i]`` from row ``slow_first`` on."""
        cdef Py_ssize_t i, j, r, p, a, b, si
        cdef ColView* c
        cdef ColView* cols = self._cols
        cdef Py_ssize_t ncols = self._ncols
        cdef list names = self._names
        cdef dict template = self._template
        cdef list out
        cdef dict d
        cdef object v
        cdef list col
        if start < 0 or count < 0 or start + count > self._nrows:
            raise IndexError(f"rows {start}..{start + count} of a batch of {self._nrows}")
        if len(slow_cols) != len(self.slow):
            raise ValueError(f"{len(slow_cols)} value lists for {len(self.slow)} converted columns")
        for col in slow_cols:
            if slow_first > start or len(col) < start + count - slow_first:
                raise IndexError(f"value list of rows {slow_first}..{slow_first + len(col)} "
                                 f"does not hold rows {start}..{start + count}")
        out = PyList_New(count)
        for i in range(count):
            r = start + i
            d = PyDict_Copy(template)
            for j in range(ncols):
                c = &cols[j]
                if c.kind == K_SLOW:
                    v = <object>PyList_GET_ITEM(<list>PyList_GET_ITEM(slow_cols, c.slow_index),
                                                r - slow_first)
                else:
                    p = c.offset + r
                    if c.valid != NULL and not ((c.valid[p >> 3] >> (p & 7)) & 1):
                        v = None
                    elif c.kind == K_I64:
                        v = PyLong_FromLongLong((<const int64_t*>c.data)[p])
                    elif c.kind == K_I32:
                        v = PyLong_FromLongLong((<const int32_t*>c.data)[p])
                    elif c.kind == K_STR:
                        a = c.offs[p]
                        b = c.offs[p + 1]
                        if b - a <= STR_CACHE_MAX_LEN:
                            v = _short_str(c.strs, <const char*>c.data + a, b - a)
                        else:
                            v = PyUnicode_DecodeUTF8(<const char*>c.data + a, b - a, NULL)
                    elif c.kind == K_F64:
                        v = PyFloat_FromDouble((<const double*>c.data)[p])
                    elif c.kind == K_I16:
                        v = PyLong_FromLongLong((<const int16_t*>c.data)[p])
                    elif c.kind == K_I8:
                        v = PyLong_FromLongLong((<const int8_t*>c.data)[p])
                    elif c.kind == K_F32:
                        v = PyFloat_FromDouble((<const float*>c.data)[p])
                    elif c.kind == K_BOOL:
                        v = True if (c.data[p >> 3] >> (p & 7)) & 1 else False
                    elif c.kind == K_TS:
                        v = self._timestamp(c, (<const int64_t*>c.data)[p], j, r)
                    elif c.kind == K_DEC:
                        v = self._decimal_at(c, (<const int64_t*>c.data)[2 * p])
                    elif c.kind == K_DATE:
                        v = self._date(c, (<const int32_t*>c.data)[p], j, r)
                    else:
                        a = c.offs[p]
                        b = c.offs[p + 1]
                        v = PyBytes_FromStringAndSize(<const char*>c.data + a, b - a)
                PyDict_SetItem(d, <object>PyList_GET_ITEM(names, j), v)
            Py_INCREF(d)
            PyList_SET_ITEM(out, i, d)
        return out

    cdef object _outside(self, Py_ssize_t j, Py_ssize_t r):
        # a value outside datetime's range: whatever convert.py makes of it
        from .convert import column_to_pylist
        return column_to_pylist(self._batch.column(j).slice(r, 1))[0]

    cdef object _timestamp(self, ColView* c, int64_t v, Py_ssize_t j, Py_ssize_t r):
        cdef int64_t us, days, rem
        cdef int y, m, d
        if c.per_unit == 0:
            us = _floor_div(v, 1000)  # nanoseconds floored to microseconds, as pyfluss does
        elif v < MIN_US // c.per_unit or v > MAX_US // c.per_unit:
            return self._outside(j, r)
        else:
            us = v * c.per_unit
        if us < MIN_US or us > MAX_US:
            return self._outside(j, r)
        days = _floor_div(us, US_PER_DAY)
        rem = us - days * US_PER_DAY
        _civil(days, &y, &m, &d)
        return cdt.datetime_new(y, m, d, <int>(rem // US_PER_HOUR), <int>((rem // 60000000) % 60),
                                <int>((rem // 1000000) % 60), <int>(rem % 1000000),
                                _UTC if c.aware else None)

    cdef object _date(self, ColView* c, int32_t v, Py_ssize_t j, Py_ssize_t r):
        cdef int y, m, d
        if v < MIN_DAYS or v > MAX_DAYS:
            return self._outside(j, r)
        _civil(v, &y, &m, &d)
        return cdt.date_new(y, m, d)

    cdef object _decimal_at(self, ColView* c, int64_t unscaled):
        # the text Arrow's cast to string gives ("-12.34", "0.005"), read by Decimal like convert.py
        cdef char buf[48]
        cdef char digits[24]
        cdef int nd = 0, pos = 0, k
        cdef int scale = c.scale
        cdef uint64_t mag = <uint64_t>(-(unscaled + 1)) + 1 if unscaled < 0 else <uint64_t>unscaled
        while True:
            digits[nd] = <char>(48 + mag % 10)
            nd += 1
            mag //= 10
            if mag == 0:
                break
        if unscaled < 0:
            buf[pos] = 45  # '-'
            pos += 1
        if nd <= scale:
            buf[pos] = 48
            pos += 1
            buf[pos] = 46  # '.'
            pos += 1
            for k in range(scale - nd):
                buf[pos] = 48
                pos += 1
            for k in range(nd - 1, -1, -1):
                buf[pos] = digits[k]
                pos += 1
        else:
            for k in range(nd - 1, -1, -1):
                buf[pos] = digits[k]
                pos += 1
                if k == scale and scale > 0:
                    buf[pos] = 46
                    pos += 1
        return self._decimal(PyUnicode_DecodeUTF8(buf, pos, NULL))
