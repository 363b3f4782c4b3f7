"""`fluss-fast server`: run the embedded Fluss-protocol server until SIGTERM/SIGINT."""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys

from ..event_loop import new_event_loop
from .app import DEFAULT_IDLE_TIMEOUT_S, FlussServer
from .auth import load_users_file, parse_user_spec
from .datadir_lock import DataDirLocked
from .rocksdb_options import RocksDBMissing


def default_data_dir() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "fluss-fast", "server")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fluss-fast server",
                                description="Run the embedded Fluss-protocol server (coordinator + tablet servers). "
                                            "Once it accepts connections it prints one line, READY "
                                            "bootstrap.servers=HOST:PORT, on stdout; SIGTERM or SIGINT stop it "
                                            "cleanly.")
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help=f"where the catalog and logs live (default {default_data_dir()})")
    p.add_argument("--listen", default="127.0.0.1:9123", metavar="HOST:PORT",
                   help="HOST:PORT of the coordinator = bootstrap address; tablet server k listens on PORT+1+k "
                        "(free ports when PORT is 0; default 127.0.0.1:9123)")
    p.add_argument("--sasl-listen", default=None, metavar="HOST:PORT",
                   help="also open SASL/PLAIN listeners, the coordinator on this address")
    p.add_argument("--sasl-user", action="append", default=[], metavar="NAME=PASSWORD",
                   help="a SASL/PLAIN user (repeatable)")
    p.add_argument("--sasl-users-file", action="append", default=[], metavar="PATH",
                   help="file with one NAME=PASSWORD per line (repeatable)")
    p.add_argument("--tablet-servers", type=int, default=1, metavar="N", help="number of tablet servers (default 1)")
    p.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S, metavar="SECONDS",
                   help="close connections idle this long (default 600)")
    p.add_argument("--auto-partition-interval", type=float, default=5.0, metavar="SECONDS",
                   help="how often auto-partitioned tables are checked (default 5)")
    p.add_argument("--log-flush-interval-messages", type=int, default=None, metavar="N",
                   help="fsync a bucket's log once N records were appended since its last fsync, before "
                        "acknowledging (the Java key log.flush.interval-messages, also "
                        "-c log.flush.interval-messages=N); 1 = every acknowledged "
                        "record survives power loss. Default: never (as Java), except on a clean stop; "
                        "acknowledged records then survive kill -9 but not power loss")
    p.add_argument("-c", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a server setting with the Java server's key and units, e.g. "
                        "-c log.segment.file-size=1mb -c remote.log.task-interval-duration=1s (repeatable)")
    p.add_argument("--config", action="append", default=[], metavar="FILE",
                   help="file of KEY=VALUE (or KEY: VALUE) settings, one a line; -c wins (repeatable; "
                        "files named in $FLUSS_FAST_SERVER_CONFIG are read first)")
    p.add_argument("--remote-dir", default=None, metavar="PATH|URL",
                   help="tier closed log segments here: a local path, file://..., or s3://bucket/path "
                        "(endpoint and credentials via -c s3.endpoint=... s3.access-key=... s3.secret-key=...); "
                        "same as -c remote.data.dir=...")
    p.add_argument("--log-level", default=os.environ.get("FLUSS_FAST_LOG_LEVEL", "WARNING"), metavar="LEVEL",
                   help="server log on stderr: DEBUG, INFO, WARNING (default, or $FLUSS_FAST_LOG_LEVEL), ERROR")
    return p


def main(argv=None, companions=()) -> int:
    """``fluss-fast server``. ``companions`` are ``(server) -> coroutine or None`` functions run beside
    the server once it listens and cancelled when it stops: the command line passes the lake tiering
    (``fluss_fast.lake.service``), which the server itself may not import."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.getLevelNamesMapping().get(str(args.log_level).upper(), logging.WARNING),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    users = {}
    try:
        for path in args.sasl_users_file:
            users.update(load_users_file(path))
        for spec in args.sasl_user:
            name, password = parse_user_spec(spec)
            users[name] = password
    except (OSError, ValueError) as e:
        parser.error(str(e))
    if users and not args.sasl_listen:
        parser.error("--sasl-user/--sasl-users-file need --sasl-listen")
    if args.tablet_servers < 1:
        parser.error("--tablet-servers must be >= 1")
    from .settings import Settings

    try:
        env_files = [f for f in os.environ.get("FLUSS_FAST_SERVER_CONFIG", "").split(os.pathsep) if f]
        settings = Settings.from_args(args.settings, env_files + args.config)
        location = args.remote_dir or settings.raw("remote.data.dir")
        if location:
            from ..remote_fs import open_store

            open_store(location, settings)
    except (OSError, ValueError) as e:
        parser.error(str(e))
    flush_every = args.log_flush_interval_messages
    if flush_every is None and "log.flush.interval-messages" in settings:
        flush_every = settings.get("log.flush.interval-messages")
    if flush_every is not None and flush_every < 1:
        parser.error("--log-flush-interval-messages must be >= 1 (the Java key log.flush.interval-messages)")
    try:
        server = FlussServer(args.data_dir or default_data_dir(), listen=args.listen, sasl_listen=args.sasl_listen,
                             sasl_users=users, tablet_servers=args.tablet_servers, idle_timeout=args.idle_timeout,
                             auto_partition_interval=args.auto_partition_interval,
                             log_flush_interval_messages=flush_every, settings=settings,
                             remote_dir=args.remote_dir)
    except ValueError as e:
        parser.error(str(e))
    if args.sasl_listen and not users:
        logging.getLogger("fluss_fast.server").warning("SASL listener without users: nobody can authenticate")
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(_serve(server, companions))
    finally:
        loop.close()


async def _serve(server: FlussServer, companions=()) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))
    try:
        await server.start()
    except (DataDirLocked, RocksDBMissing) as e:
        print(f"fluss-fast server: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"fluss-fast server: cannot listen: {e}", file=sys.stderr)
        await server.stop()
        return 1
    sys.stdout.write(server.ready_line() + "\n")
    sys.stdout.flush()
    tasks = []
    for companion in companions:
        job = companion(server)
        if job is not None:
            tasks.append(loop.create_task(job))
    await stop.wait()
    for t in tasks:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t
    await server.stop()
    return 0
