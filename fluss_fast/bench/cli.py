"""``fluss-fast bench``: fluss_fast against pyfluss, same scenarios, same server, alternating clients.

    fluss-fast bench [--quick] [--scenarios a,b] [--rows N] [--repeat N] [--cold-repeat N]
                     [--dataset orders|clicks|numeric]
                     [--clients fluss_fast,pyfluss] [--buckets N] [--bootstrap-servers HOST:PORT]
                     [--tablet-servers N] [--json FILE] [--plot FILE.png] [--timeout SECONDS]
                     [--no-progress] [--profile DIR] [--list]

The exit status is described in ``EPILOG`` below (and by ``--help``).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as _dt
import importlib
import json
import os
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from ..cli import version_line
from . import datasets as ds
from . import harness as h

# isort: off
# importing a scenario module registers its scenarios, in this order (the order --help lists them)
from . import scenarios as log_scenarios
from . import remote_scenarios as _remote_scenarios  # noqa: F401
from . import pk_scenarios
from . import ceiling as _ceiling  # noqa: F401 - importing registers the ceiling scenarios
# isort: on
from .cold import COLD_SCENARIOS
from .cold_runs import run_cold
from .util import cleanup_step, human_rate, run_interruptibly, server_for

DEFAULT_SCENARIOS = log_scenarios.LOG_SCENARIOS + pk_scenarios.PK_SCENARIOS + [
    "ceiling_produce", "ceiling_fetch", "ceiling_put_kv", "ceiling_lookup", "ceiling_lookup_batch"]
CLIENT_MODULES = {"fluss_fast": "fluss_fast", "pyfluss": "fluss"}
QUICK_ROWS = 20_000
QUICK_REPEAT = 2
QUICK_COLD_REPEAT = 1
# --quick runs no cold lookups: they run out a lookup budget like the warm ones (pyfluss's 64
# concurrent ones take ~8 s however short it is), which would double the smoke run's time
QUICK_COLD_SKIP = ("lookup", "lookup64", "prefix_lookup")
FULL_ROWS = 200_000
FULL_REPEAT = 3

OK, FAILED, ERROR, SKIPPED = "ok", "FAILED", "ERROR", "SKIPPED"
CLEANUP_TIMEOUT_S = 2.0   # dropping a prepared table on the way out
CLOSE_TIMEOUT_S = 1.0     # closing a client's connection on the way out
DEFAULT_OUT_DIR = "bench_results"   # git-ignored; relative file names given to --json/--plot land here
SWEEP_ROWS = ["100k", "1m", "10m"]
SWEEP_SCENARIOS = ["write_arrow", "scan"]


@dataclass
class Result:
    scenario: str
    client: str
    samples: list[h.Outcome] = field(default_factory=list)
    status: str = OK
    detail: str = ""
    cold_samples: list[h.Outcome] = field(default_factory=list)

    def fail(self, status: str, detail: str) -> None:
        # The worst status wins: one bad repetition makes the whole result bad.
        rank = {OK: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}
        if rank[status] >= rank[self.status]:
            self.status = status
            self.detail = detail

    def rates(self) -> list[float]:
        return [s.rows / s.seconds for s in self.samples if s.seconds > 0]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scenario": self.scenario, "client": self.client, "status": self.status,
                               "detail": self.detail, "repetitions": len(self.samples),
                               "samples": [{"seconds": s.seconds, "rows": s.rows, "bytes": s.nbytes,
                                            "wire_bytes": s.wire_bytes, "note": s.note,
                                            "client_cpu_s": s.cpu[0], "server_cpu_s": s.cpu[1],
                                            "rss_start_bytes": s.rss[0], "rss_peak_bytes": s.rss[1]}
                                           for s in self.samples]}
        rates = self.rates()
        if rates:
            mbs = [s.nbytes / s.seconds / 1e6 for s in self.samples if s.seconds > 0]
            out.update(rows_per_s=statistics.median(rates), rows_per_s_min=min(rates),
                       rows_per_s_max=max(rates), mb_per_s=statistics.median(mbs),
                       mb_per_s_min=min(mbs), mb_per_s_max=max(mbs),
                       seconds_median=statistics.median(s.seconds for s in self.samples))
            out["client_cpu_pct"] = statistics.median(100 * s.cpu[0] / s.seconds for s in self.samples)
            if all(s.cpu[1] >= 0 for s in self.samples):
                out["server_cpu_pct"] = statistics.median(100 * s.cpu[1] / s.seconds for s in self.samples)
            rises = [(s.rss[1] - s.rss[0]) / 1e6 for s in self.samples if s.rss[0]]
            if rises:
                # the memory the timed section added at its peak (see Stopwatch)
                out["peak_rss_mb"] = statistics.median(rises)
                out["peak_rss_abs_mb"] = statistics.median(s.rss[1] / 1e6 for s in self.samples if s.rss[0])
            wires = [s.wire_bytes / s.seconds / 1e9 for s in self.samples if s.seconds > 0 and s.wire_bytes]
            if wires:
                out["wire_gb_per_s"] = statistics.median(wires)
        if self.cold_samples:
            out["cold"] = cold_summary(self.cold_samples)
        return out


def cold_summary(samples: list[h.Outcome]) -> dict[str, Any]:
    """Medians of the cold runs (``bench.cold``): the operation's time from its call, the time to the
    first row (connect included, import not), the import, CPU split into user and kernel time, and
    the peak RSS rise over the process's RSS before it connected."""
    med = statistics.median
    out: dict[str, Any] = {
        "repetitions": len(samples),
        "samples": [{"seconds": s.seconds, "rows": s.rows, "bytes": s.nbytes, "note": s.note,
                     "server_cpu_s": s.cpu[1], "rss_start_bytes": s.rss[0], "rss_peak_bytes": s.rss[1],
                     **s.extra} for s in samples],
        "seconds_median": med(s.seconds for s in samples),
    }
    rates = [s.rows / s.seconds for s in samples if s.seconds > 0]
    if rates:
        out["rows_per_s"] = med(rates)
    for key in ("import_s", "import_pyarrow_s", "connect_s", "first_row_s", "user_s", "sys_s", "write_s"):
        vals = [s.extra[key] for s in samples if s.extra.get(key) is not None]
        if vals:
            out[key + "_median"] = med(vals)
    rises = [(s.rss[1] - s.rss[0]) / 1e6 for s in samples if s.rss[0]]
    if rises:
        out["peak_rss_mb"] = med(rises)
    return out


