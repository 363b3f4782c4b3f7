"""``fluss-fast demo``: start the embedded server (or use ``--bootstrap-servers``), create a table,
ingest a bench_data set with progress shown, read it back, check row counts and checksums, and print
rows/s and MB/s for every step. Then the same for a primary-key table keyed by the data set's id: bulk
upsert, per-row updates and deletes, checked by a snapshot read, concurrent lookups and the changelog.
Exits non-zero on any mismatch; Ctrl-C stops it within a second or two, dropping the demo table and stopping the
embedded server.

    fluss-fast demo [--rows N] [--dataset orders|clicks] [--bootstrap-servers HOST:PORT]
                    [--client fluss_fast|pyfluss] [--buckets N] [--keep] [--no-progress]
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute below

from ..cli import version_line
from . import datasets as ds
from .util import Progress, cleanup_step, human_rate, run_interruptibly, server_for

DEFAULT_ROWS = 5_000_000
DATABASE = "fluss_fast_demo"
WRITE_BATCH_ROWS = 65_536
APPEND_ROWS_MAX = 200_000   # the per-row append step uses at most this many rows (it is the slow path)
PK_ROWS_MAX = 1_000_000    # keys of the primary-key table (the first rows of the data set)
PK_ROW_OPS_MAX = 100_000   # per-row updates (and half as many deletes) on the primary-key table
LOOKUPS_MAX = 10_000       # point lookups, LOOKUP_CONCURRENCY in flight at a time
LOOKUP_CONCURRENCY = 64
CLEANUP_TIMEOUT_S = 2.0     # dropping the table on the way out
CLOSE_TIMEOUT_S = 1.0       # closing the connection: pending writes to a dropped table are not worth waiting for


class DemoFailed(Exception):
    pass


DESCRIPTION = ("Start the embedded Fluss server (or use --bootstrap-servers), create a log table, ingest a "
               "generated data set, read it back three ways, check row counts and checksums after each read, "
               "then upsert, update and delete rows of a primary-key table and check its snapshot, lookups "
               "and changelog, printing rows/s and MB/s for every step.")
EPILOG = ("Exit status: 0 when every check passed, 1 on a checksum mismatch or an error, 2 on bad arguments, "
          "130 when interrupted (Ctrl-C drops the demo table and stops the embedded server).")


def parse_args(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fluss-fast demo", description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--rows", default=str(DEFAULT_ROWS), metavar="N",
                   help=f"rows to ingest (default {DEFAULT_ROWS:,}; suffixes k and m: 10k, 1m)")
    p.add_argument("--dataset", default="orders", choices=sorted(ds.DATASETS),
                   help="which generated data set (bench_data/; default orders)")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                   help="use this cluster instead of starting the embedded server (checked before any data "
                        "is generated)")
    p.add_argument("--client", default="fluss_fast", choices=["fluss_fast", "pyfluss"],
                   help="client library to drive (default fluss_fast)")
    p.add_argument("--buckets", type=int, default=3, metavar="N", help="buckets of the demo table (default 3)")
    p.add_argument("--keep", action="store_true", help="keep the demo table instead of dropping it")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    return p


def _say(msg: str) -> None:
    print(msg, flush=True)


def _step(name: str, rows: int, nbytes: int, seconds: float) -> None:
    _say(f"  {name:<26} {rows:>10,} rows  {seconds:7.2f} s  {human_rate(rows / seconds):>9} rows/s  "
         f"{nbytes / seconds / 1e6:8.1f} MB/s")


def prepare(dataset: str, rows: int) -> pa.Table:
    """Generate (or load from the cache) the data set and check-sum it: plain synchronous code, so a
    Ctrl-C here stops at once rather than at the event loop's next turn."""
    spec = ds.DATASETS[dataset]
    t0 = time.perf_counter()
    data = ds.load(dataset, rows)
    _step(f"load data set '{dataset}'", data.num_rows, data.nbytes, time.perf_counter() - t0)
    t0 = time.perf_counter()
    expected = ds.checksum(data, spec.id_column, spec.string_column)
    _say(f"  expected checksum: {expected} ({time.perf_counter() - t0:.2f} s)")
    return data


