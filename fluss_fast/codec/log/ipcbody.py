"""Decompression of a BUFFER-compressed Arrow IPC RecordBatch body into one uncompressed body.

The mirror image of ``ArrowLogCodec._compress_message``. In a compressed body every non-empty
buffer is ``int64 uncompressed length`` followed by one codec frame, or ``-1`` followed by the
bytes stored raw; an empty buffer stays empty. Two steps, so that the caller can allocate the
output (and write the new message metadata in front of it) once:

* ``plan_body(body, buffers) -> (new_buffers, body_length)``: the ``(offset, length)`` of every
  buffer in the uncompressed body, each starting on an ``ALIGN``-byte boundary (Arrow's
  recommended alignment), read from the length prefixes alone;
* ``decompress_body(body, buffers, new_buffers, codec, out)``: every buffer decompressed straight
  into the writable ``out`` (at least ``body_length`` bytes) at its planned place, padding zeroed.

``codec`` is the Arrow flatbuffer codec id (``CODEC_LZ4_FRAME`` 0, ``CODEC_ZSTD`` 1). A span
outside the body, a length prefix that cannot be right, a damaged frame or one holding another
number of bytes than its prefix declares raises ``CorruptBatchError`` naming the buffer. The
compiled twin ``_ipcbody`` does the whole body in one pass without the GIL, with one zstd and one
LZ4 context per thread kept for the thread's life.
"""
from __future__ import annotations

import struct
import threading

import lz4.frame
import zstandard

from .._select import pick
from ..errors import CorruptBatchError

__all__ = ["plan_body", "decompress_body"]

ALIGN = 64
# No Fluss writer batches anywhere near this much into one buffer; a prefix beyond it is damage,
# refused before anything is allocated for it.
MAX_BUFFER = 1 << 31
CODEC_LZ4_FRAME = 0
CODEC_ZSTD = 1

_I64 = struct.Struct("<q")
_local = threading.local()


def plan_body(body, buffers):
    """``(new_buffers, body_length)`` of the uncompressed body (see the module docstring)."""
    mv = memoryview(body).cast("B")
    size = len(mv)
    out = []
    cursor = 0
    for i, (off, length) in enumerate(buffers):
        if off < 0 or length < 0 or off > size or length > size - off:
            raise CorruptBatchError(f"Arrow buffer {i} ({off}, {length}) lies outside the "
                                    f"{size}-byte body")
        if length == 0:
            n = 0
        elif length < 8:
            raise CorruptBatchError(f"Arrow buffer {i} of {length} bytes lacks its "
                                    f"8-byte length prefix")
        else:
            n = _I64.unpack_from(mv, off)[0]
            if n == -1:
                n = length - 8
            elif n < 0 or n > MAX_BUFFER:
                raise CorruptBatchError(f"Arrow buffer {i} declares {n} uncompressed bytes")
        out.append((cursor, n))
        cursor += -(-n // ALIGN) * ALIGN
    return out, cursor


def _zstd(src, size: int) -> bytes:
    d = getattr(_local, "zstd", None)
    if d is None:
        d = _local.zstd = zstandard.ZstdDecompressor()
    out = []
    made = 0
    rest = src
    # several frames may follow each other (libzstd reads them all); every one must end in src
    while len(rest):
        part = d.decompressobj()
        data = part.decompress(rest)
        if not part.eof:
            raise RuntimeError("frame is truncated")
        made += len(data)
        if made > size:
            raise RuntimeError("frame holds more bytes than declared")
        out.append(data)
        rest = part.unused_data
    return b"".join(out)


def _lz4(src, size: int) -> bytes:
    out = []
    mv = memoryview(src)
    while len(mv):
        data, used = lz4.frame.decompress(mv, return_bytes_read=True)
        if used == 0:
            raise RuntimeError("frame is truncated")
        out.append(data)
        mv = mv[used:]
    return b"".join(out)


def decompress_body(body, buffers, new_buffers, codec: int, out) -> None:
    """Fills ``out`` with the uncompressed body that ``plan_body`` laid out."""
    count = len(buffers)
    if len(new_buffers) != count:
        raise ValueError(f"{count} buffers but {len(new_buffers)} planned")
    if codec == CODEC_ZSTD:
        name, inflate = "ZSTD", _zstd
    elif codec == CODEC_LZ4_FRAME:
        name, inflate = "LZ4_FRAME", _lz4
    else:
        raise CorruptBatchError(f"unknown Arrow compression codec {codec}")
    src = memoryview(body).cast("B")
    dst = memoryview(out).cast("B")
    if dst.readonly:
        raise BufferError("Object is not writable.")
    filled = 0
    for i in range(count):
        off, length = buffers[i]
        noff, nlen = new_buffers[i]
        if (off < 0 or length < 0 or off > len(src) or length > len(src) - off
                or noff < filled or nlen < 0 or noff > len(dst) or nlen > len(dst) - noff
                or 0 < length < 8 or (length == 0 and nlen != 0)):
            raise ValueError(f"buffer {i}: plan does not fit the body or the output")
        filled = noff + nlen
    filled = 0
    for i in range(count):
        off, length = buffers[i]
        noff, nlen = new_buffers[i]
        if noff > filled:
            dst[filled:noff] = bytes(noff - filled)
        filled = noff + nlen
        if nlen == 0:
            continue
        prefix = _I64.unpack_from(src, off)[0]
        frame = src[off + 8:off + length]
        if prefix == -1:
            if nlen != length - 8:
                raise CorruptBatchError(f"Arrow buffer {i}: bad {name} data (stored size "
                                        f"differs from the plan)")
            dst[noff:filled] = frame
            continue
        if prefix != nlen:
            raise CorruptBatchError(f"Arrow buffer {i}: bad {name} data (declared size differs "
                                    f"from the plan)")
        try:
            data = inflate(frame, nlen)
        except Exception as exc:  # noqa: BLE001 - each library has its own error types
            raise CorruptBatchError(f"Arrow buffer {i}: bad {name} data ({exc})") from None
        if len(data) != nlen:
            raise CorruptBatchError(f"Arrow buffer {i}: bad {name} data (frame holds "
                                    f"{len(data)} bytes, {nlen} declared)")
        dst[noff:filled] = data
    if len(dst) > filled:
        dst[filled:] = bytes(len(dst) - filled)


plan_body_py = plan_body
decompress_body_py = decompress_body

pick("_ipcbody", globals(), __all__)
