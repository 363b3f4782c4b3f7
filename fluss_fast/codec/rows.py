"""Fluss binary row formats: CompactedRow, IndexedRow, BinaryArray / BinaryMap (DATA.md §3-§4, §6.2).

Python value model (what decoders return, what encoders accept), the same shapes pyfluss reads back:

=================  ===========================================  =====================================
Fluss type         decode returns                               encode also accepts
=================  ===========================================  =====================================
BOOLEAN            bool                                         numpy.bool_
TINYINT..BIGINT    int                                          objects with ``__index__`` (not bool)
FLOAT / DOUBLE     float                                        int, numpy floats
CHAR / STRING      str
BINARY / BYTES     bytes                                        bytearray, memoryview
DECIMAL(p, s)      decimal.Decimal (exactly s fraction digits)  int; rounded HALF_UP to s digits
DATE               datetime.date
TIME               datetime.time (millisecond resolution)
TIMESTAMP          naive datetime.datetime                      pandas.Timestamp, numpy.datetime64
TIMESTAMP_LTZ      datetime.datetime in UTC                     naive datetimes are taken as UTC
ARRAY<T>           list                                         tuple, other sequences
MAP<K, V>          list of (key, value) tuples                  dict
ROW<...>           dict by field name                           list / tuple by position
=================  ===========================================  =====================================

Encoding mistakes raise ``TypeError`` (wrong kind of value) or ``ValueError`` (out of range, NULL in a
NOT NULL field); the message names the field, the value and the type, callers add the table.
Malformed input to a decoder raises ``ValueError``.

Layout notes that are easy to get wrong, and why the code looks the way it does:

* Nested rows take the enclosing row's format, also when they sit inside arrays or maps, so every
  array/map codec here is parameterised by the format (``"COMPACTED"`` or ``"INDEXED"``).
* BinaryArray always uses 8-byte words for out-of-line data, whatever the enclosing format.
* IndexedRow pads CHAR(n)/BINARY(n) to exactly n bytes and readers strip trailing zero bytes;
  CompactedRow and BinaryArray store them like STRING/BYTES.
* Decimals with precision > 18 are Java ``BigInteger.toByteArray()`` bytes: big-endian, minimal
  two's complement (the only big-endian thing in the row formats).

The compiled twin ``_rows`` has the same API; ``X_py`` names keep the pure versions reachable.
"""
from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import functools
import math
import struct
from typing import Callable, Dict, Optional, Sequence, Tuple

from . import values as V
from ._select import pick

__all__ = [
    "COMPACTED", "INDEXED",
    "CompactedRowEncoder", "CompactedRowDecoder", "IndexedRowEncoder", "IndexedRowDecoder",
    "CompactedKeyEncoder", "encode_key",
    "encode_array", "decode_array", "encode_map", "decode_map",
    "encode_varint", "decode_varint", "build_indexed_batch", "decode_indexed_batch",
]

COMPACTED = "COMPACTED"
INDEXED = "INDEXED"

# Type codes. Kept identical in the Cython twin, which switches on them.
T_BOOLEAN, T_TINYINT, T_SMALLINT, T_INT, T_BIGINT, T_FLOAT, T_DOUBLE = 0, 1, 2, 3, 4, 5, 6
T_CHAR, T_STRING, T_BINARY, T_BYTES, T_DECIMAL, T_DATE, T_TIME = 7, 8, 9, 10, 11, 12, 13
T_TIMESTAMP, T_TIMESTAMP_LTZ, T_ARRAY, T_MAP, T_ROW = 14, 15, 16, 17, 18

_ROOT_CODES = {
    "BOOLEAN": T_BOOLEAN, "TINYINT": T_TINYINT, "SMALLINT": T_SMALLINT, "INTEGER": T_INT,
    "BIGINT": T_BIGINT, "FLOAT": T_FLOAT, "DOUBLE": T_DOUBLE, "CHAR": T_CHAR, "STRING": T_STRING,
    "BINARY": T_BINARY, "BYTES": T_BYTES, "DECIMAL": T_DECIMAL, "DATE": T_DATE,
    "TIME_WITHOUT_TIME_ZONE": T_TIME, "TIMESTAMP_WITHOUT_TIME_ZONE": T_TIMESTAMP,
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": T_TIMESTAMP_LTZ, "ARRAY": T_ARRAY, "MAP": T_MAP, "ROW": T_ROW,
}

