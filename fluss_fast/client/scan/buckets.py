"""Where each subscribed bucket stands, and the decoded results waiting to be handed out.

The fetch loop (``fetcher.py``) owns these objects and touches them on the runtime loop only.
"""
from __future__ import annotations

import bisect
import collections
from collections.abc import Callable
from typing import Any

from .records import Chunk

__all__ = ["BucketState", "Completed", "drain", "rows_below"]


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


def drain(buf: collections.deque, state_of: Callable[[Any], BucketState | None],
          max_records: int | None, max_chunks: int | None, stops=None) -> dict[Any, list[Chunk]]:
    """Chunks of the buffered results ``buf`` handed out now, bucket by bucket, moving each
    bucket's positions accordingly; ``state_of(bucket)`` is the bucket's current subscription
    (None once unsubscribed: its results are dropped), ``stops`` the ends of a bounded read."""
    out: dict[Any, list[Chunk]] = {}
    n_rec = 0
    n_chunks = 0
    skipped = []
    while buf:
        if max_records is not None and n_rec >= max_records:
            break
        if max_chunks is not None and n_chunks >= max_chunks:
            break
        comp = buf[0]
        tb = comp.bucket
        st: BucketState = comp.state
        current = state_of(tb)
        if current is not st or st.offset != comp.fetch_offset:
            buf.popleft()
            if current is st:
                st.fetch_pos = None
            continue
        stop = None if stops is None else stops.get(tb)
        if stops is not None and (stop is None or st.offset >= stop):
            # Not part of this bounded read: leave it for a later poll.
            skipped.append(buf.popleft())
            continue
        if comp.high_watermark >= 0:
            st.high_watermark = comp.high_watermark
        chunks = comp.chunks
        while chunks:
            if max_records is not None and n_rec >= max_records:
                break
            if max_chunks is not None and n_chunks >= max_chunks:
                break
            ch = chunks[0]
            if stop is not None and ch.offset_at(ch.count - 1) >= stop:
                keep = rows_below(ch, stop)
                chunks.clear()
                if keep:
                    ch, _ = ch.split(keep) if keep < ch.count else (ch, None)
                    out.setdefault(tb, []).append(ch)
                    n_rec += ch.count
                    n_chunks += 1
                st.offset = comp.fetch_offset = stop
                st.fetch_pos = None
                comp.next_offset = stop
                break
            if max_records is not None and ch.count > max_records - n_rec:
                ch, rest = ch.split(max_records - n_rec)
                chunks[0] = rest
            else:
                chunks.popleft()
            out.setdefault(tb, []).append(ch)
            n_rec += ch.count
            n_chunks += 1
            st.offset = comp.fetch_offset = ch.next_offset
        if not chunks:
            nxt = comp.next_offset
            if stop is not None and nxt > stop:
                nxt = stop
            st.offset = nxt
            if st.fetch_pos is not None and st.fetch_pos <= nxt:
                st.fetch_pos = None
            buf.popleft()
    if skipped:
        buf.extendleft(reversed(skipped))
    return out
