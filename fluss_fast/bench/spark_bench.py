"""``fluss-fast bench --spark``: batch read and write of the orders data set through Spark.

Three contenders, measured in the same Spark session (local[N]) on the same data:
* ``fluss``: the ``fluss`` Python data source against a fluss-fast server;
* ``parquet``: Spark's own Parquet reader/writer on a local file (the JVM-native reference);
* ``memory``: a trivial Python data source that yields the same Arrow batches, already in Spark's
  types, from memory-mapped Arrow IPC files, and a sink that drops them: the ceiling of Spark's
  Python data source path.
Reads end in Spark's ``noop`` sink (the whole scan runs, nothing is collected); writes take the
``memory`` source's DataFrame (same rows, same partitions, the same Arrow batches reach both sinks).
The contenders of a kind run in turn, round after round (``--warmup`` untimed rounds, then
``--repeat`` timed ones), so a change of load on a shared machine hits all of them alike; each rate is
the best round, and ``fluss/memory`` is given both from the best rounds and as the median of the
per-round ratios. Every Fluss write goes into a table created before its round's clock starts, and
afterwards each such table must hold exactly the rows written (else the bench fails). On Linux the
CPU seconds each run took are split by process (Spark's JVM, its Python workers, the embedded
server): unlike wall time, they do not depend on what else the machine runs. The warm-up rounds
hide a one-off cost that a short job pays: the first Fluss task of each Python worker imports
fluss_fast (measured separately, in a fresh interpreter, as ``first_task_import_s``).
A profile of the Fluss read (time in the client vs the rest of the task) comes from the source's
``scan.stats.dir`` records and a driver-side run of the same client read without Spark.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa

from . import datasets as ds
from .util import human_rate, server_for


def write_memory_files(table: pa.Table, parts: int, directory: str, batch_rows: int = 10_000) -> list[str]:
    """The orders in Spark's Arrow types as ``parts`` Arrow IPC files: the memory source maps them
    (page cache, zero copy), so its reads cost no decoding at all."""
    from ..datatypes import SchemaInfo
    from ..spark.types import ReadConverter, spark_arrow_schema, spark_schema

    info = SchemaInfo.from_arrow(table.schema)
    target = spark_arrow_schema(spark_schema(info, "orders"))
    convert = ReadConverter(info.types, target)
    per = -(-table.num_rows // parts)
    paths = []
    for p in range(parts):
        path = os.path.join(directory, f"part-{p}.arrow")
        with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, target) as w:
            for b in table.slice(p * per, per).to_batches(batch_rows):
                w.write_batch(convert(b))
        paths.append(path)
    return paths


def _memory_source():
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        InputPartition,
        WriterCommitMessage,
    )

    class MemoryReader(DataSourceReader):
        def __init__(self, options):
            self.paths = options["paths"].split(",")

        def partitions(self):
            return [InputPartition(p) for p in self.paths]

        def read(self, partition):
            reader = pa.ipc.open_file(pa.memory_map(partition.value))
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

    class DropWriter(DataSourceArrowWriter):
        def write(self, iterator):
            n = 0
            for b in iterator:
                n += b.num_rows
            return WriterCommitMessage()

    class MemorySource(DataSource):
        @classmethod
        def name(cls):
            return "arrow_memory"

        def schema(self):
            from ..datatypes import SchemaInfo
            from ..spark.types import spark_schema

            return spark_schema(SchemaInfo.from_arrow(ds.ORDERS_SCHEMA), "orders")

        def reader(self, schema):
            return MemoryReader(self.options)

        def writer(self, schema, overwrite):
            return DropWriter()

    return MemorySource


def _proc_cpu() -> dict:
    """CPU seconds (own + reaped children's) of this process's descendants, by kind; {} off Linux."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    procs = {}
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        procs[pid] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / tick, cmd)
    mine, grew = {os.getpid()}, True
    while grew:
        grew = False
        for pid, (ppid, _, _) in procs.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    out: dict = {}
    for pid in mine - {os.getpid()}:
        _, cpu, cmd = procs[pid]
        kind = ("jvm" if "java" in cmd.split(" ", 1)[0] else
                "server" if "fluss_fast server" in cmd or "fluss-fast server" in cmd else "python_workers")
        out[kind] = out.get(kind, 0.0) + cpu
    return out


