"""The client runtime: one daemon thread running an event loop (uvloop unless ``event_loop.py`` says
otherwise) that owns every socket of every connection in the process.

Callers on any thread or event loop reach it through ``submit`` / ``run`` / ``call``; the
``on_runtime`` decorator turns a coroutine method into one that runs its body on the runtime and can
be awaited from any loop. After ``fork()`` the child gets a fresh runtime on first use (the parent's
thread does not exist in the child).
"""
from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from ..errors import FlussError
from ..event_loop import new_event_loop

T = TypeVar("T")

_SHUTDOWN_GRACE_S = 2.0


_SHUT_DOWN = "The fluss_fast runtime has been shut down"


class Mailbox:
    """Callbacks posted to one event loop from other threads, with one wake-up per burst.

    ``call_soon_threadsafe`` wakes the loop on every call, and with plain asyncio that wake-up is a
    socket write, which releases the GIL: a burst of 64 calls from one thread then hands the GIL to
    the woken loop up to 64 times, and the loop sees the burst in slivers (64 concurrent lookups went
    out as 1 to 27 requests instead of one). Here only the first post of a burst wakes the loop;
    the rest join the queue it is about to run. The loop is held weakly: a caller's loop that is
    gone must not be kept alive by the box its results went through.
    """

    __slots__ = ("_loop", "_items", "_armed", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = weakref.ref(loop)
        self._items: collections.deque = collections.deque()
        self._armed = False

    def post(self, fn: Callable, *args) -> None:
        """Run ``fn(*args)`` on the loop soon; RuntimeError when the loop is closed or gone."""
        self._items.append((fn, args))
        if not self._armed:
            self._armed = True
            loop = self._loop()
            try:
                if loop is None:
                    raise RuntimeError("the event loop is gone")
                loop.call_soon_threadsafe(self._run)
            except RuntimeError:
                self._armed = False
                self._items.clear()
                raise

    def _run(self) -> None:
        # Disarm before counting: a post that lands after the count sees the box disarmed and
        # wakes the loop again, so nothing waits for a wake-up that never comes.
        self._armed = False
        items = self._items
        for _ in range(len(items)):
            fn, args = items.popleft()
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001 - one bad callback must not strand the rest
                loop = self._loop()
                if loop is not None:
                    loop.call_exception_handler({"message": "fluss_fast mailbox callback failed",
                                                 "exception": e})


class Runtime:
    """A background event loop thread; created lazily, one per process (see ``get_runtime``)."""

    def __init__(self, name: str = "fluss-fast-runtime"):
        self._name = name
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._thread_id: int | None = None
        self._closed = False
        self._closers: list = []
        self._inbox: Mailbox | None = None
        self._links: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _CallerLink] = \
            weakref.WeakKeyDictionary()

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None or self._pid != os.getpid() or self._closed:
            loop = self._start()
        return loop

    def _start(self) -> asyncio.AbstractEventLoop:
        if self._pid != os.getpid():
            raise FlussError("This fluss_fast connection was created in another process (before fork); "
                             "create a new connection in this process")
        with self._lock:
            if self._closed:
                raise FlussError(_SHUT_DOWN)
            if self._loop is not None:
                return self._loop
            loop = new_event_loop()
            ready = threading.Event()

            def run():
                asyncio.set_event_loop(loop)
                self._thread_id = threading.get_ident()
                ready.set()
                try:
                    loop.run_forever()
                finally:
                    with contextlib.suppress(Exception):  # best effort at exit
                        loop.run_until_complete(loop.shutdown_asyncgens())
                    loop.close()

            t = threading.Thread(target=run, name=self._name, daemon=True)
            t.start()
            ready.wait()
            self._thread = t
            self._inbox = Mailbox(loop)
            self._loop = loop
            return loop

    @property
    def closed(self) -> bool:
        return self._closed

    def in_runtime_thread(self) -> bool:
        return self._thread_id is not None and threading.get_ident() == self._thread_id

    def add_closer(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Register an async callable run on the loop at shutdown (e.g. close a connection)."""
        self._closers.append(fn)

    def remove_closer(self, fn) -> None:
        with contextlib.suppress(ValueError):
            self._closers.remove(fn)

    def shutdown(self, timeout: float = _SHUTDOWN_GRACE_S) -> None:
        """Close registered resources, cancel what is left, stop the loop and join the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None or self._pid != os.getpid() or not thread.is_alive():
            return
        if self.in_runtime_thread():
            loop.call_soon(loop.stop)
            return

        async def stop():
            closers, self._closers = self._closers, []
            if closers:
                await asyncio.wait([asyncio.ensure_future(_safe(c())) for c in closers], timeout=timeout / 2)
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=timeout / 2)

        try:
            fut = asyncio.run_coroutine_threadsafe(stop(), loop)
            fut.result(timeout)
        except Exception:  # noqa: BLE001 - shutdown must not raise
            pass
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)

    # -- entry points ------------------------------------------------------------------------------
    def _loop_for(self, coro: Coroutine) -> asyncio.AbstractEventLoop:
        """The loop to run ``coro`` on; without one, ``coro`` is closed so it is never left un-awaited."""
        try:
            return self.loop
        except BaseException:
            coro.close()
            raise

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the runtime loop from any thread."""
        loop = self._loop_for(coro)
        try:
            return asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:  # the loop closed under us (interpreter exit)
            coro.close()
            raise FlussError(_SHUT_DOWN) from None

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the runtime from whatever loop the caller runs on."""
        loop = self._loop_for(coro)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            return await coro
        if running is None:
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))
        link = self._links.get(running)
        if link is None:
            link = self._link(running)
        fut = running.create_future()
        box = []
        results = link.results

        def done(task):
            try:
                results.post(_transfer, fut, task)
            except RuntimeError:  # the caller's loop is gone; nobody is waiting any more
                if not task.cancelled():
                    task.exception()

        def start():
            if fut.cancelled():
                coro.close()
                return
            try:
                task = loop.create_task(coro)
            except Exception as e:  # noqa: BLE001 - reach the caller; the other starts go on
                coro.close()
                with contextlib.suppress(RuntimeError):
                    results.post(_fail, fut, e)
                return
            box.append(task)
            task.add_done_callback(done)

        def abort():
            coro.close()
            if not fut.done():
                fut.set_exception(FlussError(_SHUT_DOWN))

        link.add(start, abort)
        try:
            return await fut
        except asyncio.CancelledError:
            if box:
                loop.call_soon_threadsafe(box[0].cancel)
            if fut.done() and not fut.cancelled():
                fut.exception()  # the call failed just as its caller was cancelled: not worth a log line
            raise

    def _link(self, running: asyncio.AbstractEventLoop) -> _CallerLink:
        with self._lock:
            link = self._links.get(running)
            if link is None:
                link = self._links[running] = _CallerLink(running, self._inbox)
            return link

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Block the calling thread until ``coro`` finished on the runtime."""
        if self.in_runtime_thread():
            coro.close()
            raise FlussError("A blocking fluss_fast call was made on the client runtime thread; "
                             "await the async method instead")
        fut = self.submit(coro)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise FlussError(f"The operation did not finish within {timeout} s", 25) from None
        except KeyboardInterrupt:
            fut.cancel()
            raise

    def call_soon(self, fn: Callable, *args) -> None:
        self.loop.call_soon_threadsafe(fn, *args)


class _CallerLink:
    """What one caller's event loop shares with the runtime: the calls it starts, and the box their
    results come back through.

    Calls started in one turn of the caller's loop hop to the runtime together, at the end of that
    turn, and the runtime starts them in one turn of its own: ``asyncio.gather`` over 64 lookups
    then reaches the lookup batcher as one batch, where hopping call by call let the runtime thread
    (woken by the first call) drain the batch in slivers whenever it won the GIL.
    """

    __slots__ = ("_loop", "_inbox", "_starts", "results", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop, inbox: Mailbox):
        # weakly: the runtime keeps links in a WeakKeyDictionary keyed by this very loop
        self._loop = weakref.ref(loop)
        self._inbox = inbox
        self._starts: list = []
        self.results = Mailbox(loop)

    def add(self, start: Callable[[], None], abort: Callable[[], None]) -> None:
        self._starts.append((start, abort))
        if len(self._starts) == 1:
            self._loop().call_soon(self._flush)  # only called from that loop, so it is alive

    def _flush(self) -> None:
        starts, self._starts = self._starts, []
        try:
            self._inbox.post(_start_all, starts)
        except RuntimeError:  # the runtime's loop closed (interpreter exit)
            for _, abort in starts:
                abort()


def _start_all(starts) -> None:
    for start, _ in starts:
        start()


def _fail(fut, exc):
    if not fut.done():
        fut.set_exception(exc)


def _transfer(fut, task):
    if fut.done():
        if not task.cancelled():
            task.exception()
        return
    if task.cancelled():
        fut.cancel()
        return
    exc = task.exception()
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(task.result())


async def _safe(aw):
    with contextlib.suppress(BaseException):  # shutdown must go on
        await aw


_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> Runtime:
    """The process-wide runtime (created on first use; a new one in a forked child)."""
    global _runtime
    rt = _runtime
    if rt is not None and rt._pid == os.getpid() and not rt.closed:
        return rt
    with _runtime_lock:
        rt = _runtime
        if rt is None or rt._pid != os.getpid() or rt.closed:
            rt = Runtime()
            _runtime = rt
        return rt


def _after_fork_in_child() -> None:
    global _runtime, _runtime_lock
    # The parent's loop thread does not exist here; its lock may have been held at fork time.
    _runtime = None
    _runtime_lock = threading.Lock()


def _shutdown_at_exit() -> None:
    rt = _runtime
    if rt is not None and rt._pid == os.getpid():
        rt.shutdown()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_shutdown_at_exit)


# Typed as returning the same callable so that a type checker sees each method's own signature.
AsyncMethod = TypeVar("AsyncMethod", bound=Callable[..., Coroutine[Any, Any, Any]])


def on_runtime(fn: AsyncMethod) -> AsyncMethod:
    """Run the body of an async method on ``self._runtime``; awaitable from any event loop.

    The undecorated coroutine function stays reachable as ``__runtime_impl__`` so the blocking
    facade can run the same body with ``runtime.call``.
    """

    @functools.wraps(fn)
    async def wrapper(self, *args, **kwargs):
        return await self._runtime.run(fn(self, *args, **kwargs))

    wrapper.__runtime_impl__ = fn  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def on_caller(fn: AsyncMethod) -> AsyncMethod:
    """``on_runtime``'s twin for an async method whose body neither waits nor touches a loop (it
    only builds objects, as creating a scanner does): the body runs where it is awaited. The two
    thread hops of ``on_runtime`` cost two wake-ups: creating a scanner took 0.34 ms with them and
    0.22 ms without on the 2026-12-01 VM, whose idle vCPUs wake slowly. ``__runtime_impl__`` is
    kept, so the blocking facade and the API checks treat it as they treat ``on_runtime``."""

    @functools.wraps(fn)
    async def wrapper(self, *args, **kwargs):
        return await fn(self, *args, **kwargs)

    wrapper.__runtime_impl__ = fn  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
