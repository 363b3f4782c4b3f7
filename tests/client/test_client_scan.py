"""Scanning with fluss_fast against the embedded server: record and batch scanners, projection,
filters, bounded reads, limit scans, partitions, errors and failure behaviour."""
from __future__ import annotations

import asyncio
import threading
import time

import pyarrow as pa
import pytest

import fluss_fast as ff
from fluss_fast import col

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())])


def _row(i):
    return {"id": i, "name": None if i % 11 == 5 else f"name-{i % 7}", "score": None if i % 13 == 2 else i * 0.5}


@pytest.fixture
async def conn(fluss_server):
    # round robin spreads rows over every bucket, so multi-bucket reads are exercised for real
    c = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": fluss_server.bootstrap_servers,
                                                   "writer.bucket.no-key-assigner": "round_robin"}))
    yield c
    await c.close()


@pytest.fixture
async def db(conn, unique_name):
    name = unique_name("scan")
    await conn.get_admin().create_database(name)
    return name


async def _table(conn, db, name, schema=SCHEMA, buckets=1, **kw):
    path = ff.TablePath(db, name)
    await conn.get_admin().create_table(path, ff.TableDescriptor(ff.Schema(schema), bucket_count=buckets, **kw))
    return await conn.get_table(path)


async def _write(table, rows):
    w = table.new_append().create_writer()
    for r in rows:
        w.append(r)
    await w.flush()


async def _poll_all(scanner, n, timeout_s=15):
    out = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        out.extend(await scanner.poll(500))
    return out


async def test_record_poll_and_scan_records_api(conn, db):
    t = await _table(conn, db, "rec", buckets=3)
    await _write(t, [_row(i) for i in range(600)])
    sc = await t.new_scan().create_log_scanner()
    assert repr(sc) == f"LogScanner(table={db}.rec)"
    sc.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET, 2: ff.EARLIEST_OFFSET})
    seen = {}
    polls = []
    deadline = time.monotonic() + 15
    while sum(len(v) for v in seen.values()) < 600 and time.monotonic() < deadline:
        recs = await sc.poll(500)
        polls.append(recs)
        assert len(recs) == recs.count() <= 500
        assert str(recs) == repr(recs) == f"ScanRecords(records={len(recs)}, buckets={len(recs.buckets())})"
        for b in recs.buckets():
            assert b in recs and recs[b] == recs.records(b)
            seen.setdefault(b, []).extend(recs.records(b))
        assert [r.offset for r in recs] == [r.offset for rs in recs.values() for r in rs]
        assert list(recs.keys()) == recs.buckets() == [b for b, _ in recs.items()]
    assert sum(len(v) for v in seen.values()) == 600
    assert sorted(b.bucket_id for b in seen) == [0, 1, 2]
    ids = []
    for b, recs in seen.items():
        assert b.table_id == t.get_table_info().table_id and b.partition_id is None
        assert [r.offset for r in recs] == list(range(len(recs)))
        for r in recs:
            assert r.change_type == ff.ChangeType.AppendOnly and r.timestamp > 1_600_000_000_000
            assert str(r) == f"ScanRecord(offset={r.offset}, timestamp={r.timestamp}, change_type=+A)"
            assert r.row == _row(r.row["id"])
            ids.append(r.row["id"])
    assert sorted(ids) == list(range(600))
    big = next(p for p in polls if len(p) > 2)
    assert big[-1] is big[len(big) - 1] and big[1:3] == [big[1], big[2]]
    with pytest.raises(IndexError):
        big[len(big)]
    with pytest.raises(TypeError):
        big["x"]
    assert big.records(ff.TableBucket(12345, 0)) == [] and ff.TableBucket(12345, 0) not in big
    assert (await sc.poll(0)).is_empty()


async def test_max_poll_records_and_subscribe_mid_batch(fluss_server, db, conn):
    cfg = ff.Config({"bootstrap.servers": fluss_server.bootstrap_servers, "scanner.log.max-poll-records": "7"})
    c2 = await ff.FlussConnection.create(cfg)
    try:
        await _table(conn, db, "small")
        t = await c2.get_table(ff.TablePath(db, "small"))
        await _write(t, [_row(i) for i in range(40)])  # a single batch
        sc = await t.new_scan().create_log_scanner()
        sc.subscribe(0, 5)  # inside the first batch: rows below 5 must be dropped
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 35 and time.monotonic() < deadline:
            recs = await sc.poll(500)
            assert len(recs) <= 7
            got.extend(recs)
        assert [r.offset for r in got] == list(range(5, 40))
        assert [r.row["id"] for r in got] == list(range(5, 40))
    finally:
        await c2.close()


