"""Decompressing Arrow IPC bodies ourselves (codec/ipcbody + ArrowLogCodec.decode): messages written
by pyarrow's IPC writer and by our own compressor, ZSTD and LZ4_FRAME, decode to the batches that
were written, through both twins, with identical bytes; damaged bodies raise CorruptBatchError
naming the batch."""
import datetime as dt
import decimal
import importlib
import struct

import numpy as np
import pyarrow as pa
import pytest

from fluss_fast.bench import datasets
from fluss_fast.codec.errors import CorruptBatchError
from fluss_fast.codec.log import arrowlog as al
from fluss_fast.codec.log import ipcbody
from fluss_fast.codec.log import logbatch as lb
from fluss_fast.datatypes import SchemaInfo

try:
    _ext = importlib.import_module("fluss_fast.codec.log._ipcbody")
except ImportError:  # built without a compiler (or without libzstd/liblz4): only the twin runs
    _ext = None

TWINS = [pytest.param((ipcbody.plan_body_py, ipcbody.decompress_body_py), id="py")]
if _ext is not None:
    TWINS.append(pytest.param((_ext.plan_body, _ext.decompress_body), id="ext"))
COMPRESSIONS = ["ZSTD", "LZ4_FRAME"]
WRITERS = ["pyarrow", "ours"]

NESTED = pa.schema([
    pa.field("id", pa.int64(), False),
    pa.field("flag", pa.bool_()),
    pa.field("small", pa.int8()),
    pa.field("f", pa.float32()),
    pa.field("txt", pa.string()),
    pa.field("blob", pa.binary()),
    pa.field("fixed", pa.binary(3)),
    pa.field("dec", pa.decimal128(20, 4)),
    pa.field("day", pa.date32()),
    pa.field("tm", pa.time64("us")),
    pa.field("ts", pa.timestamp("ns")),
    pa.field("ltz", pa.timestamp("ms", tz="UTC")),
    pa.field("tags", pa.list_(pa.field("element", pa.string()))),
    pa.field("attrs", pa.map_(pa.string(), pa.float64())),
    pa.field("pos", pa.struct([pa.field("x", pa.int32()), pa.field("ys", pa.list_(pa.int64()))])),
    pa.field("deep", pa.list_(pa.map_(pa.int32(), pa.struct([pa.field("z", pa.string())])))),
])


def _nested_rows(n):
    rows = []
    for i in range(n):
        nul = i % 4 == 3
        rows.append({
            "id": i,
            "flag": None if nul else i % 3 == 0,
            "small": None if nul else i % 100 - 50,
            "f": None if nul else i / 3,
            "txt": None if nul else "wörd " * (i % 5) + str(i),
            "blob": None if nul else bytes(range(i % 40)),
            "fixed": None if nul else struct.pack("<i", i)[:3],
            "dec": None if nul else decimal.Decimal(i * 1234567).scaleb(-4),
            "day": None if nul else dt.date(1970, 1, 1) + dt.timedelta(days=i),
            "tm": None if nul else dt.time(i % 24, i % 60, 1, i % 1000),
            "ts": None if nul else dt.datetime(2025, 1, 1) + dt.timedelta(microseconds=i),
            "ltz": None if nul else dt.datetime(2001, 2, 3, tzinfo=dt.UTC),
            "tags": None if nul else [None if j == 2 else f"t{j}" for j in range(i % 4)],
            "attrs": None if nul else [(f"k{j}", j / 2) for j in range(i % 3)],
            "pos": None if nul else {"x": -i, "ys": None if i % 2 else [i, i + 1]},
            "deep": None if nul else [[(j, {"z": None if j else "zz"})] for j in range(i % 3)],
        })
    return rows


def _with_noise(table):
    """Adds a column of random bytes, which no codec shrinks: our writer stores it raw (-1)."""
    rng = np.random.default_rng(12)
    noise = pa.array([rng.bytes(200) for _ in range(table.num_rows)], pa.binary())
    return table.append_column("noise", noise)


def _case(name):
    if name == "nested":
        table = pa.Table.from_pylist(_nested_rows(600), schema=NESTED)
    else:
        table = datasets.generate(name, 3000)
    if name == "clicks":
        table = _with_noise(table)
    schema = SchemaInfo.from_arrow(table.schema)
    return schema, table.cast(schema.to_arrow()).combine_chunks().to_batches()[0]


@pytest.fixture(scope="module", params=["orders", "clicks", "nested"])
def case(request):
    return _case(request.param)


def _message(codec, batch, writer):
    msg = codec.encode_with_pyarrow(batch) if writer == "pyarrow" else codec._compress_message(
        batch.serialize())
    return bytes(msg)


