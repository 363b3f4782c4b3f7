"""Rules of the tree that a reader should not have to re-check by hand:

* no module of the package over 800 lines (the generated protobuf module aside): a module that grows
  past it has more than one concern and splits along them;
* no duck typing in the embedded server (``hasattr`` / ``getattr``): its objects have known types,
  and a protobuf field is read by its name, not looked up;
* one byte-buffer toolkit (``codec/wire/bytebuf.pxd``): no compiled module grows memory with a
  ``realloc`` of its own.
"""
from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT = 800


def _sources(folder: str, endings=(".py", ".pyx", ".pxd", ".pxi")):
    for path_dir, _dirs, files in os.walk(os.path.join(ROOT, folder)):
        for name in files:
            if name.endswith(endings) and "_pb2" not in name:
                path = os.path.join(path_dir, name)
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, ROOT), f.read()


def test_no_module_over_the_limit():
    too_long = [f"{path}: {text.count(chr(10))} lines" for path, text in _sources("fluss_fast")
                if text.count("\n") > LIMIT]
    assert not too_long, f"modules over {LIMIT} lines: {too_long}"


def test_no_duck_typing_in_the_server():
    found = [f"{path}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)}"
             for path, text in _sources(os.path.join("fluss_fast", "server"))
             for m in re.finditer(r"\b(hasattr|getattr)\(", text)]
    assert not found, f"duck typing in the server: {found}"


def test_only_the_buffer_toolkit_reallocates():
    found = [f"{path}: {m.group(0)}" for path, text in _sources("fluss_fast", (".pyx", ".pxd", ".pxi"))
             if not path.endswith(os.path.join("wire", "bytebuf.pxd"))
             for m in re.finditer(r"\b(PyMem_Realloc|realloc)\b", text)]
    assert not found, f"grow memory through codec/wire/bytebuf.pxd instead: {found}"
