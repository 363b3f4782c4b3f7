"""What the AppendWriter and the UpsertWriter share: the writer.* settings checks, the
accumulator + sender pair, first-error bookkeeping, partition-id lookup, flush and close.

Subclasses set ``_ctx``, ``_runtime``, ``_meta`` and ``_table_name`` and provide ``_encode``
(turns a sealed batch into its payload on the sender's side).
"""
from __future__ import annotations

import asyncio
import contextlib
import threading
import time

from ...error_codes import Errors
from ...errors import FlussError
from ...metadata import PARTITION_SEPARATOR
from ...rpc import fluss_api_pb2 as pb
from ...rpc.api import Api
from ..runtime import on_runtime
from .accumulator import RecordAccumulator
from .batch import KIND_LOG
from .idempotence import MAX_INFLIGHT_FOR_IDEMPOTENCE, IdempotenceManager
from .sender import Sender

PARTITION_NOT_EXISTS = Errors.PARTITION_NOT_EXISTS
_ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}


def parse_acks(value: str) -> int:
    acks = _ACKS.get(str(value).strip().lower())
    if acks is None:
        raise FlussError(f"Invalid value '{value}' for 'writer.acks': expected 'all', '-1', '0' or '1'")
    return acks


def delivery_settings(cfg):
    """(acks, retries, max in-flight per bucket, idempotent) from the config, refusing the
    combinations the Java client refuses."""
    acks = parse_acks(cfg.writer_acks)
    retries = cfg.writer_retries
    max_inflight = cfg.writer_max_inflight_requests_per_bucket
    idem = bool(cfg.writer_enable_idempotence)
    if idem:
        if acks != -1:
            raise FlussError(f"Idempotent writes require acks='all' (-1), but got acks="
                             f"'{cfg.writer_acks}'; set writer.enable-idempotence=false to use it")
        if retries <= 0:
            raise FlussError(f"Idempotent writes require retries > 0, but got retries={retries}")
        if max_inflight > MAX_INFLIGHT_FOR_IDEMPOTENCE:
            raise FlussError(f"Idempotent writes require max-inflight-requests-per-bucket <= "
                             f"{MAX_INFLIGHT_FOR_IDEMPOTENCE}, but got {max_inflight}")
    if max_inflight < 1:
        raise FlussError(f"writer.max-inflight-requests-per-bucket must be >= 1, got {max_inflight}")
    return acks, retries, max_inflight, idem


