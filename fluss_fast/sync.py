"""Blocking facade over the async client, for plain scripts, threads and Spark executors.

    from fluss_fast import sync
    with sync.connect({"bootstrap.servers": "127.0.0.1:9123"}) as conn:
        admin = conn.get_admin()
        print(admin.list_databases())

Every async method becomes a blocking one (the same body runs on the client runtime, see
``client.runtime.on_runtime``); ``async for`` becomes ``for``; ``async with`` becomes ``with``; client
objects returned by calls are wrapped the same way. Value objects (TableInfo, pyarrow tables, dicts)
come back unwrapped. Calls may come from any thread, never from the runtime thread itself.
"""
from __future__ import annotations

import concurrent.futures
import inspect

from .client.runtime import get_runtime
from .config import Config

__all__ = ["connect", "wrap", "SyncProxy", "Config"]

_needs_wrap_cache: dict[type, bool] = {}


# Plain values that happen to live under fluss_fast.client: returned as they are.
_VALUE_CLASSES = frozenset({"ScanRecord", "ScanRecords", "RecordBatch", "TableMeta", "PartitionMeta",
                            "Predicate", "ColumnRef"})


def _needs_wrap(obj) -> bool:
    """Client objects (connections, admin, tables, builders, writers, scanners, handles) get a proxy;
    values (metadata types, records, Arrow data) do not."""
    cls = type(obj)
    cached = _needs_wrap_cache.get(cls)
    if cached is not None:
        return cached
    result = False
    if not isinstance(obj, type) and (
            (cls.__module__.startswith("fluss_fast.client.") and cls.__name__ not in _VALUE_CLASSES)
            or (cls.__module__.startswith("fluss_fast.")
                and (hasattr(cls, "__aiter__") or hasattr(cls, "__aenter__")))):
        result = True
    _needs_wrap_cache[cls] = result
    return result


async def _await(awaitable):
    return await awaitable


def runtime_of(obj):
    """The runtime a client object runs on (the process's default one for others)."""
    return getattr(obj, "_runtime", None) or get_runtime()


def _resolve(value, runtime):
    """Turn a call's result into what the blocking caller should get."""
    if inspect.iscoroutine(value):
        value = runtime.call(value)
    elif isinstance(value, concurrent.futures.Future) or (
            hasattr(value, "__await__") and hasattr(value, "result") and type(value).__name__ == "_Closing"):
        value = value.result()
    return wrap(value)


def wrap(obj):
    """A blocking proxy for a client object (anything else is returned as is)."""
    if isinstance(obj, SyncProxy) or obj is None:
        return obj
    if isinstance(obj, list) and obj and _needs_wrap(obj[0]):
        return [wrap(o) for o in obj]
    if _needs_wrap(obj):
        return (SyncStreamProxy if hasattr(type(obj), "__arrow_c_stream__") else SyncProxy)(obj)
    return obj


class SyncProxy:
    """Blocking view of one client object; ``unwrap()`` gives the async object back."""

    __slots__ = ("_obj", "_rt")

    def __init__(self, obj):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_rt", runtime_of(obj))

    def unwrap(self):
        """The async object behind this proxy (for code that wants to ``await`` it)."""
        return self._obj

    def __getattr__(self, name: str):
        obj = self._obj
        attr = getattr(obj, name)
        if not callable(attr) or isinstance(attr, type):
            return wrap(attr)
        impl = getattr(attr, "__runtime_impl__", None)
        rt = self._rt
        if impl is not None:
            def blocking(*args, **kwargs):
                return wrap(rt.call(impl(obj, *args, **kwargs)))
        else:
            def blocking(*args, **kwargs):
                return _resolve(attr(*args, **kwargs), rt)
        blocking.__name__ = name
        blocking.__doc__ = getattr(attr, "__doc__", None)
        return blocking

    def __setattr__(self, name, value):
        setattr(self._obj, name, value)

    def __dir__(self):
        return dir(self._obj)

    def __repr__(self) -> str:
        return repr(self._obj)

    def __str__(self) -> str:
        return str(self._obj)

    def __eq__(self, other):
        if isinstance(other, SyncProxy):
            other = other._obj
        return self._obj == other

    def __hash__(self):
        return hash(self._obj)

    # -- context managers --------------------------------------------------------------------------
    def __enter__(self):
        obj = self._obj
        if hasattr(obj, "__aenter__"):
            self._rt.call(_await(obj.__aenter__()))
        elif hasattr(obj, "__enter__"):
            obj.__enter__()
        return self

    def __exit__(self, exc_type=None, exc_value=None, traceback=None):
        obj = self._obj
        if hasattr(obj, "__aexit__"):
            return bool(self._rt.call(_await(obj.__aexit__(exc_type, exc_value, traceback))))
        if hasattr(obj, "__exit__"):
            return bool(obj.__exit__(exc_type, exc_value, traceback))
        return False

    # -- iteration and containers ------------------------------------------------------------------
    def __iter__(self):
        obj = self._obj
        if hasattr(obj, "__aiter__"):
            ait = obj.__aiter__()
            rt = self._rt
            while True:
                try:
                    item = rt.call(_await(ait.__anext__()))
                except StopAsyncIteration:
                    return
                yield wrap(item)
        else:
            yield from iter(obj)

    def __len__(self):
        return len(self._obj)

    def __getitem__(self, key):
        return wrap(self._obj[key])

    def __contains__(self, item):
        return item in self._obj

    def __bool__(self):
        return True


class SyncStreamProxy(SyncProxy):
    """A `SyncProxy` of a scanner, which Arrow consumers (Polars, DuckDB) read as a stream.

    DuckDB's replacement scan and pandas look the protocol method up on the type, which
    ``__getattr__`` does not answer, so it is spelled out here, and only for objects that have it.
    """

    __slots__ = ()

    def __arrow_c_stream__(self, requested_schema=None):
        """The wrapped scanner's Arrow PyCapsule stream (see `LogScanner.__arrow_c_stream__`)."""
        return self._obj.__arrow_c_stream__(requested_schema)


def connect(config: Config | dict[str, str] | None = None, timeout: float | None = None) -> SyncProxy:
    """Open a connection and return its blocking proxy (``config`` may be a dict of properties)."""
    from .client.connection import FlussConnection

    return SyncProxy(FlussConnection._create_blocking(config, timeout))
