"""Regression tests for the defects found by the fault probe (issue 7): each one failed before its fix."""
from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

import fluss_fast as fluss

from client_util import connect, leader_request

pytestmark = pytest.mark.timeout(120)

AB = pa.schema([("a", pa.int32()), ("b", pa.int32())])


async def make_table(conn, name, schema=AB, **kw):
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(schema), **kw))
    return path, await conn.get_table(path)


async def read_table(t) -> pa.Table:
    s = await t.new_scan().create_record_batch_log_scanner()
    s.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(t.get_table_info().num_buckets)})
    return await s.to_arrow()


# -- 1: Arrow columns matched by name --------------------------------------------------------------
async def test_write_arrow_matches_columns_by_name(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    swapped = pa.record_batch([pa.array([1], pa.int32()), pa.array([2], pa.int32())], names=["b", "a"])
    await w.write_arrow_batch(swapped).wait()
    w.write_arrow(pa.Table.from_batches([swapped]))
    await w.flush()
    assert (await read_table(t)).to_pylist() == [{"a": 2, "b": 1}, {"a": 2, "b": 1}]
    renamed = pa.record_batch([pa.array([1], pa.int32()), pa.array([2], pa.int32())], names=["a", "c"])
    for call in (lambda: w.write_arrow_batch(renamed), lambda: w.write_arrow(pa.Table.from_batches([renamed]))):
        with pytest.raises(fluss.FlussError) as ei:
            call()
        assert "'b'" in str(ei.value) and "'c'" in str(ei.value), ei.value
    dup = pa.record_batch([pa.array([1], pa.int32()), pa.array([2], pa.int32())], names=["a", "a"])
    with pytest.raises(fluss.FlussError, match="more than once"):
        w.write_arrow_batch(dup)
    await conn.close()


# -- 2: one server per data dir --------------------------------------------------------------------
def test_second_server_on_same_data_dir_fails_naming_dir_and_pid(start_server):
    import subprocess
    import sys
    first = start_server(sasl=False)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "fluss_fast", "server", "--data-dir", first.data_dir,
                          "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "READY" not in out.stdout
    assert first.data_dir in out.stderr and f"pid {first.proc.pid}" in out.stderr, out.stderr
    assert time.monotonic() - t0 < 30
    # the lock dies with its holder, even on kill -9: the same dir serves again at once
    first.kill()
    first.start()
    assert first.proc.poll() is None


# -- 11: a produce whose schema id the table never had ---------------------------------------------
async def test_produce_with_foreign_schema_id_is_refused_like_java(fluss_server, unique_name):
    from fluss_fast.codec.log.arrowlog import ArrowLogCodec
    from fluss_fast.error_codes import Errors
    from fluss_fast.rpc import fluss_api_pb2 as pb
    from fluss_fast.rpc.api import Api
    conn = await connect(fluss_server.bootstrap_servers)
    _, a = await make_table(conn, unique_name(), schema=pa.schema([("s", pa.string())]), bucket_count=1)
    _, b = await make_table(conn, unique_name(), bucket_count=1)
    rows = pa.record_batch([pa.array(["from a"])], names=["s"])
    # A's rows under an id B never had (2: what A's schema id is after one ALTER)
    records = ArrowLogCodec(a.get_table_info().descriptor.schema).build(rows, schema_id=2)
    req = pb.ProduceLogRequest(acks=-1, table_id=b.get_table_info().table_id, timeout_ms=10000)
    req.buckets_req.add(bucket_id=0, records=records)
    resp = await leader_request(b, 0, Api.PRODUCE_LOG, req)
    r = resp.buckets_resp[0]
    assert r.error_code == Errors.SCHEMA_NOT_EXIST
    assert "Invalid schema id: 2, latest schema id: 1" in r.error_message
    assert (await read_table(b)).num_rows == 0
    await conn.close()


# -- 3: a connection whose peer stopped answering is replaced ---------------------------------------
def _proxy(upstream):
    from fault.proxy import FaultProxy
    return FaultProxy(upstream).start()


async def test_timed_out_connection_is_replaced(fluss_server, unique_name):
    proxy = _proxy(fluss_server.bootstrap_servers)
    try:
        conn = await connect(proxy.bootstrap_servers, {"request-timeout": "1000"})
        admin = conn.get_admin()
        path, t = await make_table(conn, unique_name(), bucket_count=1)
        w = t.new_append().create_writer()
        w.append({"a": 1, "b": 1})
        await w.flush()
        # every open socket goes silent for good (half-open); new sockets work
        assert proxy.freeze() >= 2
        # a read times out once on the silent socket, then is re-sent on a new one
        t0 = time.monotonic()
        assert "fluss" in await admin.list_databases()
        assert time.monotonic() - t0 >= 0.9
        await admin.create_database(unique_name("db"))          # coordinator: the new socket
        w.append({"a": 2, "b": 2})
        await w.flush()                                         # tablet: in-flight work re-sent
        assert sorted(r["a"] for r in (await read_table(t)).to_pylist()) == [1, 2]
        await conn.close()
    finally:
        proxy.close()


async def _one_row_written(start_server, unique_name):
    """A server, a connection with a 1 s request timeout, and a writer whose first row is acked."""
    srv = start_server(sasl=False)
    conn = await connect(srv.bootstrap_servers, {"request-timeout": "1000"})
    _, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    w.append({"a": 0, "b": 0})
    await w.flush()
    return srv, conn, w


# -- 6: every wait bounded by the configuration, and its message true --------------------------------
async def test_flush_against_a_frozen_server_is_bounded_and_truthful(start_server, unique_name):
    import re
    import signal
    srv, conn, w = await _one_row_written(start_server, unique_name)
    srv.proc.send_signal(signal.SIGSTOP)
    try:
        w.append({"a": 1, "b": 1})
        t0 = time.monotonic()
        with pytest.raises(fluss.FlussError) as ei:
            await w.flush()
        took = time.monotonic() - t0
    finally:
        srv.proc.send_signal(signal.SIGCONT)
    # the documented bound: 2 x request-timeout from the first send (plus scheduling slack)
    assert took < 2.0 + 1.5, took
    m = re.search(r"gave up after (\d+) ms", str(ei.value))
    assert m, ei.value
    assert abs(int(m.group(1)) / 1000 - took) < 0.5, (m.group(1), took)
    await conn.close()


# -- 7: close() reports what it could not deliver ---------------------------------------------------
async def test_connection_close_raises_with_the_undelivered_count(start_server, unique_name):
    srv, conn, w = await _one_row_written(start_server, unique_name)
    srv.kill()
    for i in range(7):
        w.append({"a": i, "b": i})
    with pytest.raises(fluss.FlussError) as ei:
        await conn.close()
    assert "could not deliver 7 record(s) in 1 batch(es)" in str(ei.value), ei.value
    assert conn.closed


# -- issue 13 item 4: a writer whose table was dropped fails fast and says so ------------------------
async def test_writer_of_a_dropped_table_fails_fast(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"request-timeout": "30000"})
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    w.append({"a": 0, "b": 0})
    await w.flush()
    await conn.get_admin().drop_table(path)
    w.append({"a": 1, "b": 1})
    t0 = time.monotonic()
    with pytest.raises(fluss.FlussError) as ei:
        await w.flush()
    assert ei.value.error_code == 7 and "does not exist" in str(ei.value), ei.value
    assert time.monotonic() - t0 < 15  # not the 60 s delivery window
    await conn.close()