# BinaryArray element slot sizes (BinaryArray.calculateFixLengthPartSize)
_ELEMENT_SIZES = {T_BOOLEAN: 1, T_TINYINT: 1, T_SMALLINT: 2, T_INT: 4, T_FLOAT: 4, T_DATE: 4, T_TIME: 4}
MAX_COMPACT_PRECISION = 18  # DECIMAL(p<=18) fits an int64 unscaled value
MAX_COMPACT_TIMESTAMP_PRECISION = 3  # only millis are stored

_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF
_EPOCH_ORDINAL = V.EPOCH_ORDINAL
_EPOCH = V.EPOCH
_EPOCH_UTC = V.EPOCH_UTC
_MILLIS_PER_DAY = 86_400_000
_POW10 = tuple(10 ** i for i in range(40))
_Decimal = _decimal.Decimal
_FLOAT_NAN = struct.pack("<f", float("nan"))      # Java's canonical Float.NaN 0x7FC00000
_DOUBLE_NAN = struct.pack("<d", float("nan"))     # Java's canonical Double.NaN

_pk_b = struct.Struct("<b")
_pk_h = struct.Struct("<h")
_pk_i = struct.Struct("<i")
_pk_q = struct.Struct("<q")
_pk_Q = struct.Struct("<Q")
_pk_f = struct.Struct("<f")
_pk_d = struct.Struct("<d")
_pk_qi = struct.Struct("<qi")


# ----------------------------------------------------------------------------------------------
# Compiled type descriptions
# ----------------------------------------------------------------------------------------------
class TypeInfo:
    """A DataType flattened into what the codecs need; built once per type (see :func:`type_info`)."""

    __slots__ = ("code", "nullable", "length", "precision", "scale", "compact", "elem", "key",
                 "value", "fields", "names", "name_set", "field_types", "dtype", "esize", "fixed", "size",
                 "limit", "_cache")

    def __init__(self, dtype) -> None:
        root = dtype.root
        if root not in _ROOT_CODES:
            raise ValueError(f"unsupported data type {dtype}")
        code = _ROOT_CODES[root]
        self.code = code
        self.dtype = dtype
        self.nullable = bool(dtype.nullable)
        self.length = dtype.length or 0
        self.precision = dtype.precision if dtype.precision is not None else 0
        self.scale = dtype.scale or 0
        self.compact = True
        self.elem = self.key = self.value = None
        self.fields = ()
        self.names = ()
        self.name_set = frozenset()
        self.field_types = ()
        self.limit = 0
        self._cache = {}
        if code == T_DECIMAL:
            self.compact = self.precision <= MAX_COMPACT_PRECISION
            self.limit = 10 ** self.precision
        elif code in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
            self.compact = self.precision <= MAX_COMPACT_TIMESTAMP_PRECISION
        elif code == T_ARRAY:
            self.elem = type_info(dtype.element)
        elif code == T_MAP:
            self.key = type_info(dtype.key)
            self.value = type_info(dtype.value)
        elif code == T_ROW:
            self.fields = tuple(type_info(f.type) for f in dtype.fields)
            self.names = tuple(f.name for f in dtype.fields)
            self.name_set = frozenset(self.names)
            self.field_types = tuple(f.type for f in dtype.fields)
        self.esize = _ELEMENT_SIZES.get(code, 8)
        # IndexedRow: fixed-length fields sit inline with a size known from the type alone.
        if code in (T_BOOLEAN, T_TINYINT):
            self.fixed, self.size = True, 1
        elif code == T_SMALLINT:
            self.fixed, self.size = True, 2
        elif code in (T_INT, T_FLOAT, T_DATE, T_TIME):
            self.fixed, self.size = True, 4
        elif code in (T_BIGINT, T_DOUBLE):
            self.fixed, self.size = True, 8
        elif code in (T_CHAR, T_BINARY):
            self.fixed, self.size = True, self.length
        elif code == T_DECIMAL:
            self.fixed, self.size = self.compact, 8 if self.compact else 0
        elif code in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
            self.fixed, self.size = True, 8 if self.compact else 12
        else:
            self.fixed, self.size = False, 0

    def __repr__(self) -> str:
        return f"TypeInfo({self.dtype})"


_TYPE_CACHE: Dict[object, TypeInfo] = {}


