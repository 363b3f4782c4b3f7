"""Offset ranges: what one engine task reads, how they are planned, and how one is read.

Planning runs where the engine plans (Spark's driver-side Python worker, Ray's driver); reading runs
in the engine's worker processes, each through its own connection (``connections``).
A range is fixed when it is planned (start and exclusive stop offset of one bucket of one
partition), so every task of a query reads a consistent snapshot whatever is appended meanwhile.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa

from ..errors import ErrorCode, FlussError
from ..metadata import OffsetSpec, TableBucket
from . import connections
from .options import SourceOptions


class BucketRange:
    """Offsets [start, stop) of one bucket (of one partition, for partitioned tables)."""

    def __init__(self, table_id: int, partition_id: int | None, partition_name: str | None,
                 bucket: int, start: int, stop: int):
        self.table_id = table_id
        self.partition_id = partition_id
        self.partition_name = partition_name
        self.bucket = bucket
        self.start = start
        self.stop = stop

    @property
    def table_bucket(self) -> TableBucket:
        return TableBucket._make(self.table_id, self.partition_id, self.bucket)

    def __repr__(self) -> str:
        part = f"partition {self.partition_name} ({self.partition_id}), " if self.partition_id is not None else ""
        return f"BucketRange({part}bucket {self.bucket}, offsets [{self.start}, {self.stop}))"


class SnapshotBucket:
    """The current state of one bucket of a primary-key table."""

    def __init__(self, table_id: int, partition_id: int | None, partition_name: str | None, bucket: int):
        self.table_id = table_id
        self.partition_id = partition_id
        self.partition_name = partition_name
        self.bucket = bucket

    def __repr__(self) -> str:
        part = f"partition {self.partition_name} ({self.partition_id}), " if self.partition_id is not None else ""
        return f"SnapshotBucket({part}bucket {self.bucket})"


def table_meta(opts: SourceOptions):
    """The table's current metadata (fetched from the server: planning must not see a table that
    was dropped and re-created since), or a FlussError naming the table."""
    return connections.table(opts.client, opts.database, opts.table, refresh=True).unwrap()._meta


# -- planning -----------------------------------------------------------------------------------------
def partitions_of(opts: SourceOptions, meta) -> list[tuple[int | None, str | None, dict[str, str]]]:
    """(partition id, name, spec) of every partition now, or one (None, None, {}) if unpartitioned."""
    if not meta.is_partitioned:
        return [(None, None, {})]
    admin = connections.connection(opts.client).get_admin()
    infos = admin.list_partition_infos(opts.path)
    return sorted(((p.partition_id, p.partition_name, p.partition_spec) for p in infos), key=lambda x: x[0])


def list_offsets(opts: SourceOptions, meta, partition_name: str | None, spec: OffsetSpec) -> dict[int, int]:
    admin = connections.connection(opts.client).get_admin()
    buckets = list(range(meta.num_buckets))
    if partition_name is None:
        return admin.list_offsets(opts.path, buckets, spec)
    return admin.list_partition_offsets(opts.path, partition_name, buckets, spec)


def offsets_for(opts: SourceOptions, meta, partitions, kind: str, timestamp: int | None = None
                ) -> dict[tuple[int | None, int], int]:
    """{(partition id, bucket): offset} of ``kind`` ('earliest', 'latest' or 'timestamp')."""
    if kind == "earliest":
        spec = OffsetSpec.earliest()
    elif kind == "latest":
        spec = OffsetSpec.latest()
    elif timestamp is not None:
        spec = OffsetSpec.timestamp(timestamp)
    else:
        raise ValueError(f"offsets_for({kind!r}) needs a timestamp")
    out = {}
    for pid, name, _ in partitions:
        for bucket, off in list_offsets(opts, meta, name, spec).items():
            out[(pid, bucket)] = off
    return out


def split(table_id: int, pid, name, bucket: int, start: int, stop: int,
          max_records: int | None, range_type: type[BucketRange] = BucketRange) -> list[BucketRange]:
    """[start, stop) as one range, or cut every ``max_records`` offsets (scan.maxRecordsPerPartition).
    ``range_type`` is the engine's own subclass where it needs one (Spark's InputPartition)."""
    if stop <= start:
        return []
    if not max_records:
        return [range_type(table_id, pid, name, bucket, start, stop)]
    return [range_type(table_id, pid, name, bucket, s, min(s + max_records, stop))
            for s in range(start, stop, max_records)]


def plan_batch(opts: SourceOptions, meta, partitions,
               range_type: type[BucketRange] = BucketRange) -> list[BucketRange]:
    """The ranges of a batch read: from the earliest offset (or the first at/after
    scan.incremental.start.timestamp) to the latest now (or the first at/after the end timestamp)."""
    latest = offsets_for(opts, meta, partitions, "latest")
    if opts.incremental_start is not None:
        start = offsets_for(opts, meta, partitions, "timestamp", opts.incremental_start)
    else:
        start = offsets_for(opts, meta, partitions, "earliest")
    stop = latest
    if opts.incremental_end is not None:
        at_end = offsets_for(opts, meta, partitions, "timestamp", opts.incremental_end)
        stop = {k: min(v, at_end.get(k, v)) for k, v in latest.items()}
    ranges = []
    for pid, name, _ in partitions:
        for bucket in range(meta.num_buckets):
            key = (pid, bucket)
            if key in stop:
                ranges += split(meta.table_id, pid, name, bucket, max(start.get(key, 0), 0), stop[key],
                                opts.max_records_per_partition, range_type)
    return ranges


# -- reading --------------------------------------------------------------------------------------------
def _record_stats(opts: SourceOptions, what: dict) -> None:
    """One JSON line per task in scan.stats.dir (for checking pushdown and profiling reads)."""
    if opts.stats_dir is None:
        return
    os.makedirs(opts.stats_dir, exist_ok=True)
    line = json.dumps(dict(what, table=opts.name, pid=os.getpid())) + "\n"
    fd = os.open(os.path.join(opts.stats_dir, "reads.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_range(opts: SourceOptions, r: BucketRange, projection: Sequence[int] | None, predicate,
               convert) -> Iterator[pa.RecordBatch]:
    """The batches of one range, through the engine's ``convert``; no Python object per row on the way."""
    table = connections.table(opts.client, opts.database, opts.table, r.table_id)
    scan = table.new_scan()
    if projection is not None:
        scan = scan.project(list(projection))
    if predicate is not None:
        scan = scan.where(predicate)  # exact: the engines are told the pushed filters are handled
    scanner = scan.create_record_batch_log_scanner()
    if r.partition_id is None:
        scanner.subscribe(r.bucket, r.start)
    else:
        scanner.subscribe_partition(r.partition_id, r.bucket, r.start)
    began = time.perf_counter()
    rows = 0
    reader = scanner.to_arrow_batch_reader_until({r.table_bucket: r.stop}, opts.poll_timeout_ms)
    try:
        while True:
            try:
                rb = reader.read_next_batch()
            except StopIteration:
                break
            except FlussError as e:
                if e.error_code == ErrorCode.REQUEST_TIME_OUT:
                    raise FlussError(f"Reading table '{opts.name}' {r!r}: no data for "
                                     f"{opts.poll_timeout_ms} ms before reaching offset {r.stop} "
                                     f"(option scan.poll.timeout)", e.error_code) from None
                raise
            rows += rb.num_rows
            yield convert(rb)
    finally:
        reader.close()
    if opts.stats_dir:
        _record_stats(opts, {"kind": "log", "partition_id": r.partition_id, "bucket": r.bucket,
                             "start": r.start, "stop": r.stop, "rows": rows,
                             "records_fetched": scanner.records_fetched,
                             "seconds": round(time.perf_counter() - began, 6)})


def read_snapshot(opts: SourceOptions, p: SnapshotBucket, columns: list[str] | None, convert
                  ) -> Iterator[pa.RecordBatch]:
    """The current rows of one bucket of a primary-key table (the client's snapshot scan)."""
    table = connections.table(opts.client, opts.database, opts.table, p.table_id)
    scan = table.new_scan()
    if columns is not None:
        scan = scan.project_by_name(list(columns))
    if not hasattr(scan.unwrap(), "create_snapshot_scanner"):
        raise FlussError(f"Reading primary-key table '{opts.name}' needs a fluss_fast with "
                         f"primary-key snapshot scans (create_snapshot_scanner)", ErrorCode.CLIENT_ERROR)
    scanner = scan.create_snapshot_scanner()
    data = scanner.to_arrow(bucket=p.bucket, partition_id=p.partition_id)
    rows = 0
    for rb in data.to_batches():
        if rb.num_rows:
            rows += rb.num_rows
            yield convert(rb)
    if opts.stats_dir:
        _record_stats(opts, {"kind": "snapshot", "partition_id": p.partition_id, "bucket": p.bucket,
                             "rows": rows, "records_fetched": rows})
