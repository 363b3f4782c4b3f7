"""codec.bodypool: decoded bodies of bounded reads packed into reusable chunks, a chunk reused only
once nothing refers to any of its bodies, the unused tail given back when the reads end."""
from __future__ import annotations

import gc
import os

import pyarrow as pa
import pytest

from fluss_fast.codec.log import bodypool
from fluss_fast.codec.log.bodypool import BodyPool
from fluss_fast.codec.wire import memory

pytestmark = pytest.mark.skipif(bodypool.BODY_POOL is None, reason="no private anonymous mappings here")

MB = 1 << 20


class _Loop:
    """Records call_later instead of running it: the test decides when the idle trim runs."""

    def __init__(self):
        self.later = []

    def call_later(self, delay, fn, *args):
        self.later.append((delay, fn, args))


def _fill(view, byte):
    view[:] = bytes([byte]) * len(view)


def test_bodies_are_aligned_packed_and_writable():
    pool = BodyPool(chunk_bytes=4 * MB)
    pool.begin()
    bufs = []
    for size in (1, 100, 1000, 65_537):
        buf, view = pool.take(size)
        assert buf.size == size and len(view) == size and buf.address % bodypool.ALIGN == 0
        _fill(view, size % 251)
        bufs.append(buf)
    # one chunk, bodies one after another
    assert pool.created == 1
    assert bufs[1].address - bufs[0].address == bodypool.ALIGN
    for b in bufs:
        assert b.to_pybytes() == bytes([b.size % 251]) * b.size
    pool.end(_Loop())


def test_a_chunk_is_reused_only_once_none_of_its_bodies_is_referred_to():
    pool = BodyPool(chunk_bytes=4 * MB)
    pool.begin()
    held, view = pool.take(MB)
    _fill(view, 0xAB)
    del view
    others = []
    for _ in range(8):  # fills the first chunk, then more: only fresh chunks while ``held`` lives
        b, v = pool.take(MB)
        _fill(v, 0xCD)
        others.append(b)
    assert pool.reused == 0
    # an Arrow array sliced from the body keeps the chunk as much as the body itself does
    arr = pa.Array.from_buffers(pa.uint8(), 16, [None, held.slice(8, 16)])
    del held
    others.clear()
    gc.collect()
    for _ in range(8):
        b, v = pool.take(MB)
        _fill(v, 0xEF)
        others.append(b)
    assert arr.to_pylist() == [0xAB] * 16  # never overwritten
    assert pool.reused >= 1                # the chunks nothing referred to were
    pool.end(_Loop())


def test_a_body_larger_than_a_chunk_is_left_to_the_caller_and_a_full_chunk_is_trimmed():
    pool = BodyPool(chunk_bytes=4 * MB)
    pool.begin()
    assert pool.take(4 * MB + 1) is None
    first, view = pool.take(3 * MB)
    _fill(view, 1)
    del view
    # the next body does not fit: a second chunk, the first one's pages past its body given back
    second, view = pool.take(2 * MB)
    del view
    assert pool.created == 2
    chunk = pool._chunks[-1]
    assert chunk.m is not None and sum(1 for c in pool._chunks) == 1
    pool.end(_Loop())


def test_the_end_of_the_reads_gives_back_the_unused_tail_and_then_the_idle_chunks():
    pool = BodyPool(chunk_bytes=4 * MB)
    pool.begin()
    bodies = []
    for _ in range(4):
        b, v = pool.take(MB - 64)
        _fill(v, 0x77)
        bodies.append(b)
    del b, v
    bodies.clear()
    loop = _Loop()
    pool.end(loop)
    gc.collect()
    pool.begin()
    kept, v = pool.take(MB)   # the same chunk, resident all the way from the first use
    assert pool.reused == 1
    del v
    pool.end(loop)
    chunk = pool._chunks[-1]
    tail = memoryview(chunk.m)[chunk.start + MB:chunk.end]
    assert bytes(tail) == bytes(len(tail))  # given back: reads as zeros, not the old 0x77
    del tail
    # the idle trim of an earlier end does nothing after a later read began; the last one trims
    assert len(loop.later) == 2
    stale, last = loop.later
    stale[1](*stale[2])
    assert pool._chunks
    last[1](*last[2])
    assert pool._chunks == []
    assert kept.to_pybytes()[:4] == b"\x77" * 4  # a result still held is not touched by a trim


def test_a_take_after_every_read_ended_is_not_pooled():
    pool = BodyPool(chunk_bytes=4 * MB)
    assert pool.take(1000) is None and pool.created == 0


def test_a_forked_child_starts_with_an_empty_pool():
    import os

    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    pool = bodypool.BODY_POOL
    pool.begin()
    try:
        held, view = pool.take(1000)
        pid = os.fork()
        if pid == 0:  # the child: no read going on, nothing tracked, the lock free
            ok = pool._reads == 0 and pool._chunks == [] and pool._current is None
            ok = ok and pool._lock.acquire(blocking=False)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        del view, held
    finally:
        pool.end(_Loop())


