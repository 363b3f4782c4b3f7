"""One local Ray cluster (2 CPUs) for the Ray stage; its workers import this checkout."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ray = pytest.importorskip("ray", reason="the Ray tests need the 'ray' extra (ray[data])")

import fluss_fast as fluss  # noqa: E402
from fluss_fast import sync  # noqa: E402
from fluss_fast.engine import connections  # noqa: E402


def pytest_collection_modifyitems(config, items):
    # Ray Data warns about its own deprecated settings while it sets itself up (DataContext), and
    # older Rays about their future defaults in ray.init; warnings from anywhere else stay errors
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"))
            item.add_marker(pytest.mark.filterwarnings("ignore::FutureWarning:ray"))


@pytest.fixture(scope="session")
def ray_cluster():
    # workers are separate processes: they find fluss_fast on the path the driver uses
    env = {"env_vars": {"PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env=env,
             configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def bootstrap(fluss_server):
    yield fluss_server.bootstrap_servers
    # planning runs in this process, through the per-process connection cache
    connections.forget((("bootstrap.servers", fluss_server.bootstrap_servers),))


@pytest.fixture(scope="session")
def conn(bootstrap):
    c = sync.connect({"bootstrap.servers": bootstrap})
    yield c
    c.close()


@pytest.fixture(scope="session")
def database(conn):
    conn.get_admin().create_database("ray_db", ignore_if_exists=True)
    return "ray_db"


def create_table(conn, database, name, arrow_schema, *, primary_keys=None, partition_keys=None, buckets=2):
    kwargs = {"bucket_count": buckets}
    if partition_keys:
        kwargs["partition_keys"] = partition_keys
    desc = fluss.TableDescriptor(fluss.Schema(arrow_schema, primary_keys=primary_keys), **kwargs)
    conn.get_admin().create_table(fluss.TablePath(database, name), desc, ignore_if_exists=False)
    return f"{database}.{name}"


def table_of(conn, name):
    db, t = name.split(".")
    return conn.get_table(fluss.TablePath(db, t))


def append(conn, name, data: pa.Table):
    w = table_of(conn, name).new_append().create_writer()
    w.write_arrow(data)
    w.flush()


def upsert(conn, name, data: pa.Table):
    w = table_of(conn, name).new_upsert().create_writer()
    w.upsert_arrow(data)
    w.flush()


def rows(ds, key="id"):
    """The dataset's rows as dicts, sorted by ``key`` (read tasks finish in any order)."""
    return sorted(ds.take_all(), key=lambda r: r[key])