def _per_type(tag: str) -> Callable:
    """Memoises a codec-function builder ``build(t, *args)`` in ``t._cache`` under ``(tag, *args)``."""
    def deco(build: Callable) -> Callable:
        @functools.wraps(build)
        def get(t: TypeInfo, *args):
            key = (tag,) + args
            fn = t._cache.get(key)
            if fn is None:
                fn = t._cache[key] = build(t, *args)
            return fn
        return get
    return deco


def type_info(dtype) -> TypeInfo:
    """The (cached) :class:`TypeInfo` of a ``datatypes.DataType``; TypeInfo passes through."""
    if isinstance(dtype, TypeInfo):
        return dtype
    try:
        return _TYPE_CACHE[dtype]
    except KeyError:
        pass
    except TypeError:  # unhashable (should not happen with the frozen DataType)
        return TypeInfo(dtype)
    info = TypeInfo(dtype)
    if len(_TYPE_CACHE) < 10_000:
        _TYPE_CACHE[dtype] = info
    return info


# ----------------------------------------------------------------------------------------------
# Value conversion (Python value -> primitive), shared by every format
# ----------------------------------------------------------------------------------------------
def _range(v, t: TypeInfo, why: str) -> ValueError:
    return V.BadValue(f"cannot encode {V.describe_value(v)} as {t.dtype}: {why}")


# The value model is values.py's; these adapt it to the row writers' (value, TypeInfo) calls.
def conv_bool(v, t: TypeInfo) -> bool:
    if v is True or v is False:
        return v
    return V.as_bool(v, t.dtype)


def conv_int(v, t: TypeInfo) -> int:
    if type(v) is int:
        lo, hi = V.INT_RANGES[t.dtype.root]
        if lo <= v <= hi:
            return v
    return V.as_int(v, t.dtype)


def conv_float(v, t: TypeInfo) -> float:
    if type(v) is float:
        return v
    return V.as_float(v, t.dtype)


def pack_f32(x: float) -> bytes:
    if x != x:
        return _FLOAT_NAN
    try:
        return _pk_f.pack(x)
    except OverflowError:  # rounds past FLT_MAX: Java's (float) cast gives infinity
        return _pk_f.pack(math.copysign(math.inf, x))


def pack_f64(x: float) -> bytes:
    return _DOUBLE_NAN if x != x else _pk_d.pack(x)


def conv_str(v, t: TypeInfo) -> bytes:
    if type(v) is str and v.isascii():
        return v.encode("ascii")
    return V.utf8(v, t.dtype)


def conv_bytes(v, t: TypeInfo) -> bytes:
    if type(v) is bytes:
        return v
    return V.as_bytes(v, t.dtype)


