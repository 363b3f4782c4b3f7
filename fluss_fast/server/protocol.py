"""The embedded server's connection protocol: framing, dispatch, SASL state, bad-input handling.

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
import contextlib
import logging
import socket
import struct
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from google.protobuf.message import DecodeError, EncodeError

from ..codec.errors import CorruptBatchError
from ..error_codes import Errors
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc import frame as _frame
from ..rpc.api import API_KEYS, Api
from .auth import PLAINTEXT
from .utf8 import repair_strings

if TYPE_CHECKING:
    from .listeners import Listener

log = logging.getLogger("fluss_fast.server")

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
        """Whether the request came in on the coordinator's listener (not a tablet server's)."""
        return self.node_id is None


Handler = Callable[[RequestContext, int, Any], Any]
# ``parse(body) -> request | None``: a request straight from the frame bytes, None meaning "let
# protobuf do it"
RawParser = Callable[[Any], Any | None]


class RawParsed(NamedTuple):
    """A handler that parses its own request from the frame bytes, e.g. to keep record payloads as
    views of the buffer the kernel wrote them into instead of protobuf's copies."""

    handler: Handler
    parse: RawParser


HandlerEntry = Handler | RawParsed


class ServerConnection(asyncio.BufferedProtocol):
    """One client connection: frames in, dispatch, responses out (see the module docstring)."""


    __slots__ = ("_listener", "_server", "_dispatch", "_transport", "_buf", "_view", "_start", "_end",
                 "_big", "_big_view", "_big_fill", "_big_len", "_tasks", "_closed", "_authenticated", "_ctx",
                 "_write_paused", "_read_paused", "last_active", "_loop", "_held", "__weakref__")

    def __init__(self, listener: Listener):
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
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
        self._transport.write(_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body),
                                         _frame.ERROR_RESPONSE, request_id) + body)

    def _handle_frame(self, frame, private: bool):
        """``frame``: the request header and body. ``private``: it lives in a buffer of its own (else in
        the ring buffer, which the next read overwrites)."""
        api_key, version, request_id = _unpack_req(frame, 0)
        entry = self._dispatch.get(api_key)
        if not self._authenticated and api_key != Api.API_VERSIONS and api_key != Api.AUTHENTICATE:
            self._write_error(request_id, Errors.AUTHENTICATE_EXCEPTION,
                              "The connection has not completed authentication yet. This may be caused by "
                              "a missing or incorrect configuration of 'client.security.protocol' on the "
                              "client side.")
            return
        if entry is None:
            if api_key == Api.API_VERSIONS:
                body = self._listener.api_versions_body
                self._transport.write(_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body),
                                                 _frame.SUCCESS_RESPONSE, request_id) + body)
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
                self._transport.writelines([_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(response),
                                                       _frame.SUCCESS_RESPONSE, request_id), response])
            elif isinstance(response, RawBody):
                size = 0
                for chunk in response:
                    size += len(chunk)
                self._transport.writelines([_pack_resp(_frame.RESPONSE_HEADER_SIZE + size,
                                                       _frame.SUCCESS_RESPONSE, request_id), *response])
            else:
                body = response.SerializeToString()
                if len(body) > 65536:
                    self._transport.writelines([_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body),
                                                           _frame.SUCCESS_RESPONSE, request_id), body])
                else:
                    self._transport.write(_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body),
                                                     _frame.SUCCESS_RESPONSE, request_id) + body)
        except FlussError as e:
            self._write_error(request_id, e.error_code, e.message)
        except asyncio.CancelledError:
            raise
        except OSError as e:
            # disk full, read-only or vanished files: an answer the client can act on, not a bug
            where = f" ({e.filename})" if e.filename else ""
            msg = f"{name} failed: storage error: {e.strerror or e}{where}"
            log.warning("%s", msg)
            self._write_error(request_id, Errors.STORAGE_EXCEPTION, msg)
        except EncodeError as e:
            log.error("%s handler built an incomplete response: %s", name, e)
            self._write_error(request_id, Errors.UNKNOWN_SERVER_ERROR,
                              f"Internal error: the {name} response is incomplete: {e}")
        except CorruptBatchError as e:  # a codec found the request's bytes malformed
            self._write_error(request_id, e.error_code, str(e) or type(e).__name__)
        except Exception as e:  # noqa: BLE001 - any handler bug must become an answer, not silence
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
                                  f"Authenticate protocol not match: protocol of server is '{PLAINTEXT}' "
                                  f"while protocol of client is '{mechanism}'")
                return
            self._write_ok(request_id, b"")
            return
        if authenticator is None or not authenticator.accepts(mechanism):
            self._write_error(request_id, Errors.AUTHENTICATE_EXCEPTION,
                              "Authenticate protocol not match: protocol of server is 'PLAIN' "
                              f"while protocol of client is '{mechanism}'")
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
            self._transport.write(_pack_resp(_frame.RESPONSE_HEADER_SIZE + len(body),
                                             _frame.SUCCESS_RESPONSE, request_id) + body)

    def close(self):
        if not self._closed and self._transport is not None:
            self._closed = True
            self._transport.close()