async def test_long_poll_timeout_returns_empty_quickly(conn, db):
    t = await _table(conn, db, "empty", buckets=2)
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    for timeout_ms in (0, 100, 250):
        start = time.monotonic()
        recs = await sc.poll(timeout_ms)
        took = time.monotonic() - start
        assert recs.is_empty() and len(recs) == 0
        assert took < timeout_ms / 1000 + 0.4
    bs = await t.new_scan().create_record_batch_log_scanner()
    bs.subscribe(0, ff.EARLIEST_OFFSET)
    empty = await bs.poll_arrow(100)
    assert empty.num_rows == 0 and empty.schema.names == ["id", "name", "score"]
    assert await bs.poll_record_batch(50) == []
    with pytest.raises(ff.FlussError, match="non-negative"):
        await sc.poll(-1)
    # data arriving during a long poll is returned before the timeout
    waiter = asyncio.ensure_future(sc.poll(10_000))
    await asyncio.sleep(0.2)
    start = time.monotonic()
    await _write(t, [_row(1)])
    recs = await waiter
    assert len(recs) == 1 and time.monotonic() - start < 5


async def test_projection_by_index_and_name_reorders(conn, db):
    t = await _table(conn, db, "proj", buckets=2)
    await _write(t, [_row(i) for i in range(100)])
    for scan in (t.new_scan().project([2, 0]), t.new_scan().project_by_name(["score", "id"])):
        bs = await scan.create_record_batch_log_scanner()
        bs.subscribe_buckets({0: 0, 1: 0})
        tab = await bs.to_arrow()
        assert tab.schema.names == ["score", "id"]
        assert sorted(tab.to_pylist(), key=lambda r: r["id"]) == [
            {"score": _row(i)["score"], "id": i} for i in range(100)]
    sc = await t.new_scan().project_by_name(["name"]).create_log_scanner()
    sc.subscribe_buckets({0: 0, 1: 0})
    recs = await _poll_all(sc, 100)
    assert sorted((r.row["name"] or "") for r in recs) == sorted((_row(i)["name"] or "") for i in range(100))
    assert all(list(r.row) == ["name"] for r in recs)
    for bad, msg in (([], "cannot be empty"), ([3], "out of range")):
        with pytest.raises(ff.FlussError, match=msg):
            await t.new_scan().project(bad).create_log_scanner()
    with pytest.raises(ff.FlussError, match="Column 'nope' not found"):
        await t.new_scan().project_by_name(["nope"]).create_record_batch_log_scanner()


FILTERS = [
    (col("id") > 50, lambda r: r["id"] > 50),
    (col("id") >= 50, lambda r: r["id"] >= 50),
    (col("id") < 10, lambda r: r["id"] < 10),
    (col("id") <= 10, lambda r: r["id"] <= 10),
    (col("id") == 42, lambda r: r["id"] == 42),
    (col("id") != 42, lambda r: r["id"] != 42),
    (col("name") == "name-3", lambda r: r["name"] == "name-3"),
    (col("name").starts_with("name-1"), lambda r: r["name"] is not None and r["name"].startswith("name-1")),
    (col("name").ends_with("-2"), lambda r: r["name"] is not None and r["name"].endswith("-2")),
    (col("name").contains("e-4"), lambda r: r["name"] is not None and "e-4" in r["name"]),
    (col("name").is_null(), lambda r: r["name"] is None),
    (col("score").is_not_null(), lambda r: r["score"] is not None),
    (col("id").is_in([1, 2, 3, 77, 1000]), lambda r: r["id"] in (1, 2, 3, 77)),
    (col("name").not_in(["name-0", "name-1"]),
     lambda r: r["name"] is not None and r["name"] not in ("name-0", "name-1")),
    ((col("id") > 20) & (col("score") < 30), lambda r: r["id"] > 20 and r["score"] is not None and r["score"] < 30),
    ((col("id") < 5) | col("name").is_null(), lambda r: r["id"] < 5 or r["name"] is None),
    ((col("id") < 5) | ((col("id") > 90) & col("score").is_not_null()),
     lambda r: r["id"] < 5 or (r["id"] > 90 and r["score"] is not None)),
]


