"""End-to-end benchmark scenarios, written once against the pyfluss 1.0.0 API.

Each scenario is ``async run(client, env, shared) -> Outcome``: ``client.module`` is either ``fluss``
(pyfluss) or ``fluss_fast`` -- the same code drives both, which is the point of a drop-in. Every
scenario checks what it wrote or read (row count + an order-independent checksum of the id column and
a string column), so a fast wrong answer is reported as FAILED, never as a good number.

Adding a scenario: write the coroutine, then ``register(Scenario(...))``. Primary-key scenarios set
``needs_pk=True``; when the server or a client cannot create/use primary-key tables yet they are
reported as SKIPPED with the reason, not as failures.

This module is what every scenario shares (the registry, the client and environment of a run, the
stopwatch, table helpers); the scenarios live in ``scenarios.py`` (log tables), ``remote_scenarios.py``,
``pk_scenarios.py`` and ``ceiling.py``, cold runs in ``cold_runs.py``.
"""
from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from . import datasets as ds
from .cold import proc_cpu_s, reset_peak_rss, status_bytes
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
    cpu: tuple[float, float] = (0.0, -1.0)  # CPU seconds of (this process, the server; -1 unknown)
    # (RSS at the start of the timed section, peak RSS during it) of this process in bytes; 0 unknown
    rss: tuple[int, int] = (0, 0)
    # a cold run's own figures (``bench.cold``): import_s, connect_s, first_row_s, user_s, sys_s, ...
    extra: dict[str, Any] = field(default_factory=dict)


class Stopwatch:
    """Wall time of the timed section, plus the CPU this process and the server spent in it: a
    client at 100 % of a core is client-bound, a server at 100 % server-bound, both low = waiting.
    Also how far this process's RSS rose above its level at the start (``rss``: start, peak)."""

    def __init__(self, server_pid: int | None, profile_to: str | None = None) -> None:
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

    async def open(self, bootstrap: str, props: dict | None = None) -> Client:
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
    _table: pa.Table | None = None
    _dicts: list[dict] | None = None
    _expected: dict[str, ds.Checksum] = field(default_factory=dict)
    pk_support: dict[str, str] = field(default_factory=dict)   # client name -> "" or why not
    server_pid: int | None = None   # the embedded server, for its CPU time
    profile_dir: str | None = None  # cProfile every timed section into this directory
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
    def dicts(self) -> list[dict]:
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
    prepare: Callable[[Env], Awaitable[Any]] | None = None   # once, shared by both clients
    cleanup: Callable[[Env, Any], Awaitable[None]] | None = None
    needs_pk: bool = False
    raw: bool = False   # runs without a client library (the ceiling); reported once per repetition


SCENARIOS: dict[str, Scenario] = {}


def register(s: Scenario) -> Scenario:
    SCENARIOS[s.name] = s
    return s


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def table_name(tag: str) -> str:
    return f"{tag}_{uuid.uuid4().hex[:10]}"


async def create_table(client: Client, name: str, schema: pa.Schema, buckets: int, *,
                       primary_keys: list[str] | None = None, bucket_keys: list[str] | None = None):
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
    with contextlib.suppress(Exception):  # cleanup must never hide the result
        await client.conn.get_admin().drop_table(client.module.TablePath(DATABASE, name),
                                                 ignore_if_not_exists=True)


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


def arrow_chunks(table: pa.Table, rows_per_batch: int = 65_536) -> pa.Table:
    # A table read from Parquet comes in row groups; one giant chunk would be an unrealistic request.
    return pa.Table.from_batches(table.to_batches(max_chunksize=rows_per_batch), schema=table.schema)
