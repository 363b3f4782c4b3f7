"""The byte-buffer toolkit of the pure-Python codecs, the twin of ``bytebuf.pxd`` (same names, same
errors): a write buffer is a ``bytearray`` (Python grows it), and the bounded reader raises
ValueError with the byte offset instead of reading past ``end``.

The compiled codecs cimport the ``.pxd``; a pure codec that frames or reads bytes the same way uses
these, so the two twins of a format say the same thing about the same bad input.
"""
from __future__ import annotations

import struct

from .varint import _U32, _put_varint

__all__ = ["wb_le16", "wb_le32", "wb_le64", "wb_varint", "wb_write", "wb_skip", "wb_patch32",
           "need", "read_varint", "read_v32", "read_v64", "read_len"]

_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")

wb_varint = _put_varint  # (out, unsigned value): the one varint writer


def wb_le16(out: bytearray, x: int) -> None:
    out += _I16.pack(x)


def wb_le32(out: bytearray, x: int) -> None:
    out += _I32.pack(x)


def wb_le64(out: bytearray, x: int) -> None:
    out += _I64.pack(x)


def wb_write(out: bytearray, data) -> None:
    out += data


def wb_skip(out: bytearray, k: int) -> int:
    """Room for ``k`` bytes written later (a length before its body): where they start."""
    start = len(out)
    out += bytes(k)
    return start


def wb_patch32(out: bytearray, at: int, x: int) -> None:
    _I32.pack_into(out, at, x)


def need(pos: int, k: int, end: int) -> None:
    if pos + k > end:
        raise ValueError(f"needs {k} bytes at byte {pos}, {end - pos} left")


def read_varint(buf, pos: int, end: int, maxb: int) -> tuple[int, int]:
    """(unsigned value, position after it) of a varint of at most ``maxb`` bytes."""
    start, r, shift = pos, 0, 0
    for _ in range(maxb):
        if pos >= end:
            raise ValueError(f"truncated varint at byte {start if start >= end else end}")
        c = buf[pos]
        pos += 1
        r |= (c & 0x7F) << shift
        if c < 0x80:
            return r, pos
        shift += 7
    raise ValueError(f"malformed varint ending at byte {start + maxb}: more than {maxb} bytes")


def read_v32(buf, pos: int, end: int) -> tuple[int, int]:
    u, pos = read_varint(buf, pos, end, 5)
    u &= _U32
    return (u - 0x100000000 if u & 0x80000000 else u), pos


def read_v64(buf, pos: int, end: int) -> tuple[int, int]:
    u, pos = read_varint(buf, pos, end, 10)
    u &= 0xFFFFFFFFFFFFFFFF
    return (u - 0x10000000000000000 if u & 0x8000000000000000 else u), pos


def read_len(buf, pos: int, end: int) -> tuple[int, int]:
    n, pos = read_v32(buf, pos, end)
    if n < 0 or pos + n > end:
        raise ValueError(f"bad length {n} at byte {pos}: only {end - pos} bytes left")
    return n, pos
