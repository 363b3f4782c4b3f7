"""CompactedRow / IndexedRow / BinaryArray codecs: known-answer vectors, round trips, twins."""
from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import os
import struct
import subprocess
import sys
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluss_fast import datatypes as D
from fluss_fast.codec import LOADED
from fluss_fast.codec.rows.binarray import decode_array, decode_map, encode_array, encode_map
from fluss_fast.codec.rows.compacted import (
    CompactedKeyEncoder_py,
    CompactedRowDecoder_py,
    CompactedRowEncoder,
    CompactedRowEncoder_py,
)
from fluss_fast.codec.rows.indexed import IndexedRowDecoder, IndexedRowDecoder_py, IndexedRowEncoder_py
from fluss_fast.codec.rows.scalars import bigint_bytes
from fluss_fast.codec.wire.varint import decode_varint, encode_varint
from fluss_fast.datatypes import DataType as T
from fluss_fast.datatypes import RowField

UTC = dt.UTC

PURE = types.SimpleNamespace(
    name="py", CE=CompactedRowEncoder_py, CD=CompactedRowDecoder_py, IE=IndexedRowEncoder_py,
    ID=IndexedRowDecoder_py, KE=CompactedKeyEncoder_py)
EXT_LOADED = bool(LOADED.get("_compacted") and LOADED.get("_indexed"))
if EXT_LOADED:
    from fluss_fast.codec.rows import _compacted as XC
    from fluss_fast.codec.rows import _indexed as XI
    EXT = types.SimpleNamespace(name="ext", CE=XC.CompactedRowEncoder, CD=XC.CompactedRowDecoder,
                                IE=XI.IndexedRowEncoder, ID=XI.IndexedRowDecoder, KE=XC.CompactedKeyEncoder)
    IMPLS = [PURE, EXT]
else:  # pragma: no cover - a build without a compiler
    EXT = None
    IMPLS = [PURE]


@pytest.fixture(params=IMPLS, ids=lambda i: i.name)
def impl(request):
    return request.param


def enc(impl, fmt, tys, values, names=None):
    cls = impl.CE if fmt == "COMPACTED" else impl.IE
    return cls(tys, names).encode(values)


def dec(impl, fmt, tys, buf, pos=0, end=None):
    cls = impl.CD if fmt == "COMPACTED" else impl.ID
    return cls(tys).decode(buf, pos, end)


INT, STRING, BIGINT = T(D.INTEGER), T(D.STRING), T(D.BIGINT)
FMTS = ["COMPACTED", "INDEXED"]


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


# ------------------------------------------------------------------ known-answer vectors
def test_indexed_row_example_from_data_md(impl):
    tys = [INT, STRING, BIGINT, STRING, STRING]
    row = enc(impl, "INDEXED", tys, [1, "ab", None, None, "xyz"])
    assert row == h("0C 02000000 03000000 00000000 01000000 6162 78797A")
    assert len(row) == 22
    assert dec(impl, "INDEXED", tys, row) == [1, "ab", None, None, "xyz"]


def test_compacted_row_example(impl):
    row = enc(impl, "COMPACTED", [INT, STRING], [10, "abc"])
    assert row == h("00 0A 03 61 62 63")
    assert dec(impl, "COMPACTED", [INT, STRING], row) == [10, "abc"]


@pytest.mark.parametrize("value,bits,expected", [
    (100, 32, "64"), (300, 32, "AC 02"), (-1, 32, "FF FF FF FF 0F"), (0, 32, "00"),
    (127, 32, "7F"), (128, 32, "80 01"), (2**31 - 1, 32, "FF FF FF FF 07"),
    (-1, 64, "FF FF FF FF FF FF FF FF FF 01"), (1234567890123, 64, "CB 89 EC 8F F7 23"),
])
def test_varints(value, bits, expected):
    assert encode_varint(value, bits) == h(expected)
    assert decode_varint(h(expected), 0, bits) == (value, len(h(expected)))


@pytest.mark.parametrize("value,expected", [
    (1, "01"), (300, "AC 02"), (-1, "FF FF FF FF 0F"), (-2**31, "80 80 80 80 08")])
def test_compacted_int_is_unsigned_varint(impl, value, expected):
    assert enc(impl, "COMPACTED", [INT], [value]) == b"\x00" + h(expected)


