"""The official client (pyfluss 1.0.0) writing and reading log tables on the embedded server."""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import glob
import os
import time
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pytest

from fluss_fast.codec.rows.compacted import encode_key
from fluss_fast.codec.wire.murmur import bucket_for_key
from fluss_fast.datatypes import SchemaInfo

from pyfluss_util import call, pyfluss_fixtures, wait_for_leaders

fluss = pytest.importorskip("fluss")

pytestmark = pytest.mark.compat

TIMEOUT = 30


conn, admin, db = pyfluss_fixtures("pylog")


async def make_table(conn, admin, db, name, schema, **kw):
    tp = fluss.TablePath(db, name)
    await call(admin.create_table(tp, fluss.TableDescriptor(fluss.Schema(schema), **kw)))
    return tp, await call(conn.get_table(tp))


async def scan_records(table, subscribe, expect, project=None):
    """[(bucket_id, offset, timestamp, row)] from the record scanner once ``expect`` arrived."""
    scan = table.new_scan()
    if project is not None:
        scan = scan.project(project) if isinstance(project[0], int) else scan.project_by_name(project)
    scanner = await call(scan.create_log_scanner())
    subscribe(scanner)
    out = []
    deadline = time.monotonic() + TIMEOUT
    while len(out) < expect and time.monotonic() < deadline:
        recs = await call(scanner.poll(200))
        for bucket, items in recs.items():
            out.extend((bucket.bucket_id, r.offset, r.timestamp, r.row) for r in items)
    # nothing beyond what was written
    extra = await call(scanner.poll(200))
    assert extra.count() == 0
    return out


async def scan_arrow(table, subscribe, project=None) -> pa.Table:
    scan = table.new_scan()
    if project is not None:
        scan = scan.project(project) if isinstance(project[0], int) else scan.project_by_name(project)
    scanner = await call(scan.create_record_batch_log_scanner())
    subscribe(scanner)
    return await call(scanner.to_arrow())


def earliest(buckets):
    return lambda s: s.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})


# -- every data type, both read paths ---------------------------------------------------------------------
ALL_TYPES = pa.schema([
    ("id", pa.int64()), ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("dec", pa.decimal128(10, 2)),
    ("dec38", pa.decimal128(38, 10)), ("d", pa.date32()), ("t3", pa.time32("ms")), ("t6", pa.time64("us")),
    ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")), ("ts9", pa.timestamp("ns")),
    ("ltz3", pa.timestamp("ms", tz="UTC")), ("ltz6", pa.timestamp("us", tz="UTC")),
    ("bytes", pa.binary()), ("bin4", pa.binary(4)), ("arr", pa.list_(pa.int32())),
    ("arr_s", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.int64())),
    ("r", pa.struct([("x", pa.int32()), ("y", pa.struct([("z", pa.string())]))])),
])
UTC = dt.UTC


def full_row(i):
    return {
        "id": i, "b": i % 2 == 0, "i8": -i % 128, "i16": 300 + i, "i32": -70000 - i, "f32": 1.5 + i,
        "f64": 2.25 * i, "s": f"héllo-{i}", "dec": Decimal(f"{i}.34"), "dec38": Decimal(f"1234567890.{i:010d}"),
        "d": dt.date(2024, 2, 29) + dt.timedelta(days=i), "t3": dt.time(12, 34, 56, 789000),
        "t6": dt.time(1, 2, 3, 456000), "ts3": dt.datetime(2024, 1, 2, 3, 4, 5, 678000),
        "ts6": dt.datetime(2024, 1, 2, 3, 4, 5, 678901), "ts9": dt.datetime(2001, 9, 9, 1, 46, 40, 123457),
        "ltz3": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        "ltz6": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        "bytes": bytes([0, 255, i % 256]), "bin4": b"ab" + bytes([i % 256, 0]), "arr": [1, None, i],
        "arr_s": ["x", None, ""], "m": [("a", i), ("b", None)], "r": {"x": i, "y": {"z": f"z{i}"}},
    }


def null_row(i):
    return {name: (i if name == "id" else None) for name in ALL_TYPES.names}


def normalize(row):
    """pyfluss's record path gives nanosecond timestamps as pandas Timestamps."""
    out = {}
    for k, v in row.items():
        if isinstance(v, pd.Timestamp):
            v = v.to_pydatetime()
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            v = v.astimezone(UTC)
        out[k] = v
    return out


