"""The client runtime and rpc.Connection: pipelining, timeouts, failures, threads, event loops, fork.

Protocol corner cases (silence, out-of-order answers, SERVER_FAILURE, resets) are driven by a small
scripted peer speaking the real frame format over a real socket; everything else runs against the
embedded server.
"""
from __future__ import annotations

import asyncio
import gc
import multiprocessing
import socket
import struct
import threading
import time

import pytest

import fluss_fast
import fluss_fast.rpc.fluss_api_pb2 as pb
from fluss_fast import ErrorCode, FlussError
from fluss_fast.client.runtime import Runtime, get_runtime, on_runtime
from fluss_fast.rpc import frame
from fluss_fast.rpc.api import API_KEYS, Api, request_class
from fluss_fast.rpc.connection import Connection

from client_util import run_threads


class Peer:
    """A scripted server: ``handler(api_key, rid, request, writer)`` returns frames to send (or None)."""

    def __init__(self, handler=None, server_type=1, apis=None, port=None):
        self.handler = handler or (lambda *a: None)
        self.server_type = server_type
        self.apis = apis
        self.writers = []
        self.tasks = []
        self.received = []
        self.port = port

    async def start(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port or 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def metadata_response(self):
        resp = pb.MetadataResponse()
        c = resp.coordinator_server
        c.node_id, c.host, c.port = 0, "127.0.0.1", self.port
        t = resp.tablet_servers.add()
        t.node_id, t.host, t.port = 0, "127.0.0.1", self.port
        return resp

    async def _serve(self, reader, writer):
        self.writers.append(writer)
        self.tasks.append(asyncio.current_task())
        try:
            while True:
                n = struct.unpack(">i", await reader.readexactly(4))[0]
                body = await reader.readexactly(n)
                key, _ver, rid = struct.unpack_from(">hhi", body)
                req = request_class(key)()
                req.ParseFromString(body[8:])
                self.received.append(key)
                if key == Api.API_VERSIONS:
                    resp = pb.ApiVersionsResponse()
                    if self.server_type is not None:
                        resp.server_type = self.server_type
                    for k in (self.apis if self.apis is not None else API_KEYS):
                        v = resp.api_versions.add()
                        v.api_key, v.min_version, v.max_version = k, 0, API_KEYS[k].max_version
                    writer.write(frame.encode_response(rid, resp.SerializeToString()))
                    continue
                out = self.handler(key, rid, req, writer)
                if asyncio.iscoroutine(out):
                    out = await out
                if out is None and key == Api.GET_METADATA:
                    out = [frame.encode_response(rid, self.metadata_response().SerializeToString())]
                for f in out or ():
                    writer.write(f)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass

    def reset_all(self):
        for w in self.writers:
            sock = w.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            w.transport.abort()

    async def close(self):
        self.server.close()
        for w in self.writers:
            w.close()
        # Each handler sees its socket closed and returns; left running, it would be cancelled with the
        # test's loop and its socket collected unclosed.
        await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), 5)
        await self.server.wait_closed()


def ok(rid, msg):
    return frame.encode_response(rid, msg.SerializeToString())


def dbs(*names):
    return pb.ListDatabasesResponse(database_name=list(names))


async def on_rt(coro):
    """Connections live on the runtime loop; run a test body there."""
    return await get_runtime().run(coro)


# -- rpc.Connection ------------------------------------------------------------------------------------

async def test_pipelined_requests_answered_out_of_order():
    held = []

    def handler(key, rid, req, writer):
        held.append(rid)
        if len(held) == 50:
            return [ok(r, dbs(f"db{r}")) for r in reversed(held)]  # all at once, newest first
        return None

    peer = await Peer(handler).start()

    async def body():
        conn = await Connection.open("127.0.0.1", peer.port, request_timeout_ms=5000)
        futs = [conn.request(Api.LIST_DATABASES, pb.ListDatabasesRequest()) for _ in range(50)]
        results = await asyncio.gather(*futs)
        conn.close()
        return results

    results = await on_rt(body())
    # The i-th request got id i, and its own answer whatever the order of the frames.
    assert [r.database_name[0] for r in results] == [f"db{i}" for i in range(1, 51)]
    await peer.close()


