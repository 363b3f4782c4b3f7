"""INDEXED and COMPACTED log-format batches: row-per-record payloads (docs/contributing/formats.md §3.1).

A V0 log batch whose payload is ``RecordCount`` records, each
``int32 length (= 1 + row size) | change-type byte | row``; the row is an IndexedRow (INDEXED)
or a CompactedRow (COMPACTED). These formats are never compressed and carry no change-type vector:
a batch is append-only (attribute bit 0) when every record is ``+A`` (0).

``to_arrow`` turns decoded rows into a ``pa.RecordBatch`` so that scanners can hand INDEXED and
COMPACTED tables out through the same Arrow-shaped API as ARROW tables.
"""
from __future__ import annotations

import struct
from collections.abc import Sequence

import pyarrow as pa

from ...metadata import ChangeType
from ..errors import CorruptBatchError
from ..rows import values as V
from ..rows.compacted import CompactedRowDecoder, CompactedRowEncoder
from ..rows.indexed import IndexedRowDecoder, IndexedRowEncoder
from ..rows.rowtypes import COMPACTED, INDEXED
from . import logbatch

__all__ = ["INDEXED", "COMPACTED", "APPEND_ONLY", "INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE",
           "RowLogCodec", "build_row_log_batch", "build_indexed_batch", "encode_row_records",
           "decode_row_log_batch", "decode_indexed_batch", "to_arrow"]

# Change-type bytes (docs/contributing/formats.md §2.5), the per-record attribute byte here, as plain ints of the one
# definition (the public ChangeType).
APPEND_ONLY, INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = (
    int(ChangeType.AppendOnly), int(ChangeType.Insert), int(ChangeType.UpdateBefore),
    int(ChangeType.UpdateAfter), int(ChangeType.Delete))

_I32 = struct.Struct("<i")
_FORMATS = (INDEXED, COMPACTED)


def _check_fmt(fmt: str) -> str:
    f = str(fmt).upper()
    if f not in _FORMATS:
        raise ValueError(f"row log format must be INDEXED or COMPACTED, got {fmt!r}")
    return f


class RowLogCodec:
    """Encoder + decoder of one schema in one row format, reusable across batches."""

    __slots__ = ("fmt", "types", "names", "encoder", "decoder")

    def __init__(self, types, fmt: str = INDEXED, names: Sequence[str] | None = None) -> None:
        self.fmt = _check_fmt(fmt)
        self.types = list(types)
        self.names = list(names) if names is not None else None
        if self.fmt == INDEXED:
            self.encoder = IndexedRowEncoder(self.types, self.names)
            self.decoder = IndexedRowDecoder(self.types, self.names)
        else:
            self.encoder = CompactedRowEncoder(self.types, self.names)
            self.decoder = CompactedRowDecoder(self.types, self.names)

    def encode_records(self, rows, change_types=None) -> bytes:
        return encode_row_records(rows, self.encoder, change_types)

    def build(self, rows, *, schema_id: int, change_types=None, writer_id: int = -1,
              batch_sequence: int = -1) -> bytes:
        payload = encode_row_records(rows, self.encoder, change_types)
        return logbatch.build_batch(payload, schema_id=schema_id, record_count=len(rows),
                                    append_only=_append_only(change_types), writer_id=writer_id,
                                    batch_sequence=batch_sequence)

    def decode(self, buf, header) -> list[tuple[int, list]]:
        return _decode_records(buf, header, self.decoder)

    def decode_arrow(self, buf, header, arrow_schema: pa.Schema) -> tuple[pa.RecordBatch, bytes | None]:
        """(record batch in ``arrow_schema``, change types; None for an append-only batch)."""
        decoded = self.decode(buf, header)
        rb = to_arrow([values for _, values in decoded], arrow_schema)
        return rb, None if header.append_only else bytes(ct for ct, _ in decoded)


def _append_only(change_types) -> bool:
    return change_types is None or all(c == APPEND_ONLY for c in change_types)


def encode_row_records(rows, encoder, change_types=None) -> bytes:
    """The records payload for ``rows`` (value lists) with an Indexed/CompactedRowEncoder."""
    return encoder.encode_records(rows, change_types)


def build_row_log_batch(rows, types, *, fmt: str = INDEXED, schema_id: int, change_types=None,
                        writer_id: int = -1, batch_sequence: int = -1,
                        names: Sequence[str] | None = None) -> bytes:
    """A whole V0 log batch of ``rows`` (lists of values) in the INDEXED or COMPACTED format.

    ``change_types`` (one 0..4 byte per row) defaults to all ``+A``; the batch is marked
    append-only iff every record is ``+A``.
    """
    return RowLogCodec(types, fmt, names).build(rows, schema_id=schema_id, change_types=change_types,
                                                writer_id=writer_id, batch_sequence=batch_sequence)


