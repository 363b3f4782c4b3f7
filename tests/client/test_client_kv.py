"""fluss_fast on primary-key tables, against the embedded server: upserts, deletes, partial
updates, lookups (batched), prefix lookups, the changelog, limit and snapshot scans, the
$changelog / $binlog virtual tables, bulk Arrow upserts and deletes, and bad input."""
from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import fluss_fast as fluss

from client_util import connect

UTC = dt.UTC


async def make_pk(conn, name, fields, pk, **kw):
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(pa.schema(fields), primary_keys=pk), **kw))
    return path, await conn.get_table(path)


USERS = [pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("age", pa.int64())]


@pytest.fixture
async def conn(fluss_server):
    c = await connect(fluss_server.bootstrap_servers)
    yield c
    await c.close()


async def test_upsert_update_delete_lookup(conn, unique_name):
    _, t = await make_pk(conn, unique_name(), USERS, ["id"], bucket_count=3)
    w = t.new_upsert().create_writer()
    for i in range(20):
        w.upsert({"id": i, "name": f"u{i}", "age": i})
    w.upsert([5, "five", 55])
    w.upsert((6, "six", 66))
    await w.flush()
    await w.delete({"id": 3}).wait()
    await w.delete([4]).wait()
    lk = t.new_lookup().create_lookuper()
    assert await lk.lookup({"id": 1}) == {"id": 1, "name": "u1", "age": 1}
    assert await lk.lookup([5]) == {"id": 5, "name": "five", "age": 55}
    assert await lk.lookup((6,)) == {"id": 6, "name": "six", "age": 66}
    assert await lk.lookup({"id": 3}) is None
    assert await lk.lookup({"id": 4}) is None
    assert await lk.lookup({"id": 999}) is None


async def test_concurrent_lookups_are_batched(conn, unique_name):
    _, t = await make_pk(conn, unique_name(), USERS, ["id"], bucket_count=4)
    async with t.new_upsert().create_writer() as w:
        for i in range(64):
            w.upsert({"id": i, "name": f"u{i}", "age": i * 2})
    lk = t.new_lookup().create_lookuper()

    def requests_sent() -> int:
        return conn.metrics()["lookup"].get(str(t.get_table_path()), {}).get("lookupRequestsTotal", 0)

    before = requests_sent()
    got = await asyncio.gather(*[lk.lookup({"id": i}) for i in range(64)])
    assert [g["age"] for g in got] == [i * 2 for i in range(64)]
    # all 64 started in one turn of this loop: they hop to the runtime together (runtime._CallerLink)
    # and leave as one LOOKUP request per leader (64 keys reach all 4 buckets; one leader on the
    # embedded server, up to 3 on a Java cluster)
    leaders = list(t.bucket_leaders().values())
    assert None not in leaders
    assert requests_sent() - before == len({n.id for n in leaders})


async def test_partial_update_by_name_and_index(conn, unique_name):
    fields = USERS + [pa.field("score", pa.int64())]
    _, t = await make_pk(conn, unique_name(), fields, ["id"])
    await t.new_upsert().create_writer().upsert({"id": 1, "name": "a", "age": 30, "score": 7}).wait()
    pw = t.new_upsert().partial_update_by_name(["id", "score"]).create_writer()
    await pw.upsert({"id": 1, "score": 420}).wait()
    pi = t.new_upsert().partial_update_by_index([0, 1]).create_writer()
    await pi.upsert([1, "renamed"]).wait()
    lk = t.new_lookup().create_lookuper()
    assert await lk.lookup({"id": 1}) == {"id": 1, "name": "renamed", "age": 30, "score": 420}


async def test_auto_increment_table_refuses_whole_row_writers(conn, unique_name):
    # pyfluss (and the Java client) refuse at create_writer(), before any write reaches a server;
    # the official example auto_increment_table.py relies on it.
    path = fluss.TablePath("fluss", unique_name())
    schema = fluss.Schema(pa.schema([pa.field("uid", pa.string()), pa.field("region", pa.string()),
                                     pa.field("uid_int", pa.int64())]),
                          primary_keys=["uid"], auto_increment_column="uid_int")
    await conn.get_admin().create_table(path, fluss.TableDescriptor(schema, bucket_count=1))
    t = await conn.get_table(path)
    with pytest.raises(fluss.FlussError, match="This table has auto increment column uid_int"):
        t.new_upsert().create_writer()
    with pytest.raises(fluss.FlussError, match="auto increment column uid_int is not allowed"):
        t.new_upsert().partial_update_by_name(["uid", "uid_int"]).create_writer()
    w = t.new_upsert().partial_update_by_name(["uid", "region"]).create_writer()
    await w.upsert({"uid": "a", "region": "eu"}).wait()
    row = await t.new_lookup().create_lookuper().lookup({"uid": "a"})
    assert row["region"] == "eu" and row["uid_int"] is not None


