"""End-to-end benchmark scenarios, written once against the pyfluss 1.0.0 API.

Each scenario is ``async run(client, env, shared) -> Outcome``: ``client.module`` is either ``fluss``
(pyfluss) or ``fluss_fast`` -- the same code drives both, which is the point of a drop-in. Every
scenario checks what it wrote or read (row count + an order-independent checksum of the id column and
a string column), so a fast wrong answer is reported as FAILED, never as a good number.

Adding a scenario: write the coroutine, then ``register(Scenario(...))``. Primary-key scenarios set
``needs_pk=True``; when the server or a client cannot create/use primary-key tables yet they are
reported as SKIPPED with the reason, not as failures.
"""
from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

import pyarrow as pa

from .cold import prefix_lookup_users, proc_cpu_s, reset_peak_rss, status_bytes

from ..rpc.api import API_KEYS, Api
from . import datasets as ds
from .raw import tablet_apis
from .util import Progress

DATABASE = "fluss_fast_bench"
POLL_TIMEOUT_MS = 500
STALL_S = 60.0  # a read that makes no progress for this long is a failure, not a slow result


class Skip(Exception):
    """The scenario cannot run here (e.g. a server or client without primary-key tables)."""


class Mismatch(Exception):
    """What was read or written differs from the data set."""


@dataclass
class Outcome:
    seconds: float
    rows: int
    nbytes: int                 # logical (Arrow, uncompressed) bytes moved: same for both clients
    wire_bytes: int = 0         # bytes on the socket, where the scenario knows them (ceiling)
    note: str = ""
    cpu: Tuple[float, float] = (0.0, -1.0)  # CPU seconds of (this process, the server; -1 unknown)
    # (RSS at the start of the timed section, peak RSS during it) of this process in bytes; 0 unknown
    rss: Tuple[int, int] = (0, 0)
    # a cold run's own figures (``bench.cold``): import_s, connect_s, first_row_s, user_s, sys_s, ...
    extra: Dict[str, Any] = field(default_factory=dict)


class Stopwatch:
    """Wall time of the timed section, plus the CPU this process and the server spent in it: a
    client at 100 % of a core is client-bound, a server at 100 % server-bound, both low = waiting.
    Also how far this process's RSS rose above its level at the start (``rss``: start, peak)."""

    def __init__(self, server_pid: Optional[int], profile_to: Optional[str] = None) -> None:
        self.server_pid = server_pid
        self.cpu = (0.0, -1.0)
        self.rss = (0, 0)
        self._rss0 = reset_peak_rss()
        self._profile_to = profile_to
        self._prof = None
        if profile_to:
            import cProfile

            self._prof = cProfile.Profile()
        self._s0 = proc_cpu_s(server_pid)
        self._c0 = time.process_time()
        if self._prof is not None:
            self._prof.enable()
        self._t0 = time.perf_counter()

    def stop(self) -> float:
        seconds = time.perf_counter() - self._t0
        if self._prof is not None:
            self._prof.disable()
            self._prof.dump_stats(self._profile_to)
            self._prof = None
        client = time.process_time() - self._c0
        if self._rss0:
            self.rss = (self._rss0, status_bytes("VmHWM")[0])
        s1 = proc_cpu_s(self.server_pid)
        self.cpu = (client, s1 - self._s0 if s1 >= 0 and self._s0 >= 0 else -1.0)
        return seconds


@dataclass
class Client:
    """One client library under test, with one open connection for the whole run."""
    name: str           # "fluss_fast" | "pyfluss"
    module: Any         # the imported module object
    conn: Any = None

    async def open(self, bootstrap: str, props: Optional[dict] = None) -> "Client":
        cfg = self.module.Config({"bootstrap.servers": bootstrap, **(props or {})})
        self.conn = await self.module.FlussConnection.create(cfg)
        return self

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None


# pyfluss waits up to 100 ms (its lookup batch timeout) for every lookup batch to fill, so its
# sequential lookups run at ~10/s: lookup scenarios stop after this long and count what was done
LOOKUP_BUDGET_S = 15.0
# --quick only checks that the lookups run and verify: its three lookup scenarios had taken ~130 s
# of a ~270 s smoke run at 15 s each (pyfluss alone ~100 s)
QUICK_LOOKUP_BUDGET_S = 2.0


