"""IndexedRow (docs/contributing/formats.md §3.2): null bitset, one int32 length per non-null variable-length field,
then the fields; fixed-length ones inline (CHAR(n)/BINARY(n) padded to n bytes, stripped when read).

``_rows`` compiles the encoder and decoder; ``X_py`` names keep the pure ones reachable."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from .._select import pick
from .binarray import _nested_decoder, _nested_encoder
from .rowbase import _DECODE_ERRORS, _arity_error, _as_bytes, _field_label, _RowCodec, _RowEncoder, _with_field
from .rowtypes import (
    INDEXED,
    T_ARRAY,
    T_BINARY,
    T_BOOLEAN,
    T_BYTES,
    T_CHAR,
    T_DECIMAL,
    T_MAP,
    T_ROW,
    T_STRING,
    T_TIMESTAMP,
    T_TIMESTAMP_LTZ,
    TypeInfo,
)
from .scalars import (
    _FIXED_READ,
    _FIXED_WRITE,
    _pk_i,
    _pk_q,
    _pk_qi,
    _range,
    _strip_zeros,
    bigint_bytes,
    conv_bool,
    conv_bytes,
    conv_decimal,
    conv_str,
    conv_timestamp,
    conv_timestamp_ltz,
    make_decimal,
    make_timestamp,
    make_timestamp_ltz,
)


def _indexed_fixed_writer(t: TypeInfo) -> Callable:
    """fn(value) -> bytes of a fixed-length IndexedRow field (exactly t.size bytes)."""
    c = t.code
    if c == T_BOOLEAN:
        return lambda v: b"\x01" if conv_bool(v, t) else b"\x00"
    if c in _FIXED_WRITE:
        conv, pack = _FIXED_WRITE[c]
        return lambda v: pack(conv(v, t))
    if c in (T_CHAR, T_BINARY):
        conv = conv_str if c == T_CHAR else conv_bytes
        n = t.length

        def w(v):
            data = conv(v, t)
            if len(data) > n:
                raise _range(v, t, f"{len(data)} bytes do not fit in {n}")
            return data + b"\x00" * (n - len(data))
        return w
    if c == T_DECIMAL:
        return lambda v: _pk_q.pack(conv_decimal(v, t))
    if c in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
        conv = conv_timestamp if c == T_TIMESTAMP else conv_timestamp_ltz
        if t.compact:
            return lambda v: _pk_q.pack(conv(v, t)[0])
        return lambda v: _pk_qi.pack(*conv(v, t))
    raise ValueError(f"{t.dtype} is not fixed-length in an IndexedRow")  # pragma: no cover


def _indexed_var_writer(t: TypeInfo) -> Callable:
    """fn(value) -> bytes of a variable-length IndexedRow field."""
    c = t.code
    if c == T_STRING:
        return lambda v: conv_str(v, t)
    if c == T_BYTES:
        return lambda v: conv_bytes(v, t)
    if c == T_DECIMAL:
        return lambda v: bigint_bytes(conv_decimal(v, t))
    if c in (T_ARRAY, T_MAP, T_ROW):
        return _nested_encoder(t, INDEXED)
    raise ValueError(f"{t.dtype} is not variable-length in an IndexedRow")  # pragma: no cover


def _indexed_fixed_reader(t: TypeInfo) -> Callable:
    """fn(buf, pos) -> value of a fixed-length IndexedRow field."""
    c = t.code
    if c == T_BOOLEAN:
        return lambda buf, pos: buf[pos] != 0
    if c in _FIXED_READ:
        st, make = _FIXED_READ[c]
        unpack = st.unpack_from
        if make is None:
            return lambda buf, pos: unpack(buf, pos)[0]
        return lambda buf, pos: make(unpack(buf, pos)[0])
    if c == T_CHAR:
        n = t.length
        return lambda buf, pos: str(_strip_zeros(bytes(buf[pos:pos + n])), "utf-8")
    if c == T_BINARY:
        n = t.length
        return lambda buf, pos: _strip_zeros(bytes(buf[pos:pos + n]))
    if c == T_DECIMAL:
        scale = t.scale
        return lambda buf, pos: make_decimal(_pk_q.unpack_from(buf, pos)[0], scale)
    if c in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
        make = make_timestamp if c == T_TIMESTAMP else make_timestamp_ltz
        if t.compact:
            return lambda buf, pos: make(_pk_q.unpack_from(buf, pos)[0], 0)
        return lambda buf, pos: make(*_pk_qi.unpack_from(buf, pos))
    raise ValueError(f"{t.dtype} is not fixed-length in an IndexedRow")  # pragma: no cover


def _indexed_var_reader(t: TypeInfo) -> Callable:
    """fn(buf, pos, n) -> value of a variable-length IndexedRow field of n bytes."""
    c = t.code
    if c == T_STRING:
        return lambda buf, pos, n: str(buf[pos:pos + n], "utf-8")
    if c == T_BYTES:
        return lambda buf, pos, n: bytes(buf[pos:pos + n])
    if c == T_DECIMAL:
        scale = t.scale
        return lambda buf, pos, n: make_decimal(int.from_bytes(buf[pos:pos + n], "big", signed=True), scale)
    if c in (T_ARRAY, T_MAP, T_ROW):
        return _nested_decoder(t, INDEXED)
    raise ValueError(f"{t.dtype} is not variable-length in an IndexedRow")  # pragma: no cover


class IndexedRowEncoder(_RowEncoder):
    """``encode(values) -> bytes``: one IndexedRow (null bitset, var-length list, packed fields)."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        super().__init__(types, names)
        self._nvar = sum(1 for t in self._infos if not t.fixed)
        self._plan = [(i, t.nullable, t.fixed, _indexed_fixed_writer(t) if t.fixed else _indexed_var_writer(t))
                      for i, t in enumerate(self._infos)]

    def encode(self, values) -> bytes:
        if len(values) != self._n:
            raise _arity_error(len(values), self._n)
        nb = self._nbytes
        out = bytearray(nb + 4 * self._nvar)
        vslot = nb
        for i, nullable, fixed, w in self._plan:
            v = values[i]
            if v is None:
                self._null(out, i, nullable)
                continue
            try:
                data = w(v)
            except (TypeError, ValueError) as exc:
                raise _with_field(exc, self._names, i) from None
            if not fixed:
                # slots go to the non-null variable fields in order; the trailing ones stay 0
                _pk_i.pack_into(out, vslot, len(data))
                vslot += 4
            out += data
        return bytes(out)


