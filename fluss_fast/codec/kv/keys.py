"""Primary-key / bucket-key bytes and bucket assignment (docs/contributing/formats.md §6).

The key bytes are the key columns written as CompactedRow fields, back to back, without a null
bitset (``KeyEncoder``). They are used for KV record keys and lookups (physical primary key) and
for bucket hashing and prefix lookups (bucket key). Because the encoding is a plain concatenation,
a bucket key that is a leading prefix of the physical primary key yields a byte prefix of it.

Data-lake tables (``table.datalake.format``) follow the Java client's ``KeyEncoder`` rules, which
:class:`KeyScheme` holds for one table:

* the bucket key is always encoded the lake's way (PAIMON: a Paimon BinaryRow; ICEBERG: Iceberg's
  single-column bytes; LANCE: the default layout; see ``lakekeys``) and hashed with the lake's
  bucket function (``murmur.paimon_bucket`` / ``murmur.iceberg_bucket`` / the default);
* the primary key (KV record keys, lookups) is encoded the lake's way too when the bucket key is
  the default one (the physical primary key) or the table is a legacy one
  (``table.kv.format-version`` absent or 1); a table of format version 2 (what the coordinator
  sets on new primary-key tables) with a bucket key of its own encodes its primary key the default
  way, so that prefix lookups still see the bucket-key bytes as a prefix of the key bytes;
* a prefix lookup's key follows the primary-key rule over the bucket-key columns.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..rows.compacted import CompactedKeyEncoder, CompactedKeyEncoder_py, encode_key
from ..wire import murmur
from .lakekeys import IcebergKeyDecoder, IcebergKeyEncoder, PaimonKeyDecoder, PaimonKeyEncoder

__all__ = ["KeyEncoder", "KeyEncoder_py", "encode_key", "KeyColumns", "key_columns",
           "physical_primary_key", "bucket_key", "RowKeyEncoder", "bucket_of", "lake_format",
           "kv_format_version", "lake_key_encoder", "lake_key_decoder", "bucketing_function",
           "KeyScheme", "LAKE_FORMATS"]

#: ``KeyEncoder(types, names=None).encode(values) -> bytes`` (values = the key columns only)
KeyEncoder = CompactedKeyEncoder
KeyEncoder_py = CompactedKeyEncoder_py


class KeyColumns(NamedTuple):
    """Column positions (in the table schema) of a table's keys."""

    primary_key: list[int]       # declared primary key, in PK order
    physical_key: list[int]      # primary key minus partition columns: the KV / lookup key
    bucket_key: list[int]        # declared bucket key, else the physical key ([] = no hashing)
    partition_keys: list[int]


def _positions(schema, names: Sequence[str], what: str) -> list[int]:
    out = []
    for name in names:
        try:
            out.append(schema.index_of(name))
        except KeyError:
            raise ValueError(f"{what} column {name!r} is not a column of the schema "
                             f"({', '.join(schema.names)})") from None
    return out


def physical_primary_key(descriptor) -> list[str]:
    """Primary-key column names minus the partition keys, in primary-key order."""
    parts = set(descriptor.partition_keys)
    return [c for c in descriptor.schema.primary_key if c not in parts]


