"""Streaming reads: ``spark.readStream.format("fluss")...load("db.table")``.

Offsets are the Scala connector's JSON (TableBucketOffsetsJsonSerde):
``{"version": 1, "table_id": 7, "bucket_offsets": [12, 40]}`` for a table without partitions,
``{"version": 1, "table_id": 7, "partition_offsets": [{"partition_id": 3, "bucket_offsets": [..]}]}``
with them; -1 marks a bucket with no offset. Spark checkpoints the end offset of every micro-batch
before running it and plans the same ranges again after a restart, so a query resumes exactly where
it stopped. A partition created after the query started is read from its earliest offset.

``db.t$changelog`` / ``db.t$binlog`` stream the same offsets of ``t``'s log with the virtual
columns. A primary-key table streams its changelog as upserts (inserts and the new values of
updates; deletes are left out): in startup mode ``full`` the first micro-batch is the table's
current state (a snapshot scan) and the log follows from the offsets that batch was planned at.
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSourceStreamReader

from ..engine.options import SourceOptions
from ..engine.ranges import table_meta
from ..engine.virtual import ChangeReader
from ..errors import ErrorCode, FlussError
from . import ranges, types
from .reader import read_meta, resolve_columns

try:  # Spark >= 4.2: admission control and Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - Spark 4.0/4.1
    ReadAllAvailable = ReadMaxRows = ReadLimit = None

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass

VERSION = 1
UNKNOWN = -1
# marks the start offset of a primary-key stream in startup mode 'full' (ours, not the Scala shape):
# the first micro-batch reads the table's current state, the log follows from these offsets
SNAPSHOT = "snapshot"
Offsets = dict[tuple[int | None, int], int]


def to_json(table_id: int, offsets: Offsets) -> dict:
    """The Scala connector's offset shape for {(partition id, bucket): offset}."""
    out: dict = {"version": VERSION, "table_id": table_id}
    if not offsets:
        return out

    def array(items: dict[int, int]) -> list[int]:
        return [items.get(b, UNKNOWN) for b in range(max(items) + 1)]

    if all(pid is None for pid, _ in offsets):
        out["bucket_offsets"] = array({b: o for (_, b), o in offsets.items()})
        return out
    by_part: dict[int, dict[int, int]] = {}
    for (pid, b), o in offsets.items():
        by_part.setdefault(pid, {})[b] = o
    out["partition_offsets"] = [{"partition_id": pid, "bucket_offsets": array(by_part[pid])}
                                for pid in sorted(by_part)]
    return out


def from_json(obj: dict, expected_table_id: int | None = None, table: str = "") -> Offsets:
    if not isinstance(obj, dict) or obj.get("version") != VERSION:
        raise FlussError(f"Unsupported fluss offset in the checkpoint: {obj!r}", ErrorCode.CLIENT_ERROR)
    if expected_table_id is not None and obj.get("table_id") != expected_table_id:
        raise FlussError(f"The checkpoint was written for table id {obj.get('table_id')} but table "
                         f"'{table}' now has id {expected_table_id} (dropped and re-created?); "
                         f"start the query with a new checkpoint location", ErrorCode.CLIENT_ERROR)
    out: Offsets = {}
    for b, o in enumerate(obj.get("bucket_offsets") or ()):
        if o != UNKNOWN:
            out[(None, b)] = o
    for p in obj.get("partition_offsets") or ():
        for b, o in enumerate(p["bucket_offsets"]):
            if o != UNKNOWN:
                out[(p["partition_id"], b)] = o
    return out


class FlussStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over the log of a log table: one input partition per bucket with new data."""

    def __init__(self, opts: SourceOptions, schema):
        self.opts = opts
        meta = read_meta(opts)
        self.table_id = meta.table_id
        self.columns = resolve_columns(meta, opts, schema)
        names = meta.schema.names
        self.projection = None if self.columns == names else [names.index(c) for c in self.columns]
        # virtual tables, and primary-key tables (whose log is their changelog: kept as the upsert
        # stream of new values), read through the client's virtual-table scanner
        self.changes = None
        if opts.virtual is not None:
            self.changes = ChangeReader(opts, opts.virtual, False, self.columns, names)
        elif meta.schema.primary_key:
            self.changes = ChangeReader(opts, "changelog", True, self.columns, names)
        self.snapshot_first = opts.virtual is None and bool(meta.schema.primary_key)
        self.types = [meta.schema.columns[names.index(c)].type for c in self.columns]
        self.target = types.spark_arrow_schema(schema)
        self._available_now: Offsets | None = None

    # -- offsets --------------------------------------------------------------------------------
    def _meta(self):
        meta = table_meta(self.opts)
        if meta.table_id != self.table_id:
            raise FlussError(f"Table '{self.opts.name}' was dropped and re-created while the query ran",
                             ErrorCode.CLIENT_ERROR)
        return meta

    def _latest(self) -> Offsets:
        meta = self._meta()
        return ranges.offsets_for(self.opts, meta, ranges.partitions_of(self.opts, meta), "latest")

    def initialOffset(self) -> dict:
        opts = self.opts
        meta = self._meta()
        parts = ranges.partitions_of(opts, meta)
        mode = opts.startup_mode
        if mode == "full" and self.snapshot_first:
            # the current state first (read when the first micro-batch runs), then the changelog
            # from the offsets it is planned at
            out = to_json(self.table_id, ranges.offsets_for(opts, meta, parts, "latest"))
            out[SNAPSHOT] = True
            return out
        if mode in ("full", "earliest"):
            offsets = ranges.offsets_for(opts, meta, parts, "earliest")
        elif mode == "latest":
            offsets = ranges.offsets_for(opts, meta, parts, "latest")
        else:
            offsets = ranges.offsets_for(opts, meta, parts, "timestamp", opts.startup_timestamp)
        return to_json(self.table_id, offsets)

    def _limited(self, start: Offsets, latest: Offsets, max_rows: int | None) -> Offsets:
        """``latest`` cut so that at most ``max_rows`` offsets are admitted, shared fairly between
        the buckets that have data (a bucket never moves backwards)."""
        end = {k: max(v, start.get(k, 0)) for k, v in latest.items()}
        for k, v in start.items():
            end.setdefault(k, v)
        if max_rows is None:
            return end
        backlog = {k: end[k] - start.get(k, 0) for k in end if end[k] > start.get(k, 0)}
        budget = max_rows
        out = {k: start.get(k, 0) for k in end}
        while budget > 0 and backlog:
            share = max(budget // len(backlog), 1)
            for k in sorted(backlog, key=lambda x: (x[0] is not None, x[0] or 0, x[1])):
                take = min(share, backlog[k], budget)
                out[k] += take
                backlog[k] -= take
                budget -= take
                if backlog[k] == 0:
                    del backlog[k]
                if budget == 0:
                    break
        return out

    def latestOffset(self, start: dict = None, limit=None) -> dict:
        latest = self._available_now if self._available_now is not None else self._latest()
        if start is None:  # Spark 4.0/4.1 call it without arguments
            return to_json(self.table_id, latest)
        begin = from_json(start, self.table_id, self.opts.name)
        if start.get(SNAPSHOT):  # a micro-batch of the snapshot alone; the log follows from there
            return to_json(self.table_id, begin)
        max_rows = None
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif limit is None and self.opts.max_records_per_trigger:
            max_rows = self.opts.max_records_per_trigger
        return to_json(self.table_id, self._limited(begin, latest, max_rows))

    def getDefaultReadLimit(self):
        if self.opts.max_records_per_trigger and ReadMaxRows is not None:
            return ReadMaxRows(self.opts.max_records_per_trigger)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def reportLatestOffset(self):
        return to_json(self.table_id, self._latest())

    def prepareForTriggerAvailableNow(self) -> None:
        # everything appended after this call belongs to a later run
        self._available_now = self._latest()

    # -- planning and reading -------------------------------------------------------------------
    def partitions(self, start: dict, end: dict):
        begin = from_json(start, self.table_id, self.opts.name)
        stop = from_json(end, self.table_id, self.opts.name)
        names = {}
        if any(pid is not None for pid, _ in stop):
            meta = self._meta()
            names = {pid: name for pid, name, _ in ranges.partitions_of(self.opts, meta)}
        missing = {pid for pid, b in stop if (pid, b) not in begin}
        if missing:
            # buckets first seen in this micro-batch (new partitions): from their earliest offset
            meta = self._meta()
            parts = [p for p in ranges.partitions_of(self.opts, meta) if p[0] in missing]
            earliest = ranges.offsets_for(self.opts, meta, parts, "earliest")
            begin = {**earliest, **begin}
        out = []
        if start.get(SNAPSHOT):
            if not names and any(pid is not None for pid, _ in begin):
                names = {pid: name for pid, name, _ in ranges.partitions_of(self.opts, self._meta())}
            out += [ranges.SnapshotBucket(self.table_id, pid, names.get(pid), b)
                    for pid, b in sorted(begin, key=lambda k: (k[0] is not None, k[0] or 0, k[1]))]
        for (pid, bucket) in sorted(stop, key=lambda k: (k[0] is not None, k[0] or 0, k[1])):
            s = begin.get((pid, bucket), 0)
            out += ranges.split(self.table_id, pid, names.get(pid), bucket, s, stop[(pid, bucket)],
                                self.opts.max_records_per_partition)
        return out

    def read(self, partition):
        convert = types.ReadConverter(self.types, self.target)
        if isinstance(partition, ranges.SnapshotBucket):
            return ranges.read_snapshot(self.opts, partition, self.columns, convert)
        if self.changes is not None:
            return self.changes.read(partition, convert)
        return ranges.read_range(self.opts, partition, self.projection, None, convert)

    def commit(self, end: dict) -> None:
        """Nothing to release: Fluss keeps no consumer state for us (as the Scala connector)."""

    def stop(self) -> None:
        """The connection stays cached for the worker's next query."""
