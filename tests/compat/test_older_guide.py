"""The spellings of the older client guide (seed 002) and of pyfluss 1.0.0 side by side.

fluss_fast runs both: ``FlussConnection.connect``, ``await conn.get_admin()``,
``await table.new_append_writer()``, ``admin.get_table``, ``create_batch_scanner``,
``poll_batches``, ``LATEST_OFFSET``, ``list_offsets(offset_type=...)``, the old config keys, and
scanner reads used without ``await``. The pyfluss 1.0.0 spellings keep pyfluss's behaviour (checked
against the real pyfluss on the same server): what the builders raise and reprs.
"""
from __future__ import annotations

import asyncio
import gc
import threading
import warnings

import pyarrow as pa
import pytest

import fluss_fast as ff
from fluss_fast.client.deferred import Deferred

from client_util import run_threads

fluss = pytest.importorskip("fluss")
pytestmark = [pytest.mark.compat, pytest.mark.timeout(90)]

SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string())])


def _cfg(mod, server, **extra):
    return mod.Config({"bootstrap.servers": server.bootstrap_servers, **extra})


@pytest.fixture
async def log_table(fluss_server, unique_name):
    """A 2-bucket log table holding ids 0..9, and a fluss_fast connection."""
    conn = await ff.FlussConnection.create(_cfg(ff, fluss_server))
    path = ff.TablePath("fluss", unique_name("old"))
    admin = conn.get_admin()
    await admin.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=2))
    table = await conn.get_table(path)
    w = table.new_append().create_writer()
    for i in range(10):
        w.write_arrow_batch(pa.record_batch([pa.array([i], pa.int32()), pa.array([f"n{i}"])], schema=SCHEMA))
        if i % 5 == 4:
            await w.flush()
    yield conn, table, path
    await admin.drop_table(path, ignore_if_not_exists=True)
    await conn.close()


async def _scanner(table, kind="record"):
    scan = table.new_scan()
    sc = await (scan.create_log_scanner() if kind == "record" else scan.create_batch_scanner())
    sc.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    return sc


# -- configuration -------------------------------------------------------------------------------------

def test_older_guide_config_keys_and_defaults():
    # the guide's table: key, default
    c = ff.Config()
    assert c.bootstrap_servers == "127.0.0.1:9123"
    assert c.writer_request_max_size == 10485760
    assert c.writer_acks == "all"
    assert c.writer_retries == 2147483647
    assert c.writer_batch_size == 2097152
    c = ff.Config({"request.max.size": "1048576", "writer.batch.size": "65536", "writer.acks": "all",
                   "writer.retries": "3"})
    assert (c.writer_request_max_size, c.writer_batch_size, c.writer_retries) == (1048576, 65536, 3)
    # pyfluss 1.0.0 itself only knows the new keys
    with pytest.raises(fluss.FlussError, match="request.max.size"):
        fluss.Config({"request.max.size": "1"})


async def test_older_config_keys_take_effect_on_writes(fluss_server, unique_name):
    cfg = ff.Config({"bootstrap.servers": fluss_server.bootstrap_servers, "request.max.size": "262144",
                     "writer.batch.size": "16384"})
    conn = await ff.FlussConnection.connect(cfg)
    admin = await conn.get_admin()
    path = ff.TablePath("fluss", unique_name("cfg"))
    await admin.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA)))
    try:
        table = await conn.get_table(path)
        writer = await table.new_append_writer()
        for i in range(3000):
            writer.append([i, "x" * 20])
        await writer.flush()
        sc = await table.new_scan().create_batch_scanner()
        sc.subscribe(bucket_id=0, start_offset=ff.EARLIEST_OFFSET)
        batches = []
        while sum(b.batch.num_rows for b in batches) < 3000:
            got = sc.poll_batches(5000)
            assert got
            batches.extend(got)
        # 16 KiB batches: many of them, none much larger than the configured size
        assert len(batches) > 5
        assert [v for b in batches for v in b.batch.column("id").to_pylist()] == list(range(3000))
    finally:
        await admin.drop_table(path)
        conn.close()


# -- connection and admin spellings ----------------------------------------------------------------------

async def test_connect_get_admin_get_table(fluss_server, log_table):
    _, _, path = log_table
    conn = await ff.FlussConnection.connect(_cfg(ff, fluss_server))
    try:
        admin = await conn.get_admin()
        assert admin is conn.get_admin() and repr(admin) == "FlussAdmin()"
        old = await admin.get_table(path)
        new = await admin.get_table_info(path)
        assert (old.table_id, old.num_buckets, old.get_column_names()) == (new.table_id, 2, ["id", "name"])
    finally:
        await conn.close()


