"""Data-lake tables (``table.datalake.format`` = paimon / iceberg) between fluss_fast and pyfluss 1.0.0
on the embedded server: both clients encode keys and pick buckets the lake's way (codec.keys.KeyScheme),
so a row written by one is found by the other's lookups and prefix lookups, and a log table's rows
with the same bucket key land in the same bucket, the one the lake's bucket function names."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

import fluss_fast as ff
from fluss_fast import datatypes as D
from fluss_fast.codec.kv import keys as K
from fluss_fast.datatypes import DataType as T

from pyfluss_util import call, connect

fluss = pytest.importorskip("fluss")
pytestmark = pytest.mark.compat

N = 40
BUCKETS = 5


@pytest.fixture
async def clients(fluss_server, unique_name):
    f = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": fluss_server.bootstrap_servers}))
    p = await connect(fluss, fluss_server.bootstrap_servers)
    db = unique_name("lake")
    await f.get_admin().create_database(db)
    yield f, p, db
    await f.get_admin().drop_database(db, ignore_if_not_exists=True, cascade=True)
    await f.close()
    # bounded: pyfluss's close drains its writers, and one stuck on a batch (a failed test's) would
    # otherwise hold up the session, pytest-timeout not reaching teardown
    await call(p.close())


async def tables(f, p, db, name, schema, pk=None, **kw):
    """The table created by fluss_fast (with the lake format in ``kw['properties']``), opened by both."""
    await f.get_admin().create_table(ff.TablePath(db, name), ff.TableDescriptor(
        ff.Schema(schema, primary_keys=pk) if pk else ff.Schema(schema), bucket_count=BUCKETS, **kw))
    return (await f.get_table(ff.TablePath(db, name)),
            await call(p.get_table(fluss.TablePath(db, name))))


def lake(fmt: str, **extra) -> dict:
    return {"properties": {"table.datalake.format": fmt, **extra}}


async def bucket_rows(table, col: str, expected: int) -> dict:
    """{value of ``col``: [(bucket, row) ...]}, from the table's changelog / log, once
    ``expected`` records were read (fluss_fast scanner over every bucket)."""
    sc = await table.new_scan().create_log_scanner()
    for b in range(BUCKETS):
        sc.subscribe(b, ff.EARLIEST_OFFSET)
    out: dict = {}
    got = 0
    deadline = time.monotonic() + 20
    while got < expected and time.monotonic() < deadline:
        recs = await sc.poll(500)
        for tb, rs in recs.items():
            for r in rs:
                out.setdefault(r.row[col], []).append((tb.bucket_id, r.row))
                got += 1
    assert got == expected
    return out


SIMPLE = pa.schema([("id", pa.int32()), ("name", pa.string()), ("v", pa.int64())])


def srow(i: int) -> dict:
    return {"id": i * 7919 - 100, "name": f"name-{i}-é" * (1 + i % 3), "v": i * 1000}


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
async def test_primary_key_lookups_both_ways(clients, unique_name, fmt):
    f, p, db = clients
    pk = ["id"] if fmt == "iceberg" else ["id", "name"]  # Iceberg keys are one column
    tf, tp = await tables(f, p, db, f"pk_{fmt}", SIMPLE, pk, **lake(fmt))
    wf = tf.new_upsert().create_writer()
    wp = tp.new_upsert().create_writer()
    for i in range(N):
        (wf if i % 2 else wp).upsert(srow(i))
    await wf.flush()
    await call(wp.flush())
    lf = tf.new_lookup().create_lookuper()
    lp = tp.new_lookup().create_lookuper()
    for i in range(N):
        key = {c: srow(i)[c] for c in pk}
        got_f = await lf.lookup(key)
        got_p = await call(lp.lookup(key))
        assert got_f == srow(i), (fmt, i)
        assert got_p == srow(i), (fmt, i)
    # the changelog shows the lake's buckets: each key in the bucket its lake function names
    scheme = K.KeyScheme(tf.get_table_info().descriptor)
    enc = K.lake_key_encoder([T(D.INTEGER, False)] + ([T(D.STRING, False)] if len(pk) > 1 else []), pk, fmt.upper())
    placed = await bucket_rows(tf, "id", N)
    assert len(placed) == N
    by_id = {srow(i)["id"]: srow(i) for i in range(N)}
    for ident, seen in placed.items():
        key = enc.encode([by_id[ident][c] for c in pk])
        assert {b for b, _ in seen} == {scheme.bucketing(key, BUCKETS)}
    assert len({b for seen in placed.values() for b, _ in seen}) > 1
    # deletes cross over too
    await wf.delete({c: srow(0)[c] for c in pk}).wait()
    await call(wp.delete({c: srow(1)[c] for c in pk}).wait())
    for i in (0, 1):
        key = {c: srow(i)[c] for c in pk}
        assert await lf.lookup(key) is None
        assert await call(lp.lookup(key)) is None


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
async def test_bulk_arrow_upserts_and_deletes(clients, unique_name, fmt):
    f, p, db = clients
    tf, tp = await tables(f, p, db, f"bulk_{fmt}", SIMPLE, ["id"], **lake(fmt))
    wf = tf.new_upsert().create_writer()
    rows = [srow(i) for i in range(N)]
    await wf.upsert_arrow(pa.Table.from_pylist(rows, schema=SIMPLE)).wait()
    await wf.delete_arrow(pa.Table.from_pylist([{"id": rows[3]["id"]}], schema=pa.schema([("id", pa.int32())]))).wait()
    lp = tp.new_lookup().create_lookuper()
    for i, r in enumerate(rows):
        got = await call(lp.lookup({"id": r["id"]}))
        assert got == (None if i == 3 else r), (fmt, i)


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
async def test_bulk_arrow_partitioned_with_bucket_key(clients, unique_name, fmt):
    """Bulk upserts into a partitioned table whose bucket key is part of its primary key: pyfluss's
    lookups and prefix lookups find every row."""
    f, p, db = clients
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("region", pa.string()), ("v", pa.float64())])
    name = f"bulkpart_{fmt}"
    tf, tp = await tables(f, p, db, name, schema, ["a", "b", "region"], bucket_keys=["a"],
                          partition_keys=["region"], **lake(fmt))
    for r in ("eu", "us"):
        await f.get_admin().create_partition(ff.TablePath(db, name), {"region": r})
    rows = [{"a": i // 3, "b": f"b{i % 3}", "region": ("eu", "us")[i % 2], "v": i / 4} for i in range(60)]
    await tf.new_upsert().create_writer().upsert_arrow(pa.Table.from_pylist(rows, schema=schema)).wait()
    lp = tp.new_lookup().create_lookuper()
    pp = tp.new_lookup().lookup_by(["a", "region"]).create_lookuper()
    for r in rows:
        assert await call(lp.lookup({c: r[c] for c in ("a", "b", "region")})) == r
    for a in range(20):
        for region in ("eu", "us"):
            want = sorted((r for r in rows if r["a"] == a and r["region"] == region), key=lambda x: x["b"])
            got = await call(pp.lookup({"a": a, "region": region}))
            assert sorted(got, key=lambda x: x["b"]) == want


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["plain", "partitioned"])
async def test_prefix_lookups_both_ways(clients, unique_name, fmt, partitioned):
    """Primary key (a, b), bucket key (a): the primary key keeps the default layout (format version 2)
    and prefix lookups by a find every row of a, whoever wrote it."""
    f, p, db = clients
    cols = [("a", pa.int64()), ("b", pa.string()), ("v", pa.int32())]
    pk = ["a", "b"]
    kw = lake(fmt)
    if partitioned:
        cols.append(("region", pa.string()))
        pk = ["a", "b", "region"]
        kw["partition_keys"] = ["region"]
    name = f"prefix_{fmt}_{int(partitioned)}"
    tf, tp = await tables(f, p, db, name, pa.schema(cols), pk, bucket_keys=["a"], **kw)
    regions = ["eu", "us"] if partitioned else [None]
    for r in regions:
        if r is not None:
            await f.get_admin().create_partition(ff.TablePath(db, name), {"region": r})
    assert tf.get_table_info().descriptor.properties.get("table.kv.format-version") == "2"
    wf = tf.new_upsert().create_writer()
    wp = tp.new_upsert().create_writer()
    expect = {}
    for a in range(8):
        for j in range(3):
            for r in regions:
                row = {"a": a * 1_000_003 - 5, "b": f"b{j}", "v": a * 10 + j}
                if r is not None:
                    row["region"] = r
                ((wf if (a + j) % 2 else wp).upsert(row))
                expect.setdefault((row["a"], r), []).append(row)
    await wf.flush()
    await call(wp.flush())
    by = ["a", "region"] if partitioned else ["a"]
    pf = tf.new_lookup().lookup_by(by).create_lookuper()
    pp = tp.new_lookup().lookup_by(by).create_lookuper()
    lf = tf.new_lookup().create_lookuper()
    lp = tp.new_lookup().create_lookuper()
    for (a, r), rows in expect.items():
        prefix = {"a": a} if r is None else {"a": a, "region": r}
        want = sorted(rows, key=lambda x: x["b"])
        assert sorted(await pf.lookup(prefix), key=lambda x: x["b"]) == want, (fmt, a, r)
        assert sorted(await call(pp.lookup(prefix)), key=lambda x: x["b"]) == want, (fmt, a, r)
        for row in rows:
            key = {c: row[c] for c in pk}
            assert await lf.lookup(key) == row
            assert await call(lp.lookup(key)) == row


async def test_legacy_format_version_1_table(clients, unique_name):
    """A table created before format versions (version 1): its primary key is Paimon-encoded even
    with a bucket key of its own; both clients agree on it."""
    f, p, db = clients
    schema = pa.schema([("a", pa.int32()), ("b", pa.string()), ("v", pa.int32())])
    tf, tp = await tables(f, p, db, "legacy", schema, ["a", "b"], bucket_keys=["a"],
                          **lake("paimon", **{"table.kv.format-version": "1"}))
    assert K.KeyScheme(tf.get_table_info().descriptor).pk_lake == "PAIMON"
    wf = tf.new_upsert().create_writer()
    wp = tp.new_upsert().create_writer()
    rows = [{"a": i % 5, "b": f"x{i}", "v": i} for i in range(N)]
    for i, r in enumerate(rows):
        (wf if i % 2 else wp).upsert(r)
    await wf.flush()
    await call(wp.flush())
    lf = tf.new_lookup().create_lookuper()
    lp = tp.new_lookup().create_lookuper()
    for r in rows:
        key = {"a": r["a"], "b": r["b"]}
        assert await lf.lookup(key) == r
        assert await call(lp.lookup(key)) == r


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
async def test_log_table_bucket_key_same_bucket(clients, unique_name, fmt):
    f, p, db = clients
    schema = pa.schema([("k", pa.string()), ("seq", pa.int32()), ("who", pa.string())])
    tf, tp = await tables(f, p, db, f"log_{fmt}", schema, bucket_keys=["k"], **lake(fmt))
    af = tf.new_append().create_writer()
    ap = tp.new_append().create_writer()
    keys = [f"key-{i}" for i in range(12)]
    seq = 0
    for k in keys:
        for who, w in (("ff", af), ("py", ap)):
            w.append({"k": k, "seq": seq, "who": who})
            seq += 1
    # and an Arrow batch from each
    batch = pa.RecordBatch.from_pylist([{"k": k, "seq": 1000 + i, "who": "ff-arrow"} for i, k in enumerate(keys)],
                                       schema=schema)
    await af.write_arrow_batch(batch).wait()
    await af.flush()
    await call(ap.flush())
    placed = await bucket_rows(tf, "k", 3 * len(keys))
    enc = K.lake_key_encoder([T(D.STRING)], ["k"], fmt.upper())
    fn = K.bucketing_function(fmt.upper())
    assert set(placed) == set(keys)
    for k, seen in placed.items():
        assert {b for b, _ in seen} == {fn(enc.encode([k]), BUCKETS)}, (k, seen)
        assert {r["who"] for _, r in seen} == {"ff", "py", "ff-arrow"}


async def test_embedded_server_accepts_lake_options(clients, unique_name):
    """``table.datalake.format`` alone is accepted, as by a Java cluster (the format drives the
    key layout; ``table.datalake.enabled`` is the tiering switch)."""
    f, p, db = clients
    for fmt in ("paimon", "iceberg", "lance"):
        await f.get_admin().create_table(ff.TablePath(db, f"opt_{fmt}"), ff.TableDescriptor(
            ff.Schema(SIMPLE, primary_keys=["id"]), bucket_count=2, properties={"table.datalake.format": fmt}))
        t = await f.get_table(ff.TablePath(db, f"opt_{fmt}"))
        assert K.lake_format(t.get_table_info().descriptor) == fmt.upper()


async def test_iceberg_empty_key_refused_by_both(clients, unique_name):
    """An empty STRING key of an Iceberg table has empty key bytes, which Java's and pyfluss's Iceberg
    bucket functions refuse: so does fluss_fast, before anything is sent."""
    f, p, db = clients
    schema = pa.schema([("k", pa.string()), ("v", pa.int32())])
    tf, tp = await tables(f, p, db, "ice_empty", schema, ["k"], **lake("iceberg"))
    with pytest.raises(ff.FlussError, match="must not be null or empty"):
        tf.new_upsert().create_writer().upsert({"k": "", "v": 1})
    with pytest.raises(Exception, match="(?i)empty"):
        wp = tp.new_upsert().create_writer()
        await call(wp.upsert({"k": "", "v": 1}).wait())
    with pytest.raises(ff.FlussError, match="must not be null or empty"):
        await tf.new_lookup().create_lookuper().lookup({"k": ""})