async def test_every_type_and_nulls_round_trip(conn, admin, db):
    tp, table = await make_table(conn, admin, db, "types", ALL_TYPES, bucket_count=1)
    writer = table.new_append().create_writer()
    for i in range(3):
        writer.append(full_row(i))
    writer.append(null_row(3))
    writer.append([v for v in full_row(4).values()])          # a list in schema order
    expected_arrow = pa.Table.from_pylist([full_row(i) for i in range(5, 25)] + [null_row(25)], schema=ALL_TYPES)
    writer.write_arrow(expected_arrow)
    await call(writer.flush())
    expected = [full_row(0), full_row(1), full_row(2), null_row(3), full_row(4)] + expected_arrow.to_pylist()

    got = await scan_records(table, earliest(1), len(expected))
    assert [o for _, o, _, _ in got] == list(range(len(expected)))
    assert [normalize(r) for _, _, _, r in got] == [normalize(r) for r in expected]
    arrow = await scan_arrow(table, earliest(1))
    want = pa.Table.from_pylist(expected, schema=ALL_TYPES)
    assert arrow.schema.equals(ALL_TYPES)
    assert arrow.equals(want)


# -- compression codecs -----------------------------------------------------------------------------------
SIMPLE = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])


def simple_rows(start, n):
    return [{"id": i, "name": f"name-{i % 7}", "score": i / 8} for i in range(start, start + n)]


@pytest.mark.parametrize("codec", ["NONE", "LZ4_FRAME", "ZSTD"])
async def test_compression_codecs(conn, admin, db, codec, fluss_server):
    tp, table = await make_table(conn, admin, db, f"c_{codec.lower()}", SIMPLE, bucket_count=1,
                                 properties={"table.log.arrow.compression.type": codec})
    data = pa.Table.from_pylist(simple_rows(0, 5000), schema=SIMPLE)
    writer = table.new_append().create_writer()
    writer.write_arrow(data)
    await call(writer.flush())
    assert (await scan_arrow(table, earliest(1))).equals(data)
    assert (await scan_arrow(table, earliest(1), project=[2, 0])).equals(data.select(["score", "id"]))
    info = table.get_table_info()
    stored = sum(os.path.getsize(p) for p in glob.glob(os.path.join(
        fluss_server.data_dir, "log", db, f"{tp.table_name}-{info.table_id}", "log-0", "*.log")))
    raw = data.nbytes
    if codec == "NONE":
        assert stored > raw
    else:
        assert stored < raw / 2, (codec, stored, raw)


# -- bucket assignment ------------------------------------------------------------------------------------
async def test_sticky_and_round_robin_without_keys(fluss_server, admin, conn, db):
    tp, table = await make_table(conn, admin, db, "sticky", SIMPLE, bucket_count=3)
    writer = table.new_append().create_writer()
    for r in simple_rows(0, 30):
        writer.append(r)
    await call(writer.flush())
    offsets = await call(admin.list_offsets(tp, [0, 1, 2], fluss.OffsetSpec.latest()))
    assert sorted(offsets.values()) == [0, 0, 30]        # one open batch -> one bucket

    cfg = fluss.Config({"bootstrap.servers": fluss_server.bootstrap_servers,
                        "writer.bucket.no-key-assigner": "round_robin"})
    rr_conn = await call(fluss.FlussConnection.create(cfg))
    try:
        tp2, table2 = await make_table(rr_conn, rr_conn.get_admin(), db, "rr", SIMPLE, bucket_count=3)
        writer = table2.new_append().create_writer()
        for r in simple_rows(0, 30):
            writer.append(r)
        await call(writer.flush())
        offsets = await call(admin.list_offsets(tp2, [0, 1, 2], fluss.OffsetSpec.latest()))
        assert sum(offsets.values()) == 30 and all(v > 0 for v in offsets.values())
        got = await scan_records(table2, earliest(3), 30)
        assert sorted(r["id"] for *_, r in got) == list(range(30))
    finally:
        await rr_conn.close()


async def test_bucket_key_rows_land_where_java_hashes_them(conn, admin, db):
    schema = pa.schema([("k", pa.string()), ("v", pa.int32())])
    tp, table = await make_table(conn, admin, db, "keyed", schema, bucket_count=5, bucket_keys=["k"])
    # ASCII keys shorter than 128 bytes: every tail byte is < 0x80, where pyfluss's hash agrees with Java's
    keys = [f"key-{i}" for i in range(60)]
    writer = table.new_append().create_writer()
    for i, k in enumerate(keys):
        writer.append({"k": k, "v": i})
    await call(writer.flush())
    string_type = SchemaInfo.from_arrow(schema).types[0]
    want = {k: bucket_for_key(encode_key([k], [string_type]), 5) for k in keys}
    assert len(set(want.values())) == 5
    got = await scan_records(table, earliest(5), len(keys))
    assert {r["k"]: b for b, _, _, r in got} == want
    # per bucket the rows keep their write order and the offsets count from 0
    for b in range(5):
        mine = [(o, r) for bb, o, _, r in got if bb == b]
        assert [o for o, _ in mine] == list(range(len(mine)))
        assert [r["v"] for _, r in mine] == sorted(r["v"] for _, r in mine)


