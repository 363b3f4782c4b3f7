"""The primary-key scenarios of `fluss-fast bench` run (not SKIPPED) and verify what they wrote and
read. Only fluss_fast here: pyfluss's lookups wait 100 ms per batch, which the scenarios bound
with a time budget that would dominate a test."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(240)
def test_pk_scenarios_run_and_verify(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["FLUSS_FAST_BENCH_CACHE"] = str(tmp_path / "cache")
    out = tmp_path / "bench.json"
    scenarios = ["upsert", "upsert_arrow", "lookup", "lookup64", "prefix_lookup", "snapshot_read"]
    proc = subprocess.run(
        [sys.executable, "-m", "fluss_fast", "bench", "--scenarios", ",".join(scenarios),
         "--clients", "fluss_fast", "--rows", "3000", "--repeat", "1", "--json", str(out),
         "--no-progress"],
        capture_output=True, text=True, timeout=230, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = {r["scenario"]: r for r in json.loads(out.read_text())["results"]}
    for name in scenarios:
        r = results[name]
        assert r["status"] == "ok", r
        assert r["rows_per_s"] > 0 and all(s["rows"] > 0 for s in r["samples"])
        if sys.platform.startswith("linux"):
            # every scenario reports its peak RSS (issue 12): the rise over where it started
            assert all(s["rss_peak_bytes"] >= s["rss_start_bytes"] > 0 for s in r["samples"]), r
            assert r["peak_rss_mb"] >= 0
