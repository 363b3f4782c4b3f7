"""The one owner of the server's per-bucket replicas: the bucket logs (``logstore.LogManager``), the
KV stores of primary-key tables (``kvstore.KvManager``) with their open scan cursors, and remote
tiering (``remote.RemoteLogManager``).

Built once when the server starts, from explicit arguments, and handed to the coordinator (drops)
and the tablet handlers (reads and writes). Opening it recovers every log found on disk; ``recover``
then removes what interrupted drops left behind; ``close`` syncs and closes everything.
"""
from __future__ import annotations

import os

from ..rpc import fluss_api_pb2 as pb
from .bucket_log import BucketLog
from .flush_policy import FlushPolicy
from .kvstore import KvManager
from .logstore import LogManager
from .remote import RemoteLogManager
from .settings import Settings


class ReplicaManager:
    def __init__(self, catalog, data_dir: str, settings: Settings, flush_policy: FlushPolicy,
                 remote_dir: str | None = None):
        segment_bytes = settings.get("log.segment.file-size") if "log.segment.file-size" in settings else None
        self.logs = LogManager(os.path.join(data_dir, "log"), segment_bytes=segment_bytes, flush_policy=flush_policy)
        self.remote = RemoteLogManager(catalog, self.logs, settings, remote_dir, data_dir)
        self.kv = KvManager(self.logs)
        # scan id -> cursor of a SCAN_KV session (kv_scan.Scanner); a drop ends the table's cursors
        self.scanners: dict[bytes, object] = {}

    # -- life cycle ------------------------------------------------------------------------------
    def recover(self, is_live) -> None:
        """Delete the replicas of tables and partitions ``is_live(table_id, partition_id)`` denies:
        leftovers of drops that a crash interrupted."""
        self.logs.purge(is_live)

    def start(self) -> None:
        self.remote.start()

    def close(self) -> None:
        self.remote.stop()
        self.scanners.clear()
        self.kv.close()
        self.logs.close()

    # -- replicas --------------------------------------------------------------------------------
    def create(self, table_entry, partition_entry, bucket: int) -> BucketLog:
        """The log replica of a bucket, created (empty) on first use."""
        return self.logs.get(table_entry, partition_entry, bucket)

    def drop_table(self, table_id: int) -> None:
        self._drop_kv(table_id, None)
        self.logs.drop_table(table_id)

    def drop_partition(self, table_id: int, partition_id: int) -> None:
        self._drop_kv(table_id, partition_id)
        self.logs.drop_partition(table_id, partition_id)

    def _drop_kv(self, table_id: int, partition_id: int | None) -> None:
        # before the log files go: the stores and cursors read from them
        for sid, sc in list(self.scanners.items()):
            if sc is not None and sc.key[0] == table_id and (partition_id is None or sc.key[1] == partition_id):
                del self.scanners[sid]
        self.kv.drop(table_id, partition_id)

    # -- remote storage --------------------------------------------------------------------------
    def filesystem_security_token(self) -> pb.GetFileSystemSecurityTokenResponse:
        scheme, token, info = self.remote.token()
        resp = pb.GetFileSystemSecurityTokenResponse(schema=scheme, token=token)
        for k, v in info.items():
            resp.addition_info.add(key=k, value=v)
        return resp
