"""Record polls answered from results drained ahead on the runtime (client/scan/poll_ahead.py):
the same records in the same order as polls that go to the runtime, nothing stale after the
subscriptions change, the caller's loop still gets turns, and the blocking spelling shares it."""
from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest

import fluss_fast as ff
from fluss_fast.client.scan import poll_ahead

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string())])
ROWS = 6000


@pytest.fixture
async def conn(fluss_server):
    c = await ff.FlussConnection.create(ff.Config({
        "bootstrap.servers": fluss_server.bootstrap_servers,
        "writer.bucket.no-key-assigner": "round_robin",
        # small polls: many answers come from the drained-ahead results
        "scanner.log.max-poll-records": "97"}))
    yield c
    await c.close()


async def _filled(conn, unique_name, rows, per_write):
    db = unique_name("ahead")
    await conn.get_admin().create_database(db)
    path = ff.TablePath(db, "t")
    await conn.get_admin().create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=3))
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    # several write batches per bucket: answers hold several batches, polls cross their edges
    for start in range(0, rows, per_write):
        w.write_arrow(pa.table({"id": pa.array(range(start, start + per_write), pa.int64()),
                                "tag": [f"t{i % 5}" for i in range(start, start + per_write)]}))
        await w.flush()
    return t


@pytest.fixture
async def table(conn, unique_name):
    return await _filled(conn, unique_name, ROWS, 1000)


@pytest.fixture
async def small_table(conn, unique_name):
    # every bucket's rows fit into the results drained ahead (poll_ahead.DEPTH polls of 97)
    return await _filled(conn, unique_name, 900, 150)


def _ahead(scanner):
    return scanner._fetcher.ahead


async def _poll_until(scanner, n, timeout_s=20):
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        got.append(await scanner.poll(1000))
    return got


async def test_every_record_once_in_offset_order_per_bucket(table):
    sc = await table.new_scan().create_log_scanner()
    sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
    polls = await _poll_until(sc, 1)
    seen = sum(len(p) for p in polls)
    while seen < ROWS:
        p = await sc.poll(1000)
        polls.append(p)
        seen += len(p)
        assert len(polls) < 5000
    by_bucket = {}
    ids = []
    for p in polls:
        assert len(p) <= 97
        ids.extend(r.row["id"] for r in p)
        for tb, recs in p.items():
            by_bucket.setdefault(tb, []).extend(r.offset for r in recs)
    assert sorted(ids) == list(range(ROWS))
    assert len(by_bucket) == 3
    for tb, offs in by_bucket.items():
        assert offs == list(range(len(offs))), tb
    assert _ahead(sc) is not None
    assert (await sc.poll(0)).is_empty()


async def _bucket_offsets(sc, until_quiet_s=0.5, timeout_s=20):
    out = {}
    deadline = time.monotonic() + timeout_s
    quiet_since = None
    while time.monotonic() < deadline:
        p = await sc.poll(100)
        if p.is_empty():
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > until_quiet_s:
                break
            continue
        quiet_since = None
        for tb, recs in p.items():
            out.setdefault(tb.bucket_id, []).extend(r.offset for r in recs)
    return out


async def test_subscription_changes_between_polls_leave_nothing_stale(small_table):
    table = small_table
    sc = await table.new_scan().create_log_scanner()
    sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
    first = await sc.poll(5000)
    assert not first.is_empty()

    def drained_buckets():
        return {tb.bucket_id for entry in list(_ahead(sc)._ready) for tb in entry}

    deadline = time.monotonic() + 10
    # the fetcher's drained set changes on server answers; it has no event to wait on
    while drained_buckets() != {0, 1, 2} and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    # records of every bucket wait drained ahead when the subscriptions change
    assert drained_buckets() == {0, 1, 2}
    start = {tb.bucket_id: recs[-1].offset + 1 for tb, recs in first.items()}
    sc.unsubscribe(1)
    sc.subscribe(2, 10)
    offs = await _bucket_offsets(sc)
    # what a scanner that never drained ahead reads
    ref = await table.new_scan().create_log_scanner()
    ref.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
    ends = {b: len(o) for b, o in (await _bucket_offsets(ref)).items()}
    assert sum(ends.values()) == 900
    assert 1 not in offs
    assert offs[2] == list(range(10, ends[2]))
    assert offs.get(0, []) == list(range(start.get(0, 0), ends[0]))


async def test_blocking_poll_takes_drained_records_too(table):
    sc = await table.new_scan().create_log_scanner()
    sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})

    def drain():
        ids = []
        deadline = time.monotonic() + 20
        while len(ids) < ROWS and time.monotonic() < deadline:
            for r in sc.poll(1000):  # the older guides' spelling: no await
                ids.append(r.row["id"])
        return ids

    ids = await asyncio.to_thread(drain)
    assert sorted(ids) == list(range(ROWS))


async def test_polling_from_ready_results_still_yields_to_other_tasks(table, monkeypatch):
    monkeypatch.setattr(poll_ahead, "YIELD_AFTER_S", 0.0)
    sc = await table.new_scan().create_log_scanner()
    sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
    ticks = 0

    async def other():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.get_running_loop().create_task(other())
    try:
        n = 0
        deadline = time.monotonic() + 20
        before = None
        while n < ROWS and time.monotonic() < deadline:
            ahead = _ahead(sc)
            ready = ahead is not None and ahead.has_ready()
            if ready:
                before = ticks
            p = await sc.poll(1000)
            if ready and before is not None:
                # the answer came from the ready results and the other task still got a turn
                assert ticks > before
            n += len(p)
        assert n == ROWS
    finally:
        task.cancel()
