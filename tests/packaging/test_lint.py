"""The tree passes the ruff rules configured in pyproject.toml (pycodestyle, pyflakes, isort, bugbear, pyupgrade,
simplify and the asyncio rules), with the per-file ignores listed there and their reasons."""
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ruff", reason="ruff is in the 'test' and 'dev' extras")

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_check_passes():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