@dataclass
class Env:
    bootstrap: str
    dataset: str
    rows: int
    buckets: int
    verifier: Client                      # reads back what writers wrote (pyfluss when installed)
    progress: bool = True
    _table: Optional[pa.Table] = None
    _dicts: Optional[List[dict]] = None
    _expected: Dict[str, ds.Checksum] = field(default_factory=dict)
    pk_support: Dict[str, str] = field(default_factory=dict)   # client name -> "" or why not
    server_pid: Optional[int] = None   # the embedded server, for its CPU time
    profile_dir: Optional[str] = None  # cProfile every timed section into this directory
    current: str = ""                  # "scenario-client-repN", names the profile files
    lookup_budget_s: float = LOOKUP_BUDGET_S  # how long a lookup scenario runs at most

    def stopwatch(self) -> Stopwatch:
        target = None
        if self.profile_dir:
            os.makedirs(self.profile_dir, exist_ok=True)
            target = os.path.join(self.profile_dir, f"{self.current or 'run'}.prof")
        return Stopwatch(self.server_pid, target)

    @property
    def spec(self) -> ds.DatasetSpec:
        return ds.DATASETS[self.dataset]

    @property
    def table(self) -> pa.Table:
        if self._table is None:
            self._table = ds.load(self.dataset, self.rows)
        return self._table

    @property
    def dicts(self) -> List[dict]:
        if self._dicts is None:
            self._dicts = ds.to_rows(self.table)
        return self._dicts

    def expected(self, projected: bool = False) -> ds.Checksum:
        key = "p" if projected else "f"
        if key not in self._expected:
            self._expected[key] = ds.expected_checksum(self.dataset, self.table, projected=projected)
        return self._expected[key]

    def bar(self, label: str, total: float) -> Progress:
        return Progress(total, label, enabled=None if self.progress else False)


@dataclass
class Scenario:
    name: str
    description: str
    run: Callable[[Client, Env, Any], Awaitable[Outcome]]
    prepare: Optional[Callable[[Env], Awaitable[Any]]] = None   # once, shared by both clients
    cleanup: Optional[Callable[[Env, Any], Awaitable[None]]] = None
    needs_pk: bool = False
    raw: bool = False   # runs without a client library (the ceiling); reported once per repetition


SCENARIOS: Dict[str, Scenario] = {}


def register(s: Scenario) -> Scenario:
    SCENARIOS[s.name] = s
    return s


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def table_name(tag: str) -> str:
    return f"{tag}_{uuid.uuid4().hex[:10]}"


async def create_table(client: Client, name: str, schema: pa.Schema, buckets: int, *,
                       primary_keys: Optional[List[str]] = None, bucket_keys: Optional[List[str]] = None):
    mod = client.module
    admin = client.conn.get_admin()
    await admin.create_database(DATABASE, ignore_if_exists=True)
    path = mod.TablePath(DATABASE, name)
    kwargs = {"bucket_count": buckets}
    if bucket_keys:
        kwargs["bucket_keys"] = bucket_keys
    desc = mod.TableDescriptor(mod.Schema(schema, primary_keys=primary_keys), **kwargs)
    await admin.create_table(path, desc, ignore_if_exists=False)
    return await client.conn.get_table(path)


async def drop_table(client: Client, name: str) -> None:
    try:
        await client.conn.get_admin().drop_table(client.module.TablePath(DATABASE, name),
                                                 ignore_if_not_exists=True)
    except Exception:  # cleanup must never hide the result
        pass


async def read_all(client: Client, name: str, buckets: int, projection=None) -> pa.Table:
    mod = client.module
    table = await client.conn.get_table(mod.TablePath(DATABASE, name))
    scan = table.new_scan()
    if projection:
        scan = scan.project_by_name(list(projection))
    scanner = await scan.create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: mod.EARLIEST_OFFSET for b in range(buckets)})
    return await scanner.to_arrow()


def check(what: str, got: ds.Checksum, want: ds.Checksum) -> None:
    if got != want:
        raise Mismatch(f"{what}: got {got}, expected {want}")


