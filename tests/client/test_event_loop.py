"""FLUSS_FAST_EVENT_LOOP picks the loop of the client runtime thread and of the embedded server alike;
a value it does not know is refused by name instead of silently running the default."""
import subprocess
import sys

import pytest

PROBE = """
import asyncio, fluss_fast
from fluss_fast.client.runtime import get_runtime
from fluss_fast.server.local import LocalServer

async def server_loop():
    return type(asyncio.get_running_loop()).__module__

with LocalServer() as srv:
    served = asyncio.run_coroutine_threadsafe(server_loop(), srv.loop).result(10)
print(type(get_runtime().loop).__module__.split('.')[0], served.split('.')[0])
"""


def probe(value):
    env = {k: v for k, v in __import__("os").environ.items() if k != "FLUSS_FAST_EVENT_LOOP"}
    if value is not None:
        env["FLUSS_FAST_EVENT_LOOP"] = value
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)


def test_asyncio_is_used_by_runtime_and_server():
    out = probe("asyncio")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["asyncio", "asyncio"]


def test_uvloop_is_the_default_and_can_be_demanded():
    pytest.importorskip("uvloop")
    for value in (None, "uvloop", " UVLOOP "):
        out = probe(value)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["uvloop", "uvloop"], value


def test_unknown_value_is_named():
    out = probe("trio")
    assert out.returncode != 0
    assert "FLUSS_FAST_EVENT_LOOP='trio'" in out.stderr and "asyncio, uvloop" in out.stderr
