"""The official client (pyfluss 1.0.0) on primary-key tables of the embedded server: upserts, deletes,
partial updates, lookups, prefix lookups, every data type as key and value, partitioned tables, the
changelog with its change types, merge engines, and kill -9."""
from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal

import pyarrow as pa
import pytest

from pyfluss_util import call, connect, pyfluss_fixtures

fluss = pytest.importorskip("fluss")

pytestmark = pytest.mark.compat

conn, admin, db = pyfluss_fixtures("pykv")

CT = None if fluss is None else fluss.ChangeType


async def make_table(conn, admin, db, name, fields, pk, **kw):
    tp = fluss.TablePath(db, name)
    schema = fluss.Schema(pa.schema(fields), primary_keys=pk)
    await call(admin.create_table(tp, fluss.TableDescriptor(schema, **kw)))
    return await call(conn.get_table(tp))


async def changelog(table, buckets, expect, timeout=30):
    """[(bucket, offset, change_type, row)] of ``expect`` records, in offset order per bucket."""
    scanner = await call(table.new_scan().create_log_scanner())
    for b in buckets:
        scanner.subscribe(bucket_id=b, start_offset=fluss.EARLIEST_OFFSET)
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < expect and time.monotonic() < deadline:
        recs = await call(scanner.poll(200))
        for bucket, items in recs.items():
            out.extend((bucket.bucket_id, r.offset, r.change_type, r.row) for r in items)
    extra = await call(scanner.poll(300))
    assert extra.count() == 0
    return sorted(out, key=lambda x: (x[0], x[1]))


BASIC = [pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("score", pa.int64())]


async def test_upsert_delete_lookup_and_changelog(conn, admin, db):
    table = await make_table(conn, admin, db, "basic", BASIC, ["id"], bucket_count=1)
    w = table.new_upsert().create_writer()
    await call(w.upsert({"id": 1, "name": "a", "score": 1}).wait())
    await call(w.upsert([2, "b", 2]).wait())
    await call(w.upsert((1, "a2", 10)).wait())
    await call(w.delete({"id": 2}).wait())
    await call(w.delete({"id": 99}).wait())  # missing key: acknowledged, nothing in the changelog
    lk = table.new_lookup().create_lookuper()
    assert await call(lk.lookup({"id": 1})) == {"id": 1, "name": "a2", "score": 10}
    assert await call(lk.lookup([2])) is None
    log = await changelog(table, [0], 5)
    assert [(o, ct, row) for _, o, ct, row in log] == [
        (0, CT.Insert, {"id": 1, "name": "a", "score": 1}),
        (1, CT.Insert, {"id": 2, "name": "b", "score": 2}),
        (2, CT.UpdateBefore, {"id": 1, "name": "a", "score": 1}),
        (3, CT.UpdateAfter, {"id": 1, "name": "a2", "score": 10}),
        (4, CT.Delete, {"id": 2, "name": "b", "score": 2}),
    ]


async def test_wal_changelog_image(conn, admin, db):
    table = await make_table(conn, admin, db, "wal", BASIC, ["id"], bucket_count=1,
                             properties={"table.changelog.image": "WAL"})
    w = table.new_upsert().create_writer()
    for row in ({"id": 1, "name": "a", "score": 1}, {"id": 1, "name": "b", "score": 2}):
        await call(w.upsert(row).wait())
    await call(w.delete({"id": 1}).wait())
    log = await changelog(table, [0], 3)
    assert [ct for _, _, ct, _ in log] == [CT.UpdateAfter, CT.UpdateAfter, CT.Delete]


async def test_many_rows_over_buckets(conn, admin, db):
    table = await make_table(conn, admin, db, "many", BASIC, ["id"], bucket_count=4)
    w = table.new_upsert().create_writer()
    for i in range(500):
        w.upsert({"id": i, "name": f"n{i}", "score": i})
    for i in range(0, 500, 5):
        w.delete({"id": i})
    await call(w.flush())
    lk = table.new_lookup().create_lookuper()
    got = [await call(lk.lookup({"id": i})) for i in range(0, 500, 7)]
    assert got == [None if i % 5 == 0 else {"id": i, "name": f"n{i}", "score": i} for i in range(0, 500, 7)]
    log = await changelog(table, range(4), 600)
    assert sum(1 for r in log if r[2] == CT.Insert) == 500
    assert sum(1 for r in log if r[2] == CT.Delete) == 100


