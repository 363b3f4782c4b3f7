"""FlussAdmin against the embedded server: every method, its results and its error codes, next to pyfluss."""
from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest

import fluss_fast
from fluss_fast import ErrorCode, FlussError

SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("region", pa.string()), pa.field("v", pa.int64())])


async def _code(aw) -> int:
    with pytest.raises(FlussError) as info:
        await aw
    return info.value.error_code


async def test_databases(conn, unique_name):
    admin = conn.get_admin()
    name = unique_name("db")
    assert not await admin.database_exists(name)
    await admin.create_database(name, fluss_fast.DatabaseDescriptor("a comment", {"owner": "me"}))
    assert await admin.database_exists(name)
    assert name in await admin.list_databases()
    assert "fluss" in await admin.list_databases()
    info = await admin.get_database_info(name)
    assert info.database_name == name
    assert info.get_database_descriptor().comment == "a comment"
    assert info.get_database_descriptor().get_custom_properties() == {"owner": "me"}
    assert abs(info.created_time - time.time() * 1000) < 60_000
    assert await _code(admin.create_database(name)) == ErrorCode.DATABASE_ALREADY_EXIST
    await admin.create_database(name, ignore_if_exists=True)
    await admin.create_table(fluss_fast.TablePath(name, "t"), fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA)))
    assert await _code(admin.drop_database(name, cascade=False)) == ErrorCode.DATABASE_NOT_EMPTY
    await admin.drop_database(name)  # cascade defaults to True
    assert not await admin.database_exists(name)
    assert await _code(admin.drop_database(name)) == ErrorCode.DATABASE_NOT_EXIST
    await admin.drop_database(name, ignore_if_not_exists=True)
    err = None
    try:
        await admin.get_database_info(name)
    except FlussError as exc:
        err = exc
    assert err is not None and err.error_code == ErrorCode.DATABASE_NOT_EXIST and name in err.message
    assert await _code(admin.list_tables(name)) == ErrorCode.DATABASE_NOT_EXIST
    assert await _code(admin.create_database("bad name!")) == ErrorCode.INVALID_DATABASE_EXCEPTION


async def test_tables(conn, db):
    admin = conn.get_admin()
    path = fluss_fast.TablePath(db, "events")
    desc = fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA), bucket_count=3, comment="hi",
                                      custom_properties={"k": "v"})
    assert not await admin.table_exists(path)
    await admin.create_table(path, desc)
    assert await admin.table_exists(path)
    assert await admin.list_tables(db) == ["events"]
    info = await admin.get_table_info(path)
    assert info.table_path == path and info.num_buckets == 3 and info.comment == "hi"
    assert info.get_column_names() == ["id", "region", "v"] and info.get_column_count() == 3
    assert info.get_custom_properties() == {"k": "v"}
    assert not info.has_primary_key() and not info.is_partitioned()
    assert info.schema_id >= 0 and info.table_id >= 0 and info.created_time > 0
    assert info.get_schema().get_column_types() == ["int", "string", "bigint"]
    # Older guide spelling.
    assert (await admin.get_table(path)).table_id == info.table_id
    assert await _code(admin.create_table(path, desc)) == ErrorCode.TABLE_ALREADY_EXIST
    await admin.create_table(path, desc, ignore_if_exists=True)
    missing = fluss_fast.TablePath(db, "missing")
    assert await _code(admin.get_table_info(missing)) == ErrorCode.TABLE_NOT_EXIST
    assert await _code(admin.drop_table(missing)) == ErrorCode.TABLE_NOT_EXIST
    await admin.drop_table(missing, ignore_if_not_exists=True)
    assert await _code(admin.create_table(fluss_fast.TablePath("no_such_db_x", "t"), desc)) == \
        ErrorCode.DATABASE_NOT_EXIST
    await admin.drop_table(path)
    assert not await admin.table_exists(path)
    # A re-created table gets a new id, and the client's cache must not serve the old one.
    await admin.create_table(path, desc)
    assert (await admin.get_table_info(path)).table_id != info.table_id


async def test_primary_key_table_info(conn, db):
    admin = conn.get_admin()
    path = fluss_fast.TablePath(db, "pk")
    schema = fluss_fast.Schema(SCHEMA, primary_keys=["id", "region"])
    await admin.create_table(path, fluss_fast.TableDescriptor(schema, partition_keys=["region"], bucket_count=2))
    info = await admin.get_table_info(path)
    assert info.get_primary_keys() == ["id", "region"] and info.has_primary_key()
    assert info.get_partition_keys() == ["region"] and info.is_partitioned()
    assert info.get_bucket_keys() == ["id"]
    assert info.get_schema().get_column_types()[:2] == ["int NOT NULL", "string NOT NULL"]


