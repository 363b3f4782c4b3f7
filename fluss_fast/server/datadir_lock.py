"""One server per data directory: an exclusive ``flock`` on ``DATA_DIR/.lock`` for the process's life.

Two servers writing one directory both acknowledge writes and then lose one side's on restart. An
flock belongs to the open file, so the kernel drops it on any exit, ``kill -9`` included: a lock
file left behind by a crash is stale and simply taken over. The file holds the holder's pid so the
refusal can say who has the directory.
"""
from __future__ import annotations

import fcntl
import os

LOCK_FILE = ".lock"


class DataDirLocked(RuntimeError):
    def __init__(self, data_dir: str, pid):
        holder = f"pid {pid}" if pid else "another process"
        super().__init__(f"data directory {data_dir} is in use by another fluss-fast server ({holder}); "
                         f"stop it or pass a different --data-dir")
        self.data_dir = data_dir
        self.pid = pid


class DataDirLock:
    def __init__(self, data_dir: str):
        self.data_dir = data_dir
        self.path = os.path.join(data_dir, LOCK_FILE)
        self._fd = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or None
            finally:
                os.close(fd)
            raise DataDirLocked(self.data_dir, pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)  # closing the only descriptor drops the flock
