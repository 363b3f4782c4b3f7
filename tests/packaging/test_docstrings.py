"""Every public name of the API has a docstring: the API reference (docs/api/) is generated from them.

The public API is what ``fluss_fast.__all__`` exports, plus the public names of the two modules it
exports (``fluss_fast.sync`` and ``fluss_fast.server``'s ``__all__``); for a class, every public method
and property it defines or inherits from a fluss_fast base (inherited from ``object`` or a third-party
base does not count: its docstring is not ours to write).
"""
from __future__ import annotations

import inspect
import types

import fluss_fast


def _ours(obj) -> bool:
    return (getattr(obj, "__module__", "") or "").startswith("fluss_fast")


def _members(cls):
    """(name, object) of the public methods and properties ``cls`` gets from fluss_fast classes."""
    seen = set()
    for klass in cls.__mro__:
        if not _ours(klass):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            # getset and method descriptors are what a Cython twin's properties and methods are
            if (isinstance(value, property) or inspect.isfunction(value) or inspect.isgetsetdescriptor(value)
                    or inspect.ismethoddescriptor(value) or type(value).__name__ == "cython_function_or_method"):
                yield name, value


def _public_objects():
    seen = set()
    for qual, obj in _all_public():
        if id(obj) not in seen:  # sync re-exports Config: checked once, under its first name
            seen.add(id(obj))
            yield qual, obj


def _all_public():
    for name in fluss_fast.__all__:
        obj = getattr(fluss_fast, name)
        if isinstance(obj, types.ModuleType):
            yield f"fluss_fast.{name}", obj
            for sub in getattr(obj, "__all__", ()):
                value = getattr(obj, sub)
                if _ours(value):
                    yield f"fluss_fast.{name}.{sub}", value
        else:
            yield f"fluss_fast.{name}", obj


def _undocumented():
    missing = []
    for qual, obj in _public_objects():
        if inspect.isclass(obj):
            if not obj.__dict__.get("__doc__"):
                missing.append(qual)
            for name, member in _members(obj):
                if not (member.__doc__ or "").strip():
                    missing.append(f"{qual}.{name}")
        elif (callable(obj) or isinstance(obj, types.ModuleType)) and not (getattr(obj, "__doc__", None) or "").strip():
            missing.append(qual)
    return missing


def test_every_public_name_has_a_docstring():
    missing = _undocumented()
    assert not missing, f"{len(missing)} public name(s) without a docstring:\n  " + "\n  ".join(missing)


def test_the_walk_sees_the_api():
    # guards the walk itself: a change that made it see nothing would pass the test above
    names = {qual for qual, _ in _public_objects()}
    assert {"fluss_fast.FlussAdmin", "fluss_fast.LogScanner", "fluss_fast.sync.connect",
            "fluss_fast.server.LocalServer"} <= names
    # ScanRecord is the compiled twin's class unless FLUSS_FAST_NO_EXTENSIONS is set
    assert {"offset", "row", "change_type"} <= {n for n, _ in _members(fluss_fast.ScanRecord)}
    members = {n for n, _ in _members(fluss_fast.LogScanner)}
    assert {"poll", "to_arrow", "subscribe"} <= members
    assert {"writer_acks", "bootstrap_servers"} <= {n for n, _ in _members(fluss_fast.Config)}
