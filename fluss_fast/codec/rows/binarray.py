"""BinaryArray / BinaryMap (docs/contributing/formats.md §3.5) and the ARRAY, MAP and ROW values nested in a row field
or an array slot. Nested rows take the enclosing row's format, so every codec here takes ``fmt``;
out-of-line array data always uses 8-byte words, whatever that format."""
from __future__ import annotations

from collections.abc import Callable

from ..wire.varint import _U32
from . import values as V
from .rowtypes import (
    COMPACTED,
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
    _per_type,
    type_info,
)
from .scalars import (
    _FIXED_READ,
    _FIXED_WRITE,
    _pk_i,
    _pk_Q,
    _pk_q,
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
    row_values,
)


@_per_type("ne")
def _nested_encoder(t: TypeInfo, fmt: str) -> Callable:
    """fn(value) -> bytes of an ARRAY, MAP or ROW value; nested rows take the enclosing ``fmt``."""
    c = t.code
    if c == T_ARRAY:
        return lambda v: encode_array(t.elem, v, fmt, t)
    if c == T_MAP:
        return lambda v: encode_map(t, v, fmt)
    from .compacted import CompactedRowEncoder_py  # the row codecs nest arrays: imported late
    from .indexed import IndexedRowEncoder_py
    enc = (CompactedRowEncoder_py if fmt == COMPACTED else IndexedRowEncoder_py)(t.fields, t.names)
    return lambda v: enc.encode(row_values(v, t))


@_per_type("nd")
def _nested_decoder(t: TypeInfo, fmt: str) -> Callable:
    """fn(buf, pos, n) -> the ARRAY, MAP or ROW value in ``buf[pos:pos+n]``."""
    c = t.code
    if c == T_ARRAY:
        return lambda buf, pos, n: decode_array(t.elem, buf, pos, n, fmt)
    if c == T_MAP:
        return lambda buf, pos, n: decode_map(t, buf, pos, n, fmt)
    from .compacted import CompactedRowDecoder_py
    from .indexed import IndexedRowDecoder_py
    dec = (CompactedRowDecoder_py if fmt == COMPACTED else IndexedRowDecoder_py)(t.fields, t.names)
    return lambda buf, pos, n: dec.decode_dict(buf, pos, pos + n)


def _pad8(buf: bytearray) -> None:
    r = len(buf) & 7
    if r:
        buf += b"\x00" * (8 - r)


def _out_of_line(buf: bytearray, slot: int, data: bytes) -> None:
    start = len(buf)
    buf += data
    _pad8(buf)
    _pk_Q.pack_into(buf, slot, (start << 32) | len(data))


@_per_type("aw")
def _array_writer(e: TypeInfo, fmt: str) -> Callable:
    """fn(buf, slot, value) writing one non-null element; out-of-line data is appended to buf."""
    c = e.code
    if c == T_BOOLEAN:
        def w(buf, slot, v):
            buf[slot] = 1 if conv_bool(v, e) else 0
    elif c in _FIXED_WRITE:
        conv, pack = _FIXED_WRITE[c]
        size = e.esize

        def w(buf, slot, v):
            buf[slot:slot + size] = pack(conv(v, e))
    elif c in (T_CHAR, T_STRING, T_BINARY, T_BYTES):
        conv = conv_str if c in (T_CHAR, T_STRING) else conv_bytes

        def w(buf, slot, v):
            data = conv(v, e)
            n = len(data)
            if n <= 7:  # inline: data in the low bytes, 0x80|len in the top byte
                buf[slot:slot + n] = data
                buf[slot + 7] = 0x80 | n
            else:
                _out_of_line(buf, slot, data)
    elif c == T_DECIMAL:
        if e.compact:
            def w(buf, slot, v):
                _pk_q.pack_into(buf, slot, conv_decimal(v, e))
        else:
            def w(buf, slot, v):
                data = bigint_bytes(conv_decimal(v, e))
                start = len(buf)
                buf += data
                buf += b"\x00" * (16 - len(data))  # Java always reserves 16 bytes
                _pk_Q.pack_into(buf, slot, (start << 32) | len(data))
    elif c in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
        conv = conv_timestamp if c == T_TIMESTAMP else conv_timestamp_ltz
        if e.compact:
            def w(buf, slot, v):
                _pk_q.pack_into(buf, slot, conv(v, e)[0])
        else:
            def w(buf, slot, v):
                millis, nanos = conv(v, e)
                start = len(buf)
                buf += _pk_q.pack(millis)
                _pk_Q.pack_into(buf, slot, (start << 32) | nanos)
    elif c in (T_ARRAY, T_MAP, T_ROW):
        nested = _nested_encoder(e, fmt)

        def w(buf, slot, v):
            _out_of_line(buf, slot, nested(v))
    else:  # pragma: no cover - TypeInfo refuses unknown roots
        raise ValueError(f"unsupported array element type {e.dtype}")
    return w


