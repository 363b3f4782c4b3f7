"""Public value types, shaped like pyfluss 1.0.0's (constructors, properties, reprs, equality).

Messages of the validation errors follow pyfluss's (which formats Rust ``Debug`` values), so code that
matches on them keeps working.
"""
from __future__ import annotations

import json
import operator
from dataclasses import replace
from enum import IntEnum
from typing import Dict, List, Optional, Tuple

from .datatypes import DataType, SchemaInfo, TableDescriptorInfo
from .errors import FlussError

EARLIEST_OFFSET = -2
LATEST_OFFSET = -1

_I32 = (-(1 << 31), (1 << 31) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)


def _rust_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _rust_list(items) -> str:
    return "[" + ", ".join(_rust_str(i) for i in items) + "]"


def _rust_set(items) -> str:
    return "{" + ", ".join(_rust_str(i) for i in items) + "}"


def _rust_map(d: dict) -> str:
    return "{" + ", ".join(f"{_rust_str(k)}: {_rust_str(v)}" for k, v in d.items()) + "}"


def _type_name(value) -> str:
    return "None" if value is None else type(value).__name__


def _want_instance(arg: str, value, cls):
    if not isinstance(value, cls):
        raise TypeError(f"argument '{arg}': '{_type_name(value)}' object is not an instance of '{cls.__name__}'")
    return value


def _want_str(arg: str, value) -> str:
    if not isinstance(value, str):
        if value is None:
            raise TypeError(f"argument '{arg}': 'None' is not an instance of 'str'")
        raise TypeError(f"argument '{arg}': '{_type_name(value)}' object is not an instance of 'str'")
    return value


def _want_int(arg: str, value, bounds=_I64) -> int:
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"argument '{arg}': '{_type_name(value)}' object cannot be interpreted as an integer") from None
    if not bounds[0] <= n <= bounds[1]:
        raise OverflowError("out of range integral type conversion attempted")
    return int(n)


def _want_str_list(arg: Optional[str], value) -> List[str]:
    prefix = f"argument '{arg}': " if arg else ""
    if isinstance(value, str):
        raise TypeError(f"{prefix}Can't extract `str` to `Vec`")
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{prefix}'{_type_name(value)}' object cannot be converted to 'Sequence'") from None
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{prefix}'{_type_name(item)}' object is not an instance of 'str'")
    return items


def _want_str_dict(arg: Optional[str], value) -> Dict[str, str]:
    prefix = f"argument '{arg}': " if arg else ""
    if not isinstance(value, dict):
        raise TypeError(f"{prefix}'{_type_name(value)}' object is not an instance of 'dict'")
    for k, v in value.items():
        for item in (k, v):
            if not isinstance(item, str):
                raise TypeError(f"{prefix}'{_type_name(item)}' object is not an instance of 'str'")
    return dict(value)


class ChangeType(IntEnum):
    """Represents the type of change for a record in a log."""

    AppendOnly = 0
    Insert = 1
    UpdateBefore = 2
    UpdateAfter = 3
    Delete = 4

    def short_string(self) -> str:
        """The change type as Fluss prints it: ``+A``, ``+I``, ``-U``, ``+U`` or ``-D``."""
        return _SHORT[self]

    def __str__(self) -> str:
        return _SHORT[self]

    def __repr__(self) -> str:
        return f"ChangeType.{self.name}"

    @classmethod
    def from_byte(cls, value: int) -> "ChangeType":
        """The change type stored as ``value`` in a log record.

        Args:
            value: 0 (append-only) to 4 (delete).

        Returns:
            The `ChangeType`.

        Raises:
            KeyError: ``value`` is not a change type.
        """
        return _BY_BYTE[value]


_SHORT = {0: "+A", 1: "+I", 2: "-U", 3: "+U", 4: "-D"}
_BY_BYTE = {int(c): c for c in ChangeType}

