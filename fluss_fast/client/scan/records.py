"""What a scan hands to the user: ScanRecord / ScanRecords (record scanner) and RecordBatch.

Nothing here is built before it is asked for. A poll result is a set of *chunks*: a slice of a
decoded Arrow batch with its offsets, change types and commit timestamp. ``ScanRecords`` makes
``ScanRecord`` objects for a bucket the first time that bucket is touched, and a record's ``row``
dict is only built on first access, from per-batch Python column lists that are converted once and
shared by every record of that batch (also across polls, when ``max-poll-records`` splits a batch).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator

import pyarrow as pa

from ...codec._select import pick as _pick
from ...metadata.log import ChangeType
from ...metadata.table import TableBucket
from .convert import column_to_pylist

__all__ = ["RowSource", "RowBuilder", "Chunk", "ScanRecord", "ScanRecords", "RecordBatch", "row_kinds"]

_CHANGE_TYPES = [ChangeType(i) for i in range(5)]
_APPEND_ONLY = ChangeType.AppendOnly


_sliceable_cache: dict = {}


def _flat_type(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return all(_flat_type(t.field(i).type) for i in range(t.num_fields))
    return not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t)
                or pa.types.is_fixed_size_list(t))


def _sliceable(schema: pa.Schema) -> bool:
    hit = _sliceable_cache.get(schema)
    if hit is None:
        hit = _sliceable_cache[schema] = all(_flat_type(f.type) for f in schema)
    return hit


#: rows of a batch whose slow columns (see RowBuilder) are converted to Python values together:
#: one C loop per column for many rows, while a 64 k-row batch handed out 500 records a poll
#: never holds all its rows as objects
_WINDOW_ROWS = 8192

#: RowBuilder's column kinds; the compiled twin reads every kind but "slow" from the buffers
KIND_CODES = {"slow": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float": 5, "double": 6,
              "bool": 7, "string": 8, "binary": 9, "timestamp": 10, "date": 11, "decimal": 12}
_kinds_cache: dict = {}


def row_kinds(schema: pa.Schema) -> list[int]:
    """RowBuilder's kind of every column of ``schema`` (``KIND_CODES``)."""
    hit = _kinds_cache.get(schema)
    if hit is None:
        T = pa.types
        out = []
        for f in schema:
            t = f.type
            name = ("int8" if T.is_int8(t) else "int16" if T.is_int16(t) else
                    "int32" if T.is_int32(t) else "int64" if T.is_int64(t) else
                    "float" if T.is_float32(t) else "double" if T.is_float64(t) else
                    "bool" if T.is_boolean(t) else "string" if T.is_string(t) else
                    "binary" if T.is_binary(t) else "timestamp" if T.is_timestamp(t) else
                    "date" if T.is_date32(t) else
                    "decimal" if T.is_decimal128(t) and t.precision <= 18 else "slow")
            out.append(KIND_CODES[name])
        hit = _kinds_cache[schema] = out
    return hit


class RowBuilder:
    """Row dicts of one Arrow batch: the columns of kind "slow" (their indices in ``slow``) come
    as Python value lists from the caller, the others are converted here (the compiled twin reads
    them straight from the Arrow buffers)."""

    def __init__(self, batch: pa.RecordBatch, kinds):
        if len(kinds) != batch.num_columns:
            raise ValueError(f"{len(kinds)} column kinds for a batch of {batch.num_columns} columns")
        for k in kinds:
            if k not in _KIND_VALUES:
                raise ValueError(f"unknown column kind {k}")
        self._batch = batch
        self._names = list(batch.schema.names)
        self._kinds = list(kinds)
        self.slow = [j for j, k in enumerate(kinds) if k == 0]

    def rows(self, start: int, count: int, slow_cols: list, slow_first: int) -> list[dict]:
        """The row dicts of rows ``start .. start+count``; ``slow_cols[i]`` holds the values of
        column ``slow[i]`` from row ``slow_first`` on."""
        n = self._batch.num_rows
        if start < 0 or count < 0 or start + count > n:
            raise IndexError(f"rows {start}..{start + count} of a batch of {n}")
        if len(slow_cols) != len(self.slow):
            raise ValueError(f"{len(slow_cols)} value lists for {len(self.slow)} converted columns")
        for col in slow_cols:
            if slow_first > start or len(col) < start + count - slow_first:
                raise IndexError(f"value list of rows {slow_first}..{slow_first + len(col)} "
                                 f"does not hold rows {start}..{start + count}")
        cols = []
        slow = iter(slow_cols)
        lo = start - slow_first
        for j, k in enumerate(self._kinds):
            if k == 0:
                cols.append(next(slow)[lo:lo + count])
            else:
                cols.append(column_to_pylist(self._batch.column(j).slice(start, count)))
        return build_rows(self._names, cols, 0, count)


