"""Handing bounded reads to dataframe engines: Polars, DuckDB, pyarrow, pandas >= 3.0.

They all take the Arrow PyCapsule stream (``__arrow_c_stream__``), pulling one batch at a time, so a
scan handed to them directly is decoded as the engine consumes it rather than gathered first.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

__all__ = ["import_polars", "lazy_stream"]


def import_polars() -> Any:
    """The ``polars`` module, or an ImportError that says how to get it.

    Imported on first use: polars is an optional extra and costs ~0.2 s to import.

    Raises:
        ImportError: polars is not installed.
    """
    try:
        import polars
    except ImportError as e:
        raise ImportError("to_polars() needs polars, which is not installed: pip install polars "
                          "(or pip install 'fluss-fast[dataframes]')") from e
    return polars



class _OpenOnFirstPull:
    """Batches from ``open_batches()``, called at the first pull rather than when the stream is made.

    DuckDB opens an object's stream once just to learn its schema at bind time and releases it
    unread, then opens it again to scan: a read started eagerly would consume the scanner's
    subscriptions on the first stream and leave the second with nothing.
    """

    def __init__(self, open_batches: Callable[[], Iterable[pa.RecordBatch]]):
        self._open = open_batches
        self._it: Iterator[pa.RecordBatch] | None = None

    def __iter__(self):
        return self

    def __next__(self) -> pa.RecordBatch:
        if self._it is None:
            self._it = iter(self._open())
        return next(self._it)


def lazy_stream(schema: pa.Schema, open_batches: Callable[[], Iterable[pa.RecordBatch]],
                requested_schema: Any = None) -> Any:
    """An ``__arrow_c_stream__`` capsule of ``schema`` whose read starts at the first pull.

    Args:
        schema: The stream's schema, known without reading.
        open_batches: Starts the read; gives the batches (pulled one at a time).
        requested_schema: The consumer's schema capsule, or None (Arrow's protocol argument).

    Returns:
        A PyCapsule named ``arrow_array_stream``.
    """
    reader = pa.RecordBatchReader.from_batches(schema, _OpenOnFirstPull(open_batches))
    return reader.__arrow_c_stream__(requested_schema)
