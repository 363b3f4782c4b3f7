"""Whether a batch may hold rows matching a filter, from its column statistics (``batchstats``).

A FetchLog request may carry a ``PbPredicate`` (fluss_api.proto; the client builds it in
``client/predicate.py``). A server answers with only the batches whose statistics do not rule the
predicate out, as Java's ``LogSegment.readWithFilter`` does, with Java's per-function rules
(fluss-common ``org.apache.fluss.predicate``: ``LeafPredicate.test(rowCount, min, max, nullCounts)``
and the ``LeafFunction`` subclasses):

* a batch without statistics, or whose statistics cannot be read, may match;
* a leaf on a column the batch has no statistics for may match (unless it asks for non-nulls of a
  column known to be all null);
* ``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN`` compare the literals with the min / max; ``!=`` and
  ``NOT IN`` rule out only a batch whose min and max both equal a literal; ``STARTS WITH`` checks
  the prefix against the bounds; ``CONTAINS`` and ``ENDS WITH`` never rule a batch out; a null
  literal matches nothing.

The predicate names columns by column id, so a batch of another schema id is checked against its
own schema's positions; a predicate naming a column that schema lacks cannot rule it out.

Pure Python, no rpc import: ``BatchFilter.from_pb`` reads any object shaped like ``PbPredicate``.
"""
from __future__ import annotations

import math

