"""A client process never loads the server.

Reading a remote (tiered) segment once pulled in ``fluss_fast.server`` (the remote file-system code
lived there), and with it the whole server stack: RocksDB bindings, the coordinator, the log store.
Two guards: a static one over the client-side packages' imports, and a real remote-segment read in
a child process where any ``fluss_fast.server`` import raises.
"""
from __future__ import annotations

import ast
import asyncio
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

import fluss_fast as ff

from conftest import ServerProcess
from remote_util import tiering_args, wait_tiered

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fluss_fast"
# the packages a client process loads; the server may import them, never the reverse
CLIENT_SIDE = ("client", "codec", "rpc", "metadata")
# modules at the package's top level that a client imports too
CLIENT_TOP = ("__init__.py", "config.py", "datatypes.py", "errors.py", "event_loop.py", "remote_fs.py",
              "sync.py")


def _server_imports(path: Path, root: Path = ROOT) -> list:
    """(line, module) of each import in ``path`` that resolves into ``fluss_fast.server``."""
    # a relative import counts from the module's package (an __init__'s own folder too)
    package = list(path.relative_to(root).parts[:-1])
    found = []
    for node in _run_time_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # "from fluss_fast import server" names the package in the imported names
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name == "fluss_fast.server" or name.startswith("fluss_fast.server."):
                found.append((node.lineno, name))
                break
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_time_nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:``, which never run (``fluss_fast.server``
    is named there for checkers, and loaded only when a user asks for it)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _client_side_files():
    for sub in CLIENT_SIDE:
        for ext in ("*.py", "*.pyx"):
            yield from (PACKAGE / sub).rglob(ext)
    for name in CLIENT_TOP:
        if (PACKAGE / name).exists():
            yield PACKAGE / name


def test_client_side_modules_do_not_import_the_server():
    offenders = []
    for path in _client_side_files():
        if path.suffix == ".pyx":
            # Cython syntax is not Python's; its imports are plain lines, a text search finds them
            text = path.read_text()
            if "fluss_fast.server" in text or "..server" in text:
                offenders.append(f"{path.relative_to(ROOT)}: mentions the server package")
            continue
        offenders += [f"{path.relative_to(ROOT)}:{line}: {mod}" for line, mod in _server_imports(path)]
    assert not offenders, "client-side modules import fluss_fast.server:\n" + "\n".join(offenders)


def test_the_static_check_sees_relative_imports(tmp_path):
    # the check above must not pass just because it cannot resolve "from ...server import x"
    probe = tmp_path / "fluss_fast" / "client" / "scan" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from ...server import remote\nfrom ..runtime import x\nimport fluss_fast.server.app\n"
                     "if TYPE_CHECKING:\n    from fluss_fast import server\n")
    assert sorted(_server_imports(probe, tmp_path)) == [(1, "fluss_fast.server"), (3, "fluss_fast.server.app")]


CHILD = textwrap.dedent('''
    import asyncio, sys

    class NoServer:
        """Any import of fluss_fast.server fails, as it would where the server is not installed."""
        def find_spec(self, name, path=None, target=None):
            if name == "fluss_fast.server" or name.startswith("fluss_fast.server."):
                raise ImportError(f"{name} imported by a client process")
            return None

    sys.meta_path.insert(0, NoServer())
    import fluss_fast as fluss

    async def main(bootstrap, db, rows):
        conn = await fluss.FlussConnection.create(fluss.Config({
            "bootstrap.servers": bootstrap, "scanner.remote-log.prefetch-num": "1"}))
        try:
            t = await conn.get_table(fluss.TablePath(db, "events"))
            sc = await t.new_scan().create_record_batch_log_scanner()
            sc.subscribe(0, fluss.EARLIEST_OFFSET)
            tab = await sc.to_arrow()
            assert tab.column("id").to_pylist() == list(range(rows)), tab.num_rows
        finally:
            await conn.close()
        # the read went through the remote reader, which is what used to load the server
        assert "fluss_fast.client.scan.remote" in sys.modules
        loaded = sorted(m for m in sys.modules if m.startswith("fluss_fast.server"))
        assert not loaded, loaded
        print("OK")

    asyncio.run(main(*sys.argv[1:3], int(sys.argv[3])))
''')

ROWS = 2000


def _fill(bootstrap: str, db: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])

    async def go():
        conn = await ff.FlussConnection.create(ff.Config({"bootstrap.servers": bootstrap}))
        try:
            adm = conn.get_admin()
            await adm.create_database(db, ignore_if_exists=True)
            path = ff.TablePath(db, "events")
            await adm.create_table(path, ff.TableDescriptor(ff.Schema(schema), bucket_count=1))
            w = (await conn.get_table(path)).new_append().create_writer()
            for lo in range(0, ROWS, 100):
                w.write_arrow_batch(pa.record_batch({"id": pa.array(range(lo, lo + 100), pa.int64()),
                                                     "name": [f"n{i}" for i in range(lo, lo + 100)]},
                                                    schema=schema))
                await w.flush()
        finally:
            await conn.close()

    asyncio.run(go())


@pytest.mark.timeout(180)
def test_remote_segment_read_without_the_server_package(tmp_path):
    # the server runs in its own process (ServerProcess), so only the reader's imports are tested
    srv = ServerProcess(sasl=False, extra_args=tiering_args(str(tmp_path / "remote"))).start()
    try:
        db = f"noserver_{uuid.uuid4().hex[:8]}"
        _fill(srv.bootstrap_servers, db)
        wait_tiered(srv.data_dir, db, "events", min_segments=2)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        out = subprocess.run([sys.executable, "-c", CHILD, srv.bootstrap_servers, db, str(ROWS)],
                             capture_output=True, text=True, timeout=120, env=env, cwd=str(ROOT))
        assert out.returncode == 0 and out.stdout.strip().endswith("OK"), out.stdout + out.stderr
    finally:
        srv.close()
