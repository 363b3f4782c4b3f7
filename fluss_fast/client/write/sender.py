"""The sender: a task on the runtime loop that ships ready batches and settles their outcomes.

Each round it drains the accumulator (at most one batch per bucket, at most
``writer.request-max-size`` estimated bytes per leader), groups the batches by leader into one
ProduceLog per node, and sends every request as its own task, so requests to different nodes and
successive requests to one node are pipelined (up to ``writer.max-inflight-requests-per-bucket``
per bucket). Finishing row builders, Arrow IPC and compression happen in ``encode`` on the shared
codec threads (client/workers.py), several batches at once, while requests still reach the socket
in drain order (see below); a batch starts encoding when it is sealed, before any request takes it
(encode_ahead.py). The request is framed by hand around the encoded batches (``encode_produce_log_request``)
and handed to the connection as a list of chunks, so a batch's bytes are never copied on their
way to the socket.

Errors: retriable codes are retried with exponential backoff while ``writer.retries`` and the
delivery window allows (``DELIVERY_TIMEOUTS`` x ``request-timeout`` from a batch's first send: one
request timeout to notice a silent peer, as much again to re-send on a fresh connection; a send is
cut to what is left of the window, so ``flush()`` never waits longer); the invalid-metadata codes (1 network, 12 not
leader, 21 unknown bucket, 44 leader not available) also refresh the table's metadata. With
idempotence, 32 (duplicate) is success with the original offsets, and 31/33 follow the Java
client's rules (see ``_settle``).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import threading
import time
from collections.abc import Callable

from ... import error_codes as codes
from ...error_codes import Errors
from ...errors import FlussError
from ...rpc import fluss_api_pb2 as pb
from ...rpc.api import Api
from ...rpc.wire import PRODUCE_LOG
from ..metrics import metrics_of
from ..workers import OrderedGate, codec_workers
from .encode_ahead import EncodeAhead

log = logging.getLogger(__name__)

_INVALID_METADATA = codes.REFRESH_METADATA_CODES
# After these the server may or may not have appended the batch: a question the table's retriable
# flag does not answer (it calls UNKNOWN_SERVER_ERROR final), hence a set of the writer's own.
_AMBIGUOUS = frozenset((Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIME_OUT, Errors.UNKNOWN_SERVER_ERROR))
_BACKOFF_BASE = 0.1
_BACKOFF_MAX = 1.0
DELIVERY_TIMEOUTS = 2
_MIN_SEND_S = 0.05
# Pause after a metadata refresh that left buckets without a leader, doubling up to _BACKOFF_BASE:
# a new table's leaders are elected tens of milliseconds after CREATE_TABLE answers.
_REFRESH_FIRST_S = 0.01

# Batches are encoded on the shared codec threads (client/workers.py; zstandard, lz4 and pyarrow
# compress without the GIL), several requests at once. Encodes finish in any order, but requests
# reach the socket in drain order through an OrderedGate: a bucket's batch sequences are fixed at
# drain, so a later request overtaking an earlier one would be an out-of-order error (31) and a
# retry. Requests this small are encoded on the loop: the thread hop would cost more.
_INLINE_ENCODE_BYTES = 64 * 1024


# -- ProduceLogRequest framing --------------------------------------------------------------------
# The request is encoded by hand around the batches (the same bytes ``pb.ProduceLogRequest``
# serializes to, fields in number order): the protobuf message would copy every batch into itself
# and again into the serialized string (rpc/wire.py frames it).
def encode_produce_log_request(acks: int, table_id: int, timeout_ms: int, buckets) -> list:
    """Serialized ``ProduceLogRequest`` as a list of bytes-like chunks (to be written in order);
    ``buckets`` as ``rpc.wire.RecordsRequest.encode`` takes them."""
    return PRODUCE_LOG.encode(acks, table_id, timeout_ms, buckets)


class Sender:
    def __init__(self, *, ctx, meta, accumulator, idempotence, encode: Callable, table_name: str,
                 acks: int, retries: int, max_inflight: int, request_max_size: int,
                 request_timeout_ms: int, on_failure: Callable, partition_name: Callable,
                 kv_target_columns=None, workers=None):
        self._ctx = ctx
        # KV writers (kind KV batches) send PutKv; ``kv_target_columns`` ([] = full rows) says so
        self._kv_target = kv_target_columns
        self._meta = meta
        self._table_id = meta.table_id
        self._acc = accumulator
        self._idem = idempotence
        self._encode = encode
        self._table_name = table_name
        self._acks = acks
        self._retries = retries
        self._max_inflight = max_inflight
        self._request_max = request_max_size
        self._timeout_ms = min(request_timeout_ms, (1 << 31) - 1)
        self._request_timeout = request_timeout_ms / 1000.0
        self._delivery = DELIVERY_TIMEOUTS * self._request_timeout
        self._gone: FlussError | None = None  # the table was dropped: nothing can be written
        self._on_failure = on_failure
        self._partition_name = partition_name
        self._loop = None
        self._thread_id = None
        self._event = None
        self._wake_pending = False
        self._stopping = False
        self._task = None
        self._tasks = set()
        self._refreshing = False
        self._refresh_pause = _REFRESH_FIRST_S
        self._stall_since = None
        self._stall_error = None
        self.requests_sent = 0
        self._m = metrics_of(ctx).writer(table_name, accumulator)
        self._gate = OrderedGate()
        if workers is None:
            cfg = getattr(ctx, "config", None)
            workers = codec_workers(cfg.get("client.compression-threads") if cfg is not None else 0)
        self._workers = workers
        self._ahead = (EncodeAhead(accumulator, self._encode_one, workers, _INLINE_ENCODE_BYTES)
                       if workers is not None else None)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, runtime) -> None:
        self._task = runtime.submit(self._run())

    def wake(self) -> None:
        """Thread-safe and cheap when a wake-up is already on its way."""
        if self._wake_pending:
            return
        self._wake_pending = True
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._thread_id:
            self._event.set()
        else:
            with contextlib.suppress(RuntimeError):  # loop closed: the runtime is gone, nothing to wake
                loop.call_soon_threadsafe(self._event.set)

    async def stop(self) -> None:
        """Ask the loop to end once every batch is settled, and wait for it (on the runtime)."""
        self._stopping = True
        self.wake()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- the loop ------------------------------------------------------------------------------
    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread_id = threading.get_ident()
        self._event = asyncio.Event()
        register = getattr(self._ctx, "register_task", None)
        if register is not None:
            register(asyncio.current_task())
        try:
            await self._loop_body()
        except asyncio.CancelledError:
            # the connection was closed under us: nothing unsent can go out any more
            self._acc.set_closing()
            self._fail_unsent(FlussError(f"table '{self._table_name}': the FlussConnection was "
                                         f"closed before these records were sent"))
            raise

    async def _loop_body(self) -> None:
        acc = self._acc
        idem = self._idem
        while True:
            self._wake_pending = False
            self._event.clear()
            pending = acc.has_pending()
            if self._stopping and not pending:
                return
            now = time.monotonic()
            next_wake = None
            if pending and self._gone is not None:
                self._fail_unsent(self._gone)
                continue
            try:
                if pending and idem.enabled and not idem.has_writer_id and not await self._init_writer():
                    self._check_stall(now)
                    await asyncio.sleep(_BACKOFF_BASE)
                    continue
                by_node, next_wake, no_leader = acc.drain(now, self._leader_of, self._max_inflight,
                                                          self._request_max)
                if no_leader:
                    self._stall(FlussError(f"table '{self._table_name}': no leader known for some "
                                           f"buckets", Errors.LEADER_NOT_AVAILABLE_EXCEPTION))
                    self._refresh_metadata(no_leader)
                    self._check_stall(now)
                    soon = now + _BACKOFF_BASE
                    next_wake = soon if next_wake is None else min(next_wake, soon)
                elif by_node:
                    self._stall_since = None
                    self._refresh_pause = _REFRESH_FIRST_S
                for node, batches in by_node.items():
                    sendable = []
                    for b in batches:
                        if idem.enabled:
                            if b.ambiguous and b.writer_id >= 0 and b.writer_id != idem.writer_id:
                                self._fail(b, FlussError(
                                    f"{self._where(b)}: a retried batch cannot be re-sent after the "
                                    f"writer id changed from {b.writer_id} to {idem.writer_id}; "
                                    f"whether it was written is unknown",
                                    Errors.UNKNOWN_WRITER_ID_EXCEPTION))
                                continue
                            idem.assign(b)
                        sendable.append(b)
                    if sendable:
                        # the wire order of a bucket's batches is fixed here, at drain
                        ticket = self._gate.ticket()
                        self._spawn(self._send(node, sendable, ticket), ticket)
            except Exception as e:  # a bug here must not silently stall every writer's flush
                log.exception("fluss_fast writer loop for %s failed", self._table_name)
                self._fail_unsent(e if isinstance(e, FlussError) else FlussError(
                    f"table '{self._table_name}': writer failed: {e!r}"))
                next_wake = time.monotonic() + _BACKOFF_BASE
            if self._ahead is not None:
                self._ahead.pump(self._loop)
            if next_wake is not None:
                delay = next_wake - time.monotonic()
                if delay <= 0:
                    await asyncio.sleep(0)
                    continue
            else:
                delay = None
            if self._wake_pending:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), delay)

    def _spawn(self, coro, ticket: int | None = None) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        if ticket is not None:
            # a send cancelled before it ran must not hold up the ones drained after it
            t.add_done_callback(lambda _t, g=self._gate, k=ticket: g.done(k))
        register = getattr(self._ctx, "register_task", None)
        if register is not None:
            register(t)  # the connection's close() cancels it

    def _leader_of(self, partition_id, bucket):
        return self._ctx.metadata.leader(self._table_id, partition_id, bucket)

    def _where(self, b) -> str:
        if b.partition_id is None:
            return f"table '{self._table_name}' bucket {b.bucket}"
        name = self._partition_name(b.partition_id)
        return f"table '{self._table_name}' partition '{name}' bucket {b.bucket}"

    # -- stalls: nothing can be sent at all (no writer id, no leaders) ---------------------------
    def _stall(self, error: FlussError) -> None:
        if self._stall_since is None:
            self._stall_since = time.monotonic()
        self._stall_error = error

    def _check_stall(self, now: float) -> None:
        if self._gone is not None:
            self._stall_since = None
            self._fail_unsent(self._gone)
            return
        if self._stall_since is not None and now - self._stall_since > self._delivery:
            err = self._stall_error or FlussError(f"table '{self._table_name}': cannot send")
            waited = int((time.monotonic() - self._stall_since) * 1000)
            self._stall_since = None
            self._fail_unsent(FlussError(
                f"{err.message} (gave up after {waited} ms; the limit is {DELIVERY_TIMEOUTS} x "
                f"request-timeout = {int(self._delivery * 1000)} ms)", err.error_code))

    def _fail_unsent(self, error: FlussError) -> None:
        m = self._m
        for b in self._acc.take_unsent():
            m.records_failed += b.record_count
            m.errors += 1
            b.fail(error)
            self._acc.completed(b, sent=False)
            self._on_failure(error, b.record_count)

    async def _init_writer(self) -> bool:
        path = self._meta.path
        req = pb.InitWriterRequest()
        tp = req.table_path.add()
        tp.database_name = path.database_name if hasattr(path, "database_name") else path[0]
        tp.table_name = path.table_name if hasattr(path, "table_name") else path[1]
        try:
            resp = await self._ctx.any_tablet(Api.INIT_WRITER, req)
        except FlussError as e:
            if not e.is_retriable:
                self._fail_unsent(FlussError(
                    f"table '{self._table_name}': could not get a writer id: {e.message}",
                    e.error_code))
                return False
            self._stall(FlussError(f"table '{self._table_name}': could not get a writer id: "
                                   f"{e.message}", e.error_code))
            return False
        self._idem.set_writer_id(resp.writer_id)
        self._stall_since = None
        return True

    def _refresh_metadata(self, partition_ids) -> None:
        if self._refreshing:
            return
        self._refreshing = True
        self._spawn(self._do_refresh(set(partition_ids)))

    async def _do_refresh(self, partition_ids) -> None:
        md = self._ctx.metadata
        try:
            if None in partition_ids or md.table_by_id(self._table_id) is None:
                await md.refresh_table(self._meta.path)
            for pid in partition_ids:
                if pid is not None:
                    await md.partition_by_id(self._table_id, pid, refresh=True)
        except FlussError as e:
            if e.error_code == Errors.TABLE_NOT_EXIST:
                # dropped under us: waiting out the window cannot help, say so at once
                self._gone = FlussError(f"table '{self._table_name}' does not exist any more (dropped "
                                        f"while this writer was open); its unsent records are lost",
                                        Errors.TABLE_NOT_EXIST)
                self._fail_unsent(self._gone)
            self._stall_error = FlussError(f"table '{self._table_name}': metadata refresh failed: "
                                           f"{e.message}", e.error_code)
        except Exception as e:  # keep retrying; the stall timer bounds how long
            self._stall_error = FlussError(f"table '{self._table_name}': metadata refresh failed: {e!r}")
        finally:
            # batches whose leaders the refresh found go now; the next refresh, should leaders
            # still be missing, waits out a growing pause (waiting before this wake held a new
            # table's first write ~100 ms)
            self.wake()
            pause = self._refresh_pause
            self._refresh_pause = min(pause * 2, _BACKOFF_BASE)
            await asyncio.sleep(pause)
            self._refreshing = False
            self.wake()

    # -- one request -----------------------------------------------------------------------------
    async def _send(self, node: int, batches: list, ticket: int | None = None) -> None:
        try:
            await self._send_in_turn(node, batches, ticket)
        finally:
            if ticket is not None:
                self._gate.done(ticket)

    async def _encode_all(self, todo: list) -> list:
        """Encodes ``todo`` (on the codec threads unless small); the exception of each or None."""
        ahead = self._ahead
        if ahead is None or (len(todo) == 1 and todo[0].encoding is None
                             and todo[0].est_bytes < _INLINE_ENCODE_BYTES):
            return [self._encode_one(b) for b in todo]
        loop = asyncio.get_running_loop()
        # shielded: a cancelled send must not cancel an encode another send may wait for
        return list(await asyncio.gather(*[asyncio.shield(ahead.start(b, loop)) for b in todo]))

    async def _send_in_turn(self, node: int, batches: list, ticket: int | None) -> None:
        # a batch encoded ahead counts once its future is done (the worker sets the payload
        # before the loop hears of it)
        todo = [b for b in batches if b.payload is None or (b.encoding is not None and not b.encoding.done())]
        if todo:
            try:
                errors = await self._encode_all(todo)
            except asyncio.CancelledError:
                err = FlussError(f"table '{self._table_name}': the write was cancelled (connection "
                                 f"closed)")
                for b in batches:
                    self._fail(b, err)
                raise
            bad = {id(b): e for b, e in zip(todo, errors, strict=True) if e is not None}
            if bad:
                for b in batches:
                    e = bad.get(id(b))
                    if e is not None:
                        if not isinstance(e, FlussError):
                            e = FlussError(f"{self._where(b)}: could not encode the batch: {e}")
                        self._fail(b, e)
                batches = [b for b in batches if id(b) not in bad]
                if not batches:
                    self.wake()
                    return
        now = time.monotonic()
        schema_id = self._meta.schema_id
        parts = []
        ok = []
        for b in batches:
            try:
                header = b.header_for(schema_id)
            except (ValueError, OverflowError, struct.error) as e:
                self._fail(b, FlussError(f"{self._where(b)}: could not frame the batch: {e}"))
                continue
            parts.append((b.partition_id, b.bucket, (header, b.payload)))
            ok.append(b)
            b.attempts += 1
            if not b.first_attempt:
                b.first_attempt = now
        batches = ok
        if not batches:
            self.wake()
            return
        kv = self._kv_target is not None
        if kv:
            from .kvrecords import encode_put_kv_request
            body = encode_put_kv_request(self._acks, self._table_id, self._timeout_ms,
                                         self._kv_target, parts)
        else:
            body = encode_produce_log_request(self._acks, self._table_id, self._timeout_ms, parts)
        parts = None
        self.requests_sent += 1
        self._m.requests += 1
        # never wait past the delivery window of the oldest batch in the request
        left = min(b.first_attempt for b in batches) + self._delivery - now
        timeout = max(_MIN_SEND_S, min(self._request_timeout, left)) if self._request_timeout else None
        try:
            if ticket is not None:
                await self._gate.wait(ticket)
            try:
                sent_at = time.monotonic()
                # the turn is held until the request is on the socket: a first request that waits
                # for the connection to open (or the send buffer to drain) must not be overtaken
                # by a later one that finds it open (a new leader's first batches, out of order)
                answer = await self._ctx.tablet_write_raw(
                    node, Api.PUT_KV if kv else Api.PRODUCE_LOG, body, timeout)
            finally:
                if ticket is not None:
                    self._gate.done(ticket)
            raw = await answer
            self._m.latency.record(time.monotonic() - sent_at)
            body = None
            try:
                resp = (pb.PutKvResponse if kv else pb.ProduceLogResponse).FromString(raw)
            except Exception as e:  # noqa: BLE001 - what the server did is unknown: retry
                raise FlussError(f"unreadable ProduceLog response: {e}", Errors.NETWORK_EXCEPTION) from None
        except FlussError as e:
            for b in batches:
                self._settle(b, e.error_code, e.message, None)
            self.wake()
            return
        except asyncio.CancelledError:
            err = FlussError(f"table '{self._table_name}': the write was cancelled (connection closed)")
            for b in batches:
                self._fail(b, err)
            raise
        except Exception as e:
            for b in batches:
                self._settle(b, Errors.NETWORK_EXCEPTION,
                             repr(e), None)
            self.wake()
            return
        results = {}
        for r in resp.buckets_resp:
            pid = r.partition_id if r.HasField("partition_id") else None
            results[(pid, r.bucket_id)] = r
        for b in batches:
            r = results.get((b.partition_id, b.bucket))
            if r is None:
                self._settle(b, -1, "the server's response has no entry for this bucket", None)
            else:
                code = r.error_code if r.HasField("error_code") else 0
                base = r.base_offset if not kv and r.HasField("base_offset") else -1
                if kv and r.HasField("pressure") and r.pressure > 0:
                    self._throttle(b, r.pressure)
                self._settle(b, code, r.error_message if r.HasField("error_message") else None, base)
        self.wake()

    def _throttle(self, b, pressure: float) -> None:
        """The server's KV backpressure: hold the bucket back for max-throttle * pressure^2, as
        the Java client does (``writer.kv-backpressure.max-throttle-ms``)."""
        max_ms = getattr(self._ctx.config, "writer_kv_backpressure_max_throttle_ms", 0) or 0
        delay = min(float(max_ms), 1e9) * min(float(pressure), 1.0) ** 2 / 1000.0
        if delay > 0:
            self._acc.throttle(b, time.monotonic() + delay)

    def _encode_one(self, b):
        try:
            self._encode(b)
            return None
        except Exception as e:
            return e

    # -- outcomes --------------------------------------------------------------------------------
    def _succeed(self, b, base_offset: int) -> None:
        if self._idem.enabled:
            self._idem.acked(b)
        m = self._m
        m.records += b.record_count
        m.batches += 1
        if b.payload is not None:
            m.bytes += memoryview(b.payload).nbytes + (len(b.header) if b.header is not None else 0)
        b.complete(base_offset)
        self._acc.completed(b)

    def _fail(self, b, error: FlussError) -> None:
        n = b.record_count
        m = self._m
        m.records_failed += n
        m.errors += 1
        b.fail(error)
        self._acc.completed(b)
        self._on_failure(error, n)

    def _can_retry(self, b) -> bool:
        return b.attempts <= self._retries and time.monotonic() - b.first_attempt < self._delivery

    def _retry(self, b, resequence: bool) -> None:
        if resequence:
            b.writer_id = -1
            b.sequence = -1
        m = self._m
        m.records_retry += b.record_count
        m.errors += 1
        backoff = min(_BACKOFF_BASE * (2 ** max(0, b.attempts - 1)), _BACKOFF_MAX)
        self._acc.requeue(b, time.monotonic() + backoff)

    def _settle(self, b, code: int, message: str | None, base_offset: int | None) -> None:
        if code == 0:
            self._succeed(b, base_offset if base_offset is not None else -1)
            return
        idem = self._idem
        if code == 32:  # duplicate: the server already has it and answers with its offsets
            self._succeed(b, base_offset if base_offset is not None else -1)
            return
        text = message or codes.default_message(code)
        if idem.enabled and code in (31, 33):
            if code == 31 and idem.already_committed(b):
                # a later sequence was acknowledged, so this one was written (its ack got lost)
                self._succeed(b, base_offset if base_offset is not None else -1)
                return
            if self._can_retry(b):
                if b.writer_id != idem.writer_id:
                    # rejected under a writer id we already dropped: certainly not written
                    self._retry(b, resequence=True)
                elif code == 31 and not idem.is_next(b):
                    # an earlier batch of this bucket failed and will be re-sent first
                    self._retry(b, resequence=False)
                else:
                    # the server lost (33) or disagrees about (31) our state: start a new writer
                    idem.reset()
                    self._retry(b, resequence=True)
                return
            if b.writer_id == idem.writer_id:
                idem.reset()
            self._fail(b, FlussError(f"{self._where(b)}: {text}", code))
            return
        if codes.is_retriable(code) and self._can_retry(b):
            if code in _AMBIGUOUS:
                b.ambiguous = True
            if code in _INVALID_METADATA:
                self._refresh_metadata({b.partition_id})
            self._retry(b, resequence=False)
            return
        if idem.enabled and b.sequence >= 0 and b.writer_id == idem.writer_id:
            # the sequence this batch used is lost; later batches of the bucket would only see
            # out-of-order errors, so start over with a new writer id
            idem.reset()
        if codes.is_retriable(code) and b.first_attempt:
            waited = int((time.monotonic() - b.first_attempt) * 1000)
            text = (f"{text} (gave up after {waited} ms and {b.attempts} attempt(s); the limit is "
                    f"{DELIVERY_TIMEOUTS} x request-timeout = {int(self._delivery * 1000)} ms)")
        self._fail(b, FlussError(f"{self._where(b)}: {text}", code))
