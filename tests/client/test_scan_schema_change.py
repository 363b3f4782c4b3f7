"""Log scans across ``ALTER TABLE ... ADD COLUMN`` (``client/scan/schemas.py``): batches written
under the older schema id read under the scanner's schema, the added column null, through every
scanner kind, projection and ``where``; a table never altered sends no schema request."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import FlussError, col
from fluss_fast.client.admin_types import TableChange

FIELDS = [pa.field("id", pa.int32()), pa.field("name", pa.string())]
OLD = [{"id": i, "name": f"old{i}", "score": None} for i in range(6)]
NEW = [{"id": 10 + i, "name": f"new{i}", "score": 100 + i} for i in range(4)]


@pytest.fixture(autouse=True)
def _embedded_only(fluss_server):
    # the Java cluster's answers to ALTER TABLE are tests/client/test_admin_java_cluster.py's
    if getattr(fluss_server, "kind", "embedded") == "java":
        pytest.skip("embedded server only")


async def _altered(conn, db, name: str, pk: bool = False, **kw):
    """A two-bucket table with OLD written under schema 1 and NEW under schema 2 (``score`` added)."""
    path = fluss.TablePath(db, name)
    schema = fluss.Schema(pa.schema(FIELDS), primary_keys=["id"] if pk else None)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(schema, bucket_count=2, **kw))
    t = await conn.get_table(path)
    w = (t.new_upsert() if pk else t.new_append()).create_writer()
    for r in OLD:
        (w.upsert if pk else w.append)({"id": r["id"], "name": r["name"]})
    await w.flush()
    await conn.get_admin().alter_table(path, [TableChange.add_column("score", pa.int64())])
    t2 = await conn.get_table(path)
    w2 = (t2.new_upsert() if pk else t2.new_append()).create_writer()
    for r in NEW:
        (w2.upsert if pk else w2.append)(r)
    await w2.flush()
    return t2


async def _bounded(scan) -> list[dict]:
    bs = await scan.create_record_batch_log_scanner()
    bs.subscribe_buckets({0: 0, 1: 0})
    return sorted((await bs.to_arrow()).to_pylist(), key=lambda r: r["id"])


async def _records(scan, n: int) -> list:
    sc = await scan.create_log_scanner()
    sc.subscribe_buckets({0: 0, 1: 0})
    out: list = []
    deadline = time.monotonic() + 20
    while len(out) < n and time.monotonic() < deadline:
        for recs in (await sc.poll(500)).values():
            out.extend(recs)
    return out


@pytest.mark.parametrize("log_format", ["ARROW", "INDEXED"])
async def test_projection_and_where_over_both_schemas(conn, db, log_format):
    t = await _altered(conn, db, f"mixed_{log_format.lower()}", log_format=log_format)
    assert await _bounded(t.new_scan()) == OLD + NEW
    assert await _bounded(t.new_scan().project_by_name(["score", "id"])) == [
        {"score": r["score"], "id": r["id"]} for r in OLD + NEW]
    # a filter on the added column sees it null in the older batches
    assert await _bounded(t.new_scan().where(col("score").is_null())) == OLD
    assert await _bounded(t.new_scan().project_by_name(["id"]).where(col("score") >= 102)) == [
        {"id": r["id"]} for r in NEW[2:]]
    # and one on a column of both schemas reads both
    odd = [1, 3, 5, 11, 13]
    assert await _bounded(t.new_scan().project_by_name(["score", "id"]).where(col("id").is_in(odd))) == [
        {"score": r["score"], "id": r["id"]} for r in OLD + NEW if r["id"] in odd]


async def test_record_scanner_rows_of_both_schemas(conn, db):
    t = await _altered(conn, db, "records")
    recs = await _records(t.new_scan(), len(OLD) + len(NEW))
    assert sorted((r.row for r in recs), key=lambda r: r["id"]) == OLD + NEW
    recs = await _records(t.new_scan().project_by_name(["score"]).where(col("id") < 3), 3)
    assert [r.row for r in recs] == [{"score": None}] * 3


async def test_primary_key_changelog_of_both_schemas(conn, db):
    t = await _altered(conn, db, "pk", pk=True)
    recs = await _records(t.new_scan(), len(OLD) + len(NEW))
    assert sorted((r.row for r in recs), key=lambda r: r["id"]) == OLD + NEW


async def test_limit_scan_across_the_change(conn, db):
    t = await _altered(conn, db, "limit")
    tid = t.get_table_info().table_id
    got = []
    for b in (0, 1):
        tab = await t.new_scan().limit(100).create_bucket_batch_scanner(fluss.TableBucket(tid, b)).to_arrow()
        assert tab.schema.names == ["id", "name", "score"]
        got.extend(tab.to_pylist())
    assert sorted(got, key=lambda r: r["id"]) == OLD + NEW
    proj = await t.new_scan().project_by_name(["score"]).limit(100).create_bucket_batch_scanner(
        fluss.TableBucket(tid, 0)).to_arrow()
    assert proj.schema.names == ["score"]


async def test_scanner_of_the_older_schema_refuses_newer_batches(conn, db):
    path = fluss.TablePath(db, "newer")
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema(FIELDS)), bucket_count=1))
    t = await conn.get_table(path)
    sc = await t.new_scan().create_record_batch_log_scanner()
    await conn.get_admin().alter_table(path, [TableChange.add_column("score", pa.int64())])
    w = (await conn.get_table(path)).new_append().create_writer()
    w.append({"id": 1, "name": "a", "score": 2})
    await w.flush()
    sc.subscribe_buckets({0: 0})
    with pytest.raises(FlussError, match="create a new scanner after a schema change"):
        await sc.to_arrow()


async def test_older_schemas_are_fetched_once_per_connection(conn, db, monkeypatch):
    """A never-altered table sends no GET_TABLE_SCHEMA; an altered one sends one per older schema id
    for the whole connection, however many scanners and lookupers read it."""
    from fluss_fast.client.context import ClientContext
    from fluss_fast.rpc.api import Api

    requests = []
    real = ClientContext.coordinator

    async def counted(self, api_key, req, *args, **kwargs):
        if api_key == Api.GET_TABLE_SCHEMA:
            requests.append(req.schema_id)
        return await real(self, api_key, req, *args, **kwargs)

    monkeypatch.setattr(ClientContext, "coordinator", counted)
    path = fluss.TablePath(db, "plain")
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema(FIELDS)), bucket_count=2))
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    w.append({"id": 1, "name": "a"})
    await w.flush()
    scan = t.new_scan().project_by_name(["id"])
    assert scan._spec().older == {} and scan._spec().pushdown
    assert await _bounded(scan) == [{"id": 1}]
    assert requests == []
    # an altered table's batches are fetched whole (no projection pushdown across schema ids)
    t2 = await _altered(conn, db, "altered")
    spec = t2.new_scan().project_by_name(["id"])._spec()
    assert spec.older is None and not spec.pushdown
    assert await _bounded(t2.new_scan()) == OLD + NEW
    assert await _bounded(t2.new_scan().project_by_name(["id", "score"])) == [
        {"id": r["id"], "score": r.get("score")} for r in OLD + NEW]
    assert requests == [1]
