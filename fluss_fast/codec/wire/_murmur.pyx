# cython: language_level=3
"""Compiled twin of :mod:`fluss_fast.codec.wire.murmur` (see there for the definitions)."""
from libc.stdint cimport int32_t, uint32_t
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.bytes cimport PyBytes_CheckExact, PyBytes_AS_STRING, PyBytes_GET_SIZE

cdef extern from "fluss_murmur.h":
    uint32_t ffm_le32(const unsigned char *p) nogil
    uint32_t ffm_mix_k(uint32_t k) nogil
    uint32_t ffm_mix_h(uint32_t h, uint32_t k) nogil
    uint32_t ffm_fmix(uint32_t h) nogil
    int32_t ffm_fluss32(const unsigned char *p, Py_ssize_t n, uint32_t seed) nogil
    int32_t ffm_int_murmur(uint32_t code) nogil

cdef enum:
    DEFAULT_SEED = 42


cdef inline int32_t _standard(const unsigned char *p, Py_ssize_t n, uint32_t seed) noexcept nogil:
    cdef uint32_t h = seed
    cdef Py_ssize_t i, tail = n & ~(<Py_ssize_t>3)
    cdef uint32_t k = 0
    cdef int rem = <int>(n & 3)
    for i in range(0, tail, 4):
        h = ffm_mix_h(h, ffm_mix_k(ffm_le32(p + i)))
    if rem == 3:
        k ^= (<uint32_t>p[tail + 2]) << 16
    if rem >= 2:
        k ^= (<uint32_t>p[tail + 1]) << 8
    if rem >= 1:
        k ^= p[tail]
        h ^= ffm_mix_k(k)
    return <int32_t>ffm_fmix(h ^ <uint32_t>n)


cdef int32_t _hash_object(object data, uint32_t seed, bint fluss) except? -1:
    cdef Py_buffer view
    cdef int32_t h
    if PyBytes_CheckExact(data):
        if fluss:
            return ffm_fluss32(<const unsigned char *>PyBytes_AS_STRING(data),
                          PyBytes_GET_SIZE(data), seed)
        return _standard(<const unsigned char *>PyBytes_AS_STRING(data),
                         PyBytes_GET_SIZE(data), seed)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if fluss:
            h = ffm_fluss32(<const unsigned char *>view.buf, view.len, seed)
        else:
            h = _standard(<const unsigned char *>view.buf, view.len, seed)
    finally:
        PyBuffer_Release(&view)
    return h


cdef inline int _check_buckets(int num_buckets) except -1:
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    return 0


def fluss_murmur32(data, long long seed=DEFAULT_SEED):
    """Fluss/Flink MurmurHash3 variant of ``data`` (any contiguous buffer), as signed int32."""
    return _hash_object(data, <uint32_t>seed, True)


def int_murmur(long long code):
    """Fluss ``MathUtils.murmurHash(int)``: a non-negative int32 spread of ``code``."""
    return ffm_int_murmur(<uint32_t>code)


def bucket_for_key(key_bytes, int num_buckets):
    """Fluss's default bucket of an encoded bucket key (also used by LANCE tables)."""
    _check_buckets(num_buckets)
    return ffm_int_murmur(<uint32_t>_hash_object(key_bytes, DEFAULT_SEED, True)) % num_buckets


def buckets_for_keys(keys, int num_buckets):
    """``[bucket_for_key(k, num_buckets) for k in keys]``, the writer's batched form."""
    cdef list items
    cdef list out
    cdef Py_ssize_t i, n
    cdef object key
    _check_buckets(num_buckets)
    items = keys if type(keys) is list else list(keys)
    n = len(items)
    out = [None] * n
    for i in range(n):
        key = items[i]
        out[i] = ffm_int_murmur(<uint32_t>_hash_object(key, DEFAULT_SEED, True)) % num_buckets
    return out


def paimon_bucket(key_bytes, int num_buckets):
    """Bucket of a PAIMON lake table: ``abs(h % n)`` with Java's truncating ``%``."""
    cdef int32_t r
    _check_buckets(num_buckets)
    r = _hash_object(key_bytes, DEFAULT_SEED, True) % num_buckets  # C: truncating, like Java
    return -r if r < 0 else r


def murmur3_32(data, long long seed=0):
    """Standard MurmurHash3_x86_32 of ``data``, as signed int32."""
    return _hash_object(data, <uint32_t>seed, False)


def iceberg_bucket(key_bytes, int num_buckets):
    """Bucket of an ICEBERG lake table: ``(murmur3_32(key, 0) & 0x7fffffff) % n``; an empty key
    (an empty string or bytes) is refused, as Java refuses it."""
    _check_buckets(num_buckets)
    if len(key_bytes) == 0:
        raise ValueError("bucketKey must not be null or empty")
    return (_hash_object(key_bytes, 0, False) & 0x7FFFFFFF) % num_buckets
