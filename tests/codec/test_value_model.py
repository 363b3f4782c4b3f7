"""append() and upsert() accept and refuse the same Python values, with the same words.

One table of good and bad values for every Fluss type goes through the append path (the Arrow
row builder of ``codec.columns``, Cython and pure) and through the upsert path (``RowShaper`` +
the CompactedRow / IndexedRow encoders of ``codec.rows.compacted`` / ``indexed``, Cython and pure, and the upsert error
frame). Both must accept the same values and, for the refused ones, say the same thing about the
value; only the frame differs (``table 't', column 'c' (type), row 0:`` for appends, pyfluss's
``Field 'c':`` for upserts). The suite runs this file with and without the extensions.
"""
import datetime as dt
import decimal
import importlib

import numpy as np
import pandas as pd
import pytest

from fluss_fast import datatypes as T
from fluss_fast.client.write.upsert import RowShaper
from fluss_fast.codec.rows import columns, compacted, indexed
from fluss_fast.datatypes import Column, DataType, RowField, SchemaInfo
from fluss_fast.errors import FlussError

D = decimal.Decimal
UTC = dt.UTC
PLUS2 = dt.timezone(dt.timedelta(hours=2))


def _t(root, nullable=True, **kw):
    return DataType(root, nullable, **kw)


INT = _t(T.INTEGER)
ROW = _t(T.ROW, fields=(RowField("a", INT), RowField("c", _t(T.STRING, False))))

