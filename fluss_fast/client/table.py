"""FlussTable and its builders (pyfluss's ``FlussTable``, ``TableAppend``, ``TableUpsert``,
``TableLookup``, ``TablePrefixLookup``), plus the spellings of the older client guide.

The primary-key builders hand out ``write/upsert.py``'s UpsertWriter and ``lookup.py``'s
Lookuper / PrefixLookuper; ``new_scan()`` adds ``create_kv_scanner`` / ``create_bucket_kv_scanner``
(alias ``create_snapshot_scanner``).

The older guide (and pyfluss 1.0.0's own log-table page) call scanner reads without ``await``
(``for r in scanner.poll(timeout_ms=5000)``, ``print(scanner.to_pandas())``). ``new_scan()``
therefore hands out thin subclasses of the scan builder and scanner whose reads return
``deferred.Deferred`` results (awaitable, or usable as the value), and which add the older
names ``create_batch_scanner`` and ``poll_batches``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from ..error_codes import CLIENT_ERROR
from ..errors import FlussError
from ..metadata.table import TableBucket, TableInfo
from .deferred import deferred
from .lookup import Lookuper, PrefixLookuper
from .runtime import on_caller, on_runtime
from .scan import LogScanner, TableScan
from .write.upsert import UpsertWriter, illegal_argument

if TYPE_CHECKING:  # imported where used at run time; named here for type checkers
    from ..metadata.cluster import ServerNode
    from ..metadata.table import TablePath
    from .write import AppendWriter



class FlussTable:
    """A handle on one table: its metadata and the builders for scanning and writing it."""

    def __init__(self, ctx, meta):
        self._ctx = ctx
        self._runtime = ctx.runtime
        self._meta = meta
        self._arrow_schema = None

    def new_scan(self) -> TableScan:
        """A scan builder: projection, filter and limit, then a scanner.

        Returns:
            A new `TableScan`.

        Example:
            ```python
            scanner = await table.new_scan().project_by_name(["id"]).create_record_batch_log_scanner()
            ```
        """
        return _TableScan(self)

    def new_append(self) -> TableAppend:
        """The append-writer builder of a log table.

        Returns:
            A `TableAppend`; call ``create_writer()`` on it.

        Raises:
            FlussError: The table has a primary key (use `new_upsert`).
        """
        if self.has_primary_key():
            raise FlussError(f"Fluss hitting unsupported operation error Append is only supported for "
                             f"log tables (without primary key). Table '{self._meta.path}' has primary "
                             f"key ({', '.join(self._meta.schema.primary_key)}): use new_upsert()",
                             CLIENT_ERROR)
        return TableAppend(self)

    def new_upsert(self, columns: list[str] | None = None,
                   column_indices: list[int] | None = None) -> TableUpsert:
        """``columns`` / ``column_indices`` are the older guide's partial-update spelling."""
        if not self.has_primary_key():
            raise FlussError(f"Upsert is only supported for primary key tables; table "
                             f"'{self._meta.path}' is a log table: use new_append()", CLIENT_ERROR)
        upsert = TableUpsert(self)
        if columns is not None and column_indices is not None:
            raise FlussError(f"table '{self._meta.path}': pass either columns or column_indices "
                             f"to new_upsert(), not both", CLIENT_ERROR)
        if columns is not None:
            return upsert.partial_update_by_name(columns)
        if column_indices is not None:
            return upsert.partial_update_by_index(column_indices)
        return upsert

    def new_lookup(self) -> TableLookup:
        """The lookup builder of a primary-key table.

        Returns:
            A `TableLookup`: ``create_lookuper()`` for key lookups, ``lookup_by(columns)`` for prefix
            lookups.

        Raises:
            FlussError: The table is a log table.
        """
        if not self.has_primary_key():
            raise FlussError(f"Lookup is only supported for primary key tables; table "
                             f"'{self._meta.path}' is a log table", CLIENT_ERROR)
        return TableLookup(self)

    async def new_append_writer(self):
        """The older guide's ``writer = await table.new_append_writer()``."""
        return self.new_append().create_writer()

    @property
    def arrow_schema(self) -> pa.Schema:
        """The table's schema as a ``pyarrow.Schema`` (the columns scans return)."""
        if self._arrow_schema is None:
            self._arrow_schema = self._meta.schema.to_arrow()
        return self._arrow_schema

    def get_table_info(self) -> TableInfo:
        """The table's metadata as known when the handle was made.

        Returns:
            Table id, schema, buckets, keys and properties.
        """
        return TableInfo.from_meta(self._meta)

    def get_table_path(self) -> TablePath:
        """The table's database and name."""
        return self._meta.path

    def has_primary_key(self) -> bool:
        """Whether the table is a primary-key table."""
        return bool(self._meta.schema.primary_key)

    def bucket_leaders(self, partition_id: int | None = None) -> dict[int, ServerNode | None]:
        """The tablet server leading each bucket, as this connection's metadata knows it now.

        Nothing is asked of the cluster: the answer is what writes, scans and lookups route by (they
        refresh it when a leader moves). fluss_fast only.

        Args:
            partition_id: The partition of a partitioned table (`PartitionInfo.partition_id`);
                ``None`` for a table without partitions.

        Returns:
            ``{bucket: ServerNode}`` for every bucket, ``None`` where no leader is known yet (a
            partition the connection has not written or read yet has none known).
        """
        md = self._ctx.metadata
        meta = self._meta
        leaders = {b: md.leader(meta.table_id, partition_id, b) for b in range(meta.num_buckets)}
        return {b: None if node is None else md.tablets.get(node) for b, node in leaders.items()}

    def __repr__(self) -> str:
        return f"FlussTable(path={self._meta.path})"


