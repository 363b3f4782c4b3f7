"""The embedded server's log APIs (PRODUCE_LOG, FETCH_LOG, LIST_OFFSETS, LIMIT_SCAN, INIT_WRITER,
GET_FILESYSTEM_SECURITY_TOKEN) driven with raw protobuf frames over real sockets."""
from __future__ import annotations

import json
import threading
import time

import pyarrow as pa
import pytest

from fluss_fast.codec.log import logbatch as lb
from fluss_fast.codec.log.arrowlog import ArrowLogCodec
from fluss_fast.datatypes import SchemaInfo
from fluss_fast.error_codes import Errors
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api

from wire import WireClient, WireError, spec, table_path

MB = 1 << 20


# -- helpers -------------------------------------------------------------------------------------------
def _col(name, typ, cid, nullable=True):
    dt = {"type": typ}
    if not nullable:
        dt["nullable"] = False
    return {"name": name, "data_type": dt, "id": cid}


COLS = [_col("id", "INTEGER", 0), _col("name", "STRING", 1), _col("score", "DOUBLE", 2)]


def _descriptor(cols=COLS, pk=None, partition_keys=(), bucket_count=2, properties=None):
    schema = {"version": 1, "columns": cols, "highest_field_id": len(cols) - 1}
    if pk:
        schema["primary_key"] = list(pk)
    return json.dumps({"version": 1, "schema": schema, "partition_key": list(partition_keys),
                       "bucket_count": bucket_count, "properties": dict(properties or {}),
                       "custom_properties": {}}).encode()


class Cluster:
    """Coordinator + tablet connections of one server, and table creation."""

    def __init__(self, server):
        self.server = server
        self.coord = WireClient(server.bootstrap_servers)
        meta = self.coord.call(Api.GET_METADATA, pb.MetadataRequest())
        self.tablets = {n.node_id: f"{n.host}:{n.port}" for n in meta.tablet_servers}
        self._conns = {}

    def tablet(self, node=0) -> WireClient:
        if node not in self._conns:
            self._conns[node] = WireClient(self.tablets[node])
        return self._conns[node]

    def new_tablet_connection(self, node=0) -> WireClient:
        return WireClient(self.tablets[node])

    def create_table(self, db, name, **kw):
        self.coord.call(Api.CREATE_TABLE, pb.CreateTableRequest(
            table_path=table_path(db, name), table_json=_descriptor(**kw), ignore_if_exists=False))
        info = self.coord.call(Api.GET_TABLE_INFO, pb.GetTableInfoRequest(table_path=table_path(db, name)))
        return info.table_id

    def create_partition(self, db, name, **values):
        self.coord.call(Api.CREATE_PARTITION, pb.CreatePartitionRequest(
            table_path=table_path(db, name), partition_spec=spec(**values), ignore_if_not_exists=False))
        infos = self.coord.call(Api.LIST_PARTITION_INFOS,
                                pb.ListPartitionInfosRequest(table_path=table_path(db, name))).partitions_info
        want = list(values.items())
        return next(i.partition_id for i in infos
                    if [(kv.key, kv.value) for kv in i.partition_spec.partition_key_values] == want)

    def close(self):
        self.coord.close()
        for c in self._conns.values():
            c.close()


@pytest.fixture
def cluster(fluss_server):
    c = Cluster(fluss_server)
    yield c
    c.close()


@pytest.fixture
def db(cluster, unique_name):
    name = unique_name("logdb")
    cluster.coord.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name=name, ignore_if_exists=False))
    yield name
    cluster.coord.call(Api.DROP_DATABASE, pb.DropDatabaseRequest(database_name=name, ignore_if_not_exists=True,
                                                                 cascade=True))


SCHEMA = SchemaInfo.from_json({"columns": COLS})
CODEC = ArrowLogCodec(SCHEMA, "ZSTD")