async def test_partitions(conn, db):
    admin = conn.get_admin()
    path = fluss_fast.TablePath(db, "parted")
    await admin.create_table(path, fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA), partition_keys=["region"],
                                                              bucket_count=2))
    assert await admin.list_partition_infos(path) == []
    await admin.create_partition(path, {"region": "US"})
    await admin.create_partition(path, {"region": "EU"})
    assert await _code(admin.create_partition(path, {"region": "US"})) == ErrorCode.PARTITION_ALREADY_EXISTS
    await admin.create_partition(path, {"region": "US"}, ignore_if_exists=True)
    assert await _code(admin.create_partition(path, {"nope": "x"})) == ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION
    infos = await admin.list_partition_infos(path)
    assert sorted(p.partition_name for p in infos) == ["EU", "US"]
    assert len({p.partition_id for p in infos}) == 2
    only_us = await admin.list_partition_infos(path, {"region": "US"})
    assert [p.partition_name for p in only_us] == ["US"]
    offsets = await admin.list_partition_offsets(path, "US", [0, 1], fluss_fast.OffsetSpec.latest())
    assert offsets == {0: 0, 1: 0}
    assert await _code(admin.list_partition_offsets(path, "XX", [0], fluss_fast.OffsetSpec.latest())) == \
        ErrorCode.PARTITION_NOT_EXISTS
    await admin.drop_partition(path, {"region": "EU"})
    assert [p.partition_name for p in await admin.list_partition_infos(path)] == ["US"]
    assert await _code(admin.drop_partition(path, {"region": "EU"})) == ErrorCode.PARTITION_NOT_EXISTS
    await admin.drop_partition(path, {"region": "EU"}, ignore_if_not_exists=True)
    plain = fluss_fast.TablePath(db, "plain")
    await admin.create_table(plain, fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA)))
    assert await _code(admin.create_partition(plain, {"region": "US"})) == ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION


async def test_list_offsets(conn, db):
    admin = conn.get_admin()
    path = fluss_fast.TablePath(db, "offs")
    await admin.create_table(path, fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA), bucket_count=3))
    for spec in (fluss_fast.OffsetSpec.earliest(), fluss_fast.OffsetSpec.latest()):
        assert await admin.list_offsets(path, [2, 0, 1], spec) == {2: 0, 0: 0, 1: 0}
    assert list(await admin.list_offsets(path, [2, 0, 1], fluss_fast.OffsetSpec.latest())) == [2, 0, 1]
    # Older guide spellings.
    assert await admin.list_offsets(path, bucket_ids=[0, 1], offset_type="latest") == {0: 0, 1: 0}
    assert await admin.list_offsets(path, [0], offset_type="earliest") == {0: 0}
    with pytest.raises(FlussError) as info:
        await admin.list_offsets(path, [0], offset_type="sideways")
    assert info.value.error_code == ErrorCode.CLIENT_ERROR
    with pytest.raises(FlussError) as info:
        await admin.list_offsets(path, [-1], fluss_fast.OffsetSpec.latest())
    assert info.value.message == "Invalid bucket_id: -1. Bucket IDs must be non-negative"
    assert info.value.error_code == ErrorCode.CLIENT_ERROR
    assert await _code(admin.list_offsets(path, [], fluss_fast.OffsetSpec.latest())) == ErrorCode.CLIENT_ERROR
    assert await _code(admin.list_offsets(fluss_fast.TablePath(db, "zz"), [0], fluss_fast.OffsetSpec.latest())) == \
        ErrorCode.TABLE_NOT_EXIST
    with pytest.raises(FlussError):
        await admin.list_offsets(path, [7], fluss_fast.OffsetSpec.latest())
    future = int(time.time() * 1000) + 3_600_000
    assert await _code(admin.list_offsets(path, [0], fluss_fast.OffsetSpec.timestamp(future))) == \
        ErrorCode.INVALID_TIMESTAMP_EXCEPTION


async def test_lake_snapshot_and_server_nodes(conn, db, fluss_server):
    admin = conn.get_admin()
    path = fluss_fast.TablePath(db, "lake")
    await admin.create_table(path, fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA)))
    assert await _code(admin.get_latest_lake_snapshot(path)) == ErrorCode.LAKE_SNAPSHOT_NOT_EXIST
    nodes = await admin.get_server_nodes()
    assert nodes[0].server_type == "CoordinatorServer" and nodes[0].uid == f"cs-{nodes[0].id}"
    assert f"{nodes[0].host}:{nodes[0].port}" == fluss_server.bootstrap_servers
    tablets = [n for n in nodes if n.server_type == "TabletServer"]
    assert len(tablets) == fluss_server.tablet_servers
    assert all(n.uid == f"ts-{n.id}" for n in tablets)


