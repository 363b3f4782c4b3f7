"""Change streams for the engines: the ``$changelog`` / ``$binlog`` virtual tables and Spark's
streaming read of a primary-key table.

All three read a range of the base table's log offsets through the client's virtual-table scanner
(``fluss_fast.client.virtual``), so planning, offsets and checkpoints are those of a log table.
A ``$binlog`` ``update`` sits at the offset of its ``+U``; a range therefore starts reading one
offset early, so that an ``-U`` just before the range still meets its ``+U``, and keeps only the
rows whose ``_log_offset`` is inside the range (each row belongs to exactly one range).
"""
from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from .. import datatypes as T
from ..errors import ErrorCode, FlussError
from . import connections
from .options import SourceOptions
from .ranges import BucketRange

# the change types a primary-key table's stream keeps: the rows' new values (an upsert stream)
_UPSERT_KINDS: pa.Array | None = None


def _upsert_kinds() -> pa.Array:
    # built on first use: pa.array over a Python list imports pandas, a second's start-up on a busy
    # box for every engine worker that merely imports this module
    global _UPSERT_KINDS
    if _UPSERT_KINDS is None:
        _UPSERT_KINDS = pa.array(["insert", "update_after"], pa.string())
    return _UPSERT_KINDS


def schema_info(base: T.SchemaInfo, kind: str) -> T.SchemaInfo:
    """The virtual table's columns as a Fluss schema (so an engine's type mapping applies as is)."""
    meta = [T.Column("_change_type", T.DataType(T.STRING, nullable=False)),
            T.Column("_log_offset", T.DataType(T.BIGINT, nullable=False)),
            T.Column("_commit_timestamp", T.DataType(T.TIMESTAMP_LTZ, nullable=False, precision=3))]
    if kind == "changelog":
        return T.SchemaInfo(tuple(meta) + tuple(base.columns))
    row = T.DataType(T.ROW, fields=tuple(T.RowField(c.name, c.type) for c in base.columns))
    return T.SchemaInfo(tuple(meta) + (T.Column("before", row), T.Column("after", row)))


def check(opts: SourceOptions, base: T.SchemaInfo) -> None:
    if opts.virtual == "binlog" and not base.primary_key:
        raise FlussError(f"Table '{opts.name}': $binlog is only supported for primary-key tables and "
                         f"'{opts.database}.{opts.table}' is a log table (read "
                         f"'{opts.database}.{opts.table}$changelog')", ErrorCode.CLIENT_ERROR)


class View:
    """What the readers need of a table's metadata, for the virtual table's columns."""

    def __init__(self, meta, kind: str):
        self.base = meta
        self.schema = schema_info(meta.schema, kind)
        self.table_id = meta.table_id
        self.schema_id = meta.schema_id
        self.num_buckets = meta.num_buckets
        self.is_partitioned = meta.is_partitioned
        self.partition_keys = meta.partition_keys


async def _next(scanner, stops) -> list[pa.RecordBatch]:
    """The next converted batches of a bounded virtual read; [] once every bucket is done."""
    return await scanner._next_bounded(stops, scanner._convert)


def read_changes(opts: SourceOptions, r: BucketRange, kind: str) -> Iterator[pa.RecordBatch]:
    """The ``$changelog`` / ``$binlog`` rows of the range ``r`` of the base table's log, as the
    client builds them (Fluss Arrow types, every virtual column)."""
    if kind == "binlog" and r.start > 0:
        yielded = False
        try:
            for rb in _read_changes(opts, r, kind, r.start - 1):
                yielded = True
                yield rb
            return
        except FlussError as e:
            # the offset before the range is gone (log retention): nothing of it can pair up
            if yielded or "out of range" not in e.message:
                raise
    yield from _read_changes(opts, r, kind, r.start)


def _read_changes(opts: SourceOptions, r: BucketRange, kind: str, begin: int) -> Iterator[pa.RecordBatch]:
    table = connections.table(opts.client, opts.database, f"{opts.table}${kind}", r.table_id)
    scanner = table.new_scan().create_log_scanner().unwrap()
    if r.partition_id is None:
        scanner.subscribe(r.bucket, begin)
    else:
        scanner.subscribe_partition(r.partition_id, r.bucket, begin)
    tb = r.table_bucket
    stops = {tb: r.stop}
    f = scanner._fetcher
    f.set_stops(stops)
    timeout = opts.poll_timeout_ms / 1000.0
    try:
        while True:
            try:
                got = scanner._runtime.call(_next(scanner, stops), timeout)
            except FlussError as e:
                if e.error_code == ErrorCode.REQUEST_TIME_OUT:
                    raise FlussError(f"Reading '{opts.name}' {r!r}: no data for {opts.poll_timeout_ms} "
                                     f"ms before reaching offset {r.stop} (option scan.poll.timeout)",
                                     e.error_code) from None
                raise
            if not got:
                return
            for rb in got:
                off = rb.column(1)
                keep = pc.and_(pc.greater_equal(off, r.start), pc.less(off, r.stop))
                rb = rb.filter(keep)
                if rb.num_rows:
                    yield rb
    finally:
        f.unassign([tb])
        f.set_stops(None)


class ChangeReader:
    """Reads ranges of a virtual table (``kind`` = changelog / binlog) or, for a primary-key
    table's stream, the upsert stream of its changelog (inserts and new values of updates)."""

    def __init__(self, opts: SourceOptions, kind: str, upserts: bool, columns: list[str],
                 all_names: list[str]):
        self.opts = opts
        self.kind = kind
        self.upserts = upserts
        self.columns = columns
        # the client's virtual batches hold the 3 metadata columns before the data columns
        offset = 3 if upserts else 0
        self.indices: list[int] | None = (
            None if not upserts and columns == all_names
            else [offset + all_names.index(c) for c in columns])

    def read(self, r: BucketRange, convert) -> Iterator[pa.RecordBatch]:
        for rb in read_changes(self.opts, r, self.kind):
            if self.upserts:
                rb = rb.filter(pc.is_in(rb.column(0), value_set=_upsert_kinds()))
                if not rb.num_rows:
                    continue
            if self.indices is not None:
                rb = rb.select(self.indices)
            yield convert(rb)
