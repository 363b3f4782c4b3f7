"""The log-table scenarios: appends and Arrow writes, full and projected scans, the poll loop
(``harness.py`` has what they share; the docstring there says how a scenario is written)."""
from __future__ import annotations

import time

from . import datasets as ds
from .harness import (
    DATABASE,
    POLL_TIMEOUT_MS,
    STALL_S,
    Client,
    Env,
    Mismatch,
    Outcome,
    Scenario,
    arrow_chunks,
    check,
    create_table,
    drop_table,
    read_all,
    register,
    table_name,
    verify_written,
)


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
    data = arrow_chunks(env.table)
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
    writer.write_arrow(arrow_chunks(env.table))
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
    ids: list[int] = []
    strs: list[str | None] = []
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
        writer.write_arrow(arrow_chunks(env.table))
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

LOG_SCENARIOS = ["append", "write_arrow", "scan", "poll", "projected_scan", "scan_after_write"]
