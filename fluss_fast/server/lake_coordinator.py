"""The coordinator's data-lake duties, as the Java coordinator does them with ``datalake.format`` set:

* every new table gets ``table.datalake.format`` (the cluster's format), and the lake catalog's
  settings as ``table.datalake.<format>.<key>`` properties, so a client (the union read, the tiering
  job) finds the lake from the table alone;
* COMMIT_LAKE_TABLE_SNAPSHOT records a tiering round's snapshot (``lake_snapshots``);
* GET_LAKE_SNAPSHOT answers with the latest, a given, or the latest readable one.
"""
from __future__ import annotations

from ..error_codes import Errors
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from .lake_snapshots import LakeBucketOffset, LakeSnapshotRecord, LakeSnapshotStore
from .settings import Settings

__all__ = ["lake_properties", "commit_lake_snapshots", "lake_snapshot_response"]


def lake_format(settings: Settings) -> str | None:
    fmt = settings.get("datalake.format")
    return str(fmt).strip().lower() or None if fmt else None


def lake_properties(settings: Settings, properties: dict) -> dict:
    """A new table's properties with the cluster's data-lake defaults added (the table's own win)."""
    fmt = lake_format(settings)
    if fmt is None:
        return properties
    out = dict(properties)
    out.setdefault("table.datalake.format", fmt)
    prefix = f"datalake.{fmt}."
    for key, value in settings.values.items():
        if key.startswith(prefix):
            out.setdefault(f"table.{key}", value)
    return out


def commit_lake_snapshots(store: LakeSnapshotStore, catalog, req) -> pb.CommitLakeTableSnapshotResponse:
    resp = pb.CommitLakeTableSnapshotResponse()
    for t in req.tables_req:
        entry = None
        if t.HasField("table_id"):
            entry = catalog.table_by_id(t.table_id)
        elif t.HasField("table_path"):
            entry = catalog.table(t.table_path.database_name, t.table_path.table_name)
        table_id = t.table_id if t.HasField("table_id") else -1
        out = resp.table_resp.add(table_id=entry.table_id if entry is not None else table_id)
        if entry is None:
            out.error_code = Errors.TABLE_NOT_EXIST
            out.error_message = f"Table with id {table_id} does not exist."
            continue
        buckets = []
        for b in t.buckets_req:
            if not b.HasField("log_end_offset"):
                continue
            pid = b.partition_id if b.HasField("partition_id") else None
            if pid is not None and pid not in entry.partitions:
                continue  # dropped since the round read it: nothing left to read from the lake either
            ts = b.max_timestamp if b.HasField("max_timestamp") else None
            buckets.append(LakeBucketOffset(pid, b.bucket_id, b.log_end_offset, ts))
        try:
            store.commit(entry.table_id, LakeSnapshotRecord(t.snapshot_id, buckets))
        except FlussError as e:
            out.error_code = e.error_code
            out.error_message = str(e)
        except OSError as e:
            out.error_code = Errors.UNKNOWN_SERVER_ERROR
            out.error_message = f"could not store lake snapshot {t.snapshot_id} of table {entry.path}: {e}"
    return resp


def lake_snapshot_response(store: LakeSnapshotStore, entry, req) -> pb.GetLakeSnapshotResponse:
    if req.HasField("snapshot_id"):
        record = store.by_id(entry.table_id, req.snapshot_id)
        if record is None:
            raise FlussError(f"Lake table snapshot {req.snapshot_id} not exist for table: {entry.path}, "
                             f"table id: {entry.table_id}", Errors.LAKE_SNAPSHOT_NOT_EXIST)
    else:
        # every round commits whole lake snapshots, so the latest is also the latest readable one
        record = store.latest(entry.table_id)
        if record is None:
            raise FlussError(f"Lake table snapshot not exist for table: {entry.path}, table id: {entry.table_id}",
                             Errors.LAKE_SNAPSHOT_NOT_EXIST)
    resp = pb.GetLakeSnapshotResponse(table_id=entry.table_id, snapshotId=record.snapshot_id)
    for b in record.buckets:
        out = resp.bucket_snapshots.add(bucket_id=b.bucket, log_offset=b.log_end_offset)
        if b.partition_id is not None:
            out.partition_id = b.partition_id
            part = entry.partitions.get(b.partition_id)
            if part is not None:
                out.partition_name = part.name
    return resp