# -- projection -------------------------------------------------------------------------------------------
async def test_projection(conn, admin, db):
    tp, table = await make_table(conn, admin, db, "proj", SIMPLE, bucket_count=2)
    data = pa.Table.from_pylist(simple_rows(0, 500), schema=SIMPLE)
    writer = table.new_append().create_writer()
    writer.write_arrow(data)
    await call(writer.flush())
    rows = data.to_pylist()
    got = await scan_records(table, earliest(2), 500, project=[2, 0])
    assert sorted((r["id"], r["score"]) for *_, r in got) == [(r["id"], r["score"]) for r in rows]
    assert all(list(r) == ["score", "id"] for *_, r in got)
    got = await scan_records(table, earliest(2), 500, project=["name"])
    assert sorted(r["name"] for *_, r in got) == sorted(r["name"] for r in rows)
    arrow = await scan_arrow(table, earliest(2), project=["score", "name"])
    assert arrow.column_names == ["score", "name"]
    assert sorted(zip(*arrow.to_pydict().values(), strict=True)) == sorted((r["score"], r["name"]) for r in rows)


# -- partitioned tables -----------------------------------------------------------------------------------
async def test_partitioned_table(conn, admin, db):
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("v", pa.string())])
    tp, table = await make_table(conn, admin, db, "parts", schema, bucket_count=2, partition_keys=["region"])
    for region in ("US", "EU"):
        await call(admin.create_partition(tp, {"region": region}))
    infos = {p.partition_name: p.partition_id for p in await call(admin.list_partition_infos(tp))}
    assert set(infos) == {"US", "EU"}
    writer = table.new_append().create_writer()
    for i in range(20):
        writer.append({"id": i, "region": "US" if i % 2 else "EU", "v": f"v{i}"})
    writer.write_arrow(pa.Table.from_pylist([{"id": 100 + i, "region": "EU", "v": "arrow"} for i in range(10)],
                                            schema=schema))
    await call(writer.flush())
    eu = await call(admin.list_partition_offsets(tp, "EU", [0, 1], fluss.OffsetSpec.latest()))
    us = await call(admin.list_partition_offsets(tp, "US", [0, 1], fluss.OffsetSpec.latest()))
    assert sum(eu.values()) == 20 and sum(us.values()) == 10
    got = await scan_records(table, lambda s: s.subscribe_partition_buckets(
        {(infos["EU"], b): fluss.EARLIEST_OFFSET for b in range(2)}), 20)
    assert sorted(r["id"] for *_, r in got) == list(range(0, 20, 2)) + list(range(100, 110))
    assert all(r["region"] == "EU" for *_, r in got)

    def us_only(s):
        for b in range(2):
            s.subscribe_partition(infos["US"], b, fluss.EARLIEST_OFFSET)

    arrow = await scan_arrow(table, us_only)
    assert sorted(arrow.column("id").to_pylist()) == list(range(1, 20, 2))


# -- offsets, timestamps, batch scanners, limit scans -----------------------------------------------------
async def test_list_offsets_and_timestamps(conn, admin, db):
    tp, table = await make_table(conn, admin, db, "offs", SIMPLE, bucket_count=1)
    writer = table.new_append().create_writer()
    marks = []
    for i in range(3):
        marks.append(int(time.time() * 1000))
        writer.write_arrow(pa.Table.from_pylist(simple_rows(i * 10, 10), schema=SIMPLE))
        await call(writer.flush())
        await asyncio.sleep(0.02)
    assert await call(admin.list_offsets(tp, [0], fluss.OffsetSpec.earliest())) == {0: 0}
    assert await call(admin.list_offsets(tp, [0], fluss.OffsetSpec.latest())) == {0: 30}
    for i, ts in enumerate(marks):
        got = await call(admin.list_offsets(tp, [0], fluss.OffsetSpec.timestamp(ts)))
        assert got == {0: 10 * i}
    later = int(time.time() * 1000)
    assert await call(admin.list_offsets(tp, [0], fluss.OffsetSpec.timestamp(later))) == {0: 30}
    with pytest.raises(fluss.FlussError) as e:
        await call(admin.list_offsets(tp, [0], fluss.OffsetSpec.timestamp(later + 3_600_000)))
    assert e.value.error_code == fluss.ErrorCode.INVALID_TIMESTAMP_EXCEPTION
    # a scanner started from a timestamp offset sees exactly the later rows, stamped with commit times
    start = (await call(admin.list_offsets(tp, [0], fluss.OffsetSpec.timestamp(marks[1]))))[0]
    got = await scan_records(table, lambda s: s.subscribe(0, start), 20)
    assert [r["id"] for *_, r in got] == list(range(10, 30))
    assert all(marks[1] <= ts <= later for _, _, ts, _ in got)