# -- 4/5: scanners ride out a dead and restarted server ----------------------------------------------
async def test_scanners_ride_out_a_server_restart(start_server, unique_name):
    srv = start_server(sasl=False)
    conn = await connect(srv.bootstrap_servers, {"request-timeout": "2000", "connect-timeout": "2000"})
    path, t = await make_table(conn, unique_name(), bucket_count=2)
    w = t.new_append().create_writer()
    for i in range(20):
        w.append({"a": i, "b": i})
    await w.flush()
    poller = await t.new_scan().create_log_scanner()
    poller.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
    seen = [r.row["a"] for r in await poller.poll(2000)]
    while len(seen) < 20:
        seen += [r.row["a"] for r in await poller.poll(500)]
    reader = await t.new_scan().create_record_batch_log_scanner()
    reader.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
    srv.kill()
    # 5: poll() does not raise while the server is gone; it returns empty at its timeout
    t0 = time.monotonic()
    assert len(await poller.poll(1500)) == 0
    assert time.monotonic() - t0 < 10
    # 4: a dead server is a network error, and the table stays known
    with pytest.raises(fluss.FlussError) as ei:
        await reader.to_arrow()
    assert ei.value.error_code == 1, ei.value
    assert "Unknown table id" not in str(ei.value)
    srv.start()
    reader.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
    assert sorted((await reader.to_arrow()).column("a").to_pylist()) == list(range(20))
    w2 = t.new_append().create_writer()
    for i in range(20, 30):
        w2.append({"a": i, "b": i})
    await w2.flush()
    deadline = time.monotonic() + 20
    while len(seen) < 30 and time.monotonic() < deadline:
        seen += [r.row["a"] for r in await poller.poll(500)]
    assert sorted(seen) == list(range(30))
    await conn.close()


