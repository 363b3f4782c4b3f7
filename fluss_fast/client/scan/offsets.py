"""ListOffsets for a scanner's buckets: where EARLIEST / LATEST lie now, with retries.

Used by the fetch loop to resolve LATEST subscriptions and by bounded reads (``to_arrow``, the
batch reader) to fix where they stop. Leader moves and storage hiccups are retried with a growing
back-off, first ``attempts`` times and then for as long as the caller's time limit allows.
"""
from __future__ import annotations

import asyncio

from ...error_codes import Errors
from ...errors import FlussError
from ...metadata.table import TableBucket
from ...rpc import fluss_api_pb2 as pb
from ...rpc.api import Api
from .retry import MAX_BACKOFF_S, REFRESH_CODES, RETRY_BACKOFF_S, RETRY_CODES

__all__ = ["list_offsets"]

NETWORK_EXCEPTION = Errors.NETWORK_EXCEPTION
_REFRESH_CODES = REFRESH_CODES
_RETRY_CODES = RETRY_CODES
_RETRY_BACKOFF_S = RETRY_BACKOFF_S
_MAX_BACKOFF_S = MAX_BACKOFF_S


async def list_offsets(ctx, spec, buckets, offset_type: int, give_up_after_s: float,
                       attempts: int = 5) -> dict[TableBucket, int]:
    """{bucket: offset} (offset_type 0 EARLIEST, 1 LATEST) of ``spec``'s table, retrying leader
    moves ``attempts`` times and, beyond that, for up to ``give_up_after_s``."""
    md = ctx.metadata
    todo = list(buckets)
    out: dict[TableBucket, int] = {}
    last_err: FlussError | None = None
    # a restarting server takes longer than a few quick attempts: keep going for request-timeout
    give_up_at = asyncio.get_running_loop().time() + give_up_after_s
    attempt = -1
    while True:
        attempt += 1
        if not todo or (attempt >= attempts and asyncio.get_running_loop().time() >= give_up_at):
            break
        if attempt:
            await asyncio.sleep(min(_RETRY_BACKOFF_S * (2 ** attempt), _MAX_BACKOFF_S))
        groups: dict[tuple[int, int | None], list] = {}
        retry = []
        for tb in todo:
            try:
                node = await md.leader_for(spec.table_id, tb.partition_id, tb.bucket_id)
            except FlussError as exc:
                if exc.error_code in _REFRESH_CODES or exc.error_code == NETWORK_EXCEPTION:
                    last_err = exc
                    retry.append(tb)
                    continue
                raise
            groups.setdefault((node, tb.partition_id), []).append(tb)

        async def one(node, pid, tbs):
            req = pb.ListOffsetsRequest()
            req.follower_server_id = -1
            req.offset_type = offset_type
            req.table_id = spec.table_id
            if pid is not None:
                req.partition_id = pid
            req.bucket_id.extend(tb.bucket_id for tb in tbs)
            return await ctx.tablet(node, Api.LIST_OFFSETS, req)

        keys = list(groups)
        results = await asyncio.gather(*(one(n, p, groups[(n, p)]) for n, p in keys),
                                       return_exceptions=True)
        for (node, pid), res in zip(keys, results, strict=True):
            tbs = groups[(node, pid)]
            if isinstance(res, BaseException):
                if isinstance(res, FlussError) and (res.is_retriable or res.error_code in _REFRESH_CODES):
                    last_err = res
                    for tb in tbs:
                        md.invalidate(spec.table_id, tb.partition_id)
                    retry.extend(tbs)
                    continue
                if isinstance(res, FlussError):
                    raise res
                raise FlussError(f"Listing offsets of table '{spec.path}' failed: {res}", NETWORK_EXCEPTION)
            by_bucket = {b.bucket_id: b for b in res.buckets_resp}
            for tb in tbs:
                b = by_bucket.get(tb.bucket_id)
                if b is None:
                    last_err = FlussError(f"{spec.where(tb)}: no offset in the ListOffsets answer", -1)
                    retry.append(tb)
                elif b.HasField("error_code") and b.error_code:
                    err = FlussError(f"Listing offsets of {spec.where(tb)} failed: "
                                     f"{b.error_message or b.error_code}", b.error_code)
                    if b.error_code in _REFRESH_CODES or b.error_code in _RETRY_CODES:
                        md.invalidate(spec.table_id, tb.partition_id)
                        last_err = err
                        retry.append(tb)
                    else:
                        raise err
                elif not b.HasField("offset"):
                    raise FlussError(f"{spec.where(tb)}: ListOffsets answer carries neither "
                                     f"an offset nor an error", -1)
                else:
                    out[tb] = b.offset
        todo = retry
    if todo:
        raise last_err or FlussError(f"Listing offsets of table '{spec.path}' failed", -1)
    return out
