"""The twin modules really select the compiled code unless FLUSS_FAST_NO_EXTENSIONS is set."""
import os
import subprocess
import sys

import pytest

from fluss_fast.codec._select import extensions_disabled

TWINS = {
    "crc32c": ["crc32c", "implementation"],
    "logbatch": ["BatchHeader", "ValidatedRecords", "build_batch", "parse_header", "crc_of",
                 "verify_crc", "iter_batches", "validate_records", "assign_offsets"],
    "murmur": ["fluss_murmur32", "int_murmur", "bucket_for_key", "buckets_for_keys",
               "paimon_bucket", "murmur3_32", "iceberg_bucket"],
    "columns": ["RowBatchBuilder"],
    "appendslot": ["HotSlot"],
    "kvcolumns": ["encode_kv_columns"],
    "rows": ["CompactedRowEncoder", "CompactedRowDecoder", "IndexedRowEncoder", "IndexedRowDecoder",
             "CompactedKeyEncoder"],
}

NO_EXT = extensions_disabled()


def _module(name):
    return __import__(f"fluss_fast.codec.{name}", fromlist=["_"])


@pytest.mark.skipif(NO_EXT, reason="FLUSS_FAST_NO_EXTENSIONS is set")
@pytest.mark.parametrize("name", sorted(TWINS))
def test_extensions_selected(name):
    from fluss_fast.codec import LOADED

    twin = _module(name)
    ext = __import__(f"fluss_fast.codec._{name}", fromlist=["_"])
    assert LOADED[f"_{name}"] is True
    for attr in TWINS[name]:
        assert getattr(twin, attr) is getattr(ext, attr), attr
        assert getattr(twin, attr) is not getattr(twin, attr + "_py"), attr


@pytest.mark.skipif(not NO_EXT, reason="only meaningful with FLUSS_FAST_NO_EXTENSIONS")
@pytest.mark.parametrize("name", sorted(TWINS))
def test_pure_selected_in_this_process(name):
    from fluss_fast.codec import LOADED, NO_EXTENSIONS

    twin = _module(name)
    assert NO_EXTENSIONS is True and LOADED[f"_{name}"] is False
    for attr in TWINS[name]:
        assert getattr(twin, attr) is getattr(twin, attr + "_py"), attr


def test_env_var_selects_pure_twins():
    script = (
        "import importlib, sys\n"
        "from fluss_fast.codec import crc32c, LOADED, NO_EXTENSIONS\n"
        f"twins = {TWINS!r}\n"
        "mods = {m: importlib.import_module('fluss_fast.codec.' + m) for m in twins}\n"
        "assert NO_EXTENSIONS is True\n"
        "for mod, names in twins.items():\n"
        "    assert LOADED['_' + mod] is False, mod\n"
        "    for n in names:\n"
        "        m = mods[mod]\n"
        "        assert getattr(m, n) is getattr(m, n + '_py'), (mod, n)\n"
        "        assert getattr(m, n).__module__ == 'fluss_fast.codec.' + mod, (mod, n)\n"
        "assert crc32c.implementation() == 'python'\n"
        "print('pure-ok')\n"
    )
    env = dict(os.environ, FLUSS_FAST_NO_EXTENSIONS="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=root,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "pure-ok"
