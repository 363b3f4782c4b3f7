"""The embedded server: one asyncio process plays the whole cluster (docs/contributing/internals.md, "Embedded server").

The ``--listen`` port is the coordinator (server_type 1, node 0); every tablet server k gets its own
listener (server_type 2, node k), and a SASL twin of each when ``--sasl-listen`` is given.
``FlussServer`` owns the pieces and their life cycle: the data directory lock, the catalog, the
replica manager, the coordinator and tablet services, the listeners (``listeners.py``) and their
connections (``protocol.py``). ``LocalServer`` (``local.py``) runs it for tests and notebooks.
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket

from ..rpc.api import COORDINATOR, TABLET_SERVER
from ..rpc.frame_pool import FramePool
from .auth import PlainAuthenticator
from .catalog import Catalog
from .datadir_lock import DataDirLock
from .flush_policy import FlushPolicy
from .listeners import PLAINTEXT_LISTENER, SASL_LISTENER, Listener, advertised_host, split_host_port
from .protocol import ServerConnection
from .replicas import ReplicaManager
from .rocksdb_options import require_rocksdict
from .settings import Settings
from .tablet import TabletService

__all__ = ["FlussServer", "DEFAULT_IDLE_TIMEOUT_S"]

log = logging.getLogger("fluss_fast.server")

DEFAULT_IDLE_TIMEOUT_S = 600.0


class FlussServer:
    """The whole embedded cluster in this event loop. ``await start()``, ``await stop()``."""

    def __init__(self, data_dir: str, listen: str = "127.0.0.1:9123", sasl_listen: str | None = None,
                 sasl_users: dict | None = None, tablet_servers: int = 1,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S, auto_partition_interval: float = 5.0,
                 log_flush_interval_messages: int | None = None, settings: Settings | None = None,
                 remote_dir: str | None = None):
        if tablet_servers < 1:
            raise ValueError(f"tablet_servers must be >= 1, got {tablet_servers}")
        self.data_dir = os.path.abspath(os.path.expanduser(data_dir))
        self.num_tablet_servers = int(tablet_servers)
        self.listen = split_host_port(listen, "--listen")
        self.sasl_listen = split_host_port(sasl_listen, "--sasl-listen") if sasl_listen else None
        self.authenticator = PlainAuthenticator(dict(sasl_users or {})) if self.sasl_listen else None
        self.idle_timeout = float(idle_timeout)
        self.auto_partition_interval = float(auto_partition_interval)
        self.shutdown_grace = 2.0
        self.catalog: Catalog | None = None
        self.settings = settings if settings is not None else Settings()
        self.remote_dir = remote_dir
        self.replicas: ReplicaManager | None = None
        self.tablet_service: TabletService | None = None
        self.coordinator = None
        self._listeners: dict[str, list[Listener]] = {}
        self._connections: set = set()
        self.frame_pool = FramePool()
        self._background: list = []
        self._started = False
        self._dir_lock = None
        self.flush_policy = FlushPolicy(log_flush_interval_messages)

    # -- topology ------------------------------------------------------------------------------
    def leader_of(self, table_id: int, partition_id: int | None, bucket: int) -> int:
        """The tablet server that leads a bucket: ``(partition id or table id + bucket) mod N``.

        Args:
            table_id: The table's id.
            partition_id: The partition's id, or ``None``.
            bucket: The bucket number.

        Returns:
            The tablet server's index, ``0 .. N-1``.
        """
        base = partition_id if partition_id is not None else table_id
        return (base + bucket) % self.num_tablet_servers

    def replicas_of(self, table_id: int, partition_id: int | None, bucket: int, replication_factor: int) -> list:
        """The tablet servers listed as a bucket's replicas: the leader, then the next ones round the ring.

        Args:
            table_id: The table's id.
            partition_id: The partition's id, or ``None``.
            bucket: The bucket number.
            replication_factor: The table's replication factor (capped at the number of tablet servers).

        Returns:
            Tablet server indexes, leader first.
        """
        leader = self.leader_of(table_id, partition_id, bucket)
        n = self.num_tablet_servers
        return [(leader + k) % n for k in range(max(1, min(replication_factor, n)))]

    def coordinator_node(self, listener_name: str) -> tuple[int, str, int]:
        """The coordinator's ``(node id, host, port)`` on one listener.

        Args:
            listener_name: The plaintext or the SASL listener's name.
        """
        lst = self._listeners[listener_name][0]
        return 0, advertised_host(lst.host), lst.port

    def tablet_nodes(self, listener_name: str) -> list:
        """Every tablet server's ``(node id, host, port)`` on one listener.

        Args:
            listener_name: The plaintext or the SASL listener's name.
        """
        return [(lst.node_id, advertised_host(lst.host), lst.port) for lst in self._listeners[listener_name][1:]]

    @property
    def bootstrap_servers(self) -> str:
        """The coordinator's plaintext ``host:port``: what clients put in ``bootstrap.servers``."""
        _, host, port = self.coordinator_node(PLAINTEXT_LISTENER)
        return f"{host}:{port}"

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        """The coordinator's SASL ``host:port``, or ``None`` without a SASL listener."""
        if SASL_LISTENER not in self._listeners:
            return None
        _, host, port = self.coordinator_node(SASL_LISTENER)
        return f"{host}:{port}"

    # -- life cycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        """Take the data directory's lock, recover its tables and start listening.

        Raises:
            RuntimeError: Another server holds the data directory.
            OSError: A listen address is taken.
            ImportError: rocksdict (the ``server`` extra) is not installed (``rocksdb_options.RocksDBMissing``).
        """
        from .coordinator import Coordinator

        require_rocksdict()
        os.makedirs(self.data_dir, exist_ok=True)
        if self._dir_lock is None:
            lock = DataDirLock(self.data_dir)
            lock.acquire()  # before anything reads the directory another server may be writing
            self._dir_lock = lock
        self.catalog = Catalog(os.path.join(self.data_dir, "catalog"))
        self.replicas = ReplicaManager(self.catalog, self.data_dir, self.settings, self.flush_policy, self.remote_dir)
        self.replicas.recover(self._is_live)
        self.tablet_service = TabletService(self, self.replicas)
        self.replicas.start()
        self.coordinator = Coordinator(self, self.replicas)
        coord_handlers = self.coordinator.handlers()
        tablet_handlers = dict(coord_handlers)
        tablet_handlers.update(self.tablet_service.handlers())
        try:
            await self._open_family(PLAINTEXT_LISTENER, self.listen, coord_handlers, tablet_handlers)
            if self.sasl_listen:
                await self._open_family(SASL_LISTENER, self.sasl_listen, coord_handlers, tablet_handlers)
        except BaseException:
            await self._close_listeners()
            raise
        await self.coordinator.start()
        loop = asyncio.get_running_loop()
        self._background.append(loop.create_task(self._idle_sweeper()))
        self._started = True

    def _is_live(self, table_id: int, partition_id: int | None) -> bool:
        entry = self.catalog.table_by_id(table_id)
        if entry is None:
            return False
        return partition_id is None or partition_id in entry.partitions

    async def _open_family(self, name, addr, coord_handlers, tablet_handlers) -> None:
        host, port = addr
        listeners = []
        self._listeners[name] = listeners
        coord = Listener(self, name, COORDINATOR, None, host, port)
        coord.build(coord_handlers)
        await self._bind(coord, exact=True)
        listeners.append(coord)
        for k in range(self.num_tablet_servers):
            want = 0 if port == 0 else port + 1 + k
            lst = Listener(self, name, TABLET_SERVER, k, host, want)
            lst.build(tablet_handlers)
            await self._bind(lst, exact=False)
            listeners.append(lst)

    async def _bind(self, lst: Listener, exact: bool) -> None:
        loop = asyncio.get_running_loop()
        if lst.port == 0 and lst.host not in ("0.0.0.0", "::", ""):
            # A name with several addresses would get a different free port per address; pick one.
            infos = await loop.getaddrinfo(lst.host, 0, type=socket.SOCK_STREAM)
            infos.sort(key=lambda i: i[0] != socket.AF_INET)
            if infos:
                lst.host = infos[0][4][0]
        try:
            srv = await loop.create_server(lambda: ServerConnection(lst), lst.host, lst.port, reuse_address=True,
                                           backlog=1024)
        except OSError as e:
            if exact or lst.port == 0 or e.errno != errno.EADDRINUSE:
                raise
            # A tablet port next to the coordinator's may be taken (e.g. a restart on a fixed
            # coordinator port whose first run used free ports); clients learn ports from metadata.
            log.warning("port %d for %s is in use; using a free port", lst.port, lst.role_name)
            srv = await loop.create_server(lambda: ServerConnection(lst), lst.host, 0, reuse_address=True, backlog=1024)
        lst.aio_server = srv
        lst.port = srv.sockets[0].getsockname()[1]

    async def _idle_sweeper(self) -> None:
        period = max(0.05, min(30.0, self.idle_timeout / 4))
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(period)
            deadline = loop.time() - self.idle_timeout
            for conn in list(self._connections):
                if not conn._tasks and conn.last_active < deadline:
                    log.info("closing idle connection from %s", conn._ctx.peer if conn._ctx else "?")
                    conn.close()

    async def _close_listeners(self) -> None:
        for listeners in self._listeners.values():
            for lst in listeners:
                if lst.aio_server is not None:
                    lst.aio_server.close()
        for listeners in self._listeners.values():
            for lst in listeners:
                if lst.aio_server is not None:
                    with contextlib.suppress(TimeoutError, Exception):
                        await asyncio.wait_for(lst.aio_server.wait_closed(), 0.5)

    async def stop(self) -> None:
        """Stop listening, let requests in flight finish, flush the stores and release the data directory."""
        for t in self._background:
            t.cancel()
        for t in self._background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._background.clear()
        await self._close_listeners()
        # Let requests in flight finish (a produce must not see its log closed under it), then cut.
        for conn in list(self._connections):
            with contextlib.suppress(RuntimeError, AttributeError):
                conn._transport.pause_reading()
        pending = [t for conn in list(self._connections) for t in conn._tasks]
        if pending:
            done, still = await asyncio.wait(pending, timeout=self.shutdown_grace)
            for t in still:
                t.cancel()
            if still:
                await asyncio.wait(still, timeout=1.0)
        for conn in list(self._connections):
            conn.close()
        if self.coordinator is not None:
            await self.coordinator.stop()
        if self.replicas is not None:
            self.replicas.close()
        if self.catalog is not None:
            try:
                self.catalog.close()
            except OSError as e:
                # every acknowledged change was committed when it was made; only the last copy failed
                log.error("could not write the catalog on shutdown: %s", e)
        if self._dir_lock is not None:
            self._dir_lock.release()
            self._dir_lock = None
        self._started = False

    def ready_line(self) -> str:
        """The line ``fluss-fast server`` prints once it accepts connections:
        ``READY bootstrap.servers=H:P[ sasl.bootstrap.servers=H:P]``."""
        line = f"READY bootstrap.servers={self.bootstrap_servers}"
        if self.sasl_bootstrap_servers:
            line += f" sasl.bootstrap.servers={self.sasl_bootstrap_servers}"
        return line