async def verify_written(env: Env, name: str) -> None:
    got = await read_all(env.verifier, name, env.buckets)
    check(f"table {DATABASE}.{name} read back by {env.verifier.name}",
          ds.checksum(got, env.spec.id_column, env.spec.string_column), env.expected())


def _arrow_chunks(table: pa.Table, rows_per_batch: int = 65_536) -> pa.Table:
    # A table read from Parquet comes in row groups; one giant chunk would be an unrealistic request.
    return pa.Table.from_batches(table.to_batches(max_chunksize=rows_per_batch), schema=table.schema)


# ------------------------------------------------------------------------------------------------
# log-table scenarios
# ------------------------------------------------------------------------------------------------
async def run_append(client: Client, env: Env, shared) -> Outcome:
    name = table_name(f"append_{client.name}")
    table = await create_table(client, name, env.spec.schema, env.buckets)
    rows = env.dicts
    n = len(rows)
    try:
        writer = table.new_append().create_writer()
        step = max(1000, n // 100)
        with env.bar(f"append {client.name}", n) as bar:
            sw = env.stopwatch()
            append = writer.append
            for lo in range(0, n, step):
                for row in rows[lo:lo + step]:
                    append(row)
                bar.update(min(step, n - lo))
            await writer.flush()
            seconds = sw.stop()
        await verify_written(env, name)
    finally:
        await drop_table(client, name)
    return Outcome(seconds, n, env.table.nbytes, cpu=sw.cpu, rss=sw.rss)


async def run_write_arrow(client: Client, env: Env, shared) -> Outcome:
    name = table_name(f"warrow_{client.name}")
    table = await create_table(client, name, env.spec.schema, env.buckets)
    data = _arrow_chunks(env.table)
    try:
        writer = table.new_append().create_writer()
        sw = env.stopwatch()
        writer.write_arrow(data)
        await writer.flush()
        seconds = sw.stop()
        await verify_written(env, name)
    finally:
        await drop_table(client, name)
    return Outcome(seconds, data.num_rows, env.table.nbytes, cpu=sw.cpu, rss=sw.rss)


async def prepare_filled(env: Env) -> str:
    """One table holding the data set, written once by the verifier client, read by both."""
    name = table_name("scan")
    table = await create_table(env.verifier, name, env.spec.schema, env.buckets)
    writer = table.new_append().create_writer()
    writer.write_arrow(_arrow_chunks(env.table))
    await writer.flush()
    await verify_written(env, name)
    return name


async def cleanup_filled(env: Env, name: str) -> None:
    await drop_table(env.verifier, name)


async def run_scan(client: Client, env: Env, name: str) -> Outcome:
    sw = env.stopwatch()
    got = await read_all(client, name, env.buckets)
    seconds = sw.stop()
    check(f"to_arrow of {DATABASE}.{name}", ds.checksum(got, env.spec.id_column, env.spec.string_column),
          env.expected())
    return Outcome(seconds, got.num_rows, env.table.nbytes, cpu=sw.cpu, rss=sw.rss)


async def run_projected_scan(client: Client, env: Env, name: str) -> Outcome:
    proj = list(env.spec.projection)
    sw = env.stopwatch()
    got = await read_all(client, name, env.buckets, projection=proj)
    seconds = sw.stop()
    if got.column_names != proj:
        raise Mismatch(f"projected scan of {DATABASE}.{name}: columns {got.column_names}, expected {proj}")
    check(f"projected to_arrow of {DATABASE}.{name}",
          ds.checksum(got, env.spec.id_column, env.spec.short_string_column), env.expected(projected=True))
    return Outcome(seconds, got.num_rows, env.table.select(proj).nbytes, cpu=sw.cpu, rss=sw.rss)


async def run_poll(client: Client, env: Env, name: str) -> Outcome:
    mod = client.module
    spec = env.spec
    table = await client.conn.get_table(mod.TablePath(DATABASE, name))
    id_col, str_col = spec.id_column, spec.string_column
    n = env.rows
    ids: List[int] = []
    strs: List[Optional[str]] = []
    with env.bar(f"poll {client.name}", n) as bar:
        sw = env.stopwatch()
        scanner = await table.new_scan().create_log_scanner()
        scanner.subscribe_buckets({b: mod.EARLIEST_OFFSET for b in range(env.buckets)})
        last_progress = time.perf_counter()
        while len(ids) < n:
            records = await scanner.poll(POLL_TIMEOUT_MS)
            got = 0
            for rec in records:
                row = rec.row
                ids.append(row[id_col])
                strs.append(row[str_col])
                got += 1
            now = time.perf_counter()
            if got:
                last_progress = now
                bar.update(got)
            elif now - last_progress > STALL_S:
                raise Mismatch(f"poll of {DATABASE}.{name}: stalled at {len(ids)} of {n} records")
        seconds = sw.stop()
    check(f"poll loop over {DATABASE}.{name}", ds.checksum_values(ids, strs), env.expected())
    return Outcome(seconds, len(ids), env.table.nbytes, cpu=sw.cpu, rss=sw.rss)


async def run_scan_after_write(client: Client, env: Env, shared) -> Outcome:
    """A script's ingest-then-read: write_arrow() and flush() (untimed), then to_arrow() of the same
    table, timed, in the same process."""
    name = table_name(f"wscan_{client.name}")
    table = await create_table(client, name, env.spec.schema, env.buckets)
    try:
        writer = table.new_append().create_writer()
        writer.write_arrow(_arrow_chunks(env.table))
        await writer.flush()
        sw = env.stopwatch()
        got = await read_all(client, name, env.buckets)
        seconds = sw.stop()
        check(f"to_arrow after write of {DATABASE}.{name}",
              ds.checksum(got, env.spec.id_column, env.spec.string_column), env.expected())
    finally:
        await drop_table(client, name)
    return Outcome(seconds, got.num_rows, env.table.nbytes, cpu=sw.cpu, rss=sw.rss)


register(Scenario("append", "per-row append() of dicts, then flush()", run_append))
register(Scenario("write_arrow", "write_arrow() of a large table, then flush()", run_write_arrow))
register(Scenario("scan", "full scan: record-batch scanner to_arrow()", run_scan, prepare_filled, cleanup_filled))
register(Scenario("poll", "record scanner poll() loop reading row dicts", run_poll, prepare_filled,
                  cleanup_filled))
register(Scenario("projected_scan", "to_arrow() of a 2-3 column projection", run_projected_scan,
                  prepare_filled, cleanup_filled))
register(Scenario("scan_after_write", "to_arrow() right after this client's write_arrow() of the same table",
                  run_scan_after_write))


# ------------------------------------------------------------------------------------------------
# remote (tiered) log: a table of which >= 90 % lies in remote segments, read from earliest
# ------------------------------------------------------------------------------------------------
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
        with open(os.environ["FLUSS_FAST_BENCH_REMOTE_CONFIG"]) as f:
            store = f.read().rstrip("\n") + "\n"
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
        writer.write_arrow(_arrow_chunks(env.table, chunk_rows))
        await writer.flush()
    finally:
        await verifier.close()
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
    try:
        os.unlink(shared.config_file)
    except OSError:
        pass


async def _remote_client(client: Client, shared: RemoteShared, prefetch: Optional[int]) -> Client:
    props = {"bootstrap.servers": shared.bootstrap}
    if prefetch is not None:
        props["scanner.remote-log.prefetch-num"] = str(prefetch)
    c = Client(client.name, client.module)
    c.conn = await client.module.FlussConnection.create(client.module.Config(props))
    return c


async def _remote_scan(client: Client, env: Env, shared: RemoteShared, prefetch: Optional[int]) -> Outcome:
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
                   note=f"{shared.fraction:.0%} remote" + (f", prefetch-num {prefetch}" if prefetch is not None else ""))


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


