"""`fluss-fast cluster` as a user runs it: READY on stdout once every tablet server is registered,
clients of both kinds served over plaintext and SASL, SIGTERM leaves no JVM behind; and one clear
line with a non-zero exit when java or mvn is missing or the download fails."""
from __future__ import annotations

import asyncio
import os
import select
import shutil
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest

import fluss_fast

from java_util import require_java


def _jvms_under(data_dir: str) -> list:
    """The JVMs whose command line names ``data_dir``, read from /proc (ps truncates long lines)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"java") and any(data_dir.encode() in a for a in args):
            found.append(int(pid))
    return found


def _read_ready(proc, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if line.startswith("READY") or not line:
                return line
        if proc.poll() is not None:
            return ""
    return ""


@pytest.mark.timeout(300)
def test_cluster_command_serves_both_listeners_and_stops_clean(tmp_path):
    require_java()
    data_dir = str(tmp_path / "cluster")
    proc = subprocess.Popen([sys.executable, "-m", "fluss_fast", "cluster", "--data-dir", data_dir,
                             "--tablet-servers", "2", "--sasl-user", "alice=alice-pw",
                             "-c", "default.bucket.number=2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = _read_ready(proc, 240)
        assert line.startswith("READY "), (line, proc.poll())
        fields = dict(part.split("=", 1) for part in line.split()[1:])
        plain, sasl = fields["bootstrap.servers"], fields["sasl.bootstrap.servers"]

        async def round_trip():
            cfg = fluss_fast.Config({"bootstrap.servers": sasl, "security.protocol": "sasl",
                                     "security.sasl.username": "alice", "security.sasl.password": "alice-pw"})
            async with await fluss_fast.FlussConnection.create(cfg) as conn:
                admin = conn.get_admin()
                nodes = await admin.get_server_nodes()
                assert sorted(n.server_type for n in nodes) == ["CoordinatorServer", "TabletServer", "TabletServer"]
                path = fluss_fast.TablePath("fluss", "cli_round_trip")
                schema = fluss_fast.Schema(pa.schema([("id", pa.int64())]))
                await admin.create_table(path, fluss_fast.TableDescriptor(schema), ignore_if_exists=True)
                table = await conn.get_table(path)
                assert table.get_table_info().num_buckets == 2  # the -c setting reached the servers
                writer = table.new_append().create_writer()
                for i in range(100):
                    writer.append({"id": i})
                await writer.flush()
            cfg = fluss_fast.Config({"bootstrap.servers": plain})
            async with await fluss_fast.FlussConnection.create(cfg) as conn:
                table = await conn.get_table(fluss_fast.TablePath("fluss", "cli_round_trip"))
                scanner = await table.new_scan().create_record_batch_log_scanner()
                scanner.subscribe_buckets({b: fluss_fast.EARLIEST_OFFSET for b in range(2)})
                assert sorted((await scanner.to_arrow()).column("id").to_pylist()) == list(range(100))

        asyncio.run(round_trip())
        assert len(_jvms_under(data_dir)) == 4  # ZooKeeper, the coordinator, two tablet servers
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0
        assert _jvms_under(data_dir) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()


def _run_cli(args, env_path, tmp_path):
    env = dict(os.environ, PATH=env_path, FLUSS_FAST_CACHE=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "fluss_fast", "cluster", "--data-dir", str(tmp_path / "d"), *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_missing_java_is_one_line(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    res = _run_cli([], str(bin_dir), tmp_path)
    assert res.returncode == 1 and res.stdout == ""
    errors = [ln for ln in res.stderr.splitlines() if "starting Fluss" not in ln]
    assert errors == ["fluss-fast cluster: `java` is not on PATH; fluss-fast cluster runs the Fluss servers on a "
                      "JVM (Java 17: apt-get install openjdk-17-jre-headless)"]


def test_missing_mvn_is_one_line(tmp_path):
    require_java()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(shutil.which("java"), bin_dir / "java")
    res = _run_cli([], str(bin_dir), tmp_path)
    assert res.returncode == 1
    errors = [ln for ln in res.stderr.splitlines() if "starting Fluss" not in ln]
    assert len(errors) == 1 and "`mvn` is not on PATH" in errors[0], res.stderr


def test_failed_download_is_one_line(tmp_path):
    require_java()
    res = _run_cli(["--fluss-version", "0.0.0-no-such-release"], os.environ["PATH"], tmp_path)
    assert res.returncode == 1
    errors = [ln for ln in res.stderr.splitlines() if "starting Fluss" not in ln]
    assert len(errors) == 1 and errors[0].startswith(
        "fluss-fast cluster: could not download Fluss 0.0.0-no-such-release with Maven:"), res.stderr
    assert not (tmp_path / "cache" / "fluss-0.0.0-no-such-release").exists() or not any(
        (tmp_path / "cache" / "fluss-0.0.0-no-such-release").iterdir())
