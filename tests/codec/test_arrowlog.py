"""ARROW log payloads (docs/contributing/formats.md §2): encode/decode, compression framing, header-only batches,
unaligned zero-copy decode, change-type vectors, and the metadata-only server projection checked
against pyarrow's own decoding of the original batch."""
import datetime as dt
import decimal
import itertools
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluss_fast.codec.errors import CorruptBatchError
from fluss_fast.codec.log import arrowlog as al
from fluss_fast.codec.log import logbatch as lb
from fluss_fast.datatypes import SchemaInfo
from fluss_fast.errors import FlussError

COMPRESSIONS = ["NONE", "LZ4_FRAME", "ZSTD"]

ALL_TYPES = pa.schema([
    pa.field("id", pa.int64(), False),
    pa.field("b", pa.bool_()),
    pa.field("i8", pa.int8()),
    pa.field("i16", pa.int16()),
    pa.field("i32", pa.int32()),
    pa.field("f32", pa.float32()),
    pa.field("f64", pa.float64()),
    pa.field("s", pa.string()),
    pa.field("bin", pa.binary()),
    pa.field("fbin", pa.binary(4)),
    pa.field("dec", pa.decimal128(10, 2)),
    pa.field("bigdec", pa.decimal128(38, 10)),
    pa.field("d", pa.date32()),
    pa.field("t0", pa.time32("s")),
    pa.field("t3", pa.time32("ms")),
    pa.field("t6", pa.time64("us")),
    pa.field("ts3", pa.timestamp("ms")),
    pa.field("ts9", pa.timestamp("ns")),
    pa.field("ltz", pa.timestamp("us", tz="UTC")),
    pa.field("arr", pa.list_(pa.field("element", pa.string()))),
    pa.field("m", pa.map_(pa.string(), pa.int32())),
    pa.field("row", pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.list_(pa.int64()))])),
    pa.field("deep", pa.list_(pa.map_(pa.int32(), pa.struct([pa.field("z", pa.string())])))),
])
SCHEMA = SchemaInfo.from_arrow(ALL_TYPES, primary_key=["id"])
TARGET = SCHEMA.to_arrow()


def _rows(n):
    out = []
    for i in range(n):
        nul = i % 3 == 1
        out.append({
            "id": i,
            "b": None if nul else i % 2 == 0,
            "i8": None if nul else (i % 200) - 100,
            "i16": None if nul else i * 7 - 3000,
            "i32": None if nul else i * 1000003 % 2 ** 31,
            "f32": None if nul else i / 7,
            "f64": None if nul else -i / 3,
            "s": None if nul else "héllo-" * (i % 4) + str(i),
            "bin": None if nul else bytes(range(i % 50)),
            "fbin": None if nul else struct.pack("<i", i),
            "dec": None if nul else decimal.Decimal(i * 37).scaleb(-2),
            "bigdec": None if nul else decimal.Decimal(10 ** 27 + i).scaleb(-10),
            "d": None if nul else dt.date(1960, 1, 1) + dt.timedelta(days=i * 11),
            "t0": None if nul else dt.time(i % 24, i % 60, 5),
            "t3": None if nul else dt.time(i % 24, 3, 4, 5000),
            "t6": None if nul else dt.time(1, 2, 3, 4000),
            "ts3": None if nul else dt.datetime(1969, 12, 31, 23, 59, 59) + dt.timedelta(milliseconds=i),
            "ts9": None if nul else dt.datetime(2024, 2, 29, 12, 0, 0, i),
            "ltz": None if nul else dt.datetime(2000, 1, 1, tzinfo=dt.UTC),
            "arr": None if nul else [None if j == 1 else f"e{j}" for j in range(i % 4)],
            "m": None if nul else [(f"k{j}", None if j == 2 else j) for j in range(i % 5)],
            "row": None if nul else {"x": i, "y": [i, None, -i] if i % 2 else None},
            "deep": None if nul else [[(j, {"z": str(j)})] for j in range(i % 3)],
        })
    return out