async def test_partial_updates(conn, admin, db):
    table = await make_table(conn, admin, db, "partial", BASIC + [pa.field("extra", pa.string())], ["id"])
    await call(table.new_upsert().create_writer().upsert({"id": 1, "name": "a", "score": 5, "extra": "x"}).wait())
    by_name = table.new_upsert().partial_update_by_name(["id", "score"]).create_writer()
    await call(by_name.upsert({"id": 1, "score": 6}).wait())
    await call(by_name.upsert({"id": 2, "score": 7}).wait())
    by_index = table.new_upsert().partial_update_by_index([0, 3]).create_writer()
    await call(by_index.upsert([1, "y"]).wait())
    lk = table.new_lookup().create_lookuper()
    assert await call(lk.lookup({"id": 1})) == {"id": 1, "name": "a", "score": 6, "extra": "y"}
    assert await call(lk.lookup({"id": 2})) == {"id": 2, "name": None, "score": 7, "extra": None}


async def test_every_type_as_key_and_value(conn, admin, db):
    fields = [
        pa.field("k_bool", pa.bool_()), pa.field("k_i8", pa.int8()), pa.field("k_i16", pa.int16()),
        pa.field("k_i32", pa.int32()), pa.field("k_i64", pa.int64()), pa.field("k_str", pa.string()),
        pa.field("k_bin", pa.binary()), pa.field("k_dec", pa.decimal128(20, 3)), pa.field("k_date", pa.date32()),
        pa.field("k_time", pa.time32("ms")), pa.field("k_ts", pa.timestamp("us")),
        pa.field("k_ltz", pa.timestamp("us", tz="UTC")),
        pa.field("v_f32", pa.float32()), pa.field("v_f64", pa.float64()), pa.field("v_dec", pa.decimal128(10, 2)),
        pa.field("v_ts_ns", pa.timestamp("ns")), pa.field("v_arr", pa.list_(pa.int32())),
        pa.field("v_map", pa.map_(pa.string(), pa.int64())),
        pa.field("v_row", pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())])),
        pa.field("v_null", pa.string()),
    ]
    keys = [f.name for f in fields if f.name.startswith("k_")]
    table = await make_table(conn, admin, db, "types", fields, keys, bucket_count=3)
    w = table.new_upsert().create_writer()
    rows = []
    for i in range(6):
        rows.append({
            "k_bool": i % 2 == 0, "k_i8": -i, "k_i16": 300 * i, "k_i32": -70000 * i, "k_i64": 2 ** 40 + i,
            "k_str": f"ключ-{i}", "k_bin": bytes([i, 0xFF, 0]), "k_dec": Decimal(f"{i}123456789012.345"),
            "k_date": dt.date(2024, 1, 1) + dt.timedelta(days=i), "k_time": dt.time(12, i, 5, 123000),
            "k_ts": dt.datetime(2024, 5, 6, 7, 8, 9, 123456 + i),
            "k_ltz": dt.datetime(2024, 5, 6, 7, 8, 9, i, tzinfo=dt.UTC),
            "v_f32": 1.5 * i, "v_f64": -2.25 * i, "v_dec": Decimal("12.34") * i,
            "v_ts_ns": dt.datetime(2001, 2, 3, 4, 5, 6, 7), "v_arr": [i, None, -i],
            "v_map": {"x": i}, "v_row": {"a": i, "b": "s"}, "v_null": None,
        })
        w.upsert(rows[-1])
    await call(w.flush())
    lk = table.new_lookup().create_lookuper()
    for row in rows:
        got = await call(lk.lookup({k: row[k] for k in keys}))
        assert got is not None, row
        for name in keys + ["v_f32", "v_f64", "v_dec", "v_arr", "v_null"]:
            assert got[name] == row[name], name
        assert got["v_row"] == row["v_row"]
        assert dict(got["v_map"]) == row["v_map"]
    await call(w.delete({k: rows[0][k] for k in keys}).wait())
    assert await call(lk.lookup({k: rows[0][k] for k in keys})) is None


async def test_partitioned_table_and_prefix_lookup(conn, admin, db):
    fields = [pa.field("region", pa.string()), pa.field("user", pa.int32()), pa.field("event", pa.int32()),
              pa.field("what", pa.string())]
    table = await make_table(conn, admin, db, "parts", fields, ["region", "user", "event"],
                             partition_keys=["region"], bucket_keys=["user"], bucket_count=3)
    for r in ("eu", "us"):
        await call(admin.create_partition(fluss.TablePath(db, "parts"), {"region": r}))
    w = table.new_upsert().create_writer()
    for region in ("eu", "us"):
        for user in range(3):
            for event in range(4):
                w.upsert({"region": region, "user": user, "event": event, "what": f"{region}{user}{event}"})
    await call(w.flush())
    lk = table.new_lookup().create_lookuper()
    assert (await call(lk.lookup({"region": "us", "user": 2, "event": 3})))["what"] == "us23"
    plk = table.new_lookup().lookup_by(["region", "user"]).create_lookuper()
    got = await call(plk.lookup({"region": "eu", "user": 1}))
    assert sorted(r["what"] for r in got) == ["eu10", "eu11", "eu12", "eu13"]
    await call(w.delete({"region": "eu", "user": 1, "event": 2}).wait())
    got = await call(plk.lookup(["eu", 1]))
    assert sorted(r["what"] for r in got) == ["eu10", "eu11", "eu13"]
    assert await call(plk.lookup(["eu", 99])) == []


