"""The embedded server's primary-key APIs (PUT_KV, LOOKUP, PREFIX_LOOKUP, LIMIT_SCAN, SCAN_KV) driven with
raw protobuf frames: changelog generation, merge engines, delete behaviours, partial updates, errors,
and durability across kill -9."""
from __future__ import annotations

import json
import os

import pytest

from fluss_fast.codec.kv.kvbatch import build_kv_batch, decode_value
from fluss_fast.codec.kv.valuebatch import iter_value_records
from fluss_fast.codec.log import logbatch as lb
from fluss_fast.codec.log.arrowlog import ArrowLogCodec
from fluss_fast.codec.log.indexedlog import decode_row_log_batch
from fluss_fast.codec.rows.compacted import CompactedKeyEncoder, CompactedRowDecoder, CompactedRowEncoder
from fluss_fast.codec.rows.indexed import IndexedRowDecoder, IndexedRowEncoder
from fluss_fast.codec.wire.murmur import bucket_for_key
from fluss_fast.datatypes import SchemaInfo
from fluss_fast.error_codes import Errors
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api

from wire import WireClient, spec, table_path

INS, UB, UA, D = 1, 2, 3, 4


def _col(name, typ, cid, nullable=True, **extra):
    dt = {"type": typ, **extra}
    if not nullable:
        dt["nullable"] = False
    return {"name": name, "data_type": dt, "id": cid}


COLS = [_col("id", "INTEGER", 0, nullable=False), _col("name", "STRING", 1), _col("score", "BIGINT", 2)]
SCHEMA = SchemaInfo.from_json({"columns": COLS, "primary_key": ["id"]})


def _descriptor(cols, pk, partition_keys=(), bucket_count=1, properties=None, bucket_keys=(), auto_increment=None):
    schema = {"version": 1, "columns": cols, "highest_field_id": len(cols) - 1, "primary_key": list(pk)}
    if auto_increment:
        schema["auto_increment_column"] = [auto_increment]
    return json.dumps({"version": 1, "schema": schema, "partition_key": list(partition_keys),
                       "bucket_key": list(bucket_keys), "bucket_count": bucket_count,
                       "properties": dict(properties or {}), "custom_properties": {}}).encode()


class Kv:
    """One server: coordinator + tablet connections, table creation, and PK requests."""

    def __init__(self, server):
        self.coord = WireClient(server.bootstrap_servers)
        meta = self.coord.call(Api.GET_METADATA, pb.MetadataRequest())
        self.tablet = WireClient(f"{meta.tablet_servers[0].host}:{meta.tablet_servers[0].port}")

    def close(self):
        self.coord.close()
        self.tablet.close()

    def create_db(self, name):
        self.coord.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name=name, ignore_if_exists=True))

    def create_table(self, db, name, cols=COLS, pk=("id",), **kw):
        self.coord.call(Api.CREATE_TABLE, pb.CreateTableRequest(
            table_path=table_path(db, name), table_json=_descriptor(cols, pk, **kw), ignore_if_exists=False))
        return self.coord.call(Api.GET_TABLE_INFO, pb.GetTableInfoRequest(table_path=table_path(db, name))).table_id

    def put(self, table_id, records, *, bucket=0, partition_id=None, target=None, schema_id=1, writer_id=-1,
            seq=-1, raw=None):
        req = pb.PutKvRequest(acks=-1, table_id=table_id, timeout_ms=30000)
        if target:
            req.target_columns.extend(target)
        batch = raw if raw is not None else build_kv_batch(records, schema_id=schema_id, writer_id=writer_id,
                                                            batch_sequence=seq)
        b = req.buckets_req.add(bucket_id=bucket, records=batch)
        if partition_id is not None:
            b.partition_id = partition_id
        return self.tablet.call(Api.PUT_KV, req).buckets_resp[0]

    def lookup(self, table_id, keys, *, bucket=0, partition_id=None):
        req = pb.LookupRequest(table_id=table_id)
        b = req.buckets_req.add(bucket_id=bucket)
        b.keys.extend(keys)
        if partition_id is not None:
            b.partition_id = partition_id
        return self.tablet.call(Api.LOOKUP, req).buckets_resp[0]

    def changelog(self, table_id, *, bucket=0, partition_id=None, schema=SCHEMA, offset=0, log_format="ARROW",
                  kv_format="COMPACTED"):
        """[(base_offset, record_count, [(change_type, values)])] of every changelog batch."""
        req = pb.FetchLogRequest(follower_server_id=-1, max_bytes=1 << 24)
        t = req.tables_req.add(table_id=table_id, projection_pushdown_enabled=False)
        e = t.buckets_req.add(bucket_id=bucket, fetch_offset=offset, max_fetch_bytes=1 << 24)
        if partition_id is not None:
            e.partition_id = partition_id
        resp = self.tablet.call(Api.FETCH_LOG, req).tables_resp[0].buckets_resp[0]
        assert not resp.error_code, resp.error_message
        out = []
        for h in lb.iter_batches(resp.records):
            if h.record_count == 0:
                out.append((h.base_offset, 0, []))
                continue
            if log_format == "ARROW":
                rb, cts = ArrowLogCodec(schema, "ZSTD").decode(resp.records, h)
                rows = [list(r.values()) for r in rb.to_pylist()]
                out.append((h.base_offset, h.record_count, list(zip(cts, rows, strict=True))))
            else:
                out.append((h.base_offset, h.record_count,
                            [(ct, list(v)) for ct, v in decode_row_log_batch(resp.records, h, schema.types,
                                                                               log_format)]))
        return out


