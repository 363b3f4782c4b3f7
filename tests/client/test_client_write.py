"""AppendWriter against the embedded server (real sockets): placement, batching, buffer limits,
retries, idempotence, partitions, formats, bad input and failure paths."""
from __future__ import annotations

import asyncio
import datetime as dt
import time

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast.client.runtime import get_runtime
from fluss_fast.client.write.accumulator import BatchSizeEstimator
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.log.arrowlog import ArrowLogCodec
from fluss_fast.codec.log.indexedlog import decode_row_log_batch
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api

from client_util import any_tablet_request, connect, fetch_records, leader_request, run_threads

pytestmark = pytest.mark.timeout(90)

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())])


async def make_table(conn, name, schema=SCHEMA, **kw):
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(schema), **kw))
    return path, await conn.get_table(path)


async def offsets(conn, path, buckets, partition=None):
    adm = conn.get_admin()
    if partition is None:
        return await adm.list_offsets(path, list(range(buckets)), fluss.OffsetSpec.latest())
    return await adm.list_partition_offsets(path, partition, list(range(buckets)), fluss.OffsetSpec.latest())


async def fetch_raw(table, bucket, partition_id=None):
    """Every batch of one bucket as stored on the server: [(BatchHeader, bytes)]."""
    buf = await fetch_records(table, bucket, partition_id)
    return [(h, buf) for h in logbatch.iter_batches(buf)]


async def read_arrow(table, bucket, partition_id=None) -> pa.Table:
    codec = ArrowLogCodec(table.get_table_info().descriptor.schema)
    out = []
    for h, raw in await fetch_raw(table, bucket, partition_id):
        rb, _ = codec.decode(raw, h)
        out.append(rb)
    return pa.Table.from_batches(out, schema=codec.arrow_schema)


async def read_all(table, buckets, partition_id=None) -> pa.Table:
    parts = [await read_arrow(table, b, partition_id) for b in range(buckets)]
    return pa.concat_tables(parts)


# -- basic writes ------------------------------------------------------------------------------------
async def test_append_dict_list_tuple_and_wait(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    h1 = w.append({"id": 1, "name": "a", "score": 1.5})
    h2 = w.append([2, "b", 2.5])
    h3 = w.append((3, None, None))
    h4 = w.append({"id": 4})  # omitted nullable columns are null
    await h4.wait()
    for h in (h1, h2, h3):
        await h.wait()
        assert h.done
    await w.flush()
    got = await read_all(t, 1)
    assert got.to_pylist() == [
        {"id": 1, "name": "a", "score": 1.5}, {"id": 2, "name": "b", "score": 2.5},
        {"id": 3, "name": None, "score": None}, {"id": 4, "name": None, "score": None}]
    assert (await offsets(conn, path, 1)) == {0: 4}
    await conn.close()


async def test_write_arrow_table_batch_and_pandas(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await make_table(conn, unique_name(), bucket_count=2)
    w = t.new_append().create_writer()
    rb = pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["x", "y"]), pa.array([0.5, 1.5])],
                         schema=SCHEMA)
    h = w.write_arrow_batch(rb)
    w.write_arrow(pa.Table.from_batches([rb, rb]))
    import pandas as pd
    w.write_pandas(pd.DataFrame({"id": [7], "name": ["p"], "score": [7.5]}))
    await h.wait()
    await w.flush()
    got = await read_all(t, 2)
    assert sorted(got.column("id").to_pylist()) == [1, 1, 1, 2, 2, 2, 7]
    # columns are matched by name: unknown names are refused, never stored by position
    other = pa.record_batch([pa.array([9], pa.int32()), pa.array(["z"]), pa.array([9.0])],
                            names=["a", "b", "c"])
    with pytest.raises(fluss.FlussError, match="missing column"):
        w.write_arrow_batch(other)
    await conn.close()


