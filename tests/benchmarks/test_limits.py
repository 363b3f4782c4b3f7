"""``fluss_fast.bench.limits``: the machine's limits the goals table sets the clients against."""
from __future__ import annotations

import json
import math

import pyarrow as pa

from fluss_fast.bench import datasets, limits


def test_codec_limits_round_trip_the_data_set():
    table = datasets.generate("orders", 20_000)
    out = limits.codec_limits(table, threads=2)
    assert out["codec_threads"] == 2
    assert 0 < out["compressed_bytes_per_row"] < out["ipc_bytes_per_row"]
    for key in ("compress_rows_per_s", "decompress_rows_per_s"):
        assert math.isfinite(out[key]) and out[key] > 0
    # what was timed is what a client decodes: the IPC bodies decompress back to the same batches
    codec = pa.Codec(*limits.CODEC)
    body = limits.ipc_bodies(table)[0]
    back = codec.decompress(codec.compress(body), decompressed_size=body.size)
    assert pa.ipc.open_stream(back).read_all().equals(table.slice(0, limits.BATCH_ROWS))


def test_loopback_moves_every_byte():
    assert limits.loopback_bytes_per_s(total=8 << 20) > 0


def test_limits_go_into_a_bench_report(tmp_path, capsys):
    report = tmp_path / "run.json"
    report.write_text(json.dumps({"meta": {"dataset": "numeric"}, "results": []}))
    assert limits.main(["--dataset", "numeric", "--rows", "10k", "--into", str(report)]) == 0
    lim = json.loads(report.read_text())["meta"]["limits"]
    assert lim["dataset"] == "numeric" and lim["rows"] == 10_000
    assert lim["loopback_rows_per_s"] == lim["loopback_bytes_per_s"] / lim["compressed_bytes_per_row"]
    assert json.loads(capsys.readouterr().out) == lim
