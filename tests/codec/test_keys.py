"""Key encoding (docs/contributing/formats.md §6.2), key columns and bucket assignment, with Java's reference
vectors."""
from __future__ import annotations

import datetime as dt
import decimal
import struct

import pytest

from fluss_fast import datatypes as D
from fluss_fast.codec.kv import keys as K
from fluss_fast.codec.rows.compacted import CompactedRowEncoder_py
from fluss_fast.datatypes import Column, RowField, SchemaInfo, TableDescriptorInfo
from fluss_fast.datatypes import DataType as T

INT, BIGINT, STRING = T(D.INTEGER, False), T(D.BIGINT, False), T(D.STRING, False)
ENCODERS = [K.KeyEncoder_py, K.KeyEncoder]


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


@pytest.fixture(params=ENCODERS, ids=["py", "selected"])
def KE(request):
    return request.param


@pytest.mark.parametrize("tys,values,expected", [
    ([INT], [1], "01"),
    ([INT], [300], "AC 02"),
    ([INT], [-1], "FF FF FF FF 0F"),
    ([BIGINT], [1234567890123], "CB 89 EC 8F F7 23"),
    ([STRING], ["hello"], "05 68 65 6C 6C 6F"),
    ([INT, STRING], [1, "a2"], "01 02 61 32"),
    # Java CompactedKeyEncoderTest / Rust test_encode_key
    ([INT, BIGINT, INT], [1, 3, 2], "01 03 02"),
    ([INT, BIGINT, INT], [2, 5, 6], "02 05 06"),
])
def test_data_md_key_examples(KE, tys, values, expected):
    assert KE(tys).encode(values) == h(expected)
    assert K.encode_key(values, tys) == h(expected)


# Java's fluss-common/src/test/resources/encoding/encoded_key.hex, as embedded by the Rust client's
# test_all_data_types_java_compatible (values from IndexedRowTest.genRecordForAllTypes).
JAVA_ALL_TYPES_KEY = h(
    "01020a0064d295fcd8ceb1aaaaab0133335341ec51b81e856b2e40c79901c0b3a7100a31323334353637383930023230"
    "01310568656c6c6f09010ade9fd7b5b631de9fd7b5b63100de9fd7b5b631de9fd7b5b6310030090000004000000001"
    "00000002000000030000000400000005000000f5ffffff00000000bc0100005a8f010000000000200600000000000000"
    "cdcccc3dcdcc8c3f000000bf3333d340ffff7f7f0100000058030000000200000020000000200000000000000000000000"
    "1800000040000000030000000200000061000000000000810000000000000000630000000000008102000000000000006865"
    "6c6c6f000085776f726c64000085")


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def test_java_all_types_reference_key(KE):
    assert len(JAVA_ALL_TYPES_KEY) == 256
    tys = [T(D.BOOLEAN), T(D.TINYINT), T(D.SMALLINT), T(D.INTEGER), T(D.BIGINT), T(D.FLOAT), T(D.DOUBLE),
           T(D.DATE), T(D.TIME, precision=0), T(D.BINARY, length=20), T(D.BYTES), T(D.CHAR, length=2),
           T(D.STRING), T(D.DECIMAL, precision=5, scale=2), T(D.DECIMAL, precision=20, scale=0),
           T(D.TIMESTAMP, False, precision=1), T(D.TIMESTAMP, False, precision=5),
           T(D.TIMESTAMP_LTZ, False, precision=1), T(D.TIMESTAMP_LTZ, False, precision=5),
           T(D.ARRAY, element=T(D.INTEGER)), T(D.ARRAY, element=T(D.FLOAT, False)),
           T(D.ARRAY, element=T(D.ARRAY, element=T(D.STRING)))]
    ts = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=1698235273182)
    values = [True, 2, 10, 100, -6101065172474983726, 13.2, 15.21, dt.date(2023, 10, 25), dt.time(9, 30),
              b"1234567890", b"20", "1", "hello", decimal.Decimal("0.09"), decimal.Decimal(10),
              ts, ts, ts.replace(tzinfo=dt.UTC), ts.replace(tzinfo=dt.UTC),
              [1, 2, 3, 4, 5, -11, None, 444, 102234],
              [0.1, 1.1, -0.5, 6.6, _f32(0x7F7FFFFF), _f32(1)],   # Float.MAX_VALUE, Float.MIN_VALUE
              [["a", None, "c"], None, ["hello", "world"]]]
    assert KE(tys).encode(values) == JAVA_ALL_TYPES_KEY


