"""Batch reads: splits, snapshot end offsets, column pruning, filter pushdown measured in records
fetched from the server, incremental (time-range) reads."""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

import fluss_fast as fluss

from conftest import append_arrow, create_table

PUSHDOWN = "scan.filter-pushdown.enabled"
SCHEMA = pa.schema([("id", pa.int64()), ("cust", pa.string()), ("amount", pa.float64()), ("day", pa.string())])


def _stats(path):
    with open(os.path.join(path, "reads.jsonl")) as f:
        return [json.loads(line) for line in f]


def _read(spark, bootstrap, name, **opts):
    r = spark.read.format("fluss").option("bootstrap.servers", bootstrap)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load(name)


def test_partition_pruning_and_predicates_cut_what_is_fetched(spark, conn, database, bootstrap, unique_name, tmp_path):
    name = create_table(conn, database, unique_name("pushdown"), SCHEMA, partition_keys=["day"], buckets=2)
    admin = conn.get_admin()
    db, t = name.split(".")
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        admin.create_partition(fluss.TablePath(db, t), {"day": day})
    n = 3000
    data = pa.table({"id": list(range(n)), "cust": [f"c{i % 10}" for i in range(n)],
                     "amount": [float(i) for i in range(n)],
                     "day": [("2024-01-01", "2024-01-02", "2024-01-03")[i % 3] for i in range(n)]})
    # small batches, so the server can skip whole batches by their statistics
    tbl = conn.get_table(fluss.TablePath(db, t))
    w = tbl.new_append().create_writer()
    for k in range(0, n, 100):
        w.write_arrow(data.slice(k, 100))
        w.flush()

    full_dir, pushed_dir = str(tmp_path / "full"), str(tmp_path / "pushed")
    everything = _read(spark, bootstrap, name, **{"scan.stats.dir": full_dir, PUSHDOWN: "true"}).count()
    assert everything == n
    fetched_all = sum(s["records_fetched"] for s in _stats(full_dir))
    assert fetched_all == n

    df = _read(spark, bootstrap, name, **{"scan.stats.dir": pushed_dir, PUSHDOWN: "true"}) \
        .where("day = '2024-01-02' AND id >= 2700")
    got = sorted(r.id for r in df.collect())
    assert got == [i for i in range(2700, n) if i % 3 == 1]
    stats = _stats(pushed_dir)
    # the pruned partitions are never planned: only one partition's records leave the server
    assert len({s["partition_id"] for s in stats}) == 1
    assert sum(s["records_fetched"] for s in stats) == n // 3
    # the predicate runs in the scanner (and lets a server that keeps batch statistics skip
    # batches): Spark receives the matching rows only
    assert sum(s["rows"] for s in stats) == len(got)

    # pushdown off (the default): same answer, everything fetched
    off_dir = str(tmp_path / "off")
    df = _read(spark, bootstrap, name, **{"scan.stats.dir": off_dir}) \
        .where("day = '2024-01-02' AND id >= 2700")
    assert sorted(r.id for r in df.collect()) == got
    off = _stats(off_dir)
    assert sum(s["records_fetched"] for s in off) == n
    assert sum(s["rows"] for s in off) == n


def test_splits_snapshot_and_column_pruning(spark, conn, database, bootstrap, unique_name, tmp_path):
    name = create_table(conn, database, unique_name("splits"), SCHEMA, buckets=2)
    n = 1000
    append_arrow(conn, name, pa.table({"id": list(range(n)), "cust": ["c"] * n, "amount": [1.0] * n,
                                       "day": ["d"] * n}))
    df = _read(spark, bootstrap, name, **{"scan.maxRecordsPerPartition": "100"})
    # one input partition per 100 offsets of each bucket
    assert df.rdd.getNumPartitions() >= n // 100
    assert df.count() == n
    # the planned end offsets hold: rows appended after planning are not read by that DataFrame's plan
    pruned = spark.read.format("fluss").schema("amount double, id bigint") \
        .option("bootstrap.servers", bootstrap).load(name)
    assert pruned.columns == ["amount", "id"]
    assert pruned.agg({"id": "sum"}).collect()[0][0] == sum(range(n))


