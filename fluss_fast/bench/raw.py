"""A bare Fluss RPC client for the benchmarks: the ceiling scenarios replay requests over it and the
scenarios ask a cluster which APIs its tablet servers offer."""
from __future__ import annotations

import asyncio
import socket

from ..error_codes import default_message
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc import frame
from ..rpc.api import Api


class RawConnection:
    """A bare Fluss RPC socket: length-prefixed frames, request ids, nothing else.

    Responses are read with ``sock_recv_into`` straight into one buffer per frame (no stream buffer
    in between), so the copy count is what a careful client could reach.
    """

    def __init__(self, sock: socket.socket, where: str) -> None:
        self.sock = sock
        self.where = where
        self.loop = asyncio.get_running_loop()
        self._next_id = 0
        self._head = bytearray(4)
        self.bytes_out = 0
        self.bytes_in = 0

    api_versions: dict[int, tuple[int, int]]

    @classmethod
    async def open(cls, host: str, port: int) -> RawConnection:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await loop.sock_connect(sock, (host, port))
        except OSError as exc:
            sock.close()
            raise FlussError(f"cannot connect to {host}:{port}: {exc}", 1) from None
        conn = cls(sock, f"{host}:{port}")
        req = pb.ApiVersionsRequest(client_software_name="fluss-fast-bench", client_software_version="0.1.0")
        resp = await conn.call(Api.API_VERSIONS, req, pb.ApiVersionsResponse)
        conn.api_versions = {v.api_key: (v.min_version, v.max_version) for v in resp.api_versions}
        return conn

    async def send(self, api_key: int, body, version: int = 0) -> int:
        rid = self._next_id
        self._next_id += 1
        head = frame.REQUEST_HEADER.pack(frame.REQUEST_HEADER_SIZE + len(body), api_key, version, rid)
        await self.loop.sock_sendall(self.sock, head)
        await self.loop.sock_sendall(self.sock, body)
        self.bytes_out += len(head) + len(body)
        return rid

    async def _fill(self, view: memoryview) -> None:
        got, n = 0, len(view)
        while got < n:
            k = await self.loop.sock_recv_into(self.sock, view[got:])
            if k == 0:
                raise FlussError(f"{self.where}: connection closed by the server", 1)
            got += k

    async def receive(self) -> tuple[int, memoryview]:
        """(request_id, body) of the next success response; FlussError for error responses."""
        await self._fill(memoryview(self._head))
        (length,) = frame.LENGTH.unpack(self._head)
        data = bytearray(length)
        await self._fill(memoryview(data))
        self.bytes_in += 4 + length
        kind, rid = frame.response_kind_and_id(data)
        if kind != frame.SUCCESS_RESPONSE:
            off = 1 if kind == frame.SERVER_FAILURE else 5
            err = pb.ErrorResponse.FromString(bytes(data[off:]))
            raise FlussError(f"{self.where}: request {rid} failed: "
                             f"{err.error_message or default_message(err.error_code)}", err.error_code)
        return rid, memoryview(data)[frame.RESPONSE_HEADER_SIZE:]

    async def call(self, api_key: int, request, response_cls):
        rid = await self.send(api_key, request.SerializeToString())
        got, body = await self.receive()
        if got != rid:
            raise FlussError(f"{self.where}: response for request {got}, expected {rid}")
        return response_cls.FromString(body)

    def close(self) -> None:
        self.sock.close()


def split_address(addr: str) -> tuple[str, int]:
    host, port = addr.split(",")[0].strip().rsplit(":", 1)
    return host, int(port)


async def tablet_apis(bootstrap: str) -> dict[int, tuple[int, int]]:
    """The API keys (with version ranges) a tablet server of this cluster announces."""
    conn = await RawConnection.open(*split_address(bootstrap))
    try:
        md = await conn.call(Api.GET_METADATA, pb.MetadataRequest(), pb.MetadataResponse)
    finally:
        conn.close()
    if not md.tablet_servers:
        raise FlussError(f"cluster at {bootstrap} reports no tablet servers")
    node = md.tablet_servers[0]
    tablet = await RawConnection.open(node.host, node.port)
    tablet.close()
    return tablet.api_versions
