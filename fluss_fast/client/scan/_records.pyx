# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of the record-building parts of ``records.py`` (same names, same behaviour).

A record poll makes one ScanRecord per row and, when rows are read, one dict per row; done in
Python that costs microseconds per row, here a few tens of nanoseconds.
"""
from cpython.dict cimport PyDict_New, PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
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
