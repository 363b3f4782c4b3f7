"""The UpsertWriter's per-row fast path: a whole row (a dict of every column, or a list / tuple
in schema order) to one finished KV record and its bucket, handed to the bucket's hot slot
(``appendslot.HotSlot``) in one call.

``UpsertRow(names, key_positions, key_encoder, row_encoder, num_buckets, slots)``: ``slots`` is
the accumulator's ``{(partition id, bucket): HotSlot}`` (looked up under ``(None, bucket)``: the
fast path serves unpartitioned tables whose bucket key is the primary key). ``put(row)`` returns
the batch handle; or ``(record, bucket)`` when the slot had no room (the accumulator's general
path takes the encoded record); or None when the row is not of the common shape or does not
encode: the caller's general path (with its exact error messages) takes it from the top. Nothing
is kept between calls, so writers used from several threads stay safe.
``_upsertrow.pyx`` is the compiled twin.
"""
from __future__ import annotations

from ._select import pick
from .murmur import bucket_for_key

__all__ = ["UpsertRow"]

_CODEC_ERRORS = (TypeError, ValueError, OverflowError)


class UpsertRow:
    __slots__ = ("names", "key_positions", "key_encode", "row_encode", "num_buckets", "slots")

    def __init__(self, names, key_positions, key_encoder, row_encoder, num_buckets: int, slots: dict) -> None:
        self.names = list(names)
        self.key_positions = list(key_positions)
        self.key_encode = key_encoder.encode
        self.row_encode = row_encoder.encode
        self.num_buckets = num_buckets
        self.slots = slots

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
        except _CODEC_ERRORS:
            return None
        n = len(key)
        if n < 0x80:
            klen = bytes((n,))
        else:
            out = bytearray()
            while n > 0x7F:
                out.append((n & 0x7F) | 0x80)
                n >>= 7
            out.append(n)
            klen = bytes(out)
        record = (len(klen) + len(key) + len(value)).to_bytes(4, "little", signed=True) + klen + key + value
        bucket = bucket_for_key(key, self.num_buckets)
        slot = self.slots.get((None, bucket))
        h = None if slot is None else slot.append(record)
        return (record, bucket) if h is None else h


UpsertRow_py = UpsertRow

pick("_upsertrow", globals(), __all__)
