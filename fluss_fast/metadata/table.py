"""Where a table's data is: ``TablePath``, ``TableBucket``, ``PartitionInfo``, and ``TableInfo``
(what the server stores for a table)."""
from __future__ import annotations

from ..datatypes import TableDescriptorInfo
from ._args import I32, want_int, want_str
from .schema import Schema

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
        self._db = want_str("database_name", database_name)
        self._table = want_str("table_name", table_name)

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
        self._table_id = want_int("table_id", table_id)
        self._partition_id: int | None = None
        self._bucket = want_int("bucket", bucket, I32)

    @staticmethod
    def with_partition(table_id: int, partition_id: int, bucket: int) -> TableBucket:
        """A bucket of one partition.

        Args:
            table_id: The table's id.
            partition_id: The partition's id (``PartitionInfo.partition_id``).
            bucket: The bucket number.

        Returns:
            The `TableBucket`.
        """
        tb = TableBucket(table_id, bucket)
        tb._partition_id = want_int("partition_id", partition_id)
        return tb

    @staticmethod
    def _make(table_id: int, partition_id: int | None, bucket: int) -> TableBucket:
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
    def partition_id(self) -> int | None:
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
    def from_meta(meta) -> TableInfo:
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
    def comment(self) -> str | None:
        """The table's comment, or ``None``."""
        return self._descriptor.comment

    @property
    def descriptor(self) -> TableDescriptorInfo:
        """The stored descriptor in fluss_fast's own form (the server's defaults filled in)."""
        return self._descriptor

    def get_primary_keys(self) -> list[str]:
        """The primary-key columns; empty for a log table."""
        return list(self._descriptor.schema.primary_key)

    def get_bucket_keys(self) -> list[str]:
        """The columns that pick a row's bucket; empty when rows are spread without a key."""
        return list(self._descriptor.bucket_keys)

    def get_partition_keys(self) -> list[str]:
        """The partition columns; empty for a non-partitioned table."""
        return list(self._descriptor.partition_keys)

    def has_primary_key(self) -> bool:
        """Whether the table is a primary-key table."""
        return bool(self._descriptor.schema.primary_key)

    def is_partitioned(self) -> bool:
        """Whether the table is partitioned."""
        return bool(self._descriptor.partition_keys)

    def get_properties(self) -> dict[str, str]:
        """The table properties (``table.*`` keys), including the server's defaults."""
        return dict(self._descriptor.properties)

    def get_custom_properties(self) -> dict[str, str]:
        """The user's custom properties."""
        return dict(self._descriptor.custom_properties)

    def get_schema(self) -> Schema:
        """The table's `Schema`."""
        return Schema._from_info(self._descriptor.schema)

    def get_column_names(self) -> list[str]:
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

    def __init__(self, partition_id: int, partition_name: str, spec: dict[str, str] | None = None):
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
    def partition_spec(self) -> dict[str, str]:
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
