"""The KV store's pre-write buffer (``server/kvstore.py``): changes acknowledged but not yet in
RocksDB are seen by every read (lookups, prefix lookups, limit scans, SCAN_KV), deletes in the
buffer hide the stored row, and a kill -9 with the buffer unflushed loses nothing: the restart
replays the changelog from the applied offset. One server never flushes on its own
(``FLUSS_FAST_KV_PREWRITE_*``), the other flushes after every batch; both must agree."""
from __future__ import annotations

import glob
import os
import random
import time

import pytest

from fluss_fast.codec.kv.valuebatch import iter_value_records
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api

from test_server_kv import DEC, Kv, dl, k, looked_up, up
from test_server_kv import same_answer as _both


def _with_env(monkeypatch, keys, seconds, start):
    monkeypatch.setenv("FLUSS_FAST_KV_PREWRITE_KEYS", str(keys))
    monkeypatch.setenv("FLUSS_FAST_KV_PREWRITE_SECONDS", str(seconds))
    try:
        return start()
    finally:
        monkeypatch.delenv("FLUSS_FAST_KV_PREWRITE_KEYS")
        monkeypatch.delenv("FLUSS_FAST_KV_PREWRITE_SECONDS")


def _start(start_server, monkeypatch, keys, seconds):
    srv = _with_env(monkeypatch, keys, seconds, lambda: start_server(sasl=False))
    srv.prewrite = (keys, seconds)  # the same bounds after a restart
    return srv


@pytest.fixture
def pair(start_server, unique_name, monkeypatch):
    """(buffering, flushing) Kv clients, their servers, and a database name on both."""
    srvs = [_start(start_server, monkeypatch, 10 ** 9, 3600), _start(start_server, monkeypatch, 1, 3600)]
    kvs = [Kv(s) for s in srvs]
    db = unique_name("prewrite")
    for kv in kvs:
        kv.create_db(db)
    yield kvs, db, srvs
    for kv in kvs:
        kv.close()


def _put(kvs, tid, records):
    resps = [kv.put(tid, records) for kv in kvs]
    assert [r.error_code for r in resps] == [0, 0], [r.error_message for r in resps]
    assert resps[0].log_end_offset == resps[1].log_end_offset
    return resps[0].log_end_offset


def _applied(srv, db) -> int:
    [path] = glob.glob(os.path.join(srv.data_dir, "**", db, "*", "kv-0", "applied-offset"), recursive=True) or [None]
    if path is None:
        return 0
    with open(path) as f:
        return int(f.read().strip() or 0)


def _restart(kvs, srvs, kill, monkeypatch):
    for kv in kvs:
        kv.close()
    for srv in srvs:
        if kill:
            srv.kill()
        else:
            srv.stop()
        _with_env(monkeypatch, *srv.prewrite, srv.start)
    kvs[:] = [Kv(s) for s in srvs]


def _scan_kv(kv, tid):
    opened = kv.tablet.call(Api.SCAN_KV, pb.ScanKvRequest(
        bucket_scan_req=pb.PbScanReqForBucket(table_id=tid, bucket_id=0), call_seq_id=0, batch_size_bytes=1 << 20))
    assert not opened.error_code, opened.error_message
    rows = [DEC.decode(r) for _, r in iter_value_records(opened.records)]
    assert not opened.has_more_results
    return sorted(rows)


def _limit_scan(kv, tid):
    resp = kv.tablet.call(Api.LIMIT_SCAN, pb.LimitScanRequest(table_id=tid, bucket_id=0, limit=1000))
    assert not resp.error_code, resp.error_message
    return sorted(DEC.decode(r) for _, r in iter_value_records(resp.records)) if resp.records else []


def _state(kv, tid, n):
    return looked_up(kv.lookup(tid, [k(i) for i in range(n)]))