async def test_where_returns_exactly_the_matching_rows(conn, db):
    t = await _table(conn, db, "filt", buckets=2)
    rows = [_row(i) for i in range(120)]
    await _write(t, rows[:60])
    await _write(t, rows[60:])
    for pred, ref in FILTERS:
        expected = sorted(r["id"] for r in rows if ref(r))
        bs = await t.new_scan().where(pred).create_record_batch_log_scanner()
        bs.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
        tab = await bs.to_arrow()
        assert sorted(tab.column("id").to_pylist()) == expected, repr(pred)
    # filter columns need not be projected; record offsets stay the log's offsets
    t1 = await _table(conn, db, "filt1")
    await _write(t1, rows)
    sc = await t1.new_scan().project_by_name(["name"]).where(col("id") >= 100).create_log_scanner()
    sc.subscribe(0, ff.EARLIEST_OFFSET)
    recs = await _poll_all(sc, 20)
    assert [r.offset for r in recs] == list(range(100, 120))
    assert [r.row for r in recs] == [{"name": _row(i)["name"]} for i in range(100, 120)]
    sc2 = await t1.new_scan().where(col("id").is_in([3, 50, 51, 119])).create_log_scanner()
    sc2.subscribe(0, ff.EARLIEST_OFFSET)
    recs = await _poll_all(sc2, 4)
    assert [(r.offset, r.row["id"]) for r in recs] == [(3, 3), (50, 50), (51, 51), (119, 119)]
    for method in ("filter", "where"):
        with pytest.raises(ff.FlussError, match="filter column 'nope'"):
            getattr(t1.new_scan(), method)(col("nope") == 1)
    with pytest.raises(ff.FlussError, match="doesn't support filter"):
        t1.new_scan().filter(col("id") == 1).limit(3).create_bucket_batch_scanner(
            ff.TableBucket(t1.get_table_info().table_id, 0))


async def test_filter_never_drops_a_batch_without_statistics(conn, db):
    # As the official test_filter_without_statistics_returns_all_rows: two batches written with no
    # table.statistics.columns. On the embedded server and on Java 0.9.1 alike every batch comes
    # back (records_fetched 6): filter() returns them whole, as pyfluss does; where() keeps only
    # the matching rows.
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string())])
    t = await _table(conn, db, "nostats", schema=schema)
    w = t.new_append().create_writer()
    for ids in ([1, 2, 3], [100, 101, 102]):
        w.write_arrow_batch(pa.record_batch([pa.array(ids, pa.int32()), pa.array([f"v{i}" for i in ids])],
                                            schema=schema))
    await w.flush()
    every = [1, 2, 3, 100, 101, 102]
    for pred, want in ((col("id") >= 100, [100, 101, 102]), (col("id") >= 3, [3, 100, 101, 102])):
        for method, expect in (("filter", every), ("where", want)):
            sc = await getattr(t.new_scan(), method)(pred).create_log_scanner()
            sc.subscribe(0, ff.EARLIEST_OFFSET)
            got = await _poll_all(sc, len(expect))
            assert sorted(r.row["id"] for r in got) == expect, method
            assert sc.records_fetched == 6


async def test_bounded_reads_to_arrow_pandas_reader(conn, db):
    t = await _table(conn, db, "bounded", buckets=3)
    await _write(t, [_row(i) for i in range(300)])
    bs = await t.new_scan().create_record_batch_log_scanner()
    bs.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
    tab = await bs.to_arrow()
    assert tab.num_rows == 300 and sorted(tab.column("id").to_pylist()) == list(range(300))
    with pytest.raises(ff.FlussError, match="No buckets subscribed"):
        await bs.to_arrow()  # a bounded read ends every subscription it covered
    await _write(t, [_row(i) for i in range(300, 350)])
    bs.subscribe_buckets({b: 0 for b in range(3)})
    df = await bs.to_pandas()
    assert len(df) == 350 and sorted(df["id"]) == list(range(350))
    bs.subscribe_buckets({b: 0 for b in range(3)})
    reader = await asyncio.to_thread(bs.to_arrow_batch_reader)
    assert isinstance(reader, pa.RecordBatchReader) and reader.schema.names == ["id", "name", "score"]
    got = await asyncio.to_thread(reader.read_all)
    assert got.num_rows == 350
    empty = await _table(conn, db, "bounded_empty", buckets=2)
    es = await empty.new_scan().create_record_batch_log_scanner()
    es.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    et = await es.to_arrow()
    assert et.num_rows == 0 and et.schema.names == ["id", "name", "score"]
    sc = await t.new_scan().create_log_scanner()
    with pytest.raises(ff.FlussError, match="batch-based scanner"):
        await sc.to_arrow()
    with pytest.raises(ff.FlussError, match="record-based scanner"):
        await bs.poll(10)


