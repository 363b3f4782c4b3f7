"""Big fetch responses land in a connection's FramePool: a buffer is reused only once no view of it
is left, and an idle connection gives its spare buffers back."""
from __future__ import annotations

import asyncio
import os

import pyarrow as pa

import fluss_fast as ff
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api
from fluss_fast.rpc.connection import Connection
from fluss_fast.rpc.frame_pool import FramePool
from fluss_fast.rpc.wire import parse_fetch_response

ROWS = 3000  # of 100 random bytes each: ~300 KB even after ZSTD, far above the 64 KB big-frame size


async def _filled_table(fluss_server, unique_name):
    conn = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": fluss_server.bootstrap_servers}))
    admin = conn.get_admin()
    db = unique_name("pool")
    await admin.create_database(db)
    path = ff.TablePath(db, "t")
    schema = pa.schema([("id", pa.int32()), ("blob", pa.binary())])
    await admin.create_table(path, ff.TableDescriptor(ff.Schema(schema), bucket_count=1))
    table = await conn.get_table(path)
    w = table.new_append().create_writer()
    w.write_arrow(pa.table({"id": pa.array(range(ROWS), pa.int32()),
                            "blob": [os.urandom(100) for _ in range(ROWS)]}))
    await w.flush()
    info = await admin.get_table_info(path)
    return conn, info.table_id, table.bucket_leaders()[0]  # known: the writer just used it


async def _tablet_connection(leader: ff.ServerNode) -> Connection:
    """A plain connection to the tablet server that leads bucket 0 (one of several on a Java cluster)."""
    return await Connection.open(leader.host, leader.port)


def _fetch(table_id: int, offset: int = 0, *, wait_ms: int = 0) -> bytes:
    req = pb.FetchLogRequest(follower_server_id=-1, max_bytes=16 << 20, min_bytes=1 if wait_ms else 0,
                             max_wait_ms=wait_ms)
    t = req.tables_req.add(table_id=table_id, projection_pushdown_enabled=False)
    t.buckets_req.add(bucket_id=0, fetch_offset=offset, max_fetch_bytes=8 << 20)
    return req.SerializeToString()


def _records(body) -> bytes:
    for _tid, buckets in parse_fetch_response(body):
        for r in buckets:
            assert r.error_code == 0 and r.records is not None
            return bytes(body[r.records[0]:r.records[1]])
    raise AssertionError("no bucket in the response")


async def test_fetch_buffers_are_reused(fluss_server, unique_name):
    client, table_id, leader = await _filled_table(fluss_server, unique_name)
    conn = await _tablet_connection(leader)
    try:
        pool: FramePool = conn._transport.get_protocol().pool
        # a long poll at the end of the log keeps one request pending throughout
        poll = asyncio.ensure_future(conn.request_raw(Api.FETCH_LOG, _fetch(table_id, ROWS, wait_ms=3000)))
        first = await conn.request_raw(Api.FETCH_LOG, _fetch(table_id))
        want = _records(first)
        assert len(first) > 64 * 1024 and pool.stats()["allocated"] == 1
        # while a view of the first buffer lives, the next answer gets a buffer of its own
        second = await conn.request_raw(Api.FETCH_LOG, _fetch(table_id))
        assert pool.stats()["allocated"] == 2 and pool.stats()["reused"] == 0
        assert _records(second) == want and _records(first) == want
        del first, second
        # both are free now: the third answer reuses one, with the right bytes in it
        third = await conn.request_raw(Api.FETCH_LOG, _fetch(table_id))
        assert pool.stats()["reused"] == 1 and _records(third) == want
        del third
        poll.cancel()
    finally:
        conn.close()
        await client.close()


