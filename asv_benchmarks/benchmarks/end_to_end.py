"""End-to-end append and scan with the fluss_fast client against one embedded server.

The server is started in ``setup_cache`` (asv runs that in its own process, before the benchmarks, in
other processes) through a watchdog that stops it when asv's runner process exits, so it stays up for
the whole run and is never left behind.
"""
import asyncio
import os
import uuid

from fluss_fast.bench import datasets as ds

ROWS = 50_000
DATABASE = "asv_bench"


def _server():
    from fluss_fast.bench.util import EmbeddedServer

    srv = EmbeddedServer(watch_pid=os.getppid()).start()
    bootstrap = srv.bootstrap_servers
    srv.detach()
    return bootstrap


class EndToEnd:
    timeout = 300
    number = 1
    repeat = (1, 5, 20.0)
    warmup_time = 0

    def setup_cache(self):
        return _server()

    def setup(self, bootstrap):
        import fluss_fast as fluss

        self.fluss = fluss
        self.loop = asyncio.new_event_loop()
        self.table = ds.load("orders", ROWS)
        self.batches = self.table.to_batches(max_chunksize=65_536)
        self.dicts = self.table.slice(0, 10_000).to_pylist()
        self.run = self.loop.run_until_complete
        self.conn = self.run(fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap})))
        admin = self.conn.get_admin()
        self.run(admin.create_database(DATABASE, ignore_if_exists=True))
        self.paths = []
        self.sink = self._create("sink")
        self.filled = self._create("filled")
        w = self.filled.new_append().create_writer()
        for b in self.batches:
            w.write_arrow_batch(b)
        self.run(w.flush())

    def _create(self, tag):
        path = self.fluss.TablePath(DATABASE, f"{tag}_{uuid.uuid4().hex[:8]}")
        desc = self.fluss.TableDescriptor(self.fluss.Schema(self.table.schema), bucket_count=3)
        self.run(self.conn.get_admin().create_table(path, desc))
        self.paths.append(path)
        return self.run(self.conn.get_table(path))

    def teardown(self, bootstrap):
        admin = self.conn.get_admin()
        for p in self.paths:
            self.run(admin.drop_table(p, ignore_if_not_exists=True))
        self.run(self.conn.close())
        self.loop.close()

    def time_append_10k_dicts(self, bootstrap):
        w = self.sink.new_append().create_writer()
        for r in self.dicts:
            w.append(r)
        self.run(w.flush())

    def time_write_arrow_50k(self, bootstrap):
        w = self.sink.new_append().create_writer()
        for b in self.batches:
            w.write_arrow_batch(b)
        self.run(w.flush())

    def time_scan_to_arrow_50k(self, bootstrap):
        self._scan(None)

    def time_scan_projected_50k(self, bootstrap):
        self._scan(["order_id", "sku"])

    def _scan(self, projection):
        async def go():
            scan = self.filled.new_scan()
            if projection:
                scan = scan.project_by_name(projection)
            sc = await scan.create_record_batch_log_scanner()
            sc.subscribe_buckets({b: self.fluss.EARLIEST_OFFSET for b in range(3)})
            got = await sc.to_arrow()
            if got.num_rows != ROWS:
                raise AssertionError(f"scan returned {got.num_rows} rows, expected {ROWS}")

        self.run(go())
