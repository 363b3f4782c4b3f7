"""Per-row upserts from several threads at once, with batches small enough that the writer's hot
slots are cooled and refilled all the time (codec/upsertrow.py writes into them without the
accumulator's lock): every row arrives once, the last write of each key wins."""
from __future__ import annotations

import asyncio
import threading

import pyarrow as pa

import fluss_fast as fluss

from client_util import connect


async def test_threads_upserting_into_small_batches(fluss_server, unique_name):
    conn = await connect(fluss_server.bootstrap_servers,
                         {"writer.batch-size": "2048", "writer.dynamic-batch-size.enabled": "false",
                          "writer.buffer.memory-size": "65536"})
    try:
        path = fluss.TablePath("fluss", unique_name())
        schema = fluss.Schema(pa.schema([pa.field("id", pa.int64()), pa.field("who", pa.string()),
                                         pa.field("n", pa.int32())]), primary_keys=["id"])
        await conn.get_admin().create_table(path, fluss.TableDescriptor(schema, bucket_count=3))
        t = await conn.get_table(path)
        w = t.new_upsert().create_writer()
        threads, per, keys = 4, 3000, 500
        errors = []

        def work(k):
            try:
                for i in range(per):
                    # every thread writes every key; a thread's last write of key j is its i = per-keys+j
                    row = {"id": i % keys, "who": f"t{k}", "n": i}
                    w.upsert(row if i % 2 else [row["id"], row["who"], row["n"]])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for th in workers:
            th.start()
        await asyncio.get_running_loop().run_in_executor(None, lambda: [th.join() for th in workers])
        assert not errors
        await w.flush()
        got = (await (await t.new_scan().create_snapshot_scanner()).to_arrow()).to_pylist()
        assert sorted(r["id"] for r in got) == list(range(keys))
        for r in got:  # each key's final value is some thread's last write of it
            assert r["who"] in {f"t{k}" for k in range(threads)}
            assert r["n"] == per - keys + r["id"]
        # and the changelog has every write exactly once (+I for a key's first, -U/+U after)
        s = await t.new_scan().create_log_scanner()
        for b in range(3):
            s.subscribe(bucket_id=b, start_offset=fluss.EARLIEST_OFFSET)
        C = fluss.ChangeType
        writes = total = 0
        while total < 2 * threads * per - keys:
            recs = await s.poll(2000)
            assert len(recs), f"changelog stopped at {total} records"
            total += len(recs)
            writes += sum(r.change_type in (C.Insert, C.UpdateAfter) for r in recs)
        assert (total, writes) == (2 * threads * per - keys, threads * per)
    finally:
        await conn.close()
