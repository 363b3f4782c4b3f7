"""One client TCP connection to a Fluss server, living on the client runtime loop.

Requests are pipelined (request ids from a 31-bit counter) and answered in any order; every request
has a deadline because a real server stays silent on requests it cannot parse (docs/contributing/protocol.md §1.6). The
receive side is a ``BufferedProtocol``: small frames are copied out of one reusable buffer, a large
frame (a fetch response) is received straight into a buffer of the connection's ``FramePool`` and
handed out as a memoryview; the buffer is reused once no view of it is left.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import struct

from ..error_codes import Errors, default_message
from ..errors import FlussError
from . import fluss_api_pb2 as pb
from .api import API_KEYS, COORDINATOR, TABLET_SERVER, Api, response_class
from .frame import ERROR_RESPONSE, REQUEST_HEADER_SIZE, RESPONSE_HEADER_SIZE, SERVER_FAILURE, SUCCESS_RESPONSE
from .frame import LENGTH as _LEN
from .frame import REQUEST_HEADER as _HDR
from .frame_pool import FramePool

_RID = struct.Struct(">i")

_RECV_BUF = 256 * 1024
# Frames at least this big are received into a buffer of their own instead of the shared one.
_BIG_FRAME = 64 * 1024
_COALESCE = 16 * 1024
# Receive buffers a connection keeps for reuse: a scan has up to scanner.log.fetch.max-bytes
# (16 MiB) of responses in flight plus one being decoded. Reused buffers cost no page faults and
# no zeroing; fresh bytearrays from the C heap cost both and, once glibc raised its mmap
# threshold, stayed resident after the scan (orders, 1 M rows: peak RSS 10-20 MB over pyfluss).
_POOL_FREE_BYTES = 32 * 1024 * 1024
# A connection that received no big frame for this long gives its spare buffers back.
# (Dropping the spares whenever no answer was pending cost 30 % of a projected scan, which has one
# request in flight per connection: every answer then paid for a fresh mapping.)
_POOL_IDLE_S = 0.25
_MAX_FRAME = (1 << 31) - 1

NETWORK_EXCEPTION = Errors.NETWORK_EXCEPTION
UNSUPPORTED_VERSION = Errors.UNSUPPORTED_VERSION
REQUEST_TIME_OUT = Errors.REQUEST_TIME_OUT

CLIENT_NAME = "fluss-fast"

_SERVER_TYPE_NAMES = {COORDINATOR: "coordinator", TABLET_SERVER: "tablet server"}


def _client_version() -> str:
    try:
        from .. import __version__

        return __version__
    except Exception:  # noqa: BLE001 - the package may be half-imported
        return "0.1.0"


class _Pending:
    __slots__ = ("future", "api_key", "raw", "timer", "timeout")

    def __init__(self, future, api_key, raw, timer, timeout=None):
        self.future = future
        self.api_key = api_key
        self.raw = raw
        self.timer = timer
        self.timeout = timeout


class _Protocol(asyncio.BufferedProtocol):
    __slots__ = ("_conn", "_buf", "_view", "_start", "_end", "_big", "_big_view", "_big_filled",
                 "pool", "pool_used", "pool_watched")

    def __init__(self, conn: Connection):
        self._conn = conn
        self.pool = FramePool(_POOL_FREE_BYTES)
        self.pool_used = False  # a big frame arrived since the last idle check
        self.pool_watched = False  # an idle check is scheduled
        self._buf = bytearray(_RECV_BUF)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self._big = None
        self._big_view = None
        self._big_filled = 0

    def connection_made(self, transport):
        self._conn._transport = transport

    def get_buffer(self, sizehint):
        if self._big is not None:
            return self._big_view[self._big_filled:]
        if self._end == len(self._buf):
            self._compact()
        return self._view[self._end:]

    def _compact(self):
        n = self._end - self._start
        if n and self._start:
            self._buf[0:n] = self._view[self._start:self._end]
        self._start, self._end = 0, n

    def buffer_updated(self, nbytes):
        if self._big is not None:
            self._big_filled += nbytes
            if self._big_filled == len(self._big_view):
                frame = self._big_view
                self.pool.handed_out(self._big)
                self._big = self._big_view = None
                self._big_filled = 0
                self._conn._on_frame(frame, True)
            return
        self._end += nbytes
        buf, view = self._buf, self._view
        start, end = self._start, self._end
        conn = self._conn
        while end - start >= 4:
            length = _LEN.unpack_from(buf, start)[0]
            if length < 1:
                self._start = self._end = 0
                conn._fail_all(FlussError(f"Corrupt frame length {length} from {conn.address}", NETWORK_EXCEPTION),
                               close=True)
                return
            avail = end - start - 4
            if avail >= length:
                frame = bytes(view[start + 4:start + 4 + length])
                start += 4 + length
                self._start = start
                conn._on_frame(frame, False)
                if self._big is not None or conn._closing:
                    return
                start, end = self._start, self._end
                continue
            if length >= _BIG_FRAME or start + 4 + length > len(buf):
                if length < _BIG_FRAME and length + 4 <= len(buf):
                    self._start = start
                    self._compact()
                    return
                big = self.pool.take(length)
                big_view = memoryview(big)[:length]
                big_view[:avail] = view[start + 4:end]
                self.pool_used = True
                if not self.pool_watched:
                    self.pool_watched = True
                    conn._watch_pool(self)
                self._big, self._big_view, self._big_filled = big, big_view, avail
                self._start = self._end = 0
                return
            break
        if start == end:
            self._start = self._end = 0
        else:
            self._start = start

    def eof_received(self):
        return False

    def connection_lost(self, exc):
        self._conn._on_lost(exc)

    def pause_writing(self):
        self._conn._write_paused()

    def resume_writing(self):
        self._conn._write_resumed()


class Connection:
    """A handshaken connection; every method must be called on the loop it was opened on."""

    def __init__(self, host: str, port: int, request_timeout_ms: int):
        self.host = host
        self.port = port
        self.address = f"{host}:{port}"
        self.request_timeout = request_timeout_ms / 1000.0 if request_timeout_ms else None
        self.server_type: int | None = None
        self._transport = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict = {}
        self._next_id = 0
        self._versions: dict = {Api.API_VERSIONS: 0}
        self._closing = False
        self._close_error: FlussError | None = None
        self._drain_waiter: asyncio.Future | None = None
        self._ready = False
        self._closed_event: asyncio.Event | None = None

    # -- opening -----------------------------------------------------------------------------------
    @classmethod
    async def open(cls, host: str, port: int, *, connect_timeout_ms: int = 15000,
                   request_timeout_ms: int = 30000, sasl=None, expected_server_type: int | None = None,
                   ) -> Connection:
        conn = cls(host, port, request_timeout_ms)
        loop = asyncio.get_running_loop()
        conn._loop = loop
        conn._closed_event = asyncio.Event()
        timeout = connect_timeout_ms / 1000.0 if connect_timeout_ms else None
        try:
            await asyncio.wait_for(loop.create_connection(lambda: _Protocol(conn), host, port), timeout)
        except TimeoutError:
            raise FlussError(f"Timed out connecting to {conn.address} after {connect_timeout_ms} ms",
                             NETWORK_EXCEPTION) from None
        except OSError as exc:
            err = FlussError(f"Failed to connect to {conn.address}: {exc.strerror or exc}", NETWORK_EXCEPTION)
            raise err from exc
        sock = conn._transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError, AttributeError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.wait_for(conn._handshake(sasl, expected_server_type), timeout)
        except TimeoutError:
            conn.close()
            raise FlussError(f"Timed out during the handshake with {conn.address} after {connect_timeout_ms} ms",
                             NETWORK_EXCEPTION) from None
        except BaseException:
            conn.close()
            raise
        conn._ready = True
        return conn

    async def _handshake(self, sasl, expected_server_type):
        req = pb.ApiVersionsRequest(client_software_name=CLIENT_NAME, client_software_version=_client_version())
        resp = await self.request(Api.API_VERSIONS, req, _handshake=True)
        versions = {}
        for v in resp.api_versions:
            ours = API_KEYS.get(v.api_key)
            if ours is None:
                continue
            chosen = min(ours.max_version, v.max_version)
            if chosen >= max(ours.min_version, v.min_version):
                versions[v.api_key] = chosen
        versions.setdefault(Api.API_VERSIONS, 0)
        self._versions = versions
        if resp.HasField("server_type"):
            self.server_type = resp.server_type
            if expected_server_type is not None and resp.server_type != expected_server_type:
                raise FlussError(
                    f"Server at {self.address} is a {_SERVER_TYPE_NAMES.get(resp.server_type, resp.server_type)}, "
                    f"expected a {_SERVER_TYPE_NAMES.get(expected_server_type, expected_server_type)}",
                    NETWORK_EXCEPTION)
        if sasl is not None:
            from .sasl import authenticate

            user, password = sasl[0], sasl[1]
            mechanism = sasl[2] if len(sasl) > 2 else "PLAIN"
            await authenticate(self, user, password, mechanism)

    # -- state -------------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closing

    def version(self, api_key: int) -> int | None:
        return self._versions.get(api_key)

    def supports(self, api_key: int) -> bool:
        return api_key in self._versions

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def __repr__(self):
        state = "closed" if self._closing else "open"
        return f"Connection({self.address}, {state}, in_flight={len(self._pending)})"

    # -- requests ----------------------------------------------------------------------------------
    def _check_usable(self, api_key):
        if self._closing:
            err = self._close_error
            raise FlussError(f"Connection to {self.address} is closed"
                             + (f" ({err.message})" if err is not None else ""), NETWORK_EXCEPTION)
        version = self._versions.get(api_key)
        if version is None:
            info = API_KEYS.get(api_key)
            name = info.name if info else str(api_key)
            raise FlussError(f"The server at {self.address} does not support API {name} ({api_key})",
                             UNSUPPORTED_VERSION)
        return version

    def _enqueue(self, api_key: int, body, raw: bool, timeout):
        version = self._check_usable(api_key)
        rid = self._next_id
        self._next_id = (rid + 1) & 0x7FFFFFFF
        loop = self._loop
        fut = loop.create_future()
        if timeout is None:
            timeout = self.request_timeout
        timer = loop.call_later(timeout, self._on_timeout, rid) if timeout else None
        self._pending[rid] = _Pending(fut, api_key, raw, timer, timeout)
        fut.add_done_callback(functools.partial(self._forget_cancelled, rid))
        transport = self._transport
        if isinstance(body, (list, tuple)):
            size = sum(len(b) for b in body)
            transport.write(_HDR.pack(REQUEST_HEADER_SIZE + size, api_key, version, rid))
            for chunk in body:
                transport.write(chunk)
        else:
            size = len(body)
            header = _HDR.pack(REQUEST_HEADER_SIZE + size, api_key, version, rid)
            if size <= _COALESCE:
                transport.write(header + body)
            else:
                transport.write(header)
                transport.write(body)
        return fut

    def _forget_cancelled(self, rid, fut):
        # A caller that gave up (cancelled) must not leave its entry and timer behind.
        if fut.cancelled():
            pending = self._pending.pop(rid, None)
            if pending is not None and pending.timer is not None:
                pending.timer.cancel()

    async def _wait_writable(self):
        while self._drain_waiter is not None and not self._closing:
            await asyncio.shield(self._drain_waiter)

    async def request(self, api_key: int, request, timeout: float | None = None, *, _handshake: bool = False):
        """Send one request and wait for its parsed response (an ERROR_RESPONSE raises FlussError)."""
        if not self._ready and not _handshake:
            raise FlussError(f"Connection to {self.address} is not ready", NETWORK_EXCEPTION)
        if self._drain_waiter is not None:
            await self._wait_writable()
        return await self._enqueue(api_key, request.SerializeToString(), False, timeout)

    async def request_raw(self, api_key: int, body, timeout: float | None = None) -> memoryview:
        """Send an already-serialized body (bytes or a list of chunks); returns the response body
        as a memoryview, without parsing or copying it."""
        return await (await self.write_raw(api_key, body, timeout))

    async def write_raw(self, api_key: int, body, timeout: float | None = None) -> asyncio.Future:
        """``request_raw`` in two steps: returns once the request is written (after the send buffer
        has drained), with the future of its response body. A caller that must keep requests in
        order on the wire holds its turn until this returns, not until the answer."""
        if not self._ready:
            raise FlussError(f"Connection to {self.address} is not ready", NETWORK_EXCEPTION)
        if self._drain_waiter is not None:
            await self._wait_writable()
        return self._enqueue(api_key, body, True, timeout)

    def send_raw(self, api_key: int, body, timeout: float | None = None) -> asyncio.Future | None:
        """``request_raw`` written at once, from a plain callback: the response body's future, or
        None when the connection is not ready or is waiting for its send buffer to drain (then
        ``await request_raw``)."""
        if not self._ready or self._drain_waiter is not None or self._closing:
            return None
        return self._enqueue(api_key, body, True, timeout)

    def send(self, api_key: int, request, timeout: float | None = None) -> asyncio.Future:
        """Like ``request`` but returns the future at once (for callers that fan out)."""
        return self._enqueue(api_key, request.SerializeToString(), False, timeout)

    # -- receiving ---------------------------------------------------------------------------------
    def _on_frame(self, frame, big: bool):
        kind = frame[0]
        if kind == SERVER_FAILURE:
            err = pb.ErrorResponse()
            try:
                err.ParseFromString(bytes(frame[1:]))
                code, msg = err.error_code, err.error_message or default_message(err.error_code)
            except Exception:  # noqa: BLE001 - a corrupt failure frame is still a failure
                code, msg = -1, "unreadable SERVER_FAILURE frame"
            self._fail_all(FlussError(f"Server {self.address} failed the connection: {msg}", code), close=True)
            return
        if len(frame) < RESPONSE_HEADER_SIZE:
            self._fail_all(FlussError(f"Truncated response frame from {self.address}", NETWORK_EXCEPTION), close=True)
            return
        rid = _RID.unpack_from(frame, 1)[0]
        pending = self._pending.pop(rid, None)
        if pending is None:
            return  # timed out already
        if pending.timer is not None:
            pending.timer.cancel()
        fut = pending.future
        if fut.done():
            return
        body = memoryview(frame)[RESPONSE_HEADER_SIZE:]
        if kind == SUCCESS_RESPONSE:
            if pending.raw:
                fut.set_result(body)
                return
            resp = response_class(pending.api_key)()
            try:
                resp.ParseFromString(body)
            except Exception as exc:  # noqa: BLE001
                fut.set_exception(FlussError(
                    f"Could not parse the {API_KEYS[pending.api_key].name} response from {self.address}: {exc}",
                    NETWORK_EXCEPTION))
                return
            fut.set_result(resp)
        elif kind == ERROR_RESPONSE:
            err = pb.ErrorResponse()
            try:
                err.ParseFromString(body)
                code = err.error_code
                msg = (err.error_message if err.HasField("error_message") and err.error_message
                       else default_message(code))
            except Exception:  # noqa: BLE001
                code, msg = -1, "unreadable error response"
            fut.set_exception(FlussError(msg, code))
        else:
            fut.set_exception(FlussError(f"Unknown response type {kind} from {self.address}", NETWORK_EXCEPTION))

    def trim_receive_pool(self) -> int:
        """Unmap the spare receive buffers now (and those whose views are gone): a reader that
        expects no more big answers on this connection gives them back at once instead of after
        the idle delay. Returns how many buffers someone still looks at."""
        transport = self._transport
        proto = transport.get_protocol() if transport is not None else None
        if isinstance(proto, _Protocol):
            return proto.pool.trim()
        return 0

    def _watch_pool(self, proto: _Protocol) -> None:
        """Give ``proto``'s spare receive buffers back once big frames stop coming."""
        def check():
            if proto.pool_used and not self._closing:
                proto.pool_used = False
                self._loop.call_later(_POOL_IDLE_S, check)
            else:
                proto.pool.trim()
                proto.pool_watched = False
        self._loop.call_later(_POOL_IDLE_S, check)

    def _on_timeout(self, rid):
        pending = self._pending.pop(rid, None)
        if pending is None or pending.future.done():
            return
        name = API_KEYS[pending.api_key].name if pending.api_key in API_KEYS else pending.api_key
        ms = self.request_timeout_ms_for(pending)
        pending.future.set_exception(FlussError(
            f"Request {name} to {self.address} timed out after {ms} ms", REQUEST_TIME_OUT))
        # A peer that lets a request time out may be frozen or half-open: nothing more will come on
        # this socket. Close it (the owner reopens on next use, as the Java NetworkClient does) and
        # fail what else is in flight as a network error, which callers retry elsewhere or anew.
        if not self._closing:
            self._close_error = FlussError(
                f"Connection to {self.address} closed: request {name} got no answer within {ms} ms",
                NETWORK_EXCEPTION)
            self.close()

    def request_timeout_ms_for(self, pending) -> int:
        t = pending.timeout if pending.timeout is not None else self.request_timeout
        return int(round((t or 0) * 1000))

    # -- failure and close -------------------------------------------------------------------------
    def _write_paused(self):
        if self._drain_waiter is None and self._loop is not None:
            self._drain_waiter = self._loop.create_future()

    def _write_resumed(self):
        w, self._drain_waiter = self._drain_waiter, None
        if w is not None and not w.done():
            w.set_result(None)

    def _fail_all(self, error: FlussError, close: bool = False, cause: BaseException | None = None):
        if self._close_error is None:
            self._close_error = error
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if p.timer is not None:
                p.timer.cancel()
            if not p.future.done():
                e = FlussError(error.message, error.error_code)
                if cause is not None:
                    e.__cause__ = cause
                p.future.set_exception(e)
        self._write_resumed()
        if close:
            self.close()

    def _on_lost(self, exc):
        was_closing = self._closing
        self._closing = True
        if exc is not None:
            err = FlussError(f"Connection to {self.address} was lost: {exc}", NETWORK_EXCEPTION)
        elif was_closing and self._close_error is not None:
            err = self._close_error
        else:
            err = FlussError(f"The server {self.address} closed the connection before a response was received",
                             NETWORK_EXCEPTION)
        self._fail_all(err, cause=exc)
        if self._closed_event is not None:
            self._closed_event.set()

    def close(self) -> None:
        """Close now; every pending request fails with NETWORK_EXCEPTION."""
        if not self._closing:
            self._closing = True
            if self._close_error is None:
                self._close_error = FlussError(f"Connection to {self.address} was closed by the client",
                                               NETWORK_EXCEPTION)
        if self._pending:
            self._fail_all(self._close_error)
        t = self._transport
        if t is not None and not t.is_closing():
            t.close()

    async def wait_closed(self, timeout: float = 1.0) -> None:
        if self._closed_event is not None and self._transport is not None:
            try:
                await asyncio.wait_for(self._closed_event.wait(), timeout)
            except TimeoutError:
                self._transport.abort()
