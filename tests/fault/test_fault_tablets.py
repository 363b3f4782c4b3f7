"""A three-tablet-server cluster whose tablet server 1 dies for the client (its listener closed,
its connections reset) and comes back, twice: the writer keeps exactly-once and the scanner keeps
reading gap-free, the buckets led by the other servers undisturbed meanwhile."""
from __future__ import annotations

import time

import pytest

import fluss_fast as fluss

from fault.kinds import CLIENT, SCHEMA, row, run_with_faults

pytestmark = pytest.mark.timeout(120)

BUCKETS = 6


async def test_tablet_listener_dies_and_comes_back(target3, unique_name):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": target3.bootstrap, **CLIENT}))
    path = fluss.TablePath("fluss", unique_name("tablets"))
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS))
    table = await conn.get_table(path)
    leaders = {n.id for n in table.bucket_leaders().values()}
    assert leaders == {0, 1, 2}
    writer = table.new_append().create_writer()
    writer.append(row(0))
    await writer.flush()
    assert 1 in target3.proxy.tablet_nodes()
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(BUCKETS)})
    seen, offsets = [], {b: [] for b in range(BUCKETS)}

    async def poll_once():
        recs = await scanner.poll(200)
        for tb in recs.buckets():
            for r in recs.records(tb):
                seen.append(r.row["id"])
                offsets[tb.bucket_id].append(r.offset)

    async def work(done):
        n = 1
        while True:
            last = done.is_set()
            for i in range(n, n + 60):
                writer.append(row(i))
            await writer.flush()
            n += 60
            await poll_once()
            if last:
                return n

    total = await run_with_faults(target3, "refuse", work, rounds=2, pause=0.5, node=1)
    deadline = time.monotonic() + 30
    while len(seen) < total and time.monotonic() < deadline:
        await poll_once()
    assert len(seen) == total, f"{len(seen) - len(set(seen))} duplicates, {total - len(set(seen))} missing"
    assert sorted(seen) == list(range(total))
    for b, offs in offsets.items():
        assert offs == list(range(len(offs))), f"bucket {b}: offsets not consecutive"
    await conn.close()
