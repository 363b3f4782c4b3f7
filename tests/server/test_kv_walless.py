"""The KV stores are written without RocksDB's WAL (``server/kvstore.py``): the bucket's changelog is
the WAL, and the applied offset lives in RocksDB beside the state it describes. A kill -9 at any
moment, with memtables flushed or not, must leave state and changelog in agreement, and lose no
acknowledged write. A store written by an older server (WAL on, offset in a file) is taken over."""
from __future__ import annotations

import contextlib
import glob
import os
import random
import threading
import time

import pytest

from test_kv_prewrite import _start
from test_server_kv import Kv, changes, dl, k, looked_up, up

INS, UB, UA, D = 1, 2, 3, 4
KEYS = 60


def _writer(srv, tid, seed, acked, stop):
    """Random upserts and deletes until the server goes away; ``acked`` gets every answered log end."""
    rnd = random.Random(seed)
    try:
        kv = Kv(srv)
    except Exception:  # noqa: BLE001 - killed before we got in
        return
    try:
        while not stop.is_set():
            batch = []
            for _ in range(rnd.randint(1, 25)):
                i = rnd.randrange(KEYS)
                batch.append(dl(i) if rnd.random() < 0.25
                             else up(i, rnd.choice(["a", "b", "x" * 40]), rnd.randrange(99)))
            try:
                resp = kv.put(tid, batch)
            except Exception:  # noqa: BLE001 - the kill (a connection torn anywhere in a frame)
                return
            if resp.error_code:
                acked.append(AssertionError(resp.error_message))
                return
            acked.append(resp.log_end_offset)
    finally:
        with contextlib.suppress(Exception):
            kv.close()


def _check(srv, tid, must_have):
    """The state equals the changelog replayed; the log holds every acknowledged write."""
    kv = Kv(srv)
    try:
        log = kv.changelog(tid)
        end = log[-1][0] + max(log[-1][1], 1) if log else 0
        assert end >= must_have
        model = {}
        for ct, row in changes(log):
            if ct in (INS, UA):
                model[row[0]] = row
            elif ct == D:
                assert model.pop(row[0], None) is not None
            else:
                assert ct == UB and row == model[row[0]]
        assert looked_up(kv.lookup(tid, [k(i) for i in range(KEYS)])) == [model.get(i) for i in range(KEYS)]
        return end
    finally:
        kv.close()


@pytest.mark.parametrize("prewrite_keys", [1, 10 ** 9])
def test_kill9_at_any_moment_keeps_state_and_changelog_in_agreement(start_server, unique_name, monkeypatch,
                                                                    prewrite_keys):
    srv = _start(start_server, monkeypatch, prewrite_keys, 3600)
    kv = Kv(srv)
    db = unique_name("walless")
    kv.create_db(db)
    tid = kv.create_table(db, "t", bucket_count=1)
    kv.close()
    rnd = random.Random(prewrite_keys)
    must_have = 0
    # kills and clean stops mixed: a clean stop moves the memtables into SSTs, so later kills lose
    # RocksDB writes on top of flushed ones
    for rnd_i, how in enumerate(["kill", "kill", "stop", "kill", "kill"]):
        acked, stop = [], threading.Event()
        t = threading.Thread(target=_writer, args=(srv, tid, rnd_i, acked, stop))
        t.start()
        time.sleep(rnd.uniform(0.2, 0.8))
        if how == "kill":
            srv.kill()
            stop.set()
        else:
            stop.set()
            t.join(30)
            srv.stop()
        t.join(30)
        assert not t.is_alive()
        assert not [a for a in acked if isinstance(a, Exception)], acked
        if acked:
            must_have = max(must_have, max(acked))
        monkeypatch.setenv("FLUSS_FAST_KV_PREWRITE_KEYS", str(prewrite_keys))
        srv.start()
        monkeypatch.delenv("FLUSS_FAST_KV_PREWRITE_KEYS")
        must_have = _check(srv, tid, must_have)
    assert must_have > 0


def _kv_db(srv, db):
    [path] = glob.glob(os.path.join(srv.data_dir, "**", db, "*", "kv-0", "db"), recursive=True)
    return path


def test_store_of_an_older_server_is_taken_over(start_server, unique_name):
    import rocksdict

    srv = start_server(sasl=False)
    kv = Kv(srv)
    db = unique_name("walless")
    kv.create_db(db)
    tid = kv.create_table(db, "t", bucket_count=1)
    kv.put(tid, [up(i, f"v{i}", i) for i in range(10)])
    end = kv.put(tid, [dl(3), up(4, "four")]).log_end_offset
    kv.close()
    srv.stop()
    path = _kv_db(srv, db)
    # what an older server left: no offset inside RocksDB, the file says how far the state goes
    # (here: less than it holds, as after a crash between a write and its mark; replay is idempotent)
    store = rocksdict.Rdict(path, rocksdict.Options(raw_mode=True))
    assert int(store.get(b"")) == end
    del store[b""]
    store.close()
    with open(os.path.join(os.path.dirname(path), "applied-offset"), "w") as f:
        f.write("10")
    srv.start()
    kv = Kv(srv)
    state = looked_up(kv.lookup(tid, [k(i) for i in range(10)]))
    assert state[3] is None and state[4] == [4, "four", None] and state[9] == [9, "v9", 9]
    assert kv.put(tid, [up(20, "new")]).log_end_offset == end + 1
    kv.close()
    srv.stop()
    store = rocksdict.Rdict(path, rocksdict.Options(raw_mode=True))
    try:
        assert int(store.get(b"")) == end + 1
    finally:
        store.close()


@pytest.mark.parametrize("props", [{}, {"table.merge-engine": "first_row"}])  # fast path, general path
def test_an_empty_key_cannot_reach_the_applied_offset_entry(start_server, unique_name, props):
    from fluss_fast.error_codes import Errors

    srv = start_server(sasl=False)
    kv = Kv(srv)
    db = unique_name("walless")
    kv.create_db(db)
    tid = kv.create_table(db, "t", bucket_count=1, properties=props)
    end = kv.put(tid, [up(1, "a")]).log_end_offset
    resp = kv.put(tid, [up(2, "b"), (b"", up(3, "c")[1])])
    assert resp.error_code == Errors.CORRUPT_MESSAGE and "empty key" in resp.error_message
    assert looked_up(kv.lookup(tid, [b"", k(1), k(2)])) == [None, [1, "a", None], None]
    kv.close()
    srv.stop()
    srv.start()
    kv = Kv(srv)
    assert looked_up(kv.lookup(tid, [b"", k(1)])) == [None, [1, "a", None]]
    assert kv.put(tid, [up(4, "d")]).log_end_offset == end + 1
    kv.close()


def test_a_reopened_store_reads_through_the_shared_block_cache(tmp_path):
    """A store opened again (a restart) keeps the options the server sets, not the ones RocksDB saved
    in its OPTIONS file: those cannot name the shared block cache."""
    from fluss_fast.server import rocksdb_options

    path = str(tmp_path / "db")
    for _ in range(2):
        db = rocksdb_options.open_db(path)
        try:
            assert int(db.property_value("rocksdb.block-cache-capacity")) == rocksdb_options.BLOCK_CACHE_BYTES
            db.put(b"k", b"v")
            assert db.get(b"k") == b"v"
        finally:
            db.close()