def arrow_batch(start, n, *, writer_id=-1, seq=-1, schema_id=1, codec=CODEC):
    rb = pa.RecordBatch.from_pydict({
        "id": pa.array(range(start, start + n), pa.int32()),
        "name": pa.array([f"row-{i}" for i in range(start, start + n)]),
        "score": pa.array([i * 0.5 for i in range(start, start + n)], pa.float64()),
    })
    return codec.build(rb, schema_id=schema_id, writer_id=writer_id, batch_sequence=seq)


def produce(client, table_id, buckets, acks=-1):
    """buckets: [(bucket, records) or (bucket, records, partition_id)] -> {(pid, bucket): resp entry}"""
    req = pb.ProduceLogRequest(acks=acks, table_id=table_id, timeout_ms=30000)
    for b in buckets:
        entry = req.buckets_req.add(bucket_id=b[0], records=b[1])
        if len(b) > 2 and b[2] is not None:
            entry.partition_id = b[2]
    resp = client.call(Api.PRODUCE_LOG, req)
    return {(r.partition_id if r.HasField("partition_id") else None, r.bucket_id): r for r in resp.buckets_resp}


def fetch_req(table_id, buckets, max_bytes=16 * MB, projection=None, min_bytes=None, max_wait_ms=None):
    """buckets: [(bucket, offset, max_fetch_bytes[, partition_id])]"""
    req = pb.FetchLogRequest(follower_server_id=-1, max_bytes=max_bytes)
    if min_bytes is not None:
        req.min_bytes = min_bytes
    if max_wait_ms is not None:
        req.max_wait_ms = max_wait_ms
    t = req.tables_req.add(table_id=table_id, projection_pushdown_enabled=projection is not None)
    if projection is not None:
        t.projected_fields.extend(projection)
    for b in buckets:
        e = t.buckets_req.add(bucket_id=b[0], fetch_offset=b[1], max_fetch_bytes=b[2])
        if len(b) > 3 and b[3] is not None:
            e.partition_id = b[3]
    return req


def fetch(client, table_id, buckets, **kw):
    resp = client.call(Api.FETCH_LOG, fetch_req(table_id, buckets, **kw))
    assert len(resp.tables_resp) == 1 and resp.tables_resp[0].table_id == table_id
    return {(r.partition_id if r.HasField("partition_id") else None, r.bucket_id): r
            for r in resp.tables_resp[0].buckets_resp}


def rows_of(records, codec=CODEC, arrow_schema=None):
    out = []
    for h in lb.iter_batches(records):
        rb, _ = codec.decode(records, h, arrow_schema=arrow_schema)
        out.extend(rb.to_pylist())
    return out


def expected_rows(start, n):
    return [{"id": i, "name": f"row-{i}", "score": i * 0.5} for i in range(start, start + n)]


def list_offsets(client, table_id, buckets, offset_type, ts=None, partition_id=None):
    req = pb.ListOffsetsRequest(follower_server_id=-1, offset_type=offset_type, table_id=table_id)
    req.bucket_id.extend(buckets)
    if ts is not None:
        req.startTimestamp = ts
    if partition_id is not None:
        req.partition_id = partition_id
    return {r.bucket_id: r for r in client.call(Api.LIST_OFFSETS, req).buckets_resp}