@pytest.fixture(scope="module")
def batch():
    return pa.RecordBatch.from_pylist(_rows(50), schema=TARGET)


def _codec(comp):
    return al.ArrowLogCodec(SCHEMA, comp, table_name="db.all_types")


def test_arrow_schema_of_matches_datatypes():
    assert al.arrow_schema_of(SCHEMA).equals(TARGET)


def test_uncompressed_message_equals_pyarrow_serialize(batch):
    msg = _codec("NONE").encode(batch)
    assert bytes(msg) == batch.serialize().to_pybytes()
    assert bytes(msg[:4]) == b"\xff\xff\xff\xff"
    meta_len = struct.unpack_from("<i", msg, 4)[0]
    assert (8 + meta_len) % 8 == 0


@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_build_and_decode_round_trip(batch, comp):
    codec = _codec(comp)
    blob = codec.build(batch, schema_id=3, writer_id=7, batch_sequence=2)
    h = lb.parse_header(blob)
    assert (h.magic, h.schema_id, h.writer_id, h.batch_sequence, h.record_count) == (0, 3, 7, 2, 50)
    assert h.append_only and h.last_offset_delta == 49 and h.total_size == len(blob)
    assert lb.verify_crc(blob)
    lb.validate_records(blob)
    out, change_types = codec.decode(blob, h)
    assert change_types is None
    assert out.schema.equals(TARGET)
    assert out.equals(batch)
    assert out.to_pylist() == batch.to_pylist()


@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_message_readable_schemaless_like_rust_reader(batch, comp):
    """A reader that only knows the Fluss schema (pyfluss/Rust style) reads the bare message."""
    blob = _codec(comp).build(batch, schema_id=1)
    payload = pa.py_buffer(blob[lb.V0_HEADER_SIZE:])
    msg = pa.ipc.read_message(payload)
    assert msg.type == "record batch"
    rb = pa.ipc.read_record_batch(msg, SCHEMA.to_arrow())
    assert rb.equals(batch)
    # and through a stream reader when given a schema message first (how Java tools dump it)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, TARGET):
        pass
    schema_part = sink.getvalue().to_pybytes()[:-8]
    reader = pa.ipc.open_stream(schema_part + bytes(payload) + b"\xff\xff\xff\xff\0\0\0\0")
    assert reader.read_all().to_batches()[0].equals(batch)


def _first_compressed_buffer(blob):
    body_at = lb.V0_HEADER_SIZE + 8 + struct.unpack_from("<i", blob, lb.V0_HEADER_SIZE + 4)[0]
    meta = al.read_message_meta(memoryview(blob)[lb.V0_HEADER_SIZE + 8:body_at])
    for off, length in meta.buffers:
        if length > 8:
            return meta, blob[body_at + off:body_at + off + length]
    raise AssertionError("no non-empty buffer")


def test_lz4_frames_have_independent_blocks(batch):
    meta, buf = _first_compressed_buffer(_codec("LZ4_FRAME").build(batch, schema_id=1))
    assert meta.codec == 0 and meta.method == 0
    raw_len = struct.unpack_from("<q", buf)[0]
    assert raw_len > 0 or raw_len == -1
    if raw_len != -1:
        frame = buf[8:]
        assert frame[:4] == b"\x04\x22\x4d\x18"
        assert frame[4] == 0x60  # version 01, independent blocks, no checksums, no content size
        assert frame[5] == 0x40  # 64 KiB max block size


def test_zstd_body_uses_zstd_frames_and_level(batch):
    meta, buf = _first_compressed_buffer(_codec("ZSTD").build(batch, schema_id=1))
    assert meta.codec == 1
    raw_len = struct.unpack_from("<q", buf)[0]
    if raw_len != -1:
        assert buf[8:12] == b"\x28\xb5\x2f\xfd"
    big = pa.RecordBatch.from_pylist(_rows(3000), schema=TARGET)
    size1 = len(al.ArrowLogCodec(SCHEMA, "ZSTD", 1).encode(big))
    size19 = len(al.ArrowLogCodec(SCHEMA, "ZSTD", 19).encode(big))
    assert size19 < size1


