"""Bucketing hashes: docs/contributing/formats.md §6.4/§6.5 vectors, standard MurmurHash3 vectors, twin agreement."""
import importlib
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluss_fast.codec.wire import murmur as mm

try:
    _ext = importlib.import_module("fluss_fast.codec.wire._murmur")
except ImportError:
    _ext = None

_NAMES = ["fluss_murmur32", "int_murmur", "bucket_for_key", "buckets_for_keys",
          "paimon_bucket", "murmur3_32", "iceberg_bucket"]
PY = types.SimpleNamespace(**{n: getattr(mm, n + "_py") for n in _NAMES})
EXT = types.SimpleNamespace(**{n: getattr(_ext, n) for n in _NAMES}) if _ext else None
IMPLS = [pytest.param(PY, id="py")] + ([pytest.param(EXT, id="ext")] if EXT else [])

FOX = b"The quick brown fox jumps over the lazy dog"


@pytest.fixture(params=IMPLS)
def impl(request):
    return request.param


def s32(x):
    return x - (1 << 32) if x & 0x80000000 else x


# docs/contributing/formats.md §6.4 (BucketingFunctionTest): key, n, default, paimon, iceberg
TABLE_6_4 = [
    (bytes.fromhex("000a"), 7, 1, 1, 3),
    (bytes.fromhex("000a0a0a"), 12, 0, 11, 4),
    (b"2bb87d68-baf9-4e64-90f9-f80910419fa6", 16, 6, 12, 12),
    (FOX, 8, 6, 0, 3),
]


@pytest.mark.parametrize("key, n, default, paimon, iceberg", TABLE_6_4)
def test_table_6_4(impl, key, n, default, paimon, iceberg):
    assert impl.bucket_for_key(key, n) == default
    assert impl.paimon_bucket(key, n) == paimon
    assert impl.iceberg_bucket(key, n) == iceberg
    assert impl.buckets_for_keys([key], n) == [default]


# docs/contributing/formats.md §6.5: key bytes, FlussMurmur32, IntMurmur, buckets for n = 3, 4, 8, 16
TABLE_6_5 = [
    ("01", 0xE8F30D16, 1113307500, (0, 0, 4, 12)),
    ("ac02", 0xBE915344, 1475058325, (1, 1, 5, 5)),
    ("ffffffff0f", 0x0008B8CF, 1667198730, (0, 2, 2, 10)),
    ("cb89ec8ff723", 0x86130445, 2112334608, (0, 0, 0, 0)),
    ("0568656c6c6f", 0x25EC226E, 162278591, (2, 3, 7, 15)),
    ("01026132", 0xF7F9B285, 513524477, (2, 1, 5, 13)),
]


@pytest.mark.parametrize("key_hex, h1, h2, buckets", TABLE_6_5)
def test_table_6_5(impl, key_hex, h1, h2, buckets):
    key = bytes.fromhex(key_hex)
    assert impl.fluss_murmur32(key) == s32(h1)
    assert impl.fluss_murmur32(key, 42) == s32(h1)
    assert impl.int_murmur(s32(h1)) == h2
    for n, expected in zip((3, 4, 8, 16), buckets, strict=True):
        assert impl.bucket_for_key(key, n) == expected
        assert impl.bucket_for_key(memoryview(b"#" + key)[1:], n) == expected


def test_first_row_is_negative(impl):
    assert impl.fluss_murmur32(b"\x01") == -386724586


def test_tail_bytes_are_sign_extended(impl):
    # Zero-extending the tail (the Rust client's bug) would give bucket 3 for INT 300.
    assert impl.bucket_for_key(bytes.fromhex("ac02"), 8) == 5
    assert impl.fluss_murmur32(b"\x00\x0a") == s32(0x5B353918)


def test_hash_constants(impl):
    assert impl.fluss_murmur32(b"", 42) == s32(0x087FCD5C)
    assert impl.fluss_murmur32(FOX, 42) == s32(0x1BC6F880)
    assert impl.fluss_murmur32(FOX, 0) == s32(0x5FD20A20)
    assert impl.int_murmur(0) == 0x2362F9DE
    assert impl.int_murmur(42) == 0x43A46E1D
    assert impl.int_murmur(-77) == 0x2EEB27DE
    assert impl.murmur3_32(FOX, 0) == s32(0x2E4FF723)
    assert impl.murmur3_32(FOX) == s32(0x2E4FF723)