def test_compacted_smallint_is_fixed_two_bytes(impl):
    assert enc(impl, "COMPACTED", [T(D.SMALLINT)], [10]) == h("00 0A 00")
    assert enc(impl, "COMPACTED", [T(D.SMALLINT)], [-2]) == h("00 FE FF")


def test_binary_array_of_int_example():
    arr = encode_array(INT, [1, 2, 3, 4, 5, -11, None, 444, 102234])
    assert arr == h("09000000 40000000 01000000 02000000 03000000 04000000 05000000 F5FFFFFF 00000000"
                    "BC010000 5A8F0100 00000000")
    assert len(arr) == 48
    assert decode_array(INT, arr) == [1, 2, 3, 4, 5, -11, None, 444, 102234]


def test_binary_array_of_array_of_string_example():
    t = T(D.ARRAY, element=STRING)
    value = [["a", None, "c"], None, ["hello", "world"]]
    arr = encode_array(t, value)
    assert len(arr) == 88
    assert arr[8:16] == h("20 00 00 00 20 00 00 00")      # len 32 @ 32
    assert arr[24:32] == h("18 00 00 00 40 00 00 00")     # len 24 @ 64
    assert h("61 00 00 00 00 00 00 81") in arr
    assert h("68 65 6C 6C 6F 00 00 85") in arr
    assert arr == h(
        "03000000 02000000 2000000020000000 0000000000000000 1800000040000000"
        "03000000 02000000 6100000000000081 0000000000000000 6300000000000081"
        "02000000 00000000 68656C6C6F000085 776F726C64000085")
    assert decode_array(t, arr) == value


def test_long_strings_go_out_of_line_8_byte_aligned():
    arr = encode_array(STRING, ["12345678", "x"])
    # header 4 + null bits 4, two 8-byte slots, then "12345678" at offset 24
    assert arr[8:16] == struct.pack("<Q", (24 << 32) | 8)
    assert arr[16:24] == h("78 00 00 00 00 00 00 81")
    assert arr[24:32] == b"12345678" and len(arr) == 32
    assert decode_array(STRING, arr) == ["12345678", "x"]


def test_binary_map_layout():
    t = T(D.MAP, key=T(D.STRING, False), value=INT)
    m = encode_map(t, {"a": 1, "b": None})
    keys = encode_array(T(D.STRING, False), ["a", "b"])
    vals = encode_array(INT, [1, None])
    assert m == struct.pack("<i", len(keys)) + keys + vals
    assert decode_map(t, m) == [("a", 1), ("b", None)]


@pytest.mark.parametrize("unscaled,expected", [
    (10, "0A"), (128, "00 80"), (-1, "FF"), (0, "00"), (-128, "80"), (-129, "FF 7F"), (255, "00 FF")])
def test_bigint_bytes_match_java_biginteger(unscaled, expected):
    assert bigint_bytes(unscaled) == h(expected)


def test_wide_decimal_in_every_container(impl):
    t = T(D.DECIMAL, precision=20, scale=2)
    v = decimal.Decimal("-123456789012345678.91")
    u = -12345678901234567891
    big = bigint_bytes(u)
    assert enc(impl, "COMPACTED", [t], [v]) == b"\x00" + bytes([len(big)]) + big
    assert enc(impl, "INDEXED", [t], [v]) == b"\x00" + struct.pack("<i", len(big)) + big
    arr = encode_array(t, [v])
    # the element reserves 16 zeroed bytes in the variable part
    assert arr[8:16] == struct.pack("<Q", (16 << 32) | len(big))
    assert arr[16:32] == big + bytes(16 - len(big)) and len(arr) == 32
    assert decode_array(t, arr) == [v]
    for fmt in FMTS:
        assert dec(impl, fmt, [t], enc(impl, fmt, [t], [v])) == [v]


def test_precise_timestamps_layouts(impl):
    t9 = T(D.TIMESTAMP, precision=9)
    v = dt.datetime(1969, 12, 31, 23, 59, 59, 999_001)   # millis -1, 1000 ns into the milli... floor
    millis, nanos = -1, 1000
    assert enc(impl, "INDEXED", [t9], [v]) == b"\x00" + struct.pack("<qi", millis, nanos)
    assert enc(impl, "COMPACTED", [t9], [v]) == b"\x00" + encode_varint(millis, 64) + encode_varint(nanos)
    arr = encode_array(t9, [v])
    assert arr[8:16] == struct.pack("<Q", (16 << 32) | nanos)
    assert arr[16:24] == struct.pack("<q", millis)
    for fmt in FMTS:
        assert dec(impl, fmt, [t9], enc(impl, fmt, [t9], [v])) == [v]


