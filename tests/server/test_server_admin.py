"""The embedded server's coordinator, driven with raw protobuf requests over real sockets."""
from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

import pytest

from fluss_fast.error_codes import Errors
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import API_KEYS, Api

from wire import WireClient, WireError, spec, table_path


def col(name, typ, cid, nullable=True, **extra):
    dt = {"type": typ, **extra}
    if not nullable:
        dt["nullable"] = False
    return {"name": name, "data_type": dt, "id": cid}


def descriptor(columns, pk=None, partition_keys=(), bucket_keys=None, bucket_count=None, properties=None,
               custom=None, comment=None, ids=True):
    cols = [dict(c) for c in columns]
    if not ids:
        for c in cols:
            c.pop("id", None)
    schema = {"version": 1, "columns": cols}
    if pk:
        schema["primary_key"] = list(pk)
    if ids:
        schema["highest_field_id"] = len(cols) - 1
    d = {"version": 1, "schema": schema, "partition_key": list(partition_keys),
         "properties": dict(properties or {}), "custom_properties": dict(custom or {})}
    if bucket_keys is not None:
        d["bucket_key"] = list(bucket_keys)
    if bucket_count is not None:
        d["bucket_count"] = bucket_count
    if comment is not None:
        d["comment"] = comment
    return json.dumps(d).encode()


SIMPLE = [col("id", "INTEGER", 0), col("name", "STRING", 1)]


@pytest.fixture
def coord(fluss_server):
    with WireClient(fluss_server.bootstrap_servers) as c:
        yield c


@pytest.fixture
def db(coord, unique_name):
    name = unique_name("db")
    coord.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name=name, ignore_if_exists=False))
    yield name
    coord.call(Api.DROP_DATABASE, pb.DropDatabaseRequest(database_name=name, ignore_if_not_exists=True, cascade=True))


def create_table(c, db, name, desc, ignore=False):
    return c.call(Api.CREATE_TABLE, pb.CreateTableRequest(table_path=table_path(db, name), table_json=desc,
                                                          ignore_if_exists=ignore))


def table_info(c, db, name):
    r = c.call(Api.GET_TABLE_INFO, pb.GetTableInfoRequest(table_path=table_path(db, name)))
    return r, json.loads(r.table_json)


def error_code(fn, *args, **kwargs) -> int:
    with pytest.raises(WireError) as e:
        fn(*args, **kwargs)
    assert e.value.message, "every error carries a message"
    return e.value.code


# -- handshake and topology --------------------------------------------------------------------------
def test_api_versions_per_role(fluss_server, coord):
    assert coord.server_type == 1
    expected = {k.id for k in API_KEYS.values() if k.coordinator}
    assert set(coord.api_versions) == expected
    meta = coord.call(Api.GET_METADATA, pb.MetadataRequest())
    assert meta.coordinator_server.node_id == 0
    assert f"{meta.coordinator_server.host}:{meta.coordinator_server.port}" == fluss_server.bootstrap_servers
    assert [t.node_id for t in meta.tablet_servers] == [0]
    tablet = meta.tablet_servers[0]
    with WireClient(f"{tablet.host}:{tablet.port}") as t:
        assert t.server_type == 2
        assert set(t.api_versions) == {k.id for k in API_KEYS.values() if k.tablet}
        assert t.api_versions[Api.PUT_KV] == (0, 2)
        # read-only admin calls work on tablet servers too
        assert "fluss" in t.call(Api.LIST_DATABASES, pb.ListDatabasesRequest()).database_name


def test_metadata_over_sasl_advertises_sasl_addresses(fluss_server):
    with WireClient(fluss_server.sasl_bootstrap_servers) as c:
        c.authenticate("admin", "admin-secret")
        meta = c.call(Api.GET_METADATA, pb.MetadataRequest())
    assert f"{meta.coordinator_server.host}:{meta.coordinator_server.port}" == fluss_server.sasl_bootstrap_servers
    with WireClient(fluss_server.bootstrap_servers) as c:
        plain = c.call(Api.GET_METADATA, pb.MetadataRequest())
    assert {t.port for t in meta.tablet_servers}.isdisjoint({t.port for t in plain.tablet_servers})


