"""One process-wide set of codec threads: compression of outgoing batches, decoding of fetched ones.

The runtime loop owns every socket and must not stall on CPU work, while ZSTD/LZ4 (zstandard,
lz4 and pyarrow all release the GIL) scale with cores. Encoders and decoders share these threads,
so a process never runs more codec work at once than ``client.compression-threads`` (0, the
default, means one thread per core) whatever number of writers and scanners it has.

Jobs finish in any order. Callers that need order impose it themselves: the sender hands batches
to the socket in drain order (``OrderedGate``), the fetcher applies decoded responses in the order
it submitted them.

Daemon threads rather than a ``ThreadPoolExecutor``: an interpreter exiting mid-write never waits
for them (the same reason as the runtime thread's).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import queue
import threading
from collections.abc import Callable

from ..codec.log.arrowlog import encode_on_this_thread_only

__all__ = ["CodecWorkers", "codec_workers", "threads_for", "OrderedGate"]


def threads_for(setting: int) -> int:
    """Threads for a ``client.compression-threads`` value (0 = one per core)."""
    n = int(setting or 0)
    if n <= 0:
        n = os.cpu_count() or 1
    return max(1, min(n, 256))


class CodecWorkers:
    """A fixed number of daemon threads taking jobs from one queue."""

    def __init__(self, threads: int):
        self.threads = threads
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._started = []
        for k in range(threads):
            t = threading.Thread(target=self._run, name=f"fluss-fast-codec-{k}", daemon=True)
            t.start()
            self._started.append(t)

    def submit(self, fn: Callable, *args) -> concurrent.futures.Future:
        """Runs ``fn(*args)`` on a worker; the future carries its result or exception."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put((fut, fn, args))
        return fut

    def submit_to_loop(self, loop, job: Callable, done: Callable) -> None:
        """Runs ``job()`` on a worker, then ``done(result, exception)`` on ``loop``."""
        self._queue.put((loop, job, done))

    def submit_group(self, loop, jobs, done: Callable) -> None:
        """Runs every job of ``jobs`` on the workers, then ``done(outcomes)`` on ``loop`` once,
        ``outcomes`` being ``(result, exception)`` per job in ``jobs``' order.

        One wake-up of the loop for the group instead of one per job: the write to the loop's
        wake-up fd took ~20 % of a codec thread's time in a scan, its parts finishing ~1 ms apart."""
        group = _Group(loop, len(jobs), done)
        put = self._queue.put
        for i, job in enumerate(jobs):
            put((group, job, i))

    def _run(self) -> None:
        encode_on_this_thread_only()
        q = self._queue
        while True:
            a, fn, b = q.get()
            if type(a) is _Group:
                try:
                    a.finished(b, fn(), None)
                except BaseException as e:  # noqa: BLE001 - handed to the loop
                    a.finished(b, None, e)
            elif isinstance(a, concurrent.futures.Future):
                if a.set_running_or_notify_cancel():
                    try:
                        a.set_result(fn(*b))
                    except BaseException as e:  # noqa: BLE001 - the caller decides
                        a.set_exception(e)
            else:
                try:
                    result, exc = fn(), None
                except BaseException as e:  # noqa: BLE001 - handed to the loop
                    result, exc = None, e
                with contextlib.suppress(RuntimeError):  # that loop is gone: nobody waits for the result any more
                    a.call_soon_threadsafe(b, result, exc)
                result = exc = None
            del a, fn, b


class _Group:
    """The outcomes of a group of jobs (``CodecWorkers.submit_group``), handed to its loop by
    whichever worker finishes the last job."""

    __slots__ = ("loop", "left", "done", "outcomes", "lock")

    def __init__(self, loop, n: int, done: Callable) -> None:
        self.loop = loop
        self.left = n
        self.done = done
        self.outcomes: list = [(None, None)] * n
        self.lock = threading.Lock()

    def finished(self, i: int, result, exc) -> None:
        self.outcomes[i] = (result, exc)
        with self.lock:
            self.left -= 1
            last = self.left == 0
        if last:
            with contextlib.suppress(RuntimeError):  # that loop is gone: nobody waits for the result any more
                self.loop.call_soon_threadsafe(self.done, self.outcomes)


_pools = {}
_lock = threading.Lock()


def codec_workers(setting: int = 0) -> CodecWorkers:
    """The shared workers for a ``client.compression-threads`` value (started on first use)."""
    n = threads_for(setting)
    w = _pools.get(n)
    if w is None:
        with _lock:
            w = _pools.get(n)
            if w is None:
                w = _pools[n] = CodecWorkers(n)
    return w


def _forget() -> None:
    # threads do not survive a fork: the child starts its own on first use
    global _lock
    _pools.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


class OrderedGate:
    """Turns, taken in the order they were handed out, on one event loop.

    ``ticket()`` is called where the order is decided (the sender's drain, on the loop); the
    holder later ``await``s ``wait(ticket)`` and, once it has handed its request to the
    connection, calls ``done(ticket)`` (also on failure, else every later holder waits forever).
    ``done`` wakes the next holder through the loop's ready queue, so it runs only after the
    current holder's step has got as far as its first real suspension: writing to the socket.
    """

    __slots__ = ("_issued", "_turn", "_waiters", "_finished")

    def __init__(self):
        self._issued = 0
        self._turn = 0
        self._waiters = {}
        self._finished = set()

    def ticket(self) -> int:
        t = self._issued
        self._issued += 1
        return t

    async def wait(self, ticket: int) -> None:
        if ticket == self._turn:
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters[ticket] = fut
        try:
            await fut
        finally:
            self._waiters.pop(ticket, None)

    def done(self, ticket: int) -> None:
        if ticket < self._turn or ticket in self._finished:
            return
        self._finished.add(ticket)
        while self._turn in self._finished:
            self._finished.discard(self._turn)
            self._turn += 1
        fut = self._waiters.get(self._turn)
        if fut is not None and not fut.done():
            fut.set_result(None)

    @property
    def pending(self) -> int:
        return self._issued - self._turn
