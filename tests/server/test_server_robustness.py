"""Bad input reaches the embedded server; the offender gets an error or a closed socket, nobody else notices."""
from __future__ import annotations

import socket
import struct
import time

import pytest

from fluss_fast.error_codes import Errors
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc import frame as F
from fluss_fast.rpc.api import Api

from wire import Closed, WireClient, WireError, split_address


def assert_healthy(address: str, sasl_user=None):
    """A second, well-behaved client is still served."""
    with WireClient(address) as c:
        if sasl_user:
            c.authenticate(*sasl_user)
        assert "fluss" in c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest()).database_name


def expect_server_failure_then_close(c: WireClient) -> pb.ErrorResponse:
    kind, rid, body = c.recv()
    assert kind == F.SERVER_FAILURE and rid == -1
    err = pb.ErrorResponse()
    err.ParseFromString(body)
    assert err.error_message, "pyfluss reads 4 body bytes as a request id: the message must not be empty"
    assert c.wait_closed()
    return err


def expect_error(c: WireClient, api_key: int, message, code: int, version: int = 0) -> str:
    with pytest.raises(WireError) as e:
        c.call(api_key, message, version)
    assert e.value.kind == F.ERROR_RESPONSE
    assert e.value.code == code, e.value
    assert e.value.message
    return e.value.message


@pytest.fixture
def addr(fluss_server):
    return fluss_server.bootstrap_servers


def test_oversized_frame(addr):
    with WireClient(addr) as c:
        c.send_raw(struct.pack(">ihhi", F.MAX_REQUEST_SIZE - 3, Api.LIST_DATABASES, 0, 1))
        err = expect_server_failure_then_close(c)
        assert err.error_code == Errors.CORRUPT_MESSAGE and "maximum request size" in err.error_message
    assert_healthy(addr)


def test_largest_legal_frame_header_is_accepted_then_client_vanishes(addr):
    # 100 MiB including the length field is legal; the server waits for the body, and a client that
    # disconnects half-way only loses its own connection.
    with WireClient(addr) as c:
        c.send_raw(struct.pack(">ihhi", F.MAX_REQUEST_SIZE - 4, Api.DATABASE_EXISTS, 0, 1) + b"\x0a" * 1000)
        assert not c.wait_closed(0.3)
    assert_healthy(addr)


def test_big_frame_in_pieces(addr):
    name = "n" * (3 * 1024 * 1024)
    body = pb.DatabaseExistsRequest(database_name=name).SerializeToString()
    data = F.encode_request(Api.DATABASE_EXISTS, 0, 7, body)
    with WireClient(addr) as c:
        for i in range(0, len(data), 700_001):
            c.send_raw(data[i:i + 700_001])
        kind, rid, resp = c.recv()
        assert (kind, rid) == (F.SUCCESS_RESPONSE, 7)
        assert c.result(Api.DATABASE_EXISTS, kind, resp).exists is False
        assert "fluss" in c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest()).database_name
    assert_healthy(addr)


@pytest.mark.parametrize("garbage", [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\xde\xad\xbe\xef" * 64,
                                     bytes(range(256))])
def test_garbage_bytes_close_connection(addr, garbage):
    with WireClient(addr) as c:
        c.send_raw(garbage)
        assert expect_server_failure_then_close(c).error_code == Errors.CORRUPT_MESSAGE
    assert_healthy(addr)


@pytest.mark.parametrize("length", [0, 4, 7, -1, -2147483648])
def test_frame_length_below_header(addr, length):
    with WireClient(addr, handshake=False) as c:
        c.send_raw(struct.pack(">i", length) + b"\x00" * 8)
        err = expect_server_failure_then_close(c)
        assert err.error_code == Errors.CORRUPT_MESSAGE
    assert_healthy(addr)


