"""``ClientContext``: the state behind one ``FlussConnection`` (config, runtime, one socket per server,
the metadata cache). Every coroutine here runs on the runtime loop.
"""
from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable

from ..config import Config
from ..error_codes import CLIENT_ERROR
from ..errors import FlussError
from ..metadata.table import TablePath
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import API_KEYS, COORDINATOR, TABLET_SERVER, Api
from ..rpc.connection import NETWORK_EXCEPTION, REQUEST_TIME_OUT, Connection
from .cluster import Cluster
from .metrics import MetricsRegistry
from .runtime import Runtime, get_runtime

# Requests that change nothing on the server: safe to send again after a dropped connection.
READ_ONLY_APIS = frozenset({
    Api.GET_METADATA, Api.LIST_DATABASES, Api.DATABASE_EXISTS, Api.GET_TABLE_INFO, Api.LIST_TABLES,
    Api.LIST_PARTITION_INFOS, Api.TABLE_EXISTS, Api.GET_TABLE_SCHEMA, Api.LIST_OFFSETS, Api.GET_DATABASE_INFO,
    Api.GET_LAKE_SNAPSHOT, Api.GET_LATEST_KV_SNAPSHOTS, Api.GET_KV_SNAPSHOT_METADATA, Api.LIMIT_SCAN,
})
_RETRY_BACKOFF_S = (0.1, 0.2, 0.4)


def parse_bootstrap_servers(text: str) -> list[tuple[str, int]]:
    out = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        if item.startswith("["):  # [ipv6]:port
            host, _, port = item[1:].partition("]:")
        else:
            host, sep, port = item.rpartition(":")
            if not sep:
                raise FlussError(f"Invalid bootstrap server '{item}': expected host:port", CLIENT_ERROR)
        try:
            out.append((host, int(port)))
        except ValueError:
            raise FlussError(f"Invalid bootstrap server '{item}': port '{port}' is not a number",
                             CLIENT_ERROR) from None
    if not out:
        raise FlussError(f"No bootstrap servers in 'bootstrap.servers' = '{text}'", CLIENT_ERROR)
    return out


