"""More bad input for the embedded server (bad CRCs, malformed produce requests, garbage on tablet
listeners, frames that announce much and send little) and the big-frame path: frames read straight
into pooled buffers, produce payloads appended from the frame itself."""
from __future__ import annotations

import glob
import os
import random
import socket
import struct
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluss_fast.codec.log import logbatch as lb
from fluss_fast.codec.log.arrowlog import ArrowLogCodec
from fluss_fast.error_codes import Errors
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc import frame as F
from fluss_fast.rpc.api import Api
from fluss_fast.rpc.frame_pool import FramePool
from fluss_fast.server.local import LocalServer
from fluss_fast.server.tablet import _varint, parse_produce_request

from test_server_log import (  # noqa: F401
    MB,
    SCHEMA,
    Cluster,
    arrow_batch,
    cluster,
    db,
    expected_rows,
    fetch,
    list_offsets,
    produce,
    rows_of,
)
from wire import WireClient, WireError

PLAIN = ArrowLogCodec(SCHEMA, "NONE")
NONE_PROPS = {"table.log.arrow.compression.type": "NONE"}


def big_batch(start, n, **kw):
    return arrow_batch(start, n, codec=PLAIN, **kw)


def segment_bytes(server, db_name, table, table_id, bucket) -> int:
    files = glob.glob(os.path.join(server.data_dir, "log", db_name, f"{table}-{table_id}", f"log-{bucket}", "*.log"))
    return sum(os.path.getsize(f) for f in files)


def healthy(server, tablet_addr, table_id=None, bucket=0):
    """A second, well-behaved client is served by the coordinator and the tablet server."""
    with WireClient(server.bootstrap_servers) as c:
        assert "fluss" in c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest()).database_name
    with WireClient(tablet_addr) as t:
        if table_id is None:
            assert t.call(Api.INIT_WRITER, pb.InitWriterRequest()).writer_id >= 0
        else:
            return list_offsets(t, table_id, [bucket], 1)[bucket].offset


def flip_payload_byte(batch: bytes) -> bytes:
    h = lb.parse_header(batch)
    out = bytearray(batch)
    pos = h.header_size + (len(batch) - h.header_size) // 2
    out[pos] ^= 0x5A
    return bytes(out)


# -- bad CRCs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows", [4, 12000], ids=["ring-buffer-frame", "pooled-big-frame"])
def test_bad_crc_is_refused_nothing_appended_others_served(fluss_server, cluster, db, rows):
    tid = cluster.create_table(db, "t", bucket_count=2, properties=NONE_PROPS)
    c = cluster.tablet()
    good = big_batch(0, rows)
    bad = flip_payload_byte(big_batch(rows, rows))
    assert (len(good) > 64 * 1024) == (rows > 100)
    before = segment_bytes(fluss_server, db, "t", tid, 0)
    r = produce(c, tid, [(0, good + bad), (1, good)])
    assert r[(None, 0)].error_code == Errors.CORRUPT_RECORD_EXCEPTION  # a CRC mismatch, as Java's LogTablet
    assert "CRC" in r[(None, 0)].error_message and "batch 1" in r[(None, 0)].error_message
    assert not r[(None, 0)].HasField("base_offset")
    assert r[(None, 1)].error_code == 0 and r[(None, 1)].base_offset == 0
    only_bad = produce(c, tid, [(0, bad)])[(None, 0)]
    assert only_bad.error_code == Errors.CORRUPT_RECORD_EXCEPTION  # a CRC mismatch, as Java's LogTablet
    # nothing of either rejected blob reached the log, neither the good batch in front of the bad one
    assert segment_bytes(fluss_server, db, "t", tid, 0) == before
    assert healthy(fluss_server, cluster.tablets[0], tid, 0) == 0
    # another client writes and reads bucket 0 normally, from offset 0
    with cluster.new_tablet_connection() as other:
        ok = produce(other, tid, [(0, good)])[(None, 0)]
        assert ok.error_code == 0 and ok.base_offset == 0
        f = fetch(other, tid, [(0, 0, 64 * MB)])[(None, 0)]
        assert f.high_watermark == rows and rows_of(f.records, PLAIN) == expected_rows(0, rows)
    # and the offending connection itself is still served
    assert list_offsets(c, tid, [0, 1], 1)[1].offset == rows


