"""The pipeline's log-table half (runs without primary-key support): bench orders written by Spark
from Arrow, streamed into a second log table in admission-controlled micro-batches, aggregated per
customer by a batch read; the totals match pandas."""
from __future__ import annotations

import decimal

import pytest

from fluss_fast.bench import datasets

from conftest import create_table


def test_orders_through_batch_and_stream(spark, conn, database, bootstrap, unique_name, tmp_path):
    from pyspark.sql import functions as F

    orders = create_table(conn, database, unique_name("orders"), datasets.ORDERS_SCHEMA, buckets=2)
    copy = create_table(conn, database, unique_name("orders_copy"), datasets.ORDERS_SCHEMA, buckets=3)
    data = datasets.load("orders", 3000)
    spark.createDataFrame(data).write.format("fluss").option("bootstrap.servers", bootstrap) \
        .mode("append").save(orders)
    stream = spark.readStream.format("fluss").option("bootstrap.servers", bootstrap) \
        .option("scan.startup.mode", "earliest").option("maxRecordsPerTrigger", "1000").load(orders)
    q = (stream.writeStream.format("fluss").option("bootstrap.servers", bootstrap)
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start(copy))
    assert q.awaitTermination(240)
    assert q.exception() is None
    got = (spark.read.format("fluss").option("bootstrap.servers", bootstrap).load(copy)
           .groupBy("user_id").agg(F.count("*").alias("orders"), F.sum("amount").alias("total"))
           .toPandas().set_index("user_id").sort_index())
    frame = data.select(["user_id", "amount"]).to_pandas()
    expected = frame.groupby("user_id").agg(orders=("amount", "size"), total=("amount", "sum"))
    assert len(got) == len(expected)
    assert (got["orders"].astype("int64") == expected["orders"].astype("int64")).all()
    assert (got["total"].map(decimal.Decimal) == expected["total"].map(decimal.Decimal)).all()
    # an aggregate's complete output has no meaning as appended rows: refused for a log table
    agg = stream.groupBy("user_id").count()
    with pytest.raises(Exception, match="complete"):
        q = (agg.writeStream.format("fluss").option("bootstrap.servers", bootstrap)
             .option("checkpointLocation", str(tmp_path / "ckpt2")).outputMode("complete")
             .trigger(availableNow=True).start(copy))
        q.awaitTermination(120)
        if q.exception() is not None:
            raise AssertionError(str(q.exception()))
