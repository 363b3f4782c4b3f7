"""``fluss-fast server -c datalake.format=paimon`` tiers data-lake tables by itself, and its lake
snapshots survive a restart."""
from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import lake
from fluss_fast.error_codes import Errors
from fluss_fast.errors import FlussError


async def _connect(srv):
    return await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": srv.bootstrap_servers}))


async def _tiered_rows(admin, path) -> int:
    try:
        snap = await admin.get_latest_lake_snapshot(path)
    except FlussError as e:
        assert e.error_code == Errors.LAKE_SNAPSHOT_NOT_EXIST
        return 0
    return sum(snap.table_buckets_offset.values())


async def test_server_process_tiers_and_keeps_snapshots_over_a_restart(start_server, tmp_path):
    srv = start_server(sasl=False, extra_args=["-c", "datalake.format=paimon",
                                               "-c", f"datalake.paimon.warehouse={tmp_path / 'wh'}"])
    conn = await _connect(srv)
    admin = conn.get_admin()
    await admin.create_database("lake_db", ignore_if_exists=True)
    path = fluss.TablePath("lake_db", "auto")
    schema = fluss.Schema(pa.schema([("id", pa.int64()), ("name", pa.string())]))
    await admin.create_table(path, fluss.TableDescriptor(
        schema, bucket_count=2, properties={"table.datalake.enabled": "true", "table.datalake.freshness": "1s"}))
    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": list(range(20)), "name": ["a"] * 20}))
    await w.flush()
    for _ in range(150):
        if await _tiered_rows(admin, path) == 20:
            break
        await asyncio.sleep(0.1)
    assert await _tiered_rows(admin, path) == 20
    snap = await admin.get_latest_lake_snapshot(path)
    assert (await admin.get_readable_lake_snapshot(path)).snapshot_id == snap.snapshot_id
    assert (await admin.get_lake_snapshot(path, snap.snapshot_id)).table_buckets_offset == snap.table_buckets_offset
    with pytest.raises(FlussError) as e:
        await admin.get_lake_snapshot(path, snap.snapshot_id + 100)
    assert e.value.error_code == Errors.LAKE_SNAPSHOT_NOT_EXIST
    await conn.close()

    srv.restart()
    conn = await _connect(srv)
    admin = conn.get_admin()
    again = await admin.get_latest_lake_snapshot(path)
    assert again.snapshot_id >= snap.snapshot_id and sum(again.table_buckets_offset.values()) == 20
    got = await lake.union_scan(conn, path).to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(20))
    await conn.close()
