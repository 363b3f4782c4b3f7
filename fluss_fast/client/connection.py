"""``FlussConnection``: the entry point, as in pyfluss 1.0.0 (``await FlussConnection.create(config)``),
plus the older guide's ``FlussConnection.connect(config)``."""
from __future__ import annotations

import asyncio
import collections.abc
import threading
from typing import TYPE_CHECKING

from ..config import Config
from ..errors import FlussError
from ..metadata.table import TablePath
from .admin import FlussAdmin
from .context import ClientContext
from .runtime import get_runtime, on_runtime

if TYPE_CHECKING:  # imported where used at run time (import cycle); named here for type checkers
    from .table import FlussTable


def _as_config(config) -> Config:
    if isinstance(config, Config):
        return config
    if isinstance(config, dict):
        return Config(config)
    if config is None:
        return Config()
    raise TypeError(f"argument 'config': '{type(config).__name__}' object is not an instance of 'Config'")


async def _open_context(config: Config) -> ClientContext:
    ctx = ClientContext(config.copy())
    try:
        await ctx.metadata.bootstrap()
    except BaseException:
        await ctx.close()
        raise
    return ctx


class _Closing(collections.abc.Coroutine):
    """A close already under way. Awaitable (and accepted by ``asyncio.run``) to wait for the end;
    dropping it without awaiting is fine and warns about nothing."""

    __slots__ = ("_future", "_inner")

    def __init__(self, future):
        self._future = future
        self._inner = None

    def _coro(self):
        if self._inner is None:
            self._inner = self._wait()
        return self._inner

    async def _wait(self):
        return await asyncio.wrap_future(self._future)

    def send(self, value):
        return self._coro().send(value)

    def throw(self, *args):
        return self._coro().throw(*args)

    def close(self):
        if self._inner is not None:
            self._inner.close()

    def __await__(self):
        return self._coro().__await__()

    def result(self, timeout=None):
        return self._future.result(timeout)


