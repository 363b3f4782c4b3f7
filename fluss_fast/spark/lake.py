"""Batch reads of data-lake tables (docs/guide/lake.md): the union of the lake snapshot and the Fluss
log after it, and the lake snapshot alone (``db.t$lake``, or ``read.optimized`` = true).

As Java's Spark connector: a batch read of a table with ``table.datalake.enabled`` is the union read
once a lake snapshot exists (before the first tiering round it is the Fluss-only read); a time-range
read, a stream and the ``$changelog`` / ``$binlog`` tables read Fluss only. Planning
(``fluss_fast.lake.plan_buckets``, on the driver) fixes the lake snapshot and every bucket's log end;
each Spark task reads one bucket (of one partition) with ``fluss_fast.lake.union_read`` through its
worker's cached connection.
"""
from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql.datasource import InputPartition

from .. import datatypes as T
from ..engine import connections
from ..engine.options import SourceOptions
from ..errors import ErrorCode, FlussError
from ..lake import LakeBucketPlan, plan_buckets, union_read
from ..lake.paimon import LakeTableInfo, _pypaimon, datalake_enabled
from ..sync import runtime_of

# the lake snapshot's system columns after the table's (Java's $lake; fluss_fast.lake.lake_scan)
_SYSTEM = (T.Column("__bucket", T.DataType(T.INTEGER)),
           T.Column("__offset", T.DataType(T.BIGINT)),
           T.Column("__timestamp", T.DataType(T.TIMESTAMP_LTZ, precision=6)))


class LakeView:
    """What the readers need of a table's metadata, for ``db.t$lake`` (the table's columns and the
    system columns ``__bucket``, ``__offset``, ``__timestamp``)."""

    def __init__(self, meta):
        self.base = meta
        self.schema = T.SchemaInfo(tuple(meta.schema.columns) + _SYSTEM)
        self.table_id = meta.table_id
        self.schema_id = meta.schema_id
        self.num_buckets = meta.num_buckets
        self.is_partitioned = meta.is_partitioned
        self.partition_keys = meta.partition_keys


class LakeBucket(InputPartition):
    """One bucket (of one partition) of a lake read: the planned lake snapshot and log range."""

    def __init__(self, table_id: int, plan: LakeBucketPlan, lake_only: bool):
        self.table_id = table_id
        self.plan = plan
        self.lake_only = lake_only

    def __repr__(self) -> str:
        p = self.plan
        part = f"partition {p.partition}, " if p.partition else ""
        kind = "lake" if self.lake_only else f"lake + log [{p.start}, {p.end})"
        return f"LakeBucket({part}bucket {p.bucket}, snapshot {p.snapshot_id}, {kind})"


def _call(opts: SourceOptions, fn, *args, **kwargs):
    """``fn(connection, path, ...)`` on the worker's cached connection, blocking."""
    inner = connections.connection(opts.client).unwrap()
    return runtime_of(inner).call(fn(inner, opts.path, *args, **kwargs))


async def _latest_snapshot_id(conn, path):
    from ..lake.offsets import lake_offsets

    return (await lake_offsets(conn.get_admin(), path))[0]


def lake_info(opts: SourceOptions, info=None) -> LakeTableInfo:
    """The table's lake, or a FlussError naming the read (``$lake``, ``read.optimized``, the union)
    when the table has none."""
    if info is None:
        info = connections.connection(opts.client).get_admin().get_table_info(opts.path)
    try:
        return LakeTableInfo(info)
    except FlussError as e:
        what = f"'{opts.name}' with read.optimized = true" if opts.read_optimized else f"'{opts.name}'"
        raise FlussError(f"Cannot read {what}: {e.message}", e.error_code) from None


def mode(opts: SourceOptions) -> str | None:
    """``"lake"`` (the snapshot alone), ``"union"`` (lake + log) or None (Fluss only) for a batch
    read; probed when the read is planned: a lake snapshot, once there, stays."""
    if opts.virtual not in (None, "lake"):
        return None
    if opts.virtual is None and opts.incremental_start is not None:
        return None  # a time-range read is of the Fluss log, as in Java
    explicit = opts.virtual == "lake" or opts.read_optimized
    conn = connections.connection(opts.client)
    info = conn.get_admin().get_table_info(opts.path)
    if not explicit:
        if not datalake_enabled(info):
            return None
        # before the first tiering round the table is all in Fluss: the Fluss read (Java's fallback),
        # which needs no pypaimon
        if _call(opts, _latest_snapshot_id) is None:
            return None
    lake_info(opts, info)
    _pypaimon()  # a missing pypaimon fails here, on the driver, naming the extra
    return "lake" if explicit else "union"


def plan(opts: SourceOptions, table_id: int, lake_only: bool, partition_tests) -> list[LakeBucket]:
    """One input partition per bucket (and partition) with rows to read."""
    plans = _call(opts, plan_buckets)
    out = []
    for p in plans:
        if partition_tests and not all(test(p.partition or {}) for test in partition_tests):
            continue
        if lake_only and p.snapshot_id is None:
            continue  # nothing tiered yet: the lake snapshot is empty
        out.append(LakeBucket(table_id, p, lake_only))
    return out


def read(opts: SourceOptions, part: LakeBucket, columns: list[str], predicate, convert) -> Iterator:
    if not isinstance(part, LakeBucket):
        raise FlussError(f"Not a lake read partition: {part!r}", ErrorCode.CLIENT_ERROR)
    got = _call(opts, union_read, columns, predicate, lake_only=part.lake_only, only=part.plan)
    for rb in got.combine_chunks().to_batches():
        if rb.num_rows:
            yield convert(rb)
