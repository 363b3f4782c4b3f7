"""The union read: a data-lake table as its lake snapshot plus the log after it.

The lake snapshot says, for every bucket, the log offset tiering stopped at; the Paimon table holds
exactly the log before those offsets. So the table is the Paimon rows (read with the projection and
the pushed-down filter) together with each bucket's log from that offset to its end now:

* a log table is the concatenation of the two;
* a primary-key table is the lake's rows (one per key) with the changelog after the snapshot applied
  in offset order: per key the last change wins, and a key whose last change is a delete is gone.

No row is read twice and none is missed, because lake and log meet at the same offsets. A primary-key
table's filter is applied after the merge (a later update may move a key out of, or into, the filter),
and only pushed to the lake, whose rows the changelog can still replace.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..error_codes import Errors
from ..errors import FlussError
from ..metadata.log import OffsetSpec
from ..metadata.table import TablePath
from .offsets import BucketKey, lake_offsets, log_offsets, partition_names, subscribe, table_bucket
from .paimon import (
    CHANGE_TYPE_COLUMN,
    SYSTEM_COLUMNS,
    LakeTableInfo,
    field_names,
    get_table,
    open_catalog,
    paimon_arrow_schema,
    paimon_predicate,
)

__all__ = ["LakeBucketPlan", "LakeUnionScan", "plan_buckets", "read_bucket", "union_read"]


class LakeUnionScan:
    """A union read of one data-lake table; build with ``fluss_fast.lake.union_scan(conn, path)``,
    narrow with ``project`` / ``where``, then ``await to_arrow()``."""

    def __init__(self, conn, table_path: TablePath, columns: list[str] | None = None, predicate: Any = None,
                 lake_only: bool = False):
        self._conn = conn
        self._path = table_path
        self._columns = list(columns) if columns is not None else None
        self._predicate = predicate
        self._lake_only = lake_only

    def project(self, columns: list[str]) -> LakeUnionScan:
        """Only these columns, in this order (read so from the lake and the log alike)."""
        return LakeUnionScan(self._conn, self._path, columns, self._predicate, self._lake_only)

    def where(self, predicate) -> LakeUnionScan:
        """Only the rows matching ``predicate`` (``fluss_fast.col(...)`` expressions)."""
        both = predicate if self._predicate is None else self._predicate & predicate
        return LakeUnionScan(self._conn, self._path, self._columns, both, self._lake_only)

    async def to_arrow(self) -> pa.Table:
        """The table's rows (log tables) or current state (primary-key tables) as one Arrow table.

        Raises:
            FlussError: ``LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION`` (40) for a table that is not a Paimon
                data-lake table; a bad column or filter as a log scan reports it.
        """
        return await union_read(self._conn, self._path, self._columns, self._predicate, lake_only=self._lake_only)

    def __repr__(self) -> str:
        kind = "lake only" if self._lake_only else "lake + log"
        return f"LakeUnionScan(table={self._path}, {kind}, columns={self._columns}, where={self._predicate!r})"


def _read_lake(lake: LakeTableInfo, snapshot_id: int, columns: list[str], predicate,
               only: LakeBucketPlan | None = None) -> pa.Table:
    catalog = open_catalog(lake)
    table = get_table(catalog, lake)
    fields = paimon_arrow_schema(lake)
    schema = pa.schema([fields.field(c) for c in columns])
    if table is None:
        return schema.empty_table()
    # the snapshot the coordinator named, not Paimon's latest: a later round may have committed to
    # Paimon and not yet to the coordinator, and its rows are still read from the log
    table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    have = field_names(table)
    # a column added to the Fluss table after the last tiering round is not in Paimon yet: null
    present = [c for c in columns if c in have]
    extra = []
    if only is not None:
        # one bucket (of one partition) of the lake: the rows its bucket and partition columns name
        extra = [c for c in ["__bucket", *(only.partition or {})] if c not in present]
    # pypaimon 2.1 returns a key's folded delete record as a row when no other file overlaps it (a
    # merge of overlapping files drops it): the row kind column tells such records apart
    kinds = lake.has_primary_key and CHANGE_TYPE_COLUMN in have
    builder = table.new_read_builder().with_projection(present + extra + ([CHANGE_TYPE_COLUMN] if kinds else []))
    pb = builder.new_predicate_builder()
    pushed = paimon_predicate(pb, predicate, set(present))
    if only is not None:
        mine = pb.equal("__bucket", only.bucket)
        pushed = mine if pushed is None else pb.and_predicates([pushed, mine])
    if pushed is not None:
        builder = builder.with_filter(pushed)
    splits = builder.new_scan().plan().splits()
    got = builder.new_read().to_arrow(splits)
    if got is not None and only is not None:
        keep = pc.equal(got.column("__bucket"), only.bucket)
        for k, v in (only.partition or {}).items():
            keep = pc.and_(keep, pc.equal(got.column(k).cast(pa.string()), v))
        got = got.filter(pc.fill_null(keep, False))
    if got is not None and kinds:
        retracted = pc.is_in(got.column(CHANGE_TYPE_COLUMN), pa.array(["-D", "-U"]))
        got = got.filter(pc.invert(pc.fill_null(retracted, False)))
    n = 0 if got is None else got.num_rows
    arrays = [got.column(c) if c in present and got is not None else pa.nulls(n, schema.field(c).type)
              for c in columns]
    return pa.Table.from_arrays([a.cast(f.type) for a, f in zip(arrays, schema, strict=True)], schema=schema)


async def _read_log(conn, info, starts: dict[BucketKey, int], ends: dict[BucketKey, int], columns: list[str],
                    predicate, changelog: bool) -> pa.Table:
    path = info.table_path
    if changelog:
        table = await conn.get_table(TablePath(path.database_name, f"{path.table_name}$changelog"))
        scanner = await table.new_scan().create_log_scanner()
    else:
        table = await conn.get_table(path)
        scan = table.new_scan().project_by_name(list(columns))
        if predicate is not None:
            scan = scan.where(predicate)
        scanner = await scan.create_record_batch_log_scanner()
    stops = {}
    for key, end in ends.items():
        start = starts.get(key, 0)
        if start < end:
            subscribe(scanner, key, start)
            stops[table_bucket(info.table_id, key)] = end
    # nothing to read (no stop) gives an empty table of the scanner's schema
    reader = scanner.to_arrow_batch_reader_until(stops)
    return await asyncio.to_thread(reader.read_all)


def _merge(lake_rows: pa.Table, changes: pa.Table, key: list[str], columns: list[str]) -> pa.Table:
    """The last change per key over the lake's rows; keys whose last change removes them are dropped."""
    n_lake = lake_rows.num_rows
    lake_part = lake_rows.select(columns).append_column("__seq", pa.array([-1] * n_lake, pa.int64())) \
        .append_column("__gone", pa.array([False] * n_lake, pa.bool_()))
    kinds = changes.column("_change_type")
    gone = pc.or_(pc.equal(kinds, "delete"), pc.equal(kinds, "update_before"))
    log_part = changes.select(columns).append_column("__seq", changes.column("_log_offset").cast(pa.int64())) \
        .append_column("__gone", gone)
    both = pa.concat_tables([lake_part, log_part.cast(lake_part.schema)])
    if not both.num_rows:
        return both.select(columns)
    # the join carries row numbers only: Arrow joins take no list, map or struct payload columns
    index = both.select([*key, "__seq", "__gone"]).append_column("__row", pa.array(range(both.num_rows), pa.int64()))
    last = index.group_by(key, use_threads=False).aggregate([("__seq", "max")]).rename_columns([*key, "__seq"])
    winners = index.join(last, [*key, "__seq"], join_type="inner", use_threads=False)
    winners = winners.filter(pc.invert(winners.column("__gone")))
    return both.take(winners.sort_by("__row").column("__row")).select(columns)


