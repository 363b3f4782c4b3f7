"""Remote (tiered) log end to end with fluss_fast: the server tiers closed segments to a local
remote dir or to S3 (a real moto server on loopback), in the Java layout, and every scanner kind
reads remote and local data alike; faults, retention and kill -9 mid-upload."""
from __future__ import annotations

import asyncio
import glob
import json
import os
import re
import shutil
import tempfile
import time
import uuid
from itertools import pairwise

import pyarrow as pa
import pytest

import fluss_fast as ff
from fluss_fast import col

from conftest import ServerProcess
from remote_util import BUCKET, local_bases, moto_s3, pointer, s3_args, tiering_args, wait_tiered  # noqa: F401

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
ROWS = 3000
PER_BATCH = 100
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _batch(lo, hi):
    return pa.record_batch({"id": pa.array(range(lo, hi), pa.int64()),
                            "name": [f"n{i % 17}" for i in range(lo, hi)],
                            "score": [i * 0.25 for i in range(lo, hi)]}, schema=SCHEMA)


def _expected(lo=0, hi=ROWS, cols=("id", "name", "score")):
    return _batch(lo, hi).to_pydict() if cols is None else {c: _batch(lo, hi).column(c).to_pylist() for c in cols}


async def _connect(bootstrap, **props):
    return await ff.FlussConnection.create(ff.Config({"bootstrap.servers": bootstrap, **props}))


async def _fill(conn, db, name, rows=ROWS, partitioned=False):
    adm = conn.get_admin()
    await adm.create_database(db, ignore_if_exists=True)
    path = ff.TablePath(db, name)
    if partitioned:
        schema = pa.schema(list(SCHEMA) + [("region", pa.string())])
        await adm.create_table(path, ff.TableDescriptor(ff.Schema(schema), bucket_count=1,
                                                         partition_keys=["region"]))
        for region in ("eu", "us"):
            await adm.create_partition(path, {"region": region})
    else:
        await adm.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=1))
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    marks = {}
    for lo in range(0, rows, PER_BATCH):
        if lo == rows // 3:
            await asyncio.sleep(0.05)
            marks["ts"] = int(time.time() * 1000)
            await asyncio.sleep(0.05)
        b = _batch(lo, lo + PER_BATCH)
        if partitioned:
            for region in ("eu", "us"):
                w.write_arrow_batch(b.append_column("region", pa.array([region] * b.num_rows)))
        else:
            w.write_arrow_batch(b)
        await w.flush()
    return t, marks


def _sorted_dict(tab: pa.Table, cols):
    tab = tab.sort_by("id")
    return {c: tab.column(c).to_pylist() for c in cols}