async def test_request_timeout_when_server_stays_silent():
    peer = await Peer().start()  # answers nothing but the handshake

    async def body():
        conn = await Connection.open("127.0.0.1", peer.port, request_timeout_ms=300)
        t0 = time.monotonic()
        with pytest.raises(FlussError) as info:
            await conn.request(Api.LIST_DATABASES, pb.ListDatabasesRequest())
        elapsed = time.monotonic() - t0
        # a peer that let a request time out is suspect: the connection is closed, the owner reopens
        assert conn.closed
        with pytest.raises(FlussError) as info2:
            await conn.request(Api.LIST_DATABASES, pb.ListDatabasesRequest(), timeout=0.05)
        conn2 = await Connection.open("127.0.0.1", peer.port, request_timeout_ms=300)
        with pytest.raises(FlussError) as info3:
            await conn2.request(Api.LIST_DATABASES, pb.ListDatabasesRequest(), timeout=0.05)
        return info.value, elapsed, info2.value, info3.value

    err, elapsed, err2, err3 = await on_rt(body())
    assert err.error_code == ErrorCode.REQUEST_TIME_OUT and "LIST_DATABASES" in err.message
    assert 0.25 < elapsed < 2.0
    assert err2.error_code == ErrorCode.NETWORK_EXCEPTION and "no answer within 300 ms" in err2.message
    # the message states the timeout that applied, not the connection's default
    assert err3.error_code == ErrorCode.REQUEST_TIME_OUT and "50 ms" in err3.message
    await peer.close()


async def test_handshake_timeout_is_bounded_by_connect_timeout():
    hung_up = asyncio.Event()

    async def mute(reader, writer):
        # Answers nothing; returns once the client, having given up, closes its end.
        await reader.read()
        writer.close()
        hung_up.set()

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(FlussError) as info:
        await on_rt(Connection.open("127.0.0.1", port, connect_timeout_ms=300))
    assert info.value.error_code == ErrorCode.NETWORK_EXCEPTION
    assert time.monotonic() - t0 < 3
    await asyncio.wait_for(hung_up.wait(), 5)  # the client closed its socket when it gave up
    server.close()
    await server.wait_closed()


async def test_refused_connection():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(FlussError) as info:
        await on_rt(Connection.open("127.0.0.1", port))
    assert info.value.error_code == ErrorCode.NETWORK_EXCEPTION
    assert f"127.0.0.1:{port}" in info.value.message
    assert isinstance(info.value.__cause__, OSError)


async def test_unlisted_api_fails_locally():
    peer = await Peer(apis=[Api.API_VERSIONS, Api.GET_METADATA]).start()

    async def body():
        conn = await Connection.open("127.0.0.1", peer.port)
        with pytest.raises(FlussError) as info:
            await conn.request(Api.LIST_DATABASES, pb.ListDatabasesRequest())
        conn.close()
        return info.value

    err = await on_rt(body())
    assert err.error_code == ErrorCode.UNSUPPORTED_VERSION and "LIST_DATABASES" in err.message
    assert Api.LIST_DATABASES not in peer.received
    await peer.close()


async def test_server_type_check():
    peer = await Peer(server_type=2).start()
    with pytest.raises(FlussError, match="expected a coordinator"):
        await on_rt(Connection.open("127.0.0.1", peer.port, expected_server_type=1))
    conn = await on_rt(Connection.open("127.0.0.1", peer.port, expected_server_type=2))
    assert conn.server_type == 2
    conn.close()
    untyped = await Peer(server_type=None).start()
    conn = await on_rt(Connection.open("127.0.0.1", untyped.port, expected_server_type=1))
    assert conn.server_type is None
    conn.close()
    await peer.close()
    await untyped.close()


