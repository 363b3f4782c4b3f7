"""Encoding sealed batches on the codec threads before the sender drains them.

The sender may have only ``writer.max-inflight-requests-per-bucket`` requests per bucket out at
once, and a request used to start encoding its batches only once it was drained. When the server's
answers lag (a busy machine, a slow disk), every slot was taken by requests already encoded and
waiting, and both cores sat idle while full batches queued behind them. Here a batch starts
encoding as soon as the accumulator seals it, so compression keeps running while requests wait for
their turn; the drain (which fixes the wire order and the batch sequences) still decides what goes
out and when.

At most ``threads + 1`` encodes of one sender are queued on the shared workers at once, counting
those a send started itself: a writer must not fill the queue ahead of a scanner's decodes. A batch
is encoded once: its ``encoding`` future (on the loop; result None or the exception) is what a
send waits for. Memory stays within the write buffer: a sealed batch is booked against
``writer.buffer.memory-size`` until acknowledged, whether encoded yet or not.
"""
from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from functools import partial


class EncodeAhead:
    __slots__ = ("_sealed", "_encode_one", "_workers", "running", "_limit", "_min_bytes")

    def __init__(self, accumulator, encode_one: Callable, workers, min_bytes: int = 0):
        self._sealed = accumulator.sealed = collections.deque()
        # smaller batches are left to the send, which encodes them on the loop: for them the
        # hop to a worker thread and back costs more than the encode
        self._min_bytes = min_bytes
        self._encode_one = encode_one  # batch -> None or the exception (never raises)
        self._workers = workers
        self.running = 0
        self._limit = workers.threads + 1

    def start(self, b, loop) -> asyncio.Future:
        """The future of ``b``'s encode, started on the workers now unless it already was."""
        fut = b.encoding
        if fut is None:
            fut = b.encoding = loop.create_future()
            self.running += 1
            self._workers.submit_to_loop(loop, partial(self._encode_one, b),
                                         partial(self._finished, fut, loop))
        return fut

    def _finished(self, fut, loop, result, exc) -> None:
        self.running -= 1
        if not fut.done():
            fut.set_result(exc if exc is not None else result)
        self.pump(loop)

    def pump(self, loop) -> None:
        """Start encoding the oldest sealed batches that nobody encodes yet (on the loop)."""
        sealed = self._sealed
        while sealed and self.running < self._limit:
            b = sealed.popleft()
            if (b.payload is None and b.encoding is None and b.est_bytes >= self._min_bytes
                    and not b.future.done()):
                self.start(b, loop)
