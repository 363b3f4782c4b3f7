"""What fluss_fast writes, pyfluss reads back identically, and the other way round, on the
embedded server: every data type (nested included), every Arrow compression codec, partitioned
tables, the INDEXED format (written by us; pyfluss cannot read it)."""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

import fluss_fast

fluss = pytest.importorskip("fluss")

pytestmark = pytest.mark.timeout(120)

ALL_TYPES = pa.schema([
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("bin", pa.binary()),
    ("fbin", pa.binary(4)), ("dec", pa.decimal128(10, 2)), ("bigdec", pa.decimal128(28, 5)),
    ("d", pa.date32()), ("t", pa.time32("ms")), ("ts", pa.timestamp("us")),
    ("ts_ms", pa.timestamp("ms")), ("ts_ns", pa.timestamp("ns")), ("ltz", pa.timestamp("us", tz="UTC")),
    ("arr", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int64())),
    ("row", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ("deep", pa.list_(pa.struct([("k", pa.string()), ("vs", pa.list_(pa.float64()))]))),
])


def sample_rows(n=5):
    rows = []
    for i in range(n):
        rows.append({
            "b": i % 2 == 0, "i8": -128 + i, "i16": 30000 + i, "i32": -(2 ** 31) + i, "i64": 2 ** 62 + i,
            "f32": 1.5 + i, "f64": -2.25 * i, "s": f"héllo {i}", "bin": bytes([i, 0, 255]),
            "fbin": bytes([i, 1, 2, 3]), "dec": decimal.Decimal(f"{i}.25"),
            "bigdec": decimal.Decimal(f"12345678901234567890{i}.12345"),
            "d": dt.date(2024, 1, 1) + dt.timedelta(days=i), "t": dt.time(12, 30, i, 123000),
            "ts": dt.datetime(2024, 2, 3, 4, 5, 6, 789012) + dt.timedelta(seconds=i),
            "ts_ms": dt.datetime(2024, 2, 3, 4, 5, 6, 789000),
            "ts_ns": dt.datetime(2024, 2, 3, 4, 5, 6, 789012),
            "ltz": dt.datetime(2024, 2, 3, 4, 5, 6, 1, tzinfo=dt.UTC),
            "arr": [i, None, -i], "m": [("a", i), ("b", None)], "row": {"x": i, "y": f"y{i}"},
            "deep": [{"k": "p", "vs": [0.5, float(i)]}, {"k": None, "vs": []}],
        })
    rows.append({k: None for k in ALL_TYPES.names})
    return rows


def normalize(table: pa.Table) -> list:
    """Rows as Python values, with tz-aware LTZ values made comparable."""
    out = []
    for row in table.to_pylist():
        r = dict(row)
        v = r.get("ltz")
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            r["ltz"] = v.astimezone(dt.UTC).replace(tzinfo=None)
        out.append(r)
    return out


def expected_rows(rows):
    exp = []
    for r in rows:
        e = dict(r)
        if isinstance(e.get("ltz"), dt.datetime):
            e["ltz"] = e["ltz"].astimezone(dt.UTC).replace(tzinfo=None)
        exp.append(e)
    return exp


async def ff_connect(bs, props=None):
    d = {"bootstrap.servers": bs}
    d.update(props or {})
    return await fluss_fast.FlussConnection.create(fluss_fast.Config(d))


async def py_connect(bs):
    return await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bs}))


async def py_create(bs, name, descriptor):
    conn = await py_connect(bs)
    try:
        await conn.get_admin().create_table(fluss.TablePath("fluss", name), descriptor)
    finally:
        await conn.close()


async def read_from_earliest(client, table, buckets, partition_ids=None) -> pa.Table:
    """Every row of ``table`` (a table of either client; ``client`` is its module) read with that client."""
    sc = await table.new_scan().create_record_batch_log_scanner()
    if partition_ids is None:
        sc.subscribe_buckets({b: client.EARLIEST_OFFSET for b in range(buckets)})
    else:
        sc.subscribe_partition_buckets({(p, b): client.EARLIEST_OFFSET
                                        for p in partition_ids for b in range(buckets)})
    return await sc.to_arrow()


async def py_read(bs, name, buckets, partition_ids=None) -> pa.Table:
    conn = await py_connect(bs)
    try:
        t = await conn.get_table(fluss.TablePath("fluss", name))
        return await read_from_earliest(fluss, t, buckets, partition_ids)
    finally:
        await conn.close()