def test_bad_crc_in_a_pipeline_of_big_frames(fluss_server, cluster, db):
    """Pooled buffers are reused between requests: a rejected frame must not leave anything behind
    that a later frame in the same buffer could expose."""
    tid = cluster.create_table(db, "t", bucket_count=1, properties=NONE_PROPS)
    c = cluster.new_tablet_connection()
    try:
        batches = [big_batch(i * 5000, 5000) for i in range(12)]
        sent = []
        for i, b in enumerate(batches):
            data = flip_payload_byte(b) if i % 3 == 1 else b
            req = pb.ProduceLogRequest(acks=-1, table_id=tid, timeout_ms=30000,
                                       buckets_req=[pb.PbProduceLogReqForBucket(bucket_id=0, records=data)])
            sent.append((c.send(Api.PRODUCE_LOG, req), i % 3 != 1, i))
        expect_rows = []
        offset = 0
        for rid, ok, i in sent:
            kind, got, body = c.recv()
            assert got == rid
            resp = c.result(Api.PRODUCE_LOG, kind, body).buckets_resp[0]
            if ok:
                assert resp.error_code == 0 and resp.base_offset == offset
                offset += 5000
                expect_rows += expected_rows(i * 5000, 5000)
            else:
                assert resp.error_code == Errors.CORRUPT_RECORD_EXCEPTION  # a CRC mismatch, as Java's LogTablet
        records = b""
        while True:
            f = fetch(c, tid, [(0, len(rows_of(records, PLAIN)), 64 * MB)])[(None, 0)]
            if not f.records:
                break
            records += f.records
        assert rows_of(records, PLAIN) == expect_rows
    finally:
        c.close()


# -- malformed produce requests ------------------------------------------------------------------------
def _produce_body(tid, records, **extra):
    req = pb.ProduceLogRequest(acks=-1, table_id=tid, timeout_ms=30000,
                               buckets_req=[pb.PbProduceLogReqForBucket(bucket_id=0, records=records)])
    for k, v in extra.items():
        setattr(req, k, v)
    return req.SerializeToString()


def _error_of(c, body) -> WireError:
    with pytest.raises(WireError) as e:
        c.call(Api.PRODUCE_LOG, body)
    assert e.value.kind == F.ERROR_RESPONSE
    return e.value


@pytest.mark.parametrize("rows", [3, 12000], ids=["small", "big"])
def test_malformed_produce_requests(fluss_server, cluster, db, rows):
    tid = cluster.create_table(db, "t", bucket_count=1, properties=NONE_PROPS)
    c = cluster.tablet()
    good = big_batch(0, rows)
    body = _produce_body(tid, good)
    # cut inside the records field: the body itself is truncated
    e = _error_of(c, body[:len(body) - 7])
    assert e.code == Errors.UNKNOWN_SERVER_ERROR and "PRODUCE_LOG" in e.message
    # a length prefix pointing past the end
    e = _error_of(c, body[:-1])
    assert e.code == Errors.UNKNOWN_SERVER_ERROR
    # required fields missing: the request, then the bucket
    partial = pb.ProduceLogRequest(acks=-1, table_id=tid)
    partial.buckets_req.add(bucket_id=0, records=good)
    e = _error_of(c, partial.SerializePartialToString())
    assert e.code == Errors.UNKNOWN_SERVER_ERROR and "timeout_ms" in e.message
    partial = pb.ProduceLogRequest(acks=-1, table_id=tid, timeout_ms=1)
    partial.buckets_req.add(bucket_id=0)
    e = _error_of(c, partial.SerializePartialToString())
    assert e.code == Errors.UNKNOWN_SERVER_ERROR and "records" in e.message
    # records with the wrong wire type (varint instead of length-delimited)
    wrong = b"\x08\x01\x10" + _varint(tid) + b"\x18\x10\x22\x04\x10\x00\x18\x05"
    e = _error_of(c, wrong)
    assert e.code == Errors.UNKNOWN_SERVER_ERROR
    # nothing was appended, and the connection keeps working
    assert list_offsets(c, tid, [0], 1)[0].offset == 0
    # an unknown field is no error (protobuf skips it); the request lands once
    odd = body + b"\xf8\x01\x07"  # field 31, varint 7
    r = c.call(Api.PRODUCE_LOG, odd)
    assert r.buckets_resp[0].error_code == 0 and r.buckets_resp[0].base_offset == 0
    r = produce(c, tid, [(0, good)])[(None, 0)]
    assert r.error_code == 0 and r.base_offset == rows
    f = fetch(c, tid, [(0, 0, 64 * MB)])[(None, 0)]
    assert rows_of(f.records, PLAIN) == expected_rows(0, rows) * 2
    assert healthy(fluss_server, cluster.tablets[0], tid, 0) == 2 * rows


