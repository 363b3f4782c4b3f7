"""pyfluss 1.0.0 against the embedded server beyond a single tablet server: leaders spread over three
tablet servers, auto-partitioned tables written through, partitions surviving kill -9, nested complex
types, ZSTD levels and the data path over SASL."""
from __future__ import annotations

import asyncio
import datetime as dt
import time

import pandas as pd
import pyarrow as pa
import pytest

from fluss_fast.error_codes import Errors
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api

import pyfluss_util
from pyfluss_util import call
from wire import WireClient

fluss = pytest.importorskip("fluss")

pytestmark = pytest.mark.compat

TIMEOUT = 30
UTC = dt.UTC
SIMPLE = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])


async def connect(bootstrap, **extra):
    return await pyfluss_util.connect(fluss, bootstrap, **extra)


def simple_rows(start, n):
    return [{"id": i, "name": f"n{i % 11}", "score": i / 4} for i in range(start, start + n)]


async def poll_all(scanner, expect):
    """[(bucket, partition_id, offset, row)] once ``expect`` records arrived, then checks no more come."""
    out = []
    deadline = time.monotonic() + TIMEOUT
    while len(out) < expect and time.monotonic() < deadline:
        recs = await call(scanner.poll(200))
        for tb, items in recs.items():
            out.extend((tb.bucket_id, tb.partition_id, r.offset, r.row) for r in items)
    assert len(out) == expect, (len(out), expect)
    assert (await call(scanner.poll(200))).count() == 0
    return out


# -- three tablet servers ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster3():
    from conftest import ServerProcess

    srv = ServerProcess(tablet_servers=3, sasl=True).start()
    yield srv
    srv.close()


def leaders_by_raw_metadata(srv, db, table):
    with WireClient(srv.bootstrap_servers) as c:
        md = c.call(Api.GET_METADATA, pb.MetadataRequest(
            table_path=[pb.PbTablePath(database_name=db, table_name=table)]))
    nodes = {n.node_id: f"{n.host}:{n.port}" for n in md.tablet_servers}
    return {b.bucket_id: b.leader_id for b in md.table_metadata[0].bucket_metadata}, nodes