async def ff_read(conn, path, buckets, partition_ids=None) -> pa.Table:
    return await read_from_earliest(fluss_fast, await conn.get_table(path), buckets, partition_ids)


async def write_samples_twice(writer) -> list:
    """The sample rows appended one by one, then once more as one Arrow batch (either client's writer)."""
    rows = sample_rows()
    for r in rows:
        writer.append(r)
    writer.write_arrow_batch(pa.RecordBatch.from_pylist(rows, schema=ALL_TYPES))
    await writer.flush()
    return rows


def sort_rows(rows, key):
    return sorted(rows, key=lambda r: (r[key] is None, r[key] if r[key] is not None else 0))


@pytest.mark.parametrize("compression", ["ZSTD", "LZ4_FRAME", "NONE"])
async def test_fluss_fast_writes_pyfluss_reads_all_types(fluss_server, unique_name, compression):
    bs = fluss_server.bootstrap_servers
    name = unique_name()
    # created by pyfluss so the stored schema (nested field ids included) is what it expects
    await py_create(bs, name, fluss.TableDescriptor(
        fluss.Schema(ALL_TYPES), bucket_count=2,
        properties={"table.log.arrow.compression.type": compression}))
    conn = await ff_connect(bs)
    path = fluss_fast.TablePath("fluss", name)
    t = await conn.get_table(path)
    rows = await write_samples_twice(t.new_append().create_writer())
    await conn.close()
    got = normalize(await py_read(bs, name, 2))
    exp = expected_rows(rows) * 2
    assert sort_rows(got, "i16") == sort_rows(exp, "i16")


async def test_pyfluss_writes_fluss_fast_reads_all_types(fluss_server, unique_name):
    bs = fluss_server.bootstrap_servers
    pconn = await py_connect(bs)
    name = unique_name()
    ppath = fluss.TablePath("fluss", name)
    await pconn.get_admin().create_table(ppath, fluss.TableDescriptor(fluss.Schema(ALL_TYPES), bucket_count=2))
    pt = await pconn.get_table(ppath)
    rows = await write_samples_twice(pt.new_append().create_writer())
    await pconn.close()
    conn = await ff_connect(bs)
    got = normalize(await ff_read(conn, fluss_fast.TablePath("fluss", name), 2))
    await conn.close()
    assert sort_rows(got, "i16") == sort_rows(expected_rows(rows) * 2, "i16")


async def test_both_clients_write_one_table(fluss_server, unique_name):
    """Interleaved writers (each with its own writer id) into the same buckets read back whole."""
    bs = fluss_server.bootstrap_servers
    schema = pa.schema([("id", pa.int64()), ("who", pa.string())])
    conn = await ff_connect(bs)
    name = unique_name()
    path = fluss_fast.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss_fast.TableDescriptor(
        fluss_fast.Schema(schema), bucket_count=3, bucket_keys=["id"]))
    w = (await conn.get_table(path)).new_append().create_writer()
    pconn = await py_connect(bs)
    pw = (await pconn.get_table(fluss.TablePath("fluss", name))).new_append().create_writer()
    for i in range(300):
        (w if i % 2 else pw).append({"id": i, "who": "ff" if i % 2 else "py"})
    await w.flush()
    await pw.flush()
    await pconn.close()
    ours = await ff_read(conn, path, 3)
    await conn.close()
    theirs = await py_read(bs, name, 3)
    assert sorted(ours.column("id").to_pylist()) == list(range(300))
    assert sorted(theirs.column("id").to_pylist()) == list(range(300))


async def test_bucket_key_placement_matches_pyfluss_on_safe_keys(fluss_server, unique_name):
    """Keys whose encoding has no tail byte >= 0x80 hash the same in Java and Rust: both clients
    must put each row in the same bucket."""
    bs = fluss_server.bootstrap_servers
    schema = pa.schema([("k", pa.string()), ("src", pa.string())])
    conn = await ff_connect(bs)
    names = [unique_name(), unique_name()]
    for n in names:
        await conn.get_admin().create_table(fluss_fast.TablePath("fluss", n), fluss_fast.TableDescriptor(
            fluss_fast.Schema(schema), bucket_count=5, bucket_keys=["k"]))
    keys = [f"key-{i}" for i in range(50)]
    w = (await conn.get_table(fluss_fast.TablePath("fluss", names[0]))).new_append().create_writer()
    for k in keys:
        w.append({"k": k, "src": "ff"})
    await w.flush()
    pconn = await py_connect(bs)
    pw = (await pconn.get_table(fluss.TablePath("fluss", names[1]))).new_append().create_writer()
    for k in keys:
        pw.append({"k": k, "src": "py"})
    await pw.flush()
    await pconn.close()
    adm = conn.get_admin()
    a = await adm.list_offsets(fluss_fast.TablePath("fluss", names[0]), list(range(5)),
                               fluss_fast.OffsetSpec.latest())
    b = await adm.list_offsets(fluss_fast.TablePath("fluss", names[1]), list(range(5)),
                               fluss_fast.OffsetSpec.latest())
    await conn.close()
    assert a == b and sum(a.values()) == 50