# -- the rest of the bad-input list on a tablet listener --------------------------------------------------
def _server_failure(c) -> pb.ErrorResponse:
    kind, rid, body = c.recv()
    assert kind == F.SERVER_FAILURE and rid == -1
    err = pb.ErrorResponse.FromString(body)
    assert err.error_message
    assert c.wait_closed()
    return err


@pytest.mark.parametrize("garbage", [b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64),
                                     b"\xff" * 300, struct.pack(">i", F.MAX_REQUEST_SIZE - 3) + b"\x00\x02\x00\x00",
                                     struct.pack(">i", 3) + b"abc"],
                         ids=["tls-hello", "ff-bytes", "oversized", "shorter-than-header"])
def test_garbage_on_a_tablet_listener(fluss_server, cluster, garbage):
    with WireClient(cluster.tablets[0]) as c:
        c.send_raw(garbage)
        assert _server_failure(c).error_code == Errors.CORRUPT_MESSAGE
    healthy(fluss_server, cluster.tablets[0])


def test_unknown_api_keys_on_a_tablet_listener(fluss_server, cluster):
    with WireClient(cluster.tablets[0]) as c:
        for key in (999, 30000, Api.CREATE_TABLE):
            with pytest.raises(WireError) as e:
                c.call(key, b"")
            assert e.value.code == Errors.UNSUPPORTED_VERSION and str(key) in e.value.message
        assert c.call(Api.INIT_WRITER, pb.InitWriterRequest()).writer_id >= 0
    healthy(fluss_server, cluster.tablets[0])


def _rss_kib(pid) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_announced_huge_frames_cost_no_memory(fluss_server, cluster):
    """A header promising 100 MiB gets its buffer at once (so the payload is read in place), but the
    memory is committed only as bytes arrive: stalled clients cannot exhaust the server."""
    pid = fluss_server.proc.pid
    before = _rss_kib(pid)
    socks = []
    try:
        for _ in range(4):
            host, port = cluster.tablets[0].rsplit(":", 1)
            s = socket.create_connection((host, int(port)))
            s.sendall(struct.pack(">ihhi", F.MAX_REQUEST_SIZE - 4, Api.PRODUCE_LOG, 0, 1) + b"\x08" * 200_000)
            socks.append(s)
        time.sleep(0.5)
        grown = _rss_kib(pid) - before
        assert grown < 60 * 1024, f"server RSS grew by {grown} KiB for 4 stalled 100 MiB frames"
        with WireClient(cluster.tablets[0]) as c:
            assert c.call(Api.INIT_WRITER, pb.InitWriterRequest()).writer_id >= 0
    finally:
        for s in socks:
            s.close()
    healthy(fluss_server, cluster.tablets[0])