def test_multi_tablet_leaders_and_metadata(start_server, unique_name):
    srv = start_server(tablet_servers=3, sasl=False)
    with WireClient(srv.bootstrap_servers) as c:
        meta = c.call(Api.GET_METADATA, pb.MetadataRequest())
        assert sorted(t.node_id for t in meta.tablet_servers) == [0, 1, 2]
        assert len({t.port for t in meta.tablet_servers}) == 3
        create_table(c, "fluss", "t3", descriptor(SIMPLE, bucket_count=5,
                                                  properties={"table.replication.factor": "2"}))
        meta = c.call(Api.GET_METADATA, pb.MetadataRequest(table_path=[table_path("fluss", "t3")]))
        tm = meta.table_metadata[0]
        assert [b.bucket_id for b in tm.bucket_metadata] == [0, 1, 2, 3, 4]
        for b in tm.bucket_metadata:
            assert b.leader_id == (tm.table_id + b.bucket_id) % 3
            assert b.leader_epoch == 0
            assert list(b.replica_id)[0] == b.leader_id and len(b.replica_id) == 2
        assert error_code(create_table, c, "fluss", "rf4", descriptor(SIMPLE, properties={
            "table.replication.factor": "4"})) == Errors.INVALID_REPLICATION_FACTOR


# -- databases ---------------------------------------------------------------------------------------
def test_database_lifecycle(coord, unique_name):
    name = unique_name("dbx")
    desc = json.dumps({"version": 1, "comment": "my db", "custom_properties": {"owner": "me"}}).encode()
    coord.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name=name, ignore_if_exists=False,
                                                             database_json=desc))
    assert coord.call(Api.DATABASE_EXISTS, pb.DatabaseExistsRequest(database_name=name)).exists
    assert name in coord.call(Api.LIST_DATABASES, pb.ListDatabasesRequest()).database_name
    info = coord.call(Api.GET_DATABASE_INFO, pb.GetDatabaseInfoRequest(database_name=name))
    assert json.loads(info.database_json) == {"version": 1, "comment": "my db", "custom_properties": {"owner": "me"}}
    assert info.created_time == info.modified_time > 0
    summaries = coord.call(Api.LIST_DATABASES, pb.ListDatabasesRequest(include_summary=True))
    assert not summaries.database_name
    assert any(s.database_name == name and s.table_count == 0 for s in summaries.database_summary)
    assert error_code(coord.call, Api.CREATE_DATABASE, pb.CreateDatabaseRequest(
        database_name=name, ignore_if_exists=False)) == Errors.DATABASE_ALREADY_EXIST
    coord.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name=name, ignore_if_exists=True))
    create_table(coord, name, "t", descriptor(SIMPLE))
    summaries = coord.call(Api.LIST_DATABASES, pb.ListDatabasesRequest(include_summary=True))
    assert any(s.database_name == name and s.table_count == 1 for s in summaries.database_summary)
    assert error_code(coord.call, Api.DROP_DATABASE, pb.DropDatabaseRequest(
        database_name=name, ignore_if_not_exists=False, cascade=False)) == Errors.DATABASE_NOT_EMPTY
    coord.call(Api.DROP_DATABASE, pb.DropDatabaseRequest(database_name=name, ignore_if_not_exists=False, cascade=True))
    assert not coord.call(Api.DATABASE_EXISTS, pb.DatabaseExistsRequest(database_name=name)).exists
    assert not coord.call(Api.TABLE_EXISTS, pb.TableExistsRequest(table_path=table_path(name, "t"))).exists
    assert error_code(coord.call, Api.DROP_DATABASE, pb.DropDatabaseRequest(
        database_name=name, ignore_if_not_exists=False, cascade=True)) == Errors.DATABASE_NOT_EXIST
    coord.call(Api.DROP_DATABASE, pb.DropDatabaseRequest(database_name=name, ignore_if_not_exists=True, cascade=True))
    assert error_code(coord.call, Api.GET_DATABASE_INFO,
                      pb.GetDatabaseInfoRequest(database_name=name)) == Errors.DATABASE_NOT_EXIST
    assert error_code(coord.call, Api.LIST_TABLES,
                      pb.ListTablesRequest(database_name=name)) == Errors.DATABASE_NOT_EXIST


@pytest.mark.parametrize("bad", ["", "a.b", "__internal", "x" * 201, "sp ace", "ü"])
def test_database_name_rules(coord, bad):
    assert error_code(coord.call, Api.CREATE_DATABASE, pb.CreateDatabaseRequest(
        database_name=bad, ignore_if_exists=True)) == Errors.INVALID_DATABASE_EXCEPTION


