"""What the Java client (and pyfluss after 1.0.0) does that fluss_fast now does too (issue 28, items 2, 3, 8):
partitions created on write, insert-if-absent lookups on auto-increment tables, the kv scanner names
and ``scanner.log.read-preference``. Each test runs against the embedded server and against a Java
cluster (Fluss 0.9.1) started for this module."""
from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading

import pyarrow as pa
import pytest

import fluss_fast as fluss

from client_util import connect, leader_request
from java_util import require_java

pytestmark = pytest.mark.timeout(600)

LOG_SCHEMA = pa.schema([("id", pa.int32()), ("region", pa.string()), ("v", pa.string())])
PK_FIELDS = [pa.field("region", pa.string()), pa.field("id", pa.int32()), pa.field("v", pa.string())]
DICT_SCHEMA = pa.schema([("name", pa.string()), ("uid", pa.int64()), ("note", pa.string())])



@pytest.fixture(scope="module")
def java_bootstrap():
    require_java()
    from fluss_fast.cluster import JavaCluster

    data_dir = tempfile.mkdtemp(prefix="fluss-java-issue28-")
    cluster = JavaCluster(data_dir, tablet_servers=1).start()
    try:
        yield cluster.bootstrap_servers
    finally:
        cluster.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(params=["embedded", "java"])
def bootstrap(request):
    if request.param == "java":
        return request.getfixturevalue("java_bootstrap")
    return request.getfixturevalue("fluss_server").bootstrap_servers


async def _wait_default_db(conn):
    # a freshly started Java cluster creates the default database a moment after it answers
    adm = conn.get_admin()
    for _ in range(100):
        if await adm.database_exists("fluss"):
            return
        await asyncio.sleep(0.2)


async def _log_table(conn, name, buckets=2):
    await _wait_default_db(conn)
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(LOG_SCHEMA), partition_keys=["region"], bucket_count=buckets))
    return path


async def _pk_table(conn, name, buckets=2):
    await _wait_default_db(conn)
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(pa.schema(PK_FIELDS), primary_keys=["region", "id"]), partition_keys=["region"],
        bucket_count=buckets))
    return path


async def _count(conn, path, partition, buckets=2):
    got = await conn.get_admin().list_partition_offsets(path, partition, list(range(buckets)),
                                                        fluss.OffsetSpec.latest())
    return sum(got.values())


# -- item 2: partitions created on write ----------------------------------------------------------------

async def test_append_creates_missing_partitions(bootstrap, unique_name):
    conn = await connect(bootstrap)
    try:
        path = await _log_table(conn, unique_name())
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        w.append({"id": 1, "region": "r1", "v": "a"})
        w.append([2, "r1", "b"])
        rb = pa.record_batch([pa.array([3, 4, 5], pa.int32()), pa.array(["r2", "r1", "r2"]),
                              pa.array(["c", "d", "e"])], schema=LOG_SCHEMA)
        w.write_arrow_batch(rb)
        await w.flush()
        names = {p.partition_name for p in await conn.get_admin().list_partition_infos(path)}
        assert names == {"r1", "r2"}
        assert await _count(conn, path, "r1") == 3
        assert await _count(conn, path, "r2") == 2
    finally:
        await conn.close()


async def test_upsert_creates_missing_partitions(bootstrap, unique_name):
    conn = await connect(bootstrap)
    try:
        path = await _pk_table(conn, unique_name())
        t = await conn.get_table(path)
        w = t.new_upsert().create_writer()
        w.upsert({"region": "k1", "id": 1, "v": "a"})
        w.upsert_arrow(pa.table({"region": ["k2", "k2"], "id": pa.array([1, 2], pa.int32()),
                                 "v": ["b", "c"]}))
        await w.flush()
        lk = t.new_lookup().create_lookuper()
        assert (await lk.lookup({"region": "k1", "id": 1}))["v"] == "a"
        assert (await lk.lookup({"region": "k2", "id": 2}))["v"] == "c"
        names = {p.partition_name for p in await conn.get_admin().list_partition_infos(path)}
        assert names == {"k1", "k2"}
    finally:
        await conn.close()


