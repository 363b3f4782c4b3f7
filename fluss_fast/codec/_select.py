"""Chooses, once per twin module, between the Cython extension and the pure-Python code.

The decision is made at the bottom of each pure module (aiokafka style) so that importing
``fluss_fast.codec.wire.crc32c`` always yields one consistent set of functions, whichever is in use.

This module imports nothing from the package: ``setup.py`` loads it by path to apply the same
``FLUSS_FAST_NO_EXTENSIONS`` rule as the runtime.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import os
from collections.abc import Iterable, Mapping

ENV_VAR = "FLUSS_FAST_NO_EXTENSIONS"
_FALSE_WORDS = ("", "0", "false", "no", "off")


def extensions_disabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``FLUSS_FAST_NO_EXTENSIONS`` asks for the pure-Python twins.

    Unset, empty, ``0``, ``false``, ``no`` and ``off`` (any case) leave the extensions on, so that
    ``FLUSS_FAST_NO_EXTENSIONS=0`` reads as what it says; any other value turns them off.
    """
    value = (os.environ if environ is None else environ).get(ENV_VAR, "")
    return value.strip().lower() not in _FALSE_WORDS


NO_EXTENSIONS = extensions_disabled()

#: extension module's own name (``"_crc32c"``, ``"_records"``) -> whether its names replaced the pure ones.
#: Bare names are unique across the package (a test checks), so one spelling serves every caller.
LOADED: dict[str, bool] = {}

#: extension module's own name -> {dotted name of a pure module it serves -> the names that module
#: offers to the extension}. Recorded whether or not the extension is in use, so a test can check
#: every selection without keeping its own list of names.
PICKED: dict[str, dict[str, tuple[str, ...]]] = {}


def _key(ext_module_name: str) -> str:
    return ext_module_name.rsplit(".", 1)[-1]


def pick(ext_module_name: str, py_namespace: dict, names: Iterable[str]) -> None:
    """Overwrite ``names`` in ``py_namespace`` with the same names from the extension, if usable.

    ``ext_module_name`` is either a bare name in the calling module's package (``"_crc32c"``) or a full
    dotted module path. The extension is used all-or-nothing: a stale build that lacks one of the
    names is ignored entirely rather than mixing implementations. One extension may serve several
    pure modules; it counts as loaded only if every one of them took it.
    """
    key = _key(ext_module_name)
    names = list(names)
    PICKED.setdefault(key, {})[py_namespace.get("__name__", "?")] = tuple(names)
    ok = _pick(ext_module_name, py_namespace, names)
    LOADED[key] = ok and LOADED.get(key, True)


def _pick(ext_module_name: str, py_namespace: dict, names: list) -> bool:
    if NO_EXTENSIONS:
        return False
    # a bare name is the extension next to the pure module that asks for it
    package = py_namespace.get("__package__") or __package__
    full_name = ext_module_name if "." in ext_module_name else f"{package}.{ext_module_name}"
    try:
        module = importlib.import_module(full_name)
    except ImportError:
        return False
    if not all(hasattr(module, name) for name in names):
        return False
    for name in names:
        py_namespace[name] = getattr(module, name)
    return True


def twin_modules(root: str | None = None) -> dict[str, str]:
    """Every extension of the package (from its ``_X.pyx`` source or a built ``_X`` binary) ->
    the dotted name of its pure twin ``X``, found on disk so that a new twin needs no registration."""
    pkg_root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    suffixes = (".pyx",) + tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(pkg_root):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "__"))]
        rel = os.path.relpath(dirpath, os.path.dirname(pkg_root))
        package = rel.replace(os.sep, ".")
        for filename in filenames:
            if not filename.startswith("_") or filename.startswith("__"):
                continue
            for suffix in suffixes:
                if filename.endswith(suffix):
                    stem = filename[: -len(suffix)]
                    if os.path.exists(os.path.join(dirpath, stem[1:] + ".py")):
                        found[stem] = f"{package}.{stem[1:]}"
                    break
    return dict(sorted(found.items()))


def load_report() -> dict[str, bool]:
    """Import every twin so that each has made its choice; extension name -> whether it is in use."""
    for module in twin_modules().values():
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    return dict(sorted(LOADED.items()))