def test_builtin_database_cannot_be_dropped(coord):
    assert "fluss" in coord.call(Api.LIST_DATABASES, pb.ListDatabasesRequest()).database_name
    assert error_code(coord.call, Api.DROP_DATABASE, pb.DropDatabaseRequest(
        database_name="fluss", ignore_if_not_exists=False, cascade=True)) == Errors.UNKNOWN_SERVER_ERROR


def test_alter_database(coord, db):
    req = pb.AlterDatabaseRequest(database_name=db, ignore_if_not_exists=False, comment="new")
    req.config_changes.add(config_key="k", config_value="v", op_type=0)
    coord.call(Api.ALTER_DATABASE, req)
    info = coord.call(Api.GET_DATABASE_INFO, pb.GetDatabaseInfoRequest(database_name=db))
    assert json.loads(info.database_json) == {"version": 1, "comment": "new", "custom_properties": {"k": "v"}}


# -- tables ------------------------------------------------------------------------------------------
def test_pk_table_defaults_and_ids(coord, db):
    create_table(coord, db, "pk", descriptor(SIMPLE, pk=["id"]))
    r, stored = table_info(coord, db, "pk")
    assert r.schema_id == 1 and r.created_time == r.modified_time > 0
    assert stored["bucket_key"] == ["id"] and stored["bucket_count"] == 1 and stored["partition_key"] == []
    assert stored["properties"] == {"table.replication.factor": "1", "table.kv.format-version": "2",
                                    "table.kv.standby-replica.enabled": "true"}
    assert stored["schema"]["columns"][0]["data_type"] == {"type": "INTEGER", "nullable": False}
    assert stored["schema"]["primary_key"] == ["id"] and stored["schema"]["highest_field_id"] == 1
    create_table(coord, db, "log", descriptor(SIMPLE, ids=False))
    r2, stored2 = table_info(coord, db, "log")
    assert r2.table_id > r.table_id
    assert stored2["bucket_key"] == [] and stored2["bucket_count"] == 1
    assert stored2["properties"] == {"table.replication.factor": "1"}
    assert [c["id"] for c in stored2["schema"]["columns"]] == [0, 1]
    schema = coord.call(Api.GET_TABLE_SCHEMA, pb.GetTableSchemaRequest(table_path=table_path(db, "pk")))
    assert schema.schema_id == 1 and json.loads(schema.schema_json) == stored["schema"]
    assert error_code(coord.call, Api.GET_TABLE_SCHEMA, pb.GetTableSchemaRequest(
        table_path=table_path(db, "pk"), schema_id=7)) == Errors.SCHEMA_NOT_EXIST
    assert error_code(coord.call, Api.GET_TABLE_SCHEMA, pb.GetTableSchemaRequest(
        table_path=table_path(db, "nope"))) == Errors.SCHEMA_NOT_EXIST
    assert sorted(coord.call(Api.LIST_TABLES, pb.ListTablesRequest(database_name=db)).table_name) == ["log", "pk"]
    # metadata: same table_json, buckets with leaders
    meta = coord.call(Api.GET_METADATA, pb.MetadataRequest(table_path=[table_path(db, "pk")]))
    tm = meta.table_metadata[0]
    assert tm.table_json == r.table_json and tm.table_id == r.table_id and tm.schema_id == 1
    assert [(b.bucket_id, b.leader_id, list(b.replica_id)) for b in tm.bucket_metadata] == [(0, 0, [0])]


