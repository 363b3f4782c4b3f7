"""Per-bucket request plumbing the TabletServer's write and read handlers share (ProduceLog,
PutKv, Lookup, PrefixLookup): the acks check and the reply entry of each bucket request."""
from __future__ import annotations

from ..error_codes import Errors
from ..errors import FlussError


def check_acks(req) -> None:
    if req.acks not in (-1, 0, 1):
        raise FlussError(f"Invalid required acks {req.acks} for table id {req.table_id}: "
                         f"must be -1, 0 or 1", Errors.INVALID_REQUIRED_ACKS)


def bucket_reply(resp, breq):
    """``(partition id or None, the reply entry)`` for one bucket request: the entry echoes the
    bucket and partition the client asked about, so it can match answers to requests."""
    pid = breq.partition_id if breq.HasField("partition_id") else None
    out = resp.buckets_resp.add(bucket_id=breq.bucket_id)
    if pid is not None:
        out.partition_id = pid
    return pid, out


def set_error(out, error: FlussError) -> None:
    out.error_code = error.error_code
    out.error_message = error.message
