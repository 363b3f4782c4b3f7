"""``FlussDatasource``: a Fluss table (or its ``$changelog`` / ``$binlog``) as a Ray Data source.

Planning (the constructor, on the driver) fixes every bucket's offset range, so however often Ray
executes the dataset, and whatever is appended meanwhile, it reads the same rows. A primary-key
table is read as its current state, bucket by bucket, when each task runs (the snapshot has no
offsets to fix). Tasks read in Ray's worker processes through their own connection, cached per
process and configuration (``fluss_fast.engine.connections``), as the Spark source's do.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial

import pyarrow as pa
from ray.data import Datasource, ReadTask
from ray.data.block import BlockMetadata

from ..client.predicate import AND, Predicate, bind_predicate
from ..engine import ranges, virtual
from ..engine.options import SourceOptions
from ..errors import ErrorCode, FlussError
from ..metadata import TablePath

__all__ = ["FlussDatasource", "source_options"]

_VIRTUAL = ("changelog", "binlog")


def _err(message: str) -> FlussError:
    return FlussError(message, ErrorCode.CLIENT_ERROR)


def source_options(bootstrap_servers: str, table: str | TablePath, config: Mapping[str, str] | None = None,
                   poll_timeout_ms: int = 10000) -> SourceOptions:
    """The shared SourceOptions of ``table`` (``"db.table"``, ``"db.table$changelog"``, a TablePath)."""
    if isinstance(table, TablePath):
        raw = f"{table.database_name}.{table.table_name}"
    elif isinstance(table, str):
        raw = table
    else:
        raise _err(f"table must be 'database.table' or a TablePath, got {type(table).__name__}")
    name, kind = raw, None
    if "$" in raw:
        name, kind = raw.split("$", 1)
        if kind.lower() not in _VIRTUAL:
            raise _err(f"Unknown virtual table '${kind}' in '{raw}': expected $changelog or $binlog")
        kind = kind.lower()
    parts = name.split(".")
    if len(parts) != 2 or not all(parts):
        raise _err(f"Invalid table '{raw}': expected 'database.table'")
    if not bootstrap_servers:
        raise _err("bootstrap_servers is required (host:port of a Fluss coordinator)")
    client = {str(k): str(v) for k, v in (config or {}).items()}
    client["bootstrap.servers"] = bootstrap_servers
    return SourceOptions(database=parts[0], table=parts[1], virtual=kind, client=tuple(sorted(client.items())),
                         poll_timeout_ms=poll_timeout_ms)


class _Refine:
    """Filters by the exact predicate and keeps the asked-for columns, for the reads whose scan
    cannot do it (snapshots and virtual tables take no predicate, as in Fluss)."""

    def __init__(self, read: list[str], keep: list[str], predicate, positions: dict[int, int]):
        self.keep = None if keep == read else [read.index(c) for c in keep]
        self.predicate = predicate
        self.positions = positions

    def __call__(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        if self.predicate is not None and rb.num_rows:
            rb = rb.filter(self.predicate.mask(rb, self.positions))
        return rb if self.keep is None else rb.select(self.keep)


def _blocks(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.Table]:
    for rb in batches:
        if rb.num_rows:
            yield pa.Table.from_batches([rb], schema)


def _read_log(opts: SourceOptions, r, projection, predicate, schema) -> Iterator[pa.Table]:
    return _blocks(ranges.read_range(opts, r, projection, predicate, lambda rb: rb), schema)


def _read_snapshot(opts: SourceOptions, p, read: list[str], refine: _Refine, schema) -> Iterator[pa.Table]:
    return _blocks(ranges.read_snapshot(opts, p, read, refine), schema)


def _read_changes(opts: SourceOptions, r, read: list[str], names: list[str], refine: _Refine,
                  schema) -> Iterator[pa.Table]:
    assert opts.virtual is not None  # planned as a virtual table's read
    reader = virtual.ChangeReader(opts, opts.virtual, False, read, names)
    return _blocks(reader.read(r, refine), schema)


class FlussDatasource(Datasource):
    """Reads a Fluss table with one Ray read task per bucket (and partition).

    Args:
        bootstrap_servers: ``host:port`` of a Fluss coordinator.
        table: ``"database.table"``, a TablePath, or ``"database.table$changelog"`` / ``"$binlog"``.
        columns: The columns to read, in this order; all when None.
        filter: A predicate built with `fluss_fast.col`; only matching rows are read.
        config: More client settings (``{"request-timeout": "60000"}``, SASL keys, ...).
        max_offsets_per_task: Cut a bucket's range into tasks of at most this many offsets.
        poll_timeout_ms: How long a task waits for data it knows is there before it fails.

    Raises:
        FlussError: An unknown table, column or virtual table, a predicate that does not fit the
            columns, or a server that cannot be reached; raised here, on the driver.
    """

    def __init__(self, bootstrap_servers: str, table: str | TablePath, *, columns: Sequence[str] | None = None,
                 filter: Predicate | None = None, config: Mapping[str, str] | None = None,
                 max_offsets_per_task: int | None = None, poll_timeout_ms: int = 10000):
        if isinstance(columns, str):
            raise _err(f"columns must be a list of column names, got the string {columns!r}")
        if max_offsets_per_task is not None and max_offsets_per_task <= 0:
            raise _err(f"max_offsets_per_task must be positive, got {max_offsets_per_task}")
        opts = source_options(bootstrap_servers, table, config, poll_timeout_ms)
        self._opts = opts
        meta = ranges.table_meta(opts)
        if opts.virtual is not None:
            virtual.check(opts, meta.schema)
            view = virtual.View(meta, opts.virtual)
            schema_info = view.schema
        else:
            schema_info = meta.schema
        names = list(schema_info.names)
        self._names = names
        if columns is None:
            self._columns = names
        else:
            unknown = [c for c in columns if c not in names]
            if unknown:
                raise _err(f"Column '{unknown[0]}' does not exist in table '{opts.name}' "
                           f"(columns: {', '.join(names)})")
            if len(set(columns)) != len(columns) or not columns:
                raise _err(f"columns must name each column at most once, and at least one: {list(columns)}")
            self._columns = list(columns)
        bound = None
        if filter is not None:
            if not isinstance(filter, Predicate):
                raise _err(f"filter must be a fluss_fast predicate such as fluss_fast.col('x') > 5, "
                           f"got {type(filter).__name__}")
            try:
                bound = bind_predicate(filter, schema_info, meta.schema_id)
            except FlussError as e:
                raise _err(f"Filter on table '{opts.name}': {e.message}") from None
        self._filter = filter
        self._primary_key = opts.virtual is None and bool(meta.schema.primary_key)
        self._scan_filters = opts.virtual is None and not self._primary_key
        # snapshot and change reads fetch the filter's columns too, then drop them (``_Refine``)
        needed = set(self._columns) | ({names[i] for i in bound.columns} if bound is not None else set())
        self._read_columns = [c for c in names if c in needed] if not self._scan_filters else self._columns
        positions = {names.index(c): i for i, c in enumerate(self._read_columns)}
        self._refine = _Refine(self._read_columns, self._columns, bound, positions)
        full = schema_info.to_arrow()
        self._schema = pa.schema([full.field(c) for c in self._columns])
        self._projection = None if self._columns == names else [names.index(c) for c in self._columns]
        self._partition_tests = self._bind_partition_tests(filter, schema_info, meta)
        self._full_schema = full
        self._plan = self._plan_tasks(meta, max_offsets_per_task)

    def _plan_tasks(self, meta, max_offsets: int | None) -> list:
        opts = self._opts
        parts = [p for p in ranges.partitions_of(opts, meta) if self._may_match(p[2])]
        if self._primary_key:
            return [ranges.SnapshotBucket(meta.table_id, pid, name, b)
                    for pid, name, _ in parts for b in range(meta.num_buckets)]
        if max_offsets:
            opts = SourceOptions(**{**opts.__dict__, "max_records_per_partition": max_offsets})
        return ranges.plan_batch(opts, meta, parts)

    @staticmethod
    def _bind_partition_tests(predicate: Predicate | None, schema_info, meta) -> list:
        """The filter's top-level conjuncts that read partition keys only, bound: each can rule a
        whole partition out at planning."""
        keys = set(meta.partition_keys or ())
        if predicate is None or not keys:
            return []
        # a Predicate's tree lives in slots (kind, function, children) that it does not annotate
        is_and = getattr(predicate, "_kind", None) == "compound" and getattr(predicate, "_function", None) == AND
        conjuncts = getattr(predicate, "_children", ()) if is_and else (predicate,)
        return [bind_predicate(c, schema_info, meta.schema_id) for c in conjuncts if c._columns() <= keys]

    def _may_match(self, spec: dict[str, str]) -> bool:
        """False only if a partition-key conjunct of the filter rules this partition out: then the
        partition gets no read task. Anything that cannot be decided keeps it."""
        for bound in self._partition_tests:
            names = [self._names[i] for i in bound.columns]
            if not all(n in spec for n in names):
                continue
            try:
                row = pa.table({n: pa.array([spec[n]], pa.string()).cast(self._full_schema.field(n).type)
                                for n in names})
                mask = bound.mask(row, {i: k for k, i in enumerate(bound.columns)})
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue
            if not mask[0].as_py():
                return False
        return True

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows read."""
        return self._schema

    @property
    def planned(self) -> list:
        """What the read tasks read: offset ranges, or primary-key buckets (for inspection and tests)."""
        return list(self._plan)

    def get_name(self) -> str:
        """The name Ray shows for the read (``ReadFluss(db.table)`` in its progress and stats)."""
        return f"Fluss({self._opts.name})"

    def estimate_inmemory_data_size(self) -> int | None:
        """None: a range's size in memory is unknown until read (compression, projection, filters)."""
        return None

    def _read_fn(self, item):
        opts = self._opts
        if isinstance(item, ranges.SnapshotBucket):
            return partial(_read_snapshot, opts, item, self._read_columns, self._refine, self._schema)
        if opts.virtual is not None:
            return partial(_read_changes, opts, item, self._read_columns, self._names, self._refine, self._schema)
        predicate = self._filter if self._scan_filters else None
        return partial(_read_log, opts, item, self._projection, predicate, self._schema)

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context=None) -> list[ReadTask]:
        """One ReadTask per planned range or primary-key bucket; ``parallelism`` does not change
        them (cut ranges with ``max_offsets_per_task``)."""
        # row counts are unknown until read (filters, snapshots, change pairs), so none are claimed:
        # Ray would otherwise answer count() from them
        tasks = []
        for item in self._plan:
            metadata = BlockMetadata(num_rows=None, size_bytes=None, input_files=None, exec_stats=None)
            tasks.append(ReadTask(self._read_fn(item), metadata, schema=self._schema,
                                  per_task_row_limit=per_task_row_limit))
        return tasks
