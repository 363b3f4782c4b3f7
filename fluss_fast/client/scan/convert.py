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
from typing import List

import pyarrow as pa

__all__ = ["column_to_pylist", "needs_custom"]

_UTC = _dt.timezone.utc
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


def column_to_pylist(arr) -> List:
    """Python values of one column (``pa.Array`` or ``pa.ChunkedArray``)."""
    if isinstance(arr, pa.ChunkedArray):
        out: list = []
        for chunk in arr.chunks:
            out.extend(column_to_pylist(chunk))
        return out
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
                out.append(list(zip(keys[a:b], items[a:b])))
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
                out.append({n: c[i] for n, c in zip(names, children)})
        return out
    return arr.to_pylist()
