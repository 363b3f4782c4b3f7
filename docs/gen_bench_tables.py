"""Writes the benchmark tables of the docs from the dated runs in docs/benchmarks/data/*.json.

A table sits between two markers in a Markdown file:

    <!-- bench-table: 2026-12-01-orders full -->
    ... generated, do not edit ...
    <!-- /bench-table -->

``2026-12-01-orders`` names the JSON file, ``full`` / ``summary`` / ``sweep`` the layout; ``goals`` and
``limits`` take several runs, comma-separated (one per data set, each with cold runs; ``limits`` needs
``meta.limits`` from ``python -m fluss_fast.bench.limits --into``). The JSON files
hold what ``fluss-fast bench --json`` reports (``meta`` plus ``results``, or ``sweep`` steps), so a new
run is added by copying its report there and adding a marker.

    python docs/gen_bench_tables.py           # rewrite the tables in place
    python docs/gen_bench_tables.py --check   # exit 1 if a table is out of date (CI, tests)
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "benchmarks" / "data"
# every file that may hold markers; a marker anywhere else would silently go stale
TARGETS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"(<!-- bench-table: (\S+) (full|summary|sweep|goals|limits) -->\n)(.*?)(<!-- /bench-table -->)",
                    re.S)


def rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.2f}k"
    return f"{x:.1f}"


def caption(meta: dict) -> str:
    when = meta["date"].replace("T", " ").replace("Z", " UTC")
    rows = f", {meta['rows'] / 1e6:g} M rows" if "rows" in meta else ""
    text = (f"{when}; {meta['dataset']}{rows}, {meta['buckets']} buckets, {meta['compression']}, medians of "
            f"{meta['repeat']} alternating repetitions; {meta['machine']}, Python {meta['python']}, pyarrow "
            f"{meta['pyarrow']}, fluss_fast {meta['fluss_fast']}, pyfluss {meta['pyfluss']}. "
            f"Command: `{meta['command']}`.")
    if meta.get("server"):
        text += f" Server: {meta['server']}."
    if meta.get("note"):
        text += f" {meta['note']}"
    return text


def ratio(results: list, r: dict) -> str:
    if r["client"] != "fluss_fast":
        return ""
    if "ratio_to_pyfluss" in r:  # the bench's own figure, from medians before rounding
        return f"{r['ratio_to_pyfluss']:.2f}x"
    other = next((o for o in results if o["scenario"] == r["scenario"] and o["client"] == "pyfluss"), None)
    return f"{r['rows_per_s'] / other['rows_per_s']:.2f}x" if other and other["rows_per_s"] else ""


def full(report: dict) -> str:
    results = report["results"]
    lines = ["| scenario | client | rows/s (median) | min-max rows/s | MB/s | fluss_fast / pyfluss "
             "| CPU % client/server | peak RSS +MB |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        mb = f"{r['mb_per_s']:.1f}" + (f" (wire {r['wire_gb_per_s']:.2f} GB/s)" if "wire_gb_per_s" in r else "")
        rss = f"{r['peak_rss_mb']:.0f}" if "peak_rss_mb" in r else "-"
        lines.append(f"| `{r['scenario']}` | {r['client']} | {rate(r['rows_per_s'])} | "
                     f"{rate(r['rows_per_s_min'])}-{rate(r['rows_per_s_max'])} | {mb} | {ratio(results, r)} | "
                     f"{r['client_cpu_pct']:.0f}/{r['server_cpu_pct']:.0f} | {rss} |")
    return "\n".join(lines) + "\n\n" + caption(report["meta"]) + "\n"


def summary(report: dict) -> str:
    results = report["results"]
    lines = ["| scenario | fluss_fast rows/s | pyfluss rows/s | speed-up |", "|---|---:|---:|---:|"]
    for r in results:
        if r["client"] != "fluss_fast":
            continue
        other = next((o for o in results if o["scenario"] == r["scenario"] and o["client"] == "pyfluss"), None)
        lines.append(f"| `{r['scenario']}` | {rate(r['rows_per_s'])} | "
                     f"{rate(other['rows_per_s']) if other else '-'} | {ratio(results, r) or '-'} |")
    m = report["meta"]
    when = m["date"].split("T")[0]
    server = f", {m['server']}" if m.get("server") else ", the embedded server"
    return "\n".join(lines) + (f"\n\n{m['dataset']}, {m['rows'] / 1e6:g} M rows, medians of {m['repeat']}, "
                               f"{when}, a shared 2-core VM{server}.\n")


def sweep(report: dict) -> str:
    steps = report["sweep"]
    head = "| scenario | client | " + " | ".join(f"{s['rows']:,} rows" for s in steps) + " |"
    lines = [head, "|---|---|" + "---:|" * len(steps)]
    keys = list(dict.fromkeys((r["scenario"], r["client"]) for s in steps for r in s["results"]))
    for scen, client in keys:
        cells = []
        for s in steps:
            r = next((x for x in s["results"] if (x["scenario"], x["client"]) == (scen, client)), None)
            cell = rate(r["rows_per_s"]) + "/s" if r else "-"
            if r and ratio(s["results"], r):
                cell += f" ({ratio(s['results'], r)})"
            cells.append(cell)
        lines.append(f"| `{scen}` | {client} | " + " | ".join(cells) + " |")
    m = report["meta"]
    when = m["date"].replace("T", " ").replace("Z", " UTC")
    return "\n".join(lines) + (f"\n\n{when}; {m['dataset']}, medians of {m['repeat']}; {m['machine']}. "
                               f"Command: `{m['command']}`.\n")


#: issue 29's goals: fluss_fast / pyfluss per scenario, warm and cold, on every data set
GOALS = [("append", "append dict rows", 2.0), ("write_arrow", "write_arrow", 1.8), ("scan", "to_arrow scan", 2.0),
         ("projected_scan", "projected scan", 2.0), ("poll", "poll", 3.0), ("upsert", "per-row upsert", 2.0),
         ("lookup64", "64 concurrent lookups", 10.0)]


def _pair(report: dict, scenario: str) -> tuple[dict | None, dict | None]:
    ff = py = None
    for r in report["results"]:
        if r["scenario"] == scenario and r.get("status") == "ok":
            if r["client"] == "fluss_fast":
                ff = r
            elif r["client"] == "pyfluss":
                py = r
    return ff, py


def _mark(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _ratio_cell(ff: dict | None, py: dict | None, goal: float) -> str:
    if not ff or not py or not py.get("rows_per_s"):
        return "-"
    x = ff["rows_per_s"] / py["rows_per_s"]
    return f"{x:.2f}x {_mark(x >= goal)}"


def _less_cell(mine: float | None, theirs: float | None, unit: str, fmt: str) -> str:
    if mine is None or theirs is None:
        return "-"
    return f"{mine:{fmt}} / {theirs:{fmt}} {unit} {_mark(mine <= theirs)}"


def _first_row_ms(r: dict | None) -> float | None:
    cold = (r or {}).get("cold") or {}
    return cold["first_row_s_median"] * 1e3 if "first_row_s_median" in cold else None


def goals(reports: list[dict]) -> str:
    names = [r["meta"]["dataset"] for r in reports]
    head = "| goal | " + " | ".join(f"{n} warm | {n} cold" for n in names) + " |"
    lines = [head, "|---|" + "---:|---:|" * len(reports)]
    for scenario, label, goal in GOALS:
        cells = []
        for rep in reports:
            ff, py = _pair(rep, scenario)
            cells.append(_ratio_cell(ff, py, goal))
            cells.append(_ratio_cell(ff and ff.get("cold"), py and py.get("cold"), goal))
        lines.append(f"| {label} >= {goal:g}x | " + " | ".join(cells) + " |")
    # time to first row: cold only (a warm process has its connection); import excluded, connect included
    cells = []
    for rep in reports:
        ff, py = _pair(rep, "scan")
        cells += ["", _less_cell(_first_row_ms(ff), _first_row_ms(py), "ms", ".1f")]
    lines.append("| time to first row of a scan <= pyfluss (fluss_fast / pyfluss) | " + " | ".join(cells) + " |")
    for scenario in ("scan", "projected_scan", "scan_after_write"):
        cells = []
        for rep in reports:
            ff, py = _pair(rep, scenario)
            cells.append(_less_cell(ff and ff.get("peak_rss_mb"), py and py.get("peak_rss_mb"), "MB", ".0f"))
            cells.append(_less_cell(ff and ff.get("cold", {}).get("peak_rss_mb"),
                                    py and py.get("cold", {}).get("peak_rss_mb"), "MB", ".0f"))
        lines.append(f"| peak RSS rise of `{scenario}` <= pyfluss (fluss_fast / pyfluss) | " + " | ".join(cells) + " |")
    metas = [r["meta"] for r in reports]
    runs = "; ".join(f"`{m['command']}` ({m['date'][:16].replace('T', ' ')} UTC)" for m in metas)
    m = metas[0]
    v = m.get("versions", {})
    return "\n".join(lines) + (
        f"\n\nRatios of medians, {m['repeat']} warm repetitions in one process and {m.get('cold_repeat', 0)} cold "
        f"runs (a fresh process each) per client, the clients alternating; {m['machine'].get('cpu', '')} "
        f"{m['machine'].get('cores', '')}-core VM shared with other jobs, {m.get('server', '')}; Python "
        f"{v.get('python', '')}, pyarrow {v.get('pyarrow', '')}, pyfluss {v.get('pyfluss', '')}. Runs: {runs}.\n")


def limits(reports: list[dict]) -> str:
    lines = ["| data set | codec: compress / decompress rows/s | loopback rows/s | `from_pylist` rows/s "
             "| `write_arrow` / compress limit | `scan` / decompress limit | `append` / `from_pylist` |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for rep in reports:
        lim = rep["meta"]["limits"]
        ff = {s: _pair(rep, s)[0] for s in ("write_arrow", "scan", "append")}

        def share(s: str, key: str, lim=lim, ff=ff) -> str:
            return f"{ff[s]['rows_per_s'] / lim[key]:.0%}" if ff[s] else "-"

        lines.append(f"| {rep['meta']['dataset']} | {rate(lim['compress_rows_per_s'])} / "
                     f"{rate(lim['decompress_rows_per_s'])} | {rate(lim['loopback_rows_per_s'])} | "
                     f"{rate(lim['from_pylist_rows_per_s'])} | {share('write_arrow', 'compress_rows_per_s')} | "
                     f"{share('scan', 'decompress_rows_per_s')} | {share('append', 'from_pylist_rows_per_s')} |")
    lim = reports[0]["meta"]["limits"]
    return "\n".join(lines) + (
        f"\n\nLimits by `python -m fluss_fast.bench.limits` on the same machine: {lim['codec']} over 64 Ki-row "
        f"Arrow IPC batches on {lim['codec_threads']} threads, one TCP connection on 127.0.0.1 (through the "
        f"data set's compressed bytes per row), `pa.Table.from_pylist` on one core; the best of 3 each. "
        f"A share is fluss_fast's warm median over the limit.\n")


LAYOUTS = {"full": full, "summary": summary, "sweep": sweep}
MULTI_LAYOUTS = {"goals": goals, "limits": limits}


def render(text: str) -> str:
    def load(name: str) -> dict:
        path = DATA / f"{name}.json"
        if not path.exists():
            raise SystemExit(f"bench-table marker names {path.name}, which does not exist")
        return json.loads(path.read_text())

    def one(m: re.Match) -> str:
        if m.group(3) in MULTI_LAYOUTS:
            return m.group(1) + MULTI_LAYOUTS[m.group(3)]([load(n) for n in m.group(2).split(",")]) + m.group(5)
        return m.group(1) + LAYOUTS[m.group(3)](load(m.group(2))) + m.group(5)

    return MARKER.sub(one, text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if any table is out of date; change nothing")
    args = ap.parse_args(argv)
    stale = []
    for path in TARGETS:
        text = path.read_text()
        new = render(text)
        if new != text:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print("benchmark tables out of date (run python docs/gen_bench_tables.py):",
              ", ".join(map(str, stale)), file=sys.stderr)
        return 1
    if not args.check:
        print(f"updated: {', '.join(map(str, stale)) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