def test_unknown_and_unserved_api_keys(fluss_server, addr):
    with WireClient(addr) as c:
        msg = expect_error(c, 999, b"", Errors.UNSUPPORTED_VERSION)
        assert "999" in msg
        msg = expect_error(c, 4242, b"\x08\x01", Errors.UNSUPPORTED_VERSION)
        assert "4242" in msg
        # a tablet-only key on the coordinator
        req = pb.ProduceLogRequest(acks=-1, table_id=0, timeout_ms=1000)
        msg = expect_error(c, Api.PRODUCE_LOG, req, Errors.UNSUPPORTED_VERSION)
        assert "PRODUCE_LOG" in msg and "1014" in msg
        # the connection is still fine
        assert "fluss" in c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest()).database_name
        meta = c.call(Api.GET_METADATA, pb.MetadataRequest())
    tablet = meta.tablet_servers[0]
    with WireClient(f"{tablet.host}:{tablet.port}") as t:
        msg = expect_error(t, Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name="x", ignore_if_exists=True),
                           Errors.UNSUPPORTED_VERSION)
        assert "CREATE_DATABASE" in msg
    assert_healthy(addr)


def test_truncated_and_incomplete_protobuf(addr):
    full = pb.CreateDatabaseRequest(database_name="truncated_db", ignore_if_exists=True).SerializeToString()
    with WireClient(addr) as c:
        msg = expect_error(c, Api.CREATE_DATABASE, full[:5], Errors.UNKNOWN_SERVER_ERROR)
        assert "CREATE_DATABASE" in msg
        # parses, but a proto2 required field is missing
        msg = expect_error(c, Api.DATABASE_EXISTS, b"", Errors.UNKNOWN_SERVER_ERROR)
        assert "database_name" in msg
        msg = expect_error(c, Api.GET_TABLE_INFO, pb.GetTableInfoRequest(
            table_path=pb.PbTablePath(database_name="x")).SerializePartialToString(), Errors.UNKNOWN_SERVER_ERROR)
        assert "table_path.table_name" in msg
        msg = expect_error(c, Api.LIST_DATABASES, b"\xff\xff\xff", Errors.UNKNOWN_SERVER_ERROR)
        assert not c.call(Api.DATABASE_EXISTS, pb.DatabaseExistsRequest(database_name="truncated_db")).exists
    assert_healthy(addr)


def test_byte_by_byte_and_pipelined(addr):
    with WireClient(addr) as c:
        data = F.encode_request(Api.LIST_DATABASES, 0, 42, b"")
        for b in data:
            c.send_raw(bytes([b]))
            time.sleep(0.001)
        kind, rid, _ = c.recv()
        assert (kind, rid) == (F.SUCCESS_RESPONSE, 42)
        # many requests in one write, answered once each
        n = 2000
        blob = b"".join(F.encode_request(Api.DATABASE_EXISTS, 0, i,
                                         pb.DatabaseExistsRequest(database_name="fluss").SerializeToString())
                        for i in range(n))
        c.send_raw(blob)
        seen = set()
        for _ in range(n):
            kind, rid, body = c.recv()
            assert kind == F.SUCCESS_RESPONSE
            assert c.result(Api.DATABASE_EXISTS, kind, body).exists
            seen.add(rid)
        assert seen == set(range(n))


def test_small_request_throughput(addr):
    """The server must not be what limits a client benchmark: >= 20k small pipelined requests/s here
    (asserted at a quarter of that so a loaded CI box does not flake)."""
    body = pb.DatabaseExistsRequest(database_name="fluss").SerializeToString()
    window, total = 256, 20000
    frames = [F.encode_request(Api.DATABASE_EXISTS, 0, i, body) for i in range(total)]
    with WireClient(addr) as c:
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        start = time.perf_counter()
        sent = 0
        received = 0
        c.send_raw(b"".join(frames[:window]))
        sent = window
        while received < total:
            c.recv()
            received += 1
            if sent < total and received % 64 == 0:
                c.send_raw(b"".join(frames[sent:sent + 64]))
                sent += 64
        elapsed = time.perf_counter() - start
    rate = total / elapsed
    print(f"\nsmall requests: {rate:,.0f}/s")
    assert rate > 5000


