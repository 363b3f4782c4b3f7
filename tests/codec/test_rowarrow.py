"""rowarrow: stored CompactedRow / IndexedRow values -> Arrow, both twins.

The reference is the old path: decode each row to Python values with ``rows`` and build the batch
with ``columns.RowBatchBuilder``; the new codec must give an equal RecordBatch.
"""
from __future__ import annotations

import array
import datetime as dt
import decimal
import random
import struct
import types

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluss_fast import datatypes as D
from fluss_fast.codec import LOADED, NO_EXTENSIONS
from fluss_fast.codec.kv.valuebatch import build_value_batch
from fluss_fast.codec.rows import rowarrow as RA
from fluss_fast.codec.rows.columns import RowBatchBuilder_py
from fluss_fast.codec.rows.compacted import CompactedRowDecoder_py, CompactedRowEncoder_py
from fluss_fast.codec.rows.indexed import IndexedRowDecoder_py, IndexedRowEncoder_py
from fluss_fast.codec.wire.varint import encode_varint
from fluss_fast.datatypes import Column, RowField, SchemaInfo
from fluss_fast.datatypes import DataType as T

UTC = dt.UTC
FMTS = ["COMPACTED", "INDEXED"]

PURE = types.SimpleNamespace(name="py", RTA=RA.RowsToArrow_py)
if LOADED.get("_rowarrow"):
    from fluss_fast.codec.rows import _rowarrow as X
    IMPLS = [PURE, types.SimpleNamespace(name="ext", RTA=X.RowsToArrow)]
else:  # pragma: no cover - a build without a compiler
    IMPLS = [PURE]


@pytest.fixture(params=IMPLS, ids=lambda i: i.name)
def impl(request):
    return request.param


def schema_of(types_, names=None, ids=True) -> SchemaInfo:
    names = names or [f"c{i}" for i in range(len(types_))]
    return SchemaInfo(tuple(Column(n, t, None, i if ids else None)
                            for i, (n, t) in enumerate(zip(names, types_, strict=True))))


def encoder(fmt, schema):
    cls = CompactedRowEncoder_py if fmt == "COMPACTED" else IndexedRowEncoder_py
    return cls(schema.types, schema.names)


def value(schema_id, row: bytes) -> bytes:
    return struct.pack("<h", schema_id) + row


def reference(fmt, schema, encoded_rows) -> pa.RecordBatch:
    """The old path: rows -> Python lists -> RowBatchBuilder."""
    cls = CompactedRowDecoder_py if fmt == "COMPACTED" else IndexedRowDecoder_py
    dec = cls(schema.types, schema.names)
    b = RowBatchBuilder_py(schema, "t")
    b.extend([dec.decode(r) for r in encoded_rows])
    return b.build()


# ------------------------------------------------------------------ every type, known answers
def _ts(p):
    return T(D.TIMESTAMP, precision=p)


def _ltz(p):
    return T(D.TIMESTAMP_LTZ, precision=p)


ALL_TYPES = [
    T(D.BOOLEAN), T(D.TINYINT), T(D.SMALLINT), T(D.INTEGER), T(D.BIGINT), T(D.FLOAT), T(D.DOUBLE),
    T(D.CHAR, length=5), T(D.STRING), T(D.BINARY, length=4), T(D.BYTES),
    T(D.DECIMAL, precision=10, scale=2), T(D.DECIMAL, precision=18, scale=0), T(D.DECIMAL, precision=38, scale=10),
    T(D.DECIMAL, precision=20, scale=0), T(D.DATE),
    T(D.TIME, precision=0), T(D.TIME, precision=3), T(D.TIME, precision=6), T(D.TIME, precision=9),
    _ts(0), _ts(3), _ts(6), _ts(9), _ltz(0), _ltz(3), _ltz(6), _ltz(9),
    T(D.ARRAY, element=T(D.STRING)),
    T(D.MAP, key=T(D.STRING, False), value=T(D.BIGINT)),
    T(D.ROW, fields=(RowField("x", T(D.INTEGER)), RowField("y", T(D.ARRAY, element=T(D.DOUBLE))))),
]
NOT_NULL_FIRST = [T(D.BIGINT, False)] + ALL_TYPES

