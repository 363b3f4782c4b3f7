"""Remote-log reading behind the log scanners (docs/contributing/formats.md §9.3).

When a FetchLog answer carries ``remote_log_fetch_info`` instead of records, the fetcher hands it
to ``RemoteLogReader.start``: the bucket then gets a ``_Cursor`` that walks the listed segments.

* Downloads run on a pool of ``remote-file.download-thread-num`` threads; each cursor keeps the
  segment it reads plus ``scanner.remote-log.prefetch-num`` following ones downloading or
  downloaded, so decoding one segment overlaps the transfer of the next ones. A segment larger
  than a few MiB is fetched as ``scanner.remote-log.read-concurrency`` ranges in parallel.
* Files land in a private temp dir (removed on close, when the scanner is collected and at
  interpreter exit); each is preallocated, memory-mapped and unlinked as soon as its download
  starts (so nothing outlives the process even after ``kill -9``), and decoded in slices of a few
  MiB on a worker thread while the rest is still arriving, so memory stays at a few slices per
  bucket however large the segments are. A remote dir on a local file system is mapped in place.
* Remote data is never projected by the server: every batch is CRC-checked, decoded whole, then
  cut to the scanner's columns; records below the fetch offset are skipped. After the last listed
  segment the bucket simply fetches from its end offset again: local data, or the next remote run.

Failures: an unreachable store gives one retriable FlussError (NETWORK_EXCEPTION) from ``poll``
and the bucket re-fetches after a back-off, so reading resumes once the store is back; a CRC
mismatch names the segment; a segment that disappeared (retention) makes the bucket ask the
server again, which then answers with the usual out-of-range error.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import mmap
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable

import pyarrow.fs as pafs

from ...codec.log import logbatch
from ...error_codes import CLIENT_ERROR, Errors
from ...errors import FlussError
from ...remote_fs import client_filesystem
from ...rpc import fluss_api_pb2 as pb
from ...rpc.api import Api

NETWORK_EXCEPTION = Errors.NETWORK_EXCEPTION
CORRUPT_MESSAGE = Errors.CORRUPT_MESSAGE
#: bytes of a segment decoded in one go (one buffered result)
SLICE_BYTES = 4 << 20
#: segments above this are downloaded as parallel ranges
_RANGE_BYTES = 8 << 20
_COPY_CHUNK = 4 << 20
#: a streamed download reports progress this often, so decoding can follow it closely
_STREAM_CHUNK = 256 << 10
_TOKEN_TTL_S = 60.0
_RETRY_S = 0.5


def _remove_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _gone(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, FileNotFoundError) or "does not exist" in text or "NoSuchKey" in text \
        or "NOT_FOUND" in text


class RemoteLogReader:
    """The remote-log side of one LogFetcher (everything but the downloads runs on the runtime loop)."""

    def __init__(self, fetcher):
        self.fetcher = fetcher
        cfg = fetcher.ctx.config
        self.prefetch = max(0, int(cfg.get("scanner.remote-log.prefetch-num")))
        self.threads = max(1, int(cfg.get("remote-file.download-thread-num")))
        self.read_concurrency = max(1, int(cfg.get("scanner.remote-log.read-concurrency")))
        self.pool = concurrent.futures.ThreadPoolExecutor(self.threads, thread_name_prefix="fluss-fast-remote")
        self._range_pool = None
        if self.read_concurrency > 1:
            self._range_pool = concurrent.futures.ThreadPoolExecutor(
                self.read_concurrency, thread_name_prefix="fluss-fast-remote-range")
        self.tmp = tempfile.mkdtemp(prefix="fluss-fast-remote-")
        self._finalizer = weakref.finalize(self, _close_resources, self.tmp, self.pool, self._range_pool)
        self._cursors: dict[object, _Cursor] = {}
        self._token = None
        self._token_at = 0.0
        self._fs_cache: dict[tuple, object] = {}
        self.gone_seen: set = set()

    def close(self) -> None:
        for cur in list(self._cursors.values()):
            cur.close()
        self._cursors.clear()
        self._finalizer()

    # -- called by the fetcher -------------------------------------------------------------------
    def start(self, tb, st, fetch_offset: int, info_bytes: bytes, high_watermark: int) -> None:
        info = pb.PbRemoteLogFetchInfo.FromString(info_bytes)
        old = self._cursors.pop(tb, None)
        if old is not None:
            old.close()
        if not info.remote_log_segments:
            raise FlussError(f"{self.fetcher.spec.where(tb)}: the server listed no remote segment "
                             f"for offset {fetch_offset}", CLIENT_ERROR)
        cur = _Cursor(self, tb, st, fetch_offset, info, high_watermark)
        self._cursors[tb] = cur
        st.remote = cur
        st.fetch_pos = fetch_offset
        cur.schedule()

    def forget(self, cur: _Cursor) -> None:
        if self._cursors.get(cur.tb) is cur:
            del self._cursors[cur.tb]

    def ahead(self) -> int:
        """Segments downloading or downloaded ahead of what the cursors read now (cursors of
        buckets that were unsubscribed or moved meanwhile are closed first: they hold budget)."""
        for cur in [c for c in self._cursors.values() if not c._current()]:
            cur.close()
        return sum(1 for cur in self._cursors.values() for k in cur.downloads if k > cur.index)

    def pump(self, tb, st) -> None:
        cur = st.remote
        if cur.busy or cur.closed:
            return
        cur.busy = True
        self.fetcher.spawn(cur.step())

    # -- credentials and file systems ------------------------------------------------------------
    async def token(self, url: str) -> dict | None:
        if "://" not in url or url.startswith("file:"):
            return None
        now = time.monotonic()
        if self._token is None or now - self._token_at > _TOKEN_TTL_S:
            resp = await self.fetcher.ctx.any_tablet(Api.GET_FILESYSTEM_SECURITY_TOKEN,
                                                     pb.GetFileSystemSecurityTokenRequest())
            self._token = {"token": bytes(resp.token), "info": {kv.key: kv.value for kv in resp.addition_info}}
            self._token_at = now
            self._fs_cache.clear()
        return self._token

    def filesystem(self, url: str, token: dict | None):
        scheme = url.split("://", 1)[0] if "://" in url else "file"
        key = (scheme, url.split("/", 3)[2] if "://" in url else "")
        hit = self._fs_cache.get(key)
        fs, path = client_filesystem(url, token)
        if hit is not None:
            return hit, path
        self._fs_cache[key] = fs
        return fs, path

    # -- on a download thread --------------------------------------------------------------------
    def download(self, fs, path: str, dest: str, size_hint: int, progress=None) -> int:
        if self._range_pool is not None and size_hint > _RANGE_BYTES:
            with fs.open_input_file(path) as src:
                size = src.size()
                step = max(_COPY_CHUNK, -(-size // self.read_concurrency))
                fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    def part(off):
                        data = src.read_at(min(step, size - off), off)
                        os.pwrite(fd, data, off)

                    futs = [self._range_pool.submit(part, off) for off in range(0, size, step)]
                    for f in futs:
                        f.result()
                finally:
                    os.close(fd)
                return size
        n = 0
        with fs.open_input_stream(path) as src, open(dest, "wb", buffering=0) as out:
            if progress is not None and size_hint > 0:
                # full size up front: the reader maps the file now and decodes what has arrived
                os.ftruncate(out.fileno(), size_hint)
                progress.advance(0, ready=True)
            while True:
                chunk = src.read(_STREAM_CHUNK if progress is not None else _COPY_CHUNK)
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    view = view[out.write(view):]
                n += len(chunk)
                if progress is not None:
                    progress.advance(n)
        return n


def _close_resources(tmp: str, pool, range_pool) -> None:
    pool.shutdown(wait=False, cancel_futures=True)
    if range_pool is not None:
        range_pool.shutdown(wait=False, cancel_futures=True)
    _remove_dir(tmp)


class _Cursor:
    """Reading position of one bucket inside one remote run of segments."""

    def __init__(self, reader: RemoteLogReader, tb, st, fetch_offset: int, info, high_watermark: int):
        self.reader = reader
        self.tb = tb
        self.st = st
        self.offset = fetch_offset          # next offset to hand over
        self.dir = info.remote_log_tablet_dir.rstrip("/")
        self.segments = list(info.remote_log_segments)
        self.first_pos = info.first_start_pos if info.HasField("first_start_pos") else 0
        self.high_watermark = high_watermark
        self.index = 0                      # segment being read
        self.pos = self.first_pos           # byte position inside it
        self.view = None                    # memoryview of the mapped segment
        self.downloads: dict[int, _Download] = {}
        self.streaming: _Download | None = None  # download of the current segment still arriving
        self.busy = False
        self.closed = False
        self._scheduled = False

    def url(self, k: int) -> str:
        seg = self.segments[k]
        return f"{self.dir}/{seg.remote_log_segment_id}/{seg.remote_log_start_offset:020d}.log"

    def label(self, k: int) -> str:
        seg = self.segments[k]
        return f"remote log segment {seg.remote_log_segment_id} ({self.url(k)})"

    def schedule(self) -> None:
        self.reader.fetcher.spawn(self._schedule())

    async def _schedule(self) -> None:
        try:
            await self._ensure_downloads()
        except FlussError as exc:
            self._abort(exc)
        except Exception as exc:  # noqa: BLE001
            self._abort(self._download_error(self.index, exc))

    async def _ensure_downloads(self) -> None:
        """The current segment and ``prefetch`` more are downloading or downloaded."""
        if self.closed:
            return
        token = await self.reader.token(self.dir)
        last = min(len(self.segments), self.index + 1 + self.reader.prefetch)
        for k in range(self.index, last):
            if k in self.downloads:
                continue
            # the current segment always; the ones ahead only within the scanner-wide budget, so
            # temp disk stays at about prefetch-num segments plus one per bucket being read
            if k > self.index and self.reader.ahead() >= self.reader.prefetch:
                break
            seg = self.segments[k]
            url = self.url(k)
            fs, path = self.reader.filesystem(url, token)
            if isinstance(fs, pafs.LocalFileSystem):
                # a local remote dir needs no copy: the segment is mapped where it lies
                fut: concurrent.futures.Future = concurrent.futures.Future()
                try:
                    # one stat of a local file, done now so the segment is ready at once: a thread hop would
                    # queue it behind the remote downloads of the same pool
                    fut.set_result(os.path.getsize(path))  # noqa: ASYNC240
                except OSError as exc:
                    fut.set_exception(exc)
                self.downloads[k] = _Download(fut, path, None)
                continue
            tb = self.tb
            pid = "" if tb.partition_id is None else f"{tb.partition_id}-"
            dest = os.path.join(self.reader.tmp, f"{tb.table_id}-{pid}{tb.bucket_id}-{seg.remote_log_segment_id}.log")
            progress = _Progress(asyncio.get_running_loop())
            fut = self.reader.pool.submit(self.reader.download, fs, path, dest, seg.segment_size_in_bytes,
                                          progress)
            # the end of a download (or its failure) wakes a reader waiting for more bytes
            fut.add_done_callback(progress.finished)
            self.downloads[k] = _Download(fut, dest, progress)

    async def step(self) -> None:
        """Hand over slices of the segments as buffered results while the bucket has room."""
        fetcher = self.reader.fetcher
        try:
            while not self.closed and self._current() and self._room():
                await self._slice()
        except FlussError as exc:
            self._abort(exc)
        except Exception as exc:  # noqa: BLE001 - reported through poll, never lost
            self._abort(FlussError(f"{fetcher.spec.where(self.tb)}: reading {self.label(self.index)} "
                                   f"failed: {exc!r}", CLIENT_ERROR))
        finally:
            self.busy = False
            fetcher.wake()

    def _room(self) -> bool:
        return self.reader.fetcher.has_room(self.tb, self.offset)

    async def _slice(self) -> None:
        """Decode the next slice of the current segment into one buffered result."""
        fetcher = self.reader.fetcher
        seg = self.segments[self.index]
        if self.view is None:
            await self._ensure_downloads()
            dl = self.downloads[self.index]
            progress = dl.progress
            if not dl.fut.done() and progress is not None and seg.segment_size_in_bytes > 0:
                # decode while it streams in: map the preallocated file once the download has it
                await progress.wait(lambda: progress.ready)
                if not dl.fut.done() or dl.fut.exception() is None:
                    self.view = _map(dl.dest, seg.segment_size_in_bytes)
                    self.streaming = dl
            if self.view is None:
                size = await self._finished(dl.fut)
                self.view = _map(dl.dest, size, unlink=not dl.local)
        limit = len(self.view)
        partial = False
        streaming = self.streaming
        if streaming is not None and streaming.progress is not None:
            if streaming.fut.done():
                await self._finished(streaming.fut)
                self.streaming = None
            else:
                sp = streaming.progress
                limit = sp.written
                partial = True
                need = _batch_end(self.view, self.pos, limit)
                if limit < need:
                    # nothing whole to decode yet: back once the first batch has fully arrived
                    await sp.wait(lambda: sp.written >= need)
                    return
        view = self.view if limit == len(self.view) else self.view[:limit]
        job = (fetcher.spec, self.tb, view, self.pos, self.offset, self.label(self.index), partial,
               fetcher.collect_into)
        chunks, nxt, end = await asyncio.get_running_loop().run_in_executor(None, _decode_slice, *job)
        if self.closed or not self._current():
            return
        if partial and end == self.pos:
            # the batch at pos claims more bytes than arrived when _batch_end looked: wait for more
            if streaming is not None and streaming.progress is not None:
                grown = streaming.progress
                await grown.wait(lambda: grown.written > limit)
            return
        view = self.view
        start_offset = self.offset
        self.pos = end
        if end >= len(view):
            nxt = max(nxt, seg.remote_log_end_offset)
            self.view = None
            self.streaming = None
            self.downloads.pop(self.index, None)
            self.index += 1
            self.pos = 0
        self.offset = max(nxt, start_offset)
        fetcher.offer(self.tb, self.st, start_offset, chunks, self.offset, self.high_watermark)
        if self.index >= len(self.segments):
            self._finish()
        else:
            await self._ensure_downloads()

    async def _finished(self, fut) -> int:
        """Size of a completed download of the current segment, checked against the listing."""
        seg = self.segments[self.index]
        try:
            size = await asyncio.wrap_future(fut)
        except Exception as exc:  # noqa: BLE001
            raise self._download_error(self.index, exc) from None
        if size != seg.segment_size_in_bytes:
            raise FlussError(f"{self.reader.fetcher.spec.where(self.tb)}: {self.label(self.index)} has "
                             f"{size} bytes, the server listed {seg.segment_size_in_bytes}", CORRUPT_MESSAGE)
        return size

    def _current(self) -> bool:
        return self.reader.fetcher.reads(self.tb, self.st) and self.st.remote is self

    def _download_error(self, k: int, exc: BaseException) -> FlussError:
        where = self.reader.fetcher.spec.where(self.tb)
        if _gone(exc):
            return _Gone(f"{where}: {self.label(k)} no longer exists: {exc}", CLIENT_ERROR)
        return FlussError(f"{where}: downloading {self.label(k)} failed (will retry): {exc}", NETWORK_EXCEPTION)

    def _finish(self) -> None:
        """End of the run: the bucket fetches from the server again, at the run's end offset."""
        self.close()
        if self.st.remote is None:
            self.st.fetch_pos = self.offset

    def _abort(self, exc: FlussError) -> None:
        fetcher = self.reader.fetcher
        current = self._current()
        self.close()
        if not current:
            return
        st = self.st
        st.fetch_pos = self.offset
        if isinstance(exc, _Gone):
            key = (self.tb, self.offset)
            if key not in self.reader.gone_seen:
                # most likely expired by retention: the server's answer to a fresh fetch says so
                self.reader.gone_seen.add(key)
                return
        fetcher.fail_bucket(st, exc, _RETRY_S)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.st.remote is self:
            self.st.remote = None
        self.reader.forget(self)
        self.view = None
        self.streaming = None
        for dl in self.downloads.values():
            if dl.local:
                continue
            if not dl.fut.cancel():
                dl.fut.add_done_callback(lambda f, d=dl.dest: _unlink(d))
            _unlink(dl.dest)
        self.downloads.clear()


