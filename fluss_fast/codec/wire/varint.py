"""Unsigned LEB128 varints of CompactedRow fields and KV records: the bits-wide two's-complement
pattern, no zigzag."""
from __future__ import annotations

from typing import Tuple


_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF


def _put_varint(out: bytearray, u: int) -> None:
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def encode_varint(value: int, bits: int = 32) -> bytes:
    """Unsigned LEB128 of the ``bits``-bit two's-complement pattern (no zigzag)."""
    out = bytearray()
    _put_varint(out, value & ((1 << bits) - 1))
    return bytes(out)


def _get_varint(buf, pos: int, max_bytes: int) -> Tuple[int, int]:
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


def _get_varint32(buf, pos: int) -> Tuple[int, int]:
    u, pos = _get_varint(buf, pos, 5)
    u &= _U32
    return (u - 0x100000000 if u & 0x80000000 else u), pos


def _get_varint64(buf, pos: int) -> Tuple[int, int]:
    u, pos = _get_varint(buf, pos, 10)
    u &= _U64
    return (u - 0x10000000000000000 if u & 0x8000000000000000 else u), pos


def _get_length(buf, pos: int, end: int) -> Tuple[int, int]:
    n, pos = _get_varint32(buf, pos)
    if n < 0 or pos + n > end:
        raise ValueError(f"bad length {n} at byte {pos}: only {end - pos} bytes left")
    return n, pos


def decode_varint(buf, pos: int = 0, bits: int = 32) -> Tuple[int, int]:
    """(signed value, next position) of a varint written by :func:`encode_varint`."""
    return _get_varint32(buf, pos) if bits == 32 else _get_varint64(buf, pos)


def _get_varint32_at(buf, pos, end):
    return _get_varint32(buf, pos)


def _get_varint64_at(buf, pos, end):
    return _get_varint64(buf, pos)