MIN_ROW = [
    -(1 << 63), False, -128, -(1 << 15), -(1 << 31), -(1 << 63), -3.5e38, -1.7976931348623157e308,
    "", "", b"\x01abc", b"",
    decimal.Decimal("-99999999.99"), decimal.Decimal(-(10 ** 18 - 1)),
    decimal.Decimal("-9999999999999999999999999999.9999999999"), decimal.Decimal(-(10 ** 20 - 1)),
    dt.date(1, 1, 1), dt.time(0, 0), dt.time(0, 0), dt.time(0, 0), dt.time(0, 0),
    dt.datetime(1, 1, 1), dt.datetime(1, 1, 1), dt.datetime(1, 1, 1), dt.datetime(1677, 9, 22),
    dt.datetime(1, 1, 1, tzinfo=UTC), dt.datetime(1, 1, 1, tzinfo=UTC), dt.datetime(1, 1, 1, tzinfo=UTC),
    dt.datetime(1677, 9, 22, tzinfo=UTC),
    [], [], {"x": None, "y": []},
]
MAX_ROW = [
    (1 << 63) - 1, True, 127, (1 << 15) - 1, (1 << 31) - 1, (1 << 63) - 1, 3.5e38, 1.7976931348623157e308,
    "ab\u00e9", "z" * 300 + "\u4e2d\U0001f600", b"\xff\x00\xfe\x7f", bytes(range(256)),
    decimal.Decimal("99999999.99"), decimal.Decimal(10 ** 18 - 1),
    decimal.Decimal("9999999999999999999999999999.9999999999"), decimal.Decimal(10 ** 20 - 1),
    dt.date(9999, 12, 31), dt.time(23, 59, 59), dt.time(23, 59, 59, 999000), dt.time(23, 59, 59, 999000),
    dt.time(23, 59, 59, 999000),
    dt.datetime(9999, 12, 31, 23, 59, 59), dt.datetime(9999, 12, 31, 23, 59, 59, 999000),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(2262, 4, 11, 23, 47, 16, 854775),
    dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    dt.datetime(2262, 4, 11, 23, 47, 16, 854775, tzinfo=UTC),
    ["a", None, "long string that goes out of line", ""], [("k", 1), ("\u00fc", None)],
    {"x": -7, "y": [1.5, None, -0.0]},
]
MID_ROW = [
    0, True, -1, 300, 1000, -1, 0.25, -2.5,
    "x", "hello world", b"abcd", b"\x00",
    decimal.Decimal("-0.01"), decimal.Decimal(0), decimal.Decimal("-1E-10"), decimal.Decimal(-1),
    dt.date(1969, 12, 31), dt.time(12, 0, 1), dt.time(0, 0, 0, 1000), dt.time(1, 2, 3, 4000), dt.time(5, 6, 7),
    dt.datetime(1969, 12, 31, 23, 59, 59, 1000), dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(1970, 1, 1, 0, 0, 0, 1),
    dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC), dt.datetime(2024, 2, 29, tzinfo=UTC),
    dt.datetime(2024, 2, 29, 1, 2, 3, 4, tzinfo=UTC), dt.datetime(2000, 1, 1, tzinfo=UTC),
    [None], [], None,
]
NULL_ROW = [5] + [None] * len(ALL_TYPES)


def test_arrow_schema_is_the_tables(impl):
    schema = schema_of(NOT_NULL_FIRST)
    assert impl.RTA(schema).arrow_schema == schema.to_arrow() == RowBatchBuilder_py(schema, "t").arrow_schema


