"""The V1 batch statistics block (codec/log/batchstats.py) and the filter that reads it
(codec/log/batchfilter.py): known answers, round trips of every supported type, Java's rules,
and blocks that lie about their sizes."""
from __future__ import annotations

import datetime as dt
import decimal
import math
import struct

import pyarrow as pa
import pytest

from fluss_fast import datatypes as T
from fluss_fast.codec.log import batchstats
from fluss_fast.codec.log.batchfilter import BatchFilter, FilterError
from fluss_fast.codec.log.batchstats import BatchStatistics, StatisticsError
from fluss_fast.datatypes import DataType, SchemaInfo
from fluss_fast.rpc import fluss_api_pb2 as pb

UTC = dt.UTC

SCHEMA = pa.schema([
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("by", pa.binary()),
    ("d", pa.date32()), ("t", pa.time32("ms")), ("ts", pa.timestamp("us")), ("tsl", pa.timestamp("us", tz="UTC")),
    ("tsms", pa.timestamp("ms")), ("dec", pa.decimal128(10, 2)), ("dec2", pa.decimal128(28, 5)),
    ("allnull", pa.int32()), ("tns", pa.time64("us"))])
INFO = SchemaInfo.from_arrow(SCHEMA)


def _rows() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([
        {"b": True, "i8": -5, "i16": 300, "i32": 7, "i64": -(1 << 40), "f32": 1.5, "f64": -0.0, "s": "abc",
         "by": b"x", "d": dt.date(2024, 2, 29), "t": dt.time(1, 2, 3, 4000),
         "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678901), "tsl": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
         "tsms": dt.datetime(2020, 1, 1, 0, 0, 0, 123000), "dec": decimal.Decimal("12.34"),
         "dec2": decimal.Decimal("-12345678901234567890.12345"), "allnull": None, "tns": dt.time(0, 0, 1, 999)},
        {"b": False, "i8": 9, "i16": None, "i32": -70, "i64": 5, "f32": float("nan"), "f64": 0.0,
         "s": "a much longer string \u00e9", "by": None, "d": dt.date(1969, 12, 31), "t": None,
         "ts": dt.datetime(1960, 1, 2, 3, 4, 5, 1), "tsl": dt.datetime(2034, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
         "tsms": dt.datetime(2021, 1, 1, 0, 0, 0, 124000), "dec": decimal.Decimal("-1.00"),
         "dec2": decimal.Decimal("99.5"), "allnull": None, "tns": None},
    ], schema=SCHEMA)


# The statistics blocks pyfluss 1.0.0 stored for _rows() (written with write_arrow_batch to the
# embedded server, fetched raw), for table.statistics.columns = '*' and = 's, i32,f64'.
PYFLUSS_ALL = bytes.fromhex(
    "0111000000010002000300040005000600070009000a000b000c000d000e000f001000110000000000000000"
    "0001000000000000000000000000000000000000000000000000000000010000000000000000000000000000"
    "0000000000000000000200000001000000c800000000008000000000000000000000000000fb000000000000"
    "002c01000000000000baffffff000000000000000000ffffff0000c03f000000000000000000000080170000"
    "0090000000ffffffff00000000fcce380000000000e8030000a800000088bf0d00b00000007be8665e6f0100"
    "009cffffffffffffff0b000000b80000000000000000000000e80300000000000061206d756368206c6f6e67"
    "657220737472696e6720c3a90088187089b6ffffff2edb20c88c010000fefa91f0c959bbc21d208700000000"
    "00b00000000000800000000000010000000000000009000000000000002c0100000000000007000000000000"
    "0005000000000000000000c07f0000000000000000000000006162630000000083464d000000000000fcce38"
    "000000000088bf0d009000000088bf0d00980000007c703ebb76010000d20400000000000004000000a00000"
    "000000000000000000e8030000000000002edb20c88c0100002ea77f44d60100000097d33000000000000000"
    "0000000000")
PYFLUSS_SOME = bytes.fromhex(
    "0103000700030006000000000000000000000000003800000000000000000000001700000020000000baffff"
    "ff00000000000000000000008061206d756368206c6f6e67657220737472696e6720c3a90020000000000000"
    "0000000000616263000000008307000000000000000000000000000000")


def _columns(value):
    return batchstats.statistics_columns(INFO, {"table.statistics.columns": value})


# -- known answers ---------------------------------------------------------------------------------
def test_all_columns_match_the_block_pyfluss_writes():
    cols = _columns("*")
    assert cols == [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17]  # not BYTES
    assert batchstats.statistics_of(_rows(), INFO.types, cols) == PYFLUSS_ALL


def test_named_columns_keep_their_order_and_match_pyfluss():
    cols = _columns("s, i32,f64")
    assert cols == [7, 3, 6]
    assert batchstats.statistics_of(_rows(), INFO.types, cols) == PYFLUSS_SOME


def test_decoding_the_known_answer():
    st = batchstats.decode_statistics(PYFLUSS_ALL, INFO.types)
    assert st.size == len(PYFLUSS_ALL)
    assert st.column(5)[2] != st.column(5)[2]  # f32 max is NaN (Java: NaN above every float)
    assert st.column(6) == (0, -0.0, 0.0) and math.copysign(1, st.column(6)[1]) < 0
    assert st.column(7) == (0, "a much longer string \u00e9", "abc")
    assert st.column(8) is None  # BYTES: no statistics
    assert st.column(11) == (0, (-315521755000, 1000), (1704164645678, 901000))
    assert st.column(15) == (0, -1234567890123456789012345, 9950000)
    assert st.column(16) == (2, None, None)  # all null
    assert st.column(17) == (1, 1000, 1000)  # time64(us) -> millis of day
    assert batchstats.statistics_size(PYFLUSS_ALL) == len(PYFLUSS_ALL)


def test_a_hand_built_block():
    types = [DataType(T.INTEGER), DataType(T.STRING)]
    block = batchstats.encode_statistics(types, [1, 0], [0, 3], ["hi", -2], ["hello world", 9])
    # version, count, indexes, null counts
    assert block[:15] == bytes.fromhex("01" "0200" "01000000" "00000000" "03000000")
    n = struct.unpack_from("<i", block, 15)[0]
    assert n == 8 + 16  # null bits (8) + 2 slots, "hi" inline
    assert block[19 + 8:19 + 16] == b"hi" + bytes(5) + b"\x82"
    assert block[19 + 16:19 + 20] == struct.pack("<i", -2)
    n2 = struct.unpack_from("<i", block, 19 + n)[0]
    assert n2 == 8 + 16 + 16  # "hello world" (11 bytes) padded to 16 in the variable part
    mx = block[23 + n:]
    assert struct.unpack_from("<q", mx, 8)[0] == (24 << 32) | 11
    assert mx[24:40] == b"hello world" + bytes(5)


# -- round trips -----------------------------------------------------------------------------------
ROUND_TRIPS = [
    (DataType(T.BOOLEAN), False, True),
    (DataType(T.TINYINT), -128, 127),
    (DataType(T.SMALLINT), -32768, 32767),
    (DataType(T.INTEGER), -(1 << 31), (1 << 31) - 1),
    (DataType(T.BIGINT), -(1 << 63), (1 << 63) - 1),
    (DataType(T.FLOAT), -1.5, 3.25),
    (DataType(T.DOUBLE), -1e300, 1e-300),
    (DataType(T.STRING), "", "\u00fc" * 40),
    (DataType(T.STRING), "1234567", "12345678"),
    (DataType(T.CHAR, length=3), "abc", "xyz"),
    (DataType(T.DECIMAL, precision=18, scale=4), -(10 ** 18) + 1, 10 ** 18 - 1),
    (DataType(T.DECIMAL, precision=38, scale=10), -(10 ** 38) + 1, 10 ** 38 - 1),
    (DataType(T.DECIMAL, precision=20, scale=0), -1, 128),
    (DataType(T.DATE), -719162, 2932896),
    (DataType(T.TIME, precision=3), 0, 86399999),
    (DataType(T.TIMESTAMP, precision=3), (-62135596800000, 0), (253402300799999, 0)),
    (DataType(T.TIMESTAMP, precision=9), (-1, 999999), (1704164645678, 901001)),
    (DataType(T.TIMESTAMP_LTZ, precision=3), (0, 0), (1, 0)),
    (DataType(T.TIMESTAMP_LTZ, precision=6), (-5, 1000), (5, 999000)),
]


@pytest.mark.parametrize("dtype,lo,hi", ROUND_TRIPS, ids=lambda v: getattr(v, "root", None) or "")
def test_round_trip(dtype, lo, hi):
    types = [DataType(T.INTEGER), dtype, dtype]
    block = batchstats.encode_statistics(types, [1, 2], [4, 0], [lo, None], [hi, None])
    st = batchstats.decode_statistics(block, types)
    assert st.column(1) == (4, lo, hi)
    assert st.column(2) == (0, None, None)
    assert st.column(0) is None
    assert batchstats.statistics_size(block) == len(block) == st.size


def test_collect_follows_java_for_floats_strings_and_char():
    rb = pa.record_batch({"f": pa.array([0.0, -0.0, float("nan"), None, 2.0], pa.float64()),
                          "s": pa.array(["b", "\u00e9", "a", None, "z"]),
                          "c": pa.array(["x", "y", None, None, None])})
    types = [DataType(T.DOUBLE), DataType(T.STRING), DataType(T.CHAR, length=1)]
    nulls, mins, maxs = batchstats.collect(rb, types, [0, 1, 2])
    assert nulls == [1, 1, 3]
    assert math.copysign(1, mins[0]) < 0 and mins[0] == 0.0 and math.isnan(maxs[0])
    assert (mins[1], maxs[1]) == ("a", "\u00e9")  # UTF-8 byte order: c3 a9 > 7a
    assert (mins[2], maxs[2]) == (None, None)  # Java's collector keeps no CHAR bounds


def test_empty_batch_has_no_block():
    assert batchstats.statistics_of(_rows().slice(0, 0), INFO.types, _columns("*")) == b""


def test_unknown_or_unsupported_columns_are_refused():
    with pytest.raises(ValueError, match="does not exist"):
        _columns("nope")
    with pytest.raises(ValueError, match="not supported"):
        _columns("by")
    assert batchstats.statistics_columns(INFO, {}) is None


# -- garbage ---------------------------------------------------------------------------------------
def _lying(block: bytes, at: int, value: int) -> bytes:
    return block[:at] + struct.pack("<i", value) + block[at + 4:]


@pytest.mark.parametrize("mutate,match", [
    (lambda b: b[:2], "too short"),
    (lambda b: b"\x02" + b[1:], "unknown statistics version"),
    (lambda b: b[:1] + struct.pack("<h", 0) + b[3:], "0 columns"),
    (lambda b: b[:1] + struct.pack("<h", 3000) + b[3:], "shorter than"),
    (lambda b: b[:3] + struct.pack("<h", 99) + b[5:], "outside a row"),
    (lambda b: _lying(b, 3 + 6 * 3, 1 << 20), "overruns"),
    (lambda b: _lying(b, 3 + 6 * 3, -8), "overruns"),
    (lambda b: b[:-1], "overruns"),
    (lambda b: _lying(b, 3 + 6 * 3, 8), "shorter than the"),
])
def test_a_block_that_lies_gets_a_clear_error(mutate, match):
    with pytest.raises(StatisticsError, match=match):
        batchstats.decode_statistics(mutate(PYFLUSS_SOME), INFO.types)


def test_a_long_string_pointing_outside_its_row():
    types = [DataType(T.STRING)]
    block = bytearray(batchstats.encode_statistics(types, [0], [0], ["long enough!"], ["long enough!"]))
    slot = 3 + 6 + 4 + 8
    struct.pack_into("<q", block, slot, (4000 << 32) | 12)
    with pytest.raises(StatisticsError, match="outside its row"):
        batchstats.decode_statistics(bytes(block), types)


# -- the filter ------------------------------------------------------------------------------------
def _leaf(function, field_id, *literals, literal_type=3):
    p = pb.PbPredicate(type=0)
    p.leaf.function = function
    p.leaf.field_id = field_id
    for v in literals:
        lit = p.leaf.literals.add(literal_type=literal_type, is_null=v is None)
        if v is not None:
            if literal_type == 8:
                lit.string_value = v
            elif literal_type == 6:
                lit.double_value = v
            else:
                lit.int_value = v
    return p


def _compound(function, *children):
    p = pb.PbPredicate(type=1)
    p.compound.function = function
    for c in children:
        p.compound.children.add().CopyFrom(c)
    return p


FSCHEMA = SchemaInfo.from_arrow(pa.schema([("id", pa.int32()), ("name", pa.string()), ("x", pa.float64()),
                                           ("nostats", pa.int32())]))


def _stats(lo, hi, nulls=0, names=("a", "m"), xs=(0.0, 1.0)):
    return BatchStatistics([0, 1, 2], [nulls, 0, 0], [lo, names[0], xs[0]], [hi, names[1], xs[1]])


@pytest.mark.parametrize("function,literals,expect", [
    (0, [5], True), (0, [11], False), (0, [0], False),          # =
    (1, [5], True),                                              # != (min 1, max 10)
    (2, [1], False), (2, [2], True),                             # <
    (3, [1], True), (3, [0], False),                             # <=
    (4, [10], False), (4, [9], True),                            # >
    (5, [10], True), (5, [11], False),                           # >=
    (6, [], False), (7, [], True),                               # IS NULL / IS NOT NULL
    (11, [0, 20], False), (11, [0, 7], True),                    # IN
    (12, [5], True),                                             # NOT IN
    (0, [None], False),                                          # null literal matches nothing
])
def test_leaf_rules(function, literals, expect):
    f = BatchFilter.from_pb(_leaf(function, 0, *literals), FSCHEMA, 0)
    assert f.may_match(10, _stats(1, 10), FSCHEMA) is expect


def test_not_equal_and_not_in_rule_out_only_a_single_value_batch():
    for function in (1, 12):
        f = BatchFilter.from_pb(_leaf(function, 0, 4), FSCHEMA, 0)
        assert not f.may_match(3, _stats(4, 4), FSCHEMA)
        assert f.may_match(3, _stats(4, 5), FSCHEMA)


def test_all_null_column():
    st = BatchStatistics([0], [5], [None], [None])
    assert not BatchFilter.from_pb(_leaf(0, 0, 1), FSCHEMA, 0).may_match(5, st, FSCHEMA)
    assert BatchFilter.from_pb(_leaf(6, 0), FSCHEMA, 0).may_match(5, st, FSCHEMA)
    assert not BatchFilter.from_pb(_leaf(7, 0), FSCHEMA, 0).may_match(5, st, FSCHEMA)


def test_a_column_without_statistics_never_rules_a_batch_out():
    for function, lits in ((0, [1]), (2, [-100]), (6, []), (7, [])):
        f = BatchFilter.from_pb(_leaf(function, 3, *lits), FSCHEMA, 0)
        assert f.may_match(10, _stats(1, 10), FSCHEMA)
    assert BatchFilter.from_pb(_leaf(0, 0, 99), FSCHEMA, 0).may_match(10, None, FSCHEMA)  # no block


def test_strings_and_compounds():
    def starts(p):
        return BatchFilter.from_pb(_leaf(8, 1, p, literal_type=8), FSCHEMA, 0)

    assert starts("c").may_match(3, _stats(1, 2, names=("b", "d")), FSCHEMA)
    assert not starts("e").may_match(3, _stats(1, 2, names=("b", "d")), FSCHEMA)
    assert starts("d").may_match(3, _stats(1, 2, names=("b", "dz")), FSCHEMA)
    for function in (9, 10):  # CONTAINS, ENDS WITH: never pruned
        f = BatchFilter.from_pb(_leaf(function, 1, "zzz", literal_type=8), FSCHEMA, 0)
        assert f.may_match(3, _stats(1, 2), FSCHEMA)
    low, high = _leaf(2, 0, 3), _leaf(4, 0, 50)
    st = _stats(10, 20)
    assert not BatchFilter.from_pb(_compound(1, low, high), FSCHEMA, 0).may_match(3, st, FSCHEMA)
    assert not BatchFilter.from_pb(_compound(0, _leaf(0, 0, 15), high), FSCHEMA, 0).may_match(3, st, FSCHEMA)
    assert BatchFilter.from_pb(_compound(1, _leaf(0, 0, 15), high), FSCHEMA, 0).may_match(3, st, FSCHEMA)


def test_float_order_is_javas():
    nan_max = _stats(1, 2, xs=(-1.0, float("nan")))
    assert BatchFilter.from_pb(_leaf(4, 2, 1e300, literal_type=6), FSCHEMA, 0).may_match(3, nan_max, FSCHEMA)
    zero = _stats(1, 2, xs=(0.0, 0.0))
    assert not BatchFilter.from_pb(_leaf(0, 2, -0.0, literal_type=6), FSCHEMA, 0).may_match(3, zero, FSCHEMA)


def test_unusable_predicates_are_refused():
    with pytest.raises(FilterError, match="field id"):
        BatchFilter.from_pb(_leaf(0, 42, 1), FSCHEMA, 0)
    with pytest.raises(FilterError, match="does not match"):
        BatchFilter.from_pb(_leaf(0, 0, "x", literal_type=8), FSCHEMA, 0)


def test_a_batch_of_a_schema_without_the_column_may_match():
    f = BatchFilter.from_pb(_leaf(0, 3, 1), FSCHEMA, 0)
    older = SchemaInfo(FSCHEMA.columns[:3])
    assert f.may_match(3, BatchStatistics([0], [0], [5], [5]), older)
