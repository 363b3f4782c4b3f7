"""Lake snapshots the tiering job committed: per table, each snapshot's id and every bucket's log end
offset (what the Java coordinator keeps in ZooKeeper under ``/tabletservers/.../laketable``).

The tiering job (``fluss_fast.lake.tiering``, the role of Java's Flink tiering job) writes the log to
the lake, commits the lake table, then sends COMMIT_LAKE_TABLE_SNAPSHOT; GET_LAKE_SNAPSHOT answers
from here. Each table's snapshots are one JSON file under ``<data dir>/lake``, replaced atomically, so
a restart answers as before.
"""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field

from ..error_codes import Errors
from ..errors import FlussError

__all__ = ["LakeBucketOffset", "LakeSnapshotRecord", "LakeSnapshotStore"]

# the Java coordinator keeps this many snapshots of a table (older ones are expired by the lake)
_KEEP = 64


@dataclass(frozen=True)
class LakeBucketOffset:
    partition_id: int | None
    bucket: int
    log_end_offset: int
    max_timestamp: int | None = None


@dataclass
class LakeSnapshotRecord:
    snapshot_id: int
    buckets: list[LakeBucketOffset] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"snapshot_id": self.snapshot_id,
                "buckets": [[b.partition_id, b.bucket, b.log_end_offset, b.max_timestamp] for b in self.buckets]}

    @classmethod
    def from_json(cls, d: dict) -> LakeSnapshotRecord:
        return cls(int(d["snapshot_id"]), [LakeBucketOffset(p, int(b), int(o), t) for p, b, o, t in d["buckets"]])


class LakeSnapshotStore:
    """The committed lake snapshots of every table, newest last."""

    def __init__(self, root: str):
        self.root = root
        self._tables: dict[int, list[LakeSnapshotRecord]] = {}

    def _file(self, table_id: int) -> str:
        return os.path.join(self.root, f"table-{table_id}.json")

    def snapshots(self, table_id: int) -> list[LakeSnapshotRecord]:
        got = self._tables.get(table_id)
        if got is None:
            got = []
            try:
                with open(self._file(table_id), encoding="utf-8") as f:
                    got = [LakeSnapshotRecord.from_json(d) for d in json.load(f)]
            except FileNotFoundError:
                pass
            self._tables[table_id] = got
        return got

    def commit(self, table_id: int, record: LakeSnapshotRecord) -> None:
        """Add a snapshot. A bucket the new snapshot does not name keeps its previous offset: a tiering
        round only reports the buckets it moved, as Java's committer merges them into the last one."""
        known = self.snapshots(table_id)
        if known and record.snapshot_id <= known[-1].snapshot_id:
            raise FlussError(f"Lake snapshot {record.snapshot_id} of table id {table_id} is not newer than the "
                             f"committed snapshot {known[-1].snapshot_id}.", Errors.INVALID_UPDATE_VERSION_EXCEPTION)
        merged = {(b.partition_id, b.bucket): b for b in (known[-1].buckets if known else [])}
        for b in record.buckets:
            merged[(b.partition_id, b.bucket)] = b
        keys = sorted(merged, key=lambda k: (-1 if k[0] is None else k[0], k[1]))
        known.append(LakeSnapshotRecord(record.snapshot_id, [merged[k] for k in keys]))
        del known[:-_KEEP]
        os.makedirs(self.root, exist_ok=True)
        tmp = self._file(table_id) + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump([r.to_json() for r in known], f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._file(table_id))

    def latest(self, table_id: int) -> LakeSnapshotRecord | None:
        known = self.snapshots(table_id)
        return known[-1] if known else None

    def by_id(self, table_id: int, snapshot_id: int) -> LakeSnapshotRecord | None:
        for r in self.snapshots(table_id):
            if r.snapshot_id == snapshot_id:
                return r
        return None

    def drop(self, table_id: int) -> None:
        self._tables.pop(table_id, None)
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._file(table_id))
