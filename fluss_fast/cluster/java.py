"""A real Apache Fluss cluster (ZooKeeper, the coordinator and N tablet servers, each its own JVM)
on this machine's loopback, from the jars of a Fluss release.

The layout under ``data_dir``: ``zookeeper/``, ``coordinator/`` and ``tablet-server-<id>/`` (each
with its ``server.yaml`` and ``data/``), ``remote/`` (the cluster's ``remote.data.dir``) and
``logs/``. Ports are chosen once, so a node restarted by a fault test comes back where clients
last saw it, as a real deployment's would.
"""
from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping

from .artifacts import DEFAULT_FLUSS_VERSION, require_tool, resolve_jars
from .errors import ClusterError

_ZOOKEEPER_MAIN = "org.apache.fluss.shaded.zookeeper3.org.apache.zookeeper.server.quorum.QuorumPeerMain"
_COORDINATOR_MAIN = "org.apache.fluss.server.coordinator.CoordinatorServer"
_TABLET_SERVER_MAIN = "org.apache.fluss.server.tablet.TabletServer"

#: Heap per role in MB: small enough that 3 tablet servers and a Spark driver fit on a 2-core, few-GB
#: machine, large enough for the benchmarks' batches.
HEAP_MB = {"zookeeper": 96, "coordinator": 256, "tablet-server": 512}

#: Settings every node gets before the user's ``-c`` ones; the thread counts are those the Fluss
#: integration tests run with, sized for a small machine rather than a production host.
BASE_SETTINGS = {
    "netty.server.num-network-threads": "1",
    "netty.server.num-worker-threads": "3",
}

_LOG4J = """\
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = NodeFile
appender.file.name = NodeFile
appender.file.type = File
appender.file.append = true
appender.file.fileName = ${sys:log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{HH:mm:ss,SSS} %-5p %-40c{1} - %m%n
logger.zookeeper.name = org.apache.fluss.shaded.zookeeper3
logger.zookeeper.level = WARN
"""

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # A launcher killed with -9 must not leave JVMs behind holding ports and data dirs.
    # (The kernel sends the signal when the forking *thread* ends, so Node.start only asks for it
    # from the main thread: a node restarted from a fault test's thread must outlive that thread.)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Node:
    """One JVM of the cluster; restartable on the same ports and data dir."""

    def __init__(self, cluster: JavaCluster, role: str, node_id: int | None = None):
        self.cluster = cluster
        self.role = role
        self.node_id = node_id
        self.name = role if node_id is None else f"{role}-{node_id}"
        self.home = os.path.join(cluster.data_dir, self.name)
        self.port = free_port(cluster.host)
        self.sasl_port = free_port(cluster.host) if cluster.sasl_users and role != "zookeeper" else None
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"{self.cluster.host}:{self.port}"

    @property
    def sasl_address(self) -> str | None:
        return f"{self.cluster.host}:{self.sasl_port}" if self.sasl_port else None

    @property
    def log_file(self) -> str:
        return os.path.join(self.cluster.logs_dir, f"{self.name}.log")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _write_config(self) -> list[str]:
        os.makedirs(self.home, exist_ok=True)
        if self.role == "zookeeper":
            path = os.path.join(self.home, "zookeeper.properties")
            with open(path, "w", encoding="utf-8") as f:
                f.write(f"dataDir={os.path.join(self.home, 'data')}\nclientPort={self.port}\n"
                        f"clientPortAddress={self.cluster.host}\nmaxClientCnxns=0\n"
                        # ZooKeeper caps a client's session timeout at 20 ticks: a 500 ms tick lets
                        # zookeeper.client.session-timeout go down to 1 s, for fault tests that wait
                        # for a killed tablet server's session to expire.
                        "tickTime=500\nadmin.enableServer=false\n")
            return [_ZOOKEEPER_MAIN, path]
        settings = self.cluster.node_settings(self)
        with open(os.path.join(self.home, "server.yaml"), "w", encoding="utf-8") as f:
            for key, value in settings.items():
                f.write(f"{key}: {value}\n")
        main = _COORDINATOR_MAIN if self.role == "coordinator" else _TABLET_SERVER_MAIN
        return [main, "--configDir", self.home]

    def start(self) -> None:
        if self.alive:
            return
        args = self._write_config()
        java = require_tool("java", "fluss-fast cluster runs the Fluss servers on a JVM (Java 17: "
                                    "apt-get install openjdk-17-jre-headless)")
        heap = HEAP_MB["tablet-server" if self.role == "tablet-server" else self.role]
        cmd = [java, f"-Xmx{heap}m", f"-Xms{min(heap, 64)}m", f"-XX:MaxDirectMemorySize={heap}m",
               "-XX:+UseSerialGC", "--add-opens=java.base/java.nio=ALL-UNNAMED",
               f"-Dlog4j.configurationFile=file:{self.cluster.log4j_config}", f"-Dlog.file={self.log_file}"]
        cmd += os.environ.get("FLUSS_FAST_CLUSTER_JVM_OPTS", "").split()
        cmd += ["-cp", os.pathsep.join(self.cluster.classpath)] + args
        with open(os.path.join(self.cluster.logs_dir, f"{self.name}.out"), "ab") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         cwd=self.home, preexec_fn=_die_with_parent
                                         if threading.current_thread() is threading.main_thread() else None)

    def signal(self, sig: int) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> bool:
        """Whether the JVM exited within ``timeout`` seconds."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (the JVM's shutdown hooks deregister the node and close its logs), SIGKILL after
        ``timeout``."""
        self.signal(signal.SIGTERM)
        if not self.wait(timeout):
            self.kill()

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait(30.0)

    def log_tail(self, lines: int = 5) -> str:
        for path in (self.log_file, os.path.join(self.cluster.logs_dir, f"{self.name}.out")):
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    tail = [ln.rstrip() for ln in f.readlines()[-lines:]]
            except OSError:
                continue
            if tail:
                return " | ".join(tail)
        return "(no log output)"