def test_pandas_timestamp_keeps_nanoseconds_on_the_wire(impl):
    pd = pytest.importorskip("pandas")
    t9 = T(D.TIMESTAMP, precision=9)
    v = pd.Timestamp("2024-01-02 03:04:05.123456789")
    row = enc(impl, "INDEXED", [t9], [v])
    millis, nanos = struct.unpack_from("<qi", row, 1)
    assert nanos == 456789 and millis == v.value // 1_000_000
    ltz = T(D.TIMESTAMP_LTZ, precision=9)
    assert enc(impl, "INDEXED", [ltz], [v.tz_localize("UTC")]) == row


def test_ltz_converts_aware_datetimes_to_utc(impl):
    ltz = T(D.TIMESTAMP_LTZ, precision=6)
    plus2 = dt.timezone(dt.timedelta(hours=2))
    a = enc(impl, "COMPACTED", [ltz], [dt.datetime(2024, 5, 1, 12, 0, tzinfo=plus2)])
    b = enc(impl, "COMPACTED", [ltz], [dt.datetime(2024, 5, 1, 10, 0, tzinfo=UTC)])
    c = enc(impl, "COMPACTED", [ltz], [dt.datetime(2024, 5, 1, 10, 0)])   # naive = UTC
    assert a == b == c
    assert dec(impl, "COMPACTED", [ltz], a) == [dt.datetime(2024, 5, 1, 10, 0, tzinfo=UTC)]


def test_indexed_char_and_binary_are_padded(impl):
    tys = [T(D.CHAR, length=4), T(D.BINARY, length=3), INT]
    row = enc(impl, "INDEXED", tys, ["é", b"\x01", 7])
    assert row == h("00") + "é".encode() + b"\x00\x00" + b"\x01\x00\x00" + struct.pack("<i", 7)
    assert dec(impl, "INDEXED", tys, row) == ["é", b"\x01", 7]
    # CompactedRow does not pad them
    assert enc(impl, "COMPACTED", tys, ["é", b"\x01", 7]) == h("00 02") + "é".encode() + h("01 01 07")


def test_indexed_var_slots_only_for_non_null_variable_columns(impl):
    tys = [STRING, STRING, T(D.DECIMAL, precision=30, scale=0), T(D.ARRAY, element=INT)]
    row = enc(impl, "INDEXED", tys, [None, "x", decimal.Decimal(1), [5]])
    arr = encode_array(INT, [5], "INDEXED")
    assert row[:1] == b"\x01"
    assert row[1:17] == struct.pack("<iiii", 1, 1, len(arr), 0)
    assert row[17:] == b"x" + b"\x01" + arr


def test_nested_row_uses_enclosing_format(impl):
    inner = T(D.ROW, fields=(RowField("a", INT), RowField("s", STRING)))
    t = T(D.ARRAY, element=inner)
    value = [{"a": 1, "s": "q"}, None]
    for fmt, cls in (("COMPACTED", CompactedRowEncoder_py), ("INDEXED", IndexedRowEncoder_py)):
        nested = cls([INT, STRING]).encode([1, "q"])
        row = enc(impl, fmt, [t], [value])
        assert nested in row
        assert dec(impl, fmt, [t], row) == [value]
    # a ROW column directly
    c = enc(impl, "COMPACTED", [inner], [[2, "zz"]])
    assert c == h("00") + bytes([5]) + h("00 02 02 7A 7A")
    assert dec(impl, "COMPACTED", [inner], c) == [{"a": 2, "s": "zz"}]


def test_map_accepts_dict_and_pairs_and_decodes_to_pairs(impl):
    t = T(D.MAP, key=T(D.STRING, False), value=T(D.ARRAY, element=INT))
    for fmt in FMTS:
        a = enc(impl, fmt, [t], [{"k": [1], "j": None}])
        b = enc(impl, fmt, [t], [[("k", [1]), ("j", None)]])
        assert a == b
        assert dec(impl, fmt, [t], a) == [[("k", [1]), ("j", None)]]


