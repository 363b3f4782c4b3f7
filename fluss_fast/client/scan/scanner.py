"""LogScanner: subscriptions, ``poll`` / ``poll_arrow`` / ``poll_record_batch``, bounded reads."""
from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:  # pandas is optional; imported where used
    import pandas as pd

from ...codec.log.bodypool import BODY_POOL
from ...errors import FlussError
from ...metadata.table import TableBucket
from ..runtime import on_runtime
from .decode import ScanSpec
from .fetcher import LogFetcher
from .frames import import_polars, lazy_stream
from .poll_ahead import PollAhead
from .records import RecordBatch, ScanRecords

__all__ = ["LogScanner"]

RECORD = "record"
BATCH = "batch"
#: batches handed out by one poll_record_batch / poll_arrow (the Rust client's cap)
_MAX_BATCHES_PER_POLL = 100
#: how long one round of a bounded read (to_arrow, the batch reader) waits for data
_BOUNDED_POLL_S = 1.0
#: the poll interval of ``async for``
_ITER_POLL_MS = 1000


def _want_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return value.__index__()
        except AttributeError:
            raise TypeError(f"argument '{name}': '{type(value).__name__}' object cannot be "
                            f"interpreted as an integer") from None
    return value


class LogScanner:
    """Scanner for reading log data from a Fluss table (record- or batch-based)."""

    def __init__(self, table, spec: ScanSpec, kind: str):
        self._table = table
        self._ctx = table._ctx
        self._runtime = table._runtime
        self._spec = spec
        self._kind = kind
        self._fetcher = LogFetcher(self._ctx, spec)
        self._reader_active = False

    # -- subscriptions ---------------------------------------------------------------------------
    def _check_no_reader(self) -> None:
        if self._reader_active:
            raise FlussError("Cannot modify subscriptions while a RecordBatchLogReader is active. "
                             "Drop the reader first.")

    def _bucket(self, partition_id, bucket_id, offset) -> tuple[TableBucket, int]:
        # As in pyfluss, neither the bucket id nor the offset is checked here: a bucket the table
        # does not have never yields records (a bounded read refuses it), and an offset the log
        # does not hold fails the poll that fetches it.
        bucket_id = _want_int("bucket_id", bucket_id)
        offset = _want_int("start_offset", offset)
        if partition_id is not None:
            partition_id = _want_int("partition_id", partition_id)
        return TableBucket._make(self._spec.table_id, partition_id, bucket_id), offset

    def subscribe(self, bucket_id: int, start_offset: int) -> None:
        """Read one bucket of a non-partitioned table from ``start_offset`` on.

        Subscribing a bucket again moves it to the new offset; records prepared for the old position
        are dropped.

        Args:
            bucket_id: The bucket.
            start_offset: An offset, ``fluss.EARLIEST_OFFSET`` (-2) or ``fluss.LATEST_OFFSET`` (-1).

        Raises:
            FlussError: The table is partitioned (use `subscribe_partition`), or an Arrow batch reader
                of this scanner is still open.

        Example:
            ```python
            scanner.subscribe(bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)
            ```
        """
        self._check_no_reader()
        if self._spec.partitioned:
            raise FlussError('The table is a partitioned table, please use "subscribe_partition" '
                             'to subscribe a partitioned bucket instead.')
        tb, off = self._bucket(None, bucket_id, start_offset)
        self._fetcher.assign({tb: off})

    def subscribe_buckets(self, bucket_offsets: dict[int, int]) -> None:
        """Read several buckets of a non-partitioned table.

        Args:
            bucket_offsets: ``{bucket_id: start_offset}``.

        Raises:
            FlussError: An empty dict, a partitioned table, or an open batch reader.

        Example:
            ```python
            scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(3)})
            ```
        """
        self._check_no_reader()
        if self._spec.partitioned:
            raise FlussError('The table is a partitioned table, please use '
                             '"subscribe_partition_buckets" instead.')
        if not isinstance(bucket_offsets, dict):
            raise TypeError(f"argument 'bucket_offsets': '{type(bucket_offsets).__name__}' "
                            f"object cannot be converted to 'PyDict'")
        if not bucket_offsets:
            raise FlussError("Bucket offsets are empty.")
        self._fetcher.assign(dict(self._bucket(None, b, o) for b, o in bucket_offsets.items()))

    def subscribe_partition(self, partition_id: int, bucket_id: int, start_offset: int) -> None:
        """Read one bucket of one partition from ``start_offset`` on.

        Args:
            partition_id: The partition's id (`PartitionInfo.partition_id`).
            bucket_id: The bucket.
            start_offset: An offset, ``EARLIEST_OFFSET`` or ``LATEST_OFFSET``.

        Raises:
            FlussError: The table is not partitioned, or an open batch reader.
        """
        self._check_no_reader()
        if not self._spec.partitioned:
            raise FlussError('The table is not a partitioned table, please use "subscribe" to '
                             'subscribe a non-partitioned bucket instead.')
        tb, off = self._bucket(partition_id, bucket_id, start_offset)
        self._fetcher.assign({tb: off})

    def subscribe_partition_buckets(self, partition_bucket_offsets: dict[tuple[int, int], int]) -> None:
        """Read several buckets of partitions.

        Args:
            partition_bucket_offsets: ``{(partition_id, bucket_id): start_offset}``.

        Raises:
            FlussError: An empty dict, a table that is not partitioned, or an open batch reader.
            TypeError: A key is not a ``(partition_id, bucket_id)`` tuple.
        """
        self._check_no_reader()
        if not self._spec.partitioned:
            raise FlussError('The table is not a partitioned table, please use "subscribe_buckets" '
                             'to subscribe to non-partitioned buckets instead.')
        if not isinstance(partition_bucket_offsets, dict):
            raise TypeError(f"argument 'partition_bucket_offsets': "
                            f"'{type(partition_bucket_offsets).__name__}' object cannot be "
                            f"converted to 'PyDict'")
        if not partition_bucket_offsets:
            raise FlussError("Bucket offsets are empty.")
        assigned = {}
        for key, off in partition_bucket_offsets.items():
            if not isinstance(key, tuple) or len(key) != 2:
                raise TypeError("partition_bucket_offsets keys must be (partition_id, bucket_id) tuples")
            tb, o = self._bucket(key[0], key[1], off)
            assigned[tb] = o
        self._fetcher.assign(assigned)

    def unsubscribe(self, bucket_id: int) -> None:
        """Stop reading a bucket; records already prepared for it are dropped.

        Args:
            bucket_id: The bucket.

        Raises:
            FlussError: The table is partitioned (use `unsubscribe_partition`).
        """
        self._check_no_reader()
        if self._spec.partitioned:
            raise FlussError('The table is a partitioned table, please use "unsubscribe_partition" '
                             'to unsubscribe a partitioned bucket instead.')
        bucket_id = _want_int("bucket_id", bucket_id)
        self._fetcher.unassign([TableBucket._make(self._spec.table_id, None, bucket_id)])

    def unsubscribe_partition(self, partition_id: int, bucket_id: int) -> None:
        """Stop reading one bucket of a partition.

        Args:
            partition_id: The partition's id.
            bucket_id: The bucket.

        Raises:
            FlussError: The table is not partitioned.
        """
        self._check_no_reader()
        if not self._spec.partitioned:
            raise FlussError("Can't unsubscribe a partition for a non-partitioned table.")
        partition_id = _want_int("partition_id", partition_id)
        bucket_id = _want_int("bucket_id", bucket_id)
        self._fetcher.unassign([TableBucket._make(self._spec.table_id, partition_id, bucket_id)])

    # -- polling ---------------------------------------------------------------------------------
    def _need(self, kind: str) -> None:
        if self._kind == kind:
            return
        if kind == RECORD:
            raise FlussError("poll() requires a record-based scanner. Use new_scan().create_log_scanner().")
        raise FlussError("This method requires a batch-based scanner. Use "
                         "new_scan().create_record_batch_log_scanner().")

    @staticmethod
    def _timeout(timeout_ms) -> float:
        timeout_ms = _want_int("timeout_ms", timeout_ms)
        if timeout_ms < 0:
            raise FlussError(f"timeout_ms must be non-negative, got: {timeout_ms}")
        return timeout_ms / 1000.0

    @on_runtime
    async def poll(self, timeout_ms: int) -> ScanRecords:
        """The next records of the subscribed buckets (record scanners).

        Returns as soon as records are there, or after ``timeout_ms`` with none. At most
        ``scanner.log.max-poll-records`` records (default 500). Network errors and leader changes
        are retried inside the timeout: a restarting server costs empty polls, not an exception.
        Also works without ``await`` in a plain ``for`` loop (``for r in scanner.poll(1000)``).

        Args:
            timeout_ms: How long to wait for records, in milliseconds.

        Returns:
            The records, by bucket; iterate it for all of them in order per bucket.

        Raises:
            FlussError: A batch scanner (use `poll_arrow`), corrupt data, or an offset out of range.

        Example:
            ```python
            for r in await scanner.poll(1000):
                print(r.offset, r.change_type.short_string(), r.row)
            ```
        """
        timeout = self._timeout(timeout_ms)
        self._need(RECORD)
        f = self._fetcher
        ahead = f.ahead
        if ahead is None:
            ahead = f.ahead = PollAhead(f, f.max_poll_records)
        chunks = ahead.take()
        if chunks is None:
            ahead.polling = True
            try:
                chunks = await f.poll_chunks(timeout, max_records=f.max_poll_records)
            finally:
                ahead.polling = False
            # the next polls' records are drained once this one's are on their way
            f.loop.call_soon(ahead.fill)
        return ScanRecords(chunks)

    def _poll_ready(self, timeout_ms=None):
        """The ``ready`` hook of ``poll`` (client/deferred.py): a taker of records drained ahead and
        whether to give the caller's loop a turn first, or None when there are none (or the
        arguments are for the runtime poll to judge)."""
        ahead = self._fetcher.ahead
        if ahead is None or not ahead.has_ready() or self._kind != RECORD:
            return None
        if type(timeout_ms) is not int or timeout_ms < 0:
            return None
        return self._take_ready, ahead.yield_now()

    def _take_ready(self) -> ScanRecords | None:
        chunks = self._fetcher.ahead.take()
        return None if chunks is None else ScanRecords(chunks)

    async def _poll_batches(self, timeout_ms) -> list[RecordBatch]:
        timeout = self._timeout(timeout_ms)
        self._need(BATCH)
        chunks = await self._fetcher.poll_chunks(timeout, max_chunks=_MAX_BATCHES_PER_POLL)
        return [RecordBatch._from_chunk(c) for cs in chunks.values() for c in cs]

    @on_runtime
    async def poll_record_batch(self, timeout_ms: int) -> list[RecordBatch]:
        """The next Arrow batches with their buckets and offsets (batch scanners).

        Args:
            timeout_ms: How long to wait for data, in milliseconds.

        Returns:
            Up to 100 `RecordBatch` objects; an empty list when nothing arrived in time.

        Raises:
            FlussError: A record scanner (use `poll`), corrupt data, or an offset out of range.
        """
        return await self._poll_batches(timeout_ms)

    @on_runtime
    async def poll_arrow(self, timeout_ms: int) -> pa.Table:
        """The next rows as one ``pyarrow.Table`` (batch scanners).

        Args:
            timeout_ms: How long to wait for data, in milliseconds.

        Returns:
            The rows fetched (possibly none), with the scan's projected schema.

        Raises:
            FlussError: A record scanner, corrupt data, or an offset out of range.
        """
        timeout = self._timeout(timeout_ms)
        self._need(BATCH)
        chunks = await self._fetcher.poll_chunks(timeout, max_chunks=_MAX_BATCHES_PER_POLL)
        return self._table_of([c.arrow() for cs in chunks.values() for c in cs])

    def _table_of(self, batches) -> pa.Table:
        # no batches gives a table without chunks, as pyfluss's (not one empty chunk)
        return pa.Table.from_batches(batches, schema=self._spec.out_schema)

    # -- bounded reads ---------------------------------------------------------------------------
    async def _start_bounded(self) -> tuple[dict[TableBucket, int], list[TableBucket]]:
        """(stop offset per bucket with something to read, every bucket subscribed now)."""
        f = self._fetcher
        subs = f.subscriptions()
        if not subs:
            raise FlussError("No buckets subscribed. Call subscribe() before creating a reader.")
        n = self._spec.num_buckets
        for tb in subs:
            if not 0 <= tb.bucket_id < n:
                where = (f"partition {tb.partition_id} of " if tb.partition_id is not None else "")
                raise FlussError(f"Bounded read bucket id {tb.bucket_id} is out of range for a table "
                                 f"with {n} buckets ({where}table '{self._spec.path}').")
        latest = await f.bounded_stops()
        positions = f.subscriptions()
        stops = {tb: off for tb, off in latest.items()
                 if off > 0 and tb in positions and positions[tb] < off}
        f.set_stops(stops)
        return stops, list(subs)

    def _end_bounded(self, read: list[TableBucket]) -> None:
        # pyfluss: a bounded read consumes its subscriptions, the empty buckets' too, so reading
        # again needs a new subscribe() (else "No buckets subscribed").
        f = self._fetcher
        if read:
            f.unassign(read)
        f.set_stops(None)

    async def _next_bounded(self, stops: dict[TableBucket, int], convert=None):
        """The next batches of a bounded read (empty list once every bucket reached its stop).
        ``convert`` maps the polled chunks by bucket first (the virtual tables' columns); the
        buckets that reached their stop are unassigned and leave ``stops``."""
        f = self._fetcher
        while True:
            done = [tb for tb, stop in stops.items() if f._position(tb) >= stop]
            if done:
                f.unassign(done)
                for tb in done:
                    stops.pop(tb, None)
            if not stops:
                return []
            chunks = await f.poll_chunks(_BOUNDED_POLL_S, max_chunks=_MAX_BATCHES_PER_POLL,
                                         stops=stops)
            if convert is not None:
                chunks = convert(chunks)
            out = [c.arrow() for cs in chunks.values() for c in cs]
            if out:
                return out

    async def _read_bounded(self) -> pa.Table:
        if self._reader_active:
            raise FlussError("Another RecordBatchLogReader is already active on this scanner. "
                             "Drop the existing reader first.")
        stops, read = await self._start_bounded()
        batches = []
        pool = BODY_POOL
        f = self._fetcher
        if pool is not None:
            pool.begin()
            f.collect_into = pool
        try:
            while True:
                got = await self._next_bounded(stops)
                if not got:
                    break
                batches.extend(got)
        finally:
            self._end_bounded(read)
            if pool is not None:
                f.collect_into = None
                pool.end(asyncio.get_running_loop())
        return self._table_of(batches)

    @on_runtime
    async def to_arrow(self) -> pa.Table:
        """Everything from the subscribed offsets up to each bucket's end *now*, as one table.

        The end offsets are fixed when the read starts; rows appended later are not waited for. The
        buckets read are unsubscribed afterwards.

        Returns:
            A ``pyarrow.Table`` with the scan's projected schema, filter applied.

        Raises:
            FlussError: A record scanner, a bucket the table does not have, corrupt data, or network
                trouble that lasts longer than ``request-timeout``.

        Example:
            ```python
            scanner = await table.new_scan().create_record_batch_log_scanner()
            scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(3)})
            arrow_table = await scanner.to_arrow()
            ```
        """
        self._need(BATCH)
        return await self._read_bounded()

    @on_runtime
    async def to_pandas(self) -> pd.DataFrame:
        """As `to_arrow`, converted to a ``pandas.DataFrame`` (needs pandas).

        Returns:
            The rows as a DataFrame.

        Raises:
            FlussError: As for `to_arrow`.
        """
        self._need(BATCH)
        table = await self._read_bounded()
        return table.to_pandas()

    async def _bounded_arrow(self) -> pa.Table:
        self._need(BATCH)
        return await self._read_bounded()

    @on_runtime
    async def to_polars(self):
        """As `to_arrow`, as a ``polars.DataFrame`` (needs polars; fluss_fast extra).

        Polars takes the Arrow columns over without copying them.

        Returns:
            The rows as a ``polars.DataFrame``.

        Raises:
            ImportError: polars is not installed.
            FlussError: As for `to_arrow`.
        """
        pl = import_polars()
        return pl.from_arrow(await self._bounded_arrow())

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream of a bounded read (fluss_fast extra; batch scanners).

        What ``polars.DataFrame(scanner)``, ``duckdb.sql("SELECT ... FROM scanner")`` and
        ``pyarrow.table(scanner)`` call: the stream of `to_arrow_batch_reader`, so the engine pulls
        the batches one by one as they are fetched and decoded, and memory stays bounded however
        big the table is. As with the reader, the buckets read are unsubscribed afterwards. The
        read starts at the stream's first pull: a stream opened only for its schema (as DuckDB does
        before scanning) leaves the subscriptions as they were.

        Args:
            requested_schema: A schema capsule the consumer asks for, or None (the scan's schema).

        Returns:
            A PyCapsule named ``arrow_array_stream``.

        Raises:
            FlussError: As for `to_arrow_batch_reader`.
        """
        self._need(BATCH)
        return lazy_stream(self._reader_schema(), self.to_arrow_batch_reader, requested_schema)

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """A blocking ``pa.RecordBatchReader`` over everything up to the latest offsets now.

        While it is alive the subscriptions cannot change; once it is exhausted or dropped (even
        unread) the buckets it covered are unsubscribed, as with pyfluss."""
        self._need(BATCH)
        if self._reader_active:
            raise FlussError("Another RecordBatchLogReader is already active on this scanner. "
                             "Drop the existing reader first.")
        rt = self._runtime
        self._reader_active = True
        try:
            stops, read = rt.call(self._start_bounded())
        except BaseException:
            self._reader_active = False
            raise
        return pa.RecordBatchReader.from_batches(self._reader_schema(),
                                                 _BoundedBatches(self, stops, read))

    def _reader_schema(self) -> pa.Schema:
        return self._spec.out_schema

    def _reader_convert(self):
        # the virtual tables build their columns from the polled chunks (VirtualScanner)
        return None

    def to_arrow_batch_reader_until(self, stops: dict[TableBucket, int],
                                    timeout_ms: int | None = None) -> pa.RecordBatchReader:
        """Like ``to_arrow_batch_reader`` but up to the given exclusive stop offsets (fixed earlier
        by the caller, e.g. when a Spark query was planned) instead of the latest offsets now;
        ``timeout_ms`` bounds the wait for each next batch (FlussError 25 when it passes)."""
        self._need(BATCH)
        if self._reader_active:
            raise FlussError("Another RecordBatchLogReader is already active on this scanner. "
                             "Drop the existing reader first.")
        f = self._fetcher
        subs = f.subscriptions()
        todo = {tb: stop for tb, stop in stops.items() if tb in subs and subs[tb] < stop}
        f.set_stops(todo)
        self._reader_active = True
        batches = _BoundedBatches(self, todo, list(subs))
        batches._timeout = None if timeout_ms is None else timeout_ms / 1000.0
        return pa.RecordBatchReader.from_batches(self._reader_schema(), batches)

    @property
    def records_fetched(self) -> int:
        """Records this scanner received from the servers (before its exact client-side filter)."""
        return self._spec.records_fetched

    # -- iteration ---------------------------------------------------------------------------------
    def __aiter__(self):
        return self._iterate()

    async def _iterate(self):
        if self._kind == RECORD:
            while True:
                records = await self.poll(_ITER_POLL_MS)
                for r in records:
                    yield r
        else:
            while True:
                for b in await self.poll_record_batch(_ITER_POLL_MS):
                    yield b

    def __repr__(self) -> str:
        return f"LogScanner(table={self._spec.path})"


LogScanner.poll.__ready__ = LogScanner._poll_ready  # type: ignore[attr-defined]


class _BoundedBatches:
    """The batches of one ``to_arrow_batch_reader``. Ends the bounded read when exhausted, closed or
    collected, whichever comes first (a generator that never started would skip its cleanup)."""

    def __init__(self, scanner: LogScanner, stops, read):
        self._scanner = scanner
        self._stops = stops
        self._read = read
        self._pending: list[pa.RecordBatch] = []
        self._done = False
        self._timeout: float | None = None

    def __iter__(self):
        return self

    def __next__(self) -> pa.RecordBatch:
        while not self._pending:
            if self._done:
                raise StopIteration
            try:
                sc = self._scanner
                got = sc._runtime.call(sc._next_bounded(self._stops, sc._reader_convert()), self._timeout)
            except BaseException:
                self.close()
                raise
            if not got:
                self.close()
                raise StopIteration
            self._pending.extend(reversed(got))
        return self._pending.pop()

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._pending.clear()
            sc = self._scanner
            sc._end_bounded(self._read)
            sc._reader_active = False

    def __del__(self):
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()
