"""Every bucket log of the embedded server (``bucket_log.BucketLog``): discovery and recovery at
start, creation on first use, drops, and the writer-id counter.

Layout under the log root (``DATA_DIR/log``)::

    {db}/{table}-{tableId}/log-{bucket}/                              non-partitioned
    {db}/{table}-{tableId}/{partitionName}-p{partitionId}/log-{bucket}/
        00000000000000000000.log         batches as appended (offsets / commit timestamp filled in)
        00000000000000000000.index       sparse offset index, big-endian [int32 rel offset][int32 position]
        00000000000000000000.timeindex   big-endian [int64 timestamp][int32 rel offset]
        00000000000000000000.writers.json  idempotence state as of the segment's base offset
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time

from .bucket_log import BucketLog

log = logging.getLogger("fluss_fast.server.log")

DEFAULT_SEGMENT_BYTES = 1 << 30          # log.segment.file-size


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


def _remove_tree(path: str) -> None:
    # Renamed first, so that a restart never recovers a half-deleted log as a live one.
    trash = f"{path}.deleted-{os.getpid()}-{time.monotonic_ns()}"
    try:
        os.rename(path, trash)
    except OSError:
        trash = path
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        shutil.rmtree(trash, ignore_errors=True)
        return
    loop.run_in_executor(None, shutil.rmtree, trash, True)


def _table_dir_name(table_name: str, table_id: int) -> str:
    return f"{table_name}-{table_id}"


class LogManager:
    """Every bucket log of the server, keyed by (table id, partition id or None, bucket).

    Opening recovers every log found under ``root_dir`` (``DATA_DIR/log``), so torn tails are cut
    before the first request is served. ``segment_bytes`` defaults to 1 GiB
    (env ``FLUSS_FAST_LOG_SEGMENT_BYTES`` overrides it, for tests that want rolls).
    """

    def __init__(self, root_dir: str, segment_bytes: int | None = None, flush_policy=None):
        self.root = os.path.abspath(root_dir)
        self.flush_policy = flush_policy
        self.segment_bytes = int(segment_bytes or _env_int("FLUSS_FAST_LOG_SEGMENT_BYTES", DEFAULT_SEGMENT_BYTES))
        if self.segment_bytes < 1:
            raise ValueError(f"segment_bytes must be positive, got {self.segment_bytes}")
        self.logs: dict[tuple[int, int | None, int], BucketLog] = {}
        self._table_dirs: dict[int, str] = {}
        os.makedirs(self.root, exist_ok=True)
        self._writer_id_path = os.path.join(self.root, "writer-id")
        self._next_writer_id = self._load_writer_id()
        self._recover_all()

    # -- writer ids ----------------------------------------------------------------------------
    def _load_writer_id(self) -> int:
        try:
            with open(self._writer_id_path, "rb") as f:
                return int(f.read().decode().strip() or 0)
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as e:
            raise RuntimeError(f"unreadable writer id counter {self._writer_id_path}: {e}") from e

    def next_writer_id(self) -> int:
        """A writer id never handed out before, also across restarts (persisted before returned)."""
        wid = self._next_writer_id
        tmp = self._writer_id_path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(str(wid + 1).encode())
        os.replace(tmp, self._writer_id_path)
        self._next_writer_id = wid + 1
        return wid

    # -- discovery -----------------------------------------------------------------------------
    def _recover_all(self) -> None:
        started = time.monotonic()
        count = 0
        for db in sorted(os.listdir(self.root)):
            db_dir = os.path.join(self.root, db)
            if not os.path.isdir(db_dir):
                continue
            for tdir in sorted(os.listdir(db_dir)):
                if ".deleted-" in tdir:
                    shutil.rmtree(os.path.join(db_dir, tdir), ignore_errors=True)
                    continue
                name, sep, tid = tdir.rpartition("-")
                if not sep or not tid.isdigit():
                    continue
                table_id = int(tid)
                tpath = os.path.join(db_dir, tdir)
                self._table_dirs[table_id] = tpath
                for sub in sorted(os.listdir(tpath)):
                    spath = os.path.join(tpath, sub)
                    if ".deleted-" in sub:
                        shutil.rmtree(spath, ignore_errors=True)
                        continue
                    if sub.startswith("log-") and sub[4:].isdigit():
                        self._open(spath, table_id, None, int(sub[4:]), f"{db}.{name} bucket {sub[4:]}")
                        count += 1
                        continue
                    pname, psep, pid = sub.rpartition("-p")
                    if not psep or not pid.isdigit() or not os.path.isdir(spath):
                        continue
                    for bdir in sorted(os.listdir(spath)):
                        if bdir.startswith("log-") and bdir[4:].isdigit():
                            self._open(os.path.join(spath, bdir), table_id, int(pid), int(bdir[4:]),
                                       f"{db}.{name} partition {pname} bucket {bdir[4:]}")
                            count += 1
        if count:
            log.info("recovered %d bucket logs in %.3f s", count, time.monotonic() - started)

    def _open(self, path: str, table_id: int, partition_id: int | None, bucket: int, name: str) -> BucketLog:
        blog = BucketLog(path, table_id, partition_id, bucket, name, self.segment_bytes)
        blog.flush_policy = self.flush_policy
        self.logs[(table_id, partition_id, bucket)] = blog
        return blog

    # -- access --------------------------------------------------------------------------------
    def get(self, table_entry, partition_entry, bucket: int) -> BucketLog:
        """The log of a bucket, created (empty) on first use."""
        pid = partition_entry.partition_id if partition_entry is not None else None
        key = (table_entry.table_id, pid, bucket)
        blog = self.logs.get(key)
        if blog is not None:
            return blog
        tdir = self._table_dirs.get(table_entry.table_id)
        if tdir is None:
            tdir = os.path.join(self.root, table_entry.database,
                                _table_dir_name(table_entry.table_name, table_entry.table_id))
            self._table_dirs[table_entry.table_id] = tdir
        name = f"{table_entry.database}.{table_entry.table_name}"
        if partition_entry is not None:
            path = os.path.join(tdir, f"{partition_entry.name}-p{pid}", f"log-{bucket}")
            name += f" partition {partition_entry.name}"
        else:
            path = os.path.join(tdir, f"log-{bucket}")
        return self._open(path, table_entry.table_id, pid, bucket, f"{name} bucket {bucket}")

    def find(self, table_id: int, partition_id: int | None, bucket: int) -> BucketLog | None:
        return self.logs.get((table_id, partition_id, bucket))

    def table_ids(self) -> set:
        return set(self._table_dirs)

    # -- drops ---------------------------------------------------------------------------------
    def drop_table(self, table_id: int) -> None:
        """Forget the table's logs at once; their files go in the background when a loop runs."""
        for key in [k for k in self.logs if k[0] == table_id]:
            self.logs.pop(key).close()
        tdir = self._table_dirs.pop(table_id, None)
        if tdir is not None:
            _remove_tree(tdir)

    def drop_partition(self, table_id: int, partition_id: int) -> None:
        for key in [k for k in self.logs if k[0] == table_id and k[1] == partition_id]:
            self.logs.pop(key).close()
        tdir = self._table_dirs.get(table_id)
        if tdir is None or not os.path.isdir(tdir):
            return
        suffix = f"-p{partition_id}"
        for sub in os.listdir(tdir):
            if sub.endswith(suffix) and sub[:-len(suffix)]:
                _remove_tree(os.path.join(tdir, sub))

    def purge(self, is_live) -> None:
        """Delete logs whose table (or partition) ``is_live(table_id, partition_id)`` denies:
        leftovers of drops that a crash interrupted."""
        for table_id in list(self._table_dirs):
            if not is_live(table_id, None):
                self.drop_table(table_id)
        for (table_id, pid, _b) in list(self.logs):
            if pid is not None and (table_id, pid, _b) in self.logs and not is_live(table_id, pid):
                self.drop_partition(table_id, pid)

    def close(self) -> None:
        for blog in self.logs.values():
            if self.flush_policy is not None:
                self.flush_policy.sync_now(blog)  # a clean stop leaves nothing in the page cache only
            blog.close()
        self.logs.clear()
