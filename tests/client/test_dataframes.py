"""Bounded reads handed to Polars and DuckDB through the Arrow PyCapsule stream, and ``to_polars``.

The engines are real (``fluss-fast[dataframes]``); each result is compared with ``to_arrow`` of the
same rows. The memory test reads a table of ~300 MB of Arrow data through the stream in a fresh
process and checks the peak RSS rose far less than that: the stream must pull batch by batch, not
gather the table first.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import pyarrow as pa
import pytest

import fluss_fast as ff

pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])


def _data(n, start=0):
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids,
                     "name": pa.array([None if i % 11 == 5 else f"name-{i % 7}" for i in range(start, start + n)]),
                     "score": pa.array([i * 0.5 for i in range(start, start + n)])}, schema=SCHEMA)


@pytest.fixture
async def conn(fluss_server):
    c = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": fluss_server.bootstrap_servers,
                                                   "writer.bucket.no-key-assigner": "round_robin"}))
    yield c
    await c.close()


@pytest.fixture
async def table(conn, unique_name):
    db = unique_name("frames")
    admin = conn.get_admin()
    await admin.create_database(db)
    path = ff.TablePath(db, "events")
    await admin.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=3))
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    for i in range(4):
        w.write_arrow(_data(5000, i * 5000))
    await w.flush()
    return t


async def _scanner(table):
    s = await table.new_scan().create_record_batch_log_scanner()
    s.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
    return s


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


async def _expected(table) -> pa.Table:
    return _sorted(await (await _scanner(table)).to_arrow())


async def test_polars_reads_the_scanner_stream(table):
    want = await _expected(table)
    assert want.num_rows == 20000
    s = await _scanner(table)
    # blocking by nature (the protocol is synchronous): run it off the test's loop
    df = await _off_loop(pl.DataFrame, s)
    assert _sorted(pa.table(df).cast(SCHEMA)).equals(want)
    s = await _scanner(table)
    df = await _off_loop(pl.from_arrow, s)
    assert _sorted(pa.table(df).cast(SCHEMA)).equals(want)


async def test_duckdb_replacement_scan_on_the_scanner(table):
    want = await _expected(table)
    s = await _scanner(table)

    def query():
        con = duckdb.connect()
        scan = s  # noqa: F841 - DuckDB finds it by name
        return con.sql("SELECT id, name, score FROM scan ORDER BY id").to_arrow_table()
    got = await _off_loop(query)
    assert got.cast(SCHEMA).equals(want)

    s = await _scanner(table)

    def aggregate():
        scan = s  # noqa: F841
        return duckdb.sql("SELECT count(*), sum(id) FROM scan WHERE id % 2 = 0").fetchall()[0]
    assert await _off_loop(aggregate) == (10000, sum(range(0, 20000, 2)))


async def test_to_polars_and_the_stream_end_the_bounded_read(table):
    want = await _expected(table)
    s = await _scanner(table)
    df = await s.to_polars()
    assert isinstance(df, pl.DataFrame)
    assert _sorted(pa.table(df).cast(SCHEMA)).equals(want)
    # as with to_arrow, a bounded read consumes its subscriptions
    with pytest.raises(ff.FlussError, match="No buckets subscribed"):
        await s.to_polars()
    # pyarrow and pandas >= 3.0 take the same stream
    pd = pytest.importorskip("pandas")
    if hasattr(pd.DataFrame, "from_arrow"):
        s = await _scanner(table)
        frame = await _off_loop(pd.DataFrame.from_arrow, s)
        assert sorted(frame["id"].tolist()) == want.column("id").to_pylist()
    s = await _scanner(table)
    got = await _off_loop(pa.table, s)
    assert _sorted(got).equals(want)
    s = await _scanner(table)
    reader = await _off_loop(pa.RecordBatchReader.from_stream, s)
    assert reader.schema == SCHEMA
    assert _sorted(await _off_loop(reader.read_all)).equals(want)


async def test_polars_projection_and_limit_and_sync_facade(table, fluss_server):
    s = await table.new_scan().project_by_name(["score", "id"]).create_record_batch_log_scanner()
    s.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
    df = await _off_loop(pl.DataFrame, s)
    assert df.columns == ["score", "id"] and df.height == 20000
    tid = table.get_table_info().table_id
    lim = table.new_scan().limit(10).create_bucket_batch_scanner(ff.TableBucket(tid, 0))
    df = await lim.to_polars()
    assert df.height == 10 and df.columns == ["id", "name", "score"]
    lim = table.new_scan().limit(5).create_bucket_batch_scanner(ff.TableBucket(tid, 1))
    assert (await _off_loop(pl.DataFrame, lim)).height == 5


def test_sync_facade_scanner_streams(table, fluss_server):
    from fluss_fast import sync

    conn = sync.connect({"bootstrap.servers": fluss_server.bootstrap_servers})
    try:
        t = conn.get_table(table.get_table_path())
        s = t.new_scan().create_record_batch_log_scanner()
        s.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
        assert pl.DataFrame(s).height == 20000
        s.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
        assert s.to_polars().height == 20000
    finally:
        conn.close()


async def test_changelog_stream_has_the_virtual_columns(conn, unique_name):
    # the $changelog scanner's reader and stream build its columns, as its to_arrow does
    name = unique_name("frames_pk")
    path = ff.TablePath("fluss", name)
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string())])
    await conn.get_admin().create_table(path, ff.TableDescriptor(ff.Schema(schema, primary_keys=["id"]),
                                                                 bucket_count=1))
    w = (await conn.get_table(path)).new_upsert().create_writer()
    w.upsert({"id": 1, "name": "a"})
    w.upsert({"id": 1, "name": "b"})
    await w.flush()
    cl = await conn.get_table(ff.TablePath("fluss", name + "$changelog"))

    async def scanner():
        s = await cl.new_scan().create_record_batch_log_scanner()
        await s.subscribe_all("earliest")
        return s
    want = await (await scanner()).to_arrow()
    df = await _off_loop(pl.DataFrame, await scanner())
    assert df.columns == want.column_names
    assert df["_change_type"].to_list() == ["insert", "update_before", "update_after"]
    got = await _off_loop(lambda s: s.to_arrow_batch_reader().read_all(), await scanner())
    assert got.equals(want)


def test_missing_polars_says_how_to_get_it(monkeypatch):
    import builtins

    from fluss_fast.client.scan.frames import import_polars

    real = builtins.__import__

    def no_polars(name, *args, **kwargs):
        if name == "polars":
            raise ImportError("No module named 'polars'")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_polars)
    with pytest.raises(ImportError, match="pip install polars"):
        import_polars()


async def _off_loop(fn, *args):
    import asyncio

    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


# -- memory ------------------------------------------------------------------------------------------

MEMORY_SCRIPT = textwrap.dedent('''
    import gc, os, sys, threading, time
    import numpy as np
    import pyarrow as pa
    import psutil
    import fluss_fast as ff
    import polars as pl
    import duckdb

    bootstrap, db, engine = sys.argv[1], sys.argv[2], sys.argv[3]
    ROWS, CHUNK = 2_400_000, 200_000
    # ~300 MB of Arrow data: an int64 and a 112-byte string per row. The strings are random: the
    # fetch size limits count compressed bytes, and a constant string would compress ~100-fold,
    # making each fetch decode to far more than it would with real data.
    def chunk(start):
        ids = pa.array(np.arange(start, start + CHUNK, dtype=np.int64))
        offsets = np.arange(0, 112 * (CHUNK + 1), 112, dtype=np.int32)
        text = os.urandom(56 * CHUNK).hex().encode()
        pad = pa.StringArray.from_buffers(CHUNK, pa.py_buffer(offsets), pa.py_buffer(text))
        return pa.table({"id": ids, "pad": pad})

    async def write():
        conn = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": bootstrap}))
        admin = conn.get_admin()
        await admin.create_database(db, ignore_if_exists=True)
        path = ff.TablePath(db, "big")
        schema = pa.schema([("id", pa.int64()), ("pad", pa.string())])
        await admin.create_table(path, ff.TableDescriptor(ff.Schema(schema), bucket_count=2))
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        size = 0
        for s in range(0, ROWS, CHUNK):
            c = chunk(s)
            size += c.nbytes
            w.write_arrow(c)
            await w.flush()
        await conn.close()
        return size

    import asyncio
    if engine == "write":
        # in a process of its own, so the writer's freed memory cannot hide the reader's
        print(asyncio.run(write()))
        sys.exit(0)
    # the connection and its runtime are not what is measured
    from fluss_fast import sync
    conn = sync.connect({"bootstrap.servers": bootstrap})
    t = conn.get_table(ff.TablePath(db, "big"))
    s = t.new_scan().create_record_batch_log_scanner()
    s.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    gc.collect()
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = [base]
    stop = threading.Event()
    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.005)
    th = threading.Thread(target=sample, daemon=True)
    th.start()

    if engine == "duckdb":
        scan = s
        # its progress bar would go to stdout, where the figures go
        duckdb.execute("SET enable_progress_bar = false")
        n, total = duckdb.sql("SELECT count(*), sum(length(pad)) FROM scan").fetchall()[0]
    else:
        reader = s.to_arrow_batch_reader()
        n = total = 0
        for b in reader:
            n += b.num_rows
            total += 112 * b.num_rows
    stop.set()
    th.join()
    conn.close()
    print(n, total, peak[0] - base)
''')


def _memory_script(bootstrap, db, mode):
    out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, bootstrap, db, mode], capture_output=True,
                         text=True, cwd=ROOT, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    return list(map(int, out.stdout.splitlines()[-1].split()))


@pytest.fixture(scope="module")
def big_table(fluss_server):
    """(database, Arrow bytes) of the ~300 MB table, written once for both engines."""
    pytest.importorskip("psutil")
    db = f"mem_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    [size] = _memory_script(fluss_server.bootstrap_servers, db, "write")
    return db, size


# ~10 s with the extensions; the pure-Python twin writes the table much more slowly
@pytest.mark.timeout(400)
@pytest.mark.parametrize("engine", ["duckdb", "reader"])
def test_stream_keeps_memory_bounded(fluss_server, big_table, engine):
    db, size = big_table
    n, total, rise = _memory_script(fluss_server.bootstrap_servers, db, engine)
    assert n == 2_400_000 and total == 112 * n
    assert size > 290e6
    # the whole table gathered raises RSS by at least its size (to_arrow: +size, measured); streamed,
    # by what is in flight (fetches, decode, the engine's buffers), 50-130 MB whatever the size
    assert rise < size / 2, f"RSS rose {rise / 1e6:.0f} MB reading {size / 1e6:.0f} MB"
