"""PUT_KV's fast path (``server/kvfast.py``) against the general path: two servers, one with
``FLUSS_FAST_KV_FAST_PATH=0``, get the same raw PUT_KV requests and must answer, log and store the
same (change types, changelog rows, offsets, looked-up state), also across kill -9; plus the split
and plan codecs' compiled and pure twins agree."""
from __future__ import annotations

import random

import pytest

from fluss_fast.codec.errors import CorruptBatchError
from fluss_fast.codec.kv import kvsplit
from fluss_fast.codec.kv.kvbatch import build_kv_batch, iter_kv_records
from fluss_fast.error_codes import Errors
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api

from test_server_kv import Kv, changes, dl, k, looked_up, up
from test_server_kv import same_answer as _both


@pytest.fixture
def pair(start_server, unique_name, monkeypatch):
    """(fast, general) Kv clients on two servers, and a fresh database name on both."""
    fast_srv = start_server(sasl=False)
    monkeypatch.setenv("FLUSS_FAST_KV_FAST_PATH", "0")
    slow_srv = start_server(sasl=False)
    monkeypatch.delenv("FLUSS_FAST_KV_FAST_PATH")
    kvs = [Kv(fast_srv), Kv(slow_srv)]
    db = unique_name("kvfast")
    for kv in kvs:
        kv.create_db(db)
    yield kvs, db, (fast_srv, slow_srv)
    for kv in kvs:
        kv.close()


def _put(kvs, tid, records, **kw):
    resps = [kv.put(tid, records, **kw) for kv in kvs]
    got = [(r.error_code, r.log_end_offset if not r.error_code else None) for r in resps]
    assert got[0] == got[1], [r.error_message for r in resps]
    return resps[0]


@pytest.mark.parametrize("image", ["FULL", "WAL"])
def test_same_changelog_and_state(pair, image):
    kvs, db, _ = pair
    tid = _both(kvs, lambda kv: kv.create_table(db, "t", properties={"table.changelog.image": image}))
    _put(kvs, tid, [up(i, f"n{i}", i) for i in range(20)])                 # new keys
    _put(kvs, tid, [up(i, f"m{i}") for i in range(0, 20, 2)])             # updates
    _put(kvs, tid, [dl(1), dl(3), dl(100), dl(101)])                      # present and absent deletes
    _put(kvs, tid, [up(5, "a"), up(5, "b"), up(5, "c")])                  # one key 3x in one batch
    _put(kvs, tid, [up(7, "x"), dl(7), up(7, "y"), dl(7), dl(7)])         # repeats mixing deletes
    _put(kvs, tid, [dl(200)])                                             # nothing changes: empty batch
    rnd = random.Random(len(image))                                       # long: worker-thread reads and builds
    _put(kvs, tid, [dl(i) if rnd.random() < 0.2 else up(i, f"b{j}") for j, i in
                    enumerate(rnd.randrange(1000, 1600) for _ in range(1500))])
    _put(kvs, tid, [up(300, "new"), up(300, "again"), dl(300)])           # born and gone in one batch
    log = _both(kvs, lambda kv: kv.changelog(tid))
    assert log
    if image == "FULL":
        assert changes(log)[-3:] == \
            [(2, [300, "new", None]), (3, [300, "again", None]), (4, [300, "again", None])]
    ids = list(range(25)) + [100, 300] + list(range(1000, 1600))
    _both(kvs, lambda kv: looked_up(kv.lookup(tid, [k(i) for i in ids])))


