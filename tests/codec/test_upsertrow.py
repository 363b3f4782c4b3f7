"""The UpsertWriter's per-row fast path (client/write/upsertrow.py and its compiled twin) makes the same
record and bucket as the general path (key encoder, row encoder, murmur bucket, kv_record), and
declines rows it does not handle so the general path can word their errors."""
from __future__ import annotations

import random

import pytest

from fluss_fast.client.write import upsertrow
from fluss_fast.client.write.kvrecords import kv_record
from fluss_fast.codec.rows.compacted import (
    CompactedKeyEncoder,
    CompactedKeyEncoder_py,
    CompactedRowEncoder,
    CompactedRowEncoder_py,
)
from fluss_fast.codec.rows.indexed import IndexedRowEncoder
from fluss_fast.codec.wire.murmur import bucket_for_key
from fluss_fast.datatypes import SchemaInfo

SCHEMA = SchemaInfo.from_json({"columns": [
    {"name": "name", "data_type": {"type": "STRING"}, "id": 0},
    {"name": "id", "data_type": {"type": "BIGINT", "nullable": False}, "id": 1},
    {"name": "score", "data_type": {"type": "DOUBLE"}, "id": 2}], "primary_key": ["id", "name"]})
KEY_POS = [1, 0]
KEY_ENC = CompactedKeyEncoder([SCHEMA.columns[i].type for i in KEY_POS], [SCHEMA.names[i] for i in KEY_POS])
ROW_ENC = CompactedRowEncoder(SCHEMA.types, SCHEMA.names)


class Slot:
    def __init__(self, room):
        self.room = room
        self.got = []

    def append(self, record):
        if self.room <= 0:
            return None
        self.room -= 1
        self.got.append(record)
        return ("handle", len(self.got))


def _expected(values, buckets):
    key = KEY_ENC.encode([values[i] for i in KEY_POS])
    return kv_record(key, ROW_ENC.encode(values)), bucket_for_key(key, buckets)


KEY_ENC_PY = CompactedKeyEncoder_py([SCHEMA.columns[i].type for i in KEY_POS], [SCHEMA.names[i] for i in KEY_POS])
ENCODERS = {"compiled": (KEY_ENC, ROW_ENC), "pure": (KEY_ENC_PY, CompactedRowEncoder_py(SCHEMA.types, SCHEMA.names)),
            "indexed": (KEY_ENC, IndexedRowEncoder(SCHEMA.types, SCHEMA.names))}


@pytest.mark.parametrize("encoders", sorted(ENCODERS))
@pytest.mark.parametrize("cls", [upsertrow.UpsertRow, upsertrow.UpsertRow_py])
def test_records_and_buckets_match_the_general_path(cls, encoders):
    # the compiled UpsertRow calls compiled encoders in C (rows over 256 bytes leave the stack
    # buffer), pure ones through Python; either way the record is the general path's
    key_enc, row_enc = ENCODERS[encoders]
    rnd = random.Random(3)
    slots = {(None, b): Slot(room=5) for b in range(2)}  # bucket 2 has no slot; the others fill up
    enc = cls(SCHEMA.names, KEY_POS, key_enc, row_enc, 3, slots)
    for i in range(60):
        values = ["x" * rnd.randrange(0, 300), rnd.randrange(-(1 << 60), 1 << 60), rnd.choice([None, 1.5])]
        row = (dict(zip(SCHEMA.names, values, strict=True)) if i % 3 == 0
               else (tuple(values) if i % 3 == 1 else list(values)))
        key = KEY_ENC_PY.encode([values[i] for i in KEY_POS])
        record, bucket = kv_record(key, row_enc.encode(values)), bucket_for_key(key, 3)
        got = enc.put(row)
        if type(got) is tuple and got[0] != "handle":
            assert got == (record, bucket)
        else:
            assert slots[(None, bucket)].got[got[1] - 1] == record


@pytest.mark.parametrize("cls", [upsertrow.UpsertRow, upsertrow.UpsertRow_py])
def test_declines_what_it_does_not_handle(cls):
    enc = cls(SCHEMA.names, KEY_POS, KEY_ENC, ROW_ENC, 3, {})
    for row in [{"name": "a", "id": 1}, {"name": "a", "id": 1, "scor": 2.0}, ["a", 1], ("a", None, 1.0),
                ["a", "not an int", 1.0], {"name": "a", "id": 1, "score": "x"}, "a,1,2", None]:
        assert enc.put(row) is None


BUILDERS = [upsertrow.KvRecordBuilder, upsertrow.KvRecordBuilder_py]