# ------------------------------------------------------------------------------------------------
# primary-key scenarios (SKIPPED with the reason when a server or client lacks PK tables)
# ------------------------------------------------------------------------------------------------
LOOKUPS = 20_000
CONCURRENCY = 64


def pk_schema(spec: ds.DatasetSpec, extra_not_null=()) -> pa.Schema:
    fields = []
    for f in spec.schema:
        fields.append(f.with_nullable(False) if f.name == spec.id_column or f.name in extra_not_null else f)
    return pa.schema(fields)


PROBE_TIMEOUT_S = 8.0


async def probe_pk(client: Client, env: Env) -> None:
    """Raises Skip unless ``client`` can create, upsert into and look up a primary-key table here.

    Probed once per client with a short deadline: a server without PUT_KV would otherwise leave the
    writer retrying until the scenario timeout.
    """
    if "server" not in env.pk_support:
        missing = [k for k in (Api.PUT_KV, Api.LOOKUP) if k not in await tablet_apis(env.bootstrap)]
        env.pk_support["server"] = (f"the server does not offer {', '.join(API_KEYS[k].name for k in missing)}"
                                    if missing else "")
    if env.pk_support["server"]:
        raise Skip(f"primary-key tables unavailable: {env.pk_support['server']}")
    verdict = env.pk_support.get(client.name)
    if verdict is None:
        name = table_name(f"pkprobe_{client.name}")
        try:
            verdict = await _probe_in_child(client.module.__name__, env.bootstrap, name)
        finally:
            await drop_table(client, name)  # the child may have been killed before its own cleanup
        env.pk_support[client.name] = verdict
    if verdict:
        raise Skip(f"primary-key tables unavailable with {client.name}: {verdict}")