def test_float_nan_is_canonical_and_inf_roundtrips(impl):
    tys = [T(D.FLOAT), T(D.DOUBLE)]
    weird = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]
    row = enc(impl, "INDEXED", tys, [weird, weird])
    assert row[1:5] == h("00 00 C0 7F") and row[5:] == h("00 00 00 00 00 00 F8 7F")
    assert enc(impl, "INDEXED", tys, [1e300, float("-inf")])[1:5] == h("00 00 80 7F")
    out = dec(impl, "COMPACTED", tys, enc(impl, "COMPACTED", tys, [float("inf"), -0.0]))
    assert out[0] == float("inf") and str(out[1]) == "-0.0"


def test_decimal_rounds_half_up_and_checks_precision(impl):
    t = T(D.DECIMAL, precision=5, scale=2)
    for v, unscaled in [("1.005", 101), ("-1.005", -101), ("1.004", 100), ("999.994", 99999)]:
        assert enc(impl, "COMPACTED", [t], [decimal.Decimal(v)]) == b"\x00" + encode_varint(unscaled, 64)
    assert dec(impl, "COMPACTED", [t], enc(impl, "COMPACTED", [t], [7])) == [decimal.Decimal("7.00")]
    with pytest.raises(ValueError, match=r"999\.995.*DECIMAL|decimal\(5,2\)"):
        enc(impl, "COMPACTED", [t], [decimal.Decimal("999.995")])
    with pytest.raises(TypeError, match="1.5"):
        enc(impl, "COMPACTED", [t], [1.5])
    with pytest.raises(ValueError):
        enc(impl, "COMPACTED", [t], [decimal.Decimal("NaN")])


def test_wide_decimal_keeps_all_38_digits(impl):
    t = T(D.DECIMAL, precision=38, scale=10)
    v = decimal.Decimal("-1234567890123456789012345678.0123456789")
    for fmt in FMTS:
        assert dec(impl, fmt, [t], enc(impl, fmt, [t], [v])) == [v]
    assert str(dec(impl, "INDEXED", [t], enc(impl, "INDEXED", [t], [decimal.Decimal(1)]))[0]) == "1.0000000000"


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("ty,value,exc,needle", [
    (INT, True, TypeError, "bool"),
    (INT, 2**31, ValueError, "2147483648"),
    (T(D.TINYINT), 128, ValueError, "128"),
    (BIGINT, "5", TypeError, "'5'"),
    (T(D.DOUBLE), "x", TypeError, "'x'"),
    (STRING, 5, TypeError, "5"),
    (T(D.BYTES), "abc", TypeError, "'abc'"),
    (T(D.DATE), dt.datetime(2020, 1, 1), TypeError, "datetime"),
    (T(D.TIME), dt.time(1, 2, 3, 4), ValueError, "milli"),
    (T(D.TIMESTAMP, precision=6), dt.datetime(2020, 1, 1, tzinfo=UTC), TypeError, "naive"),
    (T(D.TIMESTAMP, precision=6), "2020-01-01", TypeError, "2020-01-01"),
    (T(D.ARRAY, element=INT), "abc", TypeError, "'abc'"),
    (T(D.ARRAY, element=INT), [1, "x"], TypeError, "'x'"),
    (T(D.ARRAY, element=T(D.INTEGER, False)), [1, None], ValueError, "NOT NULL"),
    (T(D.ROW, fields=(RowField("a", INT),)), {"b": 1}, ValueError, "'b'"),
    (T(D.ROW, fields=(RowField("a", INT),)), [1, 2], ValueError, "expected 1"),
    (T(D.MAP, key=STRING, value=INT), [("k",)], TypeError, "pairs"),
    (STRING, "\ud800", ValueError, "UTF-8"),
])
def test_bad_values_raise_naming_value_field_and_type(impl, fmt, ty, value, exc, needle):
    with pytest.raises(exc) as info:
        enc(impl, fmt, [INT, ty], [1, value], names=["id", "col"])
    msg = str(info.value)
    assert needle in msg
    assert "'col'" in msg


def test_char_too_long_for_indexed_row(impl):
    with pytest.raises(ValueError, match=r"'abc'.*char\(2\)"):
        enc(impl, "INDEXED", [T(D.CHAR, length=2)], ["abc"])
    with pytest.raises(ValueError, match=r"binary\(2\)"):
        enc(impl, "INDEXED", [T(D.BINARY, length=2)], [b"abc"])