def test_create_table_errors(coord, db):
    create_table(coord, db, "t", descriptor(SIMPLE))
    assert error_code(create_table, coord, db, "t", descriptor(SIMPLE)) == Errors.TABLE_ALREADY_EXIST
    create_table(coord, db, "t", descriptor(SIMPLE), ignore=True)
    assert error_code(create_table, coord, "no_such_db", "t", descriptor(SIMPLE)) == Errors.DATABASE_NOT_EXIST
    assert error_code(create_table, coord, db, "bad.name", descriptor(SIMPLE)) == Errors.INVALID_TABLE_EXCEPTION
    assert error_code(create_table, coord, db, "__x", descriptor(SIMPLE)) == Errors.INVALID_TABLE_EXCEPTION
    assert error_code(create_table, coord, db, "j", b"{not json") == Errors.INVALID_TABLE_EXCEPTION
    cases = [
        (descriptor(SIMPLE, pk=["nope"]), Errors.INVALID_TABLE_EXCEPTION),
        (descriptor([col("a", "INTEGER", 0), col("a", "STRING", 1)]), Errors.INVALID_TABLE_EXCEPTION),
        (descriptor(SIMPLE, bucket_keys=["zzz"]), Errors.INVALID_TABLE_EXCEPTION),
        (descriptor(SIMPLE, pk=["id"], bucket_keys=["name"]), Errors.INVALID_TABLE_EXCEPTION),
        (descriptor(SIMPLE, pk=["id"], partition_keys=["name"]), Errors.INVALID_TABLE_EXCEPTION),
        (descriptor(SIMPLE, pk=["name"], partition_keys=["name"]), Errors.INVALID_TABLE_EXCEPTION),
        (descriptor(SIMPLE, partition_keys=["name"], bucket_keys=["name"]), Errors.INVALID_TABLE_EXCEPTION),
        (descriptor([col("_change_type", "INTEGER", 0)]), Errors.INVALID_TABLE_EXCEPTION),
        (descriptor([col("a", "ARRAY", 0, element_type={"type": "INTEGER"})], pk=["a"]),
         Errors.INVALID_TABLE_EXCEPTION),
        (descriptor([col("a", "INTEGER", 0), col("m", "MAP", 1, key_type={"type": "STRING"},
                                                value_type={"type": "INTEGER"})], partition_keys=["m"]),
         Errors.INVALID_TABLE_EXCEPTION),
        (descriptor(SIMPLE, bucket_count=4097), Errors.BUCKET_MAX_NUM_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.no.such.option": "1"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"custom.key": "1"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.log.format": "PARQUET"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.log.arrow.compression.type": "GZIP"}),
         Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.log.arrow.compression.zstd.level": "23"}),
         Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.replication.factor": "0"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.replication.factor": "two"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.log.ttl": "forever"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.merge-engine": "first_row"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.delete.behavior": "IGNORE"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, pk=["id"], properties={"table.merge-engine": "versioned"}),
         Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, pk=["id"], properties={"table.merge-engine": "versioned",
                                                   "table.merge-engine.versioned.ver-column": "name"}),
         Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, pk=["id"], properties={"table.log.format": "INDEXED"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, pk=["id"], properties={"table.kv.format-version": "3"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.auto-partition.enabled": "true"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, partition_keys=["name"], properties={"table.auto-partition.enabled": "true",
                                                                 "table.auto-partition.time-unit": "WEEK"}),
         Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, partition_keys=["name"], properties={"table.auto-partition.time-format": "MM-yyyy"}),
         Errors.INVALID_TABLE_EXCEPTION),
        (descriptor([col("a", "STRING", 0), col("b", "STRING", 1), col("c", "INTEGER", 2)],
                    partition_keys=["a", "b"], properties={"table.auto-partition.enabled": "true"}),
         Errors.INVALID_TABLE_EXCEPTION),
        (descriptor(SIMPLE, pk=["id"], properties={"table.statistics.columns": "*"}), Errors.INVALID_CONFIG_EXCEPTION),
        (descriptor(SIMPLE, properties={"table.statistics.columns": "nope"}), Errors.INVALID_CONFIG_EXCEPTION),
    ]
    for i, (desc, code) in enumerate(cases):
        got = error_code(create_table, coord, db, f"bad{i}", desc)
        assert got == code, (i, json.loads(desc), got)
        assert not coord.call(Api.TABLE_EXISTS, pb.TableExistsRequest(table_path=table_path(db, f"bad{i}"))).exists


def test_valid_options_are_accepted_and_stored(coord, db):
    props = {"table.log.format": "indexed", "table.log.ttl": "3 d", "table.log.arrow.compression.type": "LZ4_FRAME",
             "table.datalake.freshness": "5min", "table.statistics.columns": "id,name",
             "table.log.tiered.local-segments": "3"}
    create_table(coord, db, "opts", descriptor(SIMPLE, properties=props, custom={"anything": "goes"},
                                               comment="hello"))
    _, stored = table_info(coord, db, "opts")
    assert stored["properties"] == {**props, "table.replication.factor": "1"}
    assert stored["custom_properties"] == {"anything": "goes"} and stored["comment"] == "hello"
    create_table(coord, db, "fr", descriptor(SIMPLE, pk=["id"], properties={"table.merge-engine": "FIRST_ROW"}))
    _, stored = table_info(coord, db, "fr")
    assert stored["properties"]["table.delete.behavior"] == "IGNORE"