def test_no_compression_field_when_uncompressed(batch):
    meta, _ = _first_compressed_buffer(_codec("NONE").build(batch, schema_id=1))
    assert meta.codec is None
    assert meta.length == 50 and len(meta.nodes) == sum(n for n, _ in al.field_shapes(TARGET))


def test_unknown_compression_rejected():
    with pytest.raises(ValueError, match="GZIP"):
        al.ArrowLogCodec(SCHEMA, "GZIP")


def test_empty_batch_is_header_only():
    codec = _codec("ZSTD")
    empty = TARGET.empty_table().to_batches() or [pa.RecordBatch.from_pylist([], schema=TARGET)]
    blob = codec.build(empty[0], schema_id=1)
    h = lb.parse_header(blob)
    assert len(blob) == lb.V0_HEADER_SIZE and h.record_count == 0 and h.last_offset_delta == 0
    out, ct = codec.decode(blob, h)
    assert out.num_rows == 0 and out.schema.equals(TARGET) and ct is None
    # a server CDC empty batch (not append-only) decodes to an empty change vector
    cdc = lb.build_batch(b"", schema_id=1, record_count=0, append_only=False)
    out, ct = codec.decode(cdc, lb.parse_header(cdc))
    assert out.num_rows == 0 and ct == b""
    assert codec.project_batch(cdc, lb.parse_header(cdc), [0, 2]) == cdc


def test_unaligned_batches_in_a_fetch_blob_decode_zero_copy(batch):
    codec = _codec("NONE")
    small = batch.slice(0, 7)
    blobs = [codec.build(batch, schema_id=1), codec.build(small, schema_id=1)]
    # a change-type vector of odd length leaves the next message unaligned inside the batch
    cdc = codec.build(small, schema_id=1, change_types=bytes([1, 2, 3, 4, 1, 1, 3]))
    whole = b"\x07\x07\x07" + blobs[0] + cdc + blobs[1] + blobs[0][:30]  # truncated tail
    arr = np.frombuffer(whole, dtype=np.uint8)
    lo, hi = arr.ctypes.data, arr.ctypes.data + len(whole)
    headers = list(lb.iter_batches(whole, 3))
    assert [h.record_count for h in headers] == [50, 7, 7]
    expected = [batch, small, small]
    for h, exp in zip(headers, expected, strict=True):
        out, ct = codec.decode(whole, h)
        assert out.equals(exp)
        data_buf = out.column("id").buffers()[1]
        assert lo <= data_buf.address < hi, "uncompressed decode must point into the input"
    assert codec.decode(whole, headers[1])[1] == bytes([1, 2, 3, 4, 1, 1, 3])
    assert headers[0].position % 8 == 3


@pytest.mark.parametrize("comp", ["LZ4_FRAME", "ZSTD"])
def test_unaligned_compressed_decode(batch, comp):
    codec = _codec(comp)
    blob = b"\x01" + codec.build(batch, schema_id=1)
    h = lb.parse_header(blob, 1)
    assert codec.decode(memoryview(blob), h)[0].equals(batch)
    assert codec.decode(pa.py_buffer(blob), h)[0].equals(batch)


def test_decode_with_other_schema_and_projected_schema(batch):
    codec = _codec("NONE")
    sub = pa.schema([TARGET.field(0), TARGET.field(7)])
    small = pa.RecordBatch.from_arrays([batch.column(0), batch.column(7)], schema=sub)
    blob = lb.build_batch(small.serialize(), schema_id=2, record_count=50)
    h = lb.parse_header(blob)
    assert codec.decode(blob, h, arrow_schema=sub)[0].equals(small)
    assert codec.decode(blob, h, projected=[0, 7])[0].equals(small)
    assert codec.decode(blob, h, projected=sub)[0].equals(small)


