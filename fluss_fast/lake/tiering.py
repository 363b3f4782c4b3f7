"""Tiering: copy a data-lake table's log into its Paimon table and commit a lake snapshot, as Java's
tiering job (the Flink job of ``fluss-flink``'s ``tiering`` package) does.

Like the Java job, this is a client of the cluster: it reads each bucket's log from the offset the
last lake snapshot ended at up to the bucket's end now, writes the rows with their bucket, offset and
commit time to Paimon, commits the Paimon table, then commits the lake snapshot (Paimon's snapshot id
and every bucket's log end offset) to the coordinator with COMMIT_LAKE_TABLE_SNAPSHOT. A union read
(``fluss_fast.lake.union``) then reads the lake up to those offsets and the log from them.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

import pyarrow as pa
import pyarrow.compute as pc

from ..error_codes import Errors
from ..errors import FlussError
from ..metadata.log import OffsetSpec
from ..metadata.table import TableBucket, TablePath
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from .offsets import BucketKey, lake_offsets, log_offsets, partition_names, subscribe, table_bucket
from .paimon import LakeTableInfo, datalake_enabled, datalake_format, ensure_table, open_catalog, paimon_arrow_schema

__all__ = ["TieringResult", "TieringService", "tier_table", "write_round", "commit_round"]

log = logging.getLogger("fluss_fast.lake")

# $changelog's change types -> Paimon's RowKind short strings
_KINDS = {"insert": "+I", "update_before": "-U", "update_after": "+U", "delete": "-D"}


class TieringResult:
    """One tiering round: the lake snapshot it committed (``None`` when there was nothing new) and
    every bucket's log end offset in it (``TableBucket -> offset``, as ``LakeSnapshot.table_buckets_offset``)."""

    def __init__(self, snapshot_id: int | None, offsets: dict[TableBucket, int], rows: int):
        self.snapshot_id = snapshot_id
        self.offsets = offsets
        self.rows = rows
        self.max_timestamps: dict[TableBucket, int] = {}  # newest commit time tiered, per bucket

    def __repr__(self) -> str:
        return f"TieringResult(snapshot_id={self.snapshot_id}, offsets={self.offsets}, rows={self.rows})"


async def _bucket_rows(conn, path: TablePath, key: BucketKey, start: int, stop: int, table_id: int) -> pa.Table:
    vtable = await conn.get_table(TablePath(path.database_name, f"{path.table_name}$changelog"))
    scanner = await vtable.new_scan().create_log_scanner()
    subscribe(scanner, key, start)
    reader = scanner.to_arrow_batch_reader_until({table_bucket(table_id, key): stop})
    got = await asyncio.to_thread(reader.read_all)
    # a batch may run past the stop offset: the next round reads those rows
    return got.filter(pc.less(got.column("_log_offset"), stop))


def _to_lake_rows(rows: pa.Table, lake: LakeTableInfo, bucket: int, schema: pa.Schema) -> pa.Table:
    n = rows.num_rows
    cols = [rows.column(name) for name in lake.columns]
    cols.append(pa.array([bucket] * n, pa.int32()))
    cols.append(rows.column("_log_offset").cast(pa.int64()))
    cols.append(rows.column("_commit_timestamp").cast(pa.timestamp("us", tz="UTC")))
    if lake.has_primary_key:
        kinds = [_KINDS[k] for k in rows.column("_change_type").to_pylist()]
        cols.append(pa.array(kinds, pa.string()))
    return pa.Table.from_arrays([c.cast(f.type) for c, f in zip(cols, schema, strict=True)], schema=schema)


async def tier_table(conn, table_path: TablePath) -> TieringResult:
    """One tiering round of one table: the log since the last lake snapshot goes to Paimon, then the
    lake snapshot is committed to the coordinator (``write_round`` then ``commit_round``).

    A round whose Paimon commit landed but whose coordinator commit did not (a crash, a lost
    connection) is finished first: its snapshot is committed to the coordinator from the offsets kept
    in the Paimon snapshot, and its rows are not written again.

    Args:
        conn: A ``FlussConnection``.
        table_path: A table created with ``table.datalake.enabled=true`` on a server with
            ``datalake.format=paimon``.

    Returns:
        The round's ``TieringResult``.

    Raises:
        FlussError: ``LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION`` (40) for a table without a Paimon lake,
            or the coordinator's error when it refuses the snapshot.
    """
    admin = conn.get_admin()
    info = await admin.get_table_info(table_path)
    lake = LakeTableInfo(info)
    catalog = await asyncio.to_thread(open_catalog, lake)
    paimon = await asyncio.to_thread(ensure_table, catalog, lake)
    committed_id, _ = await lake_offsets(admin, table_path)
    in_lake = await asyncio.to_thread(_lake_state, paimon, info.table_id, lake.identifier)
    if in_lake is not None and in_lake.snapshot_id != committed_id:
        await commit_round(conn, table_path, in_lake)
    result = await write_round(conn, table_path)
    if result.snapshot_id is not None:
        await commit_round(conn, table_path, result)
    return result


