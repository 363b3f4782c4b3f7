"""Fuzzing (hypothesis) of every decoder of the client and every request of the server.

Client: random and mutated log batches (with their CRC re-stamped, as a buggy or hostile server
could send them), FetchLog answers and response frames must end in FlussError / ValueError /
ArrowException at worst, never another exception or a crash. Server: random and mutated frames for
every API key must get an answer or a closed connection, and the server must keep serving.
"""
from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluss_fast.client.cluster import TableMeta
from fluss_fast.client.scan.decode import ScanSpec
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.log.arrowlog import ArrowLogCodec
from fluss_fast.codec.log.indexedlog import build_row_log_batch
from fluss_fast.datatypes import SchemaInfo, TableDescriptorInfo
from fluss_fast.errors import FlussError
from fluss_fast.metadata import TableBucket, TablePath
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc import frame as F
from fluss_fast.rpc.api import API_KEYS, Api
from fluss_fast.rpc.wire import parse_fetch_response

from wire import Closed, WireClient

pytestmark = pytest.mark.timeout(240)

FUZZ = settings(max_examples=250, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
EXPECTED = (FlussError, ValueError, pa.ArrowException)

ARROW_SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("xs", pa.list_(pa.int64())),
                          ("score", pa.float64())])


def _meta(log_format="ARROW", compression="NONE"):
    schema = SchemaInfo.from_arrow(ARROW_SCHEMA)
    desc = TableDescriptorInfo(schema, bucket_count=1,
                               properties={"table.log.arrow.compression.type": compression,
                                           "table.log.format": log_format})
    return TableMeta(7, TablePath("fuzz", "t"), 1, desc, schema, 0, 0, {0: 0})


def _rows(n=5):
    return [[i, f"n{i}" if i % 2 else None, [i, -i] if i % 3 else None, i * 0.5] for i in range(n)]


def _arrow_batch(compression):
    rb = pa.record_batch([pa.array([r[k] for r in _rows()], type=f.type) for k, f in enumerate(ARROW_SCHEMA)],
                         schema=ARROW_SCHEMA)
    return ArrowLogCodec(SchemaInfo.from_arrow(ARROW_SCHEMA), compression).build(rb, schema_id=1)


def _indexed_batch():
    return build_row_log_batch(_rows(), SchemaInfo.from_arrow(ARROW_SCHEMA).types, fmt="INDEXED", schema_id=1)


SPECS = {"arrow-none": (ScanSpec(_meta()), _arrow_batch("NONE")),
         "arrow-zstd": (ScanSpec(_meta(compression="ZSTD")), _arrow_batch("ZSTD")),
         "arrow-lz4": (ScanSpec(_meta(compression="LZ4_FRAME")), _arrow_batch("LZ4_FRAME")),
         "indexed": (ScanSpec(_meta("INDEXED")), _indexed_batch())}


def _restamp(buf: bytearray) -> bytearray:
    """The CRC the mutated batch claims to have, so decoding goes past the CRC check."""
    try:
        h = logbatch.parse_header(buf)
        struct.pack_into("<I", buf, 25 if h.magic == 2 else 21, logbatch.crc_of(buf))
    except (ValueError, struct.error):
        pass
    return buf


mutations = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8)


def _mutate(data: bytes, muts, cut=None) -> bytearray:
    buf = bytearray(data)
    for pos, val in muts:
        buf[pos % len(buf)] = val
    if cut is not None:
        buf = buf[:cut % (len(buf) + 1)]
    return buf


# -- client: log batches ---------------------------------------------------------------------------
@FUZZ
@given(st.binary(max_size=400))
def test_batch_framing_of_random_bytes(data):
    try:
        for h in logbatch.iter_batches(data):
            logbatch.verify_crc(data, h.position)
    except ValueError:
        pass
    with contextlib.suppress(ValueError):
        logbatch.validate_records(data)


@pytest.mark.parametrize("kind", list(SPECS))
@FUZZ
@given(muts=mutations, cut=st.none() | st.integers(0, 10_000), header_too=st.booleans())
def test_record_decoders_of_mutated_batches(kind, muts, cut, header_too):
    spec, good = SPECS[kind]
    h = logbatch.parse_header(good)
    if not header_too:  # keep the header, mutate the records after it
        muts = [(h.header_size + p % max(1, len(good) - h.header_size), v) for p, v in muts]
    buf = _restamp(_mutate(good, muts, cut))
    tb = TableBucket(7, 0)
    try:
        chunks, _ = spec.decode_records(tb, memoryview(buf), 0, len(buf), 0)
        for c in chunks:
            c.arrow()
    except EXPECTED:
        pass
    with contextlib.suppress(EXPECTED):
        spec.decode_full_batches(tb, memoryview(buf))