async def _probe_in_child(module_name: str, bootstrap: str, name: str) -> str:
    """Runs the probe in a child process: a client stuck retrying an unsupported request must not
    keep a connection (and its background threads) alive inside the benchmark process."""
    import sys

    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fluss_fast.bench.scenarios", "--probe-pk", module_name, bootstrap, name,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), PROBE_TIMEOUT_S)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return f"upsert/lookup did not complete within {PROBE_TIMEOUT_S:.0f} s"
    text = out.decode(errors="replace").strip()
    if proc.returncode == 0 and text == "ok":
        return ""
    return text[-300:] or f"probe exited with code {proc.returncode}"


async def _probe(module_name: str, bootstrap: str, name: str) -> None:
    import importlib

    mod = importlib.import_module(module_name)
    client = await Client(module_name, mod).open(bootstrap)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
    try:
        table = await create_table(client, name, schema, 1, primary_keys=["k"])
        writer = table.new_upsert().create_writer()
        writer.upsert({"k": 1, "v": "probe"})
        await writer.flush()
        row = await table.new_lookup().create_lookuper().lookup({"k": 1})
        if row is None or row.get("v") != "probe":
            raise Mismatch(f"lookup after upsert returned {row!r}")
    finally:
        await drop_table(client, name)


async def _create_pk(client: Client, env: Env, tag: str, *, prefix: bool = False):
    await probe_pk(client, env)
    spec = env.spec
    name = table_name(tag)
    try:
        if prefix:
            table = await create_table(client, name, pk_schema(spec, ("user_id",)), env.buckets,
                                       primary_keys=["user_id", spec.id_column], bucket_keys=["user_id"])
        else:
            table = await create_table(client, name, pk_schema(spec), env.buckets,
                                       primary_keys=[spec.id_column])
        writer = table.new_upsert().create_writer()
    except Exception as exc:
        await drop_table(client, name)
        raise Skip(f"primary-key tables unavailable with {client.name}: {exc}") from None
    return name, table, writer