async def test_poll_record_batch_and_async_for(conn, db):
    t = await _table(conn, db, "batches")
    await _write(t, [_row(i) for i in range(30)])
    await _write(t, [_row(i) for i in range(30, 50)])
    bs = await t.new_scan().create_record_batch_log_scanner()
    bs.subscribe(0, 0)
    batches = []
    deadline = time.monotonic() + 10
    while sum(b.batch.num_rows for b in batches) < 50 and time.monotonic() < deadline:
        batches.extend(await bs.poll_record_batch(500))
    nxt = 0
    for b in batches:
        assert b.base_offset == nxt and b.last_offset == nxt + b.batch.num_rows - 1
        assert b.bucket == ff.TableBucket(t.get_table_info().table_id, 0)
        assert str(b) == (f"RecordBatch(bucket={b.bucket}, base_offset={b.base_offset}, "
                          f"last_offset={b.last_offset}, rows={b.batch.num_rows})")
        nxt = b.last_offset + 1
    assert nxt == 50
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe(0, 10)
    got = []
    async for rec in sc:
        got.append(rec.offset)
        if len(got) == 40:
            break
    assert got == list(range(10, 50))
    bs2 = await t.new_scan().create_record_batch_log_scanner()
    bs2.subscribe(0, 0)
    n = 0
    async for b in bs2:
        n += b.batch.num_rows
        if n >= 50:
            break
    assert n == 50


async def test_unsubscribe_and_subscription_errors(conn, db):
    t = await _table(conn, db, "unsub", buckets=2)
    await _write(t, [_row(i) for i in range(100)])
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe_buckets({0: 0, 1: 0})
    sc.unsubscribe(1)
    n0 = 0
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        recs = await sc.poll(200)
        assert all(b.bucket_id == 0 for b in recs.buckets())
        n0 += len(recs)
    assert 0 < n0 < 100
    sc.subscribe(1, 0)
    more = await _poll_all(sc, 100 - n0)
    assert n0 + len(more) == 100
    # as in pyfluss, a bucket the table lacks is accepted and never yields anything
    sc.subscribe(2, 0)
    assert (await sc.poll(300)).count() == 0
    sc.unsubscribe(2)
    with pytest.raises(ff.FlussError, match="Bucket offsets are empty"):
        sc.subscribe_buckets({})
    with pytest.raises(ff.FlussError, match="not a partitioned table"):
        sc.subscribe_partition(1, 0, 0)
    with pytest.raises(ff.FlussError, match="non-partitioned table"):
        sc.unsubscribe_partition(1, 0)


async def test_offset_out_of_range_names_table_bucket_and_offset(conn, db):
    t = await _table(conn, db, "oor")
    await _write(t, [_row(i) for i in range(5)])
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe(0, 1000)
    with pytest.raises(ff.FlussError) as info:
        for _ in range(20):
            await sc.poll(200)
    assert info.value.error_code == -2  # pyfluss reports the server's 19 as a client error
    assert "out of range" in info.value.message
    assert f"{db}.oor" in info.value.message and "bucket 0" in info.value.message and "1000" in info.value.message