@pytest.fixture
def kv(fluss_server):
    k = Kv(fluss_server)
    yield k
    k.close()


@pytest.fixture
def db(kv, unique_name):
    name = unique_name("kvdb")
    kv.create_db(name)
    yield name
    kv.coord.call(Api.DROP_DATABASE, pb.DropDatabaseRequest(database_name=name, ignore_if_not_exists=True,
                                                            cascade=True))


KEY = CompactedKeyEncoder([c.type for c in SCHEMA.columns[:1]])
ROW = CompactedRowEncoder(SCHEMA.types)
DEC = CompactedRowDecoder(SCHEMA.types)


def k(i):
    return KEY.encode([i])


def up(i, name, score=None, enc=ROW):
    return k(i), enc.encode([i, name, score])


def dl(i):
    return k(i), None


def changes(log):
    return [c for _, _, cs in log for c in cs]


def same_answer(kvs, fn):
    """``fn(kv)`` for each of two servers run side by side: both must answer alike."""
    out = [fn(kv) for kv in kvs]
    assert out[0] == out[1]
    return out[0]


def looked_up(resp, dec=DEC):
    assert not resp.error_code, resp.error_message
    out = []
    for v in resp.values:
        if not v.HasField("values"):
            out.append(None)
        else:
            sid, row = decode_value(v.values)
            out.append(dec.decode(row))
    return out


# -- changelog --------------------------------------------------------------------------------------
def test_full_image_changelog_and_lookup(kv, db):
    tid = kv.create_table(db, "full")
    r = kv.put(tid, [up(1, "a", 10), up(2, "b", 20)])
    assert not r.error_code and r.log_end_offset == 2
    r = kv.put(tid, [up(1, "a2", 11), dl(2), dl(3)])
    assert r.log_end_offset == 5
    assert changes(kv.changelog(tid)) == [
        (INS, [1, "a", 10]), (INS, [2, "b", 20]),
        (UB, [1, "a", 10]), (UA, [1, "a2", 11]), (D, [2, "b", 20])]
    assert looked_up(kv.lookup(tid, [k(1), k(2), k(3)])) == [[1, "a2", 11], None, None]


def test_same_key_twice_in_one_batch_sees_the_first(kv, db):
    tid = kv.create_table(db, "twice")
    kv.put(tid, [up(1, "x"), up(1, "y"), dl(1), up(1, "z")])
    assert changes(kv.changelog(tid)) == [
        (INS, [1, "x", None]), (UB, [1, "x", None]), (UA, [1, "y", None]), (D, [1, "y", None]), (INS, [1, "z", None])]


