"""The UpsertWriter's per-row fast path (codec/upsertrow.py and its compiled twin) makes the same
record and bucket as the general path (key encoder, row encoder, murmur bucket, kv_record), and
declines rows it does not handle so the general path can word their errors."""
from __future__ import annotations

import random

import pytest

from fluss_fast.client.write.kvrecords import kv_record
from fluss_fast.codec import upsertrow
from fluss_fast.codec.murmur import bucket_for_key
from fluss_fast.codec.rows import CompactedKeyEncoder, CompactedRowEncoder
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


@pytest.mark.parametrize("cls", [upsertrow.UpsertRow, upsertrow.UpsertRow_py])
def test_records_and_buckets_match_the_general_path(cls):
    rnd = random.Random(3)
    slots = {(None, b): Slot(room=5) for b in range(2)}  # bucket 2 has no slot; the others fill up
    enc = cls(SCHEMA.names, KEY_POS, KEY_ENC, ROW_ENC, 3, slots)
    for i in range(60):
        values = ["x" * rnd.randrange(0, 300), rnd.randrange(-(1 << 60), 1 << 60), rnd.choice([None, 1.5])]
        row = dict(zip(SCHEMA.names, values)) if i % 3 == 0 else (tuple(values) if i % 3 == 1 else list(values))
        record, bucket = _expected(values, 3)
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
