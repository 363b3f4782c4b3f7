"""FlussAdmin's schema, ALTER, summary and snapshot methods (``client/admin_schema.py``) against the
embedded server: results, the Java coordinator's error codes, and the rows of an older schema read
under a column added by ``alter_table``."""
from __future__ import annotations

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import ErrorCode, FlussError
from fluss_fast.client.admin_types import DatabaseChange, TableChange

FIELDS = [pa.field("id", pa.int32()), pa.field("name", pa.string())]


@pytest.fixture(autouse=True)
def _embedded_only(fluss_server):
    # what Java answers to the same calls is tests/client/test_admin_java_cluster.py
    if getattr(fluss_server, "kind", "embedded") == "java":
        pytest.skip("embedded server only: its own answers (test_admin_java_cluster.py covers Java)")


async def _code(aw) -> int:
    with pytest.raises(FlussError) as info:
        await aw
    return info.value.error_code


async def _table(conn, db, name="t", pk=True, **kw):
    path = fluss.TablePath(db, name)
    schema = fluss.Schema(pa.schema(FIELDS), primary_keys=["id"] if pk else None)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(schema, bucket_count=2, **kw))
    return path


async def test_get_table_schema_latest_and_by_id(conn, db):
    admin = conn.get_admin()
    path = await _table(conn, db)
    info = await admin.get_table_schema(path)
    assert info.schema_id == 1 or info.schema_id == 0
    assert info.schema.get_column_names() == ["id", "name"]
    assert info.schema.get_primary_keys() == ["id"]
    same = await admin.get_table_schema(path, info.schema_id)
    assert same == info
    assert await _code(admin.get_table_schema(path, 99)) == ErrorCode.SCHEMA_NOT_EXIST
    assert await _code(admin.get_table_schema(fluss.TablePath(db, "nope"))) == ErrorCode.SCHEMA_NOT_EXIST
    with pytest.raises(TypeError):
        await admin.get_table_schema("db.t")


async def test_alter_table_properties(conn, db):
    admin = conn.get_admin()
    path = await _table(conn, db, pk=False)
    await admin.alter_table(path, [TableChange.set("table.log.ttl", "3d"), TableChange.set("owner", "me")])
    info = await admin.get_table_info(path)
    assert info.get_properties()["table.log.ttl"] == "3d"
    assert info.get_custom_properties() == {"owner": "me"}
    await admin.alter_table(path, [TableChange.reset("table.log.ttl"), TableChange.reset("owner")])
    info = await admin.get_table_info(path)
    assert "table.log.ttl" not in info.get_properties()
    assert info.get_custom_properties() == {}
    # Java's rules and codes
    assert await _code(admin.alter_table(path, [TableChange.set("table.log.format", "INDEXED")])) \
        == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION
    assert await _code(admin.alter_table(path, [TableChange.set("table.log.ttl", "soon")])) \
        == ErrorCode.INVALID_CONFIG_EXCEPTION
    assert await _code(admin.alter_table(path, [TableChange.set("table.kv.standby-replica.enabled", "true")])) \
        == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION
    mixed = [TableChange.set("owner", "x"), TableChange.add_column("c", pa.int64())]
    assert await _code(admin.alter_table(path, mixed)) == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION
    gone = fluss.TablePath(db, "nope")
    assert await _code(admin.alter_table(gone, [TableChange.set("owner", "x")])) == ErrorCode.TABLE_NOT_EXIST
    await admin.alter_table(gone, [TableChange.set("owner", "x")], ignore_if_not_exists=True)


async def test_alter_table_add_column_then_read_old_rows(conn, db):
    admin = conn.get_admin()
    path = await _table(conn, db)
    t = await conn.get_table(path)
    async with t.new_upsert().create_writer() as w:
        for i in range(4):
            w.upsert({"id": i, "name": f"old{i}"})
    before = await admin.get_table_schema(path)
    await admin.alter_table(path, [TableChange.add_column("score", pa.int64(), comment="added")])
    after = await admin.get_table_schema(path)
    assert after.schema_id == before.schema_id + 1
    assert after.schema.get_column_names() == ["id", "name", "score"]
    assert (await admin.get_table_schema(path, before.schema_id)).schema.get_column_names() == ["id", "name"]
    assert (await admin.get_table_info(path)).schema_id == after.schema_id
    assert await _code(admin.alter_table(path, [TableChange.add_column("score", pa.int64())])) \
        == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION
    t2 = await conn.get_table(path)
    lookuper = t2.new_lookup().create_lookuper()
    row = await lookuper.lookup({"id": 2})
    assert row is not None and row["name"] == "old2" and row["score"] is None