# -- big frames: pooled buffers, payload appended in place -------------------------------------------------
def test_pipelined_big_frames_in_random_chunks_are_stored_exactly():
    """Frames of many sizes, sent in random pieces with several in flight: every batch is stored
    byte for byte (apart from offsets, timestamp and CRC), and buffers really are reused."""
    with LocalServer(tablet_servers=1) as srv:
        cl = Cluster(srv)
        try:
            cl.coord.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name="big", ignore_if_exists=False))
            tid = cl.create_table("big", "t", bucket_count=1, properties=NONE_PROPS)
            rng = random.Random(11)
            sizes = [rng.choice([40, 2500, 9000, 30000, 70000]) for _ in range(40)]
            starts = [sum(sizes[:i]) for i in range(len(sizes))]
            batches = [big_batch(s, n) for s, n in zip(starts, sizes, strict=True)]
            encoded = [F.encode_request(Api.PRODUCE_LOG, 0, i, _produce_body(tid, b)) for i, b in enumerate(batches)]
            offsets = {}
            with cl.new_tablet_connection() as c:
                c.sock.settimeout(60)
                # two rounds: all of the first is answered before the second starts, so the second
                # must find the first round's buffers free again
                for lo, hi in ((0, 20), (20, len(batches))):
                    frames = b"".join(encoded[lo:hi])

                    def pump(frames=frames):
                        pos = 0
                        while pos < len(frames):
                            step = rng.randint(1, 3 * MB)
                            c.send_raw(frames[pos:pos + step])
                            pos += step

                    sender = threading.Thread(target=pump)
                    sender.start()
                    try:
                        for _ in range(lo, hi):
                            kind, rid, body = c.recv()
                            r = c.result(Api.PRODUCE_LOG, kind, body).buckets_resp[0]
                            assert r.error_code == 0, r
                            offsets[rid] = r.base_offset
                    finally:
                        sender.join()
                assert [offsets[i] for i in range(len(batches))] == starts
                stored = b""
                next_offset = 0
                while True:
                    f = fetch(c, tid, [(0, next_offset, 64 * MB)])[(None, 0)]
                    whole = list(lb.iter_batches(f.records))
                    if not whole:
                        break
                    stored += f.records[:whole[-1].position + whole[-1].total_size]
                    next_offset = whole[-1].next_offset
            heads = list(lb.iter_batches(stored))
            assert len(heads) == len(batches)
            for h, sent_batch, start in zip(heads, batches, starts, strict=True):
                mine = stored[h.position:h.position + h.total_size]
                assert h.base_offset == start
                # the payload (everything after the header) is exactly what was sent
                assert mine[h.header_size:] == sent_batch[h.header_size:]
            stats = srv.server.frame_pool.stats()
            assert stats["reused"] > 0 and stats["allocated"] < len(batches), stats
        finally:
            cl.close()


def test_frame_pool_reuses_only_unreferenced_buffers():
    pool = FramePool()
    a = pool.take(200_000)
    assert len(a) >= 200_000
    a[:4] = b"AAAA"
    view = memoryview(a)[10:20]
    pool.handed_out(a)
    del a
    b = pool.take(200_000)
    assert b[:4] != b"AAAA"  # a view of the first buffer is alive: not reused
    del view
    c = pool.take(150_000)  # same size class
    assert c[:4] == b"AAAA"
    assert pool.stats()["reused"] == 1
    # a buffer that only the pool references goes back; one held elsewhere is kept busy
    pool.handed_out(c)
    held = c
    del c
    pool.handed_out(b)
    del b
    d = pool.take(200_000)
    assert d is not held
    # huge frames are not pooled
    huge = pool.take(40 * MB)
    assert len(huge) == 40 * MB
    pool.handed_out(huge)
    del huge
    assert pool.stats()["busy"] <= 1


# -- the hand-written ProduceLogRequest parser agrees with protobuf ---------------------------------------
_buckets = st.lists(st.tuples(st.one_of(st.none(), st.integers(-2 ** 63, 2 ** 63 - 1)),
                              st.integers(-2 ** 31, 2 ** 31 - 1), st.binary(max_size=300)), max_size=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acks=st.integers(-2 ** 31, 2 ** 31 - 1), table_id=st.integers(-2 ** 63, 2 ** 63 - 1),
       timeout=st.integers(-2 ** 31, 2 ** 31 - 1), buckets=_buckets, cut=st.integers(0, 2000),
       junk=st.binary(max_size=8))
