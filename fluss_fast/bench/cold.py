"""Cold runs of the bench scenarios: each in a fresh process that imports the client, connects, gets
the table and does the operation once, as a script that runs once does.

The parent (``cli.run_all``) prepares the table as for a warm run, starts

    python .../fluss_fast/bench/cold.py '<json job>'

(by file path, so that nothing imports the client before the child times its import: ``-m`` would
import the ``fluss_fast`` package first) and reads one ``COLD {json}`` line back. What the child
measures:

* ``import_s``: importing the client module, ``import_pyarrow_s`` then pyarrow (pyfluss defers it
  to its first use; neither is part of any other figure);
* ``connect_s``: ``FlussConnection.create`` plus ``get_table``;
* ``seconds``: the operation, timed from its call (for ``scan_after_write``: the scan only, the write
  before it in ``write_s``);
* ``first_row_s``: from the start of ``connect`` to the first row in hand (reads only; for
  ``scan_after_write`` the write counts too): what a user waits for, import excluded, connect
  included;
* ``user_s`` / ``sys_s``: this process's CPU in the operation, ``server_cpu_s`` the server's;
* ``rss_start`` / ``rss_peak``: RSS before connecting (after import and data load) and the peak
  until the operation ended (Linux ``clear_refs`` resets the peak mark).

Checks: the parent verifies what was written (read back by its verifier) and compares the checksum
the child reports for a read; lookups are checked in the child, which has the data set at hand.
"""
from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import resource
import sys
import time
from typing import Any

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: scenarios with a cold variant; the rest (ceilings, remote tiers) run warm only
COLD_SCENARIOS = ("append", "write_arrow", "scan", "projected_scan", "poll", "scan_after_write",
                  "upsert", "upsert_arrow", "lookup", "lookup64", "prefix_lookup")
PREFIX = "COLD "


def job_command(job: dict[str, Any]) -> list[str]:
    return [sys.executable, os.path.abspath(__file__), json.dumps(job)]


def child_env(cache_dir: str | None = None) -> dict[str, str]:
    """The environment of a cold child: with ``PYTHONDONTWRITEBYTECODE`` set (as in some CI and
    sandbox images) an editable checkout has no bytecode, and every fresh process would compile
    every module it imports -- ~150 ms of fluss_fast's import, and each module imported lazily on
    the first connect or scan -- which a pip-installed package (compiled at install) never does.
    So the children keep bytecode under ``cache_dir`` (``PYTHONPYCACHEPREFIX``), as an installed
    package has it; ``warm_bytecode`` fills it before the first timed child."""
    env = dict(os.environ)
    if env.pop("PYTHONDONTWRITEBYTECODE", None) is not None or sys.dont_write_bytecode:
        env["PYTHONPYCACHEPREFIX"] = cache_dir or os.path.join(_ROOT, "bench_results", "pycache")
    return env


def warm_bytecode(env: dict[str, str]) -> None:
    """Compile the package once (into ``env``'s cache) so that no timed child compiles it."""
    import subprocess

    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(_ROOT, "fluss_fast")], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300, check=False)


def parse_output(text: str) -> dict[str, Any]:
    """The child's report: the last ``COLD`` line of its stdout."""
    for line in reversed(text.splitlines()):
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX):])
    raise ValueError("the cold run printed no report")


