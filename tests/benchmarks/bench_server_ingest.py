"""Server ingest ceiling, no client library: one ProduceLog frame (a ~1 MiB Arrow batch, built with the
shared codecs) replayed over a raw socket (``fluss_fast.bench.ceiling.RawConnection``: ApiVersions
first, then 8 requests in flight), plus pipelined ListDatabases for the small-request rate.

Run as a script (not collected by pytest)::

    python tests/benchmarks/bench_server_ingest.py [--gib 2] [--batch-kib 1024] [--in-flight 8]
        [--rounds 3] [--baseline-root DIR]

Each round starts a fresh ``python -m fluss_fast server`` (from this tree, and from DIR when
``--baseline-root`` is given, alternating) and reports wall GB/s and the server process's CPU seconds
per GB split into user and system time. On a shared 2-core box the wall numbers drift with the
neighbours' load; the best of several rounds and the CPU split are the steadier figures. Ingest is
bounded by two kernel copies (socket -> request buffer, request buffer -> page cache) and CRC32C.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, TREE)

from fluss_fast.bench.ceiling import RawConnection  # noqa: E402
from fluss_fast.codec.log.arrowlog import ArrowLogCodec  # noqa: E402
from fluss_fast.datatypes import SchemaInfo  # noqa: E402
from fluss_fast.rpc import fluss_api_pb2 as pb  # noqa: E402
from fluss_fast.rpc.api import Api  # noqa: E402

COLUMNS = [{"name": "id", "data_type": {"type": "BIGINT"}, "id": 0},
           {"name": "v", "data_type": {"type": "DOUBLE"}, "id": 1},
           {"name": "s", "data_type": {"type": "STRING"}, "id": 2}]


def start_server(root: str):
    data_dir = tempfile.mkdtemp(prefix="ingest-bench-")
    proc = subprocess.Popen([sys.executable, "-m", "fluss_fast", "server", "--data-dir", data_dir,
                             "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True, cwd=root)
    line = proc.stdout.readline()
    if not line.startswith("READY"):
        proc.kill()
        raise RuntimeError(f"server in {root} did not start: {line!r}")
    host, port = line.split("=", 1)[1].split()[0].rsplit(":", 1)
    return proc, data_dir, host, int(port)


def cpu_times(pid: int):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def build_request(table_id: int, batch_bytes: int) -> bytes:
    schema = SchemaInfo.from_json({"columns": COLUMNS})
    n = max(1, batch_bytes // 35)
    rng = np.random.default_rng(1)
    rb = pa.RecordBatch.from_pydict({"id": pa.array(np.arange(n, dtype=np.int64)), "v": pa.array(rng.random(n)),
                                     "s": pa.array([f"s{i:014d}" for i in range(n)])})
    records = ArrowLogCodec(schema, "NONE").build(rb, schema_id=1)
    return pb.ProduceLogRequest(acks=-1, table_id=table_id, timeout_ms=30000, buckets_req=[
        pb.PbProduceLogReqForBucket(bucket_id=0, records=records)]).SerializeToString()


async def replay(conn: RawConnection, api_key: int, body: bytes, count: int, in_flight: int, check) -> None:
    sent = done = 0
    while done < count:
        while sent < count and sent - done < in_flight:
            await conn.send(api_key, body)
            sent += 1
        _, resp = await conn.receive()
        check(resp)
        done += 1


def produce_ok(resp) -> None:
    r = pb.ProduceLogResponse.FromString(resp)
    if r.buckets_resp[0].error_code:
        raise RuntimeError(f"produce failed: {r.buckets_resp[0].error_message}")


async def one_round(root: str, args) -> dict:
    proc, data_dir, host, port = start_server(root)
    try:
        coord = await RawConnection.open(host, port)
        desc = {"version": 1, "schema": {"version": 1, "columns": COLUMNS, "highest_field_id": 2},
                "partition_key": [], "bucket_count": 1,
                "properties": {"table.log.arrow.compression.type": "NONE"}, "custom_properties": {}}
        path = pb.PbTablePath(database_name="fluss", table_name="ingest")
        await coord.call(Api.CREATE_TABLE, pb.CreateTableRequest(table_path=path, table_json=json.dumps(desc).encode(),
                                                                 ignore_if_exists=False), pb.CreateTableResponse)
        md = await coord.call(Api.GET_METADATA, pb.MetadataRequest(table_path=[path]), pb.MetadataResponse)
        node = md.tablet_servers[0]
        body = build_request(md.table_metadata[0].table_id, args.batch_kib * 1024)
        count = max(1, int(args.gib * (1 << 30)) // len(body))

        small = pb.ListDatabasesRequest().SerializeToString()
        t0 = time.perf_counter()
        await replay(coord, Api.LIST_DATABASES, small, args.small, 256, lambda r: None)
        small_rate = args.small / (time.perf_counter() - t0)
        coord.close()

        tablet = await RawConnection.open(node.host, node.port)
        await replay(tablet, Api.PRODUCE_LOG, body, 16, args.in_flight, produce_ok)  # warm-up
        u0, s0 = cpu_times(proc.pid)
        t0 = time.perf_counter()
        await replay(tablet, Api.PRODUCE_LOG, body, count, args.in_flight, produce_ok)
        wall = time.perf_counter() - t0
        u1, s1 = cpu_times(proc.pid)
        tablet.close()
        gb = count * len(body) / 1e9
        return {"frame_mib": len(body) / 2 ** 20, "gb_s": gb / wall, "cpu_s_per_gb": (u1 - u0 + s1 - s0) / gb,
                "user_s_per_gb": (u1 - u0) / gb, "sys_s_per_gb": (s1 - s0) / gb, "small_per_s": small_rate}
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--batch-kib", type=int, default=1024)
    ap.add_argument("--in-flight", type=int, default=8)
    ap.add_argument("--small", type=int, default=60000, help="ListDatabases requests for the small-request rate")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline-root", help="a directory holding another fluss_fast package to compare")
    args = ap.parse_args()
    roots = {"this": TREE}
    if args.baseline_root:
        roots["baseline"] = os.path.abspath(args.baseline_root)
    results = {name: [] for name in roots}
    for _ in range(args.rounds):
        for name, root in roots.items():
            r = asyncio.run(one_round(root, args))
            results[name].append(r)
            print(f"{name:8s} {r['frame_mib']:.2f} MiB frames: {r['gb_s']:.2f} GB/s, server {r['cpu_s_per_gb']:.2f} "
                  f"cpu-s/GB (user {r['user_s_per_gb']:.2f}, sys {r['sys_s_per_gb']:.2f}); "
                  f"small requests {r['small_per_s']:,.0f}/s", flush=True)
    for name, rs in results.items():
        gbs = [r["gb_s"] for r in rs]
        cpu = [r["cpu_s_per_gb"] for r in rs]
        small = [r["small_per_s"] for r in rs]
        print(f"{name:8s} GB/s best {max(gbs):.2f} median {statistics.median(gbs):.2f}; cpu-s/GB best {min(cpu):.2f} "
              f"median {statistics.median(cpu):.2f}; small requests/s best {max(small):,.0f} "
              f"median {statistics.median(small):,.0f}")


if __name__ == "__main__":
    main()
