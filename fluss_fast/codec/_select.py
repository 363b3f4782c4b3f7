"""Chooses, once per twin module, between the Cython extension and the pure-Python code.

The decision is made at the bottom of each pure module (aiokafka style) so that importing
``fluss_fast.codec.crc32c`` always yields one consistent set of functions, whichever is in use.
"""
from __future__ import annotations

import importlib
import os
from typing import Dict, Iterable

NO_EXTENSIONS = bool(os.environ.get("FLUSS_FAST_NO_EXTENSIONS"))

#: extension module name (as passed to :func:`pick`) -> whether its names replaced the pure ones
LOADED: Dict[str, bool] = {}


def pick(ext_module_name: str, py_namespace: dict, names: Iterable[str]) -> None:
    """Overwrite ``names`` in ``py_namespace`` with the same names from the extension, if usable.

    ``ext_module_name`` is either a bare name relative to this package (``"_crc32c"``) or a full
    dotted module path. The extension is used all-or-nothing: a stale build that lacks one of the
    names is ignored entirely rather than mixing implementations.
    """
    names = list(names)
    if NO_EXTENSIONS:
        LOADED[ext_module_name] = False
        return
    full_name = ext_module_name if "." in ext_module_name else f"{__package__}.{ext_module_name}"
    try:
        module = importlib.import_module(full_name)
    except ImportError:
        LOADED[ext_module_name] = False
        return
    if not all(hasattr(module, name) for name in names):
        LOADED[ext_module_name] = False
        return
    for name in names:
        py_namespace[name] = getattr(module, name)
    LOADED[ext_module_name] = True