@pytest.mark.parametrize("fmt", FMTS)
def test_every_type_matches_decode_plus_row_batch_builder(impl, fmt):
    schema = schema_of(NOT_NULL_FIRST)
    enc = encoder(fmt, schema)
    encoded = [enc.encode(r) for r in (MIN_ROW, MAX_ROW, MID_ROW, NULL_ROW)]
    rb = impl.RTA(schema, fmt, {3: schema}).value_list([value(3, e) for e in encoded])
    ref = reference(fmt, schema, encoded)
    assert rb.schema == ref.schema
    for i in range(rb.num_columns):
        assert rb.column(i).equals(ref.column(i)), (schema.names[i], rb.column(i), ref.column(i))
    assert rb.equals(ref)
    # and the values are the ones written
    back = RowBatchBuilder_py(schema, "t")
    back.extend([MIN_ROW, MAX_ROW, MID_ROW, NULL_ROW])
    assert rb.equals(back.build())


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("p", [7, 8, 9])
def test_timestamp_nanos_are_kept(impl, fmt, p):
    """Java writes millis * 10**6 + nanoOfMilli for TIMESTAMP(7..9): the Python datetime path loses
    the last three digits, this codec does not."""
    schema = schema_of([T(D.TIMESTAMP, precision=p), T(D.TIMESTAMP_LTZ, precision=p)])
    # millis = -1, nanoOfMilli = 123456 in both formats
    if fmt == "COMPACTED":
        millis = encode_varint(-1, 64)
        nanos = encode_varint(123456)
        row = b"\x00" + millis + nanos + millis + nanos
    else:
        row = b"\x00" + struct.pack("<qi", -1, 123456) * 2
    rb = impl.RTA(schema, fmt).rows(row, [0], [len(row)])
    assert rb.column(0).cast(pa.int64()).to_pylist() == [-1_000_000 + 123456]
    assert rb.column(1).type == pa.timestamp("ns", "UTC")


def test_indexed_binary_keeps_trailing_zero_bytes(impl):
    schema = schema_of([T(D.BINARY, length=4), T(D.CHAR, length=4)])
    row = b"\x00" + b"ab\x00\x00" + b"xy\x00\x00"
    rb = impl.RTA(schema, "INDEXED").rows(row, [0], [len(row)])
    assert rb.to_pydict() == {"c0": [b"ab\x00\x00"], "c1": ["xy"]}


def test_compacted_short_binary_is_zero_padded(impl):
    schema = schema_of([T(D.BINARY, length=4)])
    row = b"\x00\x02ab"
    assert impl.RTA(schema).rows(row, [0], [4]).column(0).to_pylist() == [b"ab\x00\x00"]
    with pytest.raises(ValueError, match="BINARY"):
        impl.RTA(schema).rows(b"\x00\x05abcde", [0], [7])


def test_empty_input_gives_an_empty_batch_of_the_schema(impl):
    schema = schema_of(ALL_TYPES)
    conv = impl.RTA(schema)
    for rb in (conv.value_list([]), conv.values(b"", [], []), conv.builder().finish(), conv.value_batch(b"")):
        assert rb.num_rows == 0 and rb.schema == schema.to_arrow()


# ------------------------------------------------------------------ the ways rows come in
@pytest.mark.parametrize("fmt", FMTS)
def test_spans_builder_lists_and_value_batches_agree(impl, fmt):
    schema = schema_of([T(D.INTEGER, False), T(D.STRING), T(D.DOUBLE), T(D.ARRAY, element=T(D.INTEGER))])
    enc = encoder(fmt, schema)
    data = [[i, None if i % 3 == 0 else f"s{i}" * (i % 5), i / 4, None if i % 4 else [i, None]] for i in range(50)]
    vals = [value(1, enc.encode(r)) for r in data]
    conv = impl.RTA(schema, fmt, {1: schema}, "db.t")
    ref = RowBatchBuilder_py(schema, "t")
    ref.extend(data)
    ref = ref.build()

    buf = bytearray(b"junk")
    starts, ends = [], []
    for v in vals:
        starts.append(len(buf))
        buf += v
        ends.append(len(buf))
        buf += b"\xff"
    assert conv.value_list(vals).equals(ref)
    assert conv.values(bytes(buf), starts, ends).equals(ref)
    assert conv.values(buf, np.array(starts, dtype=np.int64), np.array(ends)).equals(ref)
    assert conv.values(memoryview(buf), array.array("q", starts), array.array("q", ends)).equals(ref)
    assert conv.rows(bytes(buf), [s + 2 for s in starts], ends, 1).equals(ref)
    assert conv.rows(bytes(buf), [s + 2 for s in starts], ends).equals(ref)  # latest schema
    records = build_value_batch([(1, v[2:]) for v in vals[:20]]) + build_value_batch([(1, v[2:]) for v in vals[20:]])
    assert conv.value_batch(records).equals(ref)

    b = conv.builder()
    for i, v in enumerate(vals):
        if i % 2:
            b.add_value(v)
        else:
            b.add_row(buf, starts[i] + 2, ends[i], 1)
    assert len(b) == 50
    assert b.finish().equals(ref)
    assert len(b) == 0
    b.add_value(vals[7])
    assert b.finish().equals(ref.slice(7, 1))


