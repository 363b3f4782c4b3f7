"""One SparkSession (local[2]) for the whole Spark stage; its Python workers import this checkout."""
from __future__ import annotations

import os
import sys

import pyarrow as pa
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pyspark = pytest.importorskip("pyspark", reason="the Spark tests need the 'spark' extra (pyspark>=4.0)")

import fluss_fast as fluss  # noqa: E402
from fluss_fast import sync  # noqa: E402


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + path if path else "")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("fluss-fast-spark-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
               .config("spark.sql.streaming.stopTimeout", "30s")
               .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    import fluss_fast.spark

    fluss_fast.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def bootstrap(fluss_server):
    return fluss_server.bootstrap_servers


@pytest.fixture(scope="session")
def conn(bootstrap):
    c = sync.connect({"bootstrap.servers": bootstrap})
    yield c
    c.close()


@pytest.fixture(scope="session")
def database(conn):
    admin = conn.get_admin()
    admin.create_database("spark_db", ignore_if_exists=True)
    return "spark_db"


def create_table(conn, database, name, arrow_schema, *, primary_keys=None, partition_keys=None,
                 buckets=2, properties=None):
    admin = conn.get_admin()
    schema = fluss.Schema(arrow_schema, primary_keys=primary_keys)
    kwargs = {"bucket_count": buckets}
    if partition_keys:
        kwargs["partition_keys"] = partition_keys
    if properties:
        kwargs["properties"] = properties
    desc = fluss.TableDescriptor(schema, **kwargs)
    path = fluss.TablePath(database, name)
    admin.create_table(path, desc, ignore_if_exists=False)
    return f"{database}.{name}"


def append_arrow(conn, name, table: pa.Table):
    db, t = name.split(".")
    tbl = conn.get_table(fluss.TablePath(db, t))
    w = tbl.new_append().create_writer()
    w.write_arrow(table)
    w.flush()
    return tbl
