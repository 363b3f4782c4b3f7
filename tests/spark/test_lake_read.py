"""Spark batch reads of data-lake tables, partly tiered to Paimon and written to after: ``db.t$lake`` is
the lake snapshot, a plain read is the union of the lake and the log after it (as Java's Spark
connector reads a lake table once it has a lake snapshot), ``read.optimized`` the lake alone."""
from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import lake

pytest.importorskip("pypaimon", reason="the lake reads need pypaimon (the lake extra; CI's data lake stage)")

from fluss_fast.errors import FlussError  # noqa: E402
from fluss_fast.server.process import ServerProcess  # noqa: E402
from fluss_fast.spark import FlussDataSource, options  # noqa: E402
from fluss_fast.spark.lake import LakeBucket  # noqa: E402
from fluss_fast.spark.reader import FlussPushdownReader  # noqa: E402

LAKE_ON = {"table.datalake.enabled": "true", "table.datalake.freshness": "1h"}
DB = "spark_lake"
PUSHDOWN = "scan.filter-pushdown.enabled"


async def _prepare(bootstrap: str) -> dict:
    """A partitioned log table and a primary-key table, each tiered once and changed after; returns
    what each should read as."""
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    admin = conn.get_admin()
    await admin.create_database(DB, ignore_if_exists=True)
    out = {}
    # the log table: 30 rows tiered, 10 more in the log only
    path = fluss.TablePath(DB, "log")
    schema = fluss.Schema(pa.schema([("id", pa.int32()), ("day", pa.string()), ("v", pa.int64())]))
    await admin.create_table(path, fluss.TableDescriptor(schema, partition_keys=["day"], bucket_count=2,
                                                         properties=LAKE_ON))
    for day in ("d1", "d2"):
        await admin.create_partition(path, {"day": day})
    w = (await conn.get_table(path)).new_append().create_writer()
    rows = [{"id": i, "day": "d1" if i % 2 else "d2", "v": i} for i in range(40)]
    for r in rows[:30]:
        w.append(r)
    await w.flush()
    assert (await lake.tier_table(conn, path)).rows == 30
    for r in rows[30:]:
        w.append(r)
    await w.flush()
    out["log"] = rows
    out["log_lake"] = (await lake.lake_scan(conn, path).to_arrow()).to_pylist()
    # the primary-key table: 20 keys tiered, then updates (one moving a key out of v >= 10, one in),
    # a delete and an insert in the log only
    path = fluss.TablePath(DB, "pk")
    schema = fluss.Schema(pa.schema([("id", pa.int32()), ("name", pa.string()), ("v", pa.int64())]),
                          primary_keys=["id"])
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=2, properties=LAKE_ON))
    w = (await conn.get_table(path)).new_upsert().create_writer()
    state = {i: {"id": i, "name": f"n{i}", "v": i} for i in range(20)}
    for r in state.values():
        w.upsert(r)
    await w.flush()
    assert (await lake.tier_table(conn, path)).rows == 20
    out["pk_lake_state"] = [dict(r) for r in state.values()]
    changes = [{"id": 3, "name": "up", "v": 100}, {"id": 15, "name": "down", "v": 1},
               {"id": 20, "name": "new", "v": 20}]
    for r in changes:
        w.upsert(r)
        state[r["id"]] = r
    w.delete({"id": 4})
    del state[4]
    await w.flush()
    out["pk"] = list(state.values())
    # a data-lake table not tiered yet
    path = fluss.TablePath(DB, "fresh")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema([("id", pa.int32())])),
                                                         bucket_count=2, properties=LAKE_ON))
    w = (await conn.get_table(path)).new_append().create_writer()
    for i in range(5):
        w.append({"id": i})
    await w.flush()
    # a table without a lake
    path = fluss.TablePath(DB, "plain")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema([("id", pa.int32())])),
                                                         bucket_count=1))
    await conn.close()
    return out


@pytest.fixture(scope="module")
def lake_server(tmp_path_factory):
    # a server of its own (whatever server the other tests run against): it needs a Paimon warehouse
    warehouse = tmp_path_factory.mktemp("spark_lake") / "warehouse"
    srv = ServerProcess(settings={"datalake.format": "paimon", "datalake.paimon.warehouse": str(warehouse)}).start()
    want = asyncio.run(_prepare(srv.bootstrap_servers))
    yield srv.bootstrap_servers, want
    srv.stop()


def _rows(df, cols):
    return sorted(tuple(r[c] for c in cols) for r in df.collect())


def _want(rows, cols, keep=lambda r: True):
    return sorted(tuple(r[c] for c in cols) for r in rows if keep(r))


def _read(spark, bootstrap, **opts):
    reader = spark.read.format("fluss").option("bootstrap.servers", bootstrap)
    for k, v in opts.items():
        reader = reader.option(k, v)
    return reader


