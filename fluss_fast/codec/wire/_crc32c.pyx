# cython: language_level=3
"""Compiled twin of :mod:`fluss_fast.codec.wire.crc32c` (SSE4.2 when available, else slicing-by-8)."""
from libc.stdint cimport uint32_t
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.bytes cimport PyBytes_CheckExact, PyBytes_AS_STRING, PyBytes_GET_SIZE

cdef extern from "crc32c_impl.h":
    void ff_crc32c_init()
    int ff_crc32c_hw_enabled()
    uint32_t ff_crc32c_update(uint32_t crc, const void *data, size_t n) nogil
    uint32_t ff_crc32c_update_sw(uint32_t crc, const void *data, size_t n) nogil

ff_crc32c_init()


cdef uint32_t crc32c_update(uint32_t crc, const void *data, size_t n) noexcept nogil:
    return ff_crc32c_update(crc, data, n)

# Releasing the GIL costs two atomic operations and possibly a thread switch; below a few KiB the
# checksum itself is cheaper than that.
cdef enum:
    NOGIL_THRESHOLD = 4096


cdef inline uint32_t _update(uint32_t crc, const char *p, Py_ssize_t n, bint software) noexcept:
    if n > NOGIL_THRESHOLD:
        with nogil:
            if software:
                crc = ff_crc32c_update_sw(crc, p, <size_t>n)
            else:
                crc = ff_crc32c_update(crc, p, <size_t>n)
        return crc
    if software:
        return ff_crc32c_update_sw(crc, p, <size_t>n)
    return ff_crc32c_update(crc, p, <size_t>n)


cdef uint32_t _crc_of_object(object data, uint32_t crc, bint software) except? 0xFFFFFFFF:
    cdef Py_buffer view
    if PyBytes_CheckExact(data):
        return _update(crc, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), software)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return _update(crc, <const char *>view.buf, view.len, software)
    finally:
        PyBuffer_Release(&view)


def crc32c(data, uint32_t crc=0):
    """CRC-32C of ``data`` (any C-contiguous buffer), continuing from ``crc``."""
    return _crc_of_object(data, crc, False)


def implementation():
    """Which code computes the checksum: ``"python"``, ``"sse4.2"`` or ``"slicing-by-8"``."""
    return "sse4.2" if ff_crc32c_hw_enabled() else "slicing-by-8"


def _crc32c_software(data, uint32_t crc=0):
    """The table path of the C code even on SSE4.2 machines (for tests)."""
    return _crc_of_object(data, crc, True)