DESCRIPTION = ("Benchmark fluss_fast against pyfluss: the same scenarios on the same server, the clients "
               "alternating, every result checked (row count and checksum).")
EPILOG = ("Exit status: 0 when every scenario ran and checked out (SKIPPED is fine), 1 when any result is "
          "FAILED (wrong rows or checksum) or ERROR (an exception), 2 on bad arguments, 130 when interrupted. "
          f"A --json or --plot file name without a folder is written into {DEFAULT_OUT_DIR}/ (git-ignored).")


def parse_args(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fluss-fast bench", description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--quick", action="store_true",
                   help=f"small run for CI (about a minute): {QUICK_ROWS} rows, {QUICK_REPEAT} warm repetitions, "
                        f"{QUICK_COLD_REPEAT} cold run per client and scenario")
    p.add_argument("--scenarios", metavar="A,B", help="comma-separated subset of: " + ", ".join(h.SCENARIOS))
    p.add_argument("--rows", metavar="N", help=f"rows in the data set (default {FULL_ROWS}; accepts 10k, 1m)")
    p.add_argument("--repeat", type=int, metavar="N",
                   help=f"warm repetitions per client, in this process (default {FULL_REPEAT}; 0: cold runs only)")
    p.add_argument("--cold-repeat", type=int, metavar="N",
                   help=f"cold runs per client and scenario, each in a fresh process that imports the client, "
                        f"connects and does the operation once (default: as --repeat; {QUICK_COLD_REPEAT} with "
                        f"--quick, which runs no cold lookups; 0: none)")
    p.add_argument("--dataset", default="orders", choices=sorted(ds.DATASETS),
                   help="which generated data set (bench_data/; default orders)")
    p.add_argument("--clients", default="fluss_fast,pyfluss", metavar="A,B",
                   help="comma-separated clients to compare (default fluss_fast,pyfluss; pyfluss is dropped if "
                        "not installed)")
    p.add_argument("--buckets", type=int, metavar="N",
                   help="buckets per table (default: the data set's, 3; numeric 4)")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                   help="use this cluster instead of starting the embedded server")
    p.add_argument("--tablet-servers", type=int, default=1, metavar="N",
                   help="tablet servers of the embedded server (default 1)")
    p.add_argument("--json", metavar="FILE", help=f"write the results to this JSON file (a bare name goes into "
                                                  f"{DEFAULT_OUT_DIR}/)")
    p.add_argument("--plot", metavar="FILE.png",
                   help=f"draw the results into this PNG (a bare name goes into {DEFAULT_OUT_DIR}/; needs "
                        f"matplotlib, from the 'bench' extra)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="seconds allowed per scenario run (default 600)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--profile", metavar="DIR",
                   help="cProfile each timed section (calling thread only) into DIR/<scenario>-<client>-rep<N>.prof")
    p.add_argument("--sweep", nargs="?", const=",".join(SWEEP_ROWS), metavar="SIZES",
                   help="run the scenarios (default: " + ",".join(SWEEP_SCENARIOS) + ") at each of "
                        "these data-set sizes (default " + ",".join(SWEEP_ROWS) + ") and, with "
                        "--plot, chart rows/s against size for every client")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    return p


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_clients(names: list[str]) -> list[h.Client]:
    clients = []
    for name in names:
        mod_name = CLIENT_MODULES.get(name)
        if mod_name is None:
            raise ValueError(f"unknown client {name!r}; expected one of {', '.join(CLIENT_MODULES)}")
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            if name == "pyfluss":
                _log(f"pyfluss is not installed ({exc}); benchmarking fluss_fast alone")
                continue
            raise
        clients.append(h.Client(name, module))
    return clients