async def test_wrong_arrow_type_is_worded_as_pyfluss_words_it(fluss_server, unique_name):
    # pyfluss: "Column 'ts' has Arrow type Timestamp(µs) but the table declares Timestamp(ms)";
    # its suite (test_arrow_schema_matches_write_arrow_batch) matches "but the table declares".
    conn = await connect(fluss_server.bootstrap_servers)
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("ts", pa.timestamp("ms"))])
    path, t = await make_table(conn, unique_name(), schema=schema)
    w = t.new_append().create_writer()
    other = pa.record_batch([pa.array([2], pa.int32()), pa.array([1700000000001000], pa.timestamp("us"))],
                            names=["id", "ts"])
    with pytest.raises(fluss.FlussError, match=r"Column 'ts' .*has Arrow type timestamp\[us\] but the table "
                                               r"declares timestamp\[ms\]"):
        w.write_arrow_batch(other)
    w.write_arrow_batch(other.cast(t.arrow_schema))
    await w.flush()
    assert (await read_all(t, 1)).column("id").to_pylist() == [2]
    await conn.close()


async def test_async_with_flushes(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"writer.batch-timeout-ms": "60000"})
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    async with t.new_append().create_writer() as w:
        for i in range(10):
            w.append([i, "n", 0.0])
    # linger is a minute: only the flush on exit can have sent these
    assert (await offsets(conn, path, 1)) == {0: 10}
    await conn.close()


async def test_flush_waits_for_lingering_batches(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"writer.batch-timeout-ms": "60000"})
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    w.append([1, "a", 1.0])
    await asyncio.sleep(0.3)
    assert (await offsets(conn, path, 1)) == {0: 0}
    t0 = time.monotonic()
    await w.flush()
    assert time.monotonic() - t0 < 5
    assert (await offsets(conn, path, 1)) == {0: 1}
    await conn.close()


# -- bad input -----------------------------------------------------------------------------------------
async def test_bad_rows_raise_and_writer_stays_usable(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("small", pa.int8()),
                        ("name", pa.string())])
    path, t = await make_table(conn, unique_name(), schema=schema, bucket_count=1)
    w = t.new_append().create_writer()
    with pytest.raises(fluss.FlussError) as e:
        w.append({"small": 1})  # missing NOT NULL column
    assert "id" in str(e.value) and e.value.error_code == -2
    with pytest.raises(fluss.FlussError) as e:
        w.append({"id": 1, "nope": 2})
    assert "nope" in str(e.value)
    with pytest.raises(fluss.FlussError) as e:
        w.append({"id": "one"})
    assert "id" in str(e.value)
    with pytest.raises(fluss.FlussError) as e:
        w.append({"id": 1, "small": 300})
    assert "small" in str(e.value) and "300" in str(e.value)
    with pytest.raises(fluss.FlussError):
        w.append([1, 2])  # wrong arity
    with pytest.raises(fluss.FlussError):
        w.append(42)
    with pytest.raises(fluss.FlussError) as e:
        w.write_arrow_batch(pa.record_batch({"id": pa.array(["x"]), "small": pa.array([1], pa.int8()),
                                             "name": pa.array(["n"])}))
    assert "id" in str(e.value)
    with pytest.raises(fluss.FlussError) as e:
        w.write_arrow_batch(pa.record_batch({"id": pa.array([1], pa.int32())}))
    assert "columns" in str(e.value)
    w.append({"id": 5, "small": 127, "name": "ok"})
    await w.flush()  # no error left behind by the rejected rows
    got = await read_all(t, 1)
    assert got.to_pylist() == [{"id": 5, "small": 127, "name": "ok"}]
    await conn.close()


async def test_unknown_table(fluss_server):
    conn = await connect(fluss_server.bootstrap_servers)
    with pytest.raises(fluss.FlussError) as e:
        await conn.get_table(fluss.TablePath("fluss", "no_such_table_here"))
    assert e.value.error_code == 7
    await conn.close()


