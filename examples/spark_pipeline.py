"""An end-to-end PySpark pipeline on Fluss, Arrow all the way:

  bench orders --(Spark batch write)--> Fluss log table db.orders
  db.orders --(Spark streaming: total and count per customer)--> Fluss primary-key table db.customer_totals
  then point lookups and a Spark batch read of db.customer_totals are checked against pandas.

    python examples/spark_pipeline.py --bootstrap-servers 127.0.0.1:9123 [--rows 20000]
    python examples/spark_pipeline.py --embedded        # starts a local fluss-fast server itself

Needs ``pip install 'fluss-fast[spark]'`` and Java 17.
"""
from __future__ import annotations

import argparse
import contextlib
import decimal
import os
import shutil
import sys
import tempfile
import time
import uuid

import pyarrow as pa

import fluss_fast as fluss
from fluss_fast import sync
from fluss_fast.bench import datasets
from fluss_fast.server import ServerProcess


def create_tables(conn, database: str, orders: str, totals: str) -> None:
    admin = conn.get_admin()
    admin.create_database(database, ignore_if_exists=True)
    admin.create_table(fluss.TablePath(database, orders),
                       fluss.TableDescriptor(fluss.Schema(datasets.ORDERS_SCHEMA), bucket_count=4))
    totals_schema = pa.schema([pa.field("user_id", pa.int64(), nullable=False),
                               pa.field("orders", pa.int64()),
                               pa.field("total", pa.decimal128(22, 2))])
    admin.create_table(fluss.TablePath(database, totals),
                       fluss.TableDescriptor(fluss.Schema(totals_schema, primary_keys=["user_id"]),
                                             bucket_count=2))


def run(spark, bootstrap: str, rows: int, work_dir: str, database: str = "pipeline") -> dict:
    """Runs the pipeline; returns what it checked. Raises AssertionError on any mismatch."""
    from pyspark.sql import functions as F

    import fluss_fast.spark

    fluss_fast.spark.register(spark)
    suffix = uuid.uuid4().hex[:8]
    orders, totals = f"orders_{suffix}", f"customer_totals_{suffix}"
    conn = sync.connect({"bootstrap.servers": bootstrap})
    try:
        create_tables(conn, database, orders, totals)
        data = datasets.load("orders", rows)

        # 1. batch write: the orders go through Spark (built from Arrow, types kept exactly) into the
        # Fluss log table
        (spark.createDataFrame(data).write.format("fluss")
         .option("bootstrap.servers", bootstrap).mode("append").save(f"{database}.{orders}"))

        # 2. streaming aggregate per customer, upserted into the primary-key table (Python sinks
        # take 'append' or 'complete'; a complete result upserted by key is the current state)
        stream = (spark.readStream.format("fluss").option("bootstrap.servers", bootstrap)
                  .option("scan.startup.mode", "earliest").load(f"{database}.{orders}"))
        per_customer = stream.groupBy("user_id").agg(F.count("*").alias("orders"),
                                                     F.sum("amount").cast("decimal(22,2)").alias("total"))
        query = (per_customer.writeStream.format("fluss").option("bootstrap.servers", bootstrap)
                 .option("checkpointLocation", os.path.join(work_dir, "checkpoint"))
                 .outputMode("complete").trigger(availableNow=True).start(f"{database}.{totals}"))
        if not query.awaitTermination(600):
            query.stop()
            raise AssertionError("the streaming aggregate did not finish in time")
        if query.exception() is not None:
            raise AssertionError(f"the streaming aggregate failed: {query.exception()}")

        # 3. the reference: the same aggregate in pandas
        frame = data.select(["user_id", "amount"]).to_pandas()
        expected = frame.groupby("user_id").agg(orders=("amount", "size"), total=("amount", "sum"))

        # 4a. point lookups by primary key
        table = conn.get_table(fluss.TablePath(database, totals))
        lookuper = table.new_lookup().create_lookuper()
        sample = list(expected.index[:50]) + [-1]
        for user in sample:
            row = lookuper.lookup({"user_id": int(user)})
            if user == -1:
                assert row is None, f"unexpected row for an unknown customer: {row}"
                continue
            assert row is not None, f"customer {user} missing from {totals}"
            want = expected.loc[user]
            assert row["orders"] == int(want["orders"]), (user, row, want)
            assert decimal.Decimal(row["total"]) == decimal.Decimal(want["total"]), (user, row, want)

        # 4b. a Spark batch read of the primary-key table's current state
        got = (spark.read.format("fluss").option("bootstrap.servers", bootstrap)
               .load(f"{database}.{totals}").toPandas().set_index("user_id").sort_index())
        assert len(got) == len(expected), (len(got), len(expected))
        assert (got["orders"].astype("int64") == expected["orders"].astype("int64")).all()
        assert (got["total"].map(decimal.Decimal) == expected["total"].map(decimal.Decimal)).all()
        return {"orders": rows, "customers": len(expected), "lookups": len(sample)}
    finally:
        conn.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-servers", help="host:port of a Fluss coordinator")
    p.add_argument("--embedded", action="store_true", help="start a local fluss-fast server for the run")
    p.add_argument("--rows", type=int, default=20_000)
    args = p.parse_args(argv)
    if not args.bootstrap_servers and not args.embedded:
        p.error("give --bootstrap-servers or --embedded")
    from pyspark.sql import SparkSession

    with contextlib.ExitStack() as stack:
        work = tempfile.mkdtemp(prefix="fluss-spark-pipeline-")
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        bootstrap = args.bootstrap_servers
        if args.embedded:
            bootstrap = stack.enter_context(ServerProcess()).bootstrap_servers
        spark = (SparkSession.builder.master("local[2]").appName("fluss-pipeline")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
                 .getOrCreate())
        began = time.perf_counter()
        result = run(spark, bootstrap, args.rows, work)
        print(f"pipeline ok in {time.perf_counter() - began:.1f} s: {result}")
        spark.stop()
    return 0

if __name__ == "__main__":
    sys.exit(main())
