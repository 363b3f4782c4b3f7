"""The server's fast path through a PutKv batch (docs/contributing/formats.md §5): records split into raw keys and
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
missing from ``pending`` go to ``get`` in byte order (RocksDB's multi-get is cheaper on sorted input);
with ``absent`` (a ``KeyFilter``) only those it cannot rule out do.

``KeyFilter`` is an in-memory Bloom filter of the keys a bucket's RocksDB may hold: most upserted
keys are new, and asking RocksDB for an absent key through rocksdict costs ~0.6 us (its own bloom
filters answer, but the binding and the multi-get machinery cost more than the check), ~30 % of
the server's CPU for a batch of new keys; the filter rules such a key out in ~50 ns. No false
negatives: every key written to RocksDB is added before the pre-write buffer lets go of it. Sized
as it grows (slices of doubling capacity, ~16 bits a key, 7 probes, about 1 % false positives);
past ``max_keys`` it stops ruling anything out (and drops its memory). Positions come from
Python's ``hash`` of the key (cached on the bytes object, which the buffer's dict already
computed), so a filter lives in one process only and is rebuilt on open.
``_kvsplit.pyx`` is the compiled twin.
"""
from __future__ import annotations

import struct

from .._select import pick
from ..errors import CorruptBatchError
from ..log.indexedlog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from ..wire.bytebuf import read_varint
from ..wire.crc32c import crc32c

__all__ = ["split_kv_records", "plan_changes", "fill_batch", "read_through", "current_values", "KeyFilter"]

_HEADER = 28
_CRC_AT = 5
_CRC_START = 9
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_M64 = (1 << 64) - 1
_MIX = 0x9E3779B97F4A7C15
FILTER_PROBES = 7
FILTER_FIRST_KEYS = 1 << 16      # keys of the first slice; each next one holds twice as many
FILTER_BITS_PER_KEY = 10         # rounded up to a power of two of bits per slice
FILTER_MAX_KEYS = 1 << 22        # past this many keys (at most ~16 MiB of bits) a filter gives up


def split_kv_records(buf, prefix: bytes) -> tuple[list[bytes], list[bytes | None]]:
    data = bytes(buf)
    end = len(data)
    if end < _HEADER:
        raise CorruptBatchError(f"KV batch at byte 0: truncated header ({end} of {_HEADER} bytes)", position=0)
    if crc32c(memoryview(data)[_CRC_START:]) != _U32.unpack_from(data, _CRC_AT)[0]:
        raise CorruptBatchError("KV batch at byte 0: CRC mismatch", position=0)
    count = _I32.unpack_from(data, 24)[0]
    keys: list[bytes] = []
    values: list[bytes | None] = []
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
            try:  # unsigned and bounded by the batch, as the compiled twin reads it
                klen, kp = read_varint(data, p, end, 5)
            except ValueError:
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
                 latest: bytes) -> tuple[list[bytes], bytearray, bool]:
    rows: list[bytes] = []
    cts = bytearray()
    if len(values) != len(keys):
        raise ValueError(f"{len(keys)} keys but {len(values)} values")
    for key, value in zip(keys, values, strict=True):
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


def read_through(keys: list[bytes], pending: dict, get) -> list[bytes | None]:
    if not pending:
        return get(keys)
    out: list[bytes | None] = [None] * len(keys)
    misses, at = [], []
    for i, key in enumerate(keys):
        if key in pending:
            out[i] = pending[key]
        else:
            misses.append(key)
            at.append(i)
    if misses:
        for i, value in zip(at, get(misses), strict=True):
            out[i] = value
    return out


def current_values(keys: list[bytes], values: list[bytes | None], pending: dict, get,
                   deletes_only: bool, absent: KeyFilter | None = None) -> dict:
    if len(values) != len(keys):
        raise ValueError(f"{len(keys)} keys but {len(values)} values")
    out: dict = {}
    misses: list[bytes] = []
    for key, value in zip(keys, values, strict=True):
        if (deletes_only and value is not None) or key in out:
            continue
        if key in pending:
            out[key] = pending[key]
        else:
            out[key] = None
            misses.append(key)
    if absent is not None and misses:
        misses = [key for key in misses if absent.might_contain(key)]
    if misses:
        misses.sort()
        got = get(misses)
        if len(got) != len(misses):
            raise ValueError(f"{len(got)} values read for {len(misses)} keys")
        for key, value in zip(misses, got, strict=True):
            if value is not None:
                out[key] = value
    return out


def _slice_bits(capacity: int) -> int:
    bits = 1
    while bits < capacity * FILTER_BITS_PER_KEY:
        bits <<= 1
    return bits


class KeyFilter:
    def __init__(self, first_keys: int = FILTER_FIRST_KEYS, max_keys: int = FILTER_MAX_KEYS) -> None:
        self.max_keys = max_keys
        self.keys = 0           # keys added (repeats included)
        self.given_up = False
        self._next = max(1, first_keys)
        self._slices: list = []  # [bits (bytearray), mask, capacity, keys in it]

    @property
    def nbytes(self) -> int:
        return sum(len(sl[0]) for sl in self._slices)

    def slice_bits(self) -> list[bytes]:
        """Each slice's bit array (the twins must agree on them byte for byte)."""
        return [bytes(sl[0]) for sl in self._slices]

    def add(self, key: bytes) -> None:
        if self.given_up:
            return
        if self.keys >= self.max_keys:
            self.given_up = True
            self._slices = []
            return
        sl = self._slices[-1] if self._slices else None
        if sl is None or sl[3] >= sl[2]:
            cap = self._next
            self._next = cap * 2
            nbits = _slice_bits(cap)
            sl = [bytearray(nbits >> 3), nbits - 1, cap, 0]
            self._slices.append(sl)
        bits, mask = sl[0], sl[1]
        h = hash(key) & _M64
        step = (((h * _MIX) & _M64) >> 32) | 1
        for j in range(FILTER_PROBES):
            pos = (h + j * step) & mask
            bits[pos >> 3] |= 1 << (pos & 7)
        sl[3] += 1
        self.keys += 1

    def add_puts(self, changes: dict) -> None:
        """Add the keys of a dict of changes that are written (value not None)."""
        for key, value in changes.items():
            if value is not None:
                self.add(key)

    def might_contain(self, key: bytes) -> bool:
        if self.given_up:
            return True
        h = hash(key) & _M64
        step = (((h * _MIX) & _M64) >> 32) | 1
        for bits, mask, _cap, _n in self._slices:
            for j in range(FILTER_PROBES):
                pos = (h + j * step) & mask
                if not bits[pos >> 3] & (1 << (pos & 7)):
                    break
            else:
                return True
        return False


split_kv_records_py = split_kv_records
plan_changes_py = plan_changes
fill_batch_py = fill_batch
read_through_py = read_through
current_values_py = current_values
KeyFilter_py = KeyFilter

pick("_kvsplit", globals(), __all__)
