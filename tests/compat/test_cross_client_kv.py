"""Primary-key data written by either client (fluss_fast, pyfluss 1.0.0) reads back identically
through the other: upserts, deletes, partial updates, partitioned tables, every data type as key
and as value, bulk Arrow upserts, and the change types of the changelog."""
from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal

import pyarrow as pa
import pytest

import fluss_fast as ff

from pyfluss_util import call, connect

fluss = pytest.importorskip("fluss")
pytestmark = pytest.mark.compat

UTC = dt.UTC

KEY_FIELDS = [  # every scalar type the key encoder takes
    ("k_bool", pa.bool_()), ("k_i8", pa.int8()), ("k_i16", pa.int16()), ("k_i32", pa.int32()),
    ("k_i64", pa.int64()), ("k_s", pa.string()), ("k_bytes", pa.binary()), ("k_date", pa.date32()),
    ("k_time", pa.time32("ms")), ("k_ts", pa.timestamp("us")), ("k_ltz", pa.timestamp("us", tz="UTC")),
    ("k_dec", pa.decimal128(10, 2)), ("k_dec38", pa.decimal128(30, 4)),
]
VALUE_FIELDS = [
    ("v_bool", pa.bool_()), ("v_i8", pa.int8()), ("v_i16", pa.int16()), ("v_i32", pa.int32()),
    ("v_i64", pa.int64()), ("v_f32", pa.float32()), ("v_f64", pa.float64()), ("v_s", pa.string()),
    ("v_bytes", pa.binary()), ("v_bin", pa.binary(4)), ("v_date", pa.date32()),
    ("v_time", pa.time32("ms")), ("v_ts3", pa.timestamp("ms")), ("v_ts6", pa.timestamp("us")),
    ("v_ltz", pa.timestamp("us", tz="UTC")), ("v_dec", pa.decimal128(10, 2)),
    ("v_dec38", pa.decimal128(38, 10)), ("v_arr", pa.list_(pa.int32())),
    ("v_map", pa.map_(pa.string(), pa.int64())),
    ("v_row", pa.struct([("x", pa.int32()), ("y", pa.string())])),
]
SCHEMA = pa.schema(KEY_FIELDS + VALUE_FIELDS)
KEYS = [n for n, _ in KEY_FIELDS]


def row(i: int) -> dict:
    return {
        "k_bool": i % 2 == 0, "k_i8": i % 100 - 50, "k_i16": i * 300 - 7000, "k_i32": i * 100003 - 300,
        "k_i64": -(i * 10 ** 12) - 1, "k_s": f"key-é-{i}", "k_bytes": bytes([i, 255 - i, 0x80]),
        "k_date": dt.date(2020, 1, 1) + dt.timedelta(days=i), "k_time": dt.time(i % 24, 7, 9, 123000),
        "k_ts": dt.datetime(2024, 2, 3, 4, 5, 6, 123456) + dt.timedelta(seconds=i),
        "k_ltz": dt.datetime(2024, 2, 3, 4, 5, 6, 654321, tzinfo=UTC) + dt.timedelta(minutes=i),
        "k_dec": Decimal(i * 37 - 100) / 100, "k_dec38": Decimal(i) * Decimal("1234567890.1234"),
        "v_bool": i % 3 == 0, "v_i8": -i, "v_i16": i * 2, "v_i32": -i * 7, "v_i64": i ** 5,
        "v_f32": i + 0.5, "v_f64": i / 3, "v_s": f"value {i}" * (i % 3), "v_bytes": b"\x00" * i,
        "v_bin": bytes([i, i, i, i]), "v_date": dt.date(1999, 12, 31) - dt.timedelta(days=i),
        # (pyfluss cannot write timestamps before 1970 with sub-millisecond digits)
        "v_time": dt.time(23, 59, i % 60), "v_ts3": dt.datetime(2001, 1, 1, 0, 0, 0, 5000),
        "v_ts6": dt.datetime(1990, 6, 6, 6, 6, 6, 66) + dt.timedelta(hours=i),
        "v_ltz": dt.datetime(2030, 1, 1, tzinfo=UTC) - dt.timedelta(microseconds=i),
        "v_dec": Decimal("-12345678.91") + i, "v_dec38": Decimal("1234567890123456789012.0123456789"),
        "v_arr": [i, None, -i], "v_map": {"a": i, "b": None}, "v_row": {"x": i, "y": None},
    }


def key_of(r: dict) -> dict:
    return {k: r[k] for k in KEYS}


