"""The ``$changelog`` and ``$binlog`` virtual tables, made in the client from a table's log.

``conn.get_table(TablePath(db, "orders$changelog"))`` returns a read-only table whose scanners
read the log of ``orders`` and add three metadata columns in front of the data columns:

* ``$changelog`` (primary-key and log tables): ``_change_type`` (``insert``, ``update_before``,
  ``update_after``, ``delete``; rows of log tables are ``insert``), ``_log_offset``,
  ``_commit_timestamp`` (TIMESTAMP_LTZ(3)), then the table's columns.
* ``$binlog`` (primary-key tables only): ``_change_type`` (``insert``, ``update``, ``delete``),
  ``_log_offset``, ``_commit_timestamp``, ``before`` and ``after`` (structs of the table's
  columns; NULL for inserts / deletes). A ``-U`` record and the ``+U`` that follows it become one
  ``update`` at the ``+U``'s offset, also when the two arrive in different polls.

Scanners subscribe like a LogScanner (``subscribe``, ``subscribe_buckets``, partitions ...) or
with ``subscribe_all(startup_mode="earliest" | "latest" | "timestamp", timestamp=ms)``. ``poll``
gives ScanRecords whose rows carry the virtual columns, ``poll_arrow`` / ``to_arrow`` /
``to_pandas`` the same as Arrow. Every row is built column by column from the log's Arrow data.
"""
from __future__ import annotations

from typing import NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..error_codes import CLIENT_ERROR
from ..errors import FlussError
from ..metadata.log import EARLIEST_OFFSET
from ..metadata.table import TablePath
from .runtime import on_runtime
from .scan.builder import TableScan
from .scan.records import Chunk, RowSource, ScanRecords
from .scan.scanner import _MAX_BATCHES_PER_POLL, BATCH, LogScanner
from .table import FlussTable

CHANGELOG = "$changelog"
BINLOG = "$binlog"
SUFFIXES = (CHANGELOG, BINLOG)


