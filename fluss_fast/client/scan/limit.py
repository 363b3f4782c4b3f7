"""BatchScanner: one LIMIT_SCAN of one bucket, handed out as a single RecordBatch.

For a log table the server returns whole batches covering (at least) the last ``limit`` offsets
below the high watermark; like the Rust client we keep the last ``limit`` rows of what came back.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:  # pandas is optional; imported where used
    import pandas as pd

from ...errors import FlussError
from ...metadata.table import TableBucket
from ...rpc import fluss_api_pb2 as pb
from ...rpc.api import Api
from ..runtime import on_runtime
from .decode import ScanSpec
from .fetcher import CORRUPT_MESSAGE
from .fetcher import _is_transient as _transient
from .frames import import_polars, lazy_stream
from .records import RecordBatch
from .schemas import ensure_older_schemas

__all__ = ["BatchScanner"]


class BatchScanner:
    """One-shot bounded scanner over a single bucket (``new_scan().limit(n)``)."""

    def __init__(self, table, spec: ScanSpec, bucket: TableBucket, limit: int):
        self._table = table
        self._ctx = table._ctx
        self._runtime = table._runtime
        self._spec = spec
        self._bucket = bucket
        self._limit = limit
        self._spent = False

    @property
    def bucket(self) -> TableBucket:
        """The bucket this scanner reads."""
        return self._bucket

    async def _scan(self) -> RecordBatch:
        # Like a bounded log read: network trouble and leader moves are retried until they have
        # lasted request-timeout (a restarting server comes back within it), then raised.
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + (getattr(self._ctx, "request_timeout_ms", None) or 30000) / 1000.0
        pause = 0.1
        while True:
            try:
                return await self._scan_once()
            except FlussError as exc:
                if not _transient(exc) or loop.time() + pause >= give_up_at or self._ctx.closed:
                    raise
            self._ctx.metadata.invalidate(self._spec.table_id, self._bucket.partition_id)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)

    async def _scan_once(self) -> RecordBatch:
        spec = self._spec
        tb = self._bucket
        md = self._ctx.metadata
        node = await md.leader_for(spec.table_id, tb.partition_id, tb.bucket_id)
        req = pb.LimitScanRequest()
        req.table_id = spec.table_id
        if tb.partition_id is not None:
            req.partition_id = tb.partition_id
        req.bucket_id = tb.bucket_id
        req.limit = self._limit
        resp = await self._ctx.tablet(node, Api.LIMIT_SCAN, req)
        if resp.HasField("error_code") and resp.error_code:
            msg = resp.error_message or f"error code {resp.error_code}"
            raise FlussError(f"Limit scan of {spec.where(tb)} failed: {msg}", resp.error_code)
        raw = resp.records if resp.HasField("records") else b""
        if resp.HasField("is_log_table") and not resp.is_log_table:
            # a primary-key bucket answers with its current rows (a value batch), not its log
            from ..kvread import ValueRows
            rb = await ValueRows(self._table._meta, self._ctx).batch_of(raw)
            if rb.num_rows > self._limit:
                rb = rb.slice(0, self._limit)
            out = spec.output_of_full(rb)
            return RecordBatch(out, tb, 0, out.num_rows - 1)
        mv = memoryview(raw)
        if spec.older is None:  # the table was altered: its log may hold batches of older schemas
            await ensure_older_schemas(self._ctx, spec)
        try:
            decoded = spec.decode_full_batches(tb, mv)
        except FlussError:
            raise
        except (ValueError, TypeError, pa.ArrowException) as exc:
            raise FlussError(f"Could not read the limit scan answer of {spec.where(tb)}: {exc}",
                             getattr(exc, "error_code", CORRUPT_MESSAGE)) from None
        if not decoded:
            empty = spec.out_schema.empty_table().to_batches()
            rb = empty[0] if empty else pa.RecordBatch.from_pylist([], schema=spec.out_schema)
            return RecordBatch(rb, tb, 0, -1)
        base = decoded[0][0].base_offset
        batches = [rb for _h, rb, _ct in decoded]
        merged = batches[0] if len(batches) == 1 else pa.Table.from_batches(
            batches, schema=batches[0].schema).combine_chunks().to_batches()[0]
        n = merged.num_rows
        if n > self._limit:
            dropped = n - self._limit
            merged = merged.slice(dropped, self._limit)
            base += dropped
        out = spec.output_of_full(merged)
        return RecordBatch(out, tb, base, base + out.num_rows - 1)

    @on_runtime
    async def next_batch(self) -> RecordBatch | None:
        """The scanned rows as one batch the first time; ``None`` after that.

        Returns:
            A `RecordBatch`, or ``None`` once consumed.

        Raises:
            FlussError: The scan failed (network trouble that lasts longer than ``request-timeout``,
                a missing table, corrupt data).
        """
        if self._spent:
            return None
        self._spent = True
        return await self._scan()

    @on_runtime
    async def collect_all_batches(self) -> list[RecordBatch]:
        """Every batch this scanner has left (at most one).

        Returns:
            A list of `RecordBatch`.
        """
        if self._spent:
            return []
        self._spent = True
        return [await self._scan()]

    async def _drain_table(self) -> pa.Table:
        spec = self._spec
        if self._spent:
            return spec.empty_table()
        self._spent = True
        rb = (await self._scan()).batch
        if rb.num_rows == 0:
            return spec.empty_table()
        return pa.Table.from_batches([rb], schema=spec.out_schema)

    @on_runtime
    async def to_arrow(self) -> pa.Table:
        """The scanned rows as a ``pyarrow.Table``.

        Returns:
            Up to ``limit`` rows.
        """
        return await self._drain_table()

    @on_runtime
    async def to_pandas(self) -> pd.DataFrame:
        """The scanned rows as a ``pandas.DataFrame`` (needs pandas).

        Returns:
            Up to ``limit`` rows.
        """
        return (await self._drain_table()).to_pandas()

    @on_runtime
    async def to_polars(self):
        """The scanned rows as a ``polars.DataFrame`` (needs polars; fluss_fast extra).

        Returns:
            Up to ``limit`` rows.

        Raises:
            ImportError: polars is not installed.
        """
        pl = import_polars()
        return pl.from_arrow(await self._drain_table())

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream of the scanned rows (Polars, DuckDB, pandas >= 3.0).

        A limit scan is one batch of at most ``limit`` rows, read (blocking) at the stream's first pull.

        Args:
            requested_schema: A schema capsule the consumer asks for, or None.

        Returns:
            A PyCapsule named ``arrow_array_stream``.
        """
        return lazy_stream(self._spec.out_schema,
                           lambda: self._runtime.call(self._drain_table()).to_batches(),
                           requested_schema)

    def __repr__(self) -> str:
        return f"BatchScanner(bucket={self._bucket})"
