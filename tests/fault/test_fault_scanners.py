"""Scanners of every kind keep reading gap-free (every row exactly once, offsets consecutive)
through dropped, reset, cut, delayed and frozen connections and kill -9 of the server, while rows
keep arriving."""
from __future__ import annotations

import asyncio
import time

import pytest

import fluss_fast as fluss

from fault.kinds import BUCKETS, CLIENT, FAULTS, SCHEMA, row, run_with_faults

pytestmark = pytest.mark.timeout(120)

BEFORE = 300  # rows stored before the scanner starts; as many again arrive during the faults


async def _setup(target, unique_name):
    """(connection through the proxy, its table, a direct connection, the table on it)."""
    direct = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": target.server.bootstrap_servers,
                                                              **CLIENT}))
    path = fluss.TablePath("fluss", unique_name("scan"))
    await direct.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS))
    dtable = await direct.get_table(path)
    w = dtable.new_append().create_writer()
    for i in range(BEFORE):
        w.append(row(i))
    await w.flush()
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": target.bootstrap, **CLIENT}))
    return conn, await conn.get_table(path), direct, dtable


async def _feed(dtable, done, start=BEFORE):
    """Appends more rows (directly, not through the proxy) until the faults are over; returns the
    total number of rows stored."""
    n = start
    w = dtable.new_append().create_writer()
    while True:
        last = done.is_set()
        for i in range(n, n + 20):
            w.append(row(i))
        for _ in range(50):  # the server itself may be down (kill9): retry the chunk
            try:
                await w.flush()
                break
            except fluss.FlussError:
                await asyncio.sleep(0.1)
        n += 20
        if last:
            return n
        await asyncio.sleep(0.05)


def _check(ids, total):
    assert len(ids) == total, f"{len(ids) - len(set(ids))} duplicates, {total - len(set(ids))} missing of {total}"
    assert sorted(ids) == list(range(total))


async def _until(total_fut, have, poll_once, budget=60):
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        if total_fut.done() and have() >= total_fut.result():
            return
        await poll_once()
    raise AssertionError(f"only {have()} rows read")


async def read_poll(table, feed):
    s = await table.new_scan().create_log_scanner()
    s.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(BUCKETS)})
    ids, offsets = [], {b: [] for b in range(BUCKETS)}

    async def once():
        recs = await s.poll(300)
        for tb in recs.buckets():
            for r in recs.records(tb):
                ids.append(r.row["id"])
                offsets[tb.bucket_id].append(r.offset)

    await _until(feed, lambda: len(ids), once)
    for b, offs in offsets.items():
        assert offs == list(range(len(offs))), f"bucket {b}: offsets not consecutive"
    return ids


async def read_poll_arrow(table, feed):
    s = await table.new_scan().create_record_batch_log_scanner()
    s.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(BUCKETS)})
    ids = []

    async def once():
        ids.extend((await s.poll_arrow(300)).column("id").to_pylist())

    await _until(feed, lambda: len(ids), once)
    return ids


async def read_to_arrow(table, feed):
    """Bounded reads from the start, again and again: each must see a gap-free prefix."""
    s = await table.new_scan().create_record_batch_log_scanner()
    ids = []

    async def once():
        s.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(BUCKETS)})
        got = (await s.to_arrow()).column("id").to_pylist()
        assert len(got) == len(set(got)), "duplicates in a bounded read"
        ids[:] = got
        await asyncio.sleep(0.1)

    await _until(feed, lambda: len(ids), once)
    return ids


async def read_batch_scanner(table, feed):
    """LIMIT_SCAN of every bucket with a limit above its size: each bucket's rows, whole."""
    ids = []

    async def once():
        got = []
        for b in range(BUCKETS):
            bs = table.new_scan().limit(100_000).create_bucket_batch_scanner(
                fluss.TableBucket(table.get_table_info().table_id, b))
            got.extend((await bs.to_arrow()).column("id").to_pylist())
        ids[:] = got
        await asyncio.sleep(0.1)

    await _until(feed, lambda: len(ids), once)
    return ids


SCANNERS = {"poll": read_poll, "poll_arrow": read_poll_arrow, "to_arrow": read_to_arrow,
            "batch_scanner": read_batch_scanner}


@pytest.mark.parametrize("scanner", list(SCANNERS))
@pytest.mark.parametrize("fault", FAULTS)
async def test_scanner_gap_free_through_faults(target, scanner, fault, unique_name):
    conn, table, direct, dtable = await _setup(target, unique_name)
    loop = asyncio.get_running_loop()
    feed = loop.create_future()

    async def work(done):
        total = await _feed(dtable, done)
        feed.set_result(total)
        return total

    async def read():
        return await SCANNERS[scanner](table, feed)

    reader = asyncio.ensure_future(read())
    total = await run_with_faults(target, fault, work)
    ids = await reader
    _check(ids, total)
    await conn.close()
    await direct.close()
