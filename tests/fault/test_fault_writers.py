"""Writers keep exactly-once and gap-free through dropped, reset, cut, delayed and frozen
connections and through kill -9 of the server (idempotence on, the default)."""
from __future__ import annotations

import asyncio

import pytest

import fluss_fast as fluss

from fault.kinds import CLIENT, FAULTS, WRITERS, run_with_faults

pytestmark = pytest.mark.timeout(120)

CHUNK = 100


async def write_until(kind, writer, done) -> int:
    """Chunks of ids 0, 1, 2, ... each flushed (an undelivered batch raises) until ``done``; returns
    how many ids were written and acknowledged."""
    n = 0
    while True:
        last = done.is_set()
        kind.write(writer, range(n, n + CHUNK))
        await writer.flush()
        n += CHUNK
        if last:
            return n
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("kind", WRITERS, ids=lambda k: k.name)
@pytest.mark.parametrize("fault", FAULTS)
async def test_writer_exactly_once_through_faults(target, kind, fault, unique_name):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": target.bootstrap, **CLIENT}))
    path = fluss.TablePath("fluss", unique_name(kind.name.replace("-", "_")))
    await conn.get_admin().create_table(path, kind.descriptor())
    table = await conn.get_table(path)
    writer = kind.open(table)
    rows = await run_with_faults(target, fault, lambda done: write_until(kind, writer, done))
    assert target.injected >= 1
    ids = await kind.read_ids(table)
    assert len(ids) == rows, f"{len(ids) - len(set(ids))} duplicates, {rows - len(set(ids))} missing of {rows}"
    assert sorted(ids) == list(range(rows))
    await conn.close()
