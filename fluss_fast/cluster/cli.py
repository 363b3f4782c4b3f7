"""`fluss-fast cluster`: start a Java Fluss cluster, print READY, stop it on SIGTERM or Ctrl-C."""
from __future__ import annotations

import argparse
import signal
import sys
import threading

from ..rpc.sasl import parse_user_spec
from .artifacts import DEFAULT_FLUSS_VERSION
from .errors import ClusterError
from .java import JavaCluster


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fluss-fast cluster",
        description="Run a real Apache Fluss cluster (ZooKeeper, the coordinator and N tablet servers, each a "
                    "JVM) on free loopback ports, from the release jars on Maven Central (downloaded once with "
                    "mvn, cached in ~/.cache/fluss-fast). Once the coordinator lists every tablet server it "
                    "prints one line, READY bootstrap.servers=HOST:PORT [sasl.bootstrap.servers=HOST:PORT], "
                    "as `fluss-fast server` does; SIGTERM or Ctrl-C stop the tablet servers, the coordinator, "
                    "then ZooKeeper. Needs java (17) and mvn.")
    p.add_argument("--data-dir", required=True, metavar="DIR",
                   help="every node's data, config and logs, and the cluster's remote.data.dir, live here")
    p.add_argument("--tablet-servers", type=int, default=1, metavar="N", help="number of tablet servers (default 1)")
    p.add_argument("--fluss-version", default=DEFAULT_FLUSS_VERSION, metavar="V",
                   help=f"the Fluss release to run (default {DEFAULT_FLUSS_VERSION}, the newest that works)")
    p.add_argument("--sasl-user", action="append", default=[], metavar="NAME=PASSWORD",
                   help="a SASL/PLAIN user (repeatable); each server then also opens a SASL listener")
    p.add_argument("-c", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a server setting with the Java key, written into every node's server.yaml, e.g. "
                        "-c default.replication.factor=3 -c log.segment.file-size=1mb (repeatable)")
    p.add_argument("--timeout", type=float, default=180.0, metavar="SECONDS",
                   help="how long to wait for every tablet server to register (default 180)")
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    users = {}
    settings = {}
    try:
        for spec in args.sasl_user:
            name, password = parse_user_spec(spec)
            users[name] = password
        for spec in args.settings:
            key, sep, value = spec.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"a setting must be KEY=VALUE, got {spec!r}")
            settings[key.strip()] = value.strip()
    except ValueError as e:
        parser.error(str(e))
    if args.tablet_servers < 1:
        parser.error("--tablet-servers must be >= 1")

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cluster = JavaCluster(args.data_dir, tablet_servers=args.tablet_servers, version=args.fluss_version,
                              sasl_users=users, settings=settings)
        print(f"fluss-fast cluster: starting Fluss {args.fluss_version} (ZooKeeper, coordinator, "
              f"{args.tablet_servers} tablet server(s)); logs in {cluster.logs_dir}", file=sys.stderr, flush=True)
        cluster.start(timeout=args.timeout)
    except ClusterError as e:
        print(f"fluss-fast cluster: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    sys.stdout.write(cluster.ready_line() + "\n")
    sys.stdout.flush()
    try:
        while not stop.wait(1.0):
            dead = [n.name for n in (cluster.zookeeper, cluster.coordinator, *cluster.tablet_servers.values())
                    if not n.alive]
            if dead:
                print(f"fluss-fast cluster: {', '.join(dead)} exited; stopping the rest "
                      f"(logs in {cluster.logs_dir})", file=sys.stderr)
                cluster.stop()
                return 1
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
