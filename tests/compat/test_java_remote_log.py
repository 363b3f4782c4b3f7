"""Remote log on the real thing: a Java cluster rolls small segments and tiers them to its
``remote.data.dir``; both clients (pyfluss 1.0.0 and fluss_fast) then read the tiered data back, from
the earliest offset and from the middle, identically. The Java tablet server decides which segments
are remote; the clients follow its FetchLog answers (remote segment lists) to the files."""
from __future__ import annotations

import asyncio
import glob
import os
import shutil
import tempfile
import time

import pyarrow as pa
import pytest

import fluss_fast as ff

from java_util import require_java
from pyfluss_util import call, connect

fluss = pytest.importorskip("fluss")

pytestmark = [pytest.mark.compat, pytest.mark.timeout(300)]

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("pad", pa.string())])
ROWS = 20_000
PER_BATCH = 500



@pytest.fixture(scope="module")
def tiering_cluster():
    require_java()
    from fluss_fast.cluster import JavaCluster

    data_dir = tempfile.mkdtemp(prefix="fluss-java-remote-")
    c = JavaCluster(data_dir, tablet_servers=1, settings={
        "log.segment.file-size": "256kb",
        "remote.log.task-interval-duration": "1s",
    }).start()
    yield c
    c.stop()
    shutil.rmtree(data_dir, ignore_errors=True)


def _batch(lo, hi):
    return pa.record_batch({"id": pa.array(range(lo, hi), pa.int64()),
                            "name": [f"n{i % 17}" for i in range(lo, hi)],
                            "pad": [f"{i:08d}" * 8 for i in range(lo, hi)]}, schema=SCHEMA)


async def _fill(bootstrap, name):
    conn = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": bootstrap}))
    try:
        path = ff.TablePath("fluss", name)
        desc = ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=1,
                                  properties={"table.log.tiered.local-segments": "1",
                                              "table.log.arrow.compression.type": "NONE"})
        await conn.get_admin().create_table(path, desc)
        table = await conn.get_table(path)
        writer = table.new_append().create_writer()
        for lo in range(0, ROWS, PER_BATCH):
            writer.write_arrow_batch(_batch(lo, lo + PER_BATCH))
            await writer.flush()
        return table.get_table_info().table_id
    finally:
        await conn.close()


def _remote_segments(cluster, table_id) -> list:
    return glob.glob(os.path.join(cluster.remote_dir, "log", "**", f"*{table_id}*", "**", "*.log"), recursive=True)


def _local_segments(cluster, table_id) -> list:
    node = cluster.tablet_servers[0]
    return glob.glob(os.path.join(node.home, "data", "**", f"*-{table_id}", "log-0", "*.log"), recursive=True)


async def _wait_tiered(cluster, table_id, timeout=90.0):
    """Until segments are in the remote dir and the first local segment no longer starts at 0."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        local = sorted(os.path.basename(p) for p in _local_segments(cluster, table_id))
        if _remote_segments(cluster, table_id) and local and local[0] != "00000000000000000000.log":
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"nothing tiered after {timeout} s: remote {_remote_segments(cluster, table_id)}, "
                         f"local {_local_segments(cluster, table_id)}")


async def _read(mod, bootstrap, name, start):
    conn = await connect(mod, bootstrap)
    try:
        table = await call(conn.get_table(mod.TablePath("fluss", name)))
        scanner = await call(table.new_scan().create_record_batch_log_scanner())
        scanner.subscribe(0, start)
        return await call(scanner.to_arrow(), timeout=120)
    finally:
        await call(conn.close())


async def test_both_clients_read_tiered_segments(tiering_cluster, unique_name):
    name = unique_name("tiered")
    table_id = await _fill(tiering_cluster.bootstrap_servers, name)
    await _wait_tiered(tiering_cluster, table_id)
    expected = pa.Table.from_batches([_batch(0, ROWS)])
    middle = ROWS // 2 + 7
    for start in (fluss.EARLIEST_OFFSET, middle):
        theirs = await _read(fluss, tiering_cluster.bootstrap_servers, name, start)
        ours = await _read(ff, tiering_cluster.bootstrap_servers, name, start)
        want = expected if start == fluss.EARLIEST_OFFSET else expected.slice(middle)
        assert theirs.num_rows == want.num_rows, ("pyfluss", start)
        assert ours.num_rows == want.num_rows, ("fluss_fast", start)
        assert ours.equals(theirs.cast(ours.schema)), start
        assert ours.sort_by("id").equals(want.cast(ours.schema)), start