def test_wal_image_emits_update_after_only(kv, db):
    tid = kv.create_table(db, "wal", properties={"table.changelog.image": "WAL"})
    kv.put(tid, [up(1, "a"), up(1, "b")])
    kv.put(tid, [dl(1)])
    assert changes(kv.changelog(tid)) == [(UA, [1, "a", None]), (UA, [1, "b", None]), (D, [1, "b", None])]


def test_no_change_appends_one_empty_batch(kv, db):
    tid = kv.create_table(db, "empty")
    r = kv.put(tid, [dl(7)])
    assert not r.error_code and r.log_end_offset == 1
    r = kv.put(tid, [up(7, "x")])
    assert r.log_end_offset == 2
    log = kv.changelog(tid)
    assert [(b, n) for b, n, _ in log] == [(0, 0), (1, 1)]


def test_duplicate_batch_is_acknowledged_once(kv, db):
    tid = kv.create_table(db, "dup")
    wid = kv.tablet.call(Api.INIT_WRITER, pb.InitWriterRequest()).writer_id
    first = kv.put(tid, [up(1, "a")], writer_id=wid, seq=0)
    again = kv.put(tid, [up(1, "a")], writer_id=wid, seq=0)
    assert first.log_end_offset == again.log_end_offset == 1
    gap = kv.put(tid, [up(2, "b")], writer_id=wid, seq=5)
    assert gap.error_code == Errors.OUT_OF_ORDER_SEQUENCE_EXCEPTION
    assert kv.put(tid, [up(2, "b")], writer_id=wid, seq=1).log_end_offset == 2
    assert changes(kv.changelog(tid)) == [(INS, [1, "a", None]), (INS, [2, "b", None])]


# -- partial updates ----------------------------------------------------------------------------------
def test_partial_update_keeps_other_columns(kv, db):
    tid = kv.create_table(db, "partial")
    kv.put(tid, [up(1, "a", 10)])
    kv.put(tid, [(k(1), ROW.encode([1, None, 99]))], target=[0, 2])
    kv.put(tid, [(k(2), ROW.encode([2, None, 5]))], target=[0, 2])
    assert looked_up(kv.lookup(tid, [k(1), k(2)])) == [[1, "a", 99], [2, None, 5]]
    # a partial delete clears the target columns while other columns still hold values
    kv.put(tid, [dl(1)], target=[0, 2])
    assert looked_up(kv.lookup(tid, [k(1)])) == [[1, "a", None]]
    kv.put(tid, [dl(2)], target=[0, 2])
    assert looked_up(kv.lookup(tid, [k(2)])) == [None]
    assert changes(kv.changelog(tid)) == [
        (INS, [1, "a", 10]), (UB, [1, "a", 10]), (UA, [1, "a", 99]), (INS, [2, None, 5]),
        (UB, [1, "a", 99]), (UA, [1, "a", None]), (D, [2, None, 5])]


def test_partial_update_rules(kv, db):
    tid = kv.create_table(db, "prules")
    r = kv.put(tid, [(k(1), ROW.encode([1, None, 1]))], target=[2])
    assert r.error_code == Errors.INVALID_TARGET_COLUMN and "primary key columns [id]" in r.error_message
    cols = COLS[:2] + [_col("score", "BIGINT", 2, nullable=False)]
    tid2 = kv.create_table(db, "prules2", cols=cols)
    r = kv.put(tid2, [(k(1), ROW.encode([1, "x", 1]))], target=[0, 1])
    assert r.error_code == Errors.INVALID_TARGET_COLUMN and "column score is NOT NULL" in r.error_message