_KIND_VALUES = frozenset(KIND_CODES.values())


class RowSource:
    """One decoded batch (already projected/filtered to the user's columns), shared by its chunks.

    Row dicts are made by a RowBuilder. Its slow columns (temporal, decimal, nested) are
    converted a window of rows at a time, on first row access, and kept until a row outside the
    window is asked for: converting a column slice at once is one C loop, converting value by
    value would be one Python call per value. Chunks are read in row order, so the window only
    moves forward and every value is converted once.
    """

    __slots__ = ("batch", "names", "_cols", "_lo", "_hi", "_builder")

    def __init__(self, batch: pa.RecordBatch):
        self.batch = batch
        self.names = batch.schema.names
        self._cols = None
        self._lo = self._hi = 0
        self._builder = None

    def _row_builder(self) -> RowBuilder:
        b = self._builder
        if b is None:
            b = self._builder = RowBuilder(self.batch, row_kinds(self.batch.schema))
        return b

    def columns(self, start: int = 0, count: int | None = None):
        """``(value lists of the slow columns, first row they hold)`` covering rows
        ``start .. start+count``."""
        n = self.batch.num_rows
        end = n if count is None else start + count
        cols = self._cols
        if cols is not None and self._lo <= start and end <= self._hi:
            return cols, self._lo
        self._cols = None  # drop the old window before building the next one
        slow = [self.batch.column(j) for j in self._row_builder().slow]
        # a slice of a list/map column still converts its whole child array: no windows then
        if _sliceable(self.batch.schema):
            hi = max(end, min(n, start + _WINDOW_ROWS))
        else:
            start, hi = 0, n
        if start == 0 and hi >= n:
            cols = [column_to_pylist(c) for c in slow]
        else:
            cols = [column_to_pylist(c.slice(start, hi - start)) for c in slow]
        self._cols, self._lo, self._hi = cols, start, hi
        return cols, start

    def rows(self, start: int, count: int) -> list[dict]:
        """The row dicts of rows ``start .. start+count``."""
        b = self._row_builder()
        if b.slow:
            cols, first = self.columns(start, count)
        else:
            cols, first = [], start
        return b.rows(start, count, cols, first)


class Chunk:
    """Rows ``[start, start + count)`` of ``source`` for one bucket.

    ``offsets`` is None when the rows have consecutive offsets starting at ``base_offset``, else a
    list (a filter dropped rows in between). ``change_types`` is None for append-only data, else
    one byte per row of ``source``. ``next_offset`` is where the bucket's position goes once the
    chunk is consumed.
    """

    __slots__ = ("bucket", "source", "start", "count", "base_offset", "offsets", "change_types",
                 "timestamp", "next_offset", "_rows")

    def __init__(self, bucket, source: RowSource, start: int, count: int, base_offset: int,
                 offsets, change_types, timestamp: int, next_offset: int):
        self.bucket = bucket
        self.source = source
        self.start = start
        self.count = count
        self.base_offset = base_offset
        self.offsets = offsets
        self.change_types = change_types
        self.timestamp = timestamp
        self.next_offset = next_offset
        self._rows = None

    def offset_at(self, k: int) -> int:
        """Offset of the chunk's k-th row."""
        if self.offsets is None:
            return self.base_offset + k
        return self.offsets[k]

    @property
    def last_offset(self) -> int:
        return self.offset_at(self.count - 1) if self.count else self.base_offset - 1

    def split(self, k: int):
        """(first k rows, the rest); the first part's next offset is the rest's first offset."""
        rest_base = self.offset_at(k)
        head = Chunk(self.bucket, self.source, self.start, k, self.base_offset,
                     None if self.offsets is None else self.offsets[:k], self.change_types,
                     self.timestamp, rest_base)
        tail = Chunk(self.bucket, self.source, self.start + k, self.count - k, rest_base,
                     None if self.offsets is None else self.offsets[k:], self.change_types,
                     self.timestamp, self.next_offset)
        return head, tail

    def arrow(self) -> pa.RecordBatch:
        b = self.source.batch
        if self.start == 0 and self.count == b.num_rows:
            return b
        return b.slice(self.start, self.count)

    def records(self) -> list[ScanRecord]:
        return make_records(self, _CHANGE_TYPES, _APPEND_ONLY)

    def rows(self) -> list[dict]:
        """The row dicts of this chunk, built together on the first access of any of them."""
        rows = self._rows
        if rows is None:
            rows = self._rows = self.source.rows(self.start, self.count)
        return rows


