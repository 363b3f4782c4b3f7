"""Charts of ``fluss-fast bench`` reports: rows/s per scenario (one bar per client, min-max
whiskers), and for ``--sweep`` rows/s against data-set size (one line per scenario and client)."""
from __future__ import annotations

from typing import Any

COLORS = {"fluss_fast": "#2b7bba", "pyfluss": "#f28e2b", "raw": "#7f7f7f"}


def _pyplot():
    try:
        import matplotlib
    except ImportError as exc:
        raise SystemExit("--plot needs matplotlib: pip install 'fluss-fast[bench]' "
                         f"(or pip install matplotlib): {exc}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(report: dict[str, Any], path: str) -> None:
    plt = _pyplot()

    results = [r for r in report["results"] if "rows_per_s" in r]
    scenarios = list(dict.fromkeys(r["scenario"] for r in results))
    clients = list(dict.fromkeys(r["client"] for r in results))
    by = {(r["scenario"], r["client"]): r for r in results}
    width = 0.8 / max(1, len(clients))
    fig, ax = plt.subplots(figsize=(max(7.0, 1.3 * len(scenarios) + 2), 4.8))
    for j, client in enumerate(clients):
        xs, ys, lo, hi = [], [], [], []
        for i, s in enumerate(scenarios):
            r = by.get((s, client))
            if r is None:
                continue
            xs.append(i + (j - (len(clients) - 1) / 2) * width)
            ys.append(r["rows_per_s"])
            lo.append(r["rows_per_s"] - r["rows_per_s_min"])
            hi.append(r["rows_per_s_max"] - r["rows_per_s"])
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=client, color=COLORS.get(client))
    for i, s in enumerate(scenarios):
        a, b = by.get((s, "fluss_fast")), by.get((s, "pyfluss"))
        if a and b and b["rows_per_s"] > 0:
            top = max(a["rows_per_s_max"], b["rows_per_s_max"])
            ax.annotate(f"{a['rows_per_s'] / b['rows_per_s']:.2f}x", (i, top), ha="center", va="bottom",
                        fontsize=9, xytext=(0, 3), textcoords="offset points")
    ax.set_yscale("log")
    ax.set_xticks(range(len(scenarios)))
    ax.set_xticklabels(scenarios, rotation=20, ha="right")
    ax.set_ylabel("rows/s (median, min-max whiskers; log scale)")
    meta = report.get("meta", {})
    ax.set_title(f"fluss-fast bench: {meta.get('dataset', '')} {meta.get('rows', '')} rows, "
                 f"{meta.get('repeat', '')} reps ({meta.get('date', '')[:10]})", fontsize=10)
    ax.legend()
    ax.grid(axis="y", alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


_STYLES = ["-", "--", ":", "-."]


def plot_sweep(report: dict[str, Any], path: str) -> None:
    """rows/s (median, min-max band) against rows in the data set, log-log."""
    plt = _pyplot()
    sweep = report["sweep"]
    keys = list(dict.fromkeys((r["scenario"], r["client"]) for step in sweep for r in step["results"]
                              if "rows_per_s" in r))
    scenarios = list(dict.fromkeys(k[0] for k in keys))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for scen, client in keys:
        xs, ys, lo, hi = [], [], [], []
        for step in sweep:
            for r in step["results"]:
                if r["scenario"] == scen and r["client"] == client and "rows_per_s" in r:
                    xs.append(step["rows"])
                    ys.append(r["rows_per_s"])
                    lo.append(r["rows_per_s_min"])
                    hi.append(r["rows_per_s_max"])
        style = _STYLES[scenarios.index(scen) % len(_STYLES)]
        color = COLORS.get(client)
        ax.plot(xs, ys, style, marker="o", color=color, label=f"{scen} {client}")
        ax.fill_between(xs, lo, hi, color=color, alpha=0.12)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows in the data set")
    ax.set_ylabel("rows/s (median, min-max band)")
    meta = report.get("meta", {})
    ax.set_title(f"fluss-fast bench --sweep: {meta.get('dataset', '')}, {meta.get('repeat', '')} reps "
                 f"({meta.get('date', '')[:10]})", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