def normal(r):
    """Maps come back as lists of pairs from both clients; compare them as dicts."""
    if r is None:
        return None
    out = dict(r)
    if out.get("v_map") is not None:
        out["v_map"] = dict(out["v_map"])
    return out


@pytest.fixture
async def clients(fluss_server, unique_name):
    f = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": fluss_server.bootstrap_servers}))
    p = await connect(fluss, fluss_server.bootstrap_servers)
    db = unique_name("kvx")
    await f.get_admin().create_database(db)
    yield f, p, db
    await f.get_admin().drop_database(db, ignore_if_not_exists=True, cascade=True)
    await f.close()
    await call(p.close())  # bounded: a pyfluss writer stuck on a batch would hold its close up


async def tables(f, p, db, name, schema, pk, **kw):
    await f.get_admin().create_table(ff.TablePath(db, name), ff.TableDescriptor(
        ff.Schema(schema, primary_keys=pk), **kw))
    return (await f.get_table(ff.TablePath(db, name)),
            await call(p.get_table(fluss.TablePath(db, name))))


async def test_every_type_as_key_and_value_both_ways(clients, unique_name):
    f, p, db = clients
    tf, tp = await tables(f, p, db, "alltypes", SCHEMA, KEYS, bucket_count=1)
    wf = tf.new_upsert().create_writer()
    wp = tp.new_upsert().create_writer()
    for i in range(0, 20, 2):
        wf.upsert(row(i))
    for i in range(1, 20, 2):
        wp.upsert(row(i))
    await wf.flush()
    await call(wp.flush())
    lf = tf.new_lookup().create_lookuper()
    lp = tp.new_lookup().create_lookuper()
    for i in range(20):
        got_f = await lf.lookup(key_of(row(i)))
        got_p = await call(lp.lookup(key_of(row(i))))
        assert got_p is not None, i  # found by both: same key bytes, same bucket
        assert normal(got_f) == normal(got_p), i
        assert normal(got_f)["v_map"] == {"a": i, "b": None}
    # deletes cross over too
    await wf.delete(key_of(row(1))).wait()
    await call(wp.delete(key_of(row(2))).wait())
    for i in (1, 2):
        assert await lf.lookup(key_of(row(i))) is None
        assert await call(lp.lookup(key_of(row(i)))) is None


async def test_bulk_arrow_upsert_reads_back_in_pyfluss(clients):
    f, p, db = clients
    scalar = [fld for fld in SCHEMA if not pa.types.is_nested(fld.type)]
    sc = pa.schema(scalar)
    tf, tp = await tables(f, p, db, "bulk", sc, KEYS, bucket_count=3)
    rows = [{k: v for k, v in row(i).items() if k in sc.names} for i in range(50)]
    data = pa.Table.from_pylist(rows, schema=sc)
    wf = tf.new_upsert().create_writer()
    await wf.upsert_arrow(data.select(list(reversed(sc.names)))).wait()  # by name, any order
    lp = tp.new_lookup().create_lookuper()
    for i in (0, 17, 49):
        got = await call(lp.lookup(key_of(rows[i])))
        assert got == rows[i] or {k: got[k] for k in rows[i]} == rows[i]
    await wf.delete_arrow(data.select(KEYS).slice(0, 10)).wait()
    assert await call(lp.lookup(key_of(rows[3]))) is None
    assert await call(lp.lookup(key_of(rows[10]))) is not None


async def test_partitioned_partial_updates_and_deletes(clients):
    f, p, db = clients
    sc = pa.schema([("region", pa.string()), ("id", pa.int32()), ("a", pa.string()), ("b", pa.int64()),
                    ("c", pa.float64())])
    tf, tp = await tables(f, p, db, "parts", sc, ["region", "id"], partition_keys=["region"],
                          bucket_count=2)
    for r in ("US", "EU"):
        await f.get_admin().create_partition(ff.TablePath(db, "parts"), {"region": r})
    tf = await f.get_table(ff.TablePath(db, "parts"))
    tp = await call(p.get_table(fluss.TablePath(db, "parts")))
    wf = tf.new_upsert().create_writer()
    for i in range(6):
        wf.upsert({"region": "US" if i % 2 else "EU", "id": i, "a": f"a{i}", "b": i, "c": i / 2})
    await wf.flush()
    pp = tp.new_upsert().partial_update_by_name(["region", "id", "b"]).create_writer()
    await call(pp.upsert({"region": "US", "id": 1, "b": 100}).wait())
    pf = tf.new_upsert().partial_update_by_index([0, 1, 4]).create_writer()
    await pf.upsert(["EU", 0, -1.5]).wait()
    await call(tp.new_upsert().create_writer().delete({"region": "US", "id": 3}).wait())
    lf = tf.new_lookup().create_lookuper()
    lp = tp.new_lookup().create_lookuper()
    expect = {("US", 1): {"region": "US", "id": 1, "a": "a1", "b": 100, "c": 0.5},
              ("EU", 0): {"region": "EU", "id": 0, "a": "a0", "b": 0, "c": -1.5},
              ("US", 3): None, ("EU", 4): {"region": "EU", "id": 4, "a": "a4", "b": 4, "c": 2.0}}
    for (region, i), want in expect.items():
        assert await lf.lookup({"region": region, "id": i}) == want
        assert await call(lp.lookup({"region": region, "id": i})) == want