# ------------------------------------------------------------------------------------------------
# the child
# ------------------------------------------------------------------------------------------------
def _rusage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def status_bytes(*keys: str):
    """Fields of /proc/self/status in bytes (0 when unreadable)."""
    vals = dict.fromkeys(keys, 0)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in vals:
                    vals[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return tuple(vals[k] for k in keys)


def proc_cpu_s(pid: int | None) -> float:
    """utime + stime of process ``pid`` in seconds (Linux /proc), or -1 when unavailable."""
    if pid is None:
        return -1.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return -1.0


def reset_peak_rss() -> int:
    """RSS now, the kernel's peak mark reset to it (0 when it cannot be). Memory freed by loading the
    data set goes back first: left cached in an allocator, it would sit in the baseline and be
    reused by the operation, hiding what the operation added."""
    import ctypes
    import gc

    import pyarrow as pa

    gc.collect()
    with contextlib.suppress(Exception):  # older pyarrow
        pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return 0
    return status_bytes("VmRSS")[0]


class _Clock:
    """Times of one cold run; ``mark_first_row`` keeps the first call only."""

    def __init__(self) -> None:
        self.connect_at = 0.0
        self.first_row_at: float | None = None

    def mark_first_row(self) -> None:
        if self.first_row_at is None:
            self.first_row_at = time.perf_counter()


_DATABASE = "fluss_fast_bench"   # harness.DATABASE (not imported: that would import the client)
_WRITES = ("append", "write_arrow", "upsert", "upsert_arrow")


async def _run(job: dict[str, Any]) -> dict[str, Any]:
    t = time.perf_counter()
    mod = importlib.import_module(job["module"])
    import_s = time.perf_counter() - t
    # pyfluss imports pyarrow only when first used, fluss_fast at once: imported here, outside the
    # timed part for both, so that neither's first row pays for it
    t = time.perf_counter()
    import pyarrow  # noqa: F401
    import_s_pyarrow = time.perf_counter() - t

    scenario = job["scenario"]
    data = dicts = None
    if scenario not in ("scan", "projected_scan", "poll"):
        # a pyfluss child imports fluss_fast here for the data set, after its own import was timed
        from fluss_fast.bench import datasets as ds

        data = ds.load(job["dataset"], job["rows"])
        if scenario in ("append", "upsert") or (scenario == "upsert_arrow" and job["module"] != "fluss_fast"):
            dicts = ds.to_rows(data)
    server_pid = job.get("server_pid")
    rss_start = reset_peak_rss()
    clock = _Clock()
    clock.connect_at = time.perf_counter()
    conn = await mod.FlussConnection.create(mod.Config({"bootstrap.servers": job["bootstrap"]}))
    out: dict[str, Any] = {}
    try:
        table = await conn.get_table(mod.TablePath(job.get("database", _DATABASE), job["table"]))
        connect_s = time.perf_counter() - clock.connect_at
        if scenario == "scan_after_write":
            t = time.perf_counter()
            writer = table.new_append().create_writer()
            writer.write_arrow(_chunks(data))
            await writer.flush()
            out["write_s"] = time.perf_counter() - t
        s0 = proc_cpu_s(server_pid)
        u0, k0 = _rusage()
        t0 = time.perf_counter()
        result = await _operation(scenario, mod, table, job, data, dicts, clock)
        seconds = time.perf_counter() - t0
        u1, k1 = _rusage()
        s1 = proc_cpu_s(server_pid)
        # the result is still alive here: the peak counts it, as a user's would
        rss_peak = status_bytes("VmHWM")[0] if rss_start else 0
    finally:
        await conn.close()
    out.update(_check(scenario, job, result, data))
    out.update(import_s=import_s, import_pyarrow_s=import_s_pyarrow, connect_s=connect_s, seconds=seconds,
               user_s=u1 - u0, sys_s=k1 - k0,
               server_cpu_s=s1 - s0 if s0 >= 0 and s1 >= 0 else -1.0, rss_start=rss_start,
               rss_peak=rss_peak,
               first_row_s=(clock.first_row_at - clock.connect_at) if clock.first_row_at else None)
    return out


def _chunks(table, rows_per_batch: int = 65_536):
    import pyarrow as pa

    return pa.Table.from_batches(table.to_batches(max_chunksize=rows_per_batch), schema=table.schema)


async def _operation(scenario, mod, table, job, data, dicts, clock: _Clock):
    """Does the operation; returns what it read (checked by ``_check`` after the clock stopped)."""
    buckets = job["buckets"]
    spec = job["spec"]
    if scenario in ("scan", "projected_scan", "scan_after_write"):
        scan = table.new_scan()
        if scenario == "projected_scan":
            scan = scan.project_by_name(list(spec["projection"]))
        scanner = await scan.create_record_batch_log_scanner()
        scanner.subscribe_buckets({b: mod.EARLIEST_OFFSET for b in range(buckets)})
        got = await scanner.to_arrow()
        clock.mark_first_row()
        return got
    if scenario == "poll":
        ids: list[int] = []
        strs: list[str | None] = []
        id_col, str_col = spec["id_column"], spec["string_column"]
        scanner = await table.new_scan().create_log_scanner()
        scanner.subscribe_buckets({b: mod.EARLIEST_OFFSET for b in range(buckets)})
        n = job["rows"]
        stall_at = time.monotonic() + 60
        while len(ids) < n:
            for rec in await scanner.poll(500):
                row = rec.row
                ids.append(row[id_col])
                strs.append(row[str_col])
            if ids:
                clock.mark_first_row()
                stall_at = time.monotonic() + 60
            elif time.monotonic() > stall_at:
                raise RuntimeError(f"poll stalled at {len(ids)} of {n} records")
        return ids, strs
    if scenario in _WRITES:
        appends = scenario in ("append", "write_arrow")
        writer = (table.new_append() if appends else table.new_upsert()).create_writer()
        if scenario == "write_arrow":
            writer.write_arrow(_chunks(data))
        elif scenario == "upsert_arrow" and hasattr(writer, "upsert_arrow"):
            writer.upsert_arrow(_chunks(data))
        else:
            put = writer.append if appends else writer.upsert
            for row in dicts:
                put(row)
        await writer.flush()
        return hasattr(writer, "upsert_arrow")
    if scenario in ("lookup", "lookup64"):
        return await _lookups(scenario, table, job, data, clock)
    if scenario == "prefix_lookup":
        return await _prefix_lookups(table, job, data, clock)
    raise ValueError(f"scenario {scenario!r} has no cold variant")


def _check(scenario, job, result, data) -> dict[str, Any]:
    """What the parent needs to judge the run: checksums of reads, counts of writes."""
    from fluss_fast.bench import datasets as ds

    spec = job["spec"]
    if scenario in ("scan", "projected_scan", "scan_after_write"):
        proj = scenario == "projected_scan"
        cs = ds.checksum(result, spec["id_column"], spec["short_string_column" if proj else "string_column"])
        return {"rows": result.num_rows, "nbytes": result.nbytes, "columns": result.column_names,
                "checksum": [cs.rows, cs.id_sum, cs.str_hash]}
    if scenario == "poll":
        cs = ds.checksum_values(*result)
        return {"rows": cs.rows, "checksum": [cs.rows, cs.id_sum, cs.str_hash]}
    if scenario in _WRITES:
        note = ""
        if scenario == "upsert_arrow":
            note = "upsert_arrow" if result else "per-row upsert (no bulk API)"
        return {"rows": data.num_rows, "note": note}
    ids, strs, want, note = result
    got = ds.checksum_values(ids, strs)
    if got != want:
        raise RuntimeError(f"MISMATCH {scenario}: got {got}, expected {want}")
    return {"rows": len(ids), "note": note}


async def _lookups(scenario, table, job, data, clock: _Clock):
    from fluss_fast.bench.pk_scenarios import CONCURRENCY, LOOKUPS, expected_for_keys, sample_keys

    spec = job["spec"]
    id_col, str_col = spec["id_column"], spec["string_column"]
    keys = sample_keys(data, id_col, LOOKUPS)
    concurrency = CONCURRENCY if scenario == "lookup64" else 1
    lookuper = table.new_lookup().create_lookuper()
    keys, results = await lookup_keys(lookuper, id_col, keys, concurrency, job["lookup_budget_s"],
                                      clock.mark_first_row)
    missing = [k for k, r in zip(keys, results, strict=True) if r is None]
    if missing:
        raise RuntimeError(f"MISMATCH {len(missing)} of {len(keys)} lookups found nothing "
                           f"(first: {id_col}={missing[0]})")
    return ([r[id_col] for r in results], [r[str_col] for r in results],
            expected_for_keys(data, id_col, str_col, keys), "")


async def lookup_keys(lookuper, id_col: str, keys: list, concurrency: int, budget_s: float, after_each=None):
    """Looks up ``keys`` with ``concurrency`` lookups in flight until ``budget_s`` runs out (the warm
    scenario and the cold child share it); returns the keys looked up and their rows, in key order."""
    results: list[Any] = [None] * len(keys)
    done = [False] * len(keys)
    stop_at = time.monotonic() + budget_s

    async def worker(start: int) -> None:
        for i in range(start, len(keys), concurrency):
            if time.monotonic() > stop_at:
                return
            results[i] = await lookuper.lookup({id_col: keys[i]})
            done[i] = True
            if after_each is not None:
                after_each()

    if concurrency == 1:
        await worker(0)
    else:
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return ([k for k, d in zip(keys, done, strict=True) if d],
            [r for r, d in zip(results, done, strict=True) if d])


async def prefix_lookup_users(lookuper, users, budget_s: float, id_col: str, str_col: str, after_each=None):
    """Prefix-looks up each user id in turn until ``budget_s`` runs out (the warm scenario and the
    cold child share it); returns the ids and strings of the rows found and the users looked up."""
    ids, strs, done_users = [], [], []
    stop_at = time.monotonic() + budget_s
    for u in users:
        if time.monotonic() > stop_at:
            break
        done_users.append(u)
        for row in await lookuper.lookup({"user_id": u}):
            ids.append(row[id_col])
            strs.append(row[str_col])
        if after_each is not None:
            after_each()
    return ids, strs, done_users


async def _prefix_lookups(table, job, data, clock: _Clock):
    import random

    import pyarrow as pa
    import pyarrow.compute as pc

    from fluss_fast.bench import datasets as ds

    spec = job["spec"]
    lookuper = table.new_lookup().lookup_by(["user_id"]).create_lookuper()
    users = sorted(set(data.column("user_id").to_pylist()))
    users = random.Random(11).sample(users, min(2000, len(users)))
    id_col, str_col = spec["id_column"], spec["string_column"]
    ids, strs, done_users = await prefix_lookup_users(lookuper, users, job["lookup_budget_s"], id_col, str_col,
                                                      clock.mark_first_row)
    sub = data.filter(pc.is_in(data.column("user_id"), value_set=pa.array(done_users, pa.int64())))
    return ids, strs, ds.checksum(sub, id_col, str_col), f"{len(done_users)} prefixes"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m fluss_fast.bench.cold '<json job>'", file=sys.stderr)
        return 2
    job = json.loads(argv[0])
    try:
        out = asyncio.run(_run(job))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as the run's error
        text, name = str(exc), type(exc).__name__
        print(PREFIX + json.dumps({"error": text if text.startswith(name) else f"{name}: {text}"}),
              flush=True)
        sys.stdout.flush()
        os._exit(1)
    print(PREFIX + json.dumps(out), flush=True)
    # pyfluss's runtime threads may linger; the report is out, nothing else to wait for
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    # run by path: the checkout, not this folder, goes first on the path (a module here named like
    # a top-level one, e.g. ``cli``, must not shadow it)
    sys.path[0] = _ROOT
    sys.exit(main())
