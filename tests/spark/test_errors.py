"""Clear errors: each names the option, table or column at fault."""
from __future__ import annotations

import pyarrow as pa
import pytest

from client_util import free_port
from conftest import append_arrow, create_table


def _fails(fn, *needles):
    with pytest.raises(Exception) as info:
        fn()
    text = str(info.value)
    for needle in needles:
        assert needle in text, f"{needle!r} not in the error: {text[:2000]}"


def test_bad_options(spark, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("bad_opts"), pa.schema([("id", pa.int64())]), buckets=1)
    def read():  # a DataFrameReader keeps every option set on it: a fresh one per case
        return spark.read.format("fluss").option("bootstrap.servers", bootstrap)

    _fails(lambda: read().option("scan.startup.mode", "sideways").load(name).schema,
           "scan.startup.mode", "sideways")
    _fails(lambda: read().option("bootstrap.server", "x").load(name).schema, "Unknown option 'bootstrap.server'")
    _fails(lambda: read().option("scan.maxRecordsPerPartition", "-3").load(name).collect(),
           "scan.maxRecordsPerPartition", "-3")
    _fails(lambda: read().option("scan.incremental.end.timestamp", "1000").load(name).collect(),
           "scan.incremental.end.timestamp", "scan.incremental.start.timestamp")
    _fails(lambda: read().option("writer.batch-size", "lots").load(name).schema, "writer.batch-size", "lots")
    _fails(lambda: spark.read.format("fluss").load(name).schema, "bootstrap.servers")


def test_missing_table_and_column(spark, conn, database, bootstrap, unique_name):
    read = spark.read.format("fluss").option("bootstrap.servers", bootstrap)
    missing = f"{database}.{unique_name('absent')}"
    _fails(lambda: read.load(missing).schema, missing, "does not exist")
    _fails(lambda: read.load("no_dot_here").schema, "no_dot_here", "database.table")
    name = create_table(conn, database, unique_name("cols"), pa.schema([("id", pa.int64())]), buckets=1)
    _fails(lambda: read.schema("id bigint, ghost string").load(name).collect(), "ghost", name)


def test_types_spark_cannot_hold(spark, conn, database, bootstrap, unique_name):
    # nanosecond timestamps: Spark keeps microseconds, so reading would change the values
    schema = pa.schema([("id", pa.int64()), ("nanos", pa.timestamp("ns"))])
    name = create_table(conn, database, unique_name("nanos"), schema, buckets=1)
    append_arrow(conn, name, pa.table({"id": [1], "nanos": pa.array([1], pa.timestamp("ns"))}))
    read = spark.read.format("fluss").option("bootstrap.servers", bootstrap)
    _fails(lambda: read.load(name).schema, "nanos", name, "microseconds")
    # leaving the column out reads the rest
    assert [r.id for r in read.schema("id bigint").load(name).collect()] == [1]
    # a DataFrame column Fluss cannot hold, and one of the wrong type
    target = create_table(conn, database, unique_name("typed"), pa.schema([("id", pa.int32()), ("s", pa.string())]),
                          buckets=1)
    df = spark.sql("select 1 as id, interval '1' day as s")
    _fails(lambda: df.write.format("fluss").option("bootstrap.servers", bootstrap).mode("append").save(target),
           "column 's'", target)
    df = spark.sql("select cast(1 as bigint) as id, 'x' as s")
    _fails(lambda: df.write.format("fluss").option("bootstrap.servers", bootstrap).mode("append").save(target),
           "column 'id'", "bigint")
    df = spark.sql("select 1 as id, 'x' as s, 2 as extra")
    _fails(lambda: df.write.format("fluss").option("bootstrap.servers", bootstrap).mode("append").save(target),
           "'extra'", target)


def test_overwrite_refused(spark, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("overwrite"), pa.schema([("id", pa.int32())]), buckets=1)
    df = spark.sql("select 1 as id")
    _fails(lambda: df.write.format("fluss").option("bootstrap.servers", bootstrap).mode("overwrite").save(name),
           "overwrite", name)


def test_server_down(spark, database):
    addr = f"127.0.0.1:{free_port()}"
    read = (spark.read.format("fluss").option("bootstrap.servers", addr).option("connect-timeout", "2000")
            .option("request-timeout", "2000"))
    _fails(lambda: read.load(f"{database}.anything").schema, "bootstrap.servers", addr)