async def test_batch_scanner_paths(conn, admin, db):
    tp, table = await make_table(conn, admin, db, "batches", SIMPLE, bucket_count=1)
    writer = table.new_append().create_writer()
    df = pd.DataFrame(simple_rows(0, 100))
    writer.write_pandas(df)
    await call(writer.flush())
    writer.write_arrow(pa.Table.from_pylist(simple_rows(100, 50), schema=SIMPLE))
    await call(writer.flush())
    scanner = await call(table.new_scan().create_record_batch_log_scanner())
    scanner.subscribe(0, fluss.EARLIEST_OFFSET)
    batches = []
    deadline = time.monotonic() + TIMEOUT
    while sum(b.batch.num_rows for b in batches) < 150 and time.monotonic() < deadline:
        batches.extend(await call(scanner.poll_record_batch(300)))
    assert [(b.base_offset, b.last_offset) for b in batches][0][0] == 0
    assert all(b.last_offset - b.base_offset + 1 == b.batch.num_rows for b in batches)
    assert batches[-1].last_offset == 149
    ids = [i for b in batches for i in b.batch.column("id").to_pylist()]
    assert ids == list(range(150))
    scanner = await call(table.new_scan().create_record_batch_log_scanner())
    scanner.subscribe(0, 120)
    polled = await call(scanner.poll_arrow(2000))
    assert polled.column("id").to_pylist()[0] == 120            # records before the offset are skipped
    assert polled.column("id").to_pylist() == list(range(120, 150))
    assert (await call(scanner.poll_arrow(200))).num_rows == 0


async def test_limit_scan(conn, admin, db):
    tp, table = await make_table(conn, admin, db, "limits", SIMPLE, bucket_count=2)
    writer = table.new_append().create_writer()
    for chunk in range(4):
        writer.write_arrow(pa.Table.from_pylist(simple_rows(chunk * 25, 25), schema=SIMPLE))
        await call(writer.flush())
    table_id = table.get_table_info().table_id
    offsets = await call(admin.list_offsets(tp, [0, 1], fluss.OffsetSpec.latest()))
    bucket = max(offsets, key=offsets.get)
    full = await scan_records(table, lambda s: s.subscribe(bucket, fluss.EARLIEST_OFFSET), offsets[bucket])
    rows = [r for *_, r in sorted(full, key=lambda x: x[1])]
    for n in (1, 10, 30, 1000):
        scanner = table.new_scan().limit(n).create_bucket_batch_scanner(fluss.TableBucket(table_id, bucket))
        got = (await call(scanner.to_arrow())).to_pylist()
        assert got == rows[-n:], n
    scanner = table.new_scan().project([1]).limit(5).create_bucket_batch_scanner(
        fluss.TableBucket(table_id, bucket))
    got = await call(scanner.to_arrow())
    assert got.column_names == ["name"] and got.column("name").to_pylist() == [r["name"] for r in rows[-5:]]
    empty = 1 - bucket if offsets[1 - bucket] == 0 else None
    if empty is not None:
        scanner = table.new_scan().limit(5).create_bucket_batch_scanner(fluss.TableBucket(table_id, empty))
        assert (await call(scanner.to_arrow())).num_rows == 0