async def test_two_writers_race_to_create_the_same_partition(bootstrap, unique_name):
    per_writer = 2000
    a = await connect(bootstrap)
    b = await connect(bootstrap)
    try:
        path = await _log_table(a, unique_name())
        writers = [(await c.get_table(path)).new_append().create_writer() for c in (a, b)]
        start = threading.Barrier(2)
        errors = []

        def fill(w, base):
            try:
                start.wait()
                for i in range(per_writer):
                    w.append({"id": base + i, "region": "fresh", "v": "x"})
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        await asyncio.gather(asyncio.to_thread(fill, writers[0], 0),
                             asyncio.to_thread(fill, writers[1], per_writer))
        assert errors == []
        for w in writers:
            await w.flush()
        parts = await a.get_admin().list_partition_infos(path)
        assert [p.partition_name for p in parts] == ["fresh"]
        assert await _count(a, path, "fresh") == 2 * per_writer
    finally:
        await a.close()
        await b.close()


async def test_dynamic_creation_disabled_keeps_the_error(bootstrap, unique_name):
    conn = await connect(bootstrap, {"client.writer.dynamic-create-partition.enabled": "false"})
    try:
        path = await _log_table(conn, unique_name())
        w = (await conn.get_table(path)).new_append().create_writer()
        with pytest.raises(fluss.FlussError) as e:
            w.append({"id": 1, "region": "nope", "v": "a"})
        assert e.value.error_code == 36 and "nope" in str(e.value)
        assert await conn.get_admin().list_partition_infos(path) == []
    finally:
        await conn.close()


# -- item 3: insert-if-absent lookups ---------------------------------------------------------------

async def _dict_table(conn, name):
    await _wait_default_db(conn)
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(DICT_SCHEMA, primary_keys=["name"], auto_increment_column="uid"), bucket_count=3))
    return path


async def test_insert_if_not_exists_one_row_per_key_under_concurrent_lookers(bootstrap, unique_name):
    keys = [f"k{i}" for i in range(200)]
    a = await connect(bootstrap)
    b = await connect(bootstrap)
    try:
        path = await _dict_table(a, unique_name())
        lookupers = []
        for i in range(8):
            t = await (a if i % 2 else b).get_table(path)
            lookupers.append(t.new_lookup().enable_insert_if_not_exists().create_lookuper())

        async def looker(lk, order):
            return {k: await lk.lookup({"name": k}) for k in order}

        # each looker walks the keys in its own order, so first lookups of a key come from anywhere
        orders = [keys[i * 25:] + keys[:i * 25] for i in range(8)]
        results = await asyncio.gather(*[looker(lk, o) for lk, o in zip(lookupers, orders, strict=True)])
        uids = {}
        for res in results:
            for k in keys:
                row = res[k]
                assert row is not None and row["name"] == k and row["note"] is None
                assert uids.setdefault(k, row["uid"]) == row["uid"], f"two uids for {k}"
        assert len(set(uids.values())) == len(keys)
        # a plain lookup sees the inserted rows; a present key is not inserted again
        t = await a.get_table(path)
        plain = t.new_lookup().create_lookuper()
        assert [(await plain.lookup({"name": k}))["uid"] for k in keys] == [uids[k] for k in keys]
        assert await plain.lookup({"name": "absent"}) is None
        again = await lookupers[0].lookup({"name": "k7"})
        assert again["uid"] == uids["k7"]
    finally:
        await a.close()
        await b.close()