def test_drop_table_and_ids_never_reused(coord, db):
    create_table(coord, db, "d", descriptor(SIMPLE))
    first, _ = table_info(coord, db, "d")
    coord.call(Api.DROP_TABLE, pb.DropTableRequest(table_path=table_path(db, "d"), ignore_if_not_exists=False))
    assert error_code(table_info, coord, db, "d") == Errors.TABLE_NOT_EXIST
    assert error_code(coord.call, Api.DROP_TABLE, pb.DropTableRequest(
        table_path=table_path(db, "d"), ignore_if_not_exists=False)) == Errors.TABLE_NOT_EXIST
    coord.call(Api.DROP_TABLE, pb.DropTableRequest(table_path=table_path(db, "d"), ignore_if_not_exists=True))
    create_table(coord, db, "d", descriptor(SIMPLE))
    again, _ = table_info(coord, db, "d")
    assert again.table_id > first.table_id


def test_metadata_errors(coord, db):
    # as Java's MetadataManager.getTables: the TableNotExistException wrapped in a FlussRuntimeException
    assert error_code(coord.call, Api.GET_METADATA, pb.MetadataRequest(
        table_path=[table_path(db, "missing")])) == Errors.UNKNOWN_SERVER_ERROR
    create_table(coord, db, "p", descriptor(SIMPLE, partition_keys=["name"]))
    req = pb.MetadataRequest()
    req.partitions_path.add(database_name=db, table_name="p", partition_name="nope")
    assert error_code(coord.call, Api.GET_METADATA, req) == Errors.PARTITION_NOT_EXISTS
    req = pb.MetadataRequest(table_path=[table_path(db, "p")], partitions_id=[987654321])
    assert error_code(coord.call, Api.GET_METADATA, req) == Errors.PARTITION_NOT_EXISTS


# -- partitions --------------------------------------------------------------------------------------
def test_partitions(coord, db):
    cols = [col("a", "INTEGER", 0), col("region", "STRING", 1), col("year", "STRING", 2)]
    create_table(coord, db, "p", descriptor(cols, partition_keys=["region", "year"], bucket_count=2))
    tp = table_path(db, "p")
    coord.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(table_path=tp, partition_spec=spec(
        year="2024", region="US"), ignore_if_not_exists=False))
    coord.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(table_path=tp, partition_spec=spec(
        region="EU", year="2024"), ignore_if_not_exists=False))
    coord.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(table_path=tp, partition_spec=spec(
        region="EU", year="2025"), ignore_if_not_exists=False))
    infos = coord.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(table_path=tp)).partitions_info
    specs = [[(kv.key, kv.value) for kv in i.partition_spec.partition_key_values] for i in infos]
    assert specs == [[("region", "US"), ("year", "2024")], [("region", "EU"), ("year", "2024")],
                     [("region", "EU"), ("year", "2025")]]
    ids = [i.partition_id for i in infos]
    assert ids == sorted(ids) and len(set(ids)) == 3
    eu = coord.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
        table_path=tp, partial_partition_spec=spec(region="EU"))).partitions_info
    assert [i.partition_id for i in eu] == ids[1:]
    # metadata by name and by id
    req = pb.MetadataRequest(table_path=[tp], partitions_id=[ids[2]])
    req.partitions_path.add(database_name=db, table_name="p", partition_name="US$2024")
    meta = coord.call(Api.GET_METADATA, req)
    assert not meta.table_metadata[0].bucket_metadata
    got = {(p.partition_name, p.partition_id) for p in meta.partition_metadata}
    assert got == {("US$2024", ids[0]), ("EU$2025", ids[2])}
    for p in meta.partition_metadata:
        assert [b.leader_id for b in p.bucket_metadata] == [0, 0]
    # errors
    def create(s, ignore=False):
        return coord.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(table_path=tp, partition_spec=s,
                                                                          ignore_if_not_exists=ignore))
    assert error_code(create, spec(region="US", year="2024")) == Errors.PARTITION_ALREADY_EXISTS
    create(spec(region="US", year="2024"), ignore=True)
    assert error_code(create, spec(region="US")) == Errors.PARTITION_SPEC_INVALID_EXCEPTION
    assert error_code(create, spec(region="US", day="1")) == Errors.PARTITION_SPEC_INVALID_EXCEPTION
    assert error_code(create, spec(region="U S", year="1")) == Errors.PARTITION_SPEC_INVALID_EXCEPTION
    assert error_code(create, spec(region="__x", year="1")) == Errors.PARTITION_SPEC_INVALID_EXCEPTION

    def drop(s, ignore=False):
        return coord.call(Api.DROP_PARTITION, pb.DropPartitionRequest(table_path=tp, partition_spec=s,
                                                                      ignore_if_not_exists=ignore))
    drop(spec(region="EU", year="2024"))
    assert error_code(drop, spec(region="EU", year="2024")) == Errors.PARTITION_NOT_EXISTS
    drop(spec(region="EU", year="2024"), ignore=True)
    assert len(coord.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(table_path=tp)).partitions_info) == 2
    create_table(coord, db, "flat", descriptor(SIMPLE))
    assert error_code(coord.call, Api.CREATE_PARTITION, pb.CreatePartitionRequest(
        table_path=table_path(db, "flat"), partition_spec=spec(name="x"), ignore_if_not_exists=False)
    ) == Errors.TABLE_NOT_PARTITIONED_EXCEPTION
    assert error_code(coord.call, Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
        table_path=table_path(db, "flat"))) == Errors.TABLE_NOT_PARTITIONED_EXCEPTION
    assert error_code(coord.call, Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
        table_path=table_path(db, "missing"))) == Errors.TABLE_NOT_EXIST


