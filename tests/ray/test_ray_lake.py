"""The lake union read through Ray: a data-lake table partly tiered to Paimon, read one task per
bucket, equals the table's log (log tables) or current state (primary-key tables)."""
from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import lake
from fluss_fast.error_codes import Errors
from fluss_fast.errors import FlussError

from lake_util import partly_tiered_partitioned

pytest.importorskip("pypaimon", reason="the lake union read needs pypaimon (the lake extra)")

from fluss_fast.ray import FlussLakeDatasource, read_fluss_lake  # noqa: E402

LAKE_ON = {"table.datalake.enabled": "true", "table.datalake.freshness": "1h"}


@pytest.fixture
def lake_bootstrap(start_server, tmp_path):
    srv = start_server(sasl=False, extra_args=["-c", "datalake.format=paimon",
                                               "-c", f"datalake.paimon.warehouse={tmp_path / 'warehouse'}"])
    return srv.bootstrap_servers


async def _prepare(bootstrap: str, pk: bool) -> list[dict]:
    """A partitioned table, tiered part way and written to after; returns what a full read gives."""
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    path = fluss.TablePath("ray_lake", "pk" if pk else "log")
    await partly_tiered_partitioned(conn, path, pk=pk, buckets=2, rows=30, updated=range(0, 30, 3), bump=100,
                                    deleted=1, properties=LAKE_ON)
    want = (await lake.union_scan(conn, path).to_arrow()).to_pylist()
    await conn.close()
    return want


def _key(r):
    return (r["id"], r["day"], r["v"])


def test_union_read_one_task_per_bucket(ray_cluster, lake_bootstrap):
    for pk in (False, True):
        want = asyncio.run(_prepare(lake_bootstrap, pk))
        assert len(want) == (29 if pk else 40)
        name = "ray_lake.pk" if pk else "ray_lake.log"
        source = FlussLakeDatasource(lake_bootstrap, name)
        assert len(source.planned) == 2 * 2 and len(source.get_read_tasks(8)) == 4
        assert all(p.snapshot_id is not None for p in source.planned)
        got = read_fluss_lake(lake_bootstrap, name).take_all()
        assert sorted(got, key=_key) == sorted(want, key=_key)
        some = read_fluss_lake(lake_bootstrap, name, columns=["v", "id"], filter=fluss.col("v") >= 100).take_all()
        assert sorted((r["v"], r["id"]) for r in some) == sorted((r["v"], r["id"]) for r in want if r["v"] >= 100)

    # a table without a lake, and a bad column, are refused on the driver
    async def make():
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": lake_bootstrap}))
        await conn.get_admin().create_database("ray_lake", ignore_if_exists=True)
        schema = fluss.Schema(pa.schema([("id", pa.int64())]))
        await conn.get_admin().create_table(fluss.TablePath("ray_lake", "plain"), fluss.TableDescriptor(schema),
                                            ignore_if_exists=True)
        await conn.close()

    asyncio.run(make())
    with pytest.raises(FlussError) as e:
        FlussLakeDatasource(lake_bootstrap, "ray_lake.plain")
    assert e.value.error_code == Errors.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION
    assert "ray_lake.plain" in str(e.value)
    with pytest.raises(FlussError) as e:
        FlussLakeDatasource(lake_bootstrap, "ray_lake.log", columns=["nope"])
    assert "nope" in str(e.value)
