"""Bucket assignment hashes (docs/contributing/formats.md §6.3).

* ``fluss_murmur32``: Flink's MurmurHash3_x86_32 variant that Fluss uses for key bucketing. Unlike
  the standard hash, every tail byte is mixed separately and **sign-extended** (Java ``byte`` ->
  ``int``); the Rust client zero-extends and disagrees with Java on such keys, Java is the truth.
* ``int_murmur``: Fluss ``MathUtils.murmurHash`` applied to that hash; never negative.
* ``murmur3_32``: standard MurmurHash3_x86_32 (Iceberg bucketing).

Hashes are returned as signed int32, as Java sees them. Seeds and ``code`` are taken mod 2**32.
The compiled twin ``_murmur`` has the same API.
"""
from __future__ import annotations

import struct

from .._select import pick
from ..log.logbatch import _byte_view

__all__ = ["fluss_murmur32", "int_murmur", "bucket_for_key", "buckets_for_keys",
           "paimon_bucket", "murmur3_32", "iceberg_bucket"]

_M = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_DEFAULT_SEED = 42


def _mix_k(k: int) -> int:
    k = (k * _C1) & _M
    k = ((k << 15) | (k >> 17)) & _M
    return (k * _C2) & _M


def _mix_h(h: int, k: int) -> int:
    h ^= k
    h = ((h << 13) | (h >> 19)) & _M
    return (h * 5 + 0xE6546B64) & _M


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M
    h ^= h >> 16
    return h


def _signed(h: int) -> int:
    return h - 0x100000000 if h & 0x80000000 else h


def _blocks(mv: memoryview, h: int) -> int:
    for k in struct.unpack_from(f"<{len(mv) >> 2}I", mv):
        h = _mix_h(h, _mix_k(k))
    return h


def _fluss_hash(data, seed: int) -> int:
    mv = _byte_view(data)
    n = len(mv)
    h = _blocks(mv, seed & _M)
    for b in mv[n & ~3:].tobytes():
        h = _mix_h(h, _mix_k(b | 0xFFFFFF00 if b & 0x80 else b))
    return _signed(_fmix(h ^ (n & _M)))


def _int_hash(code: int) -> int:
    k = _signed(_fmix(_mix_h(0, _mix_k(code & _M)) ^ 4))
    if k >= 0:
        return k
    return -k if k != -0x80000000 else 0


def _standard_hash(data, seed: int) -> int:
    mv = _byte_view(data)
    n = len(mv)
    h = _blocks(mv, seed & _M)
    tail = mv[n & ~3:].tobytes()
    if tail:
        h ^= _mix_k(int.from_bytes(tail, "little"))
    return _signed(_fmix(h ^ (n & _M)))


def _check_buckets(num_buckets: int) -> None:
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")


# The public functions below only wrap the private ones: pick() may rebind the public names to
# the compiled versions, and the pure functions must stay pure.


def fluss_murmur32(data, seed: int = _DEFAULT_SEED) -> int:
    """Fluss/Flink MurmurHash3 variant of ``data`` (any contiguous buffer), as signed int32."""
    return _fluss_hash(data, seed)


def int_murmur(code: int) -> int:
    """Fluss ``MathUtils.murmurHash(int)``: a non-negative int32 spread of ``code``."""
    return _int_hash(code)


def bucket_for_key(key_bytes, num_buckets: int) -> int:
    """Fluss's default bucket of an encoded bucket key (also used by LANCE tables)."""
    _check_buckets(num_buckets)
    return _int_hash(_fluss_hash(key_bytes, _DEFAULT_SEED)) % num_buckets


def buckets_for_keys(keys, num_buckets: int) -> list[int]:
    """``[bucket_for_key(k, num_buckets) for k in keys]``, the writer's batched form."""
    _check_buckets(num_buckets)
    return [_int_hash(_fluss_hash(k, _DEFAULT_SEED)) % num_buckets for k in keys]


def paimon_bucket(key_bytes, num_buckets: int) -> int:
    """Bucket of a PAIMON lake table: ``abs(h % n)`` with Java's truncating ``%``."""
    _check_buckets(num_buckets)
    # abs of a truncated remainder is the remainder of the absolute value
    return abs(_fluss_hash(key_bytes, _DEFAULT_SEED)) % num_buckets


def murmur3_32(data, seed: int = 0) -> int:
    """Standard MurmurHash3_x86_32 of ``data``, as signed int32."""
    return _standard_hash(data, seed)


def iceberg_bucket(key_bytes, num_buckets: int) -> int:
    """Bucket of an ICEBERG lake table: ``(murmur3_32(key, 0) & 0x7fffffff) % n``; an empty key
    (an empty string or bytes) is refused, as Java refuses it."""
    _check_buckets(num_buckets)
    if len(key_bytes) == 0:
        raise ValueError("bucketKey must not be null or empty")
    return (_standard_hash(key_bytes, 0) & 0x7FFFFFFF) % num_buckets


fluss_murmur32_py = fluss_murmur32
int_murmur_py = int_murmur
bucket_for_key_py = bucket_for_key
buckets_for_keys_py = buckets_for_keys
paimon_bucket_py = paimon_bucket
murmur3_32_py = murmur3_32
iceberg_bucket_py = iceberg_bucket

pick("_murmur", globals(), __all__)
