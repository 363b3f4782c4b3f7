"""The embedded Fluss-protocol server (coordinator + tablet servers in one asyncio process)."""
from .app import FlussServer
from .local import LocalServer
from .process import ServerProcess
from .protocol import RawBody, RequestContext

__all__ = ["FlussServer", "LocalServer", "RawBody", "RequestContext", "ServerProcess"]