def bigint_bytes(u: int) -> bytes:
    """Java ``BigInteger.toByteArray()``: minimal big-endian two's complement."""
    bits = u.bit_length() if u >= 0 else (~u).bit_length()
    return u.to_bytes(bits // 8 + 1, "big", signed=True)


def conv_decimal(v, t: TypeInfo) -> int:
    """The unscaled value at the column's scale (HALF_UP, like Java's BigDecimal.setScale)."""
    return V.decimal_unscaled(v, t.dtype)


def conv_date(v, t: TypeInfo) -> int:
    if type(v) is _dt.date:
        return v.toordinal() - _EPOCH_ORDINAL
    return V.date_days(v, t.dtype)


def conv_time(v, t: TypeInfo) -> int:
    return V.time_millis(v, t.dtype)


def _millis_nanos(us: int, ns: int) -> Tuple[int, int]:
    return us // 1000, (us % 1000) * 1000 + ns


def conv_timestamp(v, t: TypeInfo) -> Tuple[int, int]:
    """(epoch millis, nano of milli) of a wall-clock timestamp."""
    return _millis_nanos(*V.timestamp_micros(v, False))


def conv_timestamp_ltz(v, t: TypeInfo) -> Tuple[int, int]:
    """(epoch millis, nano of milli) of an instant; naive datetimes are taken as UTC."""
    return _millis_nanos(*V.timestamp_micros(v, True))


def as_sequence(v, t: TypeInfo) -> Sequence:
    return V.as_sequence(v)


def map_items(v, t: TypeInfo) -> Sequence:
    return V.map_items(v)


def row_values(v, t: TypeInfo) -> Sequence:
    """A ROW value as a positional sequence (dict by field name, or list/tuple by position)."""
    return V.row_values(v, t.names, t.name_set, t.field_types)


# ----------------------------------------------------------------------------------------------
# Varints (CompactedRow, KV records)
# ----------------------------------------------------------------------------------------------
def _put_varint(out: bytearray, u: int) -> None:
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def encode_varint(value: int, bits: int = 32) -> bytes:
    """Unsigned LEB128 of the ``bits``-bit two's-complement pattern (no zigzag)."""
    out = bytearray()
    _put_varint(out, value & ((1 << bits) - 1))
    return bytes(out)


def _get_varint(buf, pos: int, max_bytes: int) -> Tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    for _ in range(max_bytes - 1):
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise ValueError(f"malformed varint at byte {pos - max_bytes}: more than {max_bytes} bytes")


def _get_varint32(buf, pos: int) -> Tuple[int, int]:
    u, pos = _get_varint(buf, pos, 5)
    u &= _U32
    return (u - 0x100000000 if u & 0x80000000 else u), pos


def _get_varint64(buf, pos: int) -> Tuple[int, int]:
    u, pos = _get_varint(buf, pos, 10)
    u &= _U64
    return (u - 0x10000000000000000 if u & 0x8000000000000000 else u), pos


def _get_length(buf, pos: int, end: int) -> Tuple[int, int]:
    n, pos = _get_varint32(buf, pos)
    if n < 0 or pos + n > end:
        raise ValueError(f"bad length {n} at byte {pos}: only {end - pos} bytes left")
    return n, pos


def decode_varint(buf, pos: int = 0, bits: int = 32) -> Tuple[int, int]:
    """(signed value, next position) of a varint written by :func:`encode_varint`."""
    return _get_varint32(buf, pos) if bits == 32 else _get_varint64(buf, pos)


# ----------------------------------------------------------------------------------------------
# Decoding helpers (primitive -> Python value)
# ----------------------------------------------------------------------------------------------
def make_decimal(u: int, scale: int) -> _decimal.Decimal:
    # the string constructor is exact and about twice as fast as Decimal(u).scaleb(-scale)
    return _Decimal(f"{u}E-{scale}")


def make_date(days: int) -> _dt.date:
    return _dt.date.fromordinal(days + _EPOCH_ORDINAL)


def make_time(ms: int) -> _dt.time:
    if not 0 <= ms < _MILLIS_PER_DAY:
        raise ValueError(f"TIME value {ms} ms is outside a day")
    s, milli = divmod(ms, 1000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return _dt.time(h, m, s, milli * 1000)


def make_timestamp(millis: int, nanos: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(microseconds=millis * 1000 + nanos // 1000)


def make_timestamp_ltz(millis: int, nanos: int) -> _dt.datetime:
    return _EPOCH_UTC + _dt.timedelta(microseconds=millis * 1000 + nanos // 1000)


def _strip_zeros(b: bytes) -> bytes:
    return b.rstrip(b"\x00")


# Fixed-width little-endian scalars: the same bytes as IndexedRow fields, BinaryArray slots and the
# fixed-width CompactedRow fields. code -> (Python value -> primitive, primitive -> bytes)
_FIXED_WRITE = {
    T_TINYINT: (conv_int, _pk_b.pack), T_SMALLINT: (conv_int, _pk_h.pack), T_INT: (conv_int, _pk_i.pack),
    T_DATE: (conv_date, _pk_i.pack), T_TIME: (conv_time, _pk_i.pack), T_BIGINT: (conv_int, _pk_q.pack),
    T_FLOAT: (conv_float, pack_f32), T_DOUBLE: (conv_float, pack_f64),
}
# code -> (struct, primitive -> Python value, None where the primitive is the value)
_FIXED_READ = {
    T_TINYINT: (_pk_b, None), T_SMALLINT: (_pk_h, None), T_INT: (_pk_i, None), T_DATE: (_pk_i, make_date),
    T_TIME: (_pk_i, make_time), T_BIGINT: (_pk_q, None), T_FLOAT: (_pk_f, None), T_DOUBLE: (_pk_d, None),
}


# ----------------------------------------------------------------------------------------------
# Nested values (ARRAY / MAP / ROW): the same bytes inside a row field or an array slot
# ----------------------------------------------------------------------------------------------
@_per_type("ne")
def _nested_encoder(t: TypeInfo, fmt: str) -> Callable:
    """fn(value) -> bytes of an ARRAY, MAP or ROW value; nested rows take the enclosing ``fmt``."""
    c = t.code
    if c == T_ARRAY:
        return lambda v: encode_array(t.elem, v, fmt, t)
    if c == T_MAP:
        return lambda v: encode_map(t, v, fmt)
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
    dec = (CompactedRowDecoder_py if fmt == COMPACTED else IndexedRowDecoder_py)(t.fields, t.names)
    return lambda buf, pos, n: dec.decode_dict(buf, pos, pos + n)


# ----------------------------------------------------------------------------------------------
# BinaryArray / BinaryMap
# ----------------------------------------------------------------------------------------------
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


def encode_array(elem, values, fmt: str = COMPACTED, array_type: Optional[TypeInfo] = None,
                 what: str = "array element", nullable: Optional[bool] = None) -> bytes:
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


def _span(s: int, base: int, slot: int, end: int) -> Tuple[int, int]:
    """(offset, length) of the out-of-line data that slot word ``s`` points at; it must end by ``end``."""
    off = base + (s >> 32)
    n = s & _U32
    if off + n > end:
        raise _overrun(slot, off, n, end)
    return off, n


def _overrun(slot: int, off: int, n: int, end: int) -> ValueError:
    return ValueError(f"corrupt array element at byte {slot}: {n} bytes at byte {off} run past the "
                      f"array's end at byte {end}")


def decode_array(elem, buf, pos: int = 0, size: Optional[int] = None, fmt: str = COMPACTED) -> list:
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


def decode_map(t, buf, pos: int = 0, size: Optional[int] = None, fmt: str = COMPACTED) -> list:
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
    return list(zip(keys, vals))


# ----------------------------------------------------------------------------------------------
# CompactedRow
# ----------------------------------------------------------------------------------------------
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


def _get_varint32_at(buf, pos, end):
    return _get_varint32(buf, pos)


def _get_varint64_at(buf, pos, end):
    return _get_varint64(buf, pos)


def _field_label(names, i: int) -> str:
    return f"field {names[i]!r}" if names is not None and i < len(names) else f"field {i}"


def _with_field(exc: Exception, names, i: int) -> Exception:
    return type(exc)(f"{_field_label(names, i)}: {exc}")


def _null_error(names, i: int, t: TypeInfo) -> ValueError:
    return ValueError(f"{_field_label(names, i)} is null but its type is {t.dtype}")


def _arity_error(got: int, n: int) -> ValueError:
    return ValueError(f"row has {got} values but the schema has {n} fields")


def _infos(types) -> Tuple[TypeInfo, ...]:
    return tuple(type_info(t) for t in types)


def _as_bytes(buf, pos: int, end: Optional[int]):
    """(bytes-like, pos, end) suitable for slicing: bytes stay as they are, other buffers are copied."""
    if type(buf) is bytes:
        return buf, pos, len(buf) if end is None else end
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    if end is None:
        end = mv.nbytes
    return bytes(mv[pos:end]), 0, end - pos


_DECODE_ERRORS = (struct.error, IndexError, OverflowError, UnicodeDecodeError)


def _encode_records(encode, rows, change_types) -> bytes:
    n = len(rows)
    if change_types is not None and len(change_types) != n:
        raise ValueError(f"{len(change_types)} change types for {n} rows")
    out = bytearray()
    pack = _pk_i.pack
    for i in range(n):
        ct = 0 if change_types is None else change_types[i]
        if not 0 <= ct <= 4:
            raise ValueError(f"row {i}: change type {ct} is not one of 0..4")
        try:
            row = encode(rows[i])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"row {i}: {exc}") from None
        out += pack(len(row) + 1)
        out.append(ct)
        out += row
    return bytes(out)


class _RowCodec:
    """What every row encoder/decoder knows: the field types, their names and the null bitset size."""

    def __init__(self, types, names: Optional[Sequence[str]] = None) -> None:
        self._infos = _infos(types)
        self._names = list(names) if names is not None else None
        self._n = len(self._infos)
        self._nbytes = (self._n + 7) >> 3

    @property
    def arity(self) -> int:
        return self._n


class _RowEncoder(_RowCodec):
    def encode_records(self, rows, change_types=None) -> bytes:
        """Log records ``int32 length | change type | row`` for every row, concatenated (§3.1)."""
        return _encode_records(self.encode, rows, change_types)

    def _null(self, out: bytearray, i: int, nullable: bool) -> None:
        """Mark field i null in the bitset at the start of ``out``, refusing NOT NULL fields."""
        if not nullable:
            raise _null_error(self._names, i, self._infos[i])
        out[i >> 3] |= 1 << (i & 7)


class CompactedRowEncoder(_RowEncoder):
    """``encode(values) -> bytes``: one CompactedRow (null bitset + fields, no padding)."""

    def __init__(self, types, names: Optional[Sequence[str]] = None) -> None:
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

    def __init__(self, types, names: Optional[Sequence[str]] = None) -> None:
        super().__init__(types, names)
        self._readers = [_compacted_reader(t) for t in self._infos]

    def decode(self, buf, pos: int = 0, end: Optional[int] = None) -> list:
        buf, pos, end = _as_bytes(buf, pos, end)
        return self._decode(buf, pos, end)[0]

    def decode_with_end(self, buf, pos: int = 0, end: Optional[int] = None) -> Tuple[list, int]:
        """Values and the position just after the row (CompactedRow has no length of its own)."""
        if type(buf) is bytes:
            return self._decode(buf, pos, len(buf) if end is None else end)
        b, p, e = _as_bytes(buf, pos, end)
        values, stop = self._decode(b, p, e)
        return values, stop + pos

    def decode_dict(self, buf, pos: int, end: int) -> dict:
        return dict(zip(self._names, self._decode(buf, pos, end)[0]))

    def _decode(self, buf, pos: int, end: int) -> Tuple[list, int]:
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
    """``encode(values) -> bytes``: key columns as CompactedRow fields, no null bitset (DATA.md §6.2)."""

    def __init__(self, types, names: Optional[Sequence[str]] = None) -> None:
        super().__init__(types, names)
        self._writers = [_compacted_writer(t) for t in self._infos]

    def encode(self, values) -> bytes:
        if len(values) != self._n:
            raise ValueError(f"key has {len(values)} values but {self._n} key columns")
        out = bytearray()
        i = 0
        for w in self._writers:
            v = values[i]
            if v is None:
                raise ValueError(f"key {_field_label(self._names, i)} is null; key columns must not be "
                                 f"null ({self._infos[i].dtype})")
            try:
                w(out, v)
            except (TypeError, ValueError) as exc:
                raise _with_field(exc, self._names, i) from None
            i += 1
        return bytes(out)


def encode_key(values, types) -> bytes:
    """One-off key encoding; build a :class:`CompactedKeyEncoder` for repeated use."""
    return CompactedKeyEncoder(types).encode(values)


# ----------------------------------------------------------------------------------------------
# IndexedRow
# ----------------------------------------------------------------------------------------------
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

    def __init__(self, types, names: Optional[Sequence[str]] = None) -> None:
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

    def __init__(self, types, names: Optional[Sequence[str]] = None) -> None:
        super().__init__(types, names)
        self._nvar = sum(1 for t in self._infos if not t.fixed)
        self._header = self._nbytes + 4 * self._nvar
        self._plan = [(t.fixed, t.size, _indexed_fixed_reader(t) if t.fixed else _indexed_var_reader(t))
                      for t in self._infos]

    def decode(self, buf, pos: int = 0, end: Optional[int] = None) -> list:
        buf, pos, end = _as_bytes(buf, pos, end)
        return self._decode(buf, pos, end)

    def decode_dict(self, buf, pos: int, end: int) -> dict:
        return dict(zip(self._names, self._decode(buf, pos, end)))

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


def build_indexed_batch(rows, types, *, schema_id: int, change_types=None, writer_id: int = -1,
                        batch_sequence: int = -1) -> bytes:
    """A whole INDEXED log batch; see :func:`fluss_fast.codec.indexedlog.build_row_log_batch`."""
    from .indexedlog import build_indexed_batch as build
    return build(rows, types, schema_id=schema_id, change_types=change_types, writer_id=writer_id,
                 batch_sequence=batch_sequence)


def decode_indexed_batch(buf, header, types) -> list:
    """``[(change_type, values)]`` of an INDEXED log batch; see ``indexedlog.decode_row_log_batch``."""
    from .indexedlog import decode_indexed_batch as decode
    return decode(buf, header, types)


CompactedRowEncoder_py = CompactedRowEncoder
CompactedRowDecoder_py = CompactedRowDecoder
IndexedRowEncoder_py = IndexedRowEncoder
IndexedRowDecoder_py = IndexedRowDecoder
CompactedKeyEncoder_py = CompactedKeyEncoder

pick("_rows", globals(), ["CompactedRowEncoder", "CompactedRowDecoder", "IndexedRowEncoder",
                          "IndexedRowDecoder", "CompactedKeyEncoder"])
