"""KV records built column by column (bulk Arrow upserts and deletes), grouped by bucket.

The caller (``client/write/upsert_bulk.py``) turns each Arrow column into a *column spec* of
plain numpy buffers, so no Python object is made per row:

``(kind, valid, a, b)`` where ``valid`` is a uint8 array (1 = value present) or None (no
nulls), and by kind:

=========  =====================================  =========================================
kind       a                                      b
=========  =====================================  =========================================
NULL       -                                      -      (a column the write leaves null)
BOOL       uint8 (0/1)                            -
I8 / I16   int8 / int16                           -
VAR32      int32 (INT, DATE, TIME millis)         -      varint of the 32-bit pattern
VAR64      int64 (BIGINT, compact DECIMAL and     -      varint of the 64-bit pattern
           compact TIMESTAMP millis)
F32 / F64  float32 / float64                      -      NaN written as Java's canonical NaN
BYTES      int64 offsets (n + 1)                  uint8 data (STRING, CHAR, BYTES, BINARY)
TS         int64 millis                           int32 nanos of the milli (TIMESTAMP p > 3)
=========  =====================================  =========================================

``encode_kv_columns(specs, key_cols, bucket_cols, value_cols, nrows, num_buckets)`` encodes per
row the key (CompactedKeyEncoder layout over ``key_cols``), the bucket (Fluss murmur of the
bucket-key bytes, which are the key bytes when ``bucket_cols`` is None) and, unless
``value_cols`` is None (deletes), the CompactedRow of ``value_cols``; it returns
``{bucket: (records bytes, count)}`` with records in row order (docs/contributing/formats.md §5.2). A null in a key
column raises ``KeyNullError(column position, row)``. ``_kvcolumns.pyx`` is the compiled twin.

``keys`` and ``buckets`` (both or neither: a list of ``nrows`` key bytes and one of ``nrows``
buckets in ``0 .. num_buckets - 1``) give every row's key and bucket, computed by the caller: a
data-lake table's keys and buckets follow the lake's layout (``codec.kv.keys.KeyScheme``), which this
module does not know; ``key_cols`` and ``bucket_cols`` are then not read.
"""
from __future__ import annotations

import struct
from collections.abc import Sequence

from .._select import pick
from ..wire.murmur import bucket_for_key

__all__ = ["NULL", "BOOL", "I8", "I16", "VAR32", "VAR64", "F32", "F64", "BYTES", "TS",
           "KeyNullError", "encode_kv_columns"]

NULL, BOOL, I8, I16, VAR32, VAR64, F32, F64, BYTES, TS = range(10)

_F32_NAN = b"\x00\x00\xc0\x7f"
_F64_NAN = b"\x00\x00\x00\x00\x00\x00\xf8\x7f"
_pk_f = struct.Struct("<f").pack
_pk_d = struct.Struct("<d").pack
_pk_h = struct.Struct("<h").pack
_pk_i = struct.Struct("<i").pack


class KeyNullError(ValueError):
    def __init__(self, column: int, row: int):
        super().__init__(f"key column {column} is null at row {row}")
        self.column = column
        self.row = row


def _varint(out: bytearray, u: int) -> None:
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def _field(out: bytearray, spec, r: int) -> None:
    kind = spec[0]
    a = spec[2]
    b = spec[3] if len(spec) > 3 else None
    if kind == BOOL:
        out.append(1 if a[r] else 0)
    elif kind == I8:
        out += struct.pack("<b", int(a[r]))
    elif kind == I16:
        out += _pk_h(int(a[r]))
    elif kind == VAR32:
        _varint(out, int(a[r]) & 0xFFFFFFFF)
    elif kind == VAR64:
        _varint(out, int(a[r]) & 0xFFFFFFFFFFFFFFFF)
    elif kind == F32:
        x = float(a[r])
        out += _F32_NAN if x != x else _pk_f(x)
    elif kind == F64:
        x = float(a[r])
        out += _F64_NAN if x != x else _pk_d(x)
    elif kind == BYTES:
        s, e = int(a[r]), int(a[r + 1])
        _varint(out, e - s)
        out += bytes(b[s:e])
    elif kind == TS:
        _varint(out, int(a[r]) & 0xFFFFFFFFFFFFFFFF)
        _varint(out, int(b[r]) & 0xFFFFFFFF)
    else:
        raise ValueError(f"unknown column kind {kind}")


def _is_null(spec, r: int) -> bool:
    if spec[0] == NULL:
        return True
    valid = spec[1]
    return valid is not None and not valid[r]


def _check_given(keys, buckets, nrows: int, num_buckets: int) -> None:
    """The caller's keys and buckets, when given: both, one per row, buckets in range."""
    if keys is None and buckets is None:
        return
    if keys is None or buckets is None:
        raise ValueError("keys and buckets are given together")
    if len(keys) != nrows or len(buckets) != nrows:
        raise ValueError(f"{len(keys)} keys and {len(buckets)} buckets for {nrows} rows")
    for b in buckets:
        if not 0 <= b < num_buckets:
            raise ValueError(f"bucket {b} is not in 0 .. {num_buckets - 1}")


def encode_kv_columns(specs: Sequence[tuple], key_cols: Sequence[int],
                      bucket_cols: Sequence[int] | None, value_cols: Sequence[int] | None,
                      nrows: int, num_buckets: int, keys: Sequence[bytes] | None = None,
                      buckets: Sequence[int] | None = None) -> dict[int, tuple[bytes, int]]:
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    _check_given(keys, buckets, nrows, num_buckets)
    outs: dict[int, list] = {}
    nvals = 0 if value_cols is None else len(value_cols)
    nbytes = (nvals + 7) >> 3
    for r in range(nrows):
        if keys is not None:
            key = bytes(keys[r])
            bucket = buckets[r]
        else:
            key = bytearray()
            for c in key_cols:
                if _is_null(specs[c], r):
                    raise KeyNullError(c, r)
                _field(key, specs[c], r)
            if bucket_cols is None:
                bkey = key
            else:
                bkey = bytearray()
                for c in bucket_cols:
                    if _is_null(specs[c], r):
                        raise KeyNullError(c, r)
                    _field(bkey, specs[c], r)
            bucket = bucket_for_key(bytes(bkey), num_buckets)
        rec = bytearray()
        _varint(rec, len(key))
        rec += key
        if value_cols is not None:
            row = bytearray(nbytes)
            for i, c in enumerate(value_cols):
                if _is_null(specs[c], r):
                    row[i >> 3] |= 1 << (i & 7)
                else:
                    _field(row, specs[c], r)
            rec += row
        slot = outs.get(bucket)
        if slot is None:
            slot = outs[bucket] = [bytearray(), 0]
        slot[0] += _pk_i(len(rec))
        slot[0] += rec
        slot[1] += 1
    return {b: (bytes(v[0]), v[1]) for b, v in outs.items()}


encode_kv_columns_py = encode_kv_columns

pick("_kvcolumns", globals(), ["encode_kv_columns"])
