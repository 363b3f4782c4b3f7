"""Acknowledged log data survives kill -9 of the server; offsets, writer ids and table ids continue."""
from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest

from fluss_fast.codec.log import logbatch as lb
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api

import pyfluss_util
from pyfluss_util import call
from wire import WireClient

fluss = pytest.importorskip("fluss")

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])


async def connect(srv):
    return await pyfluss_util.connect(fluss, srv.bootstrap_servers)


def rows(start, n):
    return [{"id": i, "name": f"name-{i}", "score": i / 4} for i in range(start, start + n)]


async def read_all(table, buckets, expect):
    """{bucket: [(offset, row), ...]} once ``expect`` records arrived."""
    scanner = await call(table.new_scan().create_log_scanner())
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
    got = {}
    n = 0
    for _ in range(100):
        recs = await call(scanner.poll(300))
        for bucket, items in recs.items():
            got.setdefault(bucket.bucket_id, []).extend((r.offset, r.row) for r in items)
            n += len(items)
        if n >= expect:
            break
    return got


def ids_of(got):
    return sorted(r["id"] for items in got.values() for _, r in items)


def init_writer(srv) -> int:
    with WireClient(srv.bootstrap_servers) as c:
        meta = c.call(Api.GET_METADATA, pb.MetadataRequest())
        node = meta.tablet_servers[0]
    with WireClient(f"{node.host}:{node.port}") as t:
        return t.call(Api.INIT_WRITER, pb.InitWriterRequest()).writer_id


async def test_kill_and_restart_keeps_everything(start_server, monkeypatch):
    # small segments so that the data spans several and recovery sees sealed ones too
    monkeypatch.setenv("FLUSS_FAST_LOG_SEGMENT_BYTES", "4096")
    srv = start_server(tablet_servers=1, sasl=False)
    conn = await connect(srv)
    admin = conn.get_admin()
    tp = fluss.TablePath("fluss", "restart_log")
    await call(admin.create_table(tp, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=2)))
    table = await call(conn.get_table(tp))
    table_id = table.get_table_info().table_id
    writer = table.new_append().create_writer()
    for chunk in range(10):
        writer.write_arrow(pa.Table.from_pylist(rows(chunk * 30, 30), schema=SCHEMA))
        await call(writer.flush())
    before = await call(admin.list_offsets(tp, [0, 1], fluss.OffsetSpec.latest()))
    assert sum(before.values()) == 300
    await conn.close()
    wid_before = init_writer(srv)

    srv.kill()
    seg_files = glob.glob(os.path.join(srv.data_dir, "log", "fluss", f"restart_log-{table_id}", "log-*", "*.log"))
    assert len(seg_files) > 2, "expected rolled segments"
    srv.start()

    conn = await connect(srv)
    admin = conn.get_admin()
    assert await call(admin.list_offsets(tp, [0, 1], fluss.OffsetSpec.latest())) == before
    table = await call(conn.get_table(tp))
    got = await read_all(table, 2, 300)
    assert ids_of(got) == list(range(300))
    by_id = {r["id"]: r for items in got.values() for _, r in items}
    assert [by_id[i] for i in range(300)] == rows(0, 300)
    for b, items in got.items():
        assert [off for off, _ in items] == list(range(before[b]))
    # new writes continue at the old high watermarks
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.Table.from_pylist(rows(300, 40), schema=SCHEMA))
    await call(writer.flush())
    after = await call(admin.list_offsets(tp, [0, 1], fluss.OffsetSpec.latest()))
    assert sum(after.values()) == 340 and all(after[b] >= before[b] for b in (0, 1))
    got = await read_all(table, 2, 340)
    assert ids_of(got) == list(range(340))
    for b, items in got.items():
        assert [off for off, _ in items] == list(range(after[b]))
    # ids continue: writer ids and table ids are never handed out twice
    assert init_writer(srv) > wid_before
    tp2 = fluss.TablePath("fluss", "restart_log2")
    await call(admin.create_table(tp2, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=1)))
    assert (await call(admin.get_table_info(tp2))).table_id > table_id
    await conn.close()


async def test_torn_tail_after_kill_is_cut(start_server):
    srv = start_server(tablet_servers=1, sasl=False)
    conn = await connect(srv)
    admin = conn.get_admin()
    tp = fluss.TablePath("fluss", "torn")
    await call(admin.create_table(tp, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=1)))
    table = await call(conn.get_table(tp))
    table_id = table.get_table_info().table_id
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.Table.from_pylist(rows(0, 50), schema=SCHEMA))
    await call(writer.flush())
    await conn.close()
    srv.kill()
    # what a kill in the middle of a write leaves behind: half a batch at the end
    seg = os.path.join(srv.data_dir, "log", "fluss", f"torn-{table_id}", "log-0", "0" * 20 + ".log")
    size = os.path.getsize(seg)
    with open(seg, "rb") as f:
        whole = f.read()
    first = next(lb.iter_batches(whole))
    with open(seg, "ab") as f:
        f.write(whole[:first.total_size // 2])
    srv.start()
    assert os.path.getsize(seg) == size
    conn = await connect(srv)
    table = await call(conn.get_table(tp))
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.Table.from_pylist(rows(50, 10), schema=SCHEMA))
    await call(writer.flush())
    got = (await read_all(table, 1, 60))[0]
    assert [off for off, _ in got] == list(range(60))
    assert [r for _, r in got] == rows(0, 60)
    await conn.close()
