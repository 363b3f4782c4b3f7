"""The embedded server with data-lake tables (``table.datalake.format``): it stores the keys the clients
send, and where it makes keys itself -- rebuilding the KV state from the changelog, inserting the
missing keys of a lookup -- it uses the table's key layout (``codec.keys.KeyScheme``), the lake's for a
Paimon or Iceberg primary key."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from fluss_fast.codec.kv.kvbatch import build_kv_batch, decode_value
from fluss_fast.codec.kv.lakekeys import IcebergKeyEncoder, PaimonKeyEncoder
from fluss_fast.codec.rows.compacted import CompactedRowDecoder, CompactedRowEncoder
from fluss_fast.datatypes import SchemaInfo
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api

from wire import WireClient, table_path

COLS = [{"name": "id", "data_type": {"type": "INTEGER", "nullable": False}, "id": 0},
        {"name": "name", "data_type": {"type": "STRING"}, "id": 1},
        {"name": "score", "data_type": {"type": "BIGINT"}, "id": 2}]
SCHEMA = SchemaInfo.from_json({"columns": COLS, "primary_key": ["id"]})
ROW = CompactedRowEncoder(SCHEMA.types)
DEC = CompactedRowDecoder(SCHEMA.types)
KEYS = {"paimon": PaimonKeyEncoder(SCHEMA.types[:1]), "iceberg": IcebergKeyEncoder(SCHEMA.types[:1])}


class Kv:
    def __init__(self, server):
        self.coord = WireClient(server.bootstrap_servers)
        meta = self.coord.call(Api.GET_METADATA, pb.MetadataRequest())
        self.tablet = WireClient(f"{meta.tablet_servers[0].host}:{meta.tablet_servers[0].port}")

    def close(self):
        self.coord.close()
        self.tablet.close()

    def create_table(self, db, name, fmt):
        self.coord.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name=db, ignore_if_exists=True))
        schema = {"version": 1, "columns": COLS, "highest_field_id": 2, "primary_key": ["id"]}
        desc = {"version": 1, "schema": schema, "partition_key": [], "bucket_key": [], "bucket_count": 1,
                "properties": {"table.datalake.format": fmt}, "custom_properties": {}}
        self.coord.call(Api.CREATE_TABLE, pb.CreateTableRequest(
            table_path=table_path(db, name), table_json=json.dumps(desc).encode(), ignore_if_exists=False))
        return self.coord.call(Api.GET_TABLE_INFO, pb.GetTableInfoRequest(table_path=table_path(db, name))).table_id

    def put(self, table_id, records):
        req = pb.PutKvRequest(acks=-1, table_id=table_id, timeout_ms=30000)
        req.buckets_req.add(bucket_id=0, records=build_kv_batch(records, schema_id=1))
        resp = self.tablet.call(Api.PUT_KV, req).buckets_resp[0]
        assert not resp.error_code, resp.error_message

    def lookup(self, table_id, keys, insert=False):
        req = pb.LookupRequest(table_id=table_id)
        if insert:
            req.insert_if_not_exists = True
            req.acks = -1
            req.timeout_ms = 30000
        req.buckets_req.add(bucket_id=0).keys.extend(keys)
        resp = self.tablet.call(Api.LOOKUP, req).buckets_resp[0]
        assert not resp.error_code, resp.error_message
        return [DEC.decode(decode_value(v.values)[1]) if v.HasField("values") else None for v in resp.values]


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
def test_kv_state_rebuilt_from_the_changelog_with_lake_keys(start_server, unique_name, fmt):
    srv = start_server(sasl=False)
    kv = Kv(srv)
    db = unique_name("lakekv")
    tid = kv.create_table(db, "t", fmt)
    key = KEYS[fmt]
    kv.put(tid, [(key.encode([i]), ROW.encode([i, f"v{i}", i])) for i in range(10)])
    kv.put(tid, [(key.encode([1]), ROW.encode([1, "changed", None])), (key.encode([2]), None)])
    kv.close()
    # lose the KV state: it is rebuilt from the changelog, keys made the table's way
    srv.kill()
    for d, subdirs, _ in os.walk(srv.data_dir):
        for s in subdirs:
            if s == "kv-0":
                shutil.rmtree(os.path.join(d, s))
    srv.start()
    kv = Kv(srv)
    state = kv.lookup(tid, [key.encode([i]) for i in range(10)])
    assert state[1] == [1, "changed", None] and state[2] is None and state[9] == [9, "v9", 9]
    kv.close()


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
def test_lookup_inserts_missing_lake_keys(fluss_server, unique_name, fmt):
    kv = Kv(fluss_server)
    tid = kv.create_table(unique_name("lakeins"), "t", fmt)
    key = KEYS[fmt]
    kv.put(tid, [(key.encode([1]), ROW.encode([1, "a", 1]))])
    assert kv.lookup(tid, [key.encode([1]), key.encode([-70000])], insert=True) == [
        [1, "a", 1], [-70000, None, None]]
    assert kv.lookup(tid, [key.encode([-70000])]) == [[-70000, None, None]]
    kv.close()
