"""What a type checker sees of fluss_fast, against pyfluss 1.0.0's own stub file (its ``.pyi``, read
from the installed wheel, so names pyfluss adds or fluss_fast gains are checked without editing
this file): every function and method accepts the parameters the stub promises (same names, same
order, same kinds; optional where the stub's are), and returns an annotated type a checker can
follow. ``tests/typing/test_mypy.py`` runs mypy itself over code that uses the package."""
from __future__ import annotations

import ast
import importlib
import inspect
import os
from pathlib import Path

import pytest

import fluss_fast
import fluss_fast.config as ff_config
from fluss_fast.codec import _select

fluss = pytest.importorskip("fluss")
pytestmark = pytest.mark.compat

STUB = Path(fluss.__file__).parent / "__init__.pyi"
OUR_CONFIG_STUB = Path(ff_config.__file__).with_suffix(".pyi")

Param = tuple[str, str, bool]  # (name, kind, has a default)


def _stub_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _decorators(fn: ast.AST) -> list[str]:
    return [ast.unparse(d) for d in fn.decorator_list]


def _is_property(fn: ast.AST) -> bool:
    return any(d == "property" or d.endswith((".setter", ".getter", ".deleter")) for d in _decorators(fn))


def _stub_params(fn: ast.AST) -> list[Param]:
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [(arg.arg, "positional", d is not None) for arg, d in zip(positional, defaults, strict=True)]
    if a.vararg:
        out.append((a.vararg.arg, "*args", True))
    out += [(arg.arg, "keyword", d is not None) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        out.append((a.kwarg.arg, "**kwargs", True))
    return out


_KINDS = {inspect.Parameter.POSITIONAL_ONLY: "positional", inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
          inspect.Parameter.VAR_POSITIONAL: "*args", inspect.Parameter.KEYWORD_ONLY: "keyword",
          inspect.Parameter.VAR_KEYWORD: "**kwargs"}


def _our_params(obj) -> list[Param]:
    out = []
    for p in inspect.signature(obj).parameters.values():
        kind = _KINDS[p.kind]
        out.append((p.name, kind, p.default is not p.empty or kind in ("*args", "**kwargs")))
    return out


def _python_view(cls, name):
    """The Python-level definition a checker reads: for a Cython class its pure twin (``X_py``)."""
    attr = inspect.getattr_static(cls, name)
    if isinstance(attr, (staticmethod, classmethod)):
        return attr.__func__, True
    if isinstance(attr, property):
        return attr.fget, False
    if inspect.isfunction(attr):
        return attr, False
    compiled = inspect.getmodule(cls).__name__.rsplit(".", 1)[-1]
    pure = _select.twin_modules().get(compiled)
    twin = getattr(importlib.import_module(pure), cls.__name__ + "_py", None) if pure else None
    if twin is not None:
        return _python_view(twin, name)
    return attr, False


def _compatible(ours: list[Param], theirs: list[Param]) -> list[str]:
    """Why a call the stub allows would fail against ours (empty when every such call works)."""
    problems = []
    mine = list(ours)
    by_name = {p[0]: p for p in mine}
    accepts_any_keyword = any(k == "**kwargs" for _, k, _ in mine)
    for i, (name, kind, optional) in enumerate(theirs):
        if kind == "positional":
            if i >= len(mine) or mine[i][0] != name or mine[i][1] != "positional":
                problems.append(f"positional parameter {i} should be {name!r}")
            elif optional and not mine[i][2]:
                problems.append(f"{name!r} should be optional")
        elif kind == "keyword":
            if name in by_name:
                if optional and not by_name[name][2]:
                    problems.append(f"{name!r} should be optional")
            elif not accepts_any_keyword:
                problems.append(f"keyword {name!r} missing")
        elif not any(k == kind for _, k, _ in mine):
            problems.append(f"{kind} missing")
    stub_names = {p[0] for p in theirs}
    for name, _kind, optional in mine:
        if name not in stub_names and not optional:
            problems.append(f"extra parameter {name!r} must have a default")
    return problems


def _stub_callables() -> list[tuple[str, str, ast.AST]]:
    """(class or "", name, node) for every public function and method of pyfluss's stub."""
    out = []
    for node in _stub_tree(STUB).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(("", node.name, node))
        elif isinstance(node, ast.ClassDef):
            for fn in node.body:
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or "overload" in _decorators(fn):
                    continue
                if fn.name.startswith("__") and fn.name not in ("__init__",):
                    continue
                if fn.name.startswith("_") and not fn.name.startswith("__"):
                    continue
                out.append((node.name, fn.name, fn))
    return out


CALLABLES = _stub_callables()
METHODS = [(c, n, fn) for c, n, fn in CALLABLES if not _is_property(fn) and c != "Config"]
RETURNING = [(c, n, fn) for c, n, fn in CALLABLES
             if c != "Config" and not any(d.endswith(".setter") for d in _decorators(fn))
             and fn.returns is not None and ast.unparse(fn.returns) not in ("None", "Any")]


def _id(item):
    return f"{item[0]}.{item[1]}" if item[0] else item[1]


def test_stub_is_read():
    assert len(METHODS) > 100, "pyfluss's stub no longer parses as expected"


@pytest.mark.parametrize("item", METHODS, ids=_id)
def test_parameters_match_the_stub(item):
    cls_name, name, node = item
    if cls_name:
        cls = getattr(fluss_fast, cls_name)
        fn, static = _python_view(cls, name)
    else:
        fn, static = getattr(fluss_fast, name), True
    ours = _our_params(fn)
    theirs = _stub_params(node)
    if cls_name and not static:
        theirs, ours = theirs[1:], ours[1:]  # self
    problems = _compatible(ours, theirs)
    assert not problems, f"{_id(item)}{inspect.signature(fn)}: " + "; ".join(problems)


@pytest.mark.parametrize("item", RETURNING, ids=_id)
def test_return_types_are_visible(item):
    """A method whose stub returns a value has a return annotation (else a checker sees ``Any``)."""
    cls_name, name, _ = item
    fn = _python_view(getattr(fluss_fast, cls_name), name)[0] if cls_name else getattr(fluss_fast, name)
    if not inspect.isfunction(fn):
        pytest.skip(f"{_id(item)} is compiled and has no pure twin to read")
    assert "return" in fn.__annotations__, f"{_id(item)} has no return annotation"


def _class_properties(tree: ast.Module, cls: str) -> dict[str, str]:
    """property name -> annotated return type, for class ``cls`` of a stub."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {fn.name: ast.unparse(fn.returns) for fn in node.body
                    if isinstance(fn, ast.FunctionDef) and "property" in _decorators(fn)}
    raise AssertionError(f"no class {cls}")


def test_config_stub_covers_pyfluss_properties_with_their_types():
    theirs = _class_properties(_stub_tree(STUB), "Config")
    ours = _class_properties(_stub_tree(OUR_CONFIG_STUB), "Config")
    assert theirs, "pyfluss's Config has properties"
    assert {k: v for k, v in ours.items() if k in theirs} == theirs


def test_config_stub_names_every_runtime_property():
    """config.py makes its properties in a loop; its stub must name each one, with its kind's type."""
    runtime = {name for name, attr in vars(fluss_fast.Config).items() if isinstance(attr, property)}
    ours = _class_properties(_stub_tree(OUR_CONFIG_STUB), "Config")
    assert set(ours) == runtime
    kinds = {"str": "str", "assigner": "str", "read_preference": "str", "bool": "bool"}
    for _key, attr, _, kind, _ in ff_config._OPTIONS:
        assert ours[attr] == kinds.get(kind, "int"), attr


def test_public_names_of_the_config_module_are_in_its_stub():
    tree = _stub_tree(OUR_CONFIG_STUB)
    declared = {t.id for node in tree.body if isinstance(node, ast.AnnAssign) for t in [node.target]}
    declared |= {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    public = {n for n in vars(ff_config) if not n.startswith("_") and not inspect.ismodule(getattr(ff_config, n))}
    public -= {"annotations", "Any", "Dict", "Optional", "FlussError"}
    assert public <= declared, public - declared


def test_stubs_and_marker_ship():
    root = Path(fluss_fast.__file__).parent
    assert (root / "py.typed").is_file()
    assert OUR_CONFIG_STUB.is_file()
    assert os.path.basename(STUB) == "__init__.pyi"
