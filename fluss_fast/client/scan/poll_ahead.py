"""Record polls answered on the caller's thread: results drained on the runtime ahead of time.

A ``poll()`` that goes to the runtime thread and back costs two thread hops and a GIL hand-over
each way, tens of microseconds that a loop of 500-record polls pays 2,000 times per million
rows, more when the runtime is busy receiving. So while a record scanner is polled, the runtime
drains up to ``DEPTH`` poll results (``max-poll-records`` rows each, exactly what ``poll()``
would hand out) from the fetcher's buffer as soon as data is decoded; ``poll()`` on the caller's
thread takes the next one without waiting for the runtime, and wakes the runtime to refill once
the queue runs low (``REFILL_AT``).

Only this module's deque is shared between the threads (``append``/``popleft`` are atomic); the
fetcher's state stays on the runtime loop. A result whose bucket was unsubscribed or subscribed
anew after it was drained is dropped when taken (its bucket state is no longer the current one),
as ``poll()`` drops buffered data of such buckets. Pending errors go first: the caller falls back
to the runtime poll, which raises them.
"""
from __future__ import annotations

import collections
import time

__all__ = ["PollAhead", "DEPTH", "REFILL_AT", "YIELD_AFTER_S"]

#: poll results kept drained ahead, and how few may be left before the runtime is woken to
#: refill: a wake is a write to the loop's eventfd, which often hands the core to the runtime
#: thread at once (measured at several % of the caller's time when woken every 8 polls), so the
#: caller wakes it rarely and keeps running
DEPTH = 32
REFILL_AT = 8
#: an awaited poll answered from here still yields to the caller's loop once this many seconds
#: passed since it last did, so that a loop fed faster than it polls does not starve its other
#: tasks; not on every poll: a turn of the loop is a select, which hands the GIL to the busy
#: runtime and codec threads, and getting it back can take a switch interval (5 ms), far more
#: than the whole answer
YIELD_AFTER_S = 0.05


class PollAhead:
    """The drained-ahead poll results of one record scanner's fetcher."""

    __slots__ = ("_fetcher", "_max_records", "_ready", "_refill_asked", "polling", "_yielded_at")

    def __init__(self, fetcher, max_records: int):
        self._fetcher = fetcher
        self._max_records = max_records
        # entries: {bucket: (bucket state when drained, [chunks])}, oldest first
        self._ready: collections.deque = collections.deque()
        self._refill_asked = False
        # a poll is running on the runtime: it drains the buffer itself, so no filling meanwhile
        # (the data would leave the buffer it is waiting on)
        self.polling = False
        self._yielded_at = 0.0

    # -- runtime loop ----------------------------------------------------------------------------
    def fill(self) -> None:
        """Drain buffered data into ready poll results, up to DEPTH; then fetch what that freed."""
        self._refill_asked = False
        f = self._fetcher
        if self.polling or f.has_errors() or not f.has_buffered():
            return
        ready = self._ready
        drained = False
        while len(ready) < DEPTH and f.has_buffered():
            out = f.drain(self._max_records, None, None)
            if not out:
                break
            ready.append({tb: (f.state_of(tb), chunks) for tb, chunks in out.items()})
            drained = True
        if drained:
            f.send_fetches()

    def count_into(self, buffered: collections.Counter) -> None:
        """Count each bucket with ready results as one buffered result (the fetch budget)."""
        seen = set()
        for entry in list(self._ready):
            seen.update(entry)
        for tb in seen:
            buffered[tb] += 1

    # -- any thread --------------------------------------------------------------------------------
    def has_ready(self) -> bool:
        return bool(self._ready) and not self._fetcher.has_errors()

    def yield_now(self) -> bool:
        """Whether this answer from the ready results should first give the caller's loop a turn."""
        now = time.monotonic()
        if now - self._yielded_at >= YIELD_AFTER_S:
            self._yielded_at = now
            return True
        return False

    def take(self) -> dict[object, list] | None:
        """The next ready poll result as ``{bucket: [chunks]}``, or None when there is none (or an
        error waits to be raised)."""
        f = self._fetcher
        ready = self._ready
        while True:
            if f.has_errors():
                return None
            try:
                entry = ready.popleft()
            except IndexError:
                self._ask_refill()
                return None
            if len(ready) <= REFILL_AT:
                self._ask_refill()
            out = {tb: chunks for tb, (st, chunks) in entry.items()
                   if st is not None and f.state_of(tb) is st}
            if out:
                return out

    def _ask_refill(self) -> None:
        # with nothing buffered the runtime has nothing to drain: the next decoded response fills
        if self._refill_asked or not self._fetcher.has_buffered():
            return
        loop = self._fetcher.loop
        if loop is None:
            return
        self._refill_asked = True
        try:
            loop.call_soon_threadsafe(self.fill)
        except RuntimeError:  # the runtime is gone: the runtime poll reports it
            self._refill_asked = False
