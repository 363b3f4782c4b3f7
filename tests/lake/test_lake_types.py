"""Every kind of column through tiering and the union read: nested (ARRAY, MAP, ROW), DECIMAL, DATE,
TIMESTAMP, BYTES, in a log table and as the values of a primary-key table."""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import lake

SCHEMA = pa.schema([("id", pa.int64(), False), ("tags", pa.list_(pa.string())), ("ts", pa.timestamp("us")),
                    ("amt", pa.decimal128(10, 2)), ("day", pa.date32()), ("b", pa.binary()),
                    ("m", pa.map_(pa.string(), pa.int32())), ("r", pa.struct([("x", pa.int32())]))])


def _rows(lo: int, hi: int, tag: str) -> pa.Table:
    return pa.table({
        "id": list(range(lo, hi)), "tags": [[tag, str(i)] if i % 3 else [] for i in range(lo, hi)],
        "ts": [dt.datetime(2024, 1, 1, 0, 0, i % 60, 123) if i % 4 else None for i in range(lo, hi)],
        "amt": [decimal.Decimal(f"{i}.25") if i % 5 else None for i in range(lo, hi)],
        "day": [dt.date(2024, 1, 1 + i % 28) for i in range(lo, hi)],
        "b": [bytes([i % 256]) * 3 for i in range(lo, hi)],
        "m": [[(tag, i)] if i % 2 else None for i in range(lo, hi)], "r": [{"x": i} for i in range(lo, hi)],
    }, schema=SCHEMA)


@pytest.mark.parametrize("pk", [False, True], ids=["log", "primary_key"])
async def test_all_types_survive_the_lake(lake_conn, pk):
    conn = lake_conn
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", f"types_{int(pk)}")
    await admin.create_table(path, fluss.TableDescriptor(
        fluss.Schema(SCHEMA, primary_keys=["id"] if pk else None), bucket_count=2,
        properties={"table.datalake.enabled": "true"}))
    table = await conn.get_table(path)
    w = table.new_upsert().create_writer() if pk else table.new_append().create_writer()
    write = w.upsert_arrow if pk else w.write_arrow
    write(_rows(0, 20, "a"))
    await w.flush()
    await lake.tier_table(conn, path)
    write(_rows(10, 30, "b"))  # for the primary-key table: updates of 10..19 and new keys
    await w.flush()
    got = (await lake.union_scan(conn, path).to_arrow()).sort_by("id")
    if pk:
        want = pa.concat_tables([_rows(0, 10, "a"), _rows(10, 30, "b")])
        assert got.to_pylist() == want.to_pylist()
    else:
        s = await table.new_scan().create_record_batch_log_scanner()
        s.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
        full = await s.to_arrow()
        key = lambda r: (r["id"], r["tags"])  # noqa: E731
        assert sorted(got.to_pylist(), key=key) == sorted(full.to_pylist(), key=key)
        assert got.num_rows == 40