async def test_partitioned_table_and_prefix_lookup(conn, unique_name):
    fields = [pa.field("region", pa.string()), pa.field("user_id", pa.int32()),
              pa.field("event_id", pa.int64()), pa.field("v", pa.string())]
    path, t = await make_pk(conn, unique_name(), fields, ["region", "user_id", "event_id"],
                            partition_keys=["region"], bucket_count=3, bucket_keys=["user_id"])
    admin = conn.get_admin()
    for r in ("US", "EU"):
        await admin.create_partition(path, {"region": r})
    t = await conn.get_table(path)
    w = t.new_upsert().create_writer()
    rows = [("US", 1, 1, "a"), ("US", 1, 2, "b"), ("US", 2, 1, "c"), ("EU", 1, 1, "d")]
    for r in rows:
        w.upsert(list(r))
    await w.flush()
    lk = t.new_lookup().create_lookuper()
    assert (await lk.lookup({"region": "EU", "user_id": 1, "event_id": 1}))["v"] == "d"
    assert await lk.lookup({"region": "APAC", "user_id": 1, "event_id": 1}) is None
    pl = t.new_lookup().lookup_by(["region", "user_id"]).create_lookuper()
    got = await pl.lookup({"region": "US", "user_id": 1})
    assert sorted(r["v"] for r in got) == ["a", "b"]
    assert await pl.lookup(["APAC", 1]) == []
    await w.delete({"region": "US", "user_id": 1, "event_id": 2}).wait()
    assert [r["v"] for r in await pl.lookup(("US", 1))] == ["a"]
    # snapshot of every partition, and of one bucket
    snap = await t.new_scan().create_snapshot_scanner()
    whole = await snap.to_arrow()
    assert sorted(whole.column("v").to_pylist()) == ["a", "c", "d"]
    pids = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(path)}
    per_bucket = [await snap.to_arrow(bucket=b, partition_id=pids["US"]) for b in range(3)]
    assert sorted(v for tb in per_bucket for v in tb.column("v").to_pylist()) == ["a", "c"]


async def test_changelog_scan_of_pk_table(conn, unique_name):
    _, t = await make_pk(conn, unique_name(), USERS, ["id"], bucket_count=1)
    w = t.new_upsert().create_writer()
    w.upsert({"id": 1, "name": "a", "age": 1})
    w.upsert({"id": 1, "name": "b", "age": 2})
    w.delete({"id": 1})
    await w.flush()
    s = await t.new_scan().create_log_scanner()
    s.subscribe(bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)
    recs = []
    for _ in range(50):
        recs.extend(await s.poll(200))
        if len(recs) >= 4:
            break
    C = fluss.ChangeType
    assert [r.change_type for r in recs] == [C.Insert, C.UpdateBefore, C.UpdateAfter, C.Delete]
    assert [r.row["name"] for r in recs] == ["a", "a", "b", "b"]
    assert [r.offset for r in recs] == [0, 1, 2, 3]
    # as pyfluss: the Arrow scanner has no change types, so primary-key tables refuse it
    with pytest.raises(fluss.FlussError):
        await t.new_scan().create_record_batch_log_scanner()


