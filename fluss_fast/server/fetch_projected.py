"""The bytes of one bucket of a projected FetchLog: batches projected until the budget is used.

A projected answer is measured in projected bytes, as the Java server measures it: batches are read
and projected one after the other, and the first projected batch that would overrun the bucket's
budget ends the answer (the first one is sent anyway when the bucket may exceed the budget). Counting
the raw bytes read instead would send one small projected batch per round trip whenever a stored
batch is larger than the budget, as it is for wide tables (orders: 2.8 MB stored, 0.67 MB projected).
"""
from __future__ import annotations

import os
from typing import Callable, List, Optional, Tuple

from ..codec import logbatch
from .logstore import read_segment

__all__ = ["read_projected"]

# raw bytes read ahead of what the budget left seems to need: a window smaller than the next batch
# is read again at that batch's size, so this only saves round trips to the page cache
_MIN_WINDOW = 256 * 1024


def _batch_size_at(seg, pos: int) -> int:
    """Total size of the stored batch starting at ``pos`` (0 when nothing complete starts there)."""
    if seg.size - pos < logbatch.LOG_OVERHEAD:
        return 0
    head = os.pread(seg.fd, logbatch.LOG_OVERHEAD, pos)
    size = int.from_bytes(head[8:12], "little", signed=True) + logbatch.LOG_OVERHEAD
    return size if logbatch.LOG_OVERHEAD < size <= seg.size - pos else 0


async def read_projected(seg, pos: int, n: int, limit: int, min_one: bool,
                         project: Callable) -> Tuple[List[bytes], int]:
    """``(projected batches, their total size)`` from ``pos`` of segment ``seg``: the first ``n``
    raw bytes (``LogStore.plan_read``, at least one whole batch), then more raw bytes while
    projected batches still fit into ``limit``. ``project(data, header)`` projects one batch of ``data``; it may raise."""
    parts: List[bytes] = []
    size = 0
    raw_used = 0
    # the raw budget may be smaller than a stored batch whose projection fits
    n = max(n, _batch_size_at(seg, pos))
    while n > 0:
        data = await read_segment(seg, pos, n)
        consumed = 0
        for h in logbatch.iter_batches(data):
            part = project(data, h)
            if size + len(part) > limit and (parts or not min_one):
                return parts, size
            parts.append(part)
            size += len(part)
            consumed = h.position + h.total_size
        if consumed == 0 or size >= limit:
            break
        pos += consumed
        raw_used += consumed
        # the raw bytes the rest of the budget should take, at the ratio seen so far
        want = (limit - size) * raw_used // max(size, 1)
        n = min(seg.size - pos, max(want, _MIN_WINDOW, _batch_size_at(seg, pos)))
    return parts, size
