"""`fluss-fast bench` and `fluss-fast demo` run end to end against the embedded server they start, with
both clients, and report consistent checksums; a wrong answer is a FAILED result and a non-zero exit."""
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from fluss_fast.bench import harness as h
from fluss_fast.bench import pk_scenarios as pk
from fluss_fast.bench import scenarios as sc

ROOT = Path(__file__).resolve().parents[2]


def _env(cache_dir):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["FLUSS_FAST_BENCH_CACHE"] = str(cache_dir)
    return env


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("bench-cache")


@pytest.mark.timeout(180)
def test_bench_quick_one_scenario(tmp_path, cache_dir):
    out = tmp_path / "not-yet" / "bench.json"  # the command creates missing folders (CI's fresh clone has none)
    proc = subprocess.run(
        [sys.executable, "-m", "fluss_fast", "bench", "--quick", "--scenarios", "append,ceiling_fetch",
         "--rows", "5000", "--json", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=170, env=_env(cache_dir), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    results = {(r["scenario"], r["client"]): r for r in report["results"]}
    clients = {"fluss_fast"}
    try:
        import fluss  # noqa: F401 - only to know whether pyfluss took part
    except ImportError:
        pass
    else:
        clients.add("pyfluss")
    for client in clients:
        r = results[("append", client)]
        assert r["status"] == "ok", r
        assert r["repetitions"] == 2
        assert all(s["rows"] == 5000 for s in r["samples"])
        assert r["rows_per_s"] > 0 and r["mb_per_s"] > 0
        # --quick: one cold run per client, a fresh process that appended the same rows
        assert r["cold"]["repetitions"] == 1 and r["cold"]["samples"][0]["rows"] == 5000
        assert r["cold"]["seconds_median"] > 0 and r["cold"]["import_s_median"] > 0
    raw = results[("ceiling_fetch", "raw")]
    assert raw["status"] == "ok" and raw["wire_gb_per_s"] > 0
    assert "cold" not in raw  # a ceiling has no client to start cold
    assert report["meta"]["rows"] == 5000
    # the printed table carries the ratio column when both clients ran
    lines = proc.stdout.splitlines()
    assert any(line.split()[:1] == ["scenario"] and "rows/s" in line and "cold s" in line for line in lines)
    ff_line = next(line for line in lines if line.split()[:2] == ["append", "fluss_fast"])
    if "pyfluss" in clients:
        # the fluss_fast/pyfluss ratio of the medians
        ratio = next(tok for tok in ff_line.split() if tok.endswith("x") and tok[:-1].replace(".", "").isdigit())
        want = results[("append", "fluss_fast")]["rows_per_s"] / results[("append", "pyfluss")]["rows_per_s"]
        assert float(ratio[:-1]) == pytest.approx(want, abs=0.006), ff_line
    assert "server_cpu_pct" in results[("append", "fluss_fast")]


@pytest.mark.timeout(120)
def test_demo_10k_rows(tmp_path, cache_dir):
    proc = subprocess.run([sys.executable, "-m", "fluss_fast", "demo", "--rows", "10000", "--no-progress"],
                          capture_output=True, text=True, timeout=110, env=_env(cache_dir), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert out.count("checksum ok") == 4, out
    assert "read back: 11,000 rows, checksum ok" in out
    # the primary-key part: 10,000 keys, 1,000 updated and 500 deleted per row, every key looked up
    assert "snapshot: 9,500 rows, checksum ok" in out
    assert "lookups: 9,500 found, 500 deleted keys absent, rows ok" in out
    assert "changelog: +I 10,000  -U 1,000  +U 1,000  -D 500, counts ok" in out
    assert "all checks passed" in out


def test_bench_rejects_unknown_scenario(tmp_path, cache_dir):
    proc = subprocess.run([sys.executable, "-m", "fluss_fast", "bench", "--scenarios", "nope"],
                          capture_output=True, text=True, timeout=60, env=_env(cache_dir), cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown scenario" in proc.stderr and "nope" in proc.stderr


@pytest.mark.timeout(120)
def test_scan_check_catches_wrong_data(fluss_server, monkeypatch, tmp_path):
    """A real scan of a real table is checked against the data set: a table holding different rows
    (one string changed) must be a Mismatch, not a result."""
    import fluss_fast

    monkeypatch.setenv("FLUSS_FAST_BENCH_CACHE", str(tmp_path))

    async def go():
        client = await h.Client("fluss_fast", fluss_fast).open(fluss_server.bootstrap_servers)
        try:
            env = h.Env(fluss_server.bootstrap_servers, "orders", 2000, 2, client, progress=False)
            name = await sc.prepare_filled(env)
            good = await sc.run_scan(client, env, name)
            assert good.rows == 2000
            # the same table, now judged against a data set that differs in one description
            desc = env.table.column("description").to_pylist()
            desc[1234] = desc[1234] + "!"
            env._table = env.table.set_column(env.table.schema.get_field_index("description"),
                                              env.table.schema.field("description"), pa.array(desc))
            env._expected.clear()
            with pytest.raises(h.Mismatch, match="str_hash"):
                await sc.run_scan(client, env, name)
            await sc.cleanup_filled(env, name)
        finally:
            # leave the shared session server as we found it
            await client.conn.get_admin().drop_database(h.DATABASE, ignore_if_not_exists=True, cascade=True)
            await client.close()

    asyncio.run(go())


def test_failed_result_makes_exit_status_nonzero(fluss_server, monkeypatch, tmp_path, capsys):
    from fluss_fast.bench import cli

    async def wrong(client, env, shared):
        raise h.Mismatch("rows=1 expected rows=2")

    monkeypatch.setitem(h.SCENARIOS, "always_wrong", h.Scenario("always_wrong", "test", wrong))
    monkeypatch.setenv("FLUSS_FAST_BENCH_CACHE", str(tmp_path))
    rc = cli.main(["--scenarios", "always_wrong", "--rows", "100", "--repeat", "1", "--clients", "fluss_fast",
                   "--bootstrap-servers", fluss_server.bootstrap_servers, "--no-progress"])
    assert rc == 1
    out = capsys.readouterr().out
    assert "FAILED [1]" in out and "[1] rows=1 expected rows=2" in out


@pytest.mark.timeout(180)
def test_bench_sweep_and_peak_rss(tmp_path, cache_dir):
    out = tmp_path / "sweep.json"
    chart = tmp_path / "sweep.png"
    argv = [sys.executable, "-m", "fluss_fast", "bench", "--sweep", "2k,6k", "--scenarios", "scan",
            "--repeat", "1", "--json", str(out), "--no-progress"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        chart = None
    else:
        argv += ["--plot", str(chart)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=170, env=_env(cache_dir),
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert [step["rows"] for step in report["sweep"]] == [2000, 6000]
    for step in report["sweep"]:
        r = next(r for r in step["results"] if r["client"] == "fluss_fast")
        assert r["status"] == "ok" and r["samples"][0]["rows"] == step["rows"]
        if sys.platform.startswith("linux"):
            # the peak of the section is at least where it started; the table shows the rise
            s = r["samples"][0]
            assert s["rss_peak_bytes"] >= s["rss_start_bytes"] > 0
            assert r["peak_rss_mb"] >= 0
    assert "2.00k rows" in proc.stdout and "6.00k rows" in proc.stdout
    if chart is not None:
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.timeout(240)
def test_remote_scan_runs_at_quick_scale(tmp_path, cache_dir):
    """20 k rows tier >= 90 % too: the verifier writes enough batches, each under a segment, for
    every bucket to tier all but its last segments (with 8,192-row batches only ~41 % tiered)."""
    out = tmp_path / "remote.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fluss_fast", "bench", "--quick", "--scenarios", "remote_scan",
         "--clients", "fluss_fast", "--json", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=230, env=_env(cache_dir), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (r,) = json.loads(out.read_text())["results"]
    assert r["status"] == "ok" and all(s["rows"] == 20000 for s in r["samples"]), r
    assert r["samples"][0]["note"].endswith("remote") and int(r["samples"][0]["note"].split("%")[0]) >= 90
    if sys.platform.startswith("linux"):
        assert all(s["rss_peak_bytes"] >= s["rss_start_bytes"] > 0 for s in r["samples"])


@pytest.mark.timeout(180)
def test_lookup_scenarios_stop_at_the_env_budget(fluss_server, monkeypatch, tmp_path):
    """The lookup scenarios run for ``Env.lookup_budget_s`` at most (``--quick`` gives 2 s instead of
    15 s): with no budget left at the start no lookup is made, with a budget every key is looked up."""
    import fluss_fast

    monkeypatch.setenv("FLUSS_FAST_BENCH_CACHE", str(tmp_path))

    async def go():
        client = await h.Client("fluss_fast", fluss_fast).open(fluss_server.bootstrap_servers)
        try:
            env = h.Env(fluss_server.bootstrap_servers, "orders", 500, 2, client, progress=False,
                         lookup_budget_s=0.0)
            shared = await pk.prepare_pk(env)
            assert (await pk.run_lookup(client, env, shared)).rows == 0
            prefixes = await pk.prepare_prefix(env)
            assert (await pk.run_prefix_lookup(client, env, prefixes)).rows == 0
            env.lookup_budget_s = h.LOOKUP_BUDGET_S
            assert (await pk.run_lookup64(client, env, shared)).rows == 500
            await pk.cleanup_pk(env, shared)
            await pk.cleanup_pk(env, prefixes)
        finally:
            await client.conn.get_admin().drop_database(h.DATABASE, ignore_if_not_exists=True, cascade=True)
            await client.close()

    asyncio.run(go())


def test_quick_runs_get_the_short_lookup_budget(monkeypatch):
    from fluss_fast.bench import cli

    seen = {}

    def spy(*args, **kw):
        seen["budget"] = kw.get("lookup_budget_s")
        raise RuntimeError("stop here")

    monkeypatch.setattr(h, "Env", spy)
    opts = cli.parse_args(["--quick", "--clients", "fluss_fast"])

    class _Client:
        name = "fluss_fast"

        async def open(self, bootstrap):
            return self

    for quick, want in ((True, h.QUICK_LOOKUP_BUDGET_S), (False, h.LOOKUP_BUDGET_S)):
        opts.quick = quick
        with pytest.raises(RuntimeError, match="stop here"):
            asyncio.run(cli.run_all(opts, ["lookup"], [_Client()], "127.0.0.1:1", 100, 1))
        assert seen["budget"] == want
