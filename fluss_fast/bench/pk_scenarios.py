"""The primary-key scenarios (upserts, lookups, prefix lookups), SKIPPED with the reason when a
server or client lacks primary-key tables; ``python -m fluss_fast.bench.pk_scenarios --probe-pk``
is the child process that finds out."""
from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pyarrow as pa

from ..rpc.api import API_KEYS, Api
from . import datasets as ds
from .cold import lookup_keys, prefix_lookup_users
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
    drop_table,
    register,
    table_name,
)
from .raw import tablet_apis

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


_REPO_ROOT = str(Path(__file__).resolve().parents[2])


async def _probe_in_child(module_name: str, bootstrap: str, name: str) -> str:
    """Runs the probe in a child process: a client stuck retrying an unsupported request must not
    keep a connection (and its background threads) alive inside the benchmark process."""
    import sys

    root = _REPO_ROOT
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fluss_fast.bench.pk_scenarios", "--probe-pk", module_name, bootstrap, name,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), PROBE_TIMEOUT_S)
    except TimeoutError:
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


async def create_pk(client: Client, env: Env, tag: str, *, prefix: bool = False):
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


def sample_keys(table: pa.Table, id_col: str, k: int) -> list[int]:
    """The keys a lookup scenario looks up (the same in a warm and a cold run)."""
    ids = table.column(id_col).to_pylist()
    rnd = random.Random(7)
    return rnd.sample(ids, min(k, len(ids)))


def expected_for_keys(table: pa.Table, id_col: str, str_col: str, keys: list[int]) -> ds.Checksum:
    import pyarrow.compute as pc

    sub = table.filter(pc.is_in(table.column(id_col), value_set=pa.array(keys)))
    return ds.checksum(sub, id_col, str_col)


async def verify_pk(env: Env, name: str) -> None:
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
    name, _table, writer = await create_pk(client, env, f"upsert_{client.name}")
    rows = env.dicts
    try:
        with env.bar(f"upsert {client.name}", len(rows)) as bar:
            sw = env.stopwatch()
            await _upsert_all(writer, rows, bar)
            seconds = sw.stop()
        await verify_pk(env, name)
    finally:
        await drop_table(client, name)
    return Outcome(seconds, len(rows), env.table.nbytes, cpu=sw.cpu, rss=sw.rss)


async def run_upsert_arrow(client: Client, env: Env, shared) -> Outcome:
    """fluss_fast's bulk keyed write; pyfluss has none, so it runs its per-row upsert (its fastest)."""
    name, _table, writer = await create_pk(client, env, f"upsert_arrow_{client.name}")
    bulk = getattr(writer, "upsert_arrow", None)
    try:
        sw = env.stopwatch()
        if bulk is not None:
            bulk(arrow_chunks(env.table))
            await writer.flush()
        else:
            await _upsert_all(writer, env.dicts)
        seconds = sw.stop()
        await verify_pk(env, name)
    finally:
        await drop_table(client, name)
    note = "upsert_arrow" if bulk is not None else "per-row upsert (no bulk API)"
    return Outcome(seconds, env.table.num_rows, env.table.nbytes, note=note, cpu=sw.cpu, rss=sw.rss)


async def prepare_pk(env: Env) -> dict:
    """Each client looks up in a table it filled itself (see ``verify_pk`` for why): filled on
    first use, outside the timed part, and shared by that client's repetitions."""
    return {}


async def filled_for(client: Client, env: Env, shared: dict, prefix: bool = False) -> str:
    name = shared.get(client.name)
    if name is None:
        name, _table, writer = await create_pk(client, env, "prefix" if prefix else "lookup",
                                                prefix=prefix)
        shared[client.name] = name
        await _upsert_all(writer, env.dicts)
    return name


async def cleanup_pk(env: Env, shared: dict) -> None:
    for name in shared.values():
        await drop_table(env.verifier, name)


async def _lookup(client: Client, env: Env, shared: dict, concurrency: int) -> Outcome:
    name = await filled_for(client, env, shared)
    table = await client.conn.get_table(client.module.TablePath(DATABASE, name))
    lookuper = table.new_lookup().create_lookuper()
    keys = sample_keys(env.table, env.spec.id_column, LOOKUPS)
    id_col, str_col = env.spec.id_column, env.spec.string_column
    sw = env.stopwatch()
    keys, results = await lookup_keys(lookuper, id_col, keys, concurrency, env.lookup_budget_s)
    seconds = sw.stop()
    missing = [k for k, r in zip(keys, results, strict=True) if r is None]
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


async def run_snapshot_read(client: Client, env: Env, shared: dict) -> Outcome:
    """The current rows of the whole table read back at once (fluss_fast's snapshot scanner, SCAN_KV
    per bucket); the table is the one the lookup scenarios fill, so it is written outside the timing."""
    name = await filled_for(client, env, shared)
    table = await client.conn.get_table(client.module.TablePath(DATABASE, name))
    scan = table.new_scan()
    create = getattr(scan, "create_snapshot_scanner", None)
    if create is None:
        raise Skip(f"{client.name} has no snapshot scan of a primary-key table")
    scanner = await create()
    sw = env.stopwatch()
    got = await scanner.to_arrow()
    seconds = sw.stop()
    id_col, str_col = env.spec.id_column, env.spec.string_column
    check(f"snapshot of {DATABASE}.{name}", ds.checksum(got, id_col, str_col), ds.checksum(env.table, id_col, str_col))
    return Outcome(seconds, got.num_rows, env.table.nbytes, cpu=sw.cpu, rss=sw.rss)


async def prepare_prefix(env: Env) -> dict:
    if "user_id" not in env.spec.schema.names:
        raise Skip(f"data set {env.dataset} has no user_id column for prefix lookups")
    return {}


async def run_prefix_lookup(client: Client, env: Env, shared: dict) -> Outcome:
    import pyarrow.compute as pc

    name = await filled_for(client, env, shared, prefix=True)

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
register(Scenario("snapshot_read", "the whole current state read back (fluss_fast snapshot scanner; opt-in)",
                  run_snapshot_read, prepare_pk, cleanup_pk, needs_pk=True))
register(Scenario("prefix_lookup", "prefix lookups by user_id (bucket key)", run_prefix_lookup,
                  prepare_prefix, cleanup_pk, needs_pk=True))

PK_SCENARIOS = ["upsert", "upsert_arrow", "lookup", "lookup64", "prefix_lookup"]  # the default ones


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
    sys.exit("usage: python -m fluss_fast.bench.pk_scenarios --probe-pk MODULE BOOTSTRAP TABLE")