async def test_write_after_close(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    w.append([1, "a", 1.0])
    await w.close()
    assert (await offsets(conn, path, 1)) == {0: 1}
    with pytest.raises(fluss.FlussError) as e:
        w.append([2, "b", 2.0])
    assert "closed" in str(e.value)
    w2 = t.new_append().create_writer()
    await conn.close()
    with pytest.raises(fluss.FlussError) as e:
        w2.append([2, "b", 2.0])
    assert "closed" in str(e.value)
    with pytest.raises(fluss.FlussError):
        w2.write_arrow_batch(pa.record_batch([pa.array([1], pa.int32()), pa.array(["a"]),
                                              pa.array([1.0])], schema=SCHEMA))


async def test_config_checks(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"writer.acks": "1"})
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    with pytest.raises(fluss.FlussError) as e:
        t.new_append().create_writer()  # idempotence needs acks=all
    assert "acks" in str(e.value)
    await conn.close()
    for acks in ("0", "1"):
        conn = await connect(fluss_server.bootstrap_servers,
                             {"writer.acks": acks, "writer.enable-idempotence": "false"})
        t = await conn.get_table(path)
        w = t.new_append().create_writer()
        await w.append([1, "a", 1.0]).wait()
        await conn.close()
    conn = await connect(fluss_server.bootstrap_servers)
    assert (await offsets(conn, path, 1)) == {0: 2}
    await conn.close()


async def test_primary_key_builders(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])
    path = fluss.TablePath("fluss", unique_name())
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(schema, primary_keys=["id"]), bucket_count=1))
    t = await conn.get_table(path)
    assert t.has_primary_key()
    assert repr(t.new_upsert().create_writer()) == "UpsertWriter()"
    assert repr(t.new_upsert().partial_update_by_name(["id", "v"]).create_writer()) == "UpsertWriter()"
    assert repr(t.new_lookup().create_lookuper()) == "Lookuper()"
    # the bucket key is the whole primary key: a prefix lookup would be a point lookup
    with pytest.raises(fluss.FlussError, match="prefix lookup") as e:
        t.new_lookup().lookup_by(["id"]).create_lookuper()
    assert e.value.error_code == -2
    with pytest.raises(fluss.FlussError):
        t.new_append().create_writer()
    assert t.get_table_path() == path
    assert t.get_table_info().table_id == (await conn.get_admin().get_table_info(path)).table_id
    assert t.arrow_schema.names == ["id", "v"]
    await conn.close()


# -- bucket placement ------------------------------------------------------------------------------------
async def test_bucket_key_lands_in_javas_bucket(fluss_server, unique_name):
    # docs/contributing/formats.md §6.5 (computed against Java): with 8 buckets INT 1 -> 4, INT 300 -> 5, INT -1 -> 2.
    # INT 300 is the case where the Rust client's zero-extension bug picks bucket 3.
    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await make_table(conn, unique_name(), bucket_count=8, bucket_keys=["id"])
    w = t.new_append().create_writer()
    w.append({"id": 1, "name": "a"})
    w.append({"id": 300, "name": "b"})
    w.append([-1, "c", None])
    await w.flush()
    assert (await offsets(conn, path, 8)) == {0: 0, 1: 0, 2: 1, 3: 0, 4: 1, 5: 1, 6: 0, 7: 0}
    # the Arrow path splits one batch over the same buckets
    w.write_arrow_batch(pa.record_batch([pa.array([300, 1, -1, 300], pa.int32()),
                                         pa.array(["d", "e", "f", "g"]), pa.array([None] * 4, pa.float64())],
                                        schema=SCHEMA))
    await w.flush()
    assert (await offsets(conn, path, 8)) == {0: 0, 1: 0, 2: 2, 3: 0, 4: 2, 5: 3, 6: 0, 7: 0}
    assert (await read_arrow(t, 5)).column("name").to_pylist() == ["b", "d", "g"]
    await conn.close()