async def test_server_failure_frame_fails_everything_and_closes():
    def handler(key, rid, req, writer):
        if len([k for k in peer.received if k == Api.LIST_DATABASES]) == 3:
            return [frame.encode_server_failure(-1, "frame too large")]
        return None

    peer = await Peer(handler).start()

    async def body():
        conn = await Connection.open("127.0.0.1", peer.port, request_timeout_ms=10_000)
        futs = [asyncio.ensure_future(conn.request(Api.LIST_DATABASES, pb.ListDatabasesRequest())) for _ in range(3)]
        results = await asyncio.gather(*futs, return_exceptions=True)
        return results, conn.closed

    results, closed = await asyncio.wait_for(on_rt(body()), 5)
    assert all(isinstance(r, FlussError) and r.error_code == -1 and "frame too large" in r.message for r in results)
    assert closed
    await peer.close()


async def test_connection_reset_mid_request_gives_network_error_with_cause():
    got = asyncio.Event()

    def handler(key, rid, req, writer):
        got.set()
        return None

    peer = await Peer(handler).start()

    async def body():
        conn = await Connection.open("127.0.0.1", peer.port, request_timeout_ms=10_000)
        return conn, asyncio.ensure_future(conn.request(Api.LIST_DATABASES, pb.ListDatabasesRequest()))

    conn, fut = await on_rt(body())
    await asyncio.wait_for(got.wait(), 5)
    peer.reset_all()
    with pytest.raises(FlussError) as info:
        done = asyncio.run_coroutine_threadsafe(_await(fut), get_runtime().loop)
        await asyncio.wait_for(asyncio.wrap_future(done), 5)
    assert info.value.error_code == ErrorCode.NETWORK_EXCEPTION
    assert isinstance(info.value.__cause__, OSError)
    assert conn.closed
    await peer.close()


async def _await(fut):
    return await fut


async def test_large_and_fragmented_frames():
    big = bytes(range(256)) * (5 * 4096)  # 5 MiB

    async def handler(key, rid, req, writer):
        if key == Api.FETCH_LOG:
            data = frame.encode_response(rid, big)
            for i in range(0, len(data), 300_000):  # arrives in pieces
                writer.write(data[i:i + 300_000])
                await writer.drain()
                await asyncio.sleep(0.001)
            return None
        # several small frames glued together, then one split across writes
        f = ok(rid, dbs("x" * 10))
        writer.write(f[:3])
        await writer.drain()
        await asyncio.sleep(0.01)
        return [f[3:]]

    peer = await Peer(handler).start()

    async def body():
        conn = await Connection.open("127.0.0.1", peer.port, request_timeout_ms=10_000)
        raw = conn.request_raw(Api.FETCH_LOG, b"")
        smalls = [conn.request(Api.LIST_DATABASES, pb.ListDatabasesRequest()) for _ in range(20)]
        out = await asyncio.gather(raw, *smalls)
        conn.close()
        return out

    out = await on_rt(body())
    assert isinstance(out[0], memoryview) and out[0] == big
    assert all(r.database_name == ["x" * 10] for r in out[1:])
    await peer.close()


async def test_sasl_token_and_failure():
    tokens = []

    def handler(key, rid, req, writer):
        if key == Api.AUTHENTICATE:
            tokens.append((req.protocol, req.token))
            if req.token.endswith(b"good"):
                return [ok(rid, pb.AuthenticateResponse(challenge=b""))]
            return [frame.encode_error_response(rid, 46, "Authentication failed: Invalid username or password")]
        return None

    peer = await Peer(handler).start()
    conn = await on_rt(Connection.open("127.0.0.1", peer.port, sasl=("bob", "good")))
    conn.close()
    with pytest.raises(FlussError) as info:
        await on_rt(Connection.open("127.0.0.1", peer.port, sasl=("bob", "bad")))
    assert info.value.error_code == ErrorCode.AUTHENTICATE_EXCEPTION
    assert tokens == [("PLAIN", b"\0bob\0good"), ("PLAIN", b"\0bob\0bad")]
    await peer.close()