async def test_first_row_and_versioned_engines(conn, admin, db):
    first = await make_table(conn, admin, db, "first", BASIC, ["id"], properties={"table.merge-engine": "first_row"})
    w = first.new_upsert().create_writer()
    await call(w.upsert({"id": 1, "name": "first", "score": 1}).wait())
    await call(w.upsert({"id": 1, "name": "second", "score": 2}).wait())
    assert (await call(first.new_lookup().create_lookuper().lookup({"id": 1})))["name"] == "first"

    ver = await make_table(conn, admin, db, "ver", BASIC, ["id"], properties={
        "table.merge-engine": "versioned", "table.merge-engine.versioned.ver-column": "score"})
    w = ver.new_upsert().create_writer()
    for name, score in (("v2", 2), ("v1", 1), ("v3", 3)):
        await call(w.upsert({"id": 1, "name": name, "score": score}).wait())
    assert (await call(ver.new_lookup().create_lookuper().lookup({"id": 1})))["name"] == "v3"


async def test_delete_disabled_reaches_pyfluss_as_code_57(conn, admin, db):
    table = await make_table(conn, admin, db, "nodel", BASIC, ["id"],
                             properties={"table.delete.behavior": "DISABLE"})
    w = table.new_upsert().create_writer()
    await call(w.upsert({"id": 1, "name": "a", "score": 1}).wait())
    with pytest.raises(fluss.FlussError) as ei:
        await call(w.delete({"id": 1}).wait())
    assert ei.value.error_code == 57


async def test_limit_scan_of_pk_buckets(conn, admin, db):
    table = await make_table(conn, admin, db, "limit", BASIC, ["id"], bucket_count=2)
    w = table.new_upsert().create_writer()
    for i in range(30):
        w.upsert({"id": i, "name": "x", "score": i})
    await call(w.flush())
    info = table.get_table_info()
    ids = []
    for b in range(2):
        scanner = table.new_scan().limit(100).create_bucket_batch_scanner(fluss.TableBucket(info.table_id, b))
        ids += (await call(scanner.to_arrow())).column("id").to_pylist()
    assert sorted(ids) == list(range(30))
    small = table.new_scan().limit(3).create_bucket_batch_scanner(fluss.TableBucket(info.table_id, 0))
    assert (await call(small.to_arrow())).num_rows == 3


async def test_kill9_keeps_acknowledged_changes(start_server, unique_name):
    srv = start_server(sasl=False)
    c = await connect(fluss, srv.bootstrap_servers)
    name = unique_name("pykvkill")
    await call(c.get_admin().create_database(name))
    table = await make_table(c, c.get_admin(), name, "t", BASIC, ["id"], bucket_count=2)
    w = table.new_upsert().create_writer()
    for i in range(50):
        w.upsert({"id": i, "name": "v", "score": i})
    await call(w.flush())
    await call(w.upsert({"id": 7, "name": "changed", "score": 0}).wait())
    await call(w.delete({"id": 8}).wait())
    before = await changelog(table, [0, 1], 53)
    srv.kill()
    srv.start()
    c2 = await connect(fluss, srv.bootstrap_servers)
    table = await call(c2.get_table(fluss.TablePath(name, "t")))
    lk = table.new_lookup().create_lookuper()
    assert await call(lk.lookup({"id": 7})) == {"id": 7, "name": "changed", "score": 0}
    assert await call(lk.lookup({"id": 8})) is None
    assert await call(lk.lookup({"id": 49})) == {"id": 49, "name": "v", "score": 49}
    assert await changelog(table, [0, 1], 53) == before
    w = table.new_upsert().create_writer()
    await call(w.upsert({"id": 8, "name": "back", "score": 8}).wait())
    after = await changelog(table, [0, 1], 54)
    new = [r for r in after if r not in before]
    assert [(r[2], r[3]) for r in new] == [(CT.Insert, {"id": 8, "name": "back", "score": 8})]
    bucket = new[0][0]
    assert new[0][1] == max(r[1] for r in before if r[0] == bucket) + 1
    await c2.close()
    await c.close()
