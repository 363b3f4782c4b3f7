"""pyfluss and fluss_fast read the same data identically, whichever of them wrote it.

Every data type (nested and null included) under each Arrow compression codec; rows are compared
value by value including their Python types and reprs, Arrow tables with their schemas.
"""
from __future__ import annotations

import datetime as dt
import decimal
import time

import fluss
import pyarrow as pa
import pytest

import fluss_fast as ff

UTC = dt.UTC

SCHEMA = pa.schema([
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("by", pa.binary()), ("fb", pa.binary(3)),
    ("d", pa.date32()), ("t", pa.time32("ms")), ("ts", pa.timestamp("us")), ("tsl", pa.timestamp("us", tz="UTC")),
    ("tsms", pa.timestamp("ms")), ("tsns", pa.timestamp("ns")), ("tlns", pa.timestamp("ns", tz="UTC")),
    ("dec", pa.decimal128(10, 2)), ("dec2", pa.decimal128(28, 5)),
    ("arr", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int32())),
    ("r", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ("nested", pa.list_(pa.struct([("x", pa.timestamp("us", tz="UTC")), ("y", pa.list_(pa.string()))]))),
])


def _rows(n):
    out = []
    for k in range(n):
        if k % 5 == 4:
            out.append({name: None for name in SCHEMA.names})
            continue
        out.append({
            "b": k % 2 == 0, "i8": k % 100 - 50, "i16": k * 7 - 300, "i32": k << 12, "i64": -(k << 37),
            "f32": k * 0.5, "f64": k / 3, "s": f"héllo-{k}" if k % 3 else "", "by": bytes([k % 256, 0, 1]),
            "fb": bytes([k % 256, 1, 2]), "d": dt.date(2024, 2, 29) + dt.timedelta(days=k),
            "t": dt.time(13, 14, 15, (k * 1000) % 1_000_000),
            "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678901) + dt.timedelta(seconds=k),
            "tsl": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC) + dt.timedelta(minutes=k),
            "tsms": dt.datetime(2020, 1, 1, 0, 0, 0, 123000) + dt.timedelta(milliseconds=k),
            "tsns": dt.datetime(2021, 5, 6, 7, 8, 9, 123457) + dt.timedelta(microseconds=k),
            "tlns": dt.datetime(2030, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=3 * k),
            "dec": decimal.Decimal(k * 137 - 5000).scaleb(-2),
            "dec2": decimal.Decimal("-12345678901234567890.12345") + k,
            "arr": None if k % 7 == 3 else [k, None, -k],
            "m": [("k", k), ("z", None)] if k % 2 else [],
            "r": {"a": k, "b": None if k % 2 else str(k)},
            "nested": [{"x": dt.datetime(2001, 1, 1, tzinfo=UTC) + dt.timedelta(days=k), "y": ["p", None]}, None],
        })
    return out


N = 60


async def _read_rows(table, n, *, project=None):
    scan = table.new_scan()
    if project:
        scan = scan.project_by_name(project)
    sc = await scan.create_log_scanner()
    sc.subscribe(0, fluss.EARLIEST_OFFSET)
    got = []
    deadline = time.monotonic() + 20
    while len(got) < n and time.monotonic() < deadline:
        recs = await sc.poll(500)
        got.extend((r.offset, r.timestamp, str(r.change_type), str(r), r.row) for r in recs)
    return got


async def _read_arrow(table, *, project=None):
    scan = table.new_scan()
    if project:
        scan = scan.project_by_name(project)
    sc = await scan.create_record_batch_log_scanner()
    sc.subscribe(0, fluss.EARLIEST_OFFSET)
    return await sc.to_arrow()


def _same_rows(a, b):
    assert len(a) == len(b)
    for (oa, ta, ca, sa, ra), (ob, tb, cb, sb, rb) in zip(a, b, strict=True):
        assert (oa, ta, ca, sa) == (ob, tb, cb, sb)
        assert list(ra) == list(rb)
        for k in ra:
            assert type(ra[k]) is type(rb[k]) and repr(ra[k]) == repr(rb[k]), (k, ra[k], rb[k])


async def _create(py, db, name, schema, **kw):
    # created through pyfluss: it assigns nested ROW field ids the way every client expects
    await py.get_admin().create_table(fluss.TablePath(db, name),
                                      fluss.TableDescriptor(fluss.Schema(schema), bucket_count=1, **kw))


