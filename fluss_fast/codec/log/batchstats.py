"""Column statistics of a V1 log batch (docs/contributing/formats.md §1.8): encode, decode, collect.

A writer of a table with ``table.statistics.columns`` puts, between the 52-byte V1 header and the
records, per-column null counts and min / max values of the batch. A server holding the batch can
then answer a filtered fetch without sending batches whose range cannot match (``batchfilter``).
One definition for both sides: the client writes with it, the embedded server reads with it.

Layout (all little-endian), as Java's ``LogRecordBatchStatisticsWriter`` writes it::

    version          int8   (1)
    column count N   int16
    column indexes   N x int16   positions in the full row, in the order of the table option
    null counts      N x int32
    min row size     int32, then an AlignedRow of the N statistics columns
    max row size     int32, then an AlignedRow

AlignedRow: a null-bit area of ``((N + 63 + 8) // 64) * 8`` bytes (the first 8 bits are a header,
always 0; field i's bit is i + 8), one 8-byte slot per field, then a variable part. Slots hold
primitives little-endian in their first bytes (the rest 0); strings of up to 7 UTF-8 bytes inline
(the bytes, then ``0x80 | length`` in the slot's last byte), longer ones in the variable part
(8-byte aligned, zero padded) with ``offset << 32 | length`` in the slot; decimals of precision
<= 18 as their unscaled long, wider ones as big-endian two's complement in a zeroed 16-byte
variable block; timestamps of precision <= 3 as epoch millis, finer ones as millis in an 8-byte
variable block with ``offset << 32 | nano-of-milli`` in the slot. A column without a min / max
(all values null, or a type Java collects no bounds for) is null in both rows.

Values on the Python side: bool, int (TINYINT..BIGINT, DATE as epoch days, TIME as millis of
day), float, str (STRING), int unscaled (DECIMAL, at the column's scale), and
``(epoch_millis, nano_of_milli)`` (TIMESTAMP, TIMESTAMP_LTZ).

Java's writer (fluss-common ``LogRecordBatchStatisticsCollector``) keeps no bounds for CHAR
columns (its collector has no CHAR case; it still counts their nulls); ``collect`` does the same,
so the bytes match what a Java writer sends for the same rows. The Rust client behind pyfluss
1.0.0 does write CHAR bounds; ``decode`` reads both.
"""
from __future__ import annotations

import decimal
import math
import struct
from collections.abc import Sequence

from ...datatypes import (
    BIGINT,
    BOOLEAN,
    CHAR,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INTEGER,
    SMALLINT,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
)

STATISTICS_VERSION = 1
STATISTICS_COLUMNS_KEY = "table.statistics.columns"

#: the types Java collects statistics for with '*' (DataTypeChecks.isSupportedStatisticsType)
SUPPORTED_ROOTS = (BOOLEAN, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, STRING, CHAR, DECIMAL,
                   DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ)

_HEADER_BITS = 8
_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_SLOT_FORMAT = {BOOLEAN: "<?", TINYINT: "<b", SMALLINT: "<h", INTEGER: "<i", DATE: "<i", TIME: "<i",
                BIGINT: "<q", FLOAT: "<f", DOUBLE: "<d"}
_MAX_COMPACT_DECIMAL_PRECISION = 18
_MAX_COMPACT_TIMESTAMP_PRECISION = 3


class StatisticsError(ValueError):
    """A statistics block that cannot be read: truncated, or sizes and indexes that do not fit."""


class BatchStatistics:
    """The statistics of one batch, per statistics column (in block order)."""

    __slots__ = ("column_indexes", "null_counts", "min_values", "max_values", "size")

    def __init__(self, column_indexes, null_counts, min_values, max_values, size: int = 0):
        self.column_indexes = tuple(column_indexes)
        self.null_counts = tuple(null_counts)
        self.min_values = tuple(min_values)
        self.max_values = tuple(max_values)
        self.size = size  # bytes of the encoded block (0 when built in memory)

    def column(self, index: int):
        """``(null_count, min, max)`` of full-row column ``index``, or None when the batch has no
        statistics for it."""
        try:
            i = self.column_indexes.index(index)
        except ValueError:
            return None
        return self.null_counts[i], self.min_values[i], self.max_values[i]

    def __eq__(self, other) -> bool:
        return (isinstance(other, BatchStatistics) and self.column_indexes == other.column_indexes
                and self.null_counts == other.null_counts and _same(self.min_values, other.min_values)
                and _same(self.max_values, other.max_values))

    def __repr__(self) -> str:
        return (f"BatchStatistics(columns={list(self.column_indexes)}, nulls={list(self.null_counts)}, "
                f"min={list(self.min_values)}, max={list(self.max_values)})")