async def write_round(conn, table_path: TablePath) -> TieringResult:
    """The lake half of a round: the log from where the lake ends to each bucket's end now is written
    to Paimon and committed there, with the bucket offsets in the Paimon snapshot's ``fluss-offsets``
    property (as Java's lake committer keeps them). The coordinator does not know of it until
    ``commit_round``; until then union reads go on reading those rows from the log."""
    admin = conn.get_admin()
    info = await admin.get_table_info(table_path)
    lake = LakeTableInfo(info)
    catalog = await asyncio.to_thread(open_catalog, lake)
    paimon = await asyncio.to_thread(ensure_table, catalog, lake)
    in_lake = await asyncio.to_thread(_lake_state, paimon, info.table_id, lake.identifier)
    if in_lake is not None:
        # what Paimon holds is the truth about the lake, also when the coordinator lags behind it
        starts = {(tb.partition_id, tb.bucket_id): off for tb, off in in_lake.offsets.items()}
    else:
        _, starts = await lake_offsets(admin, table_path)
    parts = await partition_names(admin, info)
    ends = await log_offsets(admin, info, parts, OffsetSpec.latest())
    earliest = await log_offsets(admin, info, parts, OffsetSpec.earliest())
    schema = paimon_arrow_schema(lake)
    chunks, max_ts = [], {}
    for key, end in ends.items():
        start = max(starts.get(key, 0), earliest.get(key, 0))
        if start >= end:
            continue
        rows = await _bucket_rows(conn, table_path, key, start, end, info.table_id)
        if rows.num_rows:
            chunks.append(_to_lake_rows(rows, lake, key[1], schema))
            max_ts[key] = int(pc.max(rows.column("_commit_timestamp").cast(pa.int64())).as_py())
    if not chunks:
        return TieringResult(None, {table_bucket(info.table_id, k): starts.get(k, 0) for k in ends}, 0)
    # buckets this round did not see (a partition dropped since) keep the lake's last offsets
    offsets = {**starts, **ends}
    data = pa.concat_tables(chunks)
    snapshot_id = await asyncio.to_thread(_write, paimon, data, _offsets_property(info.table_id, offsets))
    result = TieringResult(snapshot_id, {table_bucket(info.table_id, k): v for k, v in offsets.items()},
                           data.num_rows)
    result.max_timestamps = {table_bucket(info.table_id, k): v for k, v in max_ts.items()}
    return result


async def commit_round(conn, table_path: TablePath, result: TieringResult) -> None:
    """The coordinator half of a round: COMMIT_LAKE_TABLE_SNAPSHOT with the round's snapshot id and
    bucket offsets; from then on ``get_latest_lake_snapshot`` and union reads use it."""
    if result.snapshot_id is None:
        return
    admin = conn.get_admin()
    info = await admin.get_table_info(table_path)
    req = pb.CommitLakeTableSnapshotRequest()
    t = req.tables_req.add(table_id=info.table_id, snapshot_id=result.snapshot_id)
    table_path._to_pb(t.table_path)
    for tb, end in result.offsets.items():
        out = t.buckets_req.add(bucket_id=tb.bucket_id, log_end_offset=end)
        if tb.partition_id is not None:
            out.partition_id = tb.partition_id
        ts = result.max_timestamps.get(tb)
        if ts is not None:
            out.max_timestamp = ts
    resp = await admin._runtime.run(admin._call(Api.COMMIT_LAKE_TABLE_SNAPSHOT, req, f"table '{table_path}'"))
    for r in resp.table_resp:
        if r.HasField("error_code") and r.error_code:
            raise FlussError(f"committing lake snapshot {result.snapshot_id} of table '{table_path}': "
                             f"{r.error_message}", r.error_code)


_OFFSETS_PROPERTY = "fluss-offsets"


def _offsets_property(table_id: int, offsets: dict[BucketKey, int]) -> dict[str, str]:
    rows = [[pid, b, off] for (pid, b), off in sorted(offsets.items(), key=lambda kv: (kv[0][0] or -1, kv[0][1]))]
    return {_OFFSETS_PROPERTY: json.dumps({"version": 1, "table_id": table_id, "bucket_offsets": rows})}