class BufferedWriter:
    """Base of the table writers: rows are queued in a RecordAccumulator, a Sender on the
    runtime thread ships them."""

    def _start_sending(self, cfg, acks, retries, max_inflight, idem, *, batch_size: int, assigner,
                       new_builder, kind=KIND_LOG, kv_target_columns=None, slot_class=None) -> None:
        ctx = self._ctx
        self._closed = False
        self._err_lock = threading.Lock()
        self._first_error: FlussError | None = None
        self._lost_batches = self._lost_records = 0  # failed since the last flush reported
        self._lost = (0, 0)
        self._pids = {}    # partition name -> id
        self._dynamic_partitions = bool(getattr(cfg, "writer_dynamic_create_partition_enabled", True))
        self._pnames = {}  # partition id -> name
        self._idem = IdempotenceManager(idem)
        self._acc = RecordAccumulator(
            table_name=self._table_name,
            memory_size=cfg.writer_buffer_memory_size,
            wait_timeout_ms=cfg.writer_buffer_wait_timeout_ms,
            batch_size=batch_size,
            dynamic=cfg.writer_dynamic_batch_size_enabled,
            dynamic_min=cfg.writer_dynamic_batch_size_min,
            linger_ms=cfg.writer_batch_timeout_ms,
            assigner=assigner,
            new_builder=new_builder,
            wake=self._wake,
            runtime_thread=lambda: self._runtime._thread_id,
            runtime=self._runtime,
            kind=kind,
            slot_class=slot_class,
        )
        self._sender = Sender(
            ctx=ctx, meta=self._meta, accumulator=self._acc, idempotence=self._idem,
            encode=self._encode, table_name=self._table_name, acks=acks, retries=retries,
            max_inflight=max_inflight, request_max_size=cfg.writer_request_max_size,
            request_timeout_ms=ctx.request_timeout_ms if hasattr(ctx, "request_timeout_ms") else 30000,
            on_failure=self._record_error, partition_name=self._pnames.get,
            kv_target_columns=kv_target_columns)
        self._sender.start(self._runtime)

    def _wake(self):
        self._sender.wake()

    # -- errors ---------------------------------------------------------------------------------
    def _record_error(self, error: FlussError, records: int = 0) -> None:
        with self._err_lock:
            if self._first_error is None:
                self._first_error = error
            self._lost_batches += 1
            self._lost_records += records

    def _take_error(self) -> FlussError | None:
        with self._err_lock:
            e, self._first_error = self._first_error, None
            self._lost = (self._lost_records, self._lost_batches)
            self._lost_batches = self._lost_records = 0
            return e

    def _check_open(self) -> None:
        if self._closed:
            raise FlussError(f"table '{self._table_name}': the writer is closed")
        if self._ctx.closed:
            raise FlussError(f"table '{self._table_name}': the FlussConnection has been closed")

    # -- partitions -----------------------------------------------------------------------------
    def _partition_id(self, name: str) -> int:
        pid = self._pids.get(name)
        if pid is not None:
            return pid
        md = self._ctx.metadata
        try:
            pid, _ = self._runtime.call(md.partition_by_name(self._meta.path, name))
        except FlussError as e:
            if e.error_code != PARTITION_NOT_EXISTS:
                raise
            if not self._dynamic_partitions:
                raise FlussError(f"table '{self._table_name}': partition '{name}' does not exist; "
                                 f"create it first (admin.create_partition), or enable "
                                 f"writer.dynamic-create-partition.enabled", PARTITION_NOT_EXISTS) from None
            pid = self._runtime.call(self._create_partition(name))
        self._pids[name] = pid
        self._pnames[pid] = name
        return pid

    async def _create_partition(self, name: str) -> int:
        """Create the partition ``name`` (as the Java writer does by default) and wait until the
        metadata knows it; another writer creating it first is fine."""
        keys = self._meta.partition_keys
        values = name.split(PARTITION_SEPARATOR)
        if len(values) != len(keys):
            # a value holding the separator cannot be named in a spec; the server would refuse it anyway
            raise FlussError(f"table '{self._table_name}': partition '{name}' does not exist and its name "
                             f"does not split into the {len(keys)} partition key value(s)", PARTITION_NOT_EXISTS)
        req = pb.CreatePartitionRequest(ignore_if_not_exists=True)
        self._meta.path._to_pb(req.table_path)
        for k, v in zip(keys, values, strict=True):
            kv = req.partition_spec.partition_key_values.add()
            kv.key = k
            kv.value = v
        try:
            await self._ctx.coordinator(Api.CREATE_PARTITION, req)
        except FlussError as e:
            # older servers may not honour the flag; losing the race is still success
            if e.error_code != Errors.PARTITION_ALREADY_EXISTS:
                raise FlussError(f"table '{self._table_name}': could not create partition '{name}': "
                                 f"{e.message}", e.error_code) from None
        # The coordinator answers before every server's metadata has the partition (Java pushes it
        # asynchronously), so poll until the metadata names it.
        md = self._ctx.metadata
        timeout_s = getattr(self._ctx, "request_timeout_ms", 30000) / 1000.0
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        while True:
            try:
                pid, _ = await md.partition_by_name(self._meta.path, name, refresh=True)
                return pid
            except FlussError as e:
                if e.error_code != PARTITION_NOT_EXISTS or time.monotonic() >= deadline:
                    raise FlussError(f"table '{self._table_name}': partition '{name}' was created but the "
                                     f"metadata did not show it within {timeout_s:g} s: {e.message}",
                                     e.error_code) from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    # -- flush / close --------------------------------------------------------------------------
    async def _flush(self) -> None:
        batches = self._acc.begin_flush()
        self._sender.wake()
        try:
            if batches:
                await asyncio.gather(*[asyncio.wrap_future(b.future) for b in batches],
                                     return_exceptions=True)
        finally:
            self._acc.end_flush()
        err = self._take_error()
        if err is not None:
            raise err

    @on_runtime
    async def flush(self) -> None:
        """Wait until everything written before this call is acknowledged.

        Batches still filling are sent at once. Waits at most 2 x ``request-timeout`` per batch.

        Raises:
            FlussError: The first error of any batch that could not be delivered since the previous
                ``flush()`` (the message says how long it tried and how often).
        """
        await self._flush()

    async def _close(self, report_lost: bool) -> None:
        if self._closed:
            return
        self._closed = True
        self._acc.set_closing()
        try:
            await self._flush()
        except FlussError as e:
            if not report_lost:
                raise
            # say what is lost, not only why: the caller may have dropped the handles
            records, batches = self._lost
            raise FlussError(f"table '{self._table_name}': close() could not deliver {records} record(s) "
                             f"in {batches} batch(es); first error: {e.message}", e.error_code) from None
        finally:
            await self._sender.stop()

    async def __aenter__(self):
        return self

    async def __aexit__(self, exc_type=None, exc_value=None, traceback=None) -> bool:
        if exc_type is None:
            await self.flush()
        else:
            with contextlib.suppress(FlussError):  # the body's exception is the one to report
                await self.flush()
        return False
