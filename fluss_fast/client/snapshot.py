"""SnapshotScanner: the current state of a primary-key table, read with SCAN_KV (fluss_fast extra).

``scanner = await table.new_scan().create_snapshot_scanner()`` (honours ``.project(...)`` /
``.project_by_name(...)``), then ``await scanner.to_arrow()`` for every bucket of every
partition, ``await scanner.to_arrow(bucket=b, partition_id=None)`` for one bucket, or
``await scanner.to_pandas()``. Each bucket is read through a server-side cursor over a
consistent snapshot of that bucket (one cursor per bucket, buckets read concurrently); across
buckets the snapshots are taken one after the other, not at one instant.

Servers older than SCAN_KV (Fluss 0.9.1 and before; their ApiVersions does not list it) are read with
one LIMIT_SCAN per bucket instead: on a primary-key bucket it walks the bucket's RocksDB from the
first key and stops only at the limit, with no cap of its own (``RocksDBKv.limitScan``), so a limit of
2**31-1 is the whole current state of the bucket, in one answer the server builds in its heap.
"""
from __future__ import annotations

import asyncio
import contextlib

import pyarrow as pa

from ..error_codes import CLIENT_ERROR, REFRESH_METADATA_CODES, Errors
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from .kvread import ValueRows
from .runtime import on_runtime

_BATCH_BYTES = 4 * 1024 * 1024
_RETRY_CODES = REFRESH_METADATA_CODES
_MAX_ATTEMPTS = 5
_WHOLE_BUCKET = (1 << 31) - 1  # LIMIT_SCAN's limit is an int32


