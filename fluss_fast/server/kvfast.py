"""PUT_KV's fast path: the common primary-key write (last row wins, whole rows, no auto-increment,
an ARROW log, COMPACTED values) handled on raw bytes.

The batch is split into key and stored-value bytes (``codec.kvsplit``), the old values of the
keys that need one come from one multi-get (the bucket's pre-write buffer, then RocksDB), the merge
is planned in one pass into a dict of changes, and the changelog's Arrow columns are made from the
row bytes (``codec.rowarrow``): no row becomes Python values. The order contract of ``kvstore``
holds: the changelog is appended before the changes reach the pre-write buffer, under the bucket's
lock.
"""
from __future__ import annotations

import asyncio
import os
import struct

from ..codec.errors import CorruptBatchError
from ..codec.kv.kvsplit import plan_changes, split_kv_records
from ..codec.rows.rowtypes import INDEXED
from ..error_codes import Errors
from ..errors import FlussError
from .row_merger import Merger
from .table_kv import TableKv
from .table_options import deletes_disabled

_SID = struct.Struct("<h")
# FLUSS_FAST_KV_FAST_PATH=0 sends every request down the general path (tests compare the two)
ENABLED = os.environ.get("FLUSS_FAST_KV_FAST_PATH", "1").strip().lower() not in ("0", "false", "no", "off")
THREAD_BUILD_ROWS = 512  # changelogs at least this long are built (and compressed) on a worker thread
THREAD_GET_KEYS = 256  # multi-gets at least this long run on a worker thread


def eligible(table: TableKv, merger: Merger) -> bool:
    """Whether a request with this merge rule may take the fast path."""
    return (ENABLED and merger.engine is None and merger.target is None and table.auto_inc is None
            and table.log_format == "ARROW" and table.kv_format != INDEXED
            and table.image in ("FULL", "WAL") and merger.delete_behavior in ("ALLOW", "IGNORE", "DISABLE"))


def changelog_from_values(table: TableKv, values, cts: bytearray, mixed: bool, writer_id: int,
                          batch_sequence: int) -> bytes:
    """The changelog batch of stored values (int16 schema id + row), straight from their bytes to
    Arrow (``codec.rowarrow``: rows of an older schema are mapped to the latest one)."""
    if not values:
        return table.build_changelog([], cts, writer_id, batch_sequence)
    rb = table.rows_to_arrow().value_list(values)
    return table.changelog_codec().build(rb, schema_id=table.latest_schema_id, writer_id=writer_id,
                                         batch_sequence=batch_sequence, change_types=bytes(cts))


class _ReadFailed(Exception):
    """The KV state could not be read (the cause is chained)."""


def _plan_and_build(table, bkv, keys, values, full: bool, ignore_deletes: bool, reads: int, h):
    """The old values, the merge plan and the changelog batch of one request: ``(changes, batch)``.

    One function, so that a large request makes one trip to a worker thread instead of two: the
    thread hop is cheap, but on a busy server each return for the GIL (the event loop holds it
    while it flushes other buckets) cost the bucket's pipeline milliseconds."""
    try:
        current = bkv.current_values(keys, values, not full) if reads else {}
    except Exception as e:  # noqa: BLE001 - e.g. the bucket was dropped under the read
        raise _ReadFailed() from e
    # with the FULL image the read values become the changes (plan_changes' contract), saving a
    # dict per batch; ignored deletes would write their old values back, so they keep a separate one
    changes = current if full and not ignore_deletes else {}
    rows, cts, mixed = plan_changes(keys, values, current, full, ignore_deletes, changes,
                                    _SID.pack(table.latest_schema_id))
    return changes, changelog_from_values(table, rows, cts, mixed, h.writer_id, h.batch_sequence)


async def put_batch_fast(table: TableKv, merger: Merger, bkv, records, h) -> int:
    """``kvstore.put_batch`` for an eligible request; ``h`` is the checked header."""
    name = bkv.blog.name
    try:
        keys, values = split_kv_records(records, _SID.pack(h.schema_id))
    except CorruptBatchError as e:
        raise FlussError(f"Corrupt KV batch for {name}: {e}", Errors.CORRUPT_MESSAGE) from None
    if b"" in keys:
        from .kvstore import check_keys

        check_keys(keys, name)
    full = table.image != "WAL"
    behavior = merger.delete_behavior

    async with bkv.lock:
        bkv.check_open()
        retried = bkv.retried_end(h.writer_id, h.batch_sequence)
        if retried is not None:
            return retried
        if behavior == "DISABLE" and None in values:
            raise deletes_disabled()
        ignore_deletes = behavior == "IGNORE"
        # FULL image: the old value of every key; WAL: only of the deleted ones (none when ignored)
        reads = len(keys) if full else (0 if ignore_deletes else values.count(None))
        args = (table, bkv, keys, values, full, ignore_deletes, reads, h)
        try:
            if reads >= THREAD_GET_KEYS or len(keys) >= THREAD_BUILD_ROWS:
                # RocksDB's multi-get, the compiled row decoding, zstd and Arrow drop the GIL: other
                # buckets' requests go on meanwhile; the bucket's lock keeps its appends in order
                changes, batch = await asyncio.to_thread(_plan_and_build, *args)
            else:
                changes, batch = _plan_and_build(*args)
        except _ReadFailed as e:
            if bkv.closed:
                raise FlussError(f"{name} was dropped", Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION) from None
            cause = e.__cause__
            raise FlussError(f"Failed to read the KV state of {name}: {cause}", Errors.KV_STORAGE_EXCEPTION) from cause
        except (TypeError, ValueError, FlussError) as e:
            raise FlussError(f"Cannot build the changelog of {name}: {e}", Errors.CORRUPT_MESSAGE) from None
        return await bkv.commit(batch, changes, len(records))