def test_log_table_lake_and_union(spark, lake_server):
    bootstrap, want = lake_server
    cols = ["id", "day", "v"]
    # $lake: the tiered 30 rows with their system columns, one Spark partition per (partition, bucket)
    df = _read(spark, bootstrap).load(f"{DB}.log$lake")
    assert df.columns == [*cols, "__bucket", "__offset", "__timestamp"]
    assert df.rdd.getNumPartitions() == 4
    sys_cols = [*cols, "__bucket", "__offset"]
    got = df.collect()
    assert sorted(tuple(r[c] for c in sys_cols) for r in got) == _want(want["log_lake"], sys_cols)
    assert _want(want["log_lake"], cols) == _want(want["log"][:30], cols)
    assert all(r["__timestamp"] is not None for r in got)
    # the plain read is the union: planned from the lake snapshot's offsets, equal to the whole log
    df = _read(spark, bootstrap).load(f"{DB}.log")
    assert _rows(df, cols) == _want(want["log"], cols)
    assert df.rdd.getNumPartitions() == 4
    src = FlussDataSource({"table": f"{DB}.log", "bootstrap.servers": bootstrap})
    reader = FlussPushdownReader(options.parse(src.options), src.schema())
    parts = reader.partitions()
    assert reader.lake == "union" and all(isinstance(p, LakeBucket) for p in parts)
    assert all(p.plan.snapshot_id is not None for p in parts) and sum(p.plan.start for p in parts) == 30
    # read.optimized: the lake alone, with the table's columns
    df = _read(spark, bootstrap, **{"read.optimized": "true"}).load(f"{DB}.log")
    assert df.columns == cols and _rows(df, cols) == _want(want["log"][:30], cols)


def test_log_table_projection_and_filters(spark, lake_server):
    bootstrap, want = lake_server
    # a user schema prunes the read (lake and log alike); pushed filters prune partitions and filter
    for table, rows in ((f"{DB}.log", want["log"]), (f"{DB}.log$lake", want["log"][:30])):
        df = (_read(spark, bootstrap, **{PUSHDOWN: "true"}).schema("v bigint, id int").load(table))
        assert df.columns == ["v", "id"]
        df = (_read(spark, bootstrap, **{PUSHDOWN: "true"}).load(table)
              .where("day = 'd1' AND v >= 10").select("v", "id"))
        assert df.rdd.getNumPartitions() == 2  # partition d2 pruned at planning
        assert _rows(df, ["v", "id"]) == _want(rows, ["v", "id"], lambda r: r["day"] == "d1" and r["v"] >= 10)
        pruned = _read(spark, bootstrap).schema("v bigint, id int").load(table)
        assert _rows(pruned, ["v", "id"]) == _want(rows, ["v", "id"])
    # the filters are claimed, so Spark does not filter again: the lake reads apply them exactly
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual

    src = FlussDataSource({"table": f"{DB}.log", "bootstrap.servers": bootstrap, PUSHDOWN: "true"})
    reader = FlussPushdownReader(options.parse(src.options), src.schema())
    assert list(reader.pushFilters([EqualTo(("day",), "d1"), GreaterThanOrEqual(("v",), 10)])) == []
    assert {p.plan.partition["day"] for p in reader.partitions()} == {"d1"}


def test_primary_key_table(spark, lake_server):
    bootstrap, want = lake_server
    cols = ["id", "name", "v"]
    # the union is the current state: updates and the delete after the snapshot applied
    df = _read(spark, bootstrap).load(f"{DB}.pk")
    assert _rows(df, cols) == _want(want["pk"], cols)
    assert df.rdd.getNumPartitions() == 2
    # $lake and read.optimized: the state as of the snapshot
    lake_df = _read(spark, bootstrap).load(f"{DB}.pk$lake")
    assert _rows(lake_df, cols) == _want(want["pk_lake_state"], cols)
    ro = _read(spark, bootstrap, **{"read.optimized": "true"}).load(f"{DB}.pk")
    assert _rows(ro, cols) == _want(want["pk_lake_state"], cols)
    # a filter on a value column applies after the merge: id 15 moved out of it, id 3 into v >= 100
    df = _read(spark, bootstrap, **{PUSHDOWN: "true"}).load(f"{DB}.pk").where("v >= 10").select("id", "v")
    assert _rows(df, ["id", "v"]) == _want(want["pk"], ["id", "v"], lambda r: r["v"] >= 10)
    df = _read(spark, bootstrap).schema("v bigint, name string").load(f"{DB}.pk")
    assert _rows(df, ["v", "name"]) == _want(want["pk"], ["v", "name"])


def test_before_the_first_tiering_round(spark, lake_server):
    bootstrap, _ = lake_server
    # no lake snapshot yet: the plain read is the Fluss read, the lake snapshot is empty
    assert _rows(_read(spark, bootstrap).load(f"{DB}.fresh"), ["id"]) == [(i,) for i in range(5)]
    assert _read(spark, bootstrap).load(f"{DB}.fresh$lake").count() == 0
    assert _read(spark, bootstrap, **{"read.optimized": "true"}).load(f"{DB}.fresh").count() == 0
    src = FlussDataSource({"table": f"{DB}.fresh", "bootstrap.servers": bootstrap})
    assert FlussPushdownReader(options.parse(src.options), src.schema()).lake is None


def test_errors(spark, lake_server):
    bootstrap, _ = lake_server
    with pytest.raises(Exception, match="not a data-lake table"):
        _read(spark, bootstrap).load(f"{DB}.plain$lake").collect()
    with pytest.raises(Exception, match="read.optimized"):
        _read(spark, bootstrap, **{"read.optimized": "true"}).load(f"{DB}.plain").collect()
    # a table without a lake is read from Fluss as before
    assert _read(spark, bootstrap).load(f"{DB}.plain").count() == 0
    with pytest.raises(Exception, match="batch reads"):
        (spark.readStream.format("fluss").option("bootstrap.servers", bootstrap).load(f"{DB}.log$lake")
         .writeStream.format("noop").start().awaitTermination(30))
    with pytest.raises(FlussError, match="read.optimized"):
        options.parse({"table": f"{DB}.log", "bootstrap.servers": bootstrap, "read.optimized": "true",
                       "scan.incremental.start.timestamp": "0"})