async def run_demo(fluss, bootstrap: str, dataset: str, rows: int, buckets: int, *, keep: bool = False,
                   progress: bool = True, data: pa.Table | None = None, state: dict | None = None) -> None:
    spec = ds.DATASETS[dataset]
    state = {} if state is None else state
    if data is None:
        data = prepare(dataset, rows)

    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    admin = conn.get_admin()
    name = f"{dataset}_{uuid.uuid4().hex[:8]}"
    path = fluss.TablePath(DATABASE, name)
    state["table"] = f"{DATABASE}.{name}"
    paths = [path]
    try:
        await admin.create_database(DATABASE, ignore_if_exists=True)
        await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(spec.schema), bucket_count=buckets))
        table = await conn.get_table(path)
        _say(f"  created table {DATABASE}.{name} ({buckets} buckets)")

        # 1. bulk ingest: Arrow batches, as a pipeline reading Parquet would send them
        writer = table.new_append().create_writer()
        batches = data.to_batches(max_chunksize=WRITE_BATCH_ROWS)
        with Progress(rows, "write_arrow_batch", enabled=None if progress else False) as bar:
            t0 = time.perf_counter()
            for rb in batches:
                writer.write_arrow_batch(rb)
                bar.update(rb.num_rows)
                await asyncio.sleep(0)  # lets a Ctrl-C (a cancellation) in between batches
            await writer.flush()
            seconds = time.perf_counter() - t0
        _step("ingest (write_arrow_batch)", rows, data.nbytes, seconds)

        # 2. per-row append of dicts (the slow path most code uses), into the same table
        n_append = min(APPEND_ROWS_MAX, max(1, rows // 10))
        extra = data.slice(0, n_append)
        offset = int(pa.compute.max(data.column(spec.id_column)).as_py()) + 1
        extra = extra.set_column(extra.schema.get_field_index(spec.id_column), spec.schema.field(spec.id_column),
                                 pa.array(range(offset, offset + n_append), pa.int64()))
        dicts = extra.to_pylist()
        with Progress(n_append, "append(dict)", enabled=None if progress else False) as bar:
            t0 = time.perf_counter()
            step = max(1000, n_append // 50)
            for lo in range(0, n_append, step):
                for row in dicts[lo:lo + step]:
                    writer.append(row)
                bar.update(min(step, n_append - lo))
                await asyncio.sleep(0)
            await writer.flush()
            seconds = time.perf_counter() - t0
        _step("ingest (append dicts)", n_append, extra.nbytes, seconds)
        full = pa.concat_tables([data, extra])
        expected = ds.checksum(full, spec.id_column, spec.string_column)
        expected_proj = ds.checksum(full, spec.id_column, spec.short_string_column)
        total = full.num_rows

        # 3. read everything back batch by batch, with progress
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
        got: list[pa.Table] = []
        count = 0
        with Progress(total, "poll_arrow", enabled=None if progress else False) as bar:
            t0 = time.perf_counter()
            idle_since = time.perf_counter()
            while count < total:
                part = await scanner.poll_arrow(500)
                if part.num_rows:
                    got.append(part)
                    count += part.num_rows
                    bar.update(part.num_rows)
                    idle_since = time.perf_counter()
                elif time.perf_counter() - idle_since > 60:
                    raise DemoFailed(f"read back of {DATABASE}.{name} stalled at {count} of {total} rows")
            seconds = time.perf_counter() - t0
        back = pa.concat_tables(got) if got else pa.table({})
        _step("read back (poll_arrow)", back.num_rows, full.nbytes, seconds)
        _check("read back", ds.checksum(back, spec.id_column, spec.string_column), expected)
        del got, back

        # 4. one-shot to_arrow and a projected scan
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
        t0 = time.perf_counter()
        back = await scanner.to_arrow()
        seconds = time.perf_counter() - t0
        _step("read back (to_arrow)", back.num_rows, full.nbytes, seconds)
        _check("to_arrow", ds.checksum(back, spec.id_column, spec.string_column), expected)
        del back

        proj = list(spec.projection)
        scanner = await table.new_scan().project_by_name(proj).create_record_batch_log_scanner()
        scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
        t0 = time.perf_counter()
        back = await scanner.to_arrow()
        seconds = time.perf_counter() - t0
        _step(f"projected scan ({len(proj)} cols)", back.num_rows, full.select(proj).nbytes, seconds)
        if back.column_names != proj:
            raise DemoFailed(f"projected scan returned columns {back.column_names}, expected {proj}")
        _check("projected scan", ds.checksum(back, spec.id_column, spec.short_string_column), expected_proj)
        del back, full, extra, dicts

        pk_path = fluss.TablePath(DATABASE, f"{name}_pk")
        paths.append(pk_path)
        state["table"] += f", {DATABASE}.{name}_pk"
        await run_pk_part(fluss, conn, admin, pk_path, spec, data, buckets, progress)
    finally:
        # Bounded: an interrupted run must not sit on the client's request timeout. Dropping first
        # means writes still pending are refused by the server rather than delivered.
        if not keep:
            dropped = True
            for p in paths:
                dropped = await cleanup_step(admin.drop_table(p, ignore_if_not_exists=True),
                                             CLEANUP_TIMEOUT_S) and dropped
            state["dropped"] = dropped
        await cleanup_step(_closing(conn), CLOSE_TIMEOUT_S)


async def run_pk_part(fluss, conn, admin, path, spec, data: pa.Table, buckets: int, progress: bool) -> None:
    """A primary-key table keyed by the data set's id: bulk upsert, per-row updates and deletes,
    then the current state checked three ways (snapshot, lookups, changelog counts)."""
    key, text = spec.id_column, spec.string_column
    n_keys = min(PK_ROWS_MAX, data.num_rows)
    base = data.slice(0, n_keys)
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(spec.schema, primary_keys=[key]),
                                                         bucket_count=buckets))
    table = await conn.get_table(path)
    _say(f"  created primary-key table {path.database_name}.{path.table_name} (key {key}, {buckets} buckets)")

    # 5. bulk upsert of Arrow batches: every row is a new key (+I)
    writer = table.new_upsert().create_writer()
    arrow = hasattr(writer, "upsert_arrow")  # pyfluss 1.0 upserts row by row only
    label = "upsert_arrow" if arrow else "upsert(dict)"
    with Progress(n_keys, label, enabled=None if progress else False) as bar:
        t0 = time.perf_counter()
        for rb in base.to_batches(max_chunksize=WRITE_BATCH_ROWS):
            if arrow:
                writer.upsert_arrow(pa.Table.from_batches([rb]))
            else:
                for row in rb.to_pylist():
                    writer.upsert(row)
            bar.update(rb.num_rows)
            await asyncio.sleep(0)
        await writer.flush()
        seconds = time.perf_counter() - t0
    _step(f"upsert ({'upsert_arrow' if arrow else 'dicts'})", n_keys, base.nbytes, seconds)

    # 6. per-row updates (a changed text column: -U/+U) and deletes (-D) of other keys
    n_upd = min(PK_ROW_OPS_MAX, max(1, n_keys // 10))
    n_del = min(n_upd // 2, n_keys - n_upd)
    updated = base.slice(0, n_upd)
    col = updated.schema.get_field_index(text)
    new_text = pa.compute.binary_join_element_wise("updated ", pa.compute.cast(updated.column(key), pa.string()), "")
    updated = updated.set_column(col, spec.schema.field(text), new_text)
    upserts = updated.to_pylist()
    deletes = [{key: k} for k in base.column(key).slice(n_upd, n_del).to_pylist()]
    ops = n_upd + n_del
    with Progress(ops, "upsert/delete(dict)", enabled=None if progress else False) as bar:
        t0 = time.perf_counter()
        step = max(1000, ops // 50)
        for lo in range(0, n_upd, step):
            for row in upserts[lo:lo + step]:
                writer.upsert(row)
            bar.update(min(step, n_upd - lo))
            await asyncio.sleep(0)
        for lo in range(0, n_del, step):
            for pk in deletes[lo:lo + step]:
                writer.delete(pk)
            bar.update(min(step, n_del - lo))
            await asyncio.sleep(0)
        await writer.flush()
        seconds = time.perf_counter() - t0
    _step("upsert/delete (dicts)", ops, updated.nbytes, seconds)
    expected = pa.concat_tables([updated, base.slice(n_upd + n_del)])
    want = ds.checksum(expected, key, text)

    # 7. snapshot read of the current rows (a fluss_fast extra; pyfluss has no snapshot scan)
    scan = table.new_scan()
    if hasattr(scan, "create_snapshot_scanner"):
        scanner = await scan.create_snapshot_scanner()
        t0 = time.perf_counter()
        back = await scanner.to_arrow()
        seconds = time.perf_counter() - t0
        _step("snapshot read (to_arrow)", back.num_rows, expected.nbytes, seconds)
        _check("snapshot", ds.checksum(back, key, text), want)
        got = back.select(expected.column_names).cast(expected.schema).sort_by(key)
        if not got.equals(expected.sort_by(key)):
            raise DemoFailed(f"snapshot of {path.table_name}: same keys and '{text}' but other columns differ")
        del back, got
    else:
        _say("  snapshot read: skipped (this client has no snapshot scan)")

    # 8. point lookups, LOOKUP_CONCURRENCY at a time: updated, deleted and untouched keys
    keys = base.column(key).to_pylist()
    # pyfluss 1.0 answers about ten concurrent lookups a second here: one round of them is enough
    n_look = min(LOOKUPS_MAX if hasattr(scan, "create_snapshot_scanner") else LOOKUP_CONCURRENCY, n_keys)
    probe = [keys[(i * 7919) % n_keys] for i in range(n_look)]  # a spread over all three kinds
    rows_by_key = {r[key]: r for r in expected.take(pa.compute.index_in(
        pa.array(sorted(set(probe)), pa.int64()), expected.column(key)).drop_null()).to_pylist()}
    lookuper = table.new_lookup().create_lookuper()
    queue = iter(probe)
    wrong: list[str] = []

    async def worker() -> None:
        for k in queue:
            row = await lookuper.lookup({key: k})
            if row != rows_by_key.get(k) and len(wrong) < 3:
                wrong.append(f"{key}={k}: got {row}, expected {rows_by_key.get(k)}")

    t0 = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(LOOKUP_CONCURRENCY)])
    seconds = time.perf_counter() - t0
    _step(f"lookups ({LOOKUP_CONCURRENCY} concurrent)", n_look, expected.nbytes * n_look // max(1, n_keys), seconds)
    if wrong:
        raise DemoFailed(f"lookup in {path.table_name}: " + "; ".join(wrong))
    found = sum(1 for k in probe if k in rows_by_key)
    _say(f"  lookups: {found:,} found, {n_look - found:,} deleted keys absent, rows ok")

    # 9. the changelog holds exactly what was written: +I per key, -U/+U per update, -D per delete
    want_counts = {"insert": n_keys, "update_before": n_upd, "update_after": n_upd, "delete": n_del}
    if hasattr(scan, "create_snapshot_scanner"):  # fluss_fast: the $changelog virtual table, as Arrow
        log = await conn.get_table(fluss.TablePath(path.database_name, f"{path.table_name}$changelog"))
        scanner = await log.new_scan().create_record_batch_log_scanner()
        await scanner.subscribe_all("earliest")
        t0 = time.perf_counter()
        changes = await scanner.to_arrow()
        seconds = time.perf_counter() - t0
        _step("changelog read (to_arrow)", changes.num_rows, changes.nbytes, seconds)
        counts = {r["values"]: r["counts"]
                  for r in pa.compute.value_counts(changes.column("_change_type")).to_pylist()}
    else:
        t0 = time.perf_counter()
        counts = await _count_changes(fluss, table, buckets, sum(want_counts.values()), path.table_name)
        seconds = time.perf_counter() - t0
        _step("changelog read (poll)", sum(counts.values()), 0, seconds)
    counts = {k: counts.get(k, 0) for k in want_counts} if set(counts) <= set(want_counts) else counts
    if counts != want_counts:
        raise DemoFailed(f"changelog of {path.table_name}: got {counts}, expected {want_counts}")
    _say(f"  changelog: +I {n_keys:,}  -U {n_upd:,}  +U {n_upd:,}  -D {n_del:,}, counts ok")


_CHANGE_NAMES = {1: "insert", 2: "update_before", 3: "update_after", 4: "delete"}


async def _count_changes(fluss, table, buckets: int, total: int, name: str) -> dict:
    """Change records per type, read record by record (clients without the $changelog table)."""
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
    counts: dict = {}
    seen = 0
    idle_since = time.perf_counter()
    while seen < total:
        records = await scanner.poll(500)
        if not records.count():
            if time.perf_counter() - idle_since > 60:
                raise DemoFailed(f"changelog of {name} stalled at {seen} of {total} records")
            continue
        idle_since = time.perf_counter()
        for recs in records.values():
            for r in recs:
                kind = _CHANGE_NAMES.get(int(r.change_type), str(r.change_type))
                counts[kind] = counts.get(kind, 0) + 1
                seen += 1
    return counts


async def _closing(conn) -> None:
    await conn.close()


def _check(what: str, got: ds.Checksum, want: ds.Checksum) -> None:
    if got != want:
        raise DemoFailed(f"{what}: checksum mismatch: got {got}, expected {want}")
    _say(f"  {what}: {got.rows:,} rows, checksum ok")


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        rows = ds.parse_rows(opts.rows)
        if opts.buckets < 1:
            raise ValueError("--buckets must be at least 1")
    except ValueError as exc:
        print(f"fluss-fast demo: {exc}", file=sys.stderr)
        return 2
    fluss = importlib.import_module("fluss_fast" if opts.client == "fluss_fast" else "fluss")
    server = None
    state: dict = {}
    started = time.perf_counter()
    try:
        server, bootstrap = server_for(opts.bootstrap_servers)
        _say(f"fluss-fast demo: {rows:,} rows of '{opts.dataset}' with {opts.client} against {bootstrap}"
             + (" (embedded server)" if server else ""))
        _say(f"  {version_line()}" + (f"; pyfluss {_pyfluss_version(fluss)}" if opts.client == "pyfluss" else ""))
        data = prepare(opts.dataset, rows)
        run_interruptibly(run_demo(fluss, bootstrap, opts.dataset, rows, opts.buckets, keep=opts.keep,
                             progress=not opts.no_progress, data=data, state=state))
    except KeyboardInterrupt:
        done = []
        tables = "tables" if "," in state.get("table", "") else "table"
        if state.get("dropped"):
            done.append(f"{tables} {state['table']} dropped")
        elif state.get("table") and not opts.keep:
            done.append(f"{tables} {state['table']} may remain")
        if server is not None:
            done.append("embedded server stopped")
        print("\nfluss-fast demo: interrupted" + (f" ({', '.join(done)})" if done else ""), file=sys.stderr)
        return 130
    except DemoFailed as exc:
        print(f"fluss-fast demo: FAILED: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - any error is a failed demo, said plainly
        print(f"fluss-fast demo: ERROR: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.close()
    _say(f"all checks passed in {time.perf_counter() - started:.1f} s")
    return 0


def _pyfluss_version(module) -> str:
    return getattr(module, "__version__", "?")


if __name__ == "__main__":
    sys.exit(main())
