"""Spark's pushed filters -> partition pruning and fluss_fast's exact scan predicates.

A filter is claimed (not handed back to Spark) only when we apply it exactly:
* on partition-key columns: evaluated against every partition's values at planning, so the
  partitions that cannot match are never read;
* on other columns of a log table: turned into a ``fluss_fast.client.predicate`` predicate, which
  the server uses to skip whole batches and the scanner then applies row by row (three-valued
  logic, the same as Spark's WHERE).
Anything else (TIME columns, which Spark sees as integers; nested columns; literals whose type
does not fit the column) stays with Spark.
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any

from .. import datatypes as T
from ..client.predicate import Predicate, bind_predicate, col
from ..errors import FlussError

# FLOAT stays with Spark: it compares float columns after widening them to double, and a float32
# literal's double value would not round-trip through the predicate exactly
_PUSHABLE_ROOTS = {T.BOOLEAN, T.TINYINT, T.SMALLINT, T.INTEGER, T.BIGINT, T.DOUBLE, T.CHAR,
                   T.STRING, T.DECIMAL, T.DATE, T.BYTES, T.BINARY, T.TIMESTAMP, T.TIMESTAMP_LTZ}
_PARTITION_VALUE_ROOTS = {T.STRING, T.CHAR, T.TINYINT, T.SMALLINT, T.INTEGER, T.BIGINT, T.BOOLEAN}


def _column(schema: T.SchemaInfo, attribute: tuple[str, ...]) -> str | None:
    if len(attribute) != 1:
        return None
    name = attribute[0]
    if name in schema.names:
        return name
    lower = [n for n in schema.names if n.lower() == name.lower()]
    return lower[0] if len(lower) == 1 else None


def _literal_fits(root: str, value: Any) -> bool:
    if value is None:
        return False
    if root == T.TIMESTAMP:
        return isinstance(value, _dt.datetime) and value.tzinfo is None
    if root == T.TIMESTAMP_LTZ:
        return isinstance(value, _dt.datetime) and value.tzinfo is not None
    return True


# -- Spark filter -> Predicate ------------------------------------------------------------------------
def to_predicate(f, schema: T.SchemaInfo) -> Predicate | None:
    """The fluss predicate exactly equivalent to Spark filter ``f``, or None."""
    from pyspark.sql import datasource as ds

    if isinstance(f, ds.Not):
        child = f.child
        name = _column(schema, getattr(child, "attribute", ()))
        if name is None or not _pushable(schema, name):
            return None
        root = schema.columns[schema.index_of(name)].type.root
        if isinstance(child, ds.EqualTo) and _literal_fits(root, child.value):
            return col(name).not_equal(child.value)
        if isinstance(child, ds.In) and child.value and all(_literal_fits(root, v) for v in child.value):
            return col(name).not_in(list(child.value))
        if isinstance(child, ds.IsNull):
            return col(name).is_not_null()
        if isinstance(child, ds.IsNotNull):
            return col(name).is_null()
        if isinstance(child, ds.EqualNullSafe):
            if child.value is None:
                return col(name).is_not_null()
            if _literal_fits(root, child.value):
                return col(name).not_equal(child.value) | col(name).is_null()
        return None
    name = _column(schema, getattr(f, "attribute", ()))
    if name is None or not _pushable(schema, name):
        return None
    root = schema.columns[schema.index_of(name)].type.root
    c = col(name)
    if isinstance(f, ds.IsNull):
        return c.is_null()
    if isinstance(f, ds.IsNotNull):
        return c.is_not_null()
    if isinstance(f, ds.EqualNullSafe):
        if f.value is None:
            return c.is_null()
        return c.equal(f.value) if _literal_fits(root, f.value) else None
    if isinstance(f, ds.In):
        values = list(f.value)
        return c.is_in(values) if values and all(_literal_fits(root, v) for v in values) else None
    if not _literal_fits(root, getattr(f, "value", None)):
        return None
    makers: dict[type, Callable] = {
        ds.EqualTo: c.equal, ds.GreaterThan: c.greater_than, ds.GreaterThanOrEqual: c.greater_or_equal,
        ds.LessThan: c.less_than, ds.LessThanOrEqual: c.less_or_equal,
    }
    if root in (T.STRING, T.CHAR):
        makers.update({ds.StringStartsWith: c.starts_with, ds.StringEndsWith: c.ends_with,
                       ds.StringContains: c.contains})
    make = makers.get(type(f))
    return make(f.value) if make is not None else None


def _pushable(schema: T.SchemaInfo, name: str) -> bool:
    return schema.columns[schema.index_of(name)].type.root in _PUSHABLE_ROOTS


def binds(pred: Predicate, schema: T.SchemaInfo, schema_id: int) -> bool:
    """Whether the scanner accepts ``pred`` (its literal checks are the client's)."""
    try:
        bind_predicate(pred, schema, schema_id)
        return True
    except (FlussError, TypeError, ValueError, OverflowError):
        return False


# -- partition pruning ----------------------------------------------------------------------------
def _partition_value(dt: T.DataType, text: str):
    r = dt.root
    if r in (T.STRING, T.CHAR):
        return text
    if r == T.BOOLEAN:
        return text.lower() == "true"
    return int(text)


def partition_filter(f, schema: T.SchemaInfo, partition_keys) -> Callable[[dict[str, str]], bool] | None:
    """A test of one partition's spec for Spark filter ``f`` if ``f`` only reads a partition key
    whose values we can compare exactly, else None."""
    from pyspark.sql import datasource as ds

    negate = isinstance(f, ds.Not)
    leaf = f.child if negate else f
    name = _column(schema, getattr(leaf, "attribute", ()))
    if name is None or name not in partition_keys:
        return None
    dt = schema.columns[schema.index_of(name)].type
    if dt.root not in _PARTITION_VALUE_ROOTS:
        return None
    value = getattr(leaf, "value", None)
    if isinstance(leaf, ds.In):
        if any(v is None for v in value):
            return None
    elif isinstance(leaf, (ds.IsNull, ds.IsNotNull)):
        pass
    elif value is None:
        return None
    ops: dict[type, Callable[[Any, Any], bool]] = {
        ds.EqualTo: lambda a, b: a == b, ds.EqualNullSafe: lambda a, b: a == b,
        ds.GreaterThan: lambda a, b: a > b, ds.GreaterThanOrEqual: lambda a, b: a >= b,
        ds.LessThan: lambda a, b: a < b, ds.LessThanOrEqual: lambda a, b: a <= b,
        ds.In: lambda a, b: a in b,
        ds.IsNull: lambda a, b: False, ds.IsNotNull: lambda a, b: True,  # partition values are never null
        ds.StringStartsWith: lambda a, b: isinstance(a, str) and a.startswith(b),
        ds.StringEndsWith: lambda a, b: isinstance(a, str) and a.endswith(b),
        ds.StringContains: lambda a, b: isinstance(a, str) and b in a,
    }
    op = ops.get(type(leaf))
    if op is None:
        return None

    def test(spec: dict[str, str]) -> bool:
        text = spec.get(name)
        if text is None:
            return True  # unknown: keep the partition
        try:
            v = _partition_value(dt, text)
            result = op(v, value)
        except (TypeError, ValueError):
            return True
        return not result if negate else result

    return test


def split_filters(filters: list, schema: T.SchemaInfo, schema_id: int, partition_keys,
                  predicates_allowed: bool) -> tuple[list, list[Callable], Predicate | None]:
    """(filters left to Spark, partition tests, the combined scan predicate or None)."""
    rest, tests, preds = [], [], []
    for f in filters:
        test = partition_filter(f, schema, partition_keys)
        if test is not None:
            tests.append(test)
            continue
        pred = to_predicate(f, schema) if predicates_allowed else None
        if pred is not None and binds(pred, schema, schema_id):
            preds.append(pred)
            continue
        rest.append(f)
    combined = None
    for p in preds:
        combined = p if combined is None else combined & p
    return rest, tests, combined