def test_decode_corrupt_inputs(batch):
    codec = _codec("ZSTD")
    blob = codec.build(batch, schema_id=1)
    h = lb.parse_header(blob)
    with pytest.raises(CorruptBatchError, match="truncated"):
        codec.decode(blob[:-10], h)
    broken = bytearray(blob)
    broken[lb.V0_HEADER_SIZE + 20:lb.V0_HEADER_SIZE + 60] = b"\xee" * 40
    with pytest.raises(CorruptBatchError):
        codec.decode(bytes(broken), h)
    # header claims more rows than the message holds
    wrong = lb.build_batch(codec.encode(batch.slice(0, 5)), schema_id=1, record_count=6)
    with pytest.raises(CorruptBatchError, match="5 rows"):
        codec.decode(wrong, lb.parse_header(wrong))
    # records but no message
    hollow = lb.build_batch(b"", schema_id=1, record_count=3)
    with pytest.raises(CorruptBatchError, match="no Arrow message"):
        codec.decode(hollow, lb.parse_header(hollow))


def test_change_types_round_trip(batch):
    codec = _codec("LZ4_FRAME")
    ct = bytes(i % 5 for i in range(50))
    blob = codec.build(batch, schema_id=4, change_types=ct)
    h = lb.parse_header(blob)
    assert not h.append_only and lb.verify_crc(blob)
    out, got = codec.decode(blob, h)
    assert got == ct and out.equals(batch)
    with pytest.raises(ValueError, match="49 entries"):
        codec.build(batch, schema_id=4, change_types=ct[:-1])


# -- schema conformance ---------------------------------------------------------------------------

def test_encode_relabels_names_nullability_and_zone(batch):
    codec = _codec("NONE")
    loose = pa.schema([
        pa.field(f"c{i}", f.type if not pa.types.is_timestamp(f.type) or f.type.tz is None
                 else pa.timestamp(f.type.unit, tz="Asia/Tokyo"), True)
        for i, f in enumerate(TARGET)])
    relabelled = pa.RecordBatch.from_arrays(
        [c.view(loose.field(i).type) for i, c in enumerate(batch.columns)], schema=loose)
    assert bytes(codec.encode(relabelled)) == bytes(codec.encode(batch))
    # nested field names differ: list child "item" instead of "element"
    si = SchemaInfo.from_arrow(pa.schema([pa.field("a", pa.list_(pa.int32()))]))
    rb = pa.RecordBatch.from_pydict({"a": pa.array([[1, 2], None], pa.list_(pa.int32()))})
    assert rb.schema.field(0).type.value_field.name == "item"
    c2 = al.ArrowLogCodec(si, "NONE")
    blob = c2.build(rb, schema_id=0)
    assert c2.decode(blob, lb.parse_header(blob))[0].to_pylist() == [{"a": [1, 2]}, {"a": None}]


def test_encode_rejects_mismatches(batch):
    codec = _codec("ZSTD")
    wrong_type = batch.set_column(4, "i32", pa.array(range(50), pa.int64()))
    with pytest.raises(FlussError, match=r"db.all_types.*Column 'i32'.*int64.*int32") as e:
        codec.encode(wrong_type)
    assert e.value.error_code == -2
    with pytest.raises(FlussError, match="23 "):
        codec.encode(batch.drop_columns(["b"]))
    nullable = pa.schema([f.with_nullable(True) for f in TARGET])
    ids = pa.array([None] + list(range(49)), pa.int64())
    with_null = pa.RecordBatch.from_arrays([ids] + batch.columns[1:], schema=nullable)
    with pytest.raises(FlussError, match="column 'id' is NOT NULL.*1 null"):
        codec.encode(with_null)


# -- flatbuffer metadata ----------------------------------------------------------------------------