async def test_partitioned_tables(conn, db):
    schema = pa.schema([("id", pa.int32()), ("region", pa.string())])
    t = await _table(conn, db, "parts", schema=schema, buckets=2, partition_keys=["region"])
    adm = conn.get_admin()
    path = ff.TablePath(db, "parts")
    for region in ("eu", "us"):
        await adm.create_partition(path, {"region": region})
    await _write(t, [{"id": i, "region": "eu" if i % 2 else "us"} for i in range(60)])
    pids = {p.partition_name: p.partition_id for p in await adm.list_partition_infos(path)}
    sc = await t.new_scan().create_log_scanner()
    with pytest.raises(ff.FlussError, match="subscribe_partition"):
        sc.subscribe(0, 0)
    sc.subscribe_partition(pids["eu"], 0, ff.EARLIEST_OFFSET)
    sc.subscribe_partition(pids["eu"], 1, ff.EARLIEST_OFFSET)
    recs = await _poll_all(sc, 30)
    assert sorted(r.row["id"] for r in recs) == list(range(1, 60, 2))
    assert all(r.row["region"] == "eu" for r in recs)
    bs = await t.new_scan().create_record_batch_log_scanner()
    bs.subscribe_partition_buckets({(pid, b): 0 for pid in pids.values() for b in range(2)})
    tab = await bs.to_arrow()
    assert sorted(tab.column("id").to_pylist()) == list(range(60))
    bs.subscribe_partition_buckets({(pids["us"], 0): 0, (pids["us"], 1): 0})
    bs.unsubscribe_partition(pids["us"], 1)
    part = await bs.to_arrow()
    assert set(part.column("region").to_pylist()) <= {"us"} and part.num_rows < 30
    with pytest.raises(ff.FlussError, match="subscribe_partition_buckets"):
        bs.subscribe_buckets({0: 0})


async def test_limit_scan(conn, db):
    t = await _table(conn, db, "limit", buckets=2)
    await _write(t, [_row(i) for i in range(200)])
    tid = t.get_table_info().table_id
    full = await t.new_scan().create_record_batch_log_scanner()
    full.subscribe(0, 0)
    bucket0 = (await full.to_arrow()).column("id").to_pylist()
    scanner = t.new_scan().limit(10).create_bucket_batch_scanner(ff.TableBucket(tid, 0))
    assert scanner.bucket == ff.TableBucket(tid, 0)
    assert repr(scanner) == f"BatchScanner(bucket={ff.TableBucket(tid, 0)})"
    b = await scanner.next_batch()
    assert b.batch.column("id").to_pylist() == bucket0[-10:]
    assert b.last_offset == len(bucket0) - 1 and b.base_offset == len(bucket0) - 10
    assert await scanner.next_batch() is None
    proj = t.new_scan().project_by_name(["score", "id"]).limit(3).create_bucket_batch_scanner(ff.TableBucket(tid, 0))
    tab = await proj.to_arrow()
    assert tab.schema.names == ["score", "id"] and tab.column("id").to_pylist() == bucket0[-3:]
    assert (await proj.to_arrow()).num_rows == 0
    many = t.new_scan().limit(10_000).create_bucket_batch_scanner(ff.TableBucket(tid, 0))
    assert len((await many.collect_all_batches())[0].batch) == len(bucket0)
    df = await t.new_scan().limit(5).create_bucket_batch_scanner(ff.TableBucket(tid, 1)).to_pandas()
    assert len(df) == 5
    empty_t = await _table(conn, db, "limit_empty")
    e = await empty_t.new_scan().limit(5).create_bucket_batch_scanner(
        ff.TableBucket(empty_t.get_table_info().table_id, 0)).to_arrow()
    assert e.num_rows == 0 and e.schema.names == ["id", "name", "score"]
    with pytest.raises(ff.FlussError, match="requires a limit"):
        t.new_scan().create_bucket_batch_scanner(ff.TableBucket(tid, 0))
    with pytest.raises(ff.FlussError, match="does not match"):
        t.new_scan().limit(1).create_bucket_batch_scanner(ff.TableBucket(tid + 1000, 0))
    with pytest.raises(ff.FlussError, match="out of range"):
        t.new_scan().limit(1).create_bucket_batch_scanner(ff.TableBucket(tid, 2))
    with pytest.raises(ff.FlussError, match="must be positive"):
        t.new_scan().limit(0)
    with pytest.raises(ff.FlussError, match="limit pushdown"):
        await t.new_scan().limit(3).create_log_scanner()


