"""Filter predicates for log scans: ``col("id") >= 200``, combined with ``&`` and ``|``.

The user-facing objects mirror pyfluss (same constructors, same repr). A predicate is bound to a
table schema when it is handed to ``TableScan.filter``: binding checks every column and literal
(the checks and messages of the Rust client), and the bound form does two jobs:

* ``to_pb()`` builds the ``PbPredicate`` sent with FetchLog so the server may skip whole batches;
* ``mask(batch)`` evaluates it exactly on a decoded Arrow batch with pyarrow.compute, because
  server-side pruning only ever narrows the answer to a superset of the matching rows.

Evaluation follows SQL three-valued logic: a comparison involving a null is unknown, unknown rows
are dropped, and ``&``/``|`` use Kleene logic.
"""
from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from collections.abc import Sequence
from typing import Any

from ..errors import FlussError

__all__ = ["col", "ColumnRef", "Predicate", "BoundPredicate", "bind_predicate"]

# Leaf function codes on the wire (docs/contributing/protocol.md §3.8), also our internal function ids.
EQUAL, NOT_EQUAL, LESS_THAN, LESS_OR_EQUAL, GREATER_THAN, GREATER_OR_EQUAL = range(6)
IS_NULL, IS_NOT_NULL, STARTS_WITH, CONTAINS, ENDS_WITH, IN, NOT_IN = range(6, 13)
AND, OR = 0, 1

_LEAF_NAMES = {
    EQUAL: "Equal", NOT_EQUAL: "NotEqual", LESS_THAN: "LessThan", LESS_OR_EQUAL: "LessOrEqual",
    GREATER_THAN: "GreaterThan", GREATER_OR_EQUAL: "GreaterOrEqual", IS_NULL: "IsNull",
    IS_NOT_NULL: "IsNotNull", STARTS_WITH: "StartsWith", CONTAINS: "Contains",
    ENDS_WITH: "EndsWith", IN: "In", NOT_IN: "NotIn",
}
_COMPOUND_NAMES = {AND: "And", OR: "Or"}

_SUPPORTED = ("Supported: bool, int, float, str, bytes, decimal.Decimal, datetime.date, "
              "datetime.time, datetime.datetime; use is_null()/is_not_null() for nulls")
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


# -- literals -------------------------------------------------------------------------------------
class _Literal:
    """One filter literal: ``kind`` names the Rust-side variant, ``value`` its normalized payload.

    Payloads: Null None; Bool bool; Int64 int; Float64 float; String str; Bytes bytes;
    Decimal decimal.Decimal; Date days; Time millis of day; TimestampNtz/TimestampLtz
    (millis, nano_of_milli).
    """

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value):
        self.kind = kind
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Literal) and (self.kind, self.value) == (other.kind, other.value)

    def __hash__(self):
        return hash((self.kind, self.value))

    def __repr__(self) -> str:
        k, v = self.kind, self.value
        if k == "Null":
            return "Null"
        if k == "Bool":
            return f"Bool({'true' if v else 'false'})"
        if k == "Float64":
            return f"Float64({_rust_float(v)})"
        if k == "String":
            return f"String({_rust_str(v)})"
        if k == "Bytes":
            return f"Bytes([{', '.join(str(b) for b in v)}])"
        if k == "Decimal":
            return f"Decimal({_rust_decimal(v)})"
        if k == "TimestampNtz":
            return (f"TimestampNtz(TimestampNtz {{ millisecond: {v[0]}, "
                    f"nano_of_millisecond: {v[1]} }})")
        if k == "TimestampLtz":
            return (f"TimestampLtz(TimestampLtz {{ epoch_millisecond: {v[0]}, "
                    f"nano_of_millisecond: {v[1]} }})")
        return f"{k}({v})"


