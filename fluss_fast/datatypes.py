"""Fluss data types, schemas and table descriptors: JSON (the wire form), pyarrow, and text.

Shared by the client (Schema/TableInfo, Arrow encoding) and the embedded server (CREATE_TABLE checks,
the stored ``table_json``). The JSON layout is docs/contributing/protocol.md §3.20; the Arrow mapping is
docs/contributing/formats.md §2.4 on the way out and pyfluss's own mapping on the way in (unsigned ints widen to the
signed type of the same width, large_string/large_binary narrow, date64 reads as DATE).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

BOOLEAN = "BOOLEAN"
TINYINT = "TINYINT"
SMALLINT = "SMALLINT"
INTEGER = "INTEGER"
BIGINT = "BIGINT"
FLOAT = "FLOAT"
DOUBLE = "DOUBLE"
CHAR = "CHAR"
STRING = "STRING"
DECIMAL = "DECIMAL"
DATE = "DATE"
TIME = "TIME_WITHOUT_TIME_ZONE"
TIMESTAMP = "TIMESTAMP_WITHOUT_TIME_ZONE"
TIMESTAMP_LTZ = "TIMESTAMP_WITH_LOCAL_TIME_ZONE"
BYTES = "BYTES"
BINARY = "BINARY"
ARRAY = "ARRAY"
MAP = "MAP"
ROW = "ROW"

ROOTS = (BOOLEAN, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, CHAR, STRING, DECIMAL, DATE, TIME,
         TIMESTAMP, TIMESTAMP_LTZ, BYTES, BINARY, ARRAY, MAP, ROW)
NESTED = (ARRAY, MAP, ROW)
# Types allowed as partition keys (docs/contributing/protocol.md §7.3).
PARTITION_KEY_ROOTS = (CHAR, STRING, BOOLEAN, BINARY, BYTES, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT,
                       DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ)

_DEFAULT_PRECISION = {TIME: 0, TIMESTAMP: 6, TIMESTAMP_LTZ: 6, DECIMAL: 10}


@dataclass(frozen=True)
class RowField:
    name: str
    type: DataType
    description: str | None = None
    field_id: int | None = None


@dataclass(frozen=True)
class DataType:
    root: str
    nullable: bool = True
    length: int | None = None  # CHAR(n), BINARY(n)
    precision: int | None = None  # DECIMAL, TIME, TIMESTAMP(_LTZ)
    scale: int | None = None  # DECIMAL
    element: DataType | None = None  # ARRAY
    key: DataType | None = None  # MAP
    value: DataType | None = None  # MAP
    fields: tuple | None = None  # ROW: tuple[RowField, ...]

    def with_nullable(self, nullable: bool) -> DataType:
        return self if self.nullable == nullable else replace(self, nullable=nullable)

    @property
    def is_nested(self) -> bool:
        return self.root in NESTED

    # -- JSON -------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        out: dict[str, Any] = {"type": self.root}
        if not self.nullable:
            out["nullable"] = False
        if self.root in (CHAR, BINARY):
            out["length"] = self.length
        elif self.root == DECIMAL:
            out["precision"] = self.precision
            out["scale"] = self.scale
        elif self.root in (TIME, TIMESTAMP, TIMESTAMP_LTZ):
            out["precision"] = self.precision
        elif self.root == ARRAY:
            out["element_type"] = self.element.to_json()
        elif self.root == MAP:
            out["key_type"] = self.key.to_json()
            out["value_type"] = self.value.to_json()
        elif self.root == ROW:
            fields = []
            for f in self.fields:
                fj: dict[str, Any] = {"name": f.name, "field_type": f.type.to_json()}
                if f.description is not None:
                    fj["description"] = f.description
                if f.field_id is not None:
                    fj["field_id"] = f.field_id
                fields.append(fj)
            out["fields"] = fields
        return out

    @staticmethod
    def from_json(obj: dict) -> DataType:
        if not isinstance(obj, dict) or "type" not in obj:
            raise ValueError(f"data type must be an object with a 'type', got {obj!r}")
        root = obj["type"]
        if root not in ROOTS:
            raise ValueError(f"unknown data type {root!r}")
        nullable = bool(obj.get("nullable", True))
        if root in (CHAR, BINARY):
            length = int(obj.get("length", 1))
            if length < 1:
                raise ValueError(f"{root} length must be >= 1, got {length}")
            return DataType(root, nullable, length=length)
        if root == DECIMAL:
            p, s = int(obj.get("precision", 10)), int(obj.get("scale", 0))
            if not 1 <= p <= 38 or not 0 <= s <= p:
                raise ValueError(f"DECIMAL({p}, {s}) is out of range: precision 1..38, scale 0..precision")
            return DataType(root, nullable, precision=p, scale=s)
        if root in (TIME, TIMESTAMP, TIMESTAMP_LTZ):
            p = int(obj.get("precision", _DEFAULT_PRECISION[root]))
            if not 0 <= p <= 9:
                raise ValueError(f"{root} precision must be 0..9, got {p}")
            return DataType(root, nullable, precision=p)
        if root == ARRAY:
            return DataType(root, nullable, element=DataType.from_json(obj["element_type"]))
        if root == MAP:
            return DataType(root, nullable, key=DataType.from_json(obj["key_type"]),
                            value=DataType.from_json(obj["value_type"]))
        if root == ROW:
            fields = tuple(
                RowField(f["name"], DataType.from_json(f["field_type"]), f.get("description"), f.get("field_id"))
                for f in obj.get("fields", [])
            )
            return DataType(root, nullable, fields=fields)
        return DataType(root, nullable)

    # -- Arrow ------------------------------------------------------------------------------------
    def to_arrow(self) -> pa.DataType:
        r = self.root
        if r == BOOLEAN:
            return pa.bool_()
        if r == TINYINT:
            return pa.int8()
        if r == SMALLINT:
            return pa.int16()
        if r == INTEGER:
            return pa.int32()
        if r == BIGINT:
            return pa.int64()
        if r == FLOAT:
            return pa.float32()
        if r == DOUBLE:
            return pa.float64()
        if r in (CHAR, STRING):
            return pa.string()
        if r == BYTES:
            return pa.binary()
        if r == BINARY:
            return pa.binary(self.length)
        if r == DECIMAL:
            return pa.decimal128(self.precision, self.scale)
        if r == DATE:
            return pa.date32()
        if r == TIME:
            unit = _arrow_unit(self.precision)
            return pa.time32(unit) if unit in ("s", "ms") else pa.time64(unit)
        if r in (TIMESTAMP, TIMESTAMP_LTZ):
            unit = _arrow_unit(self.precision)
            # pyfluss labels LTZ columns "UTC" and list items "item"; neither travels on the wire.
            return pa.timestamp(unit, tz="UTC" if r == TIMESTAMP_LTZ else None)
        if r == ARRAY:
            return pa.list_(pa.field("item", self.element.to_arrow(), self.element.nullable))
        if r == MAP:
            return pa.map_(pa.field("key", self.key.to_arrow(), False),
                           pa.field("value", self.value.to_arrow(), self.value.nullable))
        if r == ROW:
            return pa.struct([pa.field(f.name, f.type.to_arrow(), f.type.nullable) for f in self.fields])
        raise ValueError(f"no Arrow type for {r}")

    @staticmethod
    def from_arrow(t: pa.DataType, nullable: bool = True) -> DataType:
        """The Fluss type of an Arrow type, as pyfluss 1.0.0 maps it.

        Fluss has no unsigned integers; like pyfluss, ``uint8``/``16``/``32``/``64`` become the signed
        type of the same width (TINYINT, SMALLINT, INT, BIGINT), so a schema written for pyfluss
        creates the same table. Data must then come as the signed type: an Arrow batch with an
        unsigned column, or a Python int outside the signed range, is refused with a ``FlussError``
        naming the column (no value is silently wrapped). Cast first, e.g.
        ``pc.cast(arr, pa.int64())``, which itself raises on values above 2**63 - 1.
        """
        T = pa.types
        if T.is_boolean(t):
            return DataType(BOOLEAN, nullable)
        if T.is_int8(t) or T.is_uint8(t):
            return DataType(TINYINT, nullable)
        if T.is_int16(t) or T.is_uint16(t):
            return DataType(SMALLINT, nullable)
        if T.is_int32(t) or T.is_uint32(t):
            return DataType(INTEGER, nullable)
        if T.is_int64(t) or T.is_uint64(t):
            return DataType(BIGINT, nullable)
        if T.is_float32(t):
            return DataType(FLOAT, nullable)
        if T.is_float64(t):
            return DataType(DOUBLE, nullable)
        if T.is_string(t) or T.is_large_string(t):
            return DataType(STRING, nullable)
        if T.is_fixed_size_binary(t):
            return DataType(BINARY, nullable, length=t.byte_width)
        if T.is_binary(t) or T.is_large_binary(t):
            return DataType(BYTES, nullable)
        if T.is_date32(t) or T.is_date64(t):
            return DataType(DATE, nullable)
        if T.is_decimal(t):
            if t.scale < 0:
                raise ValueError(f"decimal scale must be >= 0, got {t.scale}")
            return DataType(DECIMAL, nullable, precision=t.precision, scale=t.scale)
        if T.is_time(t):
            return DataType(TIME, nullable, precision=_UNIT_PRECISION[t.unit])
        if T.is_timestamp(t):
            return DataType(TIMESTAMP_LTZ if t.tz is not None else TIMESTAMP, nullable,
                            precision=_UNIT_PRECISION[t.unit])
        if T.is_map(t):
            return DataType(MAP, nullable, key=DataType.from_arrow(t.key_type, False),
                            value=DataType.from_arrow(t.item_type, t.item_field.nullable))
        if T.is_list(t) or T.is_large_list(t):
            return DataType(ARRAY, nullable, element=DataType.from_arrow(t.value_type, t.value_field.nullable))
        if T.is_struct(t):
            fields = tuple(RowField(t.field(i).name, DataType.from_arrow(t.field(i).type, t.field(i).nullable))
                           for i in range(t.num_fields))
            return DataType(ROW, nullable, fields=fields)
        raise ValueError(f"Cannot convert Arrow type to Fluss type: {t}")

    # -- text (pyfluss's Schema.get_column_types spelling) ----------------------------------------
    def __str__(self) -> str:
        r = self.root
        if r == INTEGER:
            s = "int"
        elif r == TIME:
            s = "time" if self.precision == 0 else f"time({self.precision})"
        elif r == TIMESTAMP:
            s = "timestamp" if self.precision == 6 else f"timestamp({self.precision})"
        elif r == TIMESTAMP_LTZ:
            s = "timestamp_ltz" if self.precision == 6 else f"timestamp_ltz({self.precision})"
        elif r in (CHAR, BINARY):
            s = f"{r.lower()}({self.length})"
        elif r == DECIMAL:
            s = f"decimal({self.precision},{self.scale})"
        elif r == ARRAY:
            s = f"array<{self.element}>"
        elif r == MAP:
            s = f"map<{self.key},{self.value}>"
        elif r == ROW:
            s = "row<" + ", ".join(f"{f.name}: {f.type}" for f in self.fields) + ">"
        else:
            s = r.lower()
        return s if self.nullable else f"{s} NOT NULL"


_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _arrow_unit(precision: int) -> str:
    """The coarsest Arrow time unit that keeps ``precision`` fractional second digits."""
    return "s" if precision == 0 else "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def highest_field_id_of(t: DataType) -> int:
    """Largest nested ROW field id inside a type (-1 if none)."""
    best = -1
    if t.root == ROW:
        for f in t.fields:
            if f.field_id is not None:
                best = max(best, f.field_id)
            best = max(best, highest_field_id_of(f.type))
    elif t.root == ARRAY:
        best = highest_field_id_of(t.element)
    elif t.root == MAP:
        best = max(highest_field_id_of(t.key), highest_field_id_of(t.value))
    return best


def assign_field_ids(t: DataType, counter: list) -> DataType:
    """Number nested ROW fields depth-first after their column, as the Java and Rust schema builders do
    (a: 0, b ROW<x, y>: 1, x: 2, y: 3, c: 4); a schema with column ids but no nested ids is rejected
    by pyfluss, so both must be assigned together."""
    if t.root == ARRAY:
        return replace(t, element=assign_field_ids(t.element, counter))
    if t.root == MAP:
        return replace(t, key=assign_field_ids(t.key, counter), value=assign_field_ids(t.value, counter))
    if t.root == ROW:
        fields = []
        for f in t.fields:
            counter[0] += 1
            field_id = counter[0]
            fields.append(RowField(f.name, assign_field_ids(f.type, counter), f.description, field_id))
        return replace(t, fields=tuple(fields))
    return t


@dataclass(frozen=True)
class Column:
    name: str
    type: DataType
    comment: str | None = None
    id: int | None = None
    agg_function: dict | None = None


@dataclass(frozen=True)
class SchemaInfo:
    columns: tuple  # tuple[Column, ...]
    primary_key: tuple = ()
    auto_increment_columns: tuple = ()
    highest_field_id: int | None = None

    @property
    def names(self) -> list:
        return [c.name for c in self.columns]

    @property
    def types(self) -> list:
        return [c.type for c in self.columns]

    def index_of(self, name: str) -> int:
        for i, c in enumerate(self.columns):
            if c.name == name:
                return i
        raise KeyError(name)

    def to_json(self) -> dict:
        cols = []
        for c in self.columns:
            cj: dict[str, Any] = {"name": c.name, "data_type": c.type.to_json()}
            if c.comment is not None:
                cj["comment"] = c.comment
            if c.agg_function is not None:
                cj["agg_function"] = c.agg_function
            if c.id is not None:
                cj["id"] = c.id
            cols.append(cj)
        out: dict[str, Any] = {"version": 1, "columns": cols}
        if self.primary_key:
            out["primary_key"] = list(self.primary_key)
        if self.auto_increment_columns:
            out["auto_increment_column"] = list(self.auto_increment_columns)
        if self.highest_field_id is not None:
            out["highest_field_id"] = self.highest_field_id
        return out

    @staticmethod
    def from_json(obj: dict) -> SchemaInfo:
        if not isinstance(obj, dict) or not isinstance(obj.get("columns"), list):
            raise ValueError("schema must be an object with a 'columns' list")
        cols = []
        for c in obj["columns"]:
            if not isinstance(c, dict) or "name" not in c or "data_type" not in c:
                raise ValueError(f"column must have 'name' and 'data_type', got {c!r}")
            cols.append(Column(c["name"], DataType.from_json(c["data_type"]), c.get("comment"), c.get("id"),
                               c.get("agg_function")))
        return SchemaInfo(tuple(cols), tuple(obj.get("primary_key") or ()),
                          tuple(obj.get("auto_increment_column") or ()), obj.get("highest_field_id"))

    def to_arrow(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type.to_arrow(), c.type.nullable) for c in self.columns])

    @staticmethod
    def from_arrow(schema: pa.Schema, primary_key=(), auto_increment_columns=()) -> SchemaInfo:
        """pyfluss's rule: primary-key columns become NOT NULL; ids are 0..n-1 in column order."""
        pk = tuple(primary_key or ())
        cols = []
        counter = [-1]
        for f in schema:
            t = DataType.from_arrow(f.type, f.nullable)
            if f.name in pk:
                t = t.with_nullable(False)
            counter[0] += 1
            column_id = counter[0]
            cols.append(Column(f.name, assign_field_ids(t, counter), None, column_id))
        return SchemaInfo(tuple(cols), pk, tuple(auto_increment_columns or ()), counter[0])