async def test_list_offsets_offset_type_matches_offset_spec(log_table):
    conn, _, path = log_table
    admin = await conn.get_admin()
    for kind, spec in (("earliest", ff.OffsetSpec.earliest()), ("latest", ff.OffsetSpec.latest())):
        old = await admin.list_offsets(path, bucket_ids=[0, 1], offset_type=kind)
        assert old == await admin.list_offsets(path, [0, 1], spec)
    assert await admin.list_offsets(path, bucket_ids=[0, 1], offset_type="earliest") == {0: 0, 1: 0}
    latest = await admin.list_offsets(path, bucket_ids=[0, 1], offset_type="latest")
    assert sum(latest.values()) == 10
    assert await admin.list_offsets(path, bucket_ids=[0, 1], offset_type="timestamp",
                                    timestamp=1704067200000) == {0: 0, 1: 0}
    with pytest.raises(ff.FlussError, match="'newest'"):
        await admin.list_offsets(path, bucket_ids=[0], offset_type="newest")
    with pytest.raises(ff.FlussError, match="timestamp"):
        await admin.list_offsets(path, bucket_ids=[0], offset_type="timestamp")


# -- scanners: the older names and reads without await --------------------------------------------------

async def test_create_batch_scanner_and_poll_batches(log_table):
    _, table, _ = log_table
    sc = await table.new_scan().create_batch_scanner()
    assert isinstance(sc, ff.LogScanner) and type(sc).__name__ == "LogScanner"
    assert repr(sc) == f"LogScanner(table={table.get_table_path()})"
    sc.subscribe_buckets({0: ff.EARLIEST_OFFSET, 1: ff.EARLIEST_OFFSET})
    got = []
    while len(got) < 10:
        batches = await sc.poll_batches(5000)  # awaited: pyfluss 1.0.0 style
        assert batches and all(isinstance(b, ff.RecordBatch) for b in batches)
        got += [v for b in batches for v in b.batch.column("id").to_pylist()]
    assert sorted(got) == list(range(10))
    # a batch scanner refuses record polling, as create_record_batch_log_scanner's does
    with pytest.raises(ff.FlussError, match="record-based scanner"):
        await sc.poll(10)


async def test_reads_without_await_are_their_values(log_table):
    _, table, _ = log_table
    sc = await _scanner(table, "batch")
    t = sc.to_arrow()
    assert isinstance(t, Deferred)
    assert t.num_rows == 10 and sorted(t.column("id").to_pylist()) == list(range(10))
    assert len(t) == 10 and bool(t) and "id: int32" in str(t)
    assert await t is await t  # awaiting a used result gives that result, any number of times

    rec = await _scanner(table)
    recs = rec.poll(timeout_ms=5000)
    assert sorted(r.row["id"] for r in recs) == sorted(r.row["id"] for r in recs[:])
    n = len(recs)
    assert n >= 1 and recs.count() == n and recs[-1].offset >= 0
    assert sum(len(v) for _, v in recs.items()) == n
    assert ff.TableBucket(table.get_table_info().table_id, 0) in recs or \
        ff.TableBucket(table.get_table_info().table_id, 1) in recs
    assert f"{recs}" == str(recs) == repr(recs) == f"ScanRecords(records={n}, buckets={len(recs.buckets())})"


async def test_awaited_reads_return_plain_values(log_table):
    _, table, _ = log_table
    rec = await _scanner(table)
    got = await rec.poll(5000)
    assert type(got) is ff.ScanRecords
    batch = await _scanner(table, "batch")
    assert type(await batch.to_arrow()) is pa.Table
    import pandas as pd

    batch2 = await _scanner(table, "batch")
    df = await batch2.to_pandas()
    assert type(df) is pd.DataFrame and sorted(df["id"]) == list(range(10))


async def test_unused_read_does_nothing_and_does_not_warn(log_table):
    _, table, _ = log_table
    sc = await _scanner(table)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sc.poll(5000)  # dropped: nothing is read
        gc.collect()
    got = []
    for _ in range(10):
        got += [r.row["id"] for r in await sc.poll(1000)]
        if len(got) >= 10:
            break
    assert sorted(got) == list(range(10))


async def test_reads_as_tasks_and_with_timeouts(log_table):
    conn, table, _ = log_table
    sc = await _scanner(table)
    got = []
    for _ in range(10):
        task = asyncio.create_task(sc.poll(1000))
        got += [r.row["id"] for r in await task]
        if len(got) >= 10:
            break
    assert sorted(got) == list(range(10))
    # nothing more: a timeout cancels the poll, and the scanner stays usable
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(sc.poll(10_000), 0.3)
    w = table.new_append().create_writer()
    await w.append([77, "late"]).wait()
    res = await asyncio.gather(sc.poll(5000))
    assert [r.row for r in res[0]] == [{"id": 77, "name": "late"}]