class _Gone(FlussError):
    pass


class _Download:
    """One segment's bytes: ``fut`` (its size once complete), the file they go to (``dest``), and
    the progress of a streamed download (None for a segment mapped in place from a local dir)."""

    __slots__ = ("fut", "dest", "progress")

    def __init__(self, fut: concurrent.futures.Future, dest: str, progress: _Progress | None):
        self.fut = fut
        self.dest = dest
        self.progress = progress

    @property
    def local(self) -> bool:
        # not downloaded: the file is the remote dir's own, never unlinked
        return self.progress is None


class _Progress:
    """How far a streamed download has got: written by the download thread, read and waited
    for on the runtime loop (woken per chunk, not polled)."""

    __slots__ = ("ready", "written", "done", "_loop", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.ready = False
        self.written = 0
        self.done = False
        self._loop = loop
        self._waiter: asyncio.Future | None = None

    # -- download thread --------------------------------------------------------------------------
    def advance(self, written: int, ready: bool = False) -> None:
        self.written = written
        if ready:
            self.ready = True
        self._notify()

    def finished(self, _fut=None) -> None:
        self.done = True
        self._notify()

    def _notify(self) -> None:
        # read after the new state is stored: a waiter set later re-checks that state itself
        w = self._waiter
        if w is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(_settle, w)

    # -- runtime loop -----------------------------------------------------------------------------
    async def wait(self, until: Callable[[], bool]) -> None:
        """Until ``until()`` holds or the download has ended (done, failed or cancelled)."""
        while not until() and not self.done:
            w = self._loop.create_future()
            self._waiter = w
            try:
                if until() or self.done:  # it moved between the check above and the waiter
                    return
                await w
            finally:
                if self._waiter is w:
                    self._waiter = None


def _settle(w: asyncio.Future) -> None:
    if not w.done():
        w.set_result(None)


def _batch_end(view, pos: int, limit: int) -> int:
    """Where the batch at ``pos`` ends, from its length field, once ``limit`` bytes have arrived
    (before the length field has: where that field ends, the least worth waiting for)."""
    if limit - pos < logbatch.LOG_OVERHEAD:
        return pos + logbatch.LOG_OVERHEAD
    length = int.from_bytes(view[pos + 8:pos + 12], "little", signed=True)
    return pos + logbatch.LOG_OVERHEAD + max(length, 0)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _map(path: str, size: int, unlink: bool = True):
    """A read-only view of a downloaded segment; the file is unlinked at once, the mapping keeps
    the bytes for as long as decoded batches point into them."""
    try:
        if size == 0:
            return memoryview(b"")
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
        return memoryview(mm)
    finally:
        if unlink:
            _unlink(path)


def _decode_slice(spec, tb, view, pos: int, fetch_offset: int, label: str, partial: bool = False,
                  memory=None):
    """(chunks, next offset, end position) of the batches in about SLICE_BYTES from ``pos``;
    ``partial``: the view ends where the download has got to, a cut batch there is normal;
    ``memory``: where decompressed data goes (``ScanSpec.decode_records``)."""
    n = len(view)
    limit = min(n, pos + SLICE_BYTES)
    chunks = []
    nxt = fetch_offset
    end = pos
    while True:
        for h in logbatch.iter_batches(view, pos, limit):
            end = h.position + h.total_size
            if h.next_offset <= fetch_offset:
                continue
            spec.check_schema(tb, h, f" in {label}")
            if not logbatch.verify_crc(view, h.position):
                raise FlussError(f"{spec.where(tb)}: corrupt batch at offset {h.base_offset} in {label} "
                                 f"(CRC mismatch)", CORRUPT_MESSAGE)
            if h.record_count > 0:
                rb, cts = spec._decode_batch(view, h, full=True, memory=memory)
                if spec.pushdown:
                    rb = rb.select(spec.fetch_fields)
                chunk = spec._chunk(tb, h, rb, cts, fetch_offset)
                if chunk is not None:
                    chunks.append(chunk)
            nxt = h.next_offset
        if end > pos or limit >= n:
            break
        limit = n  # one batch larger than a slice
    if end == pos and n - pos > 0 and not partial:
        if n - pos >= logbatch.LOG_OVERHEAD:
            raise FlussError(f"{spec.where(tb)}: {label} ends with a truncated batch at byte {pos}",
                             CORRUPT_MESSAGE)
        end = n
    return chunks, nxt, end
