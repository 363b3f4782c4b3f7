"""UpsertWriter: upserts and deletes of a primary-key table (pyfluss's ``UpsertWriter``).

Each ``upsert`` / ``delete`` is checked and encoded whole on the caller's thread (the row in the
table's kv format, the primary key, the bucket from the bucket key, the partition), then queued
as one finished KV record in the same accumulator and sender the AppendWriter uses, in KV
batches (PutKv). Idempotence, retries, the memory budget and flush are theirs.

The bulk Arrow methods (``upsert_arrow`` ...) build the records column by column
(``codec.kvcolumns``) and never make a Python object per row.
"""
from __future__ import annotations

import functools
import re

import pyarrow as pa

from ...codec.kv.keys import KeyScheme, key_columns
from ...codec.rows.compacted import CompactedRowEncoder
from ...codec.rows.indexed import IndexedRowEncoder
from ...error_codes import CLIENT_ERROR
from ...errors import FlussError
from ...metadata import PARTITION_SEPARATOR
from ..runtime import on_runtime
from .assigners import make_no_key_assigner
from .batch import KIND_KV, WriteResultHandle
from .kvrecords import KvRecordBuilder, kv_record
from .pipeline import BufferedWriter, delivery_settings
from .upsertrow import KvSlot, UpsertRow
from .writer import _done_future, partition_value_text

_MISSING = object()
_NULL_FIELD = re.compile(r"field '([^']*)' is null but its type")


def illegal_argument(message: str) -> FlussError:
    """pyfluss's wording for the core client's IllegalArgument errors."""
    return FlussError(f"Fluss hitting illegal argument error {message}.", CLIENT_ERROR)


def batch_capacity(cfg) -> int:
    """Bytes a KV batch's builder sets aside: the batch size (up to 16 MiB; bigger batches
    grow), and room for the record that fills it (a batch is sealed once it reaches its target)."""
    return min(max(0, cfg.writer_batch_size), 16 << 20) + 64 * 1024


def check_target_columns(meta, target: list[int]) -> None:
    """The Java/Rust clients' partial-update rules: every primary-key column is targeted, every
    other column is nullable."""
    schema = meta.schema
    names = schema.names
    pk = list(schema.primary_key)
    pk_pos = {schema.index_of(c) for c in pk}
    chosen = set(target)
    for c in pk:
        if schema.index_of(c) not in chosen:
            raise illegal_argument(f"The target write columns {', '.join(names[i] for i in target)} "
                                   f"must contain the primary key columns {', '.join(pk)}")
    auto_pos = set()
    for c in schema.auto_increment_columns:
        if schema.index_of(c) in chosen:
            raise illegal_argument(f"Explicitly specifying values for the auto increment column {c} is not "
                                   f"allowed.")
        auto_pos.add(schema.index_of(c))
    for i, col in enumerate(schema.columns):
        if i not in pk_pos and i not in auto_pos and not col.type.nullable:
            raise illegal_argument(f"Partial Update requires all columns except primary key to be "
                                   f"nullable, but column {col.name} is NOT NULL.")