async def test_round_robin_assigner(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"writer.bucket.no-key-assigner": "round_robin"})
    path, t = await make_table(conn, unique_name(), bucket_count=3)
    w = t.new_append().create_writer()
    for i in range(30):
        w.append([i, "r", 0.0])
    await w.flush()
    assert (await offsets(conn, path, 3)) == {0: 10, 1: 10, 2: 10}
    await conn.close()


async def test_sticky_assigner_fills_one_bucket_then_moves(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers,
                         {"writer.batch-size": "4096", "writer.dynamic-batch-size.enabled": "false"})
    path, t = await make_table(conn, unique_name(), bucket_count=4)
    w = t.new_append().create_writer()
    for i in range(10):
        w.append([i, "s", 0.0])
    await w.flush()
    offs = await offsets(conn, path, 4)
    assert sorted(offs.values()) == [0, 0, 0, 10]  # small writes stay together
    for i in range(3000):
        w.append([i, "s" * 20, 0.0])
    await w.flush()
    offs = await offsets(conn, path, 4)
    assert sum(offs.values()) == 3010
    assert sum(1 for v in offs.values() if v > 0) >= 3  # full batches moved the sticky bucket
    await conn.close()


async def test_sticky_assigner_spreads_a_bulk_write_evenly(fluss_server, unique_name):
    # ~47 full batches over 3 buckets: a random next bucket (the Java client's rule) leaves them
    # ~15-25 % apart; moving to the bucket with the fewest full batches leaves one batch at most
    conn = await connect(fluss_server.bootstrap_servers,
                         {"writer.batch-size": "16384", "writer.dynamic-batch-size.enabled": "false"})
    path, t = await make_table(conn, unique_name(), bucket_count=3)
    w = t.new_append().create_writer()
    n = 24_000
    w.write_arrow(pa.table({"id": pa.array(range(n), pa.int32()), "name": ["x" * 16] * n,
                            "score": pa.array([0.5] * n)}))
    await w.flush()
    counts = sorted((await offsets(conn, path, 3)).values())
    assert sum(counts) == n
    biggest = max([h.record_count for b in range(3) for h, _ in await fetch_raw(t, b)])
    assert counts[-1] - counts[0] <= biggest, (counts, biggest)
    assert n // biggest >= 30, biggest  # enough batches for chance alone to spread them unevenly
    await conn.close()


async def test_two_tablet_servers_route_to_leaders(start_server, unique_name):
    srv = start_server(tablet_servers=2, sasl=False)
    conn = await connect(srv.bootstrap_servers, {"writer.bucket.no-key-assigner": "round_robin"})
    path, t = await make_table(conn, unique_name(), bucket_count=4)
    leaders = {n.id for n in t.bucket_leaders().values()}
    assert len(leaders) == 2
    w = t.new_append().create_writer()
    one_row_batches = pa.table([pa.array(range(8), pa.int32()), pa.array(["x"] * 8),
                                pa.array([0.0] * 8)], schema=SCHEMA).to_batches(max_chunksize=1)
    w.write_arrow(pa.Table.from_batches(one_row_batches))
    for i in range(8):
        w.append([i, "y", 1.0])
    await w.flush()
    assert (await offsets(conn, path, 4)) == {0: 4, 1: 4, 2: 4, 3: 4}
    await conn.close()


# -- partitions ------------------------------------------------------------------------------------------
PSCHEMA = pa.schema([("id", pa.int32()), ("region", pa.string()), ("v", pa.string())])


async def make_partitioned(conn, name, regions, buckets=2):
    path = fluss.TablePath("fluss", name)
    adm = conn.get_admin()
    await adm.create_table(path, fluss.TableDescriptor(fluss.Schema(PSCHEMA), partition_keys=["region"],
                                                       bucket_count=buckets))
    for r in regions:
        await adm.create_partition(path, {"region": r})
    return path, await conn.get_table(path)


