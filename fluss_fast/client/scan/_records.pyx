# cython: language_level=3, boundscheck=False, wraparound=False
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
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uintptr_t
cimport cpython.datetime as cdt
cimport cython

import datetime as _dt

cdt.import_datetime()
_UTC = _dt.timezone.utc


# A record never takes part in a reference cycle (it points at its chunk and row only), so it
# stays out of the cyclic GC: polls allocate records by the hundred thousand.
@cython.no_gc
cdef class ScanRecord:
    """A single scan record: ``offset``, ``timestamp``, ``change_type`` and the ``row`` dict."""

    cdef object _chunk
    cdef Py_ssize_t _k
    cdef long long _offset
    cdef long long _ts
    cdef object _ct
    cdef object _row

    def __init__(self):
        raise TypeError("No constructor defined for ScanRecord")

    @property
    def offset(self):
        return self._offset

    @property
    def timestamp(self):
        return self._ts

    @property
    def change_type(self):
        return self._ct

    @property
    def row(self):
        if self._row is None:
            self._row = self._chunk.rows()[self._k]
        return self._row

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
    if has_ct:
        ctv = cts
    for k in range(count):
        r = ScanRecord.__new__(ScanRecord)
        r._chunk = chunk
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

KIND_CODES = {"slow": K_SLOW, "int8": K_I8, "int16": K_I16, "int32": K_I32, "int64": K_I64,
              "float": K_F32, "double": K_F64, "bool": K_BOOL, "string": K_STR, "binary": K_BIN}

cdef struct ColView:
    int kind
    Py_ssize_t slow_index
    Py_ssize_t offset
    const uint8_t* valid
    const uint8_t* data
    const int32_t* offs

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
        self._cols = <ColView*>PyMem_Malloc(max(n, 1) * sizeof(ColView))
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
            c.offset = 0
            if k == K_SLOW:
                c.slow_index = len(self.slow)
                self.slow.append(j)
                continue
            if k < K_SLOW or k > K_BIN:
                raise ValueError(f"unknown column kind {k}")
            arr = batch.column(j)
            bufs = arr.buffers()
            c.offset = arr.offset
            if arr.null_count:
                c.valid = _address(bufs[0])
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
        if self._cols != NULL:
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
                    else:
                        a = c.offs[p]
                        b = c.offs[p + 1]
                        v = PyBytes_FromStringAndSize(<const char*>c.data + a, b - a)
                PyDict_SetItem(d, <object>PyList_GET_ITEM(names, j), v)
            Py_INCREF(d)
            PyList_SET_ITEM(out, i, d)
        return out