class RowShaper:
    """Turns a user's dict / list / tuple into values at schema positions, with pyfluss's checks
    and messages. ``positions``: the columns the input carries (all, a partial update's target,
    the primary key, a prefix); ``sparse``: full-width output with the rest None, else one
    value per position."""

    __slots__ = ("names", "positions", "sparse", "width", "_nullable", "_pos_names", "_name_set",
                 "_types", "_whole")

    def __init__(self, schema, positions, sparse: bool):
        self.names = schema.names
        self.positions = list(positions)
        self.sparse = sparse
        self.width = len(self.names)
        self._types = [schema.columns[i].type for i in self.positions]
        self._nullable = [t.nullable for t in self._types]
        self._pos_names = [self.names[i] for i in self.positions]
        self._name_set = frozenset(self._pos_names)
        self._whole = sparse and self.positions == list(range(self.width))

    def values(self, row) -> list:
        kind = type(row)
        if kind is dict and self._whole and len(row) == self.width:
            # every column given by name (so no unknown key can be among them): the common case
            try:
                return [row[n] for n in self.names]
            except KeyError:
                pass
        if kind is dict or isinstance(row, dict):
            names = self._pos_names
            if len(row) > len(names) or not self._name_set.issuperset(row):
                for k in row:
                    if not isinstance(k, str):
                        raise FlussError(f"Dict keys must be strings; got {type(k).__name__}")
                    if k not in self._name_set:
                        raise FlussError(f"Unknown field '{k}'. Expected: {', '.join(names)}")
            vals = [row.get(n, _MISSING) for n in names]
            if _MISSING in vals:
                for i, v in enumerate(vals):
                    if v is _MISSING:
                        if not self._nullable[i]:
                            raise FlussError(f"Missing value for non-nullable field '{names[i]}'")
                        vals[i] = None
        elif kind is list or kind is tuple or isinstance(row, (list, tuple)):
            if len(row) != len(self.positions):
                raise FlussError(f"Expected {len(self.positions)} elements, got {len(row)}")
            vals = list(row)
        else:
            raise FlussError(f"Row must be a dict, list, or tuple; got {type(row).__name__}")
        if not self.sparse:
            return vals
        if len(vals) == self.width and self.positions == list(range(self.width)):
            return vals
        out = [None] * self.width
        for p, v in zip(self.positions, vals, strict=True):
            out[p] = v
        return out

    def encode_error(self, exc: Exception, column: str | None, schema) -> FlussError:
        """A codec error as pyfluss words it (``Field 'x': ...``)."""
        text = str(exc)
        if column is None:
            m = re.match(r"(?:key )?field '([^']*)'", text)
            column = m.group(1) if m else None
        if column is not None and column in self.names:
            dt = schema.columns[schema.index_of(column)].type
            m = _NULL_FIELD.search(text)
            if m and m.group(1) == column and not dt.nullable:
                return FlussError(f"Missing value for non-nullable field '{column}'")
            prefix = f"field '{column}': "
            if text.startswith(prefix):  # the row encoders' own label, said once
                text = text[len(prefix):]
            return FlussError(f"Field '{column}': {text}")
        return FlussError(text)