class IndexedRowDecoder(_RowCodec):
    """``decode(buf, pos=0, end=None) -> list``: the values of one IndexedRow."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        super().__init__(types, names)
        self._nvar = sum(1 for t in self._infos if not t.fixed)
        self._header = self._nbytes + 4 * self._nvar
        self._plan = [(t.fixed, t.size, _indexed_fixed_reader(t) if t.fixed else _indexed_var_reader(t))
                      for t in self._infos]

    def decode(self, buf, pos: int = 0, end: int | None = None) -> list:
        buf, pos, end = _as_bytes(buf, pos, end)
        return self._decode(buf, pos, end)

    def decode_dict(self, buf, pos: int, end: int) -> dict:
        return dict(zip(self._names, self._decode(buf, pos, end), strict=True))

    def _decode(self, buf, pos: int, end: int) -> list:
        if pos + self._header > end:
            raise ValueError(f"truncated IndexedRow: {end - pos} bytes, header needs {self._header}")
        nulls = buf[pos:pos + self._nbytes]
        vslot = pos + self._nbytes
        p = pos + self._header
        out = []
        i = 0
        try:
            for fixed, size, r in self._plan:
                if nulls[i >> 3] & (1 << (i & 7)):
                    out.append(None)
                elif fixed:
                    if p + size > end:
                        raise ValueError(f"needs {size} bytes, {end - p} left")
                    out.append(r(buf, p))
                    p += size
                else:
                    n = _pk_i.unpack_from(buf, vslot)[0]
                    vslot += 4
                    if n < 0 or p + n > end:
                        raise ValueError(f"bad length {n}, {end - p} bytes left")
                    out.append(r(buf, p, n))
                    p += n
                i += 1
        except (ValueError,) + _DECODE_ERRORS as exc:
            raise ValueError(f"corrupt IndexedRow, {_field_label(self._names, i)}: {exc}") from None
        return out


IndexedRowEncoder_py = IndexedRowEncoder
IndexedRowDecoder_py = IndexedRowDecoder

pick("_indexed", globals(), ["IndexedRowEncoder", "IndexedRowDecoder"])
