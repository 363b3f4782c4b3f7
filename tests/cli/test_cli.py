"""The `fluss-fast` command line explains itself: --version says which engine runs, `help` works,
every option has a help text without reStructuredText markup, the demo checks a given server before
generating data, and Ctrl-C ends the demo and the bench within seconds, with one line, after
dropping the demo table."""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fluss_fast
from fluss_fast.codec import _select

ROOT = Path(__file__).resolve().parents[2]
NO_EXT = _select.extensions_disabled()


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def ff(*args, env=None, timeout=60, cwd=None):
    return subprocess.run([sys.executable, "-m", "fluss_fast", *args], capture_output=True, text=True,
                          timeout=timeout, env=env or _env(), cwd=cwd or ROOT)


def _built_extensions():
    """Extensions with a compiled module next to their source in this checkout."""
    import importlib.machinery

    built = set()
    for name, pure in _select.twin_modules().items():
        folder = ROOT / Path(*pure.split(".")[:-1])
        if any((folder / (name + s)).exists() for s in importlib.machinery.EXTENSION_SUFFIXES):
            built.add(name)
    return built


# -- --version and help ----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--version"], ["-V"], ["version"]])
def test_version_names_versions_and_engine(args):
    import platform

    import pyarrow

    out = ff(*args)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"fluss_fast {fluss_fast.__version__} (")
    assert lines[1].startswith(f"Python {platform.python_version()} ")
    assert lines[2] == f"pyarrow {pyarrow.__version__}"
    assert lines[3].startswith("compiled extensions: ")
    if NO_EXT:
        assert "disabled by FLUSS_FAST_NO_EXTENSIONS" in lines[3]
    elif _built_extensions() == set(_select.twin_modules()):
        assert lines[3] == f"compiled extensions: all {len(_select.twin_modules())} loaded"