def bucket_key(descriptor) -> list[str]:
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

    ``RowKeyEncoder(schema, positions, lake=None)`` with a ``datatypes.SchemaInfo`` and the key
    layout's lake format (None: the default CompactedRow layout); ``encode(key_values)`` takes the
    key columns alone.
    """

    __slots__ = ("positions", "names", "_encoder")

    def __init__(self, schema, positions: Sequence[int], lake: str | None = None) -> None:
        self.positions = list(positions)
        cols = [schema.columns[i] for i in self.positions]
        self.names = [c.name for c in cols]
        self._encoder = lake_key_encoder([c.type for c in cols], self.names, lake)

    def encode(self, key_values) -> bytes:
        return self._encoder.encode(key_values)

    def encode_row(self, row_values) -> bytes:
        return self._encoder.encode([row_values[i] for i in self.positions])


def bucket_of(key_bytes, num_buckets: int) -> int:
    """The bucket of a key under the default (Fluss / LANCE) bucketing function."""
    return murmur.bucket_for_key(key_bytes, num_buckets)


# -- data-lake tables ------------------------------------------------------------------------------

#: the values of ``table.datalake.format`` Fluss knows (upper case)
LAKE_FORMATS = ("PAIMON", "ICEBERG", "LANCE", "HUDI")


def _props(descriptor_or_props) -> dict:
    props = getattr(descriptor_or_props, "properties", descriptor_or_props)
    return props or {}


def lake_format(descriptor_or_props) -> str | None:
    """The table's ``table.datalake.format`` in upper case (``PAIMON`` ...), None when unset.

    Only the format counts, not ``table.datalake.enabled``: the Java client keys and buckets a
    table the lake's way whenever the format is set (a cluster with a lake format sets it on every
    new table)."""
    value = _props(descriptor_or_props).get("table.datalake.format")
    if value is None or not str(value).strip():
        return None
    fmt = str(value).strip().upper()
    if fmt not in LAKE_FORMATS:
        raise ValueError(f"Unsupported datalake format: {value}")
    return fmt


def kv_format_version(descriptor_or_props) -> int:
    """``table.kv.format-version``; tables without one are version 1 (created before it existed)."""
    value = _props(descriptor_or_props).get("table.kv.format-version")
    if value is None or not str(value).strip():
        return 1
    return int(str(value).strip())


def lake_key_encoder(types, names, lake: str | None):
    """The key encoder of a lake format (Java ``KeyEncoder.of``): PAIMON and ICEBERG have their
    own, the others (LANCE, None) the default CompactedRow layout."""
    if lake == "PAIMON":
        return PaimonKeyEncoder(types, names)
    if lake == "ICEBERG":
        return IcebergKeyEncoder(types, names)
    if lake == "HUDI":
        raise ValueError("HUDI tables are not supported by this client: their bucket key is a hash of "
                         "Hudi's record-key text")
    return KeyEncoder(types, names)


def lake_key_decoder(types, names, lake: str | None):
    """The decoder of :func:`lake_key_encoder`'s bytes (``decode(key) -> list``), or None for the
    default layout (read it with a CompactedRow decoder and an all-zero null bitset)."""
    if lake == "PAIMON":
        return PaimonKeyDecoder(types, names)
    if lake == "ICEBERG":
        return IcebergKeyDecoder(types, names)
    return None


def bucketing_function(lake: str | None) -> Callable[[bytes, int], int]:
    """``fn(bucket_key_bytes, num_buckets) -> bucket`` of a lake format (Java ``BucketingFunction.of``)."""
    if lake == "PAIMON":
        return murmur.paimon_bucket
    if lake == "ICEBERG":
        return murmur.iceberg_bucket
    if lake == "HUDI":
        return _hudi_unsupported
    return murmur.bucket_for_key


def _hudi_unsupported(key_bytes, num_buckets: int) -> int:
    raise ValueError("HUDI tables are not supported by this client")


class KeyScheme:
    """How one table's keys are encoded and bucketed (the Java client's ``KeyEncoder`` factory).

    ``KeyScheme(descriptor)``; ``lake``: the lake format or None; ``pk_lake``: the layout of the
    primary key (and of prefix-lookup keys) -- the lake format or None for the default layout;
    ``bucket_lake``: the layout of the bucket key; ``bucketing``: the bucket function;
    ``default``: whether the table uses none of the lake's ways (the fast paths' layout)."""

    __slots__ = ("lake", "version", "default_bucket_key", "pk_lake", "bucket_lake", "bucketing",
                 "default", "keys")

    def __init__(self, descriptor) -> None:
        self.keys = key_columns(descriptor)
        self.lake = lake = lake_format(descriptor)
        self.version = version = kv_format_version(descriptor)
        if descriptor.schema.primary_key:
            self.default_bucket_key = self.keys.bucket_key == self.keys.physical_key
        else:
            self.default_bucket_key = not self.keys.bucket_key
        code = None if lake in (None, "LANCE") else lake
        self.bucket_lake = code
        self.bucketing = bucketing_function(lake)
        if version not in (1, 2):
            raise ValueError(f"Unsupported kv format version: {version}")
        if lake == "HUDI":  # Hudi's key is a lossy hash: primary keys keep the default layout
            self.pk_lake = None
        elif version == 1 or self.default_bucket_key:
            self.pk_lake = code
        else:
            self.pk_lake = None
        self.default = code is None

    def pk_encoder(self, types, names):
        """Encoder of the physical primary key (KV records, lookups)."""
        return lake_key_encoder(types, names, self.pk_lake)

    def prefix_encoder(self, types, names):
        """Encoder of a prefix lookup's key (the bucket-key columns under the primary-key rule;
        a prefix lookup needs a bucket key of its own, so format version 2 means the default layout)."""
        if self.version == 1 and self.lake != "HUDI":
            return lake_key_encoder(types, names, self.bucket_lake)
        return KeyEncoder(types, names)

    def bucket_encoder(self, types, names):
        """Encoder of the bucket key (what ``bucketing`` hashes)."""
        return lake_key_encoder(types, names, self.bucket_lake)

    def bucket_reuses_pk(self) -> bool:
        """Whether the primary-key bytes are the bucket-key bytes (default bucket key)."""
        return self.default_bucket_key and self.pk_lake == self.bucket_lake

    def __repr__(self) -> str:
        return (f"KeyScheme(lake={self.lake}, version={self.version}, pk={self.pk_lake or 'COMPACTED'}, "
                f"bucket={self.bucket_lake or 'COMPACTED'})")
