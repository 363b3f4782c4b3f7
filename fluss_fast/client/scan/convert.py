"""Arrow columns -> the Python values pyfluss's row path produces.

pyarrow's ``to_pylist`` already yields the same shapes for almost every type (ints, floats, str,
bytes, Decimal with its scale, date, time, naive datetime, list, list of (key, value) tuples for
MAP, dict for ROW). Two differ and are converted here, at any nesting depth:

* TIMESTAMP_LTZ comes back tz-aware in ``datetime.timezone.utc`` (pyarrow would attach a ZoneInfo);
* nanosecond timestamps come back as ``datetime`` truncated to microseconds (pyarrow would build
  pandas Timestamps).
"""
from __future__ import annotations

import datetime as _dt

import pyarrow as pa

from ...codec._select import pick as _pick

__all__ = ["column_to_pylist", "needs_custom"]

_UTC = _dt.UTC
_custom_cache: dict = {}


def needs_custom(t: pa.DataType) -> bool:
    hit = _custom_cache.get(t)
    if hit is not None:
        return hit
    T = pa.types
    if T.is_timestamp(t):
        out = t.tz is not None or t.unit == "ns"
    elif T.is_map(t):
        out = needs_custom(t.key_type) or needs_custom(t.item_type)
    elif T.is_list(t) or T.is_large_list(t) or T.is_fixed_size_list(t):
        out = needs_custom(t.value_type)
    elif T.is_struct(t):
        out = any(needs_custom(t.field(i).type) for i in range(t.num_fields))
    else:
        out = False
    _custom_cache[t] = out
    return out


def _timestamps(arr: pa.Array) -> list:
    t = arr.type
    if t.unit == "ns":
        import pyarrow.compute as pc

        # Floor to microseconds as pyfluss does (its nanos-of-milli part is never negative).
        raw = arr.view(pa.int64())
        q = pc.divide(raw, 1000)
        behind = pc.and_(pc.less(raw, 0), pc.not_equal(pc.multiply(q, 1000), raw))
        q = pc.subtract(q, behind.cast(pa.int64()))
        naive = q.view(pa.timestamp("us"))
    else:
        naive = arr.view(pa.timestamp(t.unit)) if t.tz is not None else arr
    values = naive.to_pylist()
    if t.tz is None:
        return values
    return [None if v is None else v.replace(tzinfo=_UTC) for v in values]


_MIN_US = -62135596800_000_000   # 0001-01-01T00:00:00
_MAX_US = 253402300799_999_999   # 9999-12-31T23:59:59.999999
_US_PER = {"s": 1_000_000, "ms": 1000, "us": 1}


def _fast_timestamps(arr: pa.Array):
    """Naive datetimes via numpy (pyarrow's per-value conversion is ~20x slower); None if some
    value lies outside datetime's range (then pyarrow's conversion, which copes, is used)."""
    import pyarrow.compute as pc

    t = arr.type
    raw = arr.view(pa.int64())
    if t.unit == "ns":
        q = pc.divide(raw, 1000)
        behind = pc.and_(pc.less(raw, 0), pc.not_equal(pc.multiply(q, 1000), raw))
        raw = pc.subtract(q, behind.cast(pa.int64()))
        scale = 1
    else:
        scale = _US_PER[t.unit]
    mm = pc.min_max(raw)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is not None and (lo * scale < _MIN_US or hi * scale > _MAX_US):
        return None
    us = raw.to_numpy(zero_copy_only=False) if raw.null_count == 0 else \
        raw.fill_null(0).to_numpy(zero_copy_only=False)
    if scale != 1:
        us = us * scale
    out = us.astype("datetime64[us]").tolist()
    if raw.null_count:
        for i, ok in enumerate(raw.is_valid().to_pylist()):
            if not ok:
                out[i] = None
    return out


