"""Helpers shared by the client tests: a connection, and the raw records the server stored for a
bucket (fetched with a hand-built FetchLog, so a write test does not depend on the scanner)."""
from __future__ import annotations

import socket
import threading

import fluss_fast as fluss
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import Api
from fluss_fast.rpc.connection import Connection


def free_port() -> int:
    """A loopback port nothing listens on (for an address that must refuse, or a server to come)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


async def connect(bootstrap: str, props=None) -> fluss.FlussConnection:
    d = {"bootstrap.servers": bootstrap}
    d.update(props or {})
    return await fluss.FlussConnection.create(fluss.Config(d))


async def leader_request(table, bucket: int, api_key: int, req, partition_id=None):
    """One hand-built request to the leader of a bucket, as the table's connection knows it (it has
    just written or read it), on a plain connection of its own: what the server answers, not what
    the client makes of it."""
    leader = table.bucket_leaders(partition_id)[bucket]
    assert leader is not None, f"no leader known for bucket {bucket} of {table.get_table_path()}"
    return await server_request(leader, api_key, req)


async def server_request(node, api_key: int, req):
    """One hand-built request to one server (a ``ServerNode``) on a plain connection of its own."""
    c = await Connection.open(node.host, node.port)
    try:
        return await c.request(api_key, req)
    finally:
        c.close()


async def any_tablet_request(conn, api_key: int, req):
    """One hand-built request to a tablet server of ``conn``'s cluster."""
    nodes = await conn.get_admin().get_server_nodes()
    return await server_request(next(n for n in nodes if n.server_type == "TabletServer"), api_key, req)


async def fetch_records(table, bucket: int, partition_id=None) -> bytes:
    """Every batch of one bucket from offset 0, as the leader sends them (up to 64 MiB)."""
    req = pb.FetchLogRequest(follower_server_id=-1, max_bytes=64 << 20)
    t = req.tables_req.add()
    t.table_id = table.get_table_info().table_id
    t.projection_pushdown_enabled = False
    b = t.buckets_req.add()
    if partition_id is not None:
        b.partition_id = partition_id
    b.bucket_id = bucket
    b.fetch_offset = 0
    b.max_fetch_bytes = 64 << 20
    resp = await leader_request(table, bucket, Api.FETCH_LOG, req, partition_id)
    return bytes(resp.tables_resp[0].buckets_resp[0].records)


def run_threads(target, n: int, timeout=None) -> list:
    """Runs ``target(k)`` for k < n, each in its own thread, all at once; returns what they raised."""
    errors = []

    def guarded(k):
        try:
            target(k)
        except Exception as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return errors