@dataclass(frozen=True)
class TableDescriptorInfo:
    schema: SchemaInfo
    partition_keys: tuple = ()
    bucket_keys: tuple = ()
    bucket_count: int | None = None
    properties: dict = field(default_factory=dict)
    custom_properties: dict = field(default_factory=dict)
    comment: str | None = None

    @property
    def log_format(self) -> str:
        return self.properties.get("table.log.format", "ARROW").upper()

    @property
    def kv_format(self) -> str:
        return self.properties.get("table.kv.format", "COMPACTED").upper()

    @property
    def compression(self) -> str:
        return self.properties.get("table.log.arrow.compression.type", "ZSTD").upper()

    @property
    def compression_level(self) -> int:
        return int(self.properties.get("table.log.arrow.compression.zstd.level", "3"))

    def to_json(self) -> dict:
        out: dict[str, Any] = {"version": 1, "schema": self.schema.to_json()}
        if self.comment is not None:
            out["comment"] = self.comment
        out["partition_key"] = list(self.partition_keys)
        out["bucket_key"] = list(self.bucket_keys)
        if self.bucket_count is not None:
            out["bucket_count"] = self.bucket_count
        out["properties"] = dict(self.properties)
        out["custom_properties"] = dict(self.custom_properties)
        return out

    def to_json_bytes(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()

    @staticmethod
    def from_json(obj: dict) -> TableDescriptorInfo:
        if not isinstance(obj, dict) or "schema" not in obj:
            raise ValueError("table descriptor must be an object with a 'schema'")
        props = obj.get("properties") or {}
        custom = obj.get("custom_properties") or {}
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in {**props, **custom}.items()):
            raise ValueError("properties and custom_properties must map strings to strings")
        bc = obj.get("bucket_count")
        return TableDescriptorInfo(
            SchemaInfo.from_json(obj["schema"]),
            tuple(obj.get("partition_key") or ()),
            tuple(obj.get("bucket_key") or ()),
            int(bc) if bc is not None else None,
            dict(props),
            dict(custom),
            obj.get("comment"),
        )

    @staticmethod
    def from_json_bytes(data: bytes) -> TableDescriptorInfo:
        return TableDescriptorInfo.from_json(json.loads(bytes(data).decode("utf-8")))