# -- a lost produce response: pyfluss resends, the server must not store the batch twice ------------------
class _LossyProxy:
    """A TCP proxy in front of the coordinator and each tablet server that advertises itself in
    metadata and drops the connection instead of delivering the first PRODUCE_LOG response (the
    batch was stored; the client cannot know)."""

    def __init__(self, coordinator: str, tablets: dict):
        self.targets = {"coord": coordinator, **tablets}
        self.ports = {}
        self.servers = []
        self.dropped = 0
        self.produce_requests = 0

    async def start(self):
        for role in self.targets:
            srv = await asyncio.start_server(lambda r, w, role=role: self._serve(role, r, w), "127.0.0.1", 0)
            self.servers.append(srv)
            self.ports[role] = srv.sockets[0].getsockname()[1]
        return self

    def close(self):
        for s in self.servers:
            s.close()

    @staticmethod
    async def _frame(reader):
        head = await reader.readexactly(4)
        return head + await reader.readexactly(int.from_bytes(head, "big"))

    async def _serve(self, role, creader, cwriter):
        # the test's loop is going away; a cancelled handler task trips Python 3.11's
        # StreamReaderProtocol callback, which asks it for its exception
        with contextlib.suppress(asyncio.CancelledError):
            await self._relay(role, creader, cwriter)

    async def _relay(self, role, creader, cwriter):
        from fluss_fast.rpc import fluss_api_pb2 as pb
        from fluss_fast.rpc.api import Api

        host, port = self.targets[role].rsplit(":", 1)
        sreader, swriter = await asyncio.open_connection(host, int(port))
        kinds = {}

        async def upstream():
            while True:
                f = await self._frame(creader)
                key, rid = int.from_bytes(f[4:6], "big"), int.from_bytes(f[8:12], "big")
                kinds[rid] = key
                if key == Api.PRODUCE_LOG:
                    self.produce_requests += 1
                swriter.write(f)

        async def downstream():
            while True:
                f = await self._frame(sreader)
                rid = int.from_bytes(f[5:9], "big")
                key = kinds.pop(rid, None)
                if key == Api.PRODUCE_LOG and f[4] == 0 and self.dropped == 0:
                    self.dropped += 1
                    return  # the answer never arrives; the connection dies
                if key == Api.GET_METADATA and f[4] == 0:
                    m = pb.MetadataResponse()
                    m.ParseFromString(f[9:])
                    if m.HasField("coordinator_server"):
                        m.coordinator_server.port = self.ports["coord"]
                    for node in m.tablet_servers:
                        node.port = self.ports[node.node_id]
                    body = m.SerializeToString()
                    f = (len(body) + 5).to_bytes(4, "big") + f[4:9] + body
                cwriter.write(f)

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            for w in (cwriter, swriter):
                w.close()


def _log_segments(fluss_server, db: str, table_dir: str) -> list:
    """The local log segments of bucket 0 of a table: the embedded server keeps them under
    <data dir>/log, a Java tablet server under its data.dir (the one that holds the replica)."""
    if getattr(fluss_server, "kind", "embedded") == "java":
        roots = [os.path.join(node.home, "data") for node in fluss_server.cluster.tablet_servers.values()]
    else:
        roots = [os.path.join(fluss_server.data_dir, "log")]
    return sorted(f for root in roots for f in glob.glob(os.path.join(root, db, table_dir, "log-0", "*.log")))


async def test_resent_batch_after_lost_response_is_stored_once(fluss_server, admin, conn, db):
    nodes = await call(admin.get_server_nodes())
    tablets = {n.id: f"{n.host}:{n.port}" for n in nodes if n.server_type != "CoordinatorServer"}
    proxy = await _LossyProxy(fluss_server.bootstrap_servers, tablets).start()
    try:
        tp, _ = await make_table(conn, admin, db, "lossy", SIMPLE, bucket_count=1)
        await wait_for_leaders(fluss, admin, tp, [0])
        cfg = fluss.Config({"bootstrap.servers": f"127.0.0.1:{proxy.ports['coord']}"})
        pconn = await call(fluss.FlussConnection.create(cfg))
        try:
            table = await call(pconn.get_table(tp))
            writer = table.new_append().create_writer()
            writer.write_arrow(pa.Table.from_pylist(simple_rows(0, 10), schema=SIMPLE))
            await call(writer.flush())
            writer.write_arrow(pa.Table.from_pylist(simple_rows(10, 5), schema=SIMPLE))
            await call(writer.flush())
        finally:
            await pconn.close()
        assert proxy.dropped == 1 and proxy.produce_requests >= 3   # the first batch really went twice
        assert await call(admin.list_offsets(tp, [0], fluss.OffsetSpec.latest())) == {0: 15}
        table = await call(conn.get_table(tp))
        got = await scan_records(table, earliest(1), 15)
        assert [r["id"] for *_, r in got] == list(range(15))
        # the resend was acknowledged as the success it was: the writer kept its id and went on
        # with the next sequence (an error answer makes pyfluss start over with a new writer id)
        from fluss_fast.codec.log import logbatch

        seg = _log_segments(fluss_server, db, f"lossy-{table.get_table_info().table_id}")
        with open(seg[0], "rb") as f:
            stored = f.read()
        heads = [(h.writer_id, h.batch_sequence, h.base_offset) for h in logbatch.iter_batches(stored)]
        assert len(heads) == 2 and heads[0][0] == heads[1][0] >= 0
        assert [(s, o) for _, s, o in heads] == [(0, 0), (1, 10)]
    finally:
        proxy.close()