def _split(msg):
    meta_len = struct.unpack_from("<i", msg, 4)[0]
    meta = al.read_message_meta(memoryview(msg)[8:8 + meta_len])
    return meta, 8 + meta_len


def _body_and_meta(msg):
    meta, at = _split(msg)
    return meta, msg[at:at + meta.body_length]


def _inflate(twin, body, meta, garbage=0xA5):
    plan, decompress = twin
    new_buffers, size = plan(body, meta.buffers)
    out = bytearray([garbage]) * size
    decompress(body, meta.buffers, new_buffers, meta.codec, out)
    return new_buffers, bytes(out)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_bodies_decompress_to_the_uncompressed_buffers(case, comp, writer, twin):
    schema, batch = case
    codec = al.ArrowLogCodec(schema, comp)
    meta, body = _body_and_meta(_message(codec, batch, writer))
    assert meta.codec == (1 if comp == "ZSTD" else 0)
    new_buffers, out = _inflate(twin, body, meta)
    plain = batch.serialize().to_pybytes()
    pmeta, pbody = _body_and_meta(plain)
    assert len(new_buffers) == len(pmeta.buffers)
    for (noff, nlen), (poff, plen) in zip(new_buffers, pmeta.buffers, strict=True):
        assert noff % ipcbody.ALIGN == 0
        assert out[noff:noff + nlen] == pbody[poff:poff + plen]
    # padding is zeroed, whatever the memory held before
    assert out == _inflate(twin, body, meta, garbage=0x00)[1]


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_twins_give_identical_bytes(case, comp, writer):
    if _ext is None:
        pytest.skip("the compiled twin is not built")
    schema, batch = case
    meta, body = _body_and_meta(_message(al.ArrowLogCodec(schema, comp), batch, writer))
    assert _inflate(TWINS[0].values[0], body, meta) == _inflate(TWINS[1].values[0], body, meta)


@pytest.fixture(params=TWINS)
def use_twin(request, monkeypatch):
    """ArrowLogCodec.decode taking our path (whatever the size) through the given twin."""
    plan, decompress = request.param
    monkeypatch.setattr(al, "_OWN_DECOMPRESS_MIN_BYTES", 0)
    monkeypatch.setattr(al, "plan_body", plan)
    monkeypatch.setattr(al, "decompress_body", decompress)
    return request.param


def _blob(codec, msg, rows, lead=b""):
    return lead + lb.build_batch(msg, schema_id=1, record_count=rows)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_decode_returns_the_written_batch(case, comp, writer, use_twin):
    schema, batch = case
    codec = al.ArrowLogCodec(schema, comp)
    blob = _blob(codec, _message(codec, batch, writer), batch.num_rows, lead=b"x" * 13)
    rb, cts = codec.decode(blob, lb.parse_header(blob, 13))
    assert cts is None
    assert rb.equals(batch)
    rb.validate(full=True)
    for col in rb.columns:
        for buf in col.buffers():
            if buf is not None and buf.size:
                assert buf.address % 8 == 0


def test_decode_changelog_batch_and_projection(use_twin):
    schema, batch = _case("nested")
    codec = al.ArrowLogCodec(schema, "ZSTD")
    cts = bytes(i % 4 for i in range(batch.num_rows))
    blob = codec.build(batch, schema_id=1, change_types=cts)
    h = lb.parse_header(blob)
    rb, got = codec.decode(blob, h)
    assert got == cts and rb.equals(batch)
    keep = [0, 4, 13, 15]
    projected = codec.project_batch(blob, h, keep)
    rb, got = codec.decode(projected, lb.parse_header(projected), projected=keep)
    assert got == cts
    assert rb.equals(pa.RecordBatch.from_arrays([batch.column(i) for i in keep],
                                                schema=pa.schema([batch.schema.field(i) for i in keep])))


