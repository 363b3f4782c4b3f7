"""A Fluss-protocol-aware TCP fault proxy for the fault suite.

Clients bootstrap through the proxy; it reads whole frames in both directions, and in every
GET_METADATA answer it replaces the coordinator and tablet server addresses with listeners of its
own, so tablet traffic passes through it too. Tests then inject faults per upstream server:
drop (FIN), reset (RST), cut the next answer mid-frame, delay every frame, freeze connections (held
open, nothing forwarded, as a frozen host or a half-open socket), and refuse a server entirely (its
listener closed, as when that server's process dies).

The proxy runs its own asyncio loop on a daemon thread; every control method is blocking and
thread-safe.
"""
from __future__ import annotations

import asyncio
import socket
import struct
import threading

from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc import frame as F
from fluss_fast.rpc.api import Api

COORDINATOR = "coordinator"


def _split(addr: str):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def _rst(writer) -> None:
    """Close with a TCP reset instead of a FIN (SO_LINGER 0)."""
    sock = writer.get_extra_info("socket")
    try:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


class _Route:
    """One upstream server and the proxy listener standing in for it."""

    def __init__(self, proxy, upstream: tuple, key):
        self.proxy = proxy
        self.upstream = upstream
        self.key = key  # COORDINATOR or a tablet node id
        self.server: asyncio.AbstractServer | None = None
        self.port = 0
        self.links: set = set()
        self.delay = 0.0
        self.freeze_new = False
        self.refused = False

    async def listen(self):
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", self.port, reuse_address=True)
        self.port = self.server.sockets[0].getsockname()[1]

    async def close_listener(self):
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None

    async def _accept(self, reader, writer):
        link = _Link(self, reader, writer)
        self.links.add(link)
        self.proxy.links_opened += 1
        try:
            await link.run()
        except asyncio.CancelledError:
            pass  # the proxy is closing; asyncio's stream callback would log a cancelled task
        finally:
            self.links.discard(link)