def test_mixed_frame_sizes_in_random_chunks(addr):
    import random

    rng = random.Random(7)
    sizes = [rng.choice([1, 10, 500, 8000, 60000, 70000, 300000]) for _ in range(120)]
    names = ["fluss" if i % 5 == 0 else "x" * n for i, n in enumerate(sizes)]
    blob = b"".join(F.encode_request(Api.DATABASE_EXISTS, 0, i, pb.DatabaseExistsRequest(
        database_name=name).SerializeToString()) for i, name in enumerate(names))
    with WireClient(addr) as c:
        pos = 0
        while pos < len(blob):
            step = rng.randint(1, 150_000)
            c.send_raw(blob[pos:pos + step])
            pos += step
        answers = {}
        for _ in names:
            kind, rid, body = c.recv()
            answers[rid] = c.result(Api.DATABASE_EXISTS, kind, body).exists
    assert answers == {i: name == "fluss" for i, name in enumerate(names)}


def test_client_disconnect_with_requests_in_flight(addr):
    for _ in range(5):
        s = socket.create_connection(split_address(addr))
        s.sendall(b"".join(F.encode_request(Api.LIST_DATABASES, 0, i, b"") for i in range(200)))
        s.close()
    assert_healthy(addr)


def test_idle_connections_are_closed(start_server):
    srv = start_server(sasl=False, extra_args=["--idle-timeout", "0.5"])
    with WireClient(srv.bootstrap_servers) as idle:
        assert idle.wait_closed(5.0)
    with WireClient(srv.bootstrap_servers) as busy:
        for _ in range(8):
            busy.call(Api.LIST_DATABASES, pb.ListDatabasesRequest())
            time.sleep(0.1)
    assert_healthy(srv.bootstrap_servers)


# -- SASL ------------------------------------------------------------------------------------------------
@pytest.fixture
def sasl_addr(fluss_server):
    return fluss_server.sasl_bootstrap_servers


def test_sasl_request_before_auth_is_refused(sasl_addr):
    with WireClient(sasl_addr) as c:  # API_VERSIONS is allowed before authentication
        assert c.server_type == 1
        expect_error(c, Api.LIST_DATABASES, pb.ListDatabasesRequest(), Errors.AUTHENTICATE_EXCEPTION)
        expect_error(c, Api.GET_METADATA, pb.MetadataRequest(), Errors.AUTHENTICATE_EXCEPTION)
        expect_error(c, 999, b"", Errors.AUTHENTICATE_EXCEPTION)
        resp = c.authenticate("admin", "admin-secret")
        assert resp.HasField("challenge") and resp.challenge == b""
        assert "fluss" in c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest()).database_name
        again = c.authenticate("admin", "whatever")  # already authenticated: a no-op success
        assert not again.HasField("challenge")
    assert_healthy(sasl_addr, ("alice", "alice-pw"))


@pytest.mark.parametrize("token", [
    b"\x00admin\x00wrong",  # bad password
    b"\x00nobody\x00admin-secret",  # unknown user
    b"\x00\x00admin-secret",  # empty user
    b"\x00admin\x00",  # empty password
    b"admin\x00admin-secret",  # two parts
    b"\x00admin\x00admin-secret\x00x",  # four parts
    b"alice\x00admin\x00admin-secret",  # authzid differs from the user
    b"\xff\xfe\x00admin\x00admin-secret",  # not UTF-8
])
def test_sasl_bad_tokens(sasl_addr, token):
    with WireClient(sasl_addr) as c:
        expect_error(c, Api.AUTHENTICATE, pb.AuthenticateRequest(protocol="PLAIN", token=token),
                     Errors.AUTHENTICATE_EXCEPTION)
        # the connection stays open but unauthenticated; a correct token still works
        expect_error(c, Api.LIST_DATABASES, pb.ListDatabasesRequest(), Errors.AUTHENTICATE_EXCEPTION)
        c.authenticate("admin", "admin-secret")
        c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest())
    assert_healthy(sasl_addr, ("admin", "admin-secret"))


