"""pyfluss's primary-key classes, where ``client.table`` and the public surface import them from:
``UpsertWriter`` (``write/upsert.py``), ``Lookuper`` and ``PrefixLookuper`` (``lookup.py``)."""
from __future__ import annotations

from .lookup import Lookuper, PrefixLookuper
from .write.upsert import UpsertWriter

__all__ = ["UpsertWriter", "Lookuper", "PrefixLookuper"]
