"""Batch and streaming writes: append to log tables, upsert into primary-key tables, Arrow throughout.

Every task writes its Arrow batches through one writer of its worker's cached connection, flushes
before returning its commit message, and fails (so Spark retries or aborts the job) on the first
write error. The driver-side commit has nothing left to do: what a task flushed is durable and
visible. A retried task writes its rows again, so a log table gets at-least-once delivery; upserts
into a primary-key table are idempotent (the same key gets the same value), so replays are harmless.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from ..engine import connections
from ..engine.options import SourceOptions
from ..engine.ranges import table_meta
from ..errors import ErrorCode, FlussError
from . import types

try:  # Spark >= 4.1
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamBase
    _STREAM_ARROW = True
except ImportError:  # pragma: no cover - Spark 4.0: rows, converted back to Arrow here
    from pyspark.sql.datasource import DataSourceStreamWriter as _StreamBase
    _STREAM_ARROW = False


@dataclass
class FlussCommitMessage(WriterCommitMessage):
    rows: int
    batches: int
    seconds: float


def check_schema(opts: SourceOptions, meta, schema) -> list[str]:
    """FlussError naming the column unless every DataFrame column maps onto a table column of a
    type it can be written to, and every NOT NULL table column is given."""
    table = opts.name
    names = meta.schema.names
    by_lower = {n.lower(): n for n in names}
    given = []
    for f in schema.fields:
        target = by_lower.get(f.name.lower())
        if target is None:
            raise FlussError(f"Column '{f.name}' of the DataFrame does not exist in table '{table}' "
                             f"(columns: {', '.join(names)})", ErrorCode.CLIENT_ERROR)
        col = meta.schema.columns[meta.schema.index_of(target)]
        types.check_writable(f.dataType, col.type, table, target)
        given.append(target)
    for col in meta.schema.columns:
        if col.name not in given and not col.type.nullable:
            raise FlussError(f"The DataFrame has no column '{col.name}', which is NOT NULL in table "
                             f"'{table}'", ErrorCode.CLIENT_ERROR)
    return [f.name for f in schema.fields]


class _Writing:
    """What the batch and the streaming writer share: the driver-side checks, the task's write."""

    def _setup(self, opts: SourceOptions, schema, overwrite: bool, streaming: bool) -> None:
        what = "outputMode('complete')" if streaming else "mode('overwrite')"
        meta = table_meta(opts)
        # a complete micro-batch upserted into a primary-key table leaves exactly its rows' state
        if overwrite and not (streaming and meta.schema.primary_key):
            raise FlussError(f"Writing to table '{opts.name}': {what} is not supported; Fluss tables "
                             f"are appended to (log tables) or upserted into (primary-key tables); use append",
                             ErrorCode.CLIENT_ERROR)
        if opts.virtual is not None:
            raise FlussError(f"Cannot write to virtual table '{opts.name}'", ErrorCode.CLIENT_ERROR)
        self.opts = opts
        self.table_id = meta.table_id
        self.primary_key = bool(meta.schema.primary_key)
        self.spark_names = check_schema(opts, meta, schema)

    def _write(self, batches: Iterator[pa.RecordBatch]) -> FlussCommitMessage:
        opts = self.opts
        began = time.perf_counter()
        table = connections.table(opts.client, opts.database, opts.table, self.table_id)
        meta = table.unwrap()._meta
        convert = types.WriteConverter(meta.schema, opts.name, self.spark_names)
        if self.primary_key:
            writer = table.new_upsert().create_writer()
            if not hasattr(writer.unwrap(), "upsert_arrow_batch"):
                raise FlussError(f"Writing to primary-key table '{opts.name}' needs a fluss_fast with "
                                 f"Arrow upserts (upsert_arrow_batch)", ErrorCode.CLIENT_ERROR)
            put = writer.upsert_arrow_batch
        else:
            writer = table.new_append().create_writer()
            put = writer.write_arrow_batch
        rows = n = 0
        try:
            for rb in batches:
                if rb.num_rows == 0:
                    continue
                put(convert(rb))
                rows += rb.num_rows
                n += 1
            writer.flush()
        finally:
            close = getattr(writer.unwrap(), "close", None)
            if close is not None:
                with contextlib.suppress(FlussError):  # flush() above already raised what matters
                    writer.close()
        return FlussCommitMessage(rows, n, time.perf_counter() - began)


class FlussBatchWriter(_Writing, DataSourceArrowWriter):
    def __init__(self, opts: SourceOptions, schema, overwrite: bool):
        self._setup(opts, schema, overwrite, streaming=False)

    def write(self, iterator):
        return self._write(iterator)

    def commit(self, messages) -> None:
        """Every task flushed before reporting: the rows are already durable."""

    def abort(self, messages) -> None:
        """Rows of tasks that succeeded stay written (Fluss has no transactions to roll back)."""


def _rows_to_batches(rows, schema) -> Iterator[pa.RecordBatch]:
    target = types.spark_arrow_schema(schema)
    names = schema.fieldNames()
    chunk = []
    for row in rows:
        chunk.append(row.asDict(recursive=True) if hasattr(row, "asDict") else dict(zip(names, row, strict=True)))
        if len(chunk) >= 10000:
            yield pa.RecordBatch.from_pylist(chunk, schema=target)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=target)


class FlussStreamWriter(_Writing, _StreamBase):
    """Appends (log tables) or upserts (primary-key tables) every micro-batch."""

    def __init__(self, opts: SourceOptions, schema, overwrite: bool):
        self._setup(opts, schema, overwrite, streaming=True)
        self._schema = schema

    def write(self, iterator):
        if not _STREAM_ARROW:
            iterator = _rows_to_batches(iterator, self._schema)
        return self._write(iterator)

    def commit(self, messages, batchId: int) -> None:
        """Tasks flushed already; nothing is staged."""

    def abort(self, messages, batchId: int) -> None:
        """Spark re-runs the micro-batch; upserts make that harmless, appends may repeat rows."""
