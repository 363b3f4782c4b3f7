"""The embedded server's per-bucket log store: append, read, indexes, roll, recovery, idempotence."""
from __future__ import annotations

import asyncio
import os
import struct
from itertools import pairwise

import pytest

from fluss_fast.codec.log import logbatch as lb
from fluss_fast.error_codes import Errors
from fluss_fast.errors import FlussError
from fluss_fast.server import bucket_log, segment, segment_read
from fluss_fast.server.logstore import LogManager


class _Table:
    def __init__(self, table_id=7, database="db", table_name="events"):
        self.table_id = table_id
        self.database = database
        self.table_name = table_name


class _Partition:
    def __init__(self, partition_id, name):
        self.partition_id = partition_id
        self.name = name


T = _Table()


def batch(n_records=3, payload_size=100, writer_id=-1, seq=-1, schema_id=1, fill=None):
    payload = bytes([fill if fill is not None else n_records % 251]) * payload_size
    return lb.build_batch(payload, schema_id=schema_id, record_count=n_records, writer_id=writer_id,
                          batch_sequence=seq)


def headers(data):
    return list(lb.iter_batches(data))


def log_files(blog):
    return sorted(os.listdir(blog.dir))


async def test_append_assigns_offsets_and_timestamps(tmp_path):
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    before = bucket_log.now_ms()
    r1 = await blog.append(batch(3))
    r2 = await blog.append(batch(5) + batch(2))
    assert (r1.base_offset, r1.last_offset) == (0, 2)
    assert (r2.base_offset, r2.last_offset) == (3, 9)
    assert blog.high_watermark == 10
    data = await blog.read(0, 1 << 20)
    hs = headers(data)
    assert [h.base_offset for h in hs] == [0, 3, 8]
    assert [h.record_count for h in hs] == [3, 5, 2]
    # one commit timestamp per append, never decreasing, and the CRC still holds
    assert hs[1].commit_timestamp == hs[2].commit_timestamp >= hs[0].commit_timestamp >= before
    for h in hs:
        assert lb.verify_crc(data, h.position)
    lm.close()


async def test_bytes_on_disk_are_the_batches(tmp_path):
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 3)
    b = batch(4, payload_size=333)
    await blog.append(b)
    path = os.path.join(str(tmp_path), "db", "events-7", "log-3", "0" * 20 + ".log")
    with open(path, "rb") as f:
        stored = f.read()
    assert len(stored) == len(b)
    assert stored[21:] == b[21:]       # everything after BaseOffset/Length/Magic/CommitTimestamp
    assert stored[8:13] == b[8:13]
    lm.close()


async def test_read_from_middle_of_batch_and_byte_limits(tmp_path):
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    for _ in range(5):
        await blog.append(batch(10, payload_size=1000))
    size = len(batch(10, payload_size=1000))
    data = await blog.read(25, 1 << 20)
    assert headers(data)[0].base_offset == 20        # starts at the batch holding offset 25
    assert len(data) == 3 * size
    cut = await blog.read(0, size + 100)             # the last batch may be cut, as in Java
    assert len(cut) == size + 100
    assert [h.base_offset for h in headers(cut)] == [0]
    whole = await blog.read(0, 10, min_one=True)     # min-one rule: a whole batch anyway
    assert len(whole) == size
    assert await blog.read(0, 10, min_one=False) == whole[:10]
    assert await blog.read(50, 1 << 20) == b""        # at the high watermark: nothing
    with pytest.raises(FlussError) as e:
        blog.check_fetch_offset(51)
    assert e.value.error_code == 19 and "events" in e.value.message
    assert blog.check_fetch_offset(-2) == 0
    lm.close()


async def test_sparse_index_entries_are_java_layout(tmp_path):
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    positions = []
    for _ in range(12):
        positions.append(blog.segments[-1].size)
        await blog.append(batch(2, payload_size=1500))
    with open(os.path.join(blog.dir, "0" * 20 + ".index"), "rb") as f:
        idx = list(struct.iter_unpack(">ii", f.read()))
    with open(os.path.join(blog.dir, "0" * 20 + ".timeindex"), "rb") as f:
        tidx = list(struct.iter_unpack(">qi", f.read()))
    assert idx, "expected index entries after more than 4 KiB"
    for rel, pos in idx:
        # each entry maps the last offset of an append to the position where that append starts
        k = positions.index(pos)
        assert rel == 2 * k + 1
    assert all(a[0] < b[0] for a, b in pairwise(idx))
    assert len(tidx) >= 1 and all(0 <= off < 24 for _, off in tidx)
    # lookups through the index land on the right batch for every offset
    for off in range(24):
        data = await blog.read(off, 1 << 20)
        first = headers(data)[0]
        assert first.base_offset <= off <= first.last_offset
    lm.close()


