"""Run the official Python client's own test suite (``bindings/python``: ``test/`` and, through
``test_examples.py``, ``example/``) against ``fluss-fast server`` or a real Java cluster.

    python tests/compat/run_official_suite.py                       # pyfluss against the embedded server
    python tests/compat/run_official_suite.py --client fluss_fast   # the drop-in against it
    python tests/compat/run_official_suite.py --server java --tablet-servers 3 --client fluss_fast

The suite is not part of this repository: by default it is taken from the source distribution of the
installed pyfluss version on the package index (pip's own index, checked against the index's sha256,
cached under ~/.cache/fluss-fast/); ``--suite DIR`` names a checkout instead. Its conftest takes an
existing cluster from FLUSS_BOOTSTRAP_SERVERS / FLUSS_SASL_BOOTSTRAP_SERVERS; this script starts one
embedded server or Java cluster (plaintext and SASL listeners, the users the suite logs in with), points
those variables at it, and runs pytest.
``--client fluss`` (default) uses the installed pyfluss; ``--client fluss_fast`` puts a ``fluss`` module
that IS ``fluss_fast`` first on the path, so every ``import fluss`` of the suite gets the drop-in.

One test is deselected for fluss_fast, the deliberate difference: ``test_rejects_non_arrow_log_format``
checks that pyfluss refuses to read INDEXED logs into Arrow (fluss_fast reads them).

Exit status: pytest's. Extra arguments after ``--`` go to pytest.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import select
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request

# what the suite's SASL tests log in with (test_sasl_auth.py)
SUITE_USERS = {"admin": "admin-secret", "alice": "alice-secret"}
READY_TIMEOUT_S = 60
FLUSS_FAST_ONLY_SKIPS = [
    "test_batch_scanner.py::test_rejects_non_arrow_log_format",
]

# Tests that create tables with `table.statistics.columns`, a property Fluss 0.9.1 does not know (the
# server answers error 39 to pyfluss and fluss_fast alike): deselected on Java servers of that version.
NEEDS_NEWER_JAVA_SERVER = {
    "0.9.1-incubating": [
        "test_examples.py::test_example_runs[log_table]",
        "test_log_table.py::test_filter_pushdown_prunes_non_matching_batches",
        "test_log_table.py::test_filter_with_overlapping_statistics_returns_whole_batch",
        "test_log_table.py::test_filter_pushdown_prunes_row_appended_batches",
        "test_log_table.py::test_filter_pushdown_prunes_across_column_types",
        "test_log_table.py::test_filter_rejects_invalid_predicates",
        "test_log_table.py::test_filter_timestamp_literals_are_wall_clock",
        "test_log_table.py::test_filter_set_and_string_predicates",
        "test_log_table.py::test_filter_float_literals",
    ],
}

_SHIM = '''"""``import fluss`` gives fluss_fast (written by run_official_suite.py)."""
import sys

import fluss_fast

sys.modules[__name__] = fluss_fast
'''


def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _find_test_dir(suite: str) -> str:
    for cand in (os.path.join(suite, "test"), os.path.join(suite, "fluss-rust", "bindings", "python", "test"),
                 suite):
        if os.path.isfile(os.path.join(cand, "conftest.py")):
            return os.path.abspath(cand)
    raise SystemExit(f"no conftest.py of the official suite under {suite!r} (give the bindings/python directory)")


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("FLUSS_FAST_CACHE") or os.path.join(base, "fluss-fast")


def fetch_suite(version: str) -> str:
    """``bindings/python`` of pyfluss ``version``'s sdist, downloaded once (PEP 691 JSON index of pip's
    default index, the file's sha256 checked) and unpacked into the cache."""
    dest = os.path.join(_cache_dir(), f"pyfluss-{version}-suite")
    target = os.path.join(dest, f"pyfluss-{version}", "bindings", "python")
    if os.path.isfile(os.path.join(target, "test", "conftest.py")):
        return target
    from pip._internal.models.index import PyPI

    req = urllib.request.Request(PyPI.simple_url + "/pyfluss/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        files = json.load(resp)["files"]
    name = f"pyfluss-{version}.tar.gz"
    entry = next((f for f in files if f["filename"] == name), None)
    if entry is None:
        raise SystemExit(f"the package index has no {name}")
    with urllib.request.urlopen(entry["url"], timeout=120) as resp:
        blob = resp.read()
    if hashlib.sha256(blob).hexdigest() != entry["hashes"]["sha256"]:
        raise SystemExit(f"{name}: sha256 does not match the index's")
    prefix = f"pyfluss-{version}/bindings/python/"
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and (m.isfile() or m.isdir())]
        tar.extractall(dest, members=members, filter="data")
        # The sdist keeps the bindings' pyproject.toml (pytest's asyncio_mode among it) at its root;
        # in the source tree it sits in bindings/python, where the suite's rootdir must be.
        ini = tar.extractfile(f"pyfluss-{version}/pyproject.toml")
        with open(os.path.join(target, "pyproject.toml"), "wb") as f:
            f.write(ini.read())
    return target