def test_spans_outside_the_buffer_are_refused(impl):
    schema = schema_of([T(D.INTEGER)])
    conv = impl.RTA(schema)
    for starts, ends in (([0], [9]), ([-1], [2]), ([3], [2])):
        with pytest.raises(ValueError):
            conv.values(b"\x01\x00\x00\x05", starts, ends)
    with pytest.raises(ValueError):
        conv.values(b"\x01\x00\x00\x05", [0, 0], [4])
    with pytest.raises(ValueError, match="schema id"):
        conv.value_list([b"\x01"])


# ------------------------------------------------------------------ schema evolution
def test_older_schema_rows_are_padded_with_nulls(impl):
    v1 = schema_of([T(D.INTEGER, False), T(D.STRING)], ["id", "name"])
    v2 = schema_of([T(D.INTEGER, False), T(D.STRING), T(D.BIGINT), T(D.ARRAY, element=T(D.INTEGER))],
                   ["id", "name", "score", "tags"])
    for fmt in FMTS:
        old, new = encoder(fmt, v1), encoder(fmt, v2)
        vals = [value(1, old.encode([1, "a"])), value(2, new.encode([2, "b", 7, [1]])), value(1, old.encode([3, None]))]
        conv = impl.RTA(v2, fmt, {1: v1, 2: v2})
        assert conv.schema_id == 2
        rb = conv.value_list(vals)
        assert rb.schema == v2.to_arrow()
        assert rb.to_pydict() == {"id": [1, 2, 3], "name": ["a", "b", None], "score": [None, 7, None],
                                  "tags": [None, [1], None]}
        b = conv.builder()
        b.add_row(old.encode([9, "z"]), schema_id=1)
        b.add_row(new.encode([8, "y", 1, None]), schema_id=2)
        assert b.finish().to_pydict() == {"id": [9, 8], "name": ["z", "y"], "score": [None, 1], "tags": [None, None]}


def test_columns_map_by_id_so_dropped_and_reordered_columns_work(impl):
    old = SchemaInfo((Column("a", T(D.INTEGER), None, 0), Column("gone", T(D.STRING), None, 1),
                      Column("b", T(D.STRING), None, 2)))
    new = SchemaInfo((Column("a", T(D.INTEGER), None, 0), Column("b", T(D.STRING), None, 2),
                      Column("c", T(D.DOUBLE), None, 3)))
    row = encoder("COMPACTED", old).encode([1, "dropped", "kept"])
    rb = impl.RTA(new, "COMPACTED", {1: old, 2: new}).value_list([value(1, row)])
    assert rb.to_pydict() == {"a": [1], "b": ["kept"], "c": [None]}


def test_changed_type_and_unknown_schema_id_are_value_errors(impl):
    old = schema_of([T(D.INTEGER)], ["a"])
    new = schema_of([T(D.BIGINT)], ["a"])
    conv = impl.RTA(new, "COMPACTED", {1: old, 2: new})
    with pytest.raises(ValueError, match="changed type"):
        conv.value_list([value(1, b"\x00\x01")])
    with pytest.raises(ValueError, match="schema id 7"):
        conv.value_list([value(7, b"\x00\x01")])


def test_added_not_null_column_cannot_be_padded(impl):
    v1 = schema_of([T(D.INTEGER)], ["a"])
    v2 = schema_of([T(D.INTEGER), T(D.INTEGER, False)], ["a", "b"])
    with pytest.raises(ValueError, match="'b'.*NOT NULL"):
        impl.RTA(v2, "COMPACTED", {1: v1, 2: v2}).value_list([value(1, b"\x00\x01")])


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("fmt", FMTS)
def test_every_truncation_is_a_value_error_and_the_builder_keeps_good_rows(impl, fmt):
    schema = schema_of(NOT_NULL_FIRST)
    enc = encoder(fmt, schema)
    good = enc.encode(MAX_ROW)
    conv = impl.RTA(schema, fmt, table_name="db.t")
    b = conv.builder()
    b.add_row(good)
    for cut in range(len(good)):
        with pytest.raises(ValueError, match=f"corrupt {fmt} row 1 of db.t"):
            b.add_row(good, 0, cut)
        assert len(b) == 1
    b.add_row(enc.encode(MID_ROW))
    ref = RowBatchBuilder_py(schema, "t")
    ref.extend([MAX_ROW, MID_ROW])
    assert b.finish().equals(ref.build())


