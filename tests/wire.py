"""A deliberately tiny blocking Fluss wire client for server tests: raw frames over a real socket,
so the tests check the bytes the server sends and not what some client library makes of them."""
from __future__ import annotations

import socket
import struct

from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc import frame as F
from fluss_fast.rpc.api import Api, response_class


class WireError(Exception):
    def __init__(self, code: int, message: str, kind: int = F.ERROR_RESPONSE):
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.kind = kind


class Closed(Exception):
    pass


def split_address(addr: str) -> tuple[str, int]:
    host, port = addr.rsplit(":", 1)
    return host, int(port)


class WireClient:
    def __init__(self, address: str, timeout: float = 10.0, handshake: bool = True):
        self.sock = socket.create_connection(split_address(address), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_id = 0
        self._rbuf = b""
        self.server_type = None
        if handshake:
            versions = self.call(Api.API_VERSIONS, pb.ApiVersionsRequest(client_software_name="wire-test",
                                                                          client_software_version="0"))
            self.server_type = versions.server_type if versions.HasField("server_type") else None
            self.api_versions = {v.api_key: (v.min_version, v.max_version) for v in versions.api_versions}

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- sending -------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, api_key: int, message, version: int = 0, request_id: int | None = None) -> int:
        if request_id is None:
            request_id = self._next_id
            self._next_id += 1
        body = message if isinstance(message, (bytes, bytearray)) else message.SerializeToString()
        self.sock.sendall(F.encode_request(api_key, version, request_id, bytes(body)))
        return request_id

    # -- receiving -----------------------------------------------------------------------------
    def _read_exact(self, n: int) -> bytes:
        while len(self._rbuf) < n:
            chunk = self.sock.recv(max(65536, n - len(self._rbuf)))
            if not chunk:
                raise Closed("server closed the connection")
            self._rbuf += chunk
        out, self._rbuf = self._rbuf[:n], self._rbuf[n:]
        return out

    def recv_frame(self) -> bytes:
        (length,) = struct.unpack(">i", self._read_exact(4))
        return self._read_exact(length)

    def recv(self) -> tuple[int, int, bytes]:
        """(kind, request_id, body); request_id is -1 for SERVER_FAILURE frames."""
        frame = self.recv_frame()
        kind = frame[0]
        if kind == F.SERVER_FAILURE:
            return kind, -1, frame[1:]
        return kind, struct.unpack(">i", frame[1:5])[0], frame[5:]

    def result(self, api_key: int, kind: int, body: bytes):
        if kind == F.SUCCESS_RESPONSE:
            msg = response_class(api_key)()
            msg.ParseFromString(body)
            return msg
        err = pb.ErrorResponse()
        err.ParseFromString(body)
        raise WireError(err.error_code, err.error_message, kind)

    def call(self, api_key: int, message, version: int = 0):
        rid = self.send(api_key, message, version)
        kind, got, body = self.recv()
        if kind != F.SERVER_FAILURE:
            assert got == rid, f"expected response to request {rid}, got {got}"
        return self.result(api_key, kind, body)

    def authenticate(self, user: str, password: str, mechanism: str = "PLAIN", authzid: str = ""):
        token = f"{authzid}\x00{user}\x00{password}".encode()
        return self.call(Api.AUTHENTICATE, pb.AuthenticateRequest(protocol=mechanism, token=token))

    def wait_closed(self, timeout: float = 5.0) -> bool:
        """True once the server has closed the socket (all pending bytes are drained first)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except TimeoutError:
            return False
        except OSError:
            return True


def table_path(db: str, table: str) -> pb.PbTablePath:
    return pb.PbTablePath(database_name=db, table_name=table)


def spec(**kv) -> pb.PbPartitionSpec:
    s = pb.PbPartitionSpec()
    for k, v in kv.items():
        s.partition_key_values.add(key=k, value=v)
    return s
