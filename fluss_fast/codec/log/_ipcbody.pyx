# cython: language_level=3
"""Compiled twin of :mod:`fluss_fast.codec.log.ipcbody`: every buffer decompressed in one GIL-free pass."""
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_WRITABLE

from ..errors import CorruptBatchError
from .ipcbody import ALIGN, MAX_BUFFER, CODEC_LZ4_FRAME, CODEC_ZSTD

from fluss_fast.codec.wire.bytebuf cimport ff_le_get64

cdef extern from "ipcbody_codecs.h":
    const char *ffib_zstd(void *dst, size_t dst_size, const void *src, size_t src_size) nogil
    const char *ffib_lz4(void *dst, size_t dst_size, const void *src, size_t src_size) nogil

cdef int64_t _ALIGN = ALIGN
cdef int _ZSTD = CODEC_ZSTD
cdef int64_t _MAX_BUFFER = MAX_BUFFER


def plan_body(body, buffers):
    """``(new_buffers, body_length)``: where each buffer goes once decompressed (see the twin)."""
    cdef Py_buffer view
    cdef int64_t size, off, length, n, cursor = 0
    cdef const char *base
    cdef Py_ssize_t i = 0
    out = []
    PyObject_GetBuffer(body, &view, PyBUF_SIMPLE)
    try:
        base = <const char *>view.buf
        size = view.len
        for off, length in buffers:
            if off < 0 or length < 0 or off > size or length > size - off:
                raise CorruptBatchError(f"Arrow buffer {i} ({off}, {length}) lies outside the "
                                        f"{size}-byte body")
            if length == 0:
                n = 0
            elif length < 8:
                raise CorruptBatchError(f"Arrow buffer {i} of {length} bytes lacks its "
                                        f"8-byte length prefix")
            else:
                n = ff_le_get64(<const unsigned char *>base + off)
                if n == -1:
                    n = length - 8
                elif n < 0 or n > _MAX_BUFFER:
                    raise CorruptBatchError(f"Arrow buffer {i} declares {n} uncompressed bytes")
            out.append((cursor, n))
            cursor += (n + _ALIGN - 1) // _ALIGN * _ALIGN
            i += 1
    finally:
        PyBuffer_Release(&view)
    return out, cursor


def decompress_body(body, buffers, new_buffers, int codec, out):
    """Fills ``out`` with the uncompressed body that ``plan_body`` laid out (see the twin)."""
    cdef Py_buffer src_view, dst_view
    cdef Py_ssize_t count = len(buffers), i, bad = -1
    cdef int64_t *spec
    cdef const char *src
    cdef char *dst
    cdef int64_t body_len, off, length, noff, nlen, end, prefix, filled = 0
    cdef const char *why = NULL
    if len(new_buffers) != count:
        raise ValueError(f"{count} buffers but {len(new_buffers)} planned")
    if codec != CODEC_ZSTD and codec != CODEC_LZ4_FRAME:
        raise CorruptBatchError(f"unknown Arrow compression codec {codec}")
    spec = <int64_t *>malloc(4 * sizeof(int64_t) * (count if count else 1))
    if spec == NULL:
        raise MemoryError()
    try:
        for i in range(count):
            spec[4 * i], spec[4 * i + 1] = buffers[i]
            spec[4 * i + 2], spec[4 * i + 3] = new_buffers[i]
        PyObject_GetBuffer(body, &src_view, PyBUF_SIMPLE)
        try:
            PyObject_GetBuffer(out, &dst_view, PyBUF_SIMPLE | PyBUF_WRITABLE)
            try:
                src = <const char *>src_view.buf
                dst = <char *>dst_view.buf
                body_len = src_view.len
                # the plan is re-checked against these exact views: a caller mixing up arguments
                # gets an error, never a write past ``out`` or a read past ``body``
                for i in range(count):
                    off, length = spec[4 * i], spec[4 * i + 1]
                    noff, nlen = spec[4 * i + 2], spec[4 * i + 3]
                    if (off < 0 or length < 0 or off > body_len or length > body_len - off
                            or noff < filled or nlen < 0 or noff > dst_view.len
                            or nlen > dst_view.len - noff or (0 < length < 8)
                            or (length == 0 and nlen != 0)):
                        raise ValueError(f"buffer {i}: plan does not fit the body or the output")
                    filled = noff + nlen
                with nogil:
                    filled = 0
                    for i in range(count):
                        off, length = spec[4 * i], spec[4 * i + 1]
                        noff, nlen = spec[4 * i + 2], spec[4 * i + 3]
                        if noff > filled:
                            memset(dst + filled, 0, <size_t>(noff - filled))
                        filled = noff + nlen
                        if nlen == 0:
                            continue
                        prefix = ff_le_get64(<const unsigned char *>src + off)
                        if prefix == -1:
                            if nlen != length - 8:
                                bad = i
                                why = "stored size differs from the plan"
                                break
                            memcpy(dst + noff, src + off + 8, <size_t>nlen)
                            continue
                        if prefix != nlen:
                            bad = i
                            why = "declared size differs from the plan"
                            break
                        if codec == _ZSTD:
                            why = ffib_zstd(dst + noff, <size_t>nlen, src + off + 8, <size_t>(length - 8))
                        else:
                            why = ffib_lz4(dst + noff, <size_t>nlen, src + off + 8, <size_t>(length - 8))
                        if why != NULL:
                            bad = i
                            break
                    if bad < 0 and dst_view.len > filled:
                        memset(dst + filled, 0, <size_t>(dst_view.len - filled))
            finally:
                PyBuffer_Release(&dst_view)
        finally:
            PyBuffer_Release(&src_view)
    finally:
        free(spec)
    if bad >= 0:
        name = "ZSTD" if codec == CODEC_ZSTD else "LZ4_FRAME"
        raise CorruptBatchError(f"Arrow buffer {bad}: bad {name} data "
                                f"({(<bytes>why).decode('ascii', 'replace')})")
