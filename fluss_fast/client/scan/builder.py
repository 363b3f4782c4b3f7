"""TableScan: the scan builder behind ``FlussTable.new_scan()``."""
from __future__ import annotations

from typing import List, Optional

from ...errors import FlussError
from ...metadata import TableBucket
from ..predicate import Predicate, bind_predicate
from ..runtime import on_caller
from .fetcher import ScanSpec
from .limit import BatchScanner
from .scanner import BATCH, RECORD, LogScanner

__all__ = ["TableScan"]


class TableScan:
    """Builder for log scanners: projection, filter, limit. Methods return ``self`` for chaining."""

    def __init__(self, table):
        self._table = table
        self._ctx = table._ctx
        self._runtime = table._runtime
        self._meta = table._meta
        self._projection = None          # ("indices", [...]) or ("names", [...])
        self._fixed_schema = True
        self._limit: Optional[int] = None
        self._predicate = None           # BoundPredicate

    # -- configuration ---------------------------------------------------------------------------
    def project(self, indices: List[int]) -> "TableScan":
        if isinstance(indices, (str, bytes)):
            raise TypeError("Can't extract `str` to `Vec`")
        values = []
        for i in indices:
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"'{type(i).__name__}' object cannot be interpreted as an integer")
            if i < 0:
                raise OverflowError("can't convert negative int to unsigned")
            values.append(i)
        self._projection = ("indices", values)
        return self

    def project_by_name(self, names: List[str]) -> "TableScan":
        if isinstance(names, (str, bytes)):
            raise TypeError("Can't extract `str` to `Vec`")
        values = []
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"'{type(n).__name__}' object is not an instance of 'str'")
            values.append(n)
        self._projection = ("names", values)
        return self

    def with_fixed_schema(self, fixed_schema: bool) -> "TableScan":
        self._fixed_schema = bool(fixed_schema)
        return self

    def limit(self, n: int) -> "TableScan":
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"argument 'n': '{type(n).__name__}' object cannot be interpreted as an integer")
        if n <= 0:
            raise FlussError(f"Scan limit must be positive, got {n}")
        if n > (1 << 31) - 1:
            raise OverflowError("Python int too large to convert to C int")
        self._limit = n
        return self

    def filter(self, predicate: Predicate) -> "TableScan":
        meta = self._meta
        self._predicate = bind_predicate(predicate, meta.schema, meta.schema_id)
        return self

    # -- resolution ------------------------------------------------------------------------------
    def _resolve_projection(self) -> Optional[List[int]]:
        if self._projection is None:
            return None
        kind, values = self._projection
        names = self._meta.schema.names
        if kind == "indices":
            if not values:
                raise FlussError("Column indices cannot be empty")
            for i in values:
                if i >= len(names):
                    raise FlussError(f"Column index {i} out of range (max: {len(names) - 1})")
            return list(values)
        if not values:
            raise FlussError("Column names cannot be empty")
        out = []
        for n in values:
            if n not in names:
                raise FlussError(f"Column '{n}' not found")
            out.append(names.index(n))
        return out

    def _spec(self, with_predicate: bool = True) -> ScanSpec:
        return ScanSpec(self._meta, projection=self._resolve_projection(),
                        predicate=self._predicate if with_predicate else None)

    # -- scanners --------------------------------------------------------------------------------
    def create_bucket_batch_scanner(self, bucket: TableBucket) -> BatchScanner:
        if self._limit is None:
            raise FlussError("create_bucket_batch_scanner requires a limit set via .limit(n)")
        meta = self._meta
        if self._predicate is not None:
            raise FlussError(f"BatchScanner doesn't support filter pushdown. Table: {meta.path}")
        if not isinstance(bucket, TableBucket):
            raise TypeError(f"argument 'bucket': '{type(bucket).__name__}' object is not an "
                            f"instance of 'TableBucket'")
        if bucket.table_id != meta.table_id:
            raise FlussError(f"Bucket table_id {bucket.table_id} does not match scan table_id "
                             f"{meta.table_id}")
        n = meta.num_buckets
        if not 0 <= bucket.bucket_id < n:
            raise FlussError(f"Bucket id {bucket.bucket_id} out of range for table with {n} buckets")
        return BatchScanner(self._table, self._spec(False), bucket, self._limit)

    def _create(self, kind: str) -> LogScanner:
        if self._limit is not None:
            raise FlussError(f"Log scanners don't support limit pushdown (requested limit: "
                             f"{self._limit}). Use create_bucket_batch_scanner() for a bounded scan.")
        meta = self._meta
        if kind == BATCH and meta.has_primary_key:
            raise FlussError(f"Batch-mode log scan does not support primary-key table {meta.path}; "
                             f"use create_log_scanner() to read its changelog record by record")
        return LogScanner(self._table, self._spec(), kind)

    @on_caller
    async def create_log_scanner(self) -> LogScanner:
        return self._create(RECORD)

    @on_caller
    async def create_record_batch_log_scanner(self) -> LogScanner:
        return self._create(BATCH)

    def __repr__(self) -> str:
        return f"TableScan(table={self._meta.path})"
