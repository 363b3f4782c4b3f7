"""The official client (pyfluss 1.0.0, ``import fluss``) against the embedded server: every admin call."""
from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest

from pyfluss_util import call, pyfluss_fixtures, wait_for_leaders

fluss = pytest.importorskip("fluss")

pytestmark = pytest.mark.compat

async def fails_with(coro) -> int:
    with pytest.raises(fluss.FlussError) as e:
        await call(coro)
    return e.value.error_code


conn, admin, db = pyfluss_fixtures("pydb")


ALL_TYPES = pa.schema([
    ("id", pa.int64()), ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("dec", pa.decimal128(10, 2)),
    ("dec38", pa.decimal128(38, 10)), ("dt", pa.date32()), ("t0", pa.time32("s")), ("t3", pa.time32("ms")),
    ("t6", pa.time64("us")), ("t9", pa.time64("ns")), ("ts0", pa.timestamp("s")), ("ts3", pa.timestamp("ms")),
    ("ts6", pa.timestamp("us")), ("ts9", pa.timestamp("ns")), ("ltz3", pa.timestamp("ms", tz="UTC")),
    ("ltz6", pa.timestamp("us", tz="UTC")), ("bytes", pa.binary()), ("bin4", pa.binary(4)),
    ("arr", pa.list_(pa.int32())), ("arr_s", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.int64())),
    ("r", pa.struct([("x", pa.int32()), ("y", pa.struct([("z", pa.string())]))])),
])


async def test_databases(admin, unique_name):
    name = unique_name("pydbx")
    desc = fluss.DatabaseDescriptor(comment="a comment", custom_properties={"owner": "me", "k": "v"})
    await call(admin.create_database(name, desc, ignore_if_exists=False))
    assert await call(admin.database_exists(name))
    assert name in await call(admin.list_databases())
    info = await call(admin.get_database_info(name))
    assert info.database_name == name
    assert info.created_time == info.modified_time > 0
    got = info.get_database_descriptor()
    assert got.comment == "a comment"
    assert got.get_custom_properties() == {"owner": "me", "k": "v"}
    assert await fails_with(admin.create_database(name)) == fluss.ErrorCode.DATABASE_ALREADY_EXIST
    await call(admin.create_database(name, ignore_if_exists=True))
    await call(admin.create_table(fluss.TablePath(name, "t"), fluss.TableDescriptor(
        fluss.Schema(pa.schema([("a", pa.int32())])))))
    assert await fails_with(admin.drop_database(name, cascade=False)) == fluss.ErrorCode.DATABASE_NOT_EMPTY
    await call(admin.drop_database(name, cascade=True))
    assert not await call(admin.database_exists(name))
    assert not await call(admin.table_exists(fluss.TablePath(name, "t")))
    assert await fails_with(admin.drop_database(name)) == fluss.ErrorCode.DATABASE_NOT_EXIST
    await call(admin.drop_database(name, ignore_if_not_exists=True))
    assert await fails_with(admin.get_database_info(name)) == fluss.ErrorCode.DATABASE_NOT_EXIST
    assert await fails_with(admin.list_tables(name)) == fluss.ErrorCode.DATABASE_NOT_EXIST
    assert await fails_with(admin.create_database("bad name")) == fluss.ErrorCode.INVALID_DATABASE_EXCEPTION
    # a database without a descriptor has an empty one
    plain = unique_name("pydbp")
    await call(admin.create_database(plain))
    d = (await call(admin.get_database_info(plain))).get_database_descriptor()
    assert d.comment is None and d.get_custom_properties() == {}
    await call(admin.drop_database(plain))


