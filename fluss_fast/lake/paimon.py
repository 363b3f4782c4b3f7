"""A Fluss table's Paimon twin, laid out as Fluss's Paimon tiering lays it out: same database and
table name, the table's columns, then the system columns ``__bucket`` (INT), ``__offset`` (BIGINT) and
``__timestamp`` (TIMESTAMP_LTZ(6)); Fluss's partition keys, primary key, bucket count and bucket key.

One difference: pypaimon writes a row's kind (insert, delete, ...) only from a column named by the
table's ``rowkind.field`` option, so a primary-key table carries a fourth system column,
``__change_type`` (``+I``, ``-U``, ``+U``, ``-D``); the readers here hide it as they hide the others.
"""
from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from ..error_codes import Errors
from ..errors import FlussError
from ..metadata.table import TableInfo

__all__ = ["SYSTEM_COLUMNS", "CHANGE_TYPE_COLUMN", "LakeTableInfo", "lake_info", "open_catalog",
           "ensure_table", "paimon_predicate"]

SYSTEM_COLUMNS = ("__bucket", "__offset", "__timestamp")
CHANGE_TYPE_COLUMN = "__change_type"
_PREFIX = "table.datalake.paimon."


def _pypaimon():
    try:
        import pypaimon
    except ImportError:
        raise FlussError("reading or tiering a data-lake table needs pypaimon: pip install 'fluss-fast[lake]'",
                         Errors.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION) from None
    return pypaimon


def datalake_enabled(info: TableInfo) -> bool:
    """Whether the table's ``table.datalake.enabled`` is true."""
    return str(info.get_properties().get("table.datalake.enabled", "false")).strip().lower() == "true"


def datalake_format(info: TableInfo) -> str:
    """The table's ``table.datalake.format``, lower-case ("" when unset)."""
    return str(info.get_properties().get("table.datalake.format", "")).strip().lower()


class LakeTableInfo:
    """What the lake side needs of a Fluss table: its Paimon catalog options and key layout."""

    def __init__(self, info: TableInfo):
        props = info.get_properties()
        path = info.table_path
        self.info = info
        self.path = path
        self.identifier = f"{path.database_name}.{path.table_name}"
        fmt = datalake_format(info)
        if not datalake_enabled(info):
            raise FlussError(f"Table '{path}' is not a data-lake table: 'table.datalake.enabled' is not true, "
                             "so it has no lake data to read or tier.", Errors.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION)
        if fmt != "paimon":
            raise FlussError(f"Table '{path}' has data-lake format {fmt or 'none'!r}; only 'paimon' is supported "
                             "(set datalake.format=paimon on the server).",
                             Errors.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION)
        self.catalog_options = {k[len(_PREFIX):]: v for k, v in props.items() if k.startswith(_PREFIX)}
        # Paimon table options given to the Fluss table as custom properties 'paimon.<option>', as in
        # Java ('paimon.file.format' = 'orc')
        self.table_options = {k[len("paimon."):]: str(v) for k, v in info.get_custom_properties().items()
                              if k.startswith("paimon.")}
        if "warehouse" not in self.catalog_options:
            raise FlussError(f"Table '{path}' names no Paimon warehouse ('{_PREFIX}warehouse'; the server's "
                             "datalake.paimon.warehouse).", Errors.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION)
        self.primary_key = info.get_primary_keys()
        self.partition_keys = info.get_partition_keys()
        parts = set(self.partition_keys)
        self.bucket_key = info.get_bucket_keys() or [k for k in self.primary_key if k not in parts]
        self.num_buckets = info.num_buckets
        self.columns = info.get_column_names()
        self.arrow_schema: pa.Schema = info.descriptor.schema.to_arrow()

    @property
    def has_primary_key(self) -> bool:
        return bool(self.primary_key)


def lake_info(info: TableInfo) -> LakeTableInfo:
    return LakeTableInfo(info)


def open_catalog(lake: LakeTableInfo):
    """The Paimon catalog of ``lake``'s warehouse, opened once per process: an engine reads a
    table one bucket per task, and every task would open it again."""
    return _catalog(tuple(sorted(dict(lake.catalog_options).items())))


@functools.lru_cache(maxsize=16)
def _catalog(options: tuple):
    return _pypaimon().CatalogFactory.create(dict(options))


