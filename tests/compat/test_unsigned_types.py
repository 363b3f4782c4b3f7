"""Arrow's unsigned integers: mapped exactly as pyfluss maps them when a table is created (to the
signed Fluss type of the same width), and refused with a FlussError naming the column when data of
an unsigned Arrow type, or a value beyond the signed range, is written; nothing wraps silently."""
from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

import fluss_fast

fluss = pytest.importorskip("fluss")

pytestmark = pytest.mark.compat

UNSIGNED = [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


@pytest.mark.parametrize("arrow_type", UNSIGNED, ids=str)
def test_schema_maps_unsigned_like_pyfluss(arrow_type):
    schema = pa.schema([("n", arrow_type), ("m", arrow_type, False)])
    ours = fluss_fast.Schema(schema).get_column_types()
    theirs = fluss.Schema(schema).get_column_types()
    assert ours == theirs
    assert ours[0] in ("tinyint", "smallint", "int", "bigint")


def test_unsigned_data_is_refused_with_the_column_named(fluss_server, unique_name):
    async def run():
        conn = await fluss_fast.FlussConnection.create(
            fluss_fast.Config({"bootstrap.servers": fluss_server.bootstrap_servers}))
        try:
            admin = conn.get_admin()
            path = fluss_fast.TablePath("fluss", unique_name("u64"))
            schema = fluss_fast.Schema(pa.schema([("id", pa.uint64()), ("s", pa.string())]))
            await admin.create_table(path, fluss_fast.TableDescriptor(schema, bucket_count=1))
            info = await admin.get_table_info(path)
            assert info.get_schema().get_column_types() == ["bigint", "string"]
            writer = (await conn.get_table(path)).new_append().create_writer()
            with pytest.raises(fluss_fast.FlussError) as e:
                writer.write_arrow(pa.table({"id": pa.array([2**63 + 5], pa.uint64()), "s": ["a"]}))
                await writer.flush()
            assert "'id'" in str(e.value) and "uint64" in str(e.value)
            with pytest.raises(fluss_fast.FlussError) as e:
                writer.append({"id": 2**63 + 5, "s": "b"})
                await writer.flush()
            assert "'id'" in str(e.value) and str(2**63 + 5) in str(e.value)
            writer.append({"id": 2**63 - 1, "s": "c"})
            await writer.flush()
            scanner = await (await conn.get_table(path)).new_scan().create_record_batch_log_scanner()
            scanner.subscribe_buckets({0: fluss_fast.EARLIEST_OFFSET})
            got = await scanner.to_arrow()
            assert got.column("id").to_pylist() == [2**63 - 1]
            assert got.schema.field("id").type == pa.int64()
            await admin.drop_table(path)
        finally:
            await conn.close()

    asyncio.run(asyncio.wait_for(run(), 60))