class JavaCluster:
    """ZooKeeper, the coordinator and ``tablet_servers`` tablet servers of Fluss ``version``.

    ``start()`` returns once the coordinator lists every tablet server; ``stop()`` stops the tablet
    servers, then the coordinator, then ZooKeeper. The per-node methods (``kill_tablet_server``,
    ``stop_tablet_server``, ``start_tablet_server``, ``restart_coordinator``) serve fault tests.
    """

    def __init__(self, data_dir: str, tablet_servers: int = 1, version: str = DEFAULT_FLUSS_VERSION,
                 sasl_users: Mapping[str, str] | None = None, settings: Mapping[str, str] | None = None,
                 host: str = "127.0.0.1", cache_dir: str = ""):
        if tablet_servers < 1:
            raise ClusterError("a cluster needs at least one tablet server")
        self.data_dir = os.path.abspath(data_dir)
        self.version = version
        self.host = host
        self.sasl_users = dict(sasl_users or {})
        self.settings = {k: str(v) for k, v in (settings or {}).items()}
        self.cache_dir = cache_dir
        self.logs_dir = os.path.join(self.data_dir, "logs")
        self.remote_dir = os.path.join(self.data_dir, "remote")
        self.log4j_config = os.path.join(self.data_dir, "log4j.properties")
        self.classpath: list[str] = []
        self.zookeeper = Node(self, "zookeeper")
        self.coordinator = Node(self, "coordinator")
        self.tablet_servers: dict[int, Node] = {i: Node(self, "tablet-server", i) for i in range(tablet_servers)}

    # -- addresses ---------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return self.coordinator.address

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        return self.coordinator.sasl_address

    def ready_line(self) -> str:
        """The line ``fluss-fast server`` prints too, so scripts and tests treat both alike."""
        line = f"READY bootstrap.servers={self.bootstrap_servers}"
        if self.sasl_bootstrap_servers:
            line += f" sasl.bootstrap.servers={self.sasl_bootstrap_servers}"
        return line

    def node_settings(self, node: Node) -> dict[str, str]:
        listeners = f"FLUSS://{node.address}"
        settings = dict(BASE_SETTINGS)
        settings.update({
            "zookeeper.address": self.zookeeper.address,
            "remote.data.dir": self.remote_dir,
            "data.dir": os.path.join(node.home, "data"),
        })
        if node.sasl_port:
            listeners += f", CLIENT://{node.sasl_address}"
            users = " ".join(f'user_{name}="{password}"' for name, password in self.sasl_users.items())
            settings.update({
                "internal.listener.name": "FLUSS",
                "security.protocol.map": "CLIENT:sasl",
                "security.sasl.enabled.mechanisms": "plain",
                "security.sasl.plain.jaas.config":
                    f"org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required {users};",
            })
        settings["bind.listeners"] = listeners
        if node.node_id is not None:
            settings["tablet-server.id"] = str(node.node_id)
        settings.update(self.settings)
        return settings

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> JavaCluster:
        require_tool("java", "fluss-fast cluster runs the Fluss servers on a JVM (Java 17: "
                             "apt-get install openjdk-17-jre-headless)")
        self.classpath = resolve_jars(self.version, self.cache_dir)
        for d in (self.logs_dir, self.remote_dir):
            os.makedirs(d, exist_ok=True)
        with open(self.log4j_config, "w", encoding="utf-8") as f:
            f.write(_LOG4J)
        deadline = time.monotonic() + timeout
        try:
            self.zookeeper.start()
            self._wait_port(self.zookeeper, deadline)
            self.coordinator.start()
            for node in self.tablet_servers.values():
                node.start()
            self.wait_ready(deadline - time.monotonic())
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Tablet servers first (in parallel), then the coordinator, then ZooKeeper: each waits for
        the one before so that nothing reconnects to a node already gone."""
        servers = list(self.tablet_servers.values())
        for node in servers:
            node.signal(signal.SIGTERM)
        for node in servers:
            if not node.wait(30.0):
                node.kill()
        self.coordinator.stop()
        self.zookeeper.stop()

    def __enter__(self) -> JavaCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- fault-test controls -----------------------------------------------------------------------
    def kill_tablet_server(self, node_id: int) -> None:
        self.tablet_servers[node_id].kill()

    def stop_tablet_server(self, node_id: int) -> None:
        self.tablet_servers[node_id].stop()

    def start_tablet_server(self, node_id: int, timeout: float = 120.0) -> None:
        self.tablet_servers[node_id].start()
        self.wait_ready(timeout)

    def restart_coordinator(self, timeout: float = 120.0) -> None:
        self.coordinator.stop()
        self.coordinator.start()
        self.wait_ready(timeout)

    # -- readiness ---------------------------------------------------------------------------------
    def _check_alive(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            if node.proc is not None and not node.alive:
                raise ClusterError(f"the {node.name} JVM exited with status {node.proc.returncode}: "
                                   f"{node.log_tail()} (logs in {self.logs_dir})")

    def _wait_port(self, node: Node, deadline: float) -> None:
        while True:
            self._check_alive([node])
            try:
                with socket.create_connection((self.host, node.port), timeout=1.0):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"{node.name} did not open port {node.port} in time (logs in {self.logs_dir})")
            time.sleep(0.1)

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until the coordinator lists every running tablet server, or ``ClusterError`` at ``timeout``."""
        deadline = time.monotonic() + max(timeout, 1.0)
        want = {i for i, n in self.tablet_servers.items() if n.alive}
        seen: set = set()
        while True:
            self._check_alive([self.zookeeper, self.coordinator, *(self.tablet_servers[i] for i in want)])
            seen = _listed_tablet_servers(self.bootstrap_servers)
            if want <= seen:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"the coordinator lists tablet servers {sorted(seen)}, not {sorted(want)}, "
                                   f"after {timeout:.0f} s (logs in {self.logs_dir})")
            time.sleep(0.25)


def _listed_tablet_servers(bootstrap: str) -> set:
    """The ids of the tablet servers the coordinator's metadata lists; empty while it cannot answer or
    has not yet created the default database."""
    from ..client.connection import FlussConnection
    from ..config import Config

    async def ask() -> set:
        conn = await FlussConnection.create(Config({"bootstrap.servers": bootstrap,
                                                    "connect-timeout": "2000",
                                                    "request-timeout": "2000"}))
        try:
            admin = conn.get_admin()
            # the coordinator creates the default database once it leads, which can come after it
            # answers metadata: until then CREATE_TABLE in `fluss` fails with DATABASE_NOT_EXIST
            if not await admin.database_exists("fluss"):
                return set()
            nodes = await admin.get_server_nodes()
            return {n.id for n in nodes if n.server_type == "TabletServer"}
        finally:
            await conn.close()

    try:
        return asyncio.run(ask())
    except Exception:  # not up yet: refused, timed out, or the coordinator has no metadata yet
        return set()