def paimon_arrow_schema(lake: LakeTableInfo) -> pa.Schema:
    fields = list(lake.arrow_schema)
    fields += [pa.field("__bucket", pa.int32()), pa.field("__offset", pa.int64()),
               pa.field("__timestamp", pa.timestamp("us", tz="UTC"))]
    if lake.has_primary_key:
        fields.append(pa.field(CHANGE_TYPE_COLUMN, pa.string()))
    return pa.schema(fields)


def ensure_table(catalog, lake: LakeTableInfo):
    """The Paimon table of ``lake``, created on first use."""
    pypaimon = _pypaimon()
    options: dict[str, str] = dict(lake.table_options)
    if lake.bucket_key:
        options["bucket"] = str(lake.num_buckets)
        options["bucket-key"] = ",".join(lake.bucket_key)
    else:
        options["bucket"] = "-1"  # a log table without bucket key: Paimon's bucket-unaware append table
    if lake.has_primary_key:
        options["rowkind.field"] = CHANGE_TYPE_COLUMN
        options["ignore-update-before"] = "true"
    catalog.create_database(lake.path.database_name, True)
    schema = pypaimon.Schema.from_pyarrow_schema(paimon_arrow_schema(lake), partition_keys=lake.partition_keys or None,
                                                 primary_keys=lake.primary_key or None, options=options)
    catalog.create_table(lake.identifier, schema, True)
    table = catalog.get_table(lake.identifier)
    have = field_names(table)
    missing = [f for f in lake.arrow_schema if f.name not in have]
    if missing:
        # columns added to the Fluss table since: added to Paimon before the system columns, as
        # Fluss's lake catalog does; files written before read them as null
        from pypaimon.schema.data_types import PyarrowFieldParser
        from pypaimon.schema.schema_change import Move, SchemaChange

        changes = [SchemaChange.add_column(f.name, PyarrowFieldParser.to_paimon_type(f.type, True),
                                           move=Move.before(f.name, "__bucket")) for f in missing]
        catalog.alter_table(lake.identifier, changes)
        table = catalog.get_table(lake.identifier)
    return table


def field_names(table) -> set[str]:
    return {f.name for f in table.table_schema.fields}


def get_table(catalog, lake: LakeTableInfo):
    """The Paimon table, or ``None`` before the first tiering round created it."""
    _pypaimon()
    from pypaimon.catalog.catalog_exception import TableNotExistException

    try:
        return catalog.get_table(lake.identifier)
    except TableNotExistException:
        return None


# predicate.py's leaf codes
_LEAVES = {0: "equal", 1: "not_equal", 2: "less_than", 3: "less_or_equal", 4: "greater_than",
           5: "greater_or_equal", 6: "is_null", 7: "is_not_null", 8: "startswith", 9: "contains",
           10: "endswith", 11: "is_in", 12: "is_not_in"}
_PLAIN_KINDS = ("Bool", "Int64", "Float64", "String")


def paimon_predicate(builder, predicate: Any, columns: set[str]):
    """A pypaimon predicate for a fluss_fast ``Predicate`` over the Paimon table's ``columns``, or
    ``None`` where one part cannot be expressed (the caller filters exactly afterwards, so pushing
    less only reads more files)."""
    if predicate is None:
        return None
    kind = predicate._kind
    if kind == "compound":
        parts = [paimon_predicate(builder, c, columns) for c in predicate._children]
        if predicate._function == 0:  # AND: the parts that can go down still narrow the read
            parts = [p for p in parts if p is not None]
            if not parts:
                return None
            return parts[0] if len(parts) == 1 else builder.and_predicates(parts)
        if any(p is None for p in parts):
            return None
        return builder.or_predicates(parts)
    name = _LEAVES.get(predicate._function)
    lits = predicate._literals
    if name is None or predicate._field not in columns or any(lit.kind not in _PLAIN_KINDS for lit in lits):
        return None
    field = predicate._field
    if name in ("is_null", "is_not_null"):
        return getattr(builder, name)(field)
    if name in ("is_in", "is_not_in"):
        return getattr(builder, name)(field, [lit.value for lit in lits])
    return getattr(builder, name)(field, lits[0].value)