@pytest.mark.parametrize("fmt", FMTS)
def test_not_null_and_arity(impl, fmt):
    with pytest.raises(ValueError, match=r"'id' is null.*NOT NULL"):
        enc(impl, fmt, [T(D.INTEGER, False)], [None], names=["id"])
    with pytest.raises(ValueError, match="2 values.*1 fields"):
        enc(impl, fmt, [INT], [1, 2])


def test_numpy_and_subclass_values_are_accepted(impl):
    np = pytest.importorskip("numpy")
    tys = [INT, T(D.DOUBLE), T(D.BOOLEAN), T(D.BYTES), T(D.TIMESTAMP, precision=3)]
    vals = [np.int32(5), np.float32(1.5), np.bool_(True), bytearray(b"ab"), np.datetime64("2020-01-01T00:00:01.5")]
    for fmt in FMTS:
        out = dec(impl, fmt, tys, enc(impl, fmt, tys, vals))
        assert out == [5, 1.5, True, b"ab", dt.datetime(2020, 1, 1, 0, 0, 1, 500000)]


# ------------------------------------------------------------------ decoding robustness
@pytest.mark.parametrize("fmt", FMTS)
def test_decode_respects_pos_and_end_and_buffer_kinds(impl, fmt):
    tys = [INT, STRING]
    row = enc(impl, fmt, tys, [3, "hello"])
    framed = b"xx" + row + b"yy"
    for buf in (framed, bytearray(framed), memoryview(framed)):
        assert dec(impl, fmt, tys, buf, 2, 2 + len(row)) == [3, "hello"]
    with pytest.raises(ValueError):
        dec(impl, fmt, tys, row[:-1])


SCHEMA_FOR_FUZZ = [INT, STRING, T(D.DECIMAL, precision=25, scale=3), T(D.TIMESTAMP, precision=9),
                   T(D.ARRAY, element=STRING), T(D.MAP, key=INT, value=T(D.BYTES)),
                   T(D.ROW, fields=(RowField("x", T(D.DATE)),)), T(D.CHAR, length=3), T(D.TIME)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=120), fmt=st.sampled_from(FMTS))
def test_garbage_never_crashes_a_decoder(data, fmt):
    for impl in IMPLS:
        with contextlib.suppress(ValueError):
            dec(impl, fmt, SCHEMA_FOR_FUZZ, data)


# ------------------------------------------------------------------ hypothesis round trips
_SCALARS = [D.BOOLEAN, D.TINYINT, D.SMALLINT, D.INTEGER, D.BIGINT, D.FLOAT, D.DOUBLE, D.STRING, D.BYTES,
            D.DATE]


def _scalar_types():
    simple = st.builds(T, st.sampled_from(_SCALARS), st.booleans())
    char = st.builds(lambda n, nl: T(D.CHAR, nl, length=n), st.integers(1, 12), st.booleans())
    binary = st.builds(lambda n, nl: T(D.BINARY, nl, length=n), st.integers(1, 12), st.booleans())
    dec_t = st.integers(1, 38).flatmap(
        lambda p: st.builds(lambda s, nl: T(D.DECIMAL, nl, precision=p, scale=s), st.integers(0, p), st.booleans()))
    temporal = st.builds(lambda r, p, nl: T(r, nl, precision=p),
                         st.sampled_from([D.TIME, D.TIMESTAMP, D.TIMESTAMP_LTZ]), st.integers(0, 9), st.booleans())
    return st.one_of(simple, char, binary, dec_t, temporal)


def _nested(children):
    array = st.builds(lambda e, nl: T(D.ARRAY, nl, element=e), children, st.booleans())
    map_ = st.builds(lambda k, v, nl: T(D.MAP, nl, key=k.with_nullable(False), value=v), children, children,
                     st.booleans())
    row = st.builds(lambda fs, nl: T(D.ROW, nl, fields=tuple(RowField(f"f{i}", t) for i, t in enumerate(fs))),
                    st.lists(children, min_size=1, max_size=4), st.booleans())
    return st.one_of(array, map_, row)


data_types = st.recursive(_scalar_types(), _nested, max_leaves=6)

_INT_BOUNDS = {D.TINYINT: 7, D.SMALLINT: 15, D.INTEGER: 31, D.BIGINT: 63}
_CTX = decimal.Context(prec=100)


