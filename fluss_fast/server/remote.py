"""Remote (tiered) log of the embedded server: copy closed segments to a remote file system, answer
fetches below the local log start with the segment list, expire old data
(docs/contributing/formats.md §9.2, §9.3, §9.4).

Remote layout, as the Java server writes it::

    {remote}/log/{db}/{table}-{tableId}/[{partitionName}-p{partitionId}/]{bucket}/
        {segmentUUID}/{startOffset:020d}.log | .index | .timeindex
        {segmentUUID}/{endOffset:020d}.writer_snapshot
        metadata/{manifestUUID}.manifest          RemoteLogManifest JSON

Commit protocol (what makes ``kill -9`` mid-upload harmless): segment files are uploaded under a
fresh UUID, then a new manifest file is written, then the local pointer ``remote-log.json`` in the
bucket's log directory is replaced atomically (it plays ZooKeeper's part and carries a copy of the
manifest, so start-up needs no remote access). Only after that are old manifests and local
segments deleted. Anything remote that the committed manifest does not name (a half-uploaded
segment, a manifest whose commit never happened) is an orphan and removed on the next pass.

Threading: the task runs on the server loop; every remote or file I/O goes through
``asyncio.to_thread``, so uploads never stall requests.
"""
from __future__ import annotations

import array
import asyncio
import bisect
import contextlib
import json
import logging
import os
import struct
import time
import uuid

from ..codec.log import logbatch
from ..remote_fs import open_store
from ..rpc import fluss_api_pb2 as pb
from .catalog import TableEntry
from .settings import Settings, parse_duration_ms

log = logging.getLogger("fluss_fast.server.remote")

POINTER_FILE = "remote-log.json"
INDEX_CACHE_DIR = "remote-log-index-cache"
_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_COPY_CHUNK = 8 << 20
MANIFEST_VERSION = 1


def now_ms() -> int:
    return int(time.time() * 1000)


class RemoteSegment:
    __slots__ = ("segment_id", "start_offset", "end_offset", "max_timestamp", "size", "index")

    def __init__(self, segment_id: str, start_offset: int, end_offset: int, max_timestamp: int, size: int):
        self.segment_id = segment_id
        self.start_offset = start_offset
        self.end_offset = end_offset
        self.max_timestamp = max_timestamp
        self.size = size
        self.index = None  # (relative offsets, positions) once loaded

    def to_json(self) -> dict:
        return {"segment_id": self.segment_id, "start_offset": self.start_offset,
                "end_offset": self.end_offset, "max_timestamp": self.max_timestamp,
                "size_in_bytes": self.size}

    @classmethod
    def from_json(cls, obj) -> RemoteSegment:
        return cls(str(obj["segment_id"]), int(obj["start_offset"]), int(obj["end_offset"]),
                   int(obj["max_timestamp"]), int(obj["size_in_bytes"]))