#: joins a partition's values, in partition-key order, into its name ("2024$eu"); client and server
PARTITION_SEPARATOR = "$"


class TablePath:
    """A table's database and name, e.g. ``TablePath("shop", "orders")``.

    A table name ending in ``$changelog`` or ``$binlog`` names a virtual table of the base table
    (see `FlussConnection.get_table`). Hashable; equal when both parts are.

    Args:
        database_name: The database.
        table_name: The table.
    """
    __slots__ = ("_db", "_table")

    def __init__(self, database_name: str, table_name: str):
        self._db = _want_str("database_name", database_name)
        self._table = _want_str("table_name", table_name)

    @property
    def database_name(self) -> str:
        """The database name."""
        return self._db

    @property
    def table_name(self) -> str:
        """The table name."""
        return self._table

    def table_path_str(self) -> str:
        """The path as ``"database.table"``."""
        return f"{self._db}.{self._table}"

    def __str__(self) -> str:
        return f"{self._db}.{self._table}"

    def __repr__(self) -> str:
        return f"TablePath('{self._db}', '{self._table}')"

    def __hash__(self) -> int:
        return hash((self._db, self._table))

    def __eq__(self, other) -> bool:
        if not isinstance(other, TablePath):
            return False
        return self._db == other._db and self._table == other._table

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __reduce__(self):
        return (TablePath, (self._db, self._table))

    # -- wire helpers ------------------------------------------------------------------------------
    def _to_pb(self, msg) -> None:
        msg.database_name = self._db
        msg.table_name = self._table


class TableBucket:
    """One bucket of a table, or of one partition of a partitioned table.

    Args:
        table_id: The table's id (``TableInfo.table_id``).
        bucket: The bucket number, ``0 .. num_buckets - 1``.
    """
    __slots__ = ("_table_id", "_partition_id", "_bucket")

    def __init__(self, table_id: int, bucket: int):
        self._table_id = _want_int("table_id", table_id)
        self._partition_id = None
        self._bucket = _want_int("bucket", bucket, _I32)

    @staticmethod
    def with_partition(table_id: int, partition_id: int, bucket: int) -> "TableBucket":
        """A bucket of one partition.

        Args:
            table_id: The table's id.
            partition_id: The partition's id (``PartitionInfo.partition_id``).
            bucket: The bucket number.

        Returns:
            The `TableBucket`.
        """
        tb = TableBucket(table_id, bucket)
        tb._partition_id = _want_int("partition_id", partition_id)
        return tb

    @staticmethod
    def _make(table_id: int, partition_id: Optional[int], bucket: int) -> "TableBucket":
        tb = TableBucket.__new__(TableBucket)
        tb._table_id = table_id
        tb._partition_id = partition_id
        tb._bucket = bucket
        return tb

    @property
    def table_id(self) -> int:
        """The table's id."""
        return self._table_id

    @property
    def bucket_id(self) -> int:
        """The bucket number."""
        return self._bucket

    @property
    def partition_id(self) -> Optional[int]:
        """The partition's id, or ``None`` for a non-partitioned table."""
        return self._partition_id

    def __hash__(self) -> int:
        return hash((self._table_id, self._partition_id, self._bucket))

    def __eq__(self, other) -> bool:
        if not isinstance(other, TableBucket):
            return False
        return (self._table_id == other._table_id and self._partition_id == other._partition_id
                and self._bucket == other._bucket)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __str__(self) -> str:
        if self._partition_id is not None:
            return f"TableBucket(table_id={self._table_id}, partition_id={self._partition_id}, bucket={self._bucket})"
        return f"TableBucket(table_id={self._table_id}, bucket={self._bucket})"

    __repr__ = __str__

    def __reduce__(self):
        return (TableBucket._make, (self._table_id, self._partition_id, self._bucket))


