"""What ships beside the code: the license text the metadata names, a changelog entry for the version
being built, and a Python floor that the linter's target agrees with. (Building and installing the
wheel itself is .ci/wheel_smoke.sh's job: too slow for the test suite.)"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_file_is_the_apache_license_the_metadata_names():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text


def test_changelog_has_an_entry_for_this_version():
    version = PYPROJECT["project"]["version"]
    text = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[?{re.escape(version)}\]?( |$)", text, re.M), f"CHANGELOG.md has no entry for {version}"


def test_python_floor_matches_the_lint_target():
    floor = re.fullmatch(r">=\s*3\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert floor, "requires-python is a plain floor"
    assert PYPROJECT["tool"]["ruff"]["target-version"] == f"py3{floor.group(1)}"


def test_sdist_leaves_generated_c_out():
    lines = (ROOT / "MANIFEST.in").read_text().splitlines()
    assert "global-exclude *.c" in lines
    assert "include CHANGELOG.md" in lines


@pytest.mark.parametrize("script", ["wheel_smoke.sh", "deps_matrix.sh"])
def test_ci_scripts_are_executable(script):
    assert os.access(ROOT / ".ci" / script, os.X_OK)
