"""The cluster around the tables: servers (``ServerNode``), databases (``DatabaseDescriptor``,
``DatabaseInfo``) and lake snapshots (``LakeSnapshot``)."""
from __future__ import annotations

import json
from typing import Any

from ._args import rust_map, rust_str, want_instance, want_int, want_str, want_str_dict
from .table import TableBucket

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

    def __init__(self, comment: str | None = None, custom_properties: dict[str, str] | None = None):
        if comment is not None:
            want_str("comment", comment)
        self._comment = comment
        self._custom = {} if custom_properties is None else want_str_dict("custom_properties", custom_properties)

    @property
    def comment(self) -> str | None:
        """The database's comment, or ``None``."""
        return self._comment

    def get_custom_properties(self) -> dict[str, str]:
        """The database's custom properties."""
        return dict(self._custom)

    def to_json_bytes(self) -> bytes:
        """The descriptor as the JSON the CREATE_DATABASE request carries."""
        out: dict[str, Any] = {"version": 1}
        if self._comment is not None:
            out["comment"] = self._comment
        out["custom_properties"] = dict(self._custom)
        return json.dumps(out, separators=(",", ":")).encode()

    @staticmethod
    def from_json_bytes(data: bytes) -> DatabaseDescriptor:
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
        c = "None" if self._comment is None else f"Some({rust_str(self._comment)})"
        return f"DatabaseDescriptor(comment={c}, custom_properties={rust_map(self._custom)})"

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
        self._snapshot_id = want_int("snapshot_id", snapshot_id)
        self._offsets: dict[TableBucket, int] = {}

    @staticmethod
    def _make(snapshot_id: int, offsets: dict[TableBucket, int]) -> LakeSnapshot:
        s = LakeSnapshot(snapshot_id)
        s._offsets = dict(offsets)
        return s

    @property
    def snapshot_id(self) -> int:
        """The snapshot's id."""
        return self._snapshot_id

    @property
    def table_buckets_offset(self) -> dict[TableBucket, int]:
        """``{TableBucket: log offset}`` of every bucket in the snapshot (a copy)."""
        return dict(self._offsets)

    def get_bucket_offset(self, bucket: TableBucket) -> int | None:
        """The offset one bucket has been tiered up to.

        Args:
            bucket: The bucket.

        Returns:
            The offset, or ``None`` if the snapshot does not cover the bucket.
        """
        return self._offsets.get(want_instance("bucket", bucket, TableBucket))

    def get_table_buckets(self) -> list[TableBucket]:
        """The buckets in the snapshot."""
        return list(self._offsets)

    def __str__(self) -> str:
        return f"LakeSnapshot(snapshot_id={self._snapshot_id}, buckets_count={len(self._offsets)})"

    __repr__ = __str__

    def __reduce__(self):
        return (LakeSnapshot._make, (self._snapshot_id, self._offsets))