async def test_limit_and_snapshot_scans(conn, unique_name):
    _, t = await make_pk(conn, unique_name(), USERS, ["id"], bucket_count=2)
    async with t.new_upsert().create_writer() as w:
        for i in range(10):
            w.upsert({"id": i, "name": f"u{i}", "age": i})
        w.upsert({"id": 0, "name": "zero", "age": 100})
        w.delete({"id": 9})
    rows = 0
    for b in range(2):
        bs = t.new_scan().limit(100).create_bucket_batch_scanner(
            fluss.TableBucket(t.get_table_info().table_id, b))
        rows += (await bs.to_arrow()).num_rows
    assert rows == 9
    snap = await t.new_scan().project_by_name(["age", "id"]).create_snapshot_scanner()
    tb = (await snap.to_arrow()).sort_by("id")
    assert tb.column_names == ["age", "id"]
    assert tb.column("id").to_pylist() == list(range(9))
    assert tb.column("age").to_pylist() == [100] + list(range(1, 9))
    df = await snap.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 9
    log_path = fluss.TablePath("fluss", unique_name())
    await conn.get_admin().create_table(log_path, fluss.TableDescriptor(
        fluss.Schema(pa.schema(USERS))))
    log = await conn.get_table(log_path)
    with pytest.raises(fluss.FlussError, match="primary key"):
        await log.new_scan().create_snapshot_scanner()


async def test_snapshot_scan_of_a_server_without_scan_kv(conn, unique_name, monkeypatch):
    # Fluss 0.9.1's tablet servers do not list SCAN_KV; the scanner reads each bucket whole with
    # LIMIT_SCAN there, and never sends an API the server did not list. The older server is
    # simulated by a handshake that forgets what it did not list, on connections opened afterwards.
    from fluss_fast.rpc.api import Api
    from fluss_fast.rpc.connection import Connection

    path, t = await make_pk(conn, unique_name(), USERS, ["id"], bucket_count=3)
    async with t.new_upsert().create_writer() as w:
        for i in range(300):
            w.upsert({"id": i, "name": f"u{i}", "age": i})
        for i in range(0, 300, 7):
            w.delete({"id": i})
    sent = []
    enqueue = Connection._enqueue

    def recording(self, api_key, *args):
        sent.append(api_key)
        return enqueue(self, api_key, *args)

    monkeypatch.setattr(Connection, "_enqueue", recording)
    handshake = Connection._handshake

    def server_without(*apis):
        async def listing_less(self, *args):
            await handshake(self, *args)
            for api in apis:
                self._versions.pop(api, None)
        return listing_less

    async def snapshot_scanner_without(*apis):
        monkeypatch.setattr(Connection, "_handshake", server_without(*apis))
        older = await fluss.FlussConnection.create(conn.config)
        scanners.append(older)
        table = await older.get_table(path)
        return await table.new_scan().project_by_name(["id", "age"]).create_snapshot_scanner()

    scanners = []
    try:
        want = [i for i in range(300) if i % 7]
        snap = await snapshot_scanner_without(Api.SCAN_KV)
        tb = (await snap.to_arrow()).sort_by("id")
        assert tb.column_names == ["id", "age"]
        assert tb.column("id").to_pylist() == want and tb.column("age").to_pylist() == want
        assert sum([(await snap.to_arrow(bucket=b)).num_rows for b in range(3)]) == len(want)
        assert Api.LIMIT_SCAN in sent and Api.SCAN_KV not in sent
        snap = await snapshot_scanner_without(Api.SCAN_KV, Api.LIMIT_SCAN)
        with pytest.raises(fluss.FlussError, match="supports neither SCAN_KV nor LIMIT_SCAN") as e:
            await snap.to_arrow()
        assert e.value.error_code == 2  # UNSUPPORTED_VERSION
    finally:
        for older in scanners:
            await older.close()