class RemoteTablet:
    """The remote log of one bucket: where it lives and the committed segment list."""

    def __init__(self, key, local_dir: str, rel_dir: str, database: str, table: str,
                 partition_name: str | None):
        self.key = key  # (table_id, partition_id, bucket)
        self.local_dir = local_dir
        self.rel_dir = rel_dir  # below the remote root
        self.database = database
        self.table = table
        self.partition_name = partition_name
        self.segments: list[RemoteSegment] = []
        self.manifest_id: str | None = None
        self.orphans_checked = False
        self._load_pointer()

    @property
    def start_offset(self) -> int:
        return self.segments[0].start_offset if self.segments else -1

    @property
    def end_offset(self) -> int:
        return self.segments[-1].end_offset if self.segments else -1

    def manifest_json(self, segments) -> dict:
        table_id, pid, bucket = self.key
        out = {"version": MANIFEST_VERSION, "database": self.database, "table": self.table}
        if self.partition_name is not None:
            out["partition_name"] = self.partition_name
        out["table_id"] = table_id
        if pid is not None:
            out["partition_id"] = pid
        out["bucket_id"] = bucket
        out["remote_log_segments"] = [s.to_json() for s in segments]
        return out

    def _load_pointer(self) -> None:
        path = os.path.join(self.local_dir, POINTER_FILE)
        try:
            with open(path, "rb") as f:
                obj = json.loads(f.read())
            self.manifest_id = obj["manifest_id"]
            self.segments = [RemoteSegment.from_json(s) for s in obj["manifest"]["remote_log_segments"]]
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.error("%s: unreadable %s (%s); its remote segments are ignored", self.local_dir, path, e)

    def commit_pointer(self, manifest_id: str, manifest: dict) -> None:
        path = os.path.join(self.local_dir, POINTER_FILE)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(json.dumps({"manifest_id": manifest_id, "manifest": manifest}).encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def floor(self, offset: int) -> int:
        starts = [s.start_offset for s in self.segments]
        return bisect.bisect_right(starts, offset) - 1


def _table_setting(entry: TableEntry | None, settings: Settings, key: str) -> int | None:
    raw = entry.descriptor.properties.get(key) if entry is not None else None
    if raw is None:
        raw = settings.raw(key)
    if raw is None:
        return None
    try:
        return parse_duration_ms(raw)
    except ValueError:
        log.warning("table %s: ignoring bad %s=%r", entry.path if entry is not None else "?", key, raw)
        return None


def _table_int(entry: TableEntry | None, settings: Settings, key: str, default: int) -> int:
    raw = entry.descriptor.properties.get(key) if entry is not None else None
    try:
        return int(raw) if raw is not None else int(settings.get(key, default))
    except ValueError:
        return default


class RemoteLogManager:
    """Tiering, retention and remote look-ups for every bucket log of the server."""

    def __init__(self, catalog, logs, settings: Settings, remote_dir: str | None, data_dir: str):
        self.catalog = catalog
        self.logs = logs
        self.settings = settings
        location = remote_dir or settings.raw("remote.data.dir")
        self.store = open_store(location, settings) if location else None
        self.index_cache = os.path.join(data_dir, INDEX_CACHE_DIR)
        self.tablets: dict[tuple, RemoteTablet] = {}
        self.interval_ms = int(settings.get("remote.log.task-interval-duration"))
        self.retention_check_ms = int(settings.get("log.retention.check-interval"))
        self.max_upload = max(1, int(settings.get("remote.log.task-max-upload-segments")))
        self.parallel = max(1, int(settings.get("remote.log-manager.thread-pool-size")))
        self.roll_expired = bool(settings.get("log.retention.roll-active-segment.enabled"))
        self._task: asyncio.Task | None = None
        self._busy: set = set()

    @property
    def enabled(self) -> bool:
        return self.store is not None and self.interval_ms > 0

    # -- life cycle ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        period = self.interval_ms if self.enabled else self.retention_check_ms
        if self.enabled:
            period = min(period, self.retention_check_ms)
        period = max(period, 10) / 1000.0
        while True:
            await asyncio.sleep(period)
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - one bad pass must not end tiering for good
                log.exception("remote log task failed")

    async def run_once(self) -> None:
        sem = asyncio.Semaphore(self.parallel)

        async def one(blog):
            async with sem:
                await self.tier_bucket(blog)

        await asyncio.gather(*(one(b) for b in list(self.logs.logs.values())))
        if self.enabled:
            for key in [k for k in self.tablets if k not in self.logs.logs]:
                await self._forget(self.tablets.pop(key))

    async def _forget(self, rt: RemoteTablet) -> None:
        """The table or partition was dropped: its remote log goes too, as in Java."""
        def delete():
            try:
                self.store.fs.delete_dir(self.store.path(rt.rel_dir))
            except Exception as e:  # noqa: BLE001 - nothing refers to it any more
                log.info("cannot delete remote log %s: %s", rt.rel_dir, e)
            for s in rt.segments:
                self._drop_cached_index(s)

        await asyncio.to_thread(delete)

    # -- per bucket ------------------------------------------------------------------------------
    def tablet(self, blog) -> RemoteTablet | None:
        key = (blog.table_id, blog.partition_id, blog.bucket)
        rt = self.tablets.get(key)
        if rt is not None:
            return rt
        catalog = self.catalog
        entry = catalog.table_by_id(blog.table_id) if catalog is not None else None
        if entry is None:
            return None
        part = None
        parts = [f"{entry.table_name}-{entry.table_id}"]
        if blog.partition_id is not None:
            part = entry.partitions.get(blog.partition_id)
            if part is None:
                return None
            parts.append(f"{part.name}-p{part.partition_id}")
        rel = "/".join(["log", entry.database] + parts + [str(blog.bucket)])
        rt = RemoteTablet(key, blog.dir, rel, entry.database, entry.table_name,
                          part.name if part is not None else None)
        self.tablets[key] = rt
        return rt

    def find(self, blog) -> RemoteTablet | None:
        rt = self.tablet(blog)
        return rt if rt is not None and rt.segments else None

    async def tier_bucket(self, blog) -> None:
        key = (blog.table_id, blog.partition_id, blog.bucket)
        if key in self._busy or blog.closed:
            return
        self._busy.add(key)
        try:
            entry = self.catalog.table_by_id(blog.table_id)
            if entry is None:
                return
            rt = self.tablet(blog)
            if rt is None:
                return
            if self.enabled:
                if not rt.orphans_checked:
                    await asyncio.to_thread(self._clean_orphans, rt)
                    rt.orphans_checked = True
                await self._copy(blog, rt)
                await self._expire_remote(blog, rt, entry)
                keep = max(1, _table_int(entry, self.settings, "table.log.tiered.local-segments", 2))
                copied = sum(1 for s in blog.segments[:-1] if s.next_offset <= rt.end_offset)
                drop = min(copied, len(blog.segments) - keep)
                # A primary-key table's changelog may still be needed locally to rebuild its KV
                # state; until the KV store reports how far it has snapshotted, keep it all.
                if drop > 0 and not entry.has_primary_key:
                    blog.drop_oldest(drop)
            if not entry.has_primary_key:
                self._expire_local(blog, rt, entry)
        finally:
            self._busy.discard(key)

    async def _copy(self, blog, rt: RemoteTablet) -> None:
        copied_end = max(rt.end_offset, 0)
        cands = [s for s in blog.segments[:-1] if s.base_offset >= copied_end and s.size > 0]
        cands = cands[:self.max_upload]
        if not cands or blog.closed:
            return
        jobs = []
        for seg in cands:
            idx = b"".join(_INDEX_ENTRY.pack(o, p) for o, p in zip(seg.idx_off, seg.idx_pos, strict=True))
            tim = b"".join(_TIME_ENTRY.pack(t, o) for t, o in zip(seg.tidx_ts, seg.tidx_off, strict=True))
            jobs.append((str(uuid.uuid4()), seg.stem, seg.base_offset, seg.next_offset, seg.size,
                         seg.max_timestamp, idx, tim,
                         os.path.join(blog.dir, f"{seg.next_offset:020d}.writers.json")))
        try:
            new = await asyncio.to_thread(self._upload, rt, jobs)
        except Exception as e:  # noqa: BLE001 - the store may be down; the next pass retries
            log.warning("%s: copying segments to %s failed: %s", blog.name, self.store.url, e)
            return
        segments = rt.segments + new
        await self._commit(rt, segments)
        log.info("%s: tiered %d segment(s), remote log now [%d, %d)", blog.name, len(new),
                 rt.start_offset, rt.end_offset)

    def _upload(self, rt: RemoteTablet, jobs) -> list[RemoteSegment]:
        fs = self.store.fs
        out = []
        for seg_id, stem, base, end, size, max_ts, idx, tim, snapshot in jobs:
            seg_dir = self.store.path(rt.rel_dir, seg_id)
            fs.create_dir(seg_dir, recursive=True)
            with open(stem + ".log", "rb") as src, fs.open_output_stream(f"{seg_dir}/{base:020d}.log") as dst:
                left = size
                while left > 0:
                    chunk = src.read(min(_COPY_CHUNK, left))
                    if not chunk:
                        raise OSError(f"{stem}.log is shorter than {size} bytes")
                    dst.write(chunk)
                    left -= len(chunk)
            for suffix, data in ((".index", idx), (".timeindex", tim)):
                with fs.open_output_stream(f"{seg_dir}/{base:020d}{suffix}") as dst:
                    dst.write(data)
            with fs.open_output_stream(f"{seg_dir}/{end:020d}.writer_snapshot") as dst:
                dst.write(_java_writer_snapshot(snapshot))
            self._cache_index(seg_id, base, idx, tim)
            out.append(RemoteSegment(seg_id, base, end, max_ts, size))
        return out

    async def _commit(self, rt: RemoteTablet, segments: list[RemoteSegment]) -> None:
        manifest = rt.manifest_json(segments)
        manifest_id = str(uuid.uuid4())
        old = rt.manifest_id
        await asyncio.to_thread(self._write_manifest, rt, manifest_id, manifest)
        await asyncio.to_thread(rt.commit_pointer, manifest_id, manifest)
        for s in segments:
            for prev in rt.segments:
                if prev.segment_id == s.segment_id and prev.index is not None:
                    s.index = prev.index
        rt.segments = segments
        rt.manifest_id = manifest_id
        if old is not None:
            try:
                await asyncio.to_thread(self.store.fs.delete_file,
                                        self.store.path(rt.rel_dir, "metadata", f"{old}.manifest"))
            except Exception as e:  # noqa: BLE001 - an orphan now; the next start removes it
                log.info("could not delete old manifest %s: %s", old, e)

    def _write_manifest(self, rt: RemoteTablet, manifest_id: str, manifest: dict) -> None:
        fs = self.store.fs
        fs.create_dir(self.store.path(rt.rel_dir, "metadata"), recursive=True)
        with fs.open_output_stream(self.store.path(rt.rel_dir, "metadata", f"{manifest_id}.manifest")) as f:
            f.write(json.dumps(manifest).encode())

    def _clean_orphans(self, rt: RemoteTablet) -> None:
        """Remove what the committed manifest does not name: uploads and manifests of passes that
        died before their commit."""
        import pyarrow.fs as pafs

        fs = self.store.fs
        base = self.store.path(rt.rel_dir)
        try:
            infos = fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
        except Exception as e:  # noqa: BLE001
            log.info("cannot list %s: %s", base, e)
            return
        live = {s.segment_id for s in rt.segments}
        for info in infos:
            name = info.base_name
            if name == "metadata":
                try:
                    for m in fs.get_file_info(pafs.FileSelector(info.path, allow_not_found=True)):
                        if m.base_name != f"{rt.manifest_id}.manifest":
                            fs.delete_file(m.path)
                            log.info("removed orphan manifest %s", m.path)
                except Exception as e:  # noqa: BLE001
                    log.info("cannot clean %s: %s", info.path, e)
            elif name not in live:
                try:
                    if info.type == pafs.FileType.Directory:
                        fs.delete_dir(info.path)
                    else:
                        fs.delete_file(info.path)
                    log.info("removed orphan remote segment %s", info.path)
                except Exception as e:  # noqa: BLE001
                    log.info("cannot remove orphan %s: %s", info.path, e)

    async def _expire_remote(self, blog, rt: RemoteTablet, entry) -> None:
        ttl = _table_setting(entry, self.settings, "table.log.ttl")
        if not ttl or not rt.segments:
            return
        limit = now_ms() - ttl
        n = 0
        while n < len(rt.segments) and rt.segments[n].max_timestamp < limit:
            n += 1
        if n == 0:
            return
        gone = rt.segments[:n]
        await self._commit(rt, rt.segments[n:])
        log.info("%s: %d remote segment(s) expired (table.log.ttl)", blog.name, n)

        def delete():
            for s in gone:
                try:
                    self.store.fs.delete_dir(self.store.path(rt.rel_dir, s.segment_id))
                except Exception as e:  # noqa: BLE001 - an orphan, removed on a later start
                    log.info("cannot delete expired remote segment %s: %s", s.segment_id, e)
                self._drop_cached_index(s)

        await asyncio.to_thread(delete)

    def _expire_local(self, blog, rt: RemoteTablet | None, entry) -> None:
        ttl = _table_setting(entry, self.settings, "table.log.local-ttl")
        if ttl is None:
            ttl = _table_setting(entry, self.settings, "table.log.ttl")
        if not ttl:
            return
        limit = now_ms() - ttl
        active = blog.segments[-1]
        if self.roll_expired and 0 <= active.max_timestamp < limit:
            blog.roll()
        copied_end = rt.end_offset if (self.enabled and rt is not None) else None
        n = 0
        for seg in blog.segments[:-1]:
            if seg.max_timestamp >= limit:
                break
            if copied_end is not None and seg.next_offset > copied_end:
                break  # not tiered yet: local data is all there is
            n += 1
        if n:
            blog.drop_oldest(n)
            log.info("%s: %d local segment(s) expired", blog.name, n)

    # -- index cache (Java's names: {start}_{uuid}.index) -------------------------------------------
    def _cache_path(self, seg_id: str, start: int, suffix: str) -> str:
        return os.path.join(self.index_cache, f"{start}_{seg_id}{suffix}")

    def _cache_index(self, seg_id: str, start: int, idx: bytes, tim: bytes) -> None:
        os.makedirs(self.index_cache, exist_ok=True)
        for suffix, data in ((".index", idx), (".timeindex", tim)):
            path = self._cache_path(seg_id, start, suffix)
            with open(path + ".tmp", "wb") as f:
                f.write(data)
            os.replace(path + ".tmp", path)

    def _drop_cached_index(self, s: RemoteSegment) -> None:
        for suffix in (".index", ".timeindex"):
            with contextlib.suppress(OSError):
                os.unlink(self._cache_path(s.segment_id, s.start_offset, suffix))

    def _read_index(self, rt: RemoteTablet, s: RemoteSegment, suffix: str) -> bytes:
        path = self._cache_path(s.segment_id, s.start_offset, suffix)
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            pass
        with self.store.fs.open_input_stream(
                self.store.path(rt.rel_dir, s.segment_id, f"{s.start_offset:020d}{suffix}")) as f:
            data = f.read()
        os.makedirs(self.index_cache, exist_ok=True)
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
        return data

    async def _offset_index(self, rt: RemoteTablet, s: RemoteSegment):
        if s.index is None:
            data = await asyncio.to_thread(self._read_index, rt, s, ".index")
            offs = array.array("q")
            poss = array.array("q")
            for o, p in _INDEX_ENTRY.iter_unpack(data[:len(data) - len(data) % 8]):
                offs.append(o)
                poss.append(p)
            s.index = (offs, poss)
        return s.index

    async def position_for(self, rt: RemoteTablet, s: RemoteSegment, offset: int) -> int:
        """Start position of the indexed batch run holding ``offset`` (Java's lookupPosition)."""
        offs, poss = await self._offset_index(rt, s)
        i = bisect.bisect_right(offs, offset - s.start_offset) - 1
        return int(poss[i]) if i >= 0 else 0

    # -- answers ---------------------------------------------------------------------------------
    def log_start_offset(self, blog) -> int:
        rt = self.find(blog) if self.store is not None else None
        if rt is not None and rt.start_offset < blog.log_start_offset:
            return rt.start_offset
        return blog.log_start_offset

    async def fetch_info(self, blog, offset: int) -> pb.PbRemoteLogFetchInfo | None:
        """What FETCH_LOG answers for an offset below the local log start, or None when the remote
        log does not hold it either."""
        if self.store is None:
            return None
        rt = self.find(blog)
        if rt is None or not rt.start_offset <= offset < rt.end_offset:
            return None
        i = rt.floor(offset)
        if i < 0:
            return None
        run = [rt.segments[i]]
        for s in rt.segments[i + 1:]:
            if s.start_offset != run[-1].end_offset:
                break
            run.append(s)
        info = pb.PbRemoteLogFetchInfo(remote_log_tablet_dir=self.store.url_of(rt.rel_dir))
        if rt.partition_name is not None:
            info.partition_name = rt.partition_name
        for s in run:
            info.remote_log_segments.add(remote_log_segment_id=s.segment_id,
                                         remote_log_start_offset=s.start_offset,
                                         remote_log_end_offset=s.end_offset,
                                         segment_size_in_bytes=s.size, max_timestamp=s.max_timestamp)
        info.first_start_pos = await self.position_for(rt, run[0], offset)
        return info

    async def offset_for_timestamp(self, blog, ts: int) -> int | None:
        """Base offset of the first remote batch with commit timestamp >= ts, or None."""
        rt = self.find(blog) if self.store is not None else None
        if rt is None:
            return None
        for s in rt.segments:
            if s.max_timestamp < ts:
                continue
            found = await asyncio.to_thread(self._scan_for_timestamp, rt, s, ts)
            if found is not None:
                return found
        return None

    def _scan_for_timestamp(self, rt: RemoteTablet, s: RemoteSegment, ts: int) -> int | None:
        tim = self._read_index(rt, s, ".timeindex")
        start_rel = None
        for t, o in _TIME_ENTRY.iter_unpack(tim[:len(tim) - len(tim) % 12]):
            if t >= ts:
                break
            start_rel = o
        idx = self._read_index(rt, s, ".index")
        pos = 0
        if start_rel is not None:
            for o, p in _INDEX_ENTRY.iter_unpack(idx[:len(idx) - len(idx) % 8]):
                if o > start_rel:
                    break
                pos = p
        path = self.store.path(rt.rel_dir, s.segment_id, f"{s.start_offset:020d}.log")
        window = 1 << 20
        with self.store.fs.open_input_file(path) as f:
            # the time index puts ``pos`` within an index interval of the answer: the first window
            # nearly always holds it, and a segment is never read whole
            while pos < s.size:
                data = f.read_at(min(window, s.size - pos), pos)
                consumed = 0
                for h in logbatch.iter_batches(data):
                    if h.commit_timestamp >= ts:
                        return h.base_offset
                    consumed = h.position + h.total_size
                if consumed == 0:
                    if window >= s.size - pos:
                        return None
                    window *= 2  # one batch larger than the window
                    continue
                pos += consumed
        return None

    def token(self):
        if self.store is None:
            return "file", b"", {}
        return self.store.token()


def _java_writer_snapshot(path: str) -> bytes:
    """The writer state at a segment's end in Java's WriterSnapshotMap JSON (our local snapshot
    keeps a few batches per writer; Java keeps the last one)."""
    entries = []
    try:
        with open(path, "rb") as f:
            obj = json.loads(f.read())
        for wid, batches in obj.get("writers", {}).items():
            if not batches:
                continue
            seq, first, last, ts = (int(x) for x in batches[-1])
            entries.append({"writer_id": int(wid), "last_batch_sequence": seq,
                            "last_batch_base_offset": first, "offset_delta": last - first,
                            "last_batch_timestamp": ts})
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    return json.dumps({"version": 1, "writer_id_entries": entries}).encode()
