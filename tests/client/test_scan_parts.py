"""Bounded reads against the embedded server: a large answer decoded as several jobs keeps rows and
offsets in order whatever order the jobs finish in, the receive buffers go back when the read ends,
and reads over many buckets, some empty, end."""
from __future__ import annotations

import asyncio
import os
import random
import time
from collections import namedtuple

import pyarrow as pa
import pytest

import fluss_fast as ff
from fluss_fast.client.scan import decode_jobs

SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])


def _rows(lo, hi):
    # random hex hardly compresses: answers of megabytes from modest row counts
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()),
                     "payload": [os.urandom(60).hex() for _ in range(lo, hi)]}, schema=SCHEMA)


@pytest.fixture
async def conn(fluss_server):
    # small log batches (~64 KB), so that one answer holds many of them
    c = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": fluss_server.bootstrap_servers,
                                                   "writer.bucket.no-key-assigner": "round_robin",
                                                   "writer.batch-size": "65536",
                                                   "writer.dynamic-batch-size.enabled": "false"}))
    yield c
    await c.close()


async def _table(conn, unique_name, buckets):
    db = unique_name("parts")
    await conn.get_admin().create_database(db, ignore_if_exists=True)
    path = ff.TablePath(db, "t")
    await conn.get_admin().create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=buckets))
    return await conn.get_table(path)


async def _write(table, data, rows_per_batch=400):
    w = table.new_append().create_writer()
    for b in data.to_batches(max_chunksize=rows_per_batch):
        w.write_arrow_batch(b)
    await w.flush()


async def test_parts_finishing_in_any_order_keep_each_bucket_in_offset_order(conn, unique_name,
                                                                           monkeypatch):
    t = await _table(conn, unique_name, 2)
    n = 24_000
    await _write(t, _rows(0, n))
    calls = []
    real = decode_jobs._decode_part
    rnd = random.Random(7)

    def shuffled(spec, tb, mv, start, end, fetch_offset, memory=None):
        calls.append((tb.bucket_id, start, end))
        time.sleep(rnd.random() * 0.004)  # later parts often finish first
        return real(spec, tb, mv, start, end, fetch_offset, memory)

    monkeypatch.setattr(decode_jobs, "_decode_part", shuffled)
    # a part per batch or two, so every large answer becomes several jobs
    monkeypatch.setattr(decode_jobs.split_response, "__defaults__", (1,))
    sc = await t.new_scan().create_record_batch_log_scanner()
    sc.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    got = await sc.to_arrow()
    assert got.num_rows == n
    assert sorted(got.column("id").to_pylist()) == list(range(n))
    # answers were split: several parts cut from the span of one answer
    ends = {(b, e) for b, _s, e in calls}
    assert any((b, s) in ends for b, s, _e in calls), calls
    # rows of one bucket come in offset order: round robin writes every bucket's ids ascending
    sc2 = await t.new_scan().create_log_scanner()
    sc2.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    seen = {0: [], 1: []}
    deadline = time.monotonic() + 20
    while sum(map(len, seen.values())) < n and time.monotonic() < deadline:
        for bucket, recs in (await sc2.poll(500)).items():
            seen[bucket.bucket_id].extend((rec.offset, rec.row["id"]) for rec in recs)
    for recs in seen.values():
        assert [o for o, _ in recs] == list(range(len(recs)))
        ids = [i for _, i in recs]
        assert ids == sorted(ids)
    batches = await _ordered_bounded(t)
    for b, ids in batches.items():
        assert ids == sorted(ids) and len(ids) == len(seen[b])


async def _ordered_bounded(t):
    """{bucket: ids} of a batch reader, which hands out each bucket's batches in offset order."""
    sc = await t.new_scan().create_record_batch_log_scanner()
    sc.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    out = {0: [], 1: []}
    while True:
        batches = await sc.poll_record_batch(2000)
        if not batches:
            break
        for rb in batches:
            out[rb.bucket.bucket_id].extend(rb.batch.column("id").to_pylist())
    return out


async def test_a_start_inside_a_batch_is_honoured_by_every_part(conn, unique_name, monkeypatch):
    t = await _table(conn, unique_name, 1)
    n = 8_000
    await _write(t, _rows(0, n), rows_per_batch=300)
    monkeypatch.setattr(decode_jobs.split_response, "__defaults__", (1,))
    sc = await t.new_scan().create_record_batch_log_scanner()
    sc.subscribe(0, 1234)  # inside a batch: rows below it are cut from the first part only
    got = await sc.to_arrow()
    assert got.column("id").to_pylist() == list(range(1234, n))


Res = namedtuple("Res", "records filtered_end_offset")