def test_incremental_time_range(spark, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("incremental"), SCHEMA, buckets=1)
    first = pa.table({"id": [1, 2], "cust": ["a", "b"], "amount": [1.0, 2.0], "day": ["d", "d"]})
    append_arrow(conn, name, first)
    time.sleep(0.05)
    start = int(time.time() * 1000)
    time.sleep(0.05)
    append_arrow(conn, name, pa.table({"id": [3], "cust": ["c"], "amount": [3.0], "day": ["d"]}))
    time.sleep(0.05)
    end = int(time.time() * 1000)
    time.sleep(0.05)
    append_arrow(conn, name, pa.table({"id": [4], "cust": ["d"], "amount": [4.0], "day": ["d"]}))
    df = _read(spark, bootstrap, name, **{"scan.incremental.start.timestamp": str(start),
                                          "scan.incremental.end.timestamp": str(end)})
    assert [r.id for r in df.collect()] == [3]
    df = _read(spark, bootstrap, name, **{"scan.incremental.start.timestamp": str(start)})
    assert sorted(r.id for r in df.collect()) == [3, 4]


def test_sasl_credentials_as_options(spark, conn, database, fluss_server, unique_name):
    name = create_table(conn, database, unique_name("sasl"), SCHEMA, buckets=1)
    append_arrow(conn, name, pa.table({"id": [1, 2], "cust": ["a", "b"], "amount": [1.0, 2.0], "day": ["d", "d"]}))

    def read(password):
        # the Java client's 'client.' prefix is accepted too
        return (spark.read.format("fluss").option("bootstrap.servers", fluss_server.sasl_bootstrap_servers)
                .option("client.security.protocol", "sasl").option("security.sasl.username", "alice")
                .option("security.sasl.password", password).load(name))

    assert sorted(r.id for r in read("alice-pw").collect()) == [1, 2]
    with pytest.raises(Exception, match="alice"):
        read("wrong").collect()


FILTERS = [
    "s = 'a'", "s <> 'a'", "s not in ('a', 'b')", "s is null", "not (s <=> 'a')", "s like '%b%'",
    "d >= date'2024-01-10'", "ts < timestamp_ntz'2024-01-05 00:00:00'",
    "tsl > timestamp'2024-01-03 00:00:00'", "dec between 1.00 and 5.50", "not b", "x > 3.5",
    "id % 2 = 1 and s = 'b'",
]


def test_pushed_filters_give_sparks_answers(spark, conn, database, bootstrap, unique_name):
    import datetime as dt
    import decimal

    n = 40
    letters = ["a", "b", None, "zz", "abz"]
    data = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": [letters[i % 5] for i in range(n)],
        "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 20) for i in range(n)],
        "ts": [dt.datetime(2024, 1, 1) + dt.timedelta(hours=7 * i) for i in range(n)],
        "tsl": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=5 * i)
                         for i in range(n)], pa.timestamp("us", tz="UTC")),
        "dec": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
        "b": [None if i % 7 == 0 else i % 2 == 0 for i in range(n)],
        "x": [None if i % 6 == 0 else i / 4 for i in range(n)],
        "f": pa.array([i / 8 for i in range(n)], pa.float32()),
    })
    name = create_table(conn, database, unique_name("filters"), data.schema, buckets=2)
    append_arrow(conn, name, data)
    local_df = spark.createDataFrame(data)
    for f in FILTERS:
        # a DataFrame per query with pushdown on (Spark may reuse a DataFrame's pushed reader)
        got = sorted(r.id for r in _read(spark, bootstrap, name, **{PUSHDOWN: "true"}).where(f).select("id").collect())
        want = sorted(r.id for r in local_df.where(f).select("id").collect())
        assert got == want, f
    # without pushdown (the default) one DataFrame serves every query, filtered or not
    plain = _read(spark, bootstrap, name)
    for f in ("s = 'b'", "s = 'a' or id > 30", "true"):
        got = sorted(r.id for r in plain.where(f).select("id").collect())
        assert got == sorted(r.id for r in local_df.where(f).select("id").collect()), f


def test_reads_rows_written_before_an_added_column(spark, conn, database, bootstrap, unique_name):
    # the source reads the latest schema; rows of the older schema id come with the new column null
    from fluss_fast.client.admin_types import TableChange

    name = create_table(conn, database, unique_name("altered"), SCHEMA, buckets=2)
    old = pa.table({"id": [1, 2], "cust": ["a", "b"], "amount": [1.0, 2.0], "day": ["d", "d"]}, schema=SCHEMA)
    append_arrow(conn, name, old)
    db, t = name.split(".")
    conn.get_admin().alter_table(fluss.TablePath(db, t), [TableChange.add_column("note", pa.string())])
    new = pa.table({"id": [3], "cust": ["c"], "amount": [3.0], "day": ["d"], "note": ["x"]},
                   schema=SCHEMA.append(pa.field("note", pa.string())))
    append_arrow(conn, name, new)
    rows = sorted((r.id, r.note) for r in _read(spark, bootstrap, name).select("id", "note").collect())
    assert rows == [(1, None), (2, None), (3, "x")]
    assert sorted(r.id for r in _read(spark, bootstrap, name).where("note IS NULL").collect()) == [1, 2]