@dataclass(frozen=True)
class LakeBucketPlan:
    """What one bucket (of one partition) of a union read reads: the lake snapshot's rows of it and
    its log from ``start`` (the snapshot's offset) to ``end`` (fixed when planned)."""

    partition_id: int | None
    partition: dict[str, str] | None  # partition key -> value, for a partitioned table
    bucket: int
    snapshot_id: int | None
    start: int
    end: int


async def plan_buckets(conn, table_path: TablePath) -> list[LakeBucketPlan]:
    """A union read cut into buckets, for engines that read them in parallel (``read_bucket``); the
    log's end offsets are fixed here, so every bucket reads the table as of now."""
    admin = conn.get_admin()
    info = await admin.get_table_info(table_path)
    LakeTableInfo(info)  # a table without a lake fails here, named
    snapshot_id, starts = await lake_offsets(admin, table_path)
    specs: dict = {None: None}
    if info.is_partitioned():
        keys = info.get_partition_keys()
        specs = {p.partition_id: dict(p.partition_spec) or dict(zip(keys, p.partition_name.split("$"), strict=False))
                 for p in await admin.list_partition_infos(table_path)}
    ends = await log_offsets(admin, info, await partition_names(admin, info), OffsetSpec.latest())
    return [LakeBucketPlan(pid, specs.get(pid), b, snapshot_id, starts.get((pid, b), 0), end)
            for (pid, b), end in sorted(ends.items(), key=lambda kv: (kv[0][0] or -1, kv[0][1]))]


