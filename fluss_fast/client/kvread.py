"""Stored rows of primary-key tables read by the client: value batches (LIMIT_SCAN, SCAN_KV) decoded
with ``codec.rowarrow`` straight into record batches of the table's Arrow schema, and looked-up
values (LOOKUP, PREFIX_LOOKUP) as dicts.

Each stored row carries the schema id it was written under (docs/contributing/formats.md §7). Rows of an older schema
(before an added column) are mapped into the schema the client knows, by column id, new columns
null; a schema the client has not seen is fetched once with GET_TABLE_SCHEMA.
"""
from __future__ import annotations

import json

import pyarrow as pa

from ..codec.rows.compacted import CompactedRowDecoder
from ..codec.rows.indexed import IndexedRowDecoder
from ..codec.rows.rowarrow import RowsToArrow, UnknownSchemaError, column_mapping
from ..datatypes import SchemaInfo
from ..error_codes import Errors
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api

_MAX_SCHEMA_FETCHES = 8  # distinct older schema ids one answer may need


class ValueRows:
    """Decoder of a table's stored rows, whatever schema id each was written under."""

    def __init__(self, meta, ctx=None):
        self.meta = meta
        self._ctx = ctx
        self._conv = RowsToArrow(meta.schema, meta.descriptor.kv_format, {meta.schema_id: meta.schema},
                                 str(meta.path), meta.schema_id)
        self.arrow_schema = self._conv.arrow_schema

    async def batch_of(self, raw) -> pa.RecordBatch:
        """Every row of the value batches in ``raw`` as one RecordBatch of the table's schema."""
        for _ in range(_MAX_SCHEMA_FETCHES + 1):
            try:
                return self._conv.value_batch(raw)
            except UnknownSchemaError as e:
                if self._ctx is None:
                    raise self._corrupt(e) from None
                await self._fetch_schema(e.schema_id)
            except ValueError as e:
                raise self._corrupt(e) from None
        raise FlussError(f"table '{self.meta.path}': rows of more than {_MAX_SCHEMA_FETCHES} unknown schema "
                         f"ids in one answer", Errors.CORRUPT_MESSAGE)

    def _corrupt(self, e: Exception) -> FlussError:
        return FlussError(f"table '{self.meta.path}': corrupt value batch: {e}", Errors.CORRUPT_MESSAGE)

    async def _fetch_schema(self, schema_id: int) -> None:
        self._conv.add_schema(schema_id, await fetch_schema(self._ctx, self.meta, schema_id))


async def fetch_schema(ctx, meta, schema_id: int) -> SchemaInfo:
    """Schema ``schema_id`` of the table (GET_TABLE_SCHEMA), fetched once per connection."""
    key = (meta.table_id, schema_id)
    cached = ctx.schemas.get(key)
    if cached is not None:
        return cached
    req = pb.GetTableSchemaRequest()
    meta.path._to_pb(req.table_path)
    req.schema_id = schema_id
    resp = await ctx.coordinator(Api.GET_TABLE_SCHEMA, req)
    try:
        info = SchemaInfo.from_json(json.loads(resp.schema_json))
    except (ValueError, TypeError, KeyError) as e:
        raise FlussError(f"table '{meta.path}': unreadable schema {schema_id}: {e}",
                         Errors.CORRUPT_MESSAGE) from None
    ctx.schemas[key] = info
    return info


class OlderRows:
    """Looked-up values written under another schema id than the client's: a dict by the current
    column names (columns the row's schema lacks are None)."""

    def __init__(self, meta, ctx):
        self.meta = meta
        self._ctx = ctx
        self._plans = {}

    async def row_dict(self, schema_id: int, data: bytes) -> dict:
        plan = self._plans.get(schema_id)
        if plan is None:
            source = await fetch_schema(self._ctx, self.meta, schema_id)
            cls = IndexedRowDecoder if self.meta.descriptor.kv_format == "INDEXED" else CompactedRowDecoder
            plan = self._plans[schema_id] = (cls(source.types, source.names),
                                             column_mapping(self.meta.schema, source))
        decoder, mapping = plan
        values = decoder.decode(data, 2, len(data))
        names = self.meta.schema.names
        out = dict.fromkeys(names)
        for k, j in enumerate(mapping):
            if j >= 0:
                out[names[j]] = values[k]
        return out
