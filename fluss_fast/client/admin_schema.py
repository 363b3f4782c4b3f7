"""``FlussAdmin``'s schema, database, snapshot and statistics methods beyond pyfluss 1.0.0's set:
the Java ``Admin``'s ``getTableSchema``, ``alterTable``, ``alterDatabase``, ``listDatabaseSummaries``,
``getTableStats``, KV and lake snapshots and remote-log manifests, in pyfluss's style.

Every request goes through the connection's ApiVersions check, so a server that does not offer an
API (Java 0.9.1 has no ALTER_DATABASE, LIST_KV_SNAPSHOTS...) fails at once with
``UNSUPPORTED_VERSION`` naming it.
"""
from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from ..datatypes import SchemaInfo as _FlussSchema
from ..errors import FlussError
from ..metadata._args import want_instance as _check
from ..metadata._args import want_int as _want_int
from ..metadata.cluster import LakeSnapshot
from ..metadata.schema import Schema
from ..metadata.table import TableBucket, TablePath
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from .admin_types import (
    CLIENT_ERROR,
    DatabaseChange,
    DatabaseSummary,
    KvSnapshotMetadata,
    KvSnapshots,
    RemoteLogManifestInfo,
    SchemaInfo,
    TableChange,
)
from .runtime import on_runtime

_SET, _DELETE = 0, 1
_POSITION_LAST = 0


def _changes(arg: str, values, cls) -> list:
    if isinstance(values, cls):
        values = [values]
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"argument '{arg}': expected a list of {cls.__name__}, got '{type(values).__name__}'")
    out = list(values)
    for v in out:
        _check(arg, v, cls)
    return out


def _lake_snapshot(resp) -> LakeSnapshot:
    offsets = {}
    for b in resp.bucket_snapshots:
        if b.HasField("log_offset"):
            pid = b.partition_id if b.HasField("partition_id") else None
            offsets[TableBucket._make(resp.table_id, pid, b.bucket_id)] = b.log_offset
    return LakeSnapshot._make(resp.snapshotId, offsets)


