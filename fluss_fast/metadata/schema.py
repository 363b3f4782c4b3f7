"""A table's declared shape: ``Schema`` (columns, keys; field ids numbered as pyfluss numbers
them) and ``TableDescriptor`` (everything CREATE_TABLE takes)."""
from __future__ import annotations

import json
import operator
from dataclasses import replace

from ..datatypes import DataType, SchemaInfo, TableDescriptorInfo
from ..errors import FlussError
from ._args import I32, rust_list, rust_set, rust_str, type_name, want_instance, want_str, want_str_dict, want_str_list


class Schema:
    """A table schema declared with a ``pyarrow.Schema`` (``info`` holds the Fluss form)."""

    __slots__ = ("_info",)

    def __init__(self, schema, primary_keys: list[str] | None = None,
                 auto_increment_column: str | None = None):
        import pyarrow as pa

        pk = [] if primary_keys is None else want_str_list("primary_keys", primary_keys)
        if auto_increment_column is not None:
            want_str("auto_increment_column", auto_increment_column)
        if not isinstance(schema, pa.Schema):
            raise FlussError("Failed to convert PyArrow schema: TypeError: Expected instance of "
                             f"pyarrow.lib.Schema, got {type(schema).__module__}.{type(schema).__qualname__}")
        try:
            info = SchemaInfo.from_arrow(schema, ())
        except ValueError as exc:
            raise FlussError(f"Fluss hitting illegal argument error {exc}.") from None
        names = [f.name for f in schema]
        dups = []
        for n in names:
            if names.count(n) > 1 and n not in dups:
                dups.append(n)
        if dups:
            raise FlussError("Failed to build schema: Fluss API Error: ApiError { code: 15, message: "
                             + rust_str(f"Duplicate column names found: {rust_set(dups)}") + " }.")
        missing = [k for k in pk if k not in names]
        if missing:
            raise FlussError("Failed to build schema: Fluss API Error: ApiError { code: 15, message: "
                             + rust_str(f"Primary key columns {rust_set(dict.fromkeys(pk))} not found in schema")
                             + " }.")
        auto: tuple[str, ...] = ()
        if auto_increment_column is not None:
            if not pk:
                raise FlussError("Failed to build schema: Fluss hitting illegal argument error "
                                 "Auto increment column can only be used in primary-key table..")
            if auto_increment_column not in names:
                raise FlussError("Failed to build schema: Fluss hitting illegal argument error Auto increment "
                                 f"column '{auto_increment_column}' is not found in the schema columns..")
            col_type = info.columns[names.index(auto_increment_column)].type
            if col_type.root not in ("INTEGER", "BIGINT"):
                raise FlussError("Failed to build schema: Fluss hitting illegal argument error "
                                 "The data type of auto increment column must be INT or BIGINT..")
            if auto_increment_column in pk:
                raise FlussError("Failed to build schema: Fluss hitting illegal argument error Auto increment "
                                 f"column '{auto_increment_column}' can not be used as the primary key..")
            auto = (auto_increment_column,)
        info = SchemaInfo.from_arrow(schema, tuple(pk), auto)
        # A field's "comment" metadata becomes the column comment, as pyfluss does.
        cols = list(info.columns)
        for i, f in enumerate(schema):
            md = f.metadata or {}
            comment = md.get(b"comment")
            if comment is not None:
                cols[i] = replace(cols[i], comment=comment.decode("utf-8"))
        self._info = _assign_field_ids(replace(info, columns=tuple(cols)))

    @staticmethod
    def _from_info(info: SchemaInfo) -> Schema:
        s = Schema.__new__(Schema)
        s._info = info
        return s

    @property
    def info(self) -> SchemaInfo:
        """The schema in Fluss terms (columns with Fluss types, primary key); fluss_fast's own form."""
        return self._info

    def get_column_names(self) -> list[str]:
        """The column names, in order."""
        return [c.name for c in self._info.columns]

    def get_column_types(self) -> list[str]:
        """The Fluss types of the columns as strings (``"BIGINT"``, ``"STRING"``, ...), in order."""
        return [str(c.type) for c in self._info.columns]

    def get_columns(self) -> list[tuple[str, str]]:
        """``(name, Fluss type)`` pairs, in order."""
        return [(c.name, str(c.type)) for c in self._info.columns]

    def get_primary_keys(self) -> list[str]:
        """The primary-key columns; empty for a log table."""
        return list(self._info.primary_key)

    def get_auto_increment_columns(self) -> list[str]:
        """The auto-increment column, in a list (empty if none)."""
        return list(self._info.auto_increment_columns)

    def to_arrow(self):
        """The schema as a ``pyarrow.Schema`` (unsigned Arrow types come back signed, as Fluss stores them)."""
        return self._info.to_arrow()

    def __str__(self) -> str:
        cols = ", ".join(f"({rust_str(n)}, {rust_str(t)})" for n, t in self.get_columns())
        return f"Schema: columns=[{cols}]"

    def __repr__(self) -> str:
        return self.__str__()

    def __eq__(self, other):
        if not isinstance(other, Schema):
            return NotImplemented
        return self._info == other._info

    __hash__ = object.__hash__

    def __reduce__(self):
        return (_schema_from_json, (json.dumps(self._info.to_json()),))


def _reassign(t: DataType, counter: list) -> DataType:
    if t.root == "ARRAY":
        return replace(t, element=_reassign(t.element, counter))
    if t.root == "MAP":
        key = _reassign(t.key, counter)
        return replace(t, key=key, value=_reassign(t.value, counter))
    if t.root == "ROW":
        fields = []
        for f in t.fields:
            counter[0] += 1
            fid = counter[0]
            fields.append(replace(f, type=_reassign(f.type, counter), field_id=fid))
        return replace(t, fields=tuple(fields))
    return t