class KvLayout:
    """A primary-key table's keys: encoders of the primary key, bucket key and value rows, and
    the partition name of a row."""

    def __init__(self, meta):
        self.meta = meta
        desc = meta.descriptor
        schema = meta.schema
        self.schema = schema
        self.table_name = str(meta.path)
        kc = key_columns(desc)
        try:
            scheme = KeyScheme(desc)
        except ValueError as e:
            raise illegal_argument(str(e)) from None
        self.scheme = scheme
        self.pk_pos = kc.primary_key
        self.phys_pos = kc.physical_key
        self.bucket_pos = kc.bucket_key
        self.part_pos = kc.partition_keys
        self.partition_keys = list(desc.partition_keys)
        cols = schema.columns
        phys_types = [cols[i].type for i in self.phys_pos]
        phys_names = [cols[i].name for i in self.phys_pos]
        bucket_types = [cols[i].type for i in self.bucket_pos]
        bucket_names = [cols[i].name for i in self.bucket_pos]
        # A data-lake table's keys follow the Java client's rules (codec.keys.KeyScheme); ``lake``
        # says whether any of them differs from the default layout and bucket function, which is
        # all the compiled fast paths know.
        self.lake = not scheme.default
        self.bucketing = scheme.bucketing
        try:
            self.key_encoder = scheme.pk_encoder(phys_types, phys_names)
            self.bucket_same = scheme.bucket_reuses_pk()
            self.bucket_encoder = (self.key_encoder if self.bucket_same
                                   else scheme.bucket_encoder(bucket_types, bucket_names))
            # a prefix lookup's key: the bucket-key columns under the primary-key rule
            self.prefix_encoder = (scheme.prefix_encoder(bucket_types, bucket_names)
                                   if self.bucket_pos != self.phys_pos else None)
        except ValueError as e:
            raise illegal_argument(str(e)) from None
        # bucket-key bytes are a prefix of the key bytes when the bucket key leads the key
        n = len(self.bucket_pos)
        self.bucket_is_prefix = self.phys_pos[:n] == self.bucket_pos and not self.lake
        self.kv_format = desc.kv_format
        types = schema.types
        names = schema.names
        self.row_encoder = (IndexedRowEncoder if self.kv_format == "INDEXED"
                            else CompactedRowEncoder)(types, names)
        self.num_buckets = meta.num_buckets
        self.schema_id = meta.schema_id

    def partition_name(self, values_at_part_pos) -> str:
        parts = []
        for key, i, v in zip(self.partition_keys, self.part_pos, values_at_part_pos, strict=True):
            dtype = self.schema.columns[i].type
            if v is None:
                raise FlussError(f"table '{self.table_name}': partition column '{key}' must not be null")
            try:
                parts.append(partition_value_text(v, dtype))
            except (TypeError, ValueError, AttributeError) as e:
                raise FlussError(f"Field '{key}': table '{self.table_name}', partition column "
                                 f"({dtype}): bad value {v!r}: {e}") from None
        return PARTITION_SEPARATOR.join(parts)

    def bucket_of(self, key: bytes, full_values=None, bucket_values=None) -> int:
        if self.bucket_same:
            bkey = key
        elif bucket_values is not None:
            bkey = self.bucket_encoder.encode(bucket_values)
        else:
            bkey = self.bucket_encoder.encode([full_values[i] for i in self.bucket_pos])
        return self.bucketing(bkey, self.num_buckets)

    def prefix_key_and_bucket(self, values):
        """(prefix-lookup key bytes, bucket) of a row's bucket-key columns (``values`` at schema
        positions); the two encodings differ for data-lake tables."""
        bvals = [values[i] for i in self.bucket_pos]
        key = self.prefix_encoder.encode(bvals)
        bkey = key if not self.lake else self.bucket_encoder.encode(bvals)
        return key, self.bucketing(bkey, self.num_buckets)