# -- 8: a closed server connection is freed at once, not by the cycle collector ----------------------
def test_closed_server_connections_free_without_gc():
    import gc
    import weakref

    from fluss_fast.server.local import LocalServer

    from wire import WireClient

    with LocalServer() as srv:
        server = srv.server
        gc.collect()
        gc.disable()
        try:
            refs = []
            for _ in range(20):
                c = WireClient(srv.bootstrap_servers)  # handshake: the connection served a request
                deadline = time.monotonic() + 5
                while not server._connections and time.monotonic() < deadline:
                    time.sleep(0.01)
                refs.extend(weakref.ref(p) for p in list(server._connections))
                c.close()
                deadline = time.monotonic() + 5
                while server._connections and time.monotonic() < deadline:
                    time.sleep(0.01)
            time.sleep(0.2)
            alive = [r for r in refs if r() is not None]
            assert refs and not alive, f"{len(alive)} of {len(refs)} closed connections still alive"
        finally:
            gc.enable()


# -- 9: names that are not UTF-8, and a full disk: error codes, no tracebacks ------------------------
def _field(num, data):
    return bytes([(num << 3) | 2, len(data)]) + data


def test_non_utf8_names_get_name_errors(fluss_server):
    from fluss_fast.error_codes import Errors
    from fluss_fast.rpc.api import Api

    from wire import WireClient, WireError

    bad = b"\xff\xfedb"
    path = _field(1, bad) + _field(2, b"t")
    cases = [
        (Api.CREATE_DATABASE, _field(1, bad) + bytes([0x10, 0]), Errors.INVALID_DATABASE_EXCEPTION),
        (Api.CREATE_TABLE, _field(1, path) + _field(2, b"{}") + bytes([0x18, 0]), Errors.INVALID_DATABASE_EXCEPTION),
        (Api.GET_TABLE_INFO, _field(1, path), Errors.TABLE_NOT_EXIST),
        (Api.LIST_TABLES, _field(1, bad), Errors.DATABASE_NOT_EXIST),
    ]
    with WireClient(fluss_server.bootstrap_servers) as c:
        for key, body, code in cases:
            with pytest.raises(WireError) as ei:
                c.call(key, body)
            assert ei.value.code == code, (key, ei.value)
            assert "\ufffd" in ei.value.message and "\\x" not in ei.value.message, ei.value.message
        assert c.call(Api.LIST_DATABASES, b"").database_name  # still serving


@pytest.fixture
def tiny_disk(tmp_path):
    import subprocess
    d = tmp_path / "tiny"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(d)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.decode().strip()}")
    yield str(d)
    subprocess.run(["umount", "-l", str(d)], capture_output=True)