async def test_partitioned_rows_and_mixed_arrow_batch(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"writer.bucket.no-key-assigner": "round_robin"})
    path, t = await make_partitioned(conn, unique_name(), ["eu", "us"])
    w = t.new_append().create_writer()
    w.append({"id": 1, "region": "eu", "v": "a"})
    w.append([2, "us", "b"])
    rb = pa.record_batch([pa.array([3, 4, 5, 6], pa.int32()), pa.array(["us", "eu", "us", "us"]),
                          pa.array(["c", "d", "e", "f"])], schema=PSCHEMA)
    h = w.write_arrow_batch(rb)
    await h.wait()
    await w.flush()
    eu = await offsets(conn, path, 2, "eu")
    us = await offsets(conn, path, 2, "us")
    assert sum(eu.values()) == 2 and sum(us.values()) == 4
    parts = {p.partition_name: p.partition_id for p in await conn.get_admin().list_partition_infos(path)}
    got_us = await read_all(t, 2, parts["us"])
    assert sorted(got_us.column("id").to_pylist()) == [2, 3, 5, 6]
    assert set(got_us.column("region").to_pylist()) == {"us"}
    got_eu = await read_all(t, 2, parts["eu"])
    assert sorted(got_eu.column("id").to_pylist()) == [1, 4]
    await conn.close()


async def test_missing_partition_fails_clearly(fluss_server, unique_name):
    # with dynamic partition creation off (on by default, as in Java)
    conn = await connect(fluss_server.bootstrap_servers, {"writer.dynamic-create-partition.enabled": "false"})
    path, t = await make_partitioned(conn, unique_name(), ["eu"])
    w = t.new_append().create_writer()
    with pytest.raises(fluss.FlussError) as e:
        w.append({"id": 1, "region": "mars", "v": "x"})
    assert e.value.error_code == 36 and "mars" in str(e.value)
    rb = pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["eu", "venus"]), pa.array(["a", "b"])],
                         schema=PSCHEMA)
    with pytest.raises(fluss.FlussError) as e:
        w.write_arrow_batch(rb)
    assert e.value.error_code == 36 and "venus" in str(e.value)
    with pytest.raises(fluss.FlussError) as e:
        w.append({"id": 1, "region": None, "v": "x"})
    assert "region" in str(e.value)
    # a partition created after the writer is found through a metadata lookup
    await conn.get_admin().create_partition(path, {"region": "mars"})
    await w.append({"id": 1, "region": "mars", "v": "x"}).wait()
    assert sum((await offsets(conn, path, 2, "eu")).values()) == 0  # nothing of the failed batch
    await conn.close()


# -- formats ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["INDEXED", "COMPACTED"])
async def test_row_log_formats(fluss_server, unique_name, fmt):
    conn = await connect(fluss_server.bootstrap_servers)
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("ts", pa.timestamp("us")),
                        ("tags", pa.list_(pa.string()))])
    path = fluss.TablePath("fluss", unique_name())
    # pyfluss's TableDescriptor only spells ARROW/INDEXED; COMPACTED goes in as a property
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(schema), bucket_count=1, properties={"table.log.format": fmt}))
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    ts = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    w.append({"id": 1, "name": "a", "ts": ts, "tags": ["x", "y"]})
    w.write_arrow_batch(pa.record_batch([pa.array([2], pa.int32()), pa.array([None], pa.string()),
                                         pa.array([ts], pa.timestamp("us")), pa.array([[]], pa.list_(pa.string()))],
                                        schema=schema))
    await w.flush()
    rows = []
    for h, raw in await fetch_raw(t, 0):
        rows.extend(v for _, v in decode_row_log_batch(raw, h, t.get_table_info().descriptor.schema.types, fmt))
    assert rows == [[1, "a", ts, ["x", "y"]], [2, None, ts, []]]
    await conn.close()