class UpsertWriter(BufferedWriter):
    """Upserts and deletes rows of a primary-key table; optionally a partial update."""

    def __init__(self, table, target_columns: list[int] | None = None):
        ctx = table._ctx
        meta = table._meta
        self._ctx = ctx
        self._runtime = ctx.runtime
        self._meta = meta
        self._table_name = str(meta.path)
        if not meta.schema.primary_key:
            raise FlussError(f"Upsert is only supported for primary key tables; table "
                             f"'{self._table_name}' is a log table: use new_append()", CLIENT_ERROR)
        cfg = ctx.config
        self._layout = lay = KvLayout(meta)
        schema = meta.schema
        n = len(schema.columns)
        if target_columns is None and schema.auto_increment_columns:
            # The server fills the column itself and refuses whole rows; the official clients
            # refuse the writer up front, so code expecting the error at create_writer() gets it.
            raise illegal_argument(
                f"This table has auto increment column {', '.join(schema.auto_increment_columns)}. "
                f"Explicitly specifying values for an auto increment column is not allowed. Please Specify "
                f"non-auto-increment columns as target columns using partialUpdate first.")
        if target_columns is not None:
            target_columns = sorted(set(target_columns))
            check_target_columns(meta, target_columns)
            if target_columns == list(range(n)):
                target_columns = None
        self._target = target_columns
        self._row_shaper = RowShaper(schema, range(n) if target_columns is None else target_columns,
                                     sparse=True)
        self._pk_shaper = RowShaper(schema, lay.pk_pos, sparse=True)
        acks, retries, max_inflight, idem = delivery_settings(cfg)
        self._start_sending(cfg, acks, retries, max_inflight, idem, batch_size=cfg.writer_batch_size,
                            assigner=make_no_key_assigner("sticky"),  # never asked: every record has its bucket
                            new_builder=functools.partial(KvRecordBuilder, batch_capacity(cfg)), kind=KIND_KV,
                            kv_target_columns=list(target_columns or []), slot_class=KvSlot)
        tracked = getattr(ctx, "writers", None)
        if tracked is not None:
            tracked.add(self)  # the connection's close() drains it
        self._bulk = None
        # whole rows of unpartitioned tables bucketed by their key: one compiled call per row
        self._fast_row = None
        if target_columns is None and not lay.part_pos and lay.bucket_same:
            self._fast_row = fast = UpsertRow(schema.names, lay.phys_pos, lay.key_encoder, lay.row_encoder,
                                              lay.num_buckets, self._acc._slots,
                                              lay.bucketing if lay.lake else None)
            fast.bind(self, ctx, self._upsert_checked, self._acc.append_slotted)
            # the whole call compiled: the instance attribute is found before the method
            self.upsert = fast.upsert

    def __repr__(self) -> str:
        return "UpsertWriter()"

    # -- placing -------------------------------------------------------------------------------
    def _place(self, values, key: bytes):
        lay = self._layout
        pid = None
        if lay.part_pos:
            pid = self._partition_id(lay.partition_name([values[i] for i in lay.part_pos]))
        try:
            bucket = lay.bucket_of(key, values)
        except (TypeError, ValueError, OverflowError) as e:
            raise self._row_shaper.encode_error(e, None, lay.schema) from None
        return pid, bucket

    def _key(self, values) -> bytes:
        lay = self._layout
        try:
            return lay.key_encoder.encode([values[i] for i in lay.phys_pos])
        except (TypeError, ValueError, OverflowError) as e:
            raise self._row_shaper.encode_error(e, None, lay.schema) from None

    # -- rows -----------------------------------------------------------------------------------
    def upsert(self, row) -> WriteResultHandle:
        """Insert the row, or replace the stored row with the same primary key.

        Checks and encodes the row on the calling thread and returns once it is queued.

        Args:
            row: A dict by column name (nullable columns may be left out), or a list / tuple in schema
                order. For a partial-update writer, the target columns only.

        Returns:
            A handle that completes when the write is acknowledged (shared by the rows of one batch).

        Raises:
            FlussError: A missing key or NOT NULL column, an unknown column, a bad value
                (``Field 'x': ...``), or the writer is closed.

        Example:
            ```python
            writer.upsert({"id": 1, "name": "Alice", "age": 25})
            await writer.flush()
            ```
        """
        return self._upsert_checked(row)

    def _upsert_checked(self, row) -> WriteResultHandle:
        """Every row the fast path (``UpsertRow.upsert``, which stands in for ``upsert`` when
        it applies) declines: checked and encoded here, errors worded as pyfluss words them."""
        if self._closed or self._ctx._closed:
            self._check_open()
        values = self._row_shaper.values(row)
        key = self._key(values)
        lay = self._layout
        try:
            value = lay.row_encoder.encode(values)
        except (TypeError, ValueError, OverflowError) as e:
            raise self._row_shaper.encode_error(e, None, lay.schema) from None
        if lay.part_pos or not lay.bucket_same:
            pid, bucket = self._place(values, key)
        else:
            try:
                pid, bucket = None, lay.bucketing(key, lay.num_buckets)
            except ValueError as e:  # an empty Iceberg key
                raise self._row_shaper.encode_error(e, None, lay.schema) from None
        return self._acc.append_slotted(kv_record(key, value), pid, bucket, lay.num_buckets)

    def delete(self, pk) -> WriteResultHandle:
        """Delete the row with this primary key (deleting an absent key changes nothing).

        Args:
            pk: A dict by key column, or a list / tuple in primary-key order.

        Returns:
            A handle that completes when the delete is acknowledged.

        Raises:
            FlussError: A key column is missing or has a bad value; the table's
                ``table.delete.behavior`` is ``DISABLE`` (from the server, code 57).
        """
        if self._closed or self._ctx._closed:
            self._check_open()
        values = self._pk_shaper.values(pk)
        key = self._key(values)
        pid, bucket = self._place(values, key)
        return self._acc.append_slotted(kv_record(key, None), pid, bucket, self._layout.num_buckets)

    # -- bulk Arrow -----------------------------------------------------------------------------
    def _bulk_writer(self):
        if self._bulk is None:
            from .upsert_bulk import BulkKv
            self._bulk = BulkKv(self)
        return self._bulk

    def upsert_arrow_batch(self, batch: pa.RecordBatch) -> WriteResultHandle:
        """Upsert every row of a ``pyarrow.RecordBatch`` (fluss_fast extra).

        Columns are matched by name; nullable columns may be left out. The KV records are built
        column by column in compiled code.

        Args:
            batch: The rows.

        Returns:
            A handle that completes when every row is acknowledged.

        Raises:
            FlussError: A missing key or NOT NULL column, an extra column, or a type mismatch.
        """
        self._check_open()
        return self._bulk_writer().write(batch, delete=False)

    def upsert_arrow(self, table: pa.Table) -> WriteResultHandle:
        """Upsert every row of a ``pyarrow.Table`` (fluss_fast extra); as `upsert_arrow_batch`.

        Args:
            table: The rows.

        Returns:
            A handle that completes when every row is acknowledged.

        Raises:
            FlussError: A missing key or NOT NULL column, an extra column, or a type mismatch.

        Example:
            ```python
            writer.upsert_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"], "age": [3, 4]}))
            ```
        """
        self._check_open()
        return self._bulk_writer().write(table, delete=False)

    def upsert_pandas(self, df) -> WriteResultHandle:
        """Upsert every row of a ``pandas.DataFrame`` (columns matched by name; fluss_fast extra).

        Args:
            df: The rows; nullable columns may be left out.

        Returns:
            A handle that completes when every row is acknowledged.

        Raises:
            FlussError: A missing key or NOT NULL column, an unknown column, or a value of the wrong type.
        """
        self._check_open()
        return self._bulk_writer().write_pandas(df, delete=False)

    def delete_arrow_batch(self, batch: pa.RecordBatch) -> WriteResultHandle:
        """Delete the rows whose primary keys are in a ``pyarrow.RecordBatch`` (fluss_fast extra).

        Args:
            batch: The primary-key columns only, by name.

        Returns:
            A handle that completes when every delete is acknowledged.

        Raises:
            FlussError: A key column is missing or an extra column is given.
        """
        self._check_open()
        return self._bulk_writer().write(batch, delete=True)

    def delete_arrow(self, table: pa.Table) -> WriteResultHandle:
        """Delete the rows whose primary keys are in a ``pyarrow.Table`` (key columns by name; fluss_fast extra).

        Args:
            table: The primary-key columns only.

        Returns:
            A handle that completes when every delete is acknowledged.

        Raises:
            FlussError: A key column is missing or an extra column is given.
        """
        self._check_open()
        return self._bulk_writer().write(table, delete=True)

    def delete_pandas(self, df) -> WriteResultHandle:
        """Delete the rows whose primary keys are in a ``pandas.DataFrame`` (fluss_fast extra).

        Args:
            df: The primary-key columns only.

        Returns:
            A handle that completes when every delete is acknowledged.
        """
        self._check_open()
        return self._bulk_writer().write_pandas(df, delete=True)

    # -- encoding (runtime thread) --------------------------------------------------------------
    def _encode(self, b) -> None:
        builder = b.builder
        parts = list(b.chunks or ())
        if builder is not None and len(builder):
            parts.append(builder.build())
            b.builder = None
        count = sum(c.num_rows for c in parts)
        b.payload = parts[0].data if len(parts) == 1 else b"".join([c.data for c in parts])
        b.record_count = count
        b.chunks = None

    # -- close --------------------------------------------------------------------------------
    @on_runtime
    async def close(self) -> None:
        """Deliver what the writer holds and refuse further writes.

        Raises:
            FlussError: Something could not be delivered (the message says how many records).
        """
        await self._close(report_lost=False)


def done_handle(runtime) -> WriteResultHandle:
    return WriteResultHandle(_done_future(), runtime)
