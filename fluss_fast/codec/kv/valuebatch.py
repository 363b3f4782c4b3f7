"""Value record batches: the ``records`` of LIMIT_SCAN (primary-key tables) and SCAN_KV answers.

Layout (little-endian)::

    int32 length (= total size - 4) | int8 magic (0) | int32 record count | records
    record: int32 length (= 2 + row bytes) | int16 schema id | row (the table's kv format)

There is no CRC and no key: a value batch carries the current rows of a bucket, nothing else.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

from ..errors import CorruptBatchError

__all__ = ["VALUE_HEADER_SIZE", "build_stored_value_batch", "build_value_batch", "iter_value_records",
           "stored_value_batch_parts", "value_records"]

VALUE_HEADER_SIZE = 9
VALUE_MAGIC = 0

_HEAD = struct.Struct("<ibi")
_REC = struct.Struct("<ih")
_LEN = struct.Struct("<i")


def build_value_batch(records: Sequence[tuple[int, bytes]]) -> bytes:
    """One batch of ``(schema_id, row_bytes)`` records."""
    parts: list[bytes] = []
    size = VALUE_HEADER_SIZE
    for schema_id, row in records:
        row = bytes(row)
        parts.append(_REC.pack(len(row) + 2, schema_id))
        parts.append(row)
        size += 6 + len(row)
    return _HEAD.pack(size - 4, VALUE_MAGIC, len(records)) + b"".join(parts)


def stored_value_batch_parts(values: list[bytes]) -> tuple[list[bytes], int]:
    """The pieces (the header first) and the size of the batch of ``values`` as a KV store keeps
    them (int16 schema id + row each, ``kvbatch.encode_value``): a record is its int32 length and
    those same bytes, so the batch joins them without decoding one."""
    n = len(values)
    lens = list(map(len, values))
    if n and min(lens) < 2:
        raise ValueError("a stored value of fewer than 2 bytes has no schema id")
    size = VALUE_HEADER_SIZE + 4 * n + sum(lens)
    parts: list[bytes] = [b""] * (2 * n + 1)
    parts[0] = _HEAD.pack(size - 4, VALUE_MAGIC, n)
    parts[1::2] = list(map(_LEN.pack, lens))
    parts[2::2] = values
    return parts, size


def build_stored_value_batch(values: list[bytes]) -> bytes:
    """The batch of stored values: the bytes ``build_value_batch`` makes of them decoded."""
    return b"".join(stored_value_batch_parts(values)[0])


def iter_value_records(buf) -> Iterator[tuple[int, bytes]]:
    """``(schema_id, row_bytes)`` of every record of every batch in ``buf`` (batches back to back)."""
    data = bytes(buf)
    end = len(data)
    pos = 0
    while pos < end:
        if pos + VALUE_HEADER_SIZE > end:
            raise CorruptBatchError(f"value batch at byte {pos}: truncated header", position=pos)
        length, magic, count = _HEAD.unpack_from(data, pos)
        if magic != VALUE_MAGIC:
            raise CorruptBatchError(f"value batch at byte {pos}: unknown magic {magic}", position=pos)
        stop = pos + 4 + length
        if length < VALUE_HEADER_SIZE - 4 or stop > end or count < 0:
            raise CorruptBatchError(f"value batch at byte {pos}: length {length} / count {count} do "
                                    f"not fit the {end - pos} bytes available", position=pos)
        p = pos + VALUE_HEADER_SIZE
        for i in range(count):
            if p + 6 > stop:
                raise CorruptBatchError(f"value batch at byte {pos}: record {i} is truncated",
                                        position=pos)
            n, schema_id = _REC.unpack_from(data, p)
            if n < 2 or p + 4 + n > stop:
                raise CorruptBatchError(f"value batch at byte {pos}: record {i} has bad length {n}",
                                        position=pos)
            yield schema_id, data[p + 6:p + 4 + n]
            p += 4 + n
        if p != stop:
            raise CorruptBatchError(f"value batch at byte {pos}: {stop - p} bytes after the last "
                                    f"record", position=pos)
        pos = stop


def value_records(buf) -> list[tuple[int, bytes]]:
    return list(iter_value_records(buf))