class Schema:
    """A table schema declared with a ``pyarrow.Schema`` (``info`` holds the Fluss form)."""

    __slots__ = ("_info",)

    def __init__(self, schema, primary_keys: Optional[List[str]] = None,
                 auto_increment_column: Optional[str] = None):
        import pyarrow as pa

        pk = [] if primary_keys is None else _want_str_list("primary_keys", primary_keys)
        if auto_increment_column is not None:
            _want_str("auto_increment_column", auto_increment_column)
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
                             + _rust_str(f"Duplicate column names found: {_rust_set(dups)}") + " }.")
        missing = [k for k in pk if k not in names]
        if missing:
            raise FlussError("Failed to build schema: Fluss API Error: ApiError { code: 15, message: "
                             + _rust_str(f"Primary key columns {_rust_set(dict.fromkeys(pk))} not found in schema")
                             + " }.")
        auto = ()
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
    def _from_info(info: SchemaInfo) -> "Schema":
        s = Schema.__new__(Schema)
        s._info = info
        return s

    @property
    def info(self) -> SchemaInfo:
        """The schema in Fluss terms (columns with Fluss types, primary key); fluss_fast's own form."""
        return self._info

    def get_column_names(self) -> List[str]:
        """The column names, in order."""
        return [c.name for c in self._info.columns]

    def get_column_types(self) -> List[str]:
        """The Fluss types of the columns as strings (``"BIGINT"``, ``"STRING"``, ...), in order."""
        return [str(c.type) for c in self._info.columns]

    def get_columns(self) -> List[Tuple[str, str]]:
        """``(name, Fluss type)`` pairs, in order."""
        return [(c.name, str(c.type)) for c in self._info.columns]

    def get_primary_keys(self) -> List[str]:
        """The primary-key columns; empty for a log table."""
        return list(self._info.primary_key)

    def get_auto_increment_columns(self) -> List[str]:
        """The auto-increment column, in a list (empty if none)."""
        return list(self._info.auto_increment_columns)

    def to_arrow(self):
        """The schema as a ``pyarrow.Schema`` (unsigned Arrow types come back signed, as Fluss stores them)."""
        return self._info.to_arrow()

    def __str__(self) -> str:
        cols = ", ".join(f"({_rust_str(n)}, {_rust_str(t)})" for n, t in self.get_columns())
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
    text = _want_str(kind, value) if not isinstance(value, str) else value
    up = text.upper()
    if up not in allowed:
        raise FlussError("Fluss API Error: ApiError { code: 15, message: "
                         + _rust_str(f"Unknown {kind.replace('_', ' ')}: {text}") + " }.")
    return up


