"""fluss_fast must not import pandas behind its users' backs.

pyarrow imports pandas on the first ``pa.array`` call of a process: ~50 MB of RSS and ~0.2 s, and
when that call is fluss_fast's own it happens on the runtime thread, where every connection waits
for it. A module-level ``pa.array`` in the virtual-tables module did exactly that inside every
first ``get_table``. This runs the common paths of log and primary-key tables in a fresh process
and fails if pandas got imported on the way.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from fluss_fast.codec import NO_EXTENSIONS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent('''
    import asyncio, datetime as dt, sys, traceback

    class Watch:
        def find_spec(self, name, path=None, target=None):
            if name == "pandas":
                print("pandas imported from:\\n" + "".join(traceback.format_stack()[:-1]), file=sys.stderr)
            return None

    sys.meta_path.insert(0, Watch())
    import pyarrow as pa
    import fluss_fast as fluss

    UTC = dt.timezone.utc

    async def main(bootstrap):
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
        admin = conn.get_admin()
        log = fluss.TablePath("fluss", "no_pandas_log")
        fields = [pa.field("a", pa.int64()), pa.field("b", pa.int32()), pa.field("s", pa.string()),
                  pa.field("f", pa.float64()), pa.field("ok", pa.bool_()), pa.field("bin", pa.binary()),
                  pa.field("d", pa.date32()), pa.field("ts", pa.timestamp("us")),
                  pa.field("tz", pa.timestamp("ms", tz="UTC"))]
        await admin.create_table(log, fluss.TableDescriptor(fluss.Schema(pa.schema(fields)), bucket_count=2))
        t = await conn.get_table(log)
        w = t.new_append().create_writer()
        for i in range(300):
            w.append({"a": i, "b": i, "s": f"s{i}", "f": i / 2, "ok": i % 2 == 0, "bin": b"x",
                      "d": dt.date(2024, 1, 1 + i % 28), "ts": dt.datetime(2024, 1, 1, 0, 0, i % 60),
                      "tz": dt.datetime(2024, 1, 1, tzinfo=UTC)})
        await w.flush()
        bs = await t.new_scan().create_record_batch_log_scanner()
        bs.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
        assert (await bs.to_arrow()).num_rows == 300
        ps = await t.new_scan().project_by_name(["a", "s"]).create_record_batch_log_scanner()
        ps.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
        assert (await ps.poll_arrow(2000)).num_rows > 0
        sc = await t.new_scan().create_log_scanner()
        sc.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
        n = 0
        while n < 300:
            recs = await sc.poll(2000)
            n += sum(1 for r in recs if r.row["a"] >= 0)

        pk = fluss.TablePath("fluss", "no_pandas_pk")
        pfields = [pa.field("u", pa.int32()), pa.field("id", pa.int64()), pa.field("v", pa.string())]
        await admin.create_table(pk, fluss.TableDescriptor(fluss.Schema(pa.schema(pfields), primary_keys=["u", "id"]),
                                                           bucket_count=2, bucket_keys=["u"]))
        tp = await conn.get_table(pk)
        uw = tp.new_upsert().create_writer()
        for i in range(50):
            uw.upsert({"u": i % 5, "id": i, "v": str(i)})
        uw.delete({"u": 0, "id": 0})
        await uw.flush()
        assert await tp.new_lookup().create_lookuper().lookup({"u": 3, "id": 3}) == {"u": 3, "id": 3, "v": "3"}
        assert len(await tp.new_lookup().lookup_by(["u"]).create_lookuper().lookup({"u": 1})) == 10
        await conn.close()

    asyncio.run(main(sys.argv[1]))
    print("pandas" in sys.modules)
''')


@pytest.mark.skipif(NO_EXTENSIONS,
                    reason="the pure-Python row builder (codec/columns.py) makes its columns with pa.array")
def test_common_paths_never_import_pandas(fluss_server):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", SCRIPT, fluss_server.bootstrap_servers], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr[-3000:]