@pytest.mark.parametrize("threshold", [0, None], ids=["every-body-mapped", "real-threshold"])
@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_bodies_in_their_own_mapping_outlive_everything_else(comp, threshold, use_twin, monkeypatch):
    # a large body gets a private mapping of its own; the batch must stay readable once the
    # fetched bytes, the codec and every intermediate object are gone, and unmapping must wait
    # for the last slice of any of its columns
    rows = 300_000
    batch = pa.RecordBatch.from_pydict({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "v": pa.array(np.random.default_rng(7).random(rows)),
        "s": pa.array([f"row-{i % 977}" for i in range(rows)]),
    })
    if threshold is not None:
        assert batch.nbytes > al._MAPPED_BODY_BYTES
    else:
        monkeypatch.setattr(al, "_MAPPED_BODY_BYTES", 0)
    mapped = []
    real = al._mapped_body
    monkeypatch.setattr(al, "_mapped_body", lambda size: mapped.append(size) or real(size))
    schema = SchemaInfo.from_arrow(batch.schema)
    codec = al.ArrowLogCodec(schema, comp)
    blob = bytearray(codec.build(batch, schema_id=1))
    rb, _ = codec.decode(blob, lb.parse_header(blob))
    tail = rb.column(2).slice(rows - 5)
    del codec, blob, rb
    import gc
    gc.collect()
    assert tail.to_pylist() == [f"row-{i % 977}" for i in range(rows - 5, rows)]
    assert mapped
    rb2 = al.ArrowLogCodec(schema, comp)
    blob = rb2.build(batch, schema_id=1)
    got, _ = rb2.decode(blob, lb.parse_header(blob))
    assert got.equals(batch)
    for col in got.columns:
        for buf in col.buffers():
            if buf is not None and buf.size:
                assert buf.address % 64 == 0


def test_uncompressed_tables_are_left_to_pyarrow(use_twin):
    schema, batch = _case("orders")
    codec = al.ArrowLogCodec(schema, "NONE")
    blob = codec.build(batch, schema_id=1)
    rb, _ = codec.decode(blob, lb.parse_header(blob))
    assert rb.equals(batch)


# -- damage -----------------------------------------------------------------------------------------

def _damaged(how, comp):
    """A batch (at byte 13 of the blob) whose first non-empty compressed buffer is damaged."""
    schema, batch = _case("orders")
    codec = al.ArrowLogCodec(schema, comp)
    msg = bytearray(_message(codec, batch, "pyarrow"))
    meta, body_at = _split(msg)
    index, (off, length) = next((i, b) for i, b in enumerate(meta.buffers)
                                if b[1] > 64 and struct.unpack_from("<q", msg, body_at + b[0])[0] > 0)
    at = body_at + off
    declared = struct.unpack_from("<q", msg, at)[0]
    if how == "magic":
        msg[at + 8] ^= 0xFF
    elif how == "larger":
        struct.pack_into("<q", msg, at, declared + 1)
    elif how == "smaller":
        struct.pack_into("<q", msg, at, declared - 1)
    elif how == "huge":
        struct.pack_into("<q", msg, at, 1 << 60)
    elif how == "negative":
        struct.pack_into("<q", msg, at, -7)
    elif how == "garbage":
        msg[at + 16:at + length] = bytes([0xFF]) * (length - 16)
    elif how in ("truncated", "outside", "no_prefix"):
        new_len = {"truncated": length - 5, "outside": meta.body_length + 64, "no_prefix": 5}[how]
        bufs = list(meta.buffers)
        bufs[index] = (off, new_len)
        meta.buffers = bufs
        new_meta = al.write_message_meta(meta)
        msg = bytearray(b"\xff\xff\xff\xff" + struct.pack("<i", len(new_meta)) + new_meta
                        + msg[body_at:])
    blob = b"x" * 13 + lb.build_batch(bytes(msg), schema_id=1, record_count=batch.num_rows)
    return codec, blob, index


DAMAGE = ["magic", "larger", "smaller", "huge", "negative", "garbage", "truncated", "outside",
          "no_prefix"]


@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_damaged_bodies_raise_corrupt_batch_error(comp, how, use_twin):
    codec, blob, index = _damaged(how, comp)
    with pytest.raises(CorruptBatchError, match=rf"batch at byte 13: .*Arrow buffer {index}\b") as err:
        codec.decode(blob, lb.parse_header(blob, 13))
    assert err.value.position == 13


@pytest.mark.parametrize("twin", TWINS)
def test_a_plan_that_does_not_fit_the_output_is_refused(twin):
    plan, decompress = twin
    schema, batch = _case("orders")
    meta, body = _body_and_meta(_message(al.ArrowLogCodec(schema, "ZSTD"), batch, "ours"))
    new_buffers, size = plan(body, meta.buffers)
    with pytest.raises(ValueError, match="plan does not fit"):
        need = max(off + length for off, length in new_buffers)
        decompress(body, meta.buffers, new_buffers, meta.codec, bytearray(need - 1))
    with pytest.raises(ValueError):
        decompress(body, meta.buffers, new_buffers[:-1], meta.codec, bytearray(size))
    with pytest.raises(CorruptBatchError, match="codec 7"):
        decompress(body, meta.buffers, new_buffers, 7, bytearray(size))
    with pytest.raises(BufferError):
        decompress(body, meta.buffers, new_buffers, meta.codec, bytes(size))
