"""Tablet-server data APIs of the embedded server: PRODUCE_LOG, FETCH_LOG, LIST_OFFSETS, LIMIT_SCAN,
INIT_WRITER, GET_FILESYSTEM_SECURITY_TOKEN (docs/contributing/protocol.md §3.7, §3.8, §3.11, §3.12, §3.13, §3.16).

Record bytes are never decoded here: produce validates headers and CRCs (``logbatch``), stamps offsets
and the commit timestamp in place and writes the batches as they came; fetch answers with a ``RawBody``
whose chunks are the segment bytes themselves, with the protobuf framing around them written by hand.
Projection (ARROW tables) rewrites only the Arrow metadata (``ArrowLogCodec.project_batch``).

Error codes chosen where Java gives no rule:
* a batch whose schema id is not a schema of the table -> per-bucket 9 SCHEMA_NOT_EXIST (Java stores it:
  a deliberate difference, tests/conformance/test_differential.py);
* a duplicate idempotent batch -> success carrying the offsets it got the first time (what the Java
  leader does; pyfluss would also accept 32, the Java client would not);
* LIMIT_SCAN on a primary-key table is answered from the KV store (``kv_service``).
"""
from __future__ import annotations

import asyncio
import logging
from itertools import pairwise

from ..codec.errors import CorruptBatchError
from ..codec.log import logbatch
from ..error_codes import Errors
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from ..rpc.wire import FetchLogBucket as _Bucket
from ..rpc.wire import encode_fetch_response, parse_produce_request
from ..rpc.wire import encode_varint as _varint  # noqa: F401 - tests frame raw requests with it
from . import fetch_filter, segment_read
from .bucket_log import now_ms
from .bucket_reqs import bucket_reply, check_acks, set_error
from .kv_service import KvService
from .protocol import HandlerEntry, RawBody, RawParsed
from .replicas import ReplicaManager
from .segment_read import read_segment
from .table_stats import TableStats

log = logging.getLogger("fluss_fast.server.tablet")

_DEFAULT_MAX_WAIT_MS = 100  # Java's wait when a fetch gives min_bytes but no max_wait_ms
# a projected read goes at most this many times its byte budget into the stored batches (a very
# narrow projection of wide rows would otherwise read megabytes to answer with kilobytes)
_MAX_PROJECTED_READ_FACTOR = 8
_MAX_PROJECTIONS_REMEMBERED = 1024


def _overruns(size: int, part: int, left: int, kept: int, first: bool) -> bool:
    """Whether a projected batch of ``part`` bytes, after ``kept`` batches of ``size`` bytes, no
    longer fits the ``left`` bytes there are room for (an answer's very first batch always goes)."""
    return size + part > left and (kept > 0 or not first)


def _keep_within(res: _Bucket, left: int, first: bool) -> None:
    """Drop the projected batches at the end of ``res`` that overrun the ``left`` bytes the answer
    has room for."""
    size = 0
    keep = 0
    chunks = 0
    for n, parts in res.batch_sizes:
        if _overruns(size, n, left, keep, first):
            break
        size += n
        keep += 1
        chunks += parts
    del res.chunks[chunks:]
    del res.batch_sizes[keep:]
    res.size = size


def _bad_crc(records) -> int | None:
    """The stored CRC of the first batch whose checksum is wrong, if every batch is otherwise whole."""
    try:
        for h in logbatch.iter_batches(records):
            if not logbatch.verify_crc(records, h.position):
                return h.crc
    except (CorruptBatchError, ValueError):
        return None
    return None


