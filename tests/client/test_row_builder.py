"""Row dicts of a poll: the compiled RowBuilder (values straight from the Arrow buffers), its pure
twin and the column-wise conversion of convert.py must give the same dicts, value for value and
type for type, across nulls, sliced arrays, window boundaries and values at the edges of the
Python types' ranges."""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from fluss_fast.client.scan import records
from fluss_fast.client.scan.convert import column_to_pylist
from fluss_fast.client.scan.records import Chunk, RowSource, row_kinds
from fluss_fast.codec import NO_EXTENSIONS
from fluss_fast.metadata import TableBucket

TB = TableBucket(1, 0)
UTC = dt.UTC
BUILDERS = [pytest.param(records.RowBuilder_py, id="pure")]
if not NO_EXTENSIONS:
    BUILDERS.append(pytest.param(records.RowBuilder, id="compiled"))

N = 3000


def _col(values, typ):
    return pa.array(values, typ)


def _batch(n=N):
    us_edges = [-62135596800_000_000, 253402300799_999_999, -1, 0, 1, -86_400_000_001]
    return pa.record_batch({
        "i8": _col([None if i % 11 == 0 else (i % 256) - 128 for i in range(n)], pa.int8()),
        "i16": _col([(i * 37) % 65536 - 32768 for i in range(n)], pa.int16()),
        "i32": _col([None if i % 3 == 0 else i * 7919 - 2**31 // 2 for i in range(n)], pa.int32()),
        "i64": _col([(-1) ** i * i * 10**12 for i in range(n)], pa.int64()),
        "f32": _col([None if i % 5 == 0 else i / 3 for i in range(n)], pa.float32()),
        "f64": _col([i * 1.5 - 7 for i in range(n)], pa.float64()),
        "b": _col([None if i % 7 == 0 else i % 2 == 0 for i in range(n)], pa.bool_()),
        "s": _col([None if i % 4 == 0 else f"ü{i}€" * (i % 3) for i in range(n)], pa.string()),
        # few distinct short ASCII texts, some of the same length and first/middle/last bytes
        # (the compiled builder's string cache slots), non-ASCII ones and empty ones among them
        "cat": _col([None if i % 13 == 0 else ["aXcYe", "aZcWe", "", "view", "víew", "x" * 24,
                                               "y" * 25, "aXcYe"][i % 8] for i in range(n)], pa.string()),
        "bin": _col([None if i % 6 == 0 else bytes([i % 256]) * (i % 4) for i in range(n)], pa.binary()),
        "ts_us": _col([us_edges[i % len(us_edges)] + (i if i % len(us_edges) != 1 else -i) for i in range(n)],
                      pa.int64()).view(pa.timestamp("us")),
        "ts_ltz_ms": _col([None if i % 9 == 0 else (i - N // 2) * 86_399_999 for i in range(n)],
                          pa.int64()).view(pa.timestamp("ms", tz="UTC")),
        "ts_s": _col([(i % N - N // 2) * 40_000_001 for i in range(n)], pa.int64()).view(pa.timestamp("s")),
        "ts_ns": _col([(i - N // 2) * 999_999_999_999 + (i % 1000) for i in range(n)],
                      pa.int64()).view(pa.timestamp("ns", tz="UTC")),
        "d": _col([None if i % 8 == 0 else (i % N - N // 2) * 997 for i in range(n)], pa.int32()).view(pa.date32()),
        "dec": _col([None if i % 10 == 0 else decimal.Decimal((-1) ** i * i * 13).scaleb(-4)
                     for i in range(n)], pa.decimal128(18, 4)),
        "dec0": _col([decimal.Decimal(i - 5) for i in range(n)], pa.decimal128(5, 0)),
        "wide": _col([decimal.Decimal(i).scaleb(-2) for i in range(n)], pa.decimal128(30, 2)),
        "t": _col([i * 1000 for i in range(n)], pa.time64("us")),
    })


def _expected(batch):
    cols = [column_to_pylist(c) for c in batch.columns]
    return [dict(zip(batch.schema.names, vals, strict=True)) for vals in zip(*cols, strict=True)]


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert list(g) == list(w)
        for k in w:
            assert g[k] == w[k] and type(g[k]) is type(w[k]), (k, g[k], w[k])
            if isinstance(w[k], dt.datetime):
                assert g[k].tzinfo is w[k].tzinfo
            if isinstance(w[k], decimal.Decimal):
                assert g[k].as_tuple() == w[k].as_tuple()


def test_kinds_read_from_buffers_and_slow_ones():
    kinds = dict(zip(_batch(4).schema.names, row_kinds(_batch(4).schema), strict=True))
    codes = records.KIND_CODES
    assert kinds["wide"] == codes["slow"] and kinds["t"] == codes["slow"]
    assert kinds["dec"] == codes["decimal"] and kinds["ts_ns"] == codes["timestamp"]
    assert kinds["s"] == codes["string"] and kinds["b"] == codes["bool"]


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("cut", [0, 13])
def test_row_builder_matches_column_conversion(builder, cut):
    full = _batch()
    batch = full.slice(cut) if cut else full  # sliced arrays: non-zero array offsets
    want = _expected(batch)
    b = builder(batch, row_kinds(batch.schema))
    slow_cols = [column_to_pylist(batch.column(j)) for j in b.slow]
    got = []
    for start in range(0, batch.num_rows, 500):
        count = min(500, batch.num_rows - start)
        got.extend(b.rows(start, count, slow_cols, 0))
    _same(got, want)
    # slow columns given from a later first row
    lists = [c[1000:] for c in slow_cols]
    _same(b.rows(1000, 7, lists, 1000), want[1000:1007])


@pytest.mark.parametrize("builder", BUILDERS)
def test_row_builder_refuses_bad_ranges(builder):
    batch = _batch(10)
    b = builder(batch, row_kinds(batch.schema))
    slow = [column_to_pylist(batch.column(j)) for j in b.slow]
    with pytest.raises(IndexError):
        b.rows(5, 6, slow, 0)
    with pytest.raises(IndexError):
        b.rows(-1, 2, slow, 0)
    with pytest.raises(IndexError):
        b.rows(2, 3, [c[3:] for c in slow], 3)
    with pytest.raises(ValueError):
        b.rows(0, 1, slow[1:], 0)
    with pytest.raises(ValueError):
        builder(batch, row_kinds(batch.schema)[1:])
    with pytest.raises(ValueError):
        builder(batch, [99] * batch.num_columns)
    assert b.rows(3, 0, slow, 0) == []


@pytest.mark.parametrize("builder", BUILDERS)
def test_row_builder_without_columns_and_rows(builder):
    empty = pa.record_batch({"a": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    assert builder(empty, row_kinds(empty.schema)).rows(0, 0, [], 0) == []
    nocols = pa.RecordBatch.from_pydict({}).slice(0, 0)
    assert builder(nocols, []).rows(0, 0, [], 0) == []


def test_row_source_windows_cross_batches_like_polls():
    # a poll hands out 500 rows at a time; RowSource converts slow columns a window at a time:
    # every chunk's rows must equal the whole-batch conversion, whatever the chunk boundaries
    batch = _batch(20_000 if N < 20_000 else N)
    want = _expected(batch)
    src = RowSource(batch)
    got = []
    start = 0
    for size in [1, 499, 500, 8191, 1, 8193] * 10:
        if start >= batch.num_rows:
            break
        size = min(size, batch.num_rows - start)
        got.extend(Chunk(TB, src, start, size, start, None, None, 0, start + size).rows())
        start += size
    _same(got, want[:start])


@pytest.mark.parametrize("builder", BUILDERS)
def test_timestamp_outside_datetime_range_fails_like_the_column_conversion(builder):
    batch = pa.record_batch({"ts": pa.array([0, 253402300800_000_000], pa.int64()).view(pa.timestamp("us"))})
    with pytest.raises(OverflowError) as want:
        column_to_pylist(batch.column(0))
    b = builder(batch, row_kinds(batch.schema))
    assert b.rows(0, 1, [], 0) == [{"ts": dt.datetime(1970, 1, 1)}]
    with pytest.raises(type(want.value)):
        b.rows(0, 2, [], 0)
