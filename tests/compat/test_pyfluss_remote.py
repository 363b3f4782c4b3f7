"""The official client (pyfluss 1.0.0, written against the Java server) reads what our server tiered:
from a local remote dir and from S3 (a real moto server on loopback). It is the referee of the
remote layout and of the FetchLog remote info (segment list, first_start_pos, security token)."""
from __future__ import annotations

import asyncio
import time
import uuid

import pyarrow as pa
import pytest

import fluss_fast as ff

from conftest import ServerProcess
from pyfluss_util import call, connect
from remote_util import BUCKET, moto_s3, s3_args, tiering_args, wait_tiered  # noqa: F401

fluss = pytest.importorskip("fluss")

pytestmark = pytest.mark.compat

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
ROWS = 3000
PER_BATCH = 100


def _batch(lo, hi, region=None):
    cols = {"id": pa.array(range(lo, hi), pa.int64()), "name": [f"n{i % 17}" for i in range(lo, hi)],
            "score": [i * 0.25 for i in range(lo, hi)]}
    if region is not None:
        cols["region"] = [region] * (hi - lo)
    return pa.record_batch(cols)


async def _fill(bootstrap, db, name, partitioned=False):
    """Written with fluss_fast, one batch per produce; returns a timestamp taken a third in."""
    conn = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": bootstrap}))
    try:
        adm = conn.get_admin()
        await adm.create_database(db, ignore_if_exists=True)
        path = ff.TablePath(db, name)
        schema = pa.schema(list(SCHEMA) + ([("region", pa.string())] if partitioned else []))
        kw = {"partition_keys": ["region"]} if partitioned else {}
        await adm.create_table(path, ff.TableDescriptor(ff.Schema(schema), bucket_count=1, **kw))
        if partitioned:
            for region in ("eu", "us"):
                await adm.create_partition(path, {"region": region})
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        mark = None
        for lo in range(0, ROWS, PER_BATCH):
            if lo == ROWS // 3:
                await asyncio.sleep(0.05)
                mark = int(time.time() * 1000)
                await asyncio.sleep(0.05)
            for region in (("eu", "us") if partitioned else (None,)):
                w.write_arrow_batch(_batch(lo, lo + PER_BATCH, region))
            await w.flush()
        pids = {}
        if partitioned:
            pids = {p.partition_name: p.partition_id for p in await adm.list_partition_infos(path)}
        return mark, pids
    finally:
        await conn.close()


async def _poll(scanner, n, timeout=30):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        recs = await call(scanner.poll(300))
        for _bucket, items in recs.items():
            out.extend((r.offset, r.row) for r in items)
    return out