def build_indexed_batch(rows, types, *, schema_id: int, change_types=None, writer_id: int = -1,
                        batch_sequence: int = -1) -> bytes:
    return build_row_log_batch(rows, types, fmt=INDEXED, schema_id=schema_id, change_types=change_types,
                               writer_id=writer_id, batch_sequence=batch_sequence)


def _decode_records(buf, header, decoder) -> list[tuple[int, list]]:
    start = getattr(header, "position", 0) or 0
    pos = start + header.header_size
    end = start + header.total_size
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    if end > mv.nbytes:
        raise CorruptBatchError(f"batch at byte {start}: truncated ({mv.nbytes - start} of "
                                f"{header.total_size} bytes)", position=start)
    data = bytes(mv[pos:end])  # one copy; rows decode from (and slice) plain bytes
    out = []
    p = 0
    n = len(data)
    decode = decoder.decode
    for i in range(header.record_count):
        if p + 5 > n:
            raise CorruptBatchError(f"batch at byte {start}: record {i} is truncated", position=start)
        length = _I32.unpack_from(data, p)[0]
        if length < 1 or p + 4 + length > n:
            raise CorruptBatchError(f"batch at byte {start}: record {i} has bad length {length}",
                                    position=start)
        ct = data[p + 4]
        try:
            values = decode(data, p + 5, p + 4 + length)
        except ValueError as exc:
            raise CorruptBatchError(f"batch at byte {start}: record {i}: {exc}", position=start) from None
        out.append((ct, values))
        p += 4 + length
    return out


def decode_row_log_batch(buf, header, types, fmt: str = INDEXED,
                         names: Sequence[str] | None = None) -> list[tuple[int, list]]:
    """``[(change_type, values), ...]`` of the batch described by ``header`` (a BatchHeader whose
    ``position`` locates it in ``buf``)."""
    fmt = _check_fmt(fmt)
    dec = IndexedRowDecoder(types, names) if fmt == INDEXED else CompactedRowDecoder(types, names)
    return _decode_records(buf, header, dec)


def decode_indexed_batch(buf, header, types) -> list[tuple[int, list]]:
    return decode_row_log_batch(buf, header, types, INDEXED)


# ----------------------------------------------------------------------------------------------
# Python rows -> Arrow
# ----------------------------------------------------------------------------------------------
_UNIT_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_EPOCH = V.EPOCH
_EPOCH_UTC = V.EPOCH_UTC


def _ts_to_int(v, unit: str):
    if v is None:
        return None
    d = v - (_EPOCH_UTC if v.tzinfo is not None else _EPOCH)
    micros = (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    if unit == "us":
        return micros
    if unit == "ns":
        return micros * 1000
    return micros // (1_000_000 // _UNIT_PER_SECOND[unit])


def _time_to_int(v, unit: str):
    if v is None:
        return None
    micros = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    if unit == "ns":
        return micros * 1000
    return micros // (1_000_000 // _UNIT_PER_SECOND[unit])


def _pad_binary(v, width: int):
    if v is None or len(v) == width:
        return v
    if len(v) > width:
        raise ValueError(f"BINARY({width}) value of {len(v)} bytes")
    return v + b"\x00" * (width - len(v))


def _column(values: list, t: pa.DataType) -> pa.Array:
    # Flat temporal columns go through integers: exact, and several times faster than pyarrow's
    # datetime conversion. Nested ones rely on pyarrow's own Python conversion.
    if pa.types.is_timestamp(t):
        return pa.array([_ts_to_int(v, t.unit) for v in values], type=pa.int64()).view(t)
    if pa.types.is_time(t):
        base = pa.int32() if t.bit_width == 32 else pa.int64()
        return pa.array([_time_to_int(v, t.unit) for v in values], type=base).view(t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array([_pad_binary(v, t.byte_width) for v in values], type=t)
    return pa.array(values, type=t)


def to_arrow(rows: Sequence[Sequence], schema) -> pa.RecordBatch:
    """A RecordBatch of decoded rows; ``schema`` is a ``datatypes.SchemaInfo`` or ``pa.Schema``."""
    arrow_schema = schema if isinstance(schema, pa.Schema) else schema.to_arrow()
    n = len(arrow_schema)
    for r in rows:
        if len(r) != n:
            raise ValueError(f"row has {len(r)} values but the schema has {n} columns")
    columns = [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(n)]
    arrays = [_column(columns[j], arrow_schema.field(j).type) for j in range(n)]
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)
