"""Filter predicates: pyfluss-identical construction/repr, binding checks, exact Arrow evaluation."""
import datetime as dt
import decimal

import fluss
import pyarrow as pa
import pytest

from fluss_fast.client.predicate import ColumnRef, Predicate, bind_predicate, col
from fluss_fast.datatypes import SchemaInfo
from fluss_fast.errors import FlussError

UTC = dt.UTC

BUILDERS = [
    lambda c: (c("id") >= 200) & c("name").starts_with("high"),
    lambda c: c("a").is_in([1, "x"]),
    lambda c: c("a").not_in([]),
    lambda c: c("a") == None,  # noqa: E711 - pyfluss builds an Equal(Null) leaf
    lambda c: (c("a") < 1) | (c("b") <= 2.5) | (c("c") > b"x"),
    lambda c: c("a") | (c("b") == 1) if False else (c("a") == 1) | ((c("b") == 2) | (c("c") == 3)),
    lambda c: (c("a") == 1) & ((c("b") == 2) | (c("c") == 3)),
    lambda c: ((c("a") == 1) & (c("b") == 2)).and_((c("a") == 1) & (c("b") == 2)),
    lambda c: ((c("a") == 1) & (c("b") == 2)).or_(c("z").is_null()),
    lambda c: c("d") > dt.date(2020, 1, 2),
    lambda c: c("d") == dt.date(1960, 1, 1),
    lambda c: c("d") > decimal.Decimal("1.5"),
    lambda c: c("d") == decimal.Decimal("-12345678901234567890.123"),
    lambda c: c("d") == decimal.Decimal("0.00"),
    lambda c: c("d") == decimal.Decimal("-7"),
    lambda c: c("t") > dt.datetime(2020, 1, 1, 1, 2, 3, 123456),
    lambda c: c("t") > dt.datetime(1960, 1, 1, 0, 0, 0, 1),
    lambda c: c("t") > dt.datetime(2020, 1, 1, 1, 2, 3, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    lambda c: c("t") > dt.time(1, 2, 3, 123456),
    lambda c: c("a") == float("nan"),
    lambda c: c("a") == 1e20,
    lambda c: c("a") == -5,
    lambda c: c("a") == True,  # noqa: E712
    lambda c: c("s") == 'a"b\\c\n',
    lambda c: c("a") > 1,
    lambda c: c("a").is_not_null(),
    lambda c: c("s").contains("x") | c("s").ends_with("y"),
    lambda c: c("a").greater_or_equal(3) & c("a").less_or_equal(4) & c("a").not_equal(5),
    lambda c: c("a").less_than(3) | c("a").greater_than(4) | c("a").equal(5),
]


@pytest.mark.parametrize("build", BUILDERS)
def test_repr_matches_pyfluss(build):
    assert repr(build(col)) == repr(build(fluss.col))


def test_column_ref_surface():
    assert repr(col("x")) == repr(fluss.col("x")) == "ColumnRef(x)"
    assert ColumnRef("z").name == "z"
    with pytest.raises(TypeError):
        hash(col("x"))
    with pytest.raises(TypeError, match="no truth value"):
        bool(col("x") == 1)
    with pytest.raises(TypeError, match="no truth value"):
        bool(col("x"))
    with pytest.raises(TypeError, match="Unsupported filter literal of type 'list'"):
        col("a") == [1]  # noqa: B015
    with pytest.raises(TypeError, match="bytearray"):
        col("a") == bytearray(b"x")  # noqa: B015
    with pytest.raises(TypeError):
        col("a").starts_with(1)
    with pytest.raises(TypeError):
        col("a").is_in(5)
    with pytest.raises(TypeError):
        col(5)
    with pytest.raises(TypeError):
        (col("a") == 1) & 1  # noqa: B018
    with pytest.raises(OverflowError):
        col("a") == 2 ** 70  # noqa: B015
    with pytest.raises(FlussError):
        col("a") == decimal.Decimal("NaN")  # noqa: B015
    with pytest.raises(TypeError):
        Predicate()


def test_predicates_pickle():
    import pickle

    p = (col("a") >= 3) & col("s").is_in(["x", None])
    assert repr(pickle.loads(pickle.dumps(p))) == repr(p)


SCHEMA = SchemaInfo.from_arrow(pa.schema([
    ("i", pa.int32()), ("t8", pa.int8()), ("big", pa.int64()), ("f", pa.float32()), ("g", pa.float64()),
    ("s", pa.string()), ("by", pa.binary()), ("fb", pa.binary(2)), ("b", pa.bool_()),
    ("d", pa.date32()), ("tm", pa.time32("ms")), ("ts", pa.timestamp("us")),
    ("ts0", pa.timestamp("s")), ("tsn", pa.timestamp("ns")), ("ltz", pa.timestamp("ms", tz="UTC")),
    ("dec", pa.decimal128(10, 2)), ("wide", pa.decimal128(30, 3)), ("arr", pa.list_(pa.int32())),
]))


def _rows():
    base = dt.datetime(2024, 5, 6, 7, 8, 9)
    rows = []
    for k in range(40):
        null = k % 7 == 3
        rows.append({
            "i": None if null else k - 20,
            "t8": None if k % 5 == 0 else k - 20,
            "big": k * 10 ** 12,
            "f": None if null else k / 4,
            "g": None if k % 6 == 1 else (k - 10) * 0.5,
            "s": None if k % 9 == 4 else ["alpha", "beta", "gamma", "hi-fi", "", "hiho"][k % 6] + str(k % 3),
            "by": None if null else bytes([k % 4, 1]),
            "fb": None if null else bytes([k % 3, 2]),
            "b": None if null else k % 2 == 0,
            "d": None if null else dt.date(2024, 1, 1) + dt.timedelta(days=k),
            "tm": None if null else dt.time(k % 24, k, 0, (k * 1000) % 1_000_000),
            "ts": None if null else base + dt.timedelta(microseconds=k * 123457),
            "ts0": None if null else base + dt.timedelta(seconds=k),
            "tsn": None if null else base + dt.timedelta(microseconds=k * 17),
            "ltz": None if null else (base + dt.timedelta(milliseconds=k * 250)).replace(tzinfo=UTC),
            "dec": None if null else decimal.Decimal(k * 25 - 300).scaleb(-2),
            "wide": None if null else decimal.Decimal(k * 10 ** 20 + 7).scaleb(-3),
            "arr": [k],
        })
    return rows


ROWS = _rows()
BATCH = pa.RecordBatch.from_pylist(ROWS, schema=SCHEMA.to_arrow())
POSITIONS = {i: i for i in range(len(SCHEMA.columns))}
BASE = dt.datetime(2024, 5, 6, 7, 8, 9)

# (predicate, python reference over a row dict; None means "unknown", which never matches)
CASES = [
    (col("i") > 3, lambda r: None if r["i"] is None else r["i"] > 3),
    (col("i") >= -2, lambda r: None if r["i"] is None else r["i"] >= -2),
    (col("i") < 0, lambda r: None if r["i"] is None else r["i"] < 0),
    (col("i") <= 0, lambda r: None if r["i"] is None else r["i"] <= 0),
    (col("i") == 5, lambda r: None if r["i"] is None else r["i"] == 5),
    (col("i") != 5, lambda r: None if r["i"] is None else r["i"] != 5),
    (col("t8") == -20, lambda r: None if r["t8"] is None else r["t8"] == -20),
    (col("big") >= 10 ** 13, lambda r: r["big"] >= 10 ** 13),
    (col("f") > 2, lambda r: None if r["f"] is None else r["f"] > 2),
    (col("f") == 2.25, lambda r: None if r["f"] is None else r["f"] == 2.25),
    (col("g") <= 1.5, lambda r: None if r["g"] is None else r["g"] <= 1.5),
    (col("s") == "beta1", lambda r: None if r["s"] is None else r["s"] == "beta1"),
    (col("s") > "beta", lambda r: None if r["s"] is None else r["s"] > "beta"),
    (col("s").starts_with("hi"), lambda r: None if r["s"] is None else r["s"].startswith("hi")),
    (col("s").ends_with("1"), lambda r: None if r["s"] is None else r["s"].endswith("1")),
    (col("s").contains("ph"), lambda r: None if r["s"] is None else "ph" in r["s"]),
    (col("s").contains(""), lambda r: None if r["s"] is None else True),
    (col("s").is_null(), lambda r: r["s"] is None),
    (col("s").is_not_null(), lambda r: r["s"] is not None),
    (col("s").is_in(["alpha0", "gamma2", "nope"]),
     lambda r: None if r["s"] is None else r["s"] in ("alpha0", "gamma2")),
    (col("s").not_in(["alpha0", "gamma2"]), lambda r: None if r["s"] is None else r["s"] not in ("alpha0", "gamma2")),
    (col("s").is_in([]), lambda r: False),
    (col("s").not_in([]), lambda r: None if r["s"] is None else True),
    (col("i").is_in([1, None, 3]), lambda r: r["i"] in (1, 3) or None),
    (col("i").not_in([1, None]), lambda r: None if r["i"] is None or r["i"] != 1 else False),
    (col("by") == bytes([2, 1]), lambda r: None if r["by"] is None else r["by"] == bytes([2, 1])),
    (col("by") > bytes([1]), lambda r: None if r["by"] is None else r["by"] > bytes([1])),
    (col("fb") == bytes([1, 2]), lambda r: None if r["fb"] is None else r["fb"] == bytes([1, 2])),
    (col("fb") == b"\x01", lambda r: None if r["fb"] is None else False),
    (col("b") == True, lambda r: None if r["b"] is None else r["b"] is True),  # noqa: E712
    (col("d") >= dt.date(2024, 1, 20), lambda r: None if r["d"] is None else r["d"] >= dt.date(2024, 1, 20)),
    (col("tm") < dt.time(10, 10), lambda r: None if r["tm"] is None else r["tm"] < dt.time(10, 10)),
    (col("tm") == dt.time(5, 5, 0, 5000), lambda r: None if r["tm"] is None else r["tm"] == dt.time(5, 5, 0, 5000)),
    (col("ts") > BASE + dt.timedelta(microseconds=2_000_001),
     lambda r: None if r["ts"] is None else r["ts"] > BASE + dt.timedelta(microseconds=2_000_001)),
    (col("ts0") >= BASE + dt.timedelta(seconds=9, microseconds=1),
     lambda r: None if r["ts0"] is None else r["ts0"] >= BASE + dt.timedelta(seconds=9, microseconds=1)),
    (col("tsn") == BASE + dt.timedelta(microseconds=17 * 9),
     lambda r: None if r["tsn"] is None else r["tsn"] == BASE + dt.timedelta(microseconds=17 * 9)),
    (col("ltz") < (BASE + dt.timedelta(seconds=3)).replace(tzinfo=UTC),
     lambda r: None if r["ltz"] is None else r["ltz"] < (BASE + dt.timedelta(seconds=3)).replace(tzinfo=UTC)),
    (col("ltz") >= (BASE + dt.timedelta(hours=2, seconds=3)).replace(tzinfo=dt.timezone(dt.timedelta(hours=2))),
     lambda r: None if r["ltz"] is None else r["ltz"] >= (BASE + dt.timedelta(seconds=3)).replace(tzinfo=UTC)),
    (col("dec") > decimal.Decimal("1.5"), lambda r: None if r["dec"] is None else r["dec"] > decimal.Decimal("1.5")),
    (col("dec") == decimal.Decimal("-3"), lambda r: None if r["dec"] is None else r["dec"] == decimal.Decimal("-3")),
    (col("wide") >= decimal.Decimal("20" + "0" * 20),
     lambda r: None if r["wide"] is None else r["wide"] >= decimal.Decimal("20" + "0" * 20)),
    ((col("i") > 0) & col("s").starts_with("g"),
     lambda r: _and(None if r["i"] is None else r["i"] > 0, None if r["s"] is None else r["s"].startswith("g"))),
    ((col("i") > 10) | col("s").is_null(),
     lambda r: _or(None if r["i"] is None else r["i"] > 10, r["s"] is None)),
    ((col("i") > 10) | (col("g") < 0) | (col("b") == False),  # noqa: E712
     lambda r: _or(_or(None if r["i"] is None else r["i"] > 10, None if r["g"] is None else r["g"] < 0),
                   None if r["b"] is None else r["b"] is False)),
]


def _and(a, b):
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or(a, b):
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


@pytest.mark.parametrize("pred,ref", CASES, ids=[repr(p)[:80] for p, _ in CASES])
def test_mask_is_exact(pred, ref):
    bound = bind_predicate(pred, SCHEMA)
    got = bound.mask(BATCH, POSITIONS).to_pylist()
    expected = [ref(r) is True for r in ROWS]
    assert got == expected
    assert bound.mask(BATCH.slice(7, 13), POSITIONS).to_pylist() == expected[7:20]


def test_binding_errors_name_the_column():
    cases = [
        (col("nope") == 1, "filter column 'nope' does not exist"),
        (col("i").starts_with("x"), "column 'i'"),
        (col("i") == "x", "does not match column 'i'"),
        (col("t8") == 300, "out of range for column 't8'"),
        (col("i") == 1.5, "does not match column 'i'"),
        (col("f") == 0.1, "cannot be represented exactly by column 'f'"),
        (col("dec") == decimal.Decimal("1.234"), "does not fit column 'dec'"),
        (col("dec") == decimal.Decimal("123456789.5"), "does not fit column 'dec'"),
        (col("ts") == dt.datetime(2020, 1, 1, tzinfo=UTC), "does not match column 'ts'"),
        (col("ltz") == dt.datetime(2020, 1, 1), "does not match column 'ltz'"),
        (col("arr") == 1, "column 'arr'"),
        (col("i") == None, "cannot take a null literal"),  # noqa: E711
        (col("d") == dt.datetime(2020, 1, 1), "does not match column 'd'"),
    ]
    for pred, msg in cases:
        with pytest.raises(FlussError, match=msg):
            bind_predicate(pred, SCHEMA)


def test_to_pb_uses_field_ids_and_literal_types():
    bound = bind_predicate((col("s") == "x") | (col("dec") >= decimal.Decimal("2.5"))
                           | (col("wide") == decimal.Decimal("-1")) | col("i").is_in([1, 2])
                           | (col("ltz") > dt.datetime(1970, 1, 1, 0, 0, 1, 500, tzinfo=UTC)), SCHEMA)
    out = bound.to_pb()
    assert out.type == 1 and out.compound.function == 1
    kids = out.compound.children
    assert [k.leaf.field_id for k in kids] == [5, 15, 16, 0, 14]
    assert kids[0].leaf.literals[0].literal_type == 8 and kids[0].leaf.literals[0].string_value == "x"
    assert kids[1].leaf.function == 5 and kids[1].leaf.literals[0].decimal_value == 250
    assert kids[2].leaf.literals[0].decimal_bytes == b"\xfc\x18"  # -1000 big-endian two's complement
    assert kids[3].leaf.function == 11 and [x.int_value for x in kids[3].leaf.literals] == [1, 2]
    ltz = kids[4].leaf.literals[0]
    assert (ltz.literal_type, ltz.timestamp_millis_value, ltz.timestamp_nano_of_millis_value) == (13, 1000, 500000)
    assert out.IsInitialized()
    assert bound.columns == [0, 5, 14, 15, 16]