def test_null_in_not_null_column_invalid_utf8_decimal_and_time_overflow(impl):
    conv = impl.RTA(schema_of([T(D.INTEGER, False)], ["k"]))
    with pytest.raises(ValueError, match="'k'.*NULL"):
        conv.rows(b"\x01", [0], [1])
    conv = impl.RTA(schema_of([T(D.STRING)], ["s"]))
    for bad in (b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"a\xe2\x82", b"\xf4\x90\x80\x80"):
        row = b"\x00" + bytes([len(bad)]) + bad
        with pytest.raises(ValueError, match="'s'"):
            conv.rows(row, [0], [len(row)])
    ok = "\u00e9\u4e2d\U0001f600".encode()
    assert conv.rows(b"\x00" + bytes([len(ok)]) + ok, [0], [2 + len(ok)]).column(0).to_pylist() == [ok.decode()]
    conv = impl.RTA(schema_of([T(D.DECIMAL, precision=3, scale=1)], ["d"]))
    with pytest.raises(ValueError, match="'d'.*digits"):
        conv.rows(b"\x00" + encode_varint(1000, 64), [0], [3])
    conv = impl.RTA(schema_of([T(D.DECIMAL, precision=20, scale=0)], ["d"]))
    big = (10 ** 20).to_bytes(9, "big", signed=True)
    with pytest.raises(ValueError, match="'d'.*digits"):
        conv.rows(b"\x00\x09" + big, [0], [11])
    with pytest.raises(ValueError, match="'d'"):
        conv.rows(b"\x00\x11" + b"\x00" * 17, [0], [19])
    conv = impl.RTA(schema_of([T(D.TIME, precision=0)], ["t"]))
    with pytest.raises(ValueError, match="'t'.*outside a day"):
        conv.rows(b"\x00" + encode_varint(86_400_000), [0], [5])
    conv = impl.RTA(schema_of([T(D.INTEGER)], ["i"]))
    with pytest.raises(ValueError, match="varint"):
        conv.rows(b"\x00\xff\xff\xff\xff\xff\x01", [0], [7])


def test_garbage_is_a_value_error_or_a_batch_and_twins_agree():
    schema = schema_of(NOT_NULL_FIRST)
    rnd = random.Random(7)
    for fmt in FMTS:
        good = encoder(fmt, schema).encode(MAX_ROW)
        convs = [i.RTA(schema, fmt) for i in IMPLS]
        for trial in range(400):
            data = bytearray(good)
            for _ in range(rnd.randint(1, 4)):
                data[rnd.randrange(len(data))] = rnd.randrange(256)
            if trial % 5 == 0:
                data = bytearray(rnd.randbytes(rnd.randint(0, 60)))
            outs = []
            for conv in convs:
                try:
                    outs.append(conv.rows(bytes(data), [0], [len(data)]))
                except ValueError:
                    outs.append(None)
            assert all((o is None) == (outs[0] is None) for o in outs), (fmt, bytes(data).hex())
            if outs[0] is not None:
                assert all(o.equals(outs[0]) for o in outs), (fmt, bytes(data).hex())


# ------------------------------------------------------------------ hypothesis: twins agree
_FLAT = [D.BOOLEAN, D.TINYINT, D.SMALLINT, D.INTEGER, D.BIGINT, D.FLOAT, D.DOUBLE, D.STRING, D.BYTES, D.DATE]


def _flat_types():
    simple = st.builds(T, st.sampled_from(_FLAT), st.booleans())
    sized = st.builds(lambda r, n, nl: T(r, nl, length=n), st.sampled_from([D.CHAR, D.BINARY]),
                      st.integers(1, 9), st.booleans())
    dec_t = st.integers(1, 38).flatmap(
        lambda p: st.builds(lambda s, nl: T(D.DECIMAL, nl, precision=p, scale=s), st.integers(0, p), st.booleans()))
    temporal = st.builds(lambda r, p, nl: T(r, nl, precision=p),
                         st.sampled_from([D.TIME, D.TIMESTAMP, D.TIMESTAMP_LTZ]), st.integers(0, 9), st.booleans())
    return st.one_of(simple, sized, dec_t, temporal)