async def test_virtual_changelog_and_binlog(conn, unique_name):
    name = unique_name()
    _, t = await make_pk(conn, name, USERS, ["id"], bucket_count=1)
    w = t.new_upsert().create_writer()
    w.upsert({"id": 1, "name": "Alice", "age": 1})
    w.upsert({"id": 1, "name": "Alice Smith", "age": 2})
    w.delete({"id": 1})
    await w.flush()
    cl = await conn.get_table(fluss.TablePath("fluss", name + "$changelog"))
    s = await cl.new_scan().create_log_scanner()
    await s.subscribe_all("earliest")
    tb = await s.to_arrow()
    assert tb.column_names[:3] == ["_change_type", "_log_offset", "_commit_timestamp"]
    assert tb.column("_change_type").to_pylist() == ["insert", "update_before", "update_after", "delete"]
    assert tb.column("_log_offset").to_pylist() == [0, 1, 2, 3]
    assert tb.schema.field("_commit_timestamp").type == pa.timestamp("ms", tz="UTC")
    assert tb.column("name").to_pylist() == ["Alice", "Alice", "Alice Smith", "Alice Smith"]
    bl = await conn.get_table(fluss.TablePath("fluss", name + "$binlog"))
    s = await bl.new_scan().create_log_scanner()
    s.subscribe(bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)
    rows = []
    for _ in range(50):
        rows.extend(r.row for r in await s.poll(200))
        if len(rows) >= 3:
            break
    assert [r["_change_type"] for r in rows] == ["insert", "update", "delete"]
    assert [r["_log_offset"] for r in rows] == [0, 2, 3]
    assert rows[0]["before"] is None and rows[0]["after"]["name"] == "Alice"
    assert rows[1]["before"]["name"] == "Alice" and rows[1]["after"]["name"] == "Alice Smith"
    assert rows[2]["before"]["name"] == "Alice Smith" and rows[2]["after"] is None
    # latest: only what comes after
    s = await cl.new_scan().create_log_scanner()
    await s.subscribe_all("latest")
    await w.upsert({"id": 2, "name": "B", "age": 3}).wait()
    got = []
    for _ in range(50):
        got.extend(r.row for r in await s.poll(200))
        if got:
            break
    assert [(r["_change_type"], r["id"]) for r in got] == [("insert", 2)]
    for bad in (lambda: cl.new_upsert(), lambda: cl.new_append(), lambda: bl.new_lookup()):
        with pytest.raises(fluss.FlussError, match="read-only virtual table"):
            bad()
    # get_table promises a FlussTable (pyfluss's signature): a virtual one is one, with its own
    # path and schema, read through TableScan's interface
    assert isinstance(cl, fluss.FlussTable) and isinstance(cl.new_scan(), fluss.TableScan)
    assert cl.get_table_path().table_name == name + "$changelog" and not cl.has_primary_key()
    assert cl.arrow_schema.names[:3] == ["_change_type", "_log_offset", "_commit_timestamp"]
    assert cl.get_table_info().table_id == t.get_table_info().table_id
    with pytest.raises(fluss.FlussError, match="not supported on virtual tables"):
        cl.new_scan().create_bucket_batch_scanner(fluss.TableBucket(t.get_table_info().table_id, 0))


async def test_virtual_tables_of_log_table(conn, unique_name):
    name = unique_name()
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema(USERS))))
    t = await conn.get_table(path)
    async with t.new_append().create_writer() as w:
        w.append({"id": 1, "name": "x", "age": 1})
    cl = await conn.get_table(fluss.TablePath("fluss", name + "$changelog"))
    s = await cl.new_scan().create_log_scanner()
    await s.subscribe_all("earliest")
    tb = await s.to_arrow()
    assert tb.column("_change_type").to_pylist() == ["insert"]
    with pytest.raises(fluss.FlussError, match="only supported for primary key tables"):
        await conn.get_table(fluss.TablePath("fluss", name + "$binlog"))


