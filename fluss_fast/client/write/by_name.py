"""Lines up the columns of user Arrow data with the table's columns by name.

Matching by position would silently store a batch whose same-typed columns are swapped into the
wrong columns; names are the only thing the caller and the table both spell out.
"""
from __future__ import annotations

import pyarrow as pa

from ...errors import FlussError


def by_name(batch: pa.RecordBatch, names: list, table_name: str) -> pa.RecordBatch:
    """``batch`` with its columns in the table's order, or FlussError naming what does not match.

    The same set of names in another order is reordered; a missing, unknown or repeated name is
    refused (the batch cannot be placed without guessing).
    """
    got = batch.schema.names
    if got == names:
        return batch
    if len(set(got)) != len(got):
        dup = sorted({n for n in got if got.count(n) > 1})
        raise FlussError(f"table '{table_name}': the Arrow data names column(s) {', '.join(map(repr, dup))} "
                         f"more than once; columns are matched by name")
    missing = [n for n in names if n not in got]
    unknown = [n for n in got if n not in names]
    if missing or unknown:
        # pyfluss's wording first (code written against its messages keeps working), then ours
        if len(got) != len(names):
            head = f"RecordBatch has {len(got)} columns but the table has {len(names)}"
        else:
            i = next(k for k, n in enumerate(got) if n not in names)
            head = f"Column {i} is named '{got[i]}' but the table declares '{names[i]}'"
        parts = []
        if missing:
            parts.append(f"missing column(s) {', '.join(map(repr, missing))}")
        if unknown:
            parts.append(f"column(s) {', '.join(map(repr, unknown))} the table does not have")
        raise FlussError(f"table '{table_name}': {head}: the Arrow data has {'; '.join(parts)} "
                         f"(Arrow columns: {', '.join(got)}; table columns: {', '.join(names)}); "
                         f"columns are matched by name")
    return batch.select(names)
