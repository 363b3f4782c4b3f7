"""The cold scan: a fresh process imports fluss_fast, connects, gets the table and reads it once
(``to_arrow``), as a script that reads once does (``fluss_fast.bench.cold``).

Tracked rather than timed: asv's timer would count the interpreter's start-up, so the cold child
runs ``CHILDREN`` times and each ``track_`` reports the median of what the child measured itself --
the scan from its call, the time to the first row (connect included, import not), the scan's kernel
CPU time (page faults and huge-page advice show there first), and the import.
"""
import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile

from fluss_fast.bench import datasets as ds

DATASET = "numeric"
ROWS = 500_000
BUCKETS = 4
DATABASE = "asv_cold"
TABLE = "numeric"
CHILDREN = 3


def _fill(bootstrap):
    import fluss_fast as fluss

    async def fill():
        table = ds.load(DATASET, ROWS)
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
        try:
            adm = conn.get_admin()
            await adm.create_database(DATABASE, ignore_if_exists=True)
            path = fluss.TablePath(DATABASE, TABLE)
            await adm.create_table(path, fluss.TableDescriptor(fluss.Schema(table.schema), bucket_count=BUCKETS),
                                   ignore_if_exists=True)
            w = (await conn.get_table(path)).new_append().create_writer()
            for b in table.to_batches(max_chunksize=65_536):
                w.write_arrow_batch(b)
            await w.flush()
        finally:
            await conn.close()

    asyncio.run(fill())


def _tmpdir():
    return tempfile.mkdtemp(prefix="fluss-fast-asv-cold-")


def _job(bootstrap):
    spec = ds.DATASETS[DATASET]
    return {"module": "fluss_fast", "bootstrap": bootstrap, "scenario": "scan", "table": TABLE,
            "database": DATABASE, "dataset": DATASET, "rows": ROWS, "buckets": BUCKETS, "lookup_budget_s": 0,
            "spec": {"id_column": spec.id_column, "string_column": spec.string_column,
                     "short_string_column": spec.short_string_column, "projection": list(spec.projection)}}


class ColdScan:
    timeout = 300

    def setup_cache(self):
        """The cold runs themselves (one set serves every ``track_``: each child reports all four
        figures), against a server started and filled here."""
        try:
            from fluss_fast.bench import cold
        except ImportError:  # a commit from before the cold runs: nothing to compare
            return None
        from fluss_fast.bench.util import EmbeddedServer

        tmp = _tmpdir()
        env = cold.child_env(os.path.join(tmp, "pycache"))
        cold.warm_bytecode(env)
        srv = EmbeddedServer(watch_pid=os.getppid()).start()
        try:
            _fill(srv.bootstrap_servers)
            reports = []
            for _ in range(CHILDREN):
                proc = subprocess.run(cold.job_command(_job(srv.bootstrap_servers)), capture_output=True,
                                      text=True, timeout=120, env=env)
                report = cold.parse_output(proc.stdout)
                if "error" in report:
                    raise RuntimeError(report["error"])
                if report["rows"] != ROWS:
                    raise AssertionError(f"cold scan returned {report['rows']} rows, expected {ROWS}")
                reports.append(report)
        finally:
            srv.close()
            shutil.rmtree(tmp, ignore_errors=True)
        return {key: statistics.median(r[key] for r in reports)
                for key in ("seconds", "first_row_s", "sys_s", "import_s")}

    def setup(self, medians):
        if medians is None:
            raise NotImplementedError("no fluss_fast.bench.cold in this commit")

    def track_cold_scan_s(self, medians):
        return medians["seconds"]

    def track_cold_first_row_s(self, medians):
        return medians["first_row_s"]

    def track_cold_scan_sys_s(self, medians):
        return medians["sys_s"]

    def track_import_s(self, medians):
        return medians["import_s"]

    track_cold_scan_s.unit = "seconds"
    track_cold_first_row_s.unit = "seconds"
    track_cold_scan_sys_s.unit = "seconds"
    track_import_s.unit = "seconds"
