"""Codec benchmarks: every Cython twin side by side with its pure-Python version (parameter ``impl``).

A Cython variant whose extension is not built is skipped (NotImplementedError), not timed as Python.
"""
import random
import struct

from fluss_fast.bench import datasets as ds
from fluss_fast.codec import _select
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.rows import columns, compacted, indexed
from fluss_fast.codec.wire import crc32c, murmur
from fluss_fast.datatypes import SchemaInfo

IMPLS = ["cython", "python"]


def _pick(impl, ext, module, name):
    if impl == "cython":
        if not _select.LOADED.get(ext):
            raise NotImplementedError(f"{ext} not built")
        return getattr(module, name)
    return getattr(module, name + "_py")


class CRC32C:
    params = (IMPLS, [4096, 1 << 20])
    param_names = ["impl", "size"]

    def setup(self, impl, size):
        self.fn = _pick(impl, "_crc32c", crc32c, "crc32c")
        self.data = random.Random(size).randbytes(size)

    def time_crc32c(self, impl, size):
        self.fn(self.data)

    def track_mb_per_s(self, impl, size):
        import time

        t0 = time.perf_counter()
        n = 0
        while time.perf_counter() - t0 < 0.2:
            self.fn(self.data)
            n += 1
        return n * size / (time.perf_counter() - t0) / 1e6

    track_mb_per_s.unit = "MB/s"


class LogBatchFraming:
    """Header build (with CRC) and validate/parse of 16 batches of 64 KiB."""
    params = (IMPLS,)
    param_names = ["impl"]

    def setup(self, impl):
        self.build = _pick(impl, "_logbatch", logbatch, "build_batch")
        self.validate = _pick(impl, "_logbatch", logbatch, "validate_records")
        self.iter_batches = _pick(impl, "_logbatch", logbatch, "iter_batches")
        self.payload = random.Random(1).randbytes(64 * 1024)
        self.blob = b"".join(self.build(self.payload, schema_id=1, record_count=1000) for _ in range(16))

    def time_build_batch(self, impl):
        self.build(self.payload, schema_id=1, record_count=1000, writer_id=7, batch_sequence=3)

    def time_validate_records(self, impl):
        self.validate(self.blob)

    def time_iter_headers(self, impl):
        for _ in self.iter_batches(self.blob):
            pass


class MurmurBucketing:
    params = (IMPLS,)
    param_names = ["impl"]

    def setup(self, impl):
        self.fn = _pick(impl, "_murmur", murmur, "buckets_for_keys")
        self.one = _pick(impl, "_murmur", murmur, "bucket_for_key")
        self.keys = [struct.pack(">q", i) + b"user-%d" % i for i in range(10_000)]

    def time_buckets_for_keys_10k(self, impl):
        self.fn(self.keys, 16)

    def time_bucket_for_key_loop_10k(self, impl):
        one = self.one
        for k in self.keys:
            one(k, 16)


class RowsToArrow:
    """columns.RowBatchBuilder: 10k row dicts -> validated pa.RecordBatch (the append() hot path)."""
    params = (IMPLS, ["orders", "clicks"])
    param_names = ["impl", "dataset"]

    def setup(self, impl, dataset):
        self.cls = _pick(impl, "_columns", columns, "RowBatchBuilder")
        table = ds.load(dataset, 10_000)
        self.schema = SchemaInfo.from_arrow(table.schema)
        self.rows = table.to_pylist()

    def time_build_10k(self, impl, dataset):
        b = self.cls(self.schema, "bench")
        b.extend(self.rows)
        b.build()


class RowEncoders:
    """CompactedRowEncoder / IndexedRowEncoder over 10k order rows (the KV write path)."""
    params = (IMPLS, ["compacted", "indexed"])
    param_names = ["impl", "format"]

    def setup(self, impl, fmt):
        name = "CompactedRowEncoder" if fmt == "compacted" else "IndexedRowEncoder"
        cls = _pick(impl, "_" + fmt, compacted if fmt == "compacted" else indexed, name)
        table = ds.load("orders", 10_000)
        schema = SchemaInfo.from_arrow(table.schema)
        self.enc = cls(schema.types, schema.names)
        self.values = [list(r.values()) for r in table.to_pylist()]

    def time_encode_10k(self, impl, fmt):
        enc = self.enc.encode
        for v in self.values:
            enc(v)


class ArrowLog:
    """arrowlog.ArrowLogCodec: encode (IPC + ZSTD) and zero-copy decode of a 10k-row batch."""
    params = (["ZSTD", "LZ4_FRAME", "NONE"],)
    param_names = ["compression"]

    def setup(self, compression):
        from fluss_fast.codec.log.arrowlog import ArrowLogCodec

        table = ds.load("orders", 10_000)
        self.codec = ArrowLogCodec(SchemaInfo.from_arrow(table.schema), compression)
        self.batch = table.to_batches()[0]
        self.blob = self.codec.build(self.batch, schema_id=1)
        self.header = logbatch.parse_header(self.blob)

    def time_build(self, compression):
        self.codec.build(self.batch, schema_id=1)

    def time_decode(self, compression):
        self.codec.decode(self.blob, self.header)


class PollRows:
    """records.Chunk.rows(): the row dicts a record poll hands out, 500 at a time, from one decoded
    20k-row batch (flat columns read from the Arrow buffers by records.RowBuilder, the others
    converted window by window, see records.RowSource)."""
    params = (["orders", "clicks"],)
    param_names = ["dataset"]

    def setup(self, dataset):
        import pyarrow as pa

        table = ds.load(dataset, 20_000).combine_chunks()
        self.batch = pa.RecordBatch.from_arrays([c.chunk(0) for c in table.columns], schema=table.schema)

    def time_rows_in_polls_of_500(self, dataset):
        from fluss_fast.client.scan.records import Chunk, RowSource
        from fluss_fast.metadata import TableBucket

        src = RowSource(self.batch)
        tb = TableBucket(1, 0)
        n = self.batch.num_rows
        for start in range(0, n, 500):
            Chunk(tb, src, start, min(500, n - start), start, None, None, 0, start + 500).rows()