@pytest.mark.parametrize("unit,fmt", [("DAY", "%Y%m%d"), ("HOUR", "%Y%m%d%H"), ("MONTH", "%Y%m"), ("YEAR", "%Y")])
def test_auto_partitioning(coord, db, unit, fmt):
    props = {"table.auto-partition.enabled": "true", "table.auto-partition.time-unit": unit,
             "table.auto-partition.time-zone": "UTC", "table.auto-partition.num-precreate": "3"}
    create_table(coord, db, "ap", descriptor(SIMPLE, partition_keys=["name"], properties=props))
    infos = coord.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
        table_path=table_path(db, "ap"))).partitions_info
    names = [i.partition_spec.partition_key_values[0].value for i in infos]
    now = datetime.utcnow()
    assert len(names) == 3 and names == sorted(names)
    assert now.strftime(fmt) in names[:2]  # the current period (allowing a boundary tick)
    create = lambda v: coord.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(  # noqa: E731
        table_path=table_path(db, "ap"), partition_spec=spec(name=v), ignore_if_not_exists=False))
    assert error_code(create, "not-a-time") == Errors.PARTITION_SPEC_INVALID_EXCEPTION
    assert error_code(create, "1999" + names[0][4:]) == Errors.PARTITION_SPEC_INVALID_EXCEPTION  # out of date


def test_auto_partition_quarter_and_custom_format(coord, db):
    create_table(coord, db, "q", descriptor(SIMPLE, partition_keys=["name"], properties={
        "table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "QUARTER",
        "table.auto-partition.time-zone": "UTC"}))
    infos = coord.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
        table_path=table_path(db, "q"))).partitions_info
    names = [i.partition_spec.partition_key_values[0].value for i in infos]
    now = datetime.utcnow()
    assert len(names) == 2 and f"{now.year}{(now.month - 1) // 3 + 1}" in names
    create_table(coord, db, "c", descriptor(SIMPLE, partition_keys=["name"], properties={
        "table.auto-partition.enabled": "true", "table.auto-partition.time-format": "yyyy-MM-dd",
        "table.auto-partition.time-zone": "UTC", "table.auto-partition.num-precreate": "1"}))
    infos = coord.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
        table_path=table_path(db, "c"))).partitions_info
    value = infos[0].partition_spec.partition_key_values[0].value
    assert value in (now.strftime("%Y-%m-%d"), (now + timedelta(days=1)).strftime("%Y-%m-%d"))


