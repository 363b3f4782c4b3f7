"""The client's view of the cluster (docs/contributing/protocol.md §6): servers, table metadata and bucket
leaders, partitions.

Everything here runs on the runtime loop. Concurrent refreshes of the same thing share one request.
"""
from __future__ import annotations

import asyncio
import dataclasses
import random
from dataclasses import dataclass, field

from ..datatypes import SchemaInfo, TableDescriptorInfo
from ..error_codes import Errors
from ..errors import FlussError
from ..metadata.cluster import COORDINATOR_SERVER, TABLET_SERVER, ServerNode
from ..metadata.table import PARTITION_SEPARATOR, TablePath
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api

PARTITION_NOT_EXISTS = Errors.PARTITION_NOT_EXISTS
_METADATA_BACKOFF_S = (0.05, 0.1, 0.2, 0.4)
_LEADER_BACKOFF_FIRST_S = 0.05
_LEADER_BACKOFF_MAX_S = 1.0
TABLE_NOT_EXIST = Errors.TABLE_NOT_EXIST


@dataclass
class PartitionMeta:
    partition_id: int
    name: str
    leaders: dict[int, int | None] = field(default_factory=dict)


@dataclass
class TableMeta:
    """One table as the client caches it. ``leaders`` maps bucket -> tablet node id (None: no leader);
    it is empty for partitioned tables, whose leaders live in their ``PartitionMeta``."""

    table_id: int
    path: TablePath
    schema_id: int
    descriptor: TableDescriptorInfo
    schema: SchemaInfo
    created_time: int
    modified_time: int
    leaders: dict[int, int | None] = field(default_factory=dict)

    @property
    def num_buckets(self) -> int:
        bc = self.descriptor.bucket_count
        return 1 if bc is None else bc

    @property
    def is_partitioned(self) -> bool:
        return bool(self.descriptor.partition_keys)

    @property
    def has_primary_key(self) -> bool:
        return bool(self.schema.primary_key)

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return tuple(self.descriptor.partition_keys)

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        return tuple(self.descriptor.bucket_keys)


def _parse_descriptor(path: TablePath, table_json) -> TableDescriptorInfo:
    try:
        return TableDescriptorInfo.from_json_bytes(bytes(table_json))
    except Exception as exc:  # noqa: BLE001 - any parse failure is the server's fault
        raise FlussError(f"Could not read the descriptor of table '{path}' sent by the server: {exc}", -1) from None


def partition_name_of(spec: dict[str, str], partition_keys) -> str:
    """Partition values joined with '$' in partition-key order."""
    return PARTITION_SEPARATOR.join(spec[k] for k in partition_keys)


