"""CI guard: asv timings of HEAD against its parent, failing only on a large regression.

    python asv_benchmarks/ci_compare.py [--base REF] [--factor 3] [--bench REGEX] [--html DIR]

Both commits are measured by the interpreter running this script (asv's ``--python=same``), so
nothing is installed and no network is needed: the parent is exported with ``git archive`` into a
temporary folder (its Cython extensions copied from this checkout when no ``.pyx``/``.h``/setup.py
changed between the two, else built there), and each run puts its tree first on the path (``ASV_PYTHONPATH``: asv drops
``PYTHONPATH``). The benchmarks themselves are this checkout's, so both commits run the same code.

Runs are ``--quick`` (one sample each) on a machine that may be busy, so only a slowdown of
``--factor`` or more counts (default 3: the Cython extensions silently not loading, an accidental
quadratic loop), and only when a second run of the flagged benchmarks, with several samples each, flags their
medians again. A benchmark
that ran on the parent and fails or is skipped on HEAD counts too (a Cython variant is skipped
when its extension is missing). Only ``time_*`` benchmarks are judged (``track_*`` ones are rates,
where a rise is good news). ``asv publish`` writes the HTML report into ``--html`` (default
``bench_results/asv_html``, git-ignored), which CI keeps as an artifact.

HEAD's run is also CI's asv smoke run: a benchmark that fails on HEAD fails the check (exit 2);
with no reference commit HEAD is run alone for that.

Exit status: 0 fine, 1 regression, 2 a benchmark failed on HEAD or the tooling itself failed.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# files whose change means the parent's extensions must be compiled, not copied
_BUILD_INPUTS = ("*.pyx", "*.pxd", "*.h", "setup.py")


#: samples per benchmark when a flagged slowdown is measured again (its median is judged)
CONFIRM_SAMPLES = 7


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _log(msg: str) -> None:
    print(f"[ci_compare] {msg}", flush=True)


def _export(rev: str, dest: str) -> None:
    archive = subprocess.Popen(["git", "-C", ROOT, "archive", rev], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise RuntimeError(f"git archive {rev} failed")


def _extensions(rev: str, head: str, dest: str) -> None:
    changed = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", rev, head, "--", *_BUILD_INPUTS])
    if changed.returncode == 0:
        copied = 0
        for so in glob.glob(os.path.join(ROOT, "fluss_fast", "**", "*.so"), recursive=True):
            rel = os.path.relpath(so, ROOT)
            target = os.path.join(dest, rel)
            if os.path.isdir(os.path.dirname(target)):
                shutil.copy2(so, target)
                copied += 1
        _log(f"parent has the same extension sources: copied {copied} built extensions")
        return
    _log("extension sources differ: building the parent's extensions")
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=dest, check=True,
                   stdout=subprocess.DEVNULL)


_CONFIG = os.path.join(HERE, ".asv", "ci.conf.json")


def _write_config(head: str) -> None:
    """asv.conf.json with the branch set to this checkout's HEAD: a CI clone may have no local
    ``main`` (asv refuses to run when a configured branch is unknown). Lives under ``.asv/`` (git-
    ignored) and keeps the results, html and env folders where the normal config puts them."""
    from asv.util import load_json

    conf = load_json(os.path.join(HERE, "asv.conf.json"), js_comments=True)
    conf.update(repo=os.path.relpath(ROOT, os.path.dirname(_CONFIG)), branches=[head],
                benchmark_dir=os.path.join(HERE, "benchmarks"), results_dir="results",
                env_dir="env", html_dir="html")
    os.makedirs(os.path.dirname(_CONFIG), exist_ok=True)
    with open(_CONFIG, "w") as f:
        json.dump(conf, f, indent=2)


def _asv(args, tree: str, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # asv drops PYTHONPATH from its benchmark processes and uses ASV_PYTHONPATH instead
    path = tree + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONPATH"] = env["ASV_PYTHONPATH"] = path
    # one data cache for both trees: a freshly generated table and one read back from its
    # Parquet cache are chunked differently, which alone moved a codec timing 10x
    env.setdefault("FLUSS_FAST_BENCH_CACHE", os.path.join(ROOT, "bench_data", "cache"))
    return subprocess.run([sys.executable, "-m", "asv", args[0], "--config", _CONFIG, *args[1:]],
                          cwd=HERE, env=env, text=True, **kw)


def _run(rev: str, tree: str, bench: str, samples: int = 0) -> None:
    """One asv run of ``bench`` for ``rev``: quick (one sample each), or ``samples`` samples each,
    so that what asv compares is a median and one slow call cannot confirm a regression."""
    t0 = time.monotonic()
    timing = ["-a", f"repeat={samples}", "-a", "warmup_time=0.05"] if samples else ["--quick"]
    res = _asv(["run", "--python=same", *timing, "--set-commit-hash", rev, "--bench", bench,
                "--show-stderr"], tree, capture_output=True)
    if res.returncode not in (0, 2):  # 2: some benchmark failed; judged in the comparison
        sys.stdout.write(res.stdout[-4000:])
        sys.stderr.write(res.stderr[-4000:])
        raise RuntimeError(f"asv run for {rev[:10]} exited with {res.returncode}")
    _log(f"measured {rev[:10]} with {tree} first on the path in {time.monotonic() - t0:.0f} s")


_ROW = re.compile(r"^\|\s*(?P<mark>[+!x-]?)\s*\|\s*(?P<before>[^|]*)\|\s*(?P<after>[^|]*)\|"
                  r"\s*(?P<ratio>[^|]*)\|\s*(?P<name>.*?)\s*\|?\s*$")


def _compare(base: str, head: str, factor: float, show: bool) -> tuple:
    res = _asv(["compare", "--factor", str(factor), "--no-stats", "--split", base, head], ROOT,
               capture_output=True)
    if res.returncode != 0:
        sys.stderr.write(res.stderr[-4000:])
        raise RuntimeError(f"asv compare exited with {res.returncode}")
    if show:
        print(res.stdout)
    bad, broken = [], []
    for line in res.stdout.splitlines():
        m = _ROW.match(line.strip())
        if not m or m.group("name").startswith(("Benchmark", "---")):
            continue
        mark = m.group("mark")
        after = m.group("after").strip()
        before = m.group("before").strip()
        name = m.group("name")
        if after == "failed":
            broken.append(name)
        if ".time_" not in name:
            continue
        worse = mark == "+"
        # ran before, failed or skipped now (n/a, failed)
        lost = before not in ("failed", "n/a", "") and after in ("failed", "n/a")
        if worse or lost or mark == "!":
            bad.append(name)
    return bad, broken


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="ci_compare", description=__doc__.split("\n")[0])
    p.add_argument("--base", default="HEAD^", help="the reference commit (default HEAD^)")
    p.add_argument("--factor", type=float, default=3.0,
                   help="slowdown that fails the check (default 3)")
    p.add_argument("--bench", default=".",
                   help="asv --bench regex of what is measured (default all; only time_* are judged)")
    p.add_argument("--html", default=os.path.join(ROOT, "bench_results", "asv_html"),
                   help="where asv publish writes the HTML report")
    opts = p.parse_args(argv)
    t0 = time.monotonic()
    head = _git("rev-parse", "HEAD")
    try:
        base = _git("rev-parse", "--verify", opts.base + "^{commit}")
    except subprocess.CalledProcessError:
        _log(f"no commit {opts.base}: HEAD runs alone, as a smoke run")
        _write_config(head)
        res = _asv(["run", "--python=same", "--quick", "--set-commit-hash", head, "--bench",
                    opts.bench, "--show-stderr"], ROOT)
        return 2 if res.returncode else 0
    try:
        subprocess.run([sys.executable, "-m", "asv", "machine", "--yes"], cwd=HERE, check=True,
                       stdout=subprocess.DEVNULL)
        _write_config(head)
        with tempfile.TemporaryDirectory(prefix="asv-base-") as tmp:
            _export(base, tmp)
            _extensions(base, head, tmp)
            _run(base, tmp, opts.bench)
            _run(head, ROOT, opts.bench)
            bad, broken = _compare(base, head, opts.factor, show=True)
            if bad:
                # quick mode is one sample on a shared machine: confirm with medians before failing
                _log(f"{len(bad)} benchmark(s) look {opts.factor:g}x slower; measuring them again")
                regex = "|".join(re.escape(b.split("(")[0]) for b in sorted(set(bad)))
                _run(base, tmp, regex, CONFIRM_SAMPLES)
                _run(head, ROOT, regex, CONFIRM_SAMPLES)
                again, _ = _compare(base, head, opts.factor, show=False)
                bad = sorted(set(bad) & set(again))
        os.makedirs(opts.html, exist_ok=True)
        pub = _asv(["publish", "--html-dir", opts.html], ROOT, capture_output=True)
        if pub.returncode == 0:
            _log(f"HTML report in {opts.html}")
        else:
            _log(f"asv publish failed (not fatal): {pub.stderr.strip()[-300:]}")
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        _log(f"tooling failed: {exc}")
        return 2
    took = time.monotonic() - t0
    if broken:
        # this run is also CI's only asv smoke run: a benchmark that errors on HEAD fails it
        _log("benchmark(s) failing on HEAD: " + ", ".join(sorted(set(broken))))
        return 2
    if bad:
        _log(f"REGRESSION (>= {opts.factor:g}x slower than {base[:10]}, confirmed twice): "
             + ", ".join(sorted(set(bad))) + f"  [{took:.0f} s]")
        return 1
    _log(f"no benchmark {opts.factor:g}x slower than {base[:10]}  [{took:.0f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
