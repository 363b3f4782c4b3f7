"""pytest-benchmark: stored KV rows -> Arrow RecordBatch (``codec.rowarrow``).

Three ways to turn 10,000 stored values (int16 schema id + row) of the ``orders`` and ``clicks``
data sets into one RecordBatch, in one run so the ratios are comparable:

* ``cython`` / ``python``: the rowarrow twins (``value_list``; ``spans`` also times the one-buffer
  ``values(buf, starts, ends)`` form, ``builder`` one ``add_value`` call per row as the server does);
* ``old``: what the server and the client did before, compiled decoders to Python lists and the
  compiled ``columns.RowBatchBuilder``.

Skipped in the normal test run; run with
``python -m pytest tests/benchmarks/test_rowarrow_benchmarks.py --benchmark-only -p no:cacheprovider -o addopts=""``
(``--benchmark-columns=mean,ops`` shows calls/s; rows/s = ops x 10,000).
"""
import array

import pytest

from fluss_fast.bench import datasets as ds
from fluss_fast.codec import _select
from fluss_fast.codec.rows import columns, rowarrow
from fluss_fast.codec.rows.compacted import CompactedRowDecoder, CompactedRowEncoder_py
from fluss_fast.codec.rows.indexed import IndexedRowDecoder, IndexedRowEncoder_py
from fluss_fast.datatypes import SchemaInfo

pytest.importorskip("pytest_benchmark")

ROWS = 10_000


@pytest.fixture(scope="module", params=["orders", "clicks"])
def stored(request):
    table = ds.load(request.param, ROWS)
    schema = SchemaInfo.from_arrow(table.schema)
    cases = {}
    for fmt in ("COMPACTED", "INDEXED"):
        enc = (CompactedRowEncoder_py if fmt == "COMPACTED" else IndexedRowEncoder_py)(
            schema.types, schema.names)
        values = [b"\x01\x00" + enc.encode(list(r.values())) for r in table.to_pylist()]
        starts, ends, pos = array.array("q"), array.array("q"), 0
        for v in values:
            starts.append(pos)
            pos += len(v)
            ends.append(pos)
        cases[fmt] = (values, b"".join(values), starts, ends)
    return request.param, schema, cases


def _conv(impl, schema, fmt):
    if impl == "cython":
        if not _select.LOADED.get("_rowarrow"):
            pytest.skip("extension _rowarrow is not built")
        return rowarrow.RowsToArrow(schema, fmt, {1: schema})
    return rowarrow.RowsToArrow_py(schema, fmt, {1: schema})


def _old_path(schema, fmt, values):
    dec = (CompactedRowDecoder if fmt == "COMPACTED" else IndexedRowDecoder)(schema.types, schema.names)
    b = columns.RowBatchBuilder(schema, "bench")
    b.extend([dec.decode(v, 2) for v in values])
    return b.build()


@pytest.mark.parametrize("fmt", ["COMPACTED", "INDEXED"])
@pytest.mark.parametrize("impl", ["cython", "python", "old"])
def test_values_to_arrow(benchmark, stored, impl, fmt):
    name, schema, cases = stored
    values = cases[fmt][0]
    benchmark.extra_info.update(rows=len(values), dataset=name)
    if impl == "old":
        rb = benchmark(_old_path, schema, fmt, values)
    else:
        conv = _conv(impl, schema, fmt)
        rb = benchmark(conv.value_list, values)
    assert rb.equals(_old_path(schema, fmt, values))


@pytest.mark.parametrize("fmt", ["COMPACTED", "INDEXED"])
@pytest.mark.parametrize("form", ["spans", "builder"])
def test_cython_input_forms(benchmark, stored, form, fmt):
    name, schema, cases = stored
    values, buf, starts, ends = cases[fmt]
    conv = _conv("cython", schema, fmt)
    benchmark.extra_info.update(rows=len(values), dataset=name)

    def one_by_one():
        b = conv.builder()
        add = b.add_value
        for v in values:
            add(v)
        return b.finish()

    rb = benchmark(one_by_one) if form == "builder" else benchmark(conv.values, buf, starts, ends)
    assert rb.equals(conv.value_list(values))
