# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of :mod:`fluss_fast.codec.upsertrow`."""
from libc.stdint cimport int32_t, uint32_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF

cdef extern from "fluss_murmur.h":
    int32_t ffm_bucket(const unsigned char *p, Py_ssize_t n, int32_t nb) nogil


cdef class UpsertRow:
    cdef list _names
    cdef list _key_positions
    cdef object _key_encode
    cdef object _row_encode
    cdef int32_t _nb
    cdef dict _slots
    cdef Py_ssize_t _width

    def __init__(self, names, key_positions, key_encoder, row_encoder, int num_buckets, dict slots):
        if num_buckets <= 0:
            raise ValueError(f"num_buckets must be positive, got {num_buckets}")
        self._names = list(names)
        self._key_positions = [int(i) for i in key_positions]
        self._key_encode = key_encoder.encode
        self._row_encode = row_encoder.encode
        self._nb = num_buckets
        self._slots = slots
        self._width = len(self._names)

    @property
    def names(self):
        return self._names

    @property
    def key_positions(self):
        return self._key_positions

    @property
    def num_buckets(self):
        return self._nb

    @property
    def slots(self):
        return self._slots

    def put(self, row):
        cdef list values, kvals
        cdef Py_ssize_t i, nk, n, vlen, klen_len, total
        cdef PyObject *got
        cdef object v, key, value, slot
        cdef bytes record
        cdef unsigned char *p
        cdef unsigned char kl[10]
        cdef uint32_t u
        cdef int32_t bucket
        if type(row) is dict:
            if len(<dict>row) != self._width:
                return None
            values = PyList_New(self._width)
            for i in range(self._width):
                got = PyDict_GetItem(<dict>row, self._names[i])
                if got == NULL:
                    # PyList_New's slots are NULL: fill them before the list can be freed
                    for n in range(i, self._width):
                        Py_INCREF(None)
                        PyList_SET_ITEM(values, n, None)
                    return None
                v = <object>got
                Py_INCREF(v)
                PyList_SET_ITEM(values, i, v)
        elif type(row) is list or type(row) is tuple:
            if len(row) != self._width:
                return None
            values = list(row)
        else:
            return None
        nk = len(self._key_positions)
        kvals = PyList_New(nk)
        for i in range(nk):
            v = values[<Py_ssize_t>self._key_positions[i]]
            Py_INCREF(v)
            PyList_SET_ITEM(kvals, i, v)
        try:
            key = self._key_encode(kvals)
            value = self._row_encode(values)
        except (TypeError, ValueError, OverflowError):
            return None
        if type(key) is not bytes or type(value) is not bytes:
            key = bytes(key)
            value = bytes(value)
        n = PyBytes_GET_SIZE(key)
        vlen = PyBytes_GET_SIZE(value)
        u = <uint32_t>n
        klen_len = 0
        while u > 0x7F:
            kl[klen_len] = <unsigned char>((u & 0x7F) | 0x80)
            u >>= 7
            klen_len += 1
        kl[klen_len] = <unsigned char>u
        klen_len += 1
        total = klen_len + n + vlen
        record = PyBytes_FromStringAndSize(NULL, 4 + total)
        p = <unsigned char *>PyBytes_AS_STRING(record)
        p[0] = <unsigned char>(total & 0xFF)
        p[1] = <unsigned char>((total >> 8) & 0xFF)
        p[2] = <unsigned char>((total >> 16) & 0xFF)
        p[3] = <unsigned char>((total >> 24) & 0xFF)
        memcpy(p + 4, kl, klen_len)
        memcpy(p + 4 + klen_len, PyBytes_AS_STRING(key), n)
        memcpy(p + 4 + klen_len + n, PyBytes_AS_STRING(value), vlen)
        bucket = ffm_bucket(<const unsigned char *>PyBytes_AS_STRING(key), n, self._nb)
        got = PyDict_GetItem(self._slots, (None, bucket))
        if got != NULL:
            slot = <object>got
            h = slot.append(record)
            if h is not None:
                return h
        return (record, bucket)