@pytest.fixture(scope="module")
def remote_dir():
    d = tempfile.mkdtemp(prefix="fluss-fast-remote-test-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def tiering_server(remote_dir):
    srv = ServerProcess(sasl=False, extra_args=tiering_args(remote_dir)).start()
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def tiered(tiering_server):
    """A table of which most lies in remote segments, written once for the module."""
    db = f"remote_{uuid.uuid4().hex[:8]}"

    async def go():
        conn = await _connect(tiering_server.bootstrap_servers)
        try:
            _t, marks = await _fill(conn, db, "events")
        finally:
            await conn.close()
        return marks

    marks = asyncio.run(go())
    p = wait_tiered(tiering_server.data_dir, db, "events", min_segments=3)
    return {"db": db, "pointer": p, "ts": marks["ts"], "server": tiering_server}


async def test_layout_and_manifest_match_java(tiered, remote_dir):
    db = tiered["db"]
    tabs = glob.glob(os.path.join(remote_dir, "log", db, "events-*"))
    assert len(tabs) == 1 and re.fullmatch(r"events-\d+", os.path.basename(tabs[0]))
    tablet = os.path.join(tabs[0], "0")
    manifests = glob.glob(os.path.join(tablet, "metadata", "*.manifest"))
    assert len(manifests) == 1 and UUID_RE.match(os.path.basename(manifests[0])[:-len(".manifest")])
    with open(manifests[0]) as f:
        m = json.load(f)
    table_id = int(os.path.basename(tabs[0]).rsplit("-", 1)[1])
    assert list(m) == ["version", "database", "table", "table_id", "bucket_id", "remote_log_segments"]
    assert (m["version"], m["database"], m["table"], m["table_id"], m["bucket_id"]) == (1, db, "events", table_id, 0)
    segs = m["remote_log_segments"]
    assert len(segs) >= 3 and segs[0]["start_offset"] == 0
    dirs = {d for d in os.listdir(tablet) if d != "metadata"}
    assert dirs == {s["segment_id"] for s in segs}
    prev_end = 0
    for s in segs:
        assert list(s) == ["segment_id", "start_offset", "end_offset", "max_timestamp", "size_in_bytes"]
        assert UUID_RE.match(s["segment_id"]) and s["start_offset"] == prev_end < s["end_offset"]
        prev_end = s["end_offset"]
        files = sorted(os.listdir(os.path.join(tablet, s["segment_id"])))
        start, end = f"{s['start_offset']:020d}", f"{s['end_offset']:020d}"
        assert files == sorted([start + ".log", start + ".index", start + ".timeindex", end + ".writer_snapshot"])
        assert os.path.getsize(os.path.join(tablet, s["segment_id"], start + ".log")) == s["size_in_bytes"]
        with open(os.path.join(tablet, s["segment_id"], end + ".writer_snapshot")) as f:
            snap = json.load(f)
        assert snap["version"] == 1 and all(
            set(e) == {"writer_id", "last_batch_sequence", "last_batch_base_offset", "offset_delta",
                       "last_batch_timestamp"} for e in snap["writer_id_entries"])
        assert s["max_timestamp"] > 0
    # local segments beyond table.log.tiered.local-segments are gone; the local log starts where
    # (or before) the remote log ends
    bases = local_bases(tiered["server"].data_dir, db, "events")
    assert 0 < bases[0] <= prev_end


async def test_every_scanner_kind_reads_remote_then_local(tiered):
    conn = await _connect(tiered["server"].bootstrap_servers)
    try:
        t = await conn.get_table(ff.TablePath(tiered["db"], "events"))
        adm = conn.get_admin()
        path = ff.TablePath(tiered["db"], "events")
        assert (await adm.list_offsets(path, [0], ff.OffsetSpec.earliest()))[0] == 0
        assert (await adm.list_offsets(path, [0], ff.OffsetSpec.latest()))[0] == ROWS
        # to_arrow from earliest
        bs = await t.new_scan().create_record_batch_log_scanner()
        bs.subscribe(0, ff.EARLIEST_OFFSET)
        tab = await bs.to_arrow()
        assert tab.num_rows == ROWS and tab.column("id").to_pylist() == list(range(ROWS))
        assert tab.to_pydict() == _expected()
        # batch reader
        bs.subscribe(0, 0)
        reader = await asyncio.to_thread(bs.to_arrow_batch_reader)
        got = await asyncio.to_thread(reader.read_all)
        assert got.column("id").to_pylist() == list(range(ROWS))
        # poll loop from a middle offset inside a remote segment: offsets exact, nothing below
        first_seg = tiered["pointer"]["manifest"]["remote_log_segments"][1]
        mid = (first_seg["start_offset"] + first_seg["end_offset"]) // 2 + 3
        sc = await t.new_scan().create_log_scanner()
        sc.subscribe(0, mid)
        recs = []
        deadline = time.monotonic() + 20
        while len(recs) < ROWS - mid and time.monotonic() < deadline:
            recs.extend(await sc.poll(500))
        assert [r.offset for r in recs] == list(range(mid, ROWS))
        assert [r.row["id"] for r in recs] == list(range(mid, ROWS))
        # poll_record_batch with projection (client side for remote data) and a filter
        ps = await (t.new_scan().project_by_name(["score", "id"]).where(col("id") >= 10)
                    .create_record_batch_log_scanner())
        ps.subscribe(0, 0)
        batches = []
        deadline = time.monotonic() + 20
        while sum(b.batch.num_rows for b in batches) < ROWS - 10 and time.monotonic() < deadline:
            batches.extend(await ps.poll_record_batch(500))
        merged = pa.Table.from_batches([b.batch for b in batches])
        assert merged.schema.names == ["score", "id"]
        assert merged.column("id").to_pylist() == list(range(10, ROWS))
        assert merged.column("score").to_pylist() == [i * 0.25 for i in range(10, ROWS)]
        assert batches[0].base_offset == 10
        # poll_arrow with a projection by index
        pa_sc = await t.new_scan().project([2]).create_record_batch_log_scanner()
        pa_sc.subscribe(0, 5)
        parts = []
        deadline = time.monotonic() + 20
        while sum(p.num_rows for p in parts) < ROWS - 5 and time.monotonic() < deadline:
            parts.append(await pa_sc.poll_arrow(500))
        arrow = pa.concat_tables([p for p in parts if p.num_rows])
        assert arrow.column("score").to_pylist() == [i * 0.25 for i in range(5, ROWS)]
        # by timestamp: the first batch written after the mark, which lies in a remote segment
        ts_off = (await adm.list_offsets(path, [0], ff.OffsetSpec.timestamp(tiered["ts"])))[0]
        assert ts_off == ROWS // 3
        assert ts_off < tiered["pointer"]["manifest"]["remote_log_segments"][-1]["end_offset"]
        tsc = await t.new_scan().create_record_batch_log_scanner()
        tsc.subscribe(0, ts_off)
        tail = await tsc.to_arrow()
        assert tail.column("id").to_pylist() == list(range(ROWS // 3, ROWS))
        # the sync facade reads the same
        sconn = ff.sync.connect(ff.Config({"bootstrap.servers": tiered["server"].bootstrap_servers}))
        try:
            st = sconn.get_table(path)
            ss = st.new_scan().create_record_batch_log_scanner()
            ss.subscribe(0, ff.EARLIEST_OFFSET)
            assert ss.to_arrow().column("id").to_pylist() == list(range(ROWS))
        finally:
            sconn.close()
    finally:
        await conn.close()


@pytest.mark.parametrize("prefetch", [0, 1, 4])
async def test_prefetch_settings_read_the_same(tiered, prefetch):
    conn = await _connect(tiered["server"].bootstrap_servers, **{
        "scanner.remote-log.prefetch-num": str(prefetch), "remote-file.download-thread-num": "2",
        "scanner.remote-log.read-concurrency": "1" if prefetch else "3"})
    try:
        t = await conn.get_table(ff.TablePath(tiered["db"], "events"))
        bs = await t.new_scan().create_record_batch_log_scanner()
        bs.subscribe(0, 7)
        tab = await bs.to_arrow()
        assert tab.column("id").to_pylist() == list(range(7, ROWS))
    finally:
        await conn.close()



async def test_remote_segments_of_an_older_schema(tiering_server):
    # rows written before ADD COLUMN lie in remote segments (the local log no longer starts at 0):
    # the remote reader decodes them with their own schema, the added column null
    from fluss_fast.client.admin_types import TableChange

    db = f"rschema_{uuid.uuid4().hex[:8]}"
    conn = await _connect(tiering_server.bootstrap_servers)
    try:
        await _fill(conn, db, "evolved", rows=1500)
        path = ff.TablePath(db, "evolved")
        await conn.get_admin().alter_table(path, [TableChange.add_column("tag", pa.string())])
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        for lo in range(1500, 3000, PER_BATCH):
            b = _batch(lo, lo + PER_BATCH)
            w.write_arrow_batch(b.append_column("tag", pa.array([f"t{i}" for i in range(lo, lo + PER_BATCH)])))
            await w.flush()
        await asyncio.to_thread(wait_tiered, tiering_server.data_dir, db, "evolved", 3)
        scan = t.new_scan().project_by_name(["id", "tag"]).where(col("id") >= 1400)
        bs = await scan.create_record_batch_log_scanner()
        bs.subscribe(0, ff.EARLIEST_OFFSET)
        tab = (await bs.to_arrow()).sort_by("id")
        assert tab.column("id").to_pylist() == list(range(1400, 3000))
        assert tab.column("tag").to_pylist() == [None] * 100 + [f"t{i}" for i in range(1500, 3000)]
        full = await t.new_scan().create_record_batch_log_scanner()
        full.subscribe(0, 0)
        every = (await full.to_arrow()).sort_by("id")
        assert every.column("score").to_pylist() == [i * 0.25 for i in range(3000)]
        assert every.column("tag").null_count == 1500
    finally:
        await conn.close()

async def test_partitioned_table(tiering_server):
    db = f"rpart_{uuid.uuid4().hex[:8]}"
    conn = await _connect(tiering_server.bootstrap_servers)
    try:
        t, _ = await _fill(conn, db, "parts", rows=1500, partitioned=True)
        adm = conn.get_admin()
        pids = {p.partition_name: p.partition_id for p in await adm.list_partition_infos(ff.TablePath(db, "parts"))}
        for name, pid in pids.items():
            await asyncio.to_thread(wait_tiered, tiering_server.data_dir, db, "parts", 2,
                                    f"{name}-p{pid}/log-0")
        bs = await t.new_scan().create_record_batch_log_scanner()
        bs.subscribe_partition_buckets({(pid, 0): ff.EARLIEST_OFFSET for pid in pids.values()})
        tab = await bs.to_arrow()
        assert tab.num_rows == 3000
        for region in ("eu", "us"):
            part = tab.filter(pa.compute.equal(tab.column("region"), region))
            assert sorted(part.column("id").to_pylist()) == list(range(1500))
    finally:
        await conn.close()


async def test_s3_tiering_and_outage_recovery(start_server, moto_s3):  # noqa: F811
    prefix = uuid.uuid4().hex[:8]
    srv = start_server(sasl=False, extra_args=tiering_args(f"s3://{BUCKET}/{prefix}") + s3_args(moto_s3.endpoint))
    db = f"rs3_{prefix}"
    conn = await _connect(srv.bootstrap_servers, **{"scanner.remote-log.prefetch-num": "1"})
    try:
        t, _ = await _fill(conn, db, "events")
        await asyncio.to_thread(wait_tiered, srv.data_dir, db, "events", 3)
        fs = moto_s3.filesystem()
        p = pointer(srv.data_dir, db, "events")
        seg = p["manifest"]["remote_log_segments"][0]
        from pyarrow.fs import FileSelector

        tablet = [i.path for i in fs.get_file_info(FileSelector(f"{BUCKET}/{prefix}/log/{db}"))][0] + "/0"
        names = {i.base_name for i in fs.get_file_info(FileSelector(f"{tablet}/{seg['segment_id']}"))}
        assert f"{seg['start_offset']:020d}.log" in names
        token = await _token(conn)
        assert token.schema == "s3"
        assert json.loads(token.token)["access_key_id"] == "test-key"
        info = {kv.key: kv.value for kv in token.addition_info}
        assert info["fs.s3a.endpoint"] == moto_s3.endpoint and info["fs.s3a.path.style.access"] == "true"
        assert info["fs.s3a.region"] == "us-east-1"

        bs = await t.new_scan().create_record_batch_log_scanner()
        bs.subscribe(0, ff.EARLIEST_OFFSET)
        assert (await bs.to_arrow()).column("id").to_pylist() == list(range(ROWS))

        # the endpoint goes away under reading scanners: poll() rides the outage out (as pyfluss
        # does) and returns nothing, a bounded read that outlasts request-timeout raises a clear
        # retriable error naming the segment, and the poll loop resumes when the store is back
        # (stopped before the first poll: when the downloads happen is up to the prefetcher, so
        # this is the one order a test can rely on)
        sc = await t.new_scan().create_log_scanner()
        sc.subscribe(0, 0)
        recs = []
        impatient = await _connect(srv.bootstrap_servers, **{"request-timeout": "2000"})
        moto_s3.stop()
        try:
            for _ in range(3):
                recs.extend(await sc.poll(300))
            assert recs == [], "nothing can be read while the store is down"
            bounded = await (await impatient.get_table(t.get_table_path())).new_scan() \
                .create_record_batch_log_scanner()
            bounded.subscribe(0, ff.EARLIEST_OFFSET)
            with pytest.raises(ff.FlussError) as failed:
                await asyncio.wait_for(bounded.to_arrow(), 60)
        finally:
            moto_s3.start()
            await impatient.close()
        assert failed.value.is_retriable and "remote log segment" in str(failed.value), failed.value
        deadline = time.monotonic() + 30
        while len(recs) < ROWS and time.monotonic() < deadline:
            recs.extend(await sc.poll(500))
        assert [r.offset for r in recs] == list(range(ROWS))
    finally:
        await conn.close()


async def _token(conn):
    from fluss_fast.rpc import fluss_api_pb2 as pb
    from fluss_fast.rpc.api import Api

    from client_util import any_tablet_request

    return await any_tablet_request(conn, Api.GET_FILESYSTEM_SECURITY_TOKEN, pb.GetFileSystemSecurityTokenRequest())


async def test_corrupt_remote_segment_names_it(start_server):
    remote = tempfile.mkdtemp(prefix="fluss-fast-remote-corrupt-")
    try:
        srv = start_server(sasl=False, extra_args=tiering_args(remote))
        db = f"rcor_{uuid.uuid4().hex[:8]}"
        conn = await _connect(srv.bootstrap_servers)
        try:
            t, _ = await _fill(conn, db, "events")
            p = await asyncio.to_thread(wait_tiered, srv.data_dir, db, "events", 2)
            seg = p["manifest"]["remote_log_segments"][0]
            log_file = glob.glob(os.path.join(remote, "log", db, "events-*", "0", seg["segment_id"], "*.log"))[0]
            with open(log_file, "r+b") as f:
                f.seek(200)
                b = f.read(1)
                f.seek(200)
                f.write(bytes([b[0] ^ 0xFF]))
            bs = await t.new_scan().create_record_batch_log_scanner()
            bs.subscribe(0, 0)
            with pytest.raises(ff.FlussError, match="CRC") as ei:
                await bs.to_arrow()
            assert seg["segment_id"] in str(ei.value) and ei.value.error_code == 3
        finally:
            await conn.close()
    finally:
        shutil.rmtree(remote, ignore_errors=True)


async def test_retention_removes_remote_segments_and_reader_gets_out_of_range(start_server):
    remote = tempfile.mkdtemp(prefix="fluss-fast-remote-ttl-")
    try:
        srv = start_server(sasl=False, extra_args=tiering_args(remote))
        db = f"rttl_{uuid.uuid4().hex[:8]}"
        conn = await _connect(srv.bootstrap_servers)
        try:
            adm = conn.get_admin()
            await adm.create_database(db)
            path = ff.TablePath(db, "events")
            await adm.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=1,
                                                            properties={"table.log.ttl": "3s"}))
            t = await conn.get_table(path)
            w = t.new_append().create_writer()
            for lo in range(0, ROWS, PER_BATCH):
                w.write_arrow_batch(_batch(lo, lo + PER_BATCH))
                await w.flush()
            await asyncio.to_thread(wait_tiered, srv.data_dir, db, "events", 2)
            # a scanner positioned in the oldest segment, not yet reading
            sc = await t.new_scan().create_log_scanner()
            sc.subscribe(0, 1)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                earliest = (await adm.list_offsets(path, [0], ff.OffsetSpec.earliest()))[0]
                if earliest > 1:
                    break
                await asyncio.sleep(0.2)
            assert earliest > 1, "the expired segments should have been deleted"
            with pytest.raises(ff.FlussError, match="out of range"):
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    await sc.poll(300)
        finally:
            await conn.close()
    finally:
        shutil.rmtree(remote, ignore_errors=True)


async def test_kill_9_mid_upload_loses_nothing_and_cleans_orphans(start_server):
    remote = tempfile.mkdtemp(prefix="fluss-fast-remote-kill-")
    try:
        srv = start_server(sasl=False, extra_args=tiering_args(remote, segment="4kb"))
        db = f"rkill_{uuid.uuid4().hex[:8]}"
        conn = await _connect(srv.bootstrap_servers)
        try:
            t, _ = await _fill(conn, db, "events", rows=2000)
        finally:
            await conn.close()
        # killed while tiering is under way (many small segments still to copy)
        await asyncio.sleep(0.3)
        srv.kill()
        tablet = glob.glob(os.path.join(remote, "log", db, "events-*", "0"))[0]
        # what a pass killed before its commit leaves behind: a half-uploaded segment and a manifest
        orphan = str(uuid.uuid4())
        os.makedirs(os.path.join(tablet, orphan))
        with open(os.path.join(tablet, orphan, f"{0:020d}.log"), "wb") as f:
            f.write(b"\0" * 100)
        os.makedirs(os.path.join(tablet, "metadata"), exist_ok=True)
        stray = os.path.join(tablet, "metadata", f"{uuid.uuid4()}.manifest")
        with open(stray, "w") as f:
            f.write("{}")
        srv.start()
        p = await asyncio.to_thread(wait_tiered, srv.data_dir, db, "events", 4)
        deadline = time.monotonic() + 10
        # the server process removes them on its own schedule: poll the file system
        orphan_path = os.path.join(tablet, orphan)
        while (os.path.exists(orphan_path) or os.path.exists(stray)) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        assert not os.path.exists(os.path.join(tablet, orphan)) and not os.path.exists(stray)
        segs = p["manifest"]["remote_log_segments"]
        ids = [s["segment_id"] for s in segs]
        assert len(ids) == len(set(ids))
        assert all(a["end_offset"] == b["start_offset"] for a, b in pairwise(segs))
        assert segs[0]["start_offset"] == 0
        conn = await _connect(srv.bootstrap_servers)
        try:
            t = await conn.get_table(ff.TablePath(db, "events"))
            bs = await t.new_scan().create_record_batch_log_scanner()
            bs.subscribe(0, ff.EARLIEST_OFFSET)
            assert (await bs.to_arrow()).column("id").to_pylist() == list(range(2000))
        finally:
            await conn.close()
    finally:
        shutil.rmtree(remote, ignore_errors=True)


def test_settings_parse_java_units(tmp_path):
    from fluss_fast.server.settings import Settings, parse_duration_ms, parse_size

    assert parse_size("1mb") == 1 << 20 and parse_size("4k") == 4096 and parse_size("1024m") == 1 << 30
    assert parse_size("10 MB") == 10 << 20 and parse_size("123") == 123
    assert parse_duration_ms("1s") == 1000 and parse_duration_ms("100ms") == 100
    assert parse_duration_ms("1 min") == 60_000 and parse_duration_ms("7d") == 7 * 86_400_000
    assert parse_duration_ms("250") == 250
    cfg = tmp_path / "server.conf"
    cfg.write_text("# comment\nlog.segment.file-size: 2mb\nremote.data.dir=s3://b/p\n")
    s = Settings.from_args(["log.segment.file-size=1mb"], [str(cfg)])
    assert s.get("log.segment.file-size") == 1 << 20
    assert s.get("remote.data.dir") == "s3://b/p"
    assert s.get("remote.log.task-interval-duration") == 60_000  # Java default
    assert s.get("table.log.tiered.local-segments") == 2
    with pytest.raises(ValueError, match="log.segment.file-size"):
        Settings.from_args(["log.segment.file-size=lots"])
    with pytest.raises(ValueError, match="KEY=VALUE"):
        Settings.from_args(["novalue"])


async def test_missing_remote_segment_is_named_and_drop_table_removes_remote_log(start_server):
    remote = tempfile.mkdtemp(prefix="fluss-fast-remote-gone-")
    try:
        srv = start_server(sasl=False, extra_args=tiering_args(remote))
        db = f"rgone_{uuid.uuid4().hex[:8]}"
        conn = await _connect(srv.bootstrap_servers)
        try:
            t, _ = await _fill(conn, db, "events")
            p = await asyncio.to_thread(wait_tiered, srv.data_dir, db, "events", 2)
            seg = p["manifest"]["remote_log_segments"][0]
            tablet = glob.glob(os.path.join(remote, "log", db, "events-*", "0"))[0]
            shutil.rmtree(os.path.join(tablet, seg["segment_id"]))
            bs = await t.new_scan().create_record_batch_log_scanner()
            bs.subscribe(0, 0)
            with pytest.raises(ff.FlussError, match="no longer exists") as ei:
                await bs.to_arrow()
            assert seg["segment_id"] in str(ei.value)
            # reading past the missing segment still works
            later = p["manifest"]["remote_log_segments"][1]["start_offset"]
            bs.subscribe(0, later)
            assert (await bs.to_arrow()).column("id").to_pylist() == list(range(later, ROWS))
            await conn.get_admin().drop_table(ff.TablePath(db, "events"))
            deadline = time.monotonic() + 10
            # the server process removes it on its own schedule: poll the file system
            while os.path.exists(tablet) and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
            assert not os.path.exists(tablet)
        finally:
            await conn.close()
    finally:
        shutil.rmtree(remote, ignore_errors=True)


async def test_indexed_format_and_resubscribe_mid_remote(tiering_server):
    db = f"ridx_{uuid.uuid4().hex[:8]}"
    conn = await _connect(tiering_server.bootstrap_servers, **{"scanner.remote-log.prefetch-num": "2"})
    try:
        adm = conn.get_admin()
        await adm.create_database(db)
        path = ff.TablePath(db, "rows")
        await adm.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=1, log_format="INDEXED"))
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        for lo in range(0, 2000, PER_BATCH):
            w.write_arrow_batch(_batch(lo, lo + PER_BATCH))
            await w.flush()
        await asyncio.to_thread(wait_tiered, tiering_server.data_dir, db, "rows", 2)
        sc = await t.new_scan().project_by_name(["name", "id"]).create_log_scanner()
        sc.subscribe(0, 0)
        first = []
        while len(first) < 50:
            first.extend(await sc.poll(500))
        assert [r.row["id"] for r in first[:50]] == list(range(50))
        assert list(first[0].row) == ["name", "id"]
        # moved while the remote read is under way: the new position wins, nothing is duplicated
        sc.subscribe(0, 1500)
        recs = []
        deadline = time.monotonic() + 20
        while len(recs) < 500 and time.monotonic() < deadline:
            recs.extend(await sc.poll(500))
        assert [r.offset for r in recs] == list(range(1500, 2000))
        assert [r.row["name"] for r in recs] == [f"n{i % 17}" for i in range(1500, 2000)]
    finally:
        await conn.close()