# -- merge engines and delete behaviours --------------------------------------------------------------------
def test_first_row_keeps_the_first_and_ignores_deletes(kv, db):
    tid = kv.create_table(db, "first", properties={"table.merge-engine": "first_row"})
    kv.put(tid, [up(1, "a"), up(1, "b"), dl(1)])
    assert looked_up(kv.lookup(tid, [k(1)])) == [[1, "a", None]]
    assert changes(kv.changelog(tid)) == [(INS, [1, "a", None])]
    r = kv.put(tid, [up(1, "c", 3)], target=[0, 2])
    assert r.error_code == Errors.UNKNOWN_SERVER_ERROR and "first_row" in r.error_message


def test_versioned_replaces_only_newer_versions(kv, db):
    tid = kv.create_table(db, "ver", properties={"table.merge-engine": "versioned",
                                                 "table.merge-engine.versioned.ver-column": "score"})
    kv.put(tid, [up(1, "v5", 5), up(1, "v3", 3), up(1, "v5b", 5), up(1, "null")])
    assert looked_up(kv.lookup(tid, [k(1)])) == [[1, "v5b", 5]]
    assert [c[0] for c in changes(kv.changelog(tid))] == [INS, UB, UA]


def test_delete_disabled(kv, db):
    tid = kv.create_table(db, "nodel", properties={"table.delete.behavior": "DISABLE"})
    kv.put(tid, [up(1, "a")])
    r = kv.put(tid, [dl(1)])
    assert r.error_code == Errors.DELETION_DISABLED_EXCEPTION
    assert looked_up(kv.lookup(tid, [k(1)])) == [[1, "a", None]]


def test_aggregation_sums_and_keeps_max(kv, db):
    cols = [_col("id", "INTEGER", 0, nullable=False), _col("total", "BIGINT", 1), _col("top", "BIGINT", 2)]
    cols[1]["agg_function"] = {"type": "sum"}
    cols[2]["agg_function"] = {"type": "max"}
    tid = kv.create_table(db, "agg", cols=cols, properties={"table.merge-engine": "aggregation"})
    enc = CompactedRowEncoder(SchemaInfo.from_json({"columns": cols}).types)
    kv.put(tid, [(k(1), enc.encode([1, 5, 7])), (k(1), enc.encode([1, 3, 2])), (k(1), enc.encode([1, None, 9]))])
    assert looked_up(kv.lookup(tid, [k(1)]), CompactedRowDecoder(SchemaInfo.from_json({"columns": cols}).types)) == [
        [1, 8, 9]]


def test_auto_increment_column(start_server, unique_name):
    srv = start_server(sasl=False)
    kv = Kv(srv)
    db = unique_name("kvauto")
    kv.create_db(db)
    cols = [_col("id", "INTEGER", 0, nullable=False), _col("name", "STRING", 1), _col("seq", "BIGINT", 2)]
    tid = kv.create_table(db, "auto", cols=cols, auto_increment="seq",
                          properties={"table.auto-increment.cache-size": "10"})
    r = kv.put(tid, [up(1, "a")])
    assert r.error_code == Errors.INVALID_TARGET_COLUMN and "auto-increment column [seq]" in r.error_message
    r = kv.put(tid, [up(1, "a", 99)], target=[0, 1, 2])
    assert r.error_code == Errors.INVALID_TARGET_COLUMN and "index 2 must not be included" in r.error_message
    kv.put(tid, [up(1, "a"), up(2, "b"), up(1, "a2")], target=[0, 1])
    assert looked_up(kv.lookup(tid, [k(1), k(2)])) == [[1, "a2", 1], [2, "b", 2]]
    assert changes(kv.changelog(tid))[:2] == [(INS, [1, "a", 1]), (INS, [2, "b", 2])]
    kv.close()
    srv.kill()
    srv.start()
    kv = Kv(srv)
    # a restarted bucket takes a fresh range: ids are never reused
    kv.put(tid, [up(3, "c")], target=[0, 1])
    assert looked_up(kv.lookup(tid, [k(3), k(1)])) == [[3, "c", 11], [1, "a2", 1]]
    kv.close()


