"""GET_TABLE_STATS (1059) for the embedded tablet servers: each bucket's row count, as the Java
``Replica.getRowCount`` gives it.

- A primary-key bucket: the rows its store holds now. Java keeps a running count; here the store's
  keys are counted on a worker thread, from a snapshot taken under the bucket's lock.
- A log bucket: high watermark minus log start offset (tiered segments included).

Per-bucket failures (unknown table or bucket, not the leader) go into the bucket's reply, as Java's.
"""
from __future__ import annotations

import asyncio

from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from .kvstore import FIRST_KEY


def _count_keys(snapshot) -> int:
    it = snapshot.iter()
    it.seek(FIRST_KEY)
    n = 0
    while it.valid():
        n += 1
        it.next()
    return n


class TableStats:
    """The GET_TABLE_STATS handler of a ``TabletService``."""

    def __init__(self, tablet):
        self.tablet = tablet

    async def get_table_stats(self, ctx, version, req):
        tablet = self.tablet
        entry = tablet._table(req.table_id)
        resp = pb.GetTableStatsResponse()
        for breq in req.buckets_req:
            pid = breq.partition_id if breq.HasField("partition_id") else None
            out = resp.buckets_resp.add(bucket_id=breq.bucket_id)
            if pid is not None:
                out.partition_id = pid
            blog, err = tablet._resolve(ctx, entry, req.table_id, pid, breq.bucket_id)
            if err is not None:
                out.error_code, out.error_message = err
                continue
            try:
                out.row_count = await self._rows(entry, blog)
            except FlussError as exc:
                out.error_code, out.error_message = exc.error_code, exc.message
        return resp

    async def _rows(self, entry, blog) -> int:
        tablet = self.tablet
        if not entry.has_primary_key:
            return max(0, blog.high_watermark - tablet.remote.log_start_offset(blog))
        kv = tablet.kv.kv
        bkv = kv.cached(blog)
        if bkv is None:
            bkv = await kv.bucket(entry, blog)
        async with bkv.lock:
            snapshot = bkv.snapshot()
        return await asyncio.to_thread(_count_keys, snapshot)
