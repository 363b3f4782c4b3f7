"""The test suite's warnings policy bites: under this repository's pytest configuration and conftest, a
test that leaves a socket unclosed, a coroutine un-awaited, a task exception unretrieved, or lets an
exception escape a thread fails; a clean test next to them passes."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBES = '''
import asyncio
import gc
import socket
import threading


def test_clean():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))


def test_unclosed_socket():
    s = socket.socket()
    del s
    gc.collect()


async def _never():
    return 1


def test_coroutine_never_awaited():
    _never()
    gc.collect()


async def _boom():
    raise ValueError("nobody looks at me")


async def test_task_exception_never_retrieved():
    task = asyncio.get_running_loop().create_task(_boom())
    await asyncio.sleep(0.01)
    del task
    gc.collect()


def test_exception_in_thread():
    t = threading.Thread(target=lambda: 1 / 0)
    t.start()
    t.join()


def test_unclosed_event_loop():
    loop = asyncio.new_event_loop()
    del loop
    gc.collect()
'''


def test_policy_fails_each_leak_and_passes_clean_code(tmp_path):
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_probes.py").write_text(PROBES)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", "-q", "-rA", str(tmp_path / "test_probes.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()

    def outcome(name):
        marks = {line.split()[0] for line in lines if line.endswith(f"::{name}") or f"::{name} " in line}
        return marks

    assert outcome("test_clean") == {"PASSED"}, out.stdout
    for name in ("test_unclosed_socket", "test_coroutine_never_awaited", "test_task_exception_never_retrieved",
                 "test_exception_in_thread", "test_unclosed_event_loop"):
        assert outcome(name) & {"FAILED", "ERROR"}, (name, out.stdout)
    assert out.returncode == 1
