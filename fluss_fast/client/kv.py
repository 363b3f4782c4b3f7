"""pyfluss's primary-key classes: ``UpsertWriter``, ``Lookuper``, ``PrefixLookuper``.

Primary-key tables arrive in a later issue. Until then these classes carry pyfluss's exact
members (same names, same async-ness) so code written against pyfluss imports, type-checks and
introspects the same; creating one raises a FlussError that names the table, as the builders in
``client.table`` do. The primary-key implementation replaces the bodies, not the surface.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from ..errors import FlussError
from .write.batch import WriteResultHandle

CLIENT_ERROR = -2


def not_supported(table_name: str, what: str) -> FlussError:
    return FlussError(f"table '{table_name}': primary-key tables are not supported yet "
                      f"by fluss_fast ({what})", CLIENT_ERROR)


def _name_of(table) -> str:
    meta = getattr(table, "_meta", None)
    return str(meta.path) if meta is not None else "?"


class UpsertWriter:
    """Writer for upserting and deleting rows of a primary-key table (not supported yet)."""

    def __init__(self, table, target_columns: Optional[List[int]] = None):
        self._table_name = _name_of(table)
        raise not_supported(self._table_name, "UpsertWriter")

    def upsert(self, row) -> WriteResultHandle:
        raise not_supported(self._table_name, "UpsertWriter.upsert")

    def delete(self, pk) -> WriteResultHandle:
        raise not_supported(self._table_name, "UpsertWriter.delete")

    async def flush(self) -> None:
        raise not_supported(self._table_name, "UpsertWriter.flush")

    async def __aenter__(self) -> "UpsertWriter":
        return self

    async def __aexit__(self, exc_type=None, exc_value=None, traceback=None) -> bool:
        if exc_type is None:
            await self.flush()
        return False

    def __repr__(self) -> str:
        return "UpsertWriter()"


class Lookuper:
    """Point lookups by primary key (not supported yet)."""

    def __init__(self, table):
        self._table_name = _name_of(table)
        raise not_supported(self._table_name, "Lookuper")

    async def lookup(self, pk) -> Optional[Dict[str, object]]:
        raise not_supported(self._table_name, "Lookuper.lookup")

    def __repr__(self) -> str:
        return "Lookuper()"


class PrefixLookuper:
    """Lookups of every row whose primary key starts with a prefix (not supported yet)."""

    def __init__(self, table, columns: List[str]):
        self._table_name = _name_of(table)
        raise not_supported(self._table_name, "PrefixLookuper")

    async def lookup(self, prefix) -> List[Dict[str, object]]:
        raise not_supported(self._table_name, "PrefixLookuper.lookup")

    def __repr__(self) -> str:
        return "PrefixLookuper()"