def test_nested_row_key_is_length_prefixed_compacted_row(KE):
    inner = T(D.ROW, False, fields=(RowField("x", T(D.INTEGER)), RowField("label", T(D.STRING))))
    key = KE([INT, inner]).encode([1, {"x": 42, "label": "hello"}])
    nested = CompactedRowEncoder_py([T(D.INTEGER), T(D.STRING)]).encode([42, "hello"])
    assert key == b"\x01" + bytes([len(nested)]) + nested


def test_null_key_column_is_refused_with_names(KE):
    with pytest.raises(ValueError, match=r"'b'.*null"):
        KE([INT, INT], ["a", "b"]).encode([1, None])
    with pytest.raises(TypeError, match=r"'a'.*'x'"):
        KE([INT, INT], ["a", "b"]).encode(["x", 1])


@pytest.mark.parametrize("key_hex,n3,n4,n8,n16", [
    ("01", 0, 0, 4, 12),
    ("AC 02", 1, 1, 5, 5),
    ("FF FF FF FF 0F", 0, 2, 2, 10),
    ("CB 89 EC 8F F7 23", 0, 0, 0, 0),
    ("05 68 65 6C 6C 6F", 2, 3, 7, 15),
    ("01 02 61 32", 2, 1, 5, 13),
])
def test_bucket_of_worked_examples(key_hex, n3, n4, n8, n16):
    key = h(key_hex)
    assert [K.bucket_of(key, n) for n in (3, 4, 8, 16)] == [n3, n4, n8, n16]


def test_bucket_of_official_vector():
    assert K.bucket_of(h("00 0A"), 7) == 1
    assert K.bucket_of(h("00 0A 0A 0A"), 12) == 0


def _descriptor(cols, pk=(), partition=(), bucket=()):
    schema = SchemaInfo(tuple(Column(n, t) for n, t in cols), tuple(pk))
    return TableDescriptorInfo(schema, tuple(partition), tuple(bucket), 4)


def test_key_columns_physical_and_bucket_keys():
    cols = [("dt", STRING), ("id", INT), ("name", T(D.STRING)), ("region", STRING)]
    d = _descriptor(cols, pk=("region", "dt", "id"), partition=("dt",))
    kc = K.key_columns(d)
    assert kc.primary_key == [3, 0, 1]
    assert kc.physical_key == [3, 1]
    assert kc.bucket_key == [3, 1]             # defaults to the physical primary key
    assert kc.partition_keys == [0]
    d2 = _descriptor(cols, pk=("region", "dt", "id"), partition=("dt",), bucket=("region",))
    assert K.key_columns(d2).bucket_key == [3]
    assert K.physical_primary_key(d2) == ["region", "id"]
    log = _descriptor(cols)
    assert K.key_columns(log) == K.KeyColumns([], [], [], [])
    with pytest.raises(ValueError, match="'nope'"):
        K.key_columns(_descriptor(cols, pk=("nope",)))


def test_bucket_key_bytes_are_a_prefix_of_the_physical_key():
    cols = [("region", STRING), ("id", INT), ("v", T(D.DOUBLE))]
    d = _descriptor(cols, pk=("region", "id"), bucket=("region",))
    kc = K.key_columns(d)
    pk_enc = K.RowKeyEncoder(d.schema, kc.physical_key)
    bk_enc = K.RowKeyEncoder(d.schema, kc.bucket_key)
    row = ["eu-west", 77, 1.5]
    pk = pk_enc.encode_row(row)
    bk = bk_enc.encode_row(row)
    assert pk.startswith(bk) and pk != bk
    assert pk == pk_enc.encode(["eu-west", 77]) == h("07") + b"eu-west" + h("4D")
    assert 0 <= K.bucket_of(bk, 4) < 4