def test_lookup_insert_if_not_exists(kv, db):
    tid = kv.create_table(db, "ins")
    kv.put(tid, [up(1, "a", 1)])
    req = pb.LookupRequest(table_id=tid, insert_if_not_exists=True, acks=-1, timeout_ms=30000)
    req.buckets_req.add(bucket_id=0).keys.extend([k(1), k(2)])
    resp = kv.tablet.call(Api.LOOKUP, req).buckets_resp[0]
    assert looked_up(resp) == [[1, "a", 1], [2, None, None]]
    assert changes(kv.changelog(tid)) == [(INS, [1, "a", 1]), (INS, [2, None, None])]
    assert looked_up(kv.lookup(tid, [k(2)])) == [[2, None, None]]


# -- formats -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("log_format", ["ARROW", "COMPACTED", "INDEXED"])
def test_indexed_kv_format(kv, db, log_format):
    props = {"table.kv.format": "INDEXED", "table.log.format": log_format}
    tid = kv.create_table(db, f"idx_{log_format.lower()}", properties=props)
    enc, dec = IndexedRowEncoder(SCHEMA.types), IndexedRowDecoder(SCHEMA.types)
    kv.put(tid, [up(1, "a", 1, enc), up(2, "b", 2, enc)])
    kv.put(tid, [up(1, "c", 3, enc), dl(2)])
    assert looked_up(kv.lookup(tid, [k(1), k(2)]), dec) == [[1, "c", 3], None]
    assert changes(kv.changelog(tid, log_format=log_format)) == [
        (INS, [1, "a", 1]), (INS, [2, "b", 2]), (UB, [1, "a", 1]), (UA, [1, "c", 3]), (D, [2, "b", 2])]


def test_compacted_log_format(kv, db):
    tid = kv.create_table(db, "clog", properties={"table.log.format": "COMPACTED"})
    kv.put(tid, [up(1, "a"), up(1, "b")])
    assert changes(kv.changelog(tid, log_format="COMPACTED")) == [
        (INS, [1, "a", None]), (UB, [1, "a", None]), (UA, [1, "b", None])]


# -- prefix lookup, partitions, scans --------------------------------------------------------------------------
def test_prefix_lookup_by_bucket_key(kv, db):
    cols = [_col("a", "INTEGER", 0, nullable=False), _col("b", "STRING", 1, nullable=False), _col("v", "BIGINT", 2)]
    tid = kv.create_table(db, "prefix", cols=cols, pk=("a", "b"), bucket_keys=("a",), bucket_count=3)
    types = SchemaInfo.from_json({"columns": cols}).types
    enc, key, bkey = CompactedRowEncoder(types), CompactedKeyEncoder(types[:2]), CompactedKeyEncoder(types[:1])
    rows = [(1, "x", 1), (1, "y", 2), (2, "x", 3)]
    for a, b, v in rows:
        kv.put(tid, [(key.encode([a, b]), enc.encode([a, b, v]))], bucket=bucket_for_key(bkey.encode([a]), 3))
    bucket = bucket_for_key(bkey.encode([1]), 3)
    req = pb.PrefixLookupRequest(table_id=tid)
    req.buckets_req.add(bucket_id=bucket).keys.extend([bkey.encode([1]), bkey.encode([9])])
    resp = kv.tablet.call(Api.PREFIX_LOOKUP, req).buckets_resp[0]
    dec = CompactedRowDecoder(types)
    assert [dec.decode(decode_value(v)[1]) for v in resp.value_lists[0].values] == [[1, "x", 1], [1, "y", 2]]
    assert list(resp.value_lists[1].values) == []