class TableAppend:
    """Builder of an AppendWriter: ``table.new_append().create_writer()``."""

    def __init__(self, table: FlussTable):
        self._table = table

    def create_writer(self) -> AppendWriter:
        """A new append writer for this table.

        The connection tracks the writer: closing the connection delivers what it still holds.

        Returns:
            An `AppendWriter`.
        """
        from .write import AppendWriter

        writer = AppendWriter(self._table)
        tracked = getattr(self._table._ctx, "writers", None)
        if tracked is not None:
            tracked.add(writer)  # the connection's close() drains it
        return writer

    def __repr__(self) -> str:
        return "TableAppend()"


class TableUpsert:
    """Builder of an UpsertWriter (optionally a partial update).

    The older guide used the object ``new_upsert()`` returned as the writer itself
    (``writer = table.new_upsert(); writer.upsert(row)``): ``upsert`` / ``delete`` / ``flush``
    here go to one writer created on first use.
    """

    def __init__(self, table: FlussTable, target_columns: list[int] | None = None):
        self._table = table
        self._target = target_columns
        self._writer: UpsertWriter | None = None

    # The messages below are pyfluss's word for word (they already name the table), so code that
    # matches on them keeps working.
    def partial_update_by_name(self, columns: list[str]) -> TableUpsert:
        """Writers from the returned builder update only these columns.

        The columns must include the whole primary key, and every other column of the table must be
        nullable (the server checks it when the first write arrives).

        Args:
            columns: Column names.

        Returns:
            A new builder for partial-update writers.

        Raises:
            FlussError: A name is not a column of the table.

        Example:
            ```python
            w = table.new_upsert().partial_update_by_name(["id", "age"]).create_writer()
            w.upsert({"id": 1, "age": 26})
            ```
        """
        meta = self._table._meta
        if isinstance(columns, (str, bytes)):
            raise TypeError("Can't extract `str` to `Vec`")
        names = meta.schema.names
        for c in columns:
            if c not in names:
                raise FlussError(f"Fluss hitting illegal argument error Cannot find target column `{c}` "
                                 f"for table {meta.path}..", CLIENT_ERROR)
        return TableUpsert(self._table, [names.index(c) for c in columns])

    def partial_update_by_index(self, column_indices: list[int]) -> TableUpsert:
        """Writers from the returned builder update only these columns, given by position.

        Args:
            column_indices: Column positions in the schema.

        Returns:
            A new builder for partial-update writers.

        Raises:
            FlussError: An index is outside the schema.
        """
        meta = self._table._meta
        n = len(meta.schema.columns)
        out = []
        for i in column_indices:
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"'{type(i).__name__}' object cannot be interpreted as an integer")
            if not 0 <= i < n:
                raise FlussError(f"Fluss hitting illegal argument error Invalid target column index: "
                                 f"{i} for table {meta.path}. The table only has {n} columns..",
                                 CLIENT_ERROR)
            out.append(i)
        return TableUpsert(self._table, out)

    def create_writer(self) -> UpsertWriter:
        """A new upsert writer (a partial-update writer when target columns were chosen).

        Returns:
            An `UpsertWriter`.
        """
        return UpsertWriter(self._table, self._target)

    # -- the older guide: the builder used as the writer -------------------------------------------
    def _the_writer(self) -> UpsertWriter:
        if self._writer is None:
            self._writer = self.create_writer()
        return self._writer

    def upsert(self, row):
        """The older guide's spelling: upsert through a writer this builder creates on first use.

        Args:
            row: As for `UpsertWriter.upsert`.

        Returns:
            The write's `WriteResultHandle`.
        """
        return self._the_writer().upsert(row)

    def delete(self, pk):
        """The older guide's spelling: delete through the builder's own writer.

        Args:
            pk: As for `UpsertWriter.delete`.

        Returns:
            The write's `WriteResultHandle`.
        """
        return self._the_writer().delete(pk)

    async def flush(self) -> None:
        """The older guide's spelling: flush the builder's own writer.

        Raises:
            FlussError: A write could not be delivered.
        """
        await self._the_writer().flush()

    def __repr__(self) -> str:
        return "TableUpsert()"