class TableDescriptor:
    """Everything CREATE_TABLE needs; ``info`` is the JSON-ready ``TableDescriptorInfo``."""

    __slots__ = ("_info",)

    def __init__(self, schema: Schema, **kwargs):
        _want_instance("schema", schema, Schema)
        partition_keys: List[str] = []
        bucket_keys: List[str] = []
        bucket_count = None
        properties: Dict[str, str] = {}
        custom: Dict[str, str] = {}
        comment = None
        log_format = kv_format = None
        # pyfluss reads known keys from **kwargs and ignores everything else.
        if "partition_keys" in kwargs:
            partition_keys = _want_str_list(None, kwargs["partition_keys"])
        if "bucket_count" in kwargs:
            v = kwargs["bucket_count"]
            try:
                bucket_count = operator.index(v)
            except TypeError:
                raise TypeError(f"'{_type_name(v)}' object cannot be interpreted as an integer") from None
            if not _I32[0] <= bucket_count <= _I32[1]:
                raise OverflowError("out of range integral type conversion attempted")
        if "bucket_keys" in kwargs:
            bucket_keys = _want_str_list(None, kwargs["bucket_keys"])
        if "properties" in kwargs:
            properties = _want_str_dict(None, kwargs["properties"])
        if "custom_properties" in kwargs:
            custom = _want_str_dict(None, kwargs["custom_properties"])
        if "comment" in kwargs:
            c = kwargs["comment"]
            if not isinstance(c, str):
                raise TypeError("'None' is not an instance of 'str'" if c is None
                                else f"'{_type_name(c)}' object is not an instance of 'str'")
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
                             + _rust_str(f"Bucket key {_rust_list(bucket_keys)} shouldn't include any column in "
                                         f"partition keys {_rust_list(partition_keys)}.") + " }.")
        if pk:
            default_keys = [k for k in pk if k not in partition_keys]
            if not default_keys:
                raise FlussError("Failed to build TableDescriptor: Fluss API Error: ApiError { code: 15, message: "
                                 + _rust_str(f"Primary Key constraint {_rust_list(pk)} should not be same with "
                                             f"partition fields {_rust_list(partition_keys)}.") + " }.")
            if not bucket_keys:
                bucket_keys = default_keys
            elif not all(k in pk for k in bucket_keys):
                raise FlussError(
                    "Failed to build TableDescriptor: Fluss API Error: ApiError { code: 15, message: "
                    + _rust_str("Bucket keys must be a subset of primary keys excluding partition keys for "
                                f"primary-key tables. The primary keys are {_rust_list(pk)}, the partition keys "
                                f"are {_rust_list(partition_keys)}, but the user-defined bucket keys are "
                                f"{_rust_list(bucket_keys)}.") + " }.")
        if log_format is not None:
            properties["table.log.format"] = log_format
        if kv_format is not None:
            properties["table.kv.format"] = kv_format
        self._info = TableDescriptorInfo(info, tuple(partition_keys), tuple(bucket_keys), bucket_count,
                                         properties, custom, comment)

    @staticmethod
    def _from_info(info: TableDescriptorInfo) -> "TableDescriptor":
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


class TableInfo:
    """What the server stores for a table (its descriptor includes the server's defaults)."""

    __slots__ = ("_table_id", "_schema_id", "_path", "_descriptor", "_created", "_modified")

    def __init__(self, table_path: TablePath, table_id: int, schema_id: int,
                 descriptor: TableDescriptorInfo, created_time: int = 0, modified_time: int = 0):
        self._path = table_path
        self._table_id = table_id
        self._schema_id = schema_id
        self._descriptor = descriptor
        self._created = created_time
        self._modified = modified_time

    @staticmethod
    def from_meta(meta) -> "TableInfo":
        """The `TableInfo` of the client's cached table metadata.

        Args:
            meta: Metadata as the client keeps it (``FlussTable`` holds one).

        Returns:
            The `TableInfo`.
        """
        return TableInfo(meta.path, meta.table_id, meta.schema_id, meta.descriptor, meta.created_time,
                         meta.modified_time)

    @property
    def table_id(self) -> int:
        """The table's id, assigned by the server and never reused."""
        return self._table_id

    @property
    def schema_id(self) -> int:
        """The id of the table's current schema."""
        return self._schema_id

    @property
    def created_time(self) -> int:
        """Creation time, milliseconds since the epoch."""
        return self._created

    @property
    def modified_time(self) -> int:
        """Last modification time, milliseconds since the epoch."""
        return self._modified

    @property
    def table_path(self) -> TablePath:
        """The table's database and name."""
        return self._path

    @property
    def num_buckets(self) -> int:
        """The number of buckets (per partition, for a partitioned table)."""
        bc = self._descriptor.bucket_count
        return 1 if bc is None else bc

    @property
    def comment(self) -> Optional[str]:
        """The table's comment, or ``None``."""
        return self._descriptor.comment

    @property
    def descriptor(self) -> TableDescriptorInfo:
        """The stored descriptor in fluss_fast's own form (the server's defaults filled in)."""
        return self._descriptor

    def get_primary_keys(self) -> List[str]:
        """The primary-key columns; empty for a log table."""
        return list(self._descriptor.schema.primary_key)

    def get_bucket_keys(self) -> List[str]:
        """The columns that pick a row's bucket; empty when rows are spread without a key."""
        return list(self._descriptor.bucket_keys)

    def get_partition_keys(self) -> List[str]:
        """The partition columns; empty for a non-partitioned table."""
        return list(self._descriptor.partition_keys)

    def has_primary_key(self) -> bool:
        """Whether the table is a primary-key table."""
        return bool(self._descriptor.schema.primary_key)

    def is_partitioned(self) -> bool:
        """Whether the table is partitioned."""
        return bool(self._descriptor.partition_keys)

    def get_properties(self) -> Dict[str, str]:
        """The table properties (``table.*`` keys), including the server's defaults."""
        return dict(self._descriptor.properties)

    def get_custom_properties(self) -> Dict[str, str]:
        """The user's custom properties."""
        return dict(self._descriptor.custom_properties)

    def get_schema(self) -> Schema:
        """The table's `Schema`."""
        return Schema._from_info(self._descriptor.schema)

    def get_column_names(self) -> List[str]:
        """The column names, in order."""
        return [c.name for c in self._descriptor.schema.columns]

    def get_column_count(self) -> int:
        """The number of columns."""
        return len(self._descriptor.schema.columns)

    def __repr__(self) -> str:
        return (f"TableInfo(table_path={self._path!r}, table_id={self._table_id}, schema_id={self._schema_id}, "
                f"num_buckets={self.num_buckets}, columns={self.get_column_names()})")

    def __reduce__(self):
        return (_table_info_from_json, (self._path.database_name, self._path.table_name, self._table_id,
                                        self._schema_id, self._descriptor.to_json_bytes(), self._created,
                                        self._modified))


