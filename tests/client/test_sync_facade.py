"""fluss_fast.sync: the blocking facade, from plain code, threads and a script with no event loop."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import fluss_fast
from fluss_fast import ErrorCode, FlussError, sync

from client_util import run_threads

SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string())])


def test_admin_round_trip(fluss_server, unique_name):
    db = unique_name("sdb")
    with sync.connect({"bootstrap.servers": fluss_server.bootstrap_servers}) as conn:
        admin = conn.get_admin()
        admin.create_database(db, fluss_fast.DatabaseDescriptor("sync"))
        assert db in admin.list_databases()
        assert admin.database_exists(db) is True
        assert admin.get_database_info(db).get_database_descriptor().comment == "sync"
        path = fluss_fast.TablePath(db, "t")
        admin.create_table(path, fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA), bucket_count=2))
        info = admin.get_table_info(path)
        assert isinstance(info, fluss_fast.TableInfo) and info.num_buckets == 2
        assert admin.list_offsets(path, [0, 1], fluss_fast.OffsetSpec.latest()) == {0: 0, 1: 0}
        nodes = admin.get_server_nodes()
        assert isinstance(nodes, list) and isinstance(nodes[0], fluss_fast.ServerNode)
        with pytest.raises(FlussError) as info_err:
            admin.create_database(db)
        assert info_err.value.error_code == ErrorCode.DATABASE_ALREADY_EXIST
        table = conn.get_table(path)
        assert table.get_table_path() == path
        assert table.get_table_info().table_id == info.table_id
        admin.drop_database(db, cascade=True)
        assert repr(conn) == "FlussConnection()"
        async_conn = conn.unwrap()
        assert isinstance(async_conn, fluss_fast.FlussConnection)
    assert async_conn.closed


def test_config_object_and_close(fluss_server):
    conn = sync.connect(fluss_fast.Config({"bootstrap.servers": fluss_server.bootstrap_servers}))
    assert "fluss" in conn.get_admin().list_databases()
    conn.close()
    assert conn.closed
    with pytest.raises(FlussError):
        conn.get_admin()


def test_connect_failure_is_a_flusserror():
    with pytest.raises(FlussError) as info:
        sync.connect({"bootstrap.servers": "127.0.0.1:1", "connect-timeout": "500"})
    assert info.value.error_code == ErrorCode.NETWORK_EXCEPTION


def test_many_threads_share_one_connection(fluss_server):
    conn = sync.connect({"bootstrap.servers": fluss_server.bootstrap_servers})
    admin = conn.get_admin()
    results = []

    def worker(_):
        for _ in range(10):
            results.append("fluss" in admin.list_databases())

    errors = run_threads(worker, 8, 30)
    assert not errors and results == [True] * 80
    conn.close()


def test_plain_script_without_event_loop(fluss_server):
    script = textwrap.dedent(f"""
        import fluss_fast
        from fluss_fast import sync
        conn = sync.connect({{"bootstrap.servers": "{fluss_server.bootstrap_servers}"}})
        print(",".join(conn.get_admin().list_databases()))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "fluss" in out.stdout.split(",")[0] or "fluss" in out.stdout


class _Counter:
    """An async iterator + async context manager, like the scanners and writers."""

    def __init__(self, n):
        self.n = n
        self.entered = self.exited = False

    def __aiter__(self):
        self.i = 0
        return self

    async def __anext__(self):
        if self.i >= self.n:
            raise StopAsyncIteration
        self.i += 1
        return self.i

    async def __aenter__(self):
        self.entered = True
        return self

    async def __aexit__(self, *exc):
        self.exited = True
        return False

    async def double(self, x):
        return 2 * x


def test_proxy_turns_async_protocols_into_blocking_ones():
    obj = _Counter(3)
    proxy = sync.SyncProxy(obj)
    assert list(proxy) == [1, 2, 3]
    with proxy as p:
        assert p is proxy and obj.entered
        assert p.double(21) == 42
    assert obj.exited
    assert sync.wrap(5) == 5 and sync.wrap(None) is None
    assert sync.wrap(proxy) is proxy


def test_write_and_scan_through_the_facade(fluss_server, unique_name):
    path = fluss_fast.TablePath("fluss", unique_name("sw"))
    with sync.connect({"bootstrap.servers": fluss_server.bootstrap_servers}) as conn:
        admin = conn.get_admin()
        admin.create_table(path, fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA), bucket_count=1))
        table = conn.get_table(path)
        writer = table.new_append().create_writer()
        for i in range(5):
            writer.append({"id": i, "name": f"n{i}"})
        writer.flush()
        assert admin.list_offsets(path, [0], fluss_fast.OffsetSpec.latest()) == {0: 5}
        scanner = table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe(0, fluss_fast.EARLIEST_OFFSET)
        got = scanner.to_arrow()
        assert sorted(got.column("id").to_pylist()) == [0, 1, 2, 3, 4]
        admin.drop_table(path)
