# cython: language_level=3
"""Compiled twin of ``rowbase.py``: what every compiled row encoder / decoder shares (the field plan,
the base classes ``_compacted`` and ``_indexed`` extend, and log records of encoded rows).

Scalars (integers, floats, strings, bytes, dates, times, plain datetimes) are converted and written
in C. Everything else (decimals, nested ARRAY/MAP/ROW, pandas/numpy timestamps, and the formatting
of every error message) goes through the pure modules' helpers, so both twins accept the same
values, produce the same bytes and raise the same messages.
"""
include "rowcore.pxi"

from fluss_fast.codec.wire.bytebuf cimport wb_patch32, wb_skip


# ----------------------------------------------------------------------------------------------
# per-field plan
# ----------------------------------------------------------------------------------------------
cdef class _Field:  # attributes in _rowbase.pxd
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
            start = wb_skip(&b, 5)
            try:
                (<_RowEncoder> encoder)._put(&b, rows[i])
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"row {i}: {exc}") from None
            wb_patch32(&b, start, <int32_t> (b.n - start - 4))
            b.p[start + 4] = <unsigned char> ct
        return PyBytes_FromStringAndSize(<char *> b.p, b.n)
    finally:
        wb_free(&b)