def make_records(chunk: Chunk, change_types_table, append_only) -> list[ScanRecord]:
    """The ScanRecords of ``chunk``, in row order."""
    start, ts, cts = chunk.start, chunk.timestamp, chunk.change_types
    base, offsets = chunk.base_offset, chunk.offsets
    new = ScanRecord.__new__
    out = []
    append = out.append
    for k in range(chunk.count):
        r = new(ScanRecord)
        r._chunk = chunk
        r._k = k
        r._offset = base + k if offsets is None else offsets[k]
        r._ts = ts
        r._ct = append_only if cts is None else change_types_table[cts[start + k]]
        r._row = None
        append(r)
    return out


def build_rows(names: list, columns: list, start: int, count: int) -> list[dict]:
    """One dict per row ``start .. start+count`` from per-column value lists."""
    sliced = [c[start:start + count] for c in columns]
    if not sliced:
        return [{} for _ in range(count)]
    return [dict(zip(names, values, strict=True)) for values in zip(*sliced, strict=True)]


class ScanRecord:
    """A single scan record: ``offset``, ``timestamp``, ``change_type`` and the ``row`` dict."""

    __slots__ = ("_chunk", "_k", "_offset", "_ts", "_ct", "_row")

    def __init__(self):
        raise TypeError("No constructor defined for ScanRecord")

    @property
    def offset(self) -> int:
        """The record's offset in its bucket's log."""
        return self._offset

    @property
    def timestamp(self) -> int:
        """The record's commit time, milliseconds since the epoch."""
        return self._ts

    @property
    def change_type(self) -> ChangeType:
        """The `ChangeType`: ``APPEND_ONLY`` for log tables, ``+I``/``-U``/``+U``/``-D`` for changelogs."""
        return self._ct

    @property
    def row(self) -> dict[str, object]:
        """The row as ``{column: value}``, built on first access (values as pyfluss returns them)."""
        row = self._row
        if row is None:
            row = self._row = self._chunk.rows()[self._k]
        return row

    def __str__(self) -> str:
        return (f"ScanRecord(offset={self._offset}, timestamp={self._ts}, "
                f"change_type={self._ct.short_string()})")

    __repr__ = __str__


def _want_bucket(bucket) -> None:
    if not isinstance(bucket, TableBucket):
        what = "'None' is" if bucket is None else f"'{type(bucket).__name__}' object is"
        raise TypeError(f"argument 'bucket': {what} not an instance of 'TableBucket'")


