"""pytest-benchmark micro-benchmarks of the codecs, Cython twin next to pure Python.

Skipped in the normal test run (``--ignore=tests/benchmarks``); run them with
``python -m pytest tests/benchmarks --benchmark-only -p no:cacheprovider -o addopts=""``.
Every benchmark also checks its result, so a broken twin cannot post a fast time.
"""
import random
import struct

import pytest

from fluss_fast.bench import datasets as ds
from fluss_fast.codec import _select
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.rows import columns, compacted, indexed
from fluss_fast.codec.wire import crc32c, murmur
from fluss_fast.datatypes import SchemaInfo

pytest.importorskip("pytest_benchmark")

IMPLS = ["cython", "python"]


def pick(impl, ext, module, name):
    if impl == "cython":
        if not _select.LOADED.get(ext):
            pytest.skip(f"extension {ext} is not built")
        return getattr(module, name)
    return getattr(module, name + "_py")


@pytest.fixture(scope="module")
def orders_10k():
    return ds.load("orders", 10_000)


@pytest.mark.parametrize("size", [4096, 1 << 20])
@pytest.mark.parametrize("impl", IMPLS)
def test_crc32c(benchmark, impl, size):
    fn = pick(impl, "_crc32c", crc32c, "crc32c")
    data = random.Random(size).randbytes(size)
    benchmark.extra_info["bytes"] = size
    assert benchmark(fn, data) == crc32c.crc32c_py(data)


@pytest.mark.parametrize("impl", IMPLS)
def test_build_batch(benchmark, impl):
    build = pick(impl, "_logbatch", logbatch, "build_batch")
    payload = random.Random(1).randbytes(64 * 1024)
    out = benchmark(build, payload, schema_id=1, record_count=1000, writer_id=7, batch_sequence=3)
    assert out == logbatch.build_batch_py(payload, schema_id=1, record_count=1000, writer_id=7, batch_sequence=3)


@pytest.mark.parametrize("impl", IMPLS)
def test_validate_records(benchmark, impl):
    validate = pick(impl, "_logbatch", logbatch, "validate_records")
    payload = random.Random(2).randbytes(64 * 1024)
    blob = b"".join(logbatch.build_batch_py(payload, schema_id=1, record_count=100) for _ in range(16))
    res = benchmark(validate, blob)
    assert res.batch_count == 16 and res.record_count_total == 1600


@pytest.mark.parametrize("impl", IMPLS)
def test_buckets_for_keys(benchmark, impl):
    fn = pick(impl, "_murmur", murmur, "buckets_for_keys")
    keys = [struct.pack(">q", i) + b"user-%d" % i for i in range(10_000)]
    out = benchmark(fn, keys, 16)
    assert list(out) == [murmur.bucket_for_key_py(k, 16) for k in keys[:]]


@pytest.mark.parametrize("dataset", ["orders", "clicks"])
@pytest.mark.parametrize("impl", IMPLS)
def test_row_batch_builder(benchmark, impl, dataset):
    cls = pick(impl, "_columns", columns, "RowBatchBuilder")
    table = ds.load(dataset, 10_000)
    schema = SchemaInfo.from_arrow(table.schema)
    dicts = table.to_pylist()

    def build():
        b = cls(schema, "bench")
        b.extend(dicts)
        return b.build()

    rb = benchmark(build)
    assert rb.num_rows == len(dicts)
    spec = ds.DATASETS[dataset]
    assert ds.checksum(rb, spec.id_column, spec.string_column) == ds.checksum(table, spec.id_column,
                                                                              spec.string_column)


@pytest.mark.parametrize("fmt", ["compacted", "indexed"])
@pytest.mark.parametrize("impl", IMPLS)
def test_row_encoder(benchmark, impl, fmt, orders_10k):
    name = "CompactedRowEncoder" if fmt == "compacted" else "IndexedRowEncoder"
    rows = compacted if fmt == "compacted" else indexed
    cls = pick(impl, "_" + fmt, rows, name)
    schema = SchemaInfo.from_arrow(orders_10k.schema)
    enc = cls(schema.types, schema.names)
    ref = getattr(rows, name + "_py")(schema.types, schema.names)
    values = [list(r.values()) for r in orders_10k.to_pylist()]

    def encode_all():
        e = enc.encode
        return [e(v) for v in values]

    out = benchmark(encode_all)
    assert out[0] == ref.encode(values[0]) and out[-1] == ref.encode(values[-1])


@pytest.mark.parametrize("compression", ["ZSTD", "LZ4_FRAME", "NONE"])
def test_arrowlog_roundtrip(benchmark, compression, orders_10k):
    from fluss_fast.codec.log.arrowlog import ArrowLogCodec

    codec = ArrowLogCodec(SchemaInfo.from_arrow(orders_10k.schema), compression)
    batch = orders_10k.to_batches()[0]

    def roundtrip():
        blob = codec.build(batch, schema_id=1)
        return codec.decode(blob, logbatch.parse_header(blob))[0]

    assert benchmark(roundtrip).equals(batch)