async def test_server_killed_mid_poll_keeps_polling_like_pyfluss(start_server, unique_name):
    # A dead or restarting server is not something the caller can act on: poll() retries within
    # its timeout and returns what it has (as pyfluss does); reading resumes after the restart.
    srv = start_server(tablet_servers=1, sasl=False)
    c = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": srv.bootstrap_servers}))
    try:
        name = unique_name("kill")
        await c.get_admin().create_database(name)
        t = await _table(c, name, "k")
        await _write(t, [_row(i) for i in range(10)])
        sc = await t.new_scan().create_log_scanner()
        sc.subscribe(0, 0)
        assert len(await _poll_all(sc, 10)) == 10
        waiter = asyncio.ensure_future(sc.poll(2_000))
        await asyncio.sleep(0.3)
        srv.kill()
        start = time.monotonic()
        assert len(await asyncio.wait_for(waiter, 25)) == 0
        assert len(await sc.poll(500)) == 0
        assert time.monotonic() - start < 25
        srv.start()
        c2 = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": srv.bootstrap_servers}))
        await _write(await c2.get_table(t.get_table_path()), [_row(i) for i in range(10, 15)])
        await c2.close()
        got = await _poll_all(sc, 5)
        assert sorted(r.row["id"] for r in got) == list(range(10, 15))
    finally:
        await c.close()


async def test_indexed_log_format_reads_through_the_same_api(conn, db):
    t = await _table(conn, db, "indexed", buckets=2, log_format="INDEXED")
    rows = [_row(i) for i in range(50)]
    await _write(t, rows)
    bs = await t.new_scan().project_by_name(["name", "id"]).where(col("id") >= 40).create_record_batch_log_scanner()
    bs.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    tab = await bs.to_arrow()
    assert tab.schema.names == ["name", "id"]
    assert sorted(tab.to_pylist(), key=lambda r: r["id"]) == [{"name": r["name"], "id": r["id"]} for r in rows[40:]]
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe_buckets({0: 0, 1: 0})
    recs = await _poll_all(sc, 50)
    assert sorted((r.row["id"], r.row["name"], r.row["score"]) for r in recs) == sorted(
        (r["id"], r["name"], r["score"]) for r in rows)
    tid = t.get_table_info().table_id
    last = await t.new_scan().limit(3).create_bucket_batch_scanner(ff.TableBucket(tid, 0)).to_arrow()
    assert last.num_rows == 3


async def test_subscribe_at_latest_reads_only_new_rows(conn, db):
    t = await _table(conn, db, "latest")
    await _write(t, [_row(i) for i in range(20)])
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe(0, ff.LATEST_OFFSET)
    assert (await sc.poll(300)).is_empty()
    await _write(t, [_row(i) for i in range(20, 25)])
    recs = await _poll_all(sc, 5)
    assert [(r.offset, r.row["id"]) for r in recs] == [(i, i) for i in range(20, 25)]


# -- the fetch pipeline: several requests per server, large answers decoded off the loop ----------
BIG_SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])


def _big_rows(lo, hi):
    # random hex hardly compresses, so the answers really are megabytes
    import os as _os

    return pa.table({"id": pa.array(range(lo, hi), pa.int64()),
                     "payload": [_os.urandom(100).hex() for _ in range(lo, hi)]}, schema=BIG_SCHEMA)


async def _write_arrow(table, data, rows_per_batch=2000):
    w = table.new_append().create_writer()
    for b in data.to_batches(max_chunksize=rows_per_batch):
        w.write_arrow_batch(b)
    await w.flush()


class _FetchSpy:
    """Counts FetchLog answers and their sizes, passing everything through unchanged."""

    def __init__(self, monkeypatch):
        from fluss_fast.rpc import connection
        from fluss_fast.rpc.api import Api

        self.sizes = []
        real = connection.Connection.request_raw
        spy = self

        async def request_raw(conn, api_key, body, timeout=None):
            out = await real(conn, api_key, body, timeout)
            if api_key == Api.FETCH_LOG:
                spy.sizes.append(len(out))
            return out

        real_send = connection.Connection.send_raw

        def send_raw(conn, api_key, body, timeout=None):
            fut = real_send(conn, api_key, body, timeout)
            if fut is not None and api_key == Api.FETCH_LOG:
                fut.add_done_callback(lambda f: f.cancelled() or f.exception() is not None
                                      or spy.sizes.append(len(f.result())))
            return fut

        monkeypatch.setattr(connection.Connection, "request_raw", request_raw)
        monkeypatch.setattr(connection.Connection, "send_raw", send_raw)


