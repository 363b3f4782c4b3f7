"""INDEXED / COMPACTED log batches, KV batches, and rows -> Arrow."""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from fluss_fast import datatypes as D
from fluss_fast.codec.errors import CorruptBatchError
from fluss_fast.codec.kv import kvbatch as KV
from fluss_fast.codec.log import indexedlog as L
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.rows.compacted import CompactedRowEncoder
from fluss_fast.codec.rows.indexed import IndexedRowEncoder
from fluss_fast.datatypes import Column, RowField, SchemaInfo
from fluss_fast.datatypes import DataType as T

INT, STRING, BIGINT = T(D.INTEGER), T(D.STRING), T(D.BIGINT)
UTC = dt.UTC


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", "").replace("\n", ""))


DATA_MD_BATCH = h("""
00 00 00 00 00 00 00 00  3f 00 00 00  00  00 00 00 00 00 00 00 00
a5 c2 e3 2f  01 00  01  00 00 00 00
ff ff ff ff ff ff ff ff  ff ff ff ff  01 00 00 00
17 00 00 00 00 0c 02 00 00 00 03 00 00 00 00 00 00 00 01 00 00 00 61 62 78 79 7a
""")
FIVE = [INT, STRING, BIGINT, STRING, STRING]


def test_indexed_batch_matches_data_md_bytes():
    assert len(DATA_MD_BATCH) == 75
    built = L.build_row_log_batch([[1, "ab", None, None, "xyz"]], FIVE, fmt="INDEXED", schema_id=1)
    assert built == DATA_MD_BATCH
    assert L.build_indexed_batch([[1, "ab", None, None, "xyz"]], FIVE, schema_id=1) == DATA_MD_BATCH
    header = logbatch.parse_header(DATA_MD_BATCH)
    assert header.append_only and header.crc == 0x2FE3C2A5
    assert L.decode_row_log_batch(DATA_MD_BATCH, header, FIVE, "INDEXED") == [(0, [1, "ab", None, None, "xyz"])]


@pytest.mark.parametrize("fmt", ["INDEXED", "COMPACTED"])
def test_row_log_batches_round_trip_with_change_types_and_offsets(fmt):
    tys = [INT, STRING, T(D.ARRAY, element=T(D.DECIMAL, precision=20, scale=2))]
    rows = [[i, f"r{i}" * i, [decimal.Decimal(i) / 4, None]] for i in range(50)]
    cts = [L.INSERT, L.UPDATE_BEFORE, L.UPDATE_AFTER, L.DELETE, L.INSERT] * 10
    blob = (L.build_row_log_batch(rows[:20], tys, fmt=fmt, schema_id=3, writer_id=9, batch_sequence=4)
            + L.build_row_log_batch(rows[20:], tys, fmt=fmt, schema_id=3, change_types=cts[20:],
                                    writer_id=9, batch_sequence=5))
    checked = logbatch.validate_records(blob)           # the server's checks: sizes, CRC, counts
    assert checked is not None
    headers = list(logbatch.iter_batches(blob))
    assert [hd.append_only for hd in headers] == [True, False]
    assert (headers[0].writer_id, headers[0].batch_sequence, headers[0].schema_id) == (9, 4, 3)
    codec = L.RowLogCodec(tys, fmt)
    out = codec.decode(blob, headers[0]) + codec.decode(blob, headers[1])
    assert [v for _, v in out] == rows
    assert [c for c, _ in out] == [0] * 20 + cts[20:]
    # the row bytes are exactly what the row encoders make
    first = IndexedRowEncoder(tys) if fmt == "INDEXED" else CompactedRowEncoder(tys)
    assert first.encode(rows[0]) in blob


def test_all_plus_a_change_types_make_an_append_only_batch():
    b = L.build_row_log_batch([[1]], [INT], fmt="COMPACTED", schema_id=0, change_types=[L.APPEND_ONLY])
    assert logbatch.parse_header(b).append_only


def test_bad_inputs_are_reported():
    with pytest.raises(ValueError, match="INDEXED or COMPACTED"):
        L.build_row_log_batch([[1]], [INT], fmt="ARROW", schema_id=0)
    with pytest.raises(TypeError, match="row 1: field 0"):
        L.build_row_log_batch([[1], ["x"]], [INT], schema_id=0)
    with pytest.raises(ValueError, match="change type 7"):
        L.build_row_log_batch([[1]], [INT], schema_id=0, change_types=[7])
    batch = L.build_row_log_batch([[1, "abc"]], [INT, STRING], schema_id=0)
    header = logbatch.parse_header(batch)
    with pytest.raises(CorruptBatchError):
        L.decode_row_log_batch(batch[:-1], header, [INT, STRING])
    # a record claiming more bytes than the batch holds
    broken = bytearray(batch)
    broken[48] = 0x7F
    with pytest.raises(CorruptBatchError, match="record 0"):
        L.decode_row_log_batch(bytes(broken), header, [INT, STRING])
    # a row that does not parse with the given schema
    with pytest.raises(CorruptBatchError, match="record 0"):
        L.decode_row_log_batch(batch, header, [INT, STRING, BIGINT, T(D.DOUBLE)])


# ------------------------------------------------------------------ KV batches
DATA_MD_KV = h("""
2a 00 00 00 00 05 f4 6e ac 01 00 00
07 00 00 00 00 00 00 00 00 00 00 00 02 00 00 00
08 00 00 00 01 0a 00 0a 03 61 62 63
02 00 00 00 01 0b
""")


