"""Reading a table that lies (>= 90 %) in remote (tiered) segments with the fluss_fast client.

``setup_cache`` starts a tiering embedded server (remote dir in a temp dir, small segments), fills
the table once and waits until it is tiered; the benchmarks read it from earliest."""
import asyncio
import os
import tempfile
import time

from fluss_fast.bench import datasets as ds

ROWS = 200_000
DATABASE = "asv_remote"
TABLE = "tiered"


def _start_tiering_server():
    from fluss_fast.bench.remote_scenarios import _remote_fraction
    from fluss_fast.bench.util import EmbeddedServer

    srv = EmbeddedServer(watch_pid=os.getppid())
    # inside the server's data dir, which the watchdog removes with it
    remote = os.path.join(srv.data_dir, "remote")
    fd, cfg = tempfile.mkstemp(prefix="fluss-fast-asv-remote-", suffix=".conf")
    with os.fdopen(fd, "w") as f:
        f.write(f"remote.data.dir={remote}\nlog.segment.file-size=256kb\n"
                "remote.log.task-interval-duration=200ms\ntable.log.tiered.local-segments=1\n"
                "remote.log.task-max-upload-segments=50\n")
    os.environ["FLUSS_FAST_SERVER_CONFIG"] = cfg
    try:
        srv.start()
    finally:
        os.environ.pop("FLUSS_FAST_SERVER_CONFIG", None)
        os.unlink(cfg)
    bootstrap = srv.bootstrap_servers
    data_dir = srv.data_dir
    srv.detach()

    import fluss_fast as fluss

    async def fill():
        table = ds.load("orders", ROWS)
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
        try:
            adm = conn.get_admin()
            await adm.create_database(DATABASE, ignore_if_exists=True)
            path = fluss.TablePath(DATABASE, TABLE)
            await adm.create_table(path, fluss.TableDescriptor(fluss.Schema(table.schema), bucket_count=3))
            t = await conn.get_table(path)
            w = t.new_append().create_writer()
            for b in table.to_batches(max_chunksize=8192):
                w.write_arrow_batch(b)
            await w.flush()
        finally:
            await conn.close()

    asyncio.run(fill())
    deadline = time.monotonic() + 120
    while _remote_fraction(data_dir, TABLE, ROWS, DATABASE) < 0.9 and time.monotonic() < deadline:
        time.sleep(0.2)
    return bootstrap


class RemoteScan:
    timeout = 300
    number = 1
    repeat = (1, 5, 20.0)
    warmup_time = 0
    params = [0, 4]
    param_names = ["prefetch_num"]

    def setup_cache(self):
        return _start_tiering_server()

    def setup(self, bootstrap, prefetch):
        import fluss_fast as fluss

        self.fluss = fluss
        self.loop = asyncio.new_event_loop()
        self.run = self.loop.run_until_complete
        self.conn = self.run(fluss.FlussConnection.create(fluss.Config(
            {"bootstrap.servers": bootstrap, "scanner.remote-log.prefetch-num": str(prefetch)})))
        self.table = self.run(self.conn.get_table(fluss.TablePath(DATABASE, TABLE)))

    def teardown(self, bootstrap, prefetch):
        self.run(self.conn.close())
        self.loop.close()

    def time_remote_to_arrow(self, bootstrap, prefetch):
        async def go():
            sc = await self.table.new_scan().create_record_batch_log_scanner()
            sc.subscribe_buckets({b: self.fluss.EARLIEST_OFFSET for b in range(3)})
            got = await sc.to_arrow()
            if got.num_rows != ROWS:
                raise AssertionError(f"remote scan returned {got.num_rows} rows, expected {ROWS}")

        self.run(go())