def test_partitioned_table(kv, db):
    cols = COLS + [_col("region", "STRING", 3, nullable=False)]
    tid = kv.create_table(db, "parts", cols=cols, pk=("id", "region"), partition_keys=("region",))
    kv.coord.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(
        table_path=table_path(db, "parts"), partition_spec=spec(region="eu"), ignore_if_not_exists=False))
    pid = kv.coord.call(Api.LIST_PARTITION_INFOS, pb.ListPartitionInfosRequest(
        table_path=table_path(db, "parts"))).partitions_info[0].partition_id
    schema = SchemaInfo.from_json({"columns": cols, "primary_key": ["id", "region"]})
    enc = CompactedRowEncoder(schema.types)
    r = kv.put(tid, [(k(1), enc.encode([1, "a", 1, "eu"]))], partition_id=pid)
    assert not r.error_code, r.error_message
    assert looked_up(kv.lookup(tid, [k(1)], partition_id=pid), CompactedRowDecoder(schema.types)) == [
        [1, "a", 1, "eu"]]
    assert kv.put(tid, [(k(1), enc.encode([1, "a", 1, "eu"]))]).error_code == Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    kv.coord.call(Api.DROP_PARTITION, pb.DropPartitionRequest(
        table_path=table_path(db, "parts"), partition_spec=spec(region="eu"), ignore_if_not_exists=False))
    assert kv.lookup(tid, [k(1)], partition_id=pid).error_code == Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION


def test_limit_scan_and_scan_kv(kv, db):
    tid = kv.create_table(db, "scan")
    kv.put(tid, [up(i, "n" * 50, i) for i in range(20)] + [dl(3)])
    resp = kv.tablet.call(Api.LIMIT_SCAN, pb.LimitScanRequest(table_id=tid, bucket_id=0, limit=5))
    assert not resp.error_code and not resp.is_log_table
    assert len(list(iter_value_records(resp.records))) == 5
    for limit in (0, -1):  # as Java 0.9.1 answers: empty, no error
        resp = kv.tablet.call(Api.LIMIT_SCAN, pb.LimitScanRequest(table_id=tid, bucket_id=0, limit=limit))
        assert not resp.error_code and not resp.is_log_table and not resp.records
    resp = kv.tablet.call(Api.LIMIT_SCAN, pb.LimitScanRequest(table_id=tid, bucket_id=0, limit=2**31 - 1))
    assert len(list(iter_value_records(resp.records))) == 19
    opened = kv.tablet.call(Api.SCAN_KV, pb.ScanKvRequest(
        bucket_scan_req=pb.PbScanReqForBucket(table_id=tid, bucket_id=0), call_seq_id=0, batch_size_bytes=300))
    assert not opened.error_code and opened.has_more_results and opened.log_offset == 21
    got = [DEC.decode(r) for _, r in iter_value_records(opened.records)]
    sid, seq = opened.scanner_id, 0
    assert len(sid) == 32
    bad = kv.tablet.call(Api.SCAN_KV, pb.ScanKvRequest(scanner_id=sid, call_seq_id=5, batch_size_bytes=300))
    assert bad.error_code == Errors.INVALID_SCAN_REQUEST
    while True:
        seq += 1
        nxt = kv.tablet.call(Api.SCAN_KV, pb.ScanKvRequest(scanner_id=sid, call_seq_id=seq, batch_size_bytes=300))
        assert not nxt.error_code, nxt.error_message
        got += [DEC.decode(r) for _, r in iter_value_records(nxt.records)]
        if not nxt.has_more_results:
            break
    assert sorted(r[0] for r in got) == [i for i in range(20) if i != 3]
    gone = kv.tablet.call(Api.SCAN_KV, pb.ScanKvRequest(scanner_id=sid, call_seq_id=seq + 1, batch_size_bytes=300))
    assert gone.error_code == Errors.UNKNOWN_SCANNER_ID
    # close early
    o2 = kv.tablet.call(Api.SCAN_KV, pb.ScanKvRequest(
        bucket_scan_req=pb.PbScanReqForBucket(table_id=tid, bucket_id=0), call_seq_id=0, batch_size_bytes=64))
    closed = kv.tablet.call(Api.SCAN_KV, pb.ScanKvRequest(scanner_id=o2.scanner_id, close_scanner=True))
    assert not closed.error_code and not closed.has_more_results