# -- batching, buffer, in-flight ---------------------------------------------------------------------------
def test_dynamic_batch_size_estimator_grows_and_shrinks():
    est = BatchSizeEstimator(True, 1000, 300)
    assert est.target("p") == 1000
    est.observe("p", 100)   # < 50%: shrink 5%
    assert est.target("p") == 950
    for _ in range(100):
        est.observe("p", 0)
    assert est.target("p") == 300  # clamped at the minimum
    est.observe("p", 290)   # > 80%: grow 10%
    assert est.target("p") == 330
    est.observe("p", 200)   # between: unchanged
    assert est.target("p") == 330
    assert est.target("other") == 1000  # per partition
    off = BatchSizeEstimator(False, 1000, 300)
    off.observe("p", 0)
    assert off.target("p") == 1000


@pytest.mark.parametrize("dynamic", [True, False])
async def test_dynamic_batch_size_shrinks_for_small_batches(fluss_server, unique_name, dynamic):
    conn = await connect(fluss_server.bootstrap_servers, {
        "writer.batch-timeout-ms": "1", "writer.dynamic-batch-size.enabled": str(dynamic).lower()})
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    for i in range(20):
        await w.append([i, "x", 0.0]).wait()
    # 20 one-row batches shrank the target below the 2 MiB batch size (to ~0.95 ** 20 of it): a
    # 1.4 MB table, one batch at the full size, is now cut into several
    n = 12_000
    w.write_arrow(pa.table([pa.array(range(n), pa.int32()), pa.array(["y" * 100] * n), pa.array([0.0] * n)],
                           schema=SCHEMA))
    await w.flush()
    big = [h.record_count for h, _ in await fetch_raw(t, 0)][20:]
    assert sum(big) == n
    assert (len(big) > 1) is dynamic, big
    await conn.close()


async def test_request_max_size_and_many_batches(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {
        "writer.batch-size": "8192", "writer.request-max-size": "20000",
        "writer.dynamic-batch-size.enabled": "false", "writer.bucket.no-key-assigner": "round_robin"})
    path, t = await make_table(conn, unique_name(), bucket_count=4)
    w = t.new_append().create_writer()
    n = 20000
    w.write_arrow(pa.table([pa.array(range(n), pa.int32()), pa.array(["v" * 10] * n),
                            pa.array([1.0] * n)], schema=SCHEMA))
    await w.flush()
    assert sum((await offsets(conn, path, 4)).values()) == n
    # 20000 rows * ~26 bytes in 8 KiB batches, at most two batches per request
    assert conn.metrics()["writer"][str(path)]["requestsTotal"] >= 25
    got = await read_all(t, 4)
    assert sorted(got.column("id").to_pylist()) == list(range(n))
    await conn.close()


async def test_append_from_many_threads(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"writer.batch-size": "16384"})
    path, t = await make_table(conn, unique_name(), bucket_count=3)
    w = t.new_append().create_writer()

    def work(k):
        for i in range(2000):
            w.append([k * 10000 + i, "t", float(i)])

    assert not run_threads(work, 4)
    await w.flush()
    got = await read_all(t, 3)
    assert sorted(got.column("id").to_pylist()) == sorted(k * 10000 + i for k in range(4) for i in range(2000))
    await conn.close()


async def test_full_buffer_inside_event_loop_does_not_deadlock(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {
        "writer.buffer.memory-size": "65536", "writer.batch-size": "16384"})
    path, t = await make_table(conn, unique_name(), bucket_count=2)
    w = t.new_append().create_writer()
    for i in range(20000):  # ~1 MB through a 64 KiB buffer, never awaiting in between
        w.append([i, "x" * 30, 0.0])
        assert w._acc.used <= 65536 + 4096
    await w.flush()
    assert sum((await offsets(conn, path, 2)).values()) == 20000
    await conn.close()


