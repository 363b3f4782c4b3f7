"""Log batches written under an older schema id, read under the scanner's schema.

After ``ALTER TABLE ... ADD COLUMN`` a bucket's log holds batches of every schema id the table has
had. A scanner reads them all in the schema it was created with: each older batch is decoded with
its own schema (its Arrow schema or its row codec), then its columns are placed by column id
(``codec.rows.rowarrow.column_mapping``); the columns it lacks are null.

The older schemas are fetched once, all of them, before a scanner's first fetch (GET_TABLE_SCHEMA
for ids 1 .. current - 1). Fetching up front instead of when a batch shows up keeps decoding a pure
function of the bytes, so it runs on the codec worker threads as it does for current batches. A
table never altered (schema id 1) sends no request.

A batch of a newer schema id than the scanner's (the table altered after the scanner was made)
is refused with a clear error: the scanner's schema is what its users were promised.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pyarrow as pa

from ...codec.rows.rowarrow import column_mapping
from ...datatypes import SchemaInfo
from ...error_codes import CLIENT_ERROR
from ...errors import FlussError
from ..kvread import fetch_schema

__all__ = ["OlderSchema", "ensure_older_schemas"]


class OlderSchema:
    """Decoder of the log batches of one older schema id into record batches of the current one."""

    def __init__(self, spec, schema: SchemaInfo) -> None:
        from .decode import pyfluss_labels

        self.arrow = pyfluss_labels(schema.to_arrow())
        try:
            mapping = column_mapping(spec.schema, schema)
        except ValueError as e:
            raise FlussError(f"table '{spec.path}': {e}", CLIENT_ERROR) from None
        # for each current column, its position in the older batch (None: the older schema lacks it)
        where = dict.fromkeys(range(len(spec.schema.columns)))
        for k, j in enumerate(mapping):
            if j >= 0:
                where[j] = k
        self._sources = [where[j] for j in range(len(spec.schema.columns))]
        self._target = spec.full_arrow
        desc = spec.meta.descriptor
        self._codec: Any = None
        self._row_codec: Any = None
        if spec.arrow_format:
            from ...codec.log.arrowlog import ArrowLogCodec

            self._codec = ArrowLogCodec(schema, desc.compression, desc.compression_level,
                                        table_name=str(spec.path))
        else:
            from ...codec.log.indexedlog import RowLogCodec

            self._row_codec = RowLogCodec(schema.types, spec.log_format, schema.names)

    def decode(self, mv, h, memory=None):
        """(record batch of the current schema, change types) of the whole batch ``h``."""
        if self._codec is not None:
            rb, cts = self._codec.decode(mv, h, arrow_schema=self.arrow, memory=memory)
        else:
            rb, cts = self._row_codec.decode_arrow(mv, h, self.arrow)
        n = rb.num_rows
        target = self._target
        cols = [rb.column(k) if k is not None else pa.nulls(n, target.field(j).type)
                for j, k in enumerate(self._sources)]
        return pa.RecordBatch.from_arrays(cols, schema=target), cts


async def _load(ctx, spec) -> None:
    ids = range(1, spec.schema_id)
    schemas = await asyncio.gather(*(fetch_schema(ctx, spec.meta, sid) for sid in ids))
    spec.older = {sid: OlderSchema(spec, s) for sid, s in zip(ids, schemas, strict=True)}


async def ensure_older_schemas(ctx, spec) -> None:
    """Fetch the table's older schemas into ``spec`` unless it has them (or needs none).

    Concurrent callers share one fetch; a failed fetch is raised to each and tried again on the
    next call."""
    if spec.older is not None:
        return
    task = spec.older_loading
    if task is None:
        task = spec.older_loading = asyncio.ensure_future(_load(ctx, spec))
    try:
        await asyncio.shield(task)
    finally:
        if task.done() and (task.cancelled() or task.exception() is not None):
            spec.older_loading = None