def versions(clients: list[h.Client]) -> dict[str, str]:
    import numpy
    import pyarrow

    out = {"python": platform.python_version(), "pyarrow": pyarrow.__version__, "numpy": numpy.__version__}
    for c in clients:
        out[c.name] = getattr(c.module, "__version__", None) or _dist_version(c.name)
    from ..codec import _select

    loaded = _select.load_report()
    out["cython_extensions"] = ",".join(k for k, v in loaded.items() if v) or "none"
    missing = [k for k, v in loaded.items() if not v]
    if missing:
        out["pure_python_twins"] = ",".join(missing)
    return out


def _dist_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "?"


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"host": platform.node(), "system": f"{platform.system()} {platform.release()}",
            "machine": platform.machine(), "cpu": cpu, "cores": os.cpu_count()}


async def run_all(opts, scenario_names: list[str], clients: list[h.Client], bootstrap: str,
                  rows: int, repeat: int, server_pid: int | None = None, cold_repeat: int = 0) -> list[Result]:
    with contextlib.suppress(ImportError):
        # pyarrow imports pandas (when installed) on first use of pa.array(), Array.view() and
        # more: done here, the one-time ~1 s and ~100 MB of RSS land in no client's timed section
        import pandas  # noqa: F401
    for c in clients:
        await c.open(bootstrap)
    verifier = next((c for c in clients if c.name == "pyfluss"), clients[0])
    env = h.Env(bootstrap, opts.dataset, rows, opts.buckets, verifier, progress=not opts.no_progress,
                 server_pid=server_pid, profile_dir=opts.profile,
                 lookup_budget_s=h.QUICK_LOOKUP_BUDGET_S if opts.quick else h.LOOKUP_BUDGET_S)
    t0 = time.perf_counter()
    _ = env.table
    _log(f"data set {opts.dataset}: {rows} rows, {env.table.nbytes / 1e6:.1f} MB in Arrow "
         f"(loaded in {time.perf_counter() - t0:.1f} s)")
    prepared: dict[Any, Any] = {}
    prepare_errors: dict[Any, BaseException] = {}
    results: list[Result] = []
    try:
        for name in scenario_names:
            s = h.SCENARIOS[name]
            labels = ["raw"] if s.raw else [c.name for c in clients]
            res = {label: Result(name, label) for label in labels}
            results.extend(res.values())
            shared = None
            if s.prepare is not None:
                key = s.prepare
                if key not in prepared and key not in prepare_errors:
                    _log(f"[{name}] preparing ...")
                    try:
                        prepared[key] = await asyncio.wait_for(s.prepare(env), opts.timeout)
                    except Exception as exc:  # noqa: BLE001 - reported per scenario below
                        prepare_errors[key] = exc
                if key in prepare_errors:
                    exc = prepare_errors[key]
                    status = SKIPPED if isinstance(exc, h.Skip) else \
                        FAILED if isinstance(exc, h.Mismatch) else ERROR
                    for r in res.values():
                        r.fail(status, str(exc) if isinstance(exc, h.Skip) else f"prepare: {_describe(exc)}")
                    _log(f"[{name}] {status}: {_describe(exc)}")
                    continue
                shared = prepared[key]
            for rep in range(repeat):
                order = clients if rep % 2 == 0 else list(reversed(clients))
                runners = [(None, "raw")] if s.raw else [(c, c.name) for c in order]
                for client, label in runners:
                    r = res[label]
                    if r.status in (SKIPPED,):
                        continue
                    env.current = f"{name}-{label}-rep{rep + 1}"
                    out = await _attempt(s.run(client, env, shared), r, name, f"{label} rep {rep + 1}",
                                         opts.timeout)
                    if out is None:
                        continue
                    r.samples.append(out)
                    _log(f"[{name}] {label} rep {rep + 1}/{repeat}: {out.rows} rows in {out.seconds:.3f} s "
                         f"= {human_rate(out.rows / out.seconds)} rows/s, "
                         f"{out.nbytes / out.seconds / 1e6:.1f} MB/s"
                         + (f", wire {out.wire_bytes / out.seconds / 1e9:.2f} GB/s" if out.wire_bytes else ""))
            if s.raw or name not in COLD_SCENARIOS or (opts.quick and name in QUICK_COLD_SKIP):
                continue
            # cold: each run a fresh process, the clients alternating as above
            for rep in range(cold_repeat):
                order = clients if rep % 2 == 0 else list(reversed(clients))
                for client in order:
                    r = res[client.name]
                    if r.status in (SKIPPED,):
                        continue
                    env.current = f"{name}-{client.name}-cold{rep + 1}"
                    out = await _attempt(run_cold(name, client, env, shared, opts.timeout), r, name,
                                         f"{client.name} cold {rep + 1}", opts.timeout + 30, cold=True)
                    if out is None:
                        continue
                    r.cold_samples.append(out)
                    x = out.extra
                    first = f", first row {x['first_row_s']:.3f} s" if "first_row_s" in x else ""
                    _log(f"[{name}] {client.name} cold {rep + 1}/{cold_repeat}: {out.rows} rows in "
                         f"{out.seconds:.3f} s (user {x['user_s']:.2f} s, sys {x['sys_s']:.2f} s){first}, "
                         f"import {x['import_s']:.2f} s, connect {x['connect_s']:.3f} s")
    finally:
        # Bounded, so that a Ctrl-C (which cancels this coroutine) ends the run within seconds.
        for s_prepare, shared in prepared.items():
            for s in h.SCENARIOS.values():
                if s.prepare is s_prepare and s.cleanup is not None:
                    await cleanup_step(s.cleanup(env, shared), CLEANUP_TIMEOUT_S)
                    break
        for c in clients:
            await cleanup_step(c.close(), CLOSE_TIMEOUT_S)
    return results