async def test_table_with_every_type_round_trips(admin, conn, db, fluss_server):
    path = fluss.TablePath(db, "all_types")
    schema = fluss.Schema(ALL_TYPES, primary_keys=["id", "s"])
    desc = fluss.TableDescriptor(schema, bucket_count=3, bucket_keys=["id"], comment="every type",
                                 properties={"table.log.arrow.compression.type": "LZ4_FRAME"},
                                 custom_properties={"team": "data"})
    await call(admin.create_table(path, desc, ignore_if_exists=False))
    info = await call(admin.get_table_info(path))
    assert info.table_path.table_name == "all_types" and info.table_path.database_name == db
    assert info.schema_id == 1 and info.table_id >= 0
    assert info.num_buckets == 3
    assert info.comment == "every type"
    assert info.get_primary_keys() == ["id", "s"]
    assert info.get_bucket_keys() == ["id"]
    assert info.get_partition_keys() == [] and not info.is_partitioned() and info.has_primary_key()
    assert info.get_custom_properties() == {"team": "data"}
    stored = {"table.log.arrow.compression.type": "LZ4_FRAME", "table.replication.factor": "1",
              "table.kv.format-version": "2"}
    if getattr(fluss_server, "kind", "embedded") == "embedded":
        # the 1.0 coordinator, which the embedded server follows, adds it to every primary-key
        # table; 0.9.1 has no such option (tests/conformance: deliberate differences)
        stored["table.kv.standby-replica.enabled"] = "true"
    assert info.get_properties() == stored
    assert info.get_column_names() == ALL_TYPES.names and info.get_column_count() == len(ALL_TYPES)
    assert info.get_schema().get_column_types() == [
        "bigint NOT NULL", "boolean", "tinyint", "smallint", "int", "float", "double", "string NOT NULL",
        "decimal(10,2)", "decimal(38,10)", "date", "time", "time(3)", "time(6)", "time(9)", "timestamp(0)",
        "timestamp(3)", "timestamp", "timestamp(9)", "timestamp_ltz(3)", "timestamp_ltz", "bytes", "binary(4)",
        "array<int>", "array<string>", "map<string NOT NULL,bigint>", "row<x: int, y: row<z: string>>"]
    # the same descriptor comes back from metadata (get_table), as pyfluss's own schema
    table = await call(conn.get_table(path))
    assert table.has_primary_key()
    assert table.get_table_info().get_schema().get_column_types() == info.get_schema().get_column_types()
    arrow = table.arrow_schema
    assert arrow.names == ALL_TYPES.names
    assert [f.type for f in arrow] == [f.type for f in ALL_TYPES]


async def test_tables(admin, conn, db, fluss_server):
    path = fluss.TablePath(db, "logt")
    schema = fluss.Schema(pa.schema([("a", pa.int32()), ("b", pa.string())]))
    await call(admin.create_table(path, fluss.TableDescriptor(schema)))
    assert await call(admin.table_exists(path))
    assert await call(admin.list_tables(db)) == ["logt"]
    info = await call(admin.get_table_info(path))
    assert info.num_buckets == 1 and info.get_bucket_keys() == [] and not info.has_primary_key()
    assert info.get_properties() == {"table.replication.factor": "1"}
    assert await fails_with(admin.create_table(path, fluss.TableDescriptor(schema), False)) == \
        fluss.ErrorCode.TABLE_ALREADY_EXIST
    await call(admin.create_table(path, fluss.TableDescriptor(schema), True))
    missing = fluss.TablePath(db, "missing")
    assert await fails_with(admin.get_table_info(missing)) == fluss.ErrorCode.TABLE_NOT_EXIST
    assert await fails_with(admin.drop_table(missing)) == fluss.ErrorCode.TABLE_NOT_EXIST
    await call(admin.drop_table(missing, ignore_if_not_exists=True))
    assert await fails_with(admin.create_table(fluss.TablePath("no_such_db_x", "t"), fluss.TableDescriptor(schema))) \
        == fluss.ErrorCode.DATABASE_NOT_EXIST
    assert await fails_with(admin.create_table(fluss.TablePath(db, "bad"), fluss.TableDescriptor(
        schema, properties={"table.unknown": "x"}))) == fluss.ErrorCode.INVALID_CONFIG_EXCEPTION
    # max.bucket.num is 4096 (the Java test cluster is set so: 0.9.1's default is 128000)
    assert await fails_with(admin.create_table(fluss.TablePath(db, "bad"), fluss.TableDescriptor(
        schema, bucket_count=5000))) == fluss.ErrorCode.BUCKET_MAX_NUM_EXCEPTION
    too_many = str(fluss_server.tablet_servers + 1)
    assert await fails_with(admin.create_table(fluss.TablePath(db, "bad"), fluss.TableDescriptor(
        schema, properties={"table.replication.factor": too_many}))) == fluss.ErrorCode.INVALID_REPLICATION_FACTOR
    await call(admin.drop_table(path))
    assert not await call(admin.table_exists(path))
    assert await call(admin.list_tables(db)) == []