# -- runtime -----------------------------------------------------------------------------------------

class _Thing:
    def __init__(self, rt):
        self._runtime = rt

    @on_runtime
    async def where(self, x):
        return threading.current_thread().name, asyncio.get_running_loop(), x


async def test_on_runtime_runs_the_body_on_the_runtime_thread():
    rt = get_runtime()
    name, loop, x = await _Thing(rt).where(5)
    assert name == "fluss-fast-runtime" and loop is rt.loop and x == 5
    assert _Thing.where.__runtime_impl__.__name__ == "where"
    assert rt.call(_Thing.where.__runtime_impl__(_Thing(rt), 6))[2] == 6


async def test_blocking_call_on_runtime_thread_is_refused():
    rt = get_runtime()

    async def inner():
        coro = asyncio.sleep(0)
        return rt.call(coro)

    with pytest.raises(FlussError, match="runtime thread"):
        await rt.run(inner())


async def test_calls_of_one_caller_turn_start_in_one_runtime_turn():
    # gather() starts every call in one turn of this loop; they must reach the runtime together, so
    # batchers there (lookups) see them as one batch instead of slivers cut by GIL hand-offs
    rt = get_runtime()
    events = []

    async def body(i):
        events.append(("start", i))
        await asyncio.sleep(0)
        events.append(("resume", i))
        return i

    for _ in range(20):
        events.clear()
        assert await asyncio.gather(*(rt.run(body(i)) for i in range(64))) == list(range(64))
        starts = [i for i, (what, _) in enumerate(events) if what == "start"]
        assert starts == list(range(64)), "a call started on the runtime after another had resumed"


async def test_run_on_a_shut_down_runtime_fails_every_waiting_call():
    rt = Runtime(name="private-rt-run")
    assert await rt.run(asyncio.sleep(0, result=1)) == 1
    rt.shutdown(timeout=2)
    coros = [asyncio.sleep(0) for _ in range(3)]
    for c in coros:
        with pytest.raises(FlussError, match="shut down"):
            await rt.run(c)
        assert c.cr_frame is None  # closed, never left un-awaited


def test_caller_loops_are_not_kept_alive_by_the_runtime():
    import weakref

    rt = get_runtime()
    loops = []

    async def one():
        loops.append(weakref.ref(asyncio.get_running_loop()))
        return await rt.run(asyncio.sleep(0, result=3))

    for _ in range(20):  # a new caller loop each time, as asyncio.run in a loop or per thread
        assert asyncio.run(one()) == 3
    gc.collect()
    assert sum(ref() is not None for ref in loops) <= 1


def test_private_runtime_shutdown_cancels_work():
    rt = Runtime(name="private-rt")
    fut = rt.submit(asyncio.sleep(30))
    t0 = time.monotonic()
    rt.shutdown(timeout=2)
    assert time.monotonic() - t0 < 3
    assert fut.cancelled() or fut.done()
    with pytest.raises(FlussError):
        rt.submit(asyncio.sleep(0))


# -- against the embedded server ---------------------------------------------------------------------

def _cfg(server, **extra):
    d = {"bootstrap.servers": server.bootstrap_servers}
    d.update(extra)
    return fluss_fast.Config(d)


def test_one_connection_many_threads_and_loops(fluss_server):
    conn = asyncio.run(fluss_fast.FlussConnection.create(_cfg(fluss_server)))
    admin = conn.get_admin()
    counts = []

    def worker(_):
        async def many():
            got = await asyncio.gather(*(admin.list_databases() for _ in range(20)))
            return sum("fluss" in g for g in got)

        counts.append(asyncio.run(many()))

    errors = run_threads(worker, 6, 30)
    assert not errors and counts == [20] * 6
    asyncio.run(conn.close())


