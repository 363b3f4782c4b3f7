"""The hand-framed protobuf of rpc/wire.py against the generated classes: every encoder gives the
bytes SerializeToString gives, every parser reads what ParseFromString reads (negative, boundary
and empty values included), and the parsers leave record bytes where they are."""
from __future__ import annotations

import pathlib
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc import wire

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
EDGE32 = [-(1 << 31), -1, 0, 1, 127, 128, (1 << 31) - 1]
EDGE64 = [-(1 << 63), -1, 0, 1, 127, 128, (1 << 31), (1 << 63) - 1]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# a bucket: partition id (None = unset), bucket id, its records split into chunks
BUCKETS = st.lists(st.tuples(st.none() | INT64, INT32, st.lists(st.binary(max_size=40), max_size=3)),
                   max_size=12)


def _join(chunks) -> bytes:
    return b"".join(bytes(c) for c in chunks)


def _field_bytes(message_cls, **fields) -> bytes:
    return message_cls(**fields).SerializeToString()


# -- primitives --------------------------------------------------------------------------------------
@given(INT64)
def test_varint_matches_protobuf_int64_and_reads_back(value):
    encoded = wire.encode_varint(value)
    serialized = _field_bytes(pb.PbFetchLogRespForTable, table_id=value)
    assert serialized == wire.field_tag(pb.PbFetchLogRespForTable, "table_id") + encoded
    raw, pos = wire.read_varint(encoded, 0, len(encoded))
    assert pos == len(encoded)
    assert wire.int64(raw) == value


@pytest.mark.parametrize("value", EDGE32)
def test_negative_int32_is_sign_extended_to_ten_bytes(value):
    encoded = wire.encode_varint(value)
    assert _field_bytes(pb.InitWriterResponse, writer_id=value)[1:] == encoded
    assert len(encoded) == (10 if value < 0 else len(encoded))
    raw, _ = wire.read_varint(encoded, 0, len(encoded))
    assert wire.int32(raw) == value


def test_int32_reads_the_low_bits_like_protobuf():
    # a (legal) ten-byte encoding of an int32 field whose high bits are set: protobuf keeps 32 bits
    m = pb.PbFetchLogRespForBucket()
    body = wire.field_tag(pb.PbFetchLogRespForBucket, "bucket_id") + wire.encode_varint((1 << 40) + 5)
    m.ParseFromString(body)
    raw, _ = wire.read_varint(body, 1, len(body))
    assert wire.int32(raw) == m.bucket_id == 5


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\xff" * 9])
def test_truncated_varint_is_a_value_error(data):
    with pytest.raises(ValueError, match="truncated"):
        wire.read_varint(data, 0, len(data))


def test_varint_longer_than_ten_bytes_is_a_value_error():
    data = b"\xff" * 10 + b"\x01"
    with pytest.raises(ValueError, match="10 bytes"):
        wire.read_varint(data, 0, len(data))
    assert wire.read_varint(b"\xff" * 9 + b"\x01", 0, 10)[1] == 10


def test_field_tags_come_from_the_descriptors():
    assert wire.field_number(pb.PutKvRequest, "buckets_req") == 5
    assert wire.PRODUCE_LOG.buckets_tag == bytes([(4 << 3) | 2])
    assert wire.PUT_KV.buckets_tag == bytes([(5 << 3) | 2])
    assert wire.PUT_KV.target_columns_tag == bytes([(4 << 3) | 2])  # packed
    assert wire.PRODUCE_LOG.target_columns_tag is None
    assert wire.field_tag(pb.PbFetchLogRespForBucket, "records") == b"\x42"


def test_walk_spans_and_skips():
    body = (b"\x08\x05" + b"\x12\x03abc" + b"\x19" + b"\x00" * 8 + b"\x25" + b"\x00" * 4)
    assert list(wire.walk(body, 0, len(body))) == [(1, 5), (2, (4, 7))]
    with pytest.raises(ValueError, match="overruns"):
        list(wire.walk(b"\x12\x05ab", 0, 4))
    with pytest.raises(ValueError, match="wire type"):
        list(wire.walk(b"\x0b", 0, 1))


def test_protobuf_varints_live_only_in_the_wire_module():
    # codec/ has the row formats' own varints (bit-width bounded, no protobuf sign extension)
    root = pathlib.Path(wire.__file__).resolve().parents[1]
    defining = [str(p.relative_to(root)) for p in root.rglob("*.py")
                if p.parts[len(root.parts)] != "codec" and p != pathlib.Path(wire.__file__).resolve()
                and re.search(r"^\s*def \w*varint\w*\(", p.read_text(encoding="utf-8"), re.M)]
    assert defining == []