def _flat_temporal(arr: pa.Array):
    """Python values of a flat DATE / TIME / TIMESTAMP / DECIMAL column, or None to fall back."""
    T = pa.types
    t = arr.type
    if T.is_timestamp(t):
        naive = arr.view(pa.timestamp(t.unit)) if t.tz is not None else arr
        values = _fast_timestamps(naive)
        if values is None:
            return None
        if t.tz is None:
            return values
        return attach_utc(values)
    if T.is_date32(t):
        days = arr.view(pa.int32())
        d = days.fill_null(0).to_numpy(zero_copy_only=False) if days.null_count else \
            days.to_numpy(zero_copy_only=False)
        out = d.astype("datetime64[D]").tolist()
        if days.null_count:
            for i, ok in enumerate(days.is_valid().to_pylist()):
                if not ok:
                    out[i] = None
        return out
    if T.is_decimal(t):
        import decimal

        import pyarrow.compute as pc

        dec = decimal.Decimal
        # Arrow's cast to text plus Decimal(str) measured cheaper than Decimal(int).scaleb() from
        # the raw 128-bit words (two Decimal objects per value); map() skips a Python frame per value.
        text = pc.cast(arr, pa.string()).to_pylist()
        if not arr.null_count:
            return list(map(dec, text))
        return [None if s is None else dec(s) for s in text]
    if T.is_time(t):
        import numpy as np

        unit_us = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": None}[t.unit]
        raw = arr.view(pa.int32() if t.bit_width == 32 else pa.int64())
        vals = raw.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        us = vals // 1000 if unit_us is None else vals * unit_us
        dts = us.astype("datetime64[us]").tolist()
        valid = raw.is_valid().to_pylist() if raw.null_count else None
        return [None if valid is not None and not valid[i] else v.time() for i, v in enumerate(dts)]
    return None


_FLAT_SLOW = (pa.types.is_timestamp, pa.types.is_date32, pa.types.is_decimal, pa.types.is_time)


def column_to_pylist(arr) -> list:
    """Python values of one column (``pa.Array`` or ``pa.ChunkedArray``)."""
    if isinstance(arr, pa.ChunkedArray):
        out: list = []
        for chunk in arr.chunks:
            out.extend(column_to_pylist(chunk))
        return out
    if len(arr) and any(f(arr.type) for f in _FLAT_SLOW):
        values = _flat_temporal(arr)
        if values is not None:
            return values
    t = arr.type
    if not needs_custom(t):
        return arr.to_pylist()
    T = pa.types
    if T.is_timestamp(t):
        return _timestamps(arr)
    valid = arr.is_valid().to_pylist() if arr.null_count else None
    if T.is_map(t):
        offs = arr.offsets.to_pylist()
        keys = column_to_pylist(arr.keys)
        items = column_to_pylist(arr.items)
        out = []
        for i in range(len(arr)):
            if valid is not None and not valid[i]:
                out.append(None)
            else:
                a, b = offs[i], offs[i + 1]
                out.append(list(zip(keys[a:b], items[a:b], strict=True)))
        return out
    if T.is_list(t) or T.is_large_list(t):
        offs = arr.offsets.to_pylist()
        vals = column_to_pylist(arr.values)
        return [None if valid is not None and not valid[i] else vals[offs[i]:offs[i + 1]]
                for i in range(len(arr))]
    if T.is_fixed_size_list(t):
        return [None if v is None else v for v in arr.to_pylist()]
    if T.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        children = [column_to_pylist(c) for c in arr.flatten()]
        out = []
        for i in range(len(arr)):
            if valid is not None and not valid[i]:
                out.append(None)
            else:
                out.append({n: c[i] for n, c in zip(names, children, strict=True)})
        return out
    return arr.to_pylist()


def attach_utc(values: list) -> list:
    """The naive datetimes of ``values`` as UTC-aware ones (None stays None), in place."""
    for i, v in enumerate(values):
        if v is not None:
            values[i] = v.replace(tzinfo=_UTC)
    return values


attach_utc_py = attach_utc
_pick("fluss_fast.client.scan._records", globals(), ["attach_utc"])
