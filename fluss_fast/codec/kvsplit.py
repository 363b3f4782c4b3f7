"""The server's fast path through a PutKv batch (DATA.md §5): records split into raw keys and
stored values in one pass, then the last-row-wins merge planned without decoding a row.

``split_kv_records(buf, prefix)`` checks the batch's CRC and record framing (the header itself is
``kvbatch.parse_kv_header``'s job) and returns ``(keys, values)``: the key bytes of every record
and, per record, ``prefix + value`` (the stored form, ``prefix`` being the int16 LE schema id) or
None for a delete. Errors are ``CorruptBatchError`` with ``kvbatch.iter_kv_records``'s texts.

``plan_changes(keys, values, current, full, ignore_deletes, changes, latest)`` applies the records
in order to ``current`` (key -> stored value or None; it must hold every key whose old value
matters: all keys for the FULL image, the deleted ones for WAL), sets the final state of every
key it changed in the dict ``changes`` (None = deleted), and returns ``(rows, change_types,
mixed)``: the changelog's stored values and their change-type bytes, and whether any changelog
row is under another schema than the two-byte ``latest``. A key repeated in the batch sees its
earlier records, as in the Java server. ``changes`` may be ``current`` itself: with the FULL image
every key of the batch is read, and the keys it does not change are deletes of absent keys, whose
``None`` changes nothing when written.

``fill_batch(changes, batch)`` puts a dict of changes into ``batch`` (anything with
``put(key, value)`` / ``delete(key)``, a rocksdict ``WriteBatch``) in key order: RocksDB's
memtable inserts a long run of sorted keys at a fraction of the cost of scattered ones.

``read_through(keys, pending, get)`` is the current value of every key: from the dict ``pending``
(None = deleted) when it has the key, else from one ``get(missing_keys)`` call (a RocksDB multi-get).

``current_values(keys, values, pending, get, deletes_only)`` is ``read_through`` of the distinct
keys whose old value a merge needs (every key, or with ``deletes_only`` those whose value is None)
as a dict key -> stored value or None, built in one pass: ``plan_changes``'s ``current``. The keys
missing from ``pending`` go to ``get`` in byte order (RocksDB's multi-get is cheaper on sorted input).
``_kvsplit.pyx`` is the compiled twin.
"""
from __future__ import annotations

import struct
from typing import List, Optional, Tuple

from ._select import pick
from .crc32c import crc32c
from .errors import CorruptBatchError
from .indexedlog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from .rows import decode_varint

__all__ = ["split_kv_records", "plan_changes", "fill_batch", "read_through", "current_values"]

_HEADER = 28
_CRC_AT = 5
_CRC_START = 9
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")


def split_kv_records(buf, prefix: bytes) -> Tuple[List[bytes], List[Optional[bytes]]]:
    data = bytes(buf)
    end = len(data)
    if end < _HEADER:
        raise CorruptBatchError(f"KV batch at byte 0: truncated header ({end} of {_HEADER} bytes)", position=0)
    if crc32c(memoryview(data)[_CRC_START:]) != _U32.unpack_from(data, _CRC_AT)[0]:
        raise CorruptBatchError("KV batch at byte 0: CRC mismatch", position=0)
    count = _I32.unpack_from(data, 24)[0]
    keys: List[bytes] = []
    values: List[Optional[bytes]] = []
    p = _HEADER
    for i in range(count):
        if p + 4 > end:
            raise CorruptBatchError(f"KV batch at byte 0: record {i} is truncated", position=0)
        n = _I32.unpack_from(data, p)[0]
        p += 4
        rec_end = p + n
        if n < 1 or rec_end > end:
            raise CorruptBatchError(f"KV batch at byte 0: record {i} has bad length {n}", position=0)
        klen = data[p]
        if klen < 0x80:
            kp = p + 1
        else:
            try:
                klen, kp = decode_varint(data, p)
            except (ValueError, IndexError):
                raise CorruptBatchError(f"KV batch at byte 0: record {i} has a bad key length",
                                        position=0) from None
        if klen < 0 or kp + klen > rec_end:
            raise CorruptBatchError(f"KV batch at byte 0: record {i} key of {klen} bytes overruns the record",
                                    position=0)
        keys.append(data[kp:kp + klen])
        values.append(prefix + data[kp + klen:rec_end] if kp + klen < rec_end else None)
        p = rec_end
    if p != end:
        raise CorruptBatchError(f"KV batch at byte 0: {end - p} bytes after the last record", position=0)
    return keys, values


def plan_changes(keys, values, current: dict, full: bool, ignore_deletes: bool, changes: dict,
                 latest: bytes) -> Tuple[List[bytes], bytearray, bool]:
    rows: List[bytes] = []
    cts = bytearray()
    if len(values) != len(keys):
        raise ValueError(f"{len(keys)} keys but {len(values)} values")
    for key, value in zip(keys, values):
        if value is None:
            if ignore_deletes:
                continue
            old = current.get(key)
            if old is None:
                continue
            rows.append(old)
            cts.append(DELETE)
            current[key] = None
        else:
            if not full:
                rows.append(value)
                cts.append(UPDATE_AFTER)
            else:
                old = current.get(key)
                if old is None:
                    rows.append(value)
                    cts.append(INSERT)
                else:
                    rows.append(old)
                    cts.append(UPDATE_BEFORE)
                    rows.append(value)
                    cts.append(UPDATE_AFTER)
            current[key] = value
        changes[key] = current[key]
    mixed = any(r[:2] != latest for r in rows)
    return rows, cts, mixed


def fill_batch(changes: dict, batch) -> None:
    for key in changes:
        if type(key) is not bytes:
            raise TypeError(f"KV keys are bytes, not {type(key).__name__}")
    for key in sorted(changes):
        value = changes[key]
        if value is None:
            batch.delete(key)
        else:
            batch.put(key, value)


def read_through(keys: List[bytes], pending: dict, get) -> List[Optional[bytes]]:
    if not pending:
        return get(keys)
    out: List[Optional[bytes]] = [None] * len(keys)
    misses, at = [], []
    for i, key in enumerate(keys):
        if key in pending:
            out[i] = pending[key]
        else:
            misses.append(key)
            at.append(i)
    if misses:
        for i, value in zip(at, get(misses)):
            out[i] = value
    return out


def current_values(keys: List[bytes], values: List[Optional[bytes]], pending: dict, get,
                   deletes_only: bool) -> dict:
    if len(values) != len(keys):
        raise ValueError(f"{len(keys)} keys but {len(values)} values")
    out: dict = {}
    misses: List[bytes] = []
    for key, value in zip(keys, values):
        if (deletes_only and value is not None) or key in out:
            continue
        if key in pending:
            out[key] = pending[key]
        else:
            out[key] = None
            misses.append(key)
    if misses:
        misses.sort()
        got = get(misses)
        if len(got) != len(misses):
            raise ValueError(f"{len(got)} values read for {len(misses)} keys")
        for key, value in zip(misses, got):
            if value is not None:
                out[key] = value
    return out


split_kv_records_py = split_kv_records
plan_changes_py = plan_changes
fill_batch_py = fill_batch
read_through_py = read_through
current_values_py = current_values

pick("_kvsplit", globals(), __all__)