async def test_errors_raise_on_use_and_on_await(log_table):
    _, table, _ = log_table
    sc = await _scanner(table)
    bad = sc.poll(-1)
    with pytest.raises(ff.FlussError, match="timeout_ms"):
        len(bad)
    with pytest.raises(ff.FlussError, match="timeout_ms"):
        await bad  # the same failure, not a second poll
    with pytest.raises(ff.FlussError, match="batch-based scanner"):
        await sc.poll_arrow(10)
    with pytest.raises(ff.FlussError, match="batch-based scanner"):
        _ = sc.to_arrow().num_rows


def test_reads_without_await_from_a_plain_thread(fluss_server, unique_name):
    # A plain script (no event loop at all) using the older guide's blocking reads.
    out = {}

    def script():
        async def setup():
            conn = await ff.FlussConnection.connect(_cfg(ff, fluss_server))
            admin = await conn.get_admin()
            path = ff.TablePath("fluss", unique_name("thr"))
            await admin.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA)))
            table = await conn.get_table(path)
            w = await table.new_append_writer()
            w.append([1, "a"])
            await w.flush()
            sc = await table.new_scan().create_batch_scanner()
            return conn, admin, path, sc

        conn, admin, path, sc = asyncio.run(setup())
        sc.subscribe(bucket_id=0, start_offset=ff.EARLIEST_OFFSET)
        out["rows"] = sc.to_arrow().to_pylist()
        asyncio.run(admin.drop_table(path))
        conn.close().result(10)
        out["closed"] = conn.closed

    t = threading.Thread(target=script)
    t.start()
    t.join(60)
    assert out == {"rows": [{"id": 1, "name": "a"}], "closed": True}


async def test_latest_offset_subscription(log_table):
    _, table, _ = log_table
    assert ff.LATEST_OFFSET == -1
    for kind in ("record", "batch"):
        scan = table.new_scan()
        sc = await (scan.create_log_scanner() if kind == "record" else scan.create_batch_scanner())
        sc.subscribe_buckets({0: ff.LATEST_OFFSET, 1: ff.LATEST_OFFSET})
        if kind == "record":
            assert (await sc.poll(300)).count() == 0
        else:
            assert (await sc.poll_arrow(300)).num_rows == 0
        w = table.new_append().create_writer()
        await w.append([1000, kind]).wait()
        if kind == "record":
            assert [r.row for r in sc.poll(5000)] == [{"id": 1000, "name": kind}]
        else:
            assert sc.poll_arrow(5000).to_pylist() == [{"id": 1000, "name": kind}]


async def test_async_for_still_iterates(log_table):
    _, table, _ = log_table
    sc = await _scanner(table)
    seen = []
    async for rec in sc:
        seen.append(rec.row["id"])
        if len(seen) == 10:
            break
    assert sorted(seen) == list(range(10))


def test_sync_facade_over_older_names(fluss_server, unique_name):
    from fluss_fast import sync

    with sync.connect({"bootstrap.servers": fluss_server.bootstrap_servers}) as conn:
        admin = conn.get_admin()
        path = ff.TablePath("fluss", unique_name("syncold"))
        admin.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA)))
        try:
            table = conn.get_table(path)
            w = table.new_append_writer()
            w.append([5, "five"])
            w.flush()
            sc = table.new_scan().create_batch_scanner()
            sc.subscribe(0, ff.EARLIEST_OFFSET)
            batches = sc.poll_batches(5000)
            assert type(batches) is list and batches[0].batch.to_pylist() == [{"id": 5, "name": "five"}]
            sc.subscribe(0, ff.EARLIEST_OFFSET)
            assert type(sc.to_arrow()) is pa.Table
        finally:
            admin.drop_table(path)


# -- builders: pyfluss 1.0.0's checks and reprs ------------------------------------------------------------

def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, getattr(e, "error_code", None)
    return "ok", repr(r)