@pytest.mark.parametrize("capacity", [0, 100, 1 << 20])
@pytest.mark.parametrize("cls", BUILDERS)
def test_record_builders_frame_records_as_kv_record(cls, capacity):
    rnd = random.Random(5)
    b = cls(capacity) if capacity else cls()
    expect = []
    for i in range(300):
        key = bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 1, 5, 127, 128, 300])))
        size = rnd.randrange(0, 70000 if i == 5 else 40) if i % 7 else 0
        value = None if i % 7 == 0 else bytes(rnd.randrange(256) for _ in range(size))
        rec = kv_record(key, value)
        expect.append(rec)
        size = b.append(bytearray(rec)) if i % 3 == 0 else (b.append(rec) if i % 3 == 1 else b.put(key, value))
        assert size == sum(map(len, expect))
    assert len(b) == 300
    chunk = b.build()
    assert (chunk.data, chunk.num_rows) == (b"".join(expect), 300)
    assert len(b) == 0 and b.build().data == b""


@pytest.mark.parametrize("cls,builder,slot", [
    (upsertrow.UpsertRow, upsertrow.KvRecordBuilder, upsertrow.KvSlot),
    (upsertrow.UpsertRow, upsertrow.KvRecordBuilder_py, upsertrow.KvSlot),
    (upsertrow.UpsertRow, upsertrow.KvRecordBuilder, upsertrow.KvSlot_py),
    (upsertrow.UpsertRow_py, upsertrow.KvRecordBuilder_py, upsertrow.KvSlot_py),
    (upsertrow.UpsertRow_py, upsertrow.KvRecordBuilder, upsertrow.KvSlot)])
def test_rows_go_into_the_slots_builders(cls, builder, slot):
    import threading

    lock = threading.Lock()
    slots = {}
    for b in range(3):
        s = slots[(None, b)] = slot(lock)
        s.builder, s.handle, s.size, s.cap = builder(), f"handle {b}", 0, 2000
    fallback, appended = [], []

    class Open:
        _closed = False

    enc = cls(SCHEMA.names, KEY_POS, KEY_ENC, ROW_ENC, 3, slots)
    writer, ctx = Open(), Open()
    enc.bind(writer, ctx, lambda row: fallback.append(row) or "fallback",
             lambda rec, pid, bucket, nb: appended.append((rec, pid, bucket, nb)) or "appended")
    rnd = random.Random(9)
    taken = {b: [] for b in range(3)}
    for i in range(200):
        values = ["k" * rnd.randrange(0, 40), rnd.randrange(-(1 << 40), 1 << 40), 0.25]
        record, bucket = _expected(values, 3)
        got = enc.upsert(dict(zip(SCHEMA.names, values, strict=True)) if i % 2 else values)
        if got == "appended":  # the slot was full
            assert appended[-1] == (record, None, bucket, 3)
        else:
            assert got == f"handle {bucket}"
            taken[bucket].append(record)
    assert appended and not fallback
    for b in range(3):
        s = slots[(None, b)]
        assert s.size == sum(map(len, taken[b])) and s.builder.build().data == b"".join(taken[b])
    # a cooled slot (no builder) turns rows away, and they come back once it is refilled
    s = slots[(None, 0)]
    s.builder = None
    values = next(v for v in (["a", n, None] for n in range(100)) if _expected(v, 3)[1] == 0)
    assert enc.upsert(values) == "appended"
    s.builder, s.size, s.cap = builder(), 0, 10 ** 6
    assert enc.upsert(values) == "handle 0" and s.builder.build().data == _expected(values, 3)[0]
    # what the fast path does not take, and a closed writer or connection, go to the fallback
    assert enc.upsert({"name": "a", "id": 1}) == "fallback"
    writer._closed = True
    assert enc.upsert(values) == "fallback"
    writer._closed, ctx._closed = False, True
    assert enc.upsert(values) == "fallback"
    assert len(fallback) == 3


@pytest.mark.parametrize("cls", [upsertrow.UpsertRow, upsertrow.UpsertRow_py])
def test_dict_rows_in_any_key_order(cls):
    # the compiled put matches a dict's keys by identity with the previous row's where it can:
    # orders change, key objects are shared or fresh, and a stranger key still sends the row back
    enc = cls(SCHEMA.names, KEY_POS, KEY_ENC, ROW_ENC, 3, {})
    rnd = random.Random(11)
    shared = list(SCHEMA.names)
    for i in range(300):
        values = [f"n{i}", i * 7919, None if i % 4 else 2.5]
        names = shared if i % 3 else ["".join(list(n)) for n in SCHEMA.names]  # fresh str objects
        pairs = list(zip(names, values, strict=True))
        if i % 5 == 0:
            rnd.shuffle(pairs)
        row = dict(pairs)
        if i % 17 == 0:
            row.pop(names[2])
            row["scor"] = 1.0
            assert enc.put(row) is None
        else:
            assert enc.put(row) == _expected(values, 3)
