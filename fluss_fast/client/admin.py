"""``FlussAdmin``: database, table, partition, offset and cluster operations, as in pyfluss 1.0.0
(plus the older guide's spellings: ``await conn.get_admin()``, ``get_table``, ``offset_type=``)."""
from __future__ import annotations

import asyncio

from ..error_codes import CLIENT_ERROR, Errors
from ..errors import FlussError
from ..metadata._args import type_name as _type_name
from ..metadata._args import want_instance as _check
from ..metadata._args import want_str_dict as _want_str_dict
from ..metadata.cluster import DatabaseDescriptor, DatabaseInfo, LakeSnapshot, ServerNode
from ..metadata.log import OffsetSpec
from ..metadata.schema import TableDescriptor
from ..metadata.table import PARTITION_SEPARATOR, PartitionInfo, TableBucket, TableInfo, TablePath
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from .admin_cluster import AdminClusterMixin
from .admin_schema import AdminSchemaMixin
from .cluster import partition_name_of
from .runtime import on_runtime

PARTITION_NOT_EXISTS = Errors.PARTITION_NOT_EXISTS
TABLE_NOT_PARTITIONED = Errors.TABLE_NOT_PARTITIONED_EXCEPTION
LEADER_NOT_AVAILABLE = Errors.LEADER_NOT_AVAILABLE_EXCEPTION


def _check_bool(arg: str, value) -> bool:
    return _check(arg, value, bool)


def _bucket_ids(bucket_ids) -> list[int]:
    if isinstance(bucket_ids, (str, bytes)) or not hasattr(bucket_ids, "__iter__"):
        raise TypeError(f"argument 'bucket_ids': '{_type_name(bucket_ids)}' object cannot be converted to 'Sequence'")
    out = []
    for b in bucket_ids:
        if isinstance(b, bool) or not isinstance(b, int):
            raise TypeError(f"argument 'bucket_ids': '{_type_name(b)}' object cannot be interpreted as an integer")
        out.append(int(b))
    for b in out:
        if b < 0:
            raise FlussError(f"Invalid bucket_id: {b}. Bucket IDs must be non-negative", CLIENT_ERROR)
    return out


def _offset_spec(offset_spec, offset_type, timestamp) -> OffsetSpec:
    if offset_spec is not None and offset_type is not None:
        raise TypeError("pass either offset_spec or offset_type, not both")
    if offset_spec is None and offset_type is None:
        raise TypeError("missing required argument 'offset_spec'")
    if offset_spec is not None:
        if isinstance(offset_spec, str):
            offset_type, offset_spec = offset_spec, None
        else:
            _check("offset_spec", offset_spec, OffsetSpec)
            if timestamp is not None:
                raise TypeError("'timestamp' goes with an offset_type string; an OffsetSpec carries its own "
                                "(OffsetSpec.timestamp(ts))")
            return offset_spec
    kind = str(offset_type).lower()
    if kind == "earliest":
        return OffsetSpec.earliest()
    if kind == "latest":
        return OffsetSpec.latest()
    if kind == "timestamp":
        if timestamp is None:
            raise FlussError("offset_type 'timestamp' needs a 'timestamp' (epoch milliseconds)", CLIENT_ERROR)
        return OffsetSpec.timestamp(timestamp)
    raise FlussError(f"Invalid offset_type '{offset_type}': expected 'earliest', 'latest' or 'timestamp'",
                     CLIENT_ERROR)


def _fill_spec(msg, spec: dict[str, str]) -> None:
    for k, v in spec.items():
        kv = msg.partition_key_values.add()
        kv.key = k
        kv.value = v


def _partition_request(request_cls, table_path, partition_spec, flag_arg: str, flag):
    """The checked Create/DropPartitionRequest (both carry the flag as ``ignore_if_not_exists``) and
    the words naming the partition in errors."""
    _check("table_path", table_path, TablePath)
    _want_str_dict("partition_spec", partition_spec)
    _check_bool(flag_arg, flag)
    req = request_cls(ignore_if_not_exists=flag)
    table_path._to_pb(req.table_path)
    _fill_spec(req.partition_spec, partition_spec)
    return req, f"partition {partition_spec} of table '{table_path}'"