class SnapshotScanner:
    """Reads the current rows of a primary-key table (all buckets, or one) into Arrow."""

    def __init__(self, table, projection: list[int] | None):
        meta = table._meta
        if not meta.schema.primary_key:
            raise FlussError(f"Snapshot scan is only supported for primary key tables; table "
                             f"'{meta.path}' is a log table: use create_log_scanner() or "
                             f"create_record_batch_log_scanner()", CLIENT_ERROR)
        self._table = table
        self._ctx = table._ctx
        self._runtime = table._runtime
        self._meta = meta
        self._projection = projection
        self._values = ValueRows(meta, self._ctx)
        full = self._values.arrow_schema
        self.schema = full if projection is None else pa.schema([full.field(i) for i in projection])
        self._fixed = None  # (partition_id, bucket) of a create_bucket_kv_scanner scanner

    def _for_bucket(self, partition_id: int | None, bucket: int) -> SnapshotScanner:
        self._fixed = (partition_id, bucket)
        return self

    def _project(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        return rb if self._projection is None else rb.select(self._projection)

    async def _read_bucket(self, partition_id, bucket) -> list[pa.RecordBatch]:
        attempts = 0
        while True:
            try:
                return await self._scan_once(partition_id, bucket)
            except FlussError as e:
                attempts += 1
                if e.error_code not in _RETRY_CODES or attempts >= _MAX_ATTEMPTS:
                    raise
                self._ctx.metadata.invalidate(self._meta.table_id, partition_id)
                await asyncio.sleep(0.05 * (2 ** attempts))

    async def _scan_once(self, partition_id, bucket) -> list[pa.RecordBatch]:
        md = self._ctx.metadata
        table_id = self._meta.table_id
        node = await md.leader_for(table_id, partition_id, bucket)
        conn = await self._ctx.connection(node)
        if not conn.supports(Api.SCAN_KV):
            if conn.supports(Api.LIMIT_SCAN):
                return await self._limit_scan(node, partition_id, bucket)
            raise FlussError(f"The server at {conn.address} supports neither SCAN_KV nor LIMIT_SCAN, so it cannot "
                             f"read the current rows of table '{self._meta.path}': look rows up by key, or "
                             f"read the changelog with create_log_scanner()", Errors.UNSUPPORTED_VERSION)
        req = pb.ScanKvRequest()
        open_req = req.bucket_scan_req
        open_req.table_id = table_id
        if partition_id is not None:
            open_req.partition_id = partition_id
        open_req.bucket_id = bucket
        req.call_seq_id = 0
        req.batch_size_bytes = _BATCH_BYTES
        out = []
        seq = 0
        scanner_id = None
        try:
            while True:
                resp = await self._ctx.tablet(node, Api.SCAN_KV, req)
                if resp.HasField("error_code") and resp.error_code:
                    where = f"table '{self._meta.path}' bucket {bucket}" + (
                        f" partition {partition_id}" if partition_id is not None else "")
                    raise FlussError(f"Snapshot scan of {where} failed: "
                                     f"{resp.error_message or resp.error_code}", resp.error_code)
                if resp.HasField("scanner_id"):
                    scanner_id = resp.scanner_id
                if resp.HasField("records") and resp.records:
                    rb = await self._values.batch_of(resp.records)
                    if rb.num_rows:
                        out.append(self._project(rb))
                if not resp.has_more_results:
                    scanner_id = None
                    return out
                if scanner_id is None:
                    raise FlussError(f"table '{self._meta.path}': the server continued a snapshot "
                                     f"scan without a scanner id", CLIENT_ERROR)
                seq += 1
                req = pb.ScanKvRequest()
                req.scanner_id = scanner_id
                req.call_seq_id = seq
                req.batch_size_bytes = _BATCH_BYTES
        finally:
            if scanner_id is not None:  # stopped early: release the server's cursor
                close = pb.ScanKvRequest()
                close.scanner_id = scanner_id
                close.close_scanner = True
                with contextlib.suppress(Exception):  # the cursor expires on its own
                    await self._ctx.tablet(node, Api.SCAN_KV, close)

    async def _limit_scan(self, node, partition_id, bucket) -> list[pa.RecordBatch]:
        req = pb.LimitScanRequest(table_id=self._meta.table_id, bucket_id=bucket, limit=_WHOLE_BUCKET)
        if partition_id is not None:
            req.partition_id = partition_id
        resp = await self._ctx.tablet(node, Api.LIMIT_SCAN, req)
        if resp.HasField("error_code") and resp.error_code:
            where = f"table '{self._meta.path}' bucket {bucket}" + (
                f" partition {partition_id}" if partition_id is not None else "")
            raise FlussError(f"Snapshot scan (LIMIT_SCAN) of {where} failed: "
                             f"{resp.error_message or resp.error_code}", resp.error_code)
        if not (resp.HasField("records") and resp.records):
            return []
        rb = await self._values.batch_of(resp.records)
        return [self._project(rb)] if rb.num_rows else []

    async def _targets(self, bucket, partition_id):
        meta = self._meta
        n = meta.num_buckets
        if bucket is not None and (isinstance(bucket, bool) or not isinstance(bucket, int) or not 0 <= bucket < n):
            raise FlussError(f"Bucket id {bucket} out of range for table with {n} buckets")
        buckets = range(n) if bucket is None else [bucket]
        if not meta.is_partitioned:
            if partition_id is not None:
                raise FlussError(f"table '{meta.path}' is not partitioned: partition_id must be None")
            return [(None, b) for b in buckets]
        if partition_id is not None:
            pids = [partition_id]
        else:
            if bucket is not None:
                raise FlussError(f"table '{meta.path}' is partitioned: give the partition_id of "
                                 f"bucket {bucket}")
            pids = await self._ctx.metadata.partition_ids(meta.path)
        return [(pid, b) for pid in pids for b in buckets]

    @on_runtime
    async def to_arrow(self, bucket: int | None = None, partition_id: int | None = None) -> pa.Table:
        """The current rows of the whole table, or of one bucket, as a pyarrow Table."""
        if bucket is None and self._fixed is not None:
            partition_id, bucket = self._fixed
        targets = await self._targets(bucket, partition_id)
        parts = await asyncio.gather(*[self._read_bucket(pid, b) for pid, b in targets])
        batches = [rb for part in parts for rb in part]
        if not batches:
            return self.schema.empty_table()
        return pa.Table.from_batches(batches, schema=self.schema)

    @on_runtime
    async def to_pandas(self, bucket: int | None = None, partition_id: int | None = None):
        """As `to_arrow`, converted to a ``pandas.DataFrame`` (needs pandas).

        Args:
            bucket: One bucket only; ``None`` for every bucket.
            partition_id: With ``bucket``, the bucket's partition (partitioned tables).

        Returns:
            The current rows.
        """
        return (await SnapshotScanner.to_arrow.__runtime_impl__(self, bucket, partition_id)).to_pandas()

    @on_runtime
    async def to_polars(self, bucket: int | None = None, partition_id: int | None = None):
        """As `to_arrow`, as a ``polars.DataFrame`` (needs polars).

        Args:
            bucket: One bucket only; ``None`` for every bucket.
            partition_id: With ``bucket``, the bucket's partition (partitioned tables).

        Returns:
            The current rows.

        Raises:
            ImportError: polars is not installed.
        """
        from .scan.frames import import_polars

        pl = import_polars()
        return pl.from_arrow(await SnapshotScanner.to_arrow.__runtime_impl__(self, bucket, partition_id))

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream of the table's current rows (Polars, DuckDB, pandas >= 3.0).

        The snapshot is read whole (blocking) at the stream's first pull, as `to_arrow` reads it.

        Args:
            requested_schema: A schema capsule the consumer asks for, or None.

        Returns:
            A PyCapsule named ``arrow_array_stream``.
        """
        from .scan.frames import lazy_stream

        return lazy_stream(self.schema,
                           lambda: self._runtime.call(SnapshotScanner.to_arrow.__runtime_impl__(self)).to_batches(),
                           requested_schema)

    def __repr__(self) -> str:
        return f"SnapshotScanner(table={self._meta.path})"