async def test_insert_if_not_exists_rules(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    try:
        path = fluss.TablePath("fluss", unique_name())
        schema = pa.schema([pa.field("name", pa.string()), pa.field("uid", pa.int64()),
                            pa.field("must", pa.string(), nullable=False)])
        await conn.get_admin().create_table(path, fluss.TableDescriptor(
            fluss.Schema(schema, primary_keys=["name"], auto_increment_column="uid")))
        t = await conn.get_table(path)
        builder = t.new_lookup()
        assert builder.enable_insert_if_not_exists() is builder
        with pytest.raises(fluss.FlussError, match=r"non-nullable columns .*\['must'\]"):
            builder.create_lookuper()
        with pytest.raises(fluss.FlussError, match="cannot be enabled for prefix key lookup"):
            t.new_lookup().enable_insert_if_not_exists().lookup_by(["name"]).create_lookuper()
    finally:
        await conn.close()


# -- item 8: the kv scanner names and the read preference ---------------------------------------------

async def test_kv_scanner_names(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    try:
        path = fluss.TablePath("fluss", unique_name())
        await conn.get_admin().create_table(path, fluss.TableDescriptor(
            fluss.Schema(pa.schema(PK_FIELDS[1:]), primary_keys=["id"]), bucket_count=2))
        t = await conn.get_table(path)
        w = t.new_upsert().create_writer()
        for i in range(50):
            w.upsert({"id": i, "v": f"v{i}"})
        await w.flush()
        scan = t.new_scan()
        whole = await (await scan.create_kv_scanner()).to_arrow()
        assert sorted(whole.column("id").to_pylist()) == list(range(50))
        assert type(scan).create_snapshot_scanner is type(scan).create_kv_scanner
        tid = t.get_table_info().table_id
        per_bucket = [await (await scan.create_bucket_kv_scanner(fluss.TableBucket(tid, b))).to_arrow()
                      for b in range(2)]
        assert sum(p.num_rows for p in per_bucket) == 50 and all(p.num_rows for p in per_bucket)
        with pytest.raises(fluss.FlussError, match="out of range"):
            await scan.create_bucket_kv_scanner(fluss.TableBucket(tid, 2))
    finally:
        await conn.close()


def test_read_preference_config():
    assert fluss.Config().scanner_log_read_preference == "local-first"
    assert fluss.Config().writer_dynamic_create_partition_enabled is True
    c = fluss.Config({"client.scanner.log.read-preference": "REMOTE-FIRST"})
    assert c.get("scanner.log.read-preference") == "remote-first"
    with pytest.raises(fluss.FlussError, match="local-first"):
        fluss.Config({"scanner.log.read-preference": "nearest"})


async def test_remote_first_reads_everything(bootstrap, unique_name):
    # no remote log here: remote-first must read the local log as local-first does (Java 0.9.1
    # does not know the request field and must ignore it)
    conn = await connect(bootstrap, {"scanner.log.read-preference": "remote-first"})
    try:
        await _wait_default_db(conn)
        path = fluss.TablePath("fluss", unique_name())
        await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema([("id", pa.int32())])),
                                                                        bucket_count=1))
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        for i in range(100):
            w.append({"id": i})
        await w.flush()
        scanner = await t.new_scan().create_record_batch_log_scanner()
        scanner.subscribe(0, 0)
        seen = []
        for _ in range(50):
            for rb in await scanner.poll_record_batch(200):
                seen.extend(rb.batch.column("id").to_pylist())
            if len(seen) >= 100:
                break
        assert seen == list(range(100))
    finally:
        await conn.close()


async def test_remote_first_is_answered_from_the_remote_log(start_server, unique_name, tmp_path):
    # Every segment is kept locally as well as tiered, so offset 0 is in both logs and only the
    # read preference decides which one answers.
    from fluss_fast.rpc import fluss_api_pb2 as pb
    from fluss_fast.rpc.api import Api

    from remote_util import pointer, tiering_args

    srv = start_server(sasl=False, extra_args=tiering_args(str(tmp_path / "remote"), local_segments=100))
    name = unique_name()
    rows = 3000
    conn = await connect(srv.bootstrap_servers)
    far = await connect(srv.bootstrap_servers, {"scanner.log.read-preference": "remote-first"})
    try:
        path = fluss.TablePath("fluss", name)
        await conn.get_admin().create_table(path, fluss.TableDescriptor(
            fluss.Schema(pa.schema([("id", pa.int64()), ("pad", pa.string())])), bucket_count=1))
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        for lo in range(0, rows, 100):
            w.write_arrow_batch(pa.record_batch({"id": pa.array(range(lo, lo + 100), pa.int64()),
                                                 "pad": [f"{i:016d}" for i in range(lo, lo + 100)]}))
            await w.flush()
        for _ in range(300):
            segs = pointer(srv.data_dir, "fluss", name).get("manifest", {}).get("remote_log_segments", [])
            if len(segs) >= 2:
                break
            await asyncio.sleep(0.1)
        assert len(segs) >= 2, "nothing was tiered"

        async def fetch(preference):
            req = pb.FetchLogRequest(follower_server_id=-1, max_bytes=1 << 20, read_preference=preference)
            tr = req.tables_req.add(table_id=t.get_table_info().table_id, projection_pushdown_enabled=False)
            tr.buckets_req.add(bucket_id=0, fetch_offset=0, max_fetch_bytes=1 << 20)
            return (await leader_request(t, 0, Api.FETCH_LOG, req)).tables_resp[0].buckets_resp[0]

        local = await fetch(0)
        assert not local.HasField("remote_log_fetch_info") and len(local.records) > 0
        remote = await fetch(1)
        assert remote.HasField("remote_log_fetch_info")
        assert remote.remote_log_fetch_info.remote_log_segments[0].remote_log_start_offset == 0
        # and the client reads everything through it: remote segments first, then the local tail
        sc = await (await far.get_table(path)).new_scan().create_record_batch_log_scanner()
        sc.subscribe(0, 0)
        got = await sc.to_arrow()
        assert got.column("id").to_pylist() == list(range(rows))
    finally:
        await far.close()
        await conn.close()