def _rust_float(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    s = repr(v)
    if "e" in s:
        mant, exp = s.split("e")
        return f"{mant}e{int(exp)}"
    return s


def _rust_str(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _decimal_parts(d: _decimal.Decimal):
    """(unscaled int, precision, scale) of a finite decimal; a positive exponent becomes scale 0."""
    sign, digits, exp = d.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    if exp > 0:
        unscaled *= 10 ** exp
        exp = 0
    scale = -exp
    ndigits = len(str(unscaled))
    precision = max(ndigits, scale, 1)
    return (-unscaled if sign else unscaled), precision, scale


def _rust_decimal(d: _decimal.Decimal) -> str:
    unscaled, precision, scale = _decimal_parts(d)
    long_val = f"Some({unscaled})" if precision <= 18 else "None"
    mag = abs(unscaled)
    limbs = []
    while mag:
        limbs.append(mag & 0xFFFFFFFFFFFFFFFF)
        mag >>= 64
    sign = "NoSign" if unscaled == 0 else ("Minus" if unscaled < 0 else "Plus")
    return (f"Decimal {{ precision: {precision}, scale: {scale}, long_val: {long_val}, "
            f"decimal_val: Some(BigDecimal(sign={sign}, scale={scale}, "
            f"digits=[{', '.join(map(str, limbs))}])) }}")


def _micros_to_parts(micros: int):
    millis, rem = divmod(micros, 1000)
    return millis, rem * 1000


def _to_literal(value: Any) -> _Literal:
    if value is None:
        return _Literal("Null", None)
    if isinstance(value, bool):
        return _Literal("Bool", value)
    if isinstance(value, int):
        if not _I64_MIN <= value <= _I64_MAX:
            raise OverflowError("Python int too large to convert to C long")
        return _Literal("Int64", int(value))
    if isinstance(value, float):
        return _Literal("Float64", float(value))
    if isinstance(value, str):
        return _Literal("String", str(value))
    if isinstance(value, bytes):
        return _Literal("Bytes", bytes(value))
    if isinstance(value, _decimal.Decimal):
        if not value.is_finite():
            raise FlussError(f"Invalid decimal literal '{value}': invalid digit found in string")
        return _Literal("Decimal", value)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None and value.utcoffset() is not None:
            delta = value - _EPOCH_UTC
            micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
            return _Literal("TimestampLtz", _micros_to_parts(micros))
        delta = value.replace(tzinfo=None) - _EPOCH_NAIVE
        micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        return _Literal("TimestampNtz", _micros_to_parts(micros))
    if isinstance(value, _dt.date):
        return _Literal("Date", (value - _EPOCH_DATE).days)
    if isinstance(value, _dt.time):
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        return _Literal("Time", millis)
    raise TypeError(f"Unsupported filter literal of type '{type(value).__name__}'. {_SUPPORTED}")


# -- public predicate objects ---------------------------------------------------------------------
class Predicate:
    """A filter expression for a log scan; build one from :func:`col`, combine with ``&``/``|``."""

    __slots__ = ("_kind", "_field", "_function", "_literals", "_children")

    def __init__(self):
        raise TypeError("No constructor defined for Predicate; build one with fluss.col(...)")

    @classmethod
    def _leaf(cls, field: str, function: int, literals: list[_Literal]) -> Predicate:
        p = object.__new__(cls)
        p._kind = "leaf"
        p._field = field
        p._function = function
        p._literals = tuple(literals)
        p._children = ()
        return p

    @classmethod
    def _compound(cls, function: int, children) -> Predicate:
        p = object.__new__(cls)
        p._kind = "compound"
        p._field = None
        p._function = function
        p._literals = ()
        p._children = tuple(children)
        return p

    def _combine(self, function: int, other) -> Predicate:
        if not isinstance(other, Predicate):
            return NotImplemented
        # Chains like a & b & c flatten into one node (the left side only, as pyfluss does).
        if self._kind == "compound" and self._function == function:
            return Predicate._compound(function, self._children + (other,))
        return Predicate._compound(function, (self, other))

    def and_(self, other: Predicate) -> Predicate:
        """Both predicates must hold (also ``a & b``).

        Args:
            other: Another predicate.

        Returns:
            The combined predicate.
        """
        if not isinstance(other, Predicate):
            raise TypeError(f"argument 'other': '{type(other).__name__}' object is not an instance of 'Predicate'")
        return self._combine(AND, other)

    def or_(self, other: Predicate) -> Predicate:
        """Either predicate must hold (also ``a | b``).

        Args:
            other: Another predicate.

        Returns:
            The combined predicate.
        """
        if not isinstance(other, Predicate):
            raise TypeError(f"argument 'other': '{type(other).__name__}' object is not an instance of 'Predicate'")
        return self._combine(OR, other)

    def __and__(self, other):
        return self._combine(AND, other)

    def __or__(self, other):
        return self._combine(OR, other)

    def __bool__(self):
        raise TypeError("A Predicate has no truth value; combine them with & and |, not and/or")

    def _debug(self) -> str:
        if self._kind == "leaf":
            lits = ", ".join(repr(lit) for lit in self._literals)
            return (f"Leaf {{ field: {_rust_str(self._field)}, function: "
                    f"{_LEAF_NAMES[self._function]}, literals: [{lits}] }}")
        kids = ", ".join(c._debug() for c in self._children)
        return f"Compound {{ function: {_COMPOUND_NAMES[self._function]}, children: [{kids}] }}"

    def __repr__(self) -> str:
        return f"Predicate({self._debug()})"

    __str__ = __repr__

    def __reduce__(self):
        # Spark ships scan plans to executors: keep predicates picklable.
        return (_rebuild, (self._kind, self._field, self._function,
                           tuple((lit.kind, lit.value) for lit in self._literals), self._children))

    def _columns(self) -> set:
        if self._kind == "leaf":
            return {self._field}
        out = set()
        for c in self._children:
            out |= c._columns()
        return out


def _rebuild(kind, field, function, literals, children):
    if kind == "leaf":
        return Predicate._leaf(field, function, [_Literal(k, v) for k, v in literals])
    return Predicate._compound(function, children)


class ColumnRef:
    """A column reference: comparisons and the named methods build :class:`Predicate` leaves."""

    __slots__ = ("_name",)
    __hash__ = None  # comparisons build predicates, so a ColumnRef is not a dict key

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"argument 'name': '{type(name).__name__}' object is not an instance of 'str'")
        self._name = name

    @property
    def name(self) -> str:
        """The column name."""
        return self._name

    def _cmp(self, function: int, value) -> Predicate:
        return Predicate._leaf(self._name, function, [_to_literal(value)])

    def __eq__(self, value):  # type: ignore[override]
        return self._cmp(EQUAL, value)

    def __ne__(self, value):  # type: ignore[override]
        return self._cmp(NOT_EQUAL, value)

    def __lt__(self, value):
        return self._cmp(LESS_THAN, value)

    def __le__(self, value):
        return self._cmp(LESS_OR_EQUAL, value)

    def __gt__(self, value):
        return self._cmp(GREATER_THAN, value)

    def __ge__(self, value):
        return self._cmp(GREATER_OR_EQUAL, value)

    def equal(self, value) -> Predicate:
        """The column equals ``value`` (also ``col(name) == value``); a null never matches."""
        return self._cmp(EQUAL, value)

    def not_equal(self, value) -> Predicate:
        """The column differs from ``value`` (also ``!=``); a null never matches."""
        return self._cmp(NOT_EQUAL, value)

    def less_than(self, value) -> Predicate:
        """The column is less than ``value`` (also ``<``)."""
        return self._cmp(LESS_THAN, value)

    def less_or_equal(self, value) -> Predicate:
        """The column is at most ``value`` (also ``<=``)."""
        return self._cmp(LESS_OR_EQUAL, value)

    def greater_than(self, value) -> Predicate:
        """The column is greater than ``value`` (also ``>``)."""
        return self._cmp(GREATER_THAN, value)

    def greater_or_equal(self, value) -> Predicate:
        """The column is at least ``value`` (also ``>=``)."""
        return self._cmp(GREATER_OR_EQUAL, value)

    def is_null(self) -> Predicate:
        """The column is null."""
        return Predicate._leaf(self._name, IS_NULL, [])

    def is_not_null(self) -> Predicate:
        """The column is not null."""
        return Predicate._leaf(self._name, IS_NOT_NULL, [])

    def _pattern(self, function: int, arg_name: str, value) -> Predicate:
        if not isinstance(value, str):
            raise TypeError(f"argument '{arg_name}': '{type(value).__name__}' object is not an instance of 'str'")
        return Predicate._leaf(self._name, function, [_Literal("String", value)])

    def starts_with(self, prefix: str) -> Predicate:
        """The string column starts with ``prefix``."""
        return self._pattern(STARTS_WITH, "prefix", prefix)

    def ends_with(self, suffix: str) -> Predicate:
        """The string column ends with ``suffix``."""
        return self._pattern(ENDS_WITH, "suffix", suffix)

    def contains(self, infix: str) -> Predicate:
        """The string column contains ``infix``."""
        return self._pattern(CONTAINS, "infix", infix)

    def _set(self, function: int, values) -> Predicate:
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise TypeError(f"argument 'values': '{type(values).__name__}' object is not an instance of 'Sequence'")
        return Predicate._leaf(self._name, function, [_to_literal(v) for v in values])

    def is_in(self, values) -> Predicate:
        """The column equals one of ``values`` (a list or tuple, not a string)."""
        return self._set(IN, values)

    def not_in(self, values) -> Predicate:
        """The column equals none of ``values``; a null never matches."""
        return self._set(NOT_IN, values)

    def __bool__(self):
        raise TypeError("A ColumnRef has no truth value; compare it first, then combine with & and |")

    def __repr__(self) -> str:
        return f"ColumnRef({self._name})"


def col(name: str) -> ColumnRef:
    """Reference a column by name when building a filter."""
    return ColumnRef(name)


# -- binding to a schema --------------------------------------------------------------------------
def _err(message: str) -> FlussError:
    return FlussError(message)


def _type_name(dtype) -> str:
    return str(dtype).upper()


class _BoundLeaf:
    __slots__ = ("name", "index", "field_id", "dtype", "function", "literals", "values")

    def __init__(self, name, index, field_id, dtype, function, literals, values):
        self.name = name          # column name
        self.index = index        # position in the table schema
        self.field_id = field_id
        self.dtype = dtype        # fluss_fast.datatypes.DataType
        self.function = function
        self.literals = literals  # the user's _Literal objects
        self.values = values      # literals converted to the column's comparison domain


class BoundPredicate:
    """A predicate checked against one schema; see the module docstring."""

    __slots__ = ("_root", "columns", "schema_id", "_pa")

    def __init__(self, root, columns, schema_id):
        self._root = root
        self.columns = columns      # sorted table positions the predicate reads
        self.schema_id = schema_id

    # -- wire ---------------------------------------------------------------------------------
    def to_pb(self):
        import fluss_fast.rpc.fluss_api_pb2 as pb

        out = pb.PbPredicate()
        _fill_pb(out, self._root)
        return out

    # -- evaluation ---------------------------------------------------------------------------
    def mask(self, batch, positions):
        """Boolean mask (no nulls) of the rows of ``batch`` that match.

        ``positions`` maps a table column position to the column's index in ``batch``.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        m = _eval(self._root, batch, positions, pa, pc)
        if isinstance(m, pa.ChunkedArray):
            m = m.combine_chunks()
        if m.null_count:
            m = pc.fill_null(m, False)
        return m


def _fill_pb(out, node) -> None:
    if isinstance(node, _BoundLeaf):
        out.type = 0
        leaf = out.leaf
        leaf.function = node.function
        leaf.field_id = node.field_id
        for lit in node.literals:
            _fill_pb_literal(leaf.literals.add(), node, lit)
    else:
        function, children = node
        out.type = 1
        out.compound.function = function
        for child in children:
            _fill_pb(out.compound.children.add(), child)


_LITERAL_TYPE = {
    "BOOLEAN": 0, "TINYINT": 1, "SMALLINT": 2, "INTEGER": 3, "BIGINT": 4, "FLOAT": 5, "DOUBLE": 6,
    "CHAR": 7, "STRING": 8, "DECIMAL": 9, "DATE": 10, "TIME_WITHOUT_TIME_ZONE": 11,
    "TIMESTAMP_WITHOUT_TIME_ZONE": 12, "TIMESTAMP_WITH_LOCAL_TIME_ZONE": 13, "BINARY": 14,
    "BYTES": 15,
}


def _fill_pb_literal(out, leaf: _BoundLeaf, lit: _Literal) -> None:
    t = leaf.dtype
    out.literal_type = _LITERAL_TYPE[t.root]
    if lit.kind == "Null":
        out.is_null = True
        return
    out.is_null = False
    r = t.root
    v = lit.value
    if r == "BOOLEAN":
        out.boolean_value = v
    elif r in ("TINYINT", "SMALLINT", "INTEGER"):
        out.int_value = v
    elif r == "BIGINT":
        out.bigint_value = v
    elif r == "FLOAT":
        out.float_value = float(v)
    elif r == "DOUBLE":
        out.double_value = float(v)
    elif r in ("CHAR", "STRING"):
        out.string_value = v
    elif r in ("BINARY", "BYTES"):
        out.binary_value = v
    elif r == "DECIMAL":
        unscaled = int(v.scaleb(t.scale))
        if t.precision <= 18:
            out.decimal_value = unscaled
        else:
            n = max(1, (unscaled.bit_length() + 8) // 8)
            out.decimal_bytes = unscaled.to_bytes(n, "big", signed=True)
    elif r == "DATE":
        out.bigint_value = v
    elif r == "TIME_WITHOUT_TIME_ZONE":
        out.int_value = v
    else:
        out.timestamp_millis_value = v[0]
        out.timestamp_nano_of_millis_value = v[1]


def _mismatch(name, dtype, lit) -> FlussError:
    return _err(f"filter literal {lit!r} does not match column '{name}' of type {_type_name(dtype)}")


def _convert_literal(name: str, dtype, lit: _Literal):
    """The literal in the column's domain (checked like the Rust client), or raise FlussError."""
    r, k, v = dtype.root, lit.kind, lit.value
    if k == "Null":
        return None
    if r == "BOOLEAN":
        if k != "Bool":
            raise _mismatch(name, dtype, lit)
        return v
    if r in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT"):
        if k != "Int64":
            raise _mismatch(name, dtype, lit)
        bound = {"TINYINT": 1 << 7, "SMALLINT": 1 << 15, "INTEGER": 1 << 31, "BIGINT": 1 << 63}[r]
        if not -bound <= v < bound:
            raise _err(f"filter literal {v} is out of range for column '{name}' of type {_type_name(dtype)}")
        return v
    if r in ("FLOAT", "DOUBLE"):
        if k == "Int64":
            f = float(v)
            if int(f) != v:
                raise _err(f"filter literal {f} cannot be represented exactly by column '{name}' "
                           f"of type {_type_name(dtype)}")
        elif k == "Float64":
            f = v
        else:
            raise _mismatch(name, dtype, lit)
        if r == "FLOAT" and f == f:
            import struct

            narrowed = struct.unpack("<f", struct.pack("<f", f))[0] if abs(f) < 3.5e38 else None
            if narrowed is None or narrowed != f:
                raise _err(f"filter literal {f} cannot be represented exactly by column '{name}' "
                           f"of type {_type_name(dtype)}")
        return f
    if r in ("CHAR", "STRING"):
        if k != "String":
            raise _mismatch(name, dtype, lit)
        return v
    if r in ("BINARY", "BYTES"):
        if k != "Bytes":
            raise _mismatch(name, dtype, lit)
        return v
    if r == "DECIMAL":
        if k != "Decimal":
            raise _mismatch(name, dtype, lit)
        try:
            q = v.quantize(_decimal.Decimal(1).scaleb(-dtype.scale),
                           context=_decimal.Context(prec=80))
        except _decimal.InvalidOperation:
            q = None
        if q is None or q != v or len(q.as_tuple().digits) > dtype.precision and q != 0:
            raise _err(f"filter literal {v} does not fit column '{name}' of type {_type_name(dtype)}")
        return q
    if r == "DATE":
        if k != "Date":
            raise _mismatch(name, dtype, lit)
        return v
    if r == "TIME_WITHOUT_TIME_ZONE":
        if k != "Time":
            raise _mismatch(name, dtype, lit)
        return v
    if r == "TIMESTAMP_WITHOUT_TIME_ZONE":
        if k != "TimestampNtz":
            raise _mismatch(name, dtype, lit)
        return v
    if r == "TIMESTAMP_WITH_LOCAL_TIME_ZONE":
        if k != "TimestampLtz":
            raise _mismatch(name, dtype, lit)
        return v
    raise _err(f"filter on column '{name}' of type {_type_name(dtype)} is not supported")


def bind_predicate(predicate: Predicate, schema, schema_id: int = 0) -> BoundPredicate:
    """Check ``predicate`` against ``schema`` (a SchemaInfo); raises FlussError naming the fault."""
    if not isinstance(predicate, Predicate):
        raise TypeError(f"argument 'predicate': '{type(predicate).__name__}' object is not an instance of 'Predicate'")
    names = schema.names
    used = set()

    def bind(node):
        if node._kind == "compound":
            if not node._children:
                raise _err(f"{_COMPOUND_NAMES[node._function].upper()} predicate has no children")
            return (node._function, tuple(bind(c) for c in node._children))
        name = node._field
        if name not in names:
            avail = ", ".join(_rust_str(n) for n in names)
            raise _err(f"filter column '{name}' does not exist in the table schema, "
                       f"available columns: [{avail}]")
        idx = names.index(name)
        column = schema.columns[idx]
        dtype = column.type
        fn = node._function
        lits = node._literals
        fname = _LEAF_NAMES[fn]
        if dtype.root in ("ARRAY", "MAP", "ROW"):
            raise _err(f"filter on column '{name}' of type {_type_name(dtype)} is not supported")
        if fn not in (IN, NOT_IN):
            expected = 0 if fn in (IS_NULL, IS_NOT_NULL) else 1
            if len(lits) != expected:
                raise _err(f"{fname} on column '{name}' expects {expected} literal(s), got {len(lits)}")
            if lits and lits[0].kind == "Null":
                raise _err(f"{fname} on column '{name}' cannot take a null literal, "
                           f"use is_null()/is_not_null()")
        if fn in (STARTS_WITH, ENDS_WITH, CONTAINS) and dtype.root not in ("CHAR", "STRING"):
            raise _err(f"{fname} requires a character string column, but column '{name}' is "
                       f"{_type_name(dtype)}")
        values = tuple(_convert_literal(name, dtype, lit) for lit in lits)
        used.add(idx)
        field_id = column.id if column.id is not None else idx
        return _BoundLeaf(name, idx, field_id, dtype, fn, lits, values)

    root = bind(predicate)
    return BoundPredicate(root, sorted(used), schema_id)


# -- evaluation on Arrow --------------------------------------------------------------------------
_UNIT_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _temporal_view(arr, pa, pc, target_ns: int):
    """Integer view of a time/timestamp column in units of ``target_ns`` nanoseconds."""
    unit_ns = _UNIT_NS[arr.type.unit]
    raw = arr.cast(pa.int32() if pa.types.is_time32(arr.type) else pa.int64())
    raw = raw.cast(pa.int64())
    if unit_ns > target_ns:
        raw = pc.multiply_checked(raw, unit_ns // target_ns)
    return raw, unit_ns


def _leaf_operands(leaf: _BoundLeaf, arr, pa, pc):
    """(column values, literal values) in a domain where pyarrow compares them exactly."""
    t = arr.type
    if pa.types.is_timestamp(t):
        target = 1 if t.unit == "ns" else 1_000
        view, _ = _temporal_view(arr, pa, pc, target)
        lits = [None if v is None else (v[0] * 1_000_000 + v[1]) // target
                if target == 1 or (v[0] * 1_000_000 + v[1]) % target == 0
                else (v[0] * 1_000_000 + v[1]) / target
                for v in leaf.values]
        return view, lits, pa.int64() if all(isinstance(x, int) or x is None for x in lits) else pa.float64()
    if pa.types.is_time(t):
        view, _ = _temporal_view(arr, pa, pc, 1)
        return view, [None if v is None else v * 1_000_000 for v in leaf.values], pa.int64()
    if pa.types.is_fixed_size_binary(t):
        # A literal of another width simply never matches; compare as variable-length bytes.
        return arr.cast(pa.binary()), list(leaf.values), pa.binary()
    return arr, list(leaf.values), t


def _eval(node, batch, positions, pa, pc):
    if not isinstance(node, _BoundLeaf):
        function, children = node
        combine = pc.and_kleene if function == AND else pc.or_kleene
        out = _eval(children[0], batch, positions, pa, pc)
        for child in children[1:]:
            out = combine(out, _eval(child, batch, positions, pa, pc))
        return out
    arr = batch.column(positions[node.index])
    fn = node.function
    if fn == IS_NULL:
        return pc.is_null(arr)
    if fn == IS_NOT_NULL:
        return pc.is_valid(arr)
    if fn == STARTS_WITH:
        return pc.starts_with(arr, pattern=node.values[0])
    if fn == ENDS_WITH:
        return pc.ends_with(arr, pattern=node.values[0])
    if fn == CONTAINS:
        return pc.match_substring(arr, pattern=node.values[0])
    view, lits, lit_type = _leaf_operands(node, arr, pa, pc)
    if fn in (IN, NOT_IN):
        present = [v for v in lits if v is not None]
        has_null = len(present) != len(lits)
        value_set = pa.array(present, type=lit_type)
        if value_set.type != view.type:
            view = view.cast(value_set.type)
        hit = pc.is_in(view, value_set=value_set)
        if fn == IN:
            # x IN (.., NULL) is unknown where it is not true: drop those rows either way.
            return pc.and_(hit, pc.is_valid(view))
        if has_null:
            return pa.array([False] * len(view), pa.bool_())
        return pc.and_(pc.invert(hit), pc.is_valid(view))
    scalar = pa.scalar(lits[0], type=lit_type)
    if scalar.type != view.type:
        view = view.cast(scalar.type)
    op = {EQUAL: pc.equal, NOT_EQUAL: pc.not_equal, LESS_THAN: pc.less,
          LESS_OR_EQUAL: pc.less_equal, GREATER_THAN: pc.greater,
          GREATER_OR_EQUAL: pc.greater_equal}[fn]
    return op(view, scalar)