def _nested(children):
    return st.one_of(
        st.builds(lambda e: T(D.ARRAY, element=e), children),
        st.builds(lambda k, v: T(D.MAP, key=k.with_nullable(False), value=v), children, children),
        st.builds(lambda fs: T(D.ROW, fields=tuple(RowField(f"f{i}", t) for i, t in enumerate(fs))),
                  st.lists(children, min_size=1, max_size=3)))


_types = st.recursive(_flat_types(), _nested, max_leaves=4)
_BITS = {D.TINYINT: 7, D.SMALLINT: 15, D.INTEGER: 31, D.BIGINT: 63}
_CTX = decimal.Context(prec=100)
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def _values(t: T):
    r = t.root
    if r == D.BOOLEAN:
        base = st.booleans()
    elif r in _BITS:
        base = st.integers(-(1 << _BITS[r]), (1 << _BITS[r]) - 1)
    elif r == D.FLOAT:
        base = st.floats(width=32, allow_nan=False)
    elif r == D.DOUBLE:
        base = st.floats(allow_nan=False)
    elif r == D.STRING:
        base = _text
    elif r == D.CHAR:
        base = _text.filter(lambda s: len(s.encode()) <= t.length and not s.endswith("\x00"))
    elif r == D.BYTES:
        base = st.binary(max_size=12)
    elif r == D.BINARY:
        base = st.binary(min_size=t.length, max_size=t.length).filter(lambda b: not b.endswith(b"\x00"))
    elif r == D.DECIMAL:
        lim = 10 ** t.precision - 1
        base = st.integers(-lim, lim).map(lambda u: decimal.Decimal(u).scaleb(-t.scale, _CTX))
    elif r == D.DATE:
        base = st.dates()
    elif r == D.TIME:
        base = st.times().map(lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000))
    elif r in (D.TIMESTAMP, D.TIMESTAMP_LTZ):
        lo, hi = (dt.datetime(1678, 1, 1), dt.datetime(2261, 12, 31)) if t.precision > 6 else \
            (dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31))
        base = st.datetimes(lo, hi)
        if t.precision <= 3:
            base = base.map(lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000))
        if r == D.TIMESTAMP_LTZ:
            base = base.map(lambda x: x.replace(tzinfo=UTC))
    elif r == D.ARRAY:
        base = st.lists(_values(t.element), max_size=3)
    elif r == D.MAP:
        base = st.lists(st.tuples(_values(t.key), _values(t.value)), max_size=3)
    else:
        base = st.fixed_dictionaries({f.name: _values(f.type) for f in t.fields})
    return st.one_of(st.none(), base) if t.nullable else base


@st.composite
def table_and_rows(draw):
    types_ = draw(st.lists(_types, min_size=1, max_size=6))
    rows = draw(st.lists(st.tuples(*[_values(t) for t in types_]).map(list), min_size=0, max_size=6))
    return schema_of(types_), rows


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=table_and_rows(), fmt=st.sampled_from(FMTS))
def test_twins_and_the_old_path_agree(case, fmt):
    schema, data = case
    enc = encoder(fmt, schema)
    encoded = [enc.encode(r) for r in data]
    ref = reference(fmt, schema, encoded)
    for i in IMPLS:
        rb = i.RTA(schema, fmt).value_list([value(1, e) for e in encoded])
        assert rb.equals(ref), (i.name, rb.to_pydict(), ref.to_pydict())


def test_extension_is_in_use_when_built():
    if not NO_EXTENSIONS and LOADED.get("_rowarrow") is not None:
        assert RA.RowsToArrow is not RA.RowsToArrow_py


