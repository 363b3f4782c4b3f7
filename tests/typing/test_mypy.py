"""mypy over code that uses fluss_fast: pyfluss-style typed code passes, and typical mistakes are
reported where they are made (so the package's types really reach a checker, not ``Any``)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the 'test' and 'dev' extras")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(scope="module")
def mypy(tmp_path_factory):
    cache = tmp_path_factory.mktemp("mypy-cache")

    def run(*files: str) -> subprocess.CompletedProcess:
        # From the checkout's root: pyproject.toml's [tool.mypy] applies and this fluss_fast is the one checked.
        return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--no-error-summary",
                               "--show-error-codes", *files],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)

    return run


@pytest.mark.timeout(300)
def test_typed_usage_passes(mypy):
    out = mypy("tests/typing/usage.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "py.typed" not in out.stdout


@pytest.mark.timeout(300)
def test_mistakes_are_reported_where_made(mypy):
    source = (HERE / "misuse.py").read_text().splitlines()
    expected = {(n, m.group(1)) for n, line in enumerate(source, 1)
                for m in [re.search(r"# E: ([a-z-]+)", line)] if m}
    assert len(expected) >= 5
    out = mypy("tests/typing/misuse.py")
    assert out.returncode == 1, out.stdout + out.stderr
    reported = {(int(m.group(1)), m.group(2)) for m in
                re.finditer(r"^tests/typing/misuse\.py:(\d+): error: .*\[([a-z-]+)\]$", out.stdout, re.M)}
    assert reported == expected, out.stdout


def test_py_typed_ships():
    import fluss_fast

    assert (Path(fluss_fast.__file__).parent / "py.typed").is_file()
