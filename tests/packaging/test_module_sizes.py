"""No module of the package over 800 lines (the generated protobuf module aside): a module that
grows past it has more than one concern and splits along them."""
from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT = 800


def test_no_module_over_the_limit():
    too_long = []
    for folder, _dirs, files in os.walk(os.path.join(ROOT, "fluss_fast")):
        for name in files:
            if name.endswith((".py", ".pyx", ".pxd", ".pxi")) and "_pb2" not in name:
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    lines = sum(1 for _ in f)
                if lines > LIMIT:
                    too_long.append(f"{os.path.relpath(path, ROOT)}: {lines} lines")
    assert not too_long, f"modules over {LIMIT} lines: {too_long}"
