"""Known answers for what the server reads and writes for primary-key tables: KV records and batches (the
sizes Java's DefaultKvRecordTest asserts), stored values, value batches, and changelog batches with change
types, in both row-codec twins."""
from __future__ import annotations

import struct

import pytest

from fluss_fast.codec.errors import CorruptBatchError
from fluss_fast.codec.kv.kvbatch import KV_HEADER_SIZE, build_kv_batch, iter_kv_records, parse_kv_header
from fluss_fast.codec.kv.valuebatch import build_value_batch, iter_value_records
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.log.arrowlog import ArrowLogCodec
from fluss_fast.codec.rows.compacted import (
    CompactedRowDecoder,
    CompactedRowDecoder_py,
    CompactedRowEncoder,
    CompactedRowEncoder_py,
)
from fluss_fast.codec.wire.crc32c import crc32c
from fluss_fast.datatypes import SchemaInfo

INT_STRING = SchemaInfo.from_json({"columns": [
    {"name": "a", "data_type": {"type": "INTEGER"}}, {"name": "b", "data_type": {"type": "STRING"}}]})

TWINS = [pytest.param((CompactedRowEncoder_py, CompactedRowDecoder_py), id="pure"),
         pytest.param((CompactedRowEncoder, CompactedRowDecoder), id="compiled")]


@pytest.mark.parametrize("impl", TWINS)
def test_kv_record_sizes_match_java(impl):
    enc, dec = impl
    row = enc(INT_STRING.types).encode([10, "abc"])
    assert row == bytes.fromhex("000a03616263")  # null bitset, varint 10, varint 3 + "abc"
    batch = build_kv_batch([(b"\x01\x02", row), (b"\x02\x03", None)], schema_id=1, writer_id=7, batch_sequence=3)
    records = batch[KV_HEADER_SIZE:]
    # Java DefaultKvRecordTest: 4 (length) + 1 (key length) + 2 (key) + 6 (row) = 13; a delete is 7 bytes
    assert records[:13] == bytes.fromhex("09000000" "02" "0102" "000a03616263")
    assert records[13:] == bytes.fromhex("03000000" "02" "0203")
    h = parse_kv_header(batch)
    assert (h.schema_id, h.writer_id, h.batch_sequence, h.record_count, h.total_size) == (1, 7, 3, 2, len(batch))
    assert h.crc == crc32c(batch[9:])
    got = list(iter_kv_records(batch, verify_crc=True))
    assert got == [(b"\x01\x02", row), (b"\x02\x03", None)]
    assert dec(INT_STRING.types).decode(got[0][1]) == [10, "abc"]


def test_kv_batch_checks():
    batch = bytearray(build_kv_batch([(b"\x01", b"\x00\x01")], schema_id=1))
    batch[-1] ^= 1
    with pytest.raises(CorruptBatchError):
        list(iter_kv_records(bytes(batch), verify_crc=True))
    assert len(list(iter_kv_records(bytes(batch)))) == 1  # Java does not check the CRC itself
    with pytest.raises(CorruptBatchError):
        list(iter_kv_records(bytes(batch[:-1])))
    too_many = bytearray(build_kv_batch([(b"\x01", None)], schema_id=1))
    struct.pack_into("<i", too_many, 24, 2)
    with pytest.raises(CorruptBatchError):
        list(iter_kv_records(bytes(too_many)))


def test_value_batch_bytes():
    batch = build_value_batch([(1, bytes.fromhex("000a03616263")), (2, b"\x00\x01")])
    # length (total - 4), magic 0, count, then length + int16 schema id + row per record
    assert batch == bytes.fromhex("19000000" "00" "02000000" "08000000" "0100" "000a03616263"
                                  "04000000" "0200" "0001")
    assert list(iter_value_records(batch)) == [(1, bytes.fromhex("000a03616263")), (2, b"\x00\x01")]


@pytest.mark.parametrize("fmt", ["COMPACTED", "INDEXED"])
def test_row_changelog_batch_carries_change_types(fmt):
    from fluss_fast.codec.log.indexedlog import build_row_log_batch, decode_row_log_batch

    rows = [[1, "a"], [1, "a"], [1, "b"], [1, "b"]]
    b = build_row_log_batch(rows, INT_STRING.types, fmt=fmt, schema_id=1, change_types=bytes([1, 2, 3, 4]),
                            writer_id=5, batch_sequence=0)
    h = next(logbatch.iter_batches(b))
    assert not h.append_only and h.record_count == 4 and h.writer_id == 5
    assert [(ct, list(v)) for ct, v in decode_row_log_batch(b, h, INT_STRING.types, fmt)] == list(
        zip([1, 2, 3, 4], rows, strict=True))


def test_arrow_changelog_batch_carries_change_types():
    import pyarrow as pa

    codec = ArrowLogCodec(INT_STRING, "ZSTD")
    rb = pa.RecordBatch.from_pydict({"a": pa.array([1, 1, 1], pa.int32()), "b": ["x", "x", "y"]},
                                    schema=INT_STRING.to_arrow())
    b = codec.build(rb, schema_id=1, change_types=bytes([1, 2, 3]))
    h = next(logbatch.iter_batches(b))
    assert not h.append_only
    # the change-type vector sits right after the 48-byte V0 header
    assert b[48:51] == bytes([1, 2, 3])
    out, cts = codec.decode(b, h)
    assert cts == bytes([1, 2, 3]) and out.to_pydict() == {"a": [1, 1, 1], "b": ["x", "x", "y"]}


def test_empty_changelog_batch_takes_one_offset():
    b = bytearray(logbatch.build_batch(b"", schema_id=1, record_count=0, append_only=False, writer_id=3,
                                       batch_sequence=9))
    info = logbatch.validate_records(b)
    assert info.batch_count == 1
    assert logbatch.assign_offsets(b, 41, 0) == 42
    h = next(logbatch.iter_batches(bytes(b)))
    assert (h.base_offset, h.record_count, h.last_offset_delta, h.next_offset) == (41, 0, 0, 42)