async def _attempt(coro, r: Result, name: str, what: str, timeout: float, cold: bool = False):
    """The outcome of one run, or None with the failure recorded in ``r`` (the worst one wins)."""
    tag = "cold: " if cold else ""
    try:
        return await asyncio.wait_for(coro, timeout)
    except h.Skip as exc:
        r.fail(SKIPPED, str(exc))
        _log(f"[{name}] {what}: SKIPPED ({exc})")
    except h.Mismatch as exc:
        r.fail(FAILED, tag + str(exc))
        _log(f"[{name}] {what}: FAILED: {exc}")
    except TimeoutError:
        r.fail(ERROR, f"{tag}timed out after {timeout:.0f} s")
        _log(f"[{name}] {what}: ERROR: timed out")
    except Exception as exc:  # noqa: BLE001 - a crash is a result too
        r.fail(ERROR, tag + _describe(exc))
        _log(f"[{name}] {what}: ERROR: {_describe(exc)}")
        if os.environ.get("FLUSS_FAST_BENCH_TRACE"):
            traceback.print_exc()
    return None


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    name = type(exc).__name__
    # FlussError's str() already starts with its name.
    return (text if text.startswith(name) else f"{name}: {text}")[:500]


def format_table(summaries: list[dict[str, Any]]) -> str:
    """The results table, warm columns then cold ones; reasons for SKIPPED/FAILED/ERROR are
    numbered notes below it.

    Warm: medians over repetitions in this process. Cold: medians over fresh processes (``bench.cold``):
    the operation's seconds from its call, the fluss_fast/pyfluss ratio of their rates, the time to the
    first row (connect included, import not), user/kernel CPU seconds and the peak RSS rise."""
    head = ["scenario", "client", "warm rows/s", "min-max rows/s", "MB/s", "ff/py", "cpu% cli/srv",
            "peak RSS +MB", "cold s", "cold ff/py", "1st row s", "cold usr/sys s", "cold RSS +MB", "status"]
    rows = []
    notes: list[str] = []
    by = {(s["scenario"], s["client"]): s for s in summaries}
    for s in summaries:
        ratio = ""
        other = by.get((s["scenario"], "pyfluss")) if s["client"] == "fluss_fast" else None
        if other and "rows_per_s" in s and other.get("rows_per_s"):
            ratio = f"{s['rows_per_s'] / other['rows_per_s']:.2f}x"
        if "rows_per_s" in s:
            rate = human_rate(s["rows_per_s"])
            spread = f"{human_rate(s['rows_per_s_min'])}-{human_rate(s['rows_per_s_max'])}"
            mbs = f"{s['mb_per_s']:.1f}"
            if "wire_gb_per_s" in s:
                mbs += f" (wire {s['wire_gb_per_s']:.2f} GB/s)"
        else:
            rate = spread = mbs = "-"
        cpu = "-"
        if "client_cpu_pct" in s:
            cpu = f"{s['client_cpu_pct']:.0f}/" + (f"{s['server_cpu_pct']:.0f}" if "server_cpu_pct" in s else "?")
        rss = f"{s['peak_rss_mb']:.0f}" if "peak_rss_mb" in s else "-"
        cold_cells = ["-"] * 5
        c = s.get("cold")
        if c:
            oc = (other or {}).get("cold") or {}
            cold_ratio = f"{c['rows_per_s'] / oc['rows_per_s']:.2f}x" if c.get("rows_per_s") and \
                oc.get("rows_per_s") else ""
            first = f"{c['first_row_s_median']:.3f}" if "first_row_s_median" in c else "-"
            cpu_split = f"{c['user_s_median']:.2f}/{c['sys_s_median']:.2f}" if "sys_s_median" in c else "-"
            crss = f"{c['peak_rss_mb']:.0f}" if "peak_rss_mb" in c else "-"
            cold_cells = [f"{c['seconds_median']:.3f}", cold_ratio, first, cpu_split, crss]
        status = s["status"]
        if status != OK:
            if s["detail"] not in notes:
                notes.append(s["detail"])
            status += f" [{notes.index(s['detail']) + 1}]"
        rows.append([s["scenario"], s["client"], rate, spread, mbs, ratio, cpu, rss] + cold_cells + [status])
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(head, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip())
    for i, note in enumerate(notes, 1):
        lines.append(f"[{i}] {note}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--spark" in argv:  # the Spark scenario set has its own options (fluss_fast/bench/spark_bench.py)
        from .spark_bench import main as spark_main

        return spark_main([a for a in argv if a != "--spark"])
    opts = parse_args(argv)
    if opts.list:
        for name, s in h.SCENARIOS.items():
            print(f"{name:16} {s.description}")
        return 0
    try:
        rows = ds.parse_rows(opts.rows) if opts.rows else (QUICK_ROWS if opts.quick else FULL_ROWS)
        repeat = opts.repeat if opts.repeat is not None else (QUICK_REPEAT if opts.quick else FULL_REPEAT)
        cold_repeat = opts.cold_repeat if opts.cold_repeat is not None else \
            (QUICK_COLD_REPEAT if opts.quick else repeat)
        if repeat < 0 or cold_repeat < 0 or repeat + cold_repeat < 1:
            raise ValueError("--repeat and --cold-repeat must not be negative, nor both 0")
        if opts.buckets is None:
            opts.buckets = ds.DATASETS[opts.dataset].buckets
        names = [n.strip() for n in opts.scenarios.split(",") if n.strip()] if opts.scenarios \
            else list(SWEEP_SCENARIOS if opts.sweep else DEFAULT_SCENARIOS)
        sizes = [ds.parse_rows(x.strip()) for x in opts.sweep.split(",") if x.strip()] \
            if opts.sweep else [rows]
        if not sizes:
            raise ValueError("--sweep needs at least one size")
        unknown = [n for n in names if n not in h.SCENARIOS]
        if unknown:
            raise ValueError(f"unknown scenario(s) {', '.join(unknown)}; expected: {', '.join(h.SCENARIOS)}")
        clients = load_clients([c.strip() for c in opts.clients.split(",") if c.strip()])
        if not clients:
            raise ValueError("no client to benchmark")
    except ValueError as exc:
        print(f"fluss-fast bench: {exc}", file=sys.stderr)
        return 2

    server = None
    started = time.time()
    try:
        server, bootstrap = server_for(opts.bootstrap_servers, opts.tablet_servers)
        if server is not None:
            _log(f"embedded server pid {server.pid} at {bootstrap}")
        _log(f"fluss-fast bench: {version_line()}")
        sweep = []
        for size in sizes:
            if opts.sweep:
                _log(f"--- sweep: {size} rows ---")
            results = _run(run_all(opts, names, clients, bootstrap, size, repeat,
                                   server.pid if server is not None else None, cold_repeat))
            sweep.append({"rows": size, "results": [r.summary() for r in results]})
    except KeyboardInterrupt:
        print("\nfluss-fast bench: interrupted" + (" (embedded server stopped)" if server is not None else ""),
              file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - e.g. an unreachable --bootstrap-servers, said in one line
        print(f"fluss-fast bench: ERROR: {_describe(exc)}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.close()
    if opts.sweep:
        return _report_sweep(opts, argv, clients, repeat, sweep, started, cold_repeat)
    summaries = sweep[0]["results"]
    report = {
        "meta": {"date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                 "machine": machine(), "versions": versions(clients), "dataset": opts.dataset,
                 "rows": rows, "repeat": repeat, "cold_repeat": cold_repeat, "buckets": opts.buckets,
                 "server": opts.bootstrap_servers or f"embedded ({opts.tablet_servers} tablet server(s))",
                 "command": "fluss-fast bench " + " ".join(argv), "wall_seconds": round(time.time() - started, 1)},
        "results": summaries,
    }
    print(format_meta(report["meta"]))
    print(format_table(summaries))
    from .plot import plot

    _write_outputs(opts, report, plot)
    bad = [s for s in summaries if s["status"] in (FAILED, ERROR)]
    return 1 if bad else 0


def _write_outputs(opts, report, draw) -> None:
    """The JSON report and the chart (drawn by ``draw(report, path)``), each where asked."""
    if opts.json:
        json_path = output_path(opts.json)
        os.makedirs(os.path.dirname(json_path), exist_ok=True)
        with open(json_path, "w") as f:
            json.dump(report, f, indent=2)
        _log(f"results written to {json_path}")
    if opts.plot:
        plot_path = output_path(opts.plot)
        os.makedirs(os.path.dirname(plot_path), exist_ok=True)
        draw(report, plot_path)
        _log(f"chart written to {plot_path}")


def output_path(name: str) -> str:
    """A bare file name goes into ``bench_results/`` (git-ignored), so that no run overwrites a
    tracked file by accident; a name with a folder in it is used as given."""
    if os.path.dirname(name):
        return os.path.abspath(name)
    return os.path.abspath(os.path.join(DEFAULT_OUT_DIR, name))


def _report_sweep(opts, argv, clients, repeat, sweep, started, cold_repeat=0) -> int:
    """Prints one table per size and a rows/s-by-size summary; JSON and chart as requested."""
    meta = {"date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "machine": machine(), "versions": versions(clients), "dataset": opts.dataset,
            "rows": [step["rows"] for step in sweep], "repeat": repeat, "cold_repeat": cold_repeat,
            "buckets": opts.buckets,
            "server": opts.bootstrap_servers or f"embedded ({opts.tablet_servers} tablet server(s))",
            "command": "fluss-fast bench " + " ".join(argv), "wall_seconds": round(time.time() - started, 1)}
    print(format_meta(meta))
    for step in sweep:
        print(f"\n## {step['rows']} rows")
        print(format_table(step["results"]))
    print("\n" + format_sweep(sweep))
    report = {"meta": meta, "sweep": sweep}
    from .plot import plot_sweep

    _write_outputs(opts, report, plot_sweep)
    bad = [r for step in sweep for r in step["results"] if r["status"] in (FAILED, ERROR)]
    return 1 if bad else 0


def format_sweep(sweep: list[dict[str, Any]]) -> str:
    """rows/s of every (scenario, client) at every size, and fluss_fast/pyfluss per size."""
    sizes = [step["rows"] for step in sweep]
    keys = list(dict.fromkeys((r["scenario"], r["client"]) for step in sweep for r in step["results"]))
    at = {(step["rows"], r["scenario"], r["client"]): r for step in sweep for r in step["results"]}
    head = ["scenario", "client"] + [human_rate(n) + " rows" for n in sizes]
    rows = []
    for scen, client in keys:
        cells = []
        for n in sizes:
            r = at.get((n, scen, client))
            if r is None or "rows_per_s" not in r:
                cells.append(r["status"] if r else "-")
                continue
            cell = human_rate(r["rows_per_s"]) + "/s"
            other = at.get((n, scen, "pyfluss"))
            if client == "fluss_fast" and other and other.get("rows_per_s"):
                cell += f" ({r['rows_per_s'] / other['rows_per_s']:.2f}x)"
            cells.append(cell)
        rows.append([scen, client] + cells)
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(head, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    return "\n".join(lines)


def format_meta(meta: dict[str, Any]) -> str:
    v = meta["versions"]
    m = meta["machine"]
    parts = ", ".join(f"{k} {val}" for k, val in v.items())
    return (f"# {meta['date']}  {m['cpu']} ({m['cores']} cores), {m['system']}\n"
            f"# {parts}\n"
            f"# data set {meta['dataset']}: {meta['rows']} rows, {meta['buckets']} buckets, "
            f"{meta['repeat']} warm repetitions, {meta.get('cold_repeat', 0)} cold (a fresh process each), "
            f"server: {meta['server']}")


def _run(coro):
    # Plain asyncio, as a typical user of either client would run it.
    return run_interruptibly(coro)


if __name__ == "__main__":
    sys.exit(main())
