"""Code written against pyfluss 1.0.0's typed API, importing fluss_fast instead: mypy must accept it
(tests/typing/test_mypy.py). The annotated locals make mypy compare our return types with the ones
pyfluss's stubs promise; a method a checker cannot see would fail as an attribute error."""
from __future__ import annotations

import asyncio

import pyarrow as pa

import fluss_fast as fluss


async def main(bootstrap: str) -> int:
    config = fluss.Config({"bootstrap.servers": bootstrap})
    conn: fluss.FlussConnection = await fluss.FlussConnection.create(config)
    admin: fluss.FlussAdmin = conn.get_admin()
    await admin.create_database("typed", ignore_if_exists=True)
    databases: list[str] = await admin.list_databases()
    path = fluss.TablePath("typed", "events")
    schema = fluss.Schema(pa.schema([("id", pa.int64()), ("name", pa.string())]))
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=2), ignore_if_exists=True)
    tables: list[str] = await admin.list_tables("typed")
    info: fluss.TableInfo = await admin.get_table_info(path)
    table_id: int = info.table_id
    columns: list[str] = info.get_schema().get_column_names()

    table: fluss.FlussTable = await conn.get_table(path)
    writer: fluss.AppendWriter = table.new_append().create_writer()
    handle: fluss.WriteResultHandle = writer.append({"id": 1, "name": "a"})
    writer.write_arrow(pa.table({"id": [2], "name": ["b"]}))
    await writer.flush()
    await handle.wait()

    offsets: dict[int, int] = await admin.list_offsets(path, [0, 1], fluss.OffsetSpec.latest())
    scan: fluss.TableScan = table.new_scan().project_by_name(["id"]).filter(fluss.col("id") > 0)
    scanner: fluss.LogScanner = await scan.create_record_batch_log_scanner()
    scanner.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
    arrow: pa.Table = await scanner.to_arrow()

    records_scanner: fluss.LogScanner = await table.new_scan().create_log_scanner()
    records_scanner.subscribe_buckets({0: fluss.EARLIEST_OFFSET})
    records: fluss.ScanRecords = await records_scanner.poll(100)
    for record in records:
        offset: int = record.offset
        change: fluss.ChangeType = record.change_type
        del offset, change

    error: fluss.FlussError | None = None
    try:
        await admin.get_table_info(fluss.TablePath("typed", "missing"))
    except fluss.FlussError as exc:
        error = exc
    code: int = error.error_code if error is not None else fluss.ErrorCode.CLIENT_ERROR
    await conn.close()
    return table_id + len(databases) + len(tables) + len(columns) + len(offsets) + arrow.num_rows + code


if __name__ == "__main__":
    print(asyncio.run(main("127.0.0.1:9123")))


def configure(servers: str) -> fluss.Config:
    config = fluss.Config({"bootstrap.servers": servers})
    config.writer_batch_size = 4 * 1024 * 1024
    config.writer_enable_idempotence = True
    acks: str = config.writer_acks
    del acks
    return config
