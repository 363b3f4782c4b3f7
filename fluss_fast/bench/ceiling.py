"""The ceiling: what the server and the loopback can do at all, with no client library in the way.

``produce``: ProduceLog requests are encoded once (Arrow IPC + compression + batch header + CRC, with
``fluss_fast.codec.arrowlog``/``logbatch`` and the protobuf module) and then replayed over a raw asyncio
socket as fast as it takes them, several requests in flight, after an ApiVersions handshake.
``fetch``: FetchLog from offset 0 to the high watermark, walking only the batch headers (no Arrow
decoding). Every client result can be read against these two numbers.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pyarrow as pa

from ..datatypes import TableDescriptorInfo
from ..error_codes import default_message
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from .harness import DATABASE, Client, Env, Mismatch, Outcome, Scenario, create_table, drop_table, register, table_name
from .pk_scenarios import pk_schema
from .raw import RawConnection, split_address
from .scenarios import cleanup_filled, prepare_filled

IN_FLIGHT = 16
BATCH_BYTES = 2 * 1024 * 1024   # logical Arrow bytes per pre-encoded batch (a client's batch size)
FETCH_MAX_BYTES = 64 * 1024 * 1024
FETCH_BUCKET_BYTES = 1024 * 1024   # the Rust client's default; larger answers were slower here


class TableRoute:
    """Table id, schema, compression and bucket leaders, from a raw GET_METADATA."""

    def __init__(self, resp: pb.MetadataResponse) -> None:
        tm = resp.table_metadata[0]
        self.table_id = tm.table_id
        self.schema_id = tm.schema_id
        self.descriptor = TableDescriptorInfo.from_json_bytes(tm.table_json)
        self.nodes = {n.node_id: (n.host, n.port) for n in resp.tablet_servers}
        self.leaders = {b.bucket_id: b.leader_id for b in tm.bucket_metadata}

    def buckets_by_leader(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for bucket, node in sorted(self.leaders.items()):
            out.setdefault(node, []).append(bucket)
        return out


async def route(bootstrap: str, name: str) -> TableRoute:
    conn = await RawConnection.open(*split_address(bootstrap))
    try:
        req = pb.MetadataRequest(table_path=[pb.PbTablePath(database_name=DATABASE, table_name=name)])
        return TableRoute(await conn.call(Api.GET_METADATA, req, pb.MetadataResponse))
    finally:
        conn.close()


async def _gather_all(coros) -> list:
    """gather(), but when one fails the others are cancelled and awaited before the caller closes the
    sockets they are still reading: a closed fd with a pending reader confuses the next socket that
    reuses its number."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _on_leaders(rt: TableRoute, work: dict[int, Any], task, stopwatch=None):
    """One connection per leader of ``work`` (node -> its part), ``task(conn, part)`` on all at
    once, the connections closed after. The stopwatch, if given, times the tasks only, not the
    connecting. Returns (results, seconds, stopwatch, connections) — closed connections still
    answer their byte counts."""
    conns: dict[int, RawConnection] = {}
    sw = seconds = None
    try:
        for node in work:
            conns[node] = await RawConnection.open(*rt.nodes[node])
        if stopwatch is not None:
            sw = stopwatch()
        results = await _gather_all((task(conns[node], part) for node, part in work.items()))
        if sw is not None:
            seconds = sw.stop()
    finally:
        for c in conns.values():
            c.close()
    return results, seconds, sw, conns


