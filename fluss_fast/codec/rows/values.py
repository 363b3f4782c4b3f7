"""The Python value model: which Python values a Fluss type accepts, what they mean, and the words
used to refuse the others.

Every writer goes through here — the Arrow builders of appends (``columns``, ``_columns``), the
CompactedRow / IndexedRow encoders of upserts and row-format logs (``compacted``, ``indexed`` and
``_rows``), the key encoders — so that ``append()`` and ``upsert()`` accept and reject the same
values with the same message. The compiled builders convert the common exact types themselves and
hand every other value to these functions, which then either convert it or raise.

Each ``as_*`` function takes a non-None value and the column's ``datatypes.DataType`` and returns a
plain primitive (int, float, str, bytes, unscaled int, epoch days / millis / micros); the callers
turn that into Arrow storage or row bytes. Format limits (a nanosecond Arrow timestamp past 2262,
a BINARY(n) value of other than n bytes in an Arrow column, a CHAR longer than an IndexedRow's
fixed slot) stay with the format that has them, using the messages defined here.

Errors: :class:`BadValue` (a ``ValueError``: out of range, NULL in a NOT NULL place) and
:class:`WrongType` (also a ``TypeError``: the wrong kind of value). Messages name the value and the
type; callers add the table, column and row.
"""
from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import operator
from collections.abc import Sequence
from collections.abc import Sequence as _SequenceABC
from typing import Any

from ... import datatypes as T

try:  # numpy comes with pyarrow, but the codecs must not require it
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None

__all__ = ["BadValue", "WrongType", "describe_value", "INT_RANGES", "INT_NAMES", "EPOCH_ORDINAL",
           "EPOCH", "EPOCH_UTC", "not_null", "as_bool", "as_int", "as_float", "as_str", "utf8",
           "as_bytes", "binary_width", "decimal_unscaled", "date_days", "time_millis", "timestamp_micros",
           "aware_for_ntz", "as_sequence", "map_items", "row_values", "in_field"]


class BadValue(ValueError):
    """A value a column cannot hold; the builder adds table, column and row to the message."""


class WrongType(BadValue, TypeError):
    """The wrong kind of value for the type (a str for an INT, a datetime for a DATE...)."""


INT_RANGES = {
    T.TINYINT: (-(1 << 7), (1 << 7) - 1),
    T.SMALLINT: (-(1 << 15), (1 << 15) - 1),
    T.INTEGER: (-(1 << 31), (1 << 31) - 1),
    T.BIGINT: (-(1 << 63), (1 << 63) - 1),
}
INT_NAMES = {T.TINYINT: "TINYINT", T.SMALLINT: "SMALLINT", T.INTEGER: "INT", T.BIGINT: "BIGINT"}

EPOCH_ORDINAL = 719163  # date(1970, 1, 1).toordinal()
EPOCH = _dt.datetime(1970, 1, 1)
EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_POW10 = tuple(10 ** i for i in range(40))


def describe_value(v: Any) -> str:
    r = repr(v)
    if len(r) > 80:
        r = r[:77] + "..."
    return f"{type(v).__name__} {r}"


def not_null(what: str, dt) -> BadValue:
    """The error for None where ``dt`` is NOT NULL (``what``: "array element", "row field 'x'"...)."""
    return BadValue(f"{what} is NOT NULL ({dt}) but got None")


def _is_np_bool(v) -> bool:
    t = type(v)
    return t.__module__ == "numpy" and t.__name__ in ("bool_", "bool")


def as_bool(v, dt) -> bool:
    if v is True or v is False:
        return v
    if _is_np_bool(v):
        return bool(v)
    raise WrongType(f"expected bool for BOOLEAN, got {describe_value(v)}")


def as_int(v, dt) -> int:
    """An integer in the range of TINYINT..BIGINT ``dt``; bools are refused, ``__index__`` taken."""
    root = dt.root
    if v is True or v is False or _is_np_bool(v):
        raise WrongType(f"expected int for {INT_NAMES[root]}, got bool {v!r}; use 0 or 1 explicitly")
    try:
        i = operator.index(v)
    except TypeError:
        raise WrongType(f"expected int for {INT_NAMES[root]}, got {describe_value(v)}") from None
    lo, hi = INT_RANGES[root]
    if not lo <= i <= hi:
        raise BadValue(f"value {i} out of range for {INT_NAMES[root]} [{lo}, {hi}]")
    return i


def as_float(v, dt) -> float:
    if isinstance(v, float):
        return v
    if not isinstance(v, (str, bytes, bytearray)):
        try:
            return float(v)
        except (TypeError, ValueError, OverflowError):
            pass
    raise WrongType(f"expected float for {dt.root}, got {describe_value(v)}")


