"""Write batches and their result handles.

A ``WriteBatch`` is the unit the accumulator fills (per partition and bucket), the sender ships
and the server acknowledges with one base offset. Its payload is kept apart from the 48-byte
header because the header carries the idempotence writer id and batch sequence, which are
assigned when the batch is first drained and re-assigned only when the writer id is reset; the
encoded payload is reused by every retry.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import time

# The header layout is logbatch's (the same struct definitions); only the assembly differs: the
# header is built on its own so the payload goes to the socket without being copied behind it.
from ...codec.log.logbatch import (
    _CRC_FREE_V0,
    _CRC_FREE_V1,
    _HEAD,
    APPEND_ONLY_FLAG,
    LOG_OVERHEAD,
    V0_HEADER_SIZE,
    V1_HEADER_SIZE,
)
from ...codec.wire.crc32c import crc32c
from ..runtime import on_runtime

#: batch kinds; the sender picks the request type (ProduceLog now, PutKv later) from the kind
KIND_LOG = "LOG"
KIND_KV = "KV"


def log_batch_header(payload, *, schema_id: int, record_count: int, writer_id: int = -1,
                     batch_sequence: int = -1, append_only: bool = True, statistics=None) -> bytes:
    """The V0 header (docs/contributing/formats.md §1) of a batch holding ``payload``: ``header + payload`` equals
    ``logbatch.build_batch(payload, ...)`` byte for byte, without copying the payload.

    With ``statistics`` (bytes, possibly empty: codec.log.batchstats) the header is V1's followed by
    the statistics block, as Java's Arrow writer makes it for a table with
    ``table.statistics.columns``."""
    if record_count <= 0:
        raise ValueError(f"a write batch needs records, got record_count={record_count}")
    attributes = APPEND_ONLY_FLAG if append_only else 0
    if statistics is not None:
        total = V1_HEADER_SIZE + len(statistics) + memoryview(payload).nbytes
        if total - LOG_OVERHEAD > 0x7FFFFFFF:
            raise OverflowError(f"batch of {total} bytes is too large")
        checked = _CRC_FREE_V1.pack(schema_id, attributes, record_count - 1, writer_id, batch_sequence,
                                    record_count, len(statistics))
        crc = crc32c(payload, crc32c(statistics, crc32c(checked)))
        return _HEAD.pack(0, total - LOG_OVERHEAD, 1, 0, crc) + checked + statistics
    total = V0_HEADER_SIZE + memoryview(payload).nbytes
    if total - LOG_OVERHEAD > 0x7FFFFFFF:
        raise OverflowError(f"batch of {total} bytes is too large")
    checked = _CRC_FREE_V0.pack(schema_id, attributes, record_count - 1,
                                writer_id, batch_sequence, record_count)
    crc = crc32c(payload, crc32c(checked))
    return _HEAD.pack(0, total - LOG_OVERHEAD, 0, 0, crc) + checked


class WriteBatch:
    """Records for one (partition, bucket), in append order.

    ``chunks`` holds ready Arrow record batches (slices of the caller's data, or finished row
    builders); ``builder`` collects per-row appends. A row builder always sits after every chunk
    of the batch, so finishing it and appending the result to ``chunks`` keeps the order.
    """

    __slots__ = (
        "kind", "partition_id", "bucket", "chunks", "builder", "record_count", "est_bytes",
        "created", "writer_id", "sequence", "attempts", "first_attempt", "future", "payload",
        "header", "header_key", "ambiguous", "requeued", "state", "builder_bytes", "target", "handle",
        "hot", "hot_rows", "lease", "encoding", "stats", "__weakref__",
    )

    def __init__(self, kind: str, state, partition_id: int | None, bucket: int):
        self.kind = kind
        self.state = state  # the accumulator's BucketState this batch belongs to
        self.partition_id = partition_id
        self.bucket = bucket
        self.chunks = []
        self.builder = None
        self.builder_bytes = 0  # estimated size of the rows in ``builder``
        self.record_count = 0
        self.est_bytes = 0
        self.target = 0  # size at which the accumulator seals this batch
        self.created = time.monotonic()
        self.writer_id = -1
        self.sequence = -1
        self.attempts = 0
        self.first_attempt = 0.0
        self.future = concurrent.futures.Future()
        self.handle = None  # the WriteResultHandle every row of this batch returns
        # while the accumulator feeds it through a HotSlot: the slot, the builder's row count
        # when it turned hot, and the budget bytes it may take that way
        self.hot = None
        self.hot_rows = 0
        self.lease = 0
        self.payload = None  # encoded records without the batch header
        # the V1 statistics block (codec.log.batchstats) when the table collects statistics
        self.stats = None
        # the loop future of its encode once one was started (result: None or the exception)
        self.encoding = None
        self.header = None  # the batch header for (writer_id, sequence) == header_key
        self.header_key = None
        # set when a send failed in a way that leaves open whether the server appended it
        self.ambiguous = False
        self.requeued = False

    def header_for(self, schema_id: int) -> bytes:
        """The batch header for the current (writer id, sequence); ``header + payload`` is the
        batch as ``build_batch`` would make it. Cached: retries reuse it unless resequenced."""
        key = (self.writer_id, self.sequence)
        if self.header is None or self.header_key != key:
            if self.kind == KIND_KV:
                from .kvrecords import kv_batch_header
                self.header = kv_batch_header(self.payload, schema_id=schema_id,
                                              record_count=self.record_count,
                                              writer_id=self.writer_id, batch_sequence=self.sequence)
                self.header_key = key
                return self.header
            self.header = log_batch_header(self.payload, schema_id=schema_id,
                                           record_count=self.record_count,
                                           writer_id=self.writer_id, batch_sequence=self.sequence,
                                           statistics=self.stats)
            self.header_key = key
        return self.header

    @property
    def done(self) -> bool:
        return self.future.done()

    def complete(self, base_offset: int) -> None:
        if not self.future.done():
            self.future.set_result(base_offset)
        self.chunks = None
        self.payload = self.header = None

    def fail(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)
        self.chunks = None
        self.payload = self.header = None

    def __repr__(self) -> str:
        return (f"WriteBatch(partition={self.partition_id}, bucket={self.bucket}, "
                f"records={self.record_count}, seq={self.sequence})")


class WriteResultHandle:
    """The acknowledgement of one write: ignore it (fire and forget) or ``await handle.wait()``.

    Every record of a batch shares the batch's outcome, so ``wait`` raises the FlussError of the
    batch the record went out in. An Arrow write split over several buckets or partitions waits
    for all of its batches and raises the first failure.
    """

    __slots__ = ("_future", "_runtime")

    def __init__(self, future, runtime):
        # one concurrent.futures.Future, or a tuple of them
        self._future = future
        self._runtime = runtime

    def _futures(self):
        f = self._future
        return f if isinstance(f, tuple) else (f,)

    @on_runtime
    async def wait(self) -> None:
        """Wait until the server has acknowledged this write.

        Raises:
            FlussError: The write could not be delivered (its batch failed or timed out).
        """
        for f in self._futures():
            await asyncio.wrap_future(f)

    @property
    def done(self) -> bool:
        """Whether the write has been acknowledged or has failed."""
        return all(f.done() for f in self._futures())

    @property
    def base_offset(self) -> int | None:
        """Offset the server gave the first record of this write's (first) batch; None until acked."""
        f = self._futures()[0] if self._futures() else None
        if f is not None and f.done() and f.exception() is None:
            return f.result()
        return None

    def __repr__(self) -> str:
        return f"WriteResultHandle({'done' if self.done else 'pending'})"
