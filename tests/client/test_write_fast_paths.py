"""The writer's per-row fast paths against the embedded server: rows of bucket-key and partitioned
tables go through per-(partition, bucket) slots and a partition-id cache, and must land exactly
where the checked path would put them, in order, with the same errors for bad rows."""
from __future__ import annotations

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast.codec.kv.keys import RowKeyEncoder
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.log.arrowlog import ArrowLogCodec
from fluss_fast.codec.wire import murmur

from client_util import connect, fetch_records

pytestmark = pytest.mark.timeout(90)

SCHEMA = pa.schema([("id", pa.int32()), ("region", pa.string()), ("n", pa.int64()), ("v", pa.string())])


async def read_bucket(table, bucket, partition_id=None) -> list:
    buf = await fetch_records(table, bucket, partition_id)
    codec = ArrowLogCodec(table.get_table_info().descriptor.schema)
    rows = []
    for h in logbatch.iter_batches(buf):
        rb, _ = codec.decode(buf, h)
        rows.extend(rb.to_pylist())
    return rows


async def test_bucket_key_rows_land_in_their_hashed_bucket_in_order(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"writer.batch-size": "4096"})
    path = fluss.TablePath("fluss", unique_name())
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(SCHEMA), bucket_count=5, bucket_keys=["n"]))
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    total = 3000
    for i in range(total):
        row = {"id": i, "region": "x", "n": i % 37, "v": f"v{i}"}
        w.append(row if i % 3 == 0 else (list(row.values()) if i % 3 == 1 else tuple(row.values())))
    await w.flush()
    enc = RowKeyEncoder(t.get_table_info().descriptor.schema, [2])
    seen = 0
    for bucket in range(5):
        rows = await read_bucket(t, bucket)
        seen += len(rows)
        ids = [r["id"] for r in rows]
        assert ids == sorted(ids)  # one writer thread: append order within a bucket
        for r in rows:
            assert murmur.bucket_for_key(enc.encode([r["n"]]), 5) == bucket
            assert r["v"] == f"v{r['id']}"
    assert seen == total
    await conn.close()


async def test_partitioned_rows_through_the_cache(fluss_server, unique_name):
    # dynamic partition creation off, so that a row for a missing partition still fails
    conn = await connect(fluss_server.bootstrap_servers, {"writer.batch-size": "4096",
                                                          "writer.dynamic-create-partition.enabled": "false"})
    admin = conn.get_admin()
    path = fluss.TablePath("fluss", unique_name())
    await admin.create_table(path, fluss.TableDescriptor(
        fluss.Schema(SCHEMA), partition_keys=["region"], bucket_count=2))
    regions = ["eu", "us", "ap"]
    for r in regions:
        await admin.create_partition(path, {"region": r})
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    total = 2000
    for i in range(total):
        reg = regions[i % 3]
        w.append({"id": i, "region": reg, "n": i, "v": "a"} if i % 2 else [i, reg, i, "b"])
    # a bad row after the cache is warm still fails with the checked path's errors
    with pytest.raises(fluss.FlussError) as e:
        w.append({"id": 1, "region": "mars", "n": 1, "v": "x"})
    assert e.value.error_code == 36 and "mars" in str(e.value)
    with pytest.raises(fluss.FlussError, match="region"):
        w.append({"id": 1, "region": None, "n": 1, "v": "x"})
    with pytest.raises(fluss.FlussError, match="column 'n'"):
        w.append({"id": 1, "region": "eu", "n": "not a number", "v": "x"})
    await w.flush()
    parts = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(path)}
    seen = 0
    for reg in regions:
        for bucket in range(2):
            rows = await read_bucket(t, bucket, parts[reg])
            seen += len(rows)
            assert {r["region"] for r in rows} <= {reg}
            ids = [r["id"] for r in rows]
            assert ids == sorted(ids)
            assert all(regions[r["id"] % 3] == reg for r in rows)
    assert seen == total
    await conn.close()


async def test_warm_partition_cache_lets_no_wrong_type_through(fluss_server, unique_name):
    schema = pa.schema([("p", pa.int32()), ("v", pa.string())])
    conn = await connect(fluss_server.bootstrap_servers)
    admin = conn.get_admin()
    path = fluss.TablePath("fluss", unique_name())
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema), partition_keys=["p"],
                                                         bucket_count=1))
    await admin.create_partition(path, {"p": "1"})
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    await w.append({"p": 1, "v": "a"}).wait()  # warms the cache for int 1
    with pytest.raises(fluss.FlussError):
        w.append({"p": True, "v": "b"})  # True == 1, but is no INT partition value
    with pytest.raises(fluss.FlussError):
        w.append({"p": 1.0, "v": "c"})
    await w.flush()
    parts = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(path)}
    assert [r["v"] for r in await read_bucket(t, 0, parts["1"])] == ["a"]
    await conn.close()


async def test_bucket_key_and_partition_together(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    admin = conn.get_admin()
    path = fluss.TablePath("fluss", unique_name())
    await admin.create_table(path, fluss.TableDescriptor(
        fluss.Schema(SCHEMA), partition_keys=["region"], bucket_count=4, bucket_keys=["id"]))
    for r in ("eu", "us"):
        await admin.create_partition(path, {"region": r})
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    for i in range(400):
        w.append((i, "eu" if i % 2 else "us", i, "z"))
    await w.flush()
    parts = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(path)}
    enc = RowKeyEncoder(t.get_table_info().descriptor.schema, [0])
    seen = 0
    for reg in ("eu", "us"):
        for bucket in range(4):
            rows = await read_bucket(t, bucket, parts[reg])
            seen += len(rows)
            for r in rows:
                assert r["region"] == reg and (r["id"] % 2 == 1) == (reg == "eu")
                assert murmur.bucket_for_key(enc.encode([r["id"]]), 4) == bucket
    assert seen == 400
    await conn.close()