def _table_info_from_json(db, table, table_id, schema_id, data, created, modified) -> TableInfo:
    return TableInfo(TablePath(db, table), table_id, schema_id, TableDescriptorInfo.from_json_bytes(data),
                     created, modified)


class PartitionInfo:
    """Information about a partition."""

    __slots__ = ("_id", "_name", "_spec")

    def __init__(self, partition_id: int, partition_name: str, spec: Optional[Dict[str, str]] = None):
        self._id = partition_id
        self._name = partition_name
        self._spec = dict(spec) if spec else {}

    @property
    def partition_id(self) -> int:
        """The partition's id (for `TableBucket.with_partition` and ``subscribe_partition``)."""
        return self._id

    @property
    def partition_name(self) -> str:
        """The partition's name: its values in partition-key order, joined with ``$``."""
        return self._name

    @property
    def partition_spec(self) -> Dict[str, str]:
        """``{partition key: value}``."""
        return dict(self._spec)

    def __repr__(self) -> str:
        return f"PartitionInfo(partition_id={self._id}, partition_name='{self._name}')"

    def __eq__(self, other):
        if not isinstance(other, PartitionInfo):
            return NotImplemented
        return self._id == other._id and self._name == other._name

    def __hash__(self):
        return hash((self._id, self._name))

    def __reduce__(self):
        return (PartitionInfo, (self._id, self._name, self._spec))


COORDINATOR_SERVER = "CoordinatorServer"
TABLET_SERVER = "TabletServer"


class ServerNode:
    """Information about a server node in the Fluss cluster."""

    __slots__ = ("_id", "_host", "_port", "_type")

    def __init__(self, id: int, host: str, port: int, server_type: str):
        self._id = id
        self._host = host
        self._port = port
        self._type = server_type

    @property
    def id(self) -> int:
        """The server's node id (the coordinator is 0 on the embedded server)."""
        return self._id

    @property
    def host(self) -> str:
        """The host the server listens on."""
        return self._host

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return self._port

    @property
    def server_type(self) -> str:
        """``"CoordinatorServer"`` or ``"TabletServer"``."""
        return self._type

    @property
    def uid(self) -> str:
        """A stable name: ``cs-ID`` for a coordinator, ``ts-ID`` for a tablet server."""
        if self._type == COORDINATOR_SERVER:
            return f"cs-{self._id}"
        if self._type == TABLET_SERVER:
            return f"ts-{self._id}"
        return f"unknown-{self._host}:{self._port}"

    def __repr__(self) -> str:
        return f"ServerNode(id={self._id}, host='{self._host}', port={self._port}, server_type='{self._type}')"

    def __eq__(self, other):
        if not isinstance(other, ServerNode):
            return NotImplemented
        return (self._id, self._host, self._port, self._type) == (other._id, other._host, other._port, other._type)

    def __hash__(self):
        return hash((self._id, self._host, self._port, self._type))

    def __reduce__(self):
        return (ServerNode, (self._id, self._host, self._port, self._type))