def test_uvloop_caller_loop(fluss_server):
    uvloop = pytest.importorskip("uvloop")

    async def main():
        async with await fluss_fast.FlussConnection.create(_cfg(fluss_server)) as conn:
            return await conn.get_admin().list_databases()

    assert "fluss" in uvloop.run(main())


def _child(bootstrap, queue):
    try:
        async def main():
            conn = await fluss_fast.FlussConnection.create(fluss_fast.Config({"bootstrap.servers": bootstrap}))
            dbs_ = await conn.get_admin().list_databases()
            await conn.close()
            return dbs_

        queue.put(("ok", asyncio.run(main())))
    except BaseException as exc:  # noqa: BLE001
        queue.put(("error", repr(exc)))


def _child_uses_parent_connection(conn, queue):
    try:
        asyncio.run(conn.get_admin().list_databases())
        queue.put(("ok", None))
    except FlussError as exc:
        queue.put(("flusserror", exc.message))
    except BaseException as exc:  # noqa: BLE001
        queue.put(("error", repr(exc)))


def test_after_fork(fluss_server):
    # The parent's runtime is busy before the fork; the child must get a working one of its own.
    conn = asyncio.run(fluss_fast.FlussConnection.create(_cfg(fluss_server)))
    assert "fluss" in asyncio.run(conn.get_admin().list_databases())
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(fluss_server.bootstrap_servers, q))
    p.start()
    status, value = q.get(timeout=30)
    p.join(10)
    assert status == "ok" and "fluss" in value
    p = ctx.Process(target=_child_uses_parent_connection, args=(conn, q))
    p.start()
    status, value = q.get(timeout=30)
    p.join(10)
    assert status == "flusserror" and "fork" in value
    # The parent is unaffected.
    assert "fluss" in asyncio.run(conn.get_admin().list_databases())
    asyncio.run(conn.close())


async def test_close_then_use(fluss_server):
    conn = await fluss_fast.FlussConnection.create(_cfg(fluss_server))
    admin = conn.get_admin()
    await conn.close()
    await conn.close()  # idempotent
    with pytest.raises(FlussError) as info:
        await admin.list_databases()
    assert info.value.error_code == ErrorCode.CLIENT_ERROR and "closed" in info.value.message
    with pytest.raises(FlussError):
        conn.get_admin()
    with pytest.raises(FlussError):
        await conn.get_table(fluss_fast.TablePath("fluss", "x"))


async def test_bootstrap_skips_dead_servers(fluss_server):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"127.0.0.1:{s.getsockname()[1]}"
    s.close()
    cfg = fluss_fast.Config({"bootstrap.servers": f"{dead},{fluss_server.bootstrap_servers}"})
    async with await fluss_fast.FlussConnection.create(cfg) as conn:
        assert "fluss" in await conn.get_admin().list_databases()
    t0 = time.monotonic()
    with pytest.raises(FlussError) as info:
        await fluss_fast.FlussConnection.create(fluss_fast.Config({"bootstrap.servers": dead}))
    assert info.value.error_code == ErrorCode.NETWORK_EXCEPTION and dead in info.value.message
    assert time.monotonic() - t0 < 5
    with pytest.raises(FlussError):
        await fluss_fast.FlussConnection.create(fluss_fast.Config({"bootstrap.servers": "nonsense"}))


async def test_server_killed_then_restarted(start_server):
    srv = start_server(tablet_servers=1, sasl=False)
    conn = await fluss_fast.FlussConnection.create(_cfg(srv, **{"connect-timeout": "2000"}))
    admin = conn.get_admin()
    await admin.create_database("survivor")
    srv.kill()
    t0 = time.monotonic()
    with pytest.raises(FlussError) as info:
        await admin.list_databases()
    assert info.value.error_code == ErrorCode.NETWORK_EXCEPTION
    assert time.monotonic() - t0 < 10
    srv.start()
    # Same addresses after the restart: the next call reconnects by itself.
    assert "survivor" in await admin.list_databases()
    await conn.close()


