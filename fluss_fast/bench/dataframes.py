"""Polars and DuckDB reading a bounded scan through the Arrow C stream: peak RSS rise and time.

    python -m fluss_fast.bench.dataframes --bootstrap H:P --rows 10m load
    python -m fluss_fast.bench.dataframes --bootstrap H:P --rows 10m read

``load`` writes the bench's ``clicks`` data set into ``dfbench.clicks_<rows>``; ``read`` runs every way
of reading it, each in a fresh process (so one's freed memory cannot hide the next one's peak), and
prints one JSON line per way: the peak RSS rise over the process after connecting, the result's size
and the wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

WAYS = ("to_arrow+polars.from_arrow", "polars.DataFrame(scanner)", "scanner.to_polars()",
        "duckdb CREATE TABLE AS FROM scanner", "duckdb aggregate FROM scanner", "to_arrow",
        "polars.DataFrame(scanner) without strings", "to_arrow without strings")
#: Polars keeps strings as views, so it copies Arrow's string columns; the other columns it takes over
NO_STRINGS = ["event_id", "user_id", "page_id", "ts"]


def _path(rows: int):
    import fluss_fast as ff

    return ff.TablePath("dfbench", f"clicks_{rows}")


def load(bootstrap: str, rows: int, buckets: int) -> None:
    """Write ``rows`` rows of the clicks data set (the bench's cache) into a fresh log table."""
    import fluss_fast as ff
    from fluss_fast import sync

    from . import datasets

    data = datasets.load("clicks", rows)
    with sync.connect({"bootstrap.servers": bootstrap}) as conn:
        admin = conn.get_admin()
        admin.create_database("dfbench", ignore_if_exists=True)
        admin.create_table(_path(rows), ff.TableDescriptor(ff.Schema(data.schema), bucket_count=buckets),
                           ignore_if_exists=True)
        w = conn.get_table(_path(rows)).new_append().create_writer()
        for batch in data.to_batches(max_chunksize=100_000):
            w.write_arrow_batch(batch)
        w.flush()
    print(json.dumps({"loaded_rows": rows, "arrow_bytes": data.nbytes}))


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def read_one(bootstrap: str, rows: int, way: str) -> dict:
    """One way of reading the table, in this process; the figures as a dict."""
    import duckdb
    import polars as pl

    import fluss_fast as ff
    from fluss_fast import sync

    conn = sync.connect({"bootstrap.servers": bootstrap})
    table = conn.get_table(_path(rows))
    n = table.get_table_info().num_buckets
    label = way
    scan = table.new_scan()
    if way.endswith(" without strings"):
        scan = scan.project_by_name(NO_STRINGS)
        way = way[:-len(" without strings")]
    scanner = scan.create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(n)})
    base = peak = _rss()
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss())
            time.sleep(0.002)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t0 = time.perf_counter()
    size = None
    if way == "to_arrow+polars.from_arrow":
        df = pl.from_arrow(scanner.to_arrow())
        got, size = df.height, df.estimated_size()
    elif way == "polars.DataFrame(scanner)":
        df = pl.DataFrame(scanner)
        got, size = df.height, df.estimated_size()
    elif way == "scanner.to_polars()":
        df = scanner.to_polars()
        got, size = df.height, df.estimated_size()
    elif way == "to_arrow":
        t = scanner.to_arrow()
        got, size = t.num_rows, t.nbytes
    elif way == "duckdb CREATE TABLE AS FROM scanner":
        db = duckdb.connect()
        db.execute("CREATE TABLE clicks AS SELECT * FROM scanner")
        got = db.execute("SELECT count(*) FROM clicks").fetchall()[0][0]
        size = int(db.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchall()[0][0])
    elif way == "duckdb aggregate FROM scanner":
        got = duckdb.sql("SELECT count(*), sum(user_id) FROM scanner").fetchall()[0][0]
    else:
        raise SystemExit(f"unknown way {way!r}")
    seconds = time.perf_counter() - t0
    done.set()
    th.join()
    conn.close()
    return {"way": label, "rows": got, "seconds": round(seconds, 2), "peak_rss_rise_mb": round((peak - base) / 1e6),
            "result_mb": None if size is None else round(size / 1e6)}


def main(argv=None) -> None:
    """The command line (see the module's docstring)."""
    p = argparse.ArgumentParser(prog="python -m fluss_fast.bench.dataframes")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--rows", default="10m")
    p.add_argument("--buckets", type=int, default=4)
    p.add_argument("--way", help="one way only, in this process (what `read` runs per way)")
    p.add_argument("mode", choices=["load", "read"])
    a = p.parse_args(argv)
    from .datasets import parse_rows

    rows = parse_rows(a.rows)
    if a.mode == "load":
        load(a.bootstrap, rows, a.buckets)
    elif a.way:
        print(json.dumps(read_one(a.bootstrap, rows, a.way)))
    else:
        for way in WAYS:
            out = subprocess.run([sys.executable, "-m", "fluss_fast.bench.dataframes", "--bootstrap",
                                  a.bootstrap, "--rows", a.rows, "--way", way, "read"],
                                 capture_output=True, text=True)
            print(out.stdout.strip() if out.returncode == 0 else json.dumps(
                {"way": way, "error": out.stderr.strip().splitlines()[-1:]}), flush=True)


if __name__ == "__main__":
    main()