class DatabaseDescriptor:
    """Descriptor for a Fluss database (comment and custom properties)."""

    __slots__ = ("_comment", "_custom")

    def __init__(self, comment: Optional[str] = None, custom_properties: Optional[Dict[str, str]] = None):
        if comment is not None:
            _want_str("comment", comment)
        self._comment = comment
        self._custom = {} if custom_properties is None else _want_str_dict("custom_properties", custom_properties)

    @property
    def comment(self) -> Optional[str]:
        """The database's comment, or ``None``."""
        return self._comment

    def get_custom_properties(self) -> Dict[str, str]:
        """The database's custom properties."""
        return dict(self._custom)

    def to_json_bytes(self) -> bytes:
        """The descriptor as the JSON the CREATE_DATABASE request carries."""
        out = {"version": 1}
        if self._comment is not None:
            out["comment"] = self._comment
        out["custom_properties"] = dict(self._custom)
        return json.dumps(out, separators=(",", ":")).encode()

    @staticmethod
    def from_json_bytes(data: bytes) -> "DatabaseDescriptor":
        """A descriptor read from the server's JSON.

        Args:
            data: The JSON bytes.

        Returns:
            The `DatabaseDescriptor`.

        Raises:
            ValueError: The bytes are not JSON.
        """
        if not data:
            return DatabaseDescriptor()
        obj = json.loads(bytes(data).decode("utf-8"))
        return DatabaseDescriptor(obj.get("comment"), obj.get("custom_properties") or {})

    def __repr__(self) -> str:
        c = "None" if self._comment is None else f"Some({_rust_str(self._comment)})"
        return f"DatabaseDescriptor(comment={c}, custom_properties={_rust_map(self._custom)})"

    def __eq__(self, other):
        if not isinstance(other, DatabaseDescriptor):
            return NotImplemented
        return self._comment == other._comment and self._custom == other._custom

    __hash__ = None

    def __reduce__(self):
        return (DatabaseDescriptor, (self._comment, self._custom))


class DatabaseInfo:
    """Information about a Fluss database."""

    __slots__ = ("_name", "_descriptor", "_created", "_modified")

    def __init__(self, database_name: str, descriptor: DatabaseDescriptor, created_time: int, modified_time: int):
        self._name = database_name
        self._descriptor = descriptor
        self._created = created_time
        self._modified = modified_time

    @property
    def database_name(self) -> str:
        """The database name."""
        return self._name

    def get_database_descriptor(self) -> DatabaseDescriptor:
        """The database's `DatabaseDescriptor`."""
        return self._descriptor

    @property
    def created_time(self) -> int:
        """Creation time, milliseconds since the epoch."""
        return self._created

    @property
    def modified_time(self) -> int:
        """Last modification time, milliseconds since the epoch."""
        return self._modified

    def __repr__(self) -> str:
        return (f"DatabaseInfo(database_name='{self._name}', created_time={self._created}, "
                f"modified_time={self._modified})")