# -- ProduceLog / PutKv ------------------------------------------------------------------------------
def _produce_pb(acks, table_id, timeout_ms, buckets) -> pb.ProduceLogRequest:
    m = pb.ProduceLogRequest(acks=acks, table_id=table_id, timeout_ms=timeout_ms)
    for pid, bid, chunks in buckets:
        b = m.buckets_req.add(bucket_id=bid, records=_join(chunks))
        if pid is not None:
            b.partition_id = pid
    return m


def _put_kv_pb(acks, table_id, timeout_ms, target_columns, buckets) -> pb.PutKvRequest:
    m = pb.PutKvRequest(acks=acks, table_id=table_id, timeout_ms=timeout_ms)
    m.target_columns.extend(target_columns)
    for pid, bid, chunks in buckets:
        b = m.buckets_req.add(bucket_id=bid, records=_join(chunks))
        if pid is not None:
            b.partition_id = pid
    return m


def _assert_same_buckets(raw, message, body):
    assert len(raw.buckets_req) == len(message.buckets_req)
    for got, want in zip(raw.buckets_req, message.buckets_req, strict=True):
        assert got.HasField("partition_id") == want.HasField("partition_id")
        assert got.partition_id == want.partition_id
        assert got.bucket_id == want.bucket_id
        assert bytes(got.records) == want.records
        assert isinstance(got.records, memoryview) and got.records.obj is body.obj  # not copied


@SETTINGS
@given(INT32, INT64, INT32, BUCKETS)
def test_produce_log_encode_and_parse_match_protobuf(acks, table_id, timeout_ms, buckets):
    message = _produce_pb(acks, table_id, timeout_ms, buckets)
    encoded = _join(wire.PRODUCE_LOG.encode(acks, table_id, timeout_ms, buckets))
    assert encoded == message.SerializeToString()
    body = memoryview(bytearray(encoded))
    raw = wire.parse_produce_request(body)
    assert (raw.acks, raw.table_id, raw.timeout_ms) == (acks, table_id, timeout_ms)
    _assert_same_buckets(raw, message, body)


@SETTINGS
@given(INT32, INT64, INT32, st.lists(INT32, max_size=6), BUCKETS)
def test_put_kv_encode_and_parse_match_protobuf(acks, table_id, timeout_ms, target_columns, buckets):
    message = _put_kv_pb(acks, table_id, timeout_ms, target_columns, buckets)
    encoded = _join(wire.PUT_KV.encode(acks, table_id, timeout_ms, buckets, target_columns))
    assert encoded == message.SerializeToString()
    body = memoryview(bytearray(encoded))
    raw = wire.PUT_KV.parse(body)
    assert (raw.acks, raw.table_id, raw.timeout_ms) == (acks, table_id, timeout_ms)
    assert raw.target_columns == list(message.target_columns)
    _assert_same_buckets(raw, message, body)


@pytest.mark.parametrize("pid", EDGE64 + [None])
def test_produce_log_boundary_values(pid):
    buckets = [(pid, b, [b""]) for b in EDGE32]  # empty records too
    for acks in (-1, 0, 1):
        message = _produce_pb(acks, (1 << 63) - 1, (1 << 31) - 1, buckets)
        encoded = _join(wire.PRODUCE_LOG.encode(acks, (1 << 63) - 1, (1 << 31) - 1, buckets))
        assert encoded == message.SerializeToString()
        body = memoryview(bytearray(encoded))
        _assert_same_buckets(wire.parse_produce_request(body), message, body)


def test_large_records_are_passed_through_and_many_buckets():
    big = memoryview(bytearray(b"z" * (wire.COALESCE_BELOW + 10)))
    buckets = [(None, i, [b"a" * (i % 7)]) for i in range(2000)] + [(3, 2001, [b"head", big, b"tail"])]
    chunks = wire.PRODUCE_LOG.encode(1, 42, 1000, buckets)
    assert any(isinstance(c, memoryview) and c.obj is big.obj for c in chunks)
    message = _produce_pb(1, 42, 1000, buckets)
    assert _join(chunks) == message.SerializeToString()
    body = memoryview(bytearray(_join(chunks)))
    _assert_same_buckets(wire.parse_produce_request(body), message, body)