def test_idempotent_writer_and_errors(pair):
    kvs, db, _ = pair
    tid = _both(kvs, lambda kv: kv.create_table(db, "t"))
    wids = [kv.tablet.call(Api.INIT_WRITER, pb.InitWriterRequest()).writer_id for kv in kvs]
    for seq, recs in enumerate([[up(1, "a")], [up(1, "b"), dl(2)], [up(2, "c")]]):
        for _ in range(2):  # every batch sent twice: the retry is acknowledged, not applied
            got = [kv.put(tid, recs, writer_id=w, seq=seq) for kv, w in zip(kvs, wids, strict=True)]
            assert [g.log_end_offset for g in got] == [got[0].log_end_offset] * 2 and not got[0].error_code
    gaps = [kv.put(tid, [up(3, "z")], writer_id=w, seq=9) for kv, w in zip(kvs, wids, strict=True)]
    assert [g.error_code for g in gaps] == [Errors.OUT_OF_ORDER_SEQUENCE_EXCEPTION] * 2
    good = build_kv_batch([up(4, "q")], schema_id=1)
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    assert _put(kvs, tid, None, raw=bytes(bad_crc)).error_code == Errors.CORRUPT_MESSAGE
    assert _put(kvs, tid, None, raw=good + b"\x00").error_code == Errors.CORRUPT_MESSAGE
    assert _put(kvs, tid, [up(4, "q")], schema_id=9).error_code == Errors.SCHEMA_NOT_EXIST
    # a row cut short: the fast path finds it building the changelog, before anything is written
    assert _put(kvs, tid, [(k(5), b"\x00\x01")]).error_code == Errors.CORRUPT_MESSAGE
    assert "changelog" in kvs[0].put(tid, [(k(5), b"\x00\x01")]).error_message
    _both(kvs, lambda kv: kv.changelog(tid))
    _both(kvs, lambda kv: looked_up(kv.lookup(tid, [k(i) for i in range(6)])))


def test_delete_behaviors(pair):
    kvs, db, _ = pair
    for behavior in ("IGNORE", "DISABLE"):
        tid = _both(kvs, lambda kv, behavior=behavior: kv.create_table(db, f"d{behavior}",
                                                    properties={"table.delete.behavior": behavior}))
        _put(kvs, tid, [up(1, "a"), up(2, "b")])
        r = _put(kvs, tid, [up(3, "c"), dl(1)])
        assert r.error_code == (Errors.DELETION_DISABLED_EXCEPTION if behavior == "DISABLE" else 0)
        _both(kvs, lambda kv, tid=tid: kv.changelog(tid))
        _both(kvs, lambda kv, tid=tid: looked_up(kv.lookup(tid, [k(i) for i in range(4)])))


def test_random_batches_then_kill9_replay(pair):
    kvs, db, srvs = pair
    rnd = random.Random(5)
    tid = _both(kvs, lambda kv: kv.create_table(db, "rnd", bucket_count=1))
    for _ in range(30):
        batch = []
        for _ in range(rnd.randint(1, 40)):
            i = rnd.randrange(25)
            batch.append(dl(i) if rnd.random() < 0.3 else up(i, rnd.choice(["a", "b", None]), rnd.randrange(9)))
        _put(kvs, tid, batch)
    before = _both(kvs, lambda kv: kv.changelog(tid))
    state = _both(kvs, lambda kv: looked_up(kv.lookup(tid, [k(i) for i in range(25)])))
    for kv in kvs:
        kv.close()
    for srv in srvs:
        srv.kill()
        srv.start()
    kvs[:] = [Kv(s) for s in srvs]
    assert _both(kvs, lambda kv: kv.changelog(tid)) == before
    assert _both(kvs, lambda kv: looked_up(kv.lookup(tid, [k(i) for i in range(25)]))) == state
    _put(kvs, tid, [up(i, "after") for i in range(0, 25, 3)])
    _both(kvs, lambda kv: kv.changelog(tid))


# -- the codecs ------------------------------------------------------------------------------------
class _Batch:
    def __init__(self):
        self.ops = []

    def put(self, key, value):
        self.ops.append(("put", key, value))

    def delete(self, key):
        self.ops.append(("delete", key))


@pytest.mark.parametrize("seed", range(4))
def test_split_and_plan_twins_agree(seed):
    rnd = random.Random(seed)
    recs = []
    for _ in range(rnd.randint(0, 60)):
        key = bytes(rnd.randrange(256) for _ in range(rnd.choice([1, 4, 200])))  # 200: a two-byte varint
        key = key if rnd.random() < 0.5 or not recs else recs[rnd.randrange(len(recs))][0]
        recs.append((key, None if rnd.random() < 0.3 else bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 30)))))
    batch = build_kv_batch(recs, schema_id=rnd.choice([1, 2]), writer_id=3, batch_sequence=4)
    prefix = b"\x01\x00"
    expect = ([bytes(key) for key, _ in iter_kv_records(batch)],
              [None if v is None else prefix + bytes(v) for _, v in iter_kv_records(batch)])
    assert kvsplit.split_kv_records(batch, prefix) == kvsplit.split_kv_records_py(batch, prefix) == expect
    keys, values = expect
    stored = {key: rnd.choice([None, b"\x02\x00old", b"\x01\x00old"]) for key in keys}
    for full in (True, False):
        for ignore in (True, False):
            out = []
            for fn in (kvsplit.plan_changes, kvsplit.plan_changes_py):
                changes = {}
                cur = dict(stored)
                out.append((fn(keys, values, cur, full, ignore, changes, b"\x01\x00"), cur, list(changes.items())))
            assert out[0] == out[1]
            # every changed key once, holding its final state
            assert dict(out[0][2]) == {k: out[0][1][k] for k, _ in out[0][2]}
            batches = []
            for fn in (kvsplit.fill_batch, kvsplit.fill_batch_py):
                wb = _Batch()
                fn(dict(out[0][2]), wb)
                batches.append(wb.ops)
            assert batches[0] == batches[1]
            assert [op[1] for op in batches[0]] == sorted(k for k, _ in out[0][2])
            assert all((op[0] == "delete") == (dict(out[0][2])[op[1]] is None) for op in batches[0])


