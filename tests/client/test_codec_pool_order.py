"""Batches encoded on several codec threads still reach the server in drain order.

The codec below sleeps a different time for every batch (sleeping releases the GIL, as zstd does),
so encodes finish in a shuffled order on the real worker threads; the real sender and accumulator
then have to keep each bucket's batches in sequence order on the wire. A request that overtook an
earlier one of its bucket would show up as an out-of-order error and a retry (idempotent writer)
or as rows stored out of order (no idempotence).
"""
from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast.client.workers import OrderedGate, codec_workers, threads_for
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.log.arrowlog import ArrowLogCodec

from client_util import connect, fetch_records

pytestmark = pytest.mark.timeout(120)

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
BUCKETS = 3
# Batches above the sender's inline-encode size (64 KiB): smaller ones are encoded on the loop
# when a request carries just one, as it does when each bucket has its own leader (3 tablet
# servers) rather than all three sharing one server.
ROWS = 300_000
PER_WRITE = 2_000
BATCH_BYTES = 96 * 1024


class ShuffledCodec(ArrowLogCodec):
    """The table's codec, made slow by a per-batch amount that makes later batches finish first."""

    def __init__(self, base: ArrowLogCodec):
        super().__init__(base.schema, base.compression, base.level, table_name=base.table_name)
        self._lock = threading.Lock()
        self.started = []
        self.finished = []
        self.threads = set()

    def encode(self, batch):
        with self._lock:
            k = len(self.started)
            self.started.append(k)
            self.threads.add(threading.current_thread().name)
        # 0, 12, 8, 4, 0, 12, ... ms: neighbours finish in reverse order
        time.sleep((-k % 4) * 0.004)
        out = super().encode(batch)
        with self._lock:
            self.finished.append(k)
        return out


async def _write_shuffled(bootstrap, name, props):
    conn = await connect(bootstrap, props)
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(
        path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    codec = writer._codec = ShuffledCodec(writer._codec)
    for lo in range(0, ROWS, PER_WRITE):
        ids = list(range(lo, lo + PER_WRITE))
        writer.write_arrow_batch(pa.RecordBatch.from_arrays(
            [pa.array(ids, pa.int64()), pa.array([f"row-{i}" for i in ids])], schema=SCHEMA))
    await writer.flush()
    m = conn.metrics()["writer"][str(path)]
    retries = (m["recordsRetryTotal"], m["errorsTotal"])
    stored = {b: await fetch_records(table, b) for b in range(BUCKETS)}
    await conn.close()
    return codec, retries, stored


def _check_stored(stored, idempotent: bool):
    codec = ArrowLogCodec(fluss_schema())
    seen = []
    batches = 0
    for bucket, buf in stored.items():
        headers = list(logbatch.iter_batches(buf))
        batches += len(headers)
        if idempotent:
            assert [h.batch_sequence for h in headers] == list(range(len(headers))), bucket
        ids = []
        for h in headers:
            rb, _ = codec.decode(buf, h)
            ids.extend(rb.column(0).to_pylist())
        assert ids == sorted(ids), f"bucket {bucket}: rows stored out of write order"
        seen.extend(ids)
    assert sorted(seen) == list(range(ROWS))
    return batches


def fluss_schema():
    from fluss_fast.datatypes import SchemaInfo

    return SchemaInfo.from_arrow(SCHEMA)


@pytest.mark.parametrize("idempotent", [True, False])
async def test_shuffled_encodes_keep_bucket_order(fluss_server, unique_name, idempotent):
    props = {"client.compression-threads": "4", "writer.batch-size": str(BATCH_BYTES),
             "writer.dynamic-batch-size.enabled": "false",
             "writer.enable-idempotence": "true" if idempotent else "false"}
    codec, retries, stored = await _write_shuffled(fluss_server.bootstrap_servers, unique_name(), props)
    # the encodes really ran on several codec threads (a lone small one may run on the loop)
    # and really finished out of order
    assert len([t for t in codec.threads if t.startswith("fluss-fast-codec-")]) > 1
    assert codec.finished != sorted(codec.finished)
    batches = _check_stored(stored, idempotent)
    assert batches >= 20
    assert retries == (0, 0)  # no batch was sent twice: the order is the encoders', not a retry's


def test_threads_setting():
    import os

    assert threads_for(0) == (os.cpu_count() or 1)
    assert threads_for(3) == 3
    assert codec_workers(3) is codec_workers(3)
    assert codec_workers(3).threads == 3


def test_worker_exceptions_reach_the_future():
    w = codec_workers(2)
    assert w.submit(lambda a, b: a + b, 2, 3).result(5) == 5
    with pytest.raises(ZeroDivisionError):
        w.submit(lambda: 1 / 0).result(5)


async def test_ordered_gate_releases_in_ticket_order():
    import asyncio

    gate = OrderedGate()
    tickets = [gate.ticket() for _ in range(6)]
    order = []

    async def holder(t, delay):
        await asyncio.sleep(delay)
        await gate.wait(t)
        order.append(t)
        gate.done(t)

    # later tickets are ready first; ticket 3 gives up without taking its turn
    tasks = [asyncio.ensure_future(holder(t, 0.02 * (6 - t))) for t in tickets if t != 3]
    gate.done(3)
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert order == [0, 1, 2, 4, 5]
    assert gate.pending == 0