def test_reads_see_unflushed_changes_and_kill9_loses_none(pair, monkeypatch):
    kvs, db, srvs = pair
    tid = _both(kvs, lambda kv: kv.create_table(db, "t", bucket_count=1))
    end = _put(kvs, tid, [up(i, f"a{i}", i) for i in range(30)])
    _restart(kvs, srvs, False, monkeypatch)  # a clean stop flushes: these rows are now in RocksDB
    assert _applied(srvs[0], db) == end
    rnd = random.Random(3)
    for _ in range(25):  # updates and deletes over stored rows, and new keys, all left in the buffer
        batch = []
        for _ in range(rnd.randint(1, 30)):
            i = rnd.randrange(45)
            batch.append(dl(i) if rnd.random() < 0.35 else up(i, rnd.choice(["b", "c", None]), rnd.randrange(9)))
        end = _put(kvs, tid, batch)
    assert _applied(srvs[0], db) < end  # the buffering server really holds changes RocksDB lacks
    assert _applied(srvs[1], db) == end
    state = _both(kvs, lambda kv: _state(kv, tid, 45))
    assert None in state and any(s is not None and s[1] != f"a{s[0]}" for s in state)
    log = _both(kvs, lambda kv: kv.changelog(tid))
    _restart(kvs, srvs, True, monkeypatch)
    assert _both(kvs, lambda kv: kv.changelog(tid)) == log
    assert _both(kvs, lambda kv: _state(kv, tid, 45)) == state
    _put(kvs, tid, [up(i, "after") for i in range(0, 45, 4)] + [dl(1)])
    _both(kvs, lambda kv: kv.changelog(tid))
    _both(kvs, lambda kv: _state(kv, tid, 45))


def test_iterating_reads_see_the_buffer(pair, monkeypatch):
    kvs, db, srvs = pair
    tid = _both(kvs, lambda kv: kv.create_table(db, "scan", bucket_count=1))
    _put(kvs, tid, [up(i, "old", i) for i in range(10)])
    _restart(kvs, srvs, False, monkeypatch)
    _put(kvs, tid, [dl(2), dl(5), up(3, "new"), up(11, "added", 1)])
    expect = sorted([[i, "old", i] for i in range(10) if i not in (2, 3, 5)] + [[3, "new", None], [11, "added", 1]])
    assert _both(kvs, lambda kv: _scan_kv(kv, tid)) == expect
    _put(kvs, tid, [dl(11), up(12, "later")])
    expect = sorted([r for r in expect if r[0] != 11] + [[12, "later", None]])
    assert _both(kvs, lambda kv: _limit_scan(kv, tid)) == expect
    assert _both(kvs, lambda kv: _state(kv, tid, 13)) == [
        None if i in (2, 5, 11) else next(r for r in expect if r[0] == i) if i in (3, 12) or i < 10 else None
        for i in range(13)]


def test_buffer_is_flushed_after_its_time(start_server, unique_name, monkeypatch):
    srv = _start(start_server, monkeypatch, 10 ** 9, 0.2)
    kv = Kv(srv)
    try:
        db = unique_name("prewrite")
        kv.create_db(db)
        tid = kv.create_table(db, "t", bucket_count=1)
        end = kv.put(tid, [up(1, "a"), up(2, "b")]).log_end_offset
        deadline = time.monotonic() + 10
        while _applied(srv, db) != end and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _applied(srv, db) == end
    finally:
        kv.close()


def test_put_kv_of_several_buckets_answers_each_in_request_order(start_server, unique_name, monkeypatch):
    from fluss_fast.codec.kv.kvbatch import build_kv_batch
    from fluss_fast.error_codes import Errors

    srv = _start(start_server, monkeypatch, 10 ** 9, 3600)
    kv = Kv(srv)
    try:
        db = unique_name("prewrite")
        kv.create_db(db)
        tid = kv.create_table(db, "t", bucket_count=3)
        req = pb.PutKvRequest(acks=-1, table_id=tid, timeout_ms=30000)
        big = [up(i, "x" * 20, i) for i in range(3000)]  # long enough for the worker-thread steps
        req.buckets_req.add(bucket_id=2, records=build_kv_batch(big, schema_id=1))
        req.buckets_req.add(bucket_id=0, records=build_kv_batch([up(1, "a")], schema_id=9))  # bad schema id
        req.buckets_req.add(bucket_id=7, records=build_kv_batch([up(1, "a")], schema_id=1))  # no such bucket
        req.buckets_req.add(bucket_id=1, records=build_kv_batch(big[:10], schema_id=1))
        resp = kv.tablet.call(Api.PUT_KV, req)
        assert [(b.bucket_id, b.error_code) for b in resp.buckets_resp] == [
            (2, 0), (0, Errors.SCHEMA_NOT_EXIST), (7, Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION), (1, 0)]
        assert [resp.buckets_resp[0].log_end_offset, resp.buckets_resp[3].log_end_offset] == [3000, 10]
        assert looked_up(kv.lookup(tid, [k(5)], bucket=2)) == [[5, "x" * 20, 5]]
        assert looked_up(kv.lookup(tid, [k(5)], bucket=1)) == [[5, "x" * 20, 5]]
    finally:
        kv.close()