def test_split_rejects_what_iter_kv_records_rejects():
    good = build_kv_batch([up(1, "a"), dl(2)], schema_id=1)
    cases = [good[:20], good[:-1], good + b"\x00", bytes(good[:8]) + bytes([good[8] ^ 1]) + good[9:]]
    for raw in cases:
        for fn in (kvsplit.split_kv_records, kvsplit.split_kv_records_py):
            with pytest.raises(CorruptBatchError):
                fn(raw, b"\x01\x00")


@pytest.mark.parametrize("seed", range(3))
def test_read_through_and_fill_batch_twins_agree(seed):
    rnd = random.Random(seed)
    stored = {bytes([rnd.randrange(4)]) * rnd.randint(1, 3): b"s%d" % i for i in range(12)}
    pending = {bytes([rnd.randrange(4)]) * rnd.randint(0, 3): rnd.choice([None, b"p"]) for _ in range(6)}
    keys = [bytes([rnd.randrange(4)]) * rnd.randint(0, 3) for _ in range(20)]
    asked = []

    def get(ks):
        asked.append(list(ks))
        return [stored.get(key) for key in ks]

    expect = [pending[key] if key in pending else stored.get(key) for key in keys]
    for fn in (kvsplit.read_through, kvsplit.read_through_py):
        asked.clear()
        assert fn(keys, pending, get) == expect
        assert asked == ([[key for key in keys if key not in pending]] if any(key not in pending for key in keys)
                         else [])
        assert fn(keys, {}, get) == [stored.get(key) for key in keys]
    ops = []
    for fn in (kvsplit.fill_batch, kvsplit.fill_batch_py):
        wb = _Batch()
        fn(dict(pending), wb)
        ops.append(wb.ops)
        with pytest.raises(TypeError):
            fn({"text": b"v"}, _Batch())
    assert ops[0] == ops[1]
    assert [op[1] for op in ops[0]] == sorted(pending)  # b"" and prefixes first, as RocksDB orders them


@pytest.mark.parametrize("seed", range(4))
def test_current_values_twins_agree(seed):
    rnd = random.Random(seed)
    stored = {bytes([rnd.randrange(5)]) * rnd.randint(1, 3): b"s%d" % i for i in range(12)}
    pending = {bytes([rnd.randrange(5)]) * rnd.randint(1, 3): rnd.choice([None, b"p"]) for _ in range(6)}
    keys = [bytes([rnd.randrange(5)]) * rnd.randint(1, 3) for _ in range(25)]
    values = [None if rnd.random() < 0.4 else b"v" for _ in keys]
    for deletes_only in (False, True):
        wanted = [key for key, v in zip(keys, values, strict=True) if not deletes_only or v is None]
        expect = {key: pending[key] if key in pending else stored.get(key) for key in wanted}
        for fn in (kvsplit.current_values, kvsplit.current_values_py):
            asked = []

            def get(ks, asked=asked):
                asked.append(list(ks))
                return [stored.get(key) for key in ks]

            got = fn(keys, values, pending, get, deletes_only)
            assert got == expect and list(got) == list(dict.fromkeys(wanted))  # first-seen order
            misses = sorted(dict.fromkeys(key for key in wanted if key not in pending))
            assert asked == ([misses] if misses else [])  # one multi-get, keys in byte order
        with pytest.raises(ValueError):
            kvsplit.current_values(keys, values[:-1], pending, get, deletes_only)