class TableLookup:
    """Builder of a Lookuper, or of a PrefixLookuper via ``lookup_by``.

    The older guide awaited ``lookup`` on what ``new_lookup()`` returned; that goes to one
    Lookuper created on first use.
    """

    def __init__(self, table: FlussTable):
        self._table = table
        self._lookuper: Lookuper | None = None
        self._insert_if_not_exists = False

    def enable_insert_if_not_exists(self) -> TableLookup:
        """Make lookups of a missing key insert it (the Java client's ``enableInsertIfNotExists``, FIP-16).

        The server writes a row with the looked-up key, fills the table's auto-increment column with a
        fresh value, leaves the other columns null, and returns that row: a dictionary table that
        hands out one id per key, exactly once even under concurrent lookers. Only for lookups by
        the whole primary key; the writer's ``writer.acks`` applies to the insert.

        Returns:
            This builder.

        Raises:
            FlussError: From ``create_lookuper()`` if a column outside the primary key and the
                auto-increment column is NOT NULL, or from ``lookup_by(...).create_lookuper()``.

        Example:
            ```python
            lookuper = table.new_lookup().enable_insert_if_not_exists().create_lookuper()
            row = await lookuper.lookup({"name": "alice"})  # {"name": "alice", "id": 1, ...}
            ```
        """
        self._insert_if_not_exists = True
        return self

    def create_lookuper(self) -> Lookuper:
        """A lookuper by the whole primary key.

        Returns:
            A `Lookuper`.

        Raises:
            FlussError: With insert-if-not-exists, the table has a NOT NULL column the insert
                could not fill.
        """
        return Lookuper(self._table, self._insert_if_not_exists)

    def lookup_by(self, column_names: list[str]) -> TablePrefixLookup:
        """Choose the columns of a prefix lookup.

        Args:
            column_names: The partition keys (if any) followed by the bucket key, which must be a
                proper prefix of the primary key; the rule is checked by ``create_lookuper()``.

        Returns:
            A `TablePrefixLookup`.
        """
        if isinstance(column_names, (str, bytes)):
            raise TypeError("Can't extract `str` to `Vec`")
        return TablePrefixLookup(self._table, list(column_names), self._insert_if_not_exists)

    async def lookup(self, pk):
        """The older guide's spelling: look a key up through a lookuper created on first use.

        Args:
            pk: As for `Lookuper.lookup`.

        Returns:
            The row as a dict, or ``None``.
        """
        if self._lookuper is None:
            self._lookuper = self.create_lookuper()
        return await self._lookuper.lookup(pk)

    def __repr__(self) -> str:
        return "TableLookup()"


