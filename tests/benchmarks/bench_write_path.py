"""Write-path micro-harness: fluss_fast vs pyfluss (``import fluss``) on one embedded server.

Run as a script (not collected by pytest)::

    python tests/benchmarks/bench_write_path.py [--rounds 3] [--rows 200000] [--arrow-rows 1000000]
        [--clients fluss_fast,pyfluss] [--scenarios append_dict,append_tuple,write_arrow,...]
        [--json out.json] [--profile fluss_fast:append_dict:/tmp/prof.out] [--baseline-root DIR]

Scenarios: ``append_dict`` / ``append_tuple`` (per-row appends of 10 mixed columns, default 200k
rows), ``write_arrow`` (one 1M-row table), ``write_arrow_batch`` (the same rows as 10k-row
batches), ``append_dict_keyed`` (the dict rows into a table with a bucket key), each + flush().

It starts ``python -m fluss_fast server`` in a subprocess, warms it with one small untimed pass
per client, then for every round runs each client in its own fresh worker process (the order
rotates between rounds, so no client always gets the warmer machine). A worker creates a fresh table per scenario,
builds the input before the clock starts and times only the writes plus the final ``flush()``. The report gives the
median of the rounds per client and scenario and the fluss_fast / pyfluss ratio of the medians (> 1 = faster),
plus the median of the per-round ratios (steadier on a machine whose load drifts), and the
client process's CPU time per row (all its threads; steadier still, but blind to waiting). With
``--baseline-root DIR`` a third client, ``baseline``, runs the ``fluss_fast`` package found in DIR
(e.g. an older copy of the tree) in the same rounds.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SCENARIOS = ("append_dict", "append_tuple", "write_arrow", "write_arrow_batch", "append_dict_keyed")
BUCKETS = 3


def arrow_schema():
    import pyarrow as pa

    return pa.schema([
        ("id", pa.int64()), ("user_id", pa.int32()), ("name", pa.string()), ("price", pa.float64()),
        ("qty", pa.int16()), ("ok", pa.bool_()), ("city", pa.string()), ("ratio", pa.float32()),
        ("seq", pa.int64()), ("ts", pa.timestamp("us")),
    ])


def make_rows(n: int):
    base = dt.datetime(2024, 5, 1, 12, 0, 0)
    cities = ["Berlin", "Paris", "Lisbon", "Oslo", "Rome", "Madrid", "Vienna", None]
    names = [f"user-{i:05d}" for i in range(997)]
    stamps = [base + dt.timedelta(seconds=i) for i in range(1000)]
    cols = arrow_schema().names
    tuples = [(i, i % 100_000, names[i % 997], i * 0.25, i % 300, i % 3 == 0, cities[i % 8],
               float(i % 1000) / 7.0, i * 7, stamps[i % 1000]) for i in range(n)]
    dicts = [dict(zip(cols, t, strict=True)) for t in tuples]
    return dicts, tuples


def make_table(n: int):
    import numpy as np
    import pyarrow as pa

    i = np.arange(n, dtype=np.int64)
    cities = pa.array(["Berlin", "Paris", "Lisbon", "Oslo", "Rome", "Madrid", "Vienna", None])
    names = pa.array([f"user-{k:05d}" for k in range(997)])
    ts0 = np.datetime64("2024-05-01T12:00:00", "us")
    return pa.table([
        pa.array(i), pa.array((i % 100_000).astype(np.int32)), names.take(pa.array(i % 997)),
        pa.array(i * 0.25), pa.array((i % 300).astype(np.int16)), pa.array(i % 3 == 0),
        cities.take(pa.array(i % 8)), pa.array((i % 1000).astype(np.float32) / np.float32(7.0)),
        pa.array(i * 7), pa.array(ts0 + (i % 1000).astype("timedelta64[s]")),
    ], schema=arrow_schema())


# -- worker (one client, every scenario, fresh process) --------------------------------------------
def _cpu() -> float:
    """CPU seconds of this process, all threads (the client's own I/O and encoding threads too)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def worker(client: str, bootstrap: str, scenarios, rows: int, arrow_rows: int, batch_rows: int,
                 profile: str | None) -> dict:
    if client in ("fluss_fast", "baseline"):
        import fluss_fast as mod
    else:
        import fluss as mod
    conn = await mod.FlussConnection.create(mod.Config({"bootstrap.servers": bootstrap}))
    admin = conn.get_admin()
    out = {}
    need_rows = any(s.startswith("append") for s in scenarios)
    dicts, tuples = make_rows(rows) if need_rows else ([], [])
    table_in = make_table(arrow_rows) if any(s.startswith("write") for s in scenarios) else None
    for sc in scenarios:
        path = mod.TablePath("fluss", f"bw_{client}_{sc}_{uuid.uuid4().hex[:8]}")
        # append_dict_keyed: the same rows into a table with a bucket key (hashed per row)
        keys = {"bucket_keys": ["user_id"]} if sc.endswith("_keyed") else {}
        await admin.create_table(path, mod.TableDescriptor(mod.Schema(arrow_schema()),
                                                           bucket_count=BUCKETS, **keys))
        table = await conn.get_table(path)
        w = table.new_append().create_writer()
        if sc == "write_arrow_batch":
            batches = table_in.slice(0, arrow_rows).to_batches(max_chunksize=batch_rows)
        prof = None
        if profile and profile.split(":")[1] == sc:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        c0 = _cpu()
        t0 = time.perf_counter()
        if sc in ("append_dict", "append_dict_keyed", "append_tuple"):
            inputs = tuples if sc == "append_tuple" else dicts
            app = w.append
            for r in inputs:
                app(r)
            n = len(inputs)
            nbytes = None
        elif sc == "write_arrow":
            w.write_arrow(table_in)
            n = table_in.num_rows
            nbytes = table_in.nbytes
        else:
            wb = w.write_arrow_batch
            for b in batches:
                wb(b)
            n = sum(b.num_rows for b in batches)
            nbytes = sum(b.nbytes for b in batches)
        t_append = time.perf_counter() - t0
        await w.flush()
        secs = time.perf_counter() - t0
        cpu = _cpu() - c0
        if prof is not None:
            prof.disable()
            prof.dump_stats(profile.split(":", 2)[2])
        out[sc] = {"seconds": secs, "append_seconds": t_append, "cpu_seconds": cpu, "rows": n,
                   "bytes": nbytes}
        await admin.drop_table(path, ignore_if_not_exists=True)
    await conn.close()
    out["_module"] = os.path.dirname(mod.__file__)  # which package was measured
    return out