def test_flatbuffer_writer_reader_round_trip_and_pyarrow_accepts_it(batch):
    msg = bytes(_codec("ZSTD").encode(batch))
    meta_len = struct.unpack_from("<i", msg, 4)[0]
    meta = al.read_message_meta(memoryview(msg)[8:8 + meta_len])
    rebuilt = al.write_message_meta(meta)
    assert (8 + len(rebuilt)) % 8 == 0
    again = al.read_message_meta(rebuilt)
    assert (again.length, again.nodes, again.buffers, again.codec, again.method,
            again.body_length, again.version) == (meta.length, meta.nodes, meta.buffers,
                                                   meta.codec, meta.method, meta.body_length,
                                                   meta.version)
    remade = b"\xff\xff\xff\xff" + struct.pack("<i", len(rebuilt)) + rebuilt + msg[8 + meta_len:]
    assert pa.ipc.read_record_batch(pa.py_buffer(remade), TARGET).equals(batch)


def test_read_message_meta_rejects_garbage():
    with pytest.raises(CorruptBatchError):
        al.read_message_meta(b"\x00" * 4)
    with pytest.raises(CorruptBatchError):
        al.read_message_meta(b"\xff\xff\xff\x7f" + b"\x00" * 12)


# -- server-side projection ---------------------------------------------------------------------------

def _expected(batch, fields):
    return pa.RecordBatch.from_arrays([batch.column(i) for i in fields],
                                      schema=pa.schema([TARGET.field(i) for i in fields]))


def _check_projection(codec, blob, batch, fields, pos=0):
    h = lb.parse_header(blob, pos)
    out = codec.project_batch(blob, h, fields)
    h2 = lb.parse_header(out)
    assert h2.total_size == len(out)
    assert (h2.base_offset, h2.schema_id, h2.record_count, h2.attributes, h2.writer_id,
            h2.commit_timestamp, h2.crc) == (h.base_offset, h.schema_id, h.record_count,
                                            h.attributes, h.writer_id, h.commit_timestamp, h.crc)
    assert h2.statistics_length == 0
    got, ct = codec.decode(out, h2, projected=fields)
    # pyarrow decoding of the original, then column selection, is the oracle
    original = pa.ipc.read_record_batch(
        pa.py_buffer(blob[pos + h.header_size + (0 if h.append_only else h.record_count):
                          pos + h.total_size]), TARGET)
    assert got.equals(_expected(original, fields))
    assert got.equals(_expected(batch, fields))
    got.validate(full=True)
    return out, ct


@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_projection_of_every_single_field(batch, comp):
    codec = _codec(comp)
    blob = codec.build(batch, schema_id=1)
    for i in range(len(TARGET)):
        _check_projection(codec, blob, batch, [i])


@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_projection_of_field_pairs_and_all(batch, comp):
    codec = _codec(comp)
    blob = codec.build(batch, schema_id=1)
    for pair in itertools.combinations(range(len(TARGET)), 2):
        _check_projection(codec, blob, batch, list(pair))
    out, _ = _check_projection(codec, blob, batch, list(range(len(TARGET))))

    def body(b):
        at = lb.V0_HEADER_SIZE
        return b[at + 8 + struct.unpack_from("<i", b, at + 4)[0]:]
    assert body(out) == body(blob)  # every buffer kept verbatim, still compressed


@settings(max_examples=60, deadline=None)
@given(fields=st.sets(st.integers(0, len(ALL_TYPES) - 1), min_size=1),
       comp=st.sampled_from(COMPRESSIONS), rows=st.integers(1, 20))
def test_projection_random_subsets(fields, comp, rows):
    rb = pa.RecordBatch.from_pylist(_rows(rows), schema=TARGET)
    codec = _codec(comp)
    blob = codec.build(rb, schema_id=1)
    _check_projection(codec, blob, rb, sorted(fields))


