"""The aggregate functions of the AGGREGATION merge engine, one per non-key column (Java's
``FieldAggregator`` family). A column without a function keeps the last non-null value."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..datatypes import Column
from ..error_codes import Errors
from ..errors import FlussError

Aggregator = Callable[[Any, Any], Any]


def _agg_name(column: Column) -> str:
    fn = column.agg_function
    if fn is None:
        return "last_value_ignore_nulls"
    name = (fn.get("name") or fn.get("type") or fn.get("function") or "") if isinstance(fn, dict) else str(fn)
    return str(name).strip().lower()


def _agg_delimiter(column: Column) -> str:
    fn = column.agg_function
    if isinstance(fn, dict):
        params = fn.get("params") or fn.get("parameters") or {}
        if isinstance(params, dict) and "delimiter" in params:
            return str(params["delimiter"])
    return ","


def aggregator(column: Column) -> Aggregator:
    """``fn(acc, value) -> new acc`` for one aggregation column (both may be None)."""
    name = _agg_name(column)

    def ignoring_nulls(f):
        def g(acc, v):
            if v is None:
                return acc
            if acc is None:
                return v
            return f(acc, v)
        return g

    if name == "sum":
        return ignoring_nulls(lambda a, v: a + v)
    if name == "product":
        return ignoring_nulls(lambda a, v: a * v)
    if name == "max":
        return ignoring_nulls(lambda a, v: v if v > a else a)
    if name == "min":
        return ignoring_nulls(lambda a, v: v if v < a else a)
    if name == "last_value":
        return lambda a, v: v
    if name == "last_value_ignore_nulls":
        return lambda a, v: a if v is None else v
    if name == "first_value":
        return lambda a, v: a
    if name == "first_value_ignore_nulls":
        return lambda a, v: v if a is None else a
    if name in ("listagg", "string_agg"):
        sep = _agg_delimiter(column)
        return ignoring_nulls(lambda a, v: f"{a}{sep}{v}")
    if name == "bool_and":
        return ignoring_nulls(lambda a, v: bool(a and v))
    if name == "bool_or":
        return ignoring_nulls(lambda a, v: bool(a or v))
    raise FlussError(f"Aggregation function '{name}' of column '{column.name}' is not supported by this server",
                     Errors.INVALID_CONFIG_EXCEPTION)