@pytest.mark.parametrize("fmt", FMTS)
def test_builder_grows_over_many_batches_and_rows(impl, fmt):
    schema = schema_of([T(D.BIGINT, False), T(D.BOOLEAN), T(D.STRING), T(D.BINARY, length=3),
                        T(D.DECIMAL, precision=30, scale=2), T(D.ARRAY, element=T(D.INTEGER))])
    enc = encoder(fmt, schema)
    b = impl.RTA(schema, fmt).builder()
    for size in (1000, 3, 0, 130):
        data = [[i, None if i % 7 == 0 else i % 2 == 0, None if i % 5 == 0 else "v" * (i % 40),
                 None if i % 3 else b"abc", decimal.Decimal(i) / 4 if i % 2 else None, [i] if i % 4 else None]
                for i in range(size)]
        for r in data:
            b.add_value(value(1, enc.encode(r)))
        ref = RowBatchBuilder_py(schema, "t")
        ref.extend(data)
        assert b.finish().equals(ref.build())


def test_corrupt_value_batches_are_value_errors(impl):
    schema = schema_of([T(D.INTEGER, False), T(D.STRING)])
    enc = encoder("COMPACTED", schema)
    good = build_value_batch([(1, enc.encode([i, f"s{i}"])) for i in range(3)])
    conv = impl.RTA(schema, "COMPACTED", {1: schema})
    assert conv.value_batch(good + good).num_rows == 6
    bad = [good[:5], good[:-1], good + b"\x00", good[:4] + b"\x01" + good[5:],  # truncated / trailing / magic
           struct.pack("<i", 9999) + good[4:], good[:5] + struct.pack("<i", -1) + good[9:],
           good[:9] + struct.pack("<i", 1) + good[13:]]                          # length, count, record length
    for blob in bad:
        with pytest.raises(ValueError):
            conv.value_batch(blob)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=table_and_rows(), extra=st.lists(_types, min_size=1, max_size=3), fmt=st.sampled_from(FMTS),
       data=st.data())
def test_older_schema_rows_agree_in_both_twins(case, extra, fmt, data):
    old, rows_ = case
    new = schema_of(list(old.types) + [t.with_nullable(True) for t in extra])
    newer_rows = [r + [data.draw(_values(t.with_nullable(True))) for t in extra] for r in rows_]
    vals = [value(1, encoder(fmt, old).encode(r)) for r in rows_]
    vals += [value(2, encoder(fmt, new).encode(r)) for r in newer_rows]
    ref = RowBatchBuilder_py(new, "t")
    ref.extend([r + [None] * len(extra) for r in rows_] + newer_rows)
    ref = ref.build()
    for i in IMPLS:
        assert i.RTA(new, fmt, {1: old, 2: new}).value_list(vals).equals(ref), i.name


# ------------------------------------------------------------------ long calls (the compiled twin releases the GIL)
LONG = 1300  # more than _rowarrow.NOGIL_MIN_ROWS (512): the decode loop runs without the GIL


def _long_case(fmt, scale=1):
    schema = schema_of([T(D.BIGINT, False), T(D.STRING), T(D.BYTES), T(D.CHAR, length=5), T(D.BINARY, length=3),
                        T(D.DECIMAL, precision=30, scale=2), _ts(9), T(D.BOOLEAN)])
    data = [[i, None if i % 7 == 0 else "s" * ((i * scale) % 97), b"\x00b" * (i % 13 * scale),
             None if i % 3 else "ab", b"xyz" if i % 2 else None, decimal.Decimal(i) / 4,
             dt.datetime(2024, 1, 1, 0, 0, i % 60, i), None if i % 5 == 0 else i % 2 == 0]
            for i in range(LONG)]
    enc = encoder(fmt, schema)
    return schema, data, [value(1, enc.encode(r)) for r in data]


@pytest.mark.parametrize("fmt", FMTS)
def test_long_calls_agree_with_the_old_path(impl, fmt):
    schema, data, vals = _long_case(fmt)
    conv = impl.RTA(schema, fmt, {1: schema}, "db.t")
    ref = RowBatchBuilder_py(schema, "t")
    ref.extend(data)
    ref = ref.build()
    assert conv.value_list(vals).equals(ref)
    # the second call reserves from what the first one held: longer strings grow the columns mid-call
    _, data2, vals2 = _long_case(fmt, scale=9)
    ref2 = RowBatchBuilder_py(schema, "t")
    ref2.extend(data2)
    assert conv.value_list(vals2).equals(ref2.build())
    # bytes-likes other than bytes go one at a time beside the rest
    mixed = [bytearray(v) if i % 97 == 0 else memoryview(v) if i % 89 == 0 else v for i, v in enumerate(vals)]
    assert conv.value_list(mixed).equals(ref)
    buf = b"".join(vals)
    ends = list(np.cumsum([len(v) for v in vals]))
    starts = [0] + ends[:-1]
    assert conv.values(buf, starts, ends).equals(ref)
    assert conv.rows(buf, [s + 2 for s in starts], ends, 1).equals(ref)
    records = build_value_batch([(1, v[2:]) for v in vals[:700]]) + build_value_batch([(1, v[2:]) for v in vals[700:]])
    assert conv.value_batch(records).equals(ref)