def test_after_the_reads_the_pool_holds_on_to_no_more_than_its_idle_limit():
    """A result larger than the idle limit: once it is dropped, only the limit's worth of its
    chunks stays mapped for the next read; the others are unmapped right away."""
    import weakref

    pool = BodyPool(chunk_bytes=4 * MB, max_idle_bytes=8 * MB)
    pool.begin()
    bodies = []
    for _ in range(5):
        b, v = pool.take(3 * MB)   # one body per chunk
        del v
        bodies.append(b)
    mappings = [weakref.ref(c.m) for c in pool._chunks] + [weakref.ref(pool._current.m)]
    pool.end(_Loop())
    assert len(pool._chunks) == 2
    del b
    bodies.clear()
    gc.collect()
    assert sum(1 for m in mappings if m() is not None) == 2


def _spy_advice(monkeypatch, earned):
    monkeypatch.setattr(memory.HUGE_PAGES, "earned", earned)
    asked = []
    real = bodypool.advise_huge_pages
    monkeypatch.setattr(bodypool, "advise_huge_pages", lambda *a: asked.append(real(*a)) or asked[-1])
    return asked


def test_the_first_read_of_a_process_asks_for_no_huge_pages_and_the_pool_still_reuses(monkeypatch):
    """Chunks of a process's first bounded read stay in small pages; its end earns huge pages for
    the fresh chunks of later reads, while idle chunks are reused as before."""
    asked = _spy_advice(monkeypatch, False)
    pool = BodyPool(chunk_bytes=4 * MB)
    pool.begin()
    bodies = []
    for _ in range(3):  # two chunks
        b, v = pool.take(3 * MB)
        _fill(v, 1)
        bodies.append(b)
    del b, v
    assert pool.created == 3 and asked == [False] * 3
    pool.end(_Loop())
    assert memory.HUGE_PAGES.earned
    kept = bodies.pop()   # one result still held: its chunk is not reused
    bodies.clear()
    gc.collect()
    pool.begin()
    for _ in range(3):
        b, v = pool.take(3 * MB)
        _fill(v, 2)
        bodies.append(b)
    del b, v
    assert pool.reused == 2 and pool.created == 4
    # only the one fresh chunk of the second read was advised
    assert asked == [False] * 3 + [memory._MADV_HUGEPAGE is not None]
    assert kept.to_pybytes()[:3] == b"\x01" * 3
    pool.end(_Loop())


def test_an_earned_process_advises_every_fresh_chunk(monkeypatch):
    asked = _spy_advice(monkeypatch, True)
    pool = BodyPool(chunk_bytes=4 * MB)
    pool.begin()
    held = [pool.take(3 * MB)[0] for _ in range(2)]
    assert pool.created == 2 and asked == [memory._MADV_HUGEPAGE is not None] * 2
    del held
    pool.end(_Loop())


_FIRST_READ = """
import asyncio, sys
import pyarrow as pa
import fluss_fast as ff
from fluss_fast.codec.log.bodypool import BODY_POOL
from fluss_fast.codec.wire.memory import HUGE_PAGES

def mapping_kb(address, field):
    # the field of the mapping holding address (pyarrow's own allocator may use huge pages too)
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == field + ":":
                return int(line.split()[1])
    raise AssertionError(hex(address))

async def main(boot, db):
    conn = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": boot}))
    admin = conn.get_admin()
    await admin.create_database(db, ignore_if_exists=True)
    path = ff.TablePath(db, "t")
    n = 400_000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "x": pa.array(range(n), pa.float64())})
    await admin.create_table(path, ff.TableDescriptor(ff.Schema(data.schema), bucket_count=2))
    table = await conn.get_table(path)
    w = table.new_append().create_writer()
    w.write_arrow(data)
    await w.flush()
    assert not HUGE_PAGES.earned
    sc = await table.new_scan().create_record_batch_log_scanner()
    sc.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    got = await sc.to_arrow()
    assert got.num_rows == n, got.num_rows
    chunks = BODY_POOL._chunks
    assert chunks and BODY_POOL.created == len(chunks)
    addresses = [pa.py_buffer(c.m).address + c.start for c in chunks]
    first = sum(mapping_kb(a, "AnonHugePages") for a in addresses)
    assert sum(mapping_kb(a, "Rss") for a in addresses) > 0
    earned = HUGE_PAGES.earned
    await admin.drop_database(db, ignore_if_not_exists=True, cascade=True)
    await conn.close()
    print("RESULT", first, earned)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_the_first_scan_of_a_process_faults_in_no_huge_pages(fluss_server, tmp_path):
    """End to end, in a fresh process: the body-pool chunks of the first to_arrow (~6 MB decoded)
    hold no huge page when THP is in madvise mode (with "always" the kernel picks them itself), and
    the read's end earns huge pages for the reads after it."""
    import subprocess
    import sys

    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            madvise_mode = "[madvise]" in f.read()
    except OSError:
        madvise_mode = False
    proc = subprocess.run([sys.executable, "-c", _FIRST_READ, fluss_server.bootstrap_servers,
                           f"first_read_{os.getpid()}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _, huge, earned = proc.stdout.split()[-3:]
    assert earned == "True"
    if madvise_mode:
        assert int(huge) == 0
