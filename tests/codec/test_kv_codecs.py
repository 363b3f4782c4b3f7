"""KV write/read codecs of the client: the KV batch header (docs/contributing/formats.md §5 example), value batches,
and the columnwise KV record builder (Cython and pure twins agree, and agree with the per-row
encoders byte for byte)."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluss_fast import datatypes as T
from fluss_fast.client.write.kvrecords import KvRecordBuilder, kv_batch_header, kv_record
from fluss_fast.client.write.upsert_bulk import _spec
from fluss_fast.codec.errors import CorruptBatchError
from fluss_fast.codec.kv import kvcolumns as K
from fluss_fast.codec.kv.kvbatch import build_kv_batch, kv_records
from fluss_fast.codec.kv.valuebatch import build_value_batch, value_records
from fluss_fast.codec.rows.compacted import CompactedKeyEncoder, CompactedRowEncoder
from fluss_fast.codec.wire.murmur import bucket_for_key
from fluss_fast.datatypes import DataType


def test_kv_batch_matches_the_data_md_example():
    # docs/contributing/formats.md §5.2: schema 1, writer 7, seq 0; upsert key 0A -> CompactedRow (10, "abc"); delete 0B
    expected = bytes.fromhex("2a00000000" "05f46eac" "0100" "00" "0700000000000000" "00000000"
                             "02000000" "08000000010a000a03616263" "02000000010b")
    payload = kv_record(b"\x0a", b"\x00\x0a\x03abc") + kv_record(b"\x0b", None)
    header = kv_batch_header(payload, schema_id=1, record_count=2, writer_id=7, batch_sequence=0)
    assert header + payload == expected
    assert build_kv_batch([(b"\x0a", b"\x00\x0a\x03abc"), (b"\x0b", None)], schema_id=1,
                          writer_id=7, batch_sequence=0) == expected


def test_record_builder_concatenates_in_order():
    b = KvRecordBuilder()
    recs = [kv_record(bytes([i]), None if i % 2 else bytes([i, i])) for i in range(5)]
    for r in recs:
        b.append(r)
    assert len(b) == 5
    chunk = b.build()
    assert chunk.num_rows == 5 and chunk.data == b"".join(recs) and len(b) == 0
    batch = kv_batch_header(chunk.data, schema_id=3, record_count=5) + chunk.data
    assert kv_records(batch) == [(bytes([i]), None if i % 2 else bytes([i, i])) for i in range(5)]


def test_value_batch_round_trip_and_corruption():
    recs = [(1, b"\x00\x01"), (2, b""), (1, b"abc" * 100)]
    data = build_value_batch(recs)
    assert value_records(data) == recs
    assert value_records(data + build_value_batch([(5, b"z")])) == recs + [(5, b"z")]
    assert value_records(build_value_batch([])) == []
    with pytest.raises(CorruptBatchError):
        value_records(data[:-1])
    with pytest.raises(CorruptBatchError):
        value_records(b"\x05\x00\x00\x00\x07\x00\x00\x00\x00")  # unknown magic


# -- columnwise records against the per-row encoders -----------------------------------------------
TYPES = [
    (DataType(T.BIGINT), pa.int64(), st.integers(-(1 << 63), (1 << 63) - 1)),
    (DataType(T.INTEGER), pa.int32(), st.integers(-(1 << 31), (1 << 31) - 1)),
    (DataType(T.SMALLINT), pa.int16(), st.integers(-(1 << 15), (1 << 15) - 1)),
    (DataType(T.TINYINT), pa.int8(), st.integers(-128, 127)),
    (DataType(T.BOOLEAN), pa.bool_(), st.booleans()),
    (DataType(T.DOUBLE), pa.float64(), st.floats(allow_nan=True, allow_infinity=True)),
    (DataType(T.FLOAT), pa.float32(), st.floats(width=32, allow_nan=True)),
    (DataType(T.STRING), pa.string(), st.text(max_size=40)),
    (DataType(T.BYTES), pa.binary(), st.binary(max_size=200)),
    (DataType(T.DATE), pa.date32(), st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1))),
    (DataType(T.DECIMAL, precision=10, scale=2), pa.decimal128(10, 2),
     st.decimals(min_value=-10 ** 7, max_value=10 ** 7, places=2, allow_nan=False)),
    (DataType(T.TIMESTAMP, precision=6), pa.timestamp("us"),
     st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1))),
    (DataType(T.TIMESTAMP, precision=3), pa.timestamp("ms"),
     st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)).map(
         lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))),
    (DataType(T.TIME, precision=3), pa.time32("ms"),
     st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
]


@st.composite
def tables(draw):
    cols = draw(st.lists(st.sampled_from(range(len(TYPES))), min_size=1, max_size=5))
    n = draw(st.integers(1, 30))
    nkeys = draw(st.integers(1, len(cols)))
    data = []
    for c in cols:
        dtype, atype, values = TYPES[c]
        nullable = len(data) >= nkeys  # key columns never hold nulls
        data.append([draw(st.one_of(st.none(), values) if nullable else values) for _ in range(n)])
    return cols, data, n, nkeys


def _per_row(cols, data, n, nkeys, nbuckets, delete):
    types = [TYPES[c][0] for c in cols]
    key_enc = CompactedKeyEncoder(types[:nkeys])
    row_enc = CompactedRowEncoder([t.with_nullable(i >= nkeys) for i, t in enumerate(types)])
    out = {}
    for r in range(n):
        row = [col[r] for col in data]
        key = key_enc.encode(row[:nkeys])
        rec = kv_record(key, None if delete else row_enc.encode(row))
        b = bucket_for_key(key, nbuckets)
        cur = out.get(b, (b"", 0))
        out[b] = (cur[0] + rec, cur[1] + 1)
    return out


@settings(max_examples=60, deadline=None)
@given(tables(), st.integers(1, 7), st.booleans())
def test_columnwise_records_equal_per_row_records(table, nbuckets, delete):
    cols, data, n, nkeys = table
    specs = [_spec(pa.array(col, TYPES[c][1]), TYPES[c][0]) for c, col in zip(cols, data, strict=True)]
    args = (specs, list(range(nkeys)), None, None if delete else list(range(len(cols))), n, nbuckets)
    expected = _per_row(cols, data, n, nkeys, nbuckets, delete)
    assert K.encode_kv_columns_py(*args) == expected
    assert K.encode_kv_columns(*args) == expected


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=64), min_size=1, max_size=20), st.integers(1, 1000))
def test_compiled_bucket_function_matches_murmur(keys, nbuckets):
    # each key as a BYTES key column: the key bytes are varint(len) + key
    arr = pa.array(keys, pa.binary())
    spec = _spec(arr, DataType(T.BYTES))
    got = K.encode_kv_columns([spec], [0], None, None, len(keys), nbuckets)
    want = {}
    for k in keys:
        kb = bytes([len(k)]) + k if len(k) < 128 else None
        b = bucket_for_key(kb, nbuckets)
        want[b] = want.get(b, 0) + 1
    assert {b: c for b, (_d, c) in got.items()} == want


def test_null_key_is_reported_with_its_column():
    specs = [_spec(pa.array([1, None], pa.int64()), DataType(T.BIGINT))]
    for fn in (K.encode_kv_columns, K.encode_kv_columns_py):
        with pytest.raises(K.KeyNullError) as e:
            fn(specs, [0], None, [0], 2, 3)
        assert (e.value.column, e.value.row) == (0, 1)


def test_bucket_key_other_than_the_key():
    ids = pa.array([1, 2, 3, 4], pa.int32())
    region = pa.array(["a", "b", "a", "c"])
    specs = [_spec(region, DataType(T.STRING)), _spec(ids, DataType(T.INTEGER))]
    got = K.encode_kv_columns(specs, [0, 1], [0], None, 4, 5)
    assert got == K.encode_kv_columns_py(specs, [0, 1], [0], None, 4, 5)
    for b, (_data, count) in got.items():
        assert count == sum(1 for r in ["a", "b", "a", "c"]
                            if bucket_for_key(bytes([1]) + r.encode(), 5) == b)


def test_decimal_and_nan_canonical():
    specs = [_spec(pa.array([Decimal("-1.50")], pa.decimal128(5, 2)), DataType(T.DECIMAL, precision=5, scale=2)),
             _spec(pa.array([float("nan")], pa.float64()), DataType(T.DOUBLE))]
    got = K.encode_kv_columns(specs, [0], None, [0, 1], 1, 1)
    enc = CompactedRowEncoder([DataType(T.DECIMAL, nullable=False, precision=5, scale=2), DataType(T.DOUBLE)])
    key = CompactedKeyEncoder([DataType(T.DECIMAL, precision=5, scale=2)]).encode([Decimal("-1.50")])
    assert got == {0: (kv_record(key, enc.encode([Decimal("-1.50"), float("nan")])), 1)}
    assert np.isnan(float("nan"))


# -- KV batches in the shared accumulator -----------------------------------------------------------
def _kv_accumulator():
    from fluss_fast.client.write.accumulator import RecordAccumulator
    from fluss_fast.client.write.assigners import make_no_key_assigner
    from fluss_fast.client.write.batch import KIND_KV

    return RecordAccumulator(
        table_name="db.t", memory_size=1 << 20, wait_timeout_ms=1000, batch_size=1 << 16,
        dynamic=False, dynamic_min=1, linger_ms=0, assigner=make_no_key_assigner("sticky"),
        new_builder=KvRecordBuilder, wake=lambda: None, runtime_thread=lambda: None, runtime=None,
        kind=KIND_KV)


def test_kv_batches_drain_per_bucket_and_frame_as_kv():
    import time as _t

    acc = _kv_accumulator()
    recs = {b: [kv_record(bytes([b, i]), b"\x00" + bytes([i])) for i in range(3)] for b in (0, 2)}
    for b, rs in recs.items():
        for r in rs:
            acc.append_slotted(r, None, b, 3)
    by_node, _wake, _none = acc.drain(_t.monotonic() + 1, lambda pid, b: 7, 5, 1 << 20)
    batches = sorted(by_node[7], key=lambda x: x.bucket)
    assert [b.kind for b in batches] == ["KV", "KV"] and [b.bucket for b in batches] == [0, 2]
    for b in batches:
        chunk = b.builder.build()
        b.payload, b.record_count = chunk.data, chunk.num_rows
        b.writer_id, b.sequence = 9, 0
        framed = b.header_for(4) + b.payload
        assert kv_records(framed) == [(bytes([b.bucket, i]), b"\x00" + bytes([i])) for i in range(3)]
        assert framed == build_kv_batch(kv_records(framed), schema_id=4, writer_id=9, batch_sequence=0)


def test_backpressure_holds_the_bucket_back():
    import time as _t

    acc = _kv_accumulator()
    acc.append_slotted(kv_record(b"\x01", b"\x00\x01"), None, 1, 3)
    first = acc.drain(_t.monotonic() + 1, lambda pid, b: 0, 5, 1 << 20)[0][0][0]
    acc.append_slotted(kv_record(b"\x02", b"\x00\x02"), None, 1, 3)
    now = _t.monotonic()
    acc.throttle(first, now + 30)
    by_node, wake, _ = acc.drain(now + 1, lambda pid, b: 0, 5, 1 << 20)
    assert not by_node and wake is not None and wake >= now + 29
    by_node, _wake, _ = acc.drain(now + 31, lambda pid, b: 0, 5, 1 << 20)
    assert [b.bucket for b in by_node[0]] == [1]


@settings(max_examples=80, deadline=None)
@given(st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1),
                    timezones=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]).map(
                        __import__("zoneinfo").ZoneInfo) | st.just(dt.timezone(dt.timedelta(hours=-3, minutes=-30)))),
       st.sampled_from([3, 6, 9]))
def test_aware_ltz_values_encode_the_same_in_both_twins(value, precision):
    # the compiled row encoder converts any aware LTZ value by its UTC offset (pyarrow hands out
    # zoneinfo's UTC, not datetime.timezone.utc); the pure encoder is the reference
    from fluss_fast.codec.rows.compacted import CompactedRowEncoder_py
    from fluss_fast.codec.rows.indexed import IndexedRowEncoder, IndexedRowEncoder_py

    types = [DataType(T.TIMESTAMP_LTZ, precision=precision)]
    assert CompactedRowEncoder(types).encode([value]) == CompactedRowEncoder_py(types).encode([value])
    assert IndexedRowEncoder(types).encode([value]) == IndexedRowEncoder_py(types).encode([value])