async def test_partitions(admin, db):
    path = fluss.TablePath(db, "parted")
    schema = fluss.Schema(pa.schema([("id", pa.int32()), ("region", pa.string()), ("year", pa.string())]),
                          primary_keys=["id", "region", "year"])
    await call(admin.create_table(path, fluss.TableDescriptor(schema, partition_keys=["region", "year"],
                                                              bucket_count=2)))
    info = await call(admin.get_table_info(path))
    assert info.is_partitioned() and info.get_partition_keys() == ["region", "year"]
    assert info.get_bucket_keys() == ["id"]
    await call(admin.create_partition(path, {"region": "US", "year": "2024"}))
    await call(admin.create_partition(path, {"region": "EU", "year": "2024"}))
    await call(admin.create_partition(path, {"year": "2025", "region": "EU"}))
    parts = await call(admin.list_partition_infos(path))
    assert [p.partition_name for p in parts] == ["US$2024", "EU$2024", "EU$2025"]
    assert len({p.partition_id for p in parts}) == 3
    eu = await call(admin.list_partition_infos(path, {"region": "EU"}))
    assert sorted(p.partition_name for p in eu) == ["EU$2024", "EU$2025"]
    assert await fails_with(admin.create_partition(path, {"region": "US", "year": "2024"})) == \
        fluss.ErrorCode.PARTITION_ALREADY_EXISTS
    await call(admin.create_partition(path, {"region": "US", "year": "2024"}, ignore_if_exists=True))
    assert await fails_with(admin.create_partition(path, {"region": "US"})) == \
        fluss.ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION
    await call(admin.drop_partition(path, {"region": "EU", "year": "2024"}))
    assert await fails_with(admin.drop_partition(path, {"region": "EU", "year": "2024"})) == \
        fluss.ErrorCode.PARTITION_NOT_EXISTS
    await call(admin.drop_partition(path, {"region": "EU", "year": "2024"}, ignore_if_not_exists=True))
    assert [p.partition_name for p in await call(admin.list_partition_infos(path))] == ["US$2024", "EU$2025"]
    flat = fluss.TablePath(db, "flat")
    await call(admin.create_table(flat, fluss.TableDescriptor(fluss.Schema(pa.schema([("a", pa.int32())])))))
    assert await fails_with(admin.create_partition(flat, {"a": "1"})) == \
        fluss.ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION


async def test_auto_partitioned_table(admin, db):
    path = fluss.TablePath(db, "auto")
    schema = fluss.Schema(pa.schema([("v", pa.int32()), ("day", pa.string())]))
    await call(admin.create_table(path, fluss.TableDescriptor(schema, partition_keys=["day"], properties={
        "table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "DAY"})))
    # the coordinator creates them on its own schedule: Java's right after CREATE_TABLE has answered
    deadline = time.monotonic() + 20
    # polls the server (another process) until its auto-partitioning has run
    while len(parts := await call(admin.list_partition_infos(path))) < 2 and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    assert len(parts) == 2 and all(len(p.partition_name) == 8 for p in parts)


async def test_server_nodes(admin, fluss_server):
    nodes = await call(admin.get_server_nodes())
    kinds = sorted((n.server_type, n.id) for n in nodes)
    assert kinds == [("CoordinatorServer", 0)] + [("TabletServer", i) for i in range(fluss_server.tablet_servers)]
    coord = [n for n in nodes if n.server_type == "CoordinatorServer"][0]
    assert f"{coord.host}:{coord.port}" == fluss_server.bootstrap_servers


async def test_lake_snapshot_and_offsets(admin, db):
    path = fluss.TablePath(db, "offs")
    await call(admin.create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema([("a", pa.int32())])),
                                                              bucket_count=3)))
    assert await fails_with(admin.get_latest_lake_snapshot(path)) == fluss.ErrorCode.LAKE_SNAPSHOT_NOT_EXIST
    await wait_for_leaders(fluss, admin, path, [0, 1, 2])
    for spec in (fluss.OffsetSpec.earliest(), fluss.OffsetSpec.latest()):
        assert await call(admin.list_offsets(path, [0, 1, 2], spec)) == {0: 0, 1: 0, 2: 0}


async def test_multi_tablet_cluster(start_server, unique_name):
    srv = start_server(tablet_servers=3, sasl=False)
    c = await call(fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": srv.bootstrap_servers})))
    try:
        admin = c.get_admin()
        nodes = await call(admin.get_server_nodes())
        assert sorted(n.id for n in nodes if n.server_type == "TabletServer") == [0, 1, 2]
        path = fluss.TablePath("fluss", unique_name("multi"))
        await call(admin.create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema([("a", pa.int32())])),
                                                                  bucket_count=6)))
        # each bucket is answered by its own leader (a wrong one would say NOT_LEADER_OR_FOLLOWER)
        assert await call(admin.list_offsets(path, list(range(6)), fluss.OffsetSpec.latest())) == \
            {b: 0 for b in range(6)}
        table = await call(c.get_table(path))
        assert table.get_table_info().num_buckets == 6
    finally:
        await c.close()
