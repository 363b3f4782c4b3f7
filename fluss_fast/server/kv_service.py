"""Primary-key table APIs of the tablet servers: PUT_KV, LOOKUP, PREFIX_LOOKUP, SCAN_KV and the
primary-key side of LIMIT_SCAN (docs/contributing/protocol.md §3.9, §3.10, §3.12). The state itself is ``kvstore``.

Per-bucket problems go into the bucket's answer (PUT_KV, LOOKUP, PREFIX_LOOKUP) or into the
top-level error of a success frame (LIMIT_SCAN, SCAN_KV), as the Java server does.
"""
from __future__ import annotations

import asyncio
import time
import uuid

from ..codec.kv.kvbatch import build_kv_batch
from ..codec.kv.valuebatch import build_stored_value_batch
from ..codec.rows.compacted import CompactedRowDecoder
from ..error_codes import Errors
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from ..rpc.wire import PUT_KV
from .bucket_reqs import bucket_reply, check_acks, set_error
from .kv_scan import Scanner, scan_answer
from .kvstore import put_batch
from .protocol import HandlerEntry, RawParsed
from .row_merger import Merger

SCANNER_TTL_S = 600.0          # kv.scanner.ttl
MAX_SCANNERS_PER_BUCKET = 8
MAX_SCANNERS_PER_SERVER = 200
MAX_SCAN_BATCH_BYTES = 10 * 1024 * 1024


def _bucket_name(table_id: int, partition_id: int | None, bucket: int) -> str:
    if partition_id is None:
        return f"TableBucket{{tableId={table_id}, bucket={bucket}}}"
    return f"TableBucket{{tableId={table_id}, partitionId={partition_id}, bucket={bucket}}}"


def _partition_value(text: str, dtype):
    """A partition column's typed value from its partition-name text."""
    root = dtype.root
    if root in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT"):
        return int(text)
    if root == "BOOLEAN":
        return text.lower() == "true"
    if root == "DATE":
        import datetime

        return datetime.date.fromisoformat(text)
    return text


