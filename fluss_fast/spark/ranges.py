"""Spark's input partitions: the shared offset ranges (``fluss_fast.engine.ranges``) as the
``InputPartition`` subclasses Spark insists on; planning and reading are the shared ones."""
from __future__ import annotations

from pyspark.sql.datasource import InputPartition

from ..engine import ranges as _shared
from ..engine.options import SourceOptions
from ..engine.ranges import list_offsets, offsets_for, partitions_of, read_range, read_snapshot

__all__ = ["BucketRange", "SnapshotBucket", "list_offsets", "offsets_for", "partitions_of", "plan_batch",
           "read_range", "read_snapshot", "split"]


class BucketRange(_shared.BucketRange, InputPartition):
    """Offsets [start, stop) of one bucket (of one partition, for partitioned tables)."""


class SnapshotBucket(_shared.SnapshotBucket, InputPartition):
    """The current state of one bucket of a primary-key table."""


def split(table_id: int, pid, name, bucket: int, start: int, stop: int,
          max_records: int | None) -> list[_shared.BucketRange]:
    return _shared.split(table_id, pid, name, bucket, start, stop, max_records, BucketRange)


def plan_batch(opts: SourceOptions, meta, partitions) -> list[_shared.BucketRange]:
    return _shared.plan_batch(opts, meta, partitions, BucketRange)
