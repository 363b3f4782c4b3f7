"""The UpsertWriter's per-row fast path: a whole row (a dict of every column, or a list / tuple
in schema order) to one finished KV record and its bucket, written into the bucket's open KV
batch in one call.

``KvRecordBuilder(capacity=0)``: the records of one open KV batch (``int32 length | varint key length | key
| value``, back to back; docs/contributing/formats.md §5). ``append(record)`` takes a finished record, ``put(key,
value)`` frames one (``value`` None: a delete); both return the bytes held so far. ``build()``
hands them over as a ``KvChunk`` (``data``, ``num_rows``) and empties the builder.

``KvSlot``: the accumulator's hot slot for KV batches, the same contract as
``appendslot.HotSlot`` (``builder``, ``handle``, ``size``, ``cap``, ``append(record)``); the
compiled ``UpsertRow`` writes straight into the builder of a compiled slot instead of making a
record object first.

``UpsertRow(names, key_positions, key_encoder, row_encoder, num_buckets, slots)``: ``slots`` is
the accumulator's ``{(partition id, bucket): slot}`` (looked up under ``(None, bucket)``: the
fast path serves unpartitioned tables whose bucket key is the primary key). ``bucketing``
(optional): ``fn(key bytes, num_buckets) -> bucket`` of a data-lake table (``codec.keys.KeyScheme``;
its ``key_encoder`` is the lake's), else Fluss's bucket of the key. ``put(row)`` returns
the batch handle; or ``(record, bucket)`` when the slot had no room (the accumulator's general
path takes the encoded record); or None when the row is not of the common shape or does not
encode: the caller's general path (with its exact error messages) takes it from the top.
``bind(writer, ctx, fallback, append)`` + ``upsert(row)`` is the writer's whole ``upsert``: the
open checks (``writer._closed``, ``ctx._closed``), ``put``, then ``append(record, None, bucket,
num_buckets)`` for a record the slot had no room for and ``fallback(row)`` for everything else.
Nothing is kept between calls but the slots found, so writers used from several threads stay
safe. ``_upsertrow.pyx`` is the compiled twin.
"""
from __future__ import annotations

import struct

from ...codec._select import pick
from ...codec.wire.murmur import bucket_for_key
from ...codec.wire.varint import encode_varint
from .appendslot import HotSlot_py

__all__ = ["UpsertRow", "KvRecordBuilder", "KvSlot", "KvChunk", "kv_record"]
_COMPILED = ["UpsertRow", "KvRecordBuilder", "KvSlot"]

_CODEC_ERRORS = (TypeError, ValueError, OverflowError)
_I32 = struct.Struct("<i")
_BYTE = [bytes((i,)) for i in range(256)]


class KvChunk:
    """Finished records of a KV batch; ``num_rows`` as Arrow chunks have it, for the accumulator."""

    __slots__ = ("data", "num_rows")

    def __init__(self, data, num_rows: int):
        self.data = data
        self.num_rows = num_rows


def kv_record(key: bytes, value) -> bytes:
    """One KV record; ``value`` None is a delete."""
    n = len(key)
    if n < 0x80 and value is not None:  # one-byte key length: the common case
        return _I32.pack(1 + n + len(value)) + _BYTE[n] + key + value
    klen = encode_varint(n)
    if value is None:
        return _I32.pack(len(klen) + n) + klen + key
    return b"".join((_I32.pack(len(klen) + n + len(value)), klen, key, value))


class KvRecordBuilder:
    """Records of one open KV batch (the accumulator's row builder for KV batches)."""

    __slots__ = ("_buf", "_n")

    def __init__(self, capacity: int = 0):  # capacity: a hint the compiled twin allocates up front
        self._buf = bytearray()
        self._n = 0

    def append(self, record) -> int:
        self._buf += record
        self._n += 1
        return len(self._buf)

    def put(self, key, value) -> int:
        return self.append(kv_record(bytes(key), None if value is None else bytes(value)))

    def __len__(self) -> int:
        return self._n

    def build(self) -> KvChunk:
        out = KvChunk(bytes(self._buf), self._n)
        self._buf = bytearray()
        self._n = 0
        return out


class KvSlot(HotSlot_py):
    """``appendslot.HotSlot`` for KV batches (the compiled twin lets ``UpsertRow`` in)."""

    __slots__ = ()


class UpsertRow:
    __slots__ = ("names", "key_positions", "key_encode", "row_encode", "num_buckets", "slots",
                 "bucketing", "_writer", "_ctx", "_fallback", "_append")

    def __init__(self, names, key_positions, key_encoder, row_encoder, num_buckets: int, slots: dict,
                 bucketing=None) -> None:
        if num_buckets <= 0:
            raise ValueError(f"num_buckets must be positive, got {num_buckets}")
        self.names = list(names)
        self.key_positions = list(key_positions)
        self.key_encode = key_encoder.encode
        self.row_encode = row_encoder.encode
        self.num_buckets = num_buckets
        self.slots = slots
        self.bucketing = bucket_for_key if bucketing is None else bucketing
        self._writer = self._ctx = self._fallback = self._append = None

    def bind(self, writer, ctx, fallback, append) -> None:
        self._writer = writer
        self._ctx = ctx
        self._fallback = fallback
        self._append = append

    def upsert(self, row):
        """Insert or replace the row with this primary key: ``UpsertWriter.upsert`` (it stands
        in for the writer's method)."""
        if self._writer._closed or self._ctx._closed:
            return self._fallback(row)
        got = self.put(row)
        if got is None:
            return self._fallback(row)
        if type(got) is tuple:
            return self._append(got[0], None, got[1], self.num_buckets)
        return got

    def put(self, row):
        kind = type(row)
        if kind is dict:
            if len(row) != len(self.names):
                return None
            try:
                values = [row[n] for n in self.names]
            except KeyError:
                return None
        elif kind is list or kind is tuple:
            if len(row) != len(self.names):
                return None
            values = list(row)
        else:
            return None
        try:
            key = self.key_encode([values[i] for i in self.key_positions])
            value = self.row_encode(values)
            bucket = self.bucketing(key, self.num_buckets)
        except _CODEC_ERRORS:
            return None
        record = kv_record(key, value)
        slot = self.slots.get((None, bucket))
        h = None if slot is None else slot.append(record)
        return (record, bucket) if h is None else h


UpsertRow_py = UpsertRow
KvRecordBuilder_py = KvRecordBuilder
KvSlot_py = KvSlot

pick("_upsertrow", globals(), _COMPILED)
