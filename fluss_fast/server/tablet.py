"""Tablet-server data APIs of the embedded server: PRODUCE_LOG, FETCH_LOG, LIST_OFFSETS, LIMIT_SCAN,
INIT_WRITER, GET_FILESYSTEM_SECURITY_TOKEN (RPC.md §3.7, 3.8, 3.11-3.13, 3.16).

Record bytes are never decoded here: produce validates headers and CRCs (``logbatch``), stamps offsets
and the commit timestamp in place and writes the batches as they came; fetch answers with a ``RawBody``
whose chunks are the segment bytes themselves, with the protobuf framing around them written by hand.
Projection (ARROW tables) rewrites only the Arrow metadata (``ArrowLogCodec.project_batch``).

Error codes chosen where Java gives no rule:
* a batch whose schema id is not a schema of the table -> per-bucket 9 SCHEMA_NOT_EXIST;
* a duplicate idempotent batch -> success carrying the offsets it got the first time (what the Java
  leader does; pyfluss would also accept 32, the Java client would not);
* LIMIT_SCAN on a primary-key table is answered from the KV store (``kv_service``).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Optional

from ..codec import logbatch
from ..codec.errors import CorruptBatchError
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from ..rpc.errors import Errors
from ..rpc.records_request import varint as _varint
from . import logstore
from .bucket_reqs import bucket_reply, check_acks, set_error
from .kv_service import KvService
from .logstore import now_ms, read_segment
from .replicas import ReplicaManager

log = logging.getLogger("fluss_fast.server.tablet")

_DEFAULT_MAX_WAIT_MS = 100  # Java's wait when a fetch gives min_bytes but no max_wait_ms
_SMALL_CHUNK = 16 * 1024    # record data below this is copied into the framing buffer


class _Bucket:
    """One bucket of a fetch answer: an error, or the high watermark and record chunks."""

    __slots__ = ("partition_id", "bucket_id", "error_code", "error_message", "high_watermark", "chunks",
                 "size", "remote")

    def __init__(self, partition_id, bucket_id):
        self.partition_id = partition_id
        self.bucket_id = bucket_id
        self.error_code = 0
        self.error_message = None
        self.high_watermark = -1
        self.chunks = []
        self.size = 0
        self.remote = None  # PbRemoteLogFetchInfo: the data is only in remote storage

    def fail(self, code: int, message: str) -> None:
        self.error_code = code
        self.error_message = message
        self.chunks = []
        self.size = 0

    def head(self) -> bytes:
        m = pb.PbFetchLogRespForBucket(bucket_id=self.bucket_id)
        if self.partition_id is not None:
            m.partition_id = self.partition_id
        if self.error_code:
            m.error_code = self.error_code
            if self.error_message:
                m.error_message = self.error_message
            return m.SerializeToString()
        m.high_watermark = self.high_watermark
        m.log_start_offset = 0
        if self.remote is not None:
            m.remote_log_fetch_info.CopyFrom(self.remote)  # instead of records, as Java answers
            return m.SerializeToString()
        # records (field 8) goes last, after every other set field, so the hand-written framing
        # below produces exactly what SerializeToString would.
        return m.SerializeToString() + b"\x42" + _varint(self.size)


def encode_fetch_response(tables) -> list:
    """Chunks of a serialized FetchLogResponse; ``tables`` = [(table_id, [_Bucket, ...]), ...]."""
    chunks: list = []
    pending = bytearray()
    for table_id, buckets in tables:
        parts = []
        body_len = 0
        tid = b"\x08" + _varint(table_id)
        body_len += len(tid)
        for b in buckets:
            head = b.head()
            blen = len(head) + b.size
            prefix = b"\x12" + _varint(blen)
            parts.append((prefix + head, b.chunks))
            body_len += len(prefix) + blen
        pending += b"\x0a"
        pending += _varint(body_len)
        pending += tid
        for framing, data in parts:
            pending += framing
            for chunk in data:
                if len(chunk) < _SMALL_CHUNK:
                    pending += chunk
                else:
                    if pending:
                        chunks.append(bytes(pending))
                        pending = bytearray()
                    chunks.append(chunk)
    if pending:
        chunks.append(bytes(pending))
    return chunks


# -- PRODUCE_LOG request straight from the frame ----------------------------------------------------------
# ProduceLogRequest {1 acks int32, 2 table_id int64, 3 timeout_ms int32, 4 repeated buckets_req}
# PbProduceLogReqForBucket {1 partition_id int64, 2 bucket_id int32, 3 records bytes}
# Parsed by hand so that ``records`` stays a view of the frame buffer: the log appends those bytes
# (after stamping offsets into them) without the three copies protobuf parsing costs.


class _RawProduceBucket:
    __slots__ = ("partition_id", "bucket_id", "records", "_has_pid")

    def __init__(self):
        self.partition_id = 0
        self.bucket_id = None
        self.records = None
        self._has_pid = False

    def HasField(self, name: str) -> bool:  # noqa: N802 - the protobuf spelling the handler uses
        if name == "partition_id":
            return self._has_pid
        raise ValueError(f"no optional field {name!r}")


class _RawProduceRequest:
    __slots__ = ("acks", "table_id", "timeout_ms", "buckets_req")


def _read_varint(buf, pos: int, end: int):
    result = 0
    shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            return None, pos
    return None, pos


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _int64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _parse_produce_bucket(buf, pos: int, end: int):
    out = _RawProduceBucket()
    while pos < end:
        tag, pos = _read_varint(buf, pos, end)
        if tag is None:
            return None
        field, wire = tag >> 3, tag & 7
        if wire == 0 and field in (1, 2):
            v, pos = _read_varint(buf, pos, end)
            if v is None:
                return None
            if field == 1:
                out.partition_id = _int64(v)
                out._has_pid = True
            else:
                out.bucket_id = _int32(v)
        elif wire == 2 and field == 3:
            n, pos = _read_varint(buf, pos, end)
            if n is None or pos + n > end:
                return None
            out.records = buf[pos:pos + n]
            pos += n
        else:
            return None
    if pos != end or out.bucket_id is None or out.records is None:
        return None
    return out


def parse_produce_request(body):
    """A ProduceLogRequest look-alike whose ``records`` are views of ``body`` (a writable
    memoryview), or None for anything but the plain encoding of a complete request (unknown fields,
    packed oddities, truncation, missing required fields): protobuf then parses it and reports the
    problem the usual way."""
    buf = body
    end = len(buf)
    pos = 0
    acks = table_id = timeout_ms = None
    buckets = []
    while pos < end:
        tag, pos = _read_varint(buf, pos, end)
        if tag is None:
            return None
        field, wire = tag >> 3, tag & 7
        if wire == 0 and field in (1, 2, 3):
            v, pos = _read_varint(buf, pos, end)
            if v is None:
                return None
            if field == 1:
                acks = _int32(v)
            elif field == 2:
                table_id = _int64(v)
            else:
                timeout_ms = _int32(v)
        elif wire == 2 and field == 4:
            n, pos = _read_varint(buf, pos, end)
            if n is None or pos + n > end:
                return None
            b = _parse_produce_bucket(buf, pos, pos + n)
            if b is None:
                return None
            buckets.append(b)
            pos += n
        else:
            return None
    if acks is None or table_id is None or timeout_ms is None:
        return None
    req = _RawProduceRequest()
    req.acks = acks
    req.table_id = table_id
    req.timeout_ms = timeout_ms
    req.buckets_req = buckets
    return req


class TabletService:
    """The data plane of every tablet server of the process (they share one LogManager; leadership
    is checked per request against the listener's node id)."""

    def __init__(self, server, replicas: ReplicaManager):
        self.server = server
        self.replicas = replicas
        self.logs = replicas.logs
        self.remote = replicas.remote
        self._codecs: dict = {}
        self.kv = KvService(server, self, replicas)

    def handlers(self) -> dict:
        return {
            Api.PRODUCE_LOG: self.produce_log,
            Api.FETCH_LOG: self.fetch_log,
            Api.LIST_OFFSETS: self.list_offsets,
            Api.LIMIT_SCAN: self.limit_scan,
            Api.INIT_WRITER: self.init_writer,
            Api.GET_FILESYSTEM_SECURITY_TOKEN: self.get_filesystem_security_token,
            **self.kv.handlers(),
        }

    # -- resolution ------------------------------------------------------------------------------
    def _table(self, table_id: int):
        return self.server.catalog.table_by_id(table_id)

    def _resolve(self, ctx, entry, table_id: int, partition_id: Optional[int], bucket: int):
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

    produce_log.raw_parser = parse_produce_request

    @staticmethod
    def _unknown_schema(entry, info, records) -> Optional[int]:
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
        if req.HasField("max_wait_ms"):
            max_wait = req.max_wait_ms
        else:
            max_wait = _DEFAULT_MAX_WAIT_MS if min_bytes > 0 else 0
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
            except asyncio.TimeoutError:
                pass
            finally:
                for blog in touched:
                    blog.remove_waiter(fut)
        from .app import RawBody

        return RawBody(encode_fetch_response(tables))

    async def _fetch_once(self, ctx, req):
        """One pass over the requested buckets: plans every read first (the byte budgets and the
        min-one rule depend only on sizes), then reads them, concurrently when several are large."""
        budget = req.max_bytes
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
                if breq.fetch_offset == -2 or breq.fetch_offset < blog.log_start_offset:
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
                seg, pos, n = blog.plan_read(offset, max(limit, 0), total == 0)
                if seg is None:
                    continue
                reads.append((res, blog, entry, offset, seg, pos, n, projection))
                total += n
                budget -= n
        if len(reads) == 1 or sum(r[6] for r in reads) <= logstore.THREAD_IO_BYTES:
            results = []
            for r in reads:
                results.append(await self._read_bucket(*r))
        else:
            results = await asyncio.gather(*(self._read_bucket(*r) for r in reads), return_exceptions=True)
        total = 0
        for r, outcome in zip(reads, results):
            res = r[0]
            if isinstance(outcome, FlussError):
                res.fail(outcome.error_code, outcome.message)
                errors = True
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                total += res.size
        return tables, total, touched, errors

    async def _read_bucket(self, res: _Bucket, blog, entry, offset: int, seg, pos: int, n: int,
                           projection) -> None:
        try:
            data = await read_segment(seg, pos, n)
        except FlussError as e:
            return e
        if projection is None:
            res.chunks = [data]
            res.size = len(data)
            return None
        parts = []
        size = 0
        try:
            for h in logbatch.iter_batches(data):
                codec = self._codec(entry, h.schema_id)
                part = codec.project_batch(data, h, projection)
                parts.append(part)
                size += len(part)
        except (ValueError, IndexError, KeyError) as e:
            code = Errors.CORRUPT_MESSAGE if isinstance(e, CorruptBatchError) else Errors.INVALID_COLUMN_PROJECTION
            return FlussError(f"Cannot project {blog.name} at offset {offset} onto fields {projection}: {e}",
                              code)
        res.chunks = parts
        res.size = size
        return None

    def _projection(self, entry, fields):
        fmt = entry.descriptor.log_format
        if fmt != "ARROW":
            return None, (f"Column projection is only supported for the ARROW log format; table "
                          f"{entry.path} uses {fmt}")
        n = len(entry.schema.columns)
        if not fields:
            return None, f"Empty column projection for table {entry.path}"
        for a, b in zip(fields, fields[1:]):
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
            from ..codec.arrowlog import ArrowLogCodec

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