async def test_large_bounded_reads_are_exact_and_use_larger_answers(conn, db, monkeypatch):
    t = await _table(conn, db, "big2", schema=BIG_SCHEMA, buckets=2)
    n = 60_000  # ~12 MB of payload (~6 MB compressed), in log batches of ~50 KB
    boot = conn.config.get("bootstrap.servers")
    writer_conn = await ff.FlussConnection.create(ff.Config({
        "bootstrap.servers": boot, "writer.bucket.no-key-assigner": "round_robin",
        "writer.batch-size": "65536", "writer.dynamic-batch-size.enabled": "false"}))
    try:
        await _write_arrow(await writer_conn.get_table(ff.TablePath(db, "big2")), _big_rows(0, n),
                           rows_per_batch=250)
    finally:
        await writer_conn.close()
    spy = _FetchSpy(monkeypatch)
    bs = await t.new_scan().create_record_batch_log_scanner()
    bs.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    got = await bs.to_arrow()
    assert got.num_rows == n and got.column("id").to_pylist() != []
    assert sorted(got.column("id").to_pylist()) == list(range(n))
    # the default per-bucket budget (1 MiB) grows for a bounded read: fewer, larger answers
    assert max(spy.sizes) > 1_200_000, spy.sizes
    default_rounds = len(spy.sizes)

    # a per-bucket budget the user chose is kept, also by bounded reads
    small = await ff.FlussConnection.create(ff.Config({
        "bootstrap.servers": boot, "scanner.log.fetch.max-bytes-for-bucket": "131072"}))
    try:
        spy.sizes.clear()
        t2 = await small.get_table(ff.TablePath(db, "big2"))
        s2 = await t2.new_scan().project_by_name(["id"]).create_record_batch_log_scanner()
        s2.subscribe_buckets({0: 0, 1: 0})
        got2 = await s2.to_arrow()
        assert sorted(got2.column("id").to_pylist()) == list(range(n))
        spy.sizes.clear()
        s3 = await t2.new_scan().create_record_batch_log_scanner()
        s3.subscribe_buckets({0: 0, 1: 0})
        reader = await asyncio.to_thread(s3.to_arrow_batch_reader)
        got3 = await asyncio.to_thread(reader.read_all)
        assert sorted(got3.column("id").to_pylist()) == list(range(n))
        # 2 buckets x 128 KiB per answer at most (plus framing), so many more round trips
        assert max(spy.sizes) < 2 * 131072 + 4096, max(spy.sizes)
        assert len(spy.sizes) > 2 * default_rounds
    finally:
        await small.close()
    with pytest.raises(ff.FlussError, match="No buckets subscribed"):
        await bs.to_arrow()


async def test_many_buckets_poll_from_the_middle_keeps_offsets_exact(conn, db):
    buckets = 7
    t = await _table(conn, db, "big7", schema=BIG_SCHEMA, buckets=buckets)
    n = 21_000
    await _write_arrow(t, _big_rows(0, n), rows_per_batch=500)
    probe = await t.new_scan().create_record_batch_log_scanner()
    probe.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(buckets)})
    whole = await probe.to_arrow()
    assert whole.num_rows == n
    # start every bucket somewhere inside a batch: rows below the start must never show up
    sc = await t.new_scan().create_log_scanner()
    starts = {b: 37 * b + 11 for b in range(buckets)}
    sc.subscribe_buckets(starts)
    per_bucket = {b: [] for b in range(buckets)}
    deadline = time.monotonic() + 30
    total = 0
    while time.monotonic() < deadline:
        recs = await sc.poll(300)
        if recs.count() == 0 and total:
            break
        for tb in recs.buckets():
            per_bucket[tb.bucket_id].extend(r.offset for r in recs.records(tb))
        total += recs.count()
    ends = {}
    for b in range(buckets):
        offs = per_bucket[b]
        assert offs, f"bucket {b} yielded nothing"
        assert offs == list(range(starts[b], starts[b] + len(offs))), f"bucket {b}: gaps or repeats"
        ends[b] = starts[b] + len(offs)
    assert total == n - sum(starts.values())
    # unsubscribing mid-stream: nothing of that bucket arrives afterwards, even if fetched already
    await _write_arrow(t, _big_rows(n, n + 7_000), rows_per_batch=500)
    sc.unsubscribe(3)
    sc.unsubscribe(5)
    seen = set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        recs = await sc.poll(300)
        if recs.count() == 0 and seen:
            break
        for tb in recs.buckets():
            seen.add(tb.bucket_id)
            offs = [r.offset for r in recs.records(tb)]
            assert offs[0] == ends[tb.bucket_id] and offs == list(range(offs[0], offs[0] + len(offs)))
            ends[tb.bucket_id] += len(offs)
    assert seen and not seen & {3, 5}