@SETTINGS
@given(st.data())
def test_produce_parse_never_disagrees_with_protobuf(data):
    """Whatever the hand parser accepts, protobuf parses to the same request; truncated, extended
    or corrupted bodies are either read identically or left to protobuf (None)."""
    buckets = data.draw(BUCKETS)
    encoded = bytearray(_join(wire.PRODUCE_LOG.encode(1, 7, 100, buckets)))
    cut = data.draw(st.integers(0, len(encoded)))
    body = encoded[:cut] + data.draw(st.binary(max_size=6))
    if body and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(body) - 1))
        body[i] = data.draw(st.integers(0, 255))
    raw = wire.parse_produce_request(memoryview(body))
    if raw is None:
        return
    message = pb.ProduceLogRequest()
    message.ParseFromString(bytes(body))
    assert (raw.acks, raw.table_id, raw.timeout_ms) == (message.acks, message.table_id, message.timeout_ms)
    _assert_same_buckets(raw, message, memoryview(body))


@pytest.mark.parametrize("body", [
    b"",                                           # required fields missing
    b"\x08\x01\x10\x07",                           # timeout missing
    b"\x08\x01\x10\x07\x18\x64\xf8\x01\x07",       # unknown field 31
    b"\x08\x01\x10\x07\x18\x64\x22\x02\x10\x00",   # bucket without records
    b"\x08\x01\x10\x07\x18\x64\x22\x05\x10\x00\x1a\x05a",  # records overrun
    b"\x08\x01\x10\x07\x18\x64\x22\x04\x10\x00\x18\x05",   # records as a varint
    b"\x08\x81",                                   # truncated varint
])
def test_produce_parse_leaves_odd_bodies_to_protobuf(body):
    assert wire.parse_produce_request(memoryview(bytearray(body))) is None


def test_put_kv_parse_leaves_agg_mode_to_protobuf():
    message = _put_kv_pb(1, 5, 10, [0, 2], [(None, 0, [b"r"])])
    message.agg_mode = 1
    assert wire.PUT_KV.parse(memoryview(bytearray(message.SerializeToString()))) is None


# -- FetchLog response -------------------------------------------------------------------------------
FETCH_BUCKET = st.tuples(
    st.none() | INT64, INT32,
    st.sampled_from(["ok", "error", "remote"]),
    INT32.filter(bool), st.text(max_size=10), INT64, st.lists(st.binary(max_size=30), max_size=3))


def _fetch_pair(tables):
    """The same FetchLog answer as wire.FetchLogBucket lists and as a generated message."""
    message = pb.FetchLogResponse()
    ours = []
    for table_id, buckets in tables:
        t = message.tables_resp.add(table_id=table_id)
        bs = []
        for pid, bid, kind, code, text, hw, chunks in buckets:
            b = wire.FetchLogBucket(pid, bid)
            m = t.buckets_resp.add(bucket_id=bid)
            if pid is not None:
                m.partition_id = pid
            if kind == "error":
                b.fail(code, text)
                m.error_code = code
                if text:
                    m.error_message = text
            else:
                b.high_watermark = hw
                m.high_watermark = hw
                m.log_start_offset = 0
                if kind == "remote":
                    b.remote = pb.PbRemoteLogFetchInfo(remote_log_tablet_dir="/r", first_start_pos=code)
                    m.remote_log_fetch_info.CopyFrom(b.remote)
                else:
                    b.chunks = list(chunks)
                    b.size = sum(len(c) for c in chunks)
                    m.records = _join(chunks)
            bs.append(b)
        ours.append((table_id, bs))
    return ours, message


@SETTINGS
@given(st.lists(st.tuples(INT64, st.lists(FETCH_BUCKET, max_size=6)), max_size=3))
def test_fetch_log_encode_and_parse_match_protobuf(tables):
    ours, message = _fetch_pair(tables)
    encoded = _join(wire.encode_fetch_response(ours))
    assert encoded == message.SerializeToString()
    parsed = wire.parse_fetch_response(encoded)
    assert [t for t, _ in parsed] == [t.table_id for t in message.tables_resp]
    for (_, got), want in zip(parsed, message.tables_resp, strict=True):
        assert len(got) == len(want.buckets_resp)
        for r, m in zip(got, want.buckets_resp, strict=True):
            assert r.partition_id == (m.partition_id if m.HasField("partition_id") else None)
            assert r.bucket_id == m.bucket_id
            assert r.error_code == m.error_code
            assert r.error_message == (m.error_message if m.HasField("error_message") else None)
            assert r.high_watermark == (m.high_watermark if m.HasField("high_watermark") else -1)
            if m.HasField("records"):
                assert encoded[r.records[0]:r.records[1]] == m.records
            else:
                assert r.records is None
            if m.HasField("remote_log_fetch_info"):
                assert r.remote == m.remote_log_fetch_info.SerializeToString()
            else:
                assert r.remote is None