def encode_array(elem, values, fmt: str = COMPACTED, array_type: TypeInfo | None = None,
                 what: str = "array element", nullable: bool | None = None) -> bytes:
    """A BinaryArray of ``values`` with element type ``elem`` (DataType or TypeInfo); ``what`` and
    ``nullable`` (default: the element type's) serve map keys, which are never null."""
    e = type_info(elem)
    if array_type is not None:
        values = V.as_sequence(values)
    if nullable is None:
        nullable = e.nullable
    n = len(values)
    header = 4 + ((n + 31) >> 5) * 4
    fixed = header + e.esize * n
    buf = bytearray(fixed + (-fixed & 7))
    _pk_i.pack_into(buf, 0, n)
    w = _array_writer(e, fmt)
    esize = e.esize
    slot = header
    for i, v in enumerate(values):
        if v is None:
            if not nullable:
                raise V.not_null(what, e.dtype if e.nullable == nullable else e.dtype.with_nullable(False))
            buf[4 + (i >> 3)] |= 1 << (i & 7)
        else:
            w(buf, slot, v)
        slot += esize
    return bytes(buf)


def encode_map(t, value, fmt: str = COMPACTED) -> bytes:
    """A BinaryMap: [int32 key-array size][key BinaryArray][value BinaryArray]."""
    t = type_info(t)
    items = V.map_items(value)
    keys = encode_array(t.key, [kv[0] for kv in items], fmt, None, "map key", False)
    vals = encode_array(t.value, [kv[1] for kv in items], fmt, None, "map value")
    return _pk_i.pack(len(keys)) + keys + vals


