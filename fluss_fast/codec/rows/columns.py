"""Python rows -> Arrow columns for a table schema: the append hot path of log tables.

``RowBatchBuilder(schema, table_name)`` accepts rows the way pyfluss does — a dict by column name
(a missing key means null, an unknown key is an error) or a list/tuple by position (exact arity) —
validates every value against its Fluss type and accumulates columns until ``build()`` turns them
into one ``pa.RecordBatch`` with the table's Arrow schema (docs/contributing/formats.md §2.4).

Accepted values per type (``values.py`` decides, for upserts too; pyfluss's rules, plus a few
harmless extras marked *):

=========================  =========================================================================
BOOLEAN                    bool (numpy.bool_)
TINYINT..BIGINT            int or anything with ``__index__``, never bool; range-checked
FLOAT, DOUBLE              float, int, anything with ``__float__`` (not str/bytes)
STRING, CHAR               str
BYTES / BINARY(n)          bytes, bytearray, memoryview*; BINARY needs exactly n bytes
DECIMAL(p, s)              decimal.Decimal (int*), rounded HALF_UP to s digits, at most p digits
DATE                       datetime.date (not datetime)
TIME                       datetime.time, whole milliseconds only
TIMESTAMP                  naive datetime, naive pandas.Timestamp, numpy.datetime64*, to_pydatetime()
TIMESTAMP_LTZ              as TIMESTAMP, naive = UTC; tz-aware values are converted to UTC
ARRAY                      list, tuple, other sequences except str/bytes, numpy arrays*
MAP                        dict or sequence of (key, value) pairs; keys non-null
ROW                        dict by field name (missing = null) or list/tuple by position
=========================  =========================================================================

Timestamps become ``(millis, nanoOfMilli)`` and then the Arrow unit's value exactly as the Java
writer computes it (seconds = millis / 1000 truncated toward zero). TIME is milliseconds of the
day scaled to the unit.

The pure builder keeps a list of converted values per column and calls ``pa.array``; the Cython
twin (``_columns.pyx``) writes flat types straight into Arrow buffers and reuses the converters
below for everything else, so both accept and reject exactly the same values.
"""
from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ... import datatypes as T
from ...datatypes import DataType, SchemaInfo
from ...errors import FlussError
from .._select import pick
from . import values as V

try:
    from zoneinfo import ZoneInfo as _ZoneInfo
except ImportError:  # pragma: no cover - stdlib since 3.9
    _ZoneInfo = None

__all__ = ["RowBatchBuilder", "converter_for", "BadValue", "describe_value", "INT_RANGES",
           "fixed_width_of"]


BadValue = V.BadValue
INT_RANGES = V.INT_RANGES
describe_value = V.describe_value

_EPOCH_ORDINAL = V.EPOCH_ORDINAL
_UTC_EPOCH = V.EPOCH_UTC
_NAIVE_EPOCH = V.EPOCH


def fixed_width_of(dt: DataType) -> int:
    """Approximate Arrow bytes per value (data + offsets) for batch-size accounting."""
    r = dt.root
    if r in (T.BOOLEAN, T.TINYINT):
        return 1
    if r == T.SMALLINT:
        return 2
    if r in (T.INTEGER, T.FLOAT, T.DATE):
        return 4
    if r == T.TIME:
        return 4 if (dt.precision or 0) <= 3 else 8
    if r == T.DECIMAL:
        return 16
    if r == T.BINARY:
        return dt.length
    if r in (T.STRING, T.CHAR, T.BYTES):
        return 4
    return 8


def _trunc_div(a: int, b: int) -> int:
    q = a // b
    if q < 0 and q * b != a:
        q += 1
    return q


def _time_scale(precision: int):
    """millis-of-day -> Arrow time value for TIME(precision)."""
    if precision == 0:
        return lambda ms: ms // 1000
    if precision <= 3:
        return lambda ms: ms
    if precision <= 6:
        return lambda ms: ms * 1000
    return lambda ms: ms * 1000000


