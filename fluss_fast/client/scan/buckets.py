"""Where each subscribed bucket stands, and the decoded results waiting to be handed out.

The fetch loop (``fetcher.py``) owns these objects and touches them on the runtime loop only.
"""
from __future__ import annotations

import bisect
import collections

from .records import Chunk

__all__ = ["BucketState", "Completed", "rows_below"]


class BucketState:
    """``offset`` is the position handed out to the user so far; ``fetch_pos`` (None: same as
    ``offset``) is where the next FetchLog starts, ahead of ``offset`` while results are buffered."""

    __slots__ = ("offset", "fetch_pos", "high_watermark", "retry_at", "starved", "need_bytes",
                 "inflight", "decoding", "rounds", "remote")

    def __init__(self, offset: int):
        self.offset = offset
        self.fetch_pos = None
        # part of a FetchLog that has not been answered yet
        self.inflight = False
        # responses of this bucket handed to the decode worker and not back yet
        self.decoding = 0
        # answered fetches with data: a bounded read's budget grows with them, so that the first
        # answers are small and decoding starts early
        self.rounds = 0
        # got only part of a batch: the server sends the first batch of a request's first bucket
        # whole, so this bucket goes first next time
        self.starved = False
        # size of the batch that did not fit: asked for in full next time
        self.need_bytes = 0
        self.high_watermark = -1
        self.retry_at = 0.0
        # a remote.py cursor while the bucket reads tiered segments instead of fetching
        self.remote = None

    @property
    def fetch_at(self) -> int:
        return self.offset if self.fetch_pos is None else self.fetch_pos


class Completed:
    """Decoded result of one bucket of one FetchLog response, consumed chunk by chunk."""

    __slots__ = ("bucket", "state", "fetch_offset", "chunks", "next_offset", "high_watermark")

    def __init__(self, bucket, state, fetch_offset, chunks, next_offset, high_watermark):
        self.bucket = bucket
        self.state = state
        self.fetch_offset = fetch_offset
        self.chunks = collections.deque(chunks)
        self.next_offset = next_offset
        self.high_watermark = high_watermark


def rows_below(ch: Chunk, stop: int) -> int:
    """How many leading rows of ``ch`` have an offset below ``stop``."""
    if ch.offsets is None:
        return max(0, min(ch.count, stop - ch.base_offset))
    return bisect.bisect_left(ch.offsets, stop)
