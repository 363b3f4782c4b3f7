"""The writer and scanner kinds the fault suite runs, and the faults it injects.

Adding a writer kind (e.g. upserts once primary-key tables land) is one entry in ``WRITERS``: a
class with ``name``, ``descriptor()``, ``open(table)``, ``write(writer, ids)`` and
``read_ids(table)`` (every stored key, one entry per stored row, so duplicates show). The checks
are the same for every kind: after the faults every id written is read back exactly once.
"""
from __future__ import annotations

import asyncio
import threading
import time

import pyarrow as pa

import fluss_fast as fluss

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
BUCKETS = 3

#: client settings of the suite: short timeouts, so a fault costs seconds, not minutes
CLIENT = {"request-timeout": "3000", "connect-timeout": "3000", "writer.batch-timeout-ms": "5"}


def row(i: int) -> dict:
    return {"id": i, "v": f"v{i}"}


async def read_all_ids(table) -> list:
    """Every stored id of a log table, by a bounded read from the earliest offsets."""
    s = await table.new_scan().create_record_batch_log_scanner()
    s.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(table.get_table_info().num_buckets)})
    return (await s.to_arrow()).column("id").to_pylist()


# -- writers ---------------------------------------------------------------------------------------
class AppendRows:
    name = "append"

    def descriptor(self):
        return fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS)

    def open(self, table):
        return table.new_append().create_writer()

    def write(self, writer, ids) -> None:
        for i in ids:
            writer.append(row(i))

    async def read_ids(self, table) -> list:
        return await read_all_ids(table)


class AppendArrow(AppendRows):
    name = "append-arrow"

    def write(self, writer, ids) -> None:
        ids = list(ids)
        writer.write_arrow_batch(pa.record_batch([pa.array(ids, pa.int64()),
                                                  pa.array([f"v{i}" for i in ids])], schema=SCHEMA))


class UpsertRows(AppendRows):
    """Upserts of new keys into a primary-key table. The state would hide a batch stored twice
    (same key, same row), so the check reads the changelog: a duplicate shows as an extra -U/+U."""

    name = "upsert"

    def descriptor(self):
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
        return fluss.TableDescriptor(fluss.Schema(schema, primary_keys=["id"]), bucket_count=BUCKETS)

    def open(self, table):
        return table.new_upsert().create_writer()

    def write(self, writer, ids) -> None:
        for i in ids:
            writer.upsert(row(i))

    async def read_ids(self, table) -> list:
        s = await table.new_scan().create_log_scanner()
        s.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(BUCKETS)})
        ids, idle = [], 0
        while idle < 3:  # the changelog is complete once three polls in a row bring nothing
            recs = list(await s.poll(500))
            idle = 0 if recs else idle + 1
            ids.extend(r.row["id"] for r in recs)
        return ids


WRITERS = [AppendRows(), AppendArrow(), UpsertRows()]


# -- faults ----------------------------------------------------------------------------------------
class Target:
    """A server (``tests/conftest.ServerProcess``) and the fault proxy clients reach it through."""

    def __init__(self, server, proxy):
        self.server = server
        self.proxy = proxy
        self.injected = 0

    @property
    def bootstrap(self) -> str:
        return self.proxy.bootstrap_servers

    def inject(self, fault: str, node=None) -> None:
        """One fault, blocking until it is over (the caller runs it in a thread)."""
        p = self.proxy
        if fault == "drop":
            p.drop(node)
        elif fault == "reset":
            p.reset(node)
        elif fault == "cut":
            p.cut_next_answer(node)
            time.sleep(0.3)
            p.cut_next_answer(node, on=False)  # the fault is over: a later answer goes through
        elif fault == "delay":
            p.delay(0.25, node)
            time.sleep(1.0)
            p.delay(0, node)
        elif fault == "freeze":
            # the open sockets go silent without closing (a frozen host, a half-open socket); when
            # they thaw, what they held arrives late: idempotence must drop the duplicates
            p.freeze(node)
            time.sleep(4.0)
            p.thaw(node)
        elif fault == "kill9":
            self.server.kill()
            self.server.start()
        elif fault == "refuse":
            p.refuse(node)
            time.sleep(2.0)
            p.revive(node)
        else:
            raise ValueError(fault)
        self.injected += 1


#: faults every writer and scanner kind must survive (kill9 restarts the server on its ports)
FAULTS = ["drop", "reset", "cut", "delay", "freeze", "kill9"]


#: a freeze lasts longer than request-timeout; once is enough to cost a timeout and a reconnect
ROUNDS = {"freeze": 1}


async def run_with_faults(target: Target, fault: str, work, rounds=None, pause: float = 0.4, node=None):
    """Runs ``work(done)`` while ``fault`` is injected ``rounds`` times from a thread; ``done`` is a
    ``threading.Event`` set once the last fault is over, so the work can keep going until then."""
    done = threading.Event()
    if rounds is None:
        rounds = ROUNDS.get(fault, 2)

    def injector():
        try:
            for _ in range(rounds):
                time.sleep(pause)
                target.inject(fault, node)
        finally:
            done.set()

    results = await asyncio.gather(work(done), asyncio.to_thread(injector))
    return results[0]
