"""Filter push-down on the embedded server (server/fetch_filter.py): batches whose statistics rule
a fetch's predicate out are not sent, batches without statistics always are, filtered_end_offset
moves the reader past skipped batches, projection and garbage statistics blocks."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

import fluss_fast as ff
from fluss_fast import col
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.log.arrowlog import ArrowLogCodec
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api

from client_util import leader_request

pytestmark = pytest.mark.timeout(90)

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])
STATS = {"table.statistics.columns": "*"}


async def _table(conn, db, name, properties=None):
    path = ff.TablePath(db, name)
    await conn.get_admin().create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=1,
                                                                 properties=properties or {}))
    return await conn.get_table(path)


def _batch(lo, n=100):
    ids = list(range(lo, lo + n))
    return pa.record_batch([pa.array(ids, pa.int32()), pa.array([f"v{i}" for i in ids])], schema=SCHEMA)


async def _write_five(t):
    """Five batches of 100 rows: ids 0-99, 100-199, ... 400-499 (a flush each: a table without
    statistics would merge them into one batch)."""
    w = t.new_append().create_writer()
    for k in range(5):
        w.write_arrow_batch(_batch(100 * k))
        await w.flush()


async def _scan(scan, n):
    sc = await scan.create_log_scanner()
    sc.subscribe(0, ff.EARLIEST_OFFSET)
    got = []
    deadline = time.monotonic() + 20
    while len(got) < n and time.monotonic() < deadline:
        got.extend(await sc.poll(200))
    await sc.poll(200)  # nothing more comes
    return sorted(r.row["id"] for r in got), sc.records_fetched


def _ge(field_id, value):
    p = pb.PbPredicate(type=0)
    p.leaf.function = 5  # GREATER_OR_EQUAL
    p.leaf.field_id = field_id
    p.leaf.literals.add(literal_type=3, is_null=False, int_value=value)
    return p


async def _fetch(t, offset=0, predicate=None, projection=None):
    """One raw FetchLog of bucket 0: (bucket response, [BatchHeader])."""
    info = t.get_table_info()
    req = pb.FetchLogRequest(follower_server_id=-1, max_bytes=8 << 20)
    tr = req.tables_req.add(table_id=info.table_id, projection_pushdown_enabled=projection is not None)
    if projection is not None:
        tr.projected_fields.extend(projection)
    if predicate is not None:
        tr.filter_predicate.CopyFrom(predicate)
        tr.filter_schema_id = info.schema_id
    tr.buckets_req.add(bucket_id=0, fetch_offset=offset, max_fetch_bytes=8 << 20)
    resp = await leader_request(t, 0, Api.FETCH_LOG, req)
    b = resp.tables_resp[0].buckets_resp[0]
    assert not b.error_code, b.error_message
    return b, list(logbatch.iter_batches(bytes(b.records)))


async def test_batches_that_cannot_match_are_not_sent(conn, db):
    t = await _table(conn, db, "prune", STATS)
    await _write_five(t)
    _, stored = await _fetch(t)
    assert [h.magic for h in stored] == [1] * 5 and all(h.statistics_length > 0 for h in stored)
    ids, fetched = await _scan(t.new_scan().filter(col("id") >= 420), 100)
    assert ids == list(range(400, 500)) and fetched == 100  # whole batch, the other four pruned
    ids, fetched = await _scan(t.new_scan().where(col("id") >= 420), 80)
    assert ids == list(range(420, 500)) and fetched == 100
    ids, fetched = await _scan(t.new_scan().filter((col("id") < 50) | (col("id") >= 300)), 300)
    assert ids == list(range(100)) + list(range(300, 500)) and fetched == 300


async def test_filtered_end_offset(conn, db):
    t = await _table(conn, db, "fend", STATS)
    await _write_five(t)
    # everything skipped: no records, and the offset after the last batch looked at
    b, got = await _fetch(t, predicate=_ge(0, 10_000))
    assert got == [] and b.filtered_end_offset == 500
    # the batches after the last one sent were skipped: resume past them
    lt = pb.PbPredicate(type=0)
    lt.leaf.function = 2  # LESS_THAN
    lt.leaf.field_id = 0
    lt.leaf.literals.add(literal_type=3, is_null=False, int_value=150)
    b, got = await _fetch(t, predicate=lt)
    assert [h.base_offset for h in got] == [0, 100] and b.filtered_end_offset == 500
    # the last batch sent ends the log: nothing to skip
    b, got = await _fetch(t, offset=250, predicate=_ge(0, 200))
    assert [h.base_offset for h in got] == [200, 300, 400] and not b.HasField("filtered_end_offset")
    # no predicate, no field
    b, got = await _fetch(t)
    assert len(got) == 5 and not b.HasField("filtered_end_offset")


async def test_a_column_without_statistics_prunes_nothing(conn, db):
    t = await _table(conn, db, "nostatscol", {"table.statistics.columns": "name"})
    await _write_five(t)
    ids, fetched = await _scan(t.new_scan().filter(col("id") >= 420), 500)
    assert fetched == 500 and len(ids) == 500
    ids, fetched = await _scan(t.new_scan().filter(col("name") == "zzz"), 0)
    assert fetched == 0 and ids == []  # "zzz" above every name's max


async def test_a_table_without_statistics_prunes_nothing(conn, db):
    t = await _table(conn, db, "v0")
    await _write_five(t)
    _, stored = await _fetch(t)
    assert [h.magic for h in stored] == [0] * 5
    ids, fetched = await _scan(t.new_scan().filter(col("id") >= 420), 500)
    assert fetched == 500
    ids, fetched = await _scan(t.new_scan().where(col("id") >= 420), 80)
    assert ids == list(range(420, 500)) and fetched == 500


async def test_projection_and_filter(conn, db):
    t = await _table(conn, db, "proj", STATS)
    await _write_five(t)
    b, got = await _fetch(t, predicate=_ge(0, 420), projection=[1])
    assert [h.base_offset for h in got] == [400]
    assert got[0].magic == 1 and got[0].statistics_length == 0  # projection drops the statistics
    sc = await t.new_scan().project_by_name(["name"]).filter(col("id") >= 420).create_record_batch_log_scanner()
    sc.subscribe(0, ff.EARLIEST_OFFSET)
    tab = await sc.to_arrow()
    assert tab.column_names == ["name"] and tab.num_rows == 100
    assert tab.column("name").to_pylist() == [f"v{i}" for i in range(400, 500)]
    # all skipped under a projection: still told where to resume
    b, got = await _fetch(t, predicate=_ge(0, 10_000), projection=[1])
    assert got == [] and b.filtered_end_offset == 500


async def test_a_lying_statistics_block_is_sent_not_fatal(conn, db):
    t = await _table(conn, db, "garbage", STATS)
    info = t.get_table_info()
    rb = _batch(1000, 10)
    payload = ArrowLogCodec(info.descriptor.schema, "NONE").encode(rb)
    lying = b"\x01\x02\x00\x00\x00\x01\x00" + b"\x00" * 8 + b"\xff\xff\xff\x7f"  # min row "2 GiB"
    raw = logbatch.build_batch(payload, schema_id=info.schema_id, record_count=10, magic=1, statistics=lying)
    req = pb.ProduceLogRequest(acks=-1, table_id=info.table_id, timeout_ms=10_000)
    req.buckets_req.add(bucket_id=0, records=raw)
    resp = await leader_request(t, 0, Api.PRODUCE_LOG, req)
    assert not resp.buckets_resp[0].error_code, resp.buckets_resp[0].error_message
    w = t.new_append().create_writer()
    w.write_arrow_batch(_batch(0, 10))
    await w.flush()
    # the garbage batch cannot be judged: sent; the good one (ids 0-9) is pruned
    b, got = await _fetch(t, predicate=_ge(0, 500))
    assert [h.base_offset for h in got] == [0] and b.filtered_end_offset == 20
    ids, fetched = await _scan(t.new_scan().filter(col("id") >= 500), 10)
    assert ids == list(range(1000, 1010)) and fetched == 10


async def test_indexed_tables_are_never_filtered(conn, db):
    t = await _table(conn, db, "indexed", {"table.log.format": "INDEXED", **STATS})
    await _write_five(t)
    _, stored = await _fetch(t)
    assert [h.magic for h in stored] == [0] * 5  # Java's INDEXED writers are V0 only
    b, got = await _fetch(t, predicate=_ge(0, 10_000))
    assert len(got) == 5 and not b.HasField("filtered_end_offset")


async def test_each_arrow_write_of_a_statistics_table_is_its_own_batch(conn, db):
    # pyfluss sends every write_arrow_batch as a batch of its own; so does fluss_fast on a table
    # collecting statistics, so each write keeps its own min / max (merged they would span all)
    t = await _table(conn, db, "alone", STATS)
    w = t.new_append().create_writer()
    for k in range(3):
        w.write_arrow_batch(_batch(100 * k, 10))
    await w.flush()
    _, stored = await _fetch(t)
    assert [(h.base_offset, h.record_count) for h in stored] == [(0, 10), (10, 10), (20, 10)]
    ids, fetched = await _scan(t.new_scan().filter(col("id") >= 200), 10)
    assert ids == list(range(200, 210)) and fetched == 10


async def test_appended_rows_carry_statistics_too(conn, db):
    t = await _table(conn, db, "rows", {"table.statistics.columns": "id"})
    w = t.new_append().create_writer()
    for i in (5, 3, None, 9):
        w.append({"id": i, "name": "x"})
    await w.flush()
    _, stored = await _fetch(t)
    assert [(h.magic, h.record_count) for h in stored] == [(1, 4)]
    b, got = await _fetch(t, predicate=_ge(0, 10))
    assert got == [] and b.filtered_end_offset == 4
    b, got = await _fetch(t, predicate=_ge(0, 9))
    assert len(got) == 1
