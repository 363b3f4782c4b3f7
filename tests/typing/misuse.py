"""Mistakes a type checker must catch when code uses fluss_fast: each line marked ``# E: <error-code>`` must
be reported by mypy with that error code (tests/typing/test_mypy.py), which proves the public API's
types are visible rather than ``Any``."""
from __future__ import annotations

import fluss_fast as fluss


async def mistakes(conn: fluss.FlussConnection, admin: fluss.FlussAdmin, path: fluss.TablePath) -> None:
    await conn.get_table("db.table")  # E: arg-type
    info = await admin.get_table_info(path)
    name: str = info.table_id  # E: assignment
    await admin.list_tables(database="db")  # E: call-arg
    writer = (await conn.get_table(path)).new_append().create_writer()
    await writer.flush_all()  # E: attr-defined
    scanner = await (await conn.get_table(path)).new_scan().create_log_scanner()
    scanner.subscribe_buckets([0, 1])  # E: arg-type
    fluss.col(3)  # E: arg-type
    del name


def bad_config(config: fluss.Config) -> None:
    fluss.Conifg({})  # E: attr-defined
    config.writer_batch_size = "4mb"  # E: assignment
    config.no_such_option = 1  # E: attr-defined