# (type, [values]): each value is tried alone in the column "c" of a table (id INT NOT NULL, c)
CASES = [
    (_t(T.BOOLEAN), [True, False, np.bool_(True), 1, 0, "true", None]),
    (_t(T.TINYINT), [127, -128, 128, -129, True, np.bool_(False), np.int8(5), 1.0, "1", D(1)]),
    (_t(T.SMALLINT), [32767, -32768, 32768, -40000, False]),
    (INT, [2 ** 31 - 1, -2 ** 31, 2 ** 31, np.int64(7), 1.5, "7", b"7", True]),
    (_t(T.BIGINT), [2 ** 63 - 1, -2 ** 63, 2 ** 63, np.uint64(2 ** 63), True]),
    (_t(T.FLOAT), [1.5, 1, float("nan"), float("inf"), np.float32(2.5), D("1.5"), 10 ** 400, "1.5",
                   b"x", bytearray(b"1"), True]),
    (_t(T.DOUBLE), [1.5, -0.0, float("nan"), 7, "x", [1.0], None]),
    (_t(T.STRING), ["é", "", "a" * 300, b"x", 5, "\ud800", ["x"]]),
    (_t(T.CHAR, length=3), ["abc", "ab", 1]),
    (_t(T.BYTES), [b"x", bytearray(b"xy"), memoryview(b"z"), "x", 5, [1]]),
    (_t(T.BINARY, length=3), [b"abc", bytearray(b"abc"), "abc", 3]),
    (_t(T.DECIMAL, precision=5, scale=2), [D("1.005"), D("-1.005"), D("999.994"), D("999.995"),
                                           D("123456"), 7, -7, 1000, 1.5, True, "1.5", D("NaN"),
                                           D("Infinity"), D("-Infinity"), D("1E+120"), D("1E-120")]),
    (_t(T.DECIMAL, precision=20, scale=0), [D("12345678901234567890"), D("123456789012345678901"),
                                            10 ** 19, -(10 ** 20)]),
    (_t(T.DECIMAL, precision=38, scale=10), [D("-1234567890123456789012345678.0123456789"),
                                             D("1" * 29), D("0.00000000005")]),
    (_t(T.DATE), [dt.date(2020, 2, 29), dt.date(1, 1, 1), dt.datetime(2020, 1, 1), "2020-01-01",
                  pd.Timestamp("2020-01-01"), 18000]),
    (_t(T.TIME, precision=3), [dt.time(1, 2, 3, 4000), dt.time(23, 59, 59, 999000),
                               dt.time(0, 0, 0, 1), 5, dt.datetime(2020, 1, 1, 1)]),
    (_t(T.TIMESTAMP, precision=3), [dt.datetime(2020, 1, 1, 1, 2, 3, 4567), dt.datetime(1900, 1, 1),
                                    dt.datetime(2020, 1, 1, tzinfo=UTC),
                                    dt.datetime(2020, 1, 1, tzinfo=PLUS2),
                                    pd.Timestamp("2020-01-01 00:00:00.123456789"),
                                    pd.Timestamp("2020-01-01", tz="UTC"),
                                    np.datetime64("2020-01-01T00:00:00.5"), np.datetime64("NaT"),
                                    dt.date(2020, 1, 1), "2020-01-01", 12345]),
    (_t(T.TIMESTAMP, precision=6), [dt.datetime(2020, 1, 1, 1, 2, 3, 4567)]),
    (_t(T.TIMESTAMP_LTZ, precision=6), [dt.datetime(2020, 1, 1, tzinfo=UTC),
                                        dt.datetime(2020, 1, 1, tzinfo=PLUS2),
                                        dt.datetime(2020, 1, 1), pd.Timestamp("2020-01-01", tz="UTC"),
                                        pd.Timestamp("2020-01-01"), dt.date(2020, 1, 1), 12345]),
    (_t(T.TIMESTAMP_LTZ, precision=3), [dt.datetime(1960, 1, 1, 0, 0, 0, 1500, tzinfo=PLUS2)]),
    (_t(T.ARRAY, element=INT), [[1, None, 3], (1, 2), [], np.array([1, 2]), "abc", b"ab", [1, "x"],
                                {1: 2}, {1, 2}, 5, [True], [2 ** 31]]),
    (_t(T.ARRAY, element=_t(T.STRING, False)), [["a"], ["a", None], [b"a"]]),
    (_t(T.ARRAY, element=_t(T.ARRAY, element=_t(T.DOUBLE))), [[[1.0], None, []], [["x"]], ["ab"]]),
    (_t(T.MAP, key=_t(T.STRING), value=INT), [{"a": 1, "b": None}, [("a", 1)], [["a", 1]], {},
                                              {None: 1}, [("a", 1, 2)], ["ab"], 5, "ab", {"a": "x"},
                                              {1: 1}]),
    (_t(T.MAP, key=_t(T.INTEGER, False), value=_t(T.STRING, False)), [{1: "x"}, {1: None}]),
    (ROW, [{"a": 1, "c": "x"}, {"c": "x"}, (1, "x"), [None, "x"], {"a": 1}, {"c": None},
           {"c": "x", "zz": 1}, {5: 1, "c": "x"}, (1,), (1, None), "x", 5, {"a": "1", "c": "x"},
           (1, b"x")]),
    (_t(T.ARRAY, element=ROW), [[{"c": "x"}, None], [{"a": 1}], [("x", "y")]]),
]

# Limits of one storage format, not of the value: an Arrow nanosecond timestamp ends in 2262 and
# Arrow's fixed-size binary needs exactly n bytes (row formats store what Java stores); an
# IndexedRow's CHAR(n) slot holds n bytes.
FORMAT_LIMITS = [
    (_t(T.TIMESTAMP, precision=9), dt.datetime(2300, 1, 1), "append", "timestamp out of range"),
    (_t(T.BINARY, length=3), b"ab", "append", r"BINARY\(3\) needs exactly 3 bytes, got 2"),
    (_t(T.CHAR, length=2), "abc", "INDEXED", "3 bytes do not fit in 2"),
]


def _impls(module, name):
    pure = getattr(module, name + "_py")
    fast = getattr(module, name)
    return [pure] if fast is pure else [pure, fast]


BUILDERS = _impls(columns, "RowBatchBuilder")
ENCODERS = [("COMPACTED", c) for c in _impls(compacted, "CompactedRowEncoder")] + \
           [("INDEXED", c) for c in _impls(indexed, "IndexedRowEncoder")]


def _schema(ty):
    return SchemaInfo((Column("id", _t(T.INTEGER, False)), Column("c", ty)), primary_key=("id",))