def _same(a, b) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        if x != y or type(x) is not type(y):
            return False
    return True


# -- which columns -------------------------------------------------------------------------------
def statistics_columns(schema, properties) -> list | None:
    """The full-row indexes the table collects statistics for, in block order, or None when the
    table does not ask for statistics (Java's ``TableInfo.getStatsIndexMapping`` and
    ``TableConfig.getStatisticsColumns``): '*' is every column of a supported type in schema
    order; otherwise the comma-separated names in the order given.

    Raises:
        ValueError: a named column is not in the schema or of a type without statistics.
    """
    value = (properties or {}).get(STATISTICS_COLUMNS_KEY)
    if value is None:
        return None
    columns = schema.columns
    if value == "*":
        return [i for i, c in enumerate(columns) if c.type.root in SUPPORTED_ROOTS]
    out = []
    for name in (s.strip() for s in value.split(",")):
        if not name:
            continue
        idx = next((i for i, c in enumerate(columns) if c.name == name), None)
        if idx is None:
            raise ValueError(f"Column '{name}' specified in statistics collection does not exist "
                             f"in table schema")
        if columns[idx].type.root not in SUPPORTED_ROOTS:
            raise ValueError(f"Column '{name}' of type '{columns[idx].type.root}' is not supported "
                             f"for statistics collection")
        out.append(idx)
    return out