def test_raw_produce_parser_matches_protobuf(acks, table_id, timeout, buckets, cut, junk):
    req = pb.ProduceLogRequest(acks=acks, table_id=table_id, timeout_ms=timeout)
    for pid, bucket, records in buckets:
        b = req.buckets_req.add(bucket_id=bucket, records=records)
        if pid is not None:
            b.partition_id = pid
    body = req.SerializeToString()
    for data in (body, body[:cut], body + junk, junk + body):
        buf = bytearray(data)
        raw = parse_produce_request(memoryview(buf))
        if raw is None:
            continue  # protobuf gets to parse it and report what is wrong
        ref = pb.ProduceLogRequest()
        ref.ParseFromString(bytes(data))
        assert ref.IsInitialized()
        assert (raw.acks, raw.table_id, raw.timeout_ms) == (ref.acks, ref.table_id, ref.timeout_ms)
        assert len(raw.buckets_req) == len(ref.buckets_req)
        for rb, pb_b in zip(raw.buckets_req, ref.buckets_req, strict=True):
            assert rb.bucket_id == pb_b.bucket_id
            assert rb.HasField("partition_id") == pb_b.HasField("partition_id")
            assert rb.partition_id == pb_b.partition_id
            assert bytes(rb.records) == pb_b.records
            assert rb.records.obj is buf and not rb.records.readonly  # a view, not a copy
    assert parse_produce_request(memoryview(bytearray(body))) is not None


def test_reading_pauses_while_big_frames_are_still_being_handled(monkeypatch):
    """Appends slower than the network must not make the server buffer frame after frame: above
    ``_MAX_INFLIGHT_BYTES`` of big frames in handling, the connection stops reading until they end."""
    import asyncio

    from fluss_fast.server import protocol

    monkeypatch.setattr(protocol, "_MAX_INFLIGHT_BYTES", 500_000)
    with LocalServer(tablet_servers=1) as srv:
        cl = Cluster(srv)
        try:
            cl.coord.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name="slow", ignore_if_exists=False))
            tid = cl.create_table("slow", "t", bucket_count=1, properties=NONE_PROPS)
            tablet = srv.server._listeners["PLAINTEXT"][1]
            handler, *rest = tablet.dispatch[Api.PRODUCE_LOG]
            loop = srv.loop
            gate = asyncio.Event()
            started = []

            async def slow(ctx, version, req):
                started.append(1)
                await gate.wait()
                return await handler(ctx, version, req)

            tablet.dispatch[Api.PRODUCE_LOG] = (slow, *rest)
            batch = big_batch(0, 9000)  # ~215 KB: a big frame
            assert len(batch) > 200_000
            with cl.new_tablet_connection() as c:
                for _ in range(8):
                    c.send(Api.PRODUCE_LOG, _produce_body(tid, batch))
                time.sleep(0.5)
                conns = [x for x in srv.server._connections if x._listener is tablet]
                assert len(conns) == 1
                # three frames (> 500 KB held) are in handling; the rest waits in the socket
                assert len(started) == 3 and conns[0]._read_paused
                loop.call_soon_threadsafe(gate.set)
                bases = []
                for _ in range(8):
                    kind, rid, body = c.recv()
                    r = c.result(Api.PRODUCE_LOG, kind, body).buckets_resp[0]
                    assert r.error_code == 0
                    bases.append(r.base_offset)
                assert bases == [i * 9000 for i in range(8)]
                deadline = time.monotonic() + 5  # done callbacks run just after the answers go out
                while conns[0]._held and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert not conns[0]._read_paused and conns[0]._held == 0
        finally:
            cl.close()


async def test_local_server_names_the_loop_it_runs_on():
    import asyncio

    srv = LocalServer()
    assert srv.loop is None
    async with srv:
        assert srv.loop is asyncio.get_running_loop()
    with LocalServer() as threaded:
        assert threaded.loop is not None and threaded.loop is not asyncio.get_running_loop()
        assert asyncio.run_coroutine_threadsafe(asyncio.sleep(0, result=7), threaded.loop).result(10) == 7