async def _records(scanner, n, poll):
    out = []
    deadline = time.monotonic() + 20
    while len(out) < n and time.monotonic() < deadline:
        out.extend(await poll(scanner))
    return out


async def test_changelog_change_types_agree(clients):
    f, p, db = clients
    sc = pa.schema([("id", pa.int32()), ("v", pa.string())])
    tf, tp = await tables(f, p, db, "cdc", sc, ["id"], bucket_count=1)
    wp = tp.new_upsert().create_writer()
    wp.upsert({"id": 1, "v": "a"})
    wp.upsert({"id": 1, "v": "b"})
    await call(wp.flush())
    wf = tf.new_upsert().create_writer()
    wf.delete({"id": 1})
    wf.upsert({"id": 2, "v": "c"})
    await wf.flush()
    sf = await tf.new_scan().create_log_scanner()
    sf.subscribe(bucket_id=0, start_offset=ff.EARLIEST_OFFSET)
    sp = await call(tp.new_scan().create_log_scanner())
    sp.subscribe(bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)
    got_f = await _records(sf, 5, lambda s: s.poll(200))
    got_p = await _records(sp, 5, lambda s: call(s.poll(200)))
    view_f = [(r.offset, int(r.change_type), r.row) for r in got_f]
    view_p = [(r.offset, int(r.change_type), r.row) for r in got_p]
    assert view_f == view_p
    assert [c for _o, c, _r in view_f] == [1, 2, 3, 4, 1]  # +I -U +U -D +I


def _rust_style_bucket(data: bytes, n: int) -> int:
    """The bucket pyfluss's Rust core picks: Fluss's murmur, but with the tail bytes widened
    without their sign (docs/contributing/formats.md §6.3 'interop bug'); Java and fluss_fast sign-extend."""
    from fluss_fast.codec.wire.murmur import int_murmur

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    def mix_k(k):
        return (rotl((k * 0xCC9E2D51) & 0xFFFFFFFF, 15) * 0x1B873593) & 0xFFFFFFFF

    def mix_h(h, k):
        return (rotl(h ^ k, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF

    h = 42
    full = len(data) & ~3
    for i in range(0, full, 4):
        h = mix_h(h, mix_k(int.from_bytes(data[i:i + 4], "little")))
    for b in data[full:]:
        h = mix_h(h, mix_k(b))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return int_murmur(signed) % n


async def test_bucketing_follows_java_where_pyfluss_differs(clients):
    # With several buckets a row is found by the other client exactly when both pick the same
    # bucket; they differ only for keys hit by the Rust core's tail-byte bug, where fluss_fast
    # keeps Java's (the server's and the Java client's) choice.
    from fluss_fast.codec.kv.keys import KeyEncoder
    from fluss_fast.codec.wire.murmur import bucket_for_key
    from fluss_fast.datatypes import SchemaInfo

    f, p, db = clients
    sc = pa.schema([("id", pa.int32()), ("v", pa.string())])
    tf, tp = await tables(f, p, db, "buckets", sc, ["id"], bucket_count=8)
    ids = list(range(280, 320))  # INT 300 -> AC 02: Java bucket 5 of 8, Rust-style 3
    wp = tp.new_upsert().create_writer()
    for i in ids:
        wp.upsert({"id": i, "v": "p"})
    await call(wp.flush())
    types = SchemaInfo.from_arrow(sc, primary_key=["id"]).types[:1]
    enc = KeyEncoder(types)
    lf = tf.new_lookup().create_lookuper()
    differ = 0
    for i in ids:
        key = enc.encode([i])
        same = bucket_for_key(key, 8) == _rust_style_bucket(key, 8)
        differ += not same
        assert (await lf.lookup({"id": i}) is not None) == same, i
    assert differ  # the range was chosen to include keys where the two disagree
    assert bucket_for_key(enc.encode([300]), 8) == 5 and _rust_style_bucket(enc.encode([300]), 8) == 3