# -- AlignedRow ----------------------------------------------------------------------------------
def null_bits_size(arity: int) -> int:
    return ((arity + 63 + _HEADER_BITS) // 64) * 8


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def encode_aligned_row(types: Sequence, values: Sequence) -> bytes:
    """An AlignedRow of ``values`` (None = null) typed by ``types`` (DataType per field)."""
    n = len(types)
    nb = null_bits_size(n)
    fixed = bytearray(nb + 8 * n)
    var = bytearray()
    for i, (t, v) in enumerate(zip(types, values, strict=True)):
        slot = nb + 8 * i
        if v is None:
            fixed[(i + _HEADER_BITS) >> 3] |= 1 << ((i + _HEADER_BITS) & 7)
            continue
        root = t.root
        fmt = _SLOT_FORMAT.get(root)
        if fmt is not None:
            struct.pack_into(fmt, fixed, slot, v)
        elif root in (STRING, CHAR):
            data = v.encode("utf-8", "surrogateescape") if isinstance(v, str) else bytes(v)
            if len(data) <= 7:
                fixed[slot:slot + len(data)] = data
                fixed[slot + 7] = 0x80 | len(data)
            else:
                _I64.pack_into(fixed, slot, ((len(fixed) + len(var)) << 32) | len(data))
                var += data
                var += bytes(_pad8(len(data)) - len(data))
        elif root == DECIMAL:
            if (t.precision or 10) <= _MAX_COMPACT_DECIMAL_PRECISION:
                _I64.pack_into(fixed, slot, v)
            else:
                data = _big_integer_bytes(v)
                if len(data) > 16:
                    raise ValueError(f"decimal {v} does not fit 16 bytes")
                _I64.pack_into(fixed, slot, ((len(fixed) + len(var)) << 32) | len(data))
                var += data + bytes(16 - len(data))
        elif root in (TIMESTAMP, TIMESTAMP_LTZ):
            millis, nanos = v
            if (t.precision if t.precision is not None else 6) <= _MAX_COMPACT_TIMESTAMP_PRECISION:
                _I64.pack_into(fixed, slot, millis)
            else:
                _I64.pack_into(fixed, slot, ((len(fixed) + len(var)) << 32) | nanos)
                var += _I64.pack(millis)
        else:
            raise ValueError(f"statistics are not supported for type {root}")
    return bytes(fixed + var)


def decode_aligned_row(types: Sequence, buf, pos: int = 0, size: int | None = None) -> list:
    """The values of an AlignedRow of ``len(types)`` fields at ``buf[pos:pos + size]``."""
    mv = memoryview(buf)
    if size is None:
        size = len(mv) - pos
    n = len(types)
    nb = null_bits_size(n)
    if size < nb + 8 * n:
        raise StatisticsError(f"row of {size} bytes is shorter than the {nb + 8 * n} bytes its "
                              f"{n} fields need")
    row = mv[pos:pos + size]
    out = []
    for i, t in enumerate(types):
        if row[(i + _HEADER_BITS) >> 3] & (1 << ((i + _HEADER_BITS) & 7)):
            out.append(None)
            continue
        slot = nb + 8 * i
        root = t.root
        fmt = _SLOT_FORMAT.get(root)
        if fmt is not None:
            out.append(struct.unpack_from(fmt, row, slot)[0])
        elif root in (STRING, CHAR):
            mark = row[slot + 7]
            if mark & 0x80:
                ln = mark & 0x7F
                if ln > 7:
                    raise StatisticsError(f"inline string of length {ln} in field {i}")
                data = bytes(row[slot:slot + ln])
            else:
                packed = _I64.unpack_from(row, slot)[0]
                data = bytes(_var_part(row, packed >> 32, packed & 0xFFFFFFFF, i))
            out.append(data.decode("utf-8", "surrogateescape"))
        elif root == DECIMAL:
            if (t.precision or 10) <= _MAX_COMPACT_DECIMAL_PRECISION:
                out.append(_I64.unpack_from(row, slot)[0])
            else:
                packed = _I64.unpack_from(row, slot)[0]
                ln = packed & 0xFFFFFFFF
                if ln > 16:
                    raise StatisticsError(f"decimal of {ln} bytes in field {i}")
                data = _var_part(row, packed >> 32, ln, i)
                out.append(int.from_bytes(data, "big", signed=True) if ln else 0)
        elif root in (TIMESTAMP, TIMESTAMP_LTZ):
            if (t.precision if t.precision is not None else 6) <= _MAX_COMPACT_TIMESTAMP_PRECISION:
                out.append((_I64.unpack_from(row, slot)[0], 0))
            else:
                packed = _I64.unpack_from(row, slot)[0]
                millis = _I64.unpack_from(_var_part(row, packed >> 32, 8, i), 0)[0]
                out.append((millis, packed & 0xFFFFFFFF))
        else:
            raise StatisticsError(f"statistics are not supported for type {root}")
    return out


def _var_part(row: memoryview, offset: int, length: int, field: int) -> memoryview:
    if offset < 0 or offset + length > len(row):
        raise StatisticsError(f"field {field} points at bytes {offset}..{offset + length} outside "
                              f"its row of {len(row)} bytes")
    return row[offset:offset + length]


def _big_integer_bytes(v: int) -> bytes:
    """Java's ``BigInteger.toByteArray()``: minimal big-endian two's complement."""
    n = (v + (v < 0)).bit_length() // 8 + 1
    return v.to_bytes(n, "big", signed=True)


# -- the block -----------------------------------------------------------------------------------
def encode_statistics(types: Sequence, column_indexes: Sequence[int], null_counts: Sequence[int],
                      min_values: Sequence, max_values: Sequence) -> bytes:
    """The statistics block; ``types`` are the full row's DataTypes, the other sequences one entry
    per statistics column."""
    k = len(column_indexes)
    if not (len(null_counts) == len(min_values) == len(max_values) == k):
        raise ValueError("column indexes, null counts, min and max values differ in length")
    stats_types = [types[i] for i in column_indexes]
    min_row = encode_aligned_row(stats_types, min_values)
    max_row = encode_aligned_row(stats_types, max_values)
    return b"".join((
        struct.pack(f"<bh{k}h{k}i", STATISTICS_VERSION, k, *column_indexes, *null_counts),
        _I32.pack(len(min_row)), min_row, _I32.pack(len(max_row)), max_row))


def statistics_size(buf, pos: int = 0, end: int | None = None) -> int:
    """Bytes taken by the statistics block at ``pos`` (from its own size fields)."""
    mv = memoryview(buf)
    end = len(mv) if end is None else end
    k = _column_count(mv, pos, end)
    at = pos + 3 + 6 * k
    min_size = _size_at(mv, at, end, "min")
    at += 4 + min_size
    max_size = _size_at(mv, at, end, "max")
    return at + 4 + max_size - pos


def _column_count(mv, pos: int, end: int) -> int:
    if end - pos < 3:
        raise StatisticsError(f"statistics block of {max(0, end - pos)} bytes is too short")
    if mv[pos] != STATISTICS_VERSION:
        raise StatisticsError(f"unknown statistics version {mv[pos]}")
    k = _I16.unpack_from(mv, pos + 1)[0]
    if k <= 0:
        raise StatisticsError(f"statistics block with {k} columns")
    return k


def _size_at(mv, at: int, end: int, what: str) -> int:
    if at + 4 > end:
        raise StatisticsError(f"statistics block ends before its {what} row size (needs "
                              f"{at + 4} bytes, has {end})")
    size = _I32.unpack_from(mv, at)[0]
    if size < 0 or at + 4 + size > end:
        raise StatisticsError(f"{what} row of {size} bytes overruns the statistics block "
                              f"({end - at - 4} bytes left)")
    return size


def decode_statistics(buf, types: Sequence, pos: int = 0, end: int | None = None) -> BatchStatistics:
    """The statistics block at ``buf[pos:end]`` of a batch whose rows have ``types``.

    Raises:
        StatisticsError: unknown version, no columns, an index outside the row, or a size that
            runs past the block.
    """
    mv = memoryview(buf)
    end = len(mv) if end is None else end
    k = _column_count(mv, pos, end)
    head = 3 + 6 * k
    if pos + head > end:
        raise StatisticsError(f"statistics block of {end - pos} bytes is shorter than the {head} "
                              f"bytes its {k} columns need")
    fields = struct.unpack_from(f"<{k}h{k}i", mv, pos + 3)
    indexes, nulls = fields[:k], fields[k:]
    for i in indexes:
        if not 0 <= i < len(types):
            raise StatisticsError(f"statistics column index {i} outside a row of {len(types)} fields")
    if len(set(indexes)) != k:
        raise StatisticsError(f"duplicate statistics column indexes {list(indexes)}")
    stats_types = [types[i] for i in indexes]
    at = pos + head
    min_size = _size_at(mv, at, end, "min")
    mins = decode_aligned_row(stats_types, mv, at + 4, min_size) if min_size else [None] * k
    at += 4 + min_size
    max_size = _size_at(mv, at, end, "max")
    maxs = decode_aligned_row(stats_types, mv, at + 4, max_size) if max_size else [None] * k
    at += 4 + max_size
    return BatchStatistics(indexes, nulls, mins, maxs, at - pos)


# -- collecting from Arrow -------------------------------------------------------------------------
def collect(rb, types: Sequence, column_indexes: Sequence[int]):
    """``(null_counts, min_values, max_values)`` of the statistics columns of Arrow batch ``rb``
    (its columns in full-row order), with Java's comparisons: NaN above every float, -0.0 below
    0.0, strings by UTF-8 bytes."""
    import pyarrow.compute as pc

    nulls, mins, maxs = [], [], []
    for i in column_indexes:
        col = rb.column(i)
        t = types[i]
        nulls.append(col.null_count)
        lo = hi = None
        if col.null_count < len(col) and t.root != CHAR:  # Java keeps no CHAR bounds
            lo, hi = _bounds(col, t, pc)
        mins.append(lo)
        maxs.append(hi)
    return nulls, mins, maxs


def _bounds(col, t, pc):
    import pyarrow as pa

    root = t.root
    if root in (FLOAT, DOUBLE):
        return _float_bounds(col)
    if root == TIME:
        unit = getattr(col.type, "unit", "ms")
        vals = col.view(pa.int32() if pa.types.is_time32(col.type) else pa.int64())
        mm = pc.min_max(vals)
        scale = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[unit]
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if scale is None:
            return lo * 1000, hi * 1000
        return lo // scale, hi // scale
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        unit = col.type.unit
        mm = pc.min_max(col.view(pa.int64()))
        return _ts(mm["min"].as_py(), unit), _ts(mm["max"].as_py(), unit)
    if root == DATE:
        mm = pc.min_max(col.view(pa.int32()))
        return mm["min"].as_py(), mm["max"].as_py()
    mm = pc.min_max(col)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if root == DECIMAL:
        scale = t.scale or 0
        return _unscaled(lo, scale), _unscaled(hi, scale)
    if root == STRING and isinstance(lo, bytes):
        lo, hi = lo.decode("utf-8", "surrogateescape"), hi.decode("utf-8", "surrogateescape")
    return lo, hi


_DEC_CTX = decimal.Context(prec=80)


def _unscaled(d, scale: int) -> int:
    return int(_DEC_CTX.scaleb(d, scale))


def _ts(v: int, unit: str):
    if unit == "s":
        return v * 1000, 0
    if unit == "ms":
        return v, 0
    if unit == "us":
        return v // 1000, (v % 1000) * 1000
    return v // 1_000_000, v % 1_000_000


def _float_bounds(col):
    import numpy as np

    vals = col.drop_null().to_numpy(zero_copy_only=False)
    nan = np.isnan(vals)
    real = vals[~nan]
    if real.size == 0:
        v = float(vals[0])
        return v, v
    lo = float(real.min())
    hi = float(vals[nan][0]) if nan.any() else float(real.max())
    zeros = real[real == 0]
    if zeros.size:
        neg = np.signbit(zeros)
        if lo == 0.0:
            lo = -0.0 if neg.any() else 0.0
        if hi == 0.0:
            hi = 0.0 if not neg.all() else -0.0
    return lo, hi


def statistics_of(rb, types: Sequence, column_indexes: Sequence[int]) -> bytes:
    """The statistics block Java's Arrow writer puts into a V1 batch of ``rb``'s rows: empty for a
    batch without rows."""
    if rb.num_rows == 0:
        return b""
    nulls, mins, maxs = collect(rb, types, column_indexes)
    return encode_statistics(types, column_indexes, nulls, mins, maxs)
