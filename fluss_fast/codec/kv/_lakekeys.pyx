# cython: language_level=3
"""Compiled twin of :mod:`fluss_fast.codec.kv.lakekeys` (see there for the layouts).

Keys whose values are all plain integers (TINYINT..BIGINT in range), strings (CHAR, STRING), bytes
(BINARY, BYTES), booleans and floats (DOUBLE) are written in C; any other key (decimals, dates,
times, timestamps, nulls, numpy scalars, out-of-range or wrongly typed values) is handed to the pure
encoder, so both twins produce the same bytes and raise the same messages.
"""
from libc.stdint cimport int64_t, uint64_t, uint32_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, free
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.unicode cimport PyUnicode_CheckExact
from cpython.long cimport PyLong_CheckExact
from cpython.float cimport PyFloat_CheckExact, PyFloat_AS_DOUBLE

from fluss_fast.codec.wire.bytebuf cimport ff_le_put16, ff_le_put32, ff_le_put64
from fluss_fast.codec.rows.row_type_codes cimport *  # C_BOOLEAN .. C_ROW

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except NULL
    long long PyLong_AsLongLongAndOverflow(object o, int *overflow) except? -1

cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>
    /* Java's canonical NaN; Python floats may carry other NaN payloads */
    static inline uint64_t ff_lk_f64bits(double x)
    { if (x != x) return 0x7FF8000000000000ull; uint64_t v; memcpy(&v, &x, 8); return v; }
    """
    uint64_t ff_lk_f64bits(double x) nogil

cdef object _pure = None  # fluss_fast.codec.kv.lakekeys, imported on first use (it imports this module)


cdef object _pure_module():
    global _pure
    if _pure is None:
        import importlib
        _pure = importlib.import_module("fluss_fast.codec.kv.lakekeys")
    return _pure


cdef inline int _fast_int(object v, int code, int64_t *out):
    """1 and the value when ``v`` is a plain int in the range of ``code``, else 0."""
    cdef int overflow = 0
    cdef long long x
    if not PyLong_CheckExact(v):
        return 0
    x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow:
        return 0
    if code == C_TINYINT and not (-128 <= x <= 127):
        return 0
    if code == C_SMALLINT and not (-32768 <= x <= 32767):
        return 0
    if code == C_INT and not (-2147483648 <= x <= 2147483647):
        return 0
    out[0] = x
    return 1


cdef class PaimonKeyEncoder:
    """``encode(values) -> bytes``: the key columns as a Paimon BinaryRow (row kind INSERT)."""

    cdef object _py
    cdef int _n
    cdef Py_ssize_t _nb, _fixed
    cdef int *_codes
    cdef const char **_ptrs
    cdef Py_ssize_t *_lens
    cdef int64_t *_ints

    def __cinit__(self, *args, **kwargs):
        self._codes = NULL
        self._ptrs = NULL
        self._lens = NULL
        self._ints = NULL

    def __init__(self, types, names=None):
        py = _pure_module().PaimonKeyEncoder_py(types, names)  # validates, and encodes what C does not
        self._py = py
        self._n = py.arity
        self._nb = _pure_module().paimon_null_bytes(self._n)
        self._fixed = self._nb + 8 * self._n
        cdef int n = self._n if self._n else 1
        self._codes = <int *>malloc(sizeof(int) * n)
        self._ptrs = <const char **>malloc(sizeof(char *) * n)
        self._lens = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * n)
        self._ints = <int64_t *>malloc(sizeof(int64_t) * n)
        if self._codes == NULL or self._ptrs == NULL or self._lens == NULL or self._ints == NULL:
            raise MemoryError()
        for i, info in enumerate(py._infos):
            self._codes[i] = info.code

    def __dealloc__(self):
        free(self._codes)
        free(self._ptrs)
        free(self._lens)
        free(self._ints)

    @property
    def arity(self):
        return self._n

    def encode(self, values):
        cdef Py_ssize_t i, total, ln, off, slot
        cdef int code
        cdef object v
        cdef unsigned char *p
        if len(values) != self._n:
            return self._py.encode(values)  # its message
        total = self._fixed
        # pass 1: every value plain (else the pure encoder), and the size of the variable part
        for i in range(self._n):
            v = values[i]
            code = self._codes[i]
            if code == C_STRING or code == C_CHAR:
                if not PyUnicode_CheckExact(v):
                    return self._py.encode(values)
                try:
                    self._ptrs[i] = PyUnicode_AsUTF8AndSize(v, &ln)
                except UnicodeError:
                    return self._py.encode(values)
                self._lens[i] = ln
                if ln > 7:
                    total += (ln + 7) & ~(<Py_ssize_t>7)
            elif code == C_BYTES or code == C_BINARY:
                if not PyBytes_CheckExact(v):
                    return self._py.encode(values)
                ln = PyBytes_GET_SIZE(v)
                self._ptrs[i] = PyBytes_AS_STRING(v)
                self._lens[i] = ln
                if ln > 7:
                    total += (ln + 7) & ~(<Py_ssize_t>7)
            elif code == C_TINYINT or code == C_SMALLINT or code == C_INT or code == C_BIGINT:
                if not _fast_int(v, code, &self._ints[i]):
                    return self._py.encode(values)
            elif code == C_BOOLEAN:
                if v is True:
                    self._ints[i] = 1
                elif v is False:
                    self._ints[i] = 0
                else:
                    return self._py.encode(values)
            elif code == C_DOUBLE:
                if not PyFloat_CheckExact(v):
                    return self._py.encode(values)
                self._ints[i] = <int64_t>ff_lk_f64bits(PyFloat_AS_DOUBLE(v))
            else:
                return self._py.encode(values)
        # pass 2: write
        out = PyBytes_FromStringAndSize(NULL, total)
        p = <unsigned char *>PyBytes_AS_STRING(out)
        memset(p, 0, total)
        off = self._fixed
        for i in range(self._n):
            code = self._codes[i]
            slot = self._nb + 8 * i
            if code == C_STRING or code == C_CHAR or code == C_BYTES or code == C_BINARY:
                ln = self._lens[i]
                if ln <= 7:
                    if ln:
                        memcpy(p + slot, self._ptrs[i], ln)
                    p[slot + 7] = <unsigned char>(0x80 | ln)
                else:
                    memcpy(p + off, self._ptrs[i], ln)
                    ff_le_put64(p + slot, (<uint64_t>off << 32) | <uint64_t>ln)
                    off += (ln + 7) & ~(<Py_ssize_t>7)
            elif code == C_TINYINT or code == C_BOOLEAN:
                p[slot] = <unsigned char>(self._ints[i] & 0xFF)
            elif code == C_SMALLINT:
                ff_le_put16(p + slot, <unsigned short>(self._ints[i] & 0xFFFF))
            elif code == C_INT:
                ff_le_put32(p + slot, <uint32_t>(self._ints[i] & 0xFFFFFFFF))
            else:  # BIGINT, DOUBLE (bits)
                ff_le_put64(p + slot, <uint64_t>self._ints[i])
        return out


cdef class IcebergKeyEncoder:
    """``encode([value]) -> bytes``: the one key column as Iceberg's bucket transform hashes it."""

    cdef object _py
    cdef int _code

    def __init__(self, types, names=None):
        py = _pure_module().IcebergKeyEncoder_py(types, names)  # validates (one column, its type)
        self._py = py
        self._code = py._infos[0].code

    @property
    def arity(self):
        return 1

    def encode(self, values):
        cdef int64_t x = 0
        cdef unsigned char buf[8]
        if len(values) != 1:
            return self._py.encode(values)
        v = values[0]
        code = self._code
        if code == C_INT or code == C_BIGINT:
            if _fast_int(v, code, &x):
                ff_le_put64(buf, <uint64_t>x)
                return PyBytes_FromStringAndSize(<char *>buf, 8)
        elif code == C_STRING or code == C_CHAR:
            if PyUnicode_CheckExact(v):
                try:
                    return v.encode("utf-8")
                except UnicodeError:
                    pass
        elif code == C_BYTES or code == C_BINARY:
            if PyBytes_CheckExact(v):
                return v
        return self._py.encode(values)
