"""The example of docs/guide/lake.md, run as written in a fresh interpreter (it starts its own
embedded server with a Paimon warehouse); the assertions are on what it prints."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(150)
def test_lake_page_example():
    with open(os.path.join(ROOT, "docs", "guide", "lake.md"), encoding="utf-8") as f:
        blocks = re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.S | re.M)
    assert len(blocks) == 1, "lake.md holds one runnable python example"
    out = subprocess.run([sys.executable, "-c", blocks[0]], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    # the tiering round, the lake snapshot it committed, then the union read: ids 0..5 but 4, 3 renamed
    assert re.fullmatch(r"TieringResult\(snapshot_id=1, offsets=\{.*\}, rows=10\)", lines[0]), lines
    assert lines[1] == "LakeSnapshot(snapshot_id=1, buckets_count=2)", lines
    want = [{"id": i, "name": "renamed" if i == 3 else f"user {i}"} for i in range(6) if i != 4]
    assert ast.literal_eval(lines[-1]) == want
