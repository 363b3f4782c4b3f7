"""The Arrow write path: oversized chunks split into equal batches, batches encoded ahead of the
drain while requests wait (order and batch sequences kept), and memory bounded by
``writer.buffer.memory-size`` however much the caller hands over at once."""
from __future__ import annotations

import asyncio
import collections
import signal
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast.codec.log import logbatch

from client_util import connect, fetch_records

pytestmark = pytest.mark.timeout(120)


async def make_table(conn, name, schema, **kw):
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(schema), **kw))
    return path, await conn.get_table(path)


def writer_metrics(conn, path) -> dict:
    """The client metrics of the writers of one table (one writer in these tests)."""
    return conn.metrics()["writer"][str(path)]


async def stored_batches(table, bucket=0):
    """[(record_count, batch_sequence)] of one bucket as the server stored them."""
    buf = await fetch_records(table, bucket)
    return [(h.record_count, h.batch_sequence) for h in logbatch.iter_batches(buf)]


async def read_ids(table, buckets=1):
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
    return scanner.to_arrow().column("id").to_pylist()


async def test_oversized_arrow_batch_becomes_equal_batches(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {
        "writer.batch-size": str(64 * 1024), "writer.dynamic-batch-size.enabled": "false"})
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    path, t = await make_table(conn, unique_name(), schema, bucket_count=1)
    n = 9000  # 144 000 bytes: 2.2 x the batch size -> three pieces, none a small remainder
    rb = pa.record_batch([pa.array(range(n), pa.int64()), pa.array(range(n), pa.int64())], schema=schema)
    assert 2 * 64 * 1024 < rb.nbytes < 3 * 64 * 1024
    w = t.new_append().create_writer()
    w.write_arrow_batch(rb)
    await w.flush()
    counts = [c for c, _ in await stored_batches(t)]
    assert counts == [3000, 3000, 3000]
    assert await read_ids(t) == list(range(n))
    await conn.close()


async def test_sealed_batches_are_encoded_while_requests_wait(start_server, unique_name):
    srv = start_server(sasl=False)
    conn = await connect(srv.bootstrap_servers, {
        "writer.batch-size": str(128 * 1024), "writer.dynamic-batch-size.enabled": "false",
        "writer.max-inflight-requests-per-bucket": "1", "request-timeout": "30000"})
    schema = pa.schema([("id", pa.int64())])
    path, t = await make_table(conn, unique_name(), schema, bucket_count=1)
    w = t.new_append().create_writer()
    await w.append([-1]).wait()  # writer id known, connection up
    encodes = collections.Counter()
    inner = w._sender._encode

    def counting(b):
        encodes[id(b)] += 1
        inner(b)

    w._sender._encode = counting
    n = 40 * 16384  # 40 batches of 128 KiB
    data = pa.table({"id": pa.array(range(n), pa.int64())})
    srv.proc.send_signal(signal.SIGSTOP)  # the first request goes out and is never answered
    try:
        w.write_arrow(data)
        queued = [b for b in w._acc.incomplete()]
        assert len(queued) >= 39
        deadline = time.monotonic() + 30
        # with one request per bucket allowed out, only encoding ahead gets the others ready
        while sum(b.payload is not None for b in queued) < len(queued) - 1:
            assert time.monotonic() < deadline, "sealed batches were not encoded while waiting"
            await asyncio.sleep(0.02)
        assert writer_metrics(conn, path)["requestsTotal"] <= 2
    finally:
        srv.proc.send_signal(signal.SIGCONT)
    await w.flush()
    assert max(encodes.values()) == 1 and len(encodes) == len(queued)
    stored = await stored_batches(t)
    seqs = [s for _, s in stored]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # one sequence each, in order
    assert await read_ids(t) == [-1] + list(range(n))
    await conn.close()


async def test_huge_write_arrow_stays_within_the_write_buffer(fluss_server, unique_name):
    """A 160 MB table through a 4 MiB buffer: what the writer holds on top of the caller's table
    (encoded payloads, copies, requests) stays bounded, instead of growing with the table."""
    limit = 4 << 20
    conn = await connect(fluss_server.bootstrap_servers, {
        "writer.buffer.memory-size": str(limit), "writer.batch-size": str(1 << 20)})
    n = 10_000_000
    rng = np.random.default_rng(7)
    data = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "v": pa.array(rng.random(n))})
    data = pa.Table.from_batches(data.to_batches(max_chunksize=1 << 20))
    path, t = await make_table(conn, unique_name(), data.schema, bucket_count=2)
    w = t.new_append().create_writer()
    await w.append([0, 0.0]).wait()  # codec threads, connection and contexts warm

    def rss():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    base = rss()
    peak = [base]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss())
            assert w._acc.used <= limit + (1 << 20)
            stop.wait(0.002)

    th = threading.Thread(target=sample)
    th.start()
    try:
        w.write_arrow(data)
        await w.flush()
    finally:
        stop.set()
        th.join()
    grown = peak[0] - base
    # measured ~25 MB (codec contexts, Arrow's pool); the random doubles alone are 80 MB of payload
    assert grown < 64 * 1024 * 1024, f"RSS grew {grown / 1e6:.0f} MB writing {data.nbytes / 1e6:.0f} MB"
    got = sum((await conn.get_admin().list_offsets(path, [0, 1], fluss.OffsetSpec.latest())).values())
    assert got == n + 1
    await conn.close()


async def test_flush_seals_open_batches_so_they_encode_while_requests_wait(start_server, unique_name):
    srv = start_server(sasl=False)
    conn = await connect(srv.bootstrap_servers, {
        "writer.batch-size": str(1 << 20), "writer.dynamic-batch-size.enabled": "false",
        "writer.max-inflight-requests-per-bucket": "1", "request-timeout": "30000"})
    schema = pa.schema([("id", pa.int64())])
    path, t = await make_table(conn, unique_name(), schema, bucket_count=1)
    w = t.new_append().create_writer()
    await w.append([-1]).wait()
    first = pa.table({"id": pa.array(range(200_000), pa.int64())})  # 1.6 MB: two full batches
    tail = pa.table({"id": pa.array(range(200_000, 216_384), pa.int64())})  # 128 KiB, stays open
    srv.proc.send_signal(signal.SIGSTOP)
    try:
        w.write_arrow(first)
        deadline = time.monotonic() + 30
        while writer_metrics(conn, path)["requestsTotal"] < 2:  # the first batch is out, unanswered
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        w.write_arrow(tail)
        open_batch = w._acc._states[(None, 0)].open
        assert open_batch is not None and open_batch.payload is None
        flushing = asyncio.ensure_future(w.flush())
        while open_batch.payload is None:
            assert time.monotonic() < deadline, "the batch flush() sealed was not encoded ahead"
            await asyncio.sleep(0.01)
        assert not flushing.done()
    finally:
        srv.proc.send_signal(signal.SIGCONT)
    await flushing
    assert await read_ids(t) == [-1] + list(range(216_384))
    await conn.close()
