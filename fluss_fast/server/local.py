"""``LocalServer``: the embedded server in the caller's event loop or on a thread of its own."""
from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading

from ..event_loop import new_event_loop
from .app import FlussServer


class LocalServer:
    """An embedded server for tests and notebooks.

    ``async with LocalServer() as srv`` runs it in the current event loop; ``with LocalServer() as srv``
    runs it on a background thread with its own (uv)loop. ``data_dir=None`` uses a fresh temporary
    directory that is removed on exit.
    """

    def __init__(self, data_dir: str | None = None, listen: str = "127.0.0.1:0", sasl_listen: str | None = None,
                 sasl_users: dict | None = None, tablet_servers: int = 1, **options):
        self._own_dir = data_dir is None
        self._data_dir = data_dir
        self._args = dict(listen=listen, sasl_listen=sasl_listen, sasl_users=sasl_users,
                          tablet_servers=tablet_servers, **options)
        if sasl_users and not sasl_listen:
            self._args["sasl_listen"] = "127.0.0.1:0"
        self.server: FlussServer | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def data_dir(self) -> str | None:
        """The data directory (a temporary one when none was given; ``None`` after it was removed)."""
        return self._data_dir

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the server runs on: its own thread's under ``with``, the caller's under
        ``async with``; ``None`` before it has started.

        Example:
            ```python
            with LocalServer() as srv:
                asyncio.run_coroutine_threadsafe(coro(), srv.loop).result()
            ```
        """
        return self._loop

    @property
    def bootstrap_servers(self) -> str:
        """The coordinator's ``host:port``, for ``Config({"bootstrap.servers": ...})``."""
        return self.server.bootstrap_servers

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        """The SASL listener's ``host:port``, or ``None`` without SASL users."""
        return self.server.sasl_bootstrap_servers

    async def start(self) -> LocalServer:
        """Start the server in the running event loop.

        Returns:
            This server.

        Raises:
            OSError: A listen address is taken.
            RuntimeError: Another server holds the data directory.
        """
        if self._data_dir is None:
            self._data_dir = tempfile.mkdtemp(prefix="fluss-fast-server-")
        self.server = FlussServer(self._data_dir, **self._args)
        self._loop = asyncio.get_running_loop()
        await self.server.start()
        return self

    async def stop(self) -> None:
        """Stop the server; remove the data directory if it was a temporary one."""
        if self.server is not None:
            await self.server.stop()
        if self._own_dir and self._data_dir:
            shutil.rmtree(self._data_dir, ignore_errors=True)
            self._data_dir = None

    async def __aenter__(self) -> LocalServer:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    def __enter__(self) -> LocalServer:
        started = threading.Event()
        failure: list = []
        # Made here, not in the thread, so a bad FLUSS_FAST_EVENT_LOOP raises to the caller.
        loop = new_event_loop()

        def run():
            self._thread_loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                failure.append(e)
                started.set()
                loop.close()
                return
            started.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.stop())
                loop.close()

        self._thread = threading.Thread(target=run, name="fluss-fast-server", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            raise failure[0]
        return self

    def __exit__(self, *exc) -> None:
        if self._thread_loop is not None and self._thread is not None:
            self._thread_loop.call_soon_threadsafe(self._thread_loop.stop)
            self._thread.join(30)
            self._thread = None
