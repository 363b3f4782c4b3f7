"""FlussTable and its builders (pyfluss's ``FlussTable``, ``TableAppend``, ``TableUpsert``,
``TableLookup``, ``TablePrefixLookup``).

Primary-key writes and lookups come later; their builders exist now with pyfluss's method names
so code written against pyfluss imports and fails clearly, not with an AttributeError.
"""
from __future__ import annotations

from typing import List

import pyarrow as pa

from ..errors import FlussError
from ..metadata import TableInfo

_PK_NOT_SUPPORTED = "primary-key tables are not supported yet"


class FlussTable:
    """A handle on one table: its metadata and the builders for scanning and writing it."""

    def __init__(self, ctx, meta):
        self._ctx = ctx
        self._runtime = ctx.runtime
        self._meta = meta
        self._arrow_schema = None

    def new_scan(self):
        from .scan import TableScan

        return TableScan(self)

    def new_append(self) -> "TableAppend":
        return TableAppend(self)

    def new_upsert(self) -> "TableUpsert":
        return TableUpsert(self)

    def new_lookup(self) -> "TableLookup":
        return TableLookup(self)

    @property
    def arrow_schema(self) -> pa.Schema:
        if self._arrow_schema is None:
            self._arrow_schema = self._meta.schema.to_arrow()
        return self._arrow_schema

    def get_table_info(self) -> TableInfo:
        return TableInfo.from_meta(self._meta)

    def get_table_path(self):
        return self._meta.path

    def has_primary_key(self) -> bool:
        return bool(self._meta.schema.primary_key)

    def __repr__(self) -> str:
        return f"FlussTable(path={self._meta.path}, id={self._meta.table_id})"


class TableAppend:
    """Builder of an AppendWriter: ``table.new_append().create_writer()``."""

    def __init__(self, table: FlussTable):
        self._table = table

    def create_writer(self):
        from .write import AppendWriter

        t = self._table
        if t.has_primary_key():
            raise FlussError(f"table '{t._meta.path}' has a primary key: write it with "
                             f"new_upsert(), not new_append()")
        return AppendWriter(t)

    def __repr__(self) -> str:
        return f"TableAppend(table={self._table._meta.path})"


class TableUpsert:
    """Builder of an UpsertWriter (optionally a partial update)."""

    def __init__(self, table: FlussTable, target_columns=None):
        self._table = table
        self._target = target_columns

    def partial_update_by_name(self, columns: List[str]) -> "TableUpsert":
        names = self._table._meta.schema.names
        for c in columns:
            if c not in names:
                raise FlussError(f"table '{self._table._meta.path}': unknown column '{c}' in "
                                 f"partial update; columns are {', '.join(names)}")
        return TableUpsert(self._table, [names.index(c) for c in columns])

    def partial_update_by_index(self, column_indices: List[int]) -> "TableUpsert":
        n = len(self._table._meta.schema.columns)
        for i in column_indices:
            if not isinstance(i, int) or not 0 <= i < n:
                raise FlussError(f"table '{self._table._meta.path}': column index {i!r} is out of "
                                 f"range 0..{n - 1}")
        return TableUpsert(self._table, list(column_indices))

    def create_writer(self):
        raise FlussError(f"table '{self._table._meta.path}': {_PK_NOT_SUPPORTED} "
                         f"(UpsertWriter)", -2)

    def __repr__(self) -> str:
        return f"TableUpsert(table={self._table._meta.path})"


class TableLookup:
    """Builder of a Lookuper, or of a PrefixLookuper via ``lookup_by``."""

    def __init__(self, table: FlussTable):
        self._table = table

    def create_lookuper(self):
        raise FlussError(f"table '{self._table._meta.path}': {_PK_NOT_SUPPORTED} (Lookuper)", -2)

    def lookup_by(self, column_names: List[str]) -> "TablePrefixLookup":
        return TablePrefixLookup(self._table, list(column_names))

    def __repr__(self) -> str:
        return f"TableLookup(table={self._table._meta.path})"


class TablePrefixLookup:
    def __init__(self, table: FlussTable, columns: List[str]):
        self._table = table
        self._columns = columns

    def create_lookuper(self):
        raise FlussError(f"table '{self._table._meta.path}': {_PK_NOT_SUPPORTED} "
                         f"(PrefixLookuper)", -2)

    def __repr__(self) -> str:
        return f"TablePrefixLookup(table={self._table._meta.path}, columns={self._columns})"