def test_version_names_the_extensions_not_loaded(tmp_path):
    # A checkout copy without any compiled module: every twin is reported as pure, by name.
    import shutil

    shutil.copytree(ROOT / "fluss_fast", tmp_path / "fluss_fast",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    env = _env(PYTHONPATH=str(tmp_path))
    env.pop("FLUSS_FAST_NO_EXTENSIONS", None)
    out = ff("--version", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    last = out.stdout.splitlines()[3]
    n = len(_select.twin_modules())
    assert last.startswith(f"compiled extensions: 0 of {n} loaded; pure-Python twins for "), last
    for name in _select.twin_modules():
        assert name in last


@pytest.mark.parametrize("value,disabled", [("", False), ("0", False), ("false", False), ("False", False),
                                            ("no", False), ("off", False), (" 0 ", False), ("1", True),
                                            ("true", True), ("yes", True), ("on", True)])
def test_no_extensions_values(value, disabled):
    assert _select.extensions_disabled({"FLUSS_FAST_NO_EXTENSIONS": value}) is disabled
    assert _select.extensions_disabled({}) is False


@pytest.mark.parametrize("value", ["0", "false"])
def test_no_extensions_zero_keeps_the_extensions(value):
    out = subprocess.run([sys.executable, "-c", "from fluss_fast.codec import _select as s; "
                          "r = s.load_report(); print(s.NO_EXTENSIONS, all(r.values()))"],
                         capture_output=True, text=True, timeout=60, env=_env(FLUSS_FAST_NO_EXTENSIONS=value),
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    expect_all = _built_extensions() == set(_select.twin_modules())
    assert out.stdout.split() == ["False", str(expect_all)]


def test_loaded_keys_are_spelled_one_way():
    report = _select.load_report()
    assert set(report) == set(_select.twin_modules())
    assert all(k.startswith("_") and "." not in k for k in report)
    from fluss_fast.codec import LOADED

    assert set(LOADED) == set(report)


def test_help_command():
    out = ff("help")
    assert out.returncode == 0 and "usage: fluss-fast" in out.stdout and "--version" in out.stdout
    for command in ("demo",):  # the others' --help run in test_every_option_explains_itself
        out = ff("help", command)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(f"usage: fluss-fast {command}")
    out = ff("help", "nope")
    assert out.returncode == 2 and "unknown command 'nope'" in out.stderr
    assert ff().returncode == 2
    assert ff("--help").returncode == 0


def _parsers():
    from fluss_fast.bench import cli as bench_cli
    from fluss_fast.bench import demo
    from fluss_fast.server import cli as server_cli

    return {"server": server_cli.build_parser(), "demo": demo.build_parser(), "bench": bench_cli.build_parser()}


@pytest.mark.parametrize("command", ["server", "demo", "bench"])
def test_every_option_explains_itself(command):
    parser = _parsers()[command]
    missing = [a.option_strings for a in parser._actions
               if a.option_strings and not (a.help and a.help.strip() and a.help != argparse.SUPPRESS)]
    assert not missing
    texts = [parser.description or "", parser.epilog or ""] + [a.help or "" for a in parser._actions]
    assert not [t for t in texts if "``" in t or ":class:" in t or ":func:" in t]
    assert parser.description and parser.description.rstrip().endswith("."), parser.description
    out = ff(command, "--help")
    assert out.returncode == 0 and "``" not in out.stdout


# -- demo against a given server -------------------------------------------------------------------

def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_demo_checks_the_server_before_generating_data(tmp_path):
    address = f"127.0.0.1:{_closed_port()}"
    out = ff("demo", "--bootstrap-servers", address, "--rows", "5m", "--no-progress", timeout=60, cwd=tmp_path,
             env=_env(FLUSS_FAST_BENCH_CACHE=str(tmp_path / "cache")))
    assert out.returncode == 1
    assert "cannot reach" in out.stderr and address in out.stderr
    assert "load data set" not in out.stdout and not (tmp_path / "cache").exists()
    assert "Traceback" not in out.stderr


def test_bench_output_goes_to_bench_results_by_default(tmp_path, monkeypatch):
    from fluss_fast.bench.cli import output_path

    monkeypatch.chdir(tmp_path)
    assert output_path("bench.json") == str(tmp_path / "bench_results" / "bench.json")
    assert output_path("out/bench.png") == str(tmp_path / "out" / "bench.png")
    assert output_path(str(tmp_path / "x.json")) == str(tmp_path / "x.json")


# -- Ctrl-C ----------------------------------------------------------------------------------------

INTERRUPT_BOUND_S = 15  # the bug this guards against waited for the 30 s request timeout


def _interrupt_after(args, marker, stream, tmp_path):
    """Start `fluss-fast ARGS` in its own process group, SIGINT the group (as a terminal's Ctrl-C
    does) once MARKER was printed, and return (exit code, seconds to exit, stdout, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "fluss_fast", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path, start_new_session=True,
                            env=_env(FLUSS_FAST_BENCH_CACHE=str(tmp_path / "cache")),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    watched = proc.stdout if stream == "stdout" else proc.stderr
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            line = watched.readline()
            if not line:
                break
            seen.append(line)
            if marker in line:
                break
        assert any(marker in line for line in seen), "".join(seen)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if stream == "stdout":
        out = "".join(seen) + out
    else:
        err = "".join(seen) + err
    return proc.returncode, took, out, err


async def _demo_tables(bootstrap):
    conn = await fluss_fast.FlussConnection.create(fluss_fast.Config({"bootstrap.servers": bootstrap}))
    try:
        admin = conn.get_admin()
        if not await admin.database_exists("fluss_fast_demo"):
            return []
        return await admin.list_tables("fluss_fast_demo")
    finally:
        await conn.close()


@pytest.mark.timeout(180)
def test_ctrl_c_stops_the_demo_and_drops_its_table(fluss_server, tmp_path):
    bootstrap = fluss_server.bootstrap_servers
    code, took, out, err = _interrupt_after(
        ["demo", "--bootstrap-servers", bootstrap, "--rows", "2m", "--no-progress"], "created table", "stdout",
        tmp_path)
    assert code == 130, out + err
    assert took < INTERRUPT_BOUND_S, took
    table = out.split("created table ", 1)[1].split()[0]
    assert err.strip().splitlines() == [f"fluss-fast demo: interrupted (table {table} dropped)"], err
    assert "all checks passed" not in out
    assert table.split(".", 1)[1] not in asyncio.run(_demo_tables(bootstrap))


@pytest.mark.timeout(180)
def test_ctrl_c_in_the_primary_key_part_drops_both_tables(fluss_server, tmp_path):
    bootstrap = fluss_server.bootstrap_servers
    code, took, out, err = _interrupt_after(
        ["demo", "--bootstrap-servers", bootstrap, "--rows", "200k", "--no-progress"],
        "created primary-key table", "stdout", tmp_path)
    assert code == 130, out + err
    assert took < INTERRUPT_BOUND_S, took
    log_table = out.split("created table ", 1)[1].split()[0]
    pk_table = out.split("created primary-key table ", 1)[1].split()[0]
    assert err.strip().splitlines() == [f"fluss-fast demo: interrupted (tables {log_table}, {pk_table} dropped)"], err
    left = asyncio.run(_demo_tables(bootstrap))
    assert log_table.split(".", 1)[1] not in left and pk_table.split(".", 1)[1] not in left


@pytest.mark.timeout(180)
def test_ctrl_c_stops_the_bench(fluss_server, tmp_path):
    code, took, out, err = _interrupt_after(
        ["bench", "--bootstrap-servers", fluss_server.bootstrap_servers, "--scenarios", "append", "--rows", "300k",
         "--repeat", "8", "--clients", "fluss_fast", "--no-progress", "--json", "r.json"],
        "[append] fluss_fast rep 1", "stderr", tmp_path)
    assert code == 130, out + err
    assert took < INTERRUPT_BOUND_S, took
    assert err.strip().splitlines()[-1] == "fluss-fast bench: interrupted", err
    assert "Traceback" not in err and "never retrieved" not in err
    assert not (tmp_path / "bench_results").exists()
