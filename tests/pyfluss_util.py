"""Helpers for the tests that drive the official client (pyfluss, imported as ``fluss``): every call
is bounded, because pyfluss has no request timeout and a server bug would otherwise hang the suite."""
from __future__ import annotations

import asyncio
import time

import pytest

CALL_TIMEOUT = 30


async def call(aw, timeout: float = CALL_TIMEOUT):
    return await asyncio.wait_for(aw, timeout)


async def wait_for_leaders(fluss, admin, path, buckets, timeout: float = CALL_TIMEOUT):
    """Until pyfluss finds a leader for each bucket: a Java cluster elects them after CREATE_TABLE
    has answered, and pyfluss's list_offsets (lookups, bounded reads) give up on a bucket without one
    ("No leader found for table bucket")."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await call(admin.list_offsets(path, buckets, fluss.OffsetSpec.latest()))
        except fluss.FlussError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def connect(fluss, bootstrap: str, **extra):
    return await call(fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap, **extra})))


def pyfluss_fixtures(db_prefix: str):
    """The conn/admin/db fixtures of a pyfluss test module: a connection to the session server, its
    admin, and a fresh database dropped (cascade) afterwards."""
    fluss = pytest.importorskip("fluss")

    @pytest.fixture
    async def conn(fluss_server):
        c = await connect(fluss, fluss_server.bootstrap_servers)
        yield c
        await call(c.close())

    @pytest.fixture
    async def admin(conn):
        return conn.get_admin()

    @pytest.fixture
    async def db(admin, unique_name):
        name = unique_name(db_prefix)
        await call(admin.create_database(name))
        yield name
        await call(admin.drop_database(name, ignore_if_not_exists=True, cascade=True))

    return conn, admin, db