class AdminSchemaMixin:
    """Schema, database-change, snapshot and statistics methods of `FlussAdmin`."""

    if TYPE_CHECKING:  # provided by FlussAdmin
        _ctx: Any
        _runtime: Any

        async def _call(self, api_key: int, req: Any, what: str = "") -> Any: ...

    # -- schemas and ALTER -----------------------------------------------------------------------
    @on_runtime
    async def get_table_schema(self, table_path: TablePath, schema_id: int | None = None) -> SchemaInfo:
        """A table's schema: the latest, or the one with a given id.

        Args:
            table_path: Database and table name.
            schema_id: The schema id to fetch; ``None`` for the latest.

        Returns:
            The schema and its id.

        Raises:
            FlussError: ``TABLE_NOT_EXIST`` or ``SCHEMA_NOT_EXIST``.

        Example:
            ```python
            info = await admin.get_table_schema(path)
            print(info.schema_id, info.schema.get_column_names())
            ```
        """
        _check("table_path", table_path, TablePath)
        req = pb.GetTableSchemaRequest()
        table_path._to_pb(req.table_path)
        if schema_id is not None:
            req.schema_id = _want_int("schema_id", schema_id)
        resp = await self._call(Api.GET_TABLE_SCHEMA, req, f"table '{table_path}'")
        try:
            info = _FlussSchema.from_json(json.loads(resp.schema_json))
        except Exception as exc:  # noqa: BLE001
            raise FlussError(f"Could not read the schema of table '{table_path}': {exc}", -1) from None
        return SchemaInfo(Schema._from_info(info), resp.schema_id)

    @on_runtime
    async def alter_table(self, table_path: TablePath, changes: list[TableChange],
                          ignore_if_not_exists: bool = False) -> None:
        """Change a table's properties, or add columns.

        One call either sets and resets properties or changes the schema; the server refuses a
        mix (``INVALID_ALTER_TABLE_EXCEPTION``). Only some ``table.*`` options may be altered (the
        Java server's list: ``table.datalake.*`` freshness and switches, ``table.log.ttl``,
        ``table.auto-partition.*`` retention...); custom properties always may.

        Args:
            table_path: Database and table name.
            changes: `TableChange` values (``TableChange.set``, ``reset``, ``add_column``).
            ignore_if_not_exists: Succeed quietly if there is no such table.

        Raises:
            FlussError: ``TABLE_NOT_EXIST`` (unless ``ignore_if_not_exists``),
                ``INVALID_ALTER_TABLE_EXCEPTION`` or ``INVALID_CONFIG_EXCEPTION``.

        Example:
            ```python
            await admin.alter_table(path, [fluss.TableChange.set("table.log.ttl", "3d")])
            await admin.alter_table(path, [fluss.TableChange.add_column("note", pa.string())])
            ```
        """
        _check("table_path", table_path, TablePath)
        _check("ignore_if_not_exists", ignore_if_not_exists, bool)
        req = pb.AlterTableRequest(ignore_if_not_exists=ignore_if_not_exists)
        table_path._to_pb(req.table_path)
        for ch in _changes("changes", changes, TableChange):
            if ch.kind == "set":
                req.config_changes.add(config_key=ch.key, config_value=ch.value, op_type=_SET)
            elif ch.kind == "reset":
                req.config_changes.add(config_key=ch.key, op_type=_DELETE)
            elif ch.kind == "drop_column":
                req.drop_columns.add(column_name=ch.column_name)
            elif ch.kind == "rename_column":
                req.rename_columns.add(old_column_name=ch.column_name, new_column_name=ch.value)
            else:
                type_json = json.dumps(ch.data_type.to_json(), separators=(",", ":")).encode()
                if ch.kind == "modify_column":
                    col = req.modify_columns.add(column_name=ch.column_name, data_type_json=type_json)
                else:
                    col = req.add_columns.add(column_name=ch.column_name, column_position_type=_POSITION_LAST,
                                              data_type_json=type_json)
                if ch.comment is not None:
                    col.comment = ch.comment
        try:
            await self._call(Api.ALTER_TABLE, req, f"table '{table_path}'")
        finally:
            self._ctx.metadata.invalidate_path(table_path)

    @on_runtime
    async def alter_database(self, database_name: str, changes: list[DatabaseChange],
                             ignore_if_not_exists: bool = False) -> None:
        """Change a database's custom properties or comment.

        Args:
            database_name: The database.
            changes: `DatabaseChange` values (``set``, ``reset``, ``update_comment``).
            ignore_if_not_exists: Succeed quietly if there is no such database.

        Raises:
            FlussError: ``DATABASE_NOT_EXIST`` (unless ``ignore_if_not_exists``), or
                ``UNSUPPORTED_VERSION`` from servers without the API (Java 0.9.1).
        """
        _check("database_name", database_name, str)
        _check("ignore_if_not_exists", ignore_if_not_exists, bool)
        req = pb.AlterDatabaseRequest(database_name=database_name, ignore_if_not_exists=ignore_if_not_exists)
        for ch in _changes("changes", changes, DatabaseChange):
            if ch.kind == "set":
                req.config_changes.add(config_key=ch.key, config_value=ch.value, op_type=_SET)
            elif ch.kind == "reset":
                req.config_changes.add(config_key=ch.key, op_type=_DELETE)
            else:
                req.comment = ch.value
        await self._call(Api.ALTER_DATABASE, req, f"database '{database_name}'")

    @on_runtime
    async def list_database_summaries(self) -> list[DatabaseSummary]:
        """Every database with its creation time and table count.

        Returns:
            One `DatabaseSummary` per database; servers that only send names (before Fluss 1.0)
            give ``-1`` for the time and the count.
        """
        resp = await self._call(Api.LIST_DATABASES, pb.ListDatabasesRequest(include_summary=True))
        out = [DatabaseSummary(s.database_name, s.created_time, s.table_count) for s in resp.database_summary]
        if not out:
            out = [DatabaseSummary(name, -1, -1) for name in resp.database_name]
        return out

    # -- statistics ------------------------------------------------------------------------------
    @on_runtime
    async def get_table_stats(self, table_path: TablePath) -> int:
        """A table's row count, summed over every bucket (and partition) by their leaders.

        Args:
            table_path: Database and table name.

        Returns:
            The number of rows.

        Raises:
            FlussError: ``TABLE_NOT_EXIST``, or ``UNSUPPORTED_VERSION`` from servers without
                GET_TABLE_STATS.
        """
        _check("table_path", table_path, TablePath)
        attempt = 0
        while True:
            try:
                return await self._table_rows(table_path)
            except FlussError as exc:
                # a new table's leaders, or a moved leader: ask the metadata again, as list_offsets does
                attempt += 1
                if not exc.is_retriable or attempt > 3:
                    raise
                meta = self._ctx.metadata.cached_table(table_path)
                if meta is not None:
                    self._ctx.metadata.invalidate(meta.table_id)
                await asyncio.sleep(0.2 * attempt)

    async def _table_rows(self, table_path: TablePath) -> int:
        md = self._ctx.metadata
        meta = await md.table(table_path, refresh=True)
        units: list[int | None] = [None]
        if meta.is_partitioned:
            names = await md.partitions(table_path)
            units = []
            for name in names:
                pid, _ = await md.partition_by_name(table_path, name, refresh=True)
                units.append(pid)
        by_leader: dict[int, list[tuple[int | None, int]]] = {}
        for pid in units:
            for b in range(meta.num_buckets):
                leader = await md.leader_for(meta.table_id, pid, b)
                by_leader.setdefault(leader, []).append((pid, b))

        async def one(leader: int, buckets):
            req = pb.GetTableStatsRequest(table_id=meta.table_id)
            for pid, b in buckets:
                r = req.buckets_req.add(bucket_id=b)
                if pid is not None:
                    r.partition_id = pid
            return await self._ctx.tablet(leader, Api.GET_TABLE_STATS, req)

        total = 0
        for resp in await asyncio.gather(*(one(n, bs) for n, bs in by_leader.items())):
            for br in resp.buckets_resp:
                if br.HasField("error_code") and br.error_code != 0:
                    raise FlussError((br.error_message or f"error {br.error_code}")
                                     + f" (bucket {br.bucket_id} of table '{table_path}')", br.error_code)
                total += br.row_count
        return total

    # -- KV snapshots ----------------------------------------------------------------------------
    @on_runtime
    async def get_latest_kv_snapshots(self, table_path: TablePath, partition_name: str | None = None) -> KvSnapshots:
        """The latest KV snapshot of every bucket of a primary-key table.

        Args:
            table_path: Database and table name.
            partition_name: The partition (values joined with ``$``); required for a partitioned table.

        Returns:
            Snapshot ids and log offsets per bucket (``None`` where a bucket has none yet).

        Raises:
            FlussError: ``NON_PRIMARY_KEY_TABLE_EXCEPTION``, ``PARTITION_NOT_EXISTS`` or ``TABLE_NOT_EXIST``.
        """
        _check("table_path", table_path, TablePath)
        req = pb.GetLatestKvSnapshotsRequest()
        table_path._to_pb(req.table_path)
        if partition_name is not None:
            req.partition_name = _check("partition_name", partition_name, str)
        resp = await self._call(Api.GET_LATEST_KV_SNAPSHOTS, req, f"table '{table_path}'")
        ids, offsets = {}, {}
        for s in resp.latest_snapshots:
            ids[s.bucket_id] = s.snapshot_id if s.HasField("snapshot_id") else None
            offsets[s.bucket_id] = s.log_offset if s.HasField("log_offset") else None
        pid = resp.partition_id if resp.HasField("partition_id") else None
        return KvSnapshots(resp.table_id, pid, ids, offsets)

    @on_runtime
    async def get_kv_snapshot_metadata(self, bucket: TableBucket, snapshot_id: int) -> KvSnapshotMetadata:
        """The files and log offset of one KV snapshot of one bucket.

        Args:
            bucket: The bucket (`TableBucket`, with its partition if any).
            snapshot_id: The snapshot, from `get_latest_kv_snapshots`.

        Returns:
            The snapshot's files and the log offset it covers.

        Raises:
            FlussError: ``KV_SNAPSHOT_NOT_EXIST``.
        """
        _check("bucket", bucket, TableBucket)
        req = pb.GetKvSnapshotMetadataRequest(table_id=bucket.table_id, bucket_id=bucket.bucket_id,
                                              snapshot_id=_want_int("snapshot_id", snapshot_id))
        if bucket.partition_id is not None:
            req.partition_id = bucket.partition_id
        resp = await self._call(Api.GET_KV_SNAPSHOT_METADATA, req)
        files = [(f.remote_path, f.local_file_name) for f in resp.snapshot_files]
        return KvSnapshotMetadata(resp.log_offset, files)

    @on_runtime
    async def list_kv_snapshots(self, table_id: int, partition_id: int | None = None) -> dict[int, set[int]]:
        """The snapshots still kept (not yet cleaned up) of each bucket of a primary-key table.

        Args:
            table_id: The table's id (``TableInfo.table_id``).
            partition_id: The partition's id, for a partitioned table.

        Returns:
            ``{bucket: {snapshot id, ...}}``.

        Raises:
            FlussError: ``UNSUPPORTED_VERSION`` from servers without LIST_KV_SNAPSHOTS (Java 0.9.1).
        """
        req = pb.ListKvSnapshotsRequest(table_id=_want_int("table_id", table_id))
        if partition_id is not None:
            req.partition_id = _want_int("partition_id", partition_id)
        resp = await self._call(Api.LIST_KV_SNAPSHOTS, req)
        out: dict[int, set[int]] = {}
        for s in resp.active_snapshots:
            out.setdefault(s.bucket_id, set()).add(s.snapshot_id)
        return out

    # -- lake snapshots and remote log -----------------------------------------------------------
    @on_runtime
    async def get_lake_snapshot(self, table_path: TablePath, snapshot_id: int) -> LakeSnapshot:
        """One lake snapshot of a table, by id.

        Args:
            table_path: Database and table name.
            snapshot_id: The snapshot.

        Returns:
            The snapshot id and the log offset each bucket had been tiered up to.

        Raises:
            FlussError: ``LAKE_SNAPSHOT_NOT_EXIST`` (always so on the embedded server, which has no lake).
        """
        _check("table_path", table_path, TablePath)
        req = pb.GetLakeSnapshotRequest(snapshot_id=_want_int("snapshot_id", snapshot_id))
        table_path._to_pb(req.table_path)
        return _lake_snapshot(await self._call(Api.GET_LAKE_SNAPSHOT, req, f"table '{table_path}'"))

    @on_runtime
    async def get_readable_lake_snapshot(self, table_path: TablePath) -> LakeSnapshot:
        """The latest lake snapshot whose data is readable from the lake (fully committed).

        Args:
            table_path: Database and table name.

        Returns:
            The snapshot id and the log offset of each bucket.

        Raises:
            FlussError: ``LAKE_SNAPSHOT_NOT_EXIST``.
        """
        _check("table_path", table_path, TablePath)
        req = pb.GetLakeSnapshotRequest(readable=True)
        table_path._to_pb(req.table_path)
        return _lake_snapshot(await self._call(Api.GET_LAKE_SNAPSHOT, req, f"table '{table_path}'"))

    @on_runtime
    async def list_remote_log_manifests(self, table_id: int,
                                        partition_id: int | None = None) -> list[RemoteLogManifestInfo]:
        """The remote-log manifest of each bucket that has tiered segments.

        Args:
            table_id: The table's id.
            partition_id: The partition's id, for a partitioned table.

        Returns:
            One `RemoteLogManifestInfo` per bucket.

        Raises:
            FlussError: ``UNSUPPORTED_VERSION`` from servers without the API (Java 0.9.1 and the
                embedded server).
        """
        req = pb.ListRemoteLogManifestsRequest(table_id=_want_int("table_id", table_id))
        if partition_id is not None:
            req.partition_id = _want_int("partition_id", partition_id)
        resp = await self._call(Api.LIST_REMOTE_LOG_MANIFESTS, req)
        out = []
        for m in resp.manifests:
            tb = m.table_bucket
            pid = tb.partition_id if tb.HasField("partition_id") else None
            out.append(RemoteLogManifestInfo(TableBucket._make(tb.table_id, pid, tb.bucket_id),
                                             m.remote_log_manifest_path, m.remote_log_end_offset))
        return out


__all__ = ["AdminSchemaMixin", "CLIENT_ERROR"]
