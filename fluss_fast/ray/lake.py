"""``FlussLakeDatasource``: a data-lake table's union read (lake snapshot + log tail) as a Ray Data
source, one read task per bucket (and partition), planned by ``fluss_fast.lake.plan_buckets``.

Planning fixes the lake snapshot and every bucket's log end on the driver; each task reads its
bucket's lake rows with pypaimon and its log range with its own connection, merging by key for a
primary-key table (``fluss_fast.lake.read_bucket``). The lake calls are async: they run on a fresh
event loop in a helper thread, so a driver inside a running loop (a notebook) plans as well.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pyarrow as pa
from ray.data import Datasource, ReadTask
from ray.data.block import BlockMetadata

from ..client.predicate import Predicate, bind_predicate
from ..config import Config
from ..errors import ErrorCode, FlussError
from ..lake import LakeBucketPlan, plan_buckets, read_bucket
from ..metadata import TablePath

__all__ = ["FlussLakeDatasource"]


def _on_own_loop(coro):
    with ThreadPoolExecutor(1, thread_name_prefix="fluss-fast-lake") as pool:
        return pool.submit(asyncio.run, coro).result()


async def _connected(client: dict, fn, *args):
    from ..client.connection import FlussConnection

    conn = await FlussConnection.create(Config(client))
    try:
        return await fn(conn, *args)
    finally:
        await conn.close()


async def _plan(conn, path: TablePath):
    info = await conn.get_admin().get_table_info(path)
    return info, await plan_buckets(conn, path)


def _read_task(client: dict, path: TablePath, plan: LakeBucketPlan, columns: list[str], predicate,
               schema: pa.Schema) -> list[pa.Table]:
    got = _on_own_loop(_connected(client, read_bucket, path, plan, columns, predicate))
    return [got.cast(schema)] if got.num_rows else []


class FlussLakeDatasource(Datasource):
    """Reads a data-lake table as its lake snapshot plus its log after it (docs/guide/lake.md).

    Args:
        bootstrap_servers: ``host:port`` of a Fluss coordinator.
        table: ``"database.table"`` or a TablePath of a table with ``table.datalake.enabled``.
        columns: The columns to read, in this order; all when None.
        filter: A predicate built with `fluss_fast.col`; pushed to the lake reader, applied exactly.
        config: More client settings.

    Raises:
        FlussError: A table without a Paimon lake (40), an unknown column or a filter that does not
            fit the table, or no server; raised here, on the driver.
    """

    def __init__(self, bootstrap_servers: str, table: str | TablePath, *, columns: Sequence[str] | None = None,
                 filter: Predicate | None = None, config: Mapping[str, str] | None = None):
        if isinstance(table, str):
            parts = table.split(".")
            if len(parts) != 2 or not all(parts):
                raise FlussError(f"Invalid table '{table}': expected 'database.table'", ErrorCode.CLIENT_ERROR)
            table = TablePath(parts[0], parts[1])
        if isinstance(columns, str):
            raise FlussError(f"columns must be a list of column names, got the string {columns!r}",
                             ErrorCode.CLIENT_ERROR)
        client = {str(k): str(v) for k, v in (config or {}).items()}
        client["bootstrap.servers"] = bootstrap_servers
        info, plans = _on_own_loop(_connected(client, _plan, table))
        full = info.descriptor.schema.to_arrow()
        names = list(full.names)
        wanted = list(columns) if columns is not None else names
        unknown = [c for c in wanted if c not in names]
        if unknown:
            raise FlussError(f"Column '{unknown[0]}' does not exist in table '{table}' (columns: "
                             f"{', '.join(names)})", ErrorCode.INVALID_COLUMN_PROJECTION)
        if filter is not None:
            bind_predicate(filter, info.descriptor.schema)  # a bad filter fails here, named
        self._client = client
        self._path = table
        self._columns = wanted
        self._filter = filter
        self._schema = pa.schema([full.field(c) for c in wanted])
        self._plans = plans

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows read."""
        return self._schema

    @property
    def planned(self) -> list[LakeBucketPlan]:
        """Each read task's bucket: partition, lake snapshot, log start and end."""
        return list(self._plans)

    def get_name(self) -> str:
        return f"FlussLake({self._path})"

    def estimate_inmemory_data_size(self) -> int | None:
        return None

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context=None) -> list[ReadTask]:
        """One ReadTask per bucket (and partition)."""
        tasks = []
        for plan in self._plans:
            fn = partial(_read_task, self._client, self._path, plan, self._columns, self._filter, self._schema)
            metadata = BlockMetadata(num_rows=None, size_bytes=None, input_files=None, exec_stats=None)
            tasks.append(ReadTask(fn, metadata, schema=self._schema, per_task_row_limit=per_task_row_limit))
        return tasks