# -- snapshots, tokens, unimplemented --------------------------------------------------------------
def test_snapshots_and_tokens(coord, db):
    create_table(coord, db, "pk", descriptor(SIMPLE, pk=["id"], bucket_count=3))
    create_table(coord, db, "log", descriptor(SIMPLE))
    assert error_code(coord.call, Api.GET_LAKE_SNAPSHOT, pb.GetLakeSnapshotRequest(
        table_path=table_path(db, "pk"))) == Errors.LAKE_SNAPSHOT_NOT_EXIST
    assert error_code(coord.call, Api.GET_LAKE_SNAPSHOT, pb.GetLakeSnapshotRequest(
        table_path=table_path(db, "zzz"))) == Errors.TABLE_NOT_EXIST
    snaps = coord.call(Api.GET_LATEST_KV_SNAPSHOTS, pb.GetLatestKvSnapshotsRequest(table_path=table_path(db, "pk")))
    assert [s.bucket_id for s in snaps.latest_snapshots] == [0, 1, 2]
    assert not any(s.HasField("snapshot_id") for s in snaps.latest_snapshots)
    assert error_code(coord.call, Api.GET_LATEST_KV_SNAPSHOTS, pb.GetLatestKvSnapshotsRequest(
        table_path=table_path(db, "log"))) == Errors.NON_PRIMARY_KEY_TABLE_EXCEPTION
    tok = coord.call(Api.GET_FILESYSTEM_SECURITY_TOKEN, pb.GetFileSystemSecurityTokenRequest())
    assert tok.schema == "file" and tok.token == b"" and not tok.HasField("expiration_time")
    acl = pb.ListAclsRequest()
    acl.acl_filter.resource_type = 1
    acl.acl_filter.operation_type = 1
    acl.acl_filter.permission_type = 1
    assert error_code(coord.call, Api.LIST_ACLS, acl) == Errors.SECURITY_DISABLED_EXCEPTION
    # a listed but unimplemented API answers at once with the code Java gives for an API it lacks
    rb = pb.RebalanceRequest()
    assert error_code(coord.call, Api.REBALANCE, rb) == Errors.UNSUPPORTED_VERSION


# -- persistence ---------------------------------------------------------------------------------------
def test_everything_survives_restart(start_server):
    srv = start_server(tablet_servers=2, sasl=False)
    with WireClient(srv.bootstrap_servers) as c:
        c.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(
            database_name="keep", ignore_if_exists=False,
            database_json=b'{"version":1,"comment":"c","custom_properties":{"a":"b"}}'))
        create_table(c, "keep", "t1", descriptor(SIMPLE, pk=["id"], bucket_count=4))
        create_table(c, "keep", "gone", descriptor(SIMPLE))
        c.call(Api.DROP_TABLE, pb.DropTableRequest(table_path=table_path("keep", "gone"), ignore_if_not_exists=False))
        create_table(c, "keep", "p", descriptor(SIMPLE, partition_keys=["name"]))
        c.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(table_path=table_path("keep", "p"),
                                                               partition_spec=spec(name="x"),
                                                               ignore_if_not_exists=False))
        before_t1, before_json = table_info(c, "keep", "t1")
        before_p, _ = table_info(c, "keep", "p")
        before_parts = c.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
            table_path=table_path("keep", "p"))).partitions_info
        db_info = c.call(Api.GET_DATABASE_INFO, pb.GetDatabaseInfoRequest(database_name="keep"))
    srv.kill()
    srv.start()
    with WireClient(srv.bootstrap_servers) as c:
        after, after_json = table_info(c, "keep", "t1")
        assert (after.table_id, after.schema_id, after.created_time, after.table_json) == (
            before_t1.table_id, before_t1.schema_id, before_t1.created_time, before_t1.table_json)
        assert after_json == before_json
        assert sorted(c.call(Api.LIST_TABLES, pb.ListTablesRequest(database_name="keep")).table_name) == ["p", "t1"]
        assert c.call(Api.GET_DATABASE_INFO, pb.GetDatabaseInfoRequest(database_name="keep")) == db_info
        parts = c.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
            table_path=table_path("keep", "p"))).partitions_info
        assert list(parts) == list(before_parts)
        # counters continue: no id is handed out twice
        create_table(c, "keep", "t2", descriptor(SIMPLE))
        t2, _ = table_info(c, "keep", "t2")
        assert t2.table_id == before_p.table_id + 1
        c.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(table_path=table_path("keep", "p"),
                                                               partition_spec=spec(name="y"),
                                                               ignore_if_not_exists=False))
        parts = c.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
            table_path=table_path("keep", "p"))).partitions_info
        assert parts[-1].partition_id == before_parts[0].partition_id + 1
    srv.restart()  # graceful stop + start
    with WireClient(srv.bootstrap_servers) as c:
        assert c.call(Api.TABLE_EXISTS, pb.TableExistsRequest(table_path=table_path("keep", "t2"))).exists
        meta = c.call(Api.GET_METADATA, pb.MetadataRequest(table_path=[table_path("keep", "t1")]))
        assert [b.leader_id for b in meta.table_metadata[0].bucket_metadata] == [
            (before_t1.table_id + b) % 2 for b in range(4)]


