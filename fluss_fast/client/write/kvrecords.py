"""What KV writes add to the write path: the record builder, the KV batch header and PutKv framing.

A KV batch (DATA.md §5) is records back to back behind a 28-byte header that carries the writer
id and batch sequence; as for log batches the header is built when the batch goes out (the
sequence is assigned then) and the payload is reused by every retry. Callers encode each record
whole (``int32 length | varint key length | key | value``) on their own thread, so the builder
only concatenates.
"""
from __future__ import annotations

import struct

from ...codec.crc32c import crc32c
from ...codec.kvbatch import KV_HEADER_SIZE, KV_MAGIC
from ...rpc.wire import PUT_KV
from ...rpc.wire import encode_varint as _varint

_HEAD = struct.Struct("<ibI")      # length, magic, crc
_TAIL = struct.Struct("<hbqii")    # schema id, attributes, writer id, batch sequence, count
_I32 = struct.Struct("<i")
_BYTE = [bytes((i,)) for i in range(256)]


def kv_record(key: bytes, value) -> bytes:
    """One KV record; ``value`` None is a delete."""
    n = len(key)
    if n < 0x80 and value is not None:  # one-byte key length: the common case
        return _I32.pack(1 + n + len(value)) + _BYTE[n] + key + value
    klen = _varint(len(key))
    if value is None:
        return _I32.pack(len(klen) + len(key)) + klen + key
    return b"".join((_I32.pack(len(klen) + len(key) + len(value)), klen, key, value))


def kv_batch_header(payload, *, schema_id: int, record_count: int, writer_id: int = -1,
                    batch_sequence: int = -1) -> bytes:
    """``header + payload`` equals ``kvbatch.build_kv_batch`` of the same records."""
    if record_count <= 0:
        raise ValueError(f"a KV batch needs records, got record_count={record_count}")
    tail = _TAIL.pack(schema_id, 0, writer_id, batch_sequence, record_count)
    crc = crc32c(payload, crc32c(tail))
    total = KV_HEADER_SIZE + memoryview(payload).nbytes
    return _HEAD.pack(total - 4, KV_MAGIC, crc) + tail


class KvChunk:
    """Finished records of a KV batch; ``num_rows`` as Arrow chunks have it, for the accumulator."""

    __slots__ = ("data", "num_rows")

    def __init__(self, data, num_rows: int):
        self.data = data
        self.num_rows = num_rows


class KvRecordBuilder:
    """Records of one open KV batch (the accumulator's row builder for KV batches)."""

    __slots__ = ("_buf", "_n")

    def __init__(self):
        self._buf = bytearray()
        self._n = 0

    def append(self, record) -> int:
        self._buf += record
        self._n += 1
        return len(self._buf)

    def __len__(self) -> int:
        return self._n

    def build(self) -> KvChunk:
        out = KvChunk(bytes(self._buf), self._n)
        self._buf = bytearray()
        self._n = 0
        return out


def encode_put_kv_request(acks: int, table_id: int, timeout_ms: int, target_columns, buckets) -> list:
    """Serialized ``PutKvRequest`` as bytes-like chunks, batches not copied
    (``rpc.wire``)."""
    return PUT_KV.encode(acks, table_id, timeout_ms, buckets, target_columns)