async def test_builders_behave_like_pyfluss(fluss_server, unique_name):
    """Same tables through both clients: what each builder returns or raises, and the reprs."""
    c_ff = await ff.FlussConnection.create(_cfg(ff, fluss_server))
    c_py = await fluss.FlussConnection.create(_cfg(fluss, fluss_server))
    admin = c_ff.get_admin()
    log_path = ff.TablePath("fluss", unique_name("blog"))
    pk_path = ff.TablePath("fluss", unique_name("bpk"))
    await admin.create_table(log_path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=2))
    await admin.create_table(pk_path, ff.TableDescriptor(ff.Schema(SCHEMA, primary_keys=["id"])))
    try:
        for path in (log_path, pk_path):
            t_ff = await c_ff.get_table(path)
            t_py = await c_py.get_table(fluss.TablePath(path.database_name, path.table_name))
            assert repr(t_ff) == repr(t_py)
            for name, fn in [("new_append", lambda t: t.new_append()),
                             ("new_upsert", lambda t: t.new_upsert()),
                             ("new_lookup", lambda t: t.new_lookup()),
                             ("lookup_by", lambda t: t.new_lookup().lookup_by(["id"])),
                             ("new_scan", lambda t: t.new_scan()),
                             ("append_writer", lambda t: t.new_append().create_writer()),
                             ("partial_by_name_bad", lambda t: t.new_upsert().partial_update_by_name(["zz"])),
                             ("partial_by_index_bad", lambda t: t.new_upsert().partial_update_by_index([5])),
                             ("partial_by_name", lambda t: t.new_upsert().partial_update_by_name(["id"])),
                             ("log_scanner_type", lambda t: type(t.new_scan()).__name__)]:
                assert (_outcome(lambda fn=fn, t_ff=t_ff: fn(t_ff))
                        == _outcome(lambda fn=fn, t_py=t_py: fn(t_py))), (path, name)
            if t_ff.has_primary_key():
                assert str(_err(lambda t_ff=t_ff: t_ff.new_upsert().partial_update_by_name(["zz"]))) == \
                    str(_err(lambda t_py=t_py: t_py.new_upsert().partial_update_by_name(["zz"])))
                assert str(_err(lambda t_ff=t_ff: t_ff.new_upsert().partial_update_by_index([5]))) == \
                    str(_err(lambda t_py=t_py: t_py.new_upsert().partial_update_by_index([5])))
                with pytest.raises(ff.FlussError, match=r"Append is only supported for log tables .*'fluss\.bpk"):
                    t_ff.new_append()
            else:
                with pytest.raises(ff.FlussError, match=r"Upsert is only supported for primary key tables.*'fluss\."):
                    t_ff.new_upsert()
                with pytest.raises(ff.FlussError, match=r"Lookup is only supported for primary key tables.*'fluss\."):
                    t_ff.new_lookup()
                s_ff = await t_ff.new_scan().create_log_scanner()
                s_py = await t_py.new_scan().create_log_scanner()
                assert repr(s_ff) == repr(s_py)
                w_ff, w_py = t_ff.new_append().create_writer(), t_py.new_append().create_writer()
                assert repr(w_ff) == repr(w_py) == "AppendWriter()"
                one = pa.table({"id": pa.array([1], pa.int32()), "name": ["a"]})
                assert w_ff.write_arrow(one) is None and w_py.write_arrow(one) is None
                import pandas as pd

                frame = pd.DataFrame({"id": [2], "name": ["b"]})
                assert w_ff.write_pandas(frame) is None and w_py.write_pandas(frame) is None
                assert isinstance(w_ff.write_arrow_batch(one.to_batches()[0]), ff.WriteResultHandle)
                await w_ff.flush()
                await w_py.flush()
    finally:
        await admin.drop_table(log_path)
        await admin.drop_table(pk_path)
        await c_ff.close()
        await c_py.close()


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    raise AssertionError("no error")


async def test_primary_key_surface(fluss_server, unique_name):
    conn = await ff.FlussConnection.create(_cfg(ff, fluss_server))
    admin = conn.get_admin()
    path = ff.TablePath("fluss", unique_name("pk"))
    await admin.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA, primary_keys=["id"])))
    try:
        t = await conn.get_table(path)
        # the older guide's spellings: the builder used as the writer / lookuper, columns=...
        await t.new_upsert().create_writer().upsert({"id": 1, "name": "a"}).wait()
        up = t.new_upsert(columns=["id", "name"])
        up.upsert({"id": 2, "name": "b"})
        await up.flush()
        await t.new_upsert(column_indices=[0, 1]).create_writer().upsert([3, "c"]).wait()
        dl = t.new_upsert()
        dl.delete({"id": 3})
        await dl.flush()
        assert (await t.new_lookup().lookup({"id": 2}))["name"] == "b"
        assert await t.new_lookup().lookup({"id": 3}) is None
        with pytest.raises(ff.FlussError, match="not both"):
            t.new_upsert(columns=["id"], column_indices=[0])
        with pytest.raises(ff.FlussError, match="Cannot find target column `nope`"):
            t.new_upsert(columns=["nope"])
        with pytest.raises(ff.FlussError, match="prefix lookup"):
            t.new_lookup().lookup_by(["id"]).create_lookuper()
        assert repr(t.new_upsert()) == "TableUpsert()" and repr(t.new_lookup()) == "TableLookup()"
        assert repr(ff.UpsertWriter(t)) == "UpsertWriter()" and repr(ff.Lookuper(t)) == "Lookuper()"
    finally:
        await admin.drop_table(path)
        await conn.close()