def _micros_to_unit(precision: int):
    """(epoch micros, extra nanos within the micro) -> Arrow timestamp value for the precision."""
    if precision == 0:
        return lambda us, ns: _trunc_div(us // 1000, 1000)
    if precision <= 3:
        return lambda us, ns: us // 1000
    if precision <= 6:
        return lambda us, ns: us
    return lambda us, ns: us * 1000 + ns


def _fixed_zone(tz, offset) -> bool:
    """Whether ``tz`` has the single UTC offset ``offset`` for every instant: ``timezone`` always;
    ``ZoneInfo`` when its ``utcoffset(None)`` is not None, which it is only for fixed zones."""
    t = type(tz)
    if t is _dt.timezone:
        return True
    if t is _ZoneInfo:
        try:
            return tz.utcoffset(None) == offset
        except Exception:  # noqa: BLE001 - then it is simply asked per value
            return False
    return False


def _timestamp_converter(dt: DataType, ltz: bool) -> Callable:
    raw_unit = _micros_to_unit(dt.precision)
    p = dt.precision
    # the unit as (divisor of micros, multiplier); precision 0 is special (Java truncation)
    div = 1000 if 0 < p <= 3 else 1
    mul = 1000 if p > 6 else 1
    lo, hi = -(1 << 63), (1 << 63)

    def to_unit(us, ns):
        out = raw_unit(us, ns)
        if not lo <= out < hi:
            raise BadValue(f"timestamp out of range for {dt}")
        return out

    # (tzinfo, offset in micros, the epoch in that tzinfo) of the last fixed-offset zone seen (see
    # _fixed_zone): datetimes sharing a tzinfo subtract as wall-clock times, with no utcoffset().
    # One tuple, read once, so that threads sharing the converter never mix two entries.
    fixed = [(None, 0, None)]

    def conv(v):
        if type(v) is _dt.datetime:  # the common case, inlined: never a pandas.Timestamp
            tz = v.tzinfo
            off = 0
            if tz is None:
                d = v - _NAIVE_EPOCH
            elif tz is fixed[0][0]:
                _, off, epoch = fixed[0]
                d = v - epoch
            else:
                o = v.utcoffset()
                if o is None:
                    d = v.replace(tzinfo=None) - _NAIVE_EPOCH
                elif not ltz:
                    raise V.aware_for_ntz(v)
                else:
                    if _fixed_zone(tz, o):
                        fixed[0] = (tz, (o.days * 86400 + o.seconds) * 1000000 + o.microseconds,
                                    _dt.datetime(1970, 1, 1, tzinfo=tz))
                    d = v - _UTC_EPOCH
            us = (d.days * 86400 + d.seconds) * 1000000 + d.microseconds - off
            if p == 0:
                return to_unit(us, 0)
            out = us // div * mul
            if not lo <= out < hi:
                raise BadValue(f"timestamp out of range for {dt}")
            return out
        return to_unit(*V.timestamp_micros(v, ltz))

    return conv


def converter_for(dt: DataType) -> Callable[[Any], Any]:
    """``conv(value) -> storage value`` for a non-None value of Fluss type ``dt``.

    The storage value is what ``pa.array(..., type=dt.to_arrow())`` takes: bool, int (also for
    DATE/TIME/TIMESTAMP, in the Arrow unit), float, str, bytes, quantized Decimal, lists, lists of
    (key, value) tuples, and dicts for rows. What is accepted and the messages are
    :mod:`values`'; raises its BadValue.
    """
    r = dt.root
    if r == T.BOOLEAN:
        def conv(v):
            if v is True or v is False:
                return v
            return V.as_bool(v, dt)
        return conv
    if r in INT_RANGES:
        lo, hi = INT_RANGES[r]

        def conv(v):
            if type(v) is int and lo <= v <= hi:
                return v
            return V.as_int(v, dt)
        return conv
    if r in (T.FLOAT, T.DOUBLE):
        def conv(v):
            if type(v) is float:
                return v
            return V.as_float(v, dt)
        return conv
    if r in (T.STRING, T.CHAR):
        def conv(v):
            if type(v) is str and v.isascii():
                return v
            return V.as_str(v, dt)
        return conv
    if r in (T.BYTES, T.BINARY):
        width = dt.length if r == T.BINARY else -1

        def conv(v):
            if type(v) is not bytes:
                v = V.as_bytes(v, dt)
            return v if width < 0 or len(v) == width else V.binary_width(v, dt)
        return conv
    if r == T.DECIMAL:
        s = dt.scale
        make = _decimal.Decimal

        def conv(v):
            return make(f"{V.decimal_unscaled(v, dt)}E-{s}")
        return conv
    if r == T.DATE:
        def conv(v):
            if type(v) is _dt.date:
                return v.toordinal() - _EPOCH_ORDINAL
            return V.date_days(v, dt)
        return conv
    if r == T.TIME:
        scale = _time_scale(dt.precision)

        def conv(v):
            return scale(V.time_millis(v, dt))
        return conv
    if r == T.TIMESTAMP:
        return _timestamp_converter(dt, False)
    if r == T.TIMESTAMP_LTZ:
        return _timestamp_converter(dt, True)
    if r == T.ARRAY:
        elem = _nullable_converter(dt.element, "array element")

        def conv(v):
            return [elem(x) for x in V.as_sequence(v)]
        return conv
    if r == T.MAP:
        kconv = _nullable_converter(dt.key.with_nullable(False), "map key")
        vconv = _nullable_converter(dt.value, "map value")

        def conv(v):
            return [(kconv(k), vconv(x)) for k, x in V.map_items(v)]
        return conv
    if r == T.ROW:
        names = [f.name for f in dt.fields]
        types = [f.type for f in dt.fields]
        convs = [converter_for(t) for t in types]
        name_set = set(names)

        def conv(v):
            vals = V.row_values(v, names, name_set, types)
            out = {}
            for i, n in enumerate(names):
                x = vals[i]
                if x is not None:
                    try:
                        x = convs[i](x)
                    except BadValue as exc:
                        raise V.in_field(exc, n) from None
                out[n] = x
            return out
        return conv
    raise ValueError(f"no converter for type {r}")


def _nullable_converter(dt: DataType, what: str) -> Callable:
    inner = converter_for(dt)
    if dt.nullable:
        return lambda v: None if v is None else inner(v)

    def conv(v):
        if v is None:
            raise V.not_null(what, dt)
        return inner(v)
    return conv


def _value_size(v) -> int:
    """Rough Arrow size of a converted nested value, for batch-size accounting only."""
    if isinstance(v, (str, bytes)):
        return len(v) + 4
    if isinstance(v, list):
        return 4 + sum(_value_size(x) for x in v)
    if isinstance(v, tuple):
        return sum(_value_size(x) for x in v)
    if isinstance(v, dict):
        return sum(_value_size(x) for x in v.values())
    return 8


class RowBatchBuilder:
    """Accumulates validated rows of one table; ``build()`` returns them as a RecordBatch."""

    def __init__(self, schema: SchemaInfo, table_name: str) -> None:
        self.schema = schema
        self.table_name = table_name
        self.arrow_schema = schema.to_arrow()
        cols = schema.columns
        self._names = [c.name for c in cols]
        self._index = {c.name: i for i, c in enumerate(cols)}
        self._types = [c.type for c in cols]
        self._arrow_types = [f.type for f in self.arrow_schema]
        self._nullable = [c.type.nullable for c in cols]
        self._convs = [converter_for(c.type) for c in cols]
        self._var = [c.type.root in (T.STRING, T.CHAR, T.BYTES) for c in cols]
        self._nested = [c.type.is_nested for c in cols]
        self._row_width = sum(fixed_width_of(t) for t in self._types) + (len(cols) + 7) // 8
        self._ncols = len(cols)
        self._reset()

    def _reset(self) -> None:
        self._cols: list[list] = [[] for _ in range(self._ncols)]
        self._rows = 0
        self._size = 0

    def __len__(self) -> int:
        return self._rows

    @property
    def estimated_size(self) -> int:
        """Approximate uncompressed Arrow bytes of the rows so far."""
        return self._size

    def _fail(self, col: int, row_index: int, msg: str) -> FlussError:
        return FlussError(f"table '{self.table_name}', column '{self._names[col]}' "
                          f"({self._types[col]}), row {row_index}: {msg}")

    def _row_error(self, row_index: int, msg: str) -> FlussError:
        return FlussError(f"table '{self.table_name}', row {row_index}: {msg}")

    def append(self, row, row_index: int = -1) -> int:
        """Validates and adds one row; returns the estimated batch size so far.

        ``row_index`` (default: the row's position in this batch) is what errors report.
        """
        if row_index < 0:
            row_index = self._rows
        values = self._row_values(row, row_index)
        converted = [None] * self._ncols
        size = self._row_width
        for i, v in enumerate(values):
            if v is None:
                if not self._nullable[i]:
                    raise self._fail(i, row_index, "column is NOT NULL but got None")
                continue
            try:
                c = self._convs[i](v)
            except BadValue as exc:
                raise self._fail(i, row_index, str(exc)) from None
            converted[i] = c
            if self._var[i]:
                size += 4 + (len(c) if type(c) is bytes or c.isascii() else len(c.encode("utf-8")))
            elif self._nested[i]:
                size += _value_size(c)
        for col, c in zip(self._cols, converted, strict=True):
            col.append(c)
        self._rows += 1
        self._size += size
        return self._size

    def extend(self, rows) -> int:
        """Appends every row (errors name the row's index in ``rows``); returns the size so far."""
        for i, row in enumerate(rows):
            self.append(row, i)
        return self._size

    def _row_values(self, row, row_index: int) -> list:
        n = self._ncols
        if isinstance(row, dict):
            found = 0
            values = [None] * n
            for i, name in enumerate(self._names):
                if name in row:
                    values[i] = row[name]
                    found += 1
                elif not self._nullable[i]:
                    raise self._fail(i, row_index, "missing value for NOT NULL column")
            if found != len(row):
                for k in row:
                    if k not in self._index:
                        if not isinstance(k, str):
                            raise self._row_error(row_index, f"dict keys must be column names "
                                                             f"(str), got {describe_value(k)}")
                        raise self._row_error(row_index, f"unknown column '{k}'; expected: "
                                                         f"{', '.join(self._names)}")
            return values
        if isinstance(row, (list, tuple)):
            if len(row) != n:
                raise self._row_error(row_index, f"expected {n} values "
                                                 f"({', '.join(self._names)}), got {len(row)}")
            return row
        raise self._row_error(row_index, f"a row must be a dict, list or tuple, "
                                         f"got {describe_value(row)}")

    def build(self) -> pa.RecordBatch:
        """The rows appended so far as a RecordBatch of the table's Arrow schema; then resets."""
        arrays = []
        for i, col in enumerate(self._cols):
            try:
                arrays.append(pa.array(col, type=self._arrow_types[i]))
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
                raise FlussError(f"table '{self.table_name}', column '{self._names[i]}': "
                                 f"cannot build the Arrow column: {exc}") from None
        rb = pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)
        self._reset()
        return rb

    def reset(self) -> None:
        """Drops the rows appended so far."""
        self._reset()


RowBatchBuilder_py = RowBatchBuilder

pick("_columns", globals(), ["RowBatchBuilder"])