class TablePrefixLookup:
    """Builder of a PrefixLookuper: ``table.new_lookup().lookup_by(columns).create_lookuper()``."""

    def __init__(self, table: FlussTable, columns: list[str], insert_if_not_exists: bool = False):
        self._table = table
        self._columns = columns
        self._insert_if_not_exists = insert_if_not_exists

    def create_lookuper(self) -> PrefixLookuper:
        """A prefix lookuper for the chosen columns.

        Returns:
            A `PrefixLookuper`.

        Raises:
            FlussError: The columns are not the partition keys followed by a bucket key that is a
                proper prefix of the primary key, or insert-if-not-exists is enabled (Java allows it
                for primary-key lookups only).
        """
        if self._insert_if_not_exists:
            raise illegal_argument("insertIfNotExists cannot be enabled for prefix key lookup, as currently "
                                   "we only support insertIfNotExists for primary key lookup.")
        return PrefixLookuper(self._table, self._columns)

    def __repr__(self) -> str:
        return "TablePrefixLookup()"


# -- scanners with the guides' spellings -------------------------------------------------------------

def _dual(name: str):
    """The scanner read ``name`` returning a Deferred; left as it is if it is not a runtime coroutine."""
    attr = getattr(LogScanner, name)
    if hasattr(attr, "__runtime_impl__"):
        return deferred(attr)
    return attr


class _LogScanner(LogScanner):
    """pyfluss's LogScanner whose reads also work without ``await`` (the guides' spelling)."""

    # no state of its own, so a scanner built by the scan builder can take this class (_adapt)
    __slots__ = ()

    poll = _dual("poll")
    poll_arrow = _dual("poll_arrow")
    poll_record_batch = _dual("poll_record_batch")
    to_arrow = _dual("to_arrow")
    to_pandas = _dual("to_pandas")
    to_polars = _dual("to_polars")
    # older guide name of poll_record_batch
    poll_batches = poll_record_batch


_LogScanner.__name__ = _LogScanner.__qualname__ = "LogScanner"


def _adapt(scanner):
    # The scan builder builds the scanner; only its class changes.
    if type(scanner) is LogScanner:
        scanner.__class__ = _LogScanner
    return scanner


class _TableScan(TableScan):
    """pyfluss's TableScan, plus the older guide's ``create_batch_scanner``."""

    @on_caller
    async def create_log_scanner(self) -> LogScanner:
        return _adapt(await TableScan.create_log_scanner.__runtime_impl__(self))

    @on_caller
    async def create_record_batch_log_scanner(self) -> LogScanner:
        return _adapt(await TableScan.create_record_batch_log_scanner.__runtime_impl__(self))

    # older guide name of create_record_batch_log_scanner
    create_batch_scanner = create_record_batch_log_scanner

    @on_runtime
    async def create_kv_scanner(self):
        """The current rows of a primary-key table (``client/snapshot.py``), under the name pyfluss
        takes next (Rust PR #4201); ``create_snapshot_scanner`` is the same method.

        Returns:
            A scanner whose ``to_arrow()`` and ``to_pandas()`` read every bucket
            (or one, given ``bucket=``/``partition_id=``).

        Raises:
            FlussError: The table is a log table.
        """
        from .snapshot import SnapshotScanner

        return SnapshotScanner(self._table, self._resolve_projection())

    # fluss_fast's name from before pyfluss chose one
    create_snapshot_scanner = create_kv_scanner

    @on_runtime
    async def create_bucket_kv_scanner(self, bucket: TableBucket):
        """The current rows of one bucket of a primary-key table (pyfluss's coming name).

        Args:
            bucket: The bucket, e.g. ``TableBucket(table_id, 0)`` or, partitioned,
                ``TableBucket.with_partition(table_id, partition_id, 0)``.

        Returns:
            A scanner as `create_kv_scanner` returns, whose reads cover that bucket only.

        Raises:
            FlussError: The table is a log table, or the bucket is not one of this table's.
        """
        from .snapshot import SnapshotScanner

        if not isinstance(bucket, TableBucket):
            raise TypeError(f"argument 'bucket': '{type(bucket).__name__}' object is not an "
                            f"instance of 'TableBucket'")
        meta = self._table._meta
        if bucket.table_id != meta.table_id:
            raise FlussError(f"Bucket table_id {bucket.table_id} does not match scan table_id "
                             f"{meta.table_id}")
        n = meta.num_buckets
        if not 0 <= bucket.bucket_id < n:
            raise FlussError(f"Bucket id {bucket.bucket_id} out of range for table with {n} buckets")
        scanner = SnapshotScanner(self._table, self._resolve_projection())
        return scanner._for_bucket(bucket.partition_id, bucket.bucket_id)


_TableScan.__name__ = _TableScan.__qualname__ = "TableScan"