@_per_type("ar")
def _array_reader(e: TypeInfo, fmt: str) -> Callable:
    """fn(buf, base, slot, end) -> value of one non-null element of an array at ``base`` ending at
    ``end``; out-of-line data must lie inside the array."""
    c = e.code
    if c == T_BOOLEAN:
        def r(buf, base, slot, end):
            return buf[slot] != 0
    elif c in _FIXED_READ:
        st, make = _FIXED_READ[c]
        unpack = st.unpack_from
        if make is None:
            def r(buf, base, slot, end):
                return unpack(buf, slot)[0]
        else:
            def r(buf, base, slot, end):
                return make(unpack(buf, slot)[0])
    elif c in (T_CHAR, T_STRING, T_BINARY, T_BYTES):
        text = c in (T_CHAR, T_STRING)

        def r(buf, base, slot, end):
            s = _pk_Q.unpack_from(buf, slot)[0]
            if s >> 63:
                n = (s >> 56) & 0x7F
                data = buf[slot:slot + n]
            else:
                off, n = _span(s, base, slot, end)
                data = buf[off:off + n]
            return str(data, "utf-8") if text else bytes(data)
    elif c == T_DECIMAL:
        scale = e.scale
        if e.compact:
            def r(buf, base, slot, end):
                return make_decimal(_pk_q.unpack_from(buf, slot)[0], scale)
        else:
            def r(buf, base, slot, end):
                off, n = _span(_pk_Q.unpack_from(buf, slot)[0], base, slot, end)
                return make_decimal(int.from_bytes(buf[off:off + n], "big", signed=True), scale)
    elif c in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
        make = make_timestamp if c == T_TIMESTAMP else make_timestamp_ltz
        if e.compact:
            def r(buf, base, slot, end):
                return make(_pk_q.unpack_from(buf, slot)[0], 0)
        else:
            def r(buf, base, slot, end):
                s = _pk_Q.unpack_from(buf, slot)[0]
                off = base + (s >> 32)
                if off + 8 > end:
                    raise _overrun(slot, off, 8, end)
                return make(_pk_q.unpack_from(buf, off)[0], s & _U32)
    elif c in (T_ARRAY, T_MAP, T_ROW):
        nested = _nested_decoder(e, fmt)

        def r(buf, base, slot, end):
            off, n = _span(_pk_Q.unpack_from(buf, slot)[0], base, slot, end)
            return nested(buf, off, n)
    else:  # pragma: no cover
        raise ValueError(f"unsupported array element type {e.dtype}")
    return r


def _span(s: int, base: int, slot: int, end: int) -> tuple[int, int]:
    """(offset, length) of the out-of-line data that slot word ``s`` points at; it must end by ``end``."""
    off = base + (s >> 32)
    n = s & _U32
    if off + n > end:
        raise _overrun(slot, off, n, end)
    return off, n


def _overrun(slot: int, off: int, n: int, end: int) -> ValueError:
    return ValueError(f"corrupt array element at byte {slot}: {n} bytes at byte {off} run past the "
                      f"array's end at byte {end}")


def decode_array(elem, buf, pos: int = 0, size: int | None = None, fmt: str = COMPACTED) -> list:
    """The elements of the BinaryArray at ``buf[pos:pos+size]`` (size None: to the end of buf)."""
    e = type_info(elem)
    if size is None:
        size = len(buf) - pos
    end = pos + size
    if size < 4 or end > len(buf):
        raise ValueError(f"corrupt array at byte {pos}: {size} bytes")
    n = _pk_i.unpack_from(buf, pos)[0]
    header = 4 + ((n + 31) >> 5) * 4
    if n < 0 or header + e.esize * n > size:
        raise ValueError(f"corrupt array at byte {pos}: {n} elements do not fit in {size} bytes")
    r = _array_reader(e, fmt)
    nulls = buf[pos + 4:pos + header]
    esize = e.esize
    out = []
    slot = pos + header
    for i in range(n):
        if nulls[i >> 3] & (1 << (i & 7)):
            out.append(None)
        else:
            out.append(r(buf, pos, slot, end))
        slot += esize
    return out


def decode_map(t, buf, pos: int = 0, size: int | None = None, fmt: str = COMPACTED) -> list:
    """The (key, value) pairs of the BinaryMap at ``buf[pos:pos+size]``."""
    t = type_info(t)
    if size is None:
        size = len(buf) - pos
    if size < 4 or pos + size > len(buf):
        raise ValueError(f"corrupt map at byte {pos}: {size} bytes")
    ksize = _pk_i.unpack_from(buf, pos)[0]
    if ksize < 0 or ksize + 4 > size:
        raise ValueError(f"corrupt map at byte {pos}: key array of {ksize} bytes")
    keys = decode_array(t.key, buf, pos + 4, ksize, fmt)
    vals = decode_array(t.value, buf, pos + 4 + ksize, size - 4 - ksize, fmt)
    if len(keys) != len(vals):
        raise ValueError(f"corrupt map at byte {pos}: {len(keys)} keys but {len(vals)} values")
    return list(zip(keys, vals, strict=True))