# -- driver ----------------------------------------------------------------------------------------
def start_server(data_dir: str):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.Popen([sys.executable, "-m", "fluss_fast", "server", "--data-dir", data_dir,
                          "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, env=env, cwd=ROOT,
                         text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        if line.startswith("READY"):
            for part in line.split():
                if part.startswith("bootstrap.servers="):
                    return p, part.split("=", 1)[1]
    p.kill()
    raise SystemExit("the embedded server did not print READY")


def run_worker(client, bootstrap, opts, profile=None) -> dict:
    env = dict(os.environ)
    root = opts.baseline_root if client == "baseline" else ROOT
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", client, "--bootstrap", bootstrap,
           "--root", root,
           "--rows", str(opts.rows), "--arrow-rows", str(opts.arrow_rows),
           "--batch-rows", str(opts.batch_rows), "--scenarios", ",".join(opts.scenarios)]
    if profile:
        cmd += ["--profile", profile]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    if r.returncode != 0:
        raise SystemExit(f"worker {client} failed:\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def rate(res: dict) -> float:
    return res["rows"] / res["seconds"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--arrow-rows", type=int, default=1_000_000)
    ap.add_argument("--batch-rows", type=int, default=10_000)
    ap.add_argument("--clients", default="fluss_fast,pyfluss")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--json")
    ap.add_argument("--profile", help="CLIENT:SCENARIO:OUTFILE (cProfile of one worker)")
    ap.add_argument("--bootstrap", help="use a running server instead of starting one")
    ap.add_argument("--baseline-root", help="DIR holding another fluss_fast package to compare")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    opts.scenarios = [s for s in opts.scenarios.split(",") if s]
    if opts.worker:
        sys.path.insert(0, opts.root)  # this tree's (or the baseline's) fluss_fast, not an installed one
        prof = opts.profile if opts.profile and opts.profile.split(":")[0] == opts.worker else None
        res = asyncio.run(worker(opts.worker, opts.bootstrap, opts.scenarios, opts.rows,
                                 opts.arrow_rows, opts.batch_rows, prof))
        print(json.dumps(res))
        return 0
    clients = [c for c in opts.clients.split(",") if c]
    if opts.baseline_root and "baseline" not in clients:
        clients.append("baseline")
    server = None
    tmp = None
    bootstrap = opts.bootstrap
    if bootstrap is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench-write-")
        server, bootstrap = start_server(tmp.name)
    results = {c: {s: [] for s in opts.scenarios} for c in clients}
    try:
        # one small untimed pass per client first: the fresh server's first tables, connections
        # and files would otherwise count against whichever client happens to go first
        warm = argparse.Namespace(**vars(opts))
        warm.rows, warm.arrow_rows, warm.batch_rows = 2000, 20000, 2000
        for c in clients:
            run_worker(c, bootstrap, warm)
        for rnd in range(opts.rounds):
            k = rnd % len(clients)
            order = clients[k:] + clients[:k]  # each client goes first equally often
            for c in order:
                res = run_worker(c, bootstrap, opts, opts.profile if rnd == 0 else None)
                if rnd == 0:
                    print(f"{c}: {res.get('_module')}", file=sys.stderr)
                res.pop("_module", None)
                for s, v in res.items():
                    results[c][s].append(v)
                line = "  ".join(f"{s}={rate(v) / 1e3:.0f}k/s" for s, v in res.items())
                print(f"round {rnd + 1} {c:<10} {line}", file=sys.stderr, flush=True)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
        if tmp is not None:
            tmp.cleanup()
    summary = {}
    # fluss_fast against each other client: the ratio of the medians, and the median of the
    # per-round ratios (the load of a shared machine drifts between rounds; one round's runs are
    # close together in time, so their ratio is the steadier figure)
    others = [c for c in clients if c != "fluss_fast"] if "fluss_fast" in clients else []
    print(f"\n{'scenario':<18}" + "".join(f"{c + ' rows/s':>22}{'MB/s':>8}" for c in clients)
          + "".join(f"{'ff/' + c[:8] + ' med':>17}{'per-round':>11}" for c in others))
    for s in opts.scenarios:
        cells = ""
        med = {}
        for c in clients:
            runs = results[c][s]
            med[c] = statistics.median(rate(v) for v in runs)
            mb = [v["bytes"] / v["seconds"] / 1e6 for v in runs if v["bytes"]]
            mbs = f"{statistics.median(mb):8.0f}" if mb else f"{'':>8}"
            cells += f"{med[c]:22,.0f}{mbs}"
            summary.setdefault(s, {})[c] = {"median_rows_per_s": med[c],
                                            "runs_rows_per_s": [rate(v) for v in runs]}
        for c in others:
            r = med["fluss_fast"] / med[c]
            pairs = [rate(a) / rate(b) for a, b in zip(results["fluss_fast"][s], results[c][s], strict=True)]
            rr = statistics.median(pairs)
            summary[s][f"ratio_vs_{c}"] = r
            summary[s][f"ratio_vs_{c}_per_round"] = pairs
            cells += f"{r:17.2f}{rr:11.2f}"
        print(f"{s:<18}{cells}")
    # CPU time is steadier than wall time on a shared machine: it does not count the time the
    # process waited for a core (it does not count the server's work either)
    print(f"\n{'client CPU per row':<18}" + "".join(f"{c + ' us/row':>30}" for c in clients)
          + "".join(f"{c[:8] + '/ff':>28}" for c in others))
    for s in opts.scenarios:
        cpu = {c: statistics.median(v["cpu_seconds"] / v["rows"] * 1e6 for v in results[c][s])
               for c in clients}
        for c in clients:
            summary[s][c]["median_cpu_us_per_row"] = cpu[c]
        print(f"{s:<18}" + "".join(f"{cpu[c]:30.3f}" for c in clients)
              + "".join(f"{cpu[c] / cpu['fluss_fast']:28.2f}" for c in others))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"rounds": opts.rounds, "rows": opts.rows, "arrow_rows": opts.arrow_rows,
                       "summary": summary, "raw": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
