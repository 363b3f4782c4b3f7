"""Bulk keyed writes from Arrow: ``UpsertWriter.upsert_arrow`` / ``delete_arrow`` and friends.

Columns are matched to the table by name. Each column becomes numpy buffers (``_spec``) and
``codec.kvcolumns.encode_kv_columns`` builds the KV records of a whole batch in one compiled loop,
grouped by bucket; the groups go into the writer's accumulator as finished chunks. Types the
columnar encoder does not cover (ARRAY, MAP, ROW, DECIMAL with precision > 18, IndexedRow kv
format) take the per-row path instead, with the same checks. A data-lake table's keys and buckets
(``codec.keys.KeyScheme``) are encoded per row by the table's key encoders and handed to the
columnar encoder, which still writes the values column by column.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import datatypes as T
from ...codec.kv import kvcolumns as K
from ...errors import FlussError
from .batch import WriteResultHandle
from .kvrecords import KvChunk
from .writer import _done_future

_MAX_ROWS = 64 * 1024  # rows encoded per call: bounds the scratch memory of one call

_FIXED = {T.TINYINT: (K.I8, np.int8), T.SMALLINT: (K.I16, np.int16), T.INTEGER: (K.VAR32, np.int32),
          T.BIGINT: (K.VAR64, np.int64), T.FLOAT: (K.F32, np.float32), T.DOUBLE: (K.F64, np.float64)}
_PER_MS = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}


class _RowWise(Exception):
    """This batch needs the per-row path."""


def _values(arr: pa.Array, dtype):
    """The values of ``arr`` as a numpy array of ``dtype``, nulls as zero."""
    if arr.null_count:
        arr = pc.fill_null(arr, pa.scalar(0, arr.type) if not pa.types.is_boolean(arr.type) else False)
    return np.ascontiguousarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


def _spec(arr: pa.Array, dt) -> tuple:
    """The kvcolumns spec of one column already cast to the table's Arrow type."""
    valid = None
    if arr.null_count:
        valid = np.ascontiguousarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)
    root = dt.root
    if root in _FIXED:
        kind, np_type = _FIXED[root]
        return (kind, valid, _values(arr, np_type))
    if root == T.BOOLEAN:
        return (K.BOOL, valid, _values(arr, np.uint8))
    if root == T.DATE:
        return (K.VAR32, valid, _values(arr.cast(pa.int32()), np.int32))
    if root == T.TIME:
        unit = arr.type.unit
        raw = _values(arr.cast(pa.int64() if pa.types.is_time64(arr.type) else pa.int32()), np.int64)
        per = _PER_MS[unit]
        millis = raw * 1000 if per is None else raw // per
        return (K.VAR32, valid, np.ascontiguousarray(millis, dtype=np.int32))
    if root in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        unit = arr.type.unit
        raw = _values(arr.cast(pa.int64()), np.int64)
        per = _PER_MS[unit]
        if per is None:
            millis, nanos = raw * 1000, np.zeros(len(raw), dtype=np.int32)
        else:
            millis = np.floor_divide(raw, per)
            nanos = ((raw - millis * per) * (1_000_000 // per)).astype(np.int32)
        if (dt.precision if dt.precision is not None else 6) <= 3:
            return (K.VAR64, valid, np.ascontiguousarray(millis, dtype=np.int64))
        return (K.TS, valid, np.ascontiguousarray(millis, dtype=np.int64), nanos)
    if root == T.DECIMAL and (dt.precision or 10) <= 18:
        a = arr if not arr.null_count else pc.fill_null(arr, pa.scalar(0, arr.type))
        words = np.frombuffer(a.buffers()[1], dtype=np.int64)
        low = words[2 * a.offset:2 * (a.offset + len(a))][::2]
        return (K.VAR64, valid, np.ascontiguousarray(low))
    if root in (T.STRING, T.CHAR, T.BYTES, T.BINARY):
        big = arr.cast(pa.large_string() if root in (T.STRING, T.CHAR) else pa.large_binary())
        bufs = big.buffers()
        offsets = np.frombuffer(bufs[1], dtype=np.int64)[big.offset:big.offset + len(big) + 1]
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        if valid is not None:  # a null may still span bytes in some producers' buffers
            offsets = offsets.copy()
        return (K.BYTES, valid, np.ascontiguousarray(offsets), data)
    raise _RowWise()


class BulkKv:
    def __init__(self, writer):
        self._w = writer
        lay = writer._layout
        self._lay = lay
        schema = lay.schema
        self._schema = schema
        self._arrow = schema.to_arrow()
        self._names = schema.names
        target = writer._target
        self._target = set(range(len(self._names)) if target is None else target)
        self._rowwise_format = lay.kv_format == "INDEXED"

    def _fail(self, msg: str) -> FlussError:
        return FlussError(f"table '{self._lay.table_name}': {msg}")

    # -- entry points ---------------------------------------------------------------------------
    def write_pandas(self, df, delete: bool) -> WriteResultHandle:
        try:
            table = pa.Table.from_pandas(df, preserve_index=False)
        except (pa.ArrowException, ValueError, TypeError) as e:
            raise self._fail(f"cannot convert the DataFrame to Arrow: {e}") from None
        return self.write(table, delete)

    def write(self, data, delete: bool) -> WriteResultHandle:
        w = self._w
        if isinstance(data, pa.RecordBatch):
            batches = [data]
        elif isinstance(data, pa.Table):
            batches = data.to_batches()
        else:
            raise self._fail(f"expected a pyarrow.Table or RecordBatch, got {type(data).__name__}")
        futures: list = []
        for rb in batches:
            for start in range(0, rb.num_rows, _MAX_ROWS):
                self._write_batch(rb.slice(start, _MAX_ROWS), delete, futures)
        if not futures:
            return WriteResultHandle(_done_future(), w._runtime)
        return WriteResultHandle(futures[0] if len(futures) == 1 else tuple(futures), w._runtime)

    # -- one batch ------------------------------------------------------------------------------
    def _columns(self, rb: pa.RecordBatch, delete: bool):
        """{schema position: Arrow array cast to the table's type} of the columns written."""
        lay = self._lay
        given = rb.schema.names
        wanted = set(lay.pk_pos) if delete else self._target
        for name in given:
            if name not in self._names:
                raise FlussError(f"Unknown field '{name}'. Expected: {', '.join(self._names)}")
        out = {}
        for i in sorted(wanted):
            name = self._names[i]
            dt = self._schema.columns[i].type
            if name not in given:
                if delete or i in lay.pk_pos or not dt.nullable:
                    raise FlussError(f"Missing value for non-nullable field '{name}'")
                continue
            arr = rb.column(given.index(name))
            target = self._arrow.field(i).type
            if arr.type != target:
                try:
                    arr = arr.cast(target)
                except (pa.ArrowException, ValueError, TypeError) as e:
                    raise FlussError(f"Field '{name}': cannot convert {arr.type} to {target}: {e}") from None
            if arr.null_count and (not dt.nullable or i in lay.pk_pos):
                raise FlussError(f"Field '{name}': column is NOT NULL but has {arr.null_count} null "
                                 f"value(s)")
            out[i] = arr
        return out

    def _write_batch(self, rb: pa.RecordBatch, delete: bool, futures: list) -> None:
        if not rb.num_rows:
            return
        cols = self._columns(rb, delete)
        lay = self._lay
        groups = self._split_partitions(cols, rb.num_rows) if lay.part_pos else [(None, None)]
        for pid, idx in groups:
            part = cols if idx is None else {i: a.take(idx) for i, a in cols.items()}
            n = rb.num_rows if idx is None else len(idx)
            try:
                if self._rowwise_format:
                    raise _RowWise()
                specs = self._specs(part)
            except _RowWise:
                self._rowwise(part, n, delete, futures)
                continue
            keys = buckets = None
            if lay.lake:
                keys, buckets = self._lake_keys(part, n)
            try:
                groups_out = K.encode_kv_columns(
                    specs, lay.phys_pos, None if lay.bucket_same else lay.bucket_pos,
                    None if delete else list(range(len(self._names))), n, lay.num_buckets,
                    keys, buckets)
            except K.KeyNullError as e:
                raise FlussError(f"Field '{self._names[e.column]}': key column is null at row "
                                 f"{e.row}") from None
            acc = self._w._acc
            for bucket, (data, count) in groups_out.items():
                futures.append(acc.append_chunk(KvChunk(data, count), len(data), pid, bucket,
                                                lay.num_buckets))

    def _lake_keys(self, cols, n: int):
        """Every row's key and bucket, a data-lake table's way (the key columns as Python values)."""
        lay = self._lay
        w = self._w
        pk_cols = [cols[i].to_pylist() for i in lay.phys_pos]
        try:
            keys = [lay.key_encoder.encode(vals) for vals in zip(*pk_cols, strict=True)]
            fn, nb = lay.bucketing, lay.num_buckets
            if lay.bucket_same:
                buckets = [fn(k, nb) for k in keys]
            else:
                enc = lay.bucket_encoder
                bk_cols = [cols[i].to_pylist() for i in lay.bucket_pos]
                buckets = [fn(enc.encode(vals), nb) for vals in zip(*bk_cols, strict=True)]
        except (TypeError, ValueError, OverflowError) as e:
            raise w._row_shaper.encode_error(e, None, lay.schema) from None
        return keys, buckets

    def _specs(self, cols) -> list:
        specs = []
        for i, c in enumerate(self._schema.columns):
            arr = cols.get(i)
            if arr is None:
                specs.append((K.NULL, None))
            else:
                specs.append(_spec(arr, c.type))
        return specs

    def _split_partitions(self, cols, n: int):
        lay = self._lay
        keys = [cols[i] for i in lay.part_pos]
        if all(len(pc.unique(k)) == 1 for k in keys):
            name = lay.partition_name([k[0].as_py() for k in keys])
            return [(self._w._partition_id(name), None)]
        # the distinct partitions (few), then the rows of each
        table = pa.table({str(j): k for j, k in enumerate(keys)})
        distinct = table.group_by([str(j) for j in range(len(keys))]).aggregate([]).to_pylist()
        out = []
        for combo in distinct:
            values = [combo[str(j)] for j in range(len(keys))]
            mask = None
            for j, v in enumerate(values):
                m = pc.equal(keys[j], pa.scalar(v, keys[j].type))
                mask = m if mask is None else pc.and_(mask, m)
            idx = pc.indices_nonzero(mask)
            out.append((self._w._partition_id(lay.partition_name(values)), idx))
        return out

    def _rowwise(self, cols, n: int, delete: bool, futures: list) -> None:
        """Types the columnar encoder lacks: the writer's per-row path, batch by batch."""
        names = self._names
        table = pa.table({names[i]: a for i, a in cols.items()})
        w = self._w
        seen = set()
        for row in table.to_pylist():
            h = w.delete({names[i]: row[names[i]] for i in self._lay.pk_pos}) if delete else w.upsert(row)
            f = h._future
            if id(f) not in seen:
                seen.add(id(f))
                futures.append(f)