async def test_full_disk_answers_storage_errors_without_tracebacks(tiny_disk, tmp_path):
    import subprocess
    import sys
    err_path = tmp_path / "server.err"
    with open(err_path, "w") as err:
        # the server is a child process: Popen returns at once, and nothing runs on this loop until READY
        proc = subprocess.Popen([sys.executable, "-m", "fluss_fast", "server", "--data-dir", tiny_disk,  # noqa: ASYNC220
                                 "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY"), line
        bootstrap = line.split("bootstrap.servers=")[1].split()[0]
        conn = await connect(bootstrap, {"request-timeout": "2000"})
        adm = conn.get_admin()
        path = fluss.TablePath("fluss", "full")
        await adm.create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema([("s", pa.string())])),
                                                           log_format="INDEXED"))
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        stored = 0
        with pytest.raises(fluss.FlussError) as ei:
            for _ in range(200):
                w.write_arrow_batch(pa.record_batch([pa.array([os.urandom(50).hex()] * 1000)], names=["s"]))
                await w.flush()
                stored += 1000
        assert ei.value.error_code == 10 and "No space left" in str(ei.value), ei.value
        for call in (lambda: adm.create_database("more"),
                     lambda: adm.create_table(fluss.TablePath("fluss", "t2"),
                                              fluss.TableDescriptor(fluss.Schema(pa.schema([("a", pa.int32())]))))):
            with pytest.raises(fluss.FlussError) as ei:
                await call()
            assert ei.value.error_code == 26 and "No space left" in str(ei.value), ei.value
        # what was acknowledged before the disk filled is still readable
        s = await t.new_scan().create_record_batch_log_scanner()
        s.subscribe(0, fluss.EARLIEST_OFFSET)
        assert (await s.to_arrow()).num_rows == stored
        await conn.close()
    finally:
        proc.terminate()
        proc.wait(15)
        proc.stdout.close()
    log = err_path.read_text()
    assert "Traceback" not in log, log[-3000:]


# -- 10: durability policy (log.flush.interval-messages) and recovery of an unsynced tail ------------
@pytest.mark.parametrize("interval", [None, 1, 50])
async def test_flush_interval_forces_acknowledged_records_to_disk(interval, unique_name):
    from fluss_fast.server.local import LocalServer

    with LocalServer(log_flush_interval_messages=interval) as srv:
        conn = await connect(srv.bootstrap_servers)
        path, t = await make_table(conn, unique_name(), bucket_count=1)
        w = t.new_append().create_writer()
        for i in range(30):
            w.append({"a": i, "b": i})
            await w.flush()  # one produce per record
        blog = srv.server.replicas.logs.find(t.get_table_info().table_id, None, 0)
        assert blog.high_watermark == 30
        if interval is None:
            assert blog.flushed_offset == 0  # Java's default: the page cache only
        elif interval == 1:
            assert blog.flushed_offset == 30  # every acknowledged record was fsynced first
        else:
            assert blog.flushed_offset == 0  # 30 records < 50: not yet
        await conn.close()


def test_flush_interval_flag_is_validated():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "fluss_fast", "server", "--log-flush-interval-messages", "0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--log-flush-interval-messages must be >= 1" in r.stderr


async def test_recovery_cuts_a_power_loss_tail(start_server, unique_name):
    import glob
    srv = start_server(sasl=False, extra_args=["--log-flush-interval-messages", "1"])
    conn = await connect(srv.bootstrap_servers)
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    for i in range(10):
        w.append({"a": i, "b": i})
    await w.flush()
    await conn.close()
    srv.kill()
    logs = glob.glob(os.path.join(srv.data_dir, "log", "fluss", f"{path.table_name}-*", "log-0", "*.log"))
    assert len(logs) == 1
    # what a power loss leaves behind the last fsync: a zero-filled extent, or half a batch
    with open(logs[0], "r+b") as f:
        f.seek(0, os.SEEK_END)
        good = f.tell()
        f.seek(0)
        first = f.read(good)
        f.seek(good)
        f.write(first[:good // 3] + b"\0" * 4096)
    srv.start()
    conn = await connect(srv.bootstrap_servers)
    t = await conn.get_table(path)
    assert sorted((await read_table(t)).column("a").to_pylist()) == list(range(10))
    assert os.path.getsize(logs[0]) == good  # the torn tail is cut, not served
    w = t.new_append().create_writer()
    w.append({"a": 10, "b": 10})
    await w.flush()
    assert sorted((await read_table(t)).column("a").to_pylist()) == list(range(11))
    await conn.close()