# -- errors ------------------------------------------------------------------------------------------
def test_errors(kv, db):
    tid = kv.create_table(db, "errs")
    log_tid = kv.create_table(db, "logt", pk=())
    r = kv.put(log_tid, [up(1, "a")])
    assert r.error_code == Errors.UNKNOWN_SERVER_ERROR  # as the Java replica's failed null check
    assert kv.lookup(log_tid, [k(1)]).error_code == Errors.NON_PRIMARY_KEY_TABLE_EXCEPTION
    assert kv.put(999_999, [up(1, "a")]).error_code == Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    assert kv.put(tid, [up(1, "a")], bucket=7).error_code == Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    assert kv.put(tid, [up(1, "a")], schema_id=5).error_code == Errors.SCHEMA_NOT_EXIST
    batch = bytearray(build_kv_batch([up(1, "a")], schema_id=1))
    batch[-1] ^= 0xFF
    assert kv.put(tid, [], raw=bytes(batch)).error_code == Errors.CORRUPT_MESSAGE
    assert kv.put(tid, [], raw=b"\x01\x02").error_code == Errors.CORRUPT_MESSAGE
    # a row that does not decode with the table's schema
    bad_row = build_kv_batch([(k(1), b"\x00\xff\xff\xff\xff\xff")], schema_id=1)
    assert kv.put(tid, [], raw=bad_row).error_code == Errors.CORRUPT_MESSAGE
    # the server keeps serving
    assert kv.put(tid, [up(1, "ok")]).log_end_offset == 1
    assert looked_up(kv.lookup(tid, [k(1), b"\xff\xff"])) == [[1, "ok", None], None]


def test_drop_table_drops_the_kv_state(kv, db, fluss_server):
    tid = kv.create_table(db, "dropme")
    kv.put(tid, [up(1, "a")])
    kv.coord.call(Api.DROP_TABLE, pb.DropTableRequest(table_path=table_path(db, "dropme"), ignore_if_not_exists=False))
    tid2 = kv.create_table(db, "dropme")
    assert tid2 != tid
    assert looked_up(kv.lookup(tid2, [k(1)])) == [None]
    leftovers = [d for d, _, _ in os.walk(fluss_server.data_dir) if f"dropme-{tid}" in d and ".deleted-" not in d]
    assert not leftovers


# -- durability ------------------------------------------------------------------------------------------
def test_kill9_restart_keeps_state_changelog_and_writer_ids(start_server, unique_name):
    srv = start_server(sasl=False)
    kv = Kv(srv)
    db = unique_name("kvrestart")
    kv.create_db(db)
    tid = kv.create_table(db, "t")
    wid = kv.tablet.call(Api.INIT_WRITER, pb.InitWriterRequest()).writer_id
    kv.put(tid, [up(i, f"v{i}", i) for i in range(10)], writer_id=wid, seq=0)
    kv.put(tid, [up(1, "changed"), dl(2)], writer_id=wid, seq=1)
    before = kv.changelog(tid)
    kv.close()
    srv.kill()
    srv.start()
    kv = Kv(srv)
    assert kv.changelog(tid) == before
    state = looked_up(kv.lookup(tid, [k(i) for i in range(10)]))
    assert state[1] == [1, "changed", None] and state[2] is None and state[9] == [9, "v9", 9]
    # the retried batch is still a duplicate; the next one continues the offsets
    assert kv.put(tid, [up(1, "changed"), dl(2)], writer_id=wid, seq=1).log_end_offset == 13
    assert kv.put(tid, [up(3, "later")], writer_id=wid, seq=2).log_end_offset == 15
    kv.close()

    # lose the KV state entirely: it is rebuilt from the changelog
    srv.kill()
    for d, subdirs, _ in os.walk(srv.data_dir):
        for s in subdirs:
            if s == "kv-0":
                import shutil

                shutil.rmtree(os.path.join(d, s))
    srv.start()
    kv = Kv(srv)
    state = looked_up(kv.lookup(tid, [k(i) for i in range(10)]))
    assert state[1] == [1, "changed", None] and state[2] is None and state[3] == [3, "later", None]
    assert state[9] == [9, "v9", 9]
    kv.close()