async def test_bulk_arrow_upsert_and_delete(conn, unique_name):
    fields = [pa.field("id", pa.int64()), pa.field("s", pa.string()), pa.field("f", pa.float32()),
              pa.field("d", pa.decimal128(10, 2)), pa.field("ts", pa.timestamp("us")),
              pa.field("ltz", pa.timestamp("ms", tz="UTC")), pa.field("day", pa.date32()),
              pa.field("b", pa.bool_()), pa.field("i8", pa.int8()), pa.field("i16", pa.int16()),
              pa.field("tags", pa.list_(pa.string()))]
    _, t = await make_pk(conn, unique_name(), fields, ["id"], bucket_count=3)
    n = 1000
    ids = np.arange(n, dtype=np.int64)
    data = pa.table({  # columns deliberately out of schema order: matched by name
        "s": pa.array([None if i % 7 == 0 else f"s{i}" for i in range(n)]),
        "id": ids, "f": pa.array(ids.astype(np.float32) / 2),
        "d": pa.array([Decimal(i) / 100 for i in range(n)], pa.decimal128(10, 2)),
        "ts": pa.array(ids * 1_000_001, pa.timestamp("us")),
        "ltz": pa.array(ids * 1000, pa.timestamp("ms", tz="UTC")),
        "day": pa.array(ids.astype(np.int32), pa.date32()), "b": pa.array(ids % 2 == 0),
        "i8": pa.array((ids % 100).astype(np.int8)), "i16": pa.array(ids.astype(np.int16)),
    })
    w = t.new_upsert().create_writer()
    await w.upsert_arrow(data).wait()
    lk = t.new_lookup().create_lookuper()
    got = await lk.lookup({"id": 123})
    assert got == {"id": 123, "s": "s123", "f": 61.5, "d": Decimal("1.23"),
                   "ts": dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=123 * 1_000_001),
                   "ltz": dt.datetime(1970, 1, 1, 0, 2, 3, tzinfo=UTC), "day": dt.date(1970, 5, 4),
                   "b": False, "i8": 23, "i16": 123, "tags": None}
    assert (await lk.lookup({"id": 7}))["s"] is None
    # a nested column goes row by row, with the same outcome
    w.upsert_arrow_batch(pa.record_batch({"id": pa.array([5000], pa.int64()),
                                          "tags": pa.array([["a", "b"]])}))
    w.upsert_pandas(pd.DataFrame({"id": [5001], "s": ["pandas"]}))
    w.delete_arrow(pa.table({"id": pa.array(np.arange(0, 500), pa.int64())}))
    w.delete_pandas(pd.DataFrame({"id": [5001]}))
    await w.flush()
    assert (await lk.lookup({"id": 5000}))["tags"] == ["a", "b"]
    assert await lk.lookup({"id": 5001}) is None
    assert await lk.lookup({"id": 10}) is None
    snap = await t.new_scan().create_snapshot_scanner()
    assert (await snap.to_arrow()).num_rows == 501
    # bad bulk input names the column
    with pytest.raises(fluss.FlussError, match="Unknown field 'nope'"):
        w.upsert_arrow(pa.table({"id": [1], "nope": [1]}))
    with pytest.raises(fluss.FlussError, match="'id'"):
        w.upsert_arrow(pa.table({"s": ["x"]}))
    with pytest.raises(fluss.FlussError, match="'id'"):
        w.delete_arrow(pa.table({"id": pa.array([None], pa.int64())}))


async def test_bulk_upsert_partitioned_and_partial(conn, unique_name):
    fields = [pa.field("region", pa.string()), pa.field("id", pa.int32()),
              pa.field("a", pa.string()), pa.field("b", pa.int64())]
    path, t = await make_pk(conn, unique_name(), fields, ["region", "id"],
                            partition_keys=["region"], bucket_count=2)
    for r in ("US", "EU"):
        await conn.get_admin().create_partition(path, {"region": r})
    t = await conn.get_table(path)
    w = t.new_upsert().create_writer()
    await w.upsert_arrow(pa.table({"region": ["US", "EU", "US"], "id": pa.array([1, 1, 2], pa.int32()),
                                   "a": ["x", "y", "z"], "b": [1, 2, 3]})).wait()
    pw = t.new_upsert().partial_update_by_name(["region", "id", "b"]).create_writer()
    await pw.upsert_arrow(pa.table({"region": ["US"], "id": pa.array([1], pa.int32()), "b": [99]})).wait()
    lk = t.new_lookup().create_lookuper()
    assert await lk.lookup(["US", 1]) == {"region": "US", "id": 1, "a": "x", "b": 99}
    assert await lk.lookup(["EU", 1]) == {"region": "EU", "id": 1, "a": "y", "b": 2}