async def test_three_tablet_servers_spread_writes_and_scans(cluster3, unique_name):
    conn = await connect(cluster3.bootstrap_servers, **{"writer.bucket.no-key-assigner": "round_robin"})
    try:
        admin = conn.get_admin()
        nodes = await call(admin.get_server_nodes())
        assert sorted(n.id for n in nodes if n.server_type == "TabletServer") == [0, 1, 2]
        assert len({n.port for n in nodes}) == 4
        name = unique_name("spread")
        tp = fluss.TablePath("fluss", name)
        await call(admin.create_table(tp, fluss.TableDescriptor(fluss.Schema(SIMPLE), bucket_count=6)))
        table = await call(conn.get_table(tp))
        info = table.get_table_info()
        writer = table.new_append().create_writer()
        for r in simple_rows(0, 300):
            writer.append(r)
        writer.write_arrow(pa.Table.from_pylist(simple_rows(300, 300), schema=SIMPLE))
        writer.write_pandas(pd.DataFrame(simple_rows(600, 60)))
        await call(writer.flush())

        offsets = await call(admin.list_offsets(tp, list(range(6)), fluss.OffsetSpec.latest()))
        assert sum(offsets.values()) == 660
        assert all(v > 0 for v in offsets.values()), offsets
        leaders, addrs = leaders_by_raw_metadata(cluster3, "fluss", name)
        assert leaders == {b: (info.table_id + b) % 3 for b in range(6)}
        # the data really sits with the leaders: each answers for its buckets, the others refuse
        for b, leader in leaders.items():
            for node, addr in addrs.items():
                with WireClient(addr) as t:
                    r = t.call(Api.LIST_OFFSETS, pb.ListOffsetsRequest(
                        follower_server_id=-1, offset_type=1, table_id=info.table_id, bucket_id=[b]))
                got = r.buckets_resp[0]
                if node == leader:
                    assert got.error_code == 0 and got.offset == offsets[b]
                else:
                    assert got.error_code == Errors.NOT_LEADER_OR_FOLLOWER

        # record scanner over all buckets (three leaders at once)
        sc = await call(table.new_scan().create_log_scanner())
        sc.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(6)})
        got = await poll_all(sc, 660)
        assert sorted(r["id"] for *_, r in got) == list(range(660))
        for b in range(6):
            assert sorted(o for bb, _, o, _ in got if bb == b) == list(range(offsets[b]))
        # batch scanner, projected, from the middle of every bucket
        sc = await call(table.new_scan().project_by_name(["score", "id"]).create_record_batch_log_scanner())
        sc.subscribe_buckets({b: offsets[b] // 2 for b in range(6)})
        arrow = await call(sc.to_arrow())
        assert arrow.column_names == ["score", "id"]
        assert arrow.num_rows == sum(offsets[b] - offsets[b] // 2 for b in range(6))
        assert all(s == i / 4 for s, i in zip(arrow.column("score").to_pylist(), arrow.column("id").to_pylist(),
                                              strict=True))
        # limit scans go to each bucket's own leader
        by_bucket = {b: [r for bb, _, o, r in sorted(got, key=lambda x: x[2]) if bb == b] for b in range(6)}
        for b in range(6):
            lim = table.new_scan().limit(4).create_bucket_batch_scanner(fluss.TableBucket(info.table_id, b))
            assert (await call(lim.to_arrow())).to_pylist() == by_bucket[b][-4:]
        # timestamps: everything was written before ``now``
        await asyncio.sleep(0.01)
        now = int(time.time() * 1000)
        assert await call(admin.list_offsets(tp, list(range(6)), fluss.OffsetSpec.timestamp(now))) == offsets
        assert await call(admin.list_offsets(tp, list(range(6)), fluss.OffsetSpec.earliest())) == \
            {b: 0 for b in range(6)}
    finally:
        await conn.close()


async def test_three_tablet_servers_partitioned_and_bucket_keys(cluster3, unique_name):
    conn = await connect(cluster3.bootstrap_servers)
    try:
        admin = conn.get_admin()
        schema = pa.schema([("k", pa.string()), ("region", pa.string()), ("v", pa.int32())])
        tp = fluss.TablePath("fluss", unique_name("spreadp"))
        await call(admin.create_table(tp, fluss.TableDescriptor(
            fluss.Schema(schema), partition_keys=["region"], bucket_count=3, bucket_keys=["k"])))
        regions = ["EU", "US", "APAC"]
        for r in regions:
            await call(admin.create_partition(tp, {"region": r}))
        parts = {p.partition_name: p.partition_id for p in await call(admin.list_partition_infos(tp))}
        assert sorted(parts) == sorted(regions)
        table = await call(conn.get_table(tp))
        writer = table.new_append().create_writer()
        rows = [{"k": f"key-{i % 17}", "region": regions[i % 3], "v": i} for i in range(450)]
        for row in rows:
            writer.append(row)
        await call(writer.flush())
        total = 0
        for r in regions:
            offs = await call(admin.list_partition_offsets(tp, r, [0, 1, 2], fluss.OffsetSpec.latest()))
            total += sum(offs.values())
            assert sum(offs.values()) == 150
        assert total == 450
        sc = await call(table.new_scan().create_log_scanner())
        sc.subscribe_partition_buckets({(pid, b): fluss.EARLIEST_OFFSET for pid in parts.values() for b in range(3)})
        got = await poll_all(sc, 450)
        assert sorted(r["v"] for *_, r in got) == list(range(450))
        name_of = {pid: name for name, pid in parts.items()}
        assert all(r["region"] == name_of[pid] for _, pid, _, r in got)
        # one key, one bucket per partition (bucket keys hash the same in every partition)
        where = {}
        for b, _pid, _, r in got:
            where.setdefault(r["k"], set()).add(b)
        assert all(len(s) == 1 for s in where.values())
        # the partitions' buckets are led by all three servers (leader = (partition id + bucket) % 3)
        assert {(pid + b) % 3 for pid in parts.values() for b in range(3)} == {0, 1, 2}
    finally:
        await conn.close()


async def test_three_tablet_servers_over_sasl(cluster3, unique_name):
    conn = await connect(cluster3.sasl_bootstrap_servers, **{
        "security.protocol": "sasl", "security.sasl.mechanism": "PLAIN",
        "security.sasl.username": "alice", "security.sasl.password": "alice-pw",
        "writer.bucket.no-key-assigner": "round_robin"})
    try:
        admin = conn.get_admin()
        nodes = await call(admin.get_server_nodes())
        sasl_ports = {n.port for n in nodes}
        assert len(sasl_ports) == 4
        coord = [n for n in nodes if n.server_type == "CoordinatorServer"][0]
        assert f"{coord.host}:{coord.port}" == cluster3.sasl_bootstrap_servers
        tp = fluss.TablePath("fluss", unique_name("saslspread"))
        await call(admin.create_table(tp, fluss.TableDescriptor(fluss.Schema(SIMPLE), bucket_count=3)))
        table = await call(conn.get_table(tp))
        writer = table.new_append().create_writer()
        for r in simple_rows(0, 90):
            writer.append(r)
        await call(writer.flush())
        offsets = await call(admin.list_offsets(tp, [0, 1, 2], fluss.OffsetSpec.latest()))
        assert sum(offsets.values()) == 90 and all(offsets.values())
        sc = await call(table.new_scan().create_record_batch_log_scanner())
        sc.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(3)})
        arrow = await call(sc.to_arrow())
        assert sorted(arrow.column("id").to_pylist()) == list(range(90))
    finally:
        await conn.close()
    # a wrong password on the same cluster still fails with 46
    with pytest.raises(fluss.FlussError) as e:
        bad = await connect(cluster3.sasl_bootstrap_servers, **{
            "security.protocol": "sasl", "security.sasl.mechanism": "PLAIN",
            "security.sasl.username": "alice", "security.sasl.password": "nope"})
        try:
            await call(bad.get_admin().list_databases())
        finally:
            await bad.close()
    assert e.value.error_code == 46


# -- auto-partitioned tables ------------------------------------------------------------------------------
def _today_and_tomorrow():
    now = dt.datetime.now(UTC)
    return now.strftime("%Y%m%d"), (now + dt.timedelta(days=1)).strftime("%Y%m%d")


async def test_auto_partitioned_table_is_written_through(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    try:
        admin = conn.get_admin()
        schema = pa.schema([("id", pa.int64()), ("day", pa.string()), ("msg", pa.string())])
        tp = fluss.TablePath("fluss", unique_name("autop"))
        await call(admin.create_table(tp, fluss.TableDescriptor(fluss.Schema(schema), partition_keys=["day"],
                                                                bucket_count=2, properties={
            "table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "DAY",
            "table.auto-partition.time-zone": "UTC", "table.auto-partition.num-precreate": "2"})))
        info = await call(admin.get_table_info(tp))
        assert info.get_properties()["table.auto-partition.time-unit"] == "DAY"
        # the Java coordinator pre-creates them one by one after answering CREATE_TABLE
        deadline = time.monotonic() + 30
        while True:
            parts = {p.partition_name: p.partition_id for p in await call(admin.list_partition_infos(tp))}
            if len(parts) >= 2 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        today, tomorrow = _today_and_tomorrow()
        if today not in parts:  # created just before midnight UTC; the check runs again
            today, tomorrow = tomorrow, (dt.datetime.now(UTC) + dt.timedelta(days=2)).strftime("%Y%m%d")
        assert today in parts and tomorrow in parts and len(parts) == 2, parts
        spec = (await call(admin.list_partition_infos(tp, {"day": today})))[0]
        assert spec.partition_name == today and spec.partition_id == parts[today]

        table = await call(conn.get_table(tp))
        writer = table.new_append().create_writer()
        for i in range(40):
            writer.append({"id": i, "day": today, "msg": f"m{i}"})
        writer.write_arrow(pa.Table.from_pylist([{"id": 100 + i, "day": tomorrow, "msg": "t"} for i in range(7)],
                                                schema=schema))
        await call(writer.flush())
        assert sum((await call(admin.list_partition_offsets(tp, today, [0, 1], fluss.OffsetSpec.latest())))
                   .values()) == 40
        assert sum((await call(admin.list_partition_offsets(tp, tomorrow, [0, 1], fluss.OffsetSpec.latest())))
                   .values()) == 7
        sc = await call(table.new_scan().create_log_scanner())
        for b in range(2):
            sc.subscribe_partition(parts[today], b, fluss.EARLIEST_OFFSET)
        got = await poll_all(sc, 40)
        assert sorted(r["id"] for *_, r in got) == list(range(40))
        assert {r["day"] for *_, r in got} == {today} and {pid for _, pid, _, _ in got} == {parts[today]}
    finally:
        await conn.close()


# -- partitions and their data across kill -9 --------------------------------------------------------------
async def test_partitions_and_auto_partitions_survive_kill(start_server, unique_name):
    srv = start_server(tablet_servers=2, sasl=False)
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    manual = fluss.TablePath("fluss", "manual_parts")
    auto = fluss.TablePath("fluss", "auto_parts")
    conn = await connect(srv.bootstrap_servers)
    admin = conn.get_admin()
    await call(admin.create_table(manual, fluss.TableDescriptor(fluss.Schema(schema), partition_keys=["p"],
                                                                bucket_count=2)))
    await call(admin.create_table(auto, fluss.TableDescriptor(fluss.Schema(schema), partition_keys=["p"],
                                                              bucket_count=2, properties={
        "table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "DAY",
        "table.auto-partition.time-zone": "UTC"})))
    for v in ("a", "b", "c"):
        await call(admin.create_partition(manual, {"p": v}))
    await call(admin.drop_partition(manual, {"p": "b"}))
    manual_parts = {p.partition_name: p.partition_id for p in await call(admin.list_partition_infos(manual))}
    auto_parts = {p.partition_name: p.partition_id for p in await call(admin.list_partition_infos(auto))}
    assert sorted(manual_parts) == ["a", "c"] and len(auto_parts) == 2
    auto_today = min(auto_parts)
    writers = {}
    for tp, values in ((manual, ["a", "c"]), (auto, [auto_today])):
        t = await call(conn.get_table(tp))
        w = t.new_append().create_writer()
        for i in range(120):
            w.append({"id": i, "p": values[i % len(values)]})
        await call(w.flush())
        writers[tp.table_name] = t.get_table_info().table_id
    before = {}
    for tp, parts in ((manual, manual_parts), (auto, auto_parts)):
        for name in parts:
            before[(tp.table_name, name)] = await call(admin.list_partition_offsets(
                tp, name, [0, 1], fluss.OffsetSpec.latest()))
    await conn.close()

    srv.kill()
    srv.start()

    conn = await connect(srv.bootstrap_servers)
    try:
        admin = conn.get_admin()
        assert {p.partition_name: p.partition_id for p in await call(admin.list_partition_infos(manual))} \
            == manual_parts
        assert {p.partition_name: p.partition_id for p in await call(admin.list_partition_infos(auto))} \
            == auto_parts
        for (tname, name), offs in before.items():
            tp = manual if tname == "manual_parts" else auto
            assert await call(admin.list_partition_offsets(tp, name, [0, 1], fluss.OffsetSpec.latest())) == offs
        for tp, parts, expect in ((manual, manual_parts, 120), (auto, auto_parts, 120)):
            t = await call(conn.get_table(tp))
            assert t.get_table_info().table_id == writers[tp.table_name]
            sc = await call(t.new_scan().create_log_scanner())
            sc.subscribe_partition_buckets({(pid, b): fluss.EARLIEST_OFFSET for pid in parts.values()
                                            for b in range(2)})
            got = await poll_all(sc, expect)
            assert sorted(r["id"] for *_, r in got) == list(range(120))
            name_of = {pid: n for n, pid in parts.items()}
            assert all(r["p"] == name_of[pid] for _, pid, _, r in got)
        # writes continue after the recovered high watermarks; new partitions get fresh ids
        t = await call(conn.get_table(manual))
        w = t.new_append().create_writer()
        for i in range(120, 130):
            w.append({"id": i, "p": "a"})
        await call(w.flush())
        offs = await call(admin.list_partition_offsets(manual, "a", [0, 1], fluss.OffsetSpec.latest()))
        assert sum(offs.values()) == sum(before[("manual_parts", "a")].values()) + 10
        await call(admin.create_partition(manual, {"p": "d"}))
        new_id = {p.partition_name: p.partition_id for p in await call(admin.list_partition_infos(manual))}["d"]
        assert new_id > max(list(manual_parts.values()) + list(auto_parts.values()))
    finally:
        await conn.close()


# -- nested complex types, second-precision times -----------------------------------------------------------
NESTED = pa.schema([
    ("id", pa.int64()),
    ("lr", pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
    ("ml", pa.map_(pa.string(), pa.list_(pa.int64()))),
    ("ll", pa.list_(pa.list_(pa.string()))),
    ("rm", pa.struct([("m", pa.map_(pa.int32(), pa.string())), ("arr", pa.list_(pa.float64()))])),
    ("t0", pa.time32("s")), ("t9", pa.time64("ns")), ("ts0", pa.timestamp("s")),
    ("ltz0", pa.timestamp("s", tz="UTC")), ("ltz9", pa.timestamp("ns", tz="UTC")),
])


def nested_row(i):
    return {"id": i, "lr": [{"a": i, "b": "x"}, None, {"a": None, "b": f"y{i}"}],
            "ml": [("k", [1, i, None]), ("empty", [])], "ll": [["a", None], [], None, [str(i)]],
            "rm": {"m": [(1, "one"), (i + 2, None)], "arr": [1.5, None, float(i)]},
            "t0": dt.time(1, 2, i % 60), "t9": dt.time(1, 2, 3, 456000), "ts0": dt.datetime(2020, 1, 1, 1, 1, i % 60),
            "ltz0": dt.datetime(2020, 1, 1, 0, 0, i % 60, tzinfo=UTC),
            "ltz9": dt.datetime(2021, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)}


def _norm(v):
    if isinstance(v, pd.Timestamp):
        v = v.to_pydatetime()
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        v = v.astimezone(UTC)
    return v


async def test_nested_complex_types_round_trip(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    try:
        admin = conn.get_admin()
        tp = fluss.TablePath("fluss", unique_name("nested"))
        await call(admin.create_table(tp, fluss.TableDescriptor(fluss.Schema(NESTED), bucket_count=1)))
        info = await call(admin.get_table_info(tp))
        assert info.get_schema().get_column_types() == [
            "bigint", "array<row<a: int, b: string>>", "map<string NOT NULL,array<bigint>>",
            "array<array<string>>", "row<m: map<int NOT NULL,string>, arr: array<double>>", "time", "time(9)",
            "timestamp(0)", "timestamp_ltz(0)", "timestamp_ltz(9)"]
        table = await call(conn.get_table(tp))
        rows = [nested_row(i) for i in range(5)] + [{"id": 5, **{k: None for k in NESTED.names[1:]}}]
        data = pa.Table.from_pylist(rows, schema=NESTED)
        writer = table.new_append().create_writer()
        writer.write_arrow(data)
        for r in rows:
            writer.append(r)
        await call(writer.flush())
        sc = await call(table.new_scan().create_record_batch_log_scanner())
        sc.subscribe(0, fluss.EARLIEST_OFFSET)
        got = await call(sc.to_arrow())
        assert got.schema.equals(NESTED)
        assert got.equals(pa.concat_tables([data, data]))
        sc = await call(table.new_scan().project_by_name(["rm", "id"]).create_log_scanner())
        sc.subscribe(0, fluss.EARLIEST_OFFSET)
        recs = await poll_all(sc, 12)
        assert [r["id"] for *_, r in recs] == list(range(6)) * 2
        assert [r["rm"] for *_, r in recs] == [r["rm"] for r in rows] * 2
        sc = await call(table.new_scan().create_log_scanner())
        sc.subscribe(0, 6)
        recs = await poll_all(sc, 6)
        assert [{k: _norm(v) for k, v in r.items()} for *_, r in recs] == \
            [{k: _norm(v) for k, v in r.items()} for r in rows]
    finally:
        await conn.close()


async def test_zstd_levels(fluss_server, unique_name):
    """pyfluss writes ZSTD only at level 3 (it refuses others itself); it reads any level, so batches
    at level 19 go in raw, built by the shared codec, and come back through pyfluss."""
    from fluss_fast.codec.log.arrowlog import ArrowLogCodec
    from fluss_fast.datatypes import SchemaInfo

    conn = await connect(fluss_server.bootstrap_servers)
    try:
        admin = conn.get_admin()
        data = pa.Table.from_pylist(simple_rows(0, 3000), schema=SIMPLE)
        for level in ("3", "19"):
            props = {"table.log.arrow.compression.type": "ZSTD", "table.log.arrow.compression.zstd.level": level}
            tp = fluss.TablePath("fluss", unique_name("lvl"))
            await call(admin.create_table(tp, fluss.TableDescriptor(fluss.Schema(SIMPLE), properties=props)))
            assert (await call(admin.get_table_info(tp))).get_properties().items() >= props.items()
            table = await call(conn.get_table(tp))
            info = table.get_table_info()
            if level == "3":
                writer = table.new_append().create_writer()
                writer.write_arrow(data)
                await call(writer.flush())
            else:
                codec = ArrowLogCodec(SchemaInfo.from_arrow(SIMPLE), "ZSTD", int(level))
                records = b"".join(codec.build(rb, schema_id=info.schema_id) for rb in data.to_batches(1000))
                # the bucket's leader takes it; on a cluster of several tablet servers the others
                # answer NOT_LEADER_OR_FOLLOWER (12)
                nodes = await call(admin.get_server_nodes())
                codes = []
                for tablet in (n for n in nodes if n.server_type == "TabletServer"):
                    with WireClient(f"{tablet.host}:{tablet.port}") as t:
                        r = t.call(Api.PRODUCE_LOG, pb.ProduceLogRequest(
                            acks=-1, table_id=info.table_id, timeout_ms=10000,
                            buckets_req=[pb.PbProduceLogReqForBucket(bucket_id=0, records=records)]))
                    codes.append(r.buckets_resp[0].error_code)
                assert sorted(codes) == [0] + [12] * (len(codes) - 1), codes
            sc = await call(table.new_scan().create_record_batch_log_scanner())
            sc.subscribe(0, fluss.EARLIEST_OFFSET)
            assert (await call(sc.to_arrow())).equals(data)
        with pytest.raises(fluss.FlussError) as e:
            await call(admin.create_table(fluss.TablePath("fluss", unique_name("lvl")), fluss.TableDescriptor(
                fluss.Schema(SIMPLE), properties={"table.log.arrow.compression.type": "ZSTD",
                                                  "table.log.arrow.compression.zstd.level": "23"})))
        assert e.value.error_code == fluss.ErrorCode.INVALID_CONFIG_EXCEPTION
    finally:
        await conn.close()
