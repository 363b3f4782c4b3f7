"""The examples of docs/guide/polars.md and duckdb.md, run as written against an embedded server.

Each page's fenced ``python`` blocks run in a fresh interpreter (the stream protocol blocks, as a
user's script does), with only the bootstrap address replaced; the assertions are on what they print.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("polars")
pytest.importorskip("duckdb")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUIDE_ADDRESS = "127.0.0.1:9123"


def _blocks(page: str) -> str:
    with open(os.path.join(ROOT, "docs", "guide", page), encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert blocks, f"no python example in {page}"
    return "\n".join(blocks)


def _run(page: str, bootstrap: str) -> str:
    code = _blocks(page)
    assert GUIDE_ADDRESS in code
    out = subprocess.run([sys.executable, "-c", code.replace(GUIDE_ADDRESS, bootstrap)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.timeout(150)
def test_polars_page(start_server):
    server = start_server()
    out = _run("polars.md", server.bootstrap_servers)
    # the group-by table: Lima 12.0, Oslo 10.75, Pune 1.0; then to_polars().height
    assert re.search(r"Lima\D+12\.0", out) and re.search(r"Oslo\D+10\.75", out), out
    assert out.strip().splitlines()[-1] == "4", out


@pytest.mark.timeout(150)
def test_duckdb_page(start_server):
    server = start_server()
    out = _run("duckdb.md", server.bootstrap_servers)
    want = [(item, sum(i % 5 for i in range(1000) if ["pen", "ink", "pad"][i % 3] == item))
            for item in ("ink", "pad", "pen")]
    assert out.strip() == repr(want), out
