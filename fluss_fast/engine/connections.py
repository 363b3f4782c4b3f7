"""One blocking fluss_fast connection per worker process and client configuration.

The engines reuse their worker processes across tasks (Spark's spark.python.worker.reuse, Ray's
worker pool), so a task finds the connection, metadata and sockets the previous task of the same
worker opened. Spark forks its Python workers from a daemon: a connection inherited through fork is
unusable (its runtime thread did not survive), so the cache belongs to the process that filled it and
a forked child starts empty, as the runtime itself does (``client.runtime.get_runtime``).
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

from .. import sync
from ..errors import ErrorCode, FlussError
from ..metadata import TablePath

_lock = threading.Lock()
_pid = os.getpid()
# sync proxies, typed Any as the proxies forward every attribute
_connections: dict[tuple[tuple[str, str], ...], Any] = {}
_tables: dict[tuple, Any] = {}


def _reset_after_fork() -> None:
    global _lock, _pid
    _lock = threading.Lock()
    _pid = os.getpid()
    _connections.clear()
    _tables.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def connection(client: tuple[tuple[str, str], ...]):
    """The blocking connection (a ``fluss_fast.sync`` proxy) of this process for ``client``."""
    if _pid != os.getpid():
        _reset_after_fork()
    conn = _connections.get(client)
    if conn is not None and not conn.closed:
        return conn
    with _lock:
        conn = _connections.get(client)
        if conn is not None and not conn.closed:
            return conn
        config = dict(client)
        try:
            conn = sync.connect(config)
        except FlussError as e:
            raise FlussError(f"Cannot connect to Fluss at bootstrap.servers="
                             f"'{config.get('bootstrap.servers')}': {e.message}", e.error_code) from None
        _connections[client] = conn
        return conn


def table(client, database: str, name: str, table_id=None, refresh: bool = False):
    """The cached table handle; looked up again when the caller planned against another table id
    (the table was dropped and created again since), or asks for ``refresh``: planning does, since
    Spark reuses its planner workers for every query of the session, and a handle cached by an
    earlier query would plan against a table that may have been dropped and re-created since."""
    key = (client, database, name)
    t = _tables.get(key)
    if not refresh and t is not None and (table_id is None or t.unwrap()._meta.table_id == table_id):
        return t
    conn = connection(client)
    try:
        t = conn.get_table(TablePath(database, name))
    except FlussError as e:
        if e.error_code == ErrorCode.TABLE_NOT_EXIST:
            raise FlussError(f"Table '{database}.{name}' does not exist", e.error_code) from None
        raise
    if table_id is not None and t.unwrap()._meta.table_id != table_id:
        raise FlussError(f"Table '{database}.{name}' was dropped and re-created (table id "
                         f"{t.unwrap()._meta.table_id}, the query was planned for {table_id})",
                         ErrorCode.CLIENT_ERROR)
    _tables[key] = t
    return t


def forget(client) -> None:
    """Drop a cached connection (e.g. after the server went away), so the next use reconnects."""
    conn = _connections.pop(client, None)
    for key in [k for k in _tables if k[0] == client]:
        _tables.pop(key, None)
    if conn is not None:
        with contextlib.suppress(Exception):  # already broken
            conn.close()
