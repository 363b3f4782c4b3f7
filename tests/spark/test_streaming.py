"""Streaming reads and writes: checkpoints resume exactly, AvailableNow, admission control, new
partitions, startup modes, the streaming sink."""
from __future__ import annotations

import json
import os

import pyarrow as pa

import fluss_fast as fluss

from conftest import append_arrow, create_table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _rows(lo, hi):
    return pa.table({"id": list(range(lo, hi)), "v": [f"v{i}" for i in range(lo, hi)]})


def _stream(spark, bootstrap, name, **opts):
    r = spark.readStream.format("fluss").option("bootstrap.servers", bootstrap)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load(name)


def _run_available_now(df, sink_dir, checkpoint, timeout=120):
    q = (df.writeStream.format("parquet").option("path", sink_dir).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    assert q.awaitTermination(timeout), "the AvailableNow query did not finish"
    if q.exception() is not None:
        raise AssertionError(str(q.exception()))
    return q


def test_restart_from_checkpoint_no_loss_no_duplicates(spark, conn, database, bootstrap, unique_name, tmp_path):
    name = create_table(conn, database, unique_name("stream"), SCHEMA, buckets=2)
    append_arrow(conn, name, _rows(0, 300))
    sink, ckpt = str(tmp_path / "sink"), str(tmp_path / "ckpt")
    df = _stream(spark, bootstrap, name, **{"scan.startup.mode": "earliest", "maxRecordsPerTrigger": "100"})
    q = _run_available_now(df, sink, ckpt)
    # admission control: 300 records in micro-batches of at most 100
    batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert len(batches) >= 3 and all(p["numInputRows"] <= 100 for p in batches)
    # the offsets in the checkpoint have the Scala connector's shape
    offsets_dir = os.path.join(ckpt, "offsets")
    last = max((f for f in os.listdir(offsets_dir) if f.isdigit()), key=int)
    with open(os.path.join(offsets_dir, last)) as f:
        offset = json.loads(f.read().strip().splitlines()[-1])
    assert offset["version"] == 1 and sum(offset["bucket_offsets"]) == 300

    # more data arrives while the query is down; the restarted query continues from the checkpoint
    append_arrow(conn, name, _rows(300, 450))
    _run_available_now(_stream(spark, bootstrap, name), sink, ckpt)
    ids = [r.id for r in spark.read.parquet(sink).collect()]
    assert sorted(ids) == list(range(450))  # nothing lost, nothing twice


def test_startup_latest_and_new_partitions(spark, conn, database, bootstrap, unique_name, tmp_path):
    schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
    name = create_table(conn, database, unique_name("stream_parts"), schema, partition_keys=["day"], buckets=1)
    db, t = name.split(".")
    admin = conn.get_admin()
    admin.create_partition(fluss.TablePath(db, t), {"day": "a"})
    append_arrow(conn, name, pa.table({"id": [1, 2], "day": ["a", "a"]}))
    sink, ckpt = str(tmp_path / "sink"), str(tmp_path / "ckpt")
    # 'latest' skips what is already there
    _run_available_now(_stream(spark, bootstrap, name, **{"scan.startup.mode": "latest"}), sink, ckpt)
    # a partition created after the query started is picked up from its first offset
    admin.create_partition(fluss.TablePath(db, t), {"day": "b"})
    append_arrow(conn, name, pa.table({"id": [3, 4, 5], "day": ["a", "b", "b"]}))
    _run_available_now(_stream(spark, bootstrap, name), sink, ckpt)
    assert sorted(r.id for r in spark.read.parquet(sink).collect()) == [3, 4, 5]


def test_stream_write_appends_each_micro_batch(spark, conn, database, bootstrap, unique_name, tmp_path):
    src = create_table(conn, database, unique_name("stream_src"), SCHEMA, buckets=2)
    dst = create_table(conn, database, unique_name("stream_dst"), SCHEMA, buckets=1)
    append_arrow(conn, src, _rows(0, 50))
    df = _stream(spark, bootstrap, src, **{"scan.startup.mode": "earliest"})
    q = (df.writeStream.format("fluss").option("bootstrap.servers", bootstrap)
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start(dst))
    assert q.awaitTermination(120)
    assert q.exception() is None
    got = spark.read.format("fluss").option("bootstrap.servers", bootstrap).load(dst)
    assert sorted(r.id for r in got.collect()) == list(range(50))


def test_startup_timestamp(spark, conn, database, bootstrap, unique_name, tmp_path):
    import time

    name = create_table(conn, database, unique_name("stream_ts"), SCHEMA, buckets=2)
    append_arrow(conn, name, _rows(0, 10))
    time.sleep(0.05)
    since = int(time.time() * 1000)
    time.sleep(0.05)
    append_arrow(conn, name, _rows(10, 15))
    sink, ckpt = str(tmp_path / "sink"), str(tmp_path / "ckpt")
    _run_available_now(_stream(spark, bootstrap, name, **{"scan.startup.mode": "timestamp",
                                                         "scan.startup.timestamp": str(since)}), sink, ckpt)
    assert sorted(r.id for r in spark.read.parquet(sink).collect()) == list(range(10, 15))