class Cluster:
    """Metadata cache of one ``ClientContext``."""

    def __init__(self, ctx):
        self._ctx = ctx
        self.coordinator: ServerNode | None = None
        self.tablets: dict[int, ServerNode] = {}
        self._tables: dict[TablePath, TableMeta] = {}
        self._by_id: dict[int, TableMeta] = {}
        # table_id -> {partition name -> PartitionMeta}
        self._partitions: dict[int, dict[str, PartitionMeta]] = {}
        self._partition_by_id: dict[tuple[int, int], PartitionMeta] = {}
        self._inflight: dict[object, asyncio.Future] = {}
        self.bootstrapped = False

    # -- servers -----------------------------------------------------------------------------------
    def _update_servers(self, resp) -> None:
        if resp.HasField("coordinator_server"):
            c = resp.coordinator_server
            self.coordinator = ServerNode(c.node_id, c.host, c.port, COORDINATOR_SERVER)
        tablets = {}
        for t in resp.tablet_servers:
            tablets[t.node_id] = ServerNode(t.node_id, t.host, t.port, TABLET_SERVER)
        if tablets or not resp.table_metadata:
            self.tablets = tablets

    def server_nodes(self) -> list[ServerNode]:
        nodes = [self.coordinator] if self.coordinator is not None else []
        nodes.extend(self.tablets[k] for k in sorted(self.tablets))
        return nodes

    def random_tablet(self) -> int | None:
        if not self.tablets:
            return None
        return random.choice(list(self.tablets))

    async def bootstrap(self) -> None:
        """Ask the bootstrap servers, in order, for the server list."""
        await self._shared("bootstrap", self._bootstrap)

    async def _bootstrap(self) -> None:
        resp = await self._ctx._bootstrap_request(pb.MetadataRequest())
        self._update_servers(resp)
        self.bootstrapped = True

    async def refresh_servers(self) -> list[ServerNode]:
        await self.bootstrap()
        return self.server_nodes()

    async def _shared(self, key, factory):
        fut = self._inflight.get(key)
        if fut is None:
            fut = asyncio.ensure_future(factory())
            self._inflight[key] = fut

            def done(f, k=key):
                if self._inflight.get(k) is f:
                    del self._inflight[k]
                if not f.cancelled():
                    f.exception()  # retrieved: a caller that gave up must not leave a warning behind

            fut.add_done_callback(done)
        return await asyncio.shield(fut)

    async def _metadata(self, req: pb.MetadataRequest) -> pb.MetadataResponse:
        """GET_METADATA to a random tablet server; retriable errors (a leader being elected, a
        server restarting) are retried a few times with backoff, never forever."""
        if not self.bootstrapped:
            await self.bootstrap()
        for backoff in _METADATA_BACKOFF_S + (None,):
            try:
                resp = await self._ctx.any_tablet(Api.GET_METADATA, req)
            except FlussError as exc:
                if backoff is None or not exc.is_retriable or self._ctx.closed:
                    raise
                if exc.error_code == 1:
                    await self.bootstrap()
                await asyncio.sleep(backoff)
                continue
            self._update_servers(resp)
            return resp
        raise AssertionError("unreachable")

    # -- tables ------------------------------------------------------------------------------------
    def _leaders(self, buckets) -> dict[int, int | None]:
        out = {}
        for b in buckets:
            leader = b.leader_id if b.HasField("leader_id") else None
            if leader is not None and leader not in self.tablets:
                leader = None
            out[b.bucket_id] = leader
        return out

    def _store_table(self, tm) -> TableMeta:
        path = TablePath(tm.table_path.database_name, tm.table_path.table_name)
        desc = _parse_descriptor(path, tm.table_json)
        meta = TableMeta(tm.table_id, path, tm.schema_id, desc, desc.schema, tm.created_time, tm.modified_time,
                         self._leaders(tm.bucket_metadata))
        old = self._tables.get(path)
        if old is not None and old.table_id != meta.table_id:
            self._forget(old.table_id)
        self._tables[path] = meta
        self._by_id[meta.table_id] = meta
        return meta

    def _store_partition(self, table_id: int, pm) -> PartitionMeta:
        part = PartitionMeta(pm.partition_id, pm.partition_name, self._leaders(pm.bucket_metadata))
        self._partitions.setdefault(table_id, {})[pm.partition_name] = part
        self._partition_by_id[(table_id, pm.partition_id)] = part
        return part

    def _forget(self, table_id: int) -> None:
        self._by_id.pop(table_id, None)
        for part in self._partitions.pop(table_id, {}).values():
            self._partition_by_id.pop((table_id, part.partition_id), None)

    def cached_table(self, path: TablePath) -> TableMeta | None:
        return self._tables.get(path)

    def table_by_id(self, table_id: int) -> TableMeta | None:
        return self._by_id.get(table_id)

    async def table(self, path: TablePath, refresh: bool = False) -> TableMeta:
        if not refresh:
            meta = self._tables.get(path)
            if meta is not None and (meta.leaders or meta.is_partitioned):
                return meta
        return await self.refresh_table(path)

    async def refresh_table(self, path: TablePath) -> TableMeta:
        return await self._shared(("table", path), lambda: self._fetch_table(path))

    async def _fetch_table(self, path: TablePath) -> TableMeta:
        req = pb.MetadataRequest()
        path._to_pb(req.table_path.add())
        try:
            resp = await self._metadata(req)
        except FlussError as exc:
            if exc.error_code in (TABLE_NOT_EXIST, Errors.UNKNOWN_SERVER_ERROR) and "not exist" in exc.message.lower():
                raise FlussError(f"Table '{path}' does not exist.", TABLE_NOT_EXIST) from None
            raise
        for tm in resp.table_metadata:
            if tm.table_path.database_name == path.database_name and tm.table_path.table_name == path.table_name:
                return self._store_table(tm)
        raise FlussError(f"Table '{path}' does not exist.", TABLE_NOT_EXIST)

    # -- partitions --------------------------------------------------------------------------------
    async def partition_by_name(self, path: TablePath, name: str, refresh: bool = False
                                ) -> tuple[int, dict[int, int | None]]:
        """(partition_id, {bucket: leader}) of the partition called ``name`` (values joined by '$')."""
        meta = await self.table(path)
        if not refresh:
            part = self._partitions.get(meta.table_id, {}).get(name)
            if part is not None:
                return part.partition_id, part.leaders
        part = await self._shared(("partition", path, name), lambda: self._fetch_partition(path, name))
        return part.partition_id, part.leaders

    async def _fetch_partition(self, path: TablePath, name: str) -> PartitionMeta:
        meta = await self.table(path)
        if not meta.is_partitioned:
            raise FlussError(f"Table '{path}' is not a partitioned table.", 37)
        req = pb.MetadataRequest()
        path._to_pb(req.table_path.add())
        pp = req.partitions_path.add()
        pp.database_name = path.database_name
        pp.table_name = path.table_name
        pp.partition_name = name
        try:
            resp = await self._metadata(req)
        except FlussError as exc:
            if exc.error_code == PARTITION_NOT_EXISTS:
                raise FlussError(f"Partition '{name}' not found for table '{path}'", PARTITION_NOT_EXISTS) from None
            raise
        for tm in resp.table_metadata:
            if tm.table_id == meta.table_id or (tm.table_path.database_name == path.database_name
                                                and tm.table_path.table_name == path.table_name):
                meta = self._store_table(tm)
        found = None
        for pm in resp.partition_metadata:
            part = self._store_partition(pm.table_id, pm)
            if pm.partition_name == name and pm.table_id == meta.table_id:
                found = part
        if found is None:
            raise FlussError(f"Partition '{name}' not found for table '{path}'", PARTITION_NOT_EXISTS)
        return found

    async def partition_by_id(self, table_id: int, partition_id: int, refresh: bool = False) -> PartitionMeta:
        if not refresh:
            part = self._partition_by_id.get((table_id, partition_id))
            if part is not None:
                return part
        meta = self._by_id.get(table_id)
        if meta is None:
            raise FlussError(f"Unknown table id {table_id}: load its table first", 21)
        return await self._shared(("partition-id", table_id, partition_id),
                                  lambda: self._fetch_partition_id(meta, partition_id))

    async def _fetch_partition_id(self, meta: TableMeta, partition_id: int) -> PartitionMeta:
        req = pb.MetadataRequest()
        meta.path._to_pb(req.table_path.add())
        req.partitions_id.append(partition_id)
        try:
            resp = await self._metadata(req)
        except FlussError as exc:
            if exc.error_code == PARTITION_NOT_EXISTS:
                raise FlussError(f"Partition id {partition_id} of table '{meta.path}' does not exist",
                                 PARTITION_NOT_EXISTS) from None
            raise
        for tm in resp.table_metadata:
            if tm.table_id == meta.table_id:
                self._store_table(tm)
        for pm in resp.partition_metadata:
            self._store_partition(pm.table_id, pm)
        part = self._partition_by_id.get((meta.table_id, partition_id))
        if part is None:
            raise FlussError(f"Partition id {partition_id} of table '{meta.path}' does not exist", PARTITION_NOT_EXISTS)
        return part

    async def partitions(self, path: TablePath) -> dict[str, int]:
        """{partition name: partition id} of every partition the server lists now."""
        req = pb.ListPartitionInfosRequest()
        path._to_pb(req.table_path)
        resp = await self._ctx.coordinator(Api.LIST_PARTITION_INFOS, req)
        meta = await self.table(path)
        keys = meta.partition_keys
        out = {}
        for info in resp.partitions_info:
            spec = {kv.key: kv.value for kv in info.partition_spec.partition_key_values}
            try:
                name = partition_name_of(spec, keys)
            except KeyError:
                name = PARTITION_SEPARATOR.join(kv.value for kv in info.partition_spec.partition_key_values)
            out[name] = info.partition_id
        return out

    async def partition_ids(self, path: TablePath) -> list[int]:
        return list((await self.partitions(path)).values())

    # -- leaders -----------------------------------------------------------------------------------
    def leader(self, table_id: int, partition_id: int | None, bucket: int) -> int | None:
        if partition_id is None:
            meta = self._by_id.get(table_id)
            return None if meta is None else meta.leaders.get(bucket)
        part = self._partition_by_id.get((table_id, partition_id))
        return None if part is None else part.leaders.get(bucket)

    async def leader_for(self, table_id: int, partition_id: int | None, bucket: int,
                         deadline: float | None = None) -> int:
        """The leader node id. When none is known the metadata is asked again, with a growing pause,
        until a leader appears or the request timeout has passed: a Fluss cluster elects a new
        table's (or partition's) leaders after CREATE_TABLE has answered, and a dead leader's
        buckets are without one until the coordinator notices, and both are LEADER_NOT_AVAILABLE,
        which is retriable. ``deadline`` (the loop's clock) replaces the request timeout for a caller
        that has already used some of it."""
        node = self.leader(table_id, partition_id, bucket)
        if node is not None:
            return node
        meta = self._by_id.get(table_id)
        if meta is None:
            raise FlussError(f"Unknown table id {table_id}", 21)
        where = f"bucket {bucket} of table '{meta.path}'" + (
            f" partition {partition_id}" if partition_id is not None else "")
        loop = asyncio.get_running_loop()
        timeout_ms = self._ctx.request_timeout_ms
        if deadline is None:
            deadline = loop.time() + timeout_ms / 1000 if timeout_ms else float("inf")
        pause = _LEADER_BACKOFF_FIRST_S
        while True:
            if partition_id is None:
                meta = await self.refresh_table(meta.path)
                if meta.table_id != table_id:
                    raise FlussError(f"Table '{meta.path}' was dropped (and created again) while a leader "
                                     f"of its bucket {bucket} was awaited", TABLE_NOT_EXIST)
            else:
                await self.partition_by_id(table_id, partition_id, refresh=True)
            node = self.leader(table_id, partition_id, bucket)
            if node is not None:
                return node
            if not 0 <= bucket < meta.num_buckets:
                # no election will ever give it one
                raise FlussError(f"No leader found for {where}: the table has {meta.num_buckets} buckets",
                                 Errors.LEADER_NOT_AVAILABLE_EXCEPTION)
            left = deadline - loop.time()
            if left <= 0 or self._ctx.closed:
                raise FlussError(f"No leader found for {where} within the request timeout "
                                 f"({timeout_ms} ms)", Errors.LEADER_NOT_AVAILABLE_EXCEPTION)
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, _LEADER_BACKOFF_MAX_S)

    def invalidate(self, table_id: int, partition_id: int | None = None) -> None:
        """Drop cached leaders so the next lookup asks the server again."""
        if partition_id is not None:
            part = self._partition_by_id.pop((table_id, partition_id), None)
            if part is not None:
                self._partitions.get(table_id, {}).pop(part.name, None)
            return
        meta = self._by_id.get(table_id)
        if meta is not None and meta.leaders:
            # Forget the leaders, not the table: a table someone holds must stay resolvable by id
            # (its path is how the next lookup refreshes it), so a network error cannot turn into
            # "unknown table". A copy, because writers and scanners hold the old object.
            stale = dataclasses.replace(meta, leaders={})
            self._by_id[table_id] = stale
            if self._tables.get(meta.path) is meta:
                self._tables[meta.path] = stale
        for part in self._partitions.pop(table_id, {}).values():
            self._partition_by_id.pop((table_id, part.partition_id), None)

    def invalidate_path(self, path: TablePath) -> None:
        meta = self._tables.get(path)
        if meta is not None:
            self.invalidate(meta.table_id)