async def test_large_s3_segments_decode_while_they_stream_in(start_server, moto_s3):  # noqa: F811
    prefix = uuid.uuid4().hex[:8]
    srv = start_server(sasl=False, extra_args=tiering_args(f"s3://{BUCKET}/{prefix}", segment="2mb")
                       + s3_args(moto_s3.endpoint))
    db = f"rbig_{prefix}"
    rows = 36_000
    conn = await _connect(srv.bootstrap_servers, **{"scanner.remote-log.prefetch-num": "0"})
    try:
        adm = conn.get_admin()
        await adm.create_database(db)
        path = ff.TablePath(db, "big")
        await adm.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=1))
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        names = [os.urandom(150).hex() for _ in range(rows)]
        for lo in range(0, rows, 2000):
            w.write_arrow_batch(pa.record_batch({"id": pa.array(range(lo, lo + 2000), pa.int64()),
                                                 "name": names[lo:lo + 2000],
                                                 "score": [i * 0.5 for i in range(lo, lo + 2000)]}, schema=SCHEMA))
            await w.flush()
        p = await asyncio.to_thread(wait_tiered, srv.data_dir, db, "big", 2)
        assert p["manifest"]["remote_log_segments"][0]["size_in_bytes"] > 1 << 20
        sc = await t.new_scan().create_log_scanner()
        sc.subscribe(0, 0)
        recs = []
        deadline = time.monotonic() + 60
        while len(recs) < rows and time.monotonic() < deadline:
            recs.extend(await sc.poll(500))
        assert [r.offset for r in recs] == list(range(rows))
        assert [r.row["name"] for r in recs] == names
    finally:
        await conn.close()
