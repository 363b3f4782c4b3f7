"""Primary-key table state of the embedded server: one RocksDB (``rocksdict``) per bucket and PUT_KV
applied to it (docs/contributing/formats.md §5, §7, §8). The merge rule of a request is
``row_merger.Merger``, the table's changelog format ``table_kv.TableKv``, the RocksDB options
``rocksdb_options``.

Write order and recovery: a PUT_KV batch is merged against the current state, turned into ONE
changelog batch that is appended to the bucket's log, and only then applied to the bucket's
pre-write buffer (``BucketKv.pending``, key -> value or None for a delete), which every read
consults before RocksDB. The buffer goes to RocksDB as one sorted ``WriteBatch`` once it holds
``PENDING_KEYS`` keys or ``PENDING_BYTES``, ``PENDING_SECONDS`` after its first change, before any
iteration (prefix lookups, limit scans, SCAN_KV) and on a clean stop: a skiplist takes one big
sorted batch at a fraction of the per-key cost of many small ones, and a key changed again before
the flush is written once. So the log is never behind the KV store. Every changelog record that
carries a row (+I, +U, -D) holds the whole row image, which makes replaying a stretch of the log
idempotent. RocksDB is written without its own WAL (the log is one already): every write batch
also stores, under the empty key, the log offset it brings the state to, and as RocksDB recovers
a prefix of its write batches after a crash, the recovered offset always describes the recovered
state. On opening the store replays the log from that offset to its end — which also restores
whatever the buffer (or a memtable RocksDB had not flushed) held at a crash. A store that claims
more than the log holds (the log lost a torn tail) is rebuilt from the whole log. The
``applied-offset`` file beside the store says how far RocksDB has been given the log (for
operators and tests); it is read only once, to take over a store of an older server.

Values are stored as Java stores them: int16 LE schema id, then the row in the table's kv format.
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
from itertools import islice

from ..codec.errors import CorruptBatchError
from ..codec.kv.kvbatch import encode_value, iter_kv_records, parse_kv_header
from ..codec.kv.kvsplit import KeyFilter, current_values, fill_batch, read_through
from ..codec.log import logbatch

# change types of changelog records (docs/contributing/formats.md §2.5)
from ..codec.log.indexedlog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from ..codec.rows.compacted import CompactedRowEncoder
from ..codec.rows.indexed import IndexedRowEncoder
from ..codec.rows.rowtypes import INDEXED
from ..error_codes import Errors
from ..errors import FlussError
from . import kvfast
from .bucket_log import BucketLog
from .logstore import LogManager
from .rocksdb_options import open_db, raw_options
from .row_merger import UNCHANGED, Merger
from .segment_read import read_segment
from .table_kv import TableKv
from .table_options import deletes_disabled

log = logging.getLogger("fluss_fast.server.kvstore")


_APPLIED_FILE = "applied-offset"
# The applied offset is stored in RocksDB under the empty key, which no primary key encodes to
# (every key column writes at least one byte); iterations start at FIRST_KEY to pass it by.
_APPLIED_KEY = b""
FIRST_KEY = b"\x00"
# a store opened with more keys than this gets no key filter (listing them would slow the open)
FILTER_BUILD_KEYS = int(os.environ.get("FLUSS_FAST_KV_FILTER_OPEN_KEYS") or 1 << 20)
# the pre-write buffer's bounds: they also bound the log a restart after a crash replays
# (FLUSS_FAST_KV_PREWRITE_KEYS=1 flushes every batch)
PENDING_KEYS = max(1, int(os.environ.get("FLUSS_FAST_KV_PREWRITE_KEYS") or 65536))
PENDING_BYTES = 16 << 20  # KV batch bytes merged into the buffer since its last flush
PENDING_TOTAL_BYTES = 256 << 20  # the same over every bucket in the process: past it, a bucket flushes at once
PENDING_SECONDS = float(os.environ.get("FLUSS_FAST_KV_PREWRITE_SECONDS") or 2.0)
THREAD_BUILD_ROWS = 512  # changelogs at least this long are built on a worker thread


# -- per bucket -----------------------------------------------------------------------------------
class BucketKv:
    """The RocksDB state of one bucket, next to the bucket's log directory."""

    pending_total = 0  # bytes in the pre-write buffers of every bucket (changed on the event loop only)

    def __init__(self, blog: BucketLog, directory: str) -> None:
        self.blog = blog
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.db = open_db(os.path.join(directory, "db"))
        self.lock = asyncio.Lock()
        self.applied = self._read_applied()  # RocksDB holds the log up to here
        # the keys RocksDB may hold, so that looking up a new key costs no RocksDB read (None: the
        # store held too many keys at open to list them)
        self.kfilter: KeyFilter | None = self._key_filter()
        # the pre-write buffer: changes up to pending_end that RocksDB does not have yet
        self.pending: dict[bytes, bytes | None] = {}
        self.pending_end = self.applied
        self._pending_bytes = 0
        self._flush_timer = None
        self.closed = False
        self.scanners = 0
        self._auto_seg: list | None = None
        self.stale = False  # the store missed a write: reopen it (which replays the log)

    # -- auto-increment ids -----------------------------------------------------------------------
    def next_auto_id(self, table: TableKv) -> int:
        """The next id of the table's auto-increment column: from this bucket's cached range, which is
        taken from a per-table counter (persisted before use, so a restart never reuses an id)."""
        seg = self._auto_seg
        if seg is None or seg[0] > seg[1]:
            seg = self._auto_seg = self._take_auto_range(table)
        nxt = seg[0]
        if nxt > table.auto_inc_max:
            raise FlussError(f'Reached maximum value of sequence "<{table.names[table.auto_inc]}>" '
                             f"({table.auto_inc_max}).", Errors.UNKNOWN_SERVER_ERROR)
        seg[0] = nxt + 1
        return nxt

    def _take_auto_range(self, table: TableKv) -> list:
        tdir = os.path.dirname(self.blog.dir)
        if self.blog.partition_id is not None:
            tdir = os.path.dirname(tdir)
        path = os.path.join(tdir, f"auto-increment-{table.schema.columns[table.auto_inc].id}")
        try:
            with open(path, "rb") as f:
                start = int(f.read().decode().strip() or 0)
        except FileNotFoundError:
            start = 0
        except (OSError, ValueError) as e:
            raise FlussError(f"Failed to fetch auto-increment values of {table.path}: {e}",
                             Errors.UNKNOWN_SERVER_ERROR) from None
        size = max(1, table.auto_inc_cache)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(str(start + size).encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return [start + 1, start + size]

    def _key_filter(self) -> KeyFilter | None:
        f = KeyFilter()
        it = self.db.iter()
        it.seek(FIRST_KEY)
        n = 0
        while it.valid():
            n += 1
            if n > FILTER_BUILD_KEYS:
                log.info("%s: %d+ keys at open, no key filter (every new key is looked up in RocksDB)",
                         self.blog.name, FILTER_BUILD_KEYS)
                return None
            f.add(it.key())
            it.next()
        return f

    # -- the applied-offset mark ---------------------------------------------------------------
    def _read_applied(self) -> int:
        """The offset stored in RocksDB beside the state it describes. A store without one was
        written with RocksDB's WAL by an older server (its ``applied-offset`` file is then exact), or
        is new: its mark is stored now and made durable before any write that skips the WAL."""
        raw = self.db.get(_APPLIED_KEY)
        if raw is not None:
            return int(raw)
        try:
            with open(os.path.join(self.dir, _APPLIED_FILE), "rb") as f:
                offset = int(f.read().decode().strip() or 0)
        except (OSError, ValueError):
            offset = 0
        self._store_mark(offset)
        return offset

    def _store_mark(self, offset: int) -> None:
        self.db.put(_APPLIED_KEY, b"%d" % offset)
        self.db.flush()  # into an SST: from here on the mark in RocksDB is the one recovery trusts

    def _mark(self, offset: int) -> None:
        path = os.path.join(self.dir, _APPLIED_FILE)
        tmp = path + ".tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(str(offset).encode())
            os.replace(tmp, path)
        except OSError as e:  # only costs a longer replay next time
            log.warning("cannot record the applied offset of %s: %s", self.blog.name, e)

    # -- recovery --------------------------------------------------------------------------------
    async def catch_up(self, table: TableKv) -> None:
        """Bring the store up to the log's end (after a crash or a restart)."""
        hw = self.blog.high_watermark
        start = self.applied
        if start > hw:
            log.warning("%s: KV state claims offset %d beyond the log end %d; rebuilding it from the log",
                        self.blog.name, start, hw)
            self._clear()
            start = self.blog.log_start_offset
        if start >= hw:
            self.applied = self.pending_end = start
            return
        replayed = 0
        pieces = self.blog.whole_batches(start)
        for seg, pos, n in pieces:
            data = await read_segment(seg, pos, n)
            for h in logbatch.iter_batches(data):
                if h.next_offset <= start:
                    continue
                writes = {_APPLIED_KEY: b"%d" % h.next_offset}
                for ct, values in table.changelog_rows(data, h):
                    schema = table.schemas[h.schema_id]
                    width = len(schema.columns)
                    if ct == UPDATE_BEFORE:
                        continue
                    key = table.key_encoder.encode([values[i] for i in table.physical_key])
                    if ct == DELETE:
                        writes[key] = None
                    else:
                        enc = (IndexedRowEncoder if table.kv_format == INDEXED else CompactedRowEncoder)(
                            schema.types, schema.names)
                        writes[key] = encode_value(h.schema_id, enc.encode(values[:width]))
                    replayed += 1
                self.write(writes)
        self.applied = self.pending_end = hw
        self._mark(hw)
        if replayed:
            log.info("%s: replayed %d changelog records into the KV state", self.blog.name, replayed)

    def _clear(self) -> None:
        import rocksdict

        path = os.path.join(self.dir, "db")
        self.db.close()
        rocksdict.Rdict.destroy(path, raw_options())
        shutil.rmtree(path, ignore_errors=True)
        self.db = open_db(path)
        self.kfilter = KeyFilter()
        # durable before the rebuild writes: a crash in it must not find a store without its mark
        self._store_mark(self.blog.log_start_offset)

    # -- access ----------------------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:
        if not key:
            return None  # the applied-offset entry is no row
        pending = self.pending
        if key in pending:
            return pending[key]
        return self.db.get(key)

    def multi_get(self, keys: list[bytes]) -> list[bytes | None]:
        """Current values (None = absent), the pre-write buffer first. Safe on a worker thread beside
        the loop: a flush replaces the buffer instead of emptying it, and RocksDB is read after the
        buffer, so a flush in between only moves a value to where it is read next."""
        if not keys:
            return []
        out = read_through(keys, self.pending, self.db.get)
        if b"" in keys:  # the applied-offset entry is no row (no key encoder writes an empty key)
            out = [None if not key else v for key, v in zip(keys, out, strict=True)]
        return out

    def current_values(self, keys: list[bytes], values: list[bytes | None], deletes_only: bool) -> dict:
        """``codec.kvsplit.current_values`` of this bucket (the pre-write buffer, then RocksDB); as
        safe on a worker thread as ``multi_get``."""
        return current_values(keys, values, self.pending, self.db.get, deletes_only, self.kfilter)

    def prefix(self, prefix: bytes) -> list[bytes]:
        self.flush()
        out = []
        for k, v in self.db.items(from_key=prefix or FIRST_KEY):
            if not k.startswith(prefix):
                break
            out.append(v)
        return out

    def values(self, limit: int | None = None) -> list[bytes]:
        self.flush()
        return list(islice(self.db.values(from_key=FIRST_KEY), limit))

    def write(self, changes: dict[bytes, bytes | None]) -> None:
        if not changes:
            return
        import rocksdict

        wb = rocksdict.WriteBatch(raw_mode=True)
        for k, v in changes.items():
            if v is None:
                wb.delete(k)
            else:
                wb.put(k, v)
        self.db.write(wb)
        if self.kfilter is not None:
            self.kfilter.add_puts(changes)

    def snapshot(self):
        """A RocksDB snapshot of the current state (the buffer flushed first)."""
        self.flush()
        return self.db.snapshot()

    async def commit(self, batch: bytes, changes: dict[bytes, bytes | None], size: int) -> int:
        """Append a changelog batch, then apply ``changes`` (key -> value, None = delete; the dict
        may become the buffer itself, so the caller lets go of it) through the pre-write buffer; the
        log end offset after the append. ``size``: the request's bytes, for the buffer's bound.
        Under ``self.lock``."""
        info = logbatch.validate_records(batch)
        dup = self.blog.check_writer(info)
        if dup is not None:
            return dup.last_offset + 1
        result = await self.blog.append(bytearray(batch), info)
        if result.duplicate:
            return result.last_offset + 1
        end = result.last_offset + 1
        if self.closed or self.stale:
            # dropped or failed under the append: the log has the batch, reopening replays it
            return end
        pending = self.pending
        if changes:
            if pending:
                pending.update(changes)
            else:  # the caller hands ``changes`` over: an empty buffer takes it as it is
                pending = self.pending = changes
            self._pending_bytes += size
            BucketKv.pending_total += size
        self.pending_end = end
        if not pending:
            self.applied = end
        elif (len(pending) >= PENDING_KEYS or self._pending_bytes >= PENDING_BYTES
              or BucketKv.pending_total >= PENDING_TOTAL_BYTES):
            self.flush()
        elif self._flush_timer is None:
            self._flush_timer = asyncio.get_running_loop().call_later(PENDING_SECONDS, self._flush_due)
        return end

    def _flush_due(self) -> None:
        self._flush_timer = None
        try:
            self.flush()
        except FlussError as e:
            log.warning("%s", e.message)

    def _cancel_flush_timer(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None

    def flush(self) -> None:
        """Write the pre-write buffer to RocksDB as one sorted batch and record the applied offset.
        Synchronous, so no change can slip between the buffer being taken and the offset moving."""
        self._cancel_flush_timer()
        pending = self.pending
        if not pending or self.closed or self.stale:
            return
        end = self.pending_end
        import rocksdict

        try:
            wb = rocksdict.WriteBatch(raw_mode=True)
            fill_batch(pending, wb)
            # the applied offset rides in the same batch: whatever prefix of its writes RocksDB
            # still has after a crash, its mark says which stretch of the log to replay
            wb.put(_APPLIED_KEY, b"%d" % end)
            self.db.write(wb)
            if self.kfilter is not None:
                self.kfilter.add_puts(pending)
        except Exception as e:
            # RocksDB missed changes the log has: reopening replays the log from the last mark
            self.stale = True
            raise FlussError(f"Failed to write the KV state of {self.blog.name}: {e}",
                             Errors.KV_STORAGE_EXCEPTION) from e
        finally:
            # Only once RocksDB has the changes does the buffer go: a multi-get on a worker thread
            # reads the buffer first, then RocksDB, and the GIL may pass to it between any two
            # lines here. Replaced, not cleared: such a read may still hold the old one.
            self.pending = {}
            BucketKv.pending_total -= self._pending_bytes
            self._pending_bytes = 0
        self.applied = end
        self._mark(end)

    def check_open(self) -> None:
        if self.closed:
            raise FlussError(f"{self.blog.name} was dropped", Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)

    def retried_end(self, writer_id: int, batch_sequence: int) -> int | None:
        """The log end offset to answer a retried batch of an idempotent writer with (before any
        work, and before any error its records would raise now), else None; a sequence gap raises."""
        if writer_id < 0:
            return None
        dup = self.blog.check_writer(_WriterProbe(writer_id, batch_sequence))
        return None if dup is None else dup.last_offset + 1

    def close(self, flush: bool = True) -> None:
        """Close the store; ``flush=False`` drops the pre-write buffer (the bucket is being dropped)."""
        if self.closed:
            return
        if flush and not self.stale:
            try:
                self.flush()
            except FlussError as e:  # the log still has the changes: the next open replays them
                log.warning("%s", e.message)
        else:
            self._cancel_flush_timer()
            BucketKv.pending_total -= self._pending_bytes
            self._pending_bytes = 0
            self.pending = {}
        self.closed = True
        try:
            if flush and not self.stale:
                self.db.flush()  # the memtables to SSTs: a clean restart replays nothing
            self.db.close()
        except Exception:  # noqa: BLE001 - closing a store that is going away anyway
            log.exception("closing the KV store of %s failed", self.blog.name)
        if os.path.isdir(self.dir) and not self.blog.closed:
            self._mark(self.applied)


# -- applying one KV batch -----------------------------------------------------------------------
class _WriterProbe:
    """What ``BucketLog.check_writer`` reads of a records summary, for one batch not built yet."""

    __slots__ = ("writer_id", "first_sequence", "last_sequence", "batch_count")

    def __init__(self, writer_id: int, sequence: int) -> None:
        self.writer_id = writer_id
        self.first_sequence = self.last_sequence = sequence
        self.batch_count = 1


async def put_batch(table: TableKv, merger: Merger, bkv: BucketKv, records, *, fast_path: bool = True) -> int:
    """Merge one KV batch into a bucket, append its changelog and apply it. Returns the log end
    offset after the append. Raises FlussError for anything the request did wrong."""
    try:
        h = parse_kv_header(records)
    except CorruptBatchError as e:
        raise FlussError(f"Corrupt KV batch for {bkv.blog.name}: {e}", Errors.CORRUPT_MESSAGE) from None
    if h.total_size != len(records):
        raise FlussError(f"Corrupt KV batch for {bkv.blog.name}: {len(records) - h.total_size} bytes after "
                         f"the batch", Errors.CORRUPT_MESSAGE)
    if not 0 <= h.schema_id <= table.latest_schema_id or h.schema_id not in table.schemas:
        raise FlussError(f"Invalid schema id: {h.schema_id}, latest schema id: {table.latest_schema_id}",
                         Errors.SCHEMA_NOT_EXIST)
    if fast_path and kvfast.eligible(table, merger):
        return await kvfast.put_batch_fast(table, merger, bkv, records, h)
    try:
        kvs = list(iter_kv_records(records, verify_crc=True))
    except CorruptBatchError as e:
        raise FlussError(f"Corrupt KV batch for {bkv.blog.name}: {e}", Errors.CORRUPT_MESSAGE) from None
    check_keys([key for key, _ in kvs], bkv.blog.name)
    decoder = table.decoder(h.schema_id)
    width = len(table.schemas[h.schema_id].columns)
    pad = [None] * (table.ncols - width)
    async with bkv.lock:
        bkv.check_open()
        retried = bkv.retried_end(h.writer_id, h.batch_sequence)
        if retried is not None:
            return retried
        buffer: dict[bytes, bytes | None] = {}
        decoded: dict[bytes, list | None] = {}
        rows: list[list] = []
        cts = bytearray()
        full = table.image != "WAL"

        stored_now: dict[bytes, bytes | None] = {}
        if not merger.blind:
            wanted = list({bytes(key): None for key, _ in kvs})
            stored_now = dict(zip(wanted, bkv.multi_get(wanted), strict=True))

        def current(key):
            if key in decoded:
                return decoded[key]
            if key in buffer:
                raw = buffer[key]
            elif key in stored_now:
                raw = stored_now[key]
            else:
                raw = bkv.get(key)
            v = None if raw is None else table.decode(raw)
            decoded[key] = v
            return v

        for key, value in kvs:
            key = bytes(key)
            if value is None:
                behavior = merger.delete_behavior
                if behavior == "IGNORE":
                    continue
                if behavior == "DISABLE":
                    raise deletes_disabled()
                old = current(key)
                if old is None:
                    continue
                remaining = merger.delete(old)
                if remaining is None:
                    rows.append(old)
                    cts.append(DELETE)
                    buffer[key] = None
                    decoded[key] = None
                else:
                    if full:
                        rows.append(old)
                        cts.append(UPDATE_BEFORE)
                    rows.append(remaining)
                    cts.append(UPDATE_AFTER)
                    buffer[key] = table.encode(remaining)
                    decoded[key] = remaining
                continue
            try:
                new = decoder.decode(value)
            except ValueError as e:
                raise FlussError(f"Corrupt row for key {key.hex()} of {bkv.blog.name}: {e}",
                                 Errors.CORRUPT_MESSAGE) from None
            if pad:
                new = new + pad
            if merger.blind:
                rows.append(new)
                cts.append(UPDATE_AFTER)
                buffer[key] = encode_value(h.schema_id, value)
                decoded[key] = new
                continue
            old = current(key)
            merged = merger.merge(old, new)
            if merged is UNCHANGED:
                continue
            if old is None and table.auto_inc is not None:
                merged = list(merged)
                merged[table.auto_inc] = bkv.next_auto_id(table)
            stored = encode_value(h.schema_id, value) if merged is new else table.encode(merged)
            if old is None:
                rows.append(merged)
                cts.append(INSERT)
            else:
                if full:
                    rows.append(old)
                    cts.append(UPDATE_BEFORE)
                rows.append(merged)
                cts.append(UPDATE_AFTER)
            buffer[key] = stored
            decoded[key] = merged
        try:
            if len(rows) >= THREAD_BUILD_ROWS:
                # compression dominates: let it run beside the event loop (zstd and Arrow drop the GIL)
                batch = await asyncio.to_thread(table.build_changelog, rows, cts, h.writer_id, h.batch_sequence)
            else:
                batch = table.build_changelog(rows, cts, h.writer_id, h.batch_sequence)
        except (TypeError, ValueError, FlussError) as e:
            raise FlussError(f"Cannot build the changelog of {bkv.blog.name}: {e}", Errors.CORRUPT_MESSAGE) from None
        return await bkv.commit(batch, buffer, len(records))


def check_keys(keys, name: str) -> None:
    """No key encoder writes an empty key, and the store keeps its applied offset under it: a batch
    carrying one is refused before it can touch that entry."""
    if any(len(key) == 0 for key in keys):
        raise FlussError(f"Corrupt KV batch for {name}: a record has an empty key", Errors.CORRUPT_MESSAGE)


# -- every bucket -------------------------------------------------------------------------------
class KvManager:
    """The KV stores of every bucket of every primary-key table (opened lazily)."""

    def __init__(self, logs: LogManager) -> None:
        self.logs = logs
        self.buckets: dict[tuple[int, int | None, int], BucketKv] = {}
        self._tables: dict[int, TableKv] = {}
        self._opening: dict[tuple[int, int | None, int], asyncio.Future] = {}

    def table(self, entry) -> TableKv:
        t = self._tables.get(entry.table_id)
        if t is None or t.latest_schema_id != entry.schema_id or t.schemas is not entry.schemas:
            t = self._tables[entry.table_id] = TableKv(entry)
        return t

    def cached(self, blog) -> BucketKv | None:
        """The open, current store of a bucket, or None (then ``bucket`` opens it)."""
        bkv = self.buckets.get((blog.table_id, blog.partition_id, blog.bucket))
        if bkv is not None and bkv.blog is blog and not bkv.closed and not bkv.stale:
            return bkv
        return None

    async def bucket(self, entry, blog) -> BucketKv:
        key = (blog.table_id, blog.partition_id, blog.bucket)
        bkv = self.buckets.get(key)
        if bkv is not None and bkv.blog is blog and not bkv.closed and not bkv.stale:
            return bkv
        if bkv is not None:
            bkv.close()
            self.buckets.pop(key, None)
        pending = self._opening.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        fut = asyncio.get_running_loop().create_future()
        self._opening[key] = fut
        try:
            directory = os.path.join(os.path.dirname(blog.dir), f"kv-{blog.bucket}")
            bkv = BucketKv(blog, directory)
            async with bkv.lock:
                await bkv.catch_up(self.table(entry))
            self.buckets[key] = bkv
            fut.set_result(bkv)
            return bkv
        except BaseException as e:
            fut.set_exception(e)
            fut.exception()  # retrieved: later waiters get it too
            raise
        finally:
            self._opening.pop(key, None)

    def drop(self, table_id: int, partition_id: int | None = None) -> None:
        for key in [k for k in self.buckets if k[0] == table_id and (partition_id is None or k[1] == partition_id)]:
            self.buckets.pop(key).close(flush=False)
        if partition_id is None:
            self._tables.pop(table_id, None)

    def close(self) -> None:
        for bkv in self.buckets.values():
            bkv.close()
        self.buckets.clear()