def test_projection_keeps_change_types_and_drops_statistics(batch):
    codec = _codec("ZSTD")
    ct = bytes(i % 4 + 1 for i in range(50))
    payload = ct + bytes(codec.encode(batch))
    v1 = lb.build_batch(payload, schema_id=9, record_count=50, append_only=False, magic=1,
                        statistics=b"\x01\x00\x00stats!")
    blob = b"\x00" * 5 + v1
    out, got_ct = _check_projection(codec, blob, batch, [0, 7, 20], pos=5)
    assert got_ct == ct
    h2 = lb.parse_header(out)
    assert h2.magic == 1 and h2.header_size == lb.V1_HEADER_SIZE
    assert not lb.verify_crc(out)  # stale, exactly like the Java server


def test_projection_argument_errors(batch):
    codec = _codec("NONE")
    blob = codec.build(batch, schema_id=1)
    h = lb.parse_header(blob)
    for bad in ([], [3, 1], [1, 1], [0, len(TARGET)], [-1]):
        with pytest.raises(ValueError):
            codec.project_batch(blob, h, bad)


def test_projection_rejects_schema_mismatch(batch):
    codec = _codec("NONE")
    other = al.ArrowLogCodec(SchemaInfo.from_arrow(pa.schema([pa.field("a", pa.int64())])), "NONE")
    blob = codec.build(batch, schema_id=1)
    with pytest.raises(CorruptBatchError, match="nodes"):
        other.project_batch(blob, lb.parse_header(blob), [0])


def test_projection_fallback_for_out_of_order_body(batch):
    """A body whose buffers are not in ascending order is still projected (by re-encoding)."""
    small = pa.RecordBatch.from_pydict({"a": pa.array([1, None, 3], pa.int64()),
                                        "s": pa.array(["x", "yy", None])})
    si = SchemaInfo.from_arrow(small.schema)
    codec = al.ArrowLogCodec(si, "NONE")
    msg = bytes(codec.encode(small))
    meta_len = struct.unpack_from("<i", msg, 4)[0]
    meta = al.read_message_meta(memoryview(msg)[8:8 + meta_len])
    body = msg[8 + meta_len:]
    # move the first buffer (validity of "a") to the end of the body
    off0, len0 = meta.buffers[0]
    moved = body + body[off0:off0 + len0] + b"\0" * ((-len0) % 8)
    bufs = [(meta.body_length, len0)] + meta.buffers[1:]
    new_meta = al.write_message_meta(al.MessageMeta(meta.length, meta.nodes, bufs, None,
                                                    len(moved)))
    weird = b"\xff\xff\xff\xff" + struct.pack("<i", len(new_meta)) + new_meta + moved
    assert pa.ipc.read_record_batch(pa.py_buffer(weird), small.schema).equals(small)
    blob = lb.build_batch(weird, schema_id=1, record_count=3)
    out = codec.project_batch(blob, lb.parse_header(blob), [0])
    got, _ = codec.decode(out, lb.parse_header(out), projected=[0])
    assert got.column(0).to_pylist() == [1, None, 3]


def _body_buffers(blob):
    at = lb.V0_HEADER_SIZE
    meta_len = struct.unpack_from("<i", blob, at + 4)[0]
    meta = al.read_message_meta(memoryview(blob)[at + 8:at + 8 + meta_len])
    body = at + 8 + meta_len
    return meta, [blob[body + off:body + off + ln] for off, ln in meta.buffers]


