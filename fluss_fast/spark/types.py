"""Fluss types <-> Spark types, and the Arrow conversions on both sides of the Python worker.

The mapping is the Scala connector's (FlussToSparkTypeVisitor): TIMESTAMP -> TimestampNTZType,
TIMESTAMP_LTZ -> TimestampType, TIME -> IntegerType (milliseconds of the day), BINARY/BYTES ->
BinaryType, ROW -> StructType. Two deliberate differences: CHAR(n) becomes StringType (Spark's
Arrow path cannot carry CharType), and MAP is supported (Spark 4's Arrow path carries maps).
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .. import datatypes as T
from ..errors import ErrorCode, FlussError

_SPARK_MICROS = 6


def _spark():
    from pyspark.sql import types as st

    return st


def _unholdable(table: str, column: str, why: str) -> FlussError:
    return FlussError(f"table '{table}', column '{column}': {why}", ErrorCode.CLIENT_ERROR)


def to_spark_type(dt: T.DataType, table: str = "", column: str = ""):
    """The Spark type of a Fluss type; FlussError naming the column when Spark cannot hold it."""
    st = _spark()
    r = dt.root
    simple = {
        T.BOOLEAN: st.BooleanType, T.TINYINT: st.ByteType, T.SMALLINT: st.ShortType,
        T.INTEGER: st.IntegerType, T.BIGINT: st.LongType, T.FLOAT: st.FloatType,
        T.DOUBLE: st.DoubleType, T.CHAR: st.StringType, T.STRING: st.StringType,
        T.BYTES: st.BinaryType, T.BINARY: st.BinaryType, T.DATE: st.DateType,
        T.TIME: st.IntegerType,
    }
    if r in simple:
        return simple[r]()
    if r == T.DECIMAL:
        return st.DecimalType(dt.precision, dt.scale)
    if r in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        if dt.precision > _SPARK_MICROS:
            # Spark holds microseconds; dropping digits silently would change values on a round trip
            raise _unholdable(table, column, f"{dt} has precision {dt.precision}; Spark timestamps "
                                             f"hold microseconds (precision <= 6). Leave the column "
                                             f"out with a user schema (.schema(...)) to read the rest")
        return st.TimestampNTZType() if r == T.TIMESTAMP else st.TimestampType()
    if r == T.ARRAY:
        return st.ArrayType(to_spark_type(dt.element, table, f"{column}[]"), dt.element.nullable)
    if r == T.MAP:
        return st.MapType(to_spark_type(dt.key, table, f"{column}.key"),
                          to_spark_type(dt.value, table, f"{column}.value"), dt.value.nullable)
    if r == T.ROW:
        return st.StructType([st.StructField(f.name, to_spark_type(f.type, table, f"{column}.{f.name}"),
                                             f.type.nullable) for f in dt.fields])
    raise _unholdable(table, column, f"Fluss type {dt} has no Spark type")


def spark_schema(schema: T.SchemaInfo, table: str, columns: list[str] | None = None):
    """The Spark StructType of a table's columns (all, or ``columns`` in that order)."""
    st = _spark()
    names = schema.names if columns is None else columns
    fields = []
    for name in names:
        col = schema.columns[schema.index_of(name)]
        fields.append(st.StructField(name, to_spark_type(col.type, table, name), col.type.nullable))
    return st.StructType(fields)