async def test_concurrent_bounded_reads_share_the_decoder(conn, db):
    t = await _table(conn, db, "conc", schema=BIG_SCHEMA, buckets=3)
    n = 15_000
    await _write_arrow(t, _big_rows(0, n))

    async def read(projection):
        s = t.new_scan()
        if projection:
            s = s.project_by_name(projection)
        sc = await s.create_record_batch_log_scanner()
        sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(3)})
        return await sc.to_arrow()

    results = await asyncio.gather(read(None), read(["id"]), read(["payload", "id"]), read(None))
    for r in results:
        assert sorted(r.column("id").to_pylist()) == list(range(n))
    assert results[2].column_names == ["payload", "id"]
    assert results[0].equals(results[3]) or sorted(results[0].column("id").to_pylist()) == \
        sorted(results[3].column("id").to_pylist())


async def test_corrupt_batch_in_a_large_answer_names_table_bucket_and_offset(conn, db, fluss_server):
    import glob
    import os

    t = await _table(conn, db, "corrupt", schema=BIG_SCHEMA, buckets=1)
    n = 20_000  # ~2 MB compressed: answers large enough for the decode threads
    await _write_arrow(t, _big_rows(0, n))
    files = glob.glob(os.path.join(fluss_server.data_dir, "log", db, "corrupt-*", "log-0", "*.log"))
    assert len(files) == 1
    size = os.path.getsize(files[0])
    # flip one byte well inside the log (inside some batch's Arrow body) under the running server
    with open(files[0], "r+b") as f:
        f.seek(int(size * 0.6))
        b = f.read(1)
        f.seek(int(size * 0.6))
        f.write(bytes([b[0] ^ 0xFF]))
    bs = await t.new_scan().create_record_batch_log_scanner()
    bs.subscribe(0, ff.EARLIEST_OFFSET)
    with pytest.raises(ff.FlussError) as info:
        await bs.to_arrow()
    assert info.value.error_code == 3, info.value
    msg = info.value.message
    assert f"{db}.corrupt" in msg and "bucket 0" in msg and "CRC" in msg and "offset" in msg
    sc = await t.new_scan().create_log_scanner()
    sc.subscribe(0, 0)
    got = 0
    with pytest.raises(ff.FlussError, match="CRC"):
        for _ in range(50):
            got += len(await sc.poll(500))
    assert got < n  # the rows before the damaged batch may arrive, the damaged one never does


async def test_creating_a_scanner_runs_on_the_callers_thread(conn, db, monkeypatch):
    """Creating a scanner does no I/O, so it skips the two hops to the runtime thread and back
    (``runtime.on_caller``), as awaited and through the blocking facade alike; the scanner then
    reads on the runtime as any other."""
    from fluss_fast.client.scan import scanner as scanner_mod

    t = await _table(conn, db, "where", buckets=2)
    await _write(t, [_row(i) for i in range(10)])
    threads = []
    real_init = scanner_mod.LogScanner.__init__

    def spy(self, *args, **kwargs):
        threads.append(threading.current_thread().name)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(scanner_mod.LogScanner, "__init__", spy)
    me = threading.current_thread().name
    bs = await t.new_scan().create_record_batch_log_scanner()
    sc = await t.new_scan().project_by_name(["id"]).create_log_scanner()
    assert threads == [me, me]
    assert type(bs).__name__ == type(sc).__name__ == "LogScanner"
    bs.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    assert (await bs.to_arrow()).num_rows == 10
    sc.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    assert len(await _poll_all(sc, 10)) == 10
    # the blocking facade still has the body to call (on the runtime thread there)
    from fluss_fast.client.table import TableScan

    assert TableScan.create_record_batch_log_scanner.__runtime_impl__.__name__ == "create_record_batch_log_scanner"
    blocking = ff.sync.wrap(t).new_scan().create_record_batch_log_scanner()
    assert threads[-1] == "fluss-fast-runtime"
    assert type(blocking.unwrap()).__name__ == "LogScanner"
