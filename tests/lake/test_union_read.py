"""Tiering to Paimon and the lake + log union read on the embedded server.

Each table is tiered part way, written to again, and the union read is checked against the whole
Fluss log (log tables) or the whole changelog replayed (primary-key tables), which never touch the lake.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import lake
from fluss_fast.error_codes import Errors
from fluss_fast.errors import FlussError

from lake_util import partly_tiered_partitioned

LAKE_ON = {"table.datalake.enabled": "true", "table.datalake.freshness": "30s"}


def _sorted(t: pa.Table, by: list[str]) -> list[dict]:
    return t.sort_by([(c, "ascending") for c in by]).to_pylist()


async def _full_log(conn, path, buckets: int) -> pa.Table:
    table = await conn.get_table(path)
    s = await table.new_scan().create_record_batch_log_scanner()
    s.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
    return await s.to_arrow()


async def _replayed_state(conn, path, key=("id",), upto: dict | None = None) -> list[dict]:
    """The current state from the whole changelog, replayed row by row in each bucket's order (with
    ``upto``, a non-partitioned table's changelog before those bucket offsets only)."""
    cl = await conn.get_table(fluss.TablePath(path.database_name, f"{path.table_name}$changelog"))
    s = await cl.new_scan().create_log_scanner()
    state: dict = {}
    if upto is None:
        await s.subscribe_all("earliest")
        rows = (await s.to_arrow()).to_pylist()
    else:
        rows = []
        for b, end in upto.items():
            s.subscribe(b, 0)
            rows += [r for r in (await s.to_arrow()).to_pylist() if r["_log_offset"] < end]
    for r in rows:
        kind = r.pop("_change_type")
        r.pop("_log_offset")
        r.pop("_commit_timestamp")
        k = tuple(r[c] for c in key)
        if kind in ("insert", "update_after"):
            state[k] = r
        elif kind == "delete":
            state.pop(k, None)
    return [state[k] for k in sorted(state)]


async def test_log_table_union_is_the_whole_log(lake_conn):
    conn = lake_conn
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "events")
    schema = fluss.Schema(pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())]))
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=3, bucket_keys=["id"],
                                                         properties=LAKE_ON))
    info = await admin.get_table_info(path)
    assert info.get_properties()["table.datalake.format"] == "paimon"
    assert "table.datalake.paimon.warehouse" in info.get_properties()

    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)],
                            "score": [i / 2 for i in range(100)]}))
    await w.flush()
    first = await lake.tier_table(conn, path)
    assert first.snapshot_id is not None and first.rows == 100

    snap = await admin.get_latest_lake_snapshot(path)
    assert snap.snapshot_id == first.snapshot_id
    assert snap.table_buckets_offset == first.offsets
    assert sum(first.offsets.values()) == 100
    # the Paimon table holds the tiered rows in Fluss's layout: system columns after the table's
    from pypaimon import CatalogFactory

    props = info.get_properties()
    paimon = CatalogFactory.create({"warehouse": props["table.datalake.paimon.warehouse"]}).get_table("lake_db.events")
    rb = paimon.new_read_builder()
    in_lake = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert in_lake.column_names == ["id", "name", "score", "__bucket", "__offset", "__timestamp"]
    assert sorted(in_lake.column("id").to_pylist()) == list(range(100))
    for tb, end in first.offsets.items():
        offs = sorted(o for o, bb in zip(in_lake.column("__offset").to_pylist(),
                                         in_lake.column("__bucket").to_pylist(), strict=True) if bb == tb.bucket_id)
        assert offs == list(range(end))

    w.write_arrow(pa.table({"id": list(range(100, 160)), "name": [f"n{i}" for i in range(100, 160)],
                            "score": [i / 2 for i in range(100, 160)]}))
    await w.flush()

    union = await lake.union_scan(conn, path).to_arrow()
    full = await _full_log(conn, path, 3)
    assert union.num_rows == 160
    assert _sorted(union, ["id"]) == _sorted(full, ["id"])

    projected = await lake.union_scan(conn, path).project(["score", "id"]).where(fluss.col("id") >= 90).to_arrow()
    assert projected.column_names == ["score", "id"]
    assert _sorted(projected, ["id"]) == [{"score": i / 2, "id": i} for i in range(90, 160)]

    # a second round moves only the rest; the union is unchanged
    second = await lake.tier_table(conn, path)
    assert second.rows == 60 and second.snapshot_id > first.snapshot_id
    assert _sorted(await lake.union_scan(conn, path).to_arrow(), ["id"]) == _sorted(full, ["id"])
    nothing = await lake.tier_table(conn, path)
    assert nothing.snapshot_id is None and nothing.rows == 0
    only_lake = await lake.lake_scan(conn, path).project(["id", "__bucket"]).where(fluss.col("id") < 10).to_arrow()
    assert sorted(only_lake.column("id").to_pylist()) == list(range(10))
    assert set(only_lake.column("__bucket").to_pylist()) <= {0, 1, 2}


