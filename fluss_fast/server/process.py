"""``ServerProcess``: `fluss-fast server` in a child process, for a script or pipeline that wants a
server of its own without sharing its interpreter (and its GIL) with it."""
from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time

from ..error_codes import CLIENT_ERROR
from ..errors import FlussError


class ServerProcess:
    """An embedded server in a child process, stopped (and its temporary data removed) on exit.

    ``with ServerProcess() as srv:`` starts ``python -m fluss_fast server`` on a free loopback port
    and returns once it accepts connections (the READY line); ``srv.bootstrap_servers`` is its
    address. ``LocalServer`` runs the same server in this process instead.

    Args:
        data_dir: Where the server keeps its data; ``None`` uses a fresh temporary directory that is
            removed when the server stops.
        listen: ``host:port`` of the plaintext listener (port 0: a free one).
        tablet_servers: Number of tablet servers.
        settings: Server options (``-c KEY=VALUE``), e.g. ``{"log.segment.file-size": "1mb"}``.
        timeout: Seconds to wait for the READY line.

    Example:
        ```python
        with ServerProcess() as srv:
            conn = sync.connect({"bootstrap.servers": srv.bootstrap_servers})
        ```
    """

    def __init__(self, data_dir: str | None = None, listen: str = "127.0.0.1:0", *, tablet_servers: int = 1,
                 settings: dict | None = None, timeout: float = 60.0):
        self._own_dir = data_dir is None
        self._data_dir = data_dir
        self._listen = listen
        self._tablet_servers = tablet_servers
        self._settings = dict(settings or {})
        self._timeout = timeout
        self._proc: subprocess.Popen | None = None
        self._ready: dict = {}

    @property
    def bootstrap_servers(self) -> str:
        """The coordinator's ``host:port``."""
        return self._ready["bootstrap.servers"]

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    @property
    def data_dir(self) -> str | None:
        """The data directory (a temporary one when none was given)."""
        return self._data_dir

    def start(self) -> ServerProcess:
        """Start the server and wait for it to accept connections.

        Raises:
            FlussError: It exited or did not say READY within ``timeout``; the message carries the
                end of its stderr.
        """
        if self._data_dir is None:
            self._data_dir = tempfile.mkdtemp(prefix="fluss-fast-server-")
        cmd = [sys.executable, "-m", "fluss_fast", "server", "--data-dir", self._data_dir,
               "--listen", self._listen, "--tablet-servers", str(self._tablet_servers)]
        for key, value in self._settings.items():
            cmd += ["-c", f"{key}={value}"]
        # the server's stderr, for the error should it not start (the child keeps its own descriptor)
        with tempfile.TemporaryFile() as err:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
            line = self._ready_line()
            if not line.startswith("READY "):
                self.stop()
                err.seek(0)
                tail = err.read().decode("utf-8", "replace").strip().splitlines()[-5:]
                raise FlussError(f"fluss-fast server did not start within {self._timeout:g} s: "
                                 f"{line.strip() or 'no READY line'}; stderr: {' | '.join(tail)}", CLIENT_ERROR)
        self._ready = dict(token.split("=", 1) for token in line.split()[1:] if "=" in token)
        return self

    def _ready_line(self) -> str:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        deadline = time.monotonic() + self._timeout
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0:
                if sel.select(left):
                    return proc.stdout.readline()
                if proc.poll() is not None:
                    break
        return ""

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``) and remove a temporary data dir."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._own_dir and self._data_dir is not None and os.path.isdir(self._data_dir):
            shutil.rmtree(self._data_dir, ignore_errors=True)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