# -- client: FetchLog answers and response frames ---------------------------------------------------
def _fetch_response() -> bytes:
    resp = pb.FetchLogResponse()
    t = resp.tables_resp.add(table_id=7)
    b = t.buckets_resp.add(bucket_id=0, high_watermark=5, records=SPECS["arrow-none"][1])
    b.log_start_offset = 0
    t.buckets_resp.add(bucket_id=1, error_code=12, error_message="not leader")
    return resp.SerializeToString()


@FUZZ
@given(st.one_of(st.binary(max_size=300).map(bytearray),
                 st.builds(lambda m, c: _mutate(_fetch_response(), m, c), mutations,
                           st.none() | st.integers(0, 10_000))))
def test_fetch_response_parser(body):
    # the fetcher turns ValueError/TypeError of this parser into "unreadable fetch response"
    spec = SPECS["arrow-none"][0]
    try:
        for _table_id, buckets in parse_fetch_response(memoryview(body)):
            for r in buckets:
                if r.records is not None:
                    spec.decode_records(TableBucket(7, max(r.bucket_id, 0)), memoryview(body),
                                        r.records[0], r.records[1], 0)
    except EXPECTED + (TypeError,):
        pass


@FUZZ
@given(st.lists(st.binary(max_size=120), max_size=6), st.lists(st.sampled_from(sorted(API_KEYS)), min_size=1,
                                                                 max_size=4), st.integers(-5, 5000))
def test_connection_frame_reader(chunks, keys, length):
    """Whatever bytes arrive, the receive side fails pending requests with FlussError or completes
    them; nothing escapes into the event loop."""
    from fluss_fast.rpc.connection import Connection, _Pending, _Protocol

    loop = asyncio.new_event_loop()
    try:
        conn = Connection("fuzz", 1, 1000)
        conn._loop = loop
        futs = []
        for rid, key in enumerate(keys):
            fut = loop.create_future()
            conn._pending[rid] = _Pending(fut, key, False, None)
            futs.append(fut)
        proto = _Protocol(conn)
        # well-framed answers with random bodies for the pending ids, then random bytes
        data = b"".join(F.encode_response(rid % len(keys), body, kind=rid % 3 if rid % 3 < 2 else 0)
                        for rid, body in enumerate(chunks))
        # then a frame whose length says anything (announced lengths in the GiB only cost memory)
        data += struct.pack(">i", length) + b"".join(chunks)
        pos = 0
        while pos < len(data) and not conn.closed:
            buf = proto.get_buffer(len(data) - pos)
            n = min(len(buf), len(data) - pos, 97)
            buf[:n] = data[pos:pos + n]
            proto.buffer_updated(n)
            pos += n
        for fut in futs:
            if fut.done() and not fut.cancelled() and fut.exception() is not None:
                assert isinstance(fut.exception(), FlussError), fut.exception()
    finally:
        loop.close()


# -- server: every request -------------------------------------------------------------------------
def _seed_requests(table_id: int, records: bytes) -> dict:
    """One well-formed request body per API key (mutated below), on a scratch table."""
    path = pb.PbTablePath(database_name="fuzzdb", table_name="t")
    seeds = {
        Api.LIST_DATABASES: pb.ListDatabasesRequest(),
        Api.DATABASE_EXISTS: pb.DatabaseExistsRequest(database_name="fuzzdb"),
        Api.LIST_TABLES: pb.ListTablesRequest(database_name="fuzzdb"),
        Api.GET_TABLE_INFO: pb.GetTableInfoRequest(table_path=path),
        Api.TABLE_EXISTS: pb.TableExistsRequest(table_path=path),
        Api.GET_METADATA: pb.MetadataRequest(table_path=[path]),
        Api.INIT_WRITER: pb.InitWriterRequest(table_path=[path]),
    }
    p = pb.ProduceLogRequest(acks=-1, table_id=table_id, timeout_ms=1000)
    p.buckets_req.add(bucket_id=0, records=records)
    seeds[Api.PRODUCE_LOG] = p
    f = pb.FetchLogRequest(follower_server_id=-1, max_bytes=1 << 20)
    ft = f.tables_req.add(table_id=table_id, projection_pushdown_enabled=False)
    ft.buckets_req.add(bucket_id=0, fetch_offset=0, max_fetch_bytes=1 << 20)
    seeds[Api.FETCH_LOG] = f
    lo = pb.ListOffsetsRequest(follower_server_id=-1, offset_type=1, table_id=table_id)
    lo.bucket_id.append(0)
    seeds[Api.LIST_OFFSETS] = lo
    return {k: v.SerializeToString() for k, v in seeds.items()}