@pytest.mark.parametrize("seed", range(4))
def test_plan_changes_into_current_itself(seed):
    """FULL image: ``changes`` may be ``current``; the result differs from a separate dict only by
    deletes of absent keys, which hold None (writing it changes nothing)."""
    rnd = random.Random(seed)
    keys = [bytes([rnd.randrange(6)]) for _ in range(30)]
    values = [None if rnd.random() < 0.3 else b"\x01\x00v%d" % i for i in range(30)]
    stored = {bytes([i]): rnd.choice([None, b"\x01\x00old"]) for i in range(6)}
    for fn in (kvsplit.plan_changes, kvsplit.plan_changes_py):
        cur, changes = {k: stored[k] for k in keys}, {}
        separate = fn(keys, values, cur, True, False, changes, b"\x01\x00")
        same = {k: stored[k] for k in keys}
        assert fn(keys, values, same, True, False, same, b"\x01\x00") == separate
        assert {k: v for k, v in same.items() if k in changes} == changes
        assert all(same[k] is None and stored[k] is None for k in same if k not in changes)


def test_current_values_asks_in_byte_order_keys_that_differ_past_eight_bytes_or_by_zero_padding():
    keys = [b"\x01", b"\x01\x00", b"\x01" + b"\x00" * 8, b"\x01" + b"\x00" * 9, b"abcdefgh", b"abcdefgh\x00",
            b"abcdefghi", b"abcdefgha", b"abcdefgh\xff", b"\xff" * 8, b"\xff" * 12, b"\x00", b"abcdefg"]
    rnd = random.Random(6)
    for _ in range(20):
        rnd.shuffle(keys)
        for fn in (kvsplit.current_values, kvsplit.current_values_py):
            asked = []
            got = fn(keys, [b"v"] * len(keys), {b"abcdefg": b"p"},
                     lambda ks, asked=asked: asked.append(ks) or [b"s"] * len(ks), False)
            assert asked == [sorted(set(keys) - {b"abcdefg"})]
            assert list(got) == keys and got[b"abcdefg"] == b"p" and set(got.values()) == {b"s", b"p"}


def test_fill_batch_orders_keys_that_differ_past_eight_bytes_or_by_zero_padding():
    keys = [b"\x01", b"\x01\x00", b"\x01" + b"\x00" * 8, b"\x01" + b"\x00" * 9, b"abcdefgh", b"abcdefgh\x00",
            b"abcdefghi", b"abcdefgha", b"abcdefgh\xff", b"\xff" * 8, b"\xff" * 12, b"\x00", b"", b"abcdefg"]
    rnd = random.Random(5)
    for _ in range(20):
        rnd.shuffle(keys)
        for fn in (kvsplit.fill_batch, kvsplit.fill_batch_py):
            wb = _Batch()
            fn({key: b"v" for key in keys}, wb)
            assert [op[1] for op in wb.ops] == sorted(keys)


def test_put_kv_with_agg_mode_overwrite_and_without_it(fluss_server, unique_name):
    """PutKv is read in place from the frame, except requests with agg_mode, which protobuf reads:
    both must reach the merge with the right rule (first_row keeps, overwrite replaces)."""
    kv = Kv(fluss_server)
    try:
        db = unique_name("aggmode")
        kv.create_db(db)
        tid = kv.create_table(db, "t", properties={"table.merge-engine": "first_row"})

        def put(rec, agg_mode=None):
            req = pb.PutKvRequest(acks=-1, table_id=tid, timeout_ms=30000)
            if agg_mode is not None:
                req.agg_mode = agg_mode
            req.buckets_req.add(bucket_id=0, records=build_kv_batch([rec], schema_id=1))
            resp = kv.tablet.call(Api.PUT_KV, req).buckets_resp[0]
            assert not resp.error_code, resp.error_message

        put(up(1, "first"))
        put(up(1, "second"))
        assert looked_up(kv.lookup(tid, [k(1)])) == [[1, "first", None]]
        put(up(1, "forced"), agg_mode=1)
        assert looked_up(kv.lookup(tid, [k(1)])) == [[1, "forced", None]]
        put(up(1, "kept out"), agg_mode=0)
        assert looked_up(kv.lookup(tid, [k(1)])) == [[1, "forced", None]]
    finally:
        kv.close()
