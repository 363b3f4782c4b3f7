"""The twin modules really select the compiled code unless FLUSS_FAST_NO_EXTENSIONS is set.

The list of twins and of the names each one hands to its extension comes from the registry in
``codec/_select.py`` (the ``_X.pyx`` files on disk and the ``pick`` calls they answer), so a new
extension is checked without editing this file.
"""
import importlib
import os
import subprocess
import sys

import pytest

from fluss_fast.codec import _select
from fluss_fast.codec._select import extensions_disabled

NO_EXT = extensions_disabled()
TWINS = _select.twin_modules()
_select.load_report()


def _ext_module(key):
    pure = TWINS[key]
    return importlib.import_module(pure.rsplit(".", 1)[0] + "." + key)


def _selections(key):
    """(pure module, names) pairs the extension ``key`` serves; at least one, or the twin never asks."""
    picked = _select.PICKED.get(key, {})
    assert picked, f"{key}: no pure module calls pick() for it"
    return [(importlib.import_module(mod), names) for mod, names in sorted(picked.items())]


def test_registry_sees_every_pyx_in_the_tree():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    on_disk = set()
    for _dirpath, _dirs, files in os.walk(os.path.join(root, "fluss_fast")):
        on_disk.update(f[:-4] for f in files if f.startswith("_") and f.endswith(".pyx"))
    assert on_disk and on_disk <= set(TWINS)
    # The two that an older hand-kept list here missed.
    assert {"_records", "_kvcolumns"} <= set(TWINS)


@pytest.mark.skipif(NO_EXT, reason="FLUSS_FAST_NO_EXTENSIONS is set")
@pytest.mark.parametrize("key", sorted(TWINS))
def test_extensions_selected(key):
    ext = _ext_module(key)
    assert _select.LOADED[key] is True
    for twin, names in _selections(key):
        for attr in names:
            assert getattr(twin, attr) is getattr(ext, attr), (twin.__name__, attr)
            assert getattr(twin, attr) is not getattr(twin, attr + "_py"), (twin.__name__, attr)


@pytest.mark.skipif(not NO_EXT, reason="only meaningful with FLUSS_FAST_NO_EXTENSIONS")
@pytest.mark.parametrize("key", sorted(TWINS))
def test_pure_selected_in_this_process(key):
    assert _select.NO_EXTENSIONS is True and _select.LOADED[key] is False
    for twin, names in _selections(key):
        for attr in names:
            assert getattr(twin, attr) is getattr(twin, attr + "_py"), (twin.__name__, attr)


def test_env_var_selects_pure_twins():
    script = (
        "import importlib\n"
        "from fluss_fast.codec import _select\n"
        "from fluss_fast.codec.wire import crc32c\n"
        "report = _select.load_report()\n"
        "assert _select.NO_EXTENSIONS is True\n"
        "assert set(report) == set(_select.twin_modules()), report\n"
        "for key, picked in _select.PICKED.items():\n"
        "    assert report[key] is False, key\n"
        "    for mod, names in picked.items():\n"
        "        m = importlib.import_module(mod)\n"
        "        for n in names:\n"
        "            assert getattr(m, n) is getattr(m, n + '_py'), (mod, n)\n"
        "            assert getattr(m, n).__module__ == mod, (mod, n)\n"
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


_PLAIN = (bool, int, float, str, bytes, type(None))


def _is_constant(value):
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_is_constant(v) for v in value)
    if isinstance(value, dict):
        return all(_is_constant(k) or isinstance(k, type) or hasattr(k, "name") for k in value) and \
            all(_is_constant(v) for v in value.values())
    return False


def _shared_facts(ext, twins):
    """Names both the extension and one of its pure twins define: plain constants (numbers, texts,
    tuples/dicts of them) compared by value, exception classes by identity (one class, one message)."""
    consts, errors = [], []
    for name, value in vars(ext).items():
        if name.startswith("__"):
            continue
        for twin in twins:
            if not hasattr(twin, name):
                continue
            other = getattr(twin, name)
            if isinstance(other, type) and issubclass(other, BaseException):
                errors.append((twin, name, value, other))
            elif _is_constant(value):
                consts.append((twin, name, value, other))
    return consts, errors


@pytest.mark.skipif(NO_EXT, reason="FLUSS_FAST_NO_EXTENSIONS is set")
@pytest.mark.parametrize("key", sorted(TWINS))
def test_constants_and_error_types_equal_their_twins(key):
    ext = _ext_module(key)
    twins = [twin for twin, _names in _selections(key)]
    consts, errors = _shared_facts(ext, twins)
    for twin, name, value, other in consts:
        assert value == other and type(value) is type(other), (twin.__name__, name, value, other)
    for twin, name, value, other in errors:
        # None: a slot the extension fills with the twin's class on first use (columns.BadValue).
        assert value is other or value is None, (twin.__name__, name, value)


@pytest.mark.skipif(NO_EXT, reason="FLUSS_FAST_NO_EXTENSIONS is set")
def test_constant_check_is_not_empty():
    found = set()
    for key in TWINS:
        consts, errors = _shared_facts(_ext_module(key), [t for t, _n in _selections(key)])
        found.update(name for _t, name, _v, _o in consts + errors)
    # The frame geometry lives in both logbatch twins; the KV column encoder raises the twin's error.
    assert {"LOG_OVERHEAD", "V1_HEADER_SIZE", "NO_WRITER_ID", "KeyNullError"} <= found
