"""Results that are both awaitable (pyfluss 1.0.0) and usable as they are (the older guides).

pyfluss 1.0.0 made the scanner reads async (``await scanner.poll(1000)``), while its own log-table
guide and the older client guide still write ``for r in scanner.poll(timeout_ms=5000)`` and
``print(scanner.to_pandas())``. A method decorated with ``deferred`` returns a ``Deferred`` that
serves both: awaiting it runs the body on the client runtime like any ``on_runtime`` method; using
it as a value (iterating, indexing, printing, reading an attribute) runs the body once, blocking
the calling thread, and then stands in for the result.

Nothing runs until one of the two happens, so a result that is dropped unused costs nothing and
never triggers a "coroutine was never awaited" warning.
"""
from __future__ import annotations

import collections.abc
import functools

from ..errors import FlussError

_PENDING, _RUNNING, _DONE = 0, 1, 2


class Deferred(collections.abc.Coroutine):
    """A call not yet run: ``await`` it, or use it as its value."""

    __slots__ = ("_rt", "_impl", "_obj", "_args", "_kwargs", "_inner", "_state", "_value", "_error",
                 "_ready")

    def __init__(self, runtime, impl, obj, args, kwargs, ready=None):
        self._rt = runtime
        self._impl = impl
        self._obj = obj
        self._args = args
        self._kwargs = kwargs
        self._inner = None
        self._state = _PENDING
        # ``ready(obj, *args, **kwargs)``: None, or ``(take, yield_first)``: ``take()`` gives the
        # result without the runtime (or None after all), e.g. a poll whose records were drained
        # ahead; ``yield_first``: an await gives the caller's loop one turn before taking it
        self._ready = ready

    # -- the awaitable side ----------------------------------------------------------------------
    def __await__(self):
        # A generator, not an ``async def``: one frame less on every awaited read.
        state = self._state
        if state == _DONE:
            # awaiting again gives the same result, as awaiting a Future does
            return self._result()
        if state == _RUNNING:
            raise RuntimeError(f"{self._impl.__name__}() is already being awaited")
        self._state = _RUNNING
        try:
            value = None
            hook = self._ready(self._obj, *self._args, **self._kwargs) if self._ready else None
            if hook is not None:
                take, yield_first = hook
                if yield_first:
                    # one turn of the caller's loop, as any await of a real call gives its tasks
                    yield
                value = take()
            if value is None:
                value = yield from self._rt.run(self._impl(self._obj, *self._args, **self._kwargs)).__await__()
        except Exception as e:
            self._value, self._error, self._state = None, e, _DONE
            raise
        except BaseException:
            # cancelled: nothing was produced, so a later use may run the call again
            self._state = _PENDING
            self._inner = None
            raise
        self._value, self._error, self._state = value, None, _DONE
        return value

    def _coro(self):
        # what ``send``/``throw`` drive when a Task runs this object as its coroutine
        if self._inner is None:
            self._inner = self.__await__()
        return self._inner

    def send(self, value):
        return self._coro().send(value)

    def throw(self, typ, val=None, tb=None):
        if val is None and tb is None:
            return self._coro().throw(typ)
        return self._coro().throw(typ, val, tb)

    def close(self):
        if self._inner is not None:
            self._inner.close()

    # -- the value side --------------------------------------------------------------------------
    def _result(self):
        if self._state == _DONE:
            if self._error is not None:
                raise self._error
            return self._value
        if self._state == _RUNNING:
            raise FlussError(f"{self._impl.__name__}() is being awaited; use the awaited value")
        try:
            hook = self._ready(self._obj, *self._args, **self._kwargs) if self._ready else None
            value = hook[0]() if hook is not None else None
            if value is None:
                value = self._rt.call(self._impl(self._obj, *self._args, **self._kwargs))
        except Exception as e:
            self._value, self._error, self._state = None, e, _DONE
            raise
        self._value, self._error, self._state = value, None, _DONE
        return value

    def __getattr__(self, name):
        if name in Deferred.__slots__:
            raise AttributeError(name)
        return getattr(self._result(), name)

    def __dir__(self):
        return dir(self._result())

    def __iter__(self):
        return iter(self._result())

    def __len__(self):
        return len(self._result())

    def __getitem__(self, key):
        return self._result()[key]

    def __contains__(self, item):
        return item in self._result()

    def __bool__(self):
        return bool(self._result())

    def __str__(self):
        return str(self._result())

    def __repr__(self):
        return repr(self._result())

    def __format__(self, spec):
        return format(self._result(), spec)

    def __eq__(self, other):
        return self._result() == (other._result() if isinstance(other, Deferred) else other)

    def __ne__(self, other):
        return self._result() != (other._result() if isinstance(other, Deferred) else other)

    # Identity hash: asyncio.gather / wait keep awaitables in dicts, which must not run the call.
    __hash__ = object.__hash__


def deferred(impl):
    """Make ``impl`` (an ``async def`` method whose body runs on the runtime) return a Deferred.

    Keeps ``__runtime_impl__`` so the blocking facade and API checks treat it like ``on_runtime``.
    A ``__ready__`` attribute of ``impl`` is the Deferred's ``ready`` hook (see ``Deferred``).
    """
    ready = getattr(impl, "__ready__", None)
    impl = getattr(impl, "__runtime_impl__", impl)

    @functools.wraps(impl)
    def method(self, *args, **kwargs):
        return Deferred(self._runtime, impl, self, args, kwargs, ready)

    method.__runtime_impl__ = impl
    return method
