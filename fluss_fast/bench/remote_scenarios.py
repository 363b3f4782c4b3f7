"""The remote (tiered) log scenarios: a table of which >= 90 % lies in remote segments, on a second
embedded server that tiers to a temp dir, read from the earliest offset."""
from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import datasets as ds
from .harness import (
    DATABASE,
    Client,
    Env,
    Mismatch,
    Outcome,
    Scenario,
    Skip,
    arrow_chunks,
    check,
    create_table,
    read_all,
    register,
    table_name,
)
from .scenarios import run_poll

REMOTE_MIN_FRACTION = 0.9


@dataclass
class RemoteShared:
    server: Any
    bootstrap: str
    name: str
    remote_dir: str
    config_file: str
    fraction: float


def _remote_fraction(data_dir: str, name: str, rows: int, database: str = DATABASE) -> float:
    import glob
    import json

    copied = 0
    for p in glob.glob(os.path.join(data_dir, "log", database, f"{name}-*", "log-*", "remote-log.json")):
        with open(p, "rb") as f:
            segs = json.loads(f.read())["manifest"]["remote_log_segments"]
        copied += sum(s["end_offset"] - s["start_offset"] for s in segs)
    return copied / rows if rows else 0.0


async def prepare_remote(env: Env) -> RemoteShared:
    """A second embedded server that tiers to a temp dir (segments sized so that ~40 per bucket
    hold the data), filled once by the verifier client; waits until >= 90 % is remote."""
    import tempfile

    from .util import EmbeddedServer

    remote_dir = tempfile.mkdtemp(prefix="fluss-fast-bench-remote-")
    per_bucket = env.table.nbytes // max(env.buckets, 1)
    # below 100 k rows (--quick) the 8,192-row batches the verifier writes would leave every bucket
    # only a few segments, and a bucket keeps its last ones local: smaller segments and batches
    small = env.rows < 100_000
    segment = max((16 if small else 64) << 10, min(64 << 20, per_bucket // 40))
    fd, config_file = tempfile.mkstemp(prefix="fluss-fast-bench-remote-", suffix=".conf")
    # FLUSS_FAST_BENCH_REMOTE_CONFIG: a file of server settings pointing the tiering elsewhere,
    # e.g. remote.data.dir=s3://bucket/path plus the s3.* keys
    store = f"remote.data.dir={remote_dir}\n"
    if os.environ.get("FLUSS_FAST_BENCH_REMOTE_CONFIG"):
        text = await asyncio.to_thread(Path(os.environ["FLUSS_FAST_BENCH_REMOTE_CONFIG"]).read_text)
        store = text.rstrip("\n") + "\n"
    with os.fdopen(fd, "w") as f:
        f.write(f"{store}log.segment.file-size={segment}\n"
                "remote.log.task-interval-duration=200ms\ntable.log.tiered.local-segments=1\n"
                "remote.log.task-max-upload-segments=50\n")
    old = os.environ.get("FLUSS_FAST_SERVER_CONFIG")
    os.environ["FLUSS_FAST_SERVER_CONFIG"] = config_file
    try:
        server = EmbeddedServer().start()
    finally:
        if old is None:
            os.environ.pop("FLUSS_FAST_SERVER_CONFIG", None)
        else:
            os.environ["FLUSS_FAST_SERVER_CONFIG"] = old
    chunk_rows = 8192
    props = None
    if small:
        chunk_rows = max(16, env.rows // (80 * max(env.buckets, 1)))
        batch = str(max(4 << 10, segment // 2))
        props = {"writer.batch-size": batch, "writer.dynamic-batch-size.enabled": "false",
                 "writer.dynamic-batch-size-min": batch}
    verifier = Client(env.verifier.name, env.verifier.module)
    await verifier.open(server.bootstrap_servers, props)
    try:
        name = table_name("remote")
        table = await create_table(verifier, name, env.spec.schema, env.buckets)
        writer = table.new_append().create_writer()
        writer.write_arrow(arrow_chunks(env.table, chunk_rows))
        await writer.flush()
    finally:
        await verifier.close()
    # the server (another process) tiers segments on its own schedule and signals nothing: poll its data dir
    deadline = time.monotonic() + 120
    fraction = 0.0
    while time.monotonic() < deadline:
        fraction = _remote_fraction(server.data_dir, name, env.rows)
        if fraction >= REMOTE_MIN_FRACTION:
            break
        await asyncio.sleep(0.2)
    if fraction < REMOTE_MIN_FRACTION:
        server.close()
        raise Mismatch(f"only {fraction:.0%} of {DATABASE}.{name} was tiered within 120 s")
    return RemoteShared(server, server.bootstrap_servers, name, remote_dir, config_file, fraction)


async def cleanup_remote(env: Env, shared: RemoteShared) -> None:
    import shutil

    shared.server.close()
    shutil.rmtree(shared.remote_dir, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.unlink(shared.config_file)


async def _remote_client(client: Client, shared: RemoteShared, prefetch: int | None) -> Client:
    props = {"bootstrap.servers": shared.bootstrap}
    if prefetch is not None:
        props["scanner.remote-log.prefetch-num"] = str(prefetch)
    c = Client(client.name, client.module)
    c.conn = await client.module.FlussConnection.create(client.module.Config(props))
    return c


async def _remote_scan(client: Client, env: Env, shared: RemoteShared, prefetch: int | None) -> Outcome:
    c = await _remote_client(client, shared, prefetch)
    try:
        sw = env.stopwatch()
        got = await read_all(c, shared.name, env.buckets)
        seconds = sw.stop()
    finally:
        await c.close()
    check(f"to_arrow of tiered {DATABASE}.{shared.name}",
          ds.checksum(got, env.spec.id_column, env.spec.string_column), env.expected())
    return Outcome(seconds, got.num_rows, env.table.nbytes, cpu=sw.cpu, rss=sw.rss,
                   note=f"{shared.fraction:.0%} remote"
                   + (f", prefetch-num {prefetch}" if prefetch is not None else ""))


async def run_remote_scan(client: Client, env: Env, shared: RemoteShared) -> Outcome:
    return await _remote_scan(client, env, shared, None)


async def run_remote_scan_noprefetch(client: Client, env: Env, shared: RemoteShared) -> Outcome:
    if client.name == "pyfluss":
        raise Skip("pyfluss rejects scanner.remote-log.prefetch-num=0 (it must be > 0)")
    return await _remote_scan(client, env, shared, 0)


async def run_remote_poll(client: Client, env: Env, shared: RemoteShared) -> Outcome:
    c = await _remote_client(client, shared, None)
    try:
        out = await run_poll(c, env, shared.name)
    finally:
        await c.close()
    out.note = f"{shared.fraction:.0%} remote"
    return out


register(Scenario("remote_scan", "to_arrow() of a table >= 90 % in remote (tiered) segments", run_remote_scan,
                  prepare_remote, cleanup_remote))
register(Scenario("remote_poll", "poll() loop over a table >= 90 % in remote segments", run_remote_poll,
                  prepare_remote, cleanup_remote))
register(Scenario("remote_scan_noprefetch", "remote_scan with scanner.remote-log.prefetch-num=0",
                  run_remote_scan_noprefetch, prepare_remote, cleanup_remote))
REMOTE_SCENARIOS = ["remote_scan", "remote_poll", "remote_scan_noprefetch"]