class ClientContext:
    def __init__(self, config: Config, runtime: Runtime | None = None):
        self.config = config
        self.runtime = runtime or get_runtime()
        self.metadata = Cluster(self)
        self._conns: dict[object, Connection] = {}
        self._opening: dict[object, asyncio.Future] = {}
        self._tasks: set = set()
        self._closed = False
        # writers made on this connection: FlussConnection.close() delivers what they hold first
        self.writers = weakref.WeakSet()
        # the metrics of its writers, scanners and lookups (FlussConnection.metrics())
        self.client_metrics = MetricsRegistry()
        # schemas by (table id, schema id): a pair never names another schema (a table created again
        # gets a new id), so every scanner and lookuper of this connection shares one fetch
        self.schemas: dict[tuple[int, int], object] = {}
        self._bootstrap_addrs = parse_bootstrap_servers(config.bootstrap_servers)
        self._closer = self._close_at_exit
        self.runtime.add_closer(self._closer)

    # -- settings ----------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def sasl(self) -> tuple[str, str, str] | None:
        c = self.config
        if c.security_protocol.lower() == "sasl":
            return (c.security_sasl_username, c.security_sasl_password, c.security_sasl_mechanism)
        return None

    @property
    def request_timeout_ms(self) -> int:
        return self.config.get("request-timeout")

    def _check_open(self) -> None:
        if self._closed:
            raise FlussError("The FlussConnection has been closed", CLIENT_ERROR)

    # -- connections -------------------------------------------------------------------------------
    async def _open(self, key, host: str, port: int, expected: int | None) -> Connection:
        conn = self._conns.get(key)
        if conn is not None and not conn.closed:
            return conn
        fut = self._opening.get(key)
        if fut is None:
            self._check_open()
            fut = asyncio.ensure_future(Connection.open(
                host, port, connect_timeout_ms=self.config.connect_timeout_ms,
                request_timeout_ms=self.request_timeout_ms, sasl=self.sasl, expected_server_type=expected))
            self._opening[key] = fut

            def done(f, k=key):
                if self._opening.get(k) is f:
                    del self._opening[k]
                if f.cancelled():
                    return
                if f.exception() is None:
                    c = f.result()
                    if self._closed:
                        c.close()
                    else:
                        self._conns[k] = c

            fut.add_done_callback(done)
        return await asyncio.shield(fut)

    async def _bootstrap_request(self, req) -> pb.MetadataResponse:
        """GET_METADATA to the bootstrap servers in turn; retried with backoff on network errors."""
        self._check_open()
        errors = []
        for attempt in range(len(_RETRY_BACKOFF_S) + 1):
            for host, port in self._bootstrap_addrs:
                key = ("boot", host, port)
                try:
                    conn = await self._open(key, host, port, None)
                    return await conn.request(Api.GET_METADATA, req)
                except FlussError as exc:
                    if not exc.is_retriable:
                        raise
                    errors.append(exc)
            if attempt < len(_RETRY_BACKOFF_S):
                await asyncio.sleep(_RETRY_BACKOFF_S[attempt])
        last = errors[-1]
        servers = ",".join(f"{h}:{p}" for h, p in self._bootstrap_addrs)
        raise FlussError(f"Could not reach any bootstrap server ({servers}): {last.message}", last.error_code)

    async def coordinator_connection(self) -> Connection:
        md = self.metadata
        if md.coordinator is None:
            await md.bootstrap()
        node = md.coordinator
        if node is None:
            raise FlussError("Coordinator server not found in cluster metadata", -1)
        try:
            return await self._open(("cs", node.id), node.host, node.port, COORDINATOR)
        except FlussError as exc:
            if exc.error_code != NETWORK_EXCEPTION:
                raise
            # The coordinator may have moved: ask the bootstrap servers again, then try once more.
            await md.bootstrap()
            node = md.coordinator
            if node is None:
                raise
            return await self._open(("cs", node.id), node.host, node.port, COORDINATOR)

    def open_connection(self, node_id: int) -> Connection | None:
        """The connection to tablet server ``node_id`` if it is open now (no await), else None."""
        conn = self._conns.get(("ts", node_id))
        return conn if conn is not None and not conn.closed else None

    def server_connections(self) -> list[dict]:
        """``FlussConnection.server_connections()``: the open sockets, on the runtime loop."""
        return [{"address": c.address, "server_type": c.server_type, "in_flight": c.in_flight,
                 "api_versions": {k: c.version(k) for k in API_KEYS if c.supports(k)}}
                for c in self._conns.values() if not c.closed]

    async def connection(self, node_id: int) -> Connection:
        """The connection to tablet server ``node_id`` (opened on first use, reopened after a failure)."""
        conn = self._conns.get(("ts", node_id))
        if conn is not None and not conn.closed:
            return conn
        md = self.metadata
        node = md.tablets.get(node_id)
        if node is None:
            await md.bootstrap()
            node = md.tablets.get(node_id)
            if node is None:
                raise FlussError(f"Tablet server {node_id} is not found in metadata cache.", 44)
        try:
            return await self._open(("ts", node_id), node.host, node.port, TABLET_SERVER)
        except FlussError as exc:
            if exc.error_code != NETWORK_EXCEPTION:
                raise
            await md.bootstrap()
            node = md.tablets.get(node_id)
            if node is None:
                raise FlussError(f"Tablet server {node_id} is not found in metadata cache.", 44) from None
            return await self._open(("ts", node_id), node.host, node.port, TABLET_SERVER)

    # -- requests ----------------------------------------------------------------------------------
    async def _send(self, get_conn, api_key: int, req, timeout):
        self._check_open()
        attempts = len(_RETRY_BACKOFF_S) if api_key in READ_ONLY_APIS else 0
        for attempt in range(attempts + 1):
            conn = await get_conn()
            try:
                return await conn.request(api_key, req, timeout)
            except FlussError as exc:
                # after a timeout the connection was replaced (it may be a frozen peer): one more
                # try on a fresh one, no more, so a read waits at most twice request-timeout
                again = exc.error_code == NETWORK_EXCEPTION or (exc.error_code == REQUEST_TIME_OUT
                                                                 and attempt == 0)
                if not again or attempt >= attempts or self._closed:
                    raise
            await asyncio.sleep(_RETRY_BACKOFF_S[attempt])

    async def coordinator(self, api_key: int, req, timeout: float | None = None):
        return await self._send(self.coordinator_connection, api_key, req, timeout)

    async def tablet(self, node_id: int, api_key: int, req, timeout: float | None = None):
        return await self._send(lambda: self.connection(node_id), api_key, req, timeout)

    async def tablet_write_raw(self, node_id: int, api_key: int, body,
                               timeout: float | None = None) -> asyncio.Future:
        """A serialized request to tablet server ``node_id`` (its connection opened first if need
        be), returned once written: the future of the response body."""
        self._check_open()
        conn = await self.connection(node_id)
        return await conn.write_raw(api_key, body, timeout)

    async def any_tablet(self, api_key: int, req, timeout: float | None = None):
        """Send to a random tablet server (the coordinator when none is known)."""
        md = self.metadata
        if not md.tablets:
            await md.bootstrap()
        node_id = md.random_tablet()
        if node_id is None:
            info = API_KEYS[api_key]
            if info.coordinator:
                return await self.coordinator(api_key, req, timeout)
            raise FlussError("No tablet server is available in the cluster", 44)
        return await self.tablet(node_id, api_key, req, timeout)

    async def init_writer(self, table_paths: Iterable[TablePath]) -> int:
        """A fresh writer id for idempotent writes (INIT_WRITER to a random tablet server)."""
        req = pb.InitWriterRequest()
        for path in table_paths:
            path._to_pb(req.table_path.add())
        resp = await self.any_tablet(Api.INIT_WRITER, req)
        return resp.writer_id

    # -- background work and close -----------------------------------------------------------------
    def register_task(self, task: asyncio.Task) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.runtime.remove_closer(self._closer)
        tasks = [t for t in self._tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
        for fut in list(self._opening.values()):
            fut.cancel()
        conns = list(self._conns.values())
        self._conns.clear()
        for c in conns:
            c.close()
        for c in conns:
            await c.wait_closed(0.5)

    async def _close_at_exit(self) -> None:
        await self.close()