def spark_arrow_schema(spark_struct) -> pa.Schema:
    """The exact Arrow schema Spark checks the batches of a Python data source against."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_struct, timezone="UTC")


# -- Fluss Arrow -> Spark Arrow (read) ---------------------------------------------------------------
def _to_spark_array(arr: pa.Array, dt: T.DataType, target: pa.DataType) -> pa.Array:
    r = dt.root
    if r == T.TIME:
        # milliseconds of the day, as the Scala connector hands TIME to Spark
        if arr.type != pa.time32("ms"):
            arr = pc.cast(arr, pa.time32("ms"), safe=False)
        return arr.view(pa.int32())
    if r in (T.ARRAY, T.MAP, T.ROW) and _needs_deep(dt):
        return _nested_to_spark(arr, dt, target)
    if arr.type.equals(target):
        return arr
    return pc.cast(arr, target, safe=False)


def _needs_deep(dt: T.DataType) -> bool:
    """Whether a nested type holds a TIME, which no Arrow cast turns into milliseconds."""
    r = dt.root
    if r == T.TIME:
        return True
    if r == T.ARRAY:
        return _needs_deep(dt.element)
    if r == T.MAP:
        return _needs_deep(dt.key) or _needs_deep(dt.value)
    if r == T.ROW:
        return any(_needs_deep(f.type) for f in dt.fields)
    return False


def _nested_to_spark(arr: pa.Array, dt: T.DataType, target: pa.DataType) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = pa.concat_arrays(arr.chunks) if arr.num_chunks else pa.array([], arr.type)
    r = dt.root
    if r == T.ARRAY:
        values = _to_spark_array(arr.values, dt.element, target.value_type)
        return pa.ListArray.from_arrays(arr.offsets, values, type=target, mask=arr.is_null())
    if r == T.MAP:
        keys = _to_spark_array(arr.keys, dt.key, target.key_type)
        items = _to_spark_array(arr.items, dt.value, target.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=arr.is_null())
    children = [_to_spark_array(arr.field(i), f.type, target.field(i).type) for i, f in enumerate(dt.fields)]
    return pa.StructArray.from_arrays(children, fields=list(target), mask=arr.is_null())


class ReadConverter:
    """Turns the scanner's batches (Fluss Arrow types) into the batches Spark expects, column by
    column without leaving Arrow; batches that already match pass through untouched."""

    def __init__(self, types: list[T.DataType], target: pa.Schema):
        self.types = types
        self.target = target

    def __call__(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        target = self.target
        if rb.schema.equals(target):
            return rb
        cols = [_to_spark_array(rb.column(i), dt, target.field(i).type) for i, dt in enumerate(self.types)]
        return pa.RecordBatch.from_arrays(cols, schema=target)


# -- Spark -> Fluss (write) --------------------------------------------------------------------------
def _integral_rank(t) -> int:
    st = _spark()
    order = (st.ByteType, st.ShortType, st.IntegerType, st.LongType)
    for k, cls in enumerate(order):
        if isinstance(t, cls):
            return k
    return -1


def check_writable(spark_type, target: T.DataType, table: str, column: str) -> None:
    """FlussError naming the column unless a Spark column of ``spark_type`` can be written into a
    Fluss column of type ``target`` without losing values."""
    st = _spark()
    try:
        expected = to_spark_type(target, table, column)
    except FlussError:
        expected = None
    if expected is not None and _same(spark_type, expected):
        return
    r = target.root
    rank = _integral_rank(spark_type)
    integrals = (T.TINYINT, T.SMALLINT, T.INTEGER, T.BIGINT)
    if r in integrals and 0 <= rank <= integrals.index(r):
        return
    if r == T.DOUBLE and (isinstance(spark_type, st.FloatType) or 0 <= rank <= 2):
        return
    if r in (T.TIMESTAMP, T.TIMESTAMP_LTZ) and isinstance(spark_type, (st.TimestampType, st.TimestampNTZType)):
        return
    if r == T.DATE and isinstance(spark_type, st.DateType):
        return
    if (r == T.DECIMAL and isinstance(spark_type, st.DecimalType) and spark_type.scale <= target.scale
            and spark_type.precision - spark_type.scale <= target.precision - target.scale):
        return
    if r == T.DECIMAL and rank >= 0 and target.precision - target.scale >= (3, 5, 10, 19)[rank]:
        return
    unsupported = (st.NullType, st.CalendarIntervalType, st.DayTimeIntervalType, st.YearMonthIntervalType)
    extra = ""
    if isinstance(spark_type, unsupported) or type(spark_type).__name__ in ("VariantType",):
        extra = "; Fluss has no type for it"
    raise FlussError(f"table '{table}', column '{column}': cannot write Spark type "
                     f"{spark_type.simpleString()} into Fluss type {target}{extra}", ErrorCode.CLIENT_ERROR)


def _same(a, b) -> bool:
    """Spark type equality ignoring nullability flags (they are checked on the data)."""
    st = _spark()
    if isinstance(a, st.ArrayType) and isinstance(b, st.ArrayType):
        return _same(a.elementType, b.elementType)
    if isinstance(a, st.MapType) and isinstance(b, st.MapType):
        return _same(a.keyType, b.keyType) and _same(a.valueType, b.valueType)
    if isinstance(a, st.StructType) and isinstance(b, st.StructType):
        return (len(a.fields) == len(b.fields)
                and all(x.name == y.name and _same(x.dataType, y.dataType)
                        for x, y in zip(a.fields, b.fields, strict=True)))
    if isinstance(a, st.StringType) and isinstance(b, st.StringType):
        return True  # collations and CHAR labels do not change the bytes
    return a == b


def _to_fluss_array(arr: pa.Array, dt: T.DataType, target: pa.DataType) -> pa.Array:
    r = dt.root
    if r == T.TIME:
        if pa.types.is_integer(arr.type):
            arr = pc.cast(arr, pa.int32()).view(pa.time32("ms"))
        return arr if arr.type.equals(target) else pc.cast(arr, target)
    if r in (T.ARRAY, T.MAP, T.ROW) and _needs_deep(dt):
        if isinstance(arr, pa.ChunkedArray):
            arr = pa.concat_arrays(arr.chunks)
        if r == T.ARRAY:
            values = _to_fluss_array(arr.values, dt.element, target.value_type)
            return pa.ListArray.from_arrays(arr.offsets, values, type=target, mask=arr.is_null())
        if r == T.MAP:
            keys = _to_fluss_array(arr.keys, dt.key, target.key_type)
            items = _to_fluss_array(arr.items, dt.value, target.item_type)
            return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=arr.is_null())
        children = [_to_fluss_array(arr.field(i), f.type, target.field(i).type) for i, f in enumerate(dt.fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=arr.is_null())
    if arr.type.equals(target):
        return arr
    return pc.cast(arr, target)


class WriteConverter:
    """Spark's Arrow batches -> batches in the table's Arrow schema, matched by column name."""

    def __init__(self, schema: T.SchemaInfo, table: str, spark_names: list[str]):
        self.table = table
        self.target = schema.to_arrow()
        self.types = schema.types
        lower = {n.lower(): k for k, n in enumerate(spark_names)}
        self.positions = []
        for name in schema.names:
            k = lower.get(name.lower())
            self.positions.append(k)

    def __call__(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        cols = []
        n = rb.num_rows
        for i, field in enumerate(self.target):
            k = self.positions[i]
            if k is None:
                cols.append(pa.nulls(n, field.type))
                continue
            try:
                col = _to_fluss_array(rb.column(k), self.types[i], field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise FlussError(f"table '{self.table}', column '{field.name}': cannot convert "
                                 f"{rb.schema.field(k).type} to {field.type}: {e}",
                                 ErrorCode.CLIENT_ERROR) from None
            if not field.nullable and col.null_count:
                raise FlussError(f"table '{self.table}', column '{field.name}' is NOT NULL but "
                                 f"{col.null_count} row(s) hold null", ErrorCode.CLIENT_ERROR)
            cols.append(col)
        return pa.RecordBatch.from_arrays(cols, schema=self.target)