def installed_pyfluss_version() -> str:
    from importlib.metadata import version

    return version("pyfluss")


def start_java_cluster(data_dir: str, tablet_servers: int, version: str):
    from fluss_fast.cluster import JavaCluster

    cluster = JavaCluster(data_dir, tablet_servers=tablet_servers, sasl_users=SUITE_USERS, version=version,
                          settings={"default.replication.factor": str(min(3, tablet_servers))}).start()
    return cluster, cluster.bootstrap_servers, cluster.sasl_bootstrap_servers


def start_server(data_dir: str, tablet_servers: int):
    cmd = [sys.executable, "-m", "fluss_fast", "server", "--data-dir", data_dir, "--listen", "127.0.0.1:0",
           "--sasl-listen", "127.0.0.1:0", "--tablet-servers", str(tablet_servers)]
    for user, pw in SUITE_USERS.items():
        cmd += ["--sasl-user", f"{user}={pw}"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_repo_root(), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline()
            if line.startswith("READY"):
                fields = dict(part.split("=", 1) for part in line.split()[1:])
                return proc, fields["bootstrap.servers"], fields["sasl.bootstrap.servers"]
        if proc.poll() is not None:
            raise SystemExit(f"fluss-fast server exited with {proc.returncode} before READY")
    proc.kill()
    raise SystemExit("fluss-fast server did not print READY in time")


def stop_server(proc) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default=None,
                    help="checkout of bindings/python (or its test/ dir); default: the installed pyfluss "
                         "version's sdist from the package index")
    ap.add_argument("--server", choices=("embedded", "java"), default="embedded",
                    help="embedded = fluss-fast server; java = fluss-fast cluster (the Java servers)")
    ap.add_argument("--client", choices=("fluss", "fluss_fast"), default="fluss",
                    help="fluss = the installed pyfluss; fluss_fast = `import fluss` aliased to fluss_fast")
    ap.add_argument("--tablet-servers", type=int, default=1)
    ap.add_argument("--fluss-version", default=None,
                    help="the Java cluster's Fluss version (default: the newest that works)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds for the whole pytest run")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)

    test_dir = _find_test_dir(args.suite or fetch_suite(installed_pyfluss_version()))
    work = tempfile.mkdtemp(prefix="fluss-official-")
    deselect = []
    if args.server == "java":
        from fluss_fast.cluster import DEFAULT_FLUSS_VERSION

        version = args.fluss_version or DEFAULT_FLUSS_VERSION
        cluster, plain, sasl = start_java_cluster(os.path.join(work, "data"), args.tablet_servers, version)
        stop = cluster.stop
        deselect += NEEDS_NEWER_JAVA_SERVER.get(version, [])
    else:
        proc, plain, sasl = start_server(os.path.join(work, "data"), args.tablet_servers)
        stop = lambda: stop_server(proc)  # noqa: E731
    try:
        env = dict(os.environ)
        env["FLUSS_BOOTSTRAP_SERVERS"] = plain
        env["FLUSS_SASL_BOOTSTRAP_SERVERS"] = sasl
        paths = [env.get("PYTHONPATH")]
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE"]
        if args.client == "fluss_fast":
            shim = os.path.join(work, "shim")
            os.makedirs(shim)
            with open(os.path.join(shim, "fluss.py"), "w") as f:
                f.write(_SHIM)
            paths = [shim, _repo_root()] + paths
            deselect += FLUSS_FAST_ONLY_SKIPS
        for nodeid in deselect:
            # node ids are relative to the rootdir pytest picks (bindings/python when its
            # pyproject.toml is there, else the test directory): name both
            cmd += ["--deselect", nodeid, "--deselect", "test/" + nodeid]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        cmd += args.pytest_args
        print(f"[official suite] client={args.client} server={args.server} {plain} sasl={sasl} tests={test_dir}",
              flush=True)
        try:
            return subprocess.run(cmd, cwd=test_dir, env=env, timeout=args.timeout).returncode
        except subprocess.TimeoutExpired:
            print(f"[official suite] pytest did not finish in {args.timeout} s", flush=True)
            return 124
    finally:
        stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