async def test_async_with_writer_flushes_like_pyfluss(fluss_server, unique_name):
    conn = await ff.FlussConnection.create(_cfg(ff, fluss_server))
    py = await fluss.FlussConnection.create(_cfg(fluss, fluss_server))
    admin = conn.get_admin()
    path = ff.TablePath("fluss", unique_name("aw"))
    await admin.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA)))
    try:
        written = 0
        for c, mod, base in ((conn, ff, 0), (py, fluss, 100)):
            t = await c.get_table(mod.TablePath(path.database_name, path.table_name))
            w = t.new_append().create_writer()
            async with w as entered:
                assert entered is w
                for i in range(3):
                    entered.append([base + i, mod.__name__])
            # flushed on exit: the server has the rows already
            offs = await c.get_admin().list_offsets(mod.TablePath(path.database_name, path.table_name), [0],
                                                    mod.OffsetSpec.latest())
            written += 3
            assert offs == {0: written}
            with pytest.raises(ZeroDivisionError):
                async with w:
                    w.append([base + 50, "x"])
                    _ = 1 / 0
            written += 1
        sc = await (await conn.get_table(path)).new_scan().create_batch_scanner()
        sc.subscribe(0, ff.EARLIEST_OFFSET)
        ids = sorted(sc.to_arrow().column("id").to_pylist())
        assert ids == [0, 1, 2, 50, 100, 101, 102, 150]
    finally:
        await admin.drop_table(path)
        await conn.close()
        await py.close()


# -- the Deferred protocol itself ------------------------------------------------------------------------

class _Counter:
    """Counts how often its read ran; ``fail`` makes the read raise."""

    def __init__(self):
        from fluss_fast.client.runtime import get_runtime

        self._runtime = get_runtime()
        self.runs = 0

    async def _read(self, value, delay=0.0, fail=False):
        self.runs += 1
        if delay:
            await asyncio.sleep(delay)
        if fail:
            raise ff.FlussError(f"bad read {value}")
        return [value, self.runs]

    from fluss_fast.client.deferred import deferred as _d

    read = _d(_read)


async def test_deferred_runs_once_whichever_way_it_is_used():
    c = _Counter()
    d = c.read("a")
    assert c.runs == 0  # nothing runs before use
    assert d == ["a", 1] and len(d) == 2 and d[0] == "a" and list(d) == ["a", 1]
    assert await d == ["a", 1] and await d == ["a", 1] and c.runs == 1
    d2 = c.read("b")
    assert await d2 == ["b", 2] and d2[1] == 2 and str(d2) == "['b', 2]" and c.runs == 2
    assert await asyncio.create_task(c.read("c")) == ["c", 3]
    got = await asyncio.gather(c.read("d"), c.read("e"))
    assert sorted(got) == [["d", 4], ["e", 5]] or sorted(got) == [["d", 5], ["e", 4]]
    assert c.runs == 5


async def test_deferred_errors_and_cancellation():
    c = _Counter()
    bad = c.read("x", fail=True)
    with pytest.raises(ff.FlussError, match="bad read x"):
        await bad
    with pytest.raises(ff.FlussError, match="bad read x"):
        bad[0]
    assert c.runs == 1  # the failure is the result; it is not retried
    slow = c.read("s", delay=5)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(slow, 0.05)
    assert await c.read("after") == ["after", 3]
    busy = c.read("busy", delay=0.2)
    task = asyncio.ensure_future(busy)
    await asyncio.sleep(0.05)
    with pytest.raises(RuntimeError, match="already being awaited"):
        await busy
    with pytest.raises(ff.FlussError, match="being awaited"):
        len(busy)
    assert await task == ["busy", 4]
    assert await busy == ["busy", 4] and busy[0] == "busy"


def test_deferred_from_threads_without_a_loop():
    c = _Counter()
    results = []
    assert not run_threads(lambda i: results.append(list(c.read(i))), 4, 10)
    assert sorted(r[0] for r in results) == [0, 1, 2, 3] and c.runs == 4
