"""The wider admin surface against whichever server the run starts, written for
``--fluss-server=java`` (tests/java_suite.txt): what a Java 0.9.1 cluster answers to each new
``FlussAdmin`` method, and the clear UNSUPPORTED_VERSION a caller gets at once, naming the API, for
the APIs 0.9.1 lacks (ALTER_DATABASE, GET_CLUSTER_HEALTH, LIST_KV_SNAPSHOTS, LIST_REMOTE_LOG_MANIFESTS).
On the embedded server the same calls run against its own implementation."""
from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import ErrorCode, FlussError
from fluss_fast.client.admin_types import (
    AclBinding,
    AclFilter,
    AlterConfig,
    DatabaseChange,
    GoalType,
    OperationType,
    RebalanceStatus,
    RegisterResult,
    ResourceType,
    TableChange,
)

FIELDS = [pa.field("id", pa.int32()), pa.field("name", pa.string())]


def _java(server) -> bool:
    return getattr(server, "kind", "embedded") == "java"


async def _error(aw) -> FlussError:
    with pytest.raises(FlussError) as info:
        await asyncio.wait_for(aw, 30)
    return info.value


async def _pk_table(conn, db, name="t"):
    path = fluss.TablePath(db, name)
    schema = fluss.Schema(pa.schema(FIELDS), primary_keys=["id"])
    await conn.get_admin().create_table(path, fluss.TableDescriptor(schema, bucket_count=2))
    return path


async def test_schema_add_column_and_old_rows(conn, db):
    admin = conn.get_admin()
    path = await _pk_table(conn, db)
    t = await conn.get_table(path)
    async with t.new_upsert().create_writer() as w:
        for i in range(4):
            w.upsert({"id": i, "name": f"old{i}"})
    first = await admin.get_table_schema(path)
    assert first.schema.get_column_names() == ["id", "name"]
    await admin.alter_table(path, [TableChange.add_column("score", pa.int64(), comment="added")])
    latest = await admin.get_table_schema(path)
    assert latest.schema_id == first.schema_id + 1
    assert latest.schema.get_column_names() == ["id", "name", "score"]
    assert (await admin.get_table_schema(path, first.schema_id)).schema == first.schema
    assert (await _error(admin.get_table_schema(path, 99))).error_code == ErrorCode.SCHEMA_NOT_EXIST
    dup = await _error(admin.alter_table(path, [TableChange.add_column("score", pa.int64())]))
    assert dup.error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION
    row = await (await conn.get_table(path)).new_lookup().create_lookuper().lookup({"id": 2})
    assert row == {"id": 2, "name": "old2", "score": None}



async def test_log_scans_read_batches_of_the_older_schema(conn, db):
    # the log holds batches of both schema ids; scanners of the new schema read the older ones with
    # the added column null (client/scan/schemas.py), under projection, where and limit scans
    admin = conn.get_admin()
    path = fluss.TablePath(db, "log")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema(FIELDS)), bucket_count=2))
    async with (await conn.get_table(path)).new_append().create_writer() as w:
        for i in range(4):
            w.append({"id": i, "name": f"old{i}"})
    await admin.alter_table(path, [TableChange.add_column("score", pa.int64())])
    t = await conn.get_table(path)
    async with t.new_append().create_writer() as w:
        w.append({"id": 9, "name": "new", "score": 7})
    want = [{"id": i, "name": f"old{i}", "score": None} for i in range(4)] + [{"id": 9, "name": "new", "score": 7}]

    async def read(scan):
        bs = await scan.create_record_batch_log_scanner()
        bs.subscribe_buckets({0: 0, 1: 0})
        return sorted((await asyncio.wait_for(bs.to_arrow(), 60)).to_pylist(), key=lambda r: r["id"])

    assert await read(t.new_scan()) == want
    assert await read(t.new_scan().project_by_name(["score", "id"])) == [{"score": r["score"], "id": r["id"]}
                                                                         for r in want]
    assert await read(t.new_scan().where(fluss.col("score").is_null())) == want[:4]
    tid = t.get_table_info().table_id
    limited = []
    for b in (0, 1):
        scanner = t.new_scan().limit(10).create_bucket_batch_scanner(fluss.TableBucket(tid, b))
        limited.extend((await asyncio.wait_for(scanner.to_arrow(), 60)).to_pylist())
    assert sorted(limited, key=lambda r: r["id"]) == want

