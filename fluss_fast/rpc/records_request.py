"""Hand-framed protobuf of the two write requests, ProduceLog and PutKv (RPC.md), so that the
encoded batches go to the socket as they are instead of being copied into a protobuf message.

Both share the shape: acks=1, table_id=2, timeout_ms=3, then repeated per-bucket messages
{partition_id=1, bucket_id=2, records=3}; PutKv adds packed target_columns=4 and so moves the
bucket list to field 5.
"""
from __future__ import annotations

COALESCE_BELOW = 64 * 1024  # smaller payloads are joined to their framing: fewer socket writes

PRODUCE_LOG_BUCKETS_TAG = b"\x22"  # field 4, length-delimited
PUT_KV_BUCKETS_TAG = b"\x2a"       # field 5, length-delimited
_TARGET_COLUMNS_TAG = b"\x22"      # PutKv field 4, packed


def varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # negative int32/int64 are sign-extended to ten bytes
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_records_request(acks: int, table_id: int, timeout_ms: int, buckets, buckets_tag: bytes,
                           target_columns=None) -> list:
    """The request as a list of bytes-like chunks (to be written in order).

    ``buckets`` is ``[(partition_id | None, bucket_id, [records_chunk, ...]), ...]``; the records
    of one bucket are the concatenation of its chunks. Large chunks are passed through as they
    are, not copied."""
    out = []
    cur = bytearray(b"\x08")
    cur += varint(acks)
    cur += b"\x10"
    cur += varint(table_id)
    cur += b"\x18"
    cur += varint(timeout_ms)
    if target_columns:
        packed = b"".join(varint(c) for c in target_columns)
        cur += _TARGET_COLUMNS_TAG
        cur += varint(len(packed))
        cur += packed
    for partition_id, bucket_id, records in buckets:
        views = [c if isinstance(c, (bytes, bytearray)) else memoryview(c).cast("B") for c in records]
        rec_len = 0
        for v in views:
            rec_len += len(v)
        sub = bytearray()
        if partition_id is not None:
            sub += b"\x08"
            sub += varint(partition_id)
        sub += b"\x10"
        sub += varint(bucket_id)
        sub += b"\x1a"
        sub += varint(rec_len)
        cur += buckets_tag
        cur += varint(len(sub) + rec_len)
        cur += sub
        for v in views:
            if len(v) < COALESCE_BELOW:
                cur += v
            else:
                out.append(bytes(cur))
                out.append(v)
                cur = bytearray()
    if cur:
        out.append(bytes(cur))
    return out