def _lake_state(paimon, table_id: int, name: str) -> TieringResult | None:
    """The latest Paimon snapshot with the bucket offsets its round wrote, or ``None`` before one."""
    manager = paimon.snapshot_manager()
    snap = manager.get_latest_snapshot()
    # a compaction after the round adds snapshots without new data (and without the property)
    while snap is not None and _OFFSETS_PROPERTY not in (snap.properties or {}) and snap.commit_kind == "COMPACT":
        snap = manager.get_snapshot_by_id(int(snap.id) - 1) if int(snap.id) > 1 else None
    if snap is None or _OFFSETS_PROPERTY not in (snap.properties or {}):
        return None  # no round yet, or data written by another writer: nothing to resume from
    props = snap.properties
    state = json.loads(props[_OFFSETS_PROPERTY])
    if state.get("table_id", table_id) != table_id:
        # the lake table of a dropped Fluss table of the same name: its offsets mean nothing here, and
        # its rows would show up in this table's union reads
        raise FlussError(f"The Paimon table {name} holds the "
                         f"tiered data of another Fluss table (id {state['table_id']}, dropped since?), not of "
                         f"table id {table_id}; drop it from the Paimon warehouse to tier this table.",
                         Errors.LAKE_TABLE_ALREADY_EXIST)
    rows = state["bucket_offsets"]
    offsets = {table_bucket(table_id, (pid, b)): int(off) for pid, b, off in rows}
    return TieringResult(int(snap.id), offsets, 0)


def _write(paimon, data: pa.Table, properties: dict[str, str]) -> int:
    builder = paimon.new_batch_write_builder()
    write = builder.new_write()
    commit = builder.new_commit()
    try:
        write.write_arrow(data)
        commit.commit(write.prepare_commit(), snapshot_properties=properties)
    finally:
        write.close()
        commit.close()
    return int(paimon.snapshot_manager().get_latest_snapshot().id)


def _is_lake_table(info) -> bool:
    return datalake_enabled(info) and datalake_format(info) == "paimon"


class TieringService:
    """Tiers every data-lake table of the cluster, each as often as its ``table.datalake.freshness``
    says (Java's default: 3 min), as Java's tiering job does once it is submitted to Flink.

    ``async with TieringService(conn):`` runs it in the background of the current event loop;
    ``await service.run_once()`` tiers every data-lake table now (what a test or a notebook wants).
    Tables are found again on every pass, so tables created later are picked up. A round that fails
    (the lake unreachable, the table dropped meanwhile) is logged and retried on the next pass.
    """

    def __init__(self, conn, *, poll_interval_s: float = 1.0):
        self._conn = conn
        self._poll = float(poll_interval_s)
        self._due: dict[TablePath, float] = {}
        self._task: asyncio.Task | None = None
        self.errors: list[tuple[TablePath, FlussError]] = []  # the last pass's failures

    async def _lake_tables(self) -> list[tuple[TablePath, float]]:
        admin = self._conn.get_admin()
        out = []
        for db in await admin.list_databases():
            for name in await admin.list_tables(db):
                path = TablePath(db, name)
                try:
                    info = await admin.get_table_info(path)
                except FlussError:
                    continue  # dropped between the listing and now
                if _is_lake_table(info):
                    fresh = _seconds(info.get_properties().get("table.datalake.freshness", "3min"))
                    out.append((path, fresh))
        return out

    async def run_once(self, *, only_due: bool = False) -> dict[TablePath, TieringResult]:
        """One pass over the data-lake tables (only those whose freshness interval passed, with
        ``only_due``); returns each tiered table's result."""
        now = time.monotonic()
        results = {}
        self.errors = []
        for path, fresh in await self._lake_tables():
            # a table seen for the first time is due one freshness interval later, as Java's tiering
            # manager schedules a new lake table
            if only_due and self._due.setdefault(path, now + fresh) > now:
                continue
            try:
                results[path] = await tier_table(self._conn, path)
            except FlussError as e:
                log.warning("tiering table %s failed: %s", path, e)
                self.errors.append((path, e))
            self._due[path] = time.monotonic() + fresh
        return results

    async def run(self) -> None:
        """Passes until cancelled (what ``start()`` runs in the background)."""
        while True:
            try:
                await self.run_once(only_due=True)
            except Exception:  # noqa: BLE001 - the cluster or lake away for a while; next pass retries
                log.exception("a tiering pass failed")
            await asyncio.sleep(self._poll)

    def start(self) -> None:
        """Run passes in the background of the running event loop until ``stop()``."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def __aenter__(self) -> TieringService:
        self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()


def _seconds(text: str) -> float:
    s = str(text).strip().lower().replace(" ", "")
    for unit, mult in (("ms", 0.001), ("min", 60.0), ("s", 1.0), ("h", 3600.0), ("d", 86400.0)):
        if s.endswith(unit) and s[: -len(unit)].isdigit():
            return int(s[: -len(unit)]) * mult
    return float(int(s)) / 1000.0 if s.isdigit() else 180.0