@pytest.mark.parametrize("data, seed, expected", [
    # widely published MurmurHash3_x86_32 vectors
    (b"", 0, 0),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\xff\xff\xff\xff", 0, 0x76293B50),
    (b"\x21\x43\x65\x87", 0, 0xF55B516B),
    (b"\x21\x43\x65\x87", 0x5082EDEE, 0x2362F9DE),
    (b"\x21\x43\x65", 0, 0x7E4A8634),
    (b"\x21\x43", 0, 0xA0F7B07A),
    (b"\x21", 0, 0x72661CF4),
    (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
    (b"\x00\x00\x00", 0, 0x85F0B427),
    (b"\x00\x00", 0, 0x30F4C306),
    (b"\x00", 0, 0x514E28B7),
    (b"aaaa", 0x9747B28C, 0x5A97808A),
    (b"Hello, world!", 0x9747B28C, 0x24884CBA),
])
def test_standard_murmur3_vectors(impl, data, seed, expected):
    assert impl.murmur3_32(data, seed) == s32(expected)


def test_variants_differ_only_in_tail(impl):
    key = b"abcdefgh"  # no tail: the Fluss variant equals the standard hash
    assert impl.fluss_murmur32(key, 7) == impl.murmur3_32(key, 7)
    key = b"abcdefg\x81"  # high last byte, but part of a full block
    assert impl.fluss_murmur32(key, 7) == impl.murmur3_32(key, 7)
    assert impl.fluss_murmur32(b"abc", 7) != impl.murmur3_32(b"abc", 7)


def test_bad_bucket_counts(impl):
    for fn in (impl.bucket_for_key, impl.paimon_bucket, impl.iceberg_bucket,
               impl.buckets_for_keys):
        with pytest.raises(ValueError):
            fn([b"k"] if fn is impl.buckets_for_keys else b"k", 0)
        with pytest.raises(ValueError):
            fn([b"k"] if fn is impl.buckets_for_keys else b"k", -3)


def test_iceberg_refuses_an_empty_key(impl):
    """Java's IcebergBucketingFunction: "bucketKey must not be null or empty" (an empty string key)."""
    for key in (b"", bytearray(), memoryview(b"")):
        with pytest.raises(ValueError, match="must not be null or empty"):
            impl.iceberg_bucket(key, 4)


def test_buckets_for_keys_accepts_iterables(impl):
    keys = [b"a", bytearray(b"bb"), memoryview(b"ccc"), b""]
    expected = [impl.bucket_for_key(k, 10) for k in keys]
    assert impl.buckets_for_keys(keys, 10) == expected
    assert impl.buckets_for_keys(tuple(keys), 10) == expected
    assert impl.buckets_for_keys(iter(keys), 10) == expected
    assert impl.buckets_for_keys([], 10) == []
    with pytest.raises(TypeError):
        impl.buckets_for_keys(["text"], 10)


def test_paimon_uses_truncating_remainder(impl):
    # a key whose hash is negative: Python's floor % would give a different bucket
    key = b"\x01"
    h = impl.fluss_murmur32(key)
    assert h < 0
    assert impl.paimon_bucket(key, 7) == abs(h) % 7 != h % 7


@given(st.binary(max_size=300), st.integers(0, 7), st.integers(-(1 << 31), (1 << 32) - 1))
@settings(max_examples=300, deadline=None)
def test_twins_agree_on_hashes(data, skew, seed):
    view = memoryview(b"\x00" * skew + data)[skew:]
    for name in ("fluss_murmur32", "murmur3_32"):
        expected = getattr(PY, name)(view, seed)
        assert -(1 << 31) <= expected < (1 << 31)
        if EXT:
            assert getattr(EXT, name)(view, seed) == expected
            assert getattr(EXT, name)(bytes(view), seed) == expected


@given(st.integers(-(1 << 31), (1 << 31) - 1))
@settings(deadline=None)
def test_twins_agree_on_int_murmur(code):
    expected = PY.int_murmur(code)
    assert 0 <= expected < (1 << 31)
    if EXT:
        assert EXT.int_murmur(code) == expected


@given(st.lists(st.binary(max_size=40), max_size=30), st.integers(1, 1 << 20))
@settings(deadline=None)
def test_twins_agree_on_buckets(keys, n):
    expected = [PY.bucket_for_key(k, n) for k in keys]
    assert PY.buckets_for_keys(keys, n) == expected
    assert all(0 <= b < n for b in expected)
    if EXT:
        assert EXT.buckets_for_keys(keys, n) == expected
        assert [EXT.bucket_for_key(k, n) for k in keys] == expected
        assert [EXT.paimon_bucket(k, n) for k in keys] == [PY.paimon_bucket(k, n) for k in keys]
        assert [EXT.iceberg_bucket(k, n) for k in keys if k] == [PY.iceberg_bucket(k, n) for k in keys if k]