class LakeSnapshot:
    """A table's latest lake snapshot: its id and how far each bucket has been tiered.

    Returned by `FlussAdmin.get_latest_lake_snapshot`.

    Args:
        snapshot_id: The snapshot's id.
    """
    __slots__ = ("_snapshot_id", "_offsets")

    def __init__(self, snapshot_id: int):
        self._snapshot_id = _want_int("snapshot_id", snapshot_id)
        self._offsets: Dict[TableBucket, int] = {}

    @staticmethod
    def _make(snapshot_id: int, offsets: Dict[TableBucket, int]) -> "LakeSnapshot":
        s = LakeSnapshot(snapshot_id)
        s._offsets = dict(offsets)
        return s

    @property
    def snapshot_id(self) -> int:
        """The snapshot's id."""
        return self._snapshot_id

    @property
    def table_buckets_offset(self) -> Dict[TableBucket, int]:
        """``{TableBucket: log offset}`` of every bucket in the snapshot (a copy)."""
        return dict(self._offsets)

    def get_bucket_offset(self, bucket: TableBucket) -> Optional[int]:
        """The offset one bucket has been tiered up to.

        Args:
            bucket: The bucket.

        Returns:
            The offset, or ``None`` if the snapshot does not cover the bucket.
        """
        return self._offsets.get(_want_instance("bucket", bucket, TableBucket))

    def get_table_buckets(self) -> List[TableBucket]:
        """The buckets in the snapshot."""
        return list(self._offsets)

    def __str__(self) -> str:
        return f"LakeSnapshot(snapshot_id={self._snapshot_id}, buckets_count={len(self._offsets)})"

    __repr__ = __str__

    def __reduce__(self):
        return (LakeSnapshot._make, (self._snapshot_id, self._offsets))


class OffsetSpec:
    """Offset specification for list_offsets(): ``earliest()``, ``latest()`` or ``timestamp(ts)``."""

    EARLIEST = 0
    LATEST = 1
    TIMESTAMP = 2

    __slots__ = ("_type", "_ts")

    def __init__(self, offset_type: int = 1, timestamp: Optional[int] = None):
        self._type = offset_type
        self._ts = timestamp

    @staticmethod
    def earliest() -> "OffsetSpec":
        """The first offset each bucket still holds (remote segments included)."""
        return OffsetSpec(OffsetSpec.EARLIEST)

    @staticmethod
    def latest() -> "OffsetSpec":
        """The offset the next record will get (the end of the log)."""
        return OffsetSpec(OffsetSpec.LATEST)

    @staticmethod
    def timestamp(ts: int) -> "OffsetSpec":
        """The first offset whose commit time is at or after ``ts``.

        Args:
            ts: Milliseconds since the epoch.

        Returns:
            The `OffsetSpec`.
        """
        return OffsetSpec(OffsetSpec.TIMESTAMP, _want_int("ts", ts))

    @property
    def offset_type(self) -> int:
        """``OffsetSpec.EARLIEST`` (0), ``LATEST`` (1) or ``TIMESTAMP`` (2)."""
        return self._type

    @property
    def timestamp_ms(self) -> Optional[int]:
        """The timestamp of a ``timestamp`` spec, else ``None``."""
        return self._ts

    def __repr__(self) -> str:
        if self._type == OffsetSpec.EARLIEST:
            return "OffsetSpec.earliest()"
        if self._type == OffsetSpec.LATEST:
            return "OffsetSpec.latest()"
        return f"OffsetSpec.timestamp({self._ts})"

    def __eq__(self, other):
        if not isinstance(other, OffsetSpec):
            return NotImplemented
        return self._type == other._type and self._ts == other._ts

    def __hash__(self):
        return hash((self._type, self._ts))

    def __reduce__(self):
        return (OffsetSpec, (self._type, self._ts))


__all__ = [
    "ChangeType", "TablePath", "TableBucket", "Schema", "TableDescriptor", "TableInfo", "PartitionInfo",
    "ServerNode", "DatabaseDescriptor", "DatabaseInfo", "LakeSnapshot", "OffsetSpec", "EARLIEST_OFFSET",
    "LATEST_OFFSET", "DataType",
]
