"""The per-bucket key filter (``codec.kvsplit.KeyFilter`` in ``server/kvstore.py``) lets PUT_KV skip
the RocksDB read of a key it rules out. A key it wrongly ruled out would turn an update into an
insert (+I instead of -U/+U) in the changelog, so every way a key reaches RocksDB must reach the
filter too: a flush of the pre-write buffer, the replay after a kill -9, and the keys already stored
when a store opens (listed into a fresh filter, or no filter at all past a bound)."""
from __future__ import annotations

import types

import pytest

from fluss_fast.codec.kv.kvsplit import KeyFilter
from fluss_fast.server import kvstore

from test_kv_prewrite import _start
from test_server_kv import Kv, changes, k, up

INS, UB, UA = 1, 2, 3


@pytest.mark.parametrize("stop", ["clean", "kill"])
@pytest.mark.parametrize("open_keys", ["", "5"])
def test_keys_stored_before_a_restart_are_updated_not_inserted(start_server, unique_name, monkeypatch,
                                                                stop, open_keys):
    if open_keys:  # a store of more keys than this opens without a filter
        monkeypatch.setenv("FLUSS_FAST_KV_FILTER_OPEN_KEYS", open_keys)
    # changes stay in the pre-write buffer: a kill -9 leaves them to the replay, a clean stop flushes
    srv = _start(start_server, monkeypatch, 10 ** 9, 3600)
    kv = Kv(srv)
    db = unique_name("kf")
    kv.create_db(db)
    tid = kv.create_table(db, "t", bucket_count=1)
    first = kv.put(tid, [up(i, f"a{i}", i) for i in range(300)])
    assert not first.error_code, first.error_message
    kv.close()
    if stop == "kill":
        srv.kill()
    else:
        srv.stop()
    srv.start()
    kv = Kv(srv)
    try:
        resp = kv.put(tid, [up(i, f"b{i}") for i in range(290, 310)])
        assert not resp.error_code, resp.error_message
        got = [(ct, row[0]) for ct, row in changes(kv.changelog(tid, offset=first.log_end_offset))]
        want = [c for i in range(290, 300) for c in ((UB, i), (UA, i))] + [(INS, i) for i in range(300, 310)]
        assert got == want
    finally:
        kv.close()


class _ReadingDb:
    """A bucket's RocksDB that reads the bucket's state through ``probe`` just before each write."""

    def __init__(self, db, probe):
        self._db, self._probe, self.seen = db, probe, []

    def write(self, batch):
        self.seen.append(self._probe())
        return self._db.write(batch)

    def __getattr__(self, name):
        return getattr(self._db, name)


def test_flush_keeps_changes_readable_until_rocksdb_has_them(tmp_path):
    """A read on a worker thread may run between any two lines of a flush (the GIL passes): at
    every moment each change is in the buffer or in RocksDB, and once the buffer lets go of it the
    filter knows its key."""
    blog = types.SimpleNamespace(name="db.t bucket 0", dir=str(tmp_path / "log"), closed=False,
                                 partition_id=None, log_start_offset=0, high_watermark=0)
    bkv = kvstore.BucketKv(blog, str(tmp_path / "kv"))
    try:
        assert bkv.kfilter is not None and bkv.kfilter.keys == 0
        key, value = k(7), b"\x01\x00stored"
        bkv.pending = {key: value}
        bkv.pending_end = 1
        bkv.db = _ReadingDb(bkv.db, lambda: bkv.current_values([key], [b"new"], False))
        bkv.flush()
        assert bkv.db.seen == [{key: value}]
        assert bkv.pending == {} and bkv.kfilter.might_contain(key)
        assert bkv.current_values([key, k(8)], [b"x", b"y"], False) == {key: value, k(8): None}
    finally:
        bkv.db = bkv.db._db
        bkv.close()


def test_a_store_opens_with_its_keys_in_the_filter(tmp_path, monkeypatch):
    blog = types.SimpleNamespace(name="db.t bucket 0", dir=str(tmp_path / "log"), closed=False,
                                 partition_id=None, log_start_offset=0, high_watermark=0)
    bkv = kvstore.BucketKv(blog, str(tmp_path / "kv"))
    bkv.write({k(i): b"\x01\x00v" for i in range(20)} | {k(99): None})
    assert all(bkv.kfilter.might_contain(k(i)) for i in range(20))
    bkv.close()
    bkv = kvstore.BucketKv(blog, str(tmp_path / "kv"))
    try:
        assert bkv.kfilter.keys == 20  # the applied-offset entry is no key; the delete wrote none
        assert all(bkv.kfilter.might_contain(k(i)) for i in range(20))
    finally:
        bkv.close()
    monkeypatch.setattr(kvstore, "FILTER_BUILD_KEYS", 19)
    bkv = kvstore.BucketKv(blog, str(tmp_path / "kv"))
    try:
        assert bkv.kfilter is None
        assert bkv.current_values([k(3), k(30)], [b"x", b"y"], False) == {k(3): b"\x01\x00v", k(30): None}
    finally:
        bkv.close()


def test_current_values_reads_only_the_keys_the_filter_cannot_rule_out():
    from fluss_fast.codec.kv import kvsplit

    for twin in (kvsplit.current_values, kvsplit.current_values_py):
        f = (KeyFilter if twin is kvsplit.current_values else kvsplit.KeyFilter_py)()
        for i in range(10):
            f.add(k(i))
        asked = []

        def get(keys, asked=asked):
            asked.append(list(keys))
            return [b"old" if key == k(3) else None for key in keys]

        keys = [k(3), k(50), k(5), k(51), k(4)]
        got = twin(keys, [b"v"] * 5, {k(4): b"buffered"}, get, False, f)
        assert got == {k(3): b"old", k(50): None, k(5): None, k(51): None, k(4): b"buffered"}
        # the buffer answers k(4); k(50), k(51) are ruled out (1 % odds each of being asked anyway)
        assert sorted(asked[0]) == sorted(x for x in (k(3), k(5), k(50), k(51)) if f.might_contain(x))
        assert k(3) in asked[0] and k(5) in asked[0]
