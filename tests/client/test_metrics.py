"""Client metrics (``FlussConnection.metrics()``) against the embedded server: writer counts and
latency, scanner counts and lag per bucket, lookups, errors, and the names the snapshot uses."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast.client.metrics import MetricsRegistry

from client_util import connect

pytestmark = pytest.mark.timeout(90)

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])

# The snapshot's names: the Java client's (MetricNames in fluss-common) where it has one, with
# the totals behind its rates and what it lacks (errors, lag, lookups). Renaming one breaks
# dashboards, so this list is pinned.
WRITER_NAMES = {
    "recordSendPerSecond", "recordsSendTotal", "bytesSendPerSecond", "bytesSendTotal",
    "recordsRetryPerSecond", "recordsRetryTotal", "recordsFailedTotal", "errorsPerSecond",
    "errorsTotal", "requestsPerSecond", "requestsTotal", "bytesPerBatch", "recordsPerBatch",
    "bufferTotalBytes", "bufferAvailableBytes", "sendLatencyMs", "sendLatencyMs_avg",
    "sendLatencyMs_max", "sendLatencyMs_count",
}
SCANNER_NAMES = {
    "fetchRequestsPerSecond", "fetchRequestsTotal", "bytesPerRequest", "bytesFetchedPerSecond",
    "bytesFetchedTotal", "recordsFetchedPerSecond", "recordsFetchedTotal", "errorsPerSecond",
    "errorsTotal", "recordsLag", "recordsLagMax", "fetchLatencyMs", "fetchLatencyMs_avg",
    "fetchLatencyMs_max", "fetchLatencyMs_count",
}
LOOKUP_NAMES = {
    "lookupRequestsPerSecond", "lookupRequestsTotal", "lookupKeysTotal", "errorsPerSecond",
    "errorsTotal", "lookupLatencyMs", "lookupLatencyMs_avg", "lookupLatencyMs_max",
    "lookupLatencyMs_count",
}


async def _table(conn, name, schema=SCHEMA, **kw):
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(schema, **kw.pop("schema_kw", {})),
                                                                    **kw))
    return path, await conn.get_table(path)


def test_snapshot_names_are_pinned():
    reg = MetricsRegistry()
    reg.writer("db.t")
    reg.scanner("db.t")
    reg.name_table(7, "db.t")
    reg.lookup(7)
    snap = reg.snapshot()
    assert set(snap) == {"writer", "scanner", "lookup"}
    assert set(snap["writer"]["db.t"]) == WRITER_NAMES
    assert set(snap["scanner"]["db.t"]) == SCANNER_NAMES
    assert set(snap["lookup"]["db.t"]) == LOOKUP_NAMES
    # before any request the Java latency gauge reads -1
    assert snap["writer"]["db.t"]["sendLatencyMs"] == -1


async def test_writer_counts_records_bytes_and_latency(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await _table(conn, unique_name(), bucket_count=2)
    assert str(path) not in conn.metrics()["writer"]
    w = t.new_append().create_writer()
    n = 1234
    for i in range(n):
        w.append([i, f"n{i}"])
    await w.flush()
    w.write_arrow(pa.table({"id": pa.array(range(100), pa.int32()), "name": ["x"] * 100}))
    await w.flush()
    m = conn.metrics()["writer"][str(path)]
    assert m["recordsSendTotal"] == n + 100
    assert m["bytesSendTotal"] > n * 4
    assert m["requestsTotal"] >= 2
    assert m["sendLatencyMs_count"] == m["requestsTotal"]
    assert 0 <= m["sendLatencyMs"] <= m["sendLatencyMs_max"]
    assert m["errorsTotal"] == m["recordsRetryTotal"] == m["recordsFailedTotal"] == 0
    assert m["recordSendPerSecond"] > 0
    assert m["recordsPerBatch"] > 0 and m["bytesPerBatch"] > 0
    # nothing left in the buffer after a flush
    assert m["bufferTotalBytes"] > 0
    assert m["bufferAvailableBytes"] == m["bufferTotalBytes"]
    # a second writer of the same table adds to the same entry
    w2 = t.new_append().create_writer()
    w2.append([1, "a"])
    await w2.flush()
    m2 = conn.metrics()["writer"][str(path)]
    assert m2["recordsSendTotal"] == n + 101
    assert m2["bufferTotalBytes"] == 2 * m["bufferTotalBytes"]
    await conn.close()


async def test_writer_errors_counted(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"request-timeout": "1500"})
    path, t = await _table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    await w.append([1, "a"]).wait()
    await conn.get_admin().drop_table(path)
    h = w.append([2, "b"])
    with pytest.raises(fluss.FlussError):
        await h.wait()
    m = conn.metrics()["writer"][str(path)]
    assert m["recordsSendTotal"] == 1
    assert m["errorsTotal"] >= 1
    assert m["recordsFailedTotal"] == 1
    with pytest.raises(fluss.FlussError):
        await w.flush()
    await conn.close()


async def test_scanner_counts_and_lag(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"scanner.log.max-poll-records": "100"})
    path, t = await _table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    n = 1000
    for i in range(n):
        w.append([i, "r"])
    await w.flush()
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe(0, fluss.EARLIEST_OFFSET)
    got = []
    deadline = time.monotonic() + 15
    while len(got) < n and time.monotonic() < deadline:
        got.extend(await sc.poll(500))
    assert len(got) == n
    m = conn.metrics()["scanner"][str(path)]
    assert m["recordsLag"] == {"0": 0}
    assert m["recordsFetchedTotal"] == n
    assert m["bytesFetchedTotal"] > 0
    assert m["fetchRequestsTotal"] >= 1
    assert m["fetchLatencyMs_count"] == m["fetchRequestsTotal"]
    assert m["bytesPerRequest"] > 0
    assert m["errorsTotal"] == 0
    await conn.close()


async def test_scanner_lag_before_the_end(fluss_server, unique_name):
    # small answers (one or two batches each): after the first poll most of the log is behind
    conn = await connect(fluss_server.bootstrap_servers, {"scanner.log.fetch.max-bytes-for-bucket": "1024",
                                                          "scanner.log.fetch.max-bytes": "1024"})
    path, t = await _table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    n = 0
    for _ in range(20):
        for i in range(50):
            w.append([i, "r"])
        await w.flush()
        n += 50
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe(0, fluss.EARLIEST_OFFSET)
    got = []
    deadline = time.monotonic() + 15
    while not got and time.monotonic() < deadline:
        got.extend(await sc.poll(500))
    lag = conn.metrics()["scanner"][str(path)]["recordsLag"]["0"]
    assert 0 < lag <= n - len(got)
    while len(got) < n and time.monotonic() < deadline:
        got.extend(await sc.poll(500))
    assert len(got) == n
    m = conn.metrics()["scanner"][str(path)]
    assert m["recordsLag"] == {"0": 0}
    assert m["recordsFetchedTotal"] == n
    assert m["fetchRequestsTotal"] >= 2
    await conn.close()


async def test_lookup_counts_latency_and_errors(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"request-timeout": "1500"})
    path, t = await _table(conn, unique_name(), bucket_count=2, schema_kw={"primary_keys": ["id"]})
    w = t.new_upsert().create_writer()
    for i in range(10):
        w.upsert([i, f"v{i}"])
    await w.flush()
    lk = t.new_lookup().create_lookuper()
    for i in range(12):
        row = await lk.lookup({"id": i})
        assert (row is None) == (i >= 10)
    m = conn.metrics()["lookup"][str(path)]
    assert m["lookupKeysTotal"] == 12
    assert 1 <= m["lookupRequestsTotal"] <= 12
    assert m["lookupLatencyMs_count"] == m["lookupRequestsTotal"]
    assert 0 <= m["lookupLatencyMs_avg"] <= m["lookupLatencyMs_max"]
    assert m["errorsTotal"] == 0
    # the upsert writer is in the writer section too
    assert conn.metrics()["writer"][str(path)]["recordsSendTotal"] == 10
    await conn.close()


def test_sync_facade_metrics(fluss_server, unique_name):
    from fluss_fast import sync

    with sync.connect({"bootstrap.servers": fluss_server.bootstrap_servers}) as conn:
        path = fluss.TablePath("fluss", unique_name())
        conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=1))
        t = conn.get_table(path)
        w = t.new_append().create_writer()
        w.append([1, "a"])
        w.flush()
        snap = conn.metrics()
        assert isinstance(snap, dict)
        assert snap["writer"][str(path)]["recordsSendTotal"] == 1


async def test_prometheus_collector(fluss_server, unique_name):
    prometheus_client = pytest.importorskip("prometheus_client")
    from fluss_fast.client.prometheus import FlussCollector

    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await _table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    for i in range(10):
        w.append([i, "a"])
    await w.flush()
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe(0, fluss.EARLIEST_OFFSET)
    got = []
    deadline = time.monotonic() + 15
    while len(got) < 10 and time.monotonic() < deadline:
        got.extend(await sc.poll(500))
    registry = prometheus_client.CollectorRegistry()
    registry.register(FlussCollector(conn))
    text = prometheus_client.generate_latest(registry).decode()
    assert f'fluss_client_writer_recordsSendTotal{{table="{path}"}} 10.0' in text
    assert f'fluss_client_scanner_recordsLag{{bucket="0",table="{path}"}} 0.0' in text
    assert registry.get_sample_value("fluss_client_scanner_recordsFetchedTotal", {"table": str(path)}) == 10
    await conn.close()
    assert prometheus_client.generate_latest(registry) == b""


async def test_lookup_errors_counted(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"request-timeout": "1500"})
    path, t = await _table(conn, unique_name(), bucket_count=1, schema_kw={"primary_keys": ["id"]})
    lk = t.new_lookup().create_lookuper()
    assert await lk.lookup({"id": 1}) is None
    await conn.get_admin().drop_table(path)
    with pytest.raises(fluss.FlussError):
        await lk.lookup({"id": 1})
    m = conn.metrics()["lookup"][str(path)]
    assert m["errorsTotal"] >= 1
    assert m["lookupRequestsTotal"] >= 1
    await conn.close()