def _strings(values: list[str]) -> pa.Array:
    # not pa.array: pyarrow's first pa.array imports pandas (~50 MB, ~0.2 s, here on the runtime
    # thread inside the first get_table) for anyone who never uses it
    data = "".join(values).encode()
    offsets = np.cumsum([0] + [len(v.encode()) for v in values], dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


# change-type byte (docs/contributing/formats.md §2.5) -> name; 0 is append-only (log tables)
_CHANGELOG_NAMES = _strings(["insert", "insert", "update_before", "update_after", "delete"])
_INSERT, _UPDATE_BEFORE, _UPDATE_AFTER, _DELETE = 1, 2, 3, 4
_TS = pa.timestamp("ms", tz="UTC")


def split_virtual(path: TablePath):
    """``(base path, suffix)`` of a virtual table's path, else None."""
    name = path.table_name
    for suffix in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return TablePath(path.database_name, name[:-len(suffix)]), suffix
    return None


def _meta_fields():
    return [pa.field("_change_type", pa.string(), nullable=False),
            pa.field("_log_offset", pa.int64(), nullable=False),
            pa.field("_commit_timestamp", _TS, nullable=False)]


def virtual_schema(base_schema: pa.Schema, kind: str) -> pa.Schema:
    if kind == CHANGELOG:
        return pa.schema(_meta_fields() + list(base_schema))
    row = pa.struct(list(base_schema))
    return pa.schema(_meta_fields() + [pa.field("before", row), pa.field("after", row)])


class VirtualTable(FlussTable):
    """A read-only ``$changelog`` / ``$binlog`` view of a table.

    A FlussTable, since ``get_table`` returns it where pyfluss's signature promises one: code typed
    against pyfluss reads it like any table, and its writers and lookups raise FlussError."""

    def __init__(self, base: FlussTable, kind: str, path: TablePath):
        if kind == BINLOG and not base.has_primary_key():
            raise FlussError(f"Table '{path}': the $binlog virtual table is only supported for "
                             f"primary key tables, and '{base.get_table_path()}' is a log table "
                             f"(use '{base.get_table_path().table_name}$changelog')", CLIENT_ERROR)
        # the base table's metadata: table id, buckets and partitions are the base table's
        FlussTable.__init__(self, base._ctx, base._meta)
        self._base = base
        self._kind = kind
        self._path = path
        self._arrow_schema = virtual_schema(base.arrow_schema, kind)

    def get_table_path(self) -> TablePath:
        return self._path

    def has_primary_key(self) -> bool:
        return False

    def new_scan(self) -> VirtualTableScan:
        return VirtualTableScan(self)

    def _read_only(self, what: str) -> FlussError:
        return FlussError(f"Table '{self._path}' is a read-only virtual table ({self._kind} of "
                          f"'{self._base.get_table_path()}'): {what} is not supported", CLIENT_ERROR)

    def new_append(self) -> NoReturn:
        raise self._read_only("append")

    def new_upsert(self, columns: list[str] | None = None,
                   column_indices: list[int] | None = None) -> NoReturn:
        raise self._read_only("upsert")

    def new_lookup(self) -> NoReturn:
        raise self._read_only("lookup")

    async def new_append_writer(self) -> NoReturn:
        raise self._read_only("append")

    def __repr__(self) -> str:
        return f"FlussTable(path={self._path})"


class VirtualTableScan(TableScan):
    """Scan builder of a virtual table: no projection, filter or limit (as in Fluss)."""

    def __init__(self, vtable: VirtualTable):
        TableScan.__init__(self, vtable)
        self._vtable = vtable

    def _unsupported(self, what: str) -> FlussError:
        return FlussError(f"Table '{self._vtable._path}': {what} is not supported on virtual "
                          f"tables", CLIENT_ERROR)

    def project(self, indices: list[int]) -> NoReturn:
        raise self._unsupported("projection")

    def project_by_name(self, names: list[str]) -> NoReturn:
        raise self._unsupported("projection")

    def filter(self, predicate) -> NoReturn:
        raise self._unsupported("filter")

    def where(self, predicate) -> NoReturn:
        raise self._unsupported("filter")

    def limit(self, n: int) -> NoReturn:
        raise self._unsupported("limit")

    def create_bucket_batch_scanner(self, bucket) -> NoReturn:
        raise self._unsupported("a bucket batch scanner")

    def _create(self, kind: str = BATCH) -> VirtualScanner:
        base_scan = TableScan(self._vtable._base)
        return VirtualScanner(self._vtable, base_scan._spec())

    @on_runtime
    async def create_log_scanner(self) -> VirtualScanner:
        return self._create()

    @on_runtime
    async def create_record_batch_log_scanner(self) -> VirtualScanner:
        return self._create()

    create_batch_scanner = create_record_batch_log_scanner

    def __repr__(self) -> str:
        return f"TableScan(table={self._vtable._path})"


class ChangeRows:
    """Turns a table's log chunks into the rows of its ``$changelog`` or ``$binlog`` view.

    The binlog pairs each -U with the +U after it; a -U that ends a poll is held, per bucket, until
    the next poll brings its +U, so one instance serves one scanner's polls in order.
    """

    def __init__(self, kind: str, schema: pa.Schema):
        self.kind = kind
        self.schema = schema  # virtual_schema(base, kind)
        self._held: dict[object, tuple] = {}  # bucket -> a -U waiting for its +U

    @property
    def pending(self) -> int:
        """How many buckets hold a -U whose +U has not come yet (always 0 for the changelog)."""
        return len(self._held)

    # -- building the virtual rows --------------------------------------------------------------
    def _offsets(self, c: Chunk) -> np.ndarray:
        if c.offsets is None:
            return np.arange(c.base_offset, c.base_offset + c.count, dtype=np.int64)
        return np.asarray(c.offsets, dtype=np.int64)

    def _types(self, c: Chunk) -> np.ndarray:
        if c.change_types is None:
            return np.zeros(c.count, dtype=np.uint8)
        return np.frombuffer(bytes(c.change_types), dtype=np.uint8)[c.start:c.start + c.count]

    def _changelog(self, c: Chunk) -> Chunk:
        rb = c.arrow()
        n = c.count
        offsets = self._offsets(c)
        names = pc.take(_CHANGELOG_NAMES, pa.array(self._types(c)))
        ts = pa.array(np.full(n, c.timestamp, dtype=np.int64)).cast(_TS)
        cols = [names, pa.array(offsets), ts] + list(rb.columns)
        out = pa.RecordBatch.from_arrays(cols, schema=self.schema)
        return Chunk(c.bucket, RowSource(out), 0, n, c.base_offset, None if c.offsets is None
                     else list(c.offsets), None, c.timestamp, c.next_offset)

    def _binlog(self, c: Chunk) -> Chunk | None:
        rb = c.arrow()
        offsets = self._offsets(c)
        types = self._types(c)
        stamps = np.full(c.count, c.timestamp, dtype=np.int64)
        held = self._held.pop(c.bucket, None)
        if held is not None:
            hrb, hoff, hts = held
            rb = pa.concat_batches([hrb, rb])
            offsets = np.concatenate(([hoff], offsets))
            types = np.concatenate((np.array([_UPDATE_BEFORE], dtype=np.uint8), types))
            stamps = np.concatenate(([hts], stamps))
        n = len(types)
        kinds, before, after, rows = [], [], [], []
        i = 0
        while i < n:
            t = types[i]
            if t == _UPDATE_BEFORE:
                if i + 1 == n:  # its +U comes with the next poll
                    self._held[c.bucket] = (rb.slice(i, 1), int(offsets[i]), int(stamps[i]))
                    break
                if types[i + 1] == _UPDATE_AFTER:
                    kinds.append("update")
                    before.append(i)
                    after.append(i + 1)
                    rows.append(i + 1)
                    i += 2
                    continue
                kinds.append("update")
                before.append(i)
                after.append(None)
                rows.append(i)
            elif t == _UPDATE_AFTER:
                kinds.append("update")
                before.append(None)
                after.append(i)
                rows.append(i)
            elif t == _DELETE:
                kinds.append("delete")
                before.append(i)
                after.append(None)
                rows.append(i)
            else:
                kinds.append("insert")
                before.append(None)
                after.append(i)
                rows.append(i)
            i += 1
        if not kinds:
            return None
        row_type = self.schema.field("before").type

        def side(idx):
            taken = rb.take(pa.array(idx, type=pa.int64()))
            mask = pa.array([k is None for k in idx])
            return pa.StructArray.from_arrays(taken.columns, fields=list(row_type), mask=mask)

        out_off = offsets[rows]
        cols = [pa.array(kinds, pa.string()), pa.array(out_off),
                pa.array(stamps[rows]).cast(_TS), side(before), side(after)]
        out = pa.RecordBatch.from_arrays(cols, schema=self.schema)
        return Chunk(c.bucket, RowSource(out), 0, len(kinds), int(out_off[0]),
                     [int(o) for o in out_off], None, c.timestamp, c.next_offset)

    def convert(self, chunks_by_bucket) -> dict[object, list[Chunk]]:
        """The view's chunks of one poll's log chunks (``{bucket: [Chunk]}``, each bucket's in offset
        order); a bucket with no view rows (only a held -U) is left out."""
        out = {}
        for bucket, cs in chunks_by_bucket.items():
            conv = []
            for c in cs:
                if not c.count:
                    continue
                v = self._changelog(c) if self.kind == CHANGELOG else self._binlog(c)
                if v is not None:
                    conv.append(v)
            if conv:
                out[bucket] = conv
        return out


class VirtualScanner(LogScanner):
    """Reads a table's log as its ``$changelog`` / ``$binlog``."""

    def __init__(self, vtable: VirtualTable, spec):
        LogScanner.__init__(self, vtable._base, spec, BATCH)
        self._vtable = vtable
        self._schema_v = vtable.arrow_schema
        self._rows = ChangeRows(vtable._kind, self._schema_v)

    # -- subscriptions -------------------------------------------------------------------------
    @on_runtime
    async def subscribe_all(self, startup_mode: str = "earliest", timestamp: int | None = None) -> None:
        """Subscribe every bucket (of every partition) at the startup mode's offsets."""
        mode = str(startup_mode).lower()
        if mode not in ("earliest", "latest", "timestamp"):
            raise FlussError(f"startup_mode must be 'earliest', 'latest' or 'timestamp', got "
                             f"{startup_mode!r}", CLIENT_ERROR)
        if mode == "timestamp" and timestamp is None:
            raise FlussError("startup_mode 'timestamp' needs timestamp= (milliseconds since epoch)",
                             CLIENT_ERROR)
        meta = self._vtable._meta
        md = self._ctx.metadata
        buckets = list(range(meta.num_buckets))
        parts: list[str | None] = [None]
        if meta.is_partitioned:
            parts = list((await md.partitions(meta.path)).items())
        from ..metadata.log import OffsetSpec
        from .admin import FlussAdmin

        admin = FlussAdmin(self._ctx)
        for part in parts:
            if mode != "earliest":
                # resolved now: "latest" means what comes after this call, not after the first poll
                spec = (OffsetSpec.timestamp(int(timestamp)) if mode == "timestamp"
                        else OffsetSpec.latest())
                if part is None:
                    offs = await FlussAdmin.list_offsets.__runtime_impl__(admin, meta.path, buckets, spec)
                else:
                    offs = await FlussAdmin.list_partition_offsets.__runtime_impl__(
                        admin, meta.path, part[0], buckets, spec)
            else:
                offs = {b: EARLIEST_OFFSET for b in buckets}
            if part is None:
                self.subscribe_buckets(offs)
            else:
                self.subscribe_partition_buckets({(part[1], b): o for b, o in offs.items()})

    def _convert(self, chunks_by_bucket) -> dict[object, list[Chunk]]:
        return self._rows.convert(chunks_by_bucket)

    # -- reads ----------------------------------------------------------------------------------
    @on_runtime
    async def poll(self, timeout_ms: int) -> ScanRecords:
        timeout = self._timeout(timeout_ms)
        f = self._fetcher
        chunks = await f.poll_chunks(timeout, max_records=f.max_poll_records)
        return ScanRecords(self._convert(chunks))

    @on_runtime
    async def poll_arrow(self, timeout_ms: int) -> pa.Table:
        timeout = self._timeout(timeout_ms)
        chunks = await self._fetcher.poll_chunks(timeout, max_chunks=_MAX_BATCHES_PER_POLL)
        conv = self._convert(chunks)
        return pa.Table.from_batches([c.arrow() for cs in conv.values() for c in cs],
                                     schema=self._schema_v)

    @on_runtime
    async def poll_record_batch(self, timeout_ms: int):
        raise FlussError("poll_record_batch is not supported on virtual tables; use poll_arrow",
                         CLIENT_ERROR)

    async def _read_virtual(self) -> pa.Table:
        stops, read = await self._start_bounded()
        batches = []
        try:
            while True:
                got = await self._next_bounded(stops, self._convert)
                if not got:
                    break
                batches.extend(got)
        finally:
            self._end_bounded(read)
        return pa.Table.from_batches(batches, schema=self._schema_v)

    @on_runtime
    async def to_arrow(self) -> pa.Table:
        return await self._read_virtual()

    # to_polars, to_arrow_batch_reader and the Arrow stream go through these
    _bounded_arrow = _read_virtual

    def _reader_schema(self) -> pa.Schema:
        return self._schema_v

    def _reader_convert(self):
        return self._convert

    @on_runtime
    async def to_pandas(self):
        return (await self._read_virtual()).to_pandas()

    def __repr__(self) -> str:
        return f"LogScanner(table={self._vtable._path})"