async def test_roll_and_read_across_segments(tmp_path):
    one = len(batch(5, payload_size=1000))
    lm = LogManager(str(tmp_path), segment_bytes=3 * one)
    blog = lm.get(T, None, 1)
    for i in range(10):
        await blog.append(batch(5, payload_size=1000, fill=i))
    assert len(blog.segments) == 4
    bases = [s.base_offset for s in blog.segments]
    assert bases == [0, 15, 30, 45]
    assert f"{15:020d}.log" in log_files(blog)
    # a fetch returns data from one segment; following the offsets reads everything back
    offset, seen = 0, []
    while offset < blog.high_watermark:
        data = await blog.read(offset, 1 << 20)
        hs = headers(data)
        assert hs
        for h in hs:
            seen.append(data[h.position + h.header_size])  # fill byte identifies the batch
        offset = hs[-1].next_offset
    assert seen == list(range(10))
    lm.close()
    # reopening trusts the sealed segments' indexes and ends where it was
    lm2 = LogManager(str(tmp_path), segment_bytes=3 * one)
    b2 = lm2.get(T, None, 1)
    assert b2.high_watermark == 50
    assert [s.base_offset for s in b2.segments] == bases
    assert headers(await b2.read(33, 1 << 20))[0].base_offset == 30
    r = await b2.append(batch(1))
    assert r.base_offset == 50
    lm2.close()


