"""Unsigned LEB128 varints, the one definition: CompactedRow fields, KV records and the protobuf
fields ``rpc.wire`` frames by hand all write the ``bits``-wide two's-complement pattern, no zigzag."""
from __future__ import annotations

_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF
_MAX_SHIFT = 63  # a tenth byte (shift 63) is the last one a 64-bit varint may have
_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def _put_varint(out: bytearray, u: int) -> None:
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def encode_varint(value: int, bits: int = 64) -> bytes:
    """Unsigned LEB128 of the ``bits``-bit two's-complement pattern (no zigzag).

    The default is protobuf's rule for int32 / int64 / uint64 fields (a negative value takes ten
    bytes); a 32-bit CompactedRow field passes ``bits=32``. Lengths and other small non-negative
    values encode the same either way."""
    if 0 <= value < 0x80:  # tags, lengths, ids: most varints on the wire
        return _ONE_BYTE[value]
    if value < 0 or bits != 64:
        value &= _U64 if bits == 64 else (1 << bits) - 1
    out = bytearray()
    while value > 0x7F:  # _put_varint's loop, inlined: protobuf framing calls this per field
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(buf, pos: int, end: int) -> tuple[int, int]:
    """(unsigned value, position after it) of the varint at ``pos``; ValueError when it runs past
    ``end`` or past ten bytes."""
    result = 0
    shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > _MAX_SHIFT:
            raise ValueError("varint longer than 10 bytes")
    raise ValueError("truncated varint")


def _get_varint(buf, pos: int, max_bytes: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    for _ in range(max_bytes - 1):
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise ValueError(f"malformed varint at byte {pos - max_bytes}: more than {max_bytes} bytes")


def _get_varint32(buf, pos: int) -> tuple[int, int]:
    u, pos = _get_varint(buf, pos, 5)
    u &= _U32
    return (u - 0x100000000 if u & 0x80000000 else u), pos


def _get_varint64(buf, pos: int) -> tuple[int, int]:
    u, pos = _get_varint(buf, pos, 10)
    u &= _U64
    return (u - 0x10000000000000000 if u & 0x8000000000000000 else u), pos


def _get_length(buf, pos: int, end: int) -> tuple[int, int]:
    n, pos = _get_varint32(buf, pos)
    if n < 0 or pos + n > end:
        raise ValueError(f"bad length {n} at byte {pos}: only {end - pos} bytes left")
    return n, pos


def decode_varint(buf, pos: int = 0, bits: int = 32) -> tuple[int, int]:
    """(signed value, next position) of a varint written by :func:`encode_varint`."""
    return _get_varint32(buf, pos) if bits == 32 else _get_varint64(buf, pos)


def _get_varint32_at(buf, pos, end):
    return _get_varint32(buf, pos)


def _get_varint64_at(buf, pos, end):
    return _get_varint64(buf, pos)