class _Link:
    def __init__(self, route: _Route, creader, cwriter):
        self.route = route
        self.creader, self.cwriter = creader, cwriter
        self.uwriter = None
        self.frozen = asyncio.Event()  # set = flowing
        if not route.freeze_new:
            self.frozen.set()
        self.cut_next = False
        self.metadata_rids: set = set()
        self.tasks = []

    async def run(self):
        proxy = self.route.proxy
        try:
            ureader, self.uwriter = await asyncio.open_connection(*self.route.upstream)
        except OSError:
            _rst(self.cwriter)
            return
        self.tasks = [asyncio.ensure_future(self._pump(self.creader, self.uwriter, True)),
                      asyncio.ensure_future(self._pump(ureader, self.cwriter, False))]
        try:
            await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in self.tasks:
                t.cancel()
            for w in (self.cwriter, self.uwriter):
                if not w.transport.is_closing():
                    w.close()
            proxy.links_closed += 1

    async def _pump(self, reader, writer, to_server: bool):
        proxy = self.route.proxy
        try:
            while True:
                head = await reader.readexactly(4)
                (length,) = F.LENGTH.unpack(head)
                body = await reader.readexactly(length) if length > 0 else b""
                await self.frozen.wait()
                if self.route.delay:
                    await asyncio.sleep(self.route.delay)
                if to_server:
                    if length >= F.REQUEST_HEADER_SIZE:
                        api_key, _, rid = F.request_header(body)
                        if api_key == Api.GET_METADATA:
                            self.metadata_rids.add(rid)
                else:
                    if length >= F.RESPONSE_HEADER_SIZE:
                        kind, rid = F.response_kind_and_id(body)
                        if kind == F.SUCCESS_RESPONSE and rid in self.metadata_rids:
                            self.metadata_rids.discard(rid)
                            rewritten = await proxy.rewrite_metadata(body[F.RESPONSE_HEADER_SIZE:])
                            body = body[:F.RESPONSE_HEADER_SIZE] + rewritten
                            head = F.LENGTH.pack(len(body))
                    if self.cut_next:
                        # half a frame, then the connection is gone: the reader must not hang or misparse
                        data = head + body
                        writer.write(data[:max(1, len(data) // 2)])
                        await writer.drain()
                        _rst(writer)
                        _rst(self.uwriter)
                        proxy.cuts += 1
                        return
                writer.write(head + body)
                await writer.drain()
                proxy.frames += 1
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return


class FaultProxy:
    def __init__(self, upstream: str):
        self._upstream = _split(upstream)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._routes: dict = {}  # upstream (host, port) -> _Route
        self._by_key: dict = {}
        self.links_opened = 0
        self.links_closed = 0
        self.frames = 0
        self.cuts = 0

    # -- life cycle ----------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        self._thread.start()
        self._call(self._route(self._upstream, COORDINATOR))
        return self

    def close(self) -> None:
        async def shut():
            for r in list(self._routes.values()):
                await r.close_listener()
                for link in list(r.links):
                    _rst(link.cwriter)
                    if link.uwriter is not None:
                        _rst(link.uwriter)
            me = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not me]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)
        try:
            self._call(shut())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            if not self._thread.is_alive():
                self._loop.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self._by_key[COORDINATOR].port}"

    def tablet_nodes(self) -> list:
        """Node ids of the tablet servers seen in metadata answers so far."""
        return sorted(k for k in self._by_key if k != COORDINATOR)

    def _call(self, coro, timeout=30):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _route(self, upstream: tuple, key) -> _Route:
        r = self._routes.get(upstream)
        if r is None:
            r = _Route(self, upstream, key)
            self._routes[upstream] = r
            self._by_key[key] = r
            await r.listen()
        return r

    async def rewrite_metadata(self, body) -> bytes:
        """A MetadataResponse body with every server's address replaced by its route through the proxy."""
        resp = pb.MetadataResponse()
        resp.ParseFromString(bytes(body))
        if resp.HasField("coordinator_server"):
            n = resp.coordinator_server
            r = await self._route((n.host, n.port), COORDINATOR)
            n.host, n.port = "127.0.0.1", r.port
        for n in resp.tablet_servers:
            r = await self._route((n.host, n.port), n.node_id)
            n.host, n.port = "127.0.0.1", r.port
        return resp.SerializeToString()

    def _routes_for(self, node):
        if node is None:
            return list(self._routes.values())
        return [self._by_key[node]]

    # -- faults ----------------------------------------------------------------------------------
    def _each_link(self, node, fn):
        async def go():
            n = 0
            for r in self._routes_for(node):
                for link in list(r.links):
                    fn(link)
                    n += 1
            return n
        return self._call(go())

    def drop(self, node=None) -> int:
        """Close every current connection (FIN on both sides); returns how many."""
        def f(link):
            link.cwriter.close()
            if link.uwriter is not None:
                link.uwriter.close()
        return self._each_link(node, f)

    def reset(self, node=None) -> int:
        """Reset every current connection (RST on both sides)."""
        def f(link):
            _rst(link.cwriter)
            if link.uwriter is not None:
                _rst(link.uwriter)
        return self._each_link(node, f)

    def cut_next_answer(self, node=None, on: bool = True) -> int:
        """The next answer on every current connection stops mid-frame and the connection resets
        (``on=False`` disarms what has not fired yet)."""
        def f(link):
            link.cut_next = on
        return self._each_link(node, f)

    def delay(self, seconds: float, node=None) -> None:
        """Hold every frame this long before forwarding it (0 clears)."""
        async def go():
            for r in self._routes_for(node):
                r.delay = seconds
        self._call(go())

    def freeze(self, node=None, new_connections=False) -> int:
        """Stop forwarding on current connections, keeping them open (the peer looks alive and
        never answers); with ``new_connections`` later connections are frozen too."""
        async def go():
            n = 0
            for r in self._routes_for(node):
                r.freeze_new = new_connections
                for link in list(r.links):
                    link.frozen.clear()
                    n += 1
            return n
        return self._call(go())

    def thaw(self, node=None) -> None:
        """Frozen connections forward again (the frozen host came back)."""
        async def go():
            for r in self._routes_for(node):
                r.freeze_new = False
                for link in list(r.links):
                    link.frozen.set()
        self._call(go())

    def refuse(self, node) -> None:
        """That server dies for the client: its listener is closed (connections are refused) and
        every current connection is reset."""
        async def go():
            r = self._by_key[node]
            r.refused = True
            await r.close_listener()
            for link in list(r.links):
                _rst(link.cwriter)
                if link.uwriter is not None:
                    _rst(link.uwriter)
        self._call(go())

    def revive(self, node) -> None:
        """The refused server listens again, on the same port."""
        async def go():
            r = self._by_key[node]
            r.refused = False
            await r.listen()
        self._call(go())