@SETTINGS
@given(st.none() | INT64, INT32, INT32, INT64, INT64, st.binary(max_size=20))
def test_fetch_parse_reads_every_field_protobuf_writes(pid, bid, code, hw, filtered_end, records):
    m = pb.FetchLogResponse()
    t = m.tables_resp.add(table_id=-1)
    b = t.buckets_resp.add(bucket_id=bid, error_code=code, error_message="naïve", high_watermark=hw,
                           log_start_offset=3, records=records, filtered_end_offset=filtered_end)
    if pid is not None:
        b.partition_id = pid
    body = m.SerializeToString()
    [(table_id, [r])] = wire.parse_fetch_response(memoryview(body))
    assert table_id == -1
    assert (r.partition_id, r.bucket_id, r.error_code, r.error_message, r.high_watermark, r.filtered_end_offset) \
        == (pid, bid, code, "naïve", hw, filtered_end)
    assert body[r.records[0]:r.records[1]] == records


def test_fetch_large_chunks_are_not_copied_and_empty_records_are_framed():
    big = b"q" * (64 * 1024)
    b1 = wire.FetchLogBucket(None, 0)
    b1.high_watermark, b1.chunks, b1.size = (1 << 63) - 1, [big, b"tail"], len(big) + 4
    b2 = wire.FetchLogBucket(-1, 1)
    b2.high_watermark = 0  # records present but empty
    chunks = wire.encode_fetch_response([(9, [b1, b2])])
    assert any(c is big for c in chunks)
    m = pb.FetchLogResponse()
    m.ParseFromString(_join(chunks))
    got = m.tables_resp[0].buckets_resp
    assert got[0].records == big + b"tail" and got[0].high_watermark == (1 << 63) - 1
    assert got[1].HasField("records") and got[1].records == b"" and got[1].partition_id == -1


@pytest.mark.parametrize("body", [b"\x0a\x05\x08\x01", b"\x0a\x03\x12\x01\x08", b"\x0a\x04\x12\x02\x42\x05",
                                  b"\x0a\x04\x12\x02\x10\x81", b"\x0a\x04\x12\x02\x42\x00\x0f"])
def test_fetch_parse_rejects_malformed_bodies(body):
    with pytest.raises(ValueError):
        wire.parse_fetch_response(body)


def test_fetch_parse_rejects_a_field_of_the_wrong_wire_type():
    with pytest.raises(ValueError, match="field 8"):
        wire.parse_fetch_response(b"\x0a\x04\x12\x02\x40\x05")  # records as a varint
    with pytest.raises(ValueError, match="field 2"):
        wire.parse_fetch_response(b"\x0a\x05\x12\x03\x12\x01a")  # bucket id as bytes


# -- Metadata response -------------------------------------------------------------------------------
def test_metadata_fields_splice_into_a_response():
    head = pb.MetadataResponse()
    head.coordinator_server.node_id, head.coordinator_server.host, head.coordinator_server.port = 0, "h", 1
    tm = pb.PbTableMetadata(table_id=(1 << 63) - 1, schema_id=1, table_json=b"{}", created_time=-1,
                            modified_time=0)
    tm.table_path.database_name, tm.table_path.table_name = "db", "t"
    tm.bucket_metadata.add(bucket_id=0, leader_id=-1, leader_epoch=0)
    pms = [pb.PbPartitionMetadata(table_id=1, partition_name=f"p{i}", partition_id=i) for i in range(300)]
    spliced = (head.SerializeToString() + wire.table_metadata_field(tm.SerializeToString())
               + b"".join(wire.partition_metadata_field(p.SerializeToString()) for p in pms))
    expected = pb.MetadataResponse()
    expected.CopyFrom(head)
    expected.table_metadata.add().CopyFrom(tm)
    for p in pms:
        expected.partition_metadata.add().CopyFrom(p)
    assert spliced == expected.SerializeToString()
    parsed = pb.MetadataResponse()
    parsed.ParseFromString(spliced)
    assert parsed == expected
