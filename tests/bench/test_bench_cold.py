"""Cold runs (``fluss_fast.bench.cold``): the operation once in a fresh process, checked like a warm
run, with the cold figures (import, connect, time to the first row, user/kernel CPU, peak RSS) beside
it; the table and the JSON carry cold columns next to the warm ones."""
import asyncio
import json

import pyarrow as pa
import pytest

from fluss_fast.bench import cli, cold
from fluss_fast.bench import cold_runs as cr
from fluss_fast.bench import harness as h
from fluss_fast.bench import scenarios as sc


def _with_client(server, body, tmp_path, monkeypatch, dataset="numeric", rows=3000):
    import fluss_fast

    monkeypatch.setenv("FLUSS_FAST_BENCH_CACHE", str(tmp_path))

    async def go():
        client = await h.Client("fluss_fast", fluss_fast).open(server.bootstrap_servers)
        env = h.Env(server.bootstrap_servers, dataset, rows, 4, client, progress=False)
        try:
            await body(client, env)
        finally:
            await client.conn.get_admin().drop_database(h.DATABASE, ignore_if_not_exists=True, cascade=True)
            await client.close()

    asyncio.run(go())


@pytest.mark.timeout(120)
def test_a_cold_scan_runs_in_a_fresh_process_and_is_checked(fluss_server, monkeypatch, tmp_path):
    import os

    async def body(client, env):
        name = await sc.prepare_filled(env)
        out = await cr.run_cold("scan", client, env, name)
        assert out.rows == 3000 and out.seconds > 0
        x = out.extra
        for key in ("import_s", "import_pyarrow_s", "connect_s", "first_row_s", "user_s", "sys_s"):
            assert x[key] >= 0, key
        # time to the first row counts the connect and the whole operation, never the import
        assert x["first_row_s"] >= out.seconds
        if os.path.exists("/proc/self/clear_refs"):
            assert 0 < out.rss[0] <= out.rss[1]
        # the same table judged against a data set that differs in one tag: a Mismatch, not a number
        tags = env.table.column("tag").to_pylist()
        tags[17] = tags[17] + "!"
        env._table = env.table.set_column(env.table.schema.get_field_index("tag"),
                                          env.table.schema.field("tag"), pa.array(tags))
        env._expected.clear()
        with pytest.raises(h.Mismatch, match="str_hash"):
            await cr.run_cold("scan", client, env, name)

    _with_client(fluss_server, body, tmp_path, monkeypatch)


@pytest.mark.timeout(120)
def test_cold_write_then_read_and_projected_scan(fluss_server, monkeypatch, tmp_path):
    async def body(client, env):
        out = await cr.run_cold("scan_after_write", client, env, None)
        assert out.rows == 3000 and out.extra["write_s"] > 0
        name = await sc.prepare_filled(env)
        out = await cr.run_cold("projected_scan", client, env, name)
        assert out.rows == 3000 and out.nbytes == env.table.select(list(env.spec.projection)).nbytes
        # the table it wrote is gone again: a cold write leaves nothing behind
        tables = await client.conn.get_admin().list_tables(h.DATABASE)
        assert tables == [name]

    _with_client(fluss_server, body, tmp_path, monkeypatch)


def test_scenarios_without_a_cold_variant_are_skipped():
    async def go():
        with pytest.raises(h.Skip):
            await cr.run_cold("ceiling_fetch", None, None, None)

    asyncio.run(go())


def test_a_child_error_is_an_error_and_a_wrong_answer_a_mismatch(monkeypatch):
    import sys

    monkeypatch.setattr(cold, "job_command", lambda job: [sys.executable, "-c", job])

    async def go(script):
        return await cr._cold_child(script, 30)

    def reporting(report):
        return f"print('noise'); print({'COLD ' + json.dumps(report)!r})"

    assert asyncio.run(go(reporting({"seconds": 1}))) == {"seconds": 1}
    with pytest.raises(h.Mismatch, match="MISMATCH"):
        asyncio.run(go(reporting({"error": "RuntimeError: MISMATCH lookups"})))
    with pytest.raises(RuntimeError, match="cold run: OSError: boom"):
        asyncio.run(go(reporting({"error": "OSError: boom"})))
    with pytest.raises(RuntimeError, match="exited with code 3: died"):
        asyncio.run(go("import sys; sys.stderr.write('died'); sys.exit(3)"))


def _summary(scenario, client, rate, cold_s, cold_rate, first):
    r = cli.Result(scenario, client)
    r.samples = [h.Outcome(1000 / rate, 1000, 10_000, cpu=(0.5, 0.1), rss=(100_000_000, 120_000_000))]
    r.cold_samples = [h.Outcome(cold_s, int(cold_rate * cold_s), 10_000, cpu=(0.3, 0.1),
                                 rss=(50_000_000, 80_000_000),
                                 extra={"import_s": 0.4, "connect_s": 0.01, "first_row_s": first,
                                        "user_s": 0.2, "sys_s": 0.1})]
    return r.summary()


def test_the_table_shows_cold_columns_beside_the_warm_ones():
    summaries = [_summary("scan", "fluss_fast", 2e6, 0.1, 4e6, 0.15),
                 _summary("scan", "pyfluss", 1e6, 0.2, 2e6, 0.3)]
    ff = summaries[0]["cold"]
    assert ff["repetitions"] == 1 and ff["first_row_s_median"] == 0.15 and ff["sys_s_median"] == 0.1
    assert ff["peak_rss_mb"] == pytest.approx(30.0)
    text = cli.format_table(summaries)
    head = text.splitlines()[0]
    for col in ("warm rows/s", "ff/py", "cold s", "cold ff/py", "1st row s", "cold usr/sys s", "cold RSS +MB"):
        assert col in head, col
    ff_line = next(line for line in text.splitlines() if line.startswith("scan") and "fluss_fast" in line)
    assert "2.00x" in ff_line.split()  # warm and cold ratios of the rates
    assert ff_line.split().count("2.00x") == 2
    assert "0.150" in ff_line and "0.20/0.10" in ff_line


def test_cold_repeat_options(monkeypatch):
    assert cli.parse_args(["--cold-repeat", "5"]).cold_repeat == 5
    assert cli.main(["--repeat", "0", "--cold-repeat", "0", "--scenarios", "scan"]) == 2


def test_cold_children_keep_bytecode_like_an_installed_package(monkeypatch, tmp_path):
    """With PYTHONDONTWRITEBYTECODE set, a fresh process of an editable checkout would compile every
    module it imports; the children keep bytecode in a cache instead."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = cold.child_env(str(tmp_path / "pyc"))
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pyc")
