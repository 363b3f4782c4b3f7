"""The log fetcher: FetchLog requests and the bucket positions of one scanner (``LogFetcher``):
what to fetch from whom, errors and retries, handing out. The read path through this package, and
how data flows through the fetcher, are told in the package's docstring (``client/scan/__init__.py``).

Everything in ``LogFetcher`` except the subscription methods runs on the client runtime loop.

Per-bucket errors follow the Rust client: leader/metadata problems (12, 44, 24, 21, 23) drop the
cached leaders and retry, storage hiccups (10, 11, 26, -1) retry after a short back-off, an offset
out of range (19, reported as -2 like pyfluss) and anything unexpected reach the user as FlussError
naming table, bucket and offset. A node that keeps failing at the transport level surfaces its
error after a few attempts instead of making every poll wait forever.
"""
from __future__ import annotations

import asyncio
import collections
import inspect
import threading

import pyarrow as pa

from ...codec.errors import CorruptBatchError
from ...codec.log import logbatch
from ...error_codes import CLIENT_ERROR, Errors
from ...errors import FlussError
from ...metadata.log import EARLIEST_OFFSET, LATEST_OFFSET
from ...metadata.table import TableBucket
from ...rpc import fluss_api_pb2 as pb
from ...rpc.api import Api
from ...rpc.wire import parse_fetch_response
from ..metrics import metrics_of
from ..workers import codec_workers
from .buckets import BucketState as _BucketState
from .buckets import Completed as _Completed
from .buckets import drain
from .decode import ScanSpec
from .decode_jobs import InOrder, decode_response, split_response
from .offsets import list_offsets
from .retry import MAX_BACKOFF_S as _MAX_BACKOFF_S
from .retry import REFRESH_CODES as _REFRESH_CODES
from .retry import RETRY_BACKOFF_S as _RETRY_BACKOFF_S
from .retry import RETRY_CODES as _RETRY_CODES
from .schemas import ensure_older_schemas

__all__ = ["LogFetcher"]

NETWORK_EXCEPTION = Errors.NETWORK_EXCEPTION
CORRUPT_MESSAGE = Errors.CORRUPT_MESSAGE
LOG_OFFSET_OUT_OF_RANGE = Errors.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION
#: codes poll() retries quietly (besides every retriable one): leader moves and unknown buckets
_TRANSIENT_CODES = frozenset((NETWORK_EXCEPTION, Errors.REQUEST_TIME_OUT)) | _REFRESH_CODES
#: consecutive transport failures of one node before the error is reported (poll() keeps retrying
#: it; a bounded read raises it once it outlasts request-timeout)
_NODE_FAILURES_BEFORE_ERROR = 3
#: fetch results per bucket, decoded but unconsumed or still being decoded, before the bucket
#: stops being fetched
_MAX_AHEAD = 3
#: the same for a poll loop: its rows are turned into Python objects far slower than responses
#: decode, so a deeper queue only holds more memory (orders, 1 M rows: peak RSS 172-240 MB at 3,
#: 144-175 MB at 2, same speed)
_MAX_AHEAD_POLL = 2
#: FetchLog requests one scanner keeps in flight to one tablet server
_MAX_REQUESTS_PER_NODE = 3
#: the per-bucket budget of a bounded read when the user kept the default one
_BOUNDED_BUCKET_BYTES = 4 * 1024 * 1024
#: doublings a bounded read's per-bucket budget starts with (clicks, 1 M rows: a first answer of
#: three batches instead of one, each decoded on its own core; fewer rounds)
_BOUNDED_HEAD_START = 1
#: the default of scanner.log.fetch.max-bytes-for-bucket (a value the user did not choose)
_DEFAULT_BUCKET_BYTES = 1024 * 1024
#: responses with fewer record bytes are decoded on the loop: a thread hop would cost more
_INLINE_DECODE_BYTES = 128 * 1024
# after a bounded read's trim finds an answer's buffer still viewed by its decode: how often and
# how long to look again (the views go within milliseconds; a zero-copy result may keep one)
_TRIM_RETRY_S = 0.02
_TRIM_RETRIES = 50


def _is_transient(err: FlussError) -> bool:
    # corrupt data is "retriable" for the Java client, but re-reading the same bytes cannot help
    if err.error_code == CORRUPT_MESSAGE:
        return False
    return err.error_code in _TRANSIENT_CODES or bool(getattr(err, "is_retriable", False))