def _utf8_fits(n):
    return st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=n).filter(
        lambda s: len(s.encode()) <= n)


def values_of(t: T, top=False):
    """Values that survive a round trip exactly (floats representable, CHAR/BINARY not ending in 0)."""
    r = t.root
    if r == D.BOOLEAN:
        base = st.booleans()
    elif r in _INT_BOUNDS:
        b = _INT_BOUNDS[r]
        base = st.integers(-(1 << b), (1 << b) - 1)
    elif r == D.FLOAT:
        base = st.floats(width=32, allow_nan=False)
    elif r == D.DOUBLE:
        base = st.floats(allow_nan=False)
    elif r == D.STRING:
        base = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
    elif r == D.CHAR:
        base = _utf8_fits(t.length)
    elif r == D.BYTES:
        base = st.binary(max_size=20)
    elif r == D.BINARY:
        base = st.binary(max_size=t.length).map(lambda b: b.rstrip(b"\x00"))
    elif r == D.DECIMAL:
        lim = 10 ** t.precision - 1
        base = st.integers(-lim, lim).map(lambda u: decimal.Decimal(u).scaleb(-t.scale, _CTX))
    elif r == D.DATE:
        base = st.dates()
    elif r == D.TIME:
        base = st.times().map(lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000))
    elif r in (D.TIMESTAMP, D.TIMESTAMP_LTZ):
        tz = st.just(UTC) if r == D.TIMESTAMP_LTZ else st.none()
        base = st.datetimes(timezones=tz)
        if t.precision <= 3:
            base = base.map(lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000))
    elif r == D.ARRAY:
        base = st.lists(values_of(t.element), max_size=5)
    elif r == D.MAP:
        base = st.lists(st.tuples(values_of(t.key), values_of(t.value)), max_size=4)
    elif r == D.ROW:
        base = st.fixed_dictionaries({f.name: values_of(f.type) for f in t.fields})
    else:  # pragma: no cover
        raise AssertionError(r)
    return st.one_of(st.none(), base) if t.nullable else base


@st.composite
def schema_and_row(draw):
    tys = draw(st.lists(data_types, min_size=1, max_size=6))
    row = [draw(values_of(t)) for t in tys]
    return tys, row


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=schema_and_row(), fmt=st.sampled_from(FMTS))
def test_round_trip_and_twins_agree(case, fmt):
    tys, row = case
    encoded = [enc(impl, fmt, tys, row) for impl in IMPLS]
    assert all(e == encoded[0] for e in encoded), "twins disagree"
    for impl in IMPLS:
        assert dec(impl, fmt, tys, encoded[0]) == row
        # a row embedded in a larger buffer decodes the same
        assert dec(impl, fmt, tys, b"\x07" + encoded[0] + b"\x09", 1, 1 + len(encoded[0])) == row


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=schema_and_row())
def test_keys_are_compacted_fields_without_bitset(case):
    tys, row = case
    tys = [t.with_nullable(False) for t in tys]
    if any(v is None for v in row):
        for impl in IMPLS:
            with pytest.raises(ValueError, match="null"):
                impl.KE(tys).encode(row)
        return
    keys = [impl.KE(tys).encode(row) for impl in IMPLS]
    assert all(k == keys[0] for k in keys)
    # field-by-field concatenation of CompactedRow fields
    expected = b"".join(CompactedRowEncoder_py([t]).encode([v])[1:] for t, v in zip(tys, row, strict=True))
    assert keys[0] == expected


