"""Key bytes of data-lake tables (``table.datalake.format``): the PAIMON and ICEBERG key layouts.

A lake table's bucket key is encoded the lake's way so that a row lands in the bucket the lake
itself would put it in (the bucket functions are ``murmur.paimon_bucket`` / ``murmur.iceberg_bucket``);
``keys.KeyScheme`` decides which encoder each key of a table uses (its primary key may be encoded
the lake's way too). LANCE tables use the default CompactedRow key layout.

PAIMON: a Paimon ``BinaryRow`` of the key columns. A fixed part of ``null bytes`` (the row-kind
byte 0 = INSERT, then one null bit per field starting at bit 8, rounded up to whole 8-byte words:
``((n + 63 + 8) // 64) * 8``) and one 8-byte little-endian slot per field, then an 8-byte-aligned
variable part. Slots: BOOLEAN / TINYINT 1 byte, SMALLINT 2, INT / DATE / TIME 4 (TIME in millis),
BIGINT 8, FLOAT 4, DOUBLE 8 (the rest of the slot zero); CHAR / STRING / BINARY / BYTES of at most
7 bytes inline (data in slot bytes 0..6, byte 7 = ``0x80 | length``), longer ones in the variable
part (zero-padded to 8 bytes) with the slot ``offset << 32 | length``; DECIMAL(p <= 18) the
unscaled int64, wider ones 16 bytes of the variable part holding the big-endian two's complement
unscaled value (Java ``BigInteger.toByteArray``), slot ``offset << 32 | byte length``;
TIMESTAMP / TIMESTAMP_LTZ of precision <= 3 the epoch millis, wider ones the millis in 8 bytes of
the variable part and the slot ``offset << 32 | nano of milli``. A null field has its bit set and
a zero slot. Offsets are from the row start. Other types are refused.

ICEBERG: exactly one key column, as the bytes Iceberg's bucket transform hashes: INT / DATE as an
int64, BIGINT int64, TIME as int64 micros of the day, TIMESTAMP as int64 epoch micros (all
little-endian), FLOAT / DOUBLE as 4 / 8 little-endian bytes, DECIMAL the big-endian two's
complement unscaled value, CHAR / STRING the UTF-8 bytes, BINARY / BYTES the bytes themselves.
BOOLEAN, TINYINT, SMALLINT, TIMESTAMP_LTZ, ARRAY, MAP and ROW are refused, and so is a null.

Encoders: ``PaimonKeyEncoder(types, names=None)`` / ``IcebergKeyEncoder(types, names=None)`` with
``encode(values) -> bytes`` (``values`` = the key columns only, in order), like
``compacted.CompactedKeyEncoder``. The decoders (``PaimonKeyDecoder`` / ``IcebergKeyDecoder``,
``decode(key) -> list``) give the values back; the server uses them for lookups that insert
missing keys. The compiled twin ``_lakekeys`` has the same encoders.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from .._select import pick
from ..rows.rowbase import _field_label, _infos, _with_field
from ..rows.rowtypes import (
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
    T_SMALLINT,
    T_STRING,
    T_TIME,
    T_TIMESTAMP,
    T_TIMESTAMP_LTZ,
    T_TINYINT,
    TypeInfo,
)
from ..rows.scalars import (
    bigint_bytes,
    conv_bool,
    conv_bytes,
    conv_date,
    conv_decimal,
    conv_float,
    conv_int,
    conv_str,
    conv_time,
    conv_timestamp,
    conv_timestamp_ltz,
    make_date,
    make_decimal,
    make_time,
    make_timestamp,
    make_timestamp_ltz,
    pack_f32,
    pack_f64,
)

__all__ = ["PaimonKeyEncoder", "IcebergKeyEncoder", "PaimonKeyDecoder", "IcebergKeyDecoder",
           "paimon_null_bytes"]

_U64 = (1 << 64) - 1
_pk_q = struct.Struct("<q")
_pk_Q = struct.Struct("<Q")


def paimon_null_bytes(arity: int) -> int:
    """Size of a Paimon BinaryRow's header + null-bit area: whole 8-byte words."""
    return ((arity + 63 + 8) // 64) * 8


def _refuse_paimon(t: TypeInfo):
    return ValueError(f"Unsupported type for Paimon BinaryRow writer: {t.dtype}")


# -- PAIMON ------------------------------------------------------------------------------------------
# A slot writer: fn(row: bytearray, slot: int, value) -> None, appending to ``row`` (the variable
# part) when the value does not fit its slot.

def _paimon_writer(t: TypeInfo) -> Callable:
    c = t.code
    conv: Callable[..., Any]
    if c == T_BOOLEAN:
        def w(row, s, v):
            row[s] = 1 if conv_bool(v, t) else 0
    elif c == T_TINYINT:
        def w(row, s, v):
            row[s] = conv_int(v, t) & 0xFF
    elif c == T_SMALLINT:
        def w(row, s, v):
            row[s:s + 2] = (conv_int(v, t) & 0xFFFF).to_bytes(2, "little")
    elif c in (T_INT, T_DATE, T_TIME):
        conv = conv_int if c == T_INT else conv_date if c == T_DATE else conv_time

        def w(row, s, v):
            row[s:s + 4] = (conv(v, t) & 0xFFFFFFFF).to_bytes(4, "little")
    elif c == T_BIGINT:
        def w(row, s, v):
            row[s:s + 8] = _pk_q.pack(conv_int(v, t))
    elif c == T_FLOAT:
        def w(row, s, v):
            row[s:s + 4] = pack_f32(conv_float(v, t))
    elif c == T_DOUBLE:
        def w(row, s, v):
            row[s:s + 8] = pack_f64(conv_float(v, t))
    elif c in (T_CHAR, T_STRING, T_BINARY, T_BYTES):
        conv = conv_str if c in (T_CHAR, T_STRING) else conv_bytes

        def w(row, s, v):
            _paimon_bytes(row, s, conv(v, t))
    elif c == T_DECIMAL:
        if t.compact:
            def w(row, s, v):
                row[s:s + 8] = _pk_q.pack(conv_decimal(v, t))
        else:
            def w(row, s, v):
                data = bigint_bytes(conv_decimal(v, t))
                off = len(row)
                row += data
                row += bytes(16 - len(data))
                row[s:s + 8] = _pk_Q.pack((off << 32) | len(data))
    elif c in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
        conv = conv_timestamp if c == T_TIMESTAMP else conv_timestamp_ltz
        if t.compact:
            def w(row, s, v):
                row[s:s + 8] = _pk_q.pack(conv(v, t)[0])
        else:
            def w(row, s, v):
                millis, nanos = conv(v, t)
                off = len(row)
                row += _pk_q.pack(millis)
                row[s:s + 8] = _pk_Q.pack((off << 32) | nanos)
    else:
        raise _refuse_paimon(t)
    return w


def _paimon_bytes(row: bytearray, s: int, data: bytes) -> None:
    n = len(data)
    if n <= 7:
        row[s:s + n] = data
        row[s + 7] = 0x80 | n
    else:
        off = len(row)
        row += data
        pad = (-n) & 7
        if pad:
            row += bytes(pad)
        row[s:s + 8] = _pk_Q.pack((off << 32) | n)


class PaimonKeyEncoder:
    """``encode(values) -> bytes``: the key columns as a Paimon BinaryRow (row kind INSERT)."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        self._infos = _infos(types)
        self._names = list(names) if names is not None else None
        self._n = len(self._infos)
        self._nb = paimon_null_bytes(self._n)
        self._fixed = self._nb + 8 * self._n
        self._writers = [_paimon_writer(t) for t in self._infos]

    @property
    def arity(self) -> int:
        return self._n

    def encode(self, values) -> bytes:
        if len(values) != self._n:
            raise ValueError(f"key has {len(values)} values but {self._n} key columns")
        nb = self._nb
        row = bytearray(self._fixed)
        for i, w in enumerate(self._writers):
            v = values[i]
            if v is None:  # Java sets the null bit (nullable bucket-key columns of log tables)
                bit = i + 8
                row[bit >> 3] |= 1 << (bit & 7)
            else:
                try:
                    w(row, nb + 8 * i, v)
                except (TypeError, ValueError, OverflowError) as exc:
                    raise _with_field(exc, self._names, i) from None
        return bytes(row)


# -- ICEBERG -----------------------------------------------------------------------------------------

def _iceberg_writer(t: TypeInfo) -> Callable:
    """fn(value) -> bytes of the one key column."""
    c = t.code
    if c in (T_INT, T_DATE):
        conv = conv_int if c == T_INT else conv_date

        def w(v):
            return _pk_q.pack(conv(v, t))
    elif c == T_TIME:
        def w(v):
            return _pk_q.pack(conv_time(v, t) * 1000)
    elif c == T_BIGINT:
        def w(v):
            return _pk_q.pack(conv_int(v, t))
    elif c == T_FLOAT:
        def w(v):
            return pack_f32(conv_float(v, t))
    elif c == T_DOUBLE:
        def w(v):
            return pack_f64(conv_float(v, t))
    elif c == T_TIMESTAMP:
        def w(v):
            millis, nanos = conv_timestamp(v, t)
            return _pk_q.pack(millis * 1000 + nanos // 1000)
    elif c == T_DECIMAL:
        def w(v):
            return bigint_bytes(conv_decimal(v, t))
    elif c in (T_CHAR, T_STRING):
        def w(v):
            return conv_str(v, t)
    elif c in (T_BINARY, T_BYTES):
        def w(v):
            return conv_bytes(v, t)
    elif c == T_ARRAY:
        raise ValueError("Array types cannot be used as bucket keys. Bucket keys must be scalar types.")
    elif c == T_MAP:
        raise ValueError("Map types cannot be used as bucket keys. Bucket keys must be scalar types.")
    else:
        raise ValueError(f"Unsupported type for Iceberg binary row writer: {t.dtype}")
    return w


def _check_one(names, n: int) -> None:
    if n != 1:
        shown = "[" + ", ".join(names) + "]" if names is not None else f"{n} fields"
        raise ValueError(f"Key fields must have exactly one field for iceberg format, but got: {shown}")


class IcebergKeyEncoder:
    """``encode([value]) -> bytes``: the one key column as Iceberg's bucket transform hashes it."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        self._infos = _infos(types)
        self._names = list(names) if names is not None else None
        self._n = len(self._infos)
        _check_one(self._names, self._n)
        self._writer = _iceberg_writer(self._infos[0])

    @property
    def arity(self) -> int:
        return self._n

    def encode(self, values) -> bytes:
        if len(values) != 1:
            raise ValueError(f"key has {len(values)} values but 1 key column")
        v = values[0]
        if v is None:
            raise ValueError(f"key {_field_label(self._names, 0)} is null; Iceberg key columns do not "
                             f"support null values ({self._infos[0].dtype})")
        try:
            return self._writer(v)
        except (TypeError, ValueError, OverflowError) as exc:
            raise _with_field(exc, self._names, 0) from None


# -- decoders (pure only: the server's insert-if-absent lookups) -----------------------------------

def _paimon_reader(t: TypeInfo) -> Callable:
    """fn(key: bytes, slot: int) -> value."""
    c = t.code
    if c == T_BOOLEAN:
        return lambda b, s: b[s] != 0
    if c == T_TINYINT:
        return lambda b, s: int.from_bytes(b[s:s + 1], "little", signed=True)
    if c == T_SMALLINT:
        return lambda b, s: int.from_bytes(b[s:s + 2], "little", signed=True)
    if c == T_INT:
        return lambda b, s: int.from_bytes(b[s:s + 4], "little", signed=True)
    if c == T_DATE:
        return lambda b, s: make_date(int.from_bytes(b[s:s + 4], "little", signed=True))
    if c == T_TIME:
        return lambda b, s: make_time(int.from_bytes(b[s:s + 4], "little", signed=True))
    if c == T_BIGINT:
        return lambda b, s: _pk_q.unpack_from(b, s)[0]
    if c == T_FLOAT:
        return lambda b, s: struct.unpack_from("<f", b, s)[0]
    if c == T_DOUBLE:
        return lambda b, s: struct.unpack_from("<d", b, s)[0]
    if c in (T_CHAR, T_STRING, T_BINARY, T_BYTES):
        text = c in (T_CHAR, T_STRING)

        def r(b, s):
            if b[s + 7] & 0x80:
                data = bytes(b[s:s + (b[s + 7] & 0x7F)])
            else:
                word = _pk_Q.unpack_from(b, s)[0]
                off, n = word >> 32, word & 0xFFFFFFFF
                data = bytes(b[off:off + n])
            return data.decode("utf-8") if text else data
        return r
    if c == T_DECIMAL:
        scale = t.scale
        if t.compact:
            return lambda b, s: make_decimal(_pk_q.unpack_from(b, s)[0], scale)

        def r(b, s):
            word = _pk_Q.unpack_from(b, s)[0]
            off, n = word >> 32, word & 0xFFFFFFFF
            return make_decimal(int.from_bytes(b[off:off + n], "big", signed=True), scale)
        return r
    if c in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
        make = make_timestamp if c == T_TIMESTAMP else make_timestamp_ltz
        if t.compact:
            return lambda b, s: make(_pk_q.unpack_from(b, s)[0], 0)

        def r(b, s):
            word = _pk_Q.unpack_from(b, s)[0]
            return make(_pk_q.unpack_from(b, word >> 32)[0], word & 0xFFFFFFFF)
        return r
    raise _refuse_paimon(t)


class PaimonKeyDecoder:
    """``decode(key) -> list``: the values of a Paimon BinaryRow key."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        self._infos = _infos(types)
        self._n = len(self._infos)
        self._nb = paimon_null_bytes(self._n)
        self._readers = [_paimon_reader(t) for t in self._infos]

    def decode(self, key) -> list:
        b = bytes(key)
        if len(b) < self._nb + 8 * self._n:
            raise ValueError(f"a Paimon key of {self._n} fields needs at least {self._nb + 8 * self._n} "
                             f"bytes, got {len(b)}")
        out: list[Any] = []
        for i, r in enumerate(self._readers):
            bit = i + 8
            if b[bit >> 3] & (1 << (bit & 7)):
                out.append(None)
            else:
                out.append(r(b, self._nb + 8 * i))
        return out


class IcebergKeyDecoder:
    """``decode(key) -> [value]``: the value of an Iceberg-encoded key."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        self._infos = _infos(types)
        _check_one(list(names) if names is not None else None, len(self._infos))
        t = self._infos[0]
        _iceberg_writer(t)  # refuses what the encoder refuses
        self._t = t

    def decode(self, key) -> list:
        b = bytes(key)
        t = self._t
        c = t.code
        if c in (T_INT, T_DATE, T_TIME, T_BIGINT, T_TIMESTAMP):
            if len(b) != 8:
                raise ValueError(f"an Iceberg {t.dtype} key has 8 bytes, got {len(b)}")
            x = _pk_q.unpack(b)[0]
            if c == T_INT:
                v = x
            elif c == T_DATE:
                v = make_date(x)
            elif c == T_TIME:
                v = make_time(x // 1000)
            elif c == T_BIGINT:
                v = x
            else:
                v = make_timestamp(x // 1000, (x % 1000) * 1000)
        elif c == T_FLOAT:
            v = struct.unpack("<f", b)[0]
        elif c == T_DOUBLE:
            v = struct.unpack("<d", b)[0]
        elif c == T_DECIMAL:
            v = make_decimal(int.from_bytes(b, "big", signed=True), t.scale)
        elif c in (T_CHAR, T_STRING):
            v = b.decode("utf-8")
        else:
            v = b
        return [v]


PaimonKeyEncoder_py = PaimonKeyEncoder
IcebergKeyEncoder_py = IcebergKeyEncoder

pick("_lakekeys", globals(), ["PaimonKeyEncoder", "IcebergKeyEncoder"])