async def test_primary_key_table_union_is_the_current_state(lake_conn):
    conn = lake_conn
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "users")
    schema = fluss.Schema(pa.schema([("id", pa.int32()), ("name", pa.string()), ("age", pa.int64())]),
                          primary_keys=["id"])
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=2, properties=LAKE_ON,
                                                         custom_properties={"paimon.file.format": "orc"}))
    table = await conn.get_table(path)
    w = table.new_upsert().create_writer()
    for i in range(50):
        w.upsert({"id": i, "name": f"u{i}", "age": i})
    await w.flush()
    for i in range(0, 50, 5):
        w.upsert({"id": i, "name": f"v{i}", "age": 100 + i})   # updates before the snapshot
    w.delete({"id": 1})
    w.delete({"id": 2})   # deleted in the tiered part and never written again
    await w.flush()
    assert (await lake.tier_table(conn, path)).rows > 50

    # after the snapshot: updates of tiered keys, deletes of tiered keys, new keys, a re-insert
    for i in range(0, 50, 10):
        w.upsert({"id": i, "name": f"w{i}", "age": 200 + i})
    w.delete({"id": 3})
    w.delete({"id": 5})
    w.upsert({"id": 1, "name": "back", "age": 1})
    for i in range(50, 60):
        w.upsert({"id": i, "name": f"u{i}", "age": i})
    w.delete({"id": 55})
    await w.flush()

    # the lake alone holds the state as of the snapshot: deletes and updates inside one round applied
    snap = await admin.get_latest_lake_snapshot(path)
    upto = {tb.bucket_id: off for tb, off in snap.table_buckets_offset.items()}
    in_lake = await lake.lake_scan(conn, path).to_arrow()
    assert in_lake.column_names == ["id", "name", "age", "__bucket", "__offset", "__timestamp"]
    assert _sorted(in_lake.select(["id", "name", "age"]), ["id"]) == await _replayed_state(conn, path, upto=upto)
    assert 1 not in in_lake.column("id").to_pylist()
    for r in in_lake.to_pylist():
        assert r["__offset"] < upto[r["__bucket"]]

    from pypaimon import CatalogFactory

    props = (await admin.get_table_info(path)).get_properties()
    paimon = CatalogFactory.create({"warehouse": props["table.datalake.paimon.warehouse"]}).get_table("lake_db.users")
    assert paimon.table_schema.options["file.format"] == "orc"
    assert paimon.table_schema.options["bucket"] == "2"

    want = await _replayed_state(conn, path)
    union = await lake.union_scan(conn, path).to_arrow()
    assert _sorted(union, ["id"]) == want
    assert union.num_rows == len(want) == 50 - 3 + 10 - 1
    assert 2 not in union.column("id").to_pylist()
    # the lookup path agrees too
    lk = table.new_lookup().create_lookuper()
    assert (await lk.lookup({"id": 0}))["name"] == "w0"

    # a second round: the lake merges the new files' updates and deletes over the first round's
    assert (await lake.tier_table(conn, path)).rows > 0
    assert _sorted((await lake.lake_scan(conn, path).project(["id", "name", "age"]).to_arrow()), ["id"]) == want
    w.upsert({"id": 7, "name": "late", "age": 7})
    await w.flush()
    want = await _replayed_state(conn, path)
    assert _sorted(await lake.union_scan(conn, path).to_arrow(), ["id"]) == want

    # a filter on a column an update changed: the lake's old value must not leak through
    old_young = await lake.union_scan(conn, path).project(["id", "age"]).where(fluss.col("age") < 100).to_arrow()
    assert _sorted(old_young, ["id"]) == [{"id": r["id"], "age": r["age"]} for r in want if r["age"] < 100]
    assert 10 not in old_young.column("id").to_pylist()


async def test_union_with_nothing_tiered_reads_the_log(lake_conn):
    conn = lake_conn
    path = fluss.TablePath("lake_db", "fresh")
    schema = fluss.Schema(pa.schema([("id", pa.int64()), ("name", pa.string())]))
    await conn.get_admin().create_table(path, fluss.TableDescriptor(schema, bucket_count=2, properties=LAKE_ON))
    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
    await w.flush()
    with pytest.raises(FlussError) as e:
        await conn.get_admin().get_latest_lake_snapshot(path)
    assert e.value.error_code == Errors.LAKE_SNAPSHOT_NOT_EXIST
    got = await lake.union_scan(conn, path).to_arrow()
    assert _sorted(got, ["id"]) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]
    assert (await lake.lake_scan(conn, path).to_arrow()).num_rows == 0


