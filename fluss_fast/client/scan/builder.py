"""TableScan: the scan builder behind ``FlussTable.new_scan()``."""
from __future__ import annotations

from ...errors import FlussError
from ...metadata.table import TableBucket
from ..predicate import Predicate, bind_predicate
from ..runtime import on_caller
from .decode import ScanSpec
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
        self._limit: int | None = None
        self._predicate = None           # BoundPredicate
        self._exact = False              # where(): drop the non-matching rows too

    # -- configuration ---------------------------------------------------------------------------
    def project(self, indices: list[int]) -> TableScan:
        """Read only these columns, by position.

        The server sends only these columns (ARROW tables); rows and batches keep this order.

        Args:
            indices: Column positions in the table's schema.

        Returns:
            This builder.

        Raises:
            FlussError: An empty list or an index outside the schema (when the scanner is created).
        """
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

    def project_by_name(self, names: list[str]) -> TableScan:
        """Read only these columns, by name.

        Args:
            names: Column names, in the order the results should have.

        Returns:
            This builder.

        Raises:
            FlussError: An empty list or an unknown column (when the scanner is created).

        Example:
            ```python
            scanner = await table.new_scan().project_by_name(["id", "name"]).create_record_batch_log_scanner()
            ```
        """
        if isinstance(names, (str, bytes)):
            raise TypeError("Can't extract `str` to `Vec`")
        values = []
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"'{type(n).__name__}' object is not an instance of 'str'")
            values.append(n)
        self._projection = ("names", values)
        return self

    def with_fixed_schema(self, fixed_schema: bool) -> TableScan:
        """Accepted for pyfluss compatibility; results always use the schema the table has when the
        scanner is created.

        Args:
            fixed_schema: Ignored apart from being kept.

        Returns:
            This builder.
        """
        self._fixed_schema = bool(fixed_schema)
        return self

    def limit(self, n: int) -> TableScan:
        """Read at most ``n`` rows; only `create_bucket_batch_scanner` takes a limit.

        Args:
            n: A positive row count.

        Returns:
            This builder.

        Raises:
            FlussError: ``n`` is not positive.
        """
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"argument 'n': '{type(n).__name__}' object cannot be interpreted as an integer")
        if n <= 0:
            raise FlussError(f"Scan limit must be positive, got {n}")
        if n > (1 << 31) - 1:
            raise OverflowError("Python int too large to convert to C int")
        self._limit = n
        return self

    def filter(self, predicate: Predicate) -> TableScan:
        """Skip the batches that cannot hold a row matching ``predicate``.

        The predicate goes to the server, which skips every batch whose column statistics rule it
        out; the batches it does send come back whole, with their non-matching rows, as pyfluss
        and the Java client return them. Batches without statistics (tables without
        ``table.statistics.columns``, or not in the ARROW log format) are all sent. Use `where` for
        only the matching rows.

        Args:
            predicate: Built with `col`, e.g. ``fluss.col("amount") > 100``.

        Returns:
            This builder.

        Raises:
            FlussError: The predicate names an unknown column or compares with a value of the wrong type.

        Example:
            ```python
            scan = table.new_scan().filter(fluss.col("amount") > 100)
            ```
        """
        meta = self._meta
        self._predicate = bind_predicate(predicate, meta.schema, meta.schema_id)
        self._exact = False
        return self

    def where(self, predicate: Predicate) -> TableScan:
        """Return only the rows that match ``predicate``.

        As `filter`, the server skips the batches that cannot match; the client then drops every
        row of the other batches that does not match, so the result is exact. A fluss_fast
        addition: pyfluss has `filter` only.

        Args:
            predicate: Built with `col`, e.g. ``fluss.col("amount") > 100``.

        Returns:
            This builder.

        Raises:
            FlussError: The predicate names an unknown column or compares with a value of the wrong type.

        Example:
            ```python
            scan = table.new_scan().where((fluss.col("amount") > 100) & fluss.col("city").is_in(["Oslo", "Rome"]))
            ```
        """
        self.filter(predicate)
        self._exact = True
        return self

    # -- resolution ------------------------------------------------------------------------------
    def _resolve_projection(self) -> list[int] | None:
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
                        predicate=self._predicate if with_predicate else None, exact=self._exact)

    # -- scanners --------------------------------------------------------------------------------
    def create_bucket_batch_scanner(self, bucket: TableBucket) -> BatchScanner:
        """A one-shot scanner of up to ``limit`` rows of one bucket.

        For a log table these are the bucket's first rows; for a primary-key table, current rows of
        the bucket's state.

        Args:
            bucket: The bucket (``TableBucket(table_id, bucket_id)``).

        Returns:
            A `BatchScanner`.

        Raises:
            FlussError: No `limit` was set, a filter was set, or the bucket is not one of this table's.
        """
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
        """A record scanner: `LogScanner.poll` returns `ScanRecords` with change types and row dicts.

        This is the scanner for primary-key tables' changelogs. Creating it does no I/O.

        Returns:
            A `LogScanner` with no subscriptions yet.

        Raises:
            FlussError: A `limit` was set.
        """
        return self._create(RECORD)

    @on_caller
    async def create_record_batch_log_scanner(self) -> LogScanner:
        """An Arrow scanner: ``poll_arrow``, ``poll_record_batch``, ``to_arrow``, ``to_pandas``.

        Creating it does no I/O.

        Returns:
            A `LogScanner` with no subscriptions yet.

        Raises:
            FlussError: A `limit` was set, or the table has a primary key (Arrow batches carry no
                change types; read the ``$changelog`` virtual table instead).
        """
        return self._create(BATCH)

    def __repr__(self) -> str:
        return f"TableScan(table={self._meta.path})"
