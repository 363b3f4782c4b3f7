"""How the embedded server opens RocksDB (``rocksdict``) for a bucket's primary-key state: the
options every bucket's store shares, the one block cache, and the check that the ``server`` extra
that brings rocksdict is installed."""
from __future__ import annotations

BLOCK_CACHE_BYTES = 64 << 20  # shared by every bucket's RocksDB in the process


SERVER_EXTRA_HINT = "pip install 'fluss-fast[server]'"


class RocksDBMissing(ImportError):
    """rocksdict, the embedded server's RocksDB binding, is not installed: it comes with the ``server``
    extra, as a client of a real cluster does without it."""


def require_rocksdict() -> None:
    """Raises RocksDBMissing unless rocksdict imports. The server calls it before opening anything, so
    a missing extra is one line at start, not an ImportError in the first primary-key write."""
    try:
        import rocksdict  # noqa: F401
    except ImportError as exc:
        raise RocksDBMissing(f"the embedded server keeps primary-key tables in RocksDB, and rocksdict is not "
                             f"installed; install it with: {SERVER_EXTRA_HINT}") from exc


_BLOCK_CACHE = None


def _block_cache():
    """One LRU block cache for every bucket's store: PUT_KV reads the old value of every key it
    updates, and a bucket's working set is rarely the same size as its neighbours'."""
    global _BLOCK_CACHE
    if _BLOCK_CACHE is None:
        import rocksdict

        _BLOCK_CACHE = rocksdict.Cache(BLOCK_CACHE_BYTES)
    return _BLOCK_CACHE


def raw_options():
    import rocksdict

    opts = rocksdict.Options(raw_mode=True)
    opts.create_if_missing(True)
    # PUT_KV reads the old value of every key it writes, and most new keys are absent: bloom filters
    # (on the SST files and on the memtable) answer those misses without a search, ~5x cheaper
    table = rocksdict.BlockBasedOptions()
    table.set_bloom_filter(10, False)
    table.set_block_cache(_block_cache())
    # a hash index inside each data block: a point read of a present key skips the block's binary search
    table.set_data_block_index_type(rocksdict.DataBlockIndexType.binary_and_hash())
    opts.set_block_based_table_factory(table)
    opts.set_memtable_prefix_bloom_ratio(0.1)
    opts.set_memtable_whole_key_filtering(True)
    # a skiplist insert costs a cache miss per level: a 16 MiB memtable (not 64) cut the write of
    # a pre-write flush by a third in our measurements, reads alike, flushed to SSTs more often
    opts.set_write_buffer_size(16 << 20)
    # the young levels are rewritten by every compaction and read by every old-value lookup: left
    # uncompressed they cost no snappy on flush, compaction or read; the bottom levels keep lz4
    none, lz4 = rocksdict.DBCompressionType.none(), rocksdict.DBCompressionType.lz4()
    opts.set_compression_per_level([none, none, lz4, lz4, lz4, lz4, lz4])
    return opts


def open_db(path: str):
    """A bucket's RocksDB, written without RocksDB's own WAL: the bucket's changelog is the WAL.
    Every write carries the log offset it brings the state to (``kvstore``'s applied-offset entry),
    and with one column family RocksDB recovers a prefix of its writes, so the mark recovered always
    matches the state recovered, and the log is replayed from there (replaying the log is
    idempotent, docs/contributing/formats.md §8)."""
    import rocksdict

    # column families named (the default one only): without them rocksdict reopens an existing
    # store with the options saved in its OPTIONS file, which cannot hold the shared block cache,
    # so every reopened bucket read through a private 8 MiB cache of RocksDB's default
    db = rocksdict.Rdict(path, raw_options(), column_families={})
    wo = rocksdict.WriteOptions()
    wo.disable_wal = True
    db.set_write_options(wo)
    return db
