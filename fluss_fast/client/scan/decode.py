"""What one scanner reads (``ScanSpec``) and how a bucket's fetched records become chunks.

Pure functions of the bytes: no sockets, no loop, no bucket positions, so they run on the codec
worker threads as well as on the runtime loop. A batch is checked (schema id, CRC unless the
server projected it), decoded by the table's codec (``codec/arrowlog.py`` for ARROW, the row codec
otherwise; a batch of an older schema id by that schema's, into the scanner's columns: ``schemas.py``),
cut at the fetch offset, filtered by the exact predicate and reordered into the user's columns; what
is left is a ``records.Chunk``.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ...codec.log import logbatch
from ...error_codes import CLIENT_ERROR, Errors
from ...errors import FlussError
from .records import Chunk, RowSource

__all__ = ["ScanSpec", "pyfluss_labels"]

CORRUPT_MESSAGE = Errors.CORRUPT_MESSAGE


def _relabel(t: pa.DataType) -> pa.DataType:
    if pa.types.is_list(t):
        f = t.value_field
        return pa.list_(pa.field("item", _relabel(f.type), f.nullable))
    if pa.types.is_map(t):
        return pa.map_(pa.field("key", _relabel(t.key_type), False),
                       pa.field("value", _relabel(t.item_type), t.item_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _relabel(f.type), f.nullable) for f in t])
    return t


def pyfluss_labels(schema: pa.Schema) -> pa.Schema:
    """``schema`` with pyfluss's nested field names (list items are called ``item``).

    Names never travel on the wire, so decoding straight into this schema costs nothing.
    """
    return pa.schema([pa.field(f.name, _relabel(f.type), f.nullable) for f in schema])


# -- what one scanner reads -------------------------------------------------------------------------
class ScanSpec:
    """Everything fixed when a scanner is created: table, projection, filter, decoders."""

    def __init__(self, meta, *, projection: list[int] | None = None, predicate=None, exact: bool = True):
        from ...codec.log.arrowlog import ArrowLogCodec

        self.meta = meta
        self.path = meta.path
        self.table_id = meta.table_id
        self.schema = meta.schema
        self.schema_id = meta.schema_id
        self.num_buckets = meta.num_buckets
        self.partitioned = meta.is_partitioned
        desc = meta.descriptor
        self.log_format = desc.log_format
        self.full_arrow = pyfluss_labels(self.schema.to_arrow())
        ncols = len(self.schema.columns)
        self.user_fields = list(projection) if projection is not None else None
        # sent to the server, which skips the batches whose statistics rule it out
        self.predicate = predicate
        # applied to every row here as well (TableScan.where); TableScan.filter leaves the rows of
        # the batches the server sent as they are, as pyfluss and the Java client do
        self.row_filter = predicate if exact else None
        needed = set(range(ncols)) if projection is None else set(projection)
        if self.row_filter is not None:
            needed |= set(predicate.columns)
        fetch = sorted(needed)
        self.arrow_format = self.log_format == "ARROW"
        # The server projects ARROW batches only (INDEXED answers 34); others are projected here.
        # After a schema change the log holds batches of older schema ids, which are read by column
        # id here (``schemas.py``); they are fetched whole rather than trusting every server to
        # project an older batch by the current schema's positions.
        self.pushdown = self.arrow_format and len(fetch) < ncols and self.schema_id <= 1
        # older schema id -> schemas.OlderSchema, filled before the first fetch; None until then
        self.older: dict | None = {} if self.schema_id <= 1 else None
        self.older_loading = None
        self.fetch_fields = fetch if self.pushdown else None
        decoded = fetch if self.pushdown else list(range(ncols))
        self.decoded_schema = pa.schema([self.full_arrow.field(i) for i in decoded])
        pos_in_decoded = {f: k for k, f in enumerate(decoded)}
        self.pred_positions = pos_in_decoded
        out_fields = list(range(ncols)) if projection is None else list(projection)
        self.out_select = None if out_fields == decoded else [pos_in_decoded[f] for f in out_fields]
        self.out_schema = pa.schema([self.full_arrow.field(i) for i in out_fields])
        # Projected batches carry a stale CRC (the server rewrites them without recomputing it).
        self.check_crc = not self.pushdown
        # records received from the server and decoded, before the exact filter: what pushdown saves
        self.records_fetched = 0
        table_name = str(self.path)
        if self.arrow_format:
            self.codec = ArrowLogCodec(self.schema, desc.compression, desc.compression_level,
                                       table_name=table_name)
            self.row_codec = None
        else:
            from ...codec.log.indexedlog import RowLogCodec

            self.codec = None
            self.row_codec = RowLogCodec(self.schema.types, self.log_format, self.schema.names)

    def where(self, bucket) -> str:
        part = f", partition {bucket.partition_id}" if bucket.partition_id is not None else ""
        return f"table '{self.path}'{part}, bucket {bucket.bucket_id}"

    def empty_table(self) -> pa.Table:
        return self.out_schema.empty_table()

    # -- decoding one bucket's records ---------------------------------------------------------
    def check_schema(self, bucket, h, label: str = "") -> None:
        """Raise unless batch ``h`` is of the scanner's schema id or of an older one it knows."""
        sid = h.schema_id
        if sid == self.schema_id or (self.older is not None and sid in self.older):
            return
        raise FlussError(
            f"{self.where(bucket)}: batch at offset {h.base_offset}{label} was written with schema "
            f"id {sid}, the scanner reads schema id {self.schema_id}; "
            f"create a new scanner after a schema change", CLIENT_ERROR)

    def _decode_batch(self, mv, h, full: bool = False, memory=None):
        """(record batch, change types) of batch ``h`` in the scanner's schema (a batch of an
        older schema id too: see ``check_schema``); ``full`` when the server did not project;
        ``memory``: a ``codec.bodypool.BodyPool`` for decompressed data."""
        if h.schema_id != self.schema_id:
            # pushdown is off whenever older schemas exist, so the batch is whole
            return self.older[h.schema_id].decode(mv, h, memory)
        if self.arrow_format:
            if self.pushdown and not full:
                return self.codec.decode(mv, h, projected=self.decoded_schema, memory=memory)
            return self.codec.decode(mv, h, arrow_schema=self.full_arrow, memory=memory)
        return self.row_codec.decode_arrow(mv, h, self.full_arrow)

    def decode_full_batches(self, bucket, mv, start: int = 0, end: int | None = None):
        """[(header, full-schema record batch, change types)] of every complete batch, CRC checked
        (LIMIT_SCAN answers are never projected by the server)."""
        out = []
        for h in logbatch.iter_batches(mv, start, end):
            self.check_schema(bucket, h)
            if not logbatch.verify_crc(mv, h.position):
                raise FlussError(f"{self.where(bucket)}: corrupt batch at offset {h.base_offset} "
                                 f"(CRC mismatch)", CORRUPT_MESSAGE)
            if h.record_count > 0:
                rb, cts = self._decode_batch(mv, h, full=True)
                out.append((h, rb, cts))
        return out

    def output_of_full(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        """The user's columns, in the user's order, of a full-schema batch."""
        if self.user_fields is None:
            return rb
        return rb.select(self.user_fields)

    def decode_records(self, bucket, mv, start: int, end: int, fetch_offset: int, memory=None):
        """(chunks, next fetch offset) for the records blob ``mv[start:end]`` fetched at
        ``fetch_offset``; rows below the fetch offset are dropped. ``memory``: see
        ``_decode_batch``."""
        chunks = []
        next_offset = fetch_offset
        complete = 0
        for h in logbatch.iter_batches(mv, start, end):
            complete += 1
            if fetch_offset >= 0 and h.next_offset <= fetch_offset:
                continue
            self.check_schema(bucket, h)
            if self.check_crc and not logbatch.verify_crc(mv, h.position):
                raise FlussError(
                    f"{self.where(bucket)}: corrupt batch at offset {h.base_offset} "
                    f"(CRC mismatch)", CORRUPT_MESSAGE)
            if h.record_count > 0:
                self.records_fetched += h.record_count
                rb, cts = self._decode_batch(mv, h, memory=memory)
                chunk = self._chunk(bucket, h, rb, cts, fetch_offset)
                if chunk is not None:
                    chunks.append(chunk)
            next_offset = h.next_offset
        if complete == 0 and end > start:
            raise FlussError(
                f"{self.where(bucket)}: the batch at offset {fetch_offset} does not fit into the "
                f"fetch size ({end - start} bytes returned); raise "
                f"scanner.log.fetch.max-bytes-for-bucket", CLIENT_ERROR)
        return chunks, next_offset

    def _chunk(self, bucket, h, rb, cts, fetch_offset: int):
        base = h.base_offset
        if fetch_offset > base:
            skip = fetch_offset - base
            rb = rb.slice(skip)
            if cts is not None:
                cts = cts[skip:]
            base = fetch_offset
        offsets = None
        if self.row_filter is not None and rb.num_rows:
            mask = self.row_filter.mask(rb, self.pred_positions)
            kept = mask.true_count
            if kept == 0:
                return None
            if kept < rb.num_rows:
                idx = pc.indices_nonzero(mask)
                offsets = pc.add(idx, pa.scalar(base, pa.uint64())).to_pylist()
                if cts is not None:
                    cts = bytes(cts[i] for i in idx.to_pylist())
                rb = rb.filter(mask)
                base = offsets[0]
                if offsets[-1] - base + 1 == len(offsets):
                    offsets = None
        if rb.num_rows == 0:
            return None
        if self.out_select is not None:
            rb = rb.select(self.out_select)
        return Chunk(bucket, RowSource(rb), 0, rb.num_rows, base, offsets, cts,
                     h.commit_timestamp, h.next_offset)