async def test_partitioned_fluss_fast_writes_pyfluss_reads(fluss_server, unique_name):
    bs = fluss_server.bootstrap_servers
    schema = pa.schema([("id", pa.int32()), ("region", pa.string()), ("v", pa.float64())])
    conn = await ff_connect(bs)
    name = unique_name()
    path = fluss_fast.TablePath("fluss", name)
    adm = conn.get_admin()
    await adm.create_table(path, fluss_fast.TableDescriptor(fluss_fast.Schema(schema),
                                                            partition_keys=["region"], bucket_count=2))
    for r in ("eu", "us", "ap"):
        await adm.create_partition(path, {"region": r})
    w = (await conn.get_table(path)).new_append().create_writer()
    regions = ["eu", "us", "ap"]
    rows = [{"id": i, "region": regions[i % 3], "v": i / 2} for i in range(60)]
    for r in rows[:30]:
        w.append(r)
    w.write_arrow_batch(pa.RecordBatch.from_pylist(rows[30:], schema=schema))  # mixes partitions
    await w.flush()
    infos = await adm.list_partition_infos(path)
    pids = {p.partition_name: p.partition_id for p in infos}
    ours = await ff_read(conn, path, 2, list(pids.values()))
    await conn.close()
    got = await py_read(bs, name, 2, list(pids.values()))
    assert sort_rows(got.to_pylist(), "id") == rows
    assert sort_rows(ours.to_pylist(), "id") == rows
    # each partition holds only its own rows
    for region, pid in pids.items():
        part = await py_read(bs, name, 2, [pid])
        assert set(part.column("region").to_pylist()) == {region}


async def test_partitioned_pyfluss_writes_fluss_fast_reads(fluss_server, unique_name):
    bs = fluss_server.bootstrap_servers
    schema = pa.schema([("id", pa.int32()), ("region", pa.string())])
    pconn = await py_connect(bs)
    name = unique_name()
    ppath = fluss.TablePath("fluss", name)
    padm = pconn.get_admin()
    await padm.create_table(ppath, fluss.TableDescriptor(fluss.Schema(schema), partition_keys=["region"],
                                                         bucket_count=2))
    await padm.create_partition(ppath, {"region": "eu"})
    await padm.create_partition(ppath, {"region": "us"})
    pw = (await pconn.get_table(ppath)).new_append().create_writer()
    rows = [{"id": i, "region": "eu" if i % 2 else "us"} for i in range(40)]
    for r in rows:
        pw.append(r)
    await pw.flush()
    await pconn.close()
    conn = await ff_connect(bs)
    path = fluss_fast.TablePath("fluss", name)
    pids = [p.partition_id for p in await conn.get_admin().list_partition_infos(path)]
    got = await ff_read(conn, path, 2, pids)
    await conn.close()
    assert sort_rows(got.to_pylist(), "id") == rows


async def test_indexed_format_written_by_fluss_fast_reads_back(fluss_server, unique_name):
    """pyfluss cannot read INDEXED tables (its Rust core only reads ARROW); our reader checks it."""
    bs = fluss_server.bootstrap_servers
    name = unique_name()
    await py_create(bs, name, fluss.TableDescriptor(fluss.Schema(ALL_TYPES), bucket_count=1,
                                                    log_format="INDEXED"))
    conn = await ff_connect(bs)
    path = fluss_fast.TablePath("fluss", name)
    w = (await conn.get_table(path)).new_append().create_writer()
    rows = sample_rows()
    for r in rows:
        w.append(r)
    await w.flush()
    got = normalize(await ff_read(conn, path, 1))
    await conn.close()
    assert got == expected_rows(rows)
