"""RocksDB (rocksdict) is the ``server`` extra: the client never imports it, and a server started
without it stops with one line that names the extra.

The client checks run in a fresh interpreter, as the test process itself has long imported the
server (and so rocksdict) by the time these tests run.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[2]
HINT = "pip install 'fluss-fast[server]'"

# A client round trip through a log table and a primary-key table: connect, admin, append, scan,
# upsert, lookup, snapshot. Exits 3 (and names the culprit) if rocksdict was imported on the way.
CLIENT = textwrap.dedent("""
    import asyncio, sys
    import pyarrow as pa
    import fluss_fast as fluss

    # None, not a module, where the test has made rocksdict unimportable
    assert sys.modules.get("rocksdict") is None, "import fluss_fast imported rocksdict"

    async def main(bootstrap, name):
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
        try:
            admin = conn.get_admin()
            await admin.create_database("fluss", ignore_if_exists=True)
            schema = pa.schema([("id", pa.int32()), ("name", pa.string())])
            log_path = fluss.TablePath("fluss", name + "_log")
            await admin.create_table(log_path, fluss.TableDescriptor(fluss.Schema(schema), bucket_count=2))
            table = await conn.get_table(log_path)
            writer = table.new_append().create_writer()
            for i in range(10):
                writer.append({"id": i, "name": f"n{i}"})
            await writer.flush()
            scanner = await table.new_scan().create_record_batch_log_scanner()
            scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(2)})
            assert (await scanner.to_arrow()).num_rows == 10

            pk_path = fluss.TablePath("fluss", name + "_pk")
            await admin.create_table(pk_path, fluss.TableDescriptor(fluss.Schema(schema, primary_keys=["id"]),
                                                                    bucket_count=2))
            table = await conn.get_table(pk_path)
            writer = table.new_upsert().create_writer()
            for i in range(10):
                writer.upsert({"id": i, "name": f"n{i}"})
            await writer.flush()
            lookuper = table.new_lookup().create_lookuper()
            assert await lookuper.lookup({"id": 3}) == {"id": 3, "name": "n3"}
            for path in (log_path, pk_path):
                await admin.drop_table(path, ignore_if_not_exists=True)
        finally:
            await conn.close()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    if sys.modules.get("rocksdict") is not None:
        print("the client imported rocksdict", file=sys.stderr)
        sys.exit(3)
""")

# rocksdict made unimportable for the interpreter that runs the snippet after it
NO_ROCKSDICT = "import sys; sys.modules['rocksdict'] = None\n"


def run_python(code: str, *args, cwd=None, timeout=60):
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def test_rocksdict_is_the_server_extra_only():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("rocksdict") for d in project["dependencies"])
    extras = project["optional-dependencies"]
    # the extras whose users start servers (tests, contributors, benchmarks) carry it themselves
    for name in ("server", "test", "dev", "bench"):
        assert any(d.startswith("rocksdict") for d in extras[name]), name


def test_import_fluss_fast_does_not_import_rocksdict(tmp_path):
    out = run_python("import sys, fluss_fast, fluss_fast.sync\n"
                     "assert 'rocksdict' not in sys.modules, 'rocksdict imported'\n", cwd=tmp_path)
    assert out.returncode == 0, out.stderr


def test_client_round_trip_does_not_import_rocksdict(fluss_server, unique_name, tmp_path):
    out = run_python(CLIENT, fluss_server.bootstrap_servers, unique_name("noroc"), cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_client_works_where_rocksdict_cannot_be_imported(fluss_server, unique_name, tmp_path):
    out = run_python(NO_ROCKSDICT + CLIENT, fluss_server.bootstrap_servers, unique_name("noroc"), cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_server_without_rocksdict_says_which_extra_in_one_line(tmp_path):
    code = NO_ROCKSDICT + ("from fluss_fast.cli import main\n"
                           f"sys.exit(main(['server', '--data-dir', {str(tmp_path / 'data')!r}, "
                           "'--listen', '127.0.0.1:0']))\n")
    out = run_python(code, cwd=tmp_path)
    assert out.returncode == 1
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fluss-fast server: ") and HINT in lines[0], out.stderr
    assert not (tmp_path / "data").exists(), "the server touched its data dir before checking for rocksdict"


async def test_local_server_without_rocksdict_raises_naming_the_extra(monkeypatch, tmp_path):
    from fluss_fast.server import LocalServer
    from fluss_fast.server.rocksdb_options import RocksDBMissing

    monkeypatch.setitem(sys.modules, "rocksdict", None)
    with pytest.raises(RocksDBMissing, match=r"pip install 'fluss-fast\[server\]'"):
        async with LocalServer(data_dir=str(tmp_path / "data")):
            pass