async def test_argument_types_are_checked(conn):
    admin = conn.get_admin()
    with pytest.raises(TypeError):
        await admin.table_exists("db.t")
    with pytest.raises(TypeError):
        await admin.create_table(fluss_fast.TablePath("fluss", "x"), "not a descriptor")
    with pytest.raises(TypeError):
        await admin.create_partition(fluss_fast.TablePath("fluss", "x"), {"a": 1})


async def test_older_guide_spellings(fluss_server):
    conn = await fluss_fast.FlussConnection.connect(
        fluss_fast.Config({"bootstrap.servers": fluss_server.bootstrap_servers}))
    admin = await conn.get_admin()
    assert isinstance(admin, fluss_fast.FlussAdmin)
    assert "fluss" in await admin.list_databases()
    conn.close()  # not awaited in the older guide, and must still close
    for _ in range(100):
        if conn.closed:
            break
        await asyncio.sleep(0.01)  # the close runs on the client's runtime thread
    assert conn.closed
    with pytest.raises(FlussError):
        await admin.list_databases()


async def test_sasl(fluss_server):
    cfg = {"bootstrap.servers": fluss_server.sasl_bootstrap_servers, "security.protocol": "sasl",
           "security.sasl.username": "alice", "security.sasl.password": "alice-pw"}
    async with await fluss_fast.FlussConnection.create(fluss_fast.Config(cfg)) as conn:
        assert "fluss" in await conn.get_admin().list_databases()
        nodes = await conn.get_admin().get_server_nodes()
        assert f"{nodes[0].host}:{nodes[0].port}" == fluss_server.sasl_bootstrap_servers
    bad = dict(cfg, **{"security.sasl.password": "wrong"})
    with pytest.raises(FlussError) as info:
        await fluss_fast.FlussConnection.create(fluss_fast.Config(bad))
    assert info.value.error_code == ErrorCode.AUTHENTICATE_EXCEPTION
    assert "alice" in info.value.message
    # A plaintext client on the SASL port is refused, not left hanging.
    plain = {"bootstrap.servers": fluss_server.sasl_bootstrap_servers, "request-timeout": "5000"}
    with pytest.raises(FlussError) as info:
        await fluss_fast.FlussConnection.create(fluss_fast.Config(plain))
    assert info.value.error_code == ErrorCode.AUTHENTICATE_EXCEPTION


async def test_same_error_codes_as_pyfluss(fluss_server, unique_name):
    fluss = pytest.importorskip("fluss")
    name = unique_name("cmp")
    results = {}
    for mod in (fluss, fluss_fast):
        conn = await mod.FlussConnection.create(mod.Config({"bootstrap.servers": fluss_server.bootstrap_servers}))
        admin = conn.get_admin()
        db = f"{name}_{mod.__name__}"
        schema = mod.Schema(SCHEMA)
        # (method, arguments): plain values, so nothing refers back to this loop's variables
        t, nope = mod.TablePath(db, "t"), mod.TablePath(db, "nope")
        ops = [
            (admin.create_database, (db,)),
            (admin.create_database, (db,)),
            (admin.get_database_info, (db + "_missing",)),
            (admin.list_tables, (db + "_missing",)),
            (admin.create_table, (t, mod.TableDescriptor(schema, bucket_count=2))),
            (admin.create_table, (t, mod.TableDescriptor(schema, bucket_count=2))),
            (admin.get_table_info, (nope,)),
            (admin.drop_table, (nope,)),
            (admin.create_partition, (t, {"region": "US"})),
            (admin.list_offsets, (t, [0, 1], mod.OffsetSpec.latest())),
            (admin.list_offsets, (t, [-1], mod.OffsetSpec.latest())),
            (admin.get_latest_lake_snapshot, (t,)),
            (admin.drop_database, (db,), {"cascade": False}),
            (admin.drop_database, (db,)),
            (admin.drop_database, (db,)),
        ]
        out = []
        for fn, args, *kw in ops:
            try:
                r = await fn(*args, **(kw[0] if kw else {}))
                out.append(("ok", r if isinstance(r, (dict, list, bool, type(None))) else type(r).__name__))
            except FlussError if mod is fluss_fast else fluss.FlussError as exc:  # noqa: B030
                out.append(("error", exc.error_code))
        results[mod.__name__] = out
        await conn.close()
    assert results["fluss_fast"] == results["fluss"]
