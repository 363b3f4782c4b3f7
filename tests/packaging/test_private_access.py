"""The tests observe the package through its public surface, not its private attributes.

A test that reads ``table._meta`` or ``conn._ctx._conns`` checks how the code is built today, not
what a user sees, and breaks on every refactor that keeps the behaviour. This file counts, per test
file, the accesses to private names (ast-based, so comments and strings do not count):

* an attribute whose name starts with one underscore (``x._meta``), on anything but ``self``/``cls``;
* ``getattr``/``setattr``/``hasattr``/``delattr`` (``monkeypatch.setattr`` too) with such a name;
* an import of such a name, or from such a module, of ``fluss_fast`` (``from fluss_fast.x import _y``).

and fails when a file has more than ``BASELINE`` allows (a file not listed allows none). The baseline
may only shrink: what is left are white-box tests of codecs and private helpers, listed by category.
A behaviour a test needs to observe goes through the public API (``get_table_info()``, ``metrics()``,
admin calls, hand-built requests on an ``rpc.connection.Connection`` of the test's own) or a public,
documented accessor (``FlussTable.bucket_leaders()``, ``FlussConnection.server_connections()``).
"""
from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(ROOT, "tests")

BASELINE = {
    # codec white-box: pure-vs-Cython twin byte checks, private helpers, the body and frame pools
    "codec/test_arrowlog.py": 1,
    "codec/test_bodypool.py": 14,
    "codec/test_columns.py": 3,
    "codec/test_crc32c.py": 3,
    "codec/test_ipcbody.py": 6,
    "codec/test_kv_codecs.py": 1,
    "codec/test_lake_keys.py": 1,
    "codec/test_rowarrow.py": 1,
    "codec/test_rows.py": 2,
    "codec/test_twins_loaded.py": 2,
    "codec/test_upsertrow.py": 3,
    "codec/test_varint.py": 1,
    # registries that docs/stub/packaging checks read whole: config._OPTIONS, codec._select, rpc rule tables
    "cli/test_cli.py": 3,
    "client/test_config.py": 1,
    "compat/test_api_surface.py": 1,
    "compat/test_typed_surface.py": 2,
    "packaging/test_docs_current.py": 2,
    "packaging/test_packaging.py": 1,
    "rpc/test_rules_once.py": 8,
    # fault injection through private seams: older server's APIs, hidden leaders, lost writer state, fuzzing
    "client/test_client_kv.py": 4,
    "client/test_codec_pool_order.py": 2,
    "client/test_leader_wait.py": 8,
    "fault/test_fault_fuzz.py": 4,
    # the embedded server's own tests of its internals: connections, read pools, RocksDB, listeners
    "server/test_kv_keyfilter.py": 1,
    "server/test_logstore.py": 5,
    "server/test_reliability.py": 3,
    "server/test_server_extra.py": 9,
    # the bench harness's internals, and codec internals the benchmarks time
    "bench/test_bench_cold.py": 3,
    "bench/test_bench_smoke.py": 2,
    "benchmarks/test_codec_benchmarks.py": 1,
    "benchmarks/test_rowarrow_benchmarks.py": 1,
    # unit tests of private client parts a user cannot see: accumulator, encode-ahead, decode order, pools
    "client/test_client_write.py": 5,
    "client/test_fetcher_edges.py": 3,
    "client/test_metadata_types.py": 1,
    "client/test_poll_ahead.py": 2,
    "client/test_receive_pool.py": 3,
    "client/test_scan_parts.py": 15,
    "client/test_scan_records.py": 5,
    "client/test_scan_schema_change.py": 3,
    "client/test_write_ahead.py": 8,
    "client/test_write_path.py": 16,
    "spark/test_offsets_options.py": 3,
}

_ACCESSORS = frozenset({"getattr", "setattr", "hasattr", "delattr"})
# the standard library's public names that start with an underscore
_NOT_PRIVATE = frozenset({("os", "_exit"), ("sys", "_getframe")})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_accesses(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for every private access in one test module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner not in ("self", "cls") and (owner, node.attr) not in _NOT_PRIVATE:
                found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "fluss_fast":
            assert node.module is not None
            if any(_private(part) for part in node.module.split(".")):
                found.append((node.lineno, f"from {node.module} import ..."))
            else:
                found.extend((node.lineno, f"import {a.name}") for a in node.names if _private(a.name))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, f"import {a.name}") for a in node.names
                         if a.name.split(".")[0] == "fluss_fast" and any(map(_private, a.name.split("."))))
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            func, name = node.func, node.args[1]
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if (called in _ACCESSORS and isinstance(name, ast.Constant) and isinstance(name.value, str)
                    and _private(name.value)):
                found.append((node.lineno, f"{called}(..., {name.value!r})"))
    return found


def counts() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for folder, _dirs, files in os.walk(TESTS):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    hits = private_accesses(f.read())
                if hits:
                    out[os.path.relpath(path, TESTS).replace(os.sep, "/")] = hits
    return out


def test_no_test_file_reaches_further_into_private_names():
    over = {path: hits for path, hits in counts().items() if len(hits) > BASELINE.get(path, 0)}
    report = [f"tests/{path}: {len(hits)} private accesses, baseline {BASELINE.get(path, 0)}: "
              + ", ".join(f"{line}: {what}" for line, what in hits) for path, hits in sorted(over.items())]
    assert not report, ("observe through the public API (or add a documented public accessor) instead:\n"
                        + "\n".join(report))


def test_the_baseline_names_existing_files():
    missing = [path for path in BASELINE if not os.path.exists(os.path.join(TESTS, path))]
    assert not missing, f"drop these from BASELINE: {missing}"


def test_the_counter_sees_each_kind_of_access():
    source = ("from fluss_fast.codec import _select\n"
              "from fluss_fast.codec._select import twin\n"
              "import fluss_fast.codec._select\n"
              "x = table._meta.table_id\n"
              "monkeypatch.setattr(mod, '_LIMIT', 1)\n"
              "getattr(conn, '_ctx')\n"
              "self._own = cls._own = table.__class__ = getattr(x, 'public')\n"
              "os._exit(0)\n")
    assert sorted(private_accesses(source)) == [
        (1, "import _select"), (2, "from fluss_fast.codec._select import ..."),
        (3, "import fluss_fast.codec._select"), (4, "._meta"), (5, "setattr(..., '_LIMIT')"),
        (6, "getattr(..., '_ctx')")]
