"""A column added to a data-lake table after rows were tiered: tiering goes on, and the union read
gives the older rows null in it, as a scan of the log does."""
from __future__ import annotations

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import lake
from fluss_fast.client.admin_types import TableChange


async def test_added_column_is_added_to_the_lake_and_null_in_older_rows(lake_conn):
    conn = lake_conn
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "evolving")
    schema = fluss.Schema(pa.schema([("id", pa.int64()), ("name", pa.string())]))
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=2, bucket_keys=["id"],
                                                         properties={"table.datalake.enabled": "true"}))
    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
    await w.flush()
    assert (await lake.tier_table(conn, path)).rows == 3

    await admin.alter_table(path, [TableChange.add_column("score", pa.float64())])
    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": [4, 5], "name": ["d", "e"], "score": [4.5, 5.5]}))
    await w.flush()
    before = await lake.union_scan(conn, path).to_arrow()
    assert (await lake.tier_table(conn, path)).rows == 2
    w.write_arrow(pa.table({"id": [6], "name": ["f"], "score": [6.5]}))
    await w.flush()

    got = await lake.union_scan(conn, path).to_arrow()
    assert got.column_names == ["id", "name", "score"]
    want = [{"id": 1, "name": "a", "score": None}, {"id": 2, "name": "b", "score": None},
            {"id": 3, "name": "c", "score": None}, {"id": 4, "name": "d", "score": 4.5},
            {"id": 5, "name": "e", "score": 5.5}, {"id": 6, "name": "f", "score": 6.5}]
    assert got.sort_by("id").to_pylist() == want
    assert before.sort_by("id").to_pylist() == want[:5]
    scores = await lake.union_scan(conn, path).project(["score"]).where(fluss.col("score") > 5.0).to_arrow()
    assert sorted(scores.column("score").to_pylist()) == [5.5, 6.5]
    from pypaimon import CatalogFactory

    props = (await admin.get_table_info(path)).get_properties()
    catalog = CatalogFactory.create({"warehouse": props["table.datalake.paimon.warehouse"]})
    paimon = catalog.get_table("lake_db.evolving")
    assert [f.name for f in paimon.table_schema.fields] == ["id", "name", "score", "__bucket", "__offset",
                                                            "__timestamp"]


async def test_lake_enabled_later_with_alter_table(lake_conn):
    conn = lake_conn
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "late")
    schema = fluss.Schema(pa.schema([("id", pa.int64())]))
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=2))
    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": [1, 2, 3]}))
    await w.flush()
    with pytest.raises(fluss.FlussError, match="table.datalake.enabled"):
        await lake.tier_table(conn, path)
    await admin.alter_table(path, [TableChange.set("table.datalake.enabled", "true")])
    assert (await lake.tier_table(conn, path)).rows == 3
    w.write_arrow(pa.table({"id": [4]}))
    await w.flush()
    assert sorted((await lake.union_scan(conn, path).to_arrow()).column("id").to_pylist()) == [1, 2, 3, 4]
