"""The executors' connection cache: one connection per process and configuration, reused; a forked
child (Spark forks its Python workers from a daemon) starts with its own."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark")

from fluss_fast.engine import connections  # noqa: E402


def test_one_connection_per_process_and_config_fork_safe(fluss_server):
    client = (("bootstrap.servers", fluss_server.bootstrap_servers),)
    first = connections.connection(client)
    assert connections.connection(client) is first
    assert "fluss" in first.get_admin().list_databases()
    other = connections.connection(client + (("request-timeout", "7000"),))
    assert other is not first
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the inherited connection must not be handed out
        code = 1
        try:
            os.close(r)
            mine = connections.connection(client)
            ok = mine is not first and "fluss" in mine.get_admin().list_databases()
            os.write(w, b"ok" if ok else b"shared")
            code = 0
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            os.write(w, repr(exc).encode()[:500])
        finally:
            os._exit(code)
    os.close(w)
    answer = os.read(r, 1000)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert answer == b"ok" and status == 0, answer
    # the parent's connection still works after the fork
    assert connections.connection(client) is first
    assert "fluss" in first.get_admin().list_databases()
    connections.forget(client)
    connections.forget(client + (("request-timeout", "7000"),))
