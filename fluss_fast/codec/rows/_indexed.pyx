# cython: language_level=3
"""Compiled twin of ``indexed.py``: IndexedRow encoder and decoder."""
include "rowcore.pxi"

from fluss_fast.codec.rows._rowbase cimport _Field, _RowDecoder, _RowEncoder


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
        _pure()  # this module's own handles on the pure helpers (decimals), before any row
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

cdef inline object strip_zeros(const unsigned char *p, Py_ssize_t n, bint text):
    while n > 0 and p[n - 1] == 0:
        n -= 1
    if text:
        return PyUnicode_DecodeUTF8(<const char *> p, n, NULL)
    return PyBytes_FromStringAndSize(<const char *> p, n)

cdef class IndexedRowDecoder(_RowDecoder):
    """``decode(buf, pos=0, end=None) -> list``: the values of one IndexedRow."""

    def __init__(self, types, names=None):
        _pure()  # this module's own handles on the pure helpers (decimals), before any row
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