async def _check_reads(bootstrap, db, mark, first_remote_end):
    conn = await connect(fluss, bootstrap)
    try:
        path = fluss.TablePath(db, "events")
        t = await call(conn.get_table(path))
        adm = conn.get_admin()
        # earliest, with to_arrow: identical to what was written
        bs = await call(t.new_scan().create_record_batch_log_scanner())
        bs.subscribe(0, fluss.EARLIEST_OFFSET)
        tab = await call(bs.to_arrow())
        assert tab.to_pydict() == pa.Table.from_batches([_batch(0, ROWS)]).to_pydict()
        # poll loop from a middle offset inside a remote segment
        mid = first_remote_end // 2 + 7
        sc = await call(t.new_scan().create_log_scanner())
        sc.subscribe(0, mid)
        got = await _poll(sc, ROWS - mid)
        assert [o for o, _ in got] == list(range(mid, ROWS))
        assert [r["id"] for _, r in got] == list(range(mid, ROWS))
        assert got[0][1]["name"] == f"n{mid % 17}" and got[0][1]["score"] == mid * 0.25
        # by timestamp
        offs = await call(adm.list_offsets(path, [0], fluss.OffsetSpec.timestamp(mark)))
        assert offs[0] == ROWS // 3
        assert (await call(adm.list_offsets(path, [0], fluss.OffsetSpec.earliest())))[0] == 0
        ts_sc = await call(t.new_scan().create_record_batch_log_scanner())
        ts_sc.subscribe(0, offs[0])
        assert (await call(ts_sc.to_arrow())).column("id").to_pylist() == list(range(ROWS // 3, ROWS))
        # projection
        ps = await call(t.new_scan().project_by_name(["score", "id"]).create_record_batch_log_scanner())
        ps.subscribe(0, 0)
        pt = await call(ps.to_arrow())
        assert pt.column("id").to_pylist() == list(range(ROWS))
        assert pt.column("score").to_pylist() == [i * 0.25 for i in range(ROWS)]
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def local_tiering_server(tmp_path_factory):
    remote = str(tmp_path_factory.mktemp("remote"))
    srv = ServerProcess(sasl=False, extra_args=tiering_args(remote)).start()
    yield srv
    srv.close()


async def test_pyfluss_reads_local_remote_dir(local_tiering_server):
    srv = local_tiering_server
    db = f"pyrem_{uuid.uuid4().hex[:8]}"
    mark, _ = await _fill(srv.bootstrap_servers, db, "events")
    p = await asyncio.to_thread(wait_tiered, srv.data_dir, db, "events", 3)
    await _check_reads(srv.bootstrap_servers, db, mark, p["manifest"]["remote_log_segments"][0]["end_offset"])


async def test_pyfluss_reads_partitioned_remote(local_tiering_server):
    srv = local_tiering_server
    db = f"pyremp_{uuid.uuid4().hex[:8]}"
    _, pids = await _fill(srv.bootstrap_servers, db, "events", partitioned=True)
    for name, pid in pids.items():
        await asyncio.to_thread(wait_tiered, srv.data_dir, db, "events", 2, f"{name}-p{pid}/log-0")
    conn = await connect(fluss, srv.bootstrap_servers)
    try:
        t = await call(conn.get_table(fluss.TablePath(db, "events")))
        bs = await call(t.new_scan().create_record_batch_log_scanner())
        bs.subscribe_partition_buckets({(pid, 0): fluss.EARLIEST_OFFSET for pid in pids.values()})
        tab = await call(bs.to_arrow())
        for region in ("eu", "us"):
            part = tab.filter(pa.compute.equal(tab.column("region"), region)).sort_by("id")
            assert part.column("id").to_pylist() == list(range(ROWS))
        sc = await call(t.new_scan().create_log_scanner())
        sc.subscribe_partition(pids["us"], 0, 1234)
        got = await _poll(sc, ROWS - 1234)
        assert [o for o, _ in got] == list(range(1234, ROWS))
        assert all(r["region"] == "us" for _, r in got)
    finally:
        await conn.close()


async def test_pyfluss_reads_s3(start_server, moto_s3):  # noqa: F811
    prefix = uuid.uuid4().hex[:8]
    srv = start_server(sasl=False, extra_args=tiering_args(f"s3://{BUCKET}/{prefix}") + s3_args(moto_s3.endpoint))
    db = f"pyrs3_{prefix}"
    mark, _ = await _fill(srv.bootstrap_servers, db, "events")
    p = await asyncio.to_thread(wait_tiered, srv.data_dir, db, "events", 3)
    await _check_reads(srv.bootstrap_servers, db, mark, p["manifest"]["remote_log_segments"][0]["end_offset"])
    # and fluss_fast on the same server, the same way
    conn = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": srv.bootstrap_servers}))
    try:
        t = await conn.get_table(ff.TablePath(db, "events"))
        bs = await t.new_scan().create_record_batch_log_scanner()
        bs.subscribe(0, ff.EARLIEST_OFFSET)
        tab = await bs.to_arrow()
        assert tab.to_pydict() == pa.Table.from_batches([_batch(0, ROWS)]).to_pydict()
    finally:
        await conn.close()
