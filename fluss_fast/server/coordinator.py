"""Coordinator role: metadata, databases, tables, partitions, auto-partitioning
(docs/contributing/protocol.md §3.3-3.6, §7).

Checks and defaults follow the Java coordinator (``TableDescriptorValidation``, ``ConfigOptions``) so
that error codes match: bad names 16/15, bad descriptors 15, unknown or invalid ``table.*`` properties
39, too many buckets 49, replication factor above the live tablet servers 17, partition rules 37/43/42/36/45.
Those rules live beside the handlers: ``names``, ``table_options``, ``table_validation``,
``time_formats`` and ``auto_partition``.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from dataclasses import replace
from datetime import UTC, datetime

from ..error_codes import Errors
from ..errors import FlussError
from ..metadata import PARTITION_SEPARATOR
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from ..rpc.wire import partition_metadata_field, table_metadata_field
from .acl import Authorizer
from .alter_table import altered_descriptor
from .auto_partition import AutoPartition
from .catalog import BUILTIN_DATABASE, PartitionEntry, TableEntry, now_ms
from .lake_coordinator import commit_lake_snapshots, lake_properties, lake_snapshot_response
from .lake_snapshots import LakeSnapshotStore
from .names import check_database_name, check_table_name, invalid_name_reason, prefix_reason
from .table_options import (
    DEFAULT_BUCKET_NUMBER,
    DEFAULT_REPLICATION_FACTOR,
    HISTORICAL_PARTITION,
    MAX_BUCKET_NUM,
    MAX_PARTITION_NUM,
)
from .table_validation import parse_database_json, prepare_descriptor
from .time_formats import DEFAULT_TIME_FORMATS, parses_as_time

log = logging.getLogger("fluss_fast.server")


def _path(tp) -> str:
    return f"{tp.database_name}.{tp.table_name}"


class Coordinator:
    def __init__(self, server, replicas):
        self.server = server
        self.replicas = replicas
        self.catalog = server.catalog
        self._task: asyncio.Task | None = None
        self._nodes_cache: dict = {}
        self._meta_cache: dict = {}  # table id -> (version key, serialized field 3 of MetadataResponse)
        self._pmeta_cache: dict = {}  # partition id -> serialized field 4 (ids are never reused)
        self.authorizer = Authorizer(server)  # ACLs: off unless -c authorizer.enabled=true
        self.lake_snapshots = LakeSnapshotStore(os.path.join(server.data_dir, "lake"))

    # -- life cycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        await self.run_auto_partitioning()
        self._task = asyncio.get_running_loop().create_task(self._auto_partition_loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def handlers(self) -> dict:
        return {
            Api.GET_METADATA: self.get_metadata,
            Api.CREATE_DATABASE: self.create_database,
            Api.DROP_DATABASE: self.drop_database,
            Api.LIST_DATABASES: self.list_databases,
            Api.DATABASE_EXISTS: self.database_exists,
            Api.GET_DATABASE_INFO: self.get_database_info,
            Api.ALTER_DATABASE: self.alter_database,
            Api.CREATE_TABLE: self.create_table,
            Api.DROP_TABLE: self.drop_table,
            Api.GET_TABLE_INFO: self.get_table_info,
            Api.LIST_TABLES: self.list_tables,
            Api.TABLE_EXISTS: self.table_exists,
            Api.GET_TABLE_SCHEMA: self.get_table_schema,
            Api.ALTER_TABLE: self.alter_table,
            Api.LIST_PARTITION_INFOS: self.list_partition_infos,
            Api.CREATE_PARTITION: self.create_partition,
            Api.DROP_PARTITION: self.drop_partition,
            Api.GET_LAKE_SNAPSHOT: self.get_lake_snapshot,
            Api.COMMIT_LAKE_TABLE_SNAPSHOT: self.commit_lake_table_snapshot,
            Api.GET_LATEST_KV_SNAPSHOTS: self.get_latest_kv_snapshots,
            Api.GET_KV_SNAPSHOT_METADATA: self.get_kv_snapshot_metadata,
            Api.LIST_KV_SNAPSHOTS: self.list_kv_snapshots,
            Api.GET_FILESYSTEM_SECURITY_TOKEN: self.get_filesystem_security_token,
            Api.CREATE_ACLS: self.authorizer.create_acls,
            Api.LIST_ACLS: self.authorizer.list_acls,
            Api.DROP_ACLS: self.authorizer.drop_acls,
            Api.DESCRIBE_CLUSTER_CONFIGS: self.describe_cluster_configs,
            Api.GET_CLUSTER_HEALTH: self.get_cluster_health,
        }

    # -- helpers -------------------------------------------------------------------------------
    def _table(self, tp) -> TableEntry:
        entry = self.catalog.table(tp.database_name, tp.table_name)
        if entry is None:
            raise FlussError(f"Table '{_path(tp)}' does not exist.", Errors.TABLE_NOT_EXIST)
        return entry

    def _fill_buckets(self, target, table_id: int, partition_id: int | None, entry: TableEntry) -> None:
        rf = _rf_of(entry)
        leader_of = self.server.leader_of
        replicas_of = self.server.replicas_of
        for b in range(entry.bucket_count):
            bm = target.add(bucket_id=b, leader_id=leader_of(table_id, partition_id, b), leader_epoch=0)
            bm.replica_id.extend(replicas_of(table_id, partition_id, b, rf))

    def _drop_data(self, table_id: int, partition_id: int | None = None) -> None:
        if partition_id is None:
            self._meta_cache.pop(table_id, None)
            with contextlib.suppress(OSError):
                self.lake_snapshots.drop(table_id)
        else:
            self._pmeta_cache.pop(partition_id, None)
        try:
            if partition_id is None:
                self.replicas.drop_table(table_id)
            else:
                self.replicas.drop_partition(table_id, partition_id)
        except Exception:  # noqa: BLE001 - metadata is already gone; leftover files are only garbage
            log.exception("cleaning up data of table %s partition %s failed", table_id, partition_id)

    # -- metadata ------------------------------------------------------------------------------
    async def get_metadata(self, ctx, version, req):
        # Clients ask for the same tables over and over: the answer is spliced together from cached,
        # already-serialized pieces (a protobuf message is the concatenation of its fields).
        parts = [self._nodes_prefix(ctx.listener)]
        for tp in req.table_path:
            entry = self.catalog.table(tp.database_name, tp.table_name)
            if entry is None:
                # Java looks the tables its metadata cache lacks up in ZooKeeper, and
                # MetadataManager.getTables wraps the TableNotExistException in a
                # FlussRuntimeException naming those tables: code -1, not 7
                missing = ", ".join(_path(t) for t in req.table_path
                                    if self.catalog.table(t.database_name, t.table_name) is None)
                raise FlussError(f"Failed to get tables '[{missing}]'. Caused by: Table '{_path(tp)}' does not "
                                 "exist.", Errors.UNKNOWN_SERVER_ERROR)
            parts.append(self._table_metadata_field(entry))
        for pp in req.partitions_path:
            entry = self.catalog.table(pp.database_name, pp.table_name)
            if entry is None:
                raise FlussError(f"Table '{pp.database_name}.{pp.table_name}' does not exist.", Errors.TABLE_NOT_EXIST)
            part = entry.partition_by_name(pp.partition_name) if pp.HasField("partition_name") else None
            if part is None:
                raise FlussError(f"Table partition '{entry.path}(p={pp.partition_name})' does not exist.",
                                 Errors.PARTITION_NOT_EXISTS)
            parts.append(self._partition_metadata_field(entry, part))
        for pid in req.partitions_id:
            entry = self.catalog.table_of_partition(pid)
            part = entry.partitions.get(pid) if entry is not None else None
            if part is None:
                raise FlussError(f"Partition with id {pid} does not exist.", Errors.PARTITION_NOT_EXISTS)
            parts.append(self._partition_metadata_field(entry, part))
        return b"".join(parts)

    def _nodes_prefix(self, listener: str) -> bytes:
        cached = self._nodes_cache.get(listener)
        if cached is None:
            resp = pb.MetadataResponse()
            node_id, host, port = self.server.coordinator_node(listener)
            cs = resp.coordinator_server
            cs.node_id, cs.host, cs.port = node_id, host, port
            for nid, h, p in self.server.tablet_nodes(listener):
                resp.tablet_servers.add(node_id=nid, host=h, port=p)
            cached = self._nodes_cache[listener] = resp.SerializeToString()
        return cached

    def _table_metadata_field(self, entry: TableEntry) -> bytes:
        key = (entry.table_id, entry.schema_id, entry.modified_time)
        cached = self._meta_cache.get(entry.table_id)
        if cached is None or cached[0] != key:
            tm = pb.PbTableMetadata(table_id=entry.table_id, schema_id=entry.schema_id, table_json=entry.table_json,
                                    created_time=entry.created_time, modified_time=entry.modified_time)
            tm.table_path.database_name = entry.database
            tm.table_path.table_name = entry.table_name
            if not entry.is_partitioned:
                self._fill_buckets(tm.bucket_metadata, entry.table_id, None, entry)
            cached = (key, table_metadata_field(tm.SerializeToString()))
            self._meta_cache[entry.table_id] = cached
        return cached[1]

    def _partition_metadata_field(self, entry: TableEntry, part: PartitionEntry) -> bytes:
        cached = self._pmeta_cache.get(part.partition_id)
        if cached is None:
            pm = pb.PbPartitionMetadata(table_id=entry.table_id, partition_name=part.name,
                                        partition_id=part.partition_id)
            self._fill_buckets(pm.bucket_metadata, entry.table_id, part.partition_id, entry)
            cached = self._pmeta_cache[part.partition_id] = partition_metadata_field(pm.SerializeToString())
        return cached

    # -- databases -----------------------------------------------------------------------------
    async def create_database(self, ctx, version, req):
        name = req.database_name
        check_database_name(name)
        comment, custom = parse_database_json(req.database_json if req.HasField("database_json") else None, name)
        if name in self.catalog.databases:
            if req.ignore_if_exists:
                return pb.CreateDatabaseResponse()
            raise FlussError(f"Database {name} already exists.", Errors.DATABASE_ALREADY_EXIST)
        self.catalog.add_database(name, comment, custom)
        await self.catalog.commit()
        return pb.CreateDatabaseResponse()

    async def drop_database(self, ctx, version, req):
        name = req.database_name
        db = self.catalog.databases.get(name)
        if db is None:
            if req.ignore_if_not_exists:
                return pb.DropDatabaseResponse()
            raise FlussError(f"Database {name} does not exist.", Errors.DATABASE_NOT_EXIST)
        if name == BUILTIN_DATABASE:
            raise FlussError(f"Cannot drop the default database '{BUILTIN_DATABASE}'. The default database is "
                             "required for cluster operation.", Errors.UNKNOWN_SERVER_ERROR)
        if db.tables and not req.cascade:
            raise FlussError(f"Database {name} is not empty.", Errors.DATABASE_NOT_EMPTY)
        dropped = self.catalog.remove_database(name)
        await self.catalog.commit()
        for t in dropped:
            self._drop_data(t.table_id)
        return pb.DropDatabaseResponse()

    async def list_databases(self, ctx, version, req):
        resp = pb.ListDatabasesResponse()
        if req.include_summary:
            for db in self.catalog.databases.values():
                resp.database_summary.add(database_name=db.name, created_time=db.created_time,
                                          table_count=len(db.tables))
        else:
            resp.database_name.extend(self.catalog.databases.keys())
        return resp

    async def database_exists(self, ctx, version, req):
        return pb.DatabaseExistsResponse(exists=req.database_name in self.catalog.databases)

    def _database(self, name):
        db = self.catalog.databases.get(name)
        if db is None:
            raise FlussError(f"Database {name} does not exist.", Errors.DATABASE_NOT_EXIST)
        return db

    async def get_database_info(self, ctx, version, req):
        db = self.catalog.databases.get(req.database_name)
        if db is None:
            raise FlussError(f"Database '{req.database_name}' does not exist.", Errors.DATABASE_NOT_EXIST)
        return pb.GetDatabaseInfoResponse(database_json=db.descriptor_json(), created_time=db.created_time,
                                          modified_time=db.modified_time)

    async def alter_database(self, ctx, version, req):
        db = self.catalog.databases.get(req.database_name)
        if db is None:
            if req.ignore_if_not_exists:
                return pb.AlterDatabaseResponse()
            raise FlussError(f"Database {req.database_name} does not exist.", Errors.DATABASE_NOT_EXIST)
        custom = dict(db.custom_properties)
        for change in req.config_changes:
            if change.op_type == 0:
                if not change.HasField("config_value"):
                    raise FlussError(f"Setting '{change.config_key}' of database {db.name} needs a value",
                                     Errors.INVALID_CONFIG_EXCEPTION)
                custom[change.config_key] = change.config_value
            elif change.op_type == 1:
                custom.pop(change.config_key, None)
            else:
                raise FlussError(f"Unsupported alter operation {change.op_type} for '{change.config_key}' of "
                                 f"database {db.name}", Errors.INVALID_CONFIG_EXCEPTION)
        db.custom_properties = custom
        if req.HasField("comment"):
            db.comment = req.comment
        db.modified_time = now_ms()
        self.catalog.touch()
        await self.catalog.commit()
        return pb.AlterDatabaseResponse()

    # -- tables --------------------------------------------------------------------------------
    async def create_table(self, ctx, version, req):
        tp = req.table_path
        check_database_name(tp.database_name, creating=False)
        check_table_name(tp.table_name)
        path = _path(tp)
        desc = prepare_descriptor(path, req.table_json, self.server.num_tablet_servers)
        desc = replace(desc, properties=lake_properties(self.server.settings, desc.properties))
        db = self.catalog.databases.get(tp.database_name)
        if req.ignore_if_exists and db is not None and tp.table_name in db.tables:
            return pb.CreateTableResponse()
        if db is None:
            raise FlussError(f"Database {tp.database_name} does not exist.", Errors.DATABASE_NOT_EXIST)
        if tp.table_name in db.tables:
            raise FlussError(f"Table {path} already exists.", Errors.TABLE_ALREADY_EXIST)
        entry = self.catalog.add_table(tp.database_name, tp.table_name, desc)
        await self._auto_partition_table(entry, commit=False)
        await self.catalog.commit()
        return pb.CreateTableResponse()

    async def drop_table(self, ctx, version, req):
        entry = self.catalog.table(req.table_path.database_name, req.table_path.table_name)
        if entry is None:
            if req.ignore_if_not_exists:
                return pb.DropTableResponse()
            raise FlussError(f"Table {_path(req.table_path)} does not exist.", Errors.TABLE_NOT_EXIST)
        self.catalog.remove_table(entry)
        await self.catalog.commit()
        self._drop_data(entry.table_id)
        return pb.DropTableResponse()

    async def get_table_info(self, ctx, version, req):
        entry = self._table(req.table_path)
        return pb.GetTableInfoResponse(table_id=entry.table_id, schema_id=entry.schema_id,
                                       table_json=entry.table_json, created_time=entry.created_time,
                                       modified_time=entry.modified_time)

    async def list_tables(self, ctx, version, req):
        db = self._database(req.database_name)
        resp = pb.ListTablesResponse()
        resp.table_name.extend(db.tables.keys())
        return resp

    async def table_exists(self, ctx, version, req):
        tp = req.table_path
        return pb.TableExistsResponse(exists=self.catalog.table(tp.database_name, tp.table_name) is not None)

    async def get_table_schema(self, ctx, version, req):
        tp = req.table_path
        entry = self.catalog.table(tp.database_name, tp.table_name)
        sid = req.schema_id if req.HasField("schema_id") else (entry.schema_id if entry is not None else 0)
        schema = entry.schemas.get(sid) if entry is not None else None
        if schema is None:
            raise FlussError(f"Schema for table {_path(tp)} with schema id {sid} does not exist.",
                             Errors.SCHEMA_NOT_EXIST)
        return pb.GetTableSchemaResponse(schema_id=sid,
                                         schema_json=json.dumps(schema.to_json(), separators=(",", ":")).encode())

    async def alter_table(self, ctx, version, req):
        tp = req.table_path
        entry = self.catalog.table(tp.database_name, tp.table_name)
        if entry is None:
            if req.ignore_if_not_exists:
                return pb.AlterTableResponse()
            raise FlussError(f"Table {_path(tp)} does not exist.", Errors.TABLE_NOT_EXIST)
        desc, new_schema = altered_descriptor(entry.path, entry.descriptor, req)
        if desc is entry.descriptor:
            return pb.AlterTableResponse()
        if new_schema:
            sid = max(entry.schemas) + 1
            entry.schemas[sid] = desc.schema
            entry.schema_id = sid
        entry.descriptor = desc
        entry._table_json = None
        entry.modified_time = now_ms()
        self.catalog.touch()
        await self.catalog.commit()
        return pb.AlterTableResponse()

    # -- partitions ----------------------------------------------------------------------------
    def _partitioned_table(self, tp, refusal: str | None = None) -> TableEntry:
        entry = self._table(tp)
        if not entry.is_partitioned:
            raise FlussError(refusal or f"Table '{entry.path}' is not a partitioned table.",
                             Errors.TABLE_NOT_PARTITIONED_EXCEPTION)
        return entry

    def _resolve_spec(self, entry: TableEntry, spec_pb, creating: bool) -> tuple:
        spec = {}
        for kv in spec_pb.partition_key_values:
            spec[kv.key] = kv.value
        keys = entry.descriptor.partition_keys
        shown = "{" + ", ".join(f"{k}={v}" for k, v in spec.items()) + "}"
        if len(spec) != len(keys) or len(spec_pb.partition_key_values) != len(keys):
            raise FlussError(f"PartitionSpec size is not equal to partition keys size for partitioned table "
                             f"{entry.path}.", Errors.PARTITION_SPEC_INVALID_EXCEPTION)
        values = []
        for k in keys:
            if k not in spec:
                raise FlussError(f"PartitionSpec {shown} does not contain partition key '{k}' for partitioned "
                                 f"table {entry.path}.", Errors.PARTITION_SPEC_INVALID_EXCEPTION)
            values.append(spec[k])
        for v in values:
            reason = invalid_name_reason(v) or (prefix_reason(v) if creating else None)
            if reason:
                raise FlussError(f"The partition value {v} is invalid: {reason}",
                                 Errors.PARTITION_SPEC_INVALID_EXCEPTION)
        ordered = {k: spec[k] for k in keys}
        return ordered, PARTITION_SEPARATOR.join(values)

    def _check_partition_time(self, entry: TableEntry, spec: dict) -> None:
        auto = AutoPartition.of(entry)
        if auto is None or not auto.checks_time:
            return
        value = spec.get(auto.key)
        if value is None or not parses_as_time(auto.tokens, value):
            fmt = auto.format or DEFAULT_TIME_FORMATS[auto.unit]
            raise FlussError(f"Partition value '{value}' does not match the expected format '{fmt}' for "
                             f"auto-partition time unit '{auto.unit}'.", Errors.PARTITION_SPEC_INVALID_EXCEPTION)
        if not auto.enabled or auto.num_retention < 0:
            return
        earliest = auto.time_value(datetime.now(UTC), -auto.num_retention)
        if earliest > value:
            raise FlussError(f"Partition value '{value}' is out-of-date. The earliest retained partition is "
                             f"'{earliest}'.", Errors.PARTITION_SPEC_INVALID_EXCEPTION)

    async def list_partition_infos(self, ctx, version, req):
        entry = self._partitioned_table(req.table_path)
        wanted = {}
        if req.HasField("partial_partition_spec"):
            for kv in req.partial_partition_spec.partition_key_values:
                if kv.key not in entry.descriptor.partition_keys:
                    raise FlussError(f"Partition key '{kv.key}' in the partial partition spec is not a partition "
                                     f"key of table {entry.path} (keys: {list(entry.descriptor.partition_keys)}).",
                                     Errors.PARTITION_SPEC_INVALID_EXCEPTION)
                wanted[kv.key] = kv.value
        resp = pb.ListPartitionInfosResponse()
        for pid in sorted(entry.partitions):
            part = entry.partitions[pid]
            if part.name == HISTORICAL_PARTITION:
                continue
            if any(part.spec.get(k) != v for k, v in wanted.items()):
                continue
            info = resp.partitions_info.add(partition_id=pid)
            for k, v in part.spec.items():
                info.partition_spec.partition_key_values.add(key=k, value=v)
        return resp

    async def create_partition(self, ctx, version, req):
        # Java's CoordinatorService words (LIST_PARTITION_INFOS names the table instead)
        entry = self._partitioned_table(req.table_path, "Only partitioned table support create partition.")
        spec, name = self._resolve_spec(entry, req.partition_spec, creating=True)
        self._check_partition_time(entry, spec)
        if entry.partition_by_name(name) is not None:
            if req.ignore_if_not_exists:  # the field's name lies: it means "ignore if it already exists"
                return pb.CreatePartitionResponse()
            raise FlussError(f"Partition '{_qualified(spec)}' already exists for table {entry.path}",
                             Errors.PARTITION_ALREADY_EXISTS)
        self._check_partition_limit(entry)
        self.catalog.add_partition(entry, name, spec)
        await self.catalog.commit()
        return pb.CreatePartitionResponse()

    def _check_partition_limit(self, entry: TableEntry) -> None:
        if len(entry.partitions) >= MAX_PARTITION_NUM:
            raise FlussError(f"Exceed the maximum number of partitions for table {entry.path}: only allow "
                             f"{MAX_PARTITION_NUM} partitions.", Errors.PARTITION_MAX_NUM_EXCEPTION)

    async def drop_partition(self, ctx, version, req):
        # Java's CoordinatorService words (LIST_PARTITION_INFOS names the table instead)
        entry = self._partitioned_table(req.table_path, "Only partitioned table support drop partition.")
        spec, name = self._resolve_spec(entry, req.partition_spec, creating=False)
        part = entry.partition_by_name(name)
        if part is None:
            if req.ignore_if_not_exists:
                return pb.DropPartitionResponse()
            raise FlussError(f"Partition '{_qualified(spec)}' does not exist for table {entry.path}",
                             Errors.PARTITION_NOT_EXISTS)
        self.catalog.remove_partition(entry, part)
        await self.catalog.commit()
        self._drop_data(entry.table_id, part.partition_id)
        return pb.DropPartitionResponse()

    # -- snapshots, tokens, misc -----------------------------------------------------------------
    async def get_lake_snapshot(self, ctx, version, req):
        entry = self._table(req.table_path)
        if req.HasField("snapshot_id") and req.readable:
            raise FlussError("snapshot_id and readable=true cannot be set together", Errors.UNKNOWN_SERVER_ERROR)
        return lake_snapshot_response(self.lake_snapshots, entry, req)

    async def commit_lake_table_snapshot(self, ctx, version, req):
        return commit_lake_snapshots(self.lake_snapshots, self.catalog, req)

    async def get_latest_kv_snapshots(self, ctx, version, req):
        entry = self._table(req.table_path)
        if not entry.has_primary_key:
            raise FlussError(f"Table '{entry.path}' is not a primary key table", Errors.NON_PRIMARY_KEY_TABLE_EXCEPTION)
        resp = pb.GetLatestKvSnapshotsResponse(table_id=entry.table_id)
        if entry.is_partitioned:
            if not req.HasField("partition_name"):
                raise FlussError(f"Partition name is required for partitioned table {entry.path}",
                                 Errors.PARTITION_NOT_EXISTS)
            part = entry.partition_by_name(req.partition_name)
            if part is None:
                raise FlussError(f"Table partition '{entry.path}(p={req.partition_name})' does not exist.",
                                 Errors.PARTITION_NOT_EXISTS)
            resp.partition_id = part.partition_id
        elif req.HasField("partition_name"):
            raise FlussError(f"Table {entry.path} is not a partitioned table.", Errors.TABLE_NOT_PARTITIONED_EXCEPTION)
        for b in range(entry.bucket_count):
            resp.latest_snapshots.add(bucket_id=b)
        return resp

    async def get_kv_snapshot_metadata(self, ctx, version, req):
        entry = self.catalog.table_by_id(req.table_id)
        where = entry.path if entry is not None else f"table id {req.table_id}"
        raise FlussError(f"Kv snapshot {req.snapshot_id} of {where} bucket {req.bucket_id} does not exist.",
                         Errors.KV_SNAPSHOT_NOT_EXIST)

    async def list_kv_snapshots(self, ctx, version, req):
        # the embedded server keeps no KV snapshots: a primary-key table has none to list
        entry = self.catalog.table_by_id(req.table_id)
        if entry is None:
            raise FlussError(f"Table with id {req.table_id} does not exist.", Errors.TABLE_NOT_EXIST)
        if not entry.has_primary_key:
            raise FlussError(f"Table '{entry.path}' is not a primary key table, so it doesn't have any kv snapshots.",
                             Errors.NON_PRIMARY_KEY_TABLE_EXCEPTION)
        resp = pb.ListKvSnapshotsResponse(table_id=entry.table_id)
        if req.HasField("partition_id"):
            if req.partition_id not in entry.partitions:
                raise FlussError(f"Partition id {req.partition_id} of table {entry.path} does not exist.",
                                 Errors.PARTITION_NOT_EXISTS)
            resp.partition_id = req.partition_id
        return resp

    async def get_filesystem_security_token(self, ctx, version, req):
        # the replicas know the remote store (file system or S3 credentials)
        return self.replicas.filesystem_security_token()

    async def security_disabled(self, ctx, version, req):
        raise FlussError("No Authorizer is configured.", Errors.SECURITY_DISABLED_EXCEPTION)

    async def describe_cluster_configs(self, ctx, version, req):
        resp = pb.DescribeClusterConfigsResponse()
        for key, value in (("default.bucket.number", str(DEFAULT_BUCKET_NUMBER)),
                           ("default.replication.factor", str(DEFAULT_REPLICATION_FACTOR)),
                           ("max.bucket.num", str(MAX_BUCKET_NUM)),
                           ("max.partition.num", str(MAX_PARTITION_NUM))):
            resp.configs.add(config_key=key, config_value=value, config_source="DEFAULT")
        return resp

    async def get_cluster_health(self, ctx, version, req):
        replicas = 0
        leaders = 0
        for entry in self.catalog.tables_by_id.values():
            units = len(entry.partitions) if entry.is_partitioned else 1
            leaders += units * entry.bucket_count
            replicas += units * entry.bucket_count * _rf_of(entry)
        return pb.GetClusterHealthResponse(num_replicas=replicas, in_sync_replicas=replicas,
                                           num_leader_replicas=leaders, active_leader_replicas=leaders, status=0)

    # -- auto-partitioning (docs/contributing/protocol.md §7.6) -------------------------------------------------------
    async def _auto_partition_loop(self) -> None:
        while True:
            await asyncio.sleep(self.server.auto_partition_interval)
            try:
                await self.run_auto_partitioning()
            except Exception:  # noqa: BLE001 - keep the loop alive; the next round retries
                log.exception("auto-partitioning round failed")

    async def run_auto_partitioning(self) -> None:
        changed = False
        for entry in list(self.catalog.tables_by_id.values()):
            changed |= await self._auto_partition_table(entry, commit=False)
        if changed:
            await self.catalog.commit()

    async def _auto_partition_table(self, entry: TableEntry, commit: bool = True) -> bool:
        if not entry.is_partitioned:
            return False
        auto = AutoPartition.of(entry)
        if auto is None or not auto.enabled:
            return False
        now = datetime.now(UTC)
        changed = False
        if auto.num_retention >= 0:
            earliest = auto.time_value(now, -auto.num_retention)
            for part in list(entry.partitions.values()):
                value = part.spec.get(auto.key)
                if value is not None and parses_as_time(auto.tokens, value) and value < earliest:
                    self.catalog.remove_partition(entry, part)
                    self._drop_data(entry.table_id, part.partition_id)
                    changed = True
        if len(entry.descriptor.partition_keys) == 1:
            for offset in range(max(0, auto.num_precreate)):
                value = auto.time_value(now, offset)
                if entry.partition_by_name(value) is not None:
                    continue
                if len(entry.partitions) >= MAX_PARTITION_NUM:
                    log.warning("auto-partitioning %s: partition limit %d reached", entry.path, MAX_PARTITION_NUM)
                    break
                self.catalog.add_partition(entry, value, {auto.key: value})
                changed = True
        if changed and commit:
            await self.catalog.commit()
        return changed


def _qualified(spec: dict) -> str:
    """A partition as Java's messages name it: ``key=value`` pairs in key order, joined by '/'."""
    return "/".join(f"{k}={v}" for k, v in spec.items())


def _rf_of(entry: TableEntry) -> int:
    try:
        return int(entry.descriptor.properties.get("table.replication.factor", "1"))
    except ValueError:
        return 1