def _assign_field_ids(info: SchemaInfo) -> SchemaInfo:
    """Ids the way pyfluss numbers a new schema: depth first, a column before its nested ROW fields."""
    counter = [-1]
    cols = []
    for c in info.columns:
        counter[0] += 1
        cid = counter[0]
        cols.append(replace(c, id=cid, type=_reassign(c.type, counter)))
    return replace(info, columns=tuple(cols), highest_field_id=counter[0])


def _schema_from_json(text: str) -> Schema:
    return Schema._from_info(SchemaInfo.from_json(json.loads(text)))


def _parse_format(kind: str, value, allowed) -> str:
    text = want_str(kind, value) if not isinstance(value, str) else value
    up = text.upper()
    if up not in allowed:
        raise FlussError("Fluss API Error: ApiError { code: 15, message: "
                         + rust_str(f"Unknown {kind.replace('_', ' ')}: {text}") + " }.")
    return up


class TableDescriptor:
    """Everything CREATE_TABLE needs; ``info`` is the JSON-ready ``TableDescriptorInfo``."""

    __slots__ = ("_info",)

    def __init__(self, schema: Schema, **kwargs):
        want_instance("schema", schema, Schema)
        partition_keys: list[str] = []
        bucket_keys: list[str] = []
        bucket_count = None
        properties: dict[str, str] = {}
        custom: dict[str, str] = {}
        comment = None
        log_format = kv_format = None
        # pyfluss reads known keys from **kwargs and ignores everything else.
        if "partition_keys" in kwargs:
            partition_keys = want_str_list(None, kwargs["partition_keys"])
        if "bucket_count" in kwargs:
            v = kwargs["bucket_count"]
            try:
                bucket_count = operator.index(v)
            except TypeError:
                raise TypeError(f"'{type_name(v)}' object cannot be interpreted as an integer") from None
            if not I32[0] <= bucket_count <= I32[1]:
                raise OverflowError("out of range integral type conversion attempted")
        if "bucket_keys" in kwargs:
            bucket_keys = want_str_list(None, kwargs["bucket_keys"])
        if "properties" in kwargs:
            properties = want_str_dict(None, kwargs["properties"])
        if "custom_properties" in kwargs:
            custom = want_str_dict(None, kwargs["custom_properties"])
        if "comment" in kwargs:
            c = kwargs["comment"]
            if not isinstance(c, str):
                raise TypeError("'None' is not an instance of 'str'" if c is None
                                else f"'{type_name(c)}' object is not an instance of 'str'")
            comment = c
        if "log_format" in kwargs:
            log_format = _parse_format("log_format", kwargs["log_format"], ("ARROW", "INDEXED"))
        if "kv_format" in kwargs:
            kv_format = _parse_format("kv_format", kwargs["kv_format"], ("INDEXED", "COMPACTED"))

        info = schema._info
        pk = list(info.primary_key)
        bad = [k for k in bucket_keys if k in partition_keys]
        if bad:
            raise FlussError("Failed to build TableDescriptor: Fluss API Error: ApiError { code: 15, message: "
                             + rust_str(f"Bucket key {rust_list(bucket_keys)} shouldn't include any column in "
                                         f"partition keys {rust_list(partition_keys)}.") + " }.")
        if pk:
            default_keys = [k for k in pk if k not in partition_keys]
            if not default_keys:
                raise FlussError("Failed to build TableDescriptor: Fluss API Error: ApiError { code: 15, message: "
                                 + rust_str(f"Primary Key constraint {rust_list(pk)} should not be same with "
                                             f"partition fields {rust_list(partition_keys)}.") + " }.")
            if not bucket_keys:
                bucket_keys = default_keys
            elif not all(k in pk for k in bucket_keys):
                raise FlussError(
                    "Failed to build TableDescriptor: Fluss API Error: ApiError { code: 15, message: "
                    + rust_str("Bucket keys must be a subset of primary keys excluding partition keys for "
                                f"primary-key tables. The primary keys are {rust_list(pk)}, the partition keys "
                                f"are {rust_list(partition_keys)}, but the user-defined bucket keys are "
                                f"{rust_list(bucket_keys)}.") + " }.")
        if log_format is not None:
            properties["table.log.format"] = log_format
        if kv_format is not None:
            properties["table.kv.format"] = kv_format
        self._info = TableDescriptorInfo(info, tuple(partition_keys), tuple(bucket_keys), bucket_count,
                                         properties, custom, comment)

    @staticmethod
    def _from_info(info: TableDescriptorInfo) -> TableDescriptor:
        d = TableDescriptor.__new__(TableDescriptor)
        d._info = info
        return d

    @property
    def info(self) -> TableDescriptorInfo:
        """The descriptor in fluss_fast's own form (what is sent as the table's JSON)."""
        return self._info

    def get_schema(self) -> Schema:
        """The table's `Schema`."""
        return Schema._from_info(self._info.schema)

    def to_json_bytes(self) -> bytes:
        """The descriptor as the JSON the CREATE_TABLE request carries."""
        return self._info.to_json_bytes()

    def __repr__(self) -> str:
        i = self._info
        return (f"TableDescriptor(columns={[c.name for c in i.schema.columns]}, "
                f"partition_keys={list(i.partition_keys)}, bucket_keys={list(i.bucket_keys)}, "
                f"bucket_count={i.bucket_count})")

    def __reduce__(self):
        return (_descriptor_from_json, (self._info.to_json_bytes(),))


def _descriptor_from_json(data: bytes) -> TableDescriptor:
    return TableDescriptor._from_info(TableDescriptorInfo.from_json_bytes(data))
