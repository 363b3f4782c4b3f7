"""KV record batches: the ``records`` of a PutKv request (docs/contributing/formats.md §5).

Header (28 bytes, little-endian)::

    0 Length int32 (= total size - 4)   4 Magic int8 (0)   5 CRC uint32 (CRC-32C of bytes 9..end)
    9 SchemaId int16   11 Attributes int8 (0)   12 WriterId int64   20 BatchSequence int32
    24 RecordCount int32

then per record: ``int32 length | varint key length | key | value``, where an absent value (zero
bytes) means delete. The value is a full row of the schema ``SchemaId`` in the table's kv format.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

from ..errors import CorruptBatchError
from ..wire.crc32c import crc32c
from ..wire.varint import decode_varint, encode_varint

__all__ = ["KV_HEADER_SIZE", "KV_MAGIC", "KvBatchHeader", "build_kv_batch", "parse_kv_header",
           "iter_kv_records", "kv_records", "encode_value", "decode_value"]

KV_HEADER_SIZE = 28
KV_MAGIC = 0
_CRC_START = 9

_HEAD = struct.Struct("<ibI")          # length, magic, crc
_TAIL = struct.Struct("<hbqii")        # schema id, attributes, writer id, batch sequence, count
_I32 = struct.Struct("<i")
_I16 = struct.Struct("<h")


class KvBatchHeader:
    __slots__ = ("length", "magic", "crc", "schema_id", "attributes", "writer_id", "batch_sequence",
                 "record_count", "total_size", "position")

    def __repr__(self) -> str:
        return (f"KvBatchHeader(schema_id={self.schema_id}, records={self.record_count}, "
                f"writer_id={self.writer_id}, batch_sequence={self.batch_sequence}, "
                f"size={self.total_size})")


def build_kv_batch(records: Sequence[tuple[bytes, bytes | None]], *, schema_id: int,
                   writer_id: int = -1, batch_sequence: int = -1) -> bytes:
    """One KV batch of ``(key_bytes, value_bytes | None)`` records (None = delete)."""
    parts: list[bytes] = []
    for key, value in records:
        key = bytes(key)
        klen = encode_varint(len(key))
        vlen = 0 if value is None else len(value)
        parts.append(_I32.pack(len(klen) + len(key) + vlen))
        parts.append(klen)
        parts.append(key)
        if value is not None:
            parts.append(bytes(value))
    body = _TAIL.pack(schema_id, 0, writer_id, batch_sequence, len(records)) + b"".join(parts)
    crc = crc32c(body)
    return _HEAD.pack(len(body) + 5, KV_MAGIC, crc) + body


def parse_kv_header(buf, pos: int = 0) -> KvBatchHeader:
    mv = memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf
    avail = len(mv) - pos
    if avail < KV_HEADER_SIZE:
        raise CorruptBatchError(f"KV batch at byte {pos}: truncated header ({avail} of "
                                f"{KV_HEADER_SIZE} bytes)", position=pos)
    h = KvBatchHeader()
    h.length, h.magic, h.crc = _HEAD.unpack_from(mv, pos)
    h.schema_id, h.attributes, h.writer_id, h.batch_sequence, h.record_count = _TAIL.unpack_from(mv, pos + 9)
    h.total_size = h.length + 4
    h.position = pos
    if h.magic != KV_MAGIC:
        raise CorruptBatchError(f"KV batch at byte {pos}: unknown magic {h.magic}", position=pos)
    if h.total_size < KV_HEADER_SIZE or h.total_size > avail:
        raise CorruptBatchError(f"KV batch at byte {pos}: length {h.length} does not match the "
                                f"{avail} bytes available", position=pos)
    if h.record_count < 0:
        raise CorruptBatchError(f"KV batch at byte {pos}: negative record count", position=pos)
    return h


def iter_kv_records(buf, pos: int = 0, *, verify_crc: bool = False
                    ) -> Iterator[tuple[bytes, bytes | None]]:
    """``(key, value | None)`` of every record of the KV batch at ``pos``.

    The Java server does not check this CRC; ``verify_crc=True`` does.
    """
    h = parse_kv_header(buf, pos)
    data = bytes(memoryview(buf)[pos:pos + h.total_size])
    if verify_crc and crc32c(memoryview(data)[_CRC_START:]) != h.crc:
        raise CorruptBatchError(f"KV batch at byte {pos}: CRC mismatch", position=pos)
    p = KV_HEADER_SIZE
    end = h.total_size
    for i in range(h.record_count):
        if p + 4 > end:
            raise CorruptBatchError(f"KV batch at byte {pos}: record {i} is truncated", position=pos)
        n = _I32.unpack_from(data, p)[0]
        p += 4
        rec_end = p + n
        if n < 1 or rec_end > end:
            raise CorruptBatchError(f"KV batch at byte {pos}: record {i} has bad length {n}",
                                    position=pos)
        klen = data[p] if p < rec_end else 0x80
        if klen < 0x80:  # keys are short: a one-byte length is the rule
            kp = p + 1
        else:
            try:
                klen, kp = decode_varint(data, p)
            except (ValueError, IndexError):
                raise CorruptBatchError(f"KV batch at byte {pos}: record {i} has a bad key length",
                                        position=pos) from None
        if klen < 0 or kp + klen > rec_end:
            raise CorruptBatchError(f"KV batch at byte {pos}: record {i} key of {klen} bytes "
                                    f"overruns the record", position=pos)
        key = data[kp:kp + klen]
        value = data[kp + klen:rec_end] if kp + klen < rec_end else None
        yield key, value
        p = rec_end
    if p != end:
        raise CorruptBatchError(f"KV batch at byte {pos}: {end - p} bytes after the last record",
                                position=pos)


def kv_records(buf, pos: int = 0) -> list[tuple[bytes, bytes | None]]:
    return list(iter_kv_records(buf, pos))


def encode_value(schema_id: int, row) -> bytes:
    """A stored / looked-up value (docs/contributing/formats.md §7): int16 LE schema id, then the row bytes."""
    return _I16.pack(schema_id) + bytes(row)


def decode_value(buf) -> tuple[int, bytes]:
    """``(schema_id, row_bytes)`` of a value made by :func:`encode_value`."""
    data = bytes(buf)
    if len(data) < 2:
        raise ValueError(f"value of {len(data)} bytes has no schema id")
    return _I16.unpack_from(data, 0)[0], data[2:]