class KvService:
    def __init__(self, server, tablet, replicas) -> None:
        self.server = server
        self.tablet = tablet
        self.kv = replicas.kv
        self._scanners: dict[bytes, Scanner | None] = replicas.scanners

    def handlers(self) -> dict[int, HandlerEntry]:
        return {
            # the KV batches are read in place from the request frame (no protobuf copy of the records)
            Api.PUT_KV: RawParsed(self.put_kv, PUT_KV.parse),
            Api.LOOKUP: self.lookup,
            Api.PREFIX_LOOKUP: self.prefix_lookup,
            Api.SCAN_KV: self.scan_kv,
        }

    # -- resolution ------------------------------------------------------------------------------
    async def _bucket(self, ctx, entry, table_id, pid, bucket, api: int = Api.LOOKUP):
        """``(entry, BucketKv)``; raises FlussError with the per-bucket code. ``api``: the request's
        key, which decides the answer for a log table (the Java replica checks it per API)."""
        blog, err = self.tablet._resolve(ctx, entry, table_id, pid, bucket)
        if err is not None:
            raise FlussError(err[1], err[0])
        if not entry.has_primary_key:
            if api == Api.PUT_KV:
                # Java's Replica.putRecordsToLeader has no check of its own: a failed null check
                # (NullPointerException), which Errors maps to -1
                raise FlussError(f"KvTablet for the replica to put kv records shouldn't be null: table "
                                 f"{entry.path} is not a primary key table.", Errors.UNKNOWN_SERVER_ERROR)
            if api == Api.PREFIX_LOOKUP:
                raise FlussError(f"Try to do prefix lookup on a non primary key table: {entry.path}",
                                 Errors.NON_PRIMARY_KEY_TABLE_EXCEPTION)
            raise FlussError(f"the primary key table not exists for {_bucket_name(table_id, pid, bucket)}",
                             Errors.NON_PRIMARY_KEY_TABLE_EXCEPTION)
        bkv = self.kv.cached(blog)
        return bkv if bkv is not None else await self.kv.bucket(entry, blog)

    async def _each_bucket(self, ctx, req, resp, api: int = Api.LOOKUP):
        """(table entry, partition id, bucket request, its reply entry, BucketKv) of every bucket
        request of a read that resolves; the others get their error in their reply entry."""
        entry = self.tablet._table(req.table_id)
        for breq in req.buckets_req:
            pid, out = bucket_reply(resp, breq)
            try:
                bkv = await self._bucket(ctx, entry, req.table_id, pid, breq.bucket_id, api)
            except FlussError as e:
                set_error(out, e)
                continue
            yield entry, pid, breq, out, bkv

    # -- PUT_KV ----------------------------------------------------------------------------------
    async def put_kv(self, ctx, version, req):
        check_acks(req)
        entry = self.tablet._table(req.table_id)
        resp = pb.PutKvResponse()
        merger = merger_error = None
        if entry is not None and entry.has_primary_key:
            try:
                # the raw parser takes only requests without agg_mode (others go through protobuf)
                agg_mode = req.agg_mode if isinstance(req, pb.PutKvRequest) and req.HasField("agg_mode") else 0
                merger = Merger(self.kv.table(entry), list(req.target_columns), agg_mode)
            except FlussError as e:
                merger_error = e

        async def put_one(breq, pid, out):
            try:
                bkv = await self._bucket(ctx, entry, req.table_id, pid, breq.bucket_id, Api.PUT_KV)
                if merger_error is not None:
                    raise merger_error
                out.log_end_offset = await put_batch(self.kv.table(entry), merger, bkv, breq.records)
            except FlussError as e:
                set_error(out, e)

        puts = [put_one(breq, *bucket_reply(resp, breq)) for breq in req.buckets_req]
        if len(puts) == 1:
            await puts[0]
        elif puts:
            # buckets are independent: one bucket's multi-get or changelog build on a worker thread
            # overlaps another's merge on the loop (a bucket named twice keeps its order: its lock
            # is taken in request order)
            await asyncio.gather(*puts)
        return resp

    # -- LOOKUP / PREFIX_LOOKUP ------------------------------------------------------------------
    async def lookup(self, ctx, version, req):
        resp = pb.LookupResponse()
        async for entry, pid, breq, out, bkv in self._each_bucket(ctx, req, resp):
            keys = list(breq.keys)
            values = bkv.multi_get(keys)
            if req.insert_if_not_exists and any(v is None for v in values):
                try:
                    values = await self._insert_missing(entry, bkv, pid, keys, values)
                except FlussError as e:
                    set_error(out, e)
                    continue
            for value in values:
                v = out.values.add()
                if value is not None:
                    v.values = value
        return resp

    async def _insert_missing(self, entry, bkv, pid, keys, values):
        """Lookup with insert_if_not_exists: missing keys are written as a partial update of the primary
        key columns (other columns null, auto-increment filled), then looked up again."""
        table = self.kv.table(entry)
        merger = Merger(table, table.pk, 0)  # Java's partial-update rules apply (error 35)
        decoder = CompactedRowDecoder([table.schema.columns[i].type for i in table.physical_key])
        bitset = b"\x00" * ((len(table.physical_key) + 7) // 8)
        part = entry.partitions.get(pid) if pid is not None else None
        encoder = table._encoder
        records = []
        for key, value in zip(keys, values, strict=True):
            if value is not None:
                continue
            row = [None] * table.ncols
            try:
                decoded = (decoder.decode(bitset + key) if table.key_decoder is None
                           else table.key_decoder.decode(key))
                for i, v in zip(table.physical_key, decoded, strict=True):
                    row[i] = v
            except ValueError as e:
                raise FlussError(f"Cannot decode lookup key {key.hex()} of {entry.path}: {e}",
                                 Errors.CORRUPT_MESSAGE) from None
            if part is not None:
                for name, text in part.spec.items():
                    i = table.schema.index_of(name)
                    row[i] = _partition_value(text, table.schema.columns[i].type)
            try:
                records.append((key, encoder.encode(row)))
            except (TypeError, ValueError) as e:
                raise FlussError(f"Cannot insert missing key {key.hex()} into {entry.path}: {e}",
                                 Errors.INVALID_TARGET_COLUMN) from None
        batch = build_kv_batch(records, schema_id=table.latest_schema_id)
        await put_batch(table, merger, bkv, batch)
        return bkv.multi_get(keys)

    async def prefix_lookup(self, ctx, version, req):
        resp = pb.PrefixLookupResponse()
        async for _, _, breq, out, bkv in self._each_bucket(ctx, req, resp, Api.PREFIX_LOOKUP):
            for prefix in breq.keys:
                out.value_lists.add().values.extend(bkv.prefix(bytes(prefix)))
        return resp

    # -- LIMIT_SCAN of a primary-key table -------------------------------------------------------
    async def limit_scan(self, ctx, version, req):
        resp = pb.LimitScanResponse()
        entry = self.tablet._table(req.table_id)
        pid = req.partition_id if req.HasField("partition_id") else None
        try:
            bkv = await self._bucket(ctx, entry, req.table_id, pid, req.bucket_id)
        except FlussError as e:
            resp.error_code = e.error_code
            resp.error_message = e.message
            return resp
        resp.is_log_table = False
        # Java (RocksDBKv.limitScan, 0.9.1 and later) iterates while count < limit: a limit of 0 or
        # below is an empty answer, not an error, and no upper cap applies.
        if req.limit <= 0:
            return resp
        values = bkv.values(req.limit)
        if values:
            resp.records = build_stored_value_batch(values)
        return resp

    # -- SCAN_KV ---------------------------------------------------------------------------------
    def _expire(self) -> None:
        now = time.monotonic()
        for sid in [s for s, sc in self._scanners.items() if now - sc.touched > SCANNER_TTL_S]:
            self._scanners[sid] = None  # remembered as expired until asked about once

    async def scan_kv(self, ctx, version, req):
        resp = pb.ScanKvResponse()
        try:
            self._expire()
            if req.HasField("scanner_id"):
                values = self._continue(req, resp)
            elif req.HasField("bucket_scan_req"):
                values = await self._open(ctx, req, resp)
            else:
                raise FlussError("A scan request needs a scanner id or a bucket to scan", Errors.INVALID_SCAN_REQUEST)
        except FlussError as e:
            resp.Clear()
            resp.error_code = e.error_code
            resp.error_message = e.message
            return resp
        # the rows go into the serialized answer directly (one copy, not the protobuf field's three)
        return scan_answer(resp, values) if values else resp

    def _batch_size(self, req) -> int:
        if not req.HasField("batch_size_bytes") or req.batch_size_bytes <= 0:
            raise FlussError("batch_size_bytes must be set and positive", Errors.INVALID_SCAN_REQUEST)
        return min(req.batch_size_bytes, MAX_SCAN_BATCH_BYTES)

    async def _open(self, ctx, req, resp) -> list[bytes]:
        b = req.bucket_scan_req
        if req.HasField("call_seq_id") and req.call_seq_id != 0:
            raise FlussError(f"call_seq_id of a new scan must be 0, got {req.call_seq_id}", Errors.INVALID_SCAN_REQUEST)
        size = self._batch_size(req)
        entry = self.tablet._table(b.table_id)
        pid = b.partition_id if b.HasField("partition_id") else None
        bkv = await self._bucket(ctx, entry, b.table_id, pid, b.bucket_id)
        key = (b.table_id, pid, b.bucket_id)
        live = [s for s in self._scanners.values() if s is not None]
        if len(live) >= MAX_SCANNERS_PER_SERVER or sum(1 for s in live if s.key == key) >= MAX_SCANNERS_PER_BUCKET:
            raise FlussError(f"Too many open scanners for {_bucket_name(*key)}", Errors.TOO_MANY_SCANNERS)
        limit = b.limit if b.HasField("limit") and b.limit > 0 else None
        resp.log_offset = bkv.blog.high_watermark
        sc = Scanner(key, bkv, limit)
        values = self._fill(sc, size, resp)
        if resp.has_more_results:
            sid = uuid.uuid4().hex.encode()
            self._scanners[sid] = sc
            resp.scanner_id = sid
        return values

    def _continue(self, req, resp) -> list[bytes]:
        sid = bytes(req.scanner_id)
        if sid not in self._scanners:
            raise FlussError(f"Unknown scanner id {sid.decode('utf-8', 'replace')}", Errors.UNKNOWN_SCANNER_ID)
        sc = self._scanners[sid]
        if sc is None:
            del self._scanners[sid]
            raise FlussError(f"Scanner {sid.decode('utf-8', 'replace')} expired", Errors.SCANNER_EXPIRED)
        if req.close_scanner:
            del self._scanners[sid]
            resp.scanner_id = sid
            resp.has_more_results = False
            return []
        if not req.HasField("call_seq_id") or req.call_seq_id != sc.seq + 1:
            got = req.call_seq_id if req.HasField("call_seq_id") else None
            raise FlussError(f"Out of order call_seq_id {got} for scanner {sid.decode()}: expected {sc.seq + 1}",
                             Errors.INVALID_SCAN_REQUEST)
        size = self._batch_size(req)
        sc.seq += 1
        sc.touched = time.monotonic()
        resp.scanner_id = sid
        values = self._fill(sc, size, resp)
        if not resp.has_more_results:
            del self._scanners[sid]
        return values

    @staticmethod
    def _fill(sc: Scanner, size: int, resp) -> list[bytes]:
        """The values of the next answer (``scan_answer`` puts them in); sets has_more_results."""
        try:
            out = sc.take(size)
            more = sc.more()
        except Exception as e:  # noqa: BLE001 - the store went away under the scanner (bucket dropped)
            raise FlussError(f"Scan of {_bucket_name(*sc.key)} failed: {e}", Errors.UNKNOWN_SERVER_ERROR) from None
        resp.has_more_results = more
        return out