async def test_idle_connection_trims_its_pool(fluss_server, unique_name):
    client, table_id, leader = await _filled_table(fluss_server, unique_name)
    conn = await _tablet_connection(leader)
    try:
        pool: FramePool = conn._transport.get_protocol().pool
        poll = asyncio.ensure_future(conn.request_raw(Api.FETCH_LOG, _fetch(table_id, ROWS, wait_ms=5000)))
        body = await conn.request_raw(Api.FETCH_LOG, _fetch(table_id))
        assert len(_records(body)) > 64 * 1024
        del body
        more = await conn.request_raw(Api.FETCH_LOG, _fetch(table_id))
        del more
        assert pool.stats()["free_bytes"] + pool.stats()["busy"] > 0
        # no big frame for a while: spares go back although a request is still pending
        for _ in range(40):
            await asyncio.sleep(0.05)
            if pool.stats()["free_bytes"] == 0 and pool.stats()["busy"] == 0:
                break
        assert pool.stats()["free_bytes"] == 0 and pool.stats()["busy"] == 0
        assert not poll.done()
        poll.cancel()
    finally:
        conn.close()
        await client.close()


def _mapping_kb(address: int, field: str) -> int:
    """``field`` (e.g. AnonHugePages, Rss) in kB of the mapping that holds ``address``."""
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == f"{field}:":
                return int(line.split()[1])
    raise AssertionError(f"no mapping holds {address:#x}")


def _thp_madvise_works() -> bool:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = f.read()
    except OSError:
        return False
    return "[never]" not in mode and os.path.exists("/proc/self/smaps")


def test_big_receive_buffers_fill_whole_blocks_with_huge_pages(monkeypatch):
    """Once the process has earned huge pages (a read ended, a pool gave buffers back), a frame's
    whole 2 MiB blocks, and a last block it fills at least half of, fault in as huge pages (one
    fault each instead of 512); a shorter tail stays in small pages, so the buffer's 8 MiB size
    class adds no memory."""
    import pytest

    from fluss_fast.codec.wire import memory

    monkeypatch.setattr(memory.HUGE_PAGES, "earned", True)

    if not _thp_madvise_works():
        pytest.skip("transparent huge pages are off here")
    import mmap

    control = mmap.mmap(-1, 4 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    control.madvise(mmap.MADV_HUGEPAGE)
    control[:] = b"\x01" * len(control)
    if _mapping_kb(pa.py_buffer(control).address, "AnonHugePages") == 0:
        pytest.skip("the kernel gives no huge pages here (THP off or memory fragmented)")
    for n, want_huge_kb in (((4 << 20) + 12345, 4096), ((5 << 20) + 12345, 6144)):
        pool = FramePool()
        buf = pool.take(n)
        view = memoryview(buf)
        view[:n] = b"\x01" * n
        address = pa.py_buffer(buf).address
        huge = _mapping_kb(address, "AnonHugePages")
        rss = _mapping_kb(address, "Rss")
        del view
        assert huge == want_huge_kb, n
        assert rss <= max(want_huge_kb, (n + 4095) // 4096 * 4), n


def test_a_fresh_process_asks_for_no_huge_pages_until_a_pool_gives_buffers_back(monkeypatch):
    """The first big frames of a process land in small pages (a huge page of memory the host took
    back costs more than the 512 small faults it saves); once a pool trims its spares, the process
    reuses memory and fresh buffers are advised again."""
    from fluss_fast.codec.wire import memory
    from fluss_fast.rpc import frame_pool

    monkeypatch.setattr(memory.HUGE_PAGES, "earned", False)
    asked = []
    real = frame_pool.advise_huge_pages
    monkeypatch.setattr(frame_pool, "advise_huge_pages", lambda *a: asked.append(real(*a)) or asked[-1])
    pool = FramePool()
    bufs = [pool.take(5 << 20), pool.take(3 << 20)]
    assert asked == [False, False]
    for b in bufs:
        pool.handed_out(b)
    del b
    bufs.clear()
    assert pool.take(5 << 20) is not None and pool.stats()["reused"] == 1  # still reuses
    pool.trim()
    assert memory.HUGE_PAGES.earned
    pool.take(5 << 20)
    assert len(asked) == 3 and asked[-1] == (memory._MADV_HUGEPAGE is not None)