async def read_bucket(conn, table_path: TablePath, plan: LakeBucketPlan, columns: list[str] | None = None,
                      predicate: Any = None) -> pa.Table:
    """One planned bucket of a union read; the buckets of ``plan_buckets`` together are ``union_read``."""
    return await union_read(conn, table_path, columns, predicate, only=plan)


async def union_read(conn, table_path: TablePath, columns: list[str] | None = None, predicate: Any = None, *,
                     lake_only: bool = False, only: LakeBucketPlan | None = None) -> pa.Table:
    """The union read (see the module docstring); ``LakeUnionScan`` is the builder around it. With
    ``lake_only`` just the lake snapshot, with the system columns (Java's ``$lake`` table)."""
    admin = conn.get_admin()
    info = await admin.get_table_info(table_path)
    lake = LakeTableInfo(info)
    known = list(lake.columns) + (list(SYSTEM_COLUMNS) if lake_only else [])
    wanted = list(columns) if columns is not None else known
    for c in wanted:
        if c not in known:
            raise FlussError(f"Column '{c}' does not exist in table '{table_path}' (columns: "
                             f"{', '.join(known)}).", Errors.INVALID_COLUMN_PROJECTION)
    bound = None
    if predicate is not None:
        from ..client.predicate import bind_predicate

        bound = bind_predicate(predicate, info.descriptor.schema)  # bad columns/literals fail here, named
    if only is not None:
        key = (only.partition_id, only.bucket)
        snapshot_id, starts, ends = only.snapshot_id, {key: only.start}, {key: only.end}
    else:
        # the snapshot first, then the log's ends: rows tiered meanwhile are still read from the log
        snapshot_id, starts = await lake_offsets(admin, table_path)
        ends = await log_offsets(admin, info, await partition_names(admin, info), OffsetSpec.latest())
    pk = lake.has_primary_key
    # the merge needs the key, the exact filter its columns: read them and drop them at the end
    read_cols = list(wanted)
    extra = list(lake.primary_key) if pk else []
    if bound is not None:
        extra += [lake.columns[i] for i in bound.columns]
    for c in extra:
        if c not in read_cols:
            read_cols.append(c)
    if snapshot_id is not None:
        lake_rows = await asyncio.to_thread(_read_lake, lake, snapshot_id, read_cols, predicate, only)
    else:
        fields = paimon_arrow_schema(lake)
        lake_rows = pa.schema([fields.field(c) for c in read_cols]).empty_table()
    if lake_only:
        rows = lake_rows
    else:
        rows = await _union(conn, info, lake, starts, ends, lake_rows, read_cols, predicate)
    if bound is not None and rows.num_rows:
        positions = {lake.columns.index(c): i for i, c in enumerate(read_cols) if c in lake.columns}
        rows = rows.filter(bound.mask(rows, positions))
    return rows.select(wanted)


async def _union(conn, info, lake: LakeTableInfo, starts, ends, lake_rows: pa.Table, read_cols: list[str],
                 predicate) -> pa.Table:
    pk = lake.has_primary_key
    log_rows = await _read_log(conn, info, starts, ends, read_cols, predicate if not pk else None, pk)
    if pk:
        return _merge(lake_rows, log_rows, list(lake.primary_key), read_cols)
    return pa.concat_tables([lake_rows, log_rows.select(read_cols).cast(lake_rows.schema)])
