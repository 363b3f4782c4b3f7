"""Scalars of the binary row formats: Python value -> primitive (through :mod:`.values`, the one
Python-value model of appends and upserts), primitive -> little-endian bytes, bytes -> Python value."""
from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import math
import struct
from collections.abc import Sequence

from . import values as V
from .rowtypes import T_BIGINT, T_DATE, T_DOUBLE, T_FLOAT, T_INT, T_SMALLINT, T_TIME, T_TINYINT, TypeInfo

_EPOCH_ORDINAL = V.EPOCH_ORDINAL
_EPOCH = V.EPOCH
_EPOCH_UTC = V.EPOCH_UTC
_MILLIS_PER_DAY = 86_400_000
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


def _millis_nanos(us: int, ns: int) -> tuple[int, int]:
    return us // 1000, (us % 1000) * 1000 + ns


def conv_timestamp(v, t: TypeInfo) -> tuple[int, int]:
    """(epoch millis, nano of milli) of a wall-clock timestamp."""
    return _millis_nanos(*V.timestamp_micros(v, False))


def conv_timestamp_ltz(v, t: TypeInfo) -> tuple[int, int]:
    """(epoch millis, nano of milli) of an instant; naive datetimes are taken as UTC."""
    return _millis_nanos(*V.timestamp_micros(v, True))


def as_sequence(v, t: TypeInfo) -> Sequence:
    return V.as_sequence(v)


def map_items(v, t: TypeInfo) -> Sequence:
    return V.map_items(v)


def row_values(v, t: TypeInfo) -> Sequence:
    """A ROW value as a positional sequence (dict by field name, or list/tuple by position)."""
    return V.row_values(v, t.names, t.name_set, t.field_types)


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
