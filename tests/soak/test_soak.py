"""The fault suite's checks, for minutes instead of seconds (release checks; not run by CI).

    FLUSS_FAST_SOAK_SECONDS=600 python -m pytest -q -s tests/soak -o addopts="-p no:cacheprovider"

Rounds of: every writer kind writing, a poll scanner reading, and one fault picked at random
(drop, reset, cut, delay, freeze, kill -9) injected through the proxy, until the time is up; each
round must end with every acknowledged id stored exactly once and read gap-free. Then the server's
memory across connection churn is measured. The figures are printed at the end (``-s``).
"""
from __future__ import annotations

import asyncio
import os
import random
import socket
import time

import pytest

import fluss_fast as fluss
from fluss_fast.rpc import frame as F
from fluss_fast.rpc.api import Api

from fault.kinds import CLIENT, FAULTS, WRITERS, Target, run_with_faults
from fault.proxy import FaultProxy

SECONDS = float(os.environ.get("FLUSS_FAST_SOAK_SECONDS", "120"))
pytestmark = pytest.mark.timeout(int(SECONDS * 3 + 300))


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def test_soak(start_server, unique_name):
    srv = start_server(sasl=False, tablet_servers=2)
    proxy = FaultProxy(srv.bootstrap_servers).start()
    target = Target(srv, proxy)
    rng = random.Random(int(os.environ.get("FLUSS_FAST_SOAK_SEED", "7")))
    stats = {"rounds": 0, "rows": 0, "faults": {f: 0 for f in FAULTS}, "worst_flush_s": 0.0}
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": target.bootstrap, **CLIENT}))
    admin = conn.get_admin()
    end = time.monotonic() + SECONDS
    try:
        while time.monotonic() < end:
            fault = rng.choice(FAULTS)
            tables = []
            for kind in WRITERS:
                path = fluss.TablePath("fluss", unique_name("soak"))
                await admin.create_table(path, kind.descriptor())
                t = await conn.get_table(path)
                tables.append((kind, t, kind.open(t)))
            scanner = await tables[0][1].new_scan().create_log_scanner()
            buckets = tables[0][1].get_table_info().num_buckets
            scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
            seen = []

            async def work(done, scanner=scanner, seen=seen, tables=tables):
                n = 0
                while True:
                    last = done.is_set()
                    for kind, _t, w in tables:
                        kind.write(w, range(n, n + 50))
                    t0 = time.monotonic()
                    for _kind, _t, w in tables:
                        await w.flush()
                    stats["worst_flush_s"] = max(stats["worst_flush_s"], time.monotonic() - t0)
                    n += 50
                    recs = await scanner.poll(50)
                    seen.extend(r.row["id"] for r in recs)
                    if last:
                        return n

            n = await run_with_faults(target, fault, work, rounds=rng.randint(1, 3), pause=rng.uniform(0.1, 1.0))
            stats["faults"][fault] += 1
            for kind, t, _w in tables:
                ids = await kind.read_ids(t)
                assert sorted(ids) == list(range(n)), f"{kind.name} after {fault}: {len(ids)} rows for {n} ids"
            deadline = time.monotonic() + 30
            while len(seen) < n and time.monotonic() < deadline:
                seen.extend(r.row["id"] for r in await scanner.poll(300))
            assert sorted(seen) == list(range(n)), f"poll scanner after {fault}"
            stats["rounds"] += 1
            stats["rows"] += n * len(tables)
        # server memory across 1,000 connections opened and closed
        host, port = srv.bootstrap_servers.rsplit(":", 1)
        before = _rss_mb(srv.proc.pid)
        for _ in range(1000):
            s = socket.create_connection((host, int(port)))
            s.sendall(F.encode_request(Api.API_VERSIONS, 0, 1, b""))
            s.recv(65536)
            s.close()
        await asyncio.sleep(1)
        stats["rss_mb_before_churn"] = round(before, 1)
        stats["rss_mb_after_1000_connections"] = round(_rss_mb(srv.proc.pid), 1)
        assert stats["rss_mb_after_1000_connections"] < before + 50
    finally:
        await conn.close()
        proxy.close()
    print(f"\nSOAK {SECONDS:.0f}s: {stats}")
