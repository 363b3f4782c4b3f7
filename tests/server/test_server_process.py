"""ServerProcess: `fluss-fast server` as a child process, for scripts and pipelines."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import sync
from fluss_fast.server import ServerProcess


def test_serves_then_stops_and_removes_its_temporary_data():
    with ServerProcess(settings={"log.segment.file-size": "1mb"}) as srv:
        data_dir = srv.data_dir
        assert os.path.isdir(data_dir)
        conn = sync.connect({"bootstrap.servers": srv.bootstrap_servers})
        try:
            path = fluss.TablePath("fluss", "proc_t")
            schema = pa.schema([("id", pa.int64())])
            conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(schema)))
            table = conn.get_table(path)
            writer = table.new_append().create_writer()
            writer.write_arrow(pa.table({"id": list(range(100))}, schema=schema))
            writer.flush()
            scanner = table.new_scan().create_record_batch_log_scanner()
            scanner.subscribe(0, fluss.EARLIEST_OFFSET)
            assert scanner.to_arrow().column("id").to_pylist() == list(range(100))
        finally:
            conn.close()
        pid = srv.pid
    assert srv.pid is None and not os.path.exists(f"/proc/{pid}")  # stopped and reaped, not left behind
    assert not os.path.exists(data_dir)


def test_a_given_data_dir_is_kept(tmp_path):
    with ServerProcess(str(tmp_path / "d")) as srv:
        assert srv.data_dir == str(tmp_path / "d")
    assert (tmp_path / "d").is_dir()


def test_a_server_that_cannot_start_says_why(tmp_path):
    with pytest.raises(fluss.FlussError) as e:
        ServerProcess(listen="no-such-host.invalid:1", timeout=30).start()
    assert "did not start" in e.value.message and e.value.error_code == fluss.ErrorCode.CLIENT_ERROR