def encode_requests(table: pa.Table, rt: TableRoute, buckets: list[int]) -> list[tuple[int, bytes, int]]:
    """(bucket, ProduceLogRequest body, record count) for the whole table, round-robin over buckets."""
    from ..codec.log.arrowlog import ArrowLogCodec

    desc = rt.descriptor
    codec = ArrowLogCodec(desc.schema, desc.compression, desc.compression_level)
    row_bytes = max(1, table.nbytes // max(1, table.num_rows))
    rows_per_batch = max(1, BATCH_BYTES // row_bytes)
    out = []
    for i, rb in enumerate(table.to_batches(max_chunksize=rows_per_batch)):
        bucket = buckets[i % len(buckets)]
        records = codec.build(rb, schema_id=rt.schema_id)
        req = pb.ProduceLogRequest(acks=-1, table_id=rt.table_id, timeout_ms=30000, buckets_req=[
            pb.PbProduceLogReqForBucket(bucket_id=bucket, records=records)])
        out.append((bucket, req.SerializeToString(), rb.num_rows))
    return out


async def _pipelined(conn: RawConnection, api: int, items, in_flight: int, body_at: int):
    """Sends ``item[body_at]`` of every item with up to ``in_flight`` requests outstanding; yields
    (item, response body) as the answers come in."""
    pending: dict[int, Any] = {}
    it = iter(items)
    done = False
    while True:
        while not done and len(pending) < in_flight:
            item = next(it, None)
            if item is None:
                done = True
                break
            pending[await conn.send(api, item[body_at])] = item
        if not pending:
            break
        rid, body = await conn.receive()
        yield pending.pop(rid), body


async def _produce_to(conn: RawConnection, reqs: list[tuple[int, bytes, int]], start: dict[int, int]) -> int:
    """Replays ``reqs`` with IN_FLIGHT outstanding; checks every base offset; returns rows acked."""
    next_offset = dict(start)
    acked = 0
    async for (bucket, _, count), body in _pipelined(conn, Api.PRODUCE_LOG, reqs, IN_FLIGHT, 1):
        resp = pb.ProduceLogResponse.FromString(body)
        for b in resp.buckets_resp:
            if b.error_code:
                raise FlussError(f"{conn.where}: produce to bucket {b.bucket_id} failed: "
                                 f"{b.error_message or default_message(b.error_code)}", b.error_code)
            # Requests on one connection are handled in order, so each batch must land exactly where
            # the previous one ended: anything else means rows were lost or duplicated.
            if b.base_offset != next_offset[bucket]:
                raise Mismatch(f"bucket {bucket}: batch landed at offset {b.base_offset}, "
                               f"expected {next_offset[bucket]}")
            next_offset[bucket] += count
        acked += count
    for bucket in {b for b, _, _ in reqs}:
        start[bucket] = next_offset[bucket]  # only this leader's buckets: others run concurrently
    return acked


async def prepare_produce(env: Env) -> dict:
    name = table_name("ceiling_produce")
    await create_table(env.verifier, name, env.spec.schema, env.buckets)
    rt = await route(env.bootstrap, name)
    by_leader = rt.buckets_by_leader()
    unknown = [node for node in by_leader if node not in rt.nodes]
    if unknown:
        raise FlussError(f"table {DATABASE}.{name}: bucket leader {unknown[0]} is not a known tablet server")
    # With several leaders each gets an equal slice, so the data set is sent exactly once in total.
    n, k = env.table.num_rows, len(by_leader)
    plans = {node: (buckets, env.table.slice(n * j // k, n * (j + 1) // k - n * j // k))
             for j, (node, buckets) in enumerate(sorted(by_leader.items()))}
    requests = {node: encode_requests(tbl, rt, buckets) for node, (buckets, tbl) in plans.items()}
    offsets = {b: 0 for b in rt.leaders}
    return {"name": name, "route": rt, "requests": requests, "offsets": offsets}


async def cleanup_produce(env: Env, shared: dict) -> None:
    await drop_table(env.verifier, shared["name"])


async def run_produce(client: Client | None, env: Env, shared: dict) -> Outcome:
    rt: TableRoute = shared["route"]
    counts, seconds, sw, conns = await _on_leaders(
        rt, shared["requests"], lambda conn, reqs: _produce_to(conn, reqs, shared["offsets"]), env.stopwatch)
    rows = sum(counts)
    if rows != env.rows:
        raise Mismatch(f"ceiling produce: {rows} rows acknowledged, expected {env.rows}")
    wire = sum(c.bytes_out for c in conns.values())
    return Outcome(seconds, rows, env.table.nbytes, wire_bytes=wire, cpu=sw.cpu, rss=sw.rss)


async def _fetch_from(conn: RawConnection, table_id: int, buckets: list[int]) -> tuple[int, int]:
    """Reads every bucket from offset 0 to its high watermark, one request per bucket in flight at a
    time (so all buckets overlap); returns (records, record bytes)."""
    from ..codec.log.logbatch import iter_batches

    rows = 0
    received = 0
    pending: dict[int, tuple[int, int]] = {}

    async def ask(bucket: int, offset: int) -> None:
        req = pb.FetchLogRequest(follower_server_id=-1, max_bytes=FETCH_MAX_BYTES, tables_req=[
            pb.PbFetchLogReqForTable(table_id=table_id, projection_pushdown_enabled=False, buckets_req=[
                pb.PbFetchLogReqForBucket(bucket_id=bucket, fetch_offset=offset,
                                          max_fetch_bytes=FETCH_BUCKET_BYTES)])])
        pending[await conn.send(Api.FETCH_LOG, req.SerializeToString())] = (bucket, offset)

    for b in buckets:
        await ask(b, 0)
    while pending:
        rid, body = await conn.receive()
        bucket, asked = pending.pop(rid)
        resp = pb.FetchLogResponse.FromString(body)
        for t in resp.tables_resp:
            for b in t.buckets_resp:
                if b.error_code:
                    raise FlussError(f"{conn.where}: fetch of bucket {b.bucket_id} failed: "
                                     f"{b.error_message or default_message(b.error_code)}", b.error_code)
                recs = b.records
                received += len(recs)
                offset = None
                for h in iter_batches(recs):
                    rows += h.record_count
                    offset = h.next_offset
                if offset is not None and offset < b.high_watermark:
                    await ask(bucket, offset)
                elif offset is None and asked < b.high_watermark:
                    raise Mismatch(f"ceiling fetch: bucket {bucket} returned no batch at offset {asked}, "
                                   f"below its high watermark {b.high_watermark}")
    return rows, received


async def run_fetch(client: Client | None, env: Env, name: str) -> Outcome:
    rt = await route(env.bootstrap, name)
    res, seconds, sw, conns = await _on_leaders(
        rt, rt.buckets_by_leader(), lambda conn, buckets: _fetch_from(conn, rt.table_id, buckets),
        env.stopwatch)
    rows = sum(r[0] for r in res)
    if rows != env.rows:
        raise Mismatch(f"ceiling fetch of {DATABASE}.{name}: {rows} records, expected {env.rows}")
    wire = sum(c.bytes_in for c in conns.values())
    return Outcome(seconds, rows, env.table.nbytes, wire_bytes=wire, cpu=sw.cpu, rss=sw.rss)


register(Scenario("ceiling_produce", "raw pipelined ProduceLog of pre-encoded batches (no client)",
                  run_produce, prepare_produce, cleanup_produce, raw=True))
register(Scenario("ceiling_fetch", "raw FetchLog to the high watermark, headers only (no client)",
                  run_fetch, prepare_filled, cleanup_filled, raw=True))


# -- primary-key tables ---------------------------------------------------------------------------------
KV_BATCH_BYTES = 512 * 1024   # KV batch bytes per bucket per request (the clients' default batch size)
LOOKUP_KEYS = 20_000
LOOKUP_IN_FLIGHT = 64
LOOKUP_BATCH_KEYS = 64   # keys per request when batched (what a client batching 64 concurrent lookups sends)


def _pk_route_codecs(rt: TableRoute):
    from ..codec.kv.keys import RowKeyEncoder, key_columns
    from ..codec.rows.compacted import CompactedRowEncoder
    from ..codec.rows.indexed import IndexedRowEncoder

    desc = rt.descriptor
    schema = desc.schema
    keys = key_columns(desc)
    row_cls = IndexedRowEncoder if desc.kv_format == "INDEXED" else CompactedRowEncoder
    return (row_cls(schema.types, schema.names), RowKeyEncoder(schema, keys.physical_key),
            RowKeyEncoder(schema, keys.bucket_key))


def encode_put_kv(rows: list[dict], rt: TableRoute) -> dict[int, list[tuple[bytes, int]]]:
    """leader -> [(PutKvRequest body, record count)]: every row once, KV batches per bucket."""
    from ..codec.kv.keys import bucket_of
    from ..codec.kv.kvbatch import build_kv_batch

    row_enc, pk_enc, bk_enc = _pk_route_codecs(rt)
    names = rt.descriptor.schema.names
    n = len(rt.leaders)
    per_bucket: dict[int, list[tuple[bytes, bytes]]] = {b: [] for b in rt.leaders}
    for row in rows:
        values = [row.get(c) for c in names]
        per_bucket[bucket_of(bk_enc.encode_row(values), n)].append((pk_enc.encode_row(values),
                                                                    row_enc.encode(values)))
    out: dict[int, list[tuple[bytes, int]]] = {}
    for bucket, recs in per_bucket.items():
        batch: list[tuple[bytes, bytes]] = []
        size = 0
        for rec in recs + [None]:
            if rec is not None:
                batch.append(rec)
                size += len(rec[0]) + len(rec[1]) + 6
            if batch and (rec is None or size >= KV_BATCH_BYTES):
                req = pb.PutKvRequest(acks=-1, table_id=rt.table_id, timeout_ms=30000, buckets_req=[
                    pb.PbPutKvReqForBucket(bucket_id=bucket, records=build_kv_batch(batch, schema_id=rt.schema_id))])
                out.setdefault(rt.leaders[bucket], []).append((req.SerializeToString(), len(batch)))
                batch, size = [], 0
    return out


async def _put_kv_to(conn: RawConnection, reqs: list[tuple[bytes, int]]) -> int:
    acked = 0
    async for (_, count), body in _pipelined(conn, Api.PUT_KV, reqs, IN_FLIGHT, 0):
        for b in pb.PutKvResponse.FromString(body).buckets_resp:
            if b.error_code:
                raise FlussError(f"{conn.where}: put to bucket {b.bucket_id} failed: "
                                 f"{b.error_message or default_message(b.error_code)}", b.error_code)
        acked += count
    return acked


async def _create_raw_pk(env: Env, tag: str) -> tuple[str, TableRoute]:
    name = table_name(tag)
    await create_table(env.verifier, name, pk_schema(env.spec), env.buckets, primary_keys=[env.spec.id_column])
    return name, await route(env.bootstrap, name)


async def prepare_put_kv(env: Env) -> dict:
    if len(set(env.table.column(env.spec.id_column).to_pylist())) != env.rows:
        raise FlussError(f"data set {env.dataset}: {env.spec.id_column} is not unique")
    name, rt = await _create_raw_pk(env, "ceiling_put_kv")
    return {"name": name, "route": rt, "requests": encode_put_kv(env.dicts, rt)}


async def run_put_kv(client: Client | None, env: Env, shared: dict) -> Outcome:
    rt: TableRoute = shared["route"]
    counts, seconds, sw, conns = await _on_leaders(rt, shared["requests"], _put_kv_to, env.stopwatch)
    rows = sum(counts)
    if rows != env.rows:
        raise Mismatch(f"ceiling put_kv: {rows} records acknowledged, expected {env.rows}")
    wire = sum(c.bytes_out for c in conns.values())
    return Outcome(seconds, rows, env.table.nbytes, wire_bytes=wire, cpu=sw.cpu, rss=sw.rss)


async def prepare_lookup(env: Env, keys_per_request: int = 1) -> dict:
    """A PK table filled with raw PUT_KV (no client needed), and LOOKUP request bodies of
    ``keys_per_request`` keys of one bucket each."""
    from ..codec.kv.keys import bucket_of

    shared = await prepare_put_kv(env)
    rt: TableRoute = shared["route"]
    await _on_leaders(rt, shared["requests"], _put_kv_to)
    _, pk_enc, bk_enc = _pk_route_codecs(rt)
    names = rt.descriptor.schema.names
    n = len(rt.leaders)
    import random

    sample = random.Random(11).sample(env.dicts, min(LOOKUP_KEYS, len(env.dicts)))
    per_bucket: dict[int, list[bytes]] = {}
    for row in sample:
        values = [row.get(c) for c in names]
        per_bucket.setdefault(bucket_of(bk_enc.encode_row(values), n), []).append(pk_enc.encode_row(values))
    by_leader: dict[int, list[tuple[bytes, int]]] = {}
    for bucket, keys in sorted(per_bucket.items()):
        for lo in range(0, len(keys), keys_per_request):
            chunk = keys[lo:lo + keys_per_request]
            req = pb.LookupRequest(table_id=rt.table_id, buckets_req=[
                pb.PbLookupReqForBucket(bucket_id=bucket, keys=chunk)])
            by_leader.setdefault(rt.leaders[bucket], []).append((req.SerializeToString(), len(chunk)))
    return {"name": shared["name"], "route": rt, "lookups": by_leader}


async def prepare_lookup_batch(env: Env) -> dict:
    return await prepare_lookup(env, LOOKUP_BATCH_KEYS)


async def _lookup_at(conn: RawConnection, bodies: list[tuple[bytes, int]]) -> int:
    found = 0
    async for _, body in _pipelined(conn, Api.LOOKUP, bodies, LOOKUP_IN_FLIGHT, 0):
        for b in pb.LookupResponse.FromString(body).buckets_resp:
            if b.error_code:
                raise FlussError(f"{conn.where}: lookup in bucket {b.bucket_id} failed: "
                                 f"{b.error_message or default_message(b.error_code)}", b.error_code)
            found += sum(1 for v in b.values if v.HasField("values"))
    return found


async def run_lookup(client: Client | None, env: Env, shared: dict) -> Outcome:
    rt: TableRoute = shared["route"]
    found, seconds, sw, _ = await _on_leaders(rt, shared["lookups"], _lookup_at, env.stopwatch)
    asked = sum(k for bodies in shared["lookups"].values() for _, k in bodies)
    if sum(found) != asked:
        raise Mismatch(f"ceiling lookup: {sum(found)} of {asked} keys found")
    row_bytes = env.table.nbytes // max(1, env.table.num_rows)
    return Outcome(seconds, asked, row_bytes * asked, cpu=sw.cpu, rss=sw.rss)


async def cleanup_pk(env: Env, shared: dict) -> None:
    await drop_table(env.verifier, shared["name"])


register(Scenario("ceiling_put_kv",
                  "raw pipelined PutKv of pre-encoded KV batches (first repetition inserts, later ones update)",
                  run_put_kv, prepare_put_kv, cleanup_pk, raw=True))
register(Scenario("ceiling_lookup", "raw single-key Lookup requests, 64 in flight (no client)",
                  run_lookup, prepare_lookup, cleanup_pk, raw=True))
register(Scenario("ceiling_lookup_batch", "raw Lookup requests of 64 keys of one bucket, 64 in flight (no client)",
                  run_lookup, prepare_lookup_batch, cleanup_pk, raw=True))
