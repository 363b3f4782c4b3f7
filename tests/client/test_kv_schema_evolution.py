"""Reads of a primary-key table's current state (snapshot scan, limit scan, lookup) after a column
was added: rows stored under the old schema id come back in the new schema, the new column null.

Neither the embedded server nor pyfluss 1.0.0's admin API has ALTER TABLE, so the column is added
the way a catalog migration would: the server is stopped, its catalog gets schema 2 (schema 1 plus
a nullable column at the end, Fluss's only kind of schema evolution for values), and it restarts.
Everything after that goes through real sockets.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa

import fluss_fast as fluss

from client_util import connect

FIELDS = [pa.field("id", pa.int32()), pa.field("name", pa.string())]


def _add_column(data_dir: str, table_name: str, column: dict) -> None:
    path = os.path.join(data_dir, "catalog", "catalog.json")
    with open(path) as f:
        catalog = json.load(f)
    entry = next(t for d in catalog["databases"] for t in d.get("tables", []) if t["name"] == table_name)
    old = entry["schemas"][str(entry["schema_id"])]
    new = json.loads(json.dumps(old))
    column = dict(column, id=max(c.get("id", -1) for c in old["columns"]) + 1)
    new["columns"].append(column)
    if "highest_field_id" in new:
        new["highest_field_id"] = max(new["highest_field_id"], column["id"])
    sid = entry["schema_id"] + 1
    entry["schemas"][str(sid)] = new
    entry["schema_id"] = sid
    entry["descriptor"]["schema"] = new
    with open(path, "w") as f:
        json.dump(catalog, f)


async def test_rows_of_an_older_schema_are_read_in_the_new_one(start_server, unique_name):
    srv = start_server()
    name = unique_name()
    tpath = fluss.TablePath("fluss", name)
    conn = await connect(srv.bootstrap_servers)
    try:
        await conn.get_admin().create_table(tpath, fluss.TableDescriptor(
            fluss.Schema(pa.schema(FIELDS), primary_keys=["id"]), bucket_count=2))
        t = await conn.get_table(tpath)
        async with t.new_upsert().create_writer() as w:
            for i in range(6):
                w.upsert({"id": i, "name": f"old{i}"})
    finally:
        await conn.close()
    srv.stop()
    assert os.path.exists(os.path.join(srv.data_dir, "catalog", "catalog.json"))
    _add_column(srv.data_dir, name, {"name": "score", "data_type": {"type": "BIGINT"}})
    srv.start()

    conn = await connect(srv.bootstrap_servers)
    try:
        t = await conn.get_table(tpath)
        assert t.get_table_info().schema_id == 2
        async with t.new_upsert().create_writer() as w:
            w.upsert({"id": 1, "name": "new1", "score": 10})   # replaces a row of schema 1
            w.upsert({"id": 7, "name": "new7", "score": 70})
            w.delete({"id": 5})
        expected = {
            "id": [0, 1, 2, 3, 4, 7],
            "name": ["old0", "new1", "old2", "old3", "old4", "new7"],
            "score": [None, 10, None, None, None, 70],
        }
        snap = await t.new_scan().create_snapshot_scanner()
        tb = (await snap.to_arrow()).sort_by("id")
        assert tb.schema.names == ["id", "name", "score"]
        assert tb.schema.field("score").type == pa.int64()
        assert tb.to_pydict() == expected

        proj = await t.new_scan().project_by_name(["score", "id"]).create_snapshot_scanner()
        assert (await proj.to_arrow()).sort_by("id").to_pydict() == {"score": expected["score"],
                                                                       "id": expected["id"]}
        parts = []
        for b in range(2):
            bs = t.new_scan().limit(100).create_bucket_batch_scanner(
                fluss.TableBucket(t.get_table_info().table_id, b))
            parts.append(await bs.to_arrow())
        limited = pa.concat_tables(parts).sort_by("id")
        assert limited.to_pydict() == expected

        lk = t.new_lookup().create_lookuper()
        assert await lk.lookup({"id": 2}) == {"id": 2, "name": "old2", "score": None}
        assert await lk.lookup({"id": 1}) == {"id": 1, "name": "new1", "score": 10}
        assert await lk.lookup({"id": 5}) is None
    finally:
        await conn.close()
