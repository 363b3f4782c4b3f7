"""Primary-key / bucket-key bytes and bucket assignment (DATA.md §6).

The key bytes are the key columns written as CompactedRow fields, back to back, without a null
bitset (``KeyEncoder``). They are used for KV record keys and lookups (physical primary key) and
for bucket hashing and prefix lookups (bucket key). Because the encoding is a plain concatenation,
a bucket key that is a leading prefix of the physical primary key yields a byte prefix of it.

Only tables without a data-lake format are covered: lake tables hash their bucket key with the
lake's own row encoding.
"""
from __future__ import annotations

from typing import List, NamedTuple, Sequence

from . import murmur
from .compacted import CompactedKeyEncoder, CompactedKeyEncoder_py, encode_key

__all__ = ["KeyEncoder", "KeyEncoder_py", "encode_key", "KeyColumns", "key_columns",
           "physical_primary_key", "bucket_key", "RowKeyEncoder", "bucket_of"]

#: ``KeyEncoder(types, names=None).encode(values) -> bytes`` (values = the key columns only)
KeyEncoder = CompactedKeyEncoder
KeyEncoder_py = CompactedKeyEncoder_py


class KeyColumns(NamedTuple):
    """Column positions (in the table schema) of a table's keys."""

    primary_key: List[int]       # declared primary key, in PK order
    physical_key: List[int]      # primary key minus partition columns: the KV / lookup key
    bucket_key: List[int]        # declared bucket key, else the physical key ([] = no hashing)
    partition_keys: List[int]


def _positions(schema, names: Sequence[str], what: str) -> List[int]:
    out = []
    for name in names:
        try:
            out.append(schema.index_of(name))
        except KeyError:
            raise ValueError(f"{what} column {name!r} is not a column of the schema "
                             f"({', '.join(schema.names)})") from None
    return out


def physical_primary_key(descriptor) -> List[str]:
    """Primary-key column names minus the partition keys, in primary-key order."""
    parts = set(descriptor.partition_keys)
    return [c for c in descriptor.schema.primary_key if c not in parts]


def bucket_key(descriptor) -> List[str]:
    """Declared bucket key, else the physical primary key (empty for keyless log tables)."""
    if descriptor.bucket_keys:
        return list(descriptor.bucket_keys)
    return physical_primary_key(descriptor)


def key_columns(descriptor) -> KeyColumns:
    """Key column positions of a ``datatypes.TableDescriptorInfo``."""
    schema = descriptor.schema
    return KeyColumns(
        _positions(schema, schema.primary_key, "primary key"),
        _positions(schema, physical_primary_key(descriptor), "primary key"),
        _positions(schema, bucket_key(descriptor), "bucket key"),
        _positions(schema, descriptor.partition_keys, "partition key"),
    )


class RowKeyEncoder:
    """Key bytes of whole rows: ``encode_row(row_values)`` picks the key columns by position.

    ``RowKeyEncoder(schema, positions)`` with a ``datatypes.SchemaInfo``; ``encode(key_values)``
    takes the key columns alone.
    """

    __slots__ = ("positions", "names", "_encoder")

    def __init__(self, schema, positions: Sequence[int]) -> None:
        self.positions = list(positions)
        cols = [schema.columns[i] for i in self.positions]
        self.names = [c.name for c in cols]
        self._encoder = KeyEncoder([c.type for c in cols], self.names)

    def encode(self, key_values) -> bytes:
        return self._encoder.encode(key_values)

    def encode_row(self, row_values) -> bytes:
        return self._encoder.encode([row_values[i] for i in self.positions])


def bucket_of(key_bytes, num_buckets: int) -> int:
    """The bucket of a key under the default (Fluss / LANCE) bucketing function."""
    return murmur.bucket_for_key(key_bytes, num_buckets)


