"""The layer table of docs/contributing/architecture.md holds for every import in the package.

The page is the contributors' map of the layers; this test reads its "may import" table and walks
every ``import`` of ``fluss_fast`` (function-level and TYPE_CHECKING ones too), so the map and the code
cannot drift apart: an import across a layer fails here, and so does a new top-level module that the
page does not place.
"""
from __future__ import annotations

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "fluss_fast")
PAGE = os.path.join(ROOT, "docs", "contributing", "architecture.md")


def allowed_imports() -> dict:
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    section = text.split("### Who may import whom", 1)[1].split("\n## ", 1)[0]
    rules = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*`([\w_]+)`\s*\|(.*)\|\s*$", line)
        if m:
            rules[m.group(1)] = set(re.findall(r"`([\w_]+)`", m.group(2)))
    return rules


def unit_of(dotted: str) -> str:
    """``fluss_fast.client.scan.fetcher`` -> ``client``; ``fluss_fast`` -> ``__init__``."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def package_modules():
    for folder, _dirs, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                is_pkg = name == "__init__.py"
                yield path, rel[: -len(".__init__")] if is_pkg else rel, is_pkg


def imported_modules(path: str, module: str, is_pkg: bool):
    """(line, dotted name) of every fluss_fast module or name the file imports."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = module if is_pkg else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "fluss_fast":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "fluss_fast":
                continue
            if target == "fluss_fast":
                # `from fluss_fast import errors` names a unit; `from . import X` in __init__ too
                for alias in node.names:
                    yield node.lineno, f"fluss_fast.{alias.name}"
            else:
                yield node.lineno, target


def top_level_units() -> set:
    # `__version__` is defined in __init__ and read by rpc (the client's name in ApiVersions) and
    # the cli: a constant every layer may read, placed on the page as a unit of its own
    units = {"__version__"}
    for entry in os.listdir(PACKAGE):
        full = os.path.join(PACKAGE, entry)
        if entry.endswith(".py"):
            units.add(entry[:-3])
        elif os.path.isdir(full) and os.path.exists(os.path.join(full, "__init__.py")):
            units.add(entry)
    return units


def test_every_unit_is_placed_on_the_page():
    rules = allowed_imports()
    assert rules, "no table found under 'Who may import whom'"
    missing = top_level_units() - set(rules)
    assert not missing, f"place these in docs/contributing/architecture.md's table: {sorted(missing)}"
    stale = set(rules) - top_level_units()
    assert not stale, f"the page places units that no longer exist: {sorted(stale)}"


def test_imports_follow_the_layers():
    rules = allowed_imports()
    units = top_level_units()
    wrong = []
    for path, module, is_pkg in package_modules():
        src = unit_of(module)
        for line, target in imported_modules(path, module, is_pkg):
            dst = unit_of(target)
            if dst not in units:  # `from fluss_fast import FlussError`: a name of the package itself
                dst = "__init__"
            if dst != src and dst not in rules.get(src, set()):
                wrong.append(f"{os.path.relpath(path, ROOT)}:{line}: {src} imports {target} ({dst})")
    assert not wrong, "imports across the layers of docs/contributing/architecture.md:\n" + "\n".join(wrong)


def test_the_check_sees_a_violation(tmp_path):
    # the walker resolves relative imports: a client module reaching the server is caught
    bad = tmp_path / "mod.py"
    bad.write_text("from ...server.app import serve\nimport fluss_fast.server\n")
    found = [t for _, t in imported_modules(str(bad), "fluss_fast.client.scan.mod", False)]
    assert found == ["fluss_fast.server.app", "fluss_fast.server"]
    assert {unit_of(t) for t in found} == {"server"}
    assert "server" not in allowed_imports()["client"]