async def test_bad_input_names_the_column(conn, unique_name):
    fields = [pa.field("id", pa.int32()), pa.field("req", pa.int32(), nullable=False),
              pa.field("tags", pa.list_(pa.string())),
              pa.field("nested", pa.struct([pa.field("a", pa.int32()),
                                            pa.field("b", pa.int32(), nullable=False)]))]
    _, t = await make_pk(conn, unique_name(), fields, ["id"])
    w = t.new_upsert().create_writer()
    with pytest.raises(fluss.FlussError, match="non-nullable field 'id'") as e:
        w.upsert({"req": 1})
    assert e.value.error_code == -2
    with pytest.raises(fluss.FlussError, match="non-nullable field 'req'"):
        w.upsert({"id": 1})
    with pytest.raises(fluss.FlussError, match="non-nullable row field 'b'"):
        w.upsert({"id": 1, "req": 1, "nested": {"a": 1}})
    with pytest.raises(fluss.FlussError, match="Expected sequence for Array column"):
        w.upsert({"id": 1, "req": 1, "tags": "not-a-list"})
    with pytest.raises(fluss.FlussError, match="Unknown field 'nope'"):
        w.upsert({"id": 1, "req": 1, "nope": 2})
    with pytest.raises(fluss.FlussError, match="Expected 4 elements, got 2"):
        w.upsert([1, 2])
    # a partial update must target the key; the other columns must be nullable
    with pytest.raises(fluss.FlussError, match="must contain the primary key columns id"):
        t.new_upsert().partial_update_by_name(["req"]).create_writer()
    with pytest.raises(fluss.FlussError, match="column req is NOT NULL"):
        t.new_upsert().partial_update_by_name(["id", "tags"]).create_writer()
    lk = t.new_lookup().create_lookuper()
    with pytest.raises(fluss.FlussError, match="Expected 1 elements, got 2"):
        await lk.lookup([1, 2])
    with pytest.raises(fluss.FlussError, match="Unknown field 'req'"):
        await lk.lookup({"id": 1, "req": 2})
    with pytest.raises(fluss.FlussError, match="Unknown column name 'zzz'"):
        t.new_lookup().lookup_by(["zzz"]).create_lookuper()
    log_path = fluss.TablePath("fluss", unique_name())
    await conn.get_admin().create_table(log_path, fluss.TableDescriptor(fluss.Schema(pa.schema(USERS))))
    log = await conn.get_table(log_path)
    with pytest.raises(fluss.FlussError, match="only supported for primary key tables") as e:
        log.new_upsert()
    assert e.value.error_code == -2
    # nothing bad was sent: the writer still works
    await w.upsert({"id": 1, "req": 5}).wait()
    assert (await lk.lookup({"id": 1}))["req"] == 5


def test_sync_facade(fluss_server, unique_name):
    from fluss_fast import sync

    conn = sync.connect({"bootstrap.servers": fluss_server.bootstrap_servers})
    try:
        path = fluss.TablePath("fluss", unique_name())
        conn.get_admin().create_table(path, fluss.TableDescriptor(
            fluss.Schema(pa.schema(USERS), primary_keys=["id"]), bucket_count=2))
        t = conn.get_table(path)
        w = t.new_upsert().create_writer()
        w.upsert({"id": 1, "name": "a", "age": 1})
        w.upsert_arrow(pa.table({"id": pa.array([2, 3], pa.int32()), "name": ["b", "c"],
                                 "age": [2, 3]}))
        w.flush()
        assert t.new_lookup().create_lookuper().lookup({"id": 2})["name"] == "b"
        snap = t.new_scan().create_snapshot_scanner()
        assert snap.to_arrow().num_rows == 3
        assert len(snap.to_pandas()) == 3
    finally:
        conn.close()


async def test_missing_partition_and_bad_delete(fluss_server, conn, unique_name):
    fields = [pa.field("region", pa.string()), pa.field("id", pa.int32()), pa.field("v", pa.string())]
    path, _ = await make_pk(conn, unique_name(), fields, ["region", "id"], partition_keys=["region"])
    # dynamic partition creation off (on by default, as in Java)
    strict = await connect(fluss_server.bootstrap_servers, {"writer.dynamic-create-partition.enabled": "false"})
    t = await strict.get_table(path)
    w = t.new_upsert().create_writer()
    with pytest.raises(fluss.FlussError, match="partition 'XX' does not exist") as e:
        w.upsert({"region": "XX", "id": 1, "v": "a"})
    assert e.value.error_code == 36
    with pytest.raises(fluss.FlussError, match="Unknown field 'v'"):
        w.delete({"region": "XX", "id": 1, "v": "a"})  # a delete takes the primary key only
    with pytest.raises(fluss.FlussError, match="non-nullable field 'id'"):
        w.delete({"region": "XX"})
    with pytest.raises(fluss.FlussError, match="partition 'XX' does not exist"):
        w.upsert_arrow(pa.table({"region": ["XX"], "id": pa.array([1], pa.int32())}))
    await strict.close()
