"""Small helpers shared by ``fluss-fast bench`` and ``fluss-fast demo``: an embedded server in a child
process, and a dependency-free progress bar on stderr."""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..errors import FlussError

READY_TIMEOUT_S = 30


class EmbeddedServer:
    """``python -m fluss_fast server`` on a free loopback port with a throw-away data dir.

    A child process rather than an in-process ``LocalServer``: the server then gets its own core and
    its own GIL, as a real cluster would, so client time and server time are not mixed up.
    """

    def __init__(self, data_dir: str | None = None, tablet_servers: int = 1, *,
                 watch_pid: int | None = None) -> None:
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="fluss-fast-bench-")
        self.tablet_servers = tablet_servers
        # With watch_pid the server is started through a watchdog that stops it (and removes its data
        # dir) once that process is gone: asv's setup_cache runs in a process that exits before the
        # benchmarks that use the server do.
        self.watch_pid = watch_pid
        self.proc: subprocess.Popen | None = None
        self.bootstrap_servers: str | None = None

    def start(self) -> EmbeddedServer:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        cmd = [sys.executable, "-m", "fluss_fast", "server", "--data-dir", self.data_dir,
               "--listen", "127.0.0.1:0", "--tablet-servers", str(self.tablet_servers)]
        # Its own session: a Ctrl-C in the terminal reaches only our process, which then cleans up
        # through the server (dropping its tables) before stopping it; the kernel still stops it if we
        # die without that chance.
        popen_kw: dict = {"start_new_session": True}
        if self.watch_pid is None and _PRCTL is not None:
            popen_kw["preexec_fn"] = _stop_with_parent
        if self.watch_pid is not None:
            cmd = [sys.executable, "-m", "fluss_fast.bench.util", "--watch", str(self.watch_pid),
                   "--remove", self.data_dir if self._own_dir else "", "--"] + cmd
            popen_kw["start_new_session"] = True
            self._own_dir = False  # the watchdog removes it
        # stderr goes to a file, not a pipe: a chatty server must never block on a full pipe.
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - lives with the server; close() closes it
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env,
                                     **popen_kw)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                if line.startswith("READY"):
                    fields = dict(part.split("=", 1) for part in line.split()[1:])
                    self.bootstrap_servers = fields["bootstrap.servers"]
                    return self
            if self.proc.poll() is not None:
                self._stderr.seek(0)
                err = self._stderr.read()
                self.close()
                raise FlussError(f"embedded server (data dir {self.data_dir}) exited with code "
                                 f"{self.proc.returncode} before READY: {err.strip()[-2000:]}")
        self.close()
        raise FlussError(f"embedded server (data dir {self.data_dir}) printed no READY line within "
                         f"{READY_TIMEOUT_S} s")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def detach(self) -> None:
        """Leave the server running (to its watchdog); drop only our end of its pipes."""
        if self.proc is not None and self.proc.stdout:
            self.proc.stdout.close()
        self.proc = None

    def close(self) -> None:
        proc = self.proc
        if proc is not None:
            _terminate(proc)
        if proc is not None and proc.stdout:
            proc.stdout.close()
        stderr = getattr(self, "_stderr", None)
        if stderr is not None:
            stderr.close()
            self._stderr = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


class Progress:
    """A one-line progress bar on stderr (redrawn in place on a terminal, a few plain lines otherwise)."""

    WIDTH = 28

    def __init__(self, total: float, label: str = "", *, stream=None, enabled: bool | None = None,
                 unit: str = "") -> None:
        self.total = max(float(total), 1e-9)
        self.label = label
        self.unit = unit
        self.stream = stream or sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.tty = tty
        self.enabled = tty if enabled is None else enabled
        self.done = 0.0
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self._last_quarter = -1

    def update(self, n: float = 1) -> None:
        self.done += n
        self._draw()

    def set(self, done: float) -> None:
        self.done = done
        self._draw()

    def _line(self) -> str:
        frac = min(1.0, self.done / self.total)
        filled = int(frac * self.WIDTH)
        elapsed = time.perf_counter() - self.start
        eta = elapsed / frac - elapsed if frac > 0 else 0.0
        bar = "#" * filled + "." * (self.WIDTH - filled)
        tail = f" eta {eta:5.1f}s" if 0 < frac < 1 else f" {elapsed:5.1f}s"
        return f"[{bar}] {frac * 100:5.1f}% {self.label}{tail}"

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.tty:
            if force or now - self._last_draw >= 0.1 or self.done >= self.total:
                self._last_draw = now
                self.stream.write("\r\x1b[2K" + self._line())
                self.stream.flush()
        else:
            quarter = int(min(1.0, self.done / self.total) * 4)
            if quarter != self._last_quarter or force:
                self._last_quarter = quarter
                self.stream.write(self._line() + "\n")
                self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()

    def __enter__(self) -> Progress:
        self._draw(force=True)
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _libc_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None