# -- embedding and the command line ------------------------------------------------------------------
async def test_local_server_in_this_loop(tmp_path):
    import asyncio

    from fluss_fast.server import LocalServer

    async with LocalServer(data_dir=str(tmp_path), sasl_users={"u": "p"}, tablet_servers=2) as srv:
        assert srv.sasl_bootstrap_servers and srv.bootstrap_servers != srv.sasl_bootstrap_servers

        def talk():
            with WireClient(srv.bootstrap_servers) as c:
                c.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name="emb", ignore_if_exists=False))
                return len(c.call(Api.GET_METADATA, pb.MetadataRequest()).tablet_servers)

        # the blocking test client runs on a thread: the server is served by this very loop
        assert await asyncio.get_running_loop().run_in_executor(None, talk) == 2
    assert (tmp_path / "catalog" / "catalog.json").exists()
    assert b'"emb"' in (tmp_path / "catalog" / "catalog.json").read_bytes()


def test_local_server_on_a_thread():
    import os

    from fluss_fast.server import LocalServer

    with LocalServer() as srv:
        data_dir = srv.data_dir
        with WireClient(srv.bootstrap_servers) as c:
            assert c.call(Api.DATABASE_EXISTS, pb.DatabaseExistsRequest(database_name="fluss")).exists
    assert not os.path.exists(data_dir)  # a temporary data dir goes away with the server


def test_cli_arguments_and_signals(tmp_path):
    import signal
    import subprocess
    import sys

    bad = subprocess.run([sys.executable, "-m", "fluss_fast", "server", "--sasl-user", "a=b"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--sasl-listen" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "fluss_fast", "server", "--listen", "nohostport"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr
    proc = subprocess.Popen([sys.executable, "-m", "fluss_fast", "server", "--data-dir", str(tmp_path),
                             "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY bootstrap.servers=127.0.0.1:") and "sasl" not in line
        with WireClient(line.split("=", 1)[1].strip()) as c:
            c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest())
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def _partition_names(c, db, table):
    infos = c.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(table_path=table_path(db, table)))
    return sorted(i.partition_spec.partition_key_values[0].value for i in infos.partitions_info)


def test_auto_partition_background_task_and_retention(start_server):
    import time

    srv = start_server(sasl=False, extra_args=["--auto-partition-interval", "0.2"])
    props = {"table.auto-partition.enabled": "true", "table.auto-partition.time-zone": "UTC",
             "table.auto-partition.num-retention": "2"}
    with WireClient(srv.bootstrap_servers) as c:
        create_table(c, "fluss", "ap", descriptor(SIMPLE, partition_keys=["name"], properties=props))
        created = _partition_names(c, "fluss", "ap")
        assert len(created) == 2
        c.call(Api.DROP_PARTITION, pb.DropPartitionRequest(table_path=table_path("fluss", "ap"),
                                                           partition_spec=spec(name=created[1]),
                                                           ignore_if_not_exists=False))
        deadline = time.monotonic() + 10
        while _partition_names(c, "fluss", "ap") != created and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _partition_names(c, "fluss", "ap") == created  # the periodic check re-created it
        # an old partition on a table that is not auto-partitioned yet...
        create_table(c, "fluss", "later", descriptor(SIMPLE, partition_keys=["name"], properties={
            "table.auto-partition.time-zone": "UTC", "table.auto-partition.num-retention": "2"}))
        c.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(table_path=table_path("fluss", "later"),
                                                               partition_spec=spec(name="20200101"),
                                                               ignore_if_not_exists=False))
    # ...which becomes auto-partitioned (as an ALTER would do): the old one expires, current ones appear
    srv.stop()
    catalog = os.path.join(srv.data_dir, "catalog", "catalog.json")
    with open(catalog) as f:
        state = json.load(f)
    for d in state["databases"]:
        for t in d["tables"]:
            if t["name"] == "later":
                t["descriptor"]["properties"]["table.auto-partition.enabled"] = "true"
    with open(catalog, "w") as f:
        json.dump(state, f)
    srv.start()
    with WireClient(srv.bootstrap_servers) as c:
        assert _partition_names(c, "fluss", "later") == created