# -- produce ---------------------------------------------------------------------------------------------
def test_produce_then_fetch_round_trip(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    b1, b2 = arrow_batch(0, 5), arrow_batch(5, 3)
    r = produce(c, tid, [(0, b1 + b2), (1, arrow_batch(100, 2))])
    assert r[(None, 0)].base_offset == 0 and not r[(None, 0)].error_code
    assert r[(None, 1)].base_offset == 0
    r = produce(c, tid, [(0, arrow_batch(8, 4))])
    assert r[(None, 0)].base_offset == 8
    f = fetch(c, tid, [(0, 0, MB), (1, 0, MB)])
    b0 = f[(None, 0)]
    assert b0.high_watermark == 12 and b0.log_start_offset == 0 and not b0.error_code
    assert rows_of(b0.records) == expected_rows(0, 12)
    hs = list(lb.iter_batches(b0.records))
    assert [h.base_offset for h in hs] == [0, 5, 8]
    # stored as received: only BaseOffset and CommitTimestamp differ, CRCs still hold
    assert b0.records[hs[0].position + 21:hs[0].total_size] == b1[21:]
    assert all(lb.verify_crc(b0.records, h.position) for h in hs)
    assert hs[0].commit_timestamp == hs[1].commit_timestamp > 0
    assert rows_of(f[(None, 1)].records) == expected_rows(100, 2)


def test_fetch_response_bytes_are_canonical_protobuf(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    produce(c, tid, [(0, arrow_batch(0, 50)), (1, arrow_batch(0, 3))])
    req = fetch_req(tid, [(0, 0, MB), (1, 0, MB), (5, 0, MB), (1, 99, MB)])
    rid = c.send(Api.FETCH_LOG, req)
    kind, got, body = c.recv()
    assert (kind, got) == (0, rid)
    msg = pb.FetchLogResponse()
    msg.ParseFromString(bytes(body))
    assert msg.IsInitialized()
    # the hand-framed zero-copy body is byte for byte what protobuf itself would write
    assert msg.SerializeToString() == bytes(body)
    codes = [b.error_code for b in msg.tables_resp[0].buckets_resp]
    assert codes == [0, 0, Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION, Errors.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION]


def test_corrupt_batch_is_rejected_per_bucket(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    good = arrow_batch(0, 4)
    bad = bytearray(arrow_batch(4, 4))
    bad[-3] ^= 0x55
    r = produce(c, tid, [(0, good + bytes(bad)), (1, good)])
    assert r[(None, 0)].error_code == Errors.CORRUPT_RECORD_EXCEPTION  # a CRC mismatch, as Java's LogTablet
    msg = r[(None, 0)].error_message
    assert db in msg and "bucket 0" in msg and "batch 1" in msg and "CRC" in msg
    assert r[(None, 1)].error_code == 0 and r[(None, 1)].base_offset == 0
    truncated = produce(c, tid, [(0, good[:-10])])[(None, 0)]
    assert truncated.error_code == Errors.CORRUPT_MESSAGE and "truncated" in truncated.error_message
    # nothing of the rejected blobs was stored
    assert list_offsets(c, tid, [0], 1)[0].offset == 0


def test_schema_id_must_exist(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    r = produce(c, tid, [(0, arrow_batch(0, 2, schema_id=42)), (1, arrow_batch(0, 2))])
    assert r[(None, 0)].error_code == Errors.SCHEMA_NOT_EXIST and "42" in r[(None, 0)].error_message
    assert r[(None, 1)].error_code == 0


def test_invalid_acks_fail_the_whole_request(cluster, db):
    tid = cluster.create_table(db, "t")
    with pytest.raises(WireError) as e:
        produce(cluster.tablet(), tid, [(0, arrow_batch(0, 1))], acks=2)
    assert e.value.code == Errors.INVALID_REQUIRED_ACKS and "acks" in e.value.message
    for acks in (0, 1):
        assert produce(cluster.tablet(), tid, [(0, arrow_batch(0, 1))], acks=acks)[(None, 0)].error_code == 0


def test_unknown_tables_buckets_and_partitions(cluster, db):
    c = cluster.tablet()
    tid = cluster.create_table(db, "t")
    ptid = cluster.create_table(db, "p", cols=COLS + [_col("region", "STRING", 3)], partition_keys=["region"])
    pid = cluster.create_partition(db, "p", region="EU")
    b = arrow_batch(0, 1)
    assert produce(c, 10 ** 9, [(0, b)])[(None, 0)].error_code == Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    r = produce(c, tid, [(2, b), (-1, b), (0, b, 5)])
    assert {k: v.error_code for k, v in r.items()} == {
        (None, 2): Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION, (None, -1): Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
        (5, 0): Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION}
    r = produce(c, ptid, [(0, b), (0, b, pid + 1000)])
    assert all(v.error_code == Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION for v in r.values())
    assert "partition" in r[(None, 0)].error_message
    pschema = SchemaInfo.from_json({"columns": COLS + [_col("region", "STRING", 3)]})
    pcodec = ArrowLogCodec(pschema, "ZSTD")
    rb = pa.RecordBatch.from_pydict({"id": pa.array([1], pa.int32()), "name": ["a"],
                                     "score": [1.0], "region": ["EU"]})
    ok = produce(c, ptid, [(1, pcodec.build(rb, schema_id=1), pid)])[(pid, 1)]
    assert ok.error_code == 0 and ok.base_offset == 0
    f = fetch(c, ptid, [(1, 0, MB, pid)])[(pid, 1)]
    assert f.high_watermark == 1 and rows_of(f.records, pcodec) == [
        {"id": 1, "name": "a", "score": 1.0, "region": "EU"}]


def test_not_leader(start_server, unique_name):
    srv = start_server(tablet_servers=2, sasl=False)
    cl = Cluster(srv)
    try:
        cl.coord.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name="d2", ignore_if_exists=False))
        tid = cl.create_table("d2", "t", bucket_count=4)
        meta = cl.coord.call(Api.GET_METADATA, pb.MetadataRequest(table_path=[table_path("d2", "t")]))
        leaders = {b.bucket_id: b.leader_id for b in meta.table_metadata[0].bucket_metadata}
        assert set(leaders.values()) == {0, 1}
        for bucket, leader in leaders.items():
            right = produce(cl.tablet(leader), tid, [(bucket, arrow_batch(0, 1))])[(None, bucket)]
            assert right.error_code == 0
            wrong = produce(cl.tablet(1 - leader), tid, [(bucket, arrow_batch(0, 1))])[(None, bucket)]
            assert wrong.error_code == Errors.NOT_LEADER_OR_FOLLOWER
            assert f"tablet server {leader}" in wrong.error_message
            fw = fetch(cl.tablet(1 - leader), tid, [(bucket, 0, MB)])[(None, bucket)]
            assert fw.error_code == Errors.NOT_LEADER_OR_FOLLOWER
            lo = list_offsets(cl.tablet(1 - leader), tid, [bucket], 1)[bucket]
            assert lo.error_code == Errors.NOT_LEADER_OR_FOLLOWER
            assert list_offsets(cl.tablet(leader), tid, [bucket], 1)[bucket].offset == 1
    finally:
        cl.close()


def test_idempotent_duplicates_and_gaps(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    wid = c.call(Api.INIT_WRITER, pb.InitWriterRequest(table_path=[table_path(db, "t")])).writer_id
    assert wid >= 0
    first = arrow_batch(0, 3, writer_id=wid, seq=0)
    assert produce(c, tid, [(0, first)])[(None, 0)].base_offset == 0
    second = arrow_batch(3, 2, writer_id=wid, seq=1)
    assert produce(c, tid, [(0, second)])[(None, 0)].base_offset == 3
    # a resend (lost response) is acknowledged with the original offsets and not stored again
    again = produce(c, tid, [(0, second)])[(None, 0)]
    assert again.error_code == 0 and again.base_offset == 3
    assert list_offsets(c, tid, [0], 1)[0].offset == 5
    gap = produce(c, tid, [(0, arrow_batch(5, 1, writer_id=wid, seq=5))])[(None, 0)]
    assert gap.error_code == Errors.OUT_OF_ORDER_SEQUENCE_EXCEPTION and str(wid) in gap.error_message
    # sequences are per bucket: the same writer starts at 0 on bucket 1
    assert produce(c, tid, [(1, arrow_batch(0, 1, writer_id=wid, seq=0))])[(None, 1)].error_code == 0
    assert rows_of(fetch(c, tid, [(0, 0, MB)])[(None, 0)].records) == expected_rows(0, 5)


# -- fetch -----------------------------------------------------------------------------------------------
def test_fetch_offsets_and_byte_budgets(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    sizes = []
    for i in range(6):
        b = arrow_batch(i * 10, 10)
        sizes.append(len(b))
        produce(c, tid, [(0, b), (1, b)])
    # from the middle of a batch: the batch holding the offset comes first
    f = fetch(c, tid, [(0, 25, MB)])[(None, 0)]
    assert [h.base_offset for h in lb.iter_batches(f.records)] == [20, 30, 40, 50]
    # -2 = earliest
    f = fetch(c, tid, [(0, -2, MB)])[(None, 0)]
    assert next(lb.iter_batches(f.records)).base_offset == 0
    # at the high watermark: success with empty records (the field is present)
    f = fetch(c, tid, [(0, 60, MB)])[(None, 0)]
    assert f.error_code == 0 and f.HasField("records") and f.records == b"" and f.high_watermark == 60
    # beyond it, or negative: out of range
    for off in (61, -1, -5):
        f = fetch(c, tid, [(0, off, MB)])[(None, 0)]
        assert f.error_code == Errors.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION and not f.HasField("records")
    # a per-bucket budget ending inside a batch: the answer stops at the last whole batch
    budget = sizes[0] + sizes[1] // 2
    f = fetch(c, tid, [(0, 0, budget)])[(None, 0)]
    assert len(f.records) == sizes[0] and [h.base_offset for h in lb.iter_batches(f.records)] == [0]
    # min-one rule: the first bucket returns a whole batch even with a tiny budget...
    f = fetch(c, tid, [(0, 0, 10), (1, 0, 10)])
    assert len(f[(None, 0)].records) == sizes[0]
    # ...but once data was returned, later buckets only get what the budgets allow
    assert len(f[(None, 1)].records) == 10
    f = fetch(c, tid, [(0, 0, MB), (1, 0, MB)], max_bytes=sizes[0] + 7)
    assert len(f[(None, 0)].records) == sizes[0]
    assert f[(None, 1)].records == b"" and f[(None, 1)].high_watermark == 60


def test_fetch_answers_hold_whole_batches(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    small = [arrow_batch(i * 10, 10) for i in range(3)]
    big = arrow_batch(30, 5000)
    for b in small + [big]:
        produce(c, tid, [(0, b), (1, b)])
    ends = [sum(len(b) for b in small[:k]) for k in range(1, 4)]
    # every budget between two batch ends gives the batches that fit, none cut
    for budget in range(ends[0], ends[2] + len(big) // 2, 37):
        f = fetch(c, tid, [(0, 0, budget)])[(None, 0)]
        want = max(e for e in ends if e <= budget)
        assert len(f.records) == want, budget
        assert sum(h.total_size for h in lb.iter_batches(f.records)) == want
        assert rows_of(f.records) == expected_rows(0, want // len(small[0]) * 10)
    # a first batch larger than the whole request budget still comes back, whole and alone
    f = fetch(c, tid, [(0, 30, 100), (1, 30, 100)], max_bytes=100)
    assert f[(None, 0)].records == big or bytes(f[(None, 0)].records)[21:] == big[21:]
    assert rows_of(f[(None, 0)].records) == expected_rows(30, 5000)
    assert f[(None, 1)].records == b""
    # a later bucket whose first batch does not fit gets a cut prefix of it (as from Java), which
    # tells the client how big that batch is
    f = fetch(c, tid, [(0, 0, len(small[0])), (1, 30, 1000)])
    assert len(f[(None, 0)].records) == len(small[0])
    cut = f[(None, 1)].records
    assert len(cut) == 1000 and list(lb.iter_batches(cut)) == []
    assert int.from_bytes(cut[8:12], "little") + lb.LOG_OVERHEAD == len(big)
    # projected answers hold whole batches as well
    f = fetch(c, tid, [(0, 0, ends[1] + 5)], projection=[0])[(None, 0)]
    assert [h.base_offset for h in lb.iter_batches(f.records)] == [0, 10]
    assert sum(h.total_size for h in lb.iter_batches(f.records)) == len(f.records)


def test_projected_fetch_budgets_count_projected_bytes(cluster, db):
    """As Java's FileLogProjection: the byte budgets of a projected fetch are charged with the
    projected size of each batch, so a narrow projection answers with many more batches than
    the same budget holds unprojected, and never with more bytes than the budgets."""
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    batches = [arrow_batch(i * 200, 200) for i in range(40)]
    for b in batches:
        produce(c, tid, [(0, b)])
    proj = [CODEC.project_batch(b, next(lb.iter_batches(b)), [0]) for b in batches]
    budget = sum(len(p) for p in proj[:10]) + 3  # ten projected batches, four stored ones
    assert sum(len(b) for b in batches[:5]) > budget
    seen = []
    offset = 0
    while offset < 8000:
        f = fetch(c, tid, [(0, offset, budget)], projection=[0])[(None, 0)]
        hs = list(lb.iter_batches(f.records))
        assert hs and len(f.records) <= budget
        assert sum(h.total_size for h in hs) == len(f.records)
        seen.append(len(hs))
        got = rows_of(f.records, arrow_schema=pa.schema([SCHEMA.to_arrow().field(0)]))
        assert [r["id"] for r in got] == list(range(offset, offset + 200 * len(hs)))
        offset = hs[-1].next_offset
    # the first answer reads as far as the budget goes unprojected; once the server knows how
    # much the projection keeps, answers come close to the budget in projected bytes
    assert max(seen[1:]) >= 8, seen
    # the request's max_bytes bounds the whole answer the same way
    f = fetch(c, tid, [(0, 0, MB)], projection=[0], max_bytes=budget)[(None, 0)]
    assert 8 <= len(list(lb.iter_batches(f.records))) <= 10 and len(f.records) <= budget


def test_fetch_long_poll_wakes_on_append(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    produce(c, tid, [(0, arrow_batch(0, 2))])
    writer = cluster.new_tablet_connection()

    def later():
        time.sleep(0.3)
        produce(writer, tid, [(0, arrow_batch(2, 3))])

    th = threading.Thread(target=later)
    start = time.monotonic()
    th.start()
    f = fetch(c, tid, [(0, 2, MB)], min_bytes=1, max_wait_ms=5000)[(None, 0)]
    waited = time.monotonic() - start
    th.join()
    writer.close()
    assert 0.2 < waited < 3.0
    assert rows_of(f.records) == expected_rows(2, 3)
    # nothing arrives: the answer comes after max_wait_ms, empty
    start = time.monotonic()
    f = fetch(c, tid, [(0, 5, MB)], min_bytes=1, max_wait_ms=300)[(None, 0)]
    assert 0.25 < time.monotonic() - start < 3.0
    assert f.records == b"" and f.high_watermark == 5
    # data already there: no waiting at all
    start = time.monotonic()
    f = fetch(c, tid, [(0, 0, MB)], min_bytes=1, max_wait_ms=5000)[(None, 0)]
    assert time.monotonic() - start < 1.0 and rows_of(f.records) == expected_rows(0, 5)


def test_long_poll_does_not_block_other_requests(cluster, db):
    tid = cluster.create_table(db, "t")
    poller = cluster.new_tablet_connection()
    try:
        rid = poller.send(Api.FETCH_LOG, fetch_req(tid, [(0, 0, MB)], min_bytes=1, max_wait_ms=3000))
        start = time.monotonic()
        # another request on the same connection is answered while the fetch waits
        assert poller.call(Api.INIT_WRITER, pb.InitWriterRequest()).writer_id >= 0
        assert time.monotonic() - start < 1.5
        produce(cluster.tablet(), tid, [(0, arrow_batch(0, 1))])
        kind, got, body = poller.recv()
        assert (kind, got) == (0, rid)
        assert time.monotonic() - start < 2.5
        resp = pb.FetchLogResponse()
        resp.ParseFromString(bytes(body))
        assert rows_of(resp.tables_resp[0].buckets_resp[0].records) == expected_rows(0, 1)
    finally:
        poller.close()


def test_fetch_projection(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    produce(c, tid, [(0, arrow_batch(0, 4) + arrow_batch(4, 3))])
    produce(c, tid, [(0, arrow_batch(7, 2))])
    full = SCHEMA.to_arrow()
    for fields in ([0, 2], [1], [0, 1, 2], [2]):
        f = fetch(c, tid, [(0, 0, MB)], projection=fields)[(None, 0)]
        assert f.error_code == 0, f.error_message
        sub = pa.schema([full.field(i) for i in fields])
        got = rows_of(f.records, arrow_schema=sub)
        names = [full.field(i).name for i in fields]
        assert got == [{k: r[k] for k in names} for r in expected_rows(0, 9)]
    # projection needs ascending, unique, in-range positions
    for bad in ([2, 0], [1, 1], [3], [-1, 0], []):
        f = fetch(c, tid, [(0, 0, MB)], projection=bad)[(None, 0)]
        assert f.error_code == Errors.INVALID_COLUMN_PROJECTION, bad
    # and an ARROW table
    itid = cluster.create_table(db, "idx", properties={"table.log.format": "INDEXED"})
    f = fetch(c, itid, [(0, 0, MB)], projection=[0])[(None, 0)]
    assert f.error_code == Errors.INVALID_COLUMN_PROJECTION and "INDEXED" in f.error_message


# -- list offsets / limit scan / writer ids --------------------------------------------------------------
def test_list_offsets(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    empty = list_offsets(c, tid, [0, 1], 2, ts=int(time.time() * 1000) - 1000)
    assert empty[0].offset == 0 and empty[1].offset == 0
    stamps = []
    for i in range(3):
        produce(c, tid, [(0, arrow_batch(i * 2, 2))])
        f = fetch(c, tid, [(0, i * 2, MB)])[(None, 0)]
        stamps.append(next(lb.iter_batches(f.records)).commit_timestamp)
        time.sleep(0.005)
    assert list_offsets(c, tid, [0, 1], 0) == {0: list_offsets(c, tid, [0, 1], 0)[0],
                                                1: list_offsets(c, tid, [0, 1], 0)[1]}
    assert [list_offsets(c, tid, [0, 1], 0)[b].offset for b in (0, 1)] == [0, 0]
    assert [list_offsets(c, tid, [0, 1], 1)[b].offset for b in (0, 1)] == [6, 0]
    for i, ts in enumerate(stamps):
        assert list_offsets(c, tid, [0], 2, ts=ts)[0].offset == 2 * i
    assert list_offsets(c, tid, [0], 2, ts=stamps[0] - 10_000)[0].offset == 0
    assert list_offsets(c, tid, [0], 2, ts=stamps[-1] + 1)[0].offset == 6   # past the newest: HW
    future = list_offsets(c, tid, [0], 2, ts=int(time.time() * 1000) + 60_000)[0]
    assert future.error_code == Errors.INVALID_TIMESTAMP_EXCEPTION and not future.HasField("offset")
    missing = list_offsets(c, tid, [0], 2)[0]
    assert missing.error_code == Errors.UNKNOWN_SERVER_ERROR and "startTimestamp" in missing.error_message
    assert list_offsets(c, tid, [7], 1)[7].error_code == Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION


def test_limit_scan(cluster, db):
    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    produce(c, tid, [(0, arrow_batch(0, 4))])
    produce(c, tid, [(0, arrow_batch(4, 4))])
    produce(c, tid, [(0, arrow_batch(8, 4))])

    def scan(limit, bucket=0, table=tid):
        return c.call(Api.LIMIT_SCAN, pb.LimitScanRequest(table_id=table, bucket_id=bucket, limit=limit))

    r = scan(3)
    assert not r.error_code and r.is_log_table
    assert rows_of(r.records) == expected_rows(8, 4)     # whole batches holding the last 3 offsets
    assert rows_of(scan(5).records) == expected_rows(4, 8)
    assert rows_of(scan(1000).records) == expected_rows(0, 12)
    assert scan(3, bucket=1).records == b""
    assert scan(3, bucket=9).error_code == Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    pk = cluster.create_table(db, "pk", cols=[_col("id", "INTEGER", 0, nullable=False), _col("v", "STRING", 1)],
                              pk=["id"])
    r = scan(3, table=pk)
    # a primary-key bucket answers from its KV state (empty here), not from the log
    assert r.error_code == 0 and not r.is_log_table and not r.records


def test_writer_ids_and_security_token(cluster):
    c = cluster.tablet()
    ids = [c.call(Api.INIT_WRITER, pb.InitWriterRequest()).writer_id for _ in range(3)]
    assert ids == sorted(set(ids)) and ids[0] >= 0
    tok = c.call(Api.GET_FILESYSTEM_SECURITY_TOKEN, pb.GetFileSystemSecurityTokenRequest())
    assert tok.schema == "file" and tok.token == b"" and not tok.HasField("expiration_time")


def test_dropped_table_data_is_gone(cluster, db, fluss_server):
    import os

    tid = cluster.create_table(db, "t")
    c = cluster.tablet()
    produce(c, tid, [(0, arrow_batch(0, 3))])
    tdir = os.path.join(fluss_server.data_dir, "log", db, f"t-{tid}")
    assert os.path.isdir(tdir)
    cluster.coord.call(Api.DROP_TABLE, pb.DropTableRequest(table_path=table_path(db, "t"),
                                                           ignore_if_not_exists=False))
    deadline = time.monotonic() + 5
    while os.path.exists(tdir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(tdir)
    assert produce(c, tid, [(0, arrow_batch(0, 1))])[(None, 0)].error_code == \
        Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    tid2 = cluster.create_table(db, "t")
    assert tid2 != tid
    assert fetch(c, tid2, [(0, 0, MB)])[(None, 0)].high_watermark == 0


def test_large_multi_bucket_fetch(cluster, db):
    import os as _os

    tid = cluster.create_table(db, "big", bucket_count=3)
    c = cluster.tablet()
    blobs = {b: [lb.build_batch(_os.urandom(400_000), schema_id=1, record_count=7) for _ in range(2)]
             for b in range(3)}
    for i in range(2):
        r = produce(c, tid, [(b, blobs[b][i]) for b in range(3)])
        assert all(v.error_code == 0 and v.base_offset == 7 * i for v in r.values())
    f = fetch(c, tid, [(b, 0, 4 * MB) for b in range(3)], max_bytes=64 * MB)
    for b in range(3):
        got = f[(None, b)].records
        hs = list(lb.iter_batches(got))
        assert [h.base_offset for h in hs] == [0, 7]
        for h, sent in zip(hs, blobs[b], strict=True):
            assert got[h.position + 21:h.position + h.total_size] == sent[21:]
    # the overall budget is shared in request order: bucket 0 gets it, the rest what is left
    one = len(blobs[0][0])
    f = fetch(c, tid, [(b, 0, 4 * MB) for b in range(3)], max_bytes=one + 1000)
    assert len(f[(None, 0)].records) == one  # whole batches only
    assert f[(None, 1)].records == b"" and f[(None, 2)].records == b""