class ScanRecords:
    """Records of one poll, grouped by bucket; flat iteration and per-bucket access."""

    __slots__ = ("_chunks", "_records", "_count")

    def __init__(self, chunks_by_bucket: dict[TableBucket, list[Chunk]] | None = None):
        self._chunks = chunks_by_bucket or {}
        self._records: dict[TableBucket, list[ScanRecord]] = {}
        self._count = sum(c.count for chunks in self._chunks.values() for c in chunks)

    def _bucket_records(self, bucket) -> list[ScanRecord]:
        recs = self._records.get(bucket)
        if recs is None:
            chunks = self._chunks.get(bucket)
            if chunks is None:
                return []
            if len(chunks) == 1:
                recs = chunks[0].records()
            else:
                recs = []
                for c in chunks:
                    recs.extend(c.records())
            self._records[bucket] = recs
        return recs

    def buckets(self) -> list[TableBucket]:
        """The buckets that have records in this poll.

        Returns:
            A list of `TableBucket`.
        """
        return list(self._chunks)

    def records(self, bucket: TableBucket) -> list[ScanRecord]:
        """The records of one bucket, in offset order.

        Args:
            bucket: One of `buckets`.

        Returns:
            A list of `ScanRecord` (empty for a bucket without records).
        """
        _want_bucket(bucket)
        return list(self._bucket_records(bucket))

    def count(self) -> int:
        """The number of records (also ``len(records)``)."""
        return self._count

    def is_empty(self) -> bool:
        """Whether the poll returned no records."""
        return self._count == 0

    def keys(self) -> list[TableBucket]:
        """The buckets, as `buckets` (mapping-style access)."""
        return list(self._chunks)

    def values(self) -> Iterator[list[ScanRecord]]:
        """Each bucket's records.

        Returns:
            An iterator of lists of `ScanRecord`.
        """
        for b in list(self._chunks):
            yield list(self._bucket_records(b))

    def items(self) -> Iterator:
        """``(bucket, records)`` pairs.

        Returns:
            An iterator of ``(TableBucket, list of ScanRecord)``.
        """
        for b in list(self._chunks):
            yield b, list(self._bucket_records(b))

    def __len__(self) -> int:
        return self._count

    def _flat(self, idx: int) -> ScanRecord:
        for b, chunks in self._chunks.items():
            n = sum(c.count for c in chunks)
            if idx < n:
                return self._bucket_records(b)[idx]
            idx -= n
        raise RuntimeError("internal error: total_count out of sync with records")

    def __getitem__(self, key):
        if isinstance(key, TableBucket):
            return self.records(key)
        if isinstance(key, slice):
            return [self._flat(i) for i in range(*key.indices(self._count))]
        try:
            idx = key.__index__()
        except AttributeError:
            raise TypeError("index must be int, slice, or TableBucket") from None
        n = self._count
        if idx < 0:
            idx += n
        if idx < 0 or idx >= n:
            raise IndexError(f"index {idx} out of range for ScanRecords of size {n}")
        return self._flat(idx)

    def __contains__(self, bucket) -> bool:
        # pyfluss: only a TableBucket may be asked about (``0 in records`` is a TypeError)
        _want_bucket(bucket)
        return bucket in self._chunks

    def __iter__(self) -> Iterator[ScanRecord]:
        # an iterator made in C, not a generator: one frame resumption per record saved
        chunks = self._chunks
        if len(chunks) == 1:
            for b in chunks:
                return iter(self._bucket_records(b))
        return itertools.chain.from_iterable(map(self._bucket_records, list(chunks)))

    def __str__(self) -> str:
        return f"ScanRecords(records={self._count}, buckets={len(self._chunks)})"

    __repr__ = __str__


class RecordBatch:
    """An Arrow batch of one bucket with the offsets of its first and last row."""

    __slots__ = ("_batch", "_bucket", "_base_offset", "_last_offset")

    def __init__(self, batch: pa.RecordBatch, bucket: TableBucket, base_offset: int,
                 last_offset: int):
        self._batch = batch
        self._bucket = bucket
        self._base_offset = base_offset
        self._last_offset = last_offset

    @staticmethod
    def _from_chunk(chunk: Chunk) -> RecordBatch:
        return RecordBatch(chunk.arrow(), chunk.bucket, chunk.base_offset, chunk.last_offset)

    @property
    def batch(self) -> pa.RecordBatch:
        """The rows as a ``pyarrow.RecordBatch``."""
        return self._batch

    @property
    def bucket(self) -> TableBucket:
        """The bucket the rows come from."""
        return self._bucket

    @property
    def base_offset(self) -> int:
        """The offset of the first row."""
        return self._base_offset

    @property
    def last_offset(self) -> int:
        """The offset of the last row."""
        return self._last_offset

    def __str__(self) -> str:
        return (f"RecordBatch(bucket={self._bucket}, base_offset={self._base_offset}, "
                f"last_offset={self._last_offset}, rows={self._batch.num_rows})")

    __repr__ = __str__


# The pure classes stay importable under these names whichever implementation is in use.
ScanRecord_py, make_records_py, build_rows_py = ScanRecord, make_records, build_rows
RowBuilder_py = RowBuilder
# KIND_CODES is not swapped: tests/codec/test_twins_loaded.py checks the compiled copy equals it
_pick("fluss_fast.client.scan._records", globals(), ["ScanRecord", "make_records", "build_rows", "RowBuilder"])