class _Fuzzed:
    def __init__(self, addresses):
        self.addresses = addresses
        self.clients = {}

    def client(self, which):
        c = self.clients.get(which)
        if c is None:
            c = self.clients[which] = WireClient(self.addresses[which], timeout=15, handshake=False)
        return c

    def send(self, which, frame: bytes, then_eof: bool = False):
        """Sends a frame (and with ``then_eof`` ends the stream: a frame promising more bytes
        can only be answered by a close); True when an answer came, False when the server
        closed the socket."""
        c = self.client(which)
        try:
            c.send_raw(frame)
            if then_eof:
                c.sock.shutdown(socket.SHUT_WR)
                self.clients.pop(which, None)
                assert c.wait_closed(15), "the server kept a half-closed connection open"
                c.close()
                return False
            c.recv()
            return True
        except (Closed, ConnectionError, OSError) as e:
            if isinstance(e, socket.timeout):
                raise AssertionError("the server neither answered nor closed the connection") from None
            c.close()
            del self.clients[which]
            return False


def test_server_survives_random_and_mutated_frames(start_server):
    srv = start_server(sasl=False, tablet_servers=2)
    with WireClient(srv.bootstrap_servers) as c:
        c.call(Api.CREATE_DATABASE, pb.CreateDatabaseRequest(database_name="fuzzdb", ignore_if_exists=True))
        desc = ('{"version":1,"schema":{"version":1,"columns":[{"name":"id","data_type":{"type":"INTEGER"},'
                '"id":0}],"highest_field_id":0},"bucket_count":1,"properties":{},"custom_properties":{}}')
        c.call(Api.CREATE_TABLE, pb.CreateTableRequest(table_path=pb.PbTablePath(database_name="fuzzdb",
                                                                                  table_name="t"),
                                                       table_json=desc.encode(), ignore_if_exists=True))
        md = c.call(Api.GET_METADATA, pb.MetadataRequest(table_path=[pb.PbTablePath(database_name="fuzzdb",
                                                                                    table_name="t")]))
        table_id = md.table_metadata[0].table_id
        tablets = [f"{n.host}:{n.port}" for n in md.tablet_servers]
    rb = pa.record_batch([pa.array([1, 2], pa.int32())], names=["id"])
    from fluss_fast.datatypes import SchemaInfo as _S
    records = ArrowLogCodec(_S.from_arrow(rb.schema), "NONE").build(rb, schema_id=1)
    seeds = _seed_requests(table_id, records)
    fz = _Fuzzed({"coordinator": srv.bootstrap_servers, **{f"tablet{k}": a for k, a in enumerate(tablets)}})
    keys = sorted(API_KEYS)
    answered = closed = 0

    @settings(max_examples=400, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(key=st.sampled_from(keys), which=st.sampled_from(sorted(fz.addresses)),
           version=st.integers(-2, 3), body=st.binary(max_size=200), muts=mutations,
           cut=st.none() | st.integers(0, 10_000), mode=st.sampled_from(["random", "mutated", "raw"]))
    def one(key, which, version, body, muts, cut, mode):
        nonlocal answered, closed
        if mode == "mutated" and key in seeds:
            body = bytes(_mutate(seeds[key], muts, cut))
        if mode == "raw":  # not even a well-formed frame: a length the bytes do not keep
            frame = struct.pack(">i", len(body) + 9) + body
        else:
            frame = F.encode_request(key, version & 0x7FFF if version >= 0 else version, 1, body)
        if fz.send(which, frame, then_eof=mode == "raw"):
            answered += 1
        else:
            closed += 1

    one()
    for c in fz.clients.values():
        c.close()
    assert srv.proc.poll() is None, "the server died"
    # and it still serves, on every listener
    for addr in fz.addresses.values():
        with WireClient(addr) as c:
            assert "fuzzdb" in c.call(Api.LIST_DATABASES, pb.ListDatabasesRequest()).database_name
    assert answered > 100 and closed > 0, (answered, closed)