def as_str(v, dt) -> str:
    """A str that UTF-8 can encode (no lone surrogates)."""
    if isinstance(v, str):
        if not v.isascii():
            utf8(v, dt)
        return v
    raise WrongType(f"expected str for {dt.root}, got {describe_value(v)}")


def utf8(v, dt) -> bytes:
    """The UTF-8 bytes of a STRING / CHAR value."""
    if not isinstance(v, str):
        raise WrongType(f"expected str for {dt.root}, got {describe_value(v)}")
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadValue(f"str {v!r} is not encodable as UTF-8 ({exc.reason})") from None


def as_bytes(v, dt) -> bytes:
    """The bytes of a BYTES / BINARY value (how many a BINARY(n) holds is the format's rule: an
    Arrow column needs exactly n, see :func:`binary_width`; row formats take what Java takes)."""
    if isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise WrongType(f"expected bytes or bytearray for {_bytes_name(dt)}, got {describe_value(v)}")


def binary_width(b: bytes, dt) -> bytes:
    """``b`` if it has exactly the n bytes of BINARY(n) ``dt`` (Arrow's fixed-size binary)."""
    if len(b) != dt.length:
        raise BadValue(f"{_bytes_name(dt)} needs exactly {dt.length} bytes, got {len(b)}")
    return b


def _bytes_name(dt) -> str:
    return f"BINARY({dt.length})" if dt.root == T.BINARY else "BYTES"


def decimal_unscaled(v, dt) -> int:
    """The unscaled value of ``v`` at the column's scale, rounded HALF_UP like Java's
    ``BigDecimal.setScale``, with at most ``precision`` digits. Takes Decimal and int (not bool)."""
    p, s = dt.precision, dt.scale
    if isinstance(v, _decimal.Decimal):
        if not v.is_finite():
            raise BadValue(f"{v} cannot be stored in DECIMAL({p}, {s})")
        adjusted = v.adjusted()
        if adjusted > 40:  # refused before building a huge integer
            raise _too_many_digits(v, p, s)
        if adjusted < -80:  # rounds to zero at any scale <= 38
            return 0
        # as_integer_ratio is exact and several times faster than decimal arithmetic
        num, den = v.as_integer_ratio()
        m = num * _POW10[s]
        if den == 1:
            u = m
        else:
            q, r = divmod(-m if m < 0 else m, den)
            if r + r >= den:
                q += 1
            u = -q if m < 0 else q
    elif isinstance(v, int) and not isinstance(v, bool):
        u = int(v) * _POW10[s]
    else:
        raise WrongType(f"expected decimal.Decimal for DECIMAL({p}, {s}), got {describe_value(v)}")
    limit = _POW10[p] if p < 40 else 10 ** p
    if -limit < u < limit:
        return u
    raise _too_many_digits(v, p, s)


def _too_many_digits(v, p: int, s: int) -> BadValue:
    return BadValue(f"decimal {v} needs more than {p} digits of precision for DECIMAL({p}, {s})")


def date_days(v, dt) -> int:
    """Days since 1970-01-01 of a ``datetime.date`` (a datetime is refused: it is not a date)."""
    if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
        return v.toordinal() - EPOCH_ORDINAL
    if isinstance(v, _dt.datetime):
        raise WrongType(f"expected datetime.date for DATE, got datetime.datetime ({v}); "
                        f"use a TIMESTAMP column for datetime values")
    raise WrongType(f"expected datetime.date for DATE, got {describe_value(v)}")


def time_millis(v, dt) -> int:
    """Milliseconds of the day of a ``datetime.time`` with whole milliseconds."""
    if not isinstance(v, _dt.time):
        raise WrongType(f"expected datetime.time for TIME, got {describe_value(v)}")
    us = v.microsecond
    if us % 1000:
        raise BadValue(f"TIME value {v} has sub-millisecond precision; Fluss stores "
                       f"milliseconds of the day, round it first")
    return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + us // 1000


def _is_pandas_timestamp(v) -> bool:
    t = type(v)
    return t.__name__ == "Timestamp" and t.__module__.startswith("pandas")


def _label(ltz: bool) -> str:
    return "TIMESTAMP_LTZ" if ltz else "TIMESTAMP"


def aware_for_ntz(v) -> WrongType:
    """The error for a tz-aware datetime given to a TIMESTAMP (without time zone) column."""
    return WrongType(f"TIMESTAMP needs a naive datetime, got a tz-aware one ({v}); remove "
                     f"tzinfo or use a TIMESTAMP_LTZ column")