def test_extension_is_in_use_when_built():
    if not EXT_LOADED:
        pytest.skip("no compiled _rows")
    assert CompactedRowEncoder is EXT.CE
    assert IndexedRowDecoder is EXT.ID


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=schema_and_row(), fmt=st.sampled_from(FMTS), data=st.data())
def test_corrupted_rows_only_raise_value_error(case, fmt, data):
    """Flipped bytes and truncations of valid rows: a value or ValueError, never a crash."""
    tys, row = case
    good = enc(PURE, fmt, tys, row)
    bad = bytearray(good)
    for _ in range(data.draw(st.integers(1, 4))):
        if bad:
            bad[data.draw(st.integers(0, len(bad) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(bad)))
    for candidate in (bytes(bad), bytes(bad[:cut])):
        for impl in IMPLS:
            with contextlib.suppress(ValueError):
                dec(impl, fmt, tys, candidate)


@pytest.mark.parametrize("fmt", FMTS)
def test_encode_records_frames_rows_like_the_log_format(impl, fmt):
    tys = [INT, STRING]
    cls = impl.CE if fmt == "COMPACTED" else impl.IE
    e = cls(tys)
    rows = [[1, "a"], [None, "bb" * 300], [3, None]]
    out = e.encode_records(rows, [1, 3, 4])
    expected = b"".join(struct.pack("<i", len(e.encode(r)) + 1) + bytes([ct]) + e.encode(r)
                        for r, ct in zip(rows, [1, 3, 4], strict=True))
    assert out == expected
    assert e.encode_records(rows)[4] == 0   # default change type +A
    assert e.encode_records([]) == b""
    with pytest.raises(TypeError, match="row 1: field 0"):
        e.encode_records([[1, "a"], ["x", "b"]])
    with pytest.raises(ValueError, match="change type 9"):
        e.encode_records([[1, "a"]], [9])


@pytest.mark.parametrize("fmt", FMTS)
def test_very_wide_rows(impl, fmt):
    tys = [T(D.TINYINT)] * 3000
    row = [None if i % 7 == 0 else i % 100 for i in range(3000)]
    encoded = enc(impl, fmt, tys, row)
    assert encoded == enc(PURE, fmt, tys, row)
    assert dec(impl, fmt, tys, encoded) == row


def test_compacted_decode_with_end_reports_where_the_row_stops(impl):
    d = impl.CD([INT, STRING])
    row = enc(impl, "COMPACTED", [INT, STRING], [5, "xyz"])
    assert d.decode_with_end(row + b"tail") == ([5, "xyz"], len(row))
    assert d.decode_with_end(memoryview(b"ab" + row), 2) == ([5, "xyz"], 2 + len(row))


decimals = st.one_of(
    st.decimals(allow_nan=False, allow_infinity=False),
    st.builds(lambda m, e: decimal.Decimal(m).scaleb(e, decimal.Context(prec=60)),
              st.integers(-10**20, 10**20), st.integers(-25, 25)),
    st.sampled_from([decimal.Decimal(x) for x in ("NaN", "-Infinity", "-0", "0E-30", "1E+30", "0.5", "-0.5")]))


@settings(max_examples=400, deadline=None)
@given(v=decimals, p=st.integers(1, 38), data=st.data())
def test_any_decimal_input_encodes_identically_in_both_twins(v, p, data):
    s = data.draw(st.integers(0, p))
    t = T(D.DECIMAL, precision=p, scale=s)
    for fmt in FMTS:
        results = []
        for impl in IMPLS:
            try:
                results.append(enc(impl, fmt, [t], [v]))
            except (TypeError, ValueError) as exc:
                results.append((type(exc), str(exc)))
        assert all(r == results[0] for r in results)
        if isinstance(results[0], bytes):
            got = dec(PURE, fmt, [t], results[0])[0]
            expected = v.quantize(decimal.Decimal(1).scaleb(-s), decimal.ROUND_HALF_UP, decimal.Context(prec=80))
            assert got == expected


@pytest.mark.parametrize("first", ["CompactedRowDecoder", "IndexedRowDecoder", "CompactedRowEncoder",
                                   "IndexedRowEncoder"])
def test_a_codec_made_first_in_a_process_handles_decimals(first):
    # each compiled row module keeps its own handles on the pure decimal helpers: a process whose
    # first row codec is this one must have them too
    script = (
        "import decimal\n"
        "from fluss_fast.codec.rows import compacted, indexed\n"
        "from fluss_fast.datatypes import DataType as T\n"
        "from fluss_fast import datatypes as D\n"
        "types = [T(D.DECIMAL, precision=10, scale=2), T(D.DECIMAL, precision=30, scale=2)]\n"
        f"mod = compacted if 'Compacted' in {first!r} else indexed\n"
        "row = [decimal.Decimal('1.25'), decimal.Decimal('-3.50')]\n"
        f"if {first!r}.endswith('Decoder'):\n"
        "    enc = (mod.CompactedRowEncoder_py if mod is compacted else mod.IndexedRowEncoder_py)(types)\n"
        f"    print(getattr(mod, {first!r})(types).decode(enc.encode(row)))\n"
        "else:\n"
        f"    print(len(getattr(mod, {first!r})(types).encode(row)))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
