"""Where the lake and the log meet: offsets per ``(partition id or None, bucket)``."""
from __future__ import annotations

from ..error_codes import Errors
from ..errors import FlussError
from ..metadata.log import OffsetSpec
from ..metadata.table import TableBucket, TableInfo, TablePath

__all__ = ["BucketKey", "log_offsets", "lake_offsets", "table_bucket", "subscribe", "partition_names"]

BucketKey = tuple[int | None, int]


async def partition_names(admin, info: TableInfo) -> dict[int | None, str | None]:
    """Partition id -> name (``{None: None}`` for a table without partitions)."""
    if not info.is_partitioned():
        return {None: None}
    return {p.partition_id: p.partition_name for p in await admin.list_partition_infos(info.table_path)}


async def log_offsets(admin, info: TableInfo, parts: dict, spec: OffsetSpec) -> dict[BucketKey, int]:
    """Every bucket's (of every partition in ``parts``) earliest or latest log offset."""
    buckets = list(range(info.num_buckets))
    out: dict[BucketKey, int] = {}
    for pid, name in parts.items():
        if pid is None:
            got = await admin.list_offsets(info.table_path, buckets, spec)
        else:
            try:
                got = await admin.list_partition_offsets(info.table_path, name, buckets, spec)
            except FlussError as e:
                if e.error_code == Errors.PARTITION_NOT_EXISTS:
                    continue  # dropped since it was listed: nothing of it is read any more
                raise
        for b, off in got.items():
            out[(pid, b)] = off
    return out


async def lake_offsets(admin, path: TablePath) -> tuple[int | None, dict[BucketKey, int]]:
    """The latest lake snapshot's id and bucket offsets, or ``(None, {})`` before the first one."""
    try:
        snap = await admin.get_latest_lake_snapshot(path)
    except FlussError as e:
        if e.error_code == Errors.LAKE_SNAPSHOT_NOT_EXIST:
            return None, {}
        raise
    return snap.snapshot_id, {(tb.partition_id, tb.bucket_id): off for tb, off in snap.table_buckets_offset.items()}


def table_bucket(table_id: int, key: BucketKey) -> TableBucket:
    pid, bucket = key
    return TableBucket(table_id, bucket) if pid is None else TableBucket.with_partition(table_id, pid, bucket)


def subscribe(scanner, key: BucketKey, offset: int) -> None:
    pid, bucket = key
    if pid is None:
        scanner.subscribe(bucket, offset)
    else:
        scanner.subscribe_partition(pid, bucket, offset)