class TabletService:
    """The data plane of every tablet server of the process (they share one LogManager; leadership
    is checked per request against the listener's node id)."""

    def __init__(self, server, replicas: ReplicaManager):
        self.server = server
        self.replicas = replicas
        self.logs = replicas.logs
        self.remote = replicas.remote
        self._codecs: dict = {}
        # stored bytes per projected byte of each (table id, projection) read so far: how far to
        # read ahead so that a projected answer fills its byte budget (see ``_fetch_once``)
        self._stored_per_projected: dict = {}
        self.kv = KvService(server, self, replicas)

    def handlers(self) -> dict[int, HandlerEntry]:
        return {
            Api.PRODUCE_LOG: RawParsed(self.produce_log, parse_produce_request),
            Api.FETCH_LOG: self.fetch_log,
            Api.LIST_OFFSETS: self.list_offsets,
            Api.LIMIT_SCAN: self.limit_scan,
            Api.INIT_WRITER: self.init_writer,
            Api.GET_FILESYSTEM_SECURITY_TOKEN: self.get_filesystem_security_token,
            Api.GET_TABLE_STATS: TableStats(self).get_table_stats,
            **self.kv.handlers(),
        }

    # -- resolution ------------------------------------------------------------------------------
    def _table(self, table_id: int):
        return self.server.catalog.table_by_id(table_id)

    def _resolve(self, ctx, entry, table_id: int, partition_id: int | None, bucket: int):
        """``(log, None)`` or ``(None, (code, message))`` for one bucket of a request."""
        if entry is None:
            return None, (Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION, f"Unknown table id {table_id}")
        part = None
        if entry.is_partitioned:
            if partition_id is None:
                return None, (Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
                              f"Table {entry.path} is partitioned: bucket {bucket} needs a partition id")
            part = entry.partitions.get(partition_id)
            if part is None:
                return None, (Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
                              f"Unknown partition id {partition_id} of table {entry.path}")
        elif partition_id is not None:
            return None, (Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
                          f"Table {entry.path} is not partitioned, but partition id {partition_id} was given")
        if not 0 <= bucket < entry.bucket_count:
            return None, (Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
                          f"Unknown bucket {bucket} of table {entry.path} (it has {entry.bucket_count})")
        leader = self.server.leader_of(table_id, partition_id, bucket)
        if ctx.node_id is not None and leader != ctx.node_id:
            where = f" partition {part.name}" if part is not None else ""
            return None, (Errors.NOT_LEADER_OR_FOLLOWER,
                          f"Leader of table {entry.path}{where} bucket {bucket} is tablet server {leader}, "
                          f"not {ctx.node_id}")
        return self.replicas.create(entry, part, bucket), None

    # -- PRODUCE_LOG -----------------------------------------------------------------------------
    async def produce_log(self, ctx, version, req):
        check_acks(req)
        entry = self._table(req.table_id)
        resp = pb.ProduceLogResponse()
        for breq in req.buckets_req:
            pid, out = bucket_reply(resp, breq)
            blog, err = self._resolve(ctx, entry, req.table_id, pid, breq.bucket_id)
            if err is not None:
                out.error_code, out.error_message = err
                continue
            records = breq.records
            try:
                info = logbatch.validate_records(records)
            except CorruptBatchError as e:
                bad_crc = _bad_crc(records)
                if bad_crc is not None:
                    # a well-formed batch whose checksum does not match: Java's LogTablet says 14
                    out.error_code = Errors.CORRUPT_RECORD_EXCEPTION
                    out.error_message = f"Record is corrupt (stored crc = {bad_crc}) in table bucket {blog.name}: {e}"
                else:
                    out.error_code = Errors.CORRUPT_MESSAGE
                    out.error_message = f"Corrupt records for {blog.name}: {e}"
                continue
            bad = self._unknown_schema(entry, info, records)
            if bad is not None:
                out.error_code = Errors.SCHEMA_NOT_EXIST
                out.error_message = (f"Invalid schema id: {bad}, latest schema id: {entry.schema_id} "
                                     f"(batch for {blog.name}; the table has schema ids {sorted(entry.schemas)})")
                continue
            try:
                result = await blog.append(records, info)
            except FlussError as e:
                set_error(out, e)
                continue
            out.base_offset = result.base_offset
        return resp

    @staticmethod
    def _unknown_schema(entry, info, records) -> int | None:
        if info.batch_count == 0:
            return None
        schemas = entry.schemas
        if info.schema_id not in schemas:
            return info.schema_id
        if info.mixed_schema_ids:
            for h in logbatch.iter_batches(records):
                if h.schema_id not in schemas:
                    return h.schema_id
        return None

    # -- FETCH_LOG -------------------------------------------------------------------------------
    async def fetch_log(self, ctx, version, req):
        min_bytes = req.min_bytes if req.HasField("min_bytes") else 0
        max_wait = req.max_wait_ms if req.HasField("max_wait_ms") else (_DEFAULT_MAX_WAIT_MS if min_bytes > 0 else 0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, max_wait) / 1000.0
        while True:
            tables, total, touched, errors = await self._fetch_once(ctx, req)
            remaining = deadline - loop.time()
            if total >= min_bytes or errors or remaining <= 0 or not touched:
                break
            fut = loop.create_future()
            for blog in touched:
                blog.add_waiter(fut)
            try:
                await asyncio.wait_for(fut, remaining)
            except TimeoutError:
                pass
            finally:
                for blog in touched:
                    blog.remove_waiter(fut)
        return RawBody(encode_fetch_response(tables))

    async def _fetch_once(self, ctx, req):
        """One pass over the requested buckets: plans every read first (the byte budgets and the
        min-one rule depend only on sizes), then reads them, concurrently when several are large."""
        budget = req.max_bytes
        # Java's FetchParams.isRemoteFirst: clients (never followers) may ask for the remote copy of
        # offsets still held locally; offsets the remote log lacks are read locally all the same
        remote_first = req.read_preference == 1 and req.follower_server_id < 0
        total = 0
        touched = []
        errors = False
        tables = []
        reads = []
        for treq in req.tables_req:
            entry = self._table(treq.table_id)
            projection = None
            proj_error = None
            if treq.projection_pushdown_enabled and entry is not None:
                projection, proj_error = self._projection(entry, list(treq.projected_fields))
            # filter push-down: batches whose statistics rule the predicate out are skipped
            bfilter = fetch_filter.filter_of(entry, treq)
            buckets = []
            tables.append((treq.table_id, buckets))
            for breq in treq.buckets_req:
                pid = breq.partition_id if breq.HasField("partition_id") else None
                res = _Bucket(pid, breq.bucket_id)
                buckets.append(res)
                blog, err = self._resolve(ctx, entry, treq.table_id, pid, breq.bucket_id)
                if err is not None:
                    res.fail(*err)
                    errors = True
                    continue
                if proj_error is not None:
                    res.fail(Errors.INVALID_COLUMN_PROJECTION, proj_error)
                    errors = True
                    continue
                if breq.fetch_offset == -2 or breq.fetch_offset < blog.log_start_offset or remote_first:
                    try:
                        want = self.remote.log_start_offset(blog) if breq.fetch_offset == -2 else breq.fetch_offset
                        info = await self.remote.fetch_info(blog, want)
                    except Exception as e:  # noqa: BLE001 - the remote index may be unreachable
                        res.fail(Errors.LOG_STORAGE_EXCEPTION, f"Remote log of {blog.name}: {e}")
                        errors = True
                        continue
                    if info is not None:
                        res.remote = info
                        res.high_watermark = blog.high_watermark
                        errors = True  # not an error: a remote answer is complete, no min_bytes wait
                        continue
                try:
                    offset = blog.check_fetch_offset(breq.fetch_offset)
                except FlussError as e:
                    res.fail(e.error_code, e.message)
                    errors = True
                    continue
                res.high_watermark = blog.high_watermark
                touched.append(blog)
                limit = min(budget, breq.max_fetch_bytes)
                if limit <= 0 and total > 0:
                    continue
                ratio = 1.0
                if projection is not None:
                    # Java charges the budgets with the projected size of each batch
                    # (FileLogProjection), so a narrow projection answers with many more rows
                    # per fetch: read as far as should project to the limit
                    ratio = self._stored_per_projected.get((entry.table_id, tuple(projection)), 1.0)
                stored = min(int(max(limit, 0) * ratio), max(limit, 0) * _MAX_PROJECTED_READ_FACTOR)
                seg, pos, n = blog.plan_read(offset, stored, total == 0)
                if seg is None:
                    continue
                # the budget is charged what was planned (as Java charges a cut batch); only
                # the bytes of the whole batches are read
                reads.append((res, blog, entry, offset, seg, pos,
                              segment_read.indexed_whole_span(seg, pos, n), projection, limit, total == 0,
                              bfilter))
                charged = n if projection is None else max(1, int(n / ratio))
                total += charged
                budget -= charged
        if len(reads) == 1 or sum(r[6] for r in reads) <= segment_read.THREAD_IO_BYTES:
            results = []
            for r in reads:
                results.append(await self._read_bucket(*r))
        else:
            results = await asyncio.gather(*(self._read_bucket(*r) for r in reads), return_exceptions=True)
        total = 0
        left = req.max_bytes
        for r, outcome in zip(reads, results, strict=True):
            res = r[0]
            if isinstance(outcome, FlussError):
                res.fail(outcome.error_code, outcome.message)
                errors = True
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                if r[7] is not None and res.size > left:
                    # projected sizes were estimated when planning: the answer as a whole still
                    # keeps to max_bytes (its first batch always goes, as unprojected)
                    _keep_within(res, left, total == 0)
                total += res.size
                left -= res.size
                if res.filtered_end_offset is not None and not res.size:
                    errors = True  # not an error: an all-skipped read answers at once, as Java's
        return tables, total, touched, errors

    async def _read_bucket(self, res: _Bucket, blog, entry, offset: int, seg, pos: int, n: int,
                           projection, limit: int, min_one: bool, bfilter=None) -> None:
        """Reads (and projects) one bucket's planned bytes into ``res``: projected, at most
        ``limit`` bytes, but at least the first batch when ``min_one``; without the batches
        ``bfilter`` rules out (server/fetch_filter.py)."""
        try:
            data = await read_segment(seg, pos, n)
        except FlussError as e:
            return e
        if bfilter is not None:
            try:
                data, filtered_end = fetch_filter.keep_matching(bfilter, entry, data)
            except CorruptBatchError as e:
                return FlussError(f"Cannot read {blog.name} at offset {offset}: {e}", Errors.CORRUPT_MESSAGE)
            # a projected answer may still be cut below (max bytes): then only an all-skipped read
            # may tell the client to move on
            if filtered_end is not None and (projection is None or not data):
                res.filtered_end_offset = filtered_end
        if projection is None:
            whole = segment_read.whole_batches_end(data)
            if 0 < whole < len(data):
                data = memoryview(data)[:whole]
            res.chunks = [data]
            res.size = len(data)
            return None
        chunks = []
        sizes = []   # bytes and chunks of each projected batch, for _keep_within
        size = 0
        stored = 0
        try:
            for h in logbatch.iter_batches(data):
                codec = self._codec(entry, h.schema_id)
                parts = codec.project_batch_parts(data, h, projection)
                n = sum(len(p) for p in parts)
                if _overruns(size, n, limit, len(sizes), min_one):
                    break
                chunks.extend(parts)
                sizes.append((n, len(parts)))
                size += n
                stored += h.total_size
        except (ValueError, IndexError, KeyError) as e:
            code = Errors.CORRUPT_MESSAGE if isinstance(e, CorruptBatchError) else Errors.INVALID_COLUMN_PROJECTION
            return FlussError(f"Cannot project {blog.name} at offset {offset} onto fields {projection}: {e}",
                              code)
        if size:
            ratios = self._stored_per_projected
            if len(ratios) >= _MAX_PROJECTIONS_REMEMBERED:
                ratios.clear()
            ratios[(entry.table_id, tuple(projection))] = max(1.0, stored / size)
        res.chunks = chunks
        res.size = size
        res.batch_sizes = sizes
        return None

    def _projection(self, entry, fields):
        fmt = entry.descriptor.log_format
        if fmt != "ARROW":
            return None, (f"Column projection is only supported for the ARROW log format; table "
                          f"{entry.path} uses {fmt}")
        n = len(entry.schema.columns)
        if not fields:
            return None, f"Empty column projection for table {entry.path}"
        for a, b in pairwise(fields):
            if b <= a:
                return None, (f"Projected fields {fields} for table {entry.path} must be strictly "
                              f"ascending without duplicates")
        if fields[0] < 0 or fields[-1] >= n:
            return None, f"Projected fields {fields} out of range for table {entry.path} with {n} columns"
        return fields, None

    def _codec(self, entry, schema_id: int):
        key = (entry.table_id, schema_id)
        codec = self._codecs.get(key)
        if codec is None:
            from ..codec.log.arrowlog import ArrowLogCodec

            schema = entry.schemas.get(schema_id)
            if schema is None:
                raise KeyError(f"unknown schema id {schema_id}")
            desc = entry.descriptor
            codec = ArrowLogCodec(schema, desc.compression, desc.compression_level, table_name=entry.path)
            self._codecs[key] = codec
        return codec

    # -- LIST_OFFSETS ----------------------------------------------------------------------------
    async def list_offsets(self, ctx, version, req):
        entry = self._table(req.table_id)
        pid = req.partition_id if req.HasField("partition_id") else None
        has_ts = req.HasField("startTimestamp")
        resp = pb.ListOffsetsResponse()
        for bucket in req.bucket_id:
            out = resp.buckets_resp.add(bucket_id=bucket)
            blog, err = self._resolve(ctx, entry, req.table_id, pid, bucket)
            if err is not None:
                out.error_code, out.error_message = err
                continue
            kind = req.offset_type
            if kind == 0:
                out.offset = self.remote.log_start_offset(blog)
            elif kind == 1 or kind == 3:
                out.offset = blog.high_watermark
            elif kind == 2:
                if not has_ts:
                    out.error_code = Errors.UNKNOWN_SERVER_ERROR
                    out.error_message = f"List offsets by timestamp for {blog.name} needs startTimestamp"
                    continue
                ts = req.startTimestamp
                now = now_ms()
                if ts > now:
                    out.error_code = Errors.INVALID_TIMESTAMP_EXCEPTION
                    out.error_message = (f"Timestamp {ts} for {blog.name} is in the future "
                                         f"(server time {now})")
                    continue
                if ts > blog.max_timestamp:
                    out.offset = blog.high_watermark
                    continue
                try:
                    found = await self.remote.offset_for_timestamp(blog, ts)
                except Exception as e:  # noqa: BLE001
                    out.error_code = Errors.LOG_STORAGE_EXCEPTION
                    out.error_message = f"Remote log of {blog.name}: {e}"
                    continue
                if found is None:
                    found = blog.offset_for_timestamp(ts)
                if found is None:
                    out.error_code = Errors.INVALID_TIMESTAMP_EXCEPTION
                    out.error_message = f"No batch of {blog.name} has a commit timestamp >= {ts}"
                    continue
                out.offset = found
            else:
                out.error_code = Errors.UNKNOWN_SERVER_ERROR
                out.error_message = f"Unknown offset type {kind} for {blog.name}"
        return resp

    # -- LIMIT_SCAN ------------------------------------------------------------------------------
    async def limit_scan(self, ctx, version, req):
        resp = pb.LimitScanResponse()
        entry = self._table(req.table_id)
        pid = req.partition_id if req.HasField("partition_id") else None
        blog, err = self._resolve(ctx, entry, req.table_id, pid, req.bucket_id)
        if err is not None:
            resp.error_code, resp.error_message = err
            return resp
        if entry.has_primary_key:
            return await self.kv.limit_scan(ctx, version, req)
        if req.limit < 0:
            resp.error_code = Errors.UNKNOWN_SERVER_ERROR
            resp.error_message = f"Limit {req.limit} for {blog.name} must not be negative"
            return resp
        resp.is_log_table = True
        hw = blog.high_watermark
        parts = []
        if req.limit > 0:
            for seg, pos, n in blog.whole_batches(max(blog.log_start_offset, hw - req.limit)):
                parts.append(await read_segment(seg, pos, n))
        resp.records = b"".join(parts)
        return resp

    # -- INIT_WRITER / security token ------------------------------------------------------------
    async def init_writer(self, ctx, version, req):
        return pb.InitWriterResponse(writer_id=self.logs.next_writer_id())

    async def get_filesystem_security_token(self, ctx, version, req):
        return self.replicas.filesystem_security_token()