def _with_context(exc: FlussError, what: str) -> FlussError:
    """Name the object at fault when the server's message does not."""
    quoted = what.split("'")[1] if what.count("'") >= 2 else what
    if what and quoted not in exc.message:
        return FlussError(f"{exc.message} ({what})", exc.error_code)
    return exc


class FlussAdmin(AdminSchemaMixin, AdminClusterMixin):
    """Administrative client: every method is async (``await``-able from any event loop).

    The methods beyond pyfluss 1.0.0's live in ``admin_schema`` and ``admin_cluster``."""

    def __init__(self, ctx):
        self._ctx = ctx
        self._runtime = ctx.runtime

    def __await__(self):
        # The older guide wrote ``admin = await conn.get_admin()``.
        if False:  # pragma: no cover - makes this a generator
            yield
        return self

    def __repr__(self) -> str:
        return "FlussAdmin()"

    async def _call(self, api_key, req, what: str = ""):
        try:
            return await self._ctx.coordinator(api_key, req)
        except FlussError as exc:
            raise _with_context(exc, what) from None

    async def _table_call(self, api_key, request_cls, table_path: TablePath, name_table: bool = True):
        """A request that carries only the table path; errors name the table unless told not to."""
        _check("table_path", table_path, TablePath)
        req = request_cls()
        table_path._to_pb(req.table_path)
        return await self._call(api_key, req, f"table '{table_path}'" if name_table else "")

    # -- databases ---------------------------------------------------------------------------------
    @on_runtime
    async def create_database(self, database_name: str, database_descriptor: DatabaseDescriptor | None = None,
                              ignore_if_exists: bool = False) -> None:
        """Create a database.

        Args:
            database_name: Name of the new database.
            database_descriptor: Comment and custom properties; ``None`` for an empty descriptor.
            ignore_if_exists: Succeed quietly if the database exists already.

        Raises:
            FlussError: ``DATABASE_ALREADY_EXIST`` (unless ``ignore_if_exists``), an invalid name, or
                the server is unreachable.

        Example:
            ```python
            await admin.create_database("shop", ignore_if_exists=True)
            ```
        """
        _check("database_name", database_name, str)
        if isinstance(database_descriptor, bool):
            # the older stub's order, create_database(name, ignore_if_exists, database_descriptor)
            if ignore_if_exists is False or ignore_if_exists is None:
                database_descriptor, ignore_if_exists = None, database_descriptor
            elif isinstance(ignore_if_exists, DatabaseDescriptor):
                database_descriptor, ignore_if_exists = ignore_if_exists, database_descriptor
        if database_descriptor is not None:
            _check("database_descriptor", database_descriptor, DatabaseDescriptor)
        _check_bool("ignore_if_exists", ignore_if_exists)
        req = pb.CreateDatabaseRequest(database_name=database_name, ignore_if_exists=ignore_if_exists)
        req.database_json = (database_descriptor or DatabaseDescriptor()).to_json_bytes()
        await self._call(Api.CREATE_DATABASE, req, f"database '{database_name}'")

    @on_runtime
    async def drop_database(self, database_name: str, ignore_if_not_exists: bool = False,
                            cascade: bool = True) -> None:
        """Drop a database.

        Args:
            database_name: The database to drop.
            ignore_if_not_exists: Succeed quietly if there is no such database.
            cascade: Drop its tables too; with ``False`` a database that still has tables is refused.

        Raises:
            FlussError: ``DATABASE_NOT_EXIST`` (unless ``ignore_if_not_exists``) or
                ``DATABASE_NOT_EMPTY`` (``cascade=False``).
        """
        _check("database_name", database_name, str)
        _check_bool("ignore_if_not_exists", ignore_if_not_exists)
        _check_bool("cascade", cascade)
        req = pb.DropDatabaseRequest(database_name=database_name, ignore_if_not_exists=ignore_if_not_exists,
                                     cascade=cascade)
        await self._call(Api.DROP_DATABASE, req, f"database '{database_name}'")

    @on_runtime
    async def list_databases(self) -> list[str]:
        """Names of every database.

        Returns:
            The database names, in the server's order.
        """
        resp = await self._call(Api.LIST_DATABASES, pb.ListDatabasesRequest())
        return list(resp.database_name)

    @on_runtime
    async def database_exists(self, database_name: str) -> bool:
        """Whether a database exists.

        Args:
            database_name: The database to look for.

        Returns:
            ``True`` if it exists.
        """
        _check("database_name", database_name, str)
        resp = await self._call(Api.DATABASE_EXISTS, pb.DatabaseExistsRequest(database_name=database_name))
        return bool(resp.exists)

    @on_runtime
    async def get_database_info(self, database_name: str) -> DatabaseInfo:
        """A database's descriptor and timestamps.

        Args:
            database_name: The database.

        Returns:
            Its name, descriptor (comment, custom properties), creation and modification times.

        Raises:
            FlussError: ``DATABASE_NOT_EXIST``.
        """
        _check("database_name", database_name, str)
        resp = await self._call(Api.GET_DATABASE_INFO, pb.GetDatabaseInfoRequest(database_name=database_name),
                                f"database '{database_name}'")
        try:
            desc = DatabaseDescriptor.from_json_bytes(resp.database_json)
        except Exception as exc:  # noqa: BLE001
            raise FlussError(f"Could not read the descriptor of database '{database_name}': {exc}", -1) from None
        return DatabaseInfo(database_name, desc, resp.created_time, resp.modified_time)

    # -- tables ------------------------------------------------------------------------------------
    @on_runtime
    async def list_tables(self, database_name: str) -> list[str]:
        """Names of the tables of one database.

        Args:
            database_name: The database.

        Returns:
            The table names (without the database).

        Raises:
            FlussError: ``DATABASE_NOT_EXIST``.
        """
        _check("database_name", database_name, str)
        resp = await self._call(Api.LIST_TABLES, pb.ListTablesRequest(database_name=database_name),
                                f"database '{database_name}'")
        return list(resp.table_name)

    @on_runtime
    async def table_exists(self, table_path: TablePath) -> bool:
        """Whether a table exists.

        Args:
            table_path: Database and table name.

        Returns:
            ``True`` if it exists.
        """
        resp = await self._table_call(Api.TABLE_EXISTS, pb.TableExistsRequest, table_path, name_table=False)
        return bool(resp.exists)

    @on_runtime
    async def create_table(self, table_path: TablePath, table_descriptor: TableDescriptor,
                           ignore_if_exists: bool | None = None) -> None:
        """Create a table.

        A schema with ``primary_keys`` makes a primary-key table; otherwise a log table.

        Args:
            table_path: Database and table name.
            table_descriptor: Schema, buckets, partition keys, properties.
            ignore_if_exists: Succeed quietly if the table exists already.

        Raises:
            FlussError: ``TABLE_ALREADY_EXIST`` (unless ``ignore_if_exists``), ``DATABASE_NOT_EXIST``,
                or an invalid descriptor (the server's check names the problem).

        Example:
            ```python
            schema = fluss.Schema(pa.schema([("id", pa.int64()), ("name", pa.string())]))
            await admin.create_table(fluss.TablePath("shop", "events"),
                                     fluss.TableDescriptor(schema, bucket_count=3), ignore_if_exists=True)
            ```
        """
        _check("table_path", table_path, TablePath)
        _check("table_descriptor", table_descriptor, TableDescriptor)
        ignore = False if ignore_if_exists is None else _check_bool("ignore_if_exists", ignore_if_exists)
        req = pb.CreateTableRequest(table_json=table_descriptor.to_json_bytes(), ignore_if_exists=ignore)
        table_path._to_pb(req.table_path)
        await self._call(Api.CREATE_TABLE, req, f"table '{table_path}'")
        self._ctx.metadata.invalidate_path(table_path)

    @on_runtime
    async def drop_table(self, table_path: TablePath, ignore_if_not_exists: bool = False) -> None:
        """Drop a table, its partitions and its data.

        Args:
            table_path: Database and table name.
            ignore_if_not_exists: Succeed quietly if there is no such table.

        Raises:
            FlussError: ``TABLE_NOT_EXIST`` (unless ``ignore_if_not_exists``).
        """
        _check("table_path", table_path, TablePath)
        _check_bool("ignore_if_not_exists", ignore_if_not_exists)
        req = pb.DropTableRequest(ignore_if_not_exists=ignore_if_not_exists)
        table_path._to_pb(req.table_path)
        try:
            await self._call(Api.DROP_TABLE, req, f"table '{table_path}'")
        finally:
            self._ctx.metadata.invalidate_path(table_path)

    @on_runtime
    async def get_table_info(self, table_path: TablePath) -> TableInfo:
        """A table's metadata as stored by the server.

        Also available as ``get_table`` (the older guide's name).

        Args:
            table_path: Database and table name.

        Returns:
            Table id, schema id, descriptor, bucket count, keys and timestamps.

        Raises:
            FlussError: ``TABLE_NOT_EXIST``.
        """
        resp = await self._table_call(Api.GET_TABLE_INFO, pb.GetTableInfoRequest, table_path)
        from .cluster import _parse_descriptor

        desc = _parse_descriptor(table_path, resp.table_json)
        md = self._ctx.metadata
        cached = md.cached_table(table_path)
        if cached is not None and (cached.table_id != resp.table_id or cached.schema_id != resp.schema_id):
            md.invalidate(cached.table_id)
        return TableInfo(table_path, resp.table_id, resp.schema_id, desc, resp.created_time, resp.modified_time)

    # Older guide: ``await admin.get_table(path)``.
    get_table = get_table_info

    @on_runtime
    async def get_latest_lake_snapshot(self, table_path: TablePath) -> LakeSnapshot:
        """The latest lake snapshot of a table (tables tiered to a data lake).

        Args:
            table_path: Database and table name.

        Returns:
            The snapshot id and the log offset each bucket has been tiered up to.

        Raises:
            FlussError: ``LAKE_SNAPSHOT_NOT_EXIST`` when the table has none (always so on the
                embedded server, which has no lake).
        """
        resp = await self._table_call(Api.GET_LAKE_SNAPSHOT, pb.GetLakeSnapshotRequest, table_path)
        offsets = {}
        for b in resp.bucket_snapshots:
            if b.HasField("log_offset"):
                pid = b.partition_id if b.HasField("partition_id") else None
                offsets[TableBucket._make(resp.table_id, pid, b.bucket_id)] = b.log_offset
        return LakeSnapshot._make(resp.snapshotId, offsets)

    # -- partitions --------------------------------------------------------------------------------
    @on_runtime
    async def create_partition(self, table_path: TablePath, partition_spec: dict[str, str],
                               ignore_if_exists: bool = False) -> None:
        """Create a partition of a partitioned table.

        Args:
            table_path: Database and table name.
            partition_spec: A value for every partition key, as strings, e.g. ``{"region": "US"}``.
            ignore_if_exists: Succeed quietly if the partition exists already.

        Raises:
            FlussError: ``PARTITION_ALREADY_EXISTS`` (unless ``ignore_if_exists``),
                ``TABLE_NOT_PARTITIONED_EXCEPTION``, or a spec that does not name exactly the partition keys.
        """
        req, what = _partition_request(pb.CreatePartitionRequest, table_path, partition_spec, "ignore_if_exists",
                                       ignore_if_exists)
        await self._call(Api.CREATE_PARTITION, req, what)

    @on_runtime
    async def drop_partition(self, table_path: TablePath, partition_spec: dict[str, str],
                             ignore_if_not_exists: bool = False) -> None:
        """Drop a partition and its data.

        Args:
            table_path: Database and table name.
            partition_spec: A value for every partition key, as strings.
            ignore_if_not_exists: Succeed quietly if there is no such partition.

        Raises:
            FlussError: ``PARTITION_NOT_EXISTS`` (unless ``ignore_if_not_exists``).
        """
        req, what = _partition_request(pb.DropPartitionRequest, table_path, partition_spec, "ignore_if_not_exists",
                                       ignore_if_not_exists)
        try:
            await self._call(Api.DROP_PARTITION, req, what)
        finally:
            md = self._ctx.metadata
            meta = md.cached_table(table_path)
            if meta is not None:
                try:
                    name = partition_name_of(partition_spec, meta.partition_keys)
                except KeyError:
                    name = None
                part = md._partitions.get(meta.table_id, {}).get(name) if name else None
                if part is not None:
                    md.invalidate(meta.table_id, part.partition_id)

    @on_runtime
    async def list_partition_infos(self, table_path: TablePath,
                                   partition_spec: dict[str, str] | None = None) -> list[PartitionInfo]:
        """The partitions of a table.

        Args:
            table_path: Database and table name.
            partition_spec: Only partitions matching these key values (a subset of the partition keys);
                ``None`` for all.

        Returns:
            Partition id, name (values joined with ``$``) and spec of each partition.

        Raises:
            FlussError: ``TABLE_NOT_EXIST`` or ``TABLE_NOT_PARTITIONED_EXCEPTION``.
        """
        _check("table_path", table_path, TablePath)
        req = pb.ListPartitionInfosRequest()
        table_path._to_pb(req.table_path)
        if partition_spec is not None:
            _want_str_dict("partition_spec", partition_spec)
            _fill_spec(req.partial_partition_spec, partition_spec)
        resp = await self._call(Api.LIST_PARTITION_INFOS, req, f"table '{table_path}'")
        out = []
        for info in resp.partitions_info:
            spec = {kv.key: kv.value for kv in info.partition_spec.partition_key_values}
            name = PARTITION_SEPARATOR.join(kv.value for kv in info.partition_spec.partition_key_values)
            out.append(PartitionInfo(info.partition_id, name, spec))
        return out

    # -- offsets -----------------------------------------------------------------------------------
    @on_runtime
    async def list_offsets(self, table_path: TablePath, bucket_ids: list[int], offset_spec=None,
                           timestamp: int | None = None, *, offset_type: str | None = None) -> dict[int, int]:
        """Offsets of some buckets of a non-partitioned table.

        Args:
            table_path: Database and table name.
            bucket_ids: The buckets to ask about.
            offset_spec: ``OffsetSpec.earliest()``, ``OffsetSpec.latest()`` or
                ``OffsetSpec.timestamp(ms)``; defaults to latest.
            timestamp: Milliseconds since the epoch, with the older ``offset_type="timestamp"``.
            offset_type: The older guide's spelling: ``"earliest"``, ``"latest"`` or ``"timestamp"``.

        Returns:
            ``{bucket_id: offset}``. *Latest* is the offset the next record will get; *timestamp* is
            the first offset whose commit time is at or after it.

        Raises:
            FlussError: An empty bucket list, a bucket the table does not have, or the server's error.

        Example:
            ```python
            ends = await admin.list_offsets(path, [0, 1, 2], fluss.OffsetSpec.latest())
            ```
        """
        _check("table_path", table_path, TablePath)
        buckets = _bucket_ids(bucket_ids)
        spec = _offset_spec(offset_spec, offset_type, timestamp)
        return await self._list_offsets(table_path, None, buckets, spec)

    @on_runtime
    async def list_partition_offsets(self, table_path: TablePath, partition_name: str, bucket_ids: list[int],
                                     offset_spec=None, timestamp: int | None = None, *,
                                     offset_type: str | None = None) -> dict[int, int]:
        """Offsets of some buckets of one partition.

        Args:
            table_path: Database and table name.
            partition_name: The partition's name (its values joined with ``$``).
            bucket_ids: The buckets to ask about.
            offset_spec: As for `list_offsets`.
            timestamp: As for `list_offsets`.
            offset_type: As for `list_offsets`.

        Returns:
            ``{bucket_id: offset}``.

        Raises:
            FlussError: ``PARTITION_NOT_EXISTS``, or as for `list_offsets`.
        """
        _check("table_path", table_path, TablePath)
        _check("partition_name", partition_name, str)
        buckets = _bucket_ids(bucket_ids)
        spec = _offset_spec(offset_spec, offset_type, timestamp)
        return await self._list_offsets(table_path, partition_name, buckets, spec)

    async def _list_offsets(self, path: TablePath, partition_name: str | None, buckets: list[int],
                            spec: OffsetSpec) -> dict[int, int]:
        if not buckets:
            raise FlussError("Buckets are empty.", CLIENT_ERROR)
        md = self._ctx.metadata
        # a new table's buckets answer NOT_LEADER until their leaders have taken up the election the
        # coordinator already published, so retriable errors are retried up to the request timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self._ctx.request_timeout_ms or 30000) / 1000
        attempt = 0
        while True:
            can_retry = loop.time() < deadline
            meta = await md.table(path, refresh=True)
            partition_id = None
            if partition_name is not None:
                try:
                    partition_id, _ = await md.partition_by_name(path, partition_name, refresh=True)
                except FlussError as exc:
                    if exc.error_code not in (PARTITION_NOT_EXISTS, TABLE_NOT_PARTITIONED):
                        raise
                    why = " (the table is not partitioned)" if exc.error_code == TABLE_NOT_PARTITIONED else ""
                    raise FlussError(f"Table partition '{path}(p={partition_name})' does not exist{why}.",
                                     PARTITION_NOT_EXISTS) from None
            by_leader: dict[int, list[int]] = {}
            for b in buckets:
                leader = md.leader(meta.table_id, partition_id, b)
                if leader is None and 0 <= b < meta.num_buckets:
                    # a new table's leaders are elected after CREATE_TABLE answered
                    try:
                        leader = await md.leader_for(meta.table_id, partition_id, b)
                    except FlussError as exc:
                        if exc.error_code != LEADER_NOT_AVAILABLE:
                            raise
                if leader is None:
                    where = f"TableBucket(table_id={meta.table_id}, " + (
                        f"partition_id={partition_id}, " if partition_id is not None else "") + f"bucket={b})"
                    # pyfluss reports a bucket the table does not have as a client error (-2)
                    hint = (f": the table has {meta.num_buckets} buckets" if b >= meta.num_buckets
                            else " within the request timeout")
                    raise FlussError(f"No leader found for table bucket: {where} of table '{path}'{hint}.",
                                     CLIENT_ERROR)
                by_leader.setdefault(leader, []).append(b)

            async def one(leader: int, ids: list[int], meta=meta, partition_id=partition_id):
                req = pb.ListOffsetsRequest(follower_server_id=-1, offset_type=spec.offset_type,
                                            table_id=meta.table_id)
                if partition_id is not None:
                    req.partition_id = partition_id
                req.bucket_id.extend(ids)
                if spec.offset_type == OffsetSpec.TIMESTAMP:
                    req.startTimestamp = spec.timestamp_ms
                return await self._ctx.tablet(leader, Api.LIST_OFFSETS, req)

            results = await asyncio.gather(*(one(n, ids) for n, ids in by_leader.items()), return_exceptions=True)
            out: dict[int, int] = {}
            retry = False
            for res in results:
                if isinstance(res, BaseException):
                    if isinstance(res, FlussError) and res.is_retriable and can_retry:
                        retry = True
                        continue
                    raise res
                for br in res.buckets_resp:
                    if br.HasField("error_code") and br.error_code != 0:
                        err = FlussError(
                            (br.error_message or f"error {br.error_code}")
                            + f" (bucket {br.bucket_id} of table '{path}'"
                            + (f", partition '{partition_name}'" if partition_name is not None else "") + ")",
                            br.error_code)
                        if err.is_retriable and can_retry:
                            retry = True
                            continue
                        raise err
                    if not br.HasField("offset"):
                        raise FlussError(f"The server sent no offset for bucket {br.bucket_id} of table '{path}'", -1)
                    out[br.bucket_id] = br.offset
            if not retry:
                return {b: out[b] for b in buckets if b in out}
            md.invalidate(meta.table_id, partition_id)
            await asyncio.sleep(max(0.0, min(0.05 * 2 ** attempt, 1.0, deadline - loop.time())))
            attempt += 1

    # -- cluster -----------------------------------------------------------------------------------
    @on_runtime
    async def get_server_nodes(self) -> list[ServerNode]:
        """The cluster's servers: the coordinator and every tablet server.

        Returns:
            One ``ServerNode`` per server (id, host, port, type).
        """
        return await self._ctx.metadata.refresh_servers()