async def _upsert_all(writer, rows, bar=None) -> None:
    step = max(1000, len(rows) // 100)
    upsert = writer.upsert
    for lo in range(0, len(rows), step):
        for row in rows[lo:lo + step]:
            upsert(row)
        if bar:
            bar.update(min(step, len(rows) - lo))
    await writer.flush()


def sample_keys(table: pa.Table, id_col: str, k: int) -> List[int]:
    """The keys a lookup scenario looks up (the same in a warm and a cold run)."""
    ids = table.column(id_col).to_pylist()
    rnd = random.Random(7)
    return rnd.sample(ids, min(k, len(ids)))


def expected_for_keys(table: pa.Table, id_col: str, str_col: str, keys: List[int]) -> ds.Checksum:
    import pyarrow.compute as pc

    sub = table.filter(pc.is_in(table.column(id_col), value_set=pa.array(keys)))
    return ds.checksum(sub, id_col, str_col)


async def _verify_pk(env: Env, name: str) -> None:
    """Every bucket's current rows, read by the verifier with limit scans. Not by lookups: pyfluss
    picks other buckets than Java (and fluss_fast) for many keys (docs/contributing/formats.md §6.3, the Rust core's
    tail-byte bug), so a lookup by the other client would miss rows that are there."""
    v = env.verifier
    table = await v.conn.get_table(v.module.TablePath(DATABASE, name))
    tid = table.get_table_info().table_id
    parts = []
    for b in range(env.buckets):
        scanner = table.new_scan().limit(env.table.num_rows + 1).create_bucket_batch_scanner(
            v.module.TableBucket(tid, b))
        parts.append(await scanner.to_arrow())
    got = pa.concat_tables([t.select(env.table.column_names) for t in parts]) if parts else None
    check(f"table {DATABASE}.{name} read back by {v.name}",
          ds.checksum(got, env.spec.id_column, env.spec.string_column),
          ds.checksum(env.table, env.spec.id_column, env.spec.string_column))


async def run_upsert(client: Client, env: Env, shared) -> Outcome:
    name, _table, writer = await _create_pk(client, env, f"upsert_{client.name}")
    rows = env.dicts
    try:
        with env.bar(f"upsert {client.name}", len(rows)) as bar:
            sw = env.stopwatch()
            await _upsert_all(writer, rows, bar)
            seconds = sw.stop()
        await _verify_pk(env, name)
    finally:
        await drop_table(client, name)
    return Outcome(seconds, len(rows), env.table.nbytes, cpu=sw.cpu, rss=sw.rss)


async def run_upsert_arrow(client: Client, env: Env, shared) -> Outcome:
    """fluss_fast's bulk keyed write; pyfluss has none, so it runs its per-row upsert (its fastest)."""
    name, _table, writer = await _create_pk(client, env, f"upsert_arrow_{client.name}")
    bulk = getattr(writer, "upsert_arrow", None)
    try:
        sw = env.stopwatch()
        if bulk is not None:
            bulk(_arrow_chunks(env.table))
            await writer.flush()
        else:
            await _upsert_all(writer, env.dicts)
        seconds = sw.stop()
        await _verify_pk(env, name)
    finally:
        await drop_table(client, name)
    note = "upsert_arrow" if bulk is not None else "per-row upsert (no bulk API)"
    return Outcome(seconds, env.table.num_rows, env.table.nbytes, note=note, cpu=sw.cpu, rss=sw.rss)


async def prepare_pk(env: Env) -> dict:
    """Each client looks up in a table it filled itself (see ``_verify_pk`` for why): filled on
    first use, outside the timed part, and shared by that client's repetitions."""
    return {}


async def _filled_for(client: Client, env: Env, shared: dict, prefix: bool = False) -> str:
    name = shared.get(client.name)
    if name is None:
        name, _table, writer = await _create_pk(client, env, "prefix" if prefix else "lookup",
                                                prefix=prefix)
        shared[client.name] = name
        await _upsert_all(writer, env.dicts)
    return name


async def cleanup_pk(env: Env, shared: dict) -> None:
    for name in shared.values():
        await drop_table(env.verifier, name)


async def _lookup(client: Client, env: Env, shared: dict, concurrency: int) -> Outcome:
    name = await _filled_for(client, env, shared)
    table = await client.conn.get_table(client.module.TablePath(DATABASE, name))
    lookuper = table.new_lookup().create_lookuper()
    keys = sample_keys(env.table, env.spec.id_column, LOOKUPS)
    id_col, str_col = env.spec.id_column, env.spec.string_column
    results: List[Optional[dict]] = [None] * len(keys)

    done = [False] * len(keys)
    stop_at = time.monotonic() + env.lookup_budget_s

    async def worker(start: int) -> None:
        for i in range(start, len(keys), concurrency):
            if time.monotonic() > stop_at:
                return
            results[i] = await lookuper.lookup({id_col: keys[i]})
            done[i] = True

    sw = env.stopwatch()
    if concurrency == 1:
        await worker(0)
    else:
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
    seconds = sw.stop()
    keys = [k for k, d in zip(keys, done) if d]
    results = [r for r, d in zip(results, done) if d]
    missing = [k for k, r in zip(keys, results) if r is None]
    if missing:
        raise Mismatch(f"{len(missing)} of {len(keys)} lookups in {DATABASE}.{name} found nothing "
                       f"(first: {id_col}={missing[0]})")
    check(f"lookups in {DATABASE}.{name}", ds.checksum_values([r[id_col] for r in results],
                                                              [r[str_col] for r in results]),
          expected_for_keys(env.table, id_col, str_col, keys))
    row_bytes = env.table.nbytes // max(1, env.table.num_rows)
    return Outcome(seconds, len(keys), row_bytes * len(keys), cpu=sw.cpu, rss=sw.rss)


async def run_lookup(client: Client, env: Env, shared: dict) -> Outcome:
    return await _lookup(client, env, shared, 1)


async def run_lookup64(client: Client, env: Env, shared: dict) -> Outcome:
    return await _lookup(client, env, shared, CONCURRENCY)


async def prepare_prefix(env: Env) -> dict:
    if "user_id" not in env.spec.schema.names:
        raise Skip(f"data set {env.dataset} has no user_id column for prefix lookups")
    return {}


async def run_prefix_lookup(client: Client, env: Env, shared: dict) -> Outcome:
    import pyarrow.compute as pc

    name = await _filled_for(client, env, shared, prefix=True)

    table = await client.conn.get_table(client.module.TablePath(DATABASE, name))
    lookuper = table.new_lookup().lookup_by(["user_id"]).create_lookuper()
    users = sorted(set(env.table.column("user_id").to_pylist()))
    users = random.Random(11).sample(users, min(2000, len(users)))
    id_col, str_col = env.spec.id_column, env.spec.string_column
    sw = env.stopwatch()
    ids, strs, users = await prefix_lookup_users(lookuper, users, env.lookup_budget_s, id_col, str_col)
    seconds = sw.stop()
    sub = env.table.filter(pc.is_in(env.table.column("user_id"), value_set=pa.array(users, pa.int64())))
    check(f"prefix lookups in {DATABASE}.{name}", ds.checksum_values(ids, strs),
          ds.checksum(sub, id_col, str_col))
    row_bytes = env.table.nbytes // max(1, env.table.num_rows)
    return Outcome(seconds, len(ids), row_bytes * len(ids), note=f"{len(users)} prefixes", cpu=sw.cpu, rss=sw.rss)


register(Scenario("upsert", "per-row upsert() into a primary-key table", run_upsert, needs_pk=True))
register(Scenario("upsert_arrow", "bulk Arrow upsert (fluss_fast upsert_arrow; pyfluss per-row upsert)",
                  run_upsert_arrow, needs_pk=True))
register(Scenario("lookup", f"{LOOKUPS} sequential primary-key lookups", run_lookup, prepare_pk,
                  cleanup_pk, needs_pk=True))
register(Scenario("lookup64", f"{LOOKUPS} primary-key lookups, {CONCURRENCY} concurrent", run_lookup64,
                  prepare_pk, cleanup_pk, needs_pk=True))
register(Scenario("prefix_lookup", "prefix lookups by user_id (bucket key)", run_prefix_lookup,
                  prepare_prefix, cleanup_pk, needs_pk=True))

LOG_SCENARIOS = ["append", "write_arrow", "scan", "poll", "projected_scan", "scan_after_write"]
PK_SCENARIOS = ["upsert", "upsert_arrow", "lookup", "lookup64", "prefix_lookup"]


# ------------------------------------------------------------------------------------------------
# cold runs: the operation once in a fresh process (``bench.cold``), the table prepared here
# ------------------------------------------------------------------------------------------------
COLD_TIMEOUT_S = 600.0


_COLD_ENV: Optional[Dict[str, str]] = None


async def _cold_child(job: Dict[str, Any], timeout: float) -> Dict[str, Any]:
    from . import cold

    global _COLD_ENV
    if _COLD_ENV is None:
        env = cold.child_env()
        await asyncio.get_running_loop().run_in_executor(None, cold.warm_bytecode, env)
        _COLD_ENV = env
    proc = await asyncio.create_subprocess_exec(*cold.job_command(job), stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, env=_COLD_ENV)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        raise
    try:
        report = cold.parse_output(out.decode(errors="replace"))
    except ValueError:
        raise RuntimeError(f"cold run exited with code {proc.returncode}: "
                           f"{err.decode(errors='replace').strip()[-500:]}") from None
    if "error" in report:
        text = report["error"]
        if "MISMATCH" in text:
            raise Mismatch(text)
        raise RuntimeError(f"cold run: {text}")
    return report


async def run_cold(scenario: str, client: Client, env: Env, shared, timeout: float = COLD_TIMEOUT_S) -> Outcome:
    """``scenario`` once in a fresh process of ``client`` (see ``bench.cold``); checked like a warm run."""
    from .cold import COLD_SCENARIOS

    if scenario not in COLD_SCENARIOS:
        raise Skip(f"{scenario} has no cold variant")
    spec = env.spec
    owned = None        # a table made for this run alone, dropped after it
    verify = None
    if scenario in ("append", "write_arrow", "scan_after_write"):
        owned = table_name(f"cold_{scenario}_{client.name}")
        await create_table(client, owned, spec.schema, env.buckets)
        name = owned
        if scenario != "scan_after_write":
            verify = verify_written
    elif scenario in ("upsert", "upsert_arrow"):
        owned, _t, _w = await _create_pk(client, env, f"cold_{scenario}_{client.name}")
        name = owned
        verify = _verify_pk
    elif scenario in ("lookup", "lookup64", "prefix_lookup"):
        name = await _filled_for(client, env, shared, prefix=scenario == "prefix_lookup")
    else:
        name = shared
    env.table  # the child loads the data set from the cache this fills
    job = {"module": client.module.__name__, "bootstrap": env.bootstrap, "scenario": scenario, "table": name,
           "dataset": env.dataset, "rows": env.rows, "buckets": env.buckets, "server_pid": env.server_pid,
           "lookup_budget_s": env.lookup_budget_s,
           "spec": {"id_column": spec.id_column, "string_column": spec.string_column,
                    "short_string_column": spec.short_string_column, "projection": list(spec.projection)}}
    try:
        r = await _cold_child(job, timeout)
        if verify is not None:
            await verify(env, name)
    finally:
        if owned is not None:
            await drop_table(client, owned)
    nbytes = env.table.nbytes
    if scenario in ("scan", "poll", "scan_after_write"):
        check(f"cold {scenario} of {DATABASE}.{name}", ds.Checksum(*r["checksum"]), env.expected())
    elif scenario == "projected_scan":
        if r["columns"] != list(spec.projection):
            raise Mismatch(f"cold projected scan of {DATABASE}.{name}: columns {r['columns']}")
        check(f"cold projected to_arrow of {DATABASE}.{name}", ds.Checksum(*r["checksum"]),
              env.expected(projected=True))
        nbytes = env.table.select(list(spec.projection)).nbytes
    elif scenario in ("lookup", "lookup64", "prefix_lookup"):
        nbytes = env.table.nbytes // max(1, env.table.num_rows) * r["rows"]
    extra = {k: r[k] for k in ("import_s", "import_pyarrow_s", "connect_s", "first_row_s", "user_s", "sys_s",
                               "write_s")
             if r.get(k) is not None}
    return Outcome(r["seconds"], r["rows"], nbytes, note=r.get("note", ""),
                   cpu=(r["user_s"] + r["sys_s"], r["server_cpu_s"]), rss=(r["rss_start"], r["rss_peak"]),
                   extra=extra)


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 5 and sys.argv[1] == "--probe-pk":
        try:
            asyncio.run(_probe(sys.argv[2], sys.argv[3], sys.argv[4]))
        except Exception as exc:  # noqa: BLE001 - the parent reports it as the reason for SKIPPED
            text, name = str(exc), type(exc).__name__
            print(text if text.startswith(name) else f"{name}: {text}", flush=True)
            os._exit(1)
        print("ok", flush=True)
        os._exit(0)  # do not wait for client threads that may still be retrying
    sys.exit("usage: python -m fluss_fast.bench.scenarios --probe-pk MODULE BOOTSTRAP TABLE")