def test_kv_batch_matches_data_md_bytes():
    value = CompactedRowEncoder([INT, STRING]).encode([10, "abc"])
    built = KV.build_kv_batch([(b"\x0a", value), (b"\x0b", None)], schema_id=1, writer_id=7, batch_sequence=0)
    assert built == DATA_MD_KV
    hd = KV.parse_kv_header(built)
    assert (hd.schema_id, hd.writer_id, hd.batch_sequence, hd.record_count, hd.crc) == (1, 7, 0, 2, 0xAC6EF405)
    assert list(KV.iter_kv_records(built, verify_crc=True)) == [(b"\x0a", value), (b"\x0b", None)]


def test_kv_batch_corruption_is_detected():
    good = KV.build_kv_batch([(b"k" * 200, b"v" * 300), (b"", None)], schema_id=0)
    assert KV.kv_records(good) == [(b"k" * 200, b"v" * 300), (b"", None)]
    with pytest.raises(CorruptBatchError):
        KV.parse_kv_header(good[:-1])
    flipped = bytearray(good)
    flipped[100] ^= 1   # inside the first key
    assert len(KV.kv_records(bytes(flipped))) == 2           # the server does not check it...
    with pytest.raises(CorruptBatchError, match="CRC"):
        list(KV.iter_kv_records(bytes(flipped), verify_crc=True))   # ...but we can
    bad_len = bytearray(good)
    bad_len[31] = 0x7F
    with pytest.raises(CorruptBatchError, match="record 0"):
        KV.kv_records(bytes(bad_len))


# ------------------------------------------------------------------ Arrow
def test_to_arrow_matches_pyarrow_for_every_type():
    cols = [
        ("b", T(D.BOOLEAN)), ("i8", T(D.TINYINT)), ("i16", T(D.SMALLINT)), ("i", INT), ("l", BIGINT),
        ("f", T(D.FLOAT)), ("d", T(D.DOUBLE)), ("c", T(D.CHAR, length=3)), ("s", STRING),
        ("bin", T(D.BINARY, length=3)), ("by", T(D.BYTES)), ("dec", T(D.DECIMAL, precision=10, scale=2)),
        ("wide", T(D.DECIMAL, precision=30, scale=0)), ("day", T(D.DATE)), ("t0", T(D.TIME, precision=0)),
        ("t3", T(D.TIME, precision=3)), ("t6", T(D.TIME, precision=6)), ("ts0", T(D.TIMESTAMP, precision=0)),
        ("ts3", T(D.TIMESTAMP, precision=3)), ("ts9", T(D.TIMESTAMP, precision=9)),
        ("ltz", T(D.TIMESTAMP_LTZ, precision=6)), ("arr", T(D.ARRAY, element=STRING)),
        ("m", T(D.MAP, key=T(D.STRING, False), value=INT)),
        ("r", T(D.ROW, fields=(RowField("x", INT), RowField("y", T(D.ARRAY, element=INT))))),
    ]
    schema = SchemaInfo(tuple(Column(n, t) for n, t in cols))
    tys = schema.types
    row = [True, -3, 300, 70000, 2**40, 1.5, 2.25, "ab", "héllo", b"\x01", b"xyz", decimal.Decimal("12.34"),
           decimal.Decimal(10) ** 29, dt.date(1999, 12, 31), dt.time(1, 2, 3), dt.time(1, 2, 3, 456000),
           dt.time(23, 59, 59, 999000), dt.datetime(1960, 1, 1, 0, 0, 1), dt.datetime(2024, 2, 29, 12, 0, 0, 5000),
           dt.datetime(2024, 2, 29, 12, 0, 0, 123456), dt.datetime(2024, 1, 1, tzinfo=UTC), ["a", None],
           [("k", 1), ("j", None)], {"x": 5, "y": [1, None]}]
    nulls = [None] * len(row)
    batch = L.build_row_log_batch([row, nulls], tys, fmt="INDEXED", schema_id=0)
    decoded = [v for _, v in L.decode_row_log_batch(batch, logbatch.parse_header(batch), tys, "INDEXED")]
    rb = L.to_arrow(decoded, schema)
    assert rb.schema == schema.to_arrow()
    assert rb.num_rows == 2
    got = rb.to_pylist()
    assert got[1] == {n: None for n, _ in cols}
    first = got[0]
    assert first["bin"] == b"\x01\x00\x00"          # IndexedRow strips, Arrow's fixed width pads back
    assert first["ts9"] == dt.datetime(2024, 2, 29, 12, 0, 0, 123456)
    assert first["ltz"] == dt.datetime(2024, 1, 1, tzinfo=UTC)
    assert first["m"] == [("k", 1), ("j", None)]
    assert first["r"] == {"x": 5, "y": [1, None]}
    expected = dict(zip([n for n, _ in cols], row, strict=True))
    for name in expected:
        if name not in ("bin",):
            assert first[name] == expected[name], name
    assert rb.column(rb.schema.get_field_index("ts9")).type == pa.timestamp("ns")
    with pytest.raises(ValueError, match="2 values"):
        L.to_arrow([[1, 2]], SchemaInfo((Column("a", INT),)))
    assert L.to_arrow([], schema).num_rows == 0


def test_lookup_values_carry_a_schema_id_prefix():
    row = CompactedRowEncoder([INT, STRING]).encode([10, "abc"])
    v = KV.encode_value(3, row)
    assert v == h("03 00") + row
    assert KV.decode_value(v) == (3, row)
    with pytest.raises(ValueError):
        KV.decode_value(b"\x01")