from ...datatypes import (
    BIGINT,
    BINARY,
    BOOLEAN,
    BYTES,
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
from .batchstats import BatchStatistics

# PbPredicate.type, PbCompoundPredicate.function, PbLeafPredicate.function (Java's codes)
LEAF, COMPOUND = 0, 1
AND, OR = 0, 1
(EQUAL, NOT_EQUAL, LESS_THAN, LESS_OR_EQUAL, GREATER_THAN, GREATER_OR_EQUAL, IS_NULL, IS_NOT_NULL,
 STARTS_WITH, CONTAINS, END_WITH, IN, NOT_IN) = range(13)

#: PbLiteralValue.literal_type -> type root
LITERAL_ROOTS = (BOOLEAN, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, CHAR, STRING, DECIMAL, DATE,
                 TIME, TIMESTAMP, TIMESTAMP_LTZ, BINARY, BYTES)

_TEXT = (CHAR, STRING)
_BINARY = (BINARY, BYTES)


class FilterError(ValueError):
    """A predicate the server cannot use (unknown code or column, literal of another type): Java
    then answers the fetch unfiltered."""


class _Leaf:
    __slots__ = ("function", "column_id", "literals", "root")

    def __init__(self, function, column_id, literals, root):
        self.function = function
        self.column_id = column_id
        self.literals = literals
        self.root = root


class BatchFilter:
    """A fetch's predicate, ready to test batch statistics of any schema of the table."""

    def __init__(self, root, schema_id: int):
        self._root = root
        self.schema_id = schema_id
        # schema id -> {column id: position} (None: the schema lacks one)
        self._positions: dict[int, dict] = {}

    @classmethod
    def from_pb(cls, pb_predicate, schema, schema_id: int) -> BatchFilter:
        """Raises FilterError when the predicate does not fit ``schema`` (the filter schema)."""
        by_id = {}
        for pos, c in enumerate(schema.columns):
            by_id[c.id if c.id is not None else pos] = c.type
        return cls(_node(pb_predicate, by_id, 0), schema_id)

    def may_match(self, record_count: int, stats: BatchStatistics | None, schema) -> bool:
        """False only when ``stats`` (of a batch of ``record_count`` rows with rows of ``schema``)
        prove that no row matches."""
        if stats is None:
            return True
        positions = self._positions_of(schema)
        if positions is None:
            return True
        return _test(self._root, record_count, stats, positions)

    def _positions_of(self, schema):
        key = id(schema)
        hit = self._positions.get(key)
        if hit is None:
            ids = {(c.id if c.id is not None else pos): pos for pos, c in enumerate(schema.columns)}
            need = set()
            _column_ids(self._root, need)
            hit = (schema, ids if need <= ids.keys() else None)
            self._positions[key] = hit
        return hit[1]


def _column_ids(node, out: set) -> None:
    if isinstance(node, _Leaf):
        out.add(node.column_id)
    else:
        for child in node[1]:
            _column_ids(child, out)


def _node(pb, by_id: dict, depth: int):
    if depth > 100:
        raise FilterError("predicate nested more than 100 levels deep")
    if pb.type == LEAF:
        leaf = pb.leaf
        if not 0 <= leaf.function <= NOT_IN:
            raise FilterError(f"unknown leaf function {leaf.function}")
        dtype = by_id.get(leaf.field_id)
        if dtype is None:
            raise FilterError(f"Cannot resolve field id {leaf.field_id} from row type.")
        literals = [_literal(lit, dtype) for lit in leaf.literals]
        if leaf.function not in (IS_NULL, IS_NOT_NULL, IN, NOT_IN) and len(literals) != 1:
            raise FilterError(f"leaf function {leaf.function} needs one literal, got {len(literals)}")
        return _Leaf(leaf.function, leaf.field_id, literals, dtype.root)
    if pb.type == COMPOUND:
        comp = pb.compound
        if comp.function not in (AND, OR):
            raise FilterError(f"unknown compound function {comp.function}")
        return comp.function, [_node(c, by_id, depth + 1) for c in comp.children]
    raise FilterError(f"Unknown predicate type: {pb.type}")


def _literal(lit, dtype):
    if lit.is_null:
        return None
    code = lit.literal_type
    if not 0 <= code < len(LITERAL_ROOTS):
        raise FilterError(f"unknown literal type {code}")
    root = LITERAL_ROOTS[code]
    field = dtype.root
    if not (root == field or (root in _TEXT and field in _TEXT) or (root in _BINARY and field in _BINARY)):
        raise FilterError(f"Literal type {root} does not match target schema field type {field}.")
    if root == BOOLEAN:
        return bool(lit.boolean_value)
    if root in (TINYINT, SMALLINT, INTEGER, TIME):
        return int(lit.int_value)
    if root in (BIGINT, DATE):
        return int(lit.bigint_value)
    if root in (FLOAT, DOUBLE):
        return float(lit.float_value if root == FLOAT else lit.double_value)
    if root in _TEXT:
        return lit.string_value
    if root == DECIMAL:
        if lit.HasField("decimal_bytes"):
            return int.from_bytes(lit.decimal_bytes, "big", signed=True)
        return int(lit.decimal_value)
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        return int(lit.timestamp_millis_value), int(lit.timestamp_nano_of_millis_value)
    return bytes(lit.binary_value)


# -- comparisons (Java's compareTo of each type) ---------------------------------------------------
def _key(root, v):
    if root in (FLOAT, DOUBLE):
        if math.isnan(v):
            return (2, 0.0, 0)
        return (0, v, 0 if math.copysign(1.0, v) < 0 else 1)
    if root in _TEXT and isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")  # BinaryString: unsigned UTF-8 bytes
    return v


def _cmp(root, a, b) -> int:
    ka, kb = _key(root, a), _key(root, b)
    return (ka > kb) - (ka < kb)


def _utf16(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")  # java.lang.String.compareTo: UTF-16 units


def _test(node, rows: int, stats: BatchStatistics, positions: dict) -> bool:
    if not isinstance(node, _Leaf):
        function, children = node
        if function == AND:
            return all(_test(c, rows, stats, positions) for c in children)
        return any(_test(c, rows, stats, positions) for c in children)
    col = stats.column(positions[node.column_id])
    if col is None:
        nulls, lo, hi = -1, None, None
    else:
        nulls, lo, hi = col
    if (nulls < 0 or rows != nulls) and (lo is None or hi is None):
        return True  # unknown bounds, not all null
    f, root, lits = node.function, node.root, node.literals
    if f == IS_NULL:
        return nulls < 0 or nulls > 0
    if f == IS_NOT_NULL:
        return nulls < 0 or nulls < rows
    if f in (IN, NOT_IN):
        if nulls >= 0 and rows == nulls:
            return False
        if f == IN:
            return any(x is not None and _cmp(root, x, lo) >= 0 and _cmp(root, x, hi) <= 0 for x in lits)
        return not any(x is None or (_cmp(root, x, lo) == 0 and _cmp(root, x, hi) == 0) for x in lits)
    lit = lits[0]
    if nulls >= 0 and (rows == nulls or lit is None):
        return False
    if lit is None:
        return True  # Java fails on the comparison and includes the batch
    if f == EQUAL:
        return _cmp(root, lit, lo) >= 0 and _cmp(root, lit, hi) <= 0
    if f == NOT_EQUAL:
        return _cmp(root, lit, lo) != 0 or _cmp(root, lit, hi) != 0
    if f == LESS_THAN:
        return _cmp(root, lit, lo) > 0
    if f == LESS_OR_EQUAL:
        return _cmp(root, lit, lo) >= 0
    if f == GREATER_THAN:
        return _cmp(root, lit, hi) < 0
    if f == GREATER_OR_EQUAL:
        return _cmp(root, lit, hi) <= 0
    if f == STARTS_WITH:
        if not isinstance(lo, str) or not isinstance(hi, str):
            return True
        p = lit
        return ((lo.startswith(p) or _utf16(lo) <= _utf16(p))
                and (hi.startswith(p) or _utf16(hi) >= _utf16(p)))
    return True  # CONTAINS, END_WITH