def test_combine_parts_keeps_entry_order_and_stops_at_the_first_failure():
    todo = [(None, None, 10, Res((0, 1), None)), (None, None, 50, Res(None, 70)),
            (None, None, 90, Res((5, 9), None))]
    parts = [(0, "a"), (0, "b"), (1, None), (2, "c"), (2, "d")]
    ok = [((["c1"], 20), None), ((["c2"], 30), None), ((None, None)), ((["c3"], 95), None),
          ((["c4"], 99), None)]
    out, err = decode_jobs.combine_parts(todo, parts, ok)
    assert err is None
    # entry 1 had no records: its next offset comes from filtered_end_offset
    assert out == [(["c1", "c2"], 30), ([], 70), (["c3", "c4"], 99)]
    boom = ValueError("bad batch")
    failed = ok[:3] + [((["c3"], 95), None), (None, boom)]
    out, err = decode_jobs.combine_parts(todo, parts, failed)
    # a failing part drops its bucket's other parts, as one job over the whole span would
    assert err is boom and out == [(["c1", "c2"], 30), ([], 70)]


async def _read_all_of_new_table(conn, name, n):
    """A bounded read of ``n`` rows just written to a new 3-bucket table: its scanner."""
    t = await _table(conn, name, 3)
    await _write(t, _rows(0, n))
    sc = await t.new_scan().create_record_batch_log_scanner()
    sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
    got = await sc.to_arrow()
    assert got.num_rows == n
    return sc


async def test_receive_buffers_go_back_when_a_bounded_read_ends(conn, unique_name, monkeypatch):
    from fluss_fast.rpc import connection as rpc_conn

    # the idle trim would also empty the pool, later: keep it out of the way
    monkeypatch.setattr(rpc_conn, "_POOL_IDLE_S", 60.0)
    n = 30_000
    sc = await _read_all_of_new_table(conn, unique_name, n)

    async def pool_stats():
        """The receive pools of every tablet server connection, summed (on the Java cluster the
        table's buckets may sit on any of its tablet servers)."""
        ctx = conn._ctx

        async def on_loop():
            total = {"allocated": 0, "reused": 0, "busy": 0, "free_bytes": 0}
            for node in list(ctx.metadata.tablets):
                c = ctx.open_connection(node)
                if c is not None:
                    for k, v in c._transport.get_protocol().pool.stats().items():
                        total[k] += v
            return total
        return await ctx.runtime.run(on_loop())

    stats = await pool_stats()
    assert stats["allocated"] > 0  # answers really came through the pool
    # a fetch sent before the read ended may still be answered after it: the Java server holds a
    # fetch without new data up to the scanner's wait-max time (500 ms) before it answers empty
    for _ in range(200):
        if stats["free_bytes"] == 0 and stats["busy"] == 0:
            break
        await asyncio.sleep(0.01)
        stats = await pool_stats()
    assert stats["free_bytes"] == 0 and stats["busy"] == 0, stats
    # the connection still works, and the next read starts afresh
    sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
    assert (await sc.to_arrow()).num_rows == n


async def test_spare_receive_buffers_go_when_the_last_answer_arrives(conn, unique_name, monkeypatch):
    # the spares can serve no later answer of the read, so they must not sit on top of the whole
    # result while the last answer decodes: they go the moment that answer is in, before any
    # decoding is applied
    from fluss_fast.client.scan import fetcher as fmod
    from fluss_fast.rpc import connection as rpc_conn

    monkeypatch.setattr(rpc_conn, "_POOL_IDLE_S", 60.0)
    events = []
    real_trim = fmod.LogFetcher._trim_receive_pool
    real_decoded = fmod.LogFetcher._decoded
    real_handle = fmod.LogFetcher._handle_response

    def handle(self, *args):
        events.append("arrived")
        return real_handle(self, *args)

    def trim(self, node, *rest):
        events.append("trim")
        return real_trim(self, node, *rest)

    def decoded(self, *args):
        events.append("decoded")
        return real_decoded(self, *args)

    monkeypatch.setattr(fmod.LogFetcher, "_trim_receive_pool", trim)
    monkeypatch.setattr(fmod.LogFetcher, "_decoded", decoded)
    monkeypatch.setattr(fmod.LogFetcher, "_handle_response", handle)
    await _read_all_of_new_table(conn, unique_name, 30_000)
    last_arrival = len(events) - 1 - events[::-1].index("arrived")
    assert events[last_arrival + 1:last_arrival + 2] == ["trim"], events