async def test_table_without_lake_is_refused_by_name(lake_conn):
    conn = lake_conn
    path = fluss.TablePath("lake_db", "plain")
    schema = fluss.Schema(pa.schema([("id", pa.int64())]))
    await conn.get_admin().create_table(path, fluss.TableDescriptor(schema, bucket_count=1))
    for call in (lake.tier_table(conn, path), lake.union_scan(conn, path).to_arrow()):
        with pytest.raises(FlussError) as e:
            await call
        assert e.value.error_code == Errors.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION
        assert "lake_db.plain" in str(e.value) and "table.datalake.enabled" in str(e.value)


async def test_bad_projection_names_column_and_table(lake_conn):
    conn = lake_conn
    path = fluss.TablePath("lake_db", "proj")
    schema = fluss.Schema(pa.schema([("id", pa.int64())]))
    await conn.get_admin().create_table(path, fluss.TableDescriptor(schema, bucket_count=1, properties=LAKE_ON))
    with pytest.raises(FlussError) as e:
        await lake.union_scan(conn, path).project(["nope"]).to_arrow()
    assert "nope" in str(e.value) and "lake_db.proj" in str(e.value)


async def test_tiering_service_tiers_at_the_table_freshness(lake_conn):
    import asyncio

    conn = lake_conn
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "fresh1s")
    schema = fluss.Schema(pa.schema([("id", pa.int64()), ("name", pa.string())]))
    await admin.create_table(path, fluss.TableDescriptor(
        schema, bucket_count=2, properties={"table.datalake.enabled": "true", "table.datalake.freshness": "1s"}))
    await admin.create_table(fluss.TablePath("lake_db", "no_lake"), fluss.TableDescriptor(schema, bucket_count=1))
    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
    await w.flush()
    async with lake.TieringService(conn, poll_interval_s=0.1) as service:
        tiered = 0
        for _ in range(100):
            try:
                snap = await admin.get_latest_lake_snapshot(path)
                tiered = sum(snap.table_buckets_offset.values())
            except FlussError:
                pass
            if tiered == 3:
                break
            await asyncio.sleep(0.1)
        assert tiered == 3
        w.write_arrow(pa.table({"id": [4], "name": ["d"]}))
        await w.flush()
        for _ in range(100):
            snap = await admin.get_latest_lake_snapshot(path)
            if sum(snap.table_buckets_offset.values()) == 4:
                break
            await asyncio.sleep(0.1)
        assert sum(snap.table_buckets_offset.values()) == 4
        assert service.errors == []
    got = await lake.union_scan(conn, path).to_arrow()
    assert sorted(got.column("id").to_pylist()) == [1, 2, 3, 4]


async def test_partitioned_tables_union_per_partition(lake_conn):
    conn = lake_conn
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "by_region")
    schema = fluss.Schema(pa.schema([("id", pa.int32()), ("region", pa.string()), ("v", pa.int64())]),
                          primary_keys=["id", "region"])
    await admin.create_table(path, fluss.TableDescriptor(schema, partition_keys=["region"], bucket_count=2,
                                                         properties=LAKE_ON))
    await admin.create_partition(path, {"region": "eu"})
    await admin.create_partition(path, {"region": "us"})
    w = (await conn.get_table(path)).new_upsert().create_writer()
    for i in range(20):
        w.upsert({"id": i, "region": "eu" if i % 2 else "us", "v": i})
    await w.flush()
    first = await lake.tier_table(conn, path)
    assert first.rows == 20
    assert {tb.partition_id for tb in first.offsets} == {p.partition_id for p in await admin.list_partition_infos(path)}
    assert (await admin.get_latest_lake_snapshot(path)).table_buckets_offset == first.offsets

    # a new partition after the snapshot, updates and deletes in the tiered ones
    await admin.create_partition(path, {"region": "ap"})
    for i in range(0, 20, 3):
        w.upsert({"id": i, "region": "eu" if i % 2 else "us", "v": 100 + i})
    w.delete({"id": 4, "region": "us"})
    w.upsert({"id": 4, "region": "ap", "v": 4})
    await w.flush()
    want = await _replayed_state(conn, path, key=("id", "region"))
    got = await lake.union_scan(conn, path).to_arrow()
    assert _sorted(got, ["id", "region"]) == want
    assert len(want) == 20

    # and with a log table, the partitions' logs concatenated
    lpath = fluss.TablePath("lake_db", "clicks")
    lschema = fluss.Schema(pa.schema([("id", pa.int64()), ("day", pa.string())]))
    await admin.create_table(lpath, fluss.TableDescriptor(lschema, partition_keys=["day"], bucket_count=2,
                                                          properties=LAKE_ON))
    for day in ("d1", "d2"):
        await admin.create_partition(lpath, {"day": day})
    lw = (await conn.get_table(lpath)).new_append().create_writer()
    lw.write_arrow(pa.table({"id": list(range(30)), "day": ["d1", "d2"] * 15}))
    await lw.flush()
    assert (await lake.tier_table(conn, lpath)).rows == 30
    lw.write_arrow(pa.table({"id": list(range(30, 40)), "day": ["d2"] * 10}))
    await lw.flush()
    got = await lake.union_scan(conn, lpath).where(fluss.col("day") == "d2").to_arrow()
    assert sorted(got.column("id").to_pylist()) == sorted(list(range(1, 30, 2)) + list(range(30, 40)))