async def list_databases_left_unanswered():
    """(peer, connection, task): ``list_databases()`` on a peer that never answers it, returned once
    the request has reached the peer."""
    seen = asyncio.Event()

    def handler(key, rid, req, writer):
        if key == Api.LIST_DATABASES:
            seen.set()
        return None

    peer = await Peer(handler).start()
    conn = await fluss_fast.FlussConnection.create(fluss_fast.Config({"bootstrap.servers": peer.address}))
    task = asyncio.ensure_future(conn.get_admin().list_databases())
    await asyncio.wait_for(seen.wait(), 5)
    return peer, conn, task


async def test_server_killed_mid_request(fluss_server):
    """A request in flight when the peer dies fails with NETWORK_EXCEPTION instead of hanging."""
    peer, conn, task = await list_databases_left_unanswered()
    await peer.close()
    with pytest.raises(FlussError) as info:
        await asyncio.wait_for(task, 5)
    assert info.value.error_code == ErrorCode.NETWORK_EXCEPTION
    await conn.close()


async def test_request_timeout_config(fluss_server):
    peer = await Peer().start()
    conn = await fluss_fast.FlussConnection.create(
        fluss_fast.Config({"bootstrap.servers": peer.address, "request-timeout": "300"}))
    t0 = time.monotonic()
    with pytest.raises(FlussError) as info:
        await conn.get_admin().database_exists("x")
    assert info.value.error_code == ErrorCode.REQUEST_TIME_OUT
    assert time.monotonic() - t0 < 3
    await conn.close()
    await peer.close()


async def test_read_only_request_retried_after_dropped_connection():
    count = {"n": 0}

    def handler(key, rid, req, writer):
        if key == Api.LIST_DATABASES:
            count["n"] += 1
            if count["n"] == 1:
                writer.transport.abort()  # drop the first attempt on the floor
                return None
            return [ok(rid, dbs("again"))]
        return None

    peer = await Peer(handler).start()
    async with await fluss_fast.FlussConnection.create(fluss_fast.Config({"bootstrap.servers": peer.address})) as conn:
        assert await conn.get_admin().list_databases() == ["again"]
    assert count["n"] == 2
    await peer.close()


async def test_cancelled_call_cancels_its_request_on_the_runtime():
    peer, conn, task = await list_databases_left_unanswered()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    await asyncio.sleep(0.05)
    open_now = await conn.server_connections()
    assert open_now and sum(c["in_flight"] for c in open_now) == 0
    await conn.close()
    await peer.close()


async def test_metadata_retries_retriable_errors():
    calls = {"n": 0}

    def handler(key, rid, req, writer):
        if key == Api.GET_METADATA and len(req.table_path):
            calls["n"] += 1
            if calls["n"] < 3:
                return [frame.encode_error_response(rid, 44, "leader not available yet")]
            resp = peer.metadata_response()
            tm = resp.table_metadata.add()
            tm.table_path.database_name, tm.table_path.table_name = "db", "t"
            tm.table_id, tm.schema_id, tm.created_time, tm.modified_time = 9, 1, 1, 2
            desc = fluss_fast.TableDescriptor(fluss_fast.Schema(__import__("pyarrow").schema([("a", "int32")])),
                                              bucket_count=1)
            tm.table_json = desc.to_json_bytes()
            b = tm.bucket_metadata.add()
            b.bucket_id, b.leader_id = 0, 0
            return [ok(rid, resp)]
        return None

    peer = await Peer(handler, server_type=None).start()
    conn = await fluss_fast.FlussConnection.create(fluss_fast.Config({"bootstrap.servers": peer.address}))

    t = await conn.get_table(fluss_fast.TablePath("db", "t"))
    assert t.get_table_info().table_id == 9
    assert {b: n.id for b, n in t.bucket_leaders().items()} == {0: 0}
    assert calls["n"] == 3
    await conn.close()
    await peer.close()