async def test_alter_table_properties(conn, db, fluss_server):
    admin = conn.get_admin()
    path = await _pk_table(conn, db)
    await admin.alter_table(path, [TableChange.set("owner", "me")])
    assert (await admin.get_table_info(path)).get_custom_properties() == {"owner": "me"}
    await admin.alter_table(path, [TableChange.reset("owner")])
    assert (await admin.get_table_info(path)).get_custom_properties() == {}
    for change in (TableChange.set("table.log.format", "INDEXED"), TableChange.set("table.replication.factor", "2")):
        assert (await _error(admin.alter_table(path, [change]))).error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION
    mixed = [TableChange.set("owner", "x"), TableChange.add_column("c", pa.int64())]
    assert (await _error(admin.alter_table(path, mixed))).error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION
    gone = fluss.TablePath(db, "nope")
    assert (await _error(admin.alter_table(gone, [TableChange.set("a", "b")]))).error_code == ErrorCode.TABLE_NOT_EXIST
    await admin.alter_table(gone, [TableChange.set("a", "b")], ignore_if_not_exists=True)


async def test_summaries_snapshots_and_stats(conn, db, fluss_server):
    admin = conn.get_admin()
    path = await _pk_table(conn, db)
    summaries = {s.database_name: s for s in await admin.list_database_summaries()}
    assert summaries[db].table_count == 1 and summaries[db].created_time > 0
    snaps = await admin.get_latest_kv_snapshots(path)
    assert snaps.get_bucket_ids() == [0, 1]
    info = await admin.get_table_info(path)
    err = await _error(admin.get_kv_snapshot_metadata(fluss.TableBucket(info.table_id, 0), 12345))
    assert err.error_code == ErrorCode.KV_SNAPSHOT_NOT_EXIST
    assert (await _error(admin.get_lake_snapshot(path, 1))).error_code == ErrorCode.LAKE_SNAPSHOT_NOT_EXIST
    assert (await _error(admin.get_readable_lake_snapshot(path))).error_code == ErrorCode.LAKE_SNAPSHOT_NOT_EXIST
    assert await admin.get_table_stats(path) == 0
    t = await conn.get_table(path)
    async with t.new_upsert().create_writer() as w:
        for i in range(5):
            w.upsert({"id": i, "name": "x"})
    assert await admin.get_table_stats(path) == 5


async def test_acls_and_configs(conn):
    admin = conn.get_admin()
    binding = AclBinding(ResourceType.TABLE, "db.t", "alice", OperationType.READ)
    for aw in (admin.list_acls(), admin.create_acls([binding]), admin.drop_acls([AclFilter()])):
        assert (await _error(aw)).error_code == ErrorCode.SECURITY_DISABLED_EXCEPTION
    configs = await admin.describe_cluster_configs()
    assert configs and all(c.key and c.source for c in configs)


async def test_rebalance_and_producer_offsets(conn, db, fluss_server):
    admin = conn.get_admin()
    if not _java(fluss_server):
        assert (await _error(admin.rebalance([GoalType.REPLICA_DISTRIBUTION]))).error_code \
            == ErrorCode.UNSUPPORTED_VERSION
        return
    path = await _pk_table(conn, db)
    info = await admin.get_table_info(path)
    rid = await admin.rebalance([GoalType.REPLICA_DISTRIBUTION])
    progress = await admin.list_rebalance_progress(rid)
    assert progress is not None and progress.rebalance_id == rid
    assert isinstance(progress.status, RebalanceStatus)
    await admin.cancel_rebalance()
    producer = f"p-{db}"
    tb = fluss.TableBucket(info.table_id, 0)
    assert await admin.register_producer_offsets(producer, {tb: 5}) == RegisterResult.CREATED
    assert await admin.register_producer_offsets(producer, {tb: 6}) == RegisterResult.ALREADY_EXISTS
    got = await admin.get_producer_offsets(producer)
    assert got.producer_id == producer and got.table_offsets == {info.table_id: {tb: 5}}
    await admin.delete_producer_offsets(producer)
    assert await admin.get_producer_offsets(producer) is None
    err = await _error(admin.add_server_tag([999], fluss_fast_server_tag()))
    assert err.error_code == ErrorCode.SERVER_NOT_EXIST_EXCEPTION


def fluss_fast_server_tag():
    from fluss_fast.client.admin_types import ServerTag

    return ServerTag.TEMPORARY_OFFLINE


