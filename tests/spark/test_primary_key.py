"""Primary-key tables through Spark: batch upserts, current-state reads, the pipeline example."""
from __future__ import annotations

import decimal
import importlib.util
import os

import pyarrow as pa

from conftest import ROOT, create_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                    ("score", pa.decimal128(10, 2))])


def test_batch_upsert_then_read_current_state(spark, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("pk"), SCHEMA, primary_keys=["id"], buckets=2)
    def write(df):
        df.write.format("fluss").option("bootstrap.servers", bootstrap).mode("append").save(name)

    write(spark.createDataFrame(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"],
                                          "score": pa.array([decimal.Decimal("1.00")] * 3, pa.decimal128(10, 2))})))
    write(spark.createDataFrame(pa.table({"id": [2, 4], "name": ["B", "d"],
                                          "score": pa.array([decimal.Decimal("2.50"), None], pa.decimal128(10, 2))})))
    got = spark.read.format("fluss").option("bootstrap.servers", bootstrap).load(name).collect()
    assert sorted((r.id, r.name, r.score) for r in got) == [
        (1, "a", decimal.Decimal("1.00")), (2, "B", decimal.Decimal("2.50")), (3, "c", decimal.Decimal("1.00")),
        (4, "d", None)]


def test_pipeline_example(spark, tmp_path, bootstrap):
    spec = importlib.util.spec_from_file_location("spark_pipeline", os.path.join(ROOT, "examples", "spark_pipeline.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.run(spark, bootstrap, 5000, str(tmp_path))
    assert result["orders"] == 5000 and result["customers"] > 100
