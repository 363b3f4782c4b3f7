"""Change streams through Spark: ``db.t$changelog`` / ``db.t$binlog`` (batch and streaming) and the
streaming read of a primary-key table, restarted from its checkpoint."""
from __future__ import annotations

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast.errors import FlussError

from conftest import append_arrow, create_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def _pk_table(conn, database, unique_name, buckets=1):
    name = create_table(conn, database, unique_name("chg"), SCHEMA, primary_keys=["id"], buckets=buckets)
    db, t = name.split(".")
    return name, conn.get_table(fluss.TablePath(db, t))


def _upsert(table, rows=(), deletes=()):
    w = table.new_upsert().create_writer()
    for i, n in rows:
        w.upsert({"id": i, "name": n})
    for i in deletes:
        w.delete({"id": i})
    w.flush()


def _read(spark, bootstrap, name):
    return spark.read.format("fluss").option("bootstrap.servers", bootstrap).load(name)


def _available_now(spark, bootstrap, name, sink, ckpt, **opts):
    r = spark.readStream.format("fluss").option("bootstrap.servers", bootstrap)
    for k, v in opts.items():
        r = r.option(k, v)
    q = (r.load(name).writeStream.format("parquet").option("path", sink).option("checkpointLocation", ckpt)
         .trigger(availableNow=True).start())
    assert q.awaitTermination(180), "the AvailableNow query did not finish"
    if q.exception() is not None:
        raise AssertionError(str(q.exception()))
    return q


def test_changelog_and_binlog_batch(spark, conn, database, bootstrap, unique_name):
    name, table = _pk_table(conn, database, unique_name)
    _upsert(table, [(1, "a"), (2, "b"), (3, "c")])
    _upsert(table, [(2, "B")], deletes=[3])

    log = _read(spark, bootstrap, name + "$changelog")
    assert log.columns == ["_change_type", "_log_offset", "_commit_timestamp", "id", "name"]
    assert dict((f.name, f.dataType.simpleString()) for f in log.schema.fields)["_commit_timestamp"] == "timestamp"
    got = sorted((r["_log_offset"], r["_change_type"], r.id, r.name) for r in log.collect())
    assert [g[1:] for g in got] == [("insert", 1, "a"), ("insert", 2, "b"), ("insert", 3, "c"),
                                    ("update_before", 2, "b"), ("update_after", 2, "B"),
                                    ("delete", 3, "c")]
    assert [g[0] for g in got] == list(range(6))

    binlog = _read(spark, bootstrap, name + "$binlog")
    assert binlog.columns == ["_change_type", "_log_offset", "_commit_timestamp", "before", "after"]
    rows = sorted(binlog.collect(), key=lambda r: r["_log_offset"])
    assert [(r["_change_type"], r["_log_offset"]) for r in rows] == [
        ("insert", 0), ("insert", 1), ("insert", 2), ("update", 4), ("delete", 5)]
    assert rows[3].before.name == "b" and rows[3].after.name == "B"
    assert rows[4].before.id == 3 and rows[4].after is None and rows[0].before is None

    # the table itself still reads as its current state
    assert sorted((r.id, r.name) for r in _read(spark, bootstrap, name).collect()) == [(1, "a"), (2, "B")]


def test_changelog_of_a_log_table_and_errors(spark, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("chg_log"), SCHEMA, buckets=2)
    append_arrow(conn, name, pa.table({"id": [1, 2, 3], "name": ["x", "y", "z"]}, schema=SCHEMA))
    got = _read(spark, bootstrap, name + "$changelog").collect()
    assert sorted((r["_change_type"], r.id) for r in got) == [("insert", 1), ("insert", 2), ("insert", 3)]
    # filters are not pushed into a virtual table: Spark applies them, also with pushdown on
    pushed = (spark.read.format("fluss").option("bootstrap.servers", bootstrap)
              .option("scan.filter-pushdown.enabled", "true").load(name + "$changelog").where("id > 1"))
    assert sorted(r.id for r in pushed.collect()) == [2, 3]

    with pytest.raises(Exception, match=r"\$binlog is only supported for primary-key tables"):
        _read(spark, bootstrap, name + "$binlog").collect()
    df = spark.createDataFrame(pa.table({"id": [9], "name": ["n"]}))
    with pytest.raises(Exception, match=r"Cannot write to virtual table"):
        df.write.format("fluss").option("bootstrap.servers", bootstrap).mode("append").save(name + "$changelog")
    with pytest.raises(FlussError, match="expected \\$changelog, \\$binlog or \\$lake"):
        from fluss_fast.spark import options
        options.parse({"path": name + "$snapshots", "bootstrap.servers": bootstrap})