def timestamp_micros(v, ltz: bool) -> tuple[int, int]:
    """(epoch micros, nanos within the micro) of a TIMESTAMP (``ltz`` False: wall-clock time, a
    tz-aware value is refused) or TIMESTAMP_LTZ value (an instant; naive values are taken as UTC).

    Takes ``datetime.datetime``, ``pandas.Timestamp``, ``numpy.datetime64`` and objects with
    ``to_pydatetime()``. A datetime whose ``utcoffset()`` is None counts as naive.
    """
    if isinstance(v, _dt.datetime):
        if _is_pandas_timestamp(v):
            if v.tz is not None and not ltz:
                raise WrongType(f"TIMESTAMP needs a naive pandas.Timestamp, got a tz-aware one "
                                f"({v}); use tz_localize(None) or a TIMESTAMP_LTZ column")
            ns = v.value  # epoch nanos (UTC for aware, wall clock for naive)
            return ns // 1000, ns % 1000
        if v.tzinfo is None:
            d = v - EPOCH
        elif v.utcoffset() is None:
            d = v.replace(tzinfo=None) - EPOCH
        elif not ltz:
            raise aware_for_ntz(v)
        else:
            d = v - EPOCH_UTC
        return (d.days * 86400 + d.seconds) * 1000000 + d.microseconds, 0
    if _np is not None and isinstance(v, _np.datetime64) and not _np.isnat(v):
        ns = int(v.astype("datetime64[ns]").astype("int64"))
        return ns // 1000, ns % 1000
    to_py = getattr(v, "to_pydatetime", None)
    if to_py is not None and not isinstance(v, type):
        try:
            d = to_py()
        except Exception as exc:  # noqa: BLE001 - report any conversion failure as a bad value
            raise BadValue(f"{_label(ltz)} cannot use {describe_value(v)}: {exc}") from None
        if isinstance(d, _dt.datetime):
            return timestamp_micros(d, ltz)
    raise WrongType(f"expected {'' if ltz else 'naive '}datetime.datetime or pandas.Timestamp "
                    f"for {_label(ltz)}, got {describe_value(v)}")


def as_sequence(v) -> Sequence:
    """An ARRAY value: list, tuple, other sequences (not str/bytes) and numpy arrays."""
    if isinstance(v, (list, tuple)):
        return v
    if isinstance(v, (str, bytes, bytearray)) or not (isinstance(v, _SequenceABC) or hasattr(v, "tolist")):
        raise WrongType(f"Expected sequence for Array column, got {describe_value(v)}")
    return v.tolist() if hasattr(v, "tolist") else list(v)


def map_items(v) -> Sequence:
    """A MAP value as (key, value) pairs: a dict, or a sequence of 2-item lists/tuples."""
    if isinstance(v, dict):
        return list(v.items())
    if isinstance(v, (str, bytes, bytearray)) or not isinstance(v, (list, tuple, _SequenceABC)):
        raise WrongType(f"expected dict or list of (key, value) pairs for MAP, got {describe_value(v)}")
    for pair in v:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise WrongType(f"MAP entries must be (key, value) pairs, got {describe_value(pair)}")
    return v


def row_values(v, names: Sequence[str], name_set, types: Sequence) -> list:
    """A ROW value as field values by position: a dict by field name (a missing field is null)
    or a list/tuple of exactly one value per field; NULL is refused where a field is NOT NULL."""
    if isinstance(v, dict):
        for k in v:
            if k not in name_set:
                if not isinstance(k, str):
                    raise WrongType(f"ROW field names must be str, got {describe_value(k)}")
                raise BadValue(f"unknown ROW field '{k}'; expected: {', '.join(names)}")
        out = []
        for i, n in enumerate(names):
            if n in v:
                out.append(v[n])
            elif not types[i].nullable:
                raise BadValue(f"Missing value for non-nullable row field '{n}'")
            else:
                out.append(None)
    elif isinstance(v, (list, tuple)):
        if len(v) != len(names):
            raise BadValue(f"expected {len(names)} ROW fields, got {len(v)}")
        out = v
    else:
        raise WrongType(f"expected dict, list or tuple for ROW, got {describe_value(v)}")
    for i, x in enumerate(out):
        if x is None and not types[i].nullable:
            raise not_null(f"row field '{names[i]}'", types[i])
    return out


def in_field(exc: BadValue, name: str) -> BadValue:
    """``exc`` said of the nested ROW field ``name``."""
    return type(exc)(f"field '{name}': {exc}")
