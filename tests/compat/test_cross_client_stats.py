"""Batch statistics (table.statistics.columns): pyfluss 1.0.0 and fluss_fast write the same rows
into V1 batches with byte-identical statistics blocks, and each reads what the other wrote."""
from __future__ import annotations

import datetime as dt
import decimal

import fluss
import pyarrow as pa
import pytest

import fluss_fast as ff
from fluss_fast.codec.log import batchstats, logbatch

from client_util import fetch_records

pytestmark = pytest.mark.timeout(120)

UTC = dt.UTC

SCHEMA = pa.schema([
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("by", pa.binary()),
    ("d", pa.date32()), ("t", pa.time32("ms")), ("ts", pa.timestamp("us")), ("tsl", pa.timestamp("us", tz="UTC")),
    ("tsms", pa.timestamp("ms")), ("tsns", pa.timestamp("ns")), ("dec", pa.decimal128(10, 2)),
    ("dec2", pa.decimal128(28, 5)), ("allnull", pa.int32())])


def _rows(n, shift=0):
    out = []
    for k in range(shift, shift + n):
        out.append({
            "b": k % 3 == 0, "i8": k % 100 - 50, "i16": None if k % 4 == 1 else k * 7 - 300, "i32": k << 12,
            "i64": -(k << 37), "f32": float("nan") if k == 7 else k * 0.5 - 3, "f64": -0.0 if k % 2 else k / 3,
            "s": f"h\u00e9llo-{k}" if k % 3 else "", "by": bytes([k % 256]),
            "d": dt.date(1969, 12, 1) + dt.timedelta(days=k), "t": dt.time(13, 14, 15, (k * 1000) % 1_000_000),
            "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678901) - dt.timedelta(days=400 * k),
            "tsl": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC) + dt.timedelta(minutes=k),
            "tsms": dt.datetime(2020, 1, 1, 0, 0, 0, 123000) + dt.timedelta(milliseconds=k),
            "tsns": dt.datetime(2021, 5, 6, 7, 8, 9, 123457) + dt.timedelta(microseconds=k),
            "dec": decimal.Decimal(k * 137 - 5000).scaleb(-2),
            "dec2": decimal.Decimal("-12345678901234567890.12345") + k * 10 ** 20, "allnull": None,
        })
    return pa.RecordBatch.from_pylist(out, schema=SCHEMA)


@pytest.fixture
async def clients(fluss_server, unique_name):
    servers = fluss_server.bootstrap_servers
    py = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": servers}))
    fast = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": servers}))
    db = unique_name("xstats")
    await fast.get_admin().create_database(db)
    yield py, fast, db
    await fast.close()
    await py.close()


async def _stored_statistics(fast, db, name):
    t = await fast.get_table(ff.TablePath(db, name))
    buf = await fetch_records(t, 0)
    out = []
    for h in logbatch.iter_batches(buf):
        assert h.magic == 1
        start = h.position + logbatch.V1_HEADER_SIZE
        out.append(bytes(buf[start:start + h.statistics_length]))
    return t, out


@pytest.mark.parametrize("columns", ["*", "s, i32,f64,tsns", "dec2,allnull,b"])
async def test_both_clients_write_the_same_statistics(clients, columns):
    py, fast, db = clients
    batches = [_rows(20), _rows(9, 30), _rows(1, 5)]
    stored = {}
    for who, conn, mod in (("py", py, fluss), ("ff", fast, ff)):
        name = f"t_{who}"
        await conn.get_admin().create_table(mod.TablePath(db, name), mod.TableDescriptor(
            mod.Schema(SCHEMA), bucket_count=1, properties={"table.statistics.columns": columns}))
        t = await conn.get_table(mod.TablePath(db, name))
        w = t.new_append().create_writer()
        for rb in batches:
            w.write_arrow_batch(rb)
        await w.flush()
        ft, stored[who] = await _stored_statistics(fast, db, name)
    assert len(stored["py"]) == len(batches)
    assert stored["ff"] == stored["py"]
    schema = ft.get_table_info().descriptor.schema
    types = schema.types
    cols = batchstats.statistics_columns(schema, {"table.statistics.columns": columns})
    for rb, block in zip(batches, stored["py"], strict=True):
        assert batchstats.statistics_of(rb, types, cols) == block
        assert batchstats.decode_statistics(block, types).column_indexes == tuple(cols)


async def test_each_reads_what_the_other_filtered(clients):
    py, fast, db = clients
    for who, conn, mod in (("py", py, fluss), ("ff", fast, ff)):
        await conn.get_admin().create_table(mod.TablePath(db, f"r_{who}"), mod.TableDescriptor(
            mod.Schema(SCHEMA), bucket_count=1, properties={"table.statistics.columns": "*"}))
        t = await conn.get_table(mod.TablePath(db, f"r_{who}"))
        w = t.new_append().create_writer()
        for k in range(4):
            w.write_arrow_batch(_rows(10, 100 * k))
        await w.flush()
    for writer in ("py", "ff"):
        for conn, mod in ((py, fluss), (fast, ff)):
            t = await conn.get_table(mod.TablePath(db, f"r_{writer}"))
            sc = await t.new_scan().filter(mod.col("i32") >= (300 << 12)).create_record_batch_log_scanner()
            sc.subscribe(0, mod.EARLIEST_OFFSET)
            tab = await sc.to_arrow()
            assert sorted(tab.column("i32").to_pylist()) == [k << 12 for k in range(300, 310)], (writer, mod)