def _rounds(contenders: dict, repeat: int, warmup: int = 2) -> dict:
    """{name: (seconds per timed round, CPU seconds by process kind per round)}; every round runs
    each contender once, in turn, after ``warmup`` untimed rounds (JIT, connections, the memory
    source's pages, and Python workers: Spark hands a task any idle worker of its pool, so one round
    may leave a worker that has not yet imported a contender's module)."""
    for _ in range(warmup):
        for fn in contenders.values():
            fn()
    out = {name: ([], []) for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            c0 = _proc_cpu()
            t = time.perf_counter()
            fn()
            out[name][0].append(time.perf_counter() - t)
            c1 = _proc_cpu()
            out[name][1].append({k: c1[k] - c0.get(k, 0.0) for k in c1})
    return out


def _summarise(rows: int, rounds: dict) -> dict:
    rates = {name: rows / min(secs) for name, (secs, _) in rounds.items()}
    ratios = sorted(m / f for f, m in zip(rounds["fluss"][0], rounds["memory"][0], strict=True))
    rates["fluss_vs_memory_best"] = rates["fluss"] / rates["memory"]
    rates["fluss_vs_memory_median_round"] = ratios[len(ratios) // 2]
    cpu = {}
    for name, (_, per_run) in rounds.items():
        kinds = sorted({k for run in per_run for k in run})
        cpu[name] = {k: round(sorted(run.get(k, 0.0) for run in per_run)[len(per_run) // 2], 2) for k in kinds}
    rates["cpu_seconds_median"] = cpu
    rates["round_seconds"] = {name: [round(x, 3) for x in secs] for name, (secs, _) in rounds.items()}
    return rates


def _client_read_rate(bootstrap: str, name: str) -> float:
    """rows/s of the same ranges read by the client in this process, without Spark (the profile)."""
    from ..spark import options as so
    from ..spark import ranges, types
    from ..spark.reader import table_meta

    opts = so.parse({"bootstrap.servers": bootstrap, "table": name})
    meta = table_meta(opts)
    parts = ranges.partitions_of(opts, meta)
    spark_struct = types.spark_schema(meta.schema, name)
    convert = types.ReadConverter(meta.schema.types, types.spark_arrow_schema(spark_struct))
    t = time.perf_counter()
    n = 0
    for r in ranges.plan_batch(opts, meta, parts):
        for b in ranges.read_range(opts, r, None, None, convert):
            n += b.num_rows
    return n / (time.perf_counter() - t)


def _import_seconds() -> float:
    """Seconds a fresh Python worker (pyspark and pyarrow already loaded) spends importing the sink."""
    import subprocess

    code = ("import time, pyspark.worker, pyspark.sql.datasource, pyarrow; t = time.perf_counter(); "
            "import fluss_fast.spark.writer; print(time.perf_counter() - t)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))
    return float(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else float("nan")


def _rows_in(admin, name: str, buckets: int) -> int:
    """Records in a log table: the sum of its buckets' latest offsets."""
    import fluss_fast as fluss

    offsets = admin.list_offsets(fluss.TablePath(*name.split(".")), list(range(buckets)), offset_type="latest")
    return sum(offsets.values())


def run(rows: int, repeat: int, buckets: int, bootstrap: str | None, cores: int,
        compression: str | None = None, warmup: int = 2) -> dict:
    from pyspark.sql import SparkSession

    import fluss_fast as fluss
    import fluss_fast.spark
    from fluss_fast import sync

    root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = root + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = tempfile.mkdtemp(prefix="fluss-spark-bench-")
    server, bootstrap = server_for(bootstrap)
    spark = None
    try:
        spark = (SparkSession.builder.master(f"local[{cores}]").appName("fluss-fast-spark-bench")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", str(cores))
                 .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"]).getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        fluss_fast.spark.register(spark)
        spark.dataSource.register(_memory_source())
        data = ds.load("orders", rows)
        db = "spark_bench"
        conn = sync.connect({"bootstrap.servers": bootstrap})
        admin = conn.get_admin()
        admin.create_database(db, ignore_if_exists=True)

        def new_table() -> str:
            t = f"orders_{uuid.uuid4().hex[:8]}"
            props = {"table.log.arrow.compression.type": compression} if compression else {}
            admin.create_table(fluss.TablePath(db, t),
                               fluss.TableDescriptor(fluss.Schema(ds.ORDERS_SCHEMA), bucket_count=buckets,
                                                     properties=props))
            return f"{db}.{t}"

        src = new_table()
        w = conn.get_table(fluss.TablePath(*src.split("."))).new_append().create_writer()
        w.write_arrow(data)
        w.flush()
        parquet = os.path.join(work, "orders.parquet")
        paths = write_memory_files(data, buckets, work)
        memory = spark.read.format("arrow_memory").option("paths", ",".join(paths))
        memory.load().write.mode("overwrite").parquet(parquet)

        stats_dir = os.path.join(work, "stats")
        fluss_read = (spark.read.format("fluss").option("bootstrap.servers", bootstrap)
                      .option("scan.stats.dir", stats_dir))
        # every contender reads all the rows (a bench that reads less would look fast)
        for df in (fluss_read.load(src), spark.read.parquet(parquet), memory.load()):
            assert df.count() == rows, "a contender did not read every row"
        shutil.rmtree(stats_dir, ignore_errors=True)
        out = {"rows": rows, "buckets": buckets, "cores": cores, "compression": compression or "ZSTD (default)",
               "read": {}, "write": {}}
        out["warmup_rounds"] = warmup
        out["read"] = _summarise(rows, _rounds({
            "fluss": lambda: fluss_read.load(src).write.format("noop").mode("overwrite").save(),
            "parquet": lambda: spark.read.parquet(parquet).write.format("noop").mode("overwrite").save(),
            "memory": lambda: memory.load().write.format("noop").mode("overwrite").save(),
        }, repeat, warmup))

        # the tables are created before the clock starts: the job, not the DDL, is measured
        targets = [new_table() for _ in range(warmup + repeat)]
        pending = list(targets)

        def write_fluss():
            (memory.load().write.format("fluss").option("bootstrap.servers", bootstrap).mode("append")
             .save(pending.pop(0)))

        out["write"] = _summarise(rows, _rounds({
            "fluss": write_fluss,
            "parquet": lambda: memory.load().write.mode("overwrite").parquet(os.path.join(work, "out.parquet")),
            "memory": lambda: memory.load().write.format("arrow_memory").mode("append").save(),
        }, repeat, warmup))
        landed = {t: _rows_in(admin, t, buckets) for t in targets}
        wrong = {t: n for t, n in landed.items() if n != rows}
        if wrong:
            raise RuntimeError(f"Fluss write jobs did not land exactly {rows} rows: {wrong}")
        out["write"]["rows_verified"] = len(targets)

        # profile: the client alone, and the client's share of the Spark tasks' time
        out["profile"] = {"client_read_rows_per_s_no_spark": _client_read_rate(bootstrap, src),
                          "first_task_import_s": round(_import_seconds(), 3)}
        try:
            with open(os.path.join(stats_dir, "reads.jsonl")) as f:
                recs = [json.loads(line) for line in f]
            out["profile"]["read_tasks"] = len(recs)
            out["profile"]["task_seconds_sum"] = round(sum(r["seconds"] for r in recs), 3)
        except OSError:
            pass
        conn.close()
        return out
    finally:
        if spark is not None:
            spark.stop()
        if server is not None:
            server.close()
        shutil.rmtree(work, ignore_errors=True)


def format_result(r: dict) -> str:
    lines = [f"Spark local[{r['cores']}], orders x {r['rows']:,} rows, {r['buckets']} buckets/partitions, "
             f"Fluss tables compressed with {r.get('compression', 'ZSTD (default)')}, "
             f"{r.get('warmup_rounds', 1)} warm-up + {len(r['write']['round_seconds']['fluss'])} timed rounds"]
    for kind in ("read", "write"):
        m = r[kind]
        lines.append(f"  batch {kind:5}  fluss {human_rate(m['fluss'], ' rows/s'):>14}   "
                     f"parquet {human_rate(m['parquet'], ' rows/s'):>14}   "
                     f"memory (Python ceiling) {human_rate(m['memory'], ' rows/s'):>14}   "
                     f"fluss/memory {m['fluss_vs_memory_best']:.0%} "
                     f"(median round {m['fluss_vs_memory_median_round']:.0%})")
        cpu = m.get("cpu_seconds_median") or {}
        if any(cpu.values()):
            lines.append("      CPU s per run: " + "; ".join(
                f"{name} " + " ".join(f"{k} {v:.2f}" for k, v in sorted(c.items())) + f" = {sum(c.values()):.2f}"
                for name, c in cpu.items()))
    p = r.get("profile", {})
    if p:
        lines.append(f"  profile: the client alone reads {human_rate(p['client_read_rows_per_s_no_spark'], ' rows/s')} "
                     f"(no Spark); Spark read tasks spent {p.get('task_seconds_sum', '?')} s in "
                     f"{p.get('read_tasks', '?')} Fluss partition reads (all runs); a Python worker's first "
                     f"Fluss task imports fluss_fast in {p.get('first_task_import_s', float('nan')):.2f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fluss-fast bench --spark", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="200k", help="orders rows (default 200k; accepts 10k, 1m)")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed rounds (each contender once per round; best kept, default 3)")
    p.add_argument("--warmup", type=int, default=2, help="untimed rounds before them (default 2)")
    p.add_argument("--buckets", type=int, default=2, help="buckets of the Fluss table = input partitions")
    p.add_argument("--cores", type=int, default=2, help="Spark local[N] (default 2)")
    p.add_argument("--bootstrap-servers", help="use this cluster instead of starting the embedded server")
    p.add_argument("--compression", choices=("ZSTD", "LZ4_FRAME", "NONE"), type=str.upper,
                   help="table.log.arrow.compression.type of the Fluss tables (default: the table default, ZSTD)")
    p.add_argument("--quick", action="store_true", help="20k rows, one timed run")
    p.add_argument("--json", help="write the results to this JSON file")
    opts = p.parse_args(argv)
    rows = ds.parse_rows("20k" if opts.quick else opts.rows)
    result = run(rows, 1 if opts.quick else opts.repeat, opts.buckets, opts.bootstrap_servers, opts.cores,
                 opts.compression, 1 if opts.quick else opts.warmup)
    print(format_result(result))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