async def test_many_buckets_some_empty_end_and_read_everything(conn, unique_name, monkeypatch):
    monkeypatch.setattr(decode_jobs.split_response, "__defaults__", (1,))
    buckets = 12
    t = await _table(conn, unique_name, buckets)
    # 5 rows over 12 round-robin buckets: most stay empty; then one bucket gets large answers
    await _write(t, _rows(0, 5))
    sc = await t.new_scan().create_record_batch_log_scanner()
    sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(buckets)})
    got = await sc.to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(5))
    await _write(t, _rows(5, 20_000), rows_per_batch=2000)
    sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(buckets)})
    got = await sc.to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(20_000))
    sc.subscribe_buckets({b: ff.LATEST_OFFSET for b in range(buckets)})
    assert (await sc.to_arrow()).num_rows == 0


def test_split_cuts_after_whole_batches_and_keeps_a_cut_tail_with_the_last_part():
    from fluss_fast.codec.log import logbatch

    # three whole batches of ~1 KB (offsets 0-9, 10-19, 20-29) and the first 100 bytes of a
    # fourth, as a Java server sends when the byte budget ends inside a batch
    batches = [logbatch.build_batch(bytes(1000), schema_id=1, record_count=10, base_offset=10 * k)
               for k in range(4)]
    buf = b"".join(batches[:3]) + batches[3][:100]
    size = len(batches[0])
    spans = []

    class Spec:
        def decode_records(self, tb, mv, start, end, fetch_offset, memory=None):
            spans.append((start, end, fetch_offset))
            return [], fetch_offset

    r = Res((0, len(buf)), None)
    todo = [("tb", None, 5, r)]
    parts = decode_jobs.split_response(Spec(), memoryview(buf), todo, 1)
    for _k, job in parts:
        job()
    # a part per whole batch; the last one also carries the cut tail; the first keeps the fetch
    # offset (rows below it are dropped), the others start at their first batch
    assert spans == [(0, size, 5), (size, 2 * size, 10), (2 * size, len(buf), 20)]
    spans.clear()
    for _k, job in decode_jobs.split_response(Spec(), memoryview(buf), todo, 2 * size):
        job()
    assert spans == [(0, 2 * size, 5), (2 * size, len(buf), 20)]
    # nothing whole at all: one part over the span, which reports the batch that does not fit
    spans.clear()
    tail = batches[3][:100]
    for _k, job in decode_jobs.split_response(Spec(), memoryview(tail), [("tb", None, 30, Res((0, 100), None))], 1):
        job()
    assert spans == [(0, 100, 30)]


async def _filled_reader(conn, unique_name, n, rows_per_batch):
    """A 2-bucket table holding ids 0..n-1, and a coroutine function reading it all with to_arrow
    (the table as read: its batches are the body pool's memory)."""
    t = await _table(conn, unique_name, 2)
    await _write(t, _rows(0, n), rows_per_batch=rows_per_batch)

    async def read():
        sc = await t.new_scan().create_record_batch_log_scanner()
        sc.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
        return await sc.to_arrow()
    return read


async def test_bounded_reads_reuse_the_memory_of_dropped_results_never_of_held_ones(conn, unique_name):
    """to_arrow decodes into the process's BodyPool: a later read reuses the chunks of a result
    the caller dropped, and never writes into one the caller still holds."""
    from fluss_fast.codec.log.bodypool import BODY_POOL

    if BODY_POOL is None:
        pytest.skip("no private anonymous mappings here")
    n = 30_000
    read = await _filled_reader(conn, unique_name, n, 5000)

    def rows(table):
        return table.sort_by("id").to_pydict()

    first = await read()
    want = rows(first)
    assert want["id"] == list(range(n))
    second = await read()
    assert rows(first) == want and rows(second) == want
    reused = BODY_POOL.reused
    del second
    third = await read()
    assert BODY_POOL.reused > reused
    assert rows(first) == want and rows(third) == want


async def test_concurrent_bounded_reads_share_the_pool_and_each_gets_its_own_rows(conn, unique_name):
    """Four to_arrow calls at once fill the pool's chunks together; every result is whole and
    stays intact while the others are read again into reused memory."""
    from fluss_fast.codec.log.bodypool import BODY_POOL

    n = 12_000
    read = await _filled_reader(conn, unique_name, n, 3000)

    first = await asyncio.gather(*(read() for _ in range(4)))
    want = first[0].sort_by("id").to_pydict()
    assert want["id"] == list(range(n))
    keep = first[:2]
    del first
    again = await asyncio.gather(*(read() for _ in range(4)))
    for table in keep + again:
        assert table.sort_by("id").to_pydict() == want
    if BODY_POOL is not None:
        assert BODY_POOL._reads == 0 and BODY_POOL._current is None
