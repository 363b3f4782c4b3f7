"""Spark reuses its planner workers for every query of a session: a table dropped and re-created
under the same name between two queries must be planned against its new id and schema."""
from __future__ import annotations

import pyarrow as pa

import fluss_fast as fluss

from conftest import create_table


def _write(spark, bootstrap, name, rows, ddl):
    (spark.createDataFrame(rows, ddl).write.format("fluss").option("bootstrap.servers", bootstrap)
     .mode("append").save(name))


def _read(spark, bootstrap, name):
    return spark.read.format("fluss").option("bootstrap.servers", bootstrap).load(name)


def test_queries_after_drop_and_create_see_the_new_table(spark, conn, database, bootstrap, unique_name):
    table = unique_name("recreated")
    name = create_table(conn, database, table, pa.schema([("id", pa.int64()), ("note", pa.string())]))
    # each step twice, so that whichever reused planner worker takes the later queries has planned
    # against the first table
    for k in range(2):
        _write(spark, bootstrap, name, [(k, f"old{k}")], "id bigint, note string")
        assert _read(spark, bootstrap, name).count() == k + 1

    conn.get_admin().drop_table(fluss.TablePath(database, table), ignore_if_not_exists=False)
    create_table(conn, database, table, pa.schema([("id", pa.int64()), ("amount", pa.float64())]))
    for k in range(2):
        _write(spark, bootstrap, name, [(10 + k, 1.5 + k)], "id bigint, amount double")
    df = _read(spark, bootstrap, name)
    assert df.columns == ["id", "amount"]
    assert sorted(tuple(r) for r in df.collect()) == [(10, 1.5), (11, 2.5)]