async def test_alter_database_and_summaries(conn, db):
    admin = conn.get_admin()
    await admin.alter_database(db, [DatabaseChange.set("owner", "me"), DatabaseChange.update_comment("c1")])
    desc = (await admin.get_database_info(db)).get_database_descriptor()
    assert desc.get_custom_properties() == {"owner": "me"} and desc.comment == "c1"
    await admin.alter_database(db, [DatabaseChange.reset("owner")])
    assert (await admin.get_database_info(db)).get_database_descriptor().get_custom_properties() == {}
    assert await _code(admin.alter_database("no_such_db", [DatabaseChange.set("a", "b")])) \
        == ErrorCode.DATABASE_NOT_EXIST
    await admin.alter_database("no_such_db", [DatabaseChange.set("a", "b")], ignore_if_not_exists=True)
    await _table(conn, db)
    summaries = {s.database_name: s for s in await admin.list_database_summaries()}
    assert summaries[db].table_count == 1 and summaries[db].created_time > 0
    assert "fluss" in summaries


async def test_kv_and_lake_snapshots(conn, db):
    admin = conn.get_admin()
    path = await _table(conn, db)
    snaps = await admin.get_latest_kv_snapshots(path)
    assert snaps.get_bucket_ids() == [0, 1]
    assert snaps.snapshot_ids == {0: None, 1: None}
    info = await admin.get_table_info(path)
    assert snaps.table_id == info.table_id and snaps.partition_id is None
    log = await _table(conn, db, "log", pk=False)
    assert await _code(admin.get_latest_kv_snapshots(log)) == ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION
    tb = fluss.TableBucket(info.table_id, 0)
    assert await _code(admin.get_kv_snapshot_metadata(tb, 1)) == ErrorCode.KV_SNAPSHOT_NOT_EXIST
    assert await _code(admin.get_lake_snapshot(path, 1)) == ErrorCode.LAKE_SNAPSHOT_NOT_EXIST
    assert await _code(admin.get_readable_lake_snapshot(path)) == ErrorCode.LAKE_SNAPSHOT_NOT_EXIST


async def test_apis_the_embedded_server_lacks_fail_at_once(conn, db):
    admin = conn.get_admin()
    path = await _table(conn, db)
    info = await admin.get_table_info(path)
    with pytest.raises(FlussError) as err:
        await admin.list_remote_log_manifests(info.table_id)
    assert err.value.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert "LIST_REMOTE_LOG_MANIFESTS" in err.value.message and "not supported" in err.value.message


async def test_list_kv_snapshots_has_none(conn, db):
    admin = conn.get_admin()
    info = await admin.get_table_info(await _table(conn, db))
    assert await admin.list_kv_snapshots(info.table_id) == {}
    log = await admin.get_table_info(await _table(conn, db, "log", pk=False))
    assert await _code(admin.list_kv_snapshots(log.table_id)) == ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION
    assert await _code(admin.list_kv_snapshots(987654)) == ErrorCode.TABLE_NOT_EXIST


async def test_table_stats_count_rows(conn, db):
    admin = conn.get_admin()
    pk = await _table(conn, db)
    assert await admin.get_table_stats(pk) == 0
    t = await conn.get_table(pk)
    async with t.new_upsert().create_writer() as w:
        for i in range(10):
            w.upsert({"id": i, "name": "a"})
        for i in range(4):
            w.upsert({"id": i, "name": "b"})  # updates: no new rows
        w.delete({"id": 9})
    assert await admin.get_table_stats(pk) == 9
    log = await _table(conn, db, "log", pk=False)
    lt = await conn.get_table(log)
    w = lt.new_append().create_writer()
    for i in range(7):
        w.append({"id": i, "name": "x"})
    await w.flush()
    assert await admin.get_table_stats(log) == 7
    part = fluss.TablePath(db, "p")
    schema = fluss.Schema(pa.schema(FIELDS + [pa.field("region", pa.string())]), primary_keys=["id", "region"])
    await admin.create_table(part, fluss.TableDescriptor(schema, partition_keys=["region"], bucket_count=2))
    for region in ("eu", "us"):
        await admin.create_partition(part, {"region": region})
    pt = await conn.get_table(part)
    async with pt.new_upsert().create_writer() as w:
        for i in range(6):
            w.upsert({"id": i, "name": "n", "region": "eu" if i % 3 else "us"})
    assert await admin.get_table_stats(part) == 6


def test_sync_facade_has_the_new_methods(fluss_server):
    from fluss_fast import sync

    with sync.connect({"bootstrap.servers": fluss_server.bootstrap_servers}) as c:
        admin = c.get_admin()
        assert any(s.database_name == "fluss" for s in admin.list_database_summaries())
        assert admin.get_cluster_health().num_replicas >= 0


async def test_log_scan_reads_batches_of_the_older_schema(conn, db):
    admin = conn.get_admin()
    path = await _table(conn, db, "log", pk=False)
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    for i in range(3):
        w.append({"id": i, "name": f"old{i}"})
    await w.flush()
    await admin.alter_table(path, [TableChange.add_column("score", pa.int64())])
    t2 = await conn.get_table(path)
    w2 = t2.new_append().create_writer()
    w2.append({"id": 9, "name": "new", "score": 7})
    await w2.flush()
    bs = await t2.new_scan().create_record_batch_log_scanner()
    bs.subscribe_buckets({0: 0, 1: 0})
    rows = sorted((await bs.to_arrow()).to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": i, "name": f"old{i}", "score": None} for i in range(3)] + [
        {"id": 9, "name": "new", "score": 7}]