class FlussConnection:
    """A connection to a Fluss cluster: hands out the admin client and tables."""

    def __init__(self, ctx: ClientContext):
        self._ctx = ctx
        self._runtime = ctx.runtime
        self._admin: FlussAdmin | None = None
        self._close_lock = threading.Lock()
        self._close_future = None

    @staticmethod
    async def create(config: Config) -> FlussConnection:
        """Connect to a cluster.

        Reads the cluster's metadata from ``bootstrap.servers``; tables and the admin client come from
        the connection. Close it with ``await conn.close()`` (or ``async with``) to deliver what its
        writers still hold.

        Args:
            config: The client configuration (see the configuration guide for every key).

        Returns:
            An open connection.

        Raises:
            FlussError: No bootstrap server answered within ``connect-timeout``, or SASL
                authentication failed.

        Example:
            ```python
            conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": "127.0.0.1:9123"}))
            ```
        """
        cfg = _as_config(config)
        runtime = get_runtime()
        ctx = await runtime.run(_open_context(cfg))
        return FlussConnection(ctx)

    @staticmethod
    async def connect(config) -> FlussConnection:
        """The older guide's name for ``create``; also takes a plain dict."""
        return await FlussConnection.create(_as_config(config))

    @staticmethod
    def _create_blocking(config, timeout: float | None = None) -> FlussConnection:
        cfg = _as_config(config)
        runtime = get_runtime()
        ctx = runtime.call(_open_context(cfg), timeout)
        return FlussConnection(ctx)

    @property
    def config(self) -> Config:
        """The configuration the connection was opened with."""
        return self._ctx.config

    @property
    def closed(self) -> bool:
        """Whether `close` has been called."""
        return self._ctx.closed

    def metrics(self) -> dict:
        """A snapshot of the client metrics of this connection, by the Java client's metric names.

        Returns:
            A plain dict ``{"writer": {table: {...}}, "scanner": {table: {...}}, "lookup": {table: {...}}}``;
            each table's entry maps metric names (``recordSendPerSecond``, ``recordsSendTotal``,
            ``sendLatencyMs``, ``bufferAvailableBytes``, ``fetchLatencyMs``, ``recordsLag`` ...) to
            numbers. Rates (``...PerSecond``) are over the time since the previous snapshot. See the
            metrics guide for every name.

        Example:
            ```python
            print(conn.metrics()["writer"]["fluss.orders"]["recordsSendTotal"])
            ```
        """
        return self._ctx.client_metrics.snapshot()

    @on_runtime
    async def server_connections(self) -> list[dict]:
        """The open sockets of this connection to the cluster's servers (fluss_fast only): one per tablet
        server in use, the coordinator's, and the bootstrap server's while it is open.

        Returns:
            One dict per open socket: ``address`` ("host:port"), ``server_type`` (1 coordinator,
            2 tablet server, None if the server did not say), ``in_flight`` (requests sent and not
            answered yet) and ``api_versions`` (``{api_key: version}``: the APIs both sides speak,
            at the version this client uses with that server).
        """
        return self._ctx.server_connections()

    def get_admin(self) -> FlussAdmin:
        """The admin client of this connection (one per connection, created on first use).

        Returns:
            The `FlussAdmin` for databases, tables, partitions, offsets and servers.

        Raises:
            FlussError: The connection is closed.
        """
        if self._ctx.closed:
            raise FlussError("The FlussConnection has been closed")
        if self._admin is None:
            self._admin = FlussAdmin(self._ctx)
        return self._admin

    @on_runtime
    async def get_table(self, table_path: TablePath) -> FlussTable:
        """A handle on a table, for writing, scanning and lookups.

        A name ending in ``$changelog`` or ``$binlog`` gives that virtual table of the base table
        (fluss_fast only; read-only).

        Args:
            table_path: Database and table name.

        Returns:
            The table, with its current metadata.

        Raises:
            FlussError: ``TABLE_NOT_EXIST``, or the connection is closed.
            TypeError: ``table_path`` is not a `TablePath`.

        Example:
            ```python
            table = await conn.get_table(fluss.TablePath("shop", "orders"))
            ```
        """
        if not isinstance(table_path, TablePath):
            raise TypeError(f"argument 'table_path': '{type(table_path).__name__}' object is not an instance of "
                            f"'TablePath'")
        self._ctx._check_open()
        from .table import FlussTable

        # the virtual-table module (~3 ms to import) is loaded only for names that can be one: a
        # script's first get_table is on its time to first row
        if "$" in table_path.table_name:
            from .virtual import VirtualTable, split_virtual

            virtual = split_virtual(table_path)
            if virtual is not None:  # "orders$changelog" / "users$binlog": views made in the client
                base_path, kind = virtual
                meta = await self._ctx.metadata.table(base_path, refresh=True)
                return VirtualTable(FlussTable(self._ctx, meta), kind, table_path)
        meta = await self._ctx.metadata.table(table_path, refresh=True)
        return FlussTable(self._ctx, meta)

    def close(self) -> _Closing:
        """Starts closing at once; awaiting the result waits until it is done. (The older guide
        called ``conn.close()`` without ``await``; that must close too.)

        As pyfluss's close does, it first delivers what the writers made on this connection still
        hold (the records appended but not flushed). Then the sockets are closed; if a writer could
        not deliver everything, this raises a FlussError saying how many records were lost."""
        return _Closing(self._start_close())

    def _start_close(self):
        # one close per connection: a second call waits for the first instead of cutting its drain short
        with self._close_lock:
            if self._close_future is None:
                self._close_future = self._runtime.submit(self._close_impl())
            return self._close_future

    async def _drain_writers(self) -> None:
        writers = list(getattr(self._ctx, "writers", ()))
        closes = []
        for w in writers:
            impl = getattr(getattr(type(w), "close", None), "__runtime_impl__", None)
            if impl is not None:
                closes.append(impl(w))
        if closes:
            results = await asyncio.gather(*closes, return_exceptions=True)
            lost = [r for r in results if isinstance(r, FlussError)]
            if lost:
                # undelivered records must not vanish silently behind a normal return
                more = f" (and {len(lost) - 1} more writer(s) failed)" if len(lost) > 1 else ""
                raise FlussError(lost[0].message + more, lost[0].error_code)

    async def _close_impl(self) -> None:
        if not self._ctx.closed:
            try:
                await self._drain_writers()
            finally:
                await self._ctx.close()

    async def _close_on_runtime(self) -> None:
        await asyncio.wrap_future(self._start_close())

    close.__runtime_impl__ = _close_on_runtime

    def __enter__(self) -> FlussConnection:
        return self

    def __exit__(self, exc_type=None, exc_value=None, traceback=None) -> bool:
        # As in pyfluss: a blocking exit cannot wait for the writers to drain, so it does nothing and
        # the connection stays usable; ``async with`` or ``await conn.close()`` close it.
        return False

    async def __aenter__(self) -> FlussConnection:
        return self

    async def __aexit__(self, exc_type=None, exc_value=None, traceback=None) -> bool:
        # pyfluss: close (draining the writers); a failure to close is raised only when the body
        # itself raised nothing, so it never hides the body's exception.
        try:
            await self.close()
        except FlussError:
            if exc_type is None:
                raise
        return False

    def __repr__(self) -> str:
        return "FlussConnection()"