async def test_buffer_full_times_out(start_server, unique_name):
    srv = start_server(sasl=False)
    conn = await connect(srv.bootstrap_servers, {
        "writer.buffer.memory-size": "32768", "writer.batch-size": "8192",
        "writer.buffer.wait-timeout-ms": "500", "request-timeout": "20000"})
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    await w.append([0, "warm", 0.0]).wait()
    srv.proc.send_signal(19)  # SIGSTOP: requests go out, acknowledgements never come back
    try:
        t0 = time.monotonic()
        with pytest.raises(fluss.FlussError) as e:
            for i in range(100000):
                w.append([i, "x" * 50, 0.0])
        waited = time.monotonic() - t0
        assert "writer.buffer.wait-timeout-ms" in str(e.value)
        assert 0.4 < waited < 10
        assert w._acc.used <= 32768 + 4096
    finally:
        srv.proc.send_signal(18)  # SIGCONT
    await w.flush()  # everything that was accepted still arrives
    assert (await offsets(conn, path, 1))[0] == 1 + i
    await conn.close()


# -- failures --------------------------------------------------------------------------------------------
async def test_server_killed_mid_write_reaches_flush(start_server, unique_name):
    srv = start_server(sasl=False)
    conn = await connect(srv.bootstrap_servers, {"request-timeout": "2000"})
    path, t = await make_table(conn, unique_name(), bucket_count=2)
    w = t.new_append().create_writer()
    await w.append([0, "a", 0.0]).wait()
    handles = [w.append([i, "x", 0.0]) for i in range(1000)]
    srv.kill()
    handles += [w.append([i, "y", 0.0]) for i in range(1000)]
    t0 = time.monotonic()
    with pytest.raises(fluss.FlussError) as e:
        await w.flush()
    assert time.monotonic() - t0 < 15
    assert e.value.error_code != 0
    with pytest.raises(fluss.FlussError):
        await handles[-1].wait()
    # the error was reported once; the next flush has nothing new to report
    await w.flush()
    await conn.close()


async def test_dropped_table_error_reaches_handle_and_flush(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers, {"request-timeout": "1500"})
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    await w.append([1, "a", 1.0]).wait()
    await conn.get_admin().drop_table(path)
    h = w.append([2, "b", 2.0])
    with pytest.raises(fluss.FlussError) as e:
        await h.wait()
    assert path.table_name in str(e.value)
    with pytest.raises(fluss.FlussError):
        await w.flush()
    await w.flush()
    await conn.close()


async def test_connection_close_delivers_pending_writes(fluss_server, unique_name):
    # pyfluss's close drains the writers first; rows appended without a flush are not lost
    conn = await connect(fluss_server.bootstrap_servers, {"writer.batch-timeout-ms": "60000"})
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    h = w.append([1, "a", 1.0])
    await asyncio.wait_for(conn.close(), 10)
    await asyncio.wait_for(h.wait(), 10)
    with pytest.raises(fluss.FlussError, match="closed"):
        w.append([2, "b", 2.0])


