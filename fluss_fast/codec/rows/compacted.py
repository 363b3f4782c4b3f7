"""CompactedRow (docs/contributing/formats.md §4): null bitset then the fields back to back, ints and lengths as
varints; also the primary-key encoding, the same fields without the bitset (docs/contributing/formats.md §6.2).

``_rows`` compiles the encoders and decoders; ``X_py`` names keep the pure ones reachable."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from .._select import pick
from ..wire.varint import (
    _U32,
    _U64,
    _get_length,
    _get_varint32,
    _get_varint32_at,
    _get_varint64,
    _get_varint64_at,
    _put_varint,
)
from .binarray import _nested_decoder, _nested_encoder
from .rowbase import _DECODE_ERRORS, _arity_error, _as_bytes, _field_label, _RowCodec, _RowEncoder, _with_field
from .rowtypes import (
    COMPACTED,
    T_ARRAY,
    T_BIGINT,
    T_BINARY,
    T_BOOLEAN,
    T_BYTES,
    T_CHAR,
    T_DATE,
    T_DECIMAL,
    T_DOUBLE,
    T_FLOAT,
    T_INT,
    T_MAP,
    T_ROW,
    T_SMALLINT,
    T_STRING,
    T_TIME,
    T_TIMESTAMP,
    T_TIMESTAMP_LTZ,
    T_TINYINT,
    TypeInfo,
    _per_type,
)
from .scalars import (
    _FIXED_READ,
    _FIXED_WRITE,
    bigint_bytes,
    conv_bool,
    conv_bytes,
    conv_decimal,
    conv_str,
    conv_timestamp,
    conv_timestamp_ltz,
    make_date,
    make_decimal,
    make_time,
    make_timestamp,
    make_timestamp_ltz,
)


@_per_type("cw")
def _compacted_writer(t: TypeInfo) -> Callable:
    """fn(out: bytearray, value) appending one non-null CompactedRow field."""
    c = t.code
    if c == T_BOOLEAN:
        def w(out, v):
            out.append(1 if conv_bool(v, t) else 0)
    elif c in (T_TINYINT, T_SMALLINT, T_FLOAT, T_DOUBLE):
        conv, pack = _FIXED_WRITE[c]

        def w(out, v):
            out += pack(conv(v, t))
    elif c in (T_INT, T_DATE, T_TIME, T_BIGINT):
        conv = _FIXED_WRITE[c][0]
        mask = _U64 if c == T_BIGINT else _U32  # varint of the two's-complement bit pattern

        def w(out, v):
            u = conv(v, t)
            if 0 <= u < 0x80:
                out.append(u)
            else:
                _put_varint(out, u & mask)
    elif c in (T_CHAR, T_STRING, T_BINARY, T_BYTES):
        conv = conv_str if c in (T_CHAR, T_STRING) else conv_bytes

        def w(out, v):
            data = conv(v, t)
            n = len(data)
            if n < 0x80:
                out.append(n)
            else:
                _put_varint(out, n)
            out += data
    elif c == T_DECIMAL:
        if t.compact:
            def w(out, v):
                _put_varint(out, conv_decimal(v, t) & _U64)
        else:
            def w(out, v):
                data = bigint_bytes(conv_decimal(v, t))
                out.append(len(data))
                out += data
    elif c in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
        conv = conv_timestamp if c == T_TIMESTAMP else conv_timestamp_ltz
        if t.compact:
            def w(out, v):
                _put_varint(out, conv(v, t)[0] & _U64)
        else:
            def w(out, v):
                millis, nanos = conv(v, t)
                _put_varint(out, millis & _U64)
                _put_varint(out, nanos)
    elif c in (T_ARRAY, T_MAP, T_ROW):
        nested = _nested_encoder(t, COMPACTED)

        def w(out, v):
            data = nested(v)
            _put_varint(out, len(data))
            out += data
    else:  # pragma: no cover
        raise ValueError(f"unsupported type {t.dtype}")
    return w


@_per_type("cr")
def _compacted_reader(t: TypeInfo) -> Callable:
    """fn(buf, pos, end) -> (value, next position) of one non-null CompactedRow field."""
    c = t.code
    if c == T_BOOLEAN:
        def r(buf, pos, end):
            return buf[pos] != 0, pos + 1
    elif c in (T_TINYINT, T_SMALLINT, T_FLOAT, T_DOUBLE):
        st = _FIXED_READ[c][0]
        unpack, size = st.unpack_from, st.size

        def r(buf, pos, end):
            return unpack(buf, pos)[0], pos + size
    elif c == T_INT:
        r = _get_varint32_at
    elif c == T_DATE:
        def r(buf, pos, end):
            v, pos = _get_varint32(buf, pos)
            return make_date(v), pos
    elif c == T_TIME:
        def r(buf, pos, end):
            v, pos = _get_varint32(buf, pos)
            return make_time(v), pos
    elif c == T_BIGINT:
        r = _get_varint64_at
    elif c in (T_CHAR, T_STRING):
        def r(buf, pos, end):
            n, pos = _get_length(buf, pos, end)
            return str(buf[pos:pos + n], "utf-8"), pos + n
    elif c in (T_BINARY, T_BYTES):
        def r(buf, pos, end):
            n, pos = _get_length(buf, pos, end)
            return bytes(buf[pos:pos + n]), pos + n
    elif c == T_DECIMAL:
        scale = t.scale
        if t.compact:
            def r(buf, pos, end):
                u, pos = _get_varint64(buf, pos)
                return make_decimal(u, scale), pos
        else:
            def r(buf, pos, end):
                n, pos = _get_length(buf, pos, end)
                return make_decimal(int.from_bytes(buf[pos:pos + n], "big", signed=True), scale), pos + n
    elif c in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
        make = make_timestamp if c == T_TIMESTAMP else make_timestamp_ltz
        if t.compact:
            def r(buf, pos, end):
                millis, pos = _get_varint64(buf, pos)
                return make(millis, 0), pos
        else:
            def r(buf, pos, end):
                millis, pos = _get_varint64(buf, pos)
                nanos, pos = _get_varint32(buf, pos)
                return make(millis, nanos), pos
    elif c in (T_ARRAY, T_MAP, T_ROW):
        nested = _nested_decoder(t, COMPACTED)

        def r(buf, pos, end):
            n, pos = _get_length(buf, pos, end)
            return nested(buf, pos, n), pos + n
    else:  # pragma: no cover
        raise ValueError(f"unsupported type {t.dtype}")
    return r


class CompactedRowEncoder(_RowEncoder):
    """``encode(values) -> bytes``: one CompactedRow (null bitset + fields, no padding)."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        super().__init__(types, names)
        self._plan = [(i, t.nullable, _compacted_writer(t)) for i, t in enumerate(self._infos)]

    def encode(self, values) -> bytes:
        if len(values) != self._n:
            raise _arity_error(len(values), self._n)
        out = bytearray(self._nbytes)
        for i, nullable, w in self._plan:
            v = values[i]
            if v is None:
                self._null(out, i, nullable)
                continue
            try:
                w(out, v)
            except (TypeError, ValueError) as exc:
                raise _with_field(exc, self._names, i) from None
        return bytes(out)