async def test_apis_java_0_9_1_lacks_fail_at_once_by_name(conn, db, fluss_server):
    admin = conn.get_admin()
    path = await _pk_table(conn, db)
    info = await admin.get_table_info(path)
    calls = {
        "ALTER_DATABASE": admin.alter_database(db, [DatabaseChange.set("a", "b")]),
        "GET_CLUSTER_HEALTH": admin.get_cluster_health(),
        "LIST_KV_SNAPSHOTS": admin.list_kv_snapshots(info.table_id),
        "LIST_REMOTE_LOG_MANIFESTS": admin.list_remote_log_manifests(info.table_id),
    }
    java = _java(fluss_server)
    for api, aw in calls.items():
        if not java and api != "LIST_REMOTE_LOG_MANIFESTS":
            await aw  # the embedded server implements these
            continue
        err = await _error(aw)
        assert err.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert api in err.message if java else "not supported" in err.message


async def test_writers_of_the_older_schema_carry_on(conn, db):
    # as Java's do: a writer made before ALTER TABLE keeps writing its (older) schema id, and
    # lookups read those rows under the new schema
    admin = conn.get_admin()
    path = await _pk_table(conn, db)
    t = await conn.get_table(path)
    async with t.new_upsert().create_writer() as w:
        w.upsert({"id": 1, "name": "a"})
        await w.flush()
        await admin.alter_table(path, [TableChange.add_column("score", pa.int64())])
        w.upsert({"id": 2, "name": "b"})
    lookuper = (await conn.get_table(path)).new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 2}) == {"id": 2, "name": "b", "score": None}


async def test_alter_cluster_configs(conn, fluss_server):
    admin = conn.get_admin()
    key = "kv.rocksdb.shared-rate-limiter.bytes-per-sec"
    if not _java(fluss_server):
        err = await _error(admin.alter_cluster_configs([AlterConfig(key, "1tb")]))
        assert err.error_code == ErrorCode.UNSUPPORTED_VERSION
        return
    # a key Java 0.9.1 may change at run time, set (high enough to limit nothing) and removed again
    await admin.alter_cluster_configs([AlterConfig(key, "1tb")])
    entries = {c.key: c for c in await admin.describe_cluster_configs()}
    assert entries[key].value == "1tb"
    assert entries[key].source == "DYNAMIC_SERVER_CONFIG"
    await admin.alter_cluster_configs([AlterConfig(key, op="delete")])
    assert key not in {c.key for c in await admin.describe_cluster_configs()}
    err = await _error(admin.alter_cluster_configs([AlterConfig("zookeeper.address", "x:1")]))
    assert "not allowed to be changed dynamically" in err.message


async def test_schema_changes_fluss_refuses(conn, db):
    # Java 1.0's SchemaUpdate (and 0.9.1's) only adds nullable columns at the end
    from fluss_fast.datatypes import DataType

    admin = conn.get_admin()
    path = await _pk_table(conn, db)
    for change, words in ((TableChange.drop_column("name"), "drop column"),
                          (TableChange.rename_column("name", "title"), "rename column"),
                          (TableChange.modify_column("name", pa.string(), comment="c"), "modify column"),
                          (TableChange.add_column("n", DataType("BIGINT", nullable=False)), "must be nullable")):
        err = await _error(admin.alter_table(path, [change]))
        assert words in err.message and err.error_code == ErrorCode.UNKNOWN_SERVER_ERROR, (change, err)
    assert (await admin.get_table_schema(path)).schema.get_column_names() == ["id", "name"]


async def test_add_nested_columns(conn, db):
    # field ids as Java numbers them: the column, then its nested fields depth first
    admin = conn.get_admin()
    path = await _pk_table(conn, db)
    t = await conn.get_table(path)
    async with t.new_upsert().create_writer() as w:
        w.upsert({"id": 1, "name": "a"})
    point = pa.struct([("x", pa.int32()), ("y", pa.string())])
    await admin.alter_table(path, [TableChange.add_column("tags", pa.list_(pa.string())),
                                   TableChange.add_column("pt", point)])
    info = (await admin.get_table_schema(path)).schema.info
    assert [c.id for c in info.columns] == [0, 1, 2, 3]
    assert [f.field_id for f in info.columns[3].type.fields] == [4, 5]
    assert info.highest_field_id == 5
    t2 = await conn.get_table(path)
    async with t2.new_upsert().create_writer() as w:
        w.upsert({"id": 2, "name": "b", "tags": ["p", "q"], "pt": {"x": 1, "y": "z"}})
    lookuper = t2.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 1}) == {"id": 1, "name": "a", "tags": None, "pt": None}
    assert await lookuper.lookup({"id": 2}) == {"id": 2, "name": "b", "tags": ["p", "q"], "pt": {"x": 1, "y": "z"}}