async def test_recovery_truncates_torn_tail(tmp_path):
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    for _ in range(3):
        await blog.append(batch(4, payload_size=500))
    good = blog.segments[-1].size
    lm.close()
    path = os.path.join(blog.dir, "0" * 20 + ".log")
    partial = batch(4, payload_size=500)
    with open(path, "ab") as f:
        f.write(partial[: len(partial) // 2])    # a kill -9 in the middle of a write
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    assert blog.high_watermark == 12
    assert os.path.getsize(path) == good
    r = await blog.append(batch(1))
    assert r.base_offset == 12
    data = await blog.read(0, 1 << 20)
    assert [h.base_offset for h in headers(data)] == [0, 4, 8, 12]
    lm.close()


async def test_recovery_truncates_at_bad_crc(tmp_path):
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    await blog.append(batch(2, payload_size=300))
    keep = blog.segments[-1].size
    await blog.append(batch(2, payload_size=300))
    await blog.append(batch(2, payload_size=300))
    lm.close()
    path = os.path.join(blog.dir, "0" * 20 + ".log")
    with open(path, "r+b") as f:
        f.seek(keep + 100)
        byte = f.read(1)
        f.seek(keep + 100)
        f.write(bytes([byte[0] ^ 0xFF]))
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    # everything from the damaged batch on is gone; what came before is intact
    assert blog.high_watermark == 2
    assert os.path.getsize(path) == keep
    lm.close()


async def test_recovery_of_a_garbage_only_segment(tmp_path):
    d = tmp_path / "db" / "events-7" / "log-0"
    d.mkdir(parents=True)
    (d / ("0" * 20 + ".log")).write_bytes(b"\0" * 100)
    lm = LogManager(str(tmp_path))
    blog = lm.find(7, None, 0)
    assert blog is not None and blog.high_watermark == 0
    assert (d / ("0" * 20 + ".log")).stat().st_size == 0
    lm.close()


async def test_recovery_rebuilds_missing_index_of_closed_segment(tmp_path):
    one = len(batch(5, payload_size=2000))
    lm = LogManager(str(tmp_path), segment_bytes=4 * one)
    blog = lm.get(T, None, 0)
    for _ in range(10):
        await blog.append(batch(5, payload_size=2000))
    ts_first = headers(await blog.read(0, 1 << 20))[0].commit_timestamp
    lm.close()
    os.remove(os.path.join(blog.dir, "0" * 20 + ".index"))
    os.remove(os.path.join(blog.dir, "0" * 20 + ".timeindex"))
    lm = LogManager(str(tmp_path), segment_bytes=4 * one)
    blog = lm.get(T, None, 0)
    assert blog.high_watermark == 50
    assert os.path.getsize(os.path.join(blog.dir, "0" * 20 + ".timeindex")) > 0
    assert headers(await blog.read(17, 1 << 20))[0].base_offset == 15
    assert blog.offset_for_timestamp(ts_first) == 0
    lm.close()


async def test_offset_for_timestamp(tmp_path):
    lm = LogManager(str(tmp_path), segment_bytes=20_000)
    blog = lm.get(T, None, 0)
    stamps = []
    for _ in range(8):
        r = await blog.append(batch(3, payload_size=3000))
        stamps.append((r.commit_timestamp, r.base_offset))
        await asyncio.sleep(0.003)
    assert len(blog.segments) > 1
    for ts, _base in stamps:
        # the first batch whose commit timestamp is >= ts
        assert blog.offset_for_timestamp(ts) == min(b for t, b in stamps if t >= ts)
        assert blog.offset_for_timestamp(ts - 1) == min(b for t, b in stamps if t >= ts - 1)
    assert blog.offset_for_timestamp(0) == 0
    assert blog.offset_for_timestamp(stamps[-1][0] + 1) is None
    assert blog.max_timestamp == stamps[-1][0]
    lm.close()


async def test_idempotent_writer_duplicates_and_gaps(tmp_path):
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    r0 = await blog.append(batch(2, writer_id=11, seq=0))
    r1 = await blog.append(batch(3, writer_id=11, seq=1))
    dup = await blog.append(batch(3, writer_id=11, seq=1))
    assert dup.duplicate and (dup.base_offset, dup.last_offset) == (r1.base_offset, r1.last_offset)
    assert blog.high_watermark == 5                    # not appended twice
    with pytest.raises(FlussError) as e:
        await blog.append(batch(1, writer_id=11, seq=3))
    assert e.value.error_code == 31 and "11" in e.value.message
    with pytest.raises(FlussError) as e:
        await blog.append(batch(1, writer_id=12, seq=4))  # a new writer must start at 0
    assert e.value.error_code == 31
    r = await blog.append(batch(1, writer_id=12, seq=0))
    assert r.base_offset == 5 and not r.duplicate
    # only the last five batches of a writer are remembered
    for s in range(2, 8):
        await blog.append(batch(1, writer_id=11, seq=s))
    with pytest.raises(FlussError) as e:
        await blog.append(batch(3, writer_id=11, seq=1))
    assert e.value.error_code == 31
    assert (await blog.append(batch(1, writer_id=11, seq=4))).duplicate
    # non-idempotent batches are never deduplicated
    n = blog.high_watermark
    await blog.append(batch(1))
    await blog.append(batch(1))
    assert blog.high_watermark == n + 2
    assert r0.base_offset == 0
    lm.close()


async def test_sequence_wraps_after_int32_max(tmp_path):
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    await blog.append(batch(1, writer_id=3, seq=0))
    st = blog.writers[3]
    st.batches.clear()
    st.batches.append((2**31 - 1, 0, 0, 0))   # as if it had written 2^31 batches
    r = await blog.append(batch(1, writer_id=3, seq=0))
    assert not r.duplicate and r.base_offset == 1
    with pytest.raises(FlussError):
        await blog.append(batch(1, writer_id=3, seq=2))
    lm.close()


async def test_writer_state_survives_restart_and_rolls(tmp_path):
    one = len(batch(2, payload_size=1000, writer_id=9, seq=0))
    lm = LogManager(str(tmp_path), segment_bytes=2 * one)
    blog = lm.get(T, None, 0)
    results = [await blog.append(batch(2, payload_size=1000, writer_id=9, seq=s)) for s in range(7)]
    assert len(blog.segments) >= 3
    lm.close()
    for snapshot_lost in (False, True):
        if snapshot_lost:
            for f in os.listdir(blog.dir):
                if f.endswith(".writers.json"):
                    os.remove(os.path.join(blog.dir, f))
        lm = LogManager(str(tmp_path), segment_bytes=2 * one)
        b2 = lm.get(T, None, 0)
        dup = await b2.append(batch(2, payload_size=1000, writer_id=9, seq=5))
        assert dup.duplicate and dup.base_offset == results[5].base_offset
        with pytest.raises(FlussError) as e:
            await b2.append(batch(1, writer_id=9, seq=9))
        assert e.value.error_code == 31
        lm.close()
    lm = LogManager(str(tmp_path), segment_bytes=2 * one)
    b3 = lm.get(T, None, 0)
    assert (await b3.append(batch(2, writer_id=9, seq=7))).base_offset == 14
    lm.close()


async def test_large_append_goes_through_thread_and_keeps_order(tmp_path, monkeypatch):
    monkeypatch.setattr(bucket_log, "THREAD_WRITE_BYTES", 1000)
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    import asyncio

    # interleave big (threaded) and small (inline) appends of one writer: order must hold
    batches = [batch(1, payload_size=5000 if s % 2 else 10, writer_id=1, seq=s) for s in range(20)]
    results = await asyncio.gather(*(blog.append(b) for b in batches))
    assert [r.base_offset for r in results] == list(range(20))
    data = await blog.read(0, 1 << 22)
    assert [h.batch_sequence for h in headers(data)] == list(range(20))
    lm.close()


async def test_waiters_are_woken_by_append(tmp_path):
    import asyncio

    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    fut = asyncio.get_running_loop().create_future()
    blog.add_waiter(fut)
    assert not fut.done()
    await blog.append(batch(1))
    assert fut.done()
    lm.close()


async def test_partitions_drop_and_layout(tmp_path):
    lm = LogManager(str(tmp_path))
    p1, p2 = _Partition(4, "2024"), _Partition(5, "2025")
    a = lm.get(T, p1, 0)
    b = lm.get(T, p2, 1)
    await a.append(batch(1))
    await b.append(batch(1))
    assert a.dir == os.path.join(str(tmp_path), "db", "events-7", "2024-p4", "log-0")
    lm.close()
    lm = LogManager(str(tmp_path))
    assert lm.find(7, 4, 0).high_watermark == 1 and lm.find(7, 5, 1).high_watermark == 1
    lm.drop_partition(7, 4)
    assert lm.find(7, 4, 0) is None
    assert not os.path.exists(a.dir)
    assert os.path.exists(b.dir)
    lm.drop_table(7)
    assert lm.find(7, 5, 1) is None
    assert not os.path.exists(os.path.join(str(tmp_path), "db", "events-7"))
    lm.close()
    assert LogManager(str(tmp_path)).logs == {}


async def test_writer_ids_never_repeat_across_restarts(tmp_path):
    lm = LogManager(str(tmp_path))
    ids = [lm.next_writer_id() for _ in range(3)]
    lm.close()
    lm = LogManager(str(tmp_path))
    ids += [lm.next_writer_id() for _ in range(2)]
    assert ids == [0, 1, 2, 3, 4]


async def test_fetch_reads_stop_at_an_indexed_batch_start_within_the_budget(tmp_path):
    lm = LogManager(str(tmp_path))
    blog = lm.get(T, None, 0)
    for _ in range(5):  # separate appends of > 4 KiB: every batch start is in the offset index
        await blog.append(batch(10, payload_size=100_000))
    size = len(batch(10, payload_size=100_000))
    seg, pos, n = blog.plan_read(0, int(2.6 * size), True)
    assert n == int(2.6 * size)  # the plan still covers the budget, as Java reads it
    # ...but a fetch reads only the two whole batches its answer keeps
    assert segment_read.indexed_whole_span(seg, pos, n) == 2 * size
    assert segment_read.whole_batches_end(await segment_read.read_segment(seg, pos, 2 * size)) == 2 * size
    # from the middle of the log too
    seg, pos, n = blog.plan_read(12, int(2.2 * size), True)
    assert pos == size and segment_read.indexed_whole_span(seg, pos, n) == 2 * size
    # a batch bigger than the budget (min-one) and the whole rest of a segment stay as planned
    seg, pos, n = blog.plan_read(0, 10, True)
    assert segment_read.indexed_whole_span(seg, pos, n) == n == size
    seg, pos, n = blog.plan_read(20, 1 << 30, True)
    assert segment_read.indexed_whole_span(seg, pos, n) == n == 3 * size
    # a budget below the first batch of a later bucket (no min-one) keeps its prefix
    seg, pos, n = blog.plan_read(0, 1000, False)
    assert segment_read.indexed_whole_span(seg, pos, n) == n == 1000
    # one append of four batches is one index entry: a read that would keep less than half of
    # its budget reads it all (the answer is cut after the read, as before)
    await blog.append(b"".join(batch(10, payload_size=100_000) for _ in range(4)))
    seg, pos, n = blog.plan_read(50, int(3.5 * size), True)
    assert pos == 5 * size and segment_read.indexed_whole_span(seg, pos, n) == n
    lm.close()


async def _big_segment(tmp_path):
    blog = LogManager(str(tmp_path)).get(T, None, 0)
    for i in range(4):  # ~1.2 MB: reads above THREAD_IO_BYTES
        await blog.append(batch(10, payload_size=300_000, fill=65 + i))
    return blog


async def test_large_reads_of_cached_and_uncached_bytes_give_the_file_exactly(tmp_path, monkeypatch):
    blog = await _big_segment(tmp_path)
    seg, pos, n = blog.plan_read(0, 1 << 30, True)
    assert n > segment_read.THREAD_IO_BYTES
    want = os.pread(seg.fd, n, pos)
    assert len(want) == n
    # page cache hot: copied on the loop
    assert bytes(await segment_read.read_segment(seg, pos, n)) == want
    assert bytes(await segment_read.read_segment(seg, pos + 7, n - 7)) == want[7:]
    # past the end of the file: only what is there, as pread gives it
    assert bytes(await segment_read.read_segment(seg, pos + 5, n + 4096)) == want[5:]
    # the page cache holding only a prefix (or nothing): the rest comes from the worker thread
    real = segment_read._read_cached
    for cached in (0, 1, 4096, n // 2, n - 1):
        def partial(fd, position, count, cached=cached):
            buf, got = real(fd, position, min(count, cached) or 1)
            out = bytearray(count)
            k = min(got, cached)
            out[:k] = buf[:k]
            return out, k
        monkeypatch.setattr(segment_read, "_read_cached", partial)
        assert bytes(await segment_read.read_segment(seg, pos, n)) == want, cached
        assert bytes(await segment_read.read_segment(seg, pos + 3, n + 100)) == want[3:], cached
    # a kernel or file system without RWF_NOWAIT: every large read goes to the thread
    monkeypatch.setattr(segment_read, "_read_cached", real)
    monkeypatch.setattr(segment_read, "_RWF_NOWAIT", 0)
    assert bytes(await segment_read.read_segment(seg, pos, n)) == want


async def test_large_read_of_a_closed_segment_fails_as_a_storage_error(tmp_path):
    blog = await _big_segment(tmp_path)
    seg, pos, n = blog.plan_read(0, 1 << 30, True)
    fd = seg.fd
    seg.fd = os.open(os.devnull, os.O_WRONLY)  # reads fail with EBADF on this descriptor
    try:
        with pytest.raises(FlussError) as ei:
            await segment_read.read_segment(seg, pos, n)
        assert ei.value.error_code == Errors.LOG_STORAGE_EXCEPTION
    finally:
        os.close(seg.fd)
        seg.fd = fd


async def test_large_reads_reuse_buffers_only_once_nobody_holds_the_last_answer(tmp_path):
    """Segment reads above THREAD_IO_BYTES go into pooled buffers: an answer still held (being
    sent, or projected from) must never be overwritten by a later read, and a buffer nobody
    holds any more is reused."""
    seg = segment.Segment(str(tmp_path), 0)
    n = segment_read.THREAD_IO_BYTES + 4096
    first, second = os.urandom(n), os.urandom(n)
    os.pwrite(seg.fd, first + second, 0)
    seg.size = 2 * n
    try:
        held = await segment_read.read_segment(seg, 0, n)
        assert bytes(held) == first
        for _ in range(3):
            assert bytes(await segment_read.read_segment(seg, n, n)) == second
            assert bytes(held) == first
        pool = segment_read._read_pools.pool
        reused = pool.reused
        del held
        assert bytes(await segment_read.read_segment(seg, 0, n)) == first
        assert bytes(await segment_read.read_segment(seg, n, n)) == second
        assert pool.reused > reused
    finally:
        for fd in (seg.fd, seg.index_fd, seg.time_fd):
            os.close(fd)
