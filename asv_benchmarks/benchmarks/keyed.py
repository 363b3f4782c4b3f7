"""Primary-key tables end to end, for both clients (fluss_fast and pyfluss) on one embedded server:
per-row upserts, bulk Arrow upserts (fluss_fast; pyfluss has only per-row upsert), sequential
and 64-concurrent lookups, prefix lookups. The server is shared as in ``end_to_end``."""
import asyncio
import importlib
import uuid

import pyarrow as pa

from fluss_fast.bench import datasets as ds

from .end_to_end import DATABASE, _server

ROWS = 20_000
# pyfluss waits up to 100 ms for each lookup batch to fill: keep its share of the run bounded
LOOKUPS = 64


class Keyed:
    timeout = 300
    number = 1
    repeat = (1, 5, 20.0)
    warmup_time = 0
    # pyfluss 1.0 aborts (SIGABRT) in asv's benchmark process once its first table is written; the
    # head to head of these scenarios against it is `fluss-fast bench --scenarios upsert,lookup,...`
    params = ["fluss_fast"]
    param_names = ["client"]

    def setup_cache(self):
        return _server()

    def setup(self, bootstrap, client):
        try:
            self.fluss = importlib.import_module(client)
        except ImportError:
            raise NotImplementedError(f"{client} is not installed") from None
        self.loop = asyncio.new_event_loop()
        # pyfluss needs a running loop already when a call is made, not only when it is awaited:
        # every client call happens inside a coroutine run on this loop
        self.run = lambda make: self.loop.run_until_complete(_inside(make))
        table = ds.load("orders", ROWS)
        fields = [f.with_nullable(False) if f.name in ("order_id", "user_id") else f for f in table.schema]
        self.data = table.cast(pa.schema(fields))
        self.dicts = self.data.to_pylist()
        self.keys = [{"order_id": k} for k in self.data.column("order_id").to_pylist()[:LOOKUPS]]
        self.users = [{"user_id": u} for u in sorted(set(self.data.column("user_id").to_pylist()))[:50]]
        f = self.fluss
        self.conn = self.run(lambda: f.FlussConnection.create(f.Config({"bootstrap.servers": bootstrap})))
        self.run(lambda: self.conn.get_admin().create_database(DATABASE, ignore_if_exists=True))
        self.paths = []
        self.filled = self._create("kfilled", ["order_id"])
        self.prefixed = self._create("kprefix", ["user_id", "order_id"], bucket_keys=["user_id"])
        for t in (self.filled, self.prefixed):
            self.run(lambda t=t: self._upsert_rows(t))

    def _create(self, tag, pk, **kw):
        f = self.fluss
        path = f.TablePath(DATABASE, f"{tag}_{uuid.uuid4().hex[:8]}")
        desc = f.TableDescriptor(f.Schema(self.data.schema, primary_keys=pk), bucket_count=3, **kw)
        self.run(lambda: self.conn.get_admin().create_table(path, desc))
        self.paths.append(path)
        return self.run(lambda: self.conn.get_table(path))

    async def _upsert_rows(self, table):
        w = table.new_upsert().create_writer()
        for r in self.dicts:
            w.upsert(r)
        await w.flush()

    def teardown(self, bootstrap, client):
        admin = self.conn.get_admin()
        for p in self.paths:
            self.run(lambda p=p: admin.drop_table(p, ignore_if_not_exists=True))
        self.run(lambda: self.conn.close())
        self.loop.close()

    def time_upsert_rows(self, bootstrap, client):
        self.run(lambda: self._upsert_rows(self.filled))

    def time_upsert_arrow(self, bootstrap, client):
        async def go():
            w = self.filled.new_upsert().create_writer()
            bulk = getattr(w, "upsert_arrow", None)
            if bulk is None:  # pyfluss: its per-row upsert is the way
                for r in self.dicts:
                    w.upsert(r)
            else:
                bulk(self.data)
            await w.flush()

        self.run(go)

    def time_lookup_sequential(self, bootstrap, client):
        lk = self.filled.new_lookup().create_lookuper()

        async def go():
            for k in self.keys:
                await lk.lookup(k)

        self.run(go)

    def time_lookup_64_concurrent(self, bootstrap, client):
        lk = self.filled.new_lookup().create_lookuper()

        async def go():
            for i in range(0, len(self.keys), 64):
                await asyncio.gather(*[lk.lookup(k) for k in self.keys[i:i + 64]])

        self.run(go)

    def time_prefix_lookup(self, bootstrap, client):
        lk = self.prefixed.new_lookup().lookup_by(["user_id"]).create_lookuper()

        async def go():
            for u in self.users:
                await lk.lookup(u)

        self.run(go)


async def _inside(make):
    return await make()
