"""A data-lake table as the union-read tests need it: partitioned by ``day`` (d1, d2), tiered to
Paimon part way, then written to again (some keys updated, one deleted on a primary-key table), so
that a read has rows in the lake and in the log."""
from __future__ import annotations

import pyarrow as pa

import fluss_fast as fluss
from fluss_fast import lake

SCHEMA = pa.schema([("id", pa.int32()), ("day", pa.string()), ("v", pa.int64())])


def row(i: int, v: int) -> dict:
    return {"id": i, "day": "d1" if i % 2 else "d2", "v": v}


async def partly_tiered_partitioned(conn, path: fluss.TablePath, *, pk: bool, buckets: int, rows: int,
                                    updated, bump: int, deleted: int, properties: dict) -> None:
    """Writes ids ``range(rows)`` (v = id), tiers them, then sets v = id + ``bump`` for the ids
    ``updated`` (appended again on a log table) and, with ``pk``, deletes id ``deleted``."""
    admin = conn.get_admin()
    await admin.create_database(path.database_name, ignore_if_exists=True)
    schema = fluss.Schema(SCHEMA, primary_keys=["id", "day"] if pk else None)
    await admin.create_table(path, fluss.TableDescriptor(schema, partition_keys=["day"], bucket_count=buckets,
                                                         properties=properties))
    for day in ("d1", "d2"):
        await admin.create_partition(path, {"day": day})
    table = await conn.get_table(path)
    w = table.new_upsert().create_writer() if pk else table.new_append().create_writer()
    write = w.upsert if pk else w.append
    for i in range(rows):
        write(row(i, i))
    await w.flush()
    assert (await lake.tier_table(conn, path)).rows == rows
    for i in updated:
        write(row(i, i + bump))
    if pk:
        w.delete({"id": deleted, "day": row(deleted, 0)["day"]})
    await w.flush()
