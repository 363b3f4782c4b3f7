"""The chunked SCAN_KV cursor (server/kv_scan.py) cuts the same answers, byte for byte, as the
row-by-row cursor it replaced: same rows per answer, same value batch bytes, same limits."""
from __future__ import annotations

import os
import random

import pytest

from fluss_fast.codec.kv.kvbatch import decode_value
from fluss_fast.codec.kv.valuebatch import build_stored_value_batch, build_value_batch, value_records
from fluss_fast.server import kv_scan
from fluss_fast.server.kvstore import FIRST_KEY
from fluss_fast.server.rocksdb_options import open_db


class _Store:
    """What the cursor reads of a BucketKv: a snapshot of its RocksDB."""

    def __init__(self, db):
        self.db = db

    def snapshot(self):
        return self.db.snapshot()


@pytest.fixture
def store(tmp_path):
    import rocksdict

    db = open_db(os.path.join(tmp_path, "db"))
    rnd = random.Random(5)
    wb = rocksdict.WriteBatch(raw_mode=True)
    wb.put(b"", b"123")  # the applied-offset entry: never a row
    for i in range(3000):
        size = rnd.choice([0, 1, 5, 40, 300, 5000])
        wb.put(b"\x01" + i.to_bytes(4, "big"), b"\x01\x00" + rnd.randbytes(size))
    db.write(wb)
    yield _Store(db)
    db.close()


def _reference(db, size: int, limit: int | None) -> list[bytes]:
    """The answers of the row-by-row cursor (one value batch each)."""
    it = db.snapshot().iter()
    it.seek(FIRST_KEY)
    left = limit
    answers = []
    while it.valid() and (left is None or left > 0):
        out, used = [], 0
        while it.valid() and (left is None or left > 0):
            n = len(it.value()) + 4
            if out and used + n > size:
                break
            out.append(it.value())
            it.next()
            used += n
            if left is not None:
                left -= 1
        answers.append(build_value_batch([decode_value(v) for v in out]))
    return answers


def _chunked(store, size: int, limit: int | None) -> list[bytes]:
    sc = kv_scan.Scanner(("t", None, 0), store, limit)
    answers = []
    while sc.more():
        answers.append(build_stored_value_batch(sc.take(size)))
    assert sc.take(size) == []
    return answers


@pytest.mark.parametrize("chunk", [1, 7, 8192])
@pytest.mark.parametrize("size", [1, 100, 4096, 65536, 10 << 20])
@pytest.mark.parametrize("limit", [None, 1, 999, 5000])
def test_same_answers_as_row_by_row(store, monkeypatch, chunk, size, limit):
    monkeypatch.setattr(kv_scan, "READ_CHUNK", chunk)
    got = _chunked(store, size, limit)
    assert got == _reference(store.db, size, limit)
    assert sum(len(value_records(a)) for a in got) == min(3000, limit or 3000)


def test_value_batch_bytes():
    values = [b"\x01\x00", b"\x02\x00abc", b"\xff\x7f" + bytes(range(256))]
    assert build_stored_value_batch(values) == build_value_batch([decode_value(v) for v in values])
    assert build_stored_value_batch([]) == build_value_batch([])
    with pytest.raises(ValueError):
        build_stored_value_batch([b"\x01"])


def test_empty_store(tmp_path):
    db = open_db(os.path.join(tmp_path, "db"))
    try:
        sc = kv_scan.Scanner(("t", None, 0), _Store(db), None)
        assert not sc.more()
        assert sc.take(100) == []
    finally:
        db.close()


@pytest.mark.parametrize("size", [100, 65536, 4 << 20])
def test_holds_about_one_answer(store, size):
    """The chunks follow the bytes an answer needs (by the mean size of the values read so far): a
    cursor over rows of 0 to 5 kB holds about one answer of values it has not sent."""
    sc = kv_scan.Scanner(("t", None, 0), store, None)
    first = kv_scan.FIRST_READ * 5002  # the first read, before the cursor knows the sizes
    while sc.more():
        sc.take(size)
        assert sc.held() <= 2 * size + first + 4 * 5002


@pytest.mark.parametrize("sid", [None, b"0123456789abcdef0123456789abcdef"])
@pytest.mark.parametrize("more", [False, True])
@pytest.mark.parametrize("log_offset", [None, 0, 1, 300, (1 << 40) + 7])
@pytest.mark.parametrize("n", [1, 3, 200])
def test_scan_answer_is_the_protobuf_bytes(sid, more, log_offset, n):
    from fluss_fast.rpc import fluss_api_pb2 as pb

    values = [b"\x01\x00" + bytes([i % 256]) * (i * 7 % 300) for i in range(n)]

    def response():
        resp = pb.ScanKvResponse()
        if log_offset is not None:
            resp.log_offset = log_offset
        resp.has_more_results = more
        if sid is not None:
            resp.scanner_id = sid
        return resp

    want = response()
    want.records = build_stored_value_batch(values)
    assert kv_scan.scan_answer(response(), values) == want.SerializeToString()