def _append(builder_cls, ty, value):
    """None when accepted, else what the message says about the value."""
    b = builder_cls(_schema(ty), "db.t")
    try:
        b.append({"id": 1, "c": value})
    except FlussError as e:
        frame = f"table 'db.t', column 'c' ({ty}), row 0: "
        text = e.message
        assert text.startswith(frame), text
        return text[len(frame):]
    b.build().validate(full=True)
    return None


def _upsert(fmt, encoder_cls, ty, value):
    schema = _schema(ty)
    shaper = RowShaper(schema, range(2), True)
    encoder = encoder_cls(schema.types, schema.names)
    try:
        encoder.encode(shaper.values({"id": 1, "c": value}))
    except (TypeError, ValueError, OverflowError) as e:
        err = shaper.encode_error(e, None, schema)
        text = err.message
        assert text.startswith("Field 'c': "), text
        return text[len("Field 'c': "):]
    return None


PARAMS = [(ty, v) for ty, values in CASES for v in values if v is not None]


@pytest.mark.parametrize("ty,value", PARAMS, ids=[f"{i}-{ty.root}" for i, (ty, _) in enumerate(PARAMS)])
def test_append_and_upsert_accept_and_refuse_alike(ty, value):
    said = {}
    for b in BUILDERS:
        said[f"append/{b.__module__}"] = _append(b, ty, value)
    for fmt, enc in ENCODERS:
        said[f"upsert/{fmt}/{enc.__module__}"] = _upsert(fmt, enc, ty, value)
    assert len(set(said.values())) == 1, said


def test_the_table_has_both_outcomes_for_every_type():
    for ty, values in CASES:
        outcomes = {_append(BUILDERS[0], ty, v) is None for v in values if v is not None}
        if ty.root not in (T.TIMESTAMP, T.TIMESTAMP_LTZ) or len(values) > 1:
            assert outcomes == {True, False}, ty


@pytest.mark.parametrize("ty,value,where,needle", FORMAT_LIMITS)
def test_format_limits_are_the_only_differences(ty, value, where, needle):
    for b in BUILDERS:
        msg = _append(b, ty, value)
        assert (msg is not None) == (where == "append")
        if where == "append":
            assert pytest.importorskip("re").search(needle, msg), msg
    for fmt, enc in ENCODERS:
        msg = _upsert(fmt, enc, ty, value)
        assert (msg is not None) == (where == fmt), (fmt, msg)
        if msg is not None:
            assert needle in msg


def test_bool_for_int_uses_pyflusss_hint_and_kinds_of_errors():
    for b in BUILDERS:
        assert "use 0 or 1 explicitly" in _append(b, INT, True)
    for _fmt, enc in ENCODERS:
        with pytest.raises(TypeError):  # wrong kind: a TypeError (also the codec's ValueError)
            enc([INT], ["c"]).encode([True])
        with pytest.raises(ValueError):
            enc([INT], ["c"]).encode([2 ** 31])


def test_row_missing_field_words_match_pyfluss():
    ty = _t(T.ROW, fields=(RowField("a", INT), RowField("b", _t(T.INTEGER, False))))
    msgs = {_append(b, ty, {"a": 1}) for b in BUILDERS}
    msgs |= {_upsert(fmt, enc, ty, {"a": 1}) for fmt, enc in ENCODERS}
    assert msgs == {"Missing value for non-nullable row field 'b'"}
    arr = {_upsert(fmt, enc, _t(T.ARRAY, element=INT), "no") for fmt, enc in ENCODERS}
    assert arr == {"Expected sequence for Array column, got str 'no'"}


def test_extensions_are_compared_when_built():
    from fluss_fast.codec import NO_EXTENSIONS
    if NO_EXTENSIONS:
        assert len(BUILDERS) == 1 and len(ENCODERS) == 2
    else:
        importlib.import_module("fluss_fast.codec.rows._compacted")
        assert len(BUILDERS) == 2 and len(ENCODERS) == 4
