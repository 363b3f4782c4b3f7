"""The embedded server's network layer: listeners, framing, dispatch, SASL state, bad-input handling.

One asyncio process plays the whole cluster (INTERNALS.md "Embedded server"): the ``--listen`` port is
the coordinator (server_type 1, node 0); every tablet server k gets its own listener (server_type 2,
node k), and a SASL twin of each when ``--sasl-listen`` is given.

Bad input (each only affects the connection that sent it):
* frame length < 8 or > 100 MiB (``frame.MAX_REQUEST_SIZE``, the 4 length bytes included), which is
  also what random garbage turns into -> one SERVER_FAILURE frame (code 3, non-empty message), close;
* unknown API key, or a key this listener's role does not serve -> ERROR_RESPONSE 2 naming the key
  (the Java server stays silent there, which hangs clients without request timeouts);
* a body that does not parse, or lacks a proto2 ``required`` field -> ERROR_RESPONSE -1 with the reason.
  Not 3 CORRUPT_MESSAGE: that code is retriable, and resending the same bytes cannot help;
* any request but API_VERSIONS/AUTHENTICATE on a SASL listener before authentication -> ERROR_RESPONSE 46;
* a handler exception -> ERROR_RESPONSE with its FlussError code, else -1 and a short message;
* no traffic for ``idle_timeout`` seconds (default 10 min) while nothing is pending -> close;
* a header announcing a big frame whose bytes never come costs address space only (FramePool);
* more than 1024 requests, or 256 MiB of big frames, still in handling on one connection -> that
  connection is not read until they drain (TCP pushes back on the client).

Memory path of a request: frames up to the ring buffer's size are parsed in place; a bigger one is
read by the kernel straight into a pooled buffer of its size, and handlers with a ``raw_parser`` (the
produce path) get views of it, so record payloads are copied exactly once, socket to page cache aside.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import mmap
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import traceback
from typing import Any, Callable, Optional

from google.protobuf.message import DecodeError, EncodeError

from ..errors import FlussError
from ..event_loop import new_event_loop
from ..rpc import api as _api
from ..rpc import frame as _frame
from ..rpc.api import API_KEYS, COORDINATOR, TABLET_SERVER, Api
from ..rpc.errors import Errors
from ..rpc import fluss_api_pb2 as pb
from .auth import PLAINTEXT, PlainAuthenticator
from .catalog import Catalog
from .datadir_lock import DataDirLock
from .flush_policy import FlushPolicy
from .replicas import ReplicaManager
from .settings import Settings
from .tablet import TabletService
from .utf8 import repair_strings

log = logging.getLogger("fluss_fast.server")

PLAINTEXT_LISTENER = "PLAINTEXT"
SASL_LISTENER = "SASL"
DEFAULT_IDLE_TIMEOUT_S = 600.0

_pack_resp = _frame.RESPONSE_HEADER.pack
_unpack_req = _frame.REQUEST_HEADER_AFTER_LENGTH.unpack_from
_unpack_len = _frame.LENGTH.unpack_from
_unpack_key_version = struct.Struct(">hh").unpack_from
# Real API versions are 0..2 today; anything far beyond is not a Fluss client talking.
_MAX_SANE_VERSION = 255

# Small frames share one ring buffer per connection; anything bigger is read by the kernel straight
# into a buffer of its own (FramePool), so record payloads land in memory once and idle connections
# stay cheap.
_INITIAL_BUFFER = 64 * 1024
_MIN_FREE = 8 * 1024
_MAX_INFLIGHT = 1024  # per connection; reading pauses above this so a flood cannot grow memory
# ...and above this many bytes of big frames still being handled (appends slower than the network)
_MAX_INFLIGHT_BYTES = 256 * 1024 * 1024
_MAX_ERROR_MESSAGE = 2048


_POOL_MIN_CLASS = 128 * 1024
_POOL_MAX_CLASS = 16 * 1024 * 1024   # bigger frames are rare; their buffers are simply dropped
_POOL_MAX_FREE_BYTES = 64 * 1024 * 1024
_POOL_MAX_BUSY = 64


def _size_class(n: int) -> int:
    if n <= _POOL_MIN_CLASS:
        return _POOL_MIN_CLASS
    return 1 << (n - 1).bit_length()


class FramePool:
    """Buffers for frames that do not fit a connection's ring buffer, shared by all connections of a
    server (one event loop, so no locking).

    Fresh buffers are anonymous mmaps: the kernel commits pages only as bytes arrive, so a header
    that announces 100 MiB and then stalls costs address space, not memory, and nothing is zero-filled
    in user space. A buffer handed out with a frame goes to ``_busy``; handlers may keep views of it
    (the produce path writes offsets into the request bytes and appends them as they are), so it is
    reused only once ``sys.getrefcount`` shows that no view exists any more: every live memoryview of
    an mmap keeps one reference to it through its managed buffer.
    """

    __slots__ = ("_free", "_free_bytes", "_busy", "allocated", "reused")

    def __init__(self):
        self._free: dict[int, list] = {}
        self._free_bytes = 0
        self._busy: list = []
        self.allocated = 0
        self.reused = 0

    def take(self, n: int):
        """A writable buffer of at least ``n`` bytes."""
        cap = _size_class(n)
        if cap > _POOL_MAX_CLASS:
            self.allocated += 1
            return mmap.mmap(-1, n)
        if self._busy:
            self._reclaim()
        free = self._free.get(cap)
        if free:
            self._free_bytes -= cap
            self.reused += 1
            return free.pop()
        self.allocated += 1
        return mmap.mmap(-1, cap)

    def handed_out(self, buf) -> None:
        """``buf`` now backs a frame; reclaim it once nothing looks at it."""
        if len(buf) > _POOL_MAX_CLASS:
            return
        busy = self._busy
        busy.append(buf)
        if len(busy) > _POOL_MAX_BUSY:
            self._reclaim()
            if len(busy) > _POOL_MAX_BUSY:
                del busy[0]  # held for long by someone; it is freed whenever they let go

    def _reclaim(self) -> None:
        busy = self._busy
        keep = []
        for i in range(len(busy)):
            # references: the list slot and getrefcount's argument; a live view adds one more
            if sys.getrefcount(busy[i]) > 2:
                keep.append(busy[i])
                continue
            buf = busy[i]
            cap = len(buf)
            if self._free_bytes + cap <= _POOL_MAX_FREE_BYTES:
                self._free.setdefault(cap, []).append(buf)
                self._free_bytes += cap
            del buf
        busy[:] = keep

    def stats(self) -> dict:
        return {"allocated": self.allocated, "reused": self.reused, "busy": len(self._busy),
                "free_bytes": self._free_bytes}


class RawBody(list):
    """A response body given as bytes-like chunks that already form the serialized protobuf; written
    with ``transport.writelines`` so large record data is never copied into one buffer. (A handler may
    also return one bytes-like object holding the serialized body.)"""

    __slots__ = ()


class RequestContext:
    """Per-connection facts a handler may need. One object per connection, shared by its requests."""

    __slots__ = ("server", "node_id", "principal", "listener", "peer", "connection")

    def __init__(self, server, node_id, listener, peer, connection):
        self.server = server
        self.node_id = node_id  # tablet-server id, or None on a coordinator listener
        self.principal = "ANONYMOUS"
        self.listener = listener  # "PLAINTEXT" or "SASL"
        self.peer = peer
        self.connection = connection

    @property
    def is_coordinator(self) -> bool:
        return self.node_id is None


Handler = Callable[[RequestContext, int, Any], Any]


def _not_implemented(key) -> Handler:
    async def handler(ctx, version, request):
        raise FlussError(f"API {key.name} ({key.id}) is not implemented by the fluss-fast embedded server",
                         Errors.UNKNOWN_SERVER_ERROR)

    return handler


class _Listener:
    """What one listening socket is: its role, node id, family (plaintext/SASL) and dispatch table."""

    def __init__(self, server: "FlussServer", name: str, role: int, node_id: Optional[int], host: str, port: int):
        self.server = server
        self.name = name
        self.role = role
        self.node_id = node_id
        self.host = host
        self.port = port
        self.sasl = name == SASL_LISTENER
        self.dispatch: dict[int, tuple] = {}
        self.api_versions_body = b""
        self.aio_server: Optional[asyncio.AbstractServer] = None

    @property
    def role_name(self) -> str:
        return "coordinator" if self.role == COORDINATOR else f"tablet server {self.node_id}"

    def build(self, handlers: dict[int, Handler]) -> None:
        versions = pb.ApiVersionsResponse(server_type=self.role)
        for key in API_KEYS.values():
            if not (key.coordinator if self.role == COORDINATOR else key.tablet):
                continue
            versions.api_versions.add(api_key=key.id, min_version=key.min_version, max_version=key.max_version)
            if key.id in (Api.API_VERSIONS, Api.AUTHENTICATE):
                continue  # answered inside the protocol
            handler = handlers.get(key.id) or _not_implemented(key)
            # A handler may parse its own request straight from the frame bytes (``raw_parser(body)
            # -> request | None``, None meaning "let protobuf do it"), e.g. to keep record payloads
            # as views of the buffer the kernel wrote them into.
            raw_parser = getattr(handler, "raw_parser", None)
            self.dispatch[key.id] = (handler, _api.request_class(key.id), key.name, raw_parser)
        self.api_versions_body = versions.SerializeToString()


class _Connection(asyncio.BufferedProtocol):
    __slots__ = ("_listener", "_server", "_dispatch", "_transport", "_buf", "_view", "_start", "_end",
                 "_big", "_big_view", "_big_fill", "_big_len", "_tasks", "_closed", "_authenticated", "_ctx",
                 "_write_paused", "_read_paused", "last_active", "_loop", "_held", "__weakref__")

    def __init__(self, listener: _Listener):
        self._listener = listener
        self._server = listener.server
        self._dispatch = listener.dispatch
        self._transport = None
        self._buf = bytearray(_INITIAL_BUFFER)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self._big = None  # a frame larger than the ring buffer gets its own buffer (FramePool)
        self._big_view = None
        self._big_fill = 0
        self._big_len = 0
        self._tasks: set = set()
        self._closed = False
        self._authenticated = not listener.sasl
        self._ctx = None
        self._write_paused = False
        self._read_paused = False
        self._held = 0  # bytes of big frames whose requests are still running
        self._loop = asyncio.get_running_loop()
        self.last_active = self._loop.time()

    # -- transport events ----------------------------------------------------------------------
    def connection_made(self, transport):
        self._transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        peer = transport.get_extra_info("peername")
        self._ctx = RequestContext(self._server, self._listener.node_id, self._listener.name, peer, self)
        self._server._connections.add(self)

    def connection_lost(self, exc):
        self._closed = True
        self._server._connections.discard(self)
        for t in list(self._tasks):
            t.cancel()
        self._tasks.clear()
        big = self._big
        self._big = self._big_view = None
        if big is not None:
            self._server.frame_pool.handed_out(big)
        # Break the cycles (context <-> connection, transport <-> protocol) so the receive buffer
        # is freed now rather than whenever the cycle collector runs.
        if self._ctx is not None:
            self._ctx.connection = None
        self._transport = None

    def eof_received(self):
        return False

    def pause_writing(self):
        self._write_paused = True
        self._update_reading()

    def resume_writing(self):
        self._write_paused = False
        self._update_reading()

    def _update_reading(self):
        if self._closed:
            return
        want_pause = (self._write_paused or len(self._tasks) >= _MAX_INFLIGHT
                      or self._held >= _MAX_INFLIGHT_BYTES)
        if want_pause != self._read_paused:
            self._read_paused = want_pause
            try:
                if want_pause:
                    self._transport.pause_reading()
                else:
                    self._transport.resume_reading()
            except (RuntimeError, AttributeError):
                pass

    def get_buffer(self, sizehint):
        if self._big is not None:
            # exactly the rest of the frame: the kernel writes the payload where it stays
            return self._big_view[self._big_fill:]
        free = len(self._buf) - self._end
        if free < _MIN_FREE and self._start > 0:
            n = self._end - self._start
            self._buf[0:n] = self._buf[self._start:self._end]
            self._start, self._end = 0, n
        return self._view[self._end:]

    def buffer_updated(self, nbytes):
        self.last_active = self._loop.time()
        if self._closed:
            return
        if self._big is not None:
            self._big_fill += nbytes
            if self._big_fill == self._big_len:
                owner = self._big
                frame = self._big_view
                self._big = self._big_view = None
                self._big_fill = 0
                self._server.frame_pool.handed_out(owner)
                del owner
                self._handle_frame(frame, True)
            return
        self._end += nbytes
        self._parse()

    def _parse(self):
        buf = self._buf
        view = self._view
        pos = self._start
        end = self._end
        max_len = _frame.MAX_REQUEST_SIZE - 4
        while end - pos >= 4:
            length = _unpack_len(buf, pos)[0]
            if length < _frame.REQUEST_HEADER_SIZE or length > max_len:
                self._fail_connection(length)
                return
            total = 4 + length
            if end - pos >= 8:
                api_key, api_version = _unpack_key_version(buf, pos + 4)
                if api_key < 0 or not 0 <= api_version <= _MAX_SANE_VERSION:
                    # No Fluss client sends this; do not wait for a body that garbage promised.
                    self._fail_connection(length, api_key, api_version)
                    return
            if end - pos < total:
                if total > len(buf) and end - pos >= 8:
                    # Big frame: the rest goes straight into a buffer of exactly its size (pooled;
                    # fresh ones are lazily committed mmaps, so announcing 100 MiB costs nothing).
                    have = end - pos - 4
                    big = self._server.frame_pool.take(length)
                    bview = memoryview(big)[:length]
                    bview[:have] = view[pos + 4:end]
                    self._big = big
                    self._big_view = bview
                    self._big_len = length
                    self._big_fill = have
                    self._start = self._end = 0
                    return
                break
            self._handle_frame(view[pos + 4:pos + total], False)
            pos += total
            if self._closed:
                return
        if pos == end:
            self._start = self._end = 0
        else:
            self._start = pos

    def _fail_connection(self, length: int, api_key: int = 0, api_version: int = 0):
        if api_key < 0 or api_version < 0 or api_version > _MAX_SANE_VERSION:
            why = (f"Invalid request header: api key {api_key}, api version {api_version} "
                   "(the bytes are not a Fluss request)")
        elif length < _frame.REQUEST_HEADER_SIZE:
            why = f"Invalid request frame: length {length} is smaller than the {_frame.REQUEST_HEADER_SIZE}-byte header"
        else:
            why = (f"Request frame of {length + 4} bytes exceeds the maximum request size "
                   f"{_frame.MAX_REQUEST_SIZE} (or the bytes are not a Fluss request)")
        log.warning("closing connection from %s: %s", self._ctx.peer if self._ctx else "?", why)
        self._closed = True
        try:
            self._transport.write(_frame.encode_server_failure(Errors.CORRUPT_MESSAGE, why))
        finally:
            self._transport.close()

    # -- requests ------------------------------------------------------------------------------
    def _write_error(self, request_id: int, code: int, message: str):
        if self._closed:
            return
        err = pb.ErrorResponse(error_code=code)
        if message:
            err.error_message = message[:_MAX_ERROR_MESSAGE]
        body = err.SerializeToString()
        self._transport.write(_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body), _frame.ERROR_RESPONSE, request_id) + body)

    def _handle_frame(self, frame, private: bool):
        """``frame``: the request header and body. ``private``: it lives in a buffer of its own (else in
        the ring buffer, which the next read overwrites)."""
        api_key, version, request_id = _unpack_req(frame, 0)
        entry = self._dispatch.get(api_key)
        if not self._authenticated and api_key != Api.API_VERSIONS and api_key != Api.AUTHENTICATE:
            self._write_error(request_id, Errors.AUTHENTICATE_EXCEPTION,
                              "The connection has not completed authentication yet. This may be caused by "
                              "a missed or failed SASL handshake.")
            return
        if entry is None:
            if api_key == Api.API_VERSIONS:
                body = self._listener.api_versions_body
                self._transport.write(_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body), _frame.SUCCESS_RESPONSE, request_id) + body)
            elif api_key == Api.AUTHENTICATE:
                self._authenticate(frame, request_id)
            else:
                self._write_error(request_id, Errors.UNSUPPORTED_VERSION, self._unsupported_message(api_key))
            return
        handler, request_cls, name, raw_parser = entry
        request = None
        if raw_parser is not None:
            body = frame[8:] if private else memoryview(bytearray(frame[8:]))
            try:
                request = raw_parser(body)
            except Exception:  # noqa: BLE001 - a parser bug must not take the connection down
                log.error("%s raw request parser failed; using protobuf:\n%s", name, traceback.format_exc())
                request = None
            del body
        if request is None:
            request = request_cls()
            try:
                request.ParseFromString(frame[8:])
            except DecodeError as e:
                self._write_error(request_id, Errors.UNKNOWN_SERVER_ERROR,
                                  f"Malformed {name} request body ({len(frame) - 8} bytes): {e}")
                return
            if not request.IsInitialized():
                missing = ", ".join(request.FindInitializationErrors())
                self._write_error(request_id, Errors.UNKNOWN_SERVER_ERROR,
                                  f"{name} request is missing required field(s): {missing}")
                return
            if not bytes(frame[8:]).isascii():
                repair_strings(request)  # non-UTF-8 names arrive as bytes; decode as Java does
        size = len(frame)
        del frame
        task = self._loop.create_task(self._run(handler, version, request, request_id, name))
        self._tasks.add(task)
        if private:
            self._held += size
            task.add_done_callback(lambda t: self._big_done(t, size))
        else:
            task.add_done_callback(self._task_done)
        if len(self._tasks) >= _MAX_INFLIGHT or self._held >= _MAX_INFLIGHT_BYTES:
            self._update_reading()

    def _task_done(self, task):
        self._tasks.discard(task)
        if self._read_paused and len(self._tasks) < _MAX_INFLIGHT // 2:
            self._update_reading()

    def _big_done(self, task, size: int):
        self._held -= size
        self._tasks.discard(task)
        if self._read_paused and len(self._tasks) < _MAX_INFLIGHT // 2 and self._held < _MAX_INFLIGHT_BYTES // 2:
            self._update_reading()

    def _unsupported_message(self, api_key: int) -> str:
        key = API_KEYS.get(api_key)
        if key is None:
            return f"Unknown API key {api_key}: not a Fluss API"
        served = "the coordinator" if key.coordinator else "tablet servers"
        return (f"API {key.name} ({api_key}) is not served by the {self._listener.role_name}; "
                f"it is served by {served}")

    async def _run(self, handler, version, request, request_id, name):
        try:
            response = await handler(self._ctx, version, request)
            if self._closed:
                return
            if isinstance(response, (bytes, bytearray, memoryview)):
                self._transport.writelines([_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(response), _frame.SUCCESS_RESPONSE, request_id), response])
            elif isinstance(response, RawBody):
                size = 0
                for chunk in response:
                    size += len(chunk)
                self._transport.writelines([_pack_resp(_frame.RESPONSE_HEADER_SIZE + size, _frame.SUCCESS_RESPONSE, request_id), *response])
            else:
                body = response.SerializeToString()
                if len(body) > 65536:
                    self._transport.writelines([_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body), _frame.SUCCESS_RESPONSE, request_id), body])
                else:
                    self._transport.write(_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body), _frame.SUCCESS_RESPONSE, request_id) + body)
        except FlussError as e:
            self._write_error(request_id, e.error_code, e.message)
        except asyncio.CancelledError:
            raise
        except OSError as e:
            # disk full, read-only or vanished files: an answer the client can act on, not a bug
            where = f" ({e.filename})" if getattr(e, "filename", None) else ""
            msg = f"{name} failed: storage error: {e.strerror or e}{where}"
            log.warning("%s", msg)
            self._write_error(request_id, Errors.STORAGE_EXCEPTION, msg)
        except EncodeError as e:
            log.error("%s handler built an incomplete response: %s", name, e)
            self._write_error(request_id, Errors.UNKNOWN_SERVER_ERROR,
                              f"Internal error: the {name} response is incomplete: {e}")
        except Exception as e:  # noqa: BLE001 - any handler bug must become an answer, not silence
            code = getattr(e, "error_code", None)  # e.g. codec.errors.CorruptBatchError
            if isinstance(code, int) and code != 0:
                self._write_error(request_id, code, str(e) or type(e).__name__)
            else:
                log.error("%s handler failed:\n%s", name, traceback.format_exc())
                self._write_error(request_id, Errors.UNKNOWN_SERVER_ERROR, f"{type(e).__name__}: {e}")
        self.last_active = self._loop.time()

    def _authenticate(self, frame, request_id: int):
        request = pb.AuthenticateRequest()
        try:
            request.ParseFromString(frame[8:])
        except DecodeError as e:
            self._write_error(request_id, Errors.AUTHENTICATE_EXCEPTION, f"Malformed AUTHENTICATE request: {e}")
            return
        if not request.IsInitialized():
            self._write_error(request_id, Errors.AUTHENTICATE_EXCEPTION,
                              "AUTHENTICATE request is missing required field(s): "
                              + ", ".join(request.FindInitializationErrors()))
            return
        repair_strings(request)
        mechanism = request.protocol
        authenticator = self._server.authenticator
        if not self._listener.sasl:
            if mechanism.upper() != PLAINTEXT:
                self._write_error(request_id, Errors.AUTHENTICATE_EXCEPTION,
                                  f"Authenticate protocol not match: protocol of server is '{PLAINTEXT}', "
                                  f"but client is '{mechanism}'")
                return
            self._write_ok(request_id, b"")
            return
        if authenticator is None or not authenticator.accepts(mechanism):
            self._write_error(request_id, Errors.AUTHENTICATE_EXCEPTION,
                              f"Authenticate protocol not match: protocol of server is 'PLAIN', "
                              f"but client is '{mechanism}'")
            return
        if self._authenticated:
            self._write_ok(request_id, b"")  # already complete: nothing to evaluate
            return
        try:
            user = authenticator.authenticate(request.token)
        except FlussError as e:
            log.info("SASL/PLAIN authentication from %s failed: %s", self._ctx.peer, e.message)
            self._write_error(request_id, e.error_code, e.message)
            return
        self._authenticated = True
        self._ctx.principal = f"User:{user}"
        body = pb.AuthenticateResponse(challenge=b"").SerializeToString()
        self._write_ok(request_id, body)

    def _write_ok(self, request_id: int, body: bytes):
        if not self._closed:
            self._transport.write(_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body), _frame.SUCCESS_RESPONSE, request_id) + body)

    def close(self):
        if not self._closed and self._transport is not None:
            self._closed = True
            self._transport.close()


def _split_host_port(spec: str, what: str) -> tuple[str, int]:
    host, sep, port = spec.rpartition(":")
    if not sep:
        raise ValueError(f"{what} must be HOST:PORT, got {spec!r}")
    host = host.strip("[]") or "0.0.0.0"
    try:
        p = int(port)
    except ValueError:
        raise ValueError(f"{what} port must be a number, got {port!r}") from None
    if not 0 <= p <= 65535:
        raise ValueError(f"{what} port must be 0..65535, got {p}")
    return host, p


def _advertised_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return socket.gethostname()
    return host


class FlussServer:
    """The whole embedded cluster in this event loop. ``await start()``, ``await stop()``."""

    def __init__(self, data_dir: str, listen: str = "127.0.0.1:9123", sasl_listen: Optional[str] = None,
                 sasl_users: Optional[dict] = None, tablet_servers: int = 1,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S, auto_partition_interval: float = 5.0,
                 log_flush_interval_messages: Optional[int] = None, settings: Optional[Settings] = None,
                 remote_dir: Optional[str] = None):
        if tablet_servers < 1:
            raise ValueError(f"tablet_servers must be >= 1, got {tablet_servers}")
        self.data_dir = os.path.abspath(os.path.expanduser(data_dir))
        self.num_tablet_servers = int(tablet_servers)
        self.listen = _split_host_port(listen, "--listen")
        self.sasl_listen = _split_host_port(sasl_listen, "--sasl-listen") if sasl_listen else None
        self.authenticator = PlainAuthenticator(dict(sasl_users or {})) if self.sasl_listen else None
        self.idle_timeout = float(idle_timeout)
        self.auto_partition_interval = float(auto_partition_interval)
        self.shutdown_grace = 2.0
        self.catalog: Optional[Catalog] = None
        self.settings = settings if settings is not None else Settings()
        self.remote_dir = remote_dir
        self.replicas: Optional[ReplicaManager] = None
        self.tablet_service: Optional[TabletService] = None
        self.coordinator = None
        self._listeners: dict[str, list[_Listener]] = {}
        self._connections: set = set()
        self.frame_pool = FramePool()
        self._background: list = []
        self._started = False
        self._dir_lock = None
        self.flush_policy = FlushPolicy(log_flush_interval_messages)

    # -- topology ------------------------------------------------------------------------------
    def leader_of(self, table_id: int, partition_id: Optional[int], bucket: int) -> int:
        base = partition_id if partition_id is not None else table_id
        return (base + bucket) % self.num_tablet_servers

    def replicas_of(self, table_id: int, partition_id: Optional[int], bucket: int, replication_factor: int) -> list:
        leader = self.leader_of(table_id, partition_id, bucket)
        n = self.num_tablet_servers
        return [(leader + k) % n for k in range(max(1, min(replication_factor, n)))]

    def coordinator_node(self, listener_name: str) -> tuple[int, str, int]:
        lst = self._listeners[listener_name][0]
        return 0, _advertised_host(lst.host), lst.port

    def tablet_nodes(self, listener_name: str) -> list:
        return [(lst.node_id, _advertised_host(lst.host), lst.port) for lst in self._listeners[listener_name][1:]]

    @property
    def bootstrap_servers(self) -> str:
        _, host, port = self.coordinator_node(PLAINTEXT_LISTENER)
        return f"{host}:{port}"

    @property
    def sasl_bootstrap_servers(self) -> Optional[str]:
        if SASL_LISTENER not in self._listeners:
            return None
        _, host, port = self.coordinator_node(SASL_LISTENER)
        return f"{host}:{port}"

    # -- life cycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        from .coordinator import Coordinator

        os.makedirs(self.data_dir, exist_ok=True)
        if self._dir_lock is None:
            lock = DataDirLock(self.data_dir)
            lock.acquire()  # before anything reads the directory another server may be writing
            self._dir_lock = lock
        self.catalog = Catalog(os.path.join(self.data_dir, "catalog"))
        self.replicas = ReplicaManager(self.catalog, self.data_dir, self.settings, self.flush_policy, self.remote_dir)
        self.replicas.recover(self._is_live)
        self.tablet_service = TabletService(self, self.replicas)
        self.replicas.start()
        self.coordinator = Coordinator(self, self.replicas)
        coord_handlers = self.coordinator.handlers()
        tablet_handlers = dict(coord_handlers)
        tablet_handlers.update(self.tablet_service.handlers())
        try:
            await self._open_family(PLAINTEXT_LISTENER, self.listen, coord_handlers, tablet_handlers)
            if self.sasl_listen:
                await self._open_family(SASL_LISTENER, self.sasl_listen, coord_handlers, tablet_handlers)
        except BaseException:
            await self._close_listeners()
            raise
        await self.coordinator.start()
        loop = asyncio.get_running_loop()
        self._background.append(loop.create_task(self._idle_sweeper()))
        self._started = True

    def _is_live(self, table_id: int, partition_id: Optional[int]) -> bool:
        entry = self.catalog.table_by_id(table_id)
        if entry is None:
            return False
        return partition_id is None or partition_id in entry.partitions

    async def _open_family(self, name, addr, coord_handlers, tablet_handlers) -> None:
        host, port = addr
        listeners = []
        self._listeners[name] = listeners
        coord = _Listener(self, name, COORDINATOR, None, host, port)
        coord.build(coord_handlers)
        await self._bind(coord, exact=True)
        listeners.append(coord)
        for k in range(self.num_tablet_servers):
            want = 0 if port == 0 else port + 1 + k
            lst = _Listener(self, name, TABLET_SERVER, k, host, want)
            lst.build(tablet_handlers)
            await self._bind(lst, exact=False)
            listeners.append(lst)

    async def _bind(self, lst: _Listener, exact: bool) -> None:
        loop = asyncio.get_running_loop()
        if lst.port == 0 and lst.host not in ("0.0.0.0", "::", ""):
            # A name with several addresses would get a different free port per address; pick one.
            infos = await loop.getaddrinfo(lst.host, 0, type=socket.SOCK_STREAM)
            infos.sort(key=lambda i: i[0] != socket.AF_INET)
            if infos:
                lst.host = infos[0][4][0]
        try:
            srv = await loop.create_server(lambda: _Connection(lst), lst.host, lst.port, reuse_address=True,
                                           backlog=1024)
        except OSError as e:
            if exact or lst.port == 0 or e.errno != errno.EADDRINUSE:
                raise
            # A tablet port next to the coordinator's may be taken (e.g. a restart on a fixed
            # coordinator port whose first run used free ports); clients learn ports from metadata.
            log.warning("port %d for %s is in use; using a free port", lst.port, lst.role_name)
            srv = await loop.create_server(lambda: _Connection(lst), lst.host, 0, reuse_address=True, backlog=1024)
        lst.aio_server = srv
        lst.port = srv.sockets[0].getsockname()[1]

    async def _idle_sweeper(self) -> None:
        period = max(0.05, min(30.0, self.idle_timeout / 4))
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(period)
            deadline = loop.time() - self.idle_timeout
            for conn in list(self._connections):
                if not conn._tasks and conn.last_active < deadline:
                    log.info("closing idle connection from %s", conn._ctx.peer if conn._ctx else "?")
                    conn.close()

    async def _close_listeners(self) -> None:
        for listeners in self._listeners.values():
            for lst in listeners:
                if lst.aio_server is not None:
                    lst.aio_server.close()
        for listeners in self._listeners.values():
            for lst in listeners:
                if lst.aio_server is not None:
                    try:
                        await asyncio.wait_for(lst.aio_server.wait_closed(), 0.5)
                    except (asyncio.TimeoutError, Exception):  # noqa: BLE001
                        pass

    async def stop(self) -> None:
        for t in self._background:
            t.cancel()
        for t in self._background:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
        self._background.clear()
        await self._close_listeners()
        # Let requests in flight finish (a produce must not see its log closed under it), then cut.
        for conn in list(self._connections):
            try:
                conn._transport.pause_reading()
            except (RuntimeError, AttributeError):
                pass
        pending = [t for conn in list(self._connections) for t in conn._tasks]
        if pending:
            done, still = await asyncio.wait(pending, timeout=self.shutdown_grace)
            for t in still:
                t.cancel()
            if still:
                await asyncio.wait(still, timeout=1.0)
        for conn in list(self._connections):
            conn.close()
        if self.coordinator is not None:
            await self.coordinator.stop()
        if self.replicas is not None:
            self.replicas.close()
        if self.catalog is not None:
            try:
                self.catalog.close()
            except OSError as e:
                # every acknowledged change was committed when it was made; only the last copy failed
                log.error("could not write the catalog on shutdown: %s", e)
        if self._dir_lock is not None:
            self._dir_lock.release()
            self._dir_lock = None
        self._started = False

    def ready_line(self) -> str:
        line = f"READY bootstrap.servers={self.bootstrap_servers}"
        if self.sasl_bootstrap_servers:
            line += f" sasl.bootstrap.servers={self.sasl_bootstrap_servers}"
        return line


class LocalServer:
    """An embedded server for tests and notebooks.

    ``async with LocalServer() as srv`` runs it in the current event loop; ``with LocalServer() as srv``
    runs it on a background thread with its own (uv)loop. ``data_dir=None`` uses a fresh temporary
    directory that is removed on exit.
    """

    def __init__(self, data_dir: Optional[str] = None, listen: str = "127.0.0.1:0", sasl_listen: Optional[str] = None,
                 sasl_users: Optional[dict] = None, tablet_servers: int = 1, **options):
        self._own_dir = data_dir is None
        self._data_dir = data_dir
        self._args = dict(listen=listen, sasl_listen=sasl_listen, sasl_users=sasl_users,
                          tablet_servers=tablet_servers, **options)
        if sasl_users and not sasl_listen:
            self._args["sasl_listen"] = "127.0.0.1:0"
        self.server: Optional[FlussServer] = None
        self._thread: Optional[threading.Thread] = None
        self._thread_loop: Optional[asyncio.AbstractEventLoop] = None

    @property
    def data_dir(self) -> Optional[str]:
        return self._data_dir

    @property
    def bootstrap_servers(self) -> str:
        return self.server.bootstrap_servers

    @property
    def sasl_bootstrap_servers(self) -> Optional[str]:
        return self.server.sasl_bootstrap_servers

    async def start(self) -> "LocalServer":
        if self._data_dir is None:
            self._data_dir = tempfile.mkdtemp(prefix="fluss-fast-server-")
        self.server = FlussServer(self._data_dir, **self._args)
        await self.server.start()
        return self

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
        if self._own_dir and self._data_dir:
            shutil.rmtree(self._data_dir, ignore_errors=True)
            self._data_dir = None

    async def __aenter__(self) -> "LocalServer":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    def __enter__(self) -> "LocalServer":
        started = threading.Event()
        failure: list = []
        # Made here, not in the thread, so a bad FLUSS_FAST_EVENT_LOOP raises to the caller.
        loop = new_event_loop()

        def run():
            self._thread_loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                failure.append(e)
                started.set()
                loop.close()
                return
            started.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.stop())
                loop.close()

        self._thread = threading.Thread(target=run, name="fluss-fast-server", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            raise failure[0]
        return self

    def __exit__(self, *exc) -> None:
        if self._thread_loop is not None and self._thread is not None:
            self._thread_loop.call_soon_threadsafe(self._thread_loop.stop)
            self._thread.join(30)
            self._thread = None
