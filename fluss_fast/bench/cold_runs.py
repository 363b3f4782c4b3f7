"""Cold runs: the operation once in a fresh process (``cold.py``, which imports nothing of
fluss_fast), the table prepared and the result checked here, as for a warm run."""
from __future__ import annotations

import asyncio
from typing import Any

from . import datasets as ds
from .harness import (
    DATABASE,
    Client,
    Env,
    Mismatch,
    Outcome,
    Skip,
    check,
    create_table,
    drop_table,
    table_name,
    verify_written,
)
from .pk_scenarios import create_pk, filled_for, verify_pk

COLD_TIMEOUT_S = 600.0


_COLD_ENV: dict[str, str] | None = None


async def _cold_child(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    from . import cold

    global _COLD_ENV
    if _COLD_ENV is None:
        env = cold.child_env()
        await asyncio.get_running_loop().run_in_executor(None, cold.warm_bytecode, env)
        _COLD_ENV = env
    proc = await asyncio.create_subprocess_exec(*cold.job_command(job), stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, env=_COLD_ENV)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except (TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        raise
    try:
        report = cold.parse_output(out.decode(errors="replace"))
    except ValueError:
        raise RuntimeError(f"cold run exited with code {proc.returncode}: "
                           f"{err.decode(errors='replace').strip()[-500:]}") from None
    if "error" in report:
        text = report["error"]
        if "MISMATCH" in text:
            raise Mismatch(text)
        raise RuntimeError(f"cold run: {text}")
    return report


async def run_cold(scenario: str, client: Client, env: Env, shared, timeout: float = COLD_TIMEOUT_S) -> Outcome:
    """``scenario`` once in a fresh process of ``client`` (see ``bench.cold``); checked like a warm run."""
    from .cold import COLD_SCENARIOS

    if scenario not in COLD_SCENARIOS:
        raise Skip(f"{scenario} has no cold variant")
    spec = env.spec
    owned = None        # a table made for this run alone, dropped after it
    verify = None
    if scenario in ("append", "write_arrow", "scan_after_write"):
        owned = table_name(f"cold_{scenario}_{client.name}")
        await create_table(client, owned, spec.schema, env.buckets)
        name = owned
        if scenario != "scan_after_write":
            verify = verify_written
    elif scenario in ("upsert", "upsert_arrow"):
        owned, _t, _w = await create_pk(client, env, f"cold_{scenario}_{client.name}")
        name = owned
        verify = verify_pk
    elif scenario in ("lookup", "lookup64", "prefix_lookup"):
        name = await filled_for(client, env, shared, prefix=scenario == "prefix_lookup")
    else:
        name = shared
    _ = env.table  # the child loads the data set from the cache this fills
    job = {"module": client.module.__name__, "bootstrap": env.bootstrap, "scenario": scenario, "table": name,
           "dataset": env.dataset, "rows": env.rows, "buckets": env.buckets, "server_pid": env.server_pid,
           "lookup_budget_s": env.lookup_budget_s,
           "spec": {"id_column": spec.id_column, "string_column": spec.string_column,
                    "short_string_column": spec.short_string_column, "projection": list(spec.projection)}}
    try:
        r = await _cold_child(job, timeout)
        if verify is not None:
            await verify(env, name)
    finally:
        if owned is not None:
            await drop_table(client, owned)
    nbytes = env.table.nbytes
    if scenario in ("scan", "poll", "scan_after_write"):
        check(f"cold {scenario} of {DATABASE}.{name}", ds.Checksum(*r["checksum"]), env.expected())
    elif scenario == "projected_scan":
        if r["columns"] != list(spec.projection):
            raise Mismatch(f"cold projected scan of {DATABASE}.{name}: columns {r['columns']}")
        check(f"cold projected to_arrow of {DATABASE}.{name}", ds.Checksum(*r["checksum"]),
              env.expected(projected=True))
        nbytes = env.table.select(list(spec.projection)).nbytes
    elif scenario in ("lookup", "lookup64", "prefix_lookup"):
        nbytes = env.table.nbytes // max(1, env.table.num_rows) * r["rows"]
    extra = {k: r[k] for k in ("import_s", "import_pyarrow_s", "connect_s", "first_row_s", "user_s", "sys_s",
                               "write_s")
             if r.get(k) is not None}
    return Outcome(r["seconds"], r["rows"], nbytes, note=r.get("note", ""),
                   cpu=(r["user_s"] + r["sys_s"], r["server_cpu_s"]), rss=(r["rss_start"], r["rss_peak"]),
                   extra=extra)
