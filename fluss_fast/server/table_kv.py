"""What a bucket's KV state needs to know about its table: formats, keys, merge engine settings,
row codecs, and its changelog batches (built from merged rows, read back for replay).
Rebuilt when the table's latest schema changes (``kvstore.KvManager.table``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from ..codec.errors import CorruptBatchError
from ..codec.kv.keys import KeyScheme, key_columns, lake_key_decoder, lake_key_encoder
from ..codec.kv.kvbatch import encode_value
from ..codec.log import logbatch
from ..codec.log.indexedlog import INSERT
from ..codec.rows.compacted import CompactedRowDecoder, CompactedRowEncoder
from ..codec.rows.indexed import IndexedRowDecoder, IndexedRowEncoder
from ..codec.rows.rowtypes import INDEXED
from ..error_codes import Errors
from ..errors import FlussError
from .aggregators import Aggregator, aggregator

if TYPE_CHECKING:
    from ..codec.log.arrowlog import ArrowLogCodec
    from ..codec.rows.rowarrow import RowsToArrow

AUTO_INC_CACHE = 100_000  # table.auto-increment.cache-size: ids a bucket takes from its table's counter at once


class TableKv:
    """What a bucket needs to know about its table: formats, keys, merge engine, codecs.
    Rebuilt when the table's latest schema changes."""

    def __init__(self, entry) -> None:
        desc = entry.descriptor
        props = desc.properties
        self.path = entry.path
        self.table_id = entry.table_id
        self.kv_format = desc.kv_format
        self.log_format = desc.log_format
        self.latest_schema_id = entry.schema_id
        self.schemas = entry.schemas
        self.schema = entry.schema
        self.ncols = len(self.schema.columns)
        self.names = self.schema.names
        keys = key_columns(desc)
        self.pk = keys.primary_key
        self.pk_set = frozenset(self.pk)
        self.physical_key = keys.physical_key
        self.bucket_key = keys.bucket_key
        self.engine = (props.get("table.merge-engine") or "").strip().upper() or None
        default_delete = "ALLOW" if self.engine is None else "IGNORE"
        self.delete_behavior = (props.get("table.delete.behavior") or default_delete).strip().upper()
        self.image = (props.get("table.changelog.image") or "FULL").strip().upper()
        self.version_col = None
        if self.engine == "VERSIONED":
            self.version_col = self.schema.index_of(props["table.merge-engine.versioned.ver-column"])
        self.auto_inc = None
        self.auto_inc_max = 0
        self.auto_inc_cache = int(props.get("table.auto-increment.cache-size") or AUTO_INC_CACHE)
        if self.schema.auto_increment_columns:
            self.auto_inc = self.schema.index_of(self.schema.auto_increment_columns[0])
            col = self.schema.columns[self.auto_inc]
            self.auto_inc_max = (1 << 31) - 1 if col.type.root == "INTEGER" else (1 << 63) - 1
        self.aggs: list[Aggregator | None] | None = None
        if self.engine == "AGGREGATION":
            self.aggs = [None if i in self.pk_set else aggregator(c) for i, c in enumerate(self.schema.columns)]
        self._decoders: dict[int, CompactedRowDecoder | IndexedRowDecoder] = {}
        self._encoder = self._row_encoder(self.schema)
        # the primary key's layout: a data-lake table's may be the lake's (codec.keys.KeyScheme), as the
        # clients encode it; recovery re-encodes keys from the changelog with it
        self.key_scheme = KeyScheme(desc)
        key_types = [self.schema.columns[i].type for i in self.physical_key]
        key_names = [self.names[i] for i in self.physical_key]
        self.key_encoder = lake_key_encoder(key_types, key_names, self.key_scheme.pk_lake)
        self.key_decoder = lake_key_decoder(key_types, key_names, self.key_scheme.pk_lake)
        self.compression = (desc.compression, desc.compression_level)
        # made on first use: a table written only through one path never builds the other's
        self._changelog: ArrowLogCodec | None = None
        self._rows_to_arrow: RowsToArrow | None = None

    def _row_encoder(self, schema):
        cls = IndexedRowEncoder if self.kv_format == INDEXED else CompactedRowEncoder
        return cls(schema.types, schema.names)

    def decoder(self, schema_id: int):
        d = self._decoders.get(schema_id)
        if d is None:
            schema = self.schemas.get(schema_id)
            if schema is None:
                raise FlussError(f"Invalid schema id: {schema_id}, latest schema id: {self.latest_schema_id}",
                                 Errors.SCHEMA_NOT_EXIST)
            cls = IndexedRowDecoder if self.kv_format == INDEXED else CompactedRowDecoder
            d = self._decoders[schema_id] = cls(schema.types, schema.names)
        return d

    def decode(self, value) -> list:
        """Latest-schema values of a stored value (older rows padded with trailing nulls)."""
        # schema id (int16 LE) then the row, read in place
        sid = value[0] | (value[1] << 8)
        d = self._decoders.get(sid) or self.decoder(int.from_bytes(value[:2], "little", signed=True))
        values = d.decode(value, 2)
        if len(values) < self.ncols:
            values = values + [None] * (self.ncols - len(values))
        return values

    def encode(self, values) -> bytes:
        return encode_value(self.latest_schema_id, self._encoder.encode(values))

    # -- changelog batches ---------------------------------------------------------------------
    def changelog_codec(self) -> ArrowLogCodec:
        """The ARROW changelog's codec, in the latest schema and the table's compression."""
        codec = self._changelog
        if codec is None:
            from ..codec.log.arrowlog import ArrowLogCodec

            codec = self._changelog = ArrowLogCodec(self.schema, self.compression[0], self.compression[1],
                                                    table_name=self.path)
        return codec

    def rows_to_arrow(self) -> RowsToArrow:
        """Stored values (any schema of the table) straight to latest-schema Arrow columns."""
        conv = self._rows_to_arrow
        if conv is None:
            from ..codec.rows.rowarrow import RowsToArrow

            conv = self._rows_to_arrow = RowsToArrow(self.schema, self.kv_format, self.schemas, str(self.path),
                                                     self.latest_schema_id)
        return conv

    def build_changelog(self, rows, change_types: bytearray, writer_id: int,
                        batch_sequence: int) -> bytes:
        """One changelog batch. ``rows``: latest-schema value lists, or the table's rows already in
        Arrow — a ``rowarrow.RowArrowBuilder`` (finished here) or a ``pa.RecordBatch`` of the
        latest schema — which skips the per-row Python values entirely (docs/contributing/formats.md §8)."""
        sid = self.latest_schema_id
        batch = None
        n = len(rows) if isinstance(rows, (list, tuple)) else None
        if n is None:
            batch = rows if isinstance(rows, pa.RecordBatch) else rows.finish()
            n = batch.num_rows
            if len(change_types) != n:
                raise ValueError(f"{len(change_types)} change types for {n} changelog rows")
        if n == 0:
            return logbatch.build_batch(b"", schema_id=sid, record_count=0, append_only=False,
                                        writer_id=writer_id, batch_sequence=batch_sequence)
        if self.log_format == "ARROW":
            if batch is None:
                from ..codec.rows.columns import RowBatchBuilder

                # a builder per call: changelogs of several buckets may be built on threads at once
                builder = RowBatchBuilder(self.schema, self.path)
                builder.extend(rows)
                batch = builder.build()
            return self.changelog_codec().build(batch, schema_id=sid, writer_id=writer_id,
                                                batch_sequence=batch_sequence, change_types=bytes(change_types))
        from ..codec.log.indexedlog import build_row_log_batch

        if batch is not None:
            cols = [c.to_pylist() for c in batch.columns]
            rows = [list(r) for r in zip(*cols, strict=True)]
        return build_row_log_batch(rows, self.schema.types, fmt=self.log_format, schema_id=sid,
                                   change_types=bytes(change_types), writer_id=writer_id,
                                   batch_sequence=batch_sequence)

    def changelog_rows(self, buf, header) -> list[tuple[int, list]]:
        """``[(change_type, values)]`` of one changelog batch read back from the log (for replay)."""
        if header.record_count == 0:
            return []
        schema = self.schemas.get(header.schema_id)
        if schema is None:
            raise CorruptBatchError(f"changelog batch with unknown schema id {header.schema_id}")
        if self.log_format == "ARROW":
            from ..codec.log.arrowlog import ArrowLogCodec

            codec = ArrowLogCodec(schema, self.compression[0], self.compression[1], table_name=self.path)
            rb, cts = codec.decode(buf, header)
            names = rb.schema.names
            cols = [rb.column(i).to_pylist() for i in range(len(names))]
            rows = [list(r) for r in zip(*cols, strict=True)] if cols else []
            cts = cts or bytes([INSERT]) * len(rows)
            return list(zip(cts, rows, strict=False))
        from ..codec.log.indexedlog import decode_row_log_batch

        return decode_row_log_batch(buf, header, schema.types, self.log_format)
