"""examples/ray_pipeline.py and the examples of docs/guide/ray.md run as written, on the stage's Ray
cluster against the embedded server."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

from conftest import ROOT

GUIDE_ADDRESS = "127.0.0.1:9123"


def test_pipeline_example(ray_cluster, bootstrap):
    spec = importlib.util.spec_from_file_location("ray_pipeline", os.path.join(ROOT, "examples", "ray_pipeline.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.run(bootstrap, 3000)
    assert result["orders"] == 3000 and result["customers"] > 100


def test_guide_page(ray_cluster, bootstrap):
    with open(os.path.join(ROOT, "docs", "guide", "ray.md"), encoding="utf-8") as f:
        blocks = re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.S | re.M)
    code = "\n".join(blocks)
    assert GUIDE_ADDRESS in code
    # the page's ray.init() joins this session's cluster instead of starting another on 2 cores
    env = dict(os.environ, RAY_ADDRESS=ray_cluster.get_runtime_context().gcs_address,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code.replace(GUIDE_ADDRESS, bootstrap)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    # the page prints four lines; Ray may print a hint of its own before them
    lines = out.stdout.strip().splitlines()[-4:]
    totals = sorted((f"u{k}", sum(i / 10 for i in range(500, 1000) if i % 4 == k)) for k in range(4))
    assert lines[:2] == ["1000", "500"], out.stdout
    got = eval(lines[2])  # noqa: S307 - the page's own print of a list of tuples
    assert [u for u, _ in got] == [u for u, _ in totals]
    assert all(abs(a - b) < 1e-6 for (_, a), (_, b) in zip(got, totals, strict=True))
    assert lines[3] == "4", out.stdout
