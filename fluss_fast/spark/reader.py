"""Batch reads: ``spark.read.format("fluss").option("bootstrap.servers", ...).load("db.table")``."""
from __future__ import annotations

from pyspark.sql.datasource import DataSourceReader, InputPartition

from ..engine import virtual
from ..engine.options import SourceOptions
from ..engine.ranges import table_meta
from ..errors import ErrorCode, FlussError
from . import filters, ranges, types


def read_meta(opts: SourceOptions):
    """The metadata a read sees: the table's, or its ``$changelog`` / ``$binlog`` view."""
    meta = table_meta(opts)
    if opts.virtual is None:
        return meta
    if opts.virtual == "lake":
        from .lake import LakeView, lake_info

        lake_info(opts)  # a table without a lake fails here, named
        return LakeView(meta)
    virtual.check(opts, meta.schema)
    return virtual.View(meta, opts.virtual)


def resolve_columns(meta, opts: SourceOptions, schema) -> list[str]:
    """Table column names for the fields of the schema Spark asks for (a user schema may name a
    subset of the columns: that is how a read is pruned to them)."""
    names = meta.schema.names
    by_lower = {n.lower(): n for n in names}
    out = []
    for f in schema.fields:
        name = f.name if f.name in names else by_lower.get(f.name.lower())
        if name is None:
            raise FlussError(f"Column '{f.name}' of the requested schema does not exist in table "
                             f"'{opts.name}' (columns: {', '.join(names)})", ErrorCode.CLIENT_ERROR)
        col = meta.schema.columns[meta.schema.index_of(name)]
        expected = types.to_spark_type(col.type, opts.name, name)
        if not types._same(f.dataType, expected):
            raise FlussError(f"Column '{f.name}' of table '{opts.name}' is {col.type}, read as Spark "
                             f"{expected.simpleString()}; the requested schema says "
                             f"{f.dataType.simpleString()}", ErrorCode.CLIENT_ERROR)
        out.append(name)
    return out


class FlussBatchReader(DataSourceReader):
    """Plans one input partition per bucket (and partition), sub-split by offsets."""

    def __init__(self, opts: SourceOptions, schema):
        self.opts = opts
        meta = read_meta(opts)
        self.table_id = meta.table_id
        self.schema_id = meta.schema_id
        self.primary_key = opts.virtual is None and bool(meta.schema.primary_key)
        self.partition_keys = tuple(meta.partition_keys)
        self.columns = resolve_columns(meta, opts, schema)
        all_names = meta.schema.names
        self.projection: list[int] | None = (
            None if self.columns == all_names else [all_names.index(c) for c in self.columns])
        self.types = [meta.schema.columns[all_names.index(c)].type for c in self.columns]
        self.target = types.spark_arrow_schema(schema)
        self.partition_tests = []
        self.predicate = None
        self._schema_info = meta.schema
        # a data-lake table's batch read: "lake" (the snapshot alone), "union" (lake + log) or None
        self.lake = None
        if opts.virtual in (None, "lake"):
            from . import lake

            self.lake = lake.mode(opts)
            if opts.virtual == "lake":
                self._schema_info = meta.base.schema  # filters on the system columns stay with Spark
        self.changes = (None if opts.virtual in (None, "lake") else
                        virtual.ChangeReader(opts, opts.virtual, False, self.columns, all_names))

    def _push(self, pushed):
        """Claims the filters it applies exactly; yields the rest back to Spark."""
        if self.changes is not None:  # a virtual table's scan takes no filter (as in Fluss)
            return pushed
        # the lake reads apply a predicate exactly after the merge by key, so any table takes one
        rest, tests, pred = filters.split_filters(
            list(pushed), self._schema_info, self.schema_id, self.partition_keys,
            predicates_allowed=not self.primary_key or self.lake is not None)
        self.partition_tests = tests
        self.predicate = pred
        return rest

    def partitions(self) -> list[InputPartition]:
        opts = self.opts
        meta = table_meta(opts)
        if meta.table_id != self.table_id:
            raise FlussError(f"Table '{opts.name}' was re-created while the query was planned",
                             ErrorCode.CLIENT_ERROR)
        if self.lake is not None:
            from . import lake

            return lake.plan(opts, meta.table_id, self.lake == "lake", self.partition_tests)
        parts = ranges.partitions_of(opts, meta)
        if self.partition_tests:
            parts = [p for p in parts if all(test(p[2]) for test in self.partition_tests)]
        if not parts:
            return []
        if self.primary_key:
            return [ranges.SnapshotBucket(meta.table_id, pid, name, b)
                    for pid, name, _ in parts for b in range(meta.num_buckets)]
        return ranges.plan_batch(opts, meta, parts)

    def read(self, partition):
        convert = types.ReadConverter(self.types, self.target)
        if self.lake is not None and not isinstance(partition, ranges.BucketRange):
            if not hasattr(partition, "plan"):
                return iter(())  # Spark plans one empty partition when there is nothing to read
            from . import lake

            return lake.read(self.opts, partition, self.columns, self.predicate, convert)
        if isinstance(partition, ranges.SnapshotBucket):
            return ranges.read_snapshot(self.opts, partition, self.columns, convert)
        if not isinstance(partition, ranges.BucketRange):
            return iter(())  # Spark plans one empty partition when there is nothing to read
        if self.changes is not None:
            return self.changes.read(partition, convert)
        return ranges.read_range(self.opts, partition, self.projection, self.predicate, convert)


class FlussPushdownReader(FlussBatchReader):
    """The reader when filter pushdown is on (Spark refuses a reader with ``pushFilters`` while
    spark.sql.python.filterPushdown.enabled is false, so the method lives on its own class)."""

    def pushFilters(self, pushed):
        return self._push(pushed)