def test_binlog_stream_split_between_update_halves(spark, conn, database, bootstrap, unique_name, tmp_path):
    """One offset per micro-batch cuts every -U/+U pair in two; each update still comes out once,
    whole, and a restart from the checkpoint continues without loss or duplicates."""
    name, table = _pk_table(conn, database, unique_name)
    _upsert(table, [(1, "a"), (2, "b")])
    _upsert(table, [(1, "A")])
    sink, ckpt = str(tmp_path / "sink"), str(tmp_path / "ckpt")
    _available_now(spark, bootstrap, name + "$binlog", sink, ckpt,
                   **{"scan.startup.mode": "earliest", "maxRecordsPerTrigger": "1"})
    _upsert(table, [(2, "B")], deletes=[1])
    _available_now(spark, bootstrap, name + "$binlog", sink, ckpt, maxRecordsPerTrigger="1")
    rows = sorted(spark.read.parquet(sink).collect(), key=lambda r: r["_log_offset"])
    assert [(r["_change_type"], r["_log_offset"]) for r in rows] == [
        ("insert", 0), ("insert", 1), ("update", 3), ("update", 5), ("delete", 6)]
    assert (rows[2].before.name, rows[2].after.name) == ("a", "A")
    assert (rows[3].before.name, rows[3].after.name) == ("b", "B")


def test_primary_key_stream_restarts_from_checkpoint(spark, conn, database, bootstrap, unique_name, tmp_path):
    name, table = _pk_table(conn, database, unique_name, buckets=2)
    _upsert(table, [(i, f"v{i}") for i in range(20)])
    _upsert(table, [(i, f"w{i}") for i in range(5)])
    state = sorted([(i, f"w{i}") for i in range(5)] + [(i, f"v{i}") for i in range(5, 20)])
    sink, ckpt = str(tmp_path / "sink"), str(tmp_path / "ckpt")
    # default startup mode 'full': the current state first, then the changelog from there on
    _available_now(spark, bootstrap, name, sink, ckpt, maxRecordsPerTrigger="2")
    first = sorted((r.id, r.name) for r in spark.read.parquet(sink).collect())
    assert first == state

    # changes made while the query is down; deletes are not part of the upsert stream
    _upsert(table, [(3, "x3"), (30, "v30")], deletes=[4])
    _upsert(table, [(31, "v31")])
    q = _available_now(spark, bootstrap, name, sink, ckpt, maxRecordsPerTrigger="2")
    assert len([p for p in q.recentProgress if p["numInputRows"] > 0]) >= 2  # several micro-batches
    got = sorted((r.id, r.name) for r in spark.read.parquet(sink).collect())
    assert got == sorted(first + [(3, "x3"), (30, "v30"), (31, "v31")])  # nothing lost, nothing twice
    assert spark.read.parquet(sink).columns == ["id", "name"]

    # 'earliest' replays the whole retained changelog instead: every value each key ever had
    sink2, ckpt2 = str(tmp_path / "sink2"), str(tmp_path / "ckpt2")
    _available_now(spark, bootstrap, name, sink2, ckpt2, **{"scan.startup.mode": "earliest"})
    history = sorted((r.id, r.name) for r in spark.read.parquet(sink2).collect())
    assert history == sorted([(i, f"v{i}") for i in range(20)] + [(i, f"w{i}") for i in range(5)]
                             + [(3, "x3"), (30, "v30"), (31, "v31")])


def test_partitioned_primary_key_stream_and_changelog(spark, conn, database, bootstrap, unique_name, tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("day", pa.string(), nullable=False),
                        ("name", pa.string())])
    name = create_table(conn, database, unique_name("chg_parts"), schema, primary_keys=["id", "day"],
                        partition_keys=["day"], buckets=1)
    db, t = name.split(".")
    path = fluss.TablePath(db, t)
    conn.get_admin().create_partition(path, {"day": "a"})
    table = conn.get_table(path)

    def upsert(rows):
        w = table.new_upsert().create_writer()
        for i, d, n in rows:
            w.upsert({"id": i, "day": d, "name": n})
        w.flush()

    upsert([(1, "a", "x"), (2, "a", "y")])
    upsert([(1, "a", "X")])
    sink, ckpt = str(tmp_path / "sink"), str(tmp_path / "ckpt")
    _available_now(spark, bootstrap, name, sink, ckpt)  # 'full': the snapshot of partition a
    assert sorted((r.id, r.day, r.name) for r in spark.read.parquet(sink).collect()) == [
        (1, "a", "X"), (2, "a", "y")]
    # a partition created while the query is down is read from its first offset
    conn.get_admin().create_partition(path, {"day": "b"})
    upsert([(3, "b", "z"), (2, "a", "Y")])
    _available_now(spark, bootstrap, name, sink, ckpt)
    assert sorted((r.id, r.day, r.name) for r in spark.read.parquet(sink).collect()) == [
        (1, "a", "X"), (2, "a", "Y"), (2, "a", "y"), (3, "b", "z")]

    kinds = [(r.day, r["_change_type"]) for r in _read(spark, bootstrap, name + "$changelog").collect()]
    assert sorted(kinds) == sorted([("a", "insert")] * 2 + [("a", "update_before"), ("a", "update_after")] * 2
                                   + [("b", "insert")])