async def _connection(ctx, node: int):
    conn = ctx.connection(node)
    if inspect.isawaitable(conn):
        conn = await conn
    return conn


class LogFetcher:
    """Subscriptions, positions, outstanding fetches and buffered results of one LogScanner."""

    def __init__(self, ctx, spec: ScanSpec):
        self.ctx = ctx
        self.spec = spec
        self._m = metrics_of(ctx).scanner(str(spec.path), self)
        cfg = ctx.config
        self.max_poll_records = int(cfg.get("scanner.log.max-poll-records"))
        self.max_bytes = int(cfg.get("scanner.log.fetch.max-bytes"))
        self.max_bytes_for_bucket = int(cfg.get("scanner.log.fetch.max-bytes-for-bucket"))
        self.min_bytes = int(cfg.get("scanner.log.fetch.min-bytes"))
        self.max_wait_ms = int(cfg.get("scanner.log.fetch.wait-max-time-ms"))
        # Java #3606: the tablet server, not the client, picks remote segments over local ones, so
        # the preference only travels in the request (servers before it ignore the field)
        self._remote_first = cfg.get("scanner.log.read-preference") == "remote-first"
        # decoding shares the process's codec threads with the writers' compression
        self._workers = codec_workers(int(cfg.get("client.compression-threads") or 0))
        self._lock = threading.Lock()
        self._subs: dict[TableBucket, _BucketState] = {}
        self._buffer: collections.deque = collections.deque()
        # FetchLogs in flight per tablet server
        self._node_reqs: dict[int, int] = {}
        # the tablet servers this fetcher has asked: their receive buffers go back when a read ends
        self._fetch_nodes: set[int] = set()
        # responses of this fetcher on the decode workers, applied in the order they arrived
        self._decodes = InOrder(self._workers, self._decoded)
        # a bounded read may raise the per-bucket budget unless the user chose one
        self._bounded_budget = self.max_bytes_for_bucket == _DEFAULT_BUCKET_BYTES
        self._tasks: set = set()
        self._meta_task = None
        self._latest_task = None
        self._node_failures: dict[int, int] = {}
        self._node_failed_at: dict[int, float] = {}
        self._errors: collections.deque = collections.deque()
        self._transient: FlussError | None = None
        self._transient_since: float | None = None
        self._transient_source = "fetch"
        self._transient_limit = max(1.0, (getattr(ctx, "request_timeout_ms", None) or 30000) / 1000.0)
        self._waiter: asyncio.Future | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stops = None
        # a BodyPool while a bounded read that keeps every batch (to_arrow) is going on: the
        # decoded batches go into reusable memory (``codec.bodypool``)
        self.collect_into = None
        self._filter_pb = None
        self._remote = None  # remote.RemoteLogReader, made when a bucket first reads tiered data
        # poll_ahead.PollAhead, made by a record scanner's first poll: filled as results arrive
        self.ahead = None
        if spec.predicate is not None and spec.arrow_format:
            self._filter_pb = spec.predicate.to_pb()

    # -- subscriptions (any thread) ------------------------------------------------------------
    def assign(self, offsets: dict[TableBucket, int]) -> None:
        with self._lock:
            for tb, off in offsets.items():
                self._subs[tb] = _BucketState(off)
        self._wake_threadsafe()

    def unassign(self, buckets) -> None:
        with self._lock:
            for tb in buckets:
                self._subs.pop(tb, None)
        self._wake_threadsafe()

    def lag_by_bucket(self) -> dict[str, int]:
        """High watermark minus the position handed out, per subscribed bucket whose high
        watermark is known (for the metrics snapshot; any thread)."""
        with self._lock:
            states = list(self._subs.items())
        return {(str(tb.bucket_id) if tb.partition_id is None else f"{tb.partition_id}/{tb.bucket_id}"):
                max(0, st.high_watermark - st.offset) for tb, st in states if st.high_watermark >= 0}

    def subscriptions(self) -> dict[TableBucket, int]:
        with self._lock:
            return {tb: st.offset for tb, st in self._subs.items()}

    def _wake_threadsafe(self) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            if loop.is_closed():
                return
            loop.call_soon_threadsafe(self.wake)
        except RuntimeError:
            pass

    def wake(self) -> None:
        """A waiting ``poll`` looks again (data, an error, or a bucket that may be fetched now)."""
        if self.ahead is not None:
            self.ahead.fill()
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _wait(self, timeout: float) -> None:
        loop = self._loop
        fut = loop.create_future()
        self._waiter = fut
        handle = loop.call_later(max(timeout, 0.0), self.wake)
        try:
            await fut
        finally:
            handle.cancel()
            if self._waiter is fut:
                self._waiter = None

    def _raise_pending_error(self, bounded: bool = False) -> None:
        if self._errors:
            raise self._errors.popleft()
        # a bounded read must end: once the trouble outlasts request-timeout, say what it is
        if (bounded and self._transient is not None
                and self._loop.time() - self._transient_since >= self._transient_limit):
            err, self._transient, self._transient_since = self._transient, None, None
            raise err

    def _fail(self, err: FlussError, source: str = "fetch") -> None:
        if _is_transient(err):
            # network trouble and leader moves heal by themselves: poll() keeps retrying within
            # its timeout (as pyfluss does) instead of raising what the caller cannot act on
            self._transient = err
            self._transient_source = source
            if self._transient_since is None:
                self._transient_since = self._loop.time()
        else:
            self._errors.append(err)
        self.wake()

    def _healthy(self, source: str = "fetch") -> None:
        # a fetch that succeeds says nothing about the remote store, nor a download about the
        # servers: only the path that failed can heal its trouble
        if self._transient is not None and self._transient_source != source:
            return
        self._transient = self._transient_since = None

    # -- for the remote reader (remote.py), which fills buckets instead of FetchLogs -------------
    def reads(self, tb: TableBucket, st: _BucketState) -> bool:
        """Whether ``st`` is still the subscription of ``tb`` (not unsubscribed or re-assigned)."""
        with self._lock:
            return self._subs.get(tb) is st

    def has_room(self, tb: TableBucket, offset: int) -> bool:
        """Whether ``tb`` may take another result that starts at ``offset``."""
        stops = self._stops
        if stops is not None and (tb not in stops or offset >= stops[tb]):
            return False  # a bounded read that has all it wants from this bucket
        return sum(1 for c in self._buffer if c.bucket == tb) < _MAX_AHEAD

    def offer(self, tb: TableBucket, st: _BucketState, fetch_offset: int, chunks, next_offset: int,
              high_watermark: int) -> None:
        """A completed read of ``tb`` from ``fetch_offset`` up to ``next_offset``, handed out by
        ``poll`` as a FetchLog's would be; the bucket's next read starts at ``next_offset``."""
        if chunks or next_offset != fetch_offset:
            self._buffer.append(_Completed(tb, st, fetch_offset, chunks, next_offset, high_watermark))
        st.fetch_pos = next_offset
        self._healthy(source="remote")
        self.wake()

    def fail_bucket(self, st: _BucketState, err: FlussError, retry_in: float) -> None:
        """Reading ``st``'s bucket failed: ``poll`` reports ``err`` (quietly while it is transient)
        and the bucket is read again after ``retry_in`` seconds."""
        st.retry_at = self._loop.time() + retry_in
        self._fail(err, source="remote")

    # -- sending -------------------------------------------------------------------------------
    def spawn(self, coro) -> asyncio.Task:
        """Runs ``coro`` on the runtime loop, held until it ends (the loop keeps weak references)."""
        t = self._loop.create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return t

    def send_fetches(self, exclude=None) -> float | None:
        """Send FetchLogs for every fetchable bucket; returns the earliest pending retry time."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        loop = self._loop
        now = loop.time()
        md = self.ctx.metadata
        spec = self.spec
        buffered = collections.Counter(c.bucket for c in self._buffer)
        if self.ahead is not None:
            self.ahead.count_into(buffered)
        stops = self._stops
        ahead = _MAX_AHEAD if stops is not None else _MAX_AHEAD_POLL
        by_node: dict[int, list] = {}
        need_meta = []
        need_latest = []
        next_retry = None
        with self._lock:
            items = list(self._subs.items())
        for tb, st in items:
            if st.inflight:
                continue
            if buffered[tb] + st.decoding >= ahead or (exclude is not None and tb in exclude):
                continue
            if stops is not None and (tb not in stops or st.fetch_at >= stops[tb]):
                continue
            if st.retry_at > now:
                next_retry = st.retry_at if next_retry is None else min(next_retry, st.retry_at)
                continue
            if st.remote is not None:
                self._remote.pump(tb, st)
                continue
            if st.offset == LATEST_OFFSET:
                need_latest.append(tb)
                continue
            node = md.leader(spec.table_id, tb.partition_id, tb.bucket_id)
            if node is None:
                need_meta.append(tb)
                continue
            by_node.setdefault(node, []).append((tb, st, st.fetch_at))
        for node, entries in by_node.items():
            busy = self._node_reqs.get(node, 0)
            free = _MAX_REQUESTS_PER_NODE - busy
            if free <= 0:
                continue
            entries.sort(key=lambda e: not e[1].starved)
            # Every request may carry max-bytes / (requests this node can have in flight), so
            # that the node's responses in flight together stay within max-bytes.
            slots = min(_MAX_REQUESTS_PER_NODE, busy + len(entries))
            req_bytes = max(self.max_bytes // slots, 1)
            n = min(free, len(entries))
            for k in range(n):
                group = entries[k::n]  # starved buckets (sorted first) each lead a request
                for _tb, st, _off in group:
                    st.inflight = True
                self._node_reqs[node] = self._node_reqs.get(node, 0) + 1
                self._fetch_nodes.add(node)
                self.spawn(self._fetch(node, group, req_bytes, self._send_now(node, group, req_bytes)))
        if need_meta and self._meta_task is None:
            self._meta_task = self.spawn(self._refresh_metadata(need_meta))
        if need_latest and self._latest_task is None:
            self._latest_task = self.spawn(self._resolve_latest(need_latest))
        return next_retry

    def _build_request(self, entries, req_bytes: int) -> bytes:
        spec = self.spec
        req = pb.FetchLogRequest()
        req.follower_server_id = -1
        req.max_bytes = req_bytes
        req.max_wait_ms = self.max_wait_ms
        req.min_bytes = self.min_bytes
        if self._remote_first:
            req.read_preference = 1  # REMOTE_FIRST; left unset for local-first, as Java leaves it 0
        t = req.tables_req.add()
        t.table_id = spec.table_id
        t.projection_pushdown_enabled = spec.pushdown
        if spec.pushdown:
            t.projected_fields.extend(spec.fetch_fields)
        base = self.max_bytes_for_bucket
        bounded = self._stops is not None and self._bounded_budget
        share = min(req_bytes // len(entries), _BOUNDED_BUCKET_BYTES)
        for tb, st, off in entries:
            b = t.buckets_req.add()
            if tb.partition_id is not None:
                b.partition_id = tb.partition_id
            b.bucket_id = tb.bucket_id
            b.fetch_offset = off
            per_bucket = (max(base, min(share, base << min(st.rounds + _BOUNDED_HEAD_START, 8)))
                          if bounded else base)
            b.max_fetch_bytes = max(per_bucket, st.need_bytes)
        if self._filter_pb is not None:
            t.filter_predicate.CopyFrom(self._filter_pb)
            t.filter_schema_id = spec.schema_id
        return req.SerializeToString()

    def _release(self, node: int, entries) -> None:
        """The request for ``entries`` is answered (or failed): its buckets may be fetched again."""
        n = self._node_reqs.get(node, 0) - 1
        if n > 0:
            self._node_reqs[node] = n
        else:
            self._node_reqs.pop(node, None)
        for _tb, st, _off in entries:
            st.inflight = False

    def _send_now(self, node: int, entries, req_bytes: int):
        """The FetchLog written to an open connection right here, so that it leaves while this
        loop turn goes on (a task would send it a turn later, after the decode jobs just queued
        took the cores): its response future, or None to let ``_fetch`` connect and send."""
        peek = getattr(self.ctx, "open_connection", None)
        conn = peek(node) if peek is not None else None
        if conn is None:
            return None
        try:
            return conn.send_raw(Api.FETCH_LOG, self._build_request(entries, req_bytes))
        except (FlussError, RuntimeError, OSError):
            return None  # _fetch meets the same trouble and reports it

    async def _fetch(self, node: int, entries, req_bytes: int, sent=None) -> None:
        spec = self.spec
        handed = False  # the response handler releases the request itself, before it decodes
        sent_at = self._loop.time()
        try:
            try:
                if sent is not None:
                    body = await sent
                else:
                    conn = await _connection(self.ctx, node)
                    body = await conn.request_raw(Api.FETCH_LOG, self._build_request(entries, req_bytes))
            except FlussError as exc:
                self._release(node, entries)
                handed = True
                self._node_failed(node, entries, exc, sent_at)
                return
            except (TimeoutError, OSError) as exc:
                self._release(node, entries)
                handed = True
                self._node_failed(node, entries, FlussError(
                    f"Fetching {spec.where(entries[0][0])} from node {node} failed: {exc}",
                    NETWORK_EXCEPTION), sent_at)
                return
            m = self._m
            m.requests += 1
            m.latency.record(self._loop.time() - sent_at)
            self._node_failures.pop(node, None)
            self._healthy()
            handed = True
            try:
                self._handle_response(body, node, entries)
                return
            except FlussError as exc:
                self._fail(exc)
            except (CorruptBatchError, ValueError, TypeError, pa.ArrowException) as exc:
                self._fail(self._unreadable(node, exc))
        finally:
            if not handed:
                self._release(node, entries)
            self.wake()

    def _unreadable(self, node: int, exc: BaseException) -> FlussError:
        code = getattr(exc, "error_code", CORRUPT_MESSAGE)
        return FlussError(f"Could not read the fetch response for table '{self.spec.path}' "
                          f"from node {node}: {exc}", code)

    def _node_failed(self, node: int, entries, exc: FlussError, sent_at: float) -> None:
        # The requests that were in flight together fail together: they count as one attempt.
        self._m.errors += 1
        n = self._node_failures.get(node, 0)
        counted = sent_at >= self._node_failed_at.get(node, float("-inf"))
        if counted:
            n += 1
            self._node_failures[node] = n
            self._node_failed_at[node] = self._loop.time()
        md = self.ctx.metadata
        for tb, st, _off in entries:
            md.invalidate(self.spec.table_id, tb.partition_id)
            st.retry_at = self._loop.time() + min(_RETRY_BACKOFF_S * (2 ** max(n, 1)), _MAX_BACKOFF_S)
        if counted and n >= _NODE_FAILURES_BEFORE_ERROR:
            self._node_failures.pop(node, None)
            where = self.spec.where(entries[0][0])
            self._fail(FlussError(f"Fetching log of {where} from tablet server {node} failed "
                                  f"{n} times in a row: {exc.message}", exc.error_code))

    def _handle_response(self, body, node: int, entries) -> None:
        """Errors and positions first, then the next FetchLogs go out, then the decoding: the
        server prepares the next answers while this one is decoded."""
        mv = memoryview(body)
        if mv.format != "B" or mv.ndim != 1:
            mv = mv.cast("B")
        sent = {tb: (st, off) for tb, st, off in entries}
        now = self._loop.time()
        md = self.ctx.metadata
        todo = []
        error = None
        try:
            self._scan_response(mv, sent, now, md, todo)
        except FlussError as exc:
            error = exc
        finally:
            self._release(node, entries)
        if todo:
            size = 0
            for _tb, st, _off, r in todo:
                st.decoding += 1
                if r.records is not None:
                    size += r.records[1] - r.records[0]
            self.send_fetches()
            if self._bounded_read_done_with(node):
                # this was the bounded read's last answer (from this node, and every other node
                # already answered its last): the spare receive buffers can serve no other, so
                # they go now rather than after this answer is decoded, when the whole result is
                # already in memory (the read's peak)
                self._trim_idle_nodes()
            memory = self.collect_into
            if self._decodes.pending == 0 and size < _INLINE_DECODE_BYTES:
                # small (polling) answers: no thread hop; nothing is queued ahead of this one
                self._decoded(node, todo, decode_response(self.spec, mv, todo, memory), None)
            else:
                self._decodes.submit_parts(self._loop, todo,
                                           split_response(self.spec, mv, todo, memory=memory),
                                           node, todo)
        elif self._done_with(node):
            # an answer nobody reads any more (it came after its read ended): its buffer goes
            # back a turn later, once this view of it is gone, not after the idle delay
            self._loop.call_soon(self._trim_idle_nodes)
        if error is not None:
            raise error

    def _decoded(self, node: int, todo, result, exc) -> None:
        """Buffer the decoded results of one response in order, report a failure."""
        results, error = result if result is not None else ([], exc)
        for k, (tb, st, off, r) in enumerate(todo):
            st.decoding -= 1
            if k < len(results):
                chunks, nxt = results[k]
                if chunks or nxt != off:
                    self._buffer.append(_Completed(tb, st, off, chunks, nxt, r.high_watermark))
                    continue
            # not decoded (failed) or nothing in it: fetch again from what was handed out
            st.fetch_pos = None
        if error is not None:
            if isinstance(error, FlussError):
                self._fail(error)
            elif isinstance(error, (CorruptBatchError, ValueError, TypeError, pa.ArrowException)):
                self._fail(self._unreadable(node, error))
            else:
                self._fail(FlussError(f"Decoding the fetch response for table '{self.spec.path}' "
                                      f"from node {node} failed: {error!r}", CLIENT_ERROR))
        if self._bounded_read_done_with(node):
            # the bounded read needs no more answers from this node: its receive buffers go back
            # as the last answers finish decoding, not an idle delay after the read (they would
            # add to the read's peak memory on top of the whole result); a turn later, once the
            # decode jobs let go of this answer's buffer
            self._loop.call_soon(self._trim_idle_nodes)
        self.wake()

    def _fetched_all(self) -> bool:
        stops = self._stops
        with self._lock:
            subs = self._subs
            for tb, stop in stops.items():
                st = subs.get(tb)
                if st is not None and st.fetch_at < stop:
                    return False
        return True

    def _bounded_read_done_with(self, node: int) -> bool:
        """A bounded read that needs no more answers from ``node``."""
        return self._stops is not None and not self._node_reqs.get(node) and self._fetched_all()

    def _done_with(self, node: int) -> bool:
        """No answer from ``node`` is awaited or wanted: a bounded read done with it, or nothing
        subscribed and no read going on."""
        if self._bounded_read_done_with(node):
            return True
        with self._lock:
            idle = not self._subs
        return idle and self._stops is None and not self._node_reqs.get(node)

    def _trim_idle_nodes(self) -> None:
        """Trim the receive pools of the nodes asked that have nothing in flight: a node whose
        last answer came while another node still had data to send was not trimmed then."""
        for node in list(self._fetch_nodes):
            self._trim_receive_pool(node)  # skips a node with a fetch in flight

    def _trim_receive_pool(self, node: int, tries: int = 0) -> None:
        peek = getattr(self.ctx, "open_connection", None)
        conn = peek(node) if peek is not None else None
        if (conn is not None and not self._node_reqs.get(node)
                and conn.trim_receive_pool() and tries < _TRIM_RETRIES):
            # a decode part still held its answer's buffer: the pool cannot see a view go,
            # so look again shortly rather than leave the buffer to the idle trim
            self._loop.call_later(_TRIM_RETRY_S, self._trim_again, node, tries + 1)

    def _trim_again(self, node: int, tries: int) -> None:
        # not while a newer bounded read still fetches: the spares are for its answers now
        if self._stops is None or self._fetched_all():
            self._trim_receive_pool(node, tries)

    def _scan_response(self, mv, sent, now, md, todo) -> None:
        """Per-bucket errors, high watermarks and the next fetch positions of one response;
        buckets with data to decode are added to ``todo``. Raises the first user-facing error
        after looking at every bucket."""
        spec = self.spec
        error = None
        entries_first = next(iter(sent), None)
        for table_id, buckets in parse_fetch_response(mv):
            if table_id != spec.table_id:
                continue
            for r in buckets:
                tb = TableBucket._make(spec.table_id, r.partition_id, r.bucket_id)
                hit = sent.get(tb)
                if hit is None:
                    continue
                st, off = hit
                with self._lock:
                    current = self._subs.get(tb)
                if current is not st or st.fetch_at != off:
                    continue  # unsubscribed or moved while the request was out
                code = r.error_code
                if code:
                    self._m.errors += 1
                    msg = r.error_message or ""
                    if code in _REFRESH_CODES:
                        md.invalidate(spec.table_id, tb.partition_id)
                        st.retry_at = now + _RETRY_BACKOFF_S
                    elif code in _RETRY_CODES:
                        st.retry_at = now + _RETRY_BACKOFF_S * 2
                    elif code == LOG_OFFSET_OUT_OF_RANGE:
                        # pyfluss reports this as a client error (-2), not the server's 19
                        st.retry_at = now + _RETRY_BACKOFF_S * 4
                        error = error or FlussError(
                            f"The fetching offset {off} is out of range for {spec.where(tb)}"
                            f"{': ' + msg if msg else ''}", CLIENT_ERROR)
                    else:
                        error = error or FlussError(
                            f"Fetching {spec.where(tb)} at offset {off} failed with error code "
                            f"{code}{': ' + msg if msg else ''}", code)
                    continue
                if r.remote is not None and r.records is None:
                    if r.high_watermark >= 0:
                        st.high_watermark = r.high_watermark
                    if self._remote is None:
                        from .remote import RemoteLogReader

                        self._remote = RemoteLogReader(self)
                    self._remote.start(tb, st, off, r.remote, r.high_watermark)
                    continue
                if r.high_watermark >= 0:
                    st.high_watermark = r.high_watermark
                nxt = off
                if r.records is not None and r.records[1] > r.records[0]:
                    complete = False
                    for h in logbatch.iter_batches(mv, r.records[0], r.records[1]):
                        nxt = h.next_offset
                        complete = True
                    if not complete:
                        if r.records[1] - r.records[0] >= 12:
                            length = int.from_bytes(mv[r.records[0] + 8:r.records[0] + 12], "little",
                                                    signed=True)
                            st.need_bytes = max(st.need_bytes, min(max(length + 12, 0), 1 << 30))
                        if st.starved and entries_first == tb:
                            error = error or FlussError(
                                f"{spec.where(tb)}: the batch at offset {off} does not fit into "
                                f"the fetch response ({r.records[1] - r.records[0]} bytes returned)",
                                CLIENT_ERROR)
                        st.starved = True
                        continue
                    # need_bytes stays: the next batches of this bucket are likely as large
                    st.starved = False
                    st.rounds += 1
                    m = self._m
                    if off >= 0:
                        m.records += nxt - off
                    else:  # the first fetch from EARLIEST: the answer's first batch says where
                        first = next(logbatch.iter_batches(mv, r.records[0], r.records[1]))
                        m.records += nxt - first.base_offset
                    m.bytes += r.records[1] - r.records[0]
                if r.filtered_end_offset is not None and r.filtered_end_offset > nxt:
                    nxt = r.filtered_end_offset
                if nxt != off or (r.records is not None and r.records[1] > r.records[0]):
                    st.fetch_pos = max(nxt, off)
                    todo.append((tb, st, off, r))
        if error is not None:
            raise error

    async def _refresh_metadata(self, buckets) -> None:
        spec = self.spec
        md = self.ctx.metadata
        try:
            parts = {tb.partition_id for tb in buckets}
            if md.table_by_id(spec.table_id) is None or None in parts:
                await md.refresh_table(spec.path)
            for pid in parts:
                if pid is not None:
                    await md.partition_by_id(spec.table_id, pid, refresh=True)
            missing = [tb for tb in buckets
                       if md.leader(spec.table_id, tb.partition_id, tb.bucket_id) is None]
            if not missing:
                self._healthy()
            self._back_off(missing)
        except FlussError as exc:
            self._fail(exc if exc.error_code != NETWORK_EXCEPTION else FlussError(
                f"Could not load the bucket leaders of table '{spec.path}': {exc.message}",
                exc.error_code))
            self._back_off(buckets)
        finally:
            self._meta_task = None
            self.wake()

    def _back_off(self, buckets) -> None:
        """Hold these buckets back for a while after their metadata or offsets could not be loaded."""
        retry_at = self._loop.time() + _RETRY_BACKOFF_S * 4
        for tb in buckets:
            with self._lock:
                st = self._subs.get(tb)
            if st is not None:
                st.retry_at = retry_at

    async def _resolve_latest(self, buckets) -> None:
        try:
            offsets = await self.list_offsets(buckets, 1)
            with self._lock:
                for tb, off in offsets.items():
                    st = self._subs.get(tb)
                    if st is not None and st.offset == LATEST_OFFSET:
                        st.offset = off
        except FlussError as exc:
            self._fail(exc)
            self._back_off(buckets)
        finally:
            self._latest_task = None
            self.wake()

    # -- ListOffsets -----------------------------------------------------------------------------
    async def list_offsets(self, buckets, offset_type: int, attempts: int = 5) -> dict[TableBucket, int]:
        """{bucket: offset} (offset_type 0 EARLIEST, 1 LATEST), retrying leader moves."""
        return await list_offsets(self.ctx, self.spec, buckets, offset_type, self._transient_limit,
                                  attempts)

    # -- consuming -------------------------------------------------------------------------------
    def drain(self, max_records: int | None, max_chunks: int | None, stops=None):
        """Buffered chunks handed out now, bucket by bucket, moving positions accordingly."""
        return drain(self._buffer, self.state_of, max_records, max_chunks, stops)

    # -- for the poll-ahead queue (poll_ahead.py), partly on the caller's thread -----------------
    def state_of(self, tb: TableBucket) -> _BucketState | None:
        """The current subscription of ``tb`` (None once unsubscribed); any thread."""
        with self._lock:
            return self._subs.get(tb)

    def has_errors(self) -> bool:
        """Whether an error waits for ``poll`` to raise it."""
        return bool(self._errors)

    def has_buffered(self) -> bool:
        """Whether decoded results wait to be handed out."""
        return bool(self._buffer)

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The runtime loop, once the fetcher has run on it."""
        return self._loop

    async def poll_chunks(self, timeout_s: float, *, max_records: int | None = None,
                          max_chunks: int | None = None, stops=None):
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        loop = self._loop
        deadline = loop.time() + timeout_s
        if self.spec.older is None:  # the table was altered: read its older batches too
            await ensure_older_schemas(self.ctx, self.spec)
        # A bounded read keeps ``_stops`` set (see set_stops) so that no fetch, not even one sent
        # from a response handler between polls, long-polls a bucket that already reached its end.
        return await self._poll_loop(loop, deadline, max_records, max_chunks, stops)

    def set_stops(self, stops) -> None:
        self._stops = stops

    async def _poll_loop(self, loop, deadline, max_records, max_chunks, stops):
        exclude = None
        while True:
            self._raise_pending_error(stops is not None)
            out = self.drain(max_records, max_chunks, stops)
            if stops is not None:
                exclude = {tb for tb, stop in stops.items() if self._position(tb) >= stop}
            if out:
                self.send_fetches(exclude)
                return out
            next_retry = self.send_fetches(exclude)
            now = loop.time()
            remaining = deadline - now
            if remaining <= 0:
                return out
            if stops is not None and not self._pending_bounded(stops):
                return out
            wait = remaining if next_retry is None else min(remaining, max(next_retry - now, 0.001))
            await self._wait(wait)

    def _position(self, tb) -> int:
        with self._lock:
            st = self._subs.get(tb)
        return (1 << 62) if st is None else st.offset

    def _pending_bounded(self, stops) -> bool:
        return any(self._position(tb) < stop for tb, stop in stops.items())

    async def bounded_stops(self) -> dict[TableBucket, int]:
        """Latest offsets of every subscribed bucket now; EARLIEST positions are resolved too."""
        subs = self.subscriptions()
        if not subs:
            return {}
        earliest_needed = [tb for tb, off in subs.items() if off == EARLIEST_OFFSET]
        if not earliest_needed:
            latest = await self.list_offsets(list(subs), 1)
        else:
            # one round trip instead of two: a small bounded read is mostly these look-ups
            latest, earliest = await asyncio.gather(self.list_offsets(list(subs), 1),
                                                    self.list_offsets(earliest_needed, 0),
                                                    return_exceptions=True)
            for res in (latest, earliest):
                if isinstance(res, BaseException):
                    raise res
            with self._lock:
                for tb, off in earliest.items():
                    st = self._subs.get(tb)
                    if st is not None and st.offset == EARLIEST_OFFSET:
                        st.offset = off
        with self._lock:
            for tb in subs:
                st = self._subs.get(tb)
                if st is not None and st.offset == LATEST_OFFSET and tb in latest:
                    st.offset = latest[tb]
        return latest
