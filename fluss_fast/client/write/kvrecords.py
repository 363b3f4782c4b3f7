"""What KV writes add to the write path: the record builder, the KV batch header and PutKv framing.

A KV batch (docs/contributing/formats.md §5) is records back to back behind a 28-byte header that carries the writer
id and batch sequence; as for log batches the header is built when the batch goes out (the
sequence is assigned then) and the payload is reused by every retry. Callers encode each record
whole (``int32 length | varint key length | key | value``) on their own thread, straight into
the batch's ``KvRecordBuilder`` (``client/write/upsertrow.py``, compiled).
"""
from __future__ import annotations

import struct

from ...codec.kv.kvbatch import KV_HEADER_SIZE, KV_MAGIC
from ...codec.wire.crc32c import crc32c
from ...rpc.wire import PUT_KV

# the records and their builder live with the per-row fast path that writes into them
from .upsertrow import KvChunk, KvRecordBuilder, kv_record

__all__ = ["KvChunk", "KvRecordBuilder", "kv_record", "kv_batch_header", "encode_put_kv_request"]

_HEAD = struct.Struct("<ibI")      # length, magic, crc
_TAIL = struct.Struct("<hbqii")    # schema id, attributes, writer id, batch sequence, count


def kv_batch_header(payload, *, schema_id: int, record_count: int, writer_id: int = -1,
                    batch_sequence: int = -1) -> bytes:
    """``header + payload`` equals ``kvbatch.build_kv_batch`` of the same records."""
    if record_count <= 0:
        raise ValueError(f"a KV batch needs records, got record_count={record_count}")
    tail = _TAIL.pack(schema_id, 0, writer_id, batch_sequence, record_count)
    crc = crc32c(payload, crc32c(tail))
    total = KV_HEADER_SIZE + memoryview(payload).nbytes
    return _HEAD.pack(total - 4, KV_MAGIC, crc) + tail


def encode_put_kv_request(acks: int, table_id: int, timeout_ms: int, target_columns, buckets) -> list:
    """Serialized ``PutKvRequest`` as bytes-like chunks, batches not copied
    (``rpc.wire``)."""
    return PUT_KV.encode(acks, table_id, timeout_ms, buckets, target_columns)
