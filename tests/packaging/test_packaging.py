"""Packaging tells the truth: setup.py applies the runtime's FLUSS_FAST_NO_EXTENSIONS rule and fails
plainly (never silently) when an explicit `build_ext` cannot build; the wheel's data files cover
every Cython source, header and stub in the tree and no generated C; the license is an SPDX string."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest
import setuptools

from fluss_fast.codec import _select

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS_MAJOR = int(setuptools.__version__.split(".")[0])
MIN_SETUPTOOLS = 77


def setup_py(*args, env_extra=None, block_cython=False):
    env = dict(os.environ)
    env.pop("FLUSS_FAST_NO_EXTENSIONS", None)
    env.update(env_extra or {})
    prelude = "import sys; sys.modules['Cython'] = None; sys.modules['Cython.Build'] = None; " if block_cython else ""
    code = prelude + (f"import runpy; sys.argv = ['setup.py', *{list(args)!r}]; "
                      "runpy.run_path('setup.py', run_name='__main__')")
    if not block_cython:
        code = "import sys; " + code
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_setup_py_uses_the_runtime_rule():
    text = (ROOT / "setup.py").read_text()
    assert '"_select.py"' in text and "extensions_disabled" in text
    assert "os.environ.get(\"FLUSS_FAST_NO_EXTENSIONS\")" not in text


@pytest.mark.skipif(SETUPTOOLS_MAJOR >= MIN_SETUPTOOLS, reason="setuptools is new enough here")
def test_old_setuptools_is_named_plainly():
    out = setup_py("build_ext", "--inplace")
    assert out.returncode == 1
    assert f"setuptools >= {MIN_SETUPTOOLS} is needed" in out.stderr


@pytest.mark.skipif(SETUPTOOLS_MAJOR < MIN_SETUPTOOLS, reason=f"setup.py needs setuptools >= {MIN_SETUPTOOLS}")
def test_build_ext_without_cython_fails_plainly():
    out = setup_py("build_ext", "--inplace", block_cython=True)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Cython is not installed" in out.stderr and ".[dev]" in out.stderr


@pytest.mark.skipif(SETUPTOOLS_MAJOR < MIN_SETUPTOOLS, reason=f"setup.py needs setuptools >= {MIN_SETUPTOOLS}")
@pytest.mark.parametrize("value,refused", [("1", True), ("true", True), ("0", False), ("false", False)])
def test_build_ext_follows_no_extensions(value, refused):
    # With Cython blocked an accepted value gets as far as the Cython check, a refusing one stops earlier.
    out = setup_py("build_ext", "--inplace", env_extra={"FLUSS_FAST_NO_EXTENSIONS": value}, block_cython=True)
    assert out.returncode == 1
    assert ("nothing to build" in out.stderr) is refused, out.stderr
    assert ("Cython is not installed" in out.stderr) is not refused, out.stderr


@pytest.mark.skipif(SETUPTOOLS_MAJOR < MIN_SETUPTOOLS, reason=f"setup.py needs setuptools >= {MIN_SETUPTOOLS}")
@pytest.mark.timeout(300)
def test_build_ext_that_cannot_compile_fails_plainly(tmp_path):
    # A compiler that always fails; --force so that up-to-date modules are compiled too. Nothing is
    # copied into the tree when compiling fails, so the checkout's own builds stay as they were.
    out = setup_py("build_ext", "--inplace", "--force", "--build-temp", str(tmp_path / "t"),
                   "--build-lib", str(tmp_path / "l"), env_extra={"CC": "false"})
    assert out.returncode == 1, out.stdout + out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("fluss_fast build: ERROR: could not compile fluss_fast."), last
    for name in _select.twin_modules():
        assert name in last


def test_no_extensions_rule_matches_the_documented_values():
    for value in ("", "0", "false", "FALSE", "no", "off"):
        assert not _select.extensions_disabled({"FLUSS_FAST_NO_EXTENSIONS": value}), value
    for value in ("1", "true", "yes", "on", "anything"):
        assert _select.extensions_disabled({"FLUSS_FAST_NO_EXTENSIONS": value}), value


def _covered(path: str, patterns) -> bool:
    import fnmatch

    return any(fnmatch.fnmatch(os.path.basename(path), p) for p in patterns)


def test_package_data_ships_every_source_header_and_stub_but_no_generated_c():
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    everywhere = data["*"]
    for ext in ("pyx", "pxd", "pxi", "h", "pyi"):
        for path in glob.glob(str(ROOT / "fluss_fast" / "**" / f"*.{ext}"), recursive=True):
            assert _covered(path, everywhere), path
    assert "py.typed" in data["fluss_fast"]
    assert PYPROJECT["tool"]["setuptools"]["exclude-package-data"]["*"] == ["*.c"]


def test_every_extension_has_its_twin_and_a_unique_name():
    sources = glob.glob(str(ROOT / "fluss_fast" / "**" / "_*.pyx"), recursive=True)
    stems = [Path(s).stem for s in sources]
    assert len(stems) == len(set(stems)), "LOADED keys are bare module names: they must be unique"
    assert set(stems) == set(_select.twin_modules())
    for src in sources:
        assert Path(src).with_name(Path(src).stem[1:] + ".py").is_file(), src


def test_project_metadata():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    requires = PYPROJECT["build-system"]["requires"]
    assert f"setuptools>={MIN_SETUPTOOLS}" in requires
    assert any(r.startswith("Cython>=3") and "<4" in r for r in requires)
    dev = " ".join(project["optional-dependencies"]["dev"])
    for tool in ("Cython", "ruff", "mypy", "pytest", "pyfluss"):
        assert tool in dev, tool
    assert set(project["optional-dependencies"]["test"]) <= set(project["optional-dependencies"]["dev"])