def test_long_calls_map_older_schema_rows_midway(impl):
    v1 = schema_of([T(D.INTEGER, False), T(D.STRING)], ["id", "name"])
    v2 = schema_of([T(D.INTEGER, False), T(D.STRING), T(D.BIGINT)], ["id", "name", "score"])
    old, new = encoder("COMPACTED", v1), encoder("COMPACTED", v2)
    vals = [value(1, old.encode([i, f"n{i}"])) if i % 250 == 3 else value(2, new.encode([i, f"n{i}", i * 2]))
            for i in range(LONG)]
    rb = impl.RTA(v2, "COMPACTED", {1: v1, 2: v2}).value_list(vals)
    assert rb.to_pydict() == {"id": list(range(LONG)), "name": [f"n{i}" for i in range(LONG)],
                              "score": [None if i % 250 == 3 else i * 2 for i in range(LONG)]}


@pytest.mark.parametrize("fmt", FMTS)
def test_long_call_errors_are_the_row_at_a_time_errors(impl, fmt):
    schema, _, vals = _long_case(fmt)
    conv = impl.RTA(schema, fmt, {1: schema}, "db.t")
    bad_rows = [vals[900][:-1], vals[900][:9], b"\x07\x00" + vals[900][2:], b"\x01",
                vals[900][:2] + b"\xff" * 30]
    for bad in bad_rows:
        broken = vals[:900] + [bad] + vals[901:]
        b = conv.builder()
        with pytest.raises(ValueError) as one:
            for v in broken:
                b.add_value(v)
        assert len(b) == 900
        with pytest.raises(ValueError) as whole:
            conv.value_list(broken)
        assert str(whole.value) == str(one.value)
        if len(bad) >= 2:
            records = build_value_batch([(struct.unpack("<h", v[:2])[0], v[2:]) for v in broken])
            with pytest.raises(ValueError) as batch:
                conv.value_batch(records)
            if impl.name == "ext":  # the pure twin reads the records in place: its byte offsets differ
                assert str(batch.value) == str(one.value)
        # the converter is not left broken by the failed call
        assert conv.value_list(vals[:600]).num_rows == 600
    records = build_value_batch([(1, v[2:]) for v in vals])
    records = records[:5] + struct.pack("<i", LONG + 1) + records[9:]  # one record more than there are
    with pytest.raises(ValueError, match=f"record {LONG} is truncated"):
        conv.value_batch(records)


def test_long_calls_from_several_threads_at_once(impl):
    from concurrent.futures import ThreadPoolExecutor

    schema, data, vals = _long_case("COMPACTED")
    conv = impl.RTA(schema, "COMPACTED", {1: schema}, "db.t")
    ref = conv.value_list(vals)
    with ThreadPoolExecutor(4) as ex:
        outs = list(ex.map(lambda k: conv.value_list(vals[k:]), range(0, 40, 5)))
    assert all(o.equals(ref.slice(k)) for o, k in zip(outs, range(0, 40, 5), strict=True))


def test_long_call_missing_not_null_column_error_names_the_row(impl):
    v1 = schema_of([T(D.INTEGER)], ["a"])
    v2 = schema_of([T(D.INTEGER), T(D.INTEGER, False)], ["a", "b"])
    new = encoder("COMPACTED", v2)
    vals = [value(2, new.encode([i, i])) for i in range(LONG)]
    vals[777] = value(1, b"\x00\x01")
    with pytest.raises(ValueError) as e:
        impl.RTA(v2, "COMPACTED", {1: v1, 2: v2}, "db.t").value_list(vals)
    assert str(e.value) == ("corrupt COMPACTED row 777 of db.t, column 'b': schema 1 has no value for this NOT "
                            "NULL column")
