"""Writes the benchmark tables of the docs from the dated runs in docs/benchmarks/data/*.json.

A table sits between two markers in a Markdown file:

    <!-- bench-table: 2026-12-01-orders full -->
    ... generated, do not edit ...
    <!-- /bench-table -->

``2026-12-01-orders`` names the JSON file, ``full`` / ``summary`` / ``sweep`` the layout. The JSON files
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
MARKER = re.compile(r"(<!-- bench-table: (\S+) (full|summary|sweep) -->\n)(.*?)(<!-- /bench-table -->)", re.S)


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


LAYOUTS = {"full": full, "summary": summary, "sweep": sweep}


def render(text: str) -> str:
    def one(m: re.Match) -> str:
        path = DATA / f"{m.group(2)}.json"
        if not path.exists():
            raise SystemExit(f"bench-table marker names {path.name}, which does not exist")
        report = json.loads(path.read_text())
        return m.group(1) + LAYOUTS[m.group(3)](report) + m.group(5)

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
