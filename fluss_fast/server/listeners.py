"""What each listening socket of the embedded server is: its family (plaintext or SASL), role
(coordinator or tablet server k), address and the dispatch table its connections use."""
from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING

from ..error_codes import Errors
from ..errors import FlussError
from ..rpc import api as _api
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import API_KEYS, COORDINATOR, Api
from .protocol import Handler, HandlerEntry, RawParsed

if TYPE_CHECKING:
    from .app import FlussServer

PLAINTEXT_LISTENER = "PLAINTEXT"
SASL_LISTENER = "SASL"


def _not_implemented(key) -> Handler:
    async def handler(ctx, version, request):
        # the code a Java client gets for an API its server lacks: the caller learns at once, by name
        raise FlussError(f"API {key.name} ({key.id}) is not supported by the fluss-fast embedded server",
                         Errors.UNSUPPORTED_VERSION)

    return handler


class Listener:
    """What one listening socket is: its role, node id, family (plaintext/SASL) and dispatch table."""

    def __init__(self, server: FlussServer, name: str, role: int, node_id: int | None, host: str, port: int):
        self.server = server
        self.name = name
        self.role = role
        self.node_id = node_id
        self.host = host
        self.port = port
        self.sasl = name == SASL_LISTENER
        self.dispatch: dict[int, tuple] = {}
        self.api_versions_body = b""
        self.aio_server: asyncio.AbstractServer | None = None

    @property
    def role_name(self) -> str:
        return "coordinator" if self.role == COORDINATOR else f"tablet server {self.node_id}"

    def build(self, handlers: dict[int, HandlerEntry]) -> None:
        versions = pb.ApiVersionsResponse(server_type=self.role)
        for key in API_KEYS.values():
            if not (key.coordinator if self.role == COORDINATOR else key.tablet):
                continue
            versions.api_versions.add(api_key=key.id, min_version=key.min_version, max_version=key.max_version)
            if key.id in (Api.API_VERSIONS, Api.AUTHENTICATE):
                continue  # answered inside the protocol
            entry = handlers.get(key.id) or _not_implemented(key)
            coordinator = self.server.coordinator
            if coordinator is not None:  # ACL checks in front of the handler (a no-op when ACLs are off)
                entry = coordinator.authorizer.guard(key.id, entry)
            if isinstance(entry, RawParsed):
                handler, raw_parser = entry.handler, entry.parse
            else:
                handler, raw_parser = entry, None
            self.dispatch[key.id] = (handler, _api.request_class(key.id), key.name, raw_parser)
        self.api_versions_body = versions.SerializeToString()


def split_host_port(spec: str, what: str) -> tuple[str, int]:
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


def advertised_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return socket.gethostname()
    return host