@pytest.mark.parametrize("comp", ["LZ4_FRAME", "ZSTD"])
def test_incompressible_buffers_are_stored_raw_with_minus_one(comp):
    si = SchemaInfo.from_arrow(pa.schema([pa.field("b", pa.binary()), pa.field("i", pa.int64())]))
    rng = np.random.default_rng(5)
    rb = pa.RecordBatch.from_pydict({"b": [rng.bytes(300) for _ in range(20)],
                                     "i": pa.array(np.zeros(20, dtype=np.int64))}, schema=si.to_arrow())
    codec = al.ArrowLogCodec(si, comp)
    blob = codec.build(rb, schema_id=1)
    meta, bufs = _body_buffers(blob)
    prefixes = [struct.unpack_from("<q", b)[0] for b in bufs if b]
    assert -1 in prefixes                       # random bytes: stored raw
    assert any(p > 0 for p in prefixes)         # zeros: compressed
    assert all(off % 8 == 0 for off, _ in meta.buffers)
    assert codec.decode(blob, lb.parse_header(blob))[0].equals(rb)
    assert pa.ipc.read_record_batch(pa.py_buffer(blob[lb.V0_HEADER_SIZE:]), si.to_arrow()).equals(rb)


@pytest.mark.parametrize("comp", ["LZ4_FRAME", "ZSTD"])
def test_own_compression_matches_pyarrow_writer_content(batch, comp):
    codec = _codec(comp)
    ours = bytes(codec.encode(batch))
    theirs = bytes(codec.encode_with_pyarrow(batch))
    for msg in (ours, theirs):
        assert pa.ipc.read_record_batch(pa.py_buffer(msg), TARGET).equals(batch)
    m1 = al.read_message_meta(memoryview(ours)[8:8 + struct.unpack_from("<i", ours, 4)[0]])
    m2 = al.read_message_meta(memoryview(theirs)[8:8 + struct.unpack_from("<i", theirs, 4)[0]])
    assert (m1.length, m1.nodes, m1.codec) == (m2.length, m2.nodes, m2.codec)
    assert len(m1.buffers) == len(m2.buffers)


def test_every_lz4_buffer_is_an_independent_block_frame(batch):
    _, bufs = _body_buffers(_codec("LZ4_FRAME").build(batch, schema_id=1))
    framed = [b for b in bufs if b and struct.unpack_from("<q", b)[0] != -1]
    assert framed
    for b in framed:
        assert b[8:12] == b"\x04\x22\x4d\x18" and b[12] == 0x60 and b[13] == 0x40


@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_sliced_batches_encode_only_their_rows(batch, comp):
    codec = _codec(comp)
    part = batch.slice(13, 17)
    blob = codec.build(part, schema_id=1)
    h = lb.parse_header(blob)
    assert h.record_count == 17
    out, _ = codec.decode(blob, h)
    assert out.to_pylist() == batch.to_pylist()[13:30]
    assert len(blob) < len(codec.build(batch, schema_id=1))
    proj = codec.project_batch(blob, h, [1, 19, 22])
    got, _ = codec.decode(proj, lb.parse_header(proj), projected=[1, 19, 22])
    assert got.to_pylist() == [{k: r[k] for k in ("b", "arr", "deep")}
                               for r in batch.to_pylist()[13:30]]


@pytest.mark.parametrize("comp", ["LZ4_FRAME", "ZSTD"])
def test_codec_worker_threads_encode_the_same_bytes(comp):
    """A codec worker (client/workers.py) encodes without pyarrow's thread pool: same message."""
    import threading

    rows = 60_000  # above the size where pyarrow's IPC writer is used
    rb = pa.RecordBatch.from_pydict({"id": pa.array(range(rows), pa.int64()),
                                     "s": pa.array([f"v{i % 977}" for i in range(rows)])})
    codec = al.ArrowLogCodec(SchemaInfo.from_arrow(rb.schema), comp)
    assert rb.nbytes >= al._PYARROW_WRITER_MIN_BYTES
    here = bytes(codec.encode(rb))
    out = {}

    def worker():
        al.encode_on_this_thread_only()
        out["bytes"] = bytes(codec.encode(rb))

    t = threading.Thread(target=worker)
    t.start()
    t.join(30)
    assert out["bytes"] == here
    batch = codec.build(rb, schema_id=0)
    got, _ = codec.decode(batch, lb.parse_header(batch))
    assert got.equals(codec.conform(rb))
