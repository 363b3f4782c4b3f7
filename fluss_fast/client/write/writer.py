"""AppendWriter: the log-table writer (pyfluss's ``AppendWriter``).

``append`` / ``write_arrow_batch`` / ``write_arrow`` / ``write_pandas`` are plain, thread-safe
methods: they validate and place the data on the caller's thread (rows through the Cython
``RowBatchBuilder``, Arrow data as zero-copy slices), then return at once; the sender on the
runtime thread does the rest. They may block only when the write buffer is full, and only the
calling thread, so calling them from inside an event loop cannot deadlock the client.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import logging

import numpy as np
import pyarrow as pa

from ... import datatypes as T
from ...codec.kv.keys import KeyScheme, RowKeyEncoder
from ...codec.log import batchstats
from ...codec.log.arrowlog import ArrowLogCodec
from ...codec.log.indexedlog import RowLogCodec
from ...codec.rows.columns import RowBatchBuilder
from ...errors import FlussError
from ...metadata import PARTITION_SEPARATOR
from ..runtime import on_runtime
from .assigners import buckets_of_keys, make_no_key_assigner
from .batch import WriteResultHandle
from .by_name import by_name
from .pipeline import BufferedWriter, delivery_settings

_log = logging.getLogger(__name__)


def _done_future():
    import concurrent.futures
    f = concurrent.futures.Future()
    f.set_result(-1)
    return f


# -- partition names (values joined by '$', each value spelled as the Java/Rust clients do) ------
def _float_text(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Inf" if v > 0 else "-Inf"
    text = str(int(v)) if v == int(v) and abs(v) < 1e16 else repr(v)
    return text.replace(".", "_")


def _time_of_millis(ms: int) -> str:
    h, rem = divmod(ms, 3_600_000)
    m, rem = divmod(rem, 60_000)
    s, milli = divmod(rem, 1000)
    return f"{h:02d}-{m:02d}-{s:02d}_{milli:03d}"


def _timestamp_text(v) -> str:
    if hasattr(v, "to_pydatetime") and not isinstance(v, _dt.datetime):
        v = v.to_pydatetime()
    nanos_extra = 0
    if hasattr(v, "nanosecond"):  # pandas.Timestamp keeps nanoseconds
        nanos_extra = int(v.nanosecond)
    if v.tzinfo is not None:
        v = v.astimezone(_dt.UTC).replace(tzinfo=None)
    micro = v.microsecond
    milli, micro_rest = divmod(micro, 1000)
    nano_of_milli = micro_rest * 1000 + nanos_extra
    base = f"{v.year:04d}-{v.month:02d}-{v.day:02d}-{v.hour:02d}-{v.minute:02d}-{v.second:02d}_"
    if nano_of_milli:
        return f"{base}{milli:03d}{nano_of_milli:06d}"
    if milli:
        return f"{base}{milli:03d}"
    return base


def partition_value_text(value, dtype: T.DataType) -> str:
    r = dtype.root
    if r in (T.STRING, T.CHAR):
        if not isinstance(value, str):
            raise TypeError(f"expected str, got {type(value).__name__}")
        return value
    if r == T.BOOLEAN:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"expected bool, got {type(value).__name__}")
        return "true" if value else "false"
    if r in (T.BYTES, T.BINARY):
        return bytes(value).hex()
    if r in (T.TINYINT, T.SMALLINT, T.INTEGER, T.BIGINT):
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"expected int, got {type(value).__name__}")
        return str(int(value))
    if r in (T.FLOAT, T.DOUBLE):
        return _float_text(float(value))
    if r == T.DATE:
        if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date):
            raise TypeError(f"expected datetime.date, got {type(value).__name__}")
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if r == T.TIME:
        if not isinstance(value, _dt.time):
            raise TypeError(f"expected datetime.time, got {type(value).__name__}")
        ms = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        return _time_of_millis(ms)
    if r in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        return _timestamp_text(value)
    raise TypeError(f"{dtype} cannot be a partition key")


class AppendWriter(BufferedWriter):
    """Writes rows, Arrow data and pandas frames to a log table."""

    def __init__(self, table):
        ctx = table._ctx
        meta = table._meta
        self._ctx = ctx
        self._runtime = ctx.runtime
        self._meta = meta
        cfg = ctx.config
        self._table_name = str(meta.path)
        desc = meta.descriptor
        schema = meta.schema
        self._schema = schema
        self._ncols = len(schema.columns)
        self._arrow_schema = schema.to_arrow()
        self._num_buckets = meta.num_buckets
        acks, retries, max_inflight, idem = delivery_settings(cfg)
        batch_size = cfg.writer_batch_size
        if batch_size <= 0:
            raise FlussError(f"writer.batch-size must be > 0, got {batch_size}")
        self._format = desc.log_format
        if self._format == "ARROW":
            self._codec = ArrowLogCodec(schema, desc.compression, desc.compression_level,
                                        table_name=self._table_name)
            self._row_codec = None
        elif self._format in ("INDEXED", "COMPACTED"):
            self._codec = ArrowLogCodec(schema, "NONE", table_name=self._table_name)  # conform only
            self._row_codec = RowLogCodec(schema.types, self._format, schema.names)
        else:
            raise FlussError(f"table '{self._table_name}': unsupported log format {self._format}")
        # V1 batches with column statistics when the table asks for them (ARROW only, as Java's
        # writers; INDEXED / COMPACTED batches stay V0)
        self._stats_columns = None
        self._stats_types = schema.types
        if self._format == "ARROW":
            try:
                self._stats_columns = batchstats.statistics_columns(schema, desc.properties)
            except ValueError as e:
                raise FlussError(f"table '{self._table_name}': {e}") from None
        # partitions
        self._partition_keys = list(desc.partition_keys)
        self._part_pos = [schema.index_of(k) for k in self._partition_keys]
        self._part_types = [schema.columns[i].type for i in self._part_pos]
        self._pid_cache = {}  # ((type, value), ...) of the partition columns -> partition id
        # bucket key (log tables hash only on a declared bucket key)
        # (a data-lake table encodes and hashes its bucket key the lake's way: codec.keys.KeyScheme)
        bucket_keys = list(desc.bucket_keys)
        try:
            scheme = KeyScheme(desc)
            if bucket_keys and self._num_buckets > 1:
                self._key_encoder = RowKeyEncoder(schema, [schema.index_of(k) for k in bucket_keys],
                                                  scheme.bucket_lake)
            else:
                self._key_encoder = None
        except ValueError as e:
            raise FlussError(f"table '{self._table_name}': {e}") from None
        self._lake_buckets = not scheme.default
        # no partition and no bucket key: append() can skip straight to the accumulator
        self._plain = not self._part_pos and self._key_encoder is None
        table_name = self._table_name
        self._start_sending(cfg, acks, retries, max_inflight, idem, batch_size=batch_size,
                            assigner=make_no_key_assigner(cfg.writer_bucket_no_key_assigner),
                            new_builder=lambda: RowBatchBuilder(schema, table_name))
        self._slot_append = self._acc.slot.append  # per-row fast path (client/write/appendslot.py)
        self._slot_appends = {}  # (partition id, bucket) -> that slot's append, for placed rows
        self._bucket_for_key = scheme.bucketing

    def __repr__(self) -> str:
        return "AppendWriter()"

    # -- partitions -----------------------------------------------------------------------------
    def _partition_name_of_values(self, values) -> str:
        parts = []
        for key, dtype, v in zip(self._partition_keys, self._part_types, values, strict=True):
            if v is None:
                raise FlussError(f"table '{self._table_name}': partition column '{key}' must not be null")
            try:
                parts.append(partition_value_text(v, dtype))
            except (TypeError, ValueError, AttributeError) as e:
                raise FlussError(f"table '{self._table_name}', partition column '{key}' ({dtype}): "
                                 f"bad value {v!r}: {e}") from None
        return PARTITION_SEPARATOR.join(parts)

    def _row_values(self, row, positions, names):
        if isinstance(row, dict):
            return [row.get(n) for n in names]
        if isinstance(row, (list, tuple)):
            if len(row) != len(self._schema.columns):
                return None  # let the row builder report the arity problem
            return [row[i] for i in positions]
        return None

    # -- rows -----------------------------------------------------------------------------------
    def append(self, row) -> WriteResultHandle:
        """Append one row.

        Checks and encodes the row on the calling thread and returns once it is queued; blocks only
        while the write buffer (``writer.buffer.memory-size``) is full.

        Args:
            row: A dict by column name (nullable columns may be left out), or a list / tuple in schema
                order.

        Returns:
            A handle that completes when the row's batch is acknowledged (shared by the rows of that
            batch).

        Raises:
            FlussError: An unknown or missing column, a value of the wrong type or out of range (the
                message names table, column and row), a missing partition, or the writer is closed.

        Example:
            ```python
            writer.append({"id": 1, "name": "alice"})
            writer.append([2, "bob"])
            await writer.flush()
            ```
        """
        if self._plain:
            if self._closed or self._ctx._closed:
                self._check_open()
            h = self._slot_append(row)
            if h is not None:
                return h
            return self._acc.append_plain(row, self._num_buckets)
        if self._closed or self._ctx._closed:
            self._check_open()
        # Placed rows: partition id from a cache keyed by the partition values (with their types,
        # so 1, 1.0 and True stay apart), bucket from the key hash. Anything unusual falls through
        # to the checked path below, which reports precisely what is wrong.
        kind = type(row)
        simple = True if kind is dict else (kind is tuple or kind is list) and len(row) == self._ncols
        if simple:
            pid = None
            if self._part_pos:
                pvals = [row.get(n) for n in self._partition_keys] if kind is dict else [row[i] for i in self._part_pos]
                try:
                    pid = self._pid_cache.get(tuple([(v.__class__, v) for v in pvals]))
                except TypeError:  # unhashable value
                    pid = None
                placed = pid is not None
            else:
                placed = True
            bucket = None
            enc = self._key_encoder
            if placed and enc is not None:
                values = [row.get(n) for n in enc.names] if kind is dict else [row[i] for i in enc.positions]
                try:
                    bucket = self._bucket_for_key(enc.encode(values), self._num_buckets)
                except (TypeError, ValueError, OverflowError):
                    placed = False
            if placed:
                key = (pid, bucket)
                slot_append = self._slot_appends.get(key)
                if slot_append is not None:
                    h = slot_append(row)
                    if h is not None:
                        return h
                h = self._acc.append_slotted(row, pid, bucket, self._num_buckets)
                if len(self._slot_appends) >= 4096:
                    self._slot_appends.clear()
                self._slot_appends[key] = self._acc.slot_for(key).append
                return h
        pid = None
        bucket = None
        if self._part_pos:
            values = self._row_values(row, self._part_pos, self._partition_keys)
            if values is not None:
                pid = self._partition_id(self._partition_name_of_values(values))
                try:
                    key = tuple([(v.__class__, v) for v in values])
                except TypeError:
                    key = None
                if key is not None:
                    if len(self._pid_cache) >= 4096:
                        self._pid_cache.clear()
                    with contextlib.suppress(TypeError):  # unhashable value
                        self._pid_cache[key] = pid
        if self._key_encoder is not None:
            enc = self._key_encoder
            values = self._row_values(row, enc.positions, enc.names)
            if values is not None:
                try:
                    bucket = self._bucket_for_key(enc.encode(values), self._num_buckets)
                except (TypeError, ValueError, OverflowError) as e:
                    raise FlussError(f"table '{self._table_name}': cannot encode bucket key "
                                     f"({', '.join(enc.names)}) of row: {e}") from None
        if (pid is None and self._part_pos) or (bucket is None and self._key_encoder is not None):
            # malformed row: the builder raises the precise error
            RowBatchBuilder(self._schema, self._table_name).append(row)
            raise FlussError(f"table '{self._table_name}': cannot place row {row!r}")
        return self._acc.append_slotted(row, pid, bucket, self._num_buckets)

    # -- Arrow ----------------------------------------------------------------------------------
    def write_arrow_batch(self, batch: pa.RecordBatch) -> WriteResultHandle:
        """Write a ``pyarrow.RecordBatch``; its rows go to their partitions and buckets.

        Zero-copy until the batch is compressed. Columns are matched by name, in any order.

        Args:
            batch: Exactly the table's columns, each of its Arrow type.

        Returns:
            A handle that completes when every row of the batch is acknowledged.

        Raises:
            FlussError: A missing, unknown or repeated column, a type mismatch, or a missing partition.
        """
        self._check_open()
        if not isinstance(batch, pa.RecordBatch):
            if isinstance(batch, pa.Table):
                return self._write_table(batch)
            raise FlussError(f"table '{self._table_name}': write_arrow_batch needs a "
                             f"pyarrow.RecordBatch, got {type(batch).__name__}")
        rb = self._codec.conform(by_name(batch, self._arrow_schema.names, self._table_name))
        futures = []
        if rb.num_rows:
            for pid, part in self._split_partitions(rb):
                for bucket, piece in self._split_buckets(part):
                    self._append_slices(piece, pid, bucket, futures)
        if not futures:
            return WriteResultHandle(_done_future(), self._runtime)
        return WriteResultHandle(futures[0] if len(futures) == 1 else tuple(futures), self._runtime)

    def write_arrow(self, table: pa.Table) -> None:
        """Write a ``pyarrow.Table``, batch by batch (columns matched by name).

        Returns ``None``, as pyfluss does: ``flush()`` acknowledges it.

        Args:
            table: Exactly the table's columns.

        Raises:
            FlussError: As for `write_arrow_batch`.
        """
        self._write_table(table)

    def _write_table(self, table: pa.Table) -> WriteResultHandle:
        self._check_open()
        if isinstance(table, pa.RecordBatch):
            return self.write_arrow_batch(table)
        if not isinstance(table, pa.Table):
            raise FlussError(f"table '{self._table_name}': write_arrow needs a pyarrow.Table, "
                             f"got {type(table).__name__}")
        futures = []
        for rb in table.to_batches():
            h = self.write_arrow_batch(rb)
            futures.extend(h._futures())
        if not futures:
            return WriteResultHandle(_done_future(), self._runtime)
        return WriteResultHandle(tuple(futures), self._runtime)

    def write_pandas(self, df) -> None:
        """Write a ``pandas.DataFrame``, converted with the table's Arrow schema by column name.

        Returns ``None``, as pyfluss does: ``flush()`` acknowledges it.

        Args:
            df: The rows.

        Raises:
            FlussError: A column is missing or unknown, or a value does not convert.
        """
        self._check_open()
        try:
            table = pa.Table.from_pandas(df, schema=self._arrow_schema, preserve_index=False)
        except (pa.ArrowException, ValueError, TypeError, KeyError) as e:
            raise FlussError(f"table '{self._table_name}': cannot convert the DataFrame to the "
                             f"table schema: {e}") from None
        self._write_table(table)

    def _append_slices(self, rb: pa.RecordBatch, pid, bucket, futures) -> None:
        n = rb.num_rows
        total = rb.nbytes
        target = self._acc.target_size(pid)
        alone = self._stats_columns is not None
        if total <= target or n <= 1:
            futures.append(self._acc.append_chunk(rb, total, pid, bucket, self._num_buckets, alone))
            return
        # Equal pieces, not target-sized ones plus a remainder: a 2.1 MB chunk against a 2 MB
        # target used to become 63 k + 2 k rows, and the tiny batch cost ~10 % more CPU per
        # chunk (framing, a compression call per buffer, a produce entry) and left one core idle
        # at the end. Every piece stays above half the target, so dynamic sizing does not shrink.
        pieces = -(-total // target)
        per = max(1, -(-n // pieces))
        for start in range(0, n, per):
            chunk = rb.slice(start, per)
            futures.append(self._acc.append_chunk(chunk, chunk.nbytes, pid, bucket, self._num_buckets, alone))

    def _split_partitions(self, rb: pa.RecordBatch):
        if not self._part_pos:
            yield None, rb
            return
        cols = [rb.column(i) for i in self._part_pos]
        uniques = [c.unique() for c in cols]
        if all(len(u) == 1 for u in uniques):
            name = self._partition_name_of_values([u[0].as_py() for u in uniques])
            yield self._partition_id(name), rb
            return
        values = [c.to_pylist() for c in cols]
        groups = {}
        names = {}
        for i, vals in enumerate(zip(*values, strict=True)):
            key = vals
            lst = groups.get(key)
            if lst is None:
                groups[key] = lst = []
                names[key] = self._partition_name_of_values(vals)
            lst.append(i)
        # resolve every partition before queueing anything, so a missing one fails the whole write
        ids = {key: self._partition_id(names[key]) for key in groups}
        for key, idx in groups.items():
            yield ids[key], rb.take(pa.array(idx, type=pa.int64()))

    def _split_buckets(self, rb: pa.RecordBatch):
        enc = self._key_encoder
        if enc is None:
            yield None, rb
            return
        cols = [rb.column(i).to_pylist() for i in enc.positions]
        try:
            keys = [enc.encode(list(vals)) for vals in zip(*cols, strict=True)]
        except (TypeError, ValueError, OverflowError) as e:
            raise FlussError(f"table '{self._table_name}': cannot encode bucket key "
                             f"({', '.join(enc.names)}): {e}") from None
        if self._lake_buckets:
            fn, n = self._bucket_for_key, self._num_buckets
            try:
                buckets = np.asarray([fn(k, n) for k in keys], dtype=np.int64)
            except ValueError as e:  # an empty Iceberg key
                raise FlussError(f"table '{self._table_name}': cannot bucket by "
                                 f"({', '.join(enc.names)}): {e}") from None
        else:
            buckets = np.asarray(buckets_of_keys(keys, self._num_buckets), dtype=np.int64)
        first = buckets[0]
        if (buckets == first).all():
            yield int(first), rb
            return
        order = np.argsort(buckets, kind="stable")
        sorted_b = buckets[order]
        taken = rb.take(pa.array(order))
        bounds = np.flatnonzero(np.diff(sorted_b)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [len(sorted_b)]))
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            yield int(sorted_b[s]), taken.slice(s, e - s)

    # -- encoding (worker thread or runtime thread) ---------------------------------------------
    def _encode(self, b) -> None:
        chunks = b.chunks
        builder = b.builder
        if builder is not None and len(builder):
            chunks.append(builder.build())
            b.builder = None
        rb = chunks[0] if len(chunks) == 1 else pa.concat_batches(chunks)
        if self._row_codec is None:
            b.payload = self._codec.encode(rb)
            if self._stats_columns is not None:
                b.stats = self._statistics(rb)
        else:
            cols = [c.to_pylist() for c in rb.columns]
            b.payload = self._row_codec.encode_records(list(zip(*cols, strict=True)))
        b.record_count = rb.num_rows
        b.chunks = None

    def _statistics(self, rb) -> bytes:
        """The statistics block of a batch of ``rb``'s rows. A failure leaves the batch V1 without
        statistics, as Java's builder does (readers and servers then treat it as unprunable)."""
        try:
            return batchstats.statistics_of(rb, self._stats_types, self._stats_columns)
        except Exception as e:  # noqa: BLE001 - statistics are an optimisation, never a write failure
            _log.warning("table '%s': could not collect batch statistics: %s", self._table_name, e)
            return b""

    # -- close --------------------------------------------------------------------------------
    @on_runtime
    async def close(self) -> None:
        """Flush, then refuse further writes (the connection's ``close()`` does this for every writer).

        Raises:
            FlussError: Something could not be delivered (the message says how many records).
        """
        await self._close(report_lost=True)