class CompactedRowDecoder(_RowCodec):
    """``decode(buf, pos=0, end=None) -> list``: the values of one CompactedRow."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        super().__init__(types, names)
        self._readers = [_compacted_reader(t) for t in self._infos]

    def decode(self, buf, pos: int = 0, end: int | None = None) -> list:
        buf, pos, end = _as_bytes(buf, pos, end)
        return self._decode(buf, pos, end)[0]

    def decode_with_end(self, buf, pos: int = 0, end: int | None = None) -> tuple[list, int]:
        """Values and the position just after the row (CompactedRow has no length of its own)."""
        if type(buf) is bytes:
            return self._decode(buf, pos, len(buf) if end is None else end)
        b, p, e = _as_bytes(buf, pos, end)
        values, stop = self._decode(b, p, e)
        return values, stop + pos

    def decode_dict(self, buf, pos: int, end: int) -> dict:
        return dict(zip(self._names, self._decode(buf, pos, end)[0], strict=True))

    def _decode(self, buf, pos: int, end: int) -> tuple[list, int]:
        nb = self._nbytes
        if pos + nb > end:
            raise ValueError(f"truncated CompactedRow: {end - pos} bytes, null bitset needs {nb}")
        nulls = buf[pos:pos + nb]
        pos += nb
        out = []
        i = 0
        try:
            for r in self._readers:
                if nulls[i >> 3] & (1 << (i & 7)):
                    out.append(None)
                else:
                    v, pos = r(buf, pos, end)
                    out.append(v)
                i += 1
        except _DECODE_ERRORS as exc:
            raise ValueError(f"corrupt CompactedRow, {_field_label(self._names, i)}: {exc}") from None
        if pos > end:
            raise ValueError(f"corrupt CompactedRow: fields run {pos - end} bytes past its end")
        return out, pos


class CompactedKeyEncoder(_RowCodec):
    """``encode(values) -> bytes``: key columns as CompactedRow fields, no null bitset
    (docs/contributing/formats.md §6.2)."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        super().__init__(types, names)
        self._writers = [_compacted_writer(t) for t in self._infos]

    def encode(self, values) -> bytes:
        if len(values) != self._n:
            raise ValueError(f"key has {len(values)} values but {self._n} key columns")
        out = bytearray()
        for i, w in enumerate(self._writers):
            v = values[i]
            if v is None:
                raise ValueError(f"key {_field_label(self._names, i)} is null; key columns must not be "
                                 f"null ({self._infos[i].dtype})")
            try:
                w(out, v)
            except (TypeError, ValueError) as exc:
                raise _with_field(exc, self._names, i) from None
        return bytes(out)


def encode_key(values, types) -> bytes:
    """One-off key encoding; build a :class:`CompactedKeyEncoder` for repeated use."""
    return CompactedKeyEncoder(types).encode(values)


CompactedRowEncoder_py = CompactedRowEncoder
CompactedRowDecoder_py = CompactedRowDecoder
CompactedKeyEncoder_py = CompactedKeyEncoder

pick("_compacted", globals(), ["CompactedRowEncoder", "CompactedRowDecoder", "CompactedKeyEncoder"])
