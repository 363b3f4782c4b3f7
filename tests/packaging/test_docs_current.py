"""The docs state what the code and the data say: the benchmark tables match their JSON, and the
configuration guide lists every Config key with its default."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from fluss_fast.config import _OPTIONS, _U64

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_tables_match_their_json():
    r = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_bench_tables.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_configuration_guide_lists_every_key_with_its_default():
    text = (ROOT / "docs" / "guide" / "configuration.md").read_text()
    rows = dict(re.findall(r"^\| `([^`]+)` \| `([^`]*)` \|", text, re.M))
    missing, wrong = [], []
    for key, _attr, _arg, _kind, default in _OPTIONS:
        if key not in rows:
            missing.append(key)
            continue
        if default == _U64[1]:
            shown = "2^64 - 1"
        elif isinstance(default, bool):
            shown = "true" if default else "false"
        elif default == "":
            shown = '""'
        else:
            shown = str(default)
        if rows[key] != shown:
            wrong.append(f"{key}: the guide says {rows[key]!r}, Config's default is {shown!r}")
    assert not missing, f"keys missing from docs/guide/configuration.md: {missing}"
    assert not wrong, "\n".join(wrong)