async def test_round_lost_before_its_coordinator_commit_is_finished_not_repeated(lake_conn):
    conn = lake_conn
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "crashy")
    schema = fluss.Schema(pa.schema([("id", pa.int64()), ("name", pa.string())]))
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=2, bucket_keys=["id"],
                                                         properties=LAKE_ON))
    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": list(range(10)), "name": ["x"] * 10}))
    await w.flush()
    first = await lake.tier_table(conn, path)
    w.write_arrow(pa.table({"id": list(range(10, 25)), "name": ["y"] * 15}))
    await w.flush()

    # the lake half of a round, as if the tiering process died before telling the coordinator
    lost = await lake.write_round(conn, path)
    assert lost.rows == 15 and lost.snapshot_id > first.snapshot_id
    assert (await admin.get_latest_lake_snapshot(path)).snapshot_id == first.snapshot_id
    # meanwhile union reads still take those rows from the log, once
    assert sorted((await lake.union_scan(conn, path).to_arrow()).column("id").to_pylist()) == list(range(25))

    w.write_arrow(pa.table({"id": list(range(25, 30)), "name": ["z"] * 5}))
    await w.flush()
    resumed = await lake.tier_table(conn, path)
    assert resumed.rows == 5  # the lost round's 15 rows were not written again
    snap = await admin.get_latest_lake_snapshot(path)
    assert snap.snapshot_id == resumed.snapshot_id and sum(snap.table_buckets_offset.values()) == 30
    got = await lake.union_scan(conn, path).to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(30))
    assert _sorted(got, ["id"]) == _sorted(await _full_log(conn, path, 2), ["id"])


async def test_recreated_table_does_not_take_the_dropped_tables_lake(lake_conn):
    conn = lake_conn
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "again")
    schema = fluss.Schema(pa.schema([("id", pa.int64())]))
    desc = fluss.TableDescriptor(schema, bucket_count=1, properties=LAKE_ON)
    await admin.create_table(path, desc)
    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": [1, 2]}))
    await w.flush()
    await lake.tier_table(conn, path)
    await admin.drop_table(path)
    await admin.create_table(path, desc)
    w = (await conn.get_table(path)).new_append().create_writer()
    w.write_arrow(pa.table({"id": [3]}))
    await w.flush()
    with pytest.raises(FlussError) as e:
        await lake.tier_table(conn, path)
    assert e.value.error_code == Errors.LAKE_TABLE_ALREADY_EXIST
    assert "lake_db.again" in str(e.value)
    # nothing of the old table leaks into the new one's reads
    assert (await lake.union_scan(conn, path).to_arrow()).column("id").to_pylist() == [3]


async def test_buckets_planned_and_read_one_by_one_make_the_union(lake_conn):
    conn = lake_conn
    for name, pk in (("cut_log", False), ("cut_pk", True)):
        path = fluss.TablePath("lake_db", name)
        await partly_tiered_partitioned(conn, path, pk=pk, buckets=3, rows=40, updated=range(10), bump=1000,
                                        deleted=11, properties=LAKE_ON)

        plans = await lake.plan_buckets(conn, path)
        assert len(plans) == 2 * 3 and all(p.snapshot_id is not None for p in plans)
        assert {p.partition["day"] for p in plans} == {"d1", "d2"}
        parts = [await lake.read_bucket(conn, path, p, ["id", "v"], fluss.col("v") >= 5) for p in plans]
        whole = await lake.union_scan(conn, path).project(["id", "v"]).where(fluss.col("v") >= 5).to_arrow()
        assert _sorted(pa.concat_tables(parts), ["id", "v"]) == _sorted(whole, ["id", "v"])
        assert whole.num_rows == (39 if pk else 45)