def test_sasl_authzid_equal_to_user_and_mechanism_case(sasl_addr):
    with WireClient(sasl_addr) as c:
        c.authenticate("alice", "alice-pw", mechanism="plain", authzid="alice")
        c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest())
    with WireClient(sasl_addr) as c:
        expect_error(c, Api.AUTHENTICATE, pb.AuthenticateRequest(protocol="SCRAM-SHA-256", token=b"x"),
                     Errors.AUTHENTICATE_EXCEPTION)


def test_sasl_on_tablet_listener(fluss_server, sasl_addr):
    with WireClient(sasl_addr) as c:
        c.authenticate("admin", "admin-secret")
        meta = c.call(Api.GET_METADATA, pb.MetadataRequest())
    t = meta.tablet_servers[0]
    with WireClient(f"{t.host}:{t.port}") as tc:
        assert tc.server_type == 2
        expect_error(tc, Api.GET_METADATA, pb.MetadataRequest(), Errors.AUTHENTICATE_EXCEPTION)
        tc.authenticate("alice", "alice-pw")
        assert tc.call(Api.GET_METADATA, pb.MetadataRequest()).coordinator_server.port == meta.coordinator_server.port


def test_plain_on_plaintext_listener(addr):
    with WireClient(addr) as c:
        msg = expect_error(c, Api.AUTHENTICATE, pb.AuthenticateRequest(protocol="PLAIN", token=b"\x00admin\x00x"),
                           Errors.AUTHENTICATE_EXCEPTION)
        assert "PLAINTEXT" in msg
        # the PLAINTEXT mechanism itself is a no-op success, and the connection keeps working
        c.call(Api.AUTHENTICATE, pb.AuthenticateRequest(protocol="PLAINTEXT", token=b""))
        c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest())
    assert_healthy(addr)


def test_sasl_users_file(start_server, tmp_path):
    users = tmp_path / "users"
    users.write_text("# comment\nbob=b=ob\n\ncarol=pw\n")
    srv = start_server(sasl=True, extra_args=["--sasl-users-file", str(users)])
    with WireClient(srv.sasl_bootstrap_servers) as c:
        c.authenticate("bob", "b=ob")
        c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest())
    with WireClient(srv.sasl_bootstrap_servers) as c:
        c.authenticate("admin", "admin-secret")  # --sasl-user entries still apply
    with WireClient(srv.sasl_bootstrap_servers) as c:
        with pytest.raises(WireError) as e:
            c.authenticate("carol", "nope")
        assert e.value.code == Errors.AUTHENTICATE_EXCEPTION


# How the end of a connection reaches a reader: an orderly close (FIN, recv() returns b"") or, when
# the server closed with our bytes still unread in its buffer, a reset. The kernel picks which.
CLOSED = (Closed, ConnectionResetError, ConnectionAbortedError, BrokenPipeError)


def test_closed_socket_raises(addr):
    """A frame too short to hold a header ends its connection: the reader sees the end (never a
    hang), after at most the one SERVER_FAILURE frame with code 3, and the server keeps serving."""
    c = WireClient(addr)
    frames = []
    try:
        c.send_raw(struct.pack(">i", 3))
        c.send_raw(b"abc")
        with pytest.raises(CLOSED):
            while True:
                frames.append(c.recv())
    except (ConnectionResetError, BrokenPipeError):
        pass  # the server had already closed before our second write: the promised end, reported early
    finally:
        c.close()
    assert len(frames) <= 1, frames
    for kind, rid, body in frames:
        assert kind == F.SERVER_FAILURE and rid == -1
        err = pb.ErrorResponse()
        err.ParseFromString(body)
        assert err.error_code == Errors.CORRUPT_MESSAGE
    assert_healthy(addr)
