# cython: language_level=3
"""Compiled twin of ``compacted.py``: CompactedRow encoders (rows and keys) and the decoder."""
include "rowcore.pxi"

from fluss_fast.codec.rows._rowbase cimport _Field, _RowDecoder, _RowEncoder


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
        _pure()  # this module's own handles on the pure helpers (decimals), before any row
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

cdef class CompactedRowDecoder(_RowDecoder):
    """``decode(buf, pos=0, end=None) -> list``: the values of one CompactedRow."""

    def __init__(self, types, names=None):
        _pure()  # this module's own handles on the pure helpers (decimals), before any row
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