@pytest.fixture
async def clients(fluss_server, unique_name):
    servers = fluss_server.bootstrap_servers
    py = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": servers}))
    fast = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": servers}))
    db = unique_name("xscan")
    await fast.get_admin().create_database(db)
    yield py, fast, db
    await fast.close()
    await py.close()


@pytest.mark.parametrize("codec", ["NONE", "LZ4_FRAME", "ZSTD"])
@pytest.mark.parametrize("writer", ["pyfluss", "fluss_fast"])
async def test_every_type_reads_back_identically(clients, codec, writer):
    py, fast, db = clients
    name = f"all_{codec.lower()}_{writer}"
    await _create(py, db, name, SCHEMA, properties={"table.log.arrow.compression.type": codec})
    py_table = await py.get_table(fluss.TablePath(db, name))
    fast_table = await fast.get_table(ff.TablePath(db, name))
    rows = _rows(N)
    w = (py_table if writer == "pyfluss" else fast_table).new_append().create_writer()
    for r in rows[:N // 2]:
        w.append(r)
    await w.flush()
    w.write_arrow_batch(pa.RecordBatch.from_pylist(rows[N // 2:], schema=SCHEMA))
    await w.flush()

    theirs = await _read_rows(py_table, N)
    ours = await _read_rows(fast_table, N)
    assert len(ours) == N
    _same_rows(theirs, ours)
    if writer == "fluss_fast":
        # what we wrote is what the user gave us, as pyfluss reads it back
        assert [r[4]["i32"] for r in theirs] == [r["i32"] for r in rows]

    t_theirs = await _read_arrow(py_table)
    t_ours = await _read_arrow(fast_table)
    assert t_ours.num_rows == N
    assert t_ours.schema.equals(t_theirs.schema, check_metadata=True)
    assert str(t_ours.schema) == str(t_theirs.schema)
    assert t_ours.equals(t_theirs)

    cols = ["nested", "i64", "s", "tsl"]
    _same_rows(await _read_rows(py_table, N, project=cols), await _read_rows(fast_table, N, project=cols))
    p_theirs = await _read_arrow(py_table, project=cols)
    p_ours = await _read_arrow(fast_table, project=cols)
    assert p_ours.schema.names == cols and p_ours.equals(p_theirs)


async def test_limit_scan_matches_pyfluss(clients):
    py, fast, db = clients
    await _create(py, db, "lim", SCHEMA)
    py_table = await py.get_table(fluss.TablePath(db, "lim"))
    fast_table = await fast.get_table(ff.TablePath(db, "lim"))
    w = py_table.new_append().create_writer()
    for r in _rows(40):
        w.append(r)
    await w.flush()
    tid = fast_table.get_table_info().table_id
    theirs = await py_table.new_scan().limit(7).create_bucket_batch_scanner(fluss.TableBucket(tid, 0)).next_batch()
    ours = await fast_table.new_scan().limit(7).create_bucket_batch_scanner(ff.TableBucket(tid, 0)).next_batch()
    assert (ours.base_offset, ours.last_offset) == (theirs.base_offset, theirs.last_offset)
    assert str(ours) == str(theirs)
    assert ours.batch.equals(theirs.batch)


async def test_filter_returns_what_pyfluss_does_and_where_is_exact(clients):
    py, fast, db = clients
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    await _create(py, db, "flt", schema)
    py_table = await py.get_table(fluss.TablePath(db, "flt"))
    fast_table = await fast.get_table(ff.TablePath(db, "flt"))
    w = py_table.new_append().create_writer()
    for i in range(100):
        w.append({"id": i, "name": f"n{i}"})
    await w.flush()
    theirs_sc = await py_table.new_scan().filter(fluss.col("id") >= 90).create_record_batch_log_scanner()
    theirs_sc.subscribe(0, 0)
    theirs = await theirs_sc.to_arrow()
    ours_sc = await fast_table.new_scan().filter(ff.col("id") >= 90).create_record_batch_log_scanner()
    ours_sc.subscribe(0, 0)
    assert (await ours_sc.to_arrow()).equals(theirs)
    exact_sc = await fast_table.new_scan().where(ff.col("id") >= 90).create_record_batch_log_scanner()
    exact_sc.subscribe(0, 0)
    exact = await exact_sc.to_arrow()
    assert exact.column("id").to_pylist() == list(range(90, 100))
    assert theirs.filter(pa.compute.greater_equal(theirs.column("id"), 90)).equals(exact)
