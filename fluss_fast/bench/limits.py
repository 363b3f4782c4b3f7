"""The machine's limits for a data set: how fast any client could go here at all.

A client's rate means little alone; against these it says how much is left to win:

* ``compress`` / ``decompress``: the table's codec (ZSTD level 3, Fluss's default) over the data set's
  Arrow IPC record batches of ``BATCH_ROWS`` rows, on all cores (one batch per thread, as a client's
  codec workers do). ``write_arrow`` cannot beat ``compress``; a scan cannot beat ``decompress``.
* ``loopback``: bytes per second through one TCP connection on 127.0.0.1, in 1 MiB writes: a
  fetch or produce of the compressed bytes cannot beat it.
* ``from_pylist``: ``pa.Table.from_pylist`` over the data set's rows as dicts, one core: the floor
  of any per-row Python API (append dicts, poll to dicts) that ends in Arrow.

Every figure is in rows per second of the data set (``loopback`` converted through the data set's
compressed bytes per row), so that it sits beside the bench's own figures.

``python -m fluss_fast.bench.limits --dataset numeric --rows 1m [--into report.json]`` prints them
as JSON, or writes them into a bench report's ``meta.limits``.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from . import datasets

BATCH_ROWS = 65_536
CODEC = ("zstd", 3)
LOOPBACK_BYTES = 256 * 1024 * 1024
REPEAT = 3


def _best(fn, repeat: int = REPEAT) -> float:
    """The shortest of ``repeat`` timings: a limit is what the machine can do, not what it did while busy."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def ipc_bodies(table: pa.Table) -> list[pa.Buffer]:
    out = []
    for rb in table.to_batches(BATCH_ROWS):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, rb.schema) as w:
            w.write_batch(rb)
        out.append(sink.getvalue())
    return out


def codec_limits(table: pa.Table, threads: int | None = None) -> dict[str, float]:
    codec = pa.Codec(*CODEC)
    bodies = ipc_bodies(table)
    threads = threads or os.cpu_count() or 1
    compressed = [codec.compress(b) for b in bodies]
    sizes = [b.size for b in bodies]
    with ThreadPoolExecutor(threads) as pool:
        c_s = _best(lambda: list(pool.map(codec.compress, bodies)))
        d_s = _best(lambda: list(pool.map(lambda ab: codec.decompress(ab[0], decompressed_size=ab[1]),
                                          zip(compressed, sizes, strict=True))))
    rows = table.num_rows
    return {"compress_rows_per_s": rows / c_s, "decompress_rows_per_s": rows / d_s,
            "compressed_bytes_per_row": sum(c.size for c in compressed) / rows,
            "ipc_bytes_per_row": sum(sizes) / rows, "codec_threads": threads}


def loopback_bytes_per_s(total: int = LOOPBACK_BYTES) -> float:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    chunk = b"\0" * (1 << 20)

    def send() -> None:
        conn, _ = server.accept()
        with conn:
            sent = 0
            while sent < total:
                conn.sendall(chunk)
                sent += len(chunk)

    def once() -> None:
        t = threading.Thread(target=send)
        t.start()
        with socket.create_connection(("127.0.0.1", port)) as c:
            buf = bytearray(1 << 20)
            got = 0
            while got < total:
                n = c.recv_into(buf)
                if not n:
                    break
                got += n
        t.join()

    try:
        return total / _best(once)
    finally:
        server.close()


def from_pylist_rows_per_s(table: pa.Table, rows: int = 200_000) -> float:
    part = table.slice(0, min(rows, table.num_rows))
    dicts = part.to_pylist()
    return part.num_rows / _best(lambda: pa.Table.from_pylist(dicts, schema=part.schema))


def measure(dataset: str, rows: int) -> dict[str, Any]:
    table = datasets.load(dataset, rows)
    out: dict[str, Any] = codec_limits(table)
    out["loopback_bytes_per_s"] = loopback_bytes_per_s()
    out["loopback_rows_per_s"] = out["loopback_bytes_per_s"] / out["compressed_bytes_per_row"]
    out["from_pylist_rows_per_s"] = from_pylist_rows_per_s(table)
    out.update(dataset=dataset, rows=rows, codec=f"{CODEC[0].upper()} level {CODEC[1]}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fluss_fast.bench.limits", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", choices=("orders", "clicks", "numeric"), default="orders")
    p.add_argument("--rows", default="1m", help="rows of the data set (accepts 10k, 1m)")
    p.add_argument("--into", metavar="REPORT.json", help="write into this bench report's meta.limits")
    opts = p.parse_args(argv)
    limits = measure(opts.dataset, datasets.parse_rows(opts.rows))
    if opts.into:
        with open(opts.into) as f:
            report = json.load(f)
        report["meta"]["limits"] = limits
        with open(opts.into, "w") as f:
            json.dump(report, f, indent=2)
    json.dump(limits, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
