"""The scan decoding path without a server: FetchLog responses built with the real codecs,
decoded by the fetcher's code, handed out through lazy ScanRecords / RecordBatch objects."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from fluss_fast.client.cluster import TableMeta
from fluss_fast.client.predicate import bind_predicate, col
from fluss_fast.client.scan.decode import ScanSpec
from fluss_fast.client.scan.records import Chunk, RecordBatch, RowSource, ScanRecords
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.log.arrowlog import ArrowLogCodec
from fluss_fast.datatypes import SchemaInfo, TableDescriptorInfo
from fluss_fast.errors import FlussError
from fluss_fast.metadata import ChangeType, TableBucket, TablePath
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.wire import parse_fetch_response

ARROW = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
SCHEMA = SchemaInfo.from_arrow(ARROW)
TB = TableBucket(7, 0)


def _meta(compression="NONE"):
    desc = TableDescriptorInfo(SCHEMA, bucket_count=1,
                               properties={"table.log.arrow.compression.type": compression})
    return TableMeta(7, TablePath("db", "t"), 1, desc, SCHEMA, 0, 0, {0: 0})


def _rb(ids):
    return pa.RecordBatch.from_pylist(
        [{"id": i, "name": f"n{i}", "ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i)}
         for i in ids], schema=ARROW)


def _records_blob(compression="NONE", change_types=False):
    """[5 rows][empty batch][4 rows][truncated 3 rows], offsets assigned from 10 like a leader does."""
    codec = ArrowLogCodec(SCHEMA, compression)
    parts = [codec.build(_rb(range(10, 15)), schema_id=1),
             logbatch.build_batch(b"", schema_id=1, record_count=0),
             codec.build(_rb(range(16, 20)), schema_id=1,
                         change_types=bytes([1, 2, 3, 4]) if change_types else None)]
    buf = bytearray(b"".join(parts))
    nxt = logbatch.assign_offsets(buf, 10, 1_700_000_000_123)
    tail = bytearray(codec.build(_rb(range(20, 23)), schema_id=1))
    logbatch.assign_offsets(tail, nxt, 1_700_000_000_999)
    return bytes(buf) + bytes(tail[:len(tail) - 7]), nxt


def _response(records: bytes, hw=23):
    resp = pb.FetchLogResponse()
    t = resp.tables_resp.add()
    t.table_id = 7
    bad = t.buckets_resp.add()
    bad.bucket_id = 1
    bad.error_code = -1
    bad.error_message = "boom"
    ok = t.buckets_resp.add()
    ok.bucket_id = 0
    ok.partition_id = 3
    ok.high_watermark = hw
    ok.log_start_offset = 0
    ok.records = records
    ok.filtered_end_offset = 21
    return resp.SerializeToString()


def test_fetch_response_is_walked_without_copying_records():
    blob, _ = _records_blob()
    body = _response(blob)
    ((table_id, buckets),) = parse_fetch_response(memoryview(body))
    assert table_id == 7
    bad, ok = buckets
    assert (bad.bucket_id, bad.error_code, bad.error_message, bad.records) == (1, -1, "boom", None)
    got = (ok.partition_id, ok.bucket_id, ok.error_code, ok.high_watermark, ok.filtered_end_offset)
    assert got == (3, 0, 0, 23, 21)
    assert body[ok.records[0]:ok.records[1]] == blob
    assert parse_fetch_response(pb.FetchLogResponse().SerializeToString()) == []


@pytest.mark.parametrize("compression", ["NONE", "LZ4_FRAME", "ZSTD"])
def test_decode_skips_below_fetch_offset_empty_batches_and_truncated_tail(compression):
    blob, nxt = _records_blob(compression)
    spec = ScanSpec(_meta(compression))
    mv = memoryview(blob)
    chunks, next_offset = spec.decode_records(TB, mv, 0, len(blob), 12)
    assert next_offset == nxt == 20  # 5 rows + an empty batch (one offset) + 4 rows from 10
    assert [c.base_offset for c in chunks] == [12, 16]
    assert [c.count for c in chunks] == [3, 4]
    recs = ScanRecords({TB: chunks})
    assert [r.offset for r in recs] == [12, 13, 14, 16, 17, 18, 19]
    assert [r.row["id"] for r in recs] == [12, 13, 14, 16, 17, 18, 19]
    assert {r.timestamp for r in recs} == {1_700_000_000_123}
    assert recs[0].row["ts"] == dt.datetime(2024, 1, 1, 0, 0, 12, tzinfo=dt.UTC)
    assert all(r.change_type is ChangeType.AppendOnly for r in recs)
    # nothing at all from a fetch offset behind the complete batches
    assert spec.decode_records(TB, mv, 0, len(blob), 20) == ([], 20)


def test_uncompressed_batches_point_into_the_response_buffer():
    blob, _ = _records_blob("NONE")
    body = bytearray(_response(blob))
    ((_, (_, ok)),) = parse_fetch_response(memoryview(body))
    spec = ScanSpec(_meta("NONE"))
    chunks, _ = spec.decode_records(TB, memoryview(body), ok.records[0], ok.records[1], 10)
    start = pa.py_buffer(body).address
    for c in chunks:
        data = c.arrow().column(0).buffers()[1]
        assert start <= data.address < start + len(body)


def test_change_types_and_crc_check():
    blob, _ = _records_blob("NONE", change_types=True)
    spec = ScanSpec(_meta())
    chunks, _ = spec.decode_records(TB, memoryview(blob), 0, len(blob), 10)
    recs = ScanRecords({TB: chunks})
    assert [str(r.change_type) for r in recs][-4:] == ["+I", "-U", "+U", "-D"]
    assert str(recs[-1]) == f"ScanRecord(offset=19, timestamp={recs[-1].timestamp}, change_type=-D)"
    bad = bytearray(blob)
    bad[60] ^= 0xFF  # inside the first batch's payload
    with pytest.raises(FlussError, match="CRC") as info:
        spec.decode_records(TB, memoryview(bytes(bad)), 0, len(bad), 10)
    assert info.value.error_code == 3 and "db.t" in info.value.message


def test_projection_and_filter_keep_true_offsets():
    blob, _ = _records_blob()
    meta = _meta()
    pred = bind_predicate(col("id").is_in([11, 13, 17, 18]), SCHEMA)
    spec = ScanSpec(meta, projection=[1], predicate=pred)
    assert spec.pushdown and spec.fetch_fields == [0, 1] and not spec.check_crc
    full = ScanSpec(meta, predicate=pred)
    chunks, nxt = full.decode_records(TB, memoryview(blob), 0, len(blob), 10)
    recs = ScanRecords({TB: chunks})
    assert [(r.offset, r.row["id"]) for r in recs] == [(11, 11), (13, 13), (17, 17), (18, 18)]
    assert nxt == 20
    assert chunks[0].offsets == [11, 13] and chunks[1].offsets is None  # 17, 18 are consecutive


def test_scan_records_are_lazy_and_shaped_like_pyfluss():
    rb = _rb(range(100, 110))
    src = RowSource(rb)
    chunk = Chunk(TB, src, 0, 10, 500, None, None, 42, 510)
    head, tail = chunk.split(4)
    assert (head.count, head.next_offset, tail.base_offset, tail.start) == (4, 504, 504, 4)
    other = TableBucket(7, 1)
    recs = ScanRecords({TB: [head], other: [tail]})
    assert src._cols is None and recs._records == {}
    assert len(recs) == recs.count() == 10 and not recs.is_empty()
    assert str(recs) == "ScanRecords(records=10, buckets=2)"
    first = recs[other]
    assert recs._records.keys() == {other} and src._cols is None  # records made, rows not yet
    assert [r.offset for r in first] == list(range(504, 510))
    row = first[0].row
    assert row == {"id": 104, "name": "n104", "ts": dt.datetime(2024, 1, 1, 0, 1, 44, tzinfo=dt.UTC)}
    assert first[0].row is row and recs[other][0] is first[0]
    assert [r.row["id"] for r in recs] == list(range(100, 110))
    assert recs[-1].offset == 509 and [r.offset for r in recs[2:5]] == [502, 503, 504]
    assert [b for b, _ in recs.items()] == [TB, other] and list(recs.keys()) == recs.buckets()
    assert [len(v) for v in recs.values()] == [4, 6]
    with pytest.raises(IndexError, match="out of range"):
        recs[10]
    with pytest.raises(TypeError):
        recs["a"]
    assert ScanRecords({}).is_empty() and list(ScanRecords({})) == []
    b = RecordBatch._from_chunk(tail)
    assert (b.base_offset, b.last_offset, b.batch.num_rows) == (504, 509, 6)
    assert str(b) == f"RecordBatch(bucket={TB}, base_offset=504, last_offset=509, rows=6)"


def test_row_windows_give_the_same_rows_as_whole_batch_conversion():
    # 20000 rows handed out 500 at a time cross several conversion windows; nested columns
    # (lists) are converted whole, flat ones window by window: the row dicts must not differ
    import datetime
    import decimal

    import pyarrow as pa

    from fluss_fast.client.scan.convert import column_to_pylist
    from fluss_fast.client.scan.records import Chunk, RowSource

    n = 20000
    ts = [datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=i)
          for i in range(n)]
    flat = pa.record_batch({
        "id": pa.array(range(n), pa.int64()),
        "amount": pa.array([None if i % 7 == 0 else decimal.Decimal(i).scaleb(-2) for i in range(n)],
                           pa.decimal128(12, 2)),
        "at": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "name": pa.array([None if i % 5 == 0 else f"n{i}" for i in range(n)], pa.string()),
        # converted by convert.py (the others are read from the buffers): held a window at a time
        "t": pa.array([None if i % 9 == 0 else i * 1000 for i in range(n)], pa.time64("us")),
    })
    nested = flat.append_column("tags", pa.array([[i, i + 1] if i % 3 else None for i in range(n)],
                                                 pa.list_(pa.int32())))
    for batch in (flat, nested):
        want_cols = [column_to_pylist(c) for c in batch.columns]
        want = [dict(zip(batch.schema.names, vals, strict=True)) for vals in zip(*want_cols, strict=True)]
        src = RowSource(batch)
        got = []
        for start in range(0, n, 500):
            got.extend(Chunk(TB, src, start, 500, start, None, None, 0, start + 500).rows())
        assert got == want
        # what is held after the last poll: one window of the flat batch's slow column, all of
        # the nested one's slow columns
        cols, first = src.columns(n - 10, 10)
        if batch is flat:
            assert 0 < first <= n - 10 and len(cols[0]) == n - first < n
        else:
            assert first == 0 and len(cols[0]) == n