# -- idempotence -----------------------------------------------------------------------------------------
async def test_idempotent_sequences_per_bucket(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    for i in range(3):
        w.append([i, "a", 0.0])
        await w.flush()
    stored = await fetch_raw(t, 0)
    assert [h.batch_sequence for h, _ in stored] == [0, 1, 2]
    assert len({h.writer_id for h, _ in stored}) == 1 and stored[0][0].writer_id >= 0
    await conn.close()
    conn = await connect(fluss_server.bootstrap_servers, {"writer.enable-idempotence": "false"})
    t = await conn.get_table(path)
    w = t.new_append().create_writer()
    await w.append([9, "n", 0.0]).wait()
    h, _ = (await fetch_raw(t, 0))[-1]
    assert (h.writer_id, h.batch_sequence) == (-1, -1)
    await conn.close()


async def test_resent_batch_is_not_duplicated(fluss_server, unique_name):
    """A retry re-sends the same bytes (same writer id and sequence); the server must answer with
    the original offsets and append nothing."""
    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    info = t.get_table_info()
    codec = ArrowLogCodec(info.descriptor.schema)

    async def go():
        init = pb.InitWriterRequest()
        init.table_path.add(database_name=path.database_name, table_name=path.table_name)
        writer_id = (await any_tablet_request(conn, Api.INIT_WRITER, init)).writer_id
        rb = pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["a", "b"]), pa.array([1.0, 2.0])],
                             schema=SCHEMA)
        out = []
        for seq in (0, 0, 1, 1):
            records = codec.build(rb, schema_id=info.schema_id, writer_id=writer_id, batch_sequence=seq)
            req = pb.ProduceLogRequest(acks=-1, table_id=info.table_id, timeout_ms=5000)
            r = req.buckets_req.add()
            r.bucket_id = 0
            r.records = records
            resp = await leader_request(t, 0, Api.PRODUCE_LOG, req)
            br = resp.buckets_resp[0]
            out.append((br.error_code if br.HasField("error_code") else 0,
                        br.base_offset if br.HasField("base_offset") else None))
        return out

    results = await go()
    assert results[0] == (0, 0)
    assert results[1][0] in (0, 32) and results[1][1] in (0, None)
    assert results[2] == (0, 2)
    assert results[3][0] in (0, 32)
    assert (await offsets(conn, path, 1)) == {0: 4}
    # and the writer's own settle rule: a 32 completes the batch as a success
    w = t.new_append().create_writer()
    await w.append([3, "c", 3.0]).wait()
    assert (await offsets(conn, path, 1)) == {0: 5}
    await conn.close()


async def test_server_restart_between_writes(start_server, unique_name):
    """After a restart the server may have forgotten the writer (31/33): the writer starts over
    with a new writer id and nothing is lost or duplicated."""
    srv = start_server(sasl=False)
    conn = await connect(srv.bootstrap_servers, {"request-timeout": "20000"})
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    for i in range(3):
        w.append([i, "before", 0.0])
        await w.flush()
    old_writer = (await fetch_raw(t, 0))[0][0].writer_id
    srv.restart()
    for i in range(3, 6):
        w.append([i, "after", 0.0])
        await w.flush()
    got = await read_all(t, 1)
    assert got.column("id").to_pylist() == list(range(6))
    stored = await fetch_raw(t, 0)
    after = [h for h, _ in stored][3:]
    # either the server rebuilt the writer's state from its log and the sequence just continues,
    # or it forgot it and the writer started over under a new id at sequence 0
    if after[0].writer_id == old_writer:
        assert [h.batch_sequence for h in after] == [3, 4, 5]
    else:
        assert [h.batch_sequence for h in after] == [0, 1, 2]
    await conn.close()


async def test_writer_state_unknown_to_server_resets_writer(fluss_server, unique_name):
    """Simulate a server that lost our writer (as after a failover): the client's sequence state
    points at a writer id the server never issued, so the server answers 31/33; the writer must
    reset (new INIT_WRITER, sequences from 0) and deliver the batch exactly once."""
    conn = await connect(fluss_server.bootstrap_servers)
    path, t = await make_table(conn, unique_name(), bucket_count=1)
    w = t.new_append().create_writer()
    await w.append([1, "a", 1.0]).wait()
    real = (await fetch_raw(t, 0))[-1][0].writer_id

    def corrupt():
        w._idem.set_writer_id(real + 1_000_000)
        e = w._idem._entry((None, 0))
        e.next_seq, e.last_acked = 7, 6

    runtime = get_runtime()
    await runtime.run(asyncio.sleep(0))  # state is touched on the runtime thread only
    runtime.call_soon(corrupt)
    await asyncio.sleep(0.05)
    await w.append([2, "b", 2.0]).wait()
    await w.flush()
    got = await read_all(t, 1)
    assert got.column("id").to_pylist() == [1, 2]
    # a new INIT_WRITER: a writer id neither the old one nor the corrupted one, from sequence 0
    h = (await fetch_raw(t, 0))[-1][0]
    assert h.writer_id not in (real, real + 1_000_000) and h.batch_sequence == 0
    await conn.close()
