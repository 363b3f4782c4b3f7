"""The values the wider admin surface takes and returns: table and database changes, ACL bindings,
config entries, KV snapshots, cluster health, rebalance progress and producer offsets.

Named after the Java client's classes (``TableChange``, ``AclBinding``, ``ConfigEntry``...), with
pyfluss's snake_case; the enum values are the Java codes the protocol carries.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from ..datatypes import DataType
from ..error_codes import CLIENT_ERROR
from ..errors import FlussError
from ..metadata._args import want_str
from ..metadata.table import TableBucket

# PbAlterConfig.op_type
_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3


def _data_type(value) -> DataType:
    if isinstance(value, DataType):
        return value
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        pa = None
    if pa is not None and isinstance(value, pa.DataType):
        return DataType.from_arrow(value)
    raise TypeError(f"argument 'data_type': expected a pyarrow.DataType, got '{type(value).__name__}'")


class TableChange:
    """One change of an `FlussAdmin.alter_table` call, as the Java client's ``TableChange``.

    Build them with the static methods: ``TableChange.set(key, value)``,
    ``TableChange.reset(key)`` and ``TableChange.add_column(name, data_type)``. A call alters
    either properties or the schema, not both (the server refuses a mix).
    """

    __slots__ = ("kind", "key", "value", "column_name", "data_type", "comment")

    def __init__(self, kind: str, key: str | None = None, value: str | None = None, column_name: str | None = None,
                 data_type: DataType | None = None, comment: str | None = None):
        self.kind = kind
        self.key = key
        self.value = value
        self.column_name = column_name
        self.data_type = data_type
        self.comment = comment

    @staticmethod
    def set(key: str, value: str) -> TableChange:
        """Set a table property (``table.*`` options the server lets you alter, or a custom one).

        Args:
            key: The property.
            value: Its new value.

        Returns:
            The change.
        """
        return TableChange("set", key=want_str("key", key), value=want_str("value", value))

    @staticmethod
    def reset(key: str) -> TableChange:
        """Remove a table property (it falls back to its default).

        Args:
            key: The property.

        Returns:
            The change.
        """
        return TableChange("reset", key=want_str("key", key))

    @staticmethod
    def add_column(name: str, data_type, comment: str | None = None) -> TableChange:
        """Add a nullable column at the end of the schema (a new schema id).

        Args:
            name: The column's name.
            data_type: Its type, a ``pyarrow.DataType`` (e.g. ``pa.string()``).
            comment: The column comment.

        Returns:
            The change.
        """
        if comment is not None:
            want_str("comment", comment)
        return TableChange("add_column", column_name=want_str("name", name), data_type=_data_type(data_type),
                           comment=comment)

    @staticmethod
    def drop_column(name: str) -> TableChange:
        """Drop a column (in the Java API; Fluss 1.0 servers refuse it).

        Args:
            name: The column.

        Returns:
            The change.
        """
        return TableChange("drop_column", column_name=want_str("name", name))

    @staticmethod
    def rename_column(old_name: str, new_name: str) -> TableChange:
        """Rename a column (in the Java API; Fluss 1.0 servers refuse it).

        Args:
            old_name: The column.
            new_name: Its new name.

        Returns:
            The change.
        """
        return TableChange("rename_column", column_name=want_str("old_name", old_name),
                           value=want_str("new_name", new_name))

    @staticmethod
    def modify_column(name: str, data_type, comment: str | None = None) -> TableChange:
        """Change a column's type or comment (in the Java API; Fluss 1.0 servers refuse it).

        Args:
            name: The column.
            data_type: Its new type, a ``pyarrow.DataType``.
            comment: Its new comment.

        Returns:
            The change.
        """
        if comment is not None:
            want_str("comment", comment)
        return TableChange("modify_column", column_name=want_str("name", name), data_type=_data_type(data_type),
                           comment=comment)

    def __eq__(self, other):
        if not isinstance(other, TableChange):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self.kind == "set":
            return f"TableChange.set({self.key!r}, {self.value!r})"
        if self.kind == "reset":
            return f"TableChange.reset({self.key!r})"
        if self.kind == "rename_column":
            return f"TableChange.rename_column({self.column_name!r}, {self.value!r})"
        if self.kind == "drop_column":
            return f"TableChange.drop_column({self.column_name!r})"
        return f"TableChange.{self.kind}({self.column_name!r}, {self.data_type})"


class DatabaseChange:
    """One change of an `FlussAdmin.alter_database` call, as the Java client's ``DatabaseChange``."""

    __slots__ = ("kind", "key", "value")

    def __init__(self, kind: str, key: str | None = None, value: str | None = None):
        self.kind = kind
        self.key = key
        self.value = value

    @staticmethod
    def set(key: str, value: str) -> DatabaseChange:
        """Set a custom property of the database.

        Args:
            key: The property.
            value: Its new value.

        Returns:
            The change.
        """
        return DatabaseChange("set", want_str("key", key), want_str("value", value))

    @staticmethod
    def reset(key: str) -> DatabaseChange:
        """Remove a custom property of the database.

        Args:
            key: The property.

        Returns:
            The change.
        """
        return DatabaseChange("reset", want_str("key", key))

    @staticmethod
    def update_comment(comment: str) -> DatabaseChange:
        """Replace the database's comment.

        Args:
            comment: The new comment.

        Returns:
            The change.
        """
        return DatabaseChange("comment", value=want_str("comment", comment))

    def __eq__(self, other):
        if not isinstance(other, DatabaseChange):
            return NotImplemented
        return (self.kind, self.key, self.value) == (other.kind, other.key, other.value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DatabaseChange({self.kind!r}, {self.key!r}, {self.value!r})"


@dataclass(frozen=True)
class SchemaInfo:
    """A table schema and its id, from `FlussAdmin.get_table_schema`.

    Attributes:
        schema: The schema (a `Schema`).
        schema_id: Its id; every ALTER TABLE that changes columns adds one.
    """

    schema: object
    schema_id: int


@dataclass(frozen=True)
class DatabaseSummary:
    """A database's name, creation time and table count, from `FlussAdmin.list_database_summaries`.

    Attributes:
        database_name: The name.
        created_time: Milliseconds since the epoch; ``-1`` from servers that send names only.
        table_count: Number of tables; ``-1`` from servers that send names only.
    """

    database_name: str
    created_time: int
    table_count: int


@dataclass(frozen=True)
class KvSnapshots:
    """The latest KV snapshot of each bucket of a primary-key table (or of one partition).

    Attributes:
        table_id: The table's id.
        partition_id: The partition's id, or ``None``.
        snapshot_ids: ``{bucket: snapshot id or None}`` (``None``: no snapshot yet).
        log_offsets: ``{bucket: log offset the snapshot covers, or None}``.
    """

    table_id: int
    partition_id: int | None
    snapshot_ids: dict[int, int | None]
    log_offsets: dict[int, int | None]

    def get_bucket_ids(self) -> list[int]:
        """The buckets, in order.

        Returns:
            The bucket ids.
        """
        return sorted(self.snapshot_ids)


@dataclass(frozen=True)
class KvSnapshotMetadata:
    """The files of one KV snapshot and the log offset it covers.

    Attributes:
        log_offset: Where reading the change log resumes after the snapshot.
        snapshot_files: ``[(remote path, local file name)]``.
    """

    log_offset: int
    snapshot_files: list[tuple[str, str]]


@dataclass(frozen=True)
class RemoteLogManifestInfo:
    """One bucket's remote-log manifest, from `FlussAdmin.list_remote_log_manifests`.

    Attributes:
        table_bucket: The bucket.
        remote_log_manifest_path: Where the manifest is.
        remote_log_end_offset: The offset the remote log reaches.
    """

    table_bucket: TableBucket
    remote_log_manifest_path: str
    remote_log_end_offset: int


class ResourceType(IntEnum):
    """What an ACL applies to (Java's codes)."""

    ANY = 1
    CLUSTER = 2
    DATABASE = 3
    TABLE = 4


class OperationType(IntEnum):
    """The operation an ACL allows (Java's codes)."""

    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DROP = 6
    ALTER = 7
    DESCRIBE = 8


class PermissionType(IntEnum):
    """ACL permission (Java's codes); Fluss has only ALLOW rules."""

    ANY = 1
    ALLOW = 2


#: The resource name of the cluster in ACLs (Java's ``Resource.FLUSS_CLUSTER``).
CLUSTER_RESOURCE = "fluss-cluster"


@dataclass(frozen=True)
class AclBinding:
    """One ACL rule: a principal may do an operation on a resource, from a host.

    Attributes:
        resource_type: `ResourceType` (``CLUSTER``, ``DATABASE``, ``TABLE``).
        resource_name: ``"fluss-cluster"``, a database name, or ``"db.table"``.
        principal_name: The user, e.g. ``"alice"`` (``"*"``: everyone).
        operation: `OperationType`.
        permission: `PermissionType`, ``ALLOW``.
        principal_type: The principal's type, ``"User"``.
        host: The client host, ``"*"`` for any.
    """

    resource_type: ResourceType
    resource_name: str
    principal_name: str
    operation: OperationType
    permission: PermissionType = PermissionType.ALLOW
    principal_type: str = "User"
    host: str = "*"

    def _to_pb(self, msg) -> None:
        msg.resource_name = self.resource_name
        msg.resource_type = int(self.resource_type)
        msg.principal_name = self.principal_name
        msg.principal_type = self.principal_type
        msg.host = self.host
        msg.operation_type = int(self.operation)
        msg.permission_type = int(self.permission)

    @staticmethod
    def _from_pb(msg) -> AclBinding:
        return AclBinding(_enum(ResourceType, msg.resource_type), msg.resource_name, msg.principal_name,
                          _enum(OperationType, msg.operation_type), _enum(PermissionType, msg.permission_type),
                          msg.principal_type, msg.host)


@dataclass(frozen=True)
class AclFilter:
    """Which ACLs to list or drop: ``None`` (or ``ANY``) fields match everything.

    Attributes:
        resource_type: `ResourceType`; ``ANY`` matches all.
        resource_name: The resource, or ``None`` for any.
        principal_name: The user, or ``None`` for any.
        operation: `OperationType`; ``ANY`` matches all.
        permission: `PermissionType`; ``ANY`` matches all.
        principal_type: ``"User"``, or ``None`` for any.
        host: The host, or ``None`` for any.
    """

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    principal_name: str | None = None
    operation: OperationType = OperationType.ANY
    permission: PermissionType = PermissionType.ANY
    principal_type: str | None = None
    host: str | None = None

    def _to_pb(self, msg) -> None:
        msg.resource_type = int(self.resource_type)
        msg.operation_type = int(self.operation)
        msg.permission_type = int(self.permission)
        for name in ("resource_name", "principal_name", "principal_type", "host"):
            value = getattr(self, name)
            if value is not None:
                setattr(msg, name, value)


def _enum(cls, code: int):
    try:
        return cls(code)
    except ValueError:
        return code


@dataclass(frozen=True)
class ConfigEntry:
    """One cluster configuration entry, from `FlussAdmin.describe_cluster_configs`.

    Attributes:
        key: The option's key.
        value: Its value, or ``None``.
        source: Where it comes from (``"DEFAULT"``, ``"INITIAL_SERVER_CONFIG"``, ``"DYNAMIC_SERVER_CONFIG"``).
    """

    key: str
    value: str | None
    source: str


@dataclass(frozen=True)
class AlterConfig:
    """One change of `FlussAdmin.alter_cluster_configs`.

    Attributes:
        key: The option's key.
        value: The value (``None`` to delete the option).
        op: ``"set"``, ``"delete"``, ``"append"`` or ``"subtract"``.
    """

    key: str
    value: str | None = None
    op: str = "set"

    def _op_code(self) -> int:
        codes = {"set": _SET, "delete": _DELETE, "append": _APPEND, "subtract": _SUBTRACT}
        code = codes.get(str(self.op).lower())
        if code is None:
            raise FlussError(f"Invalid alter config op '{self.op}': expected one of {', '.join(codes)}", CLIENT_ERROR)
        return code


class ClusterHealthStatus(IntEnum):
    """The cluster's overall health (Java's codes)."""

    GREEN = 0
    YELLOW = 1
    RED = 2
    UNKNOWN = 3


@dataclass(frozen=True)
class ClusterHealth:
    """Replica counts and overall status, from `FlussAdmin.get_cluster_health`.

    Attributes:
        num_replicas: All replicas of all buckets.
        in_sync_replicas: Replicas in their bucket's ISR.
        num_leader_replicas: Buckets (one leader each).
        active_leader_replicas: Buckets whose leader is alive.
        status: `ClusterHealthStatus`.
    """

    num_replicas: int
    in_sync_replicas: int
    num_leader_replicas: int
    active_leader_replicas: int
    status: ClusterHealthStatus


class ServerTag(IntEnum):
    """A tablet server tag for rebalancing (Java's codes)."""

    PERMANENT_OFFLINE = 0
    TEMPORARY_OFFLINE = 1


class GoalType(IntEnum):
    """A rebalance goal (Java's codes)."""

    REPLICA_DISTRIBUTION = 0
    LEADER_DISTRIBUTION = 1
    RACK_AWARE = 2


class RebalanceStatus(IntEnum):
    """A rebalance's (or one bucket move's) state (Java's codes)."""

    NOT_STARTED = 0
    REBALANCING = 1
    FAILED = 2
    COMPLETED = 3
    CANCELED = 4
    TIMEOUT = 5


_FINAL = (RebalanceStatus.FAILED, RebalanceStatus.COMPLETED, RebalanceStatus.CANCELED, RebalanceStatus.TIMEOUT)


@dataclass(frozen=True)
class RebalancePlanForBucket:
    """One bucket's move in a rebalance.

    Attributes:
        table_bucket: The bucket.
        original_leader: Its leader before, or ``None``.
        new_leader: Its leader after, or ``None``.
        original_replicas: Replica servers before.
        new_replicas: Replica servers after.
    """

    table_bucket: TableBucket
    original_leader: int | None
    new_leader: int | None
    original_replicas: list[int]
    new_replicas: list[int]


@dataclass(frozen=True)
class RebalanceProgress:
    """A rebalance's state, from `FlussAdmin.list_rebalance_progress`.

    Attributes:
        rebalance_id: The rebalance.
        status: `RebalanceStatus` of the whole.
        progress: Finished bucket moves over all of them, ``-1.0`` when there are none.
        buckets: ``{TableBucket: (RebalancePlanForBucket, RebalanceStatus)}``.
    """

    rebalance_id: str
    status: RebalanceStatus
    progress: float
    buckets: dict = field(default_factory=dict)


class RegisterResult(IntEnum):
    """The answer of `FlussAdmin.register_producer_offsets`."""

    CREATED = 0
    ALREADY_EXISTS = 1


@dataclass(frozen=True)
class ProducerOffsets:
    """A producer's registered offsets, from `FlussAdmin.get_producer_offsets`.

    Attributes:
        producer_id: The producer.
        table_offsets: ``{table id: {TableBucket: log end offset}}``.
        expiration_time: When the registration expires (ms since the epoch; 0 if unknown).
    """

    producer_id: str
    table_offsets: dict[int, dict[TableBucket, int]]
    expiration_time: int