# -- the server's own ceiling ---------------------------------------------------------------------------
def test_pk_ceiling_scenarios_run(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "bench.json"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run(
        [sys.executable, "-m", "fluss_fast", "bench",
         "--scenarios", "ceiling_put_kv,ceiling_lookup,ceiling_lookup_batch",
         "--rows", "3000", "--repeat", "1", "--clients", "fluss_fast", "--json", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=170, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = {r["scenario"]: r for r in json.loads(out.read_text())["results"]}
    for name in ("ceiling_put_kv", "ceiling_lookup", "ceiling_lookup_batch"):
        assert results[name]["status"] == "ok", results[name]
        assert results[name]["samples"][0]["rows"] == 3000


# -- a random workload against a model --------------------------------------------------------------------
@pytest.mark.parametrize("seed,image", [(1, "FULL"), (2, "FULL"), (3, "WAL")])
def test_random_workload_matches_a_model(kv, db, seed, image):
    """Random upserts, deletes and partial updates in random batches over 3 buckets: lookups equal a dict
    model, and replaying the changelog (+I/+U put, -D delete) rebuilds the same state."""
    import random

    rnd = random.Random(seed)
    tid = kv.create_table(db, f"rnd{seed}", bucket_count=3, properties={"table.changelog.image": image})
    model = {}
    expected_changes = {b: 0 for b in range(3)}
    for _ in range(40):
        bucket = rnd.randrange(3)
        keys = [i for i in range(60) if bucket_for_key(k(i), 3) == bucket]
        partial = rnd.random() < 0.3
        batch = []
        for _ in range(rnd.randint(1, 12)):
            i = rnd.choice(keys)
            if rnd.random() < 0.25:
                batch.append(dl(i))
                if i in model:
                    if partial and model[i][1] is not None:
                        model[i] = [i, model[i][1], None]
                        expected_changes[bucket] += 2 if image == "FULL" else 1
                    else:
                        del model[i]
                        expected_changes[bucket] += 1
            else:
                score = rnd.randrange(1000)
                name = None if partial else rnd.choice(["a", "b", None])
                batch.append(up(i, name, score))
                old = model.get(i)
                if partial:
                    model[i] = [i, old[1] if old else None, score]
                else:
                    model[i] = [i, name, score]
                expected_changes[bucket] += 1 if old is None or image == "WAL" else 2
        r = kv.put(tid, batch, bucket=bucket, target=[0, 2] if partial else None)
        assert not r.error_code, r.error_message
    for b in range(3):
        keys = [i for i in range(60) if bucket_for_key(k(i), 3) == b]
        assert looked_up(kv.lookup(tid, [k(i) for i in keys], bucket=b)) == [model.get(i) for i in keys]
        replay = {}
        log = changes(kv.changelog(tid, bucket=b))
        assert len(log) == expected_changes[b]
        for ct, row in log:
            if ct in (INS, UA):
                replay[row[0]] = row
            elif ct == D:
                del replay[row[0]]
        assert replay == {i: model[i] for i in keys if i in model}


def test_clean_restart_keeps_state_without_replay(start_server, unique_name):
    srv = start_server(sasl=False)
    kv = Kv(srv)
    db = unique_name("kvclean")
    kv.create_db(db)
    tid = kv.create_table(db, "t")
    kv.put(tid, [up(1, "a"), up(2, "b")])
    kv.put(tid, [dl(2)])
    kv.close()
    srv.restart()  # SIGTERM: stores close and record how far they applied the log
    marks = []
    for d, _, files in os.walk(srv.data_dir):
        if "applied-offset" in files:
            with open(os.path.join(d, "applied-offset")) as f:
                marks.append(int(f.read()))
    assert marks == [3]
    kv = Kv(srv)
    assert looked_up(kv.lookup(tid, [k(1), k(2)])) == [[1, "a", None], None]
    assert kv.put(tid, [up(3, "c")]).log_end_offset == 4
    kv.close()