# Looked up in the parent: between fork and exec the child should only make the one C call.
_PRCTL = _libc_prctl()


def _stop_with_parent() -> None:
    """In the child before exec: ask Linux for SIGTERM when the parent dies (a no-op elsewhere)."""
    if _PRCTL is not None:
        _PRCTL(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG


def check_reachable(bootstrap_servers: str, timeout: float = 5.0) -> None:
    """Fail in seconds, naming the address, when no bootstrap server accepts a TCP connection."""
    import socket

    errors = []
    for address in (a.strip() for a in bootstrap_servers.split(",") if a.strip()):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as exc:
            errors.append(f"{address}: {exc}")
    raise FlussError(f"cannot reach the bootstrap server(s) {bootstrap_servers!r}: " + "; ".join(errors or ["empty"]))


async def cleanup_step(awaitable, timeout: float) -> bool:
    """Await one cleanup step for at most ``timeout`` seconds, also when the caller is being
    cancelled by a Ctrl-C (see ``run_interruptibly``): True when it completed, False when it failed
    or ran out of time. A second Ctrl-C still stops it (as a KeyboardInterrupt)."""
    import asyncio

    async def _step():
        await asyncio.wait_for(awaitable, timeout)

    task = asyncio.ensure_future(_step())
    try:
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                return False
            await task
        return True
    except Exception:  # noqa: BLE001 - a failed cleanup must not replace the run's own outcome
        return False


def run_interruptibly(coro):
    """Like ``asyncio.run(coro)``, but a Ctrl-C raises ``KeyboardInterrupt`` where the code is, as in
    plain Python, instead of waiting for the event loop's next turn (asyncio's own handler only
    cancels the main task, which a long synchronous stretch such as a million ``append`` calls does
    not notice for many seconds). Every task is then cancelled and its ``finally`` blocks run, awaits
    included, before the interrupt reaches the caller; the tasks the interrupt hit are not reported
    as "exception never retrieved"."""
    import asyncio
    import threading

    interrupted = []

    def _interrupt(signum, frame):
        # Also cancel the main task: a library that turns the KeyboardInterrupt into its own error
        # (pyfluss wraps it in FlussError) must not make the run carry on.
        interrupted.append(signum)
        if not main.done():
            loop.call_soon_threadsafe(main.cancel)
        raise KeyboardInterrupt

    def _quiet(loop, context):
        # After a Ctrl-C, calls abandoned half way leave futures whose errors nobody collects
        # ("connection closed by the client"): consequences of the interrupt, not news.
        if isinstance(context.get("exception"), (KeyboardInterrupt, asyncio.CancelledError)):
            return
        if interrupted and "never retrieved" in str(context.get("message", "")):
            return
        loop.default_exception_handler(context)

    swap = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(_quiet)
    asyncio.set_event_loop(loop)
    main = loop.create_task(coro)
    if swap:
        signal.signal(signal.SIGINT, _interrupt)
    try:
        try:
            return loop.run_until_complete(main)
        except asyncio.CancelledError:
            if interrupted:
                raise KeyboardInterrupt from None
            raise
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
            if swap:
                signal.signal(signal.SIGINT, signal.default_int_handler)


def server_for(bootstrap_servers: str | None, tablet_servers: int = 1):
    """(server, bootstrap): the given cluster, or an embedded server started for this run, which the
    caller closes (server is None for a given cluster)."""
    if bootstrap_servers:
        check_reachable(bootstrap_servers)
        return None, bootstrap_servers
    server = EmbeddedServer(tablet_servers=tablet_servers).start()
    return server, server.bootstrap_servers


def _terminate(proc: subprocess.Popen) -> None:
    """SIGTERM a running child (the server stops cleanly on it), then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def human_rate(x: float, unit: str = "") -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.2f}{suffix}{unit}"
    return f"{x:.1f}{unit}"


def _watchdog(argv) -> int:
    """``python -m fluss_fast.bench.util --watch PID --remove DIR -- CMD...``: runs CMD (passing its
    stdout through) until PID exits or this process is told to stop, then stops CMD."""
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--watch", type=int, required=True)
    p.add_argument("--remove", default="")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    opts = p.parse_args(argv)
    cmd = opts.cmd[1:] if opts.cmd and opts.cmd[0] == "--" else opts.cmd
    child = subprocess.Popen(cmd)
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    try:
        while not stop and child.poll() is None:
            try:
                os.kill(opts.watch, 0)
            except ProcessLookupError:
                break
            except PermissionError:
                pass
            time.sleep(0.5)
    finally:
        _terminate(child)
        if opts.remove:
            shutil.rmtree(opts.remove, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(_watchdog(sys.argv[1:]))
