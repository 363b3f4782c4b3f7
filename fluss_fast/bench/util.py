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
from typing import Optional

from ..errors import FlussError

READY_TIMEOUT_S = 30


class EmbeddedServer:
    """``python -m fluss_fast server`` on a free loopback port with a throw-away data dir.

    A child process rather than an in-process ``LocalServer``: the server then gets its own core and
    its own GIL, as a real cluster would, so client time and server time are not mixed up.
    """

    def __init__(self, data_dir: Optional[str] = None, tablet_servers: int = 1, *,
                 watch_pid: Optional[int] = None) -> None:
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="fluss-fast-bench-")
        self.tablet_servers = tablet_servers
        # With watch_pid the server is started through a watchdog that stops it (and removes its data
        # dir) once that process is gone: asv's setup_cache runs in a process that exits before the
        # benchmarks that use the server do.
        self.watch_pid = watch_pid
        self.proc: Optional[subprocess.Popen] = None
        self.bootstrap_servers: Optional[str] = None

    def start(self) -> "EmbeddedServer":
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        cmd = [sys.executable, "-m", "fluss_fast", "server", "--data-dir", self.data_dir,
               "--listen", "127.0.0.1:0", "--tablet-servers", str(self.tablet_servers)]
        popen_kw = {}
        if self.watch_pid is not None:
            cmd = [sys.executable, "-m", "fluss_fast.bench.util", "--watch", str(self.watch_pid),
                   "--remove", self.data_dir if self._own_dir else "", "--"] + cmd
            popen_kw["start_new_session"] = True
            self._own_dir = False  # the watchdog removes it
        # stderr goes to a file, not a pipe: a chatty server must never block on a full pipe.
        self._stderr = tempfile.TemporaryFile(mode="w+")
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
    def pid(self) -> Optional[int]:
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

    def __enter__(self) -> "EmbeddedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


class Progress:
    """A one-line progress bar on stderr (redrawn in place on a terminal, a few plain lines otherwise)."""

    WIDTH = 28

    def __init__(self, total: float, label: str = "", *, stream=None, enabled: Optional[bool] = None,
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

    def __enter__(self) -> "Progress":
        self._draw(force=True)
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def server_for(bootstrap_servers: Optional[str], tablet_servers: int = 1):
    """(server, bootstrap): the given cluster, or an embedded server started for this run, which the
    caller closes (server is None for a given cluster)."""
    if bootstrap_servers:
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
