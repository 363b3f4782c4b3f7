"""ARROW log format payloads (docs/contributing/formats.md §2): one schema-less Arrow IPC RecordBatch message per batch.

Layout of the records part of an ARROW batch::

    [change-type vector: RecordCount bytes, only when the batch is not append-only]
    [FF FF FF FF][int32 M][Message flatbuffer, M bytes][body: buffers, 8-aligned]

A header-only batch (RecordCount 0) carries nothing at all. Compression is Arrow IPC *buffer*
compression with the table's codec; the Fluss header never says which codec was used, so the writer
must use exactly the table's.

Encoding goes through pyarrow's IPC writer or our per-buffer compressor; decoding of a compressed
message decompresses its body with ``codec.log.ipcbody`` into one aligned buffer that pyarrow's IPC
reader then reads without copying (uncompressed messages go to pyarrow's reader directly).
Besides that, this module implements the server-side column projection of a stored batch on the
Arrow metadata alone: it parses and rewrites the small ``Message``/``RecordBatch`` flatbuffer and
copies the kept buffer spans, never touching (or decompressing) the data.
"""
from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from itertools import pairwise

import lz4.frame
import pyarrow as pa
import zstandard

from ...datatypes import SchemaInfo
from ...errors import FlussError
from ..errors import CorruptBatchError
from ..wire.memory import HUGE_PAGE, PRIVATE_MAP_FLAGS, advise_huge_pages, aligned_mapping
from .ipcbody import ALIGN as _BODY_ALIGN
from .ipcbody import decompress_body, plan_body
from .logbatch import (
    LOG_OVERHEAD,
    V0_HEADER_SIZE,
    V1_HEADER_SIZE,
    V2_HEADER_SIZE,
    BatchHeader,
    build_batch,
)

__all__ = [
    "COMPRESSIONS", "ArrowLogCodec", "arrow_schema_of", "field_shapes", "read_message_meta",
    "write_message_meta", "MessageMeta",
]

#: table.log.arrow.compression.type values -> pyarrow codec names (None = uncompressed)
COMPRESSIONS = {"NONE": None, "LZ4_FRAME": "lz4", "ZSTD": "zstd"}
# Arrow flatbuffer enum values (Schema.fbs / Message.fbs)
_CODEC_LZ4_FRAME = 0
_CODEC_ZSTD = 1
_METADATA_V5 = 4
_HEADER_RECORD_BATCH = 3
_CONTINUATION = b"\xff\xff\xff\xff"

_U16 = struct.Struct("<H")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_I8 = struct.Struct("<b")
_I16 = struct.Struct("<h")
_U8 = struct.Struct("<B")
_PAIR = struct.Struct("<qq")


def arrow_schema_of(schema: SchemaInfo) -> pa.Schema:
    """The Arrow schema of the table's log batches (docs/contributing/formats.md §2.4)."""
    return schema.to_arrow()


# -- field shapes: how many FieldNodes and buffers each top-level field owns ----------------------

def _shape(t: pa.DataType) -> tuple[int, int]:
    T = pa.types
    if T.is_struct(t):
        nodes, bufs = 1, 1
        for i in range(t.num_fields):
            n, b = _shape(t.field(i).type)
            nodes += n
            bufs += b
        return nodes, bufs
    if T.is_map(t):
        # map = list of a non-null struct<key, value> ("entries")
        kn, kb = _shape(t.key_type)
        vn, vb = _shape(t.item_type)
        return 2 + kn + vn, 2 + 1 + kb + vb
    if T.is_list(t) or T.is_large_list(t):
        n, b = _shape(t.value_type)
        return 1 + n, 2 + b
    if T.is_fixed_size_list(t):
        n, b = _shape(t.value_type)
        return 1 + n, 1 + b
    if T.is_string(t) or T.is_binary(t) or T.is_large_string(t) or T.is_large_binary(t):
        return 1, 3
    if T.is_null(t):
        return 1, 0
    return 1, 2


def field_shapes(arrow_schema: pa.Schema) -> list[tuple[int, int]]:
    """``[(node_count, buffer_count)]`` per top-level field, in the IPC pre-order layout."""
    return [_shape(f.type) for f in arrow_schema]


# -- a minimal flatbuffer reader/writer for Message{RecordBatch} -----------------------------------

class MessageMeta:
    """The parts of an IPC ``Message`` whose header is a ``RecordBatch``."""

    __slots__ = ("version", "length", "nodes", "buffers", "codec", "method", "body_length",
                 "has_variadic")

    def __init__(self, length: int, nodes: list, buffers: list, codec: int | None,
                 body_length: int, version: int = _METADATA_V5, method: int = 0,
                 has_variadic: bool = False) -> None:
        self.version = version
        self.length = length
        self.nodes = nodes            # [(length, null_count)]
        self.buffers = buffers        # [(offset, length)] relative to the body
        self.codec = codec            # None = uncompressed, else 0 LZ4_FRAME / 1 ZSTD
        self.method = method
        self.body_length = body_length
        self.has_variadic = has_variadic


class _FbTable:
    __slots__ = ("mv", "pos", "vt", "vt_len")

    def __init__(self, mv: memoryview, pos: int) -> None:
        end = len(mv)
        if pos < 0 or pos + 4 > end:
            raise CorruptBatchError(f"flatbuffer table offset {pos} outside the metadata")
        vt = pos - _I32.unpack_from(mv, pos)[0]
        if vt < 0 or vt + 4 > end:
            raise CorruptBatchError(f"flatbuffer vtable offset {vt} outside the metadata")
        vt_len = _U16.unpack_from(mv, vt)[0]
        if vt_len < 4 or vt + vt_len > end:
            raise CorruptBatchError(f"flatbuffer vtable size {vt_len} invalid")
        self.mv, self.pos, self.vt, self.vt_len = mv, pos, vt, vt_len

    def _field(self, index: int, size: int) -> int:
        slot = 4 + 2 * index
        if slot + 2 > self.vt_len:
            return 0
        off = _U16.unpack_from(self.mv, self.vt + slot)[0]
        if off and self.pos + off + size > len(self.mv):
            raise CorruptBatchError(f"flatbuffer field {index} lies outside the metadata")
        return self.pos + off if off else 0

    def scalar(self, index: int, fmt: struct.Struct, default):
        at = self._field(index, fmt.size)
        return fmt.unpack_from(self.mv, at)[0] if at else default

    def ref(self, index: int) -> int:
        """Absolute position of an offset field's target, or 0 when absent."""
        at = self._field(index, 4)
        return at + _U32.unpack_from(self.mv, at)[0] if at else 0

    def table(self, index: int) -> _FbTable | None:
        at = self.ref(index)
        return _FbTable(self.mv, at) if at else None

    def struct_pairs(self, index: int) -> list:
        at = self.ref(index)
        if not at:
            return []
        if at + 4 > len(self.mv):
            raise CorruptBatchError("flatbuffer vector outside the metadata")
        n = _U32.unpack_from(self.mv, at)[0]
        start = at + 4
        if start + 16 * n > len(self.mv):
            raise CorruptBatchError(f"flatbuffer vector of {n} structs overruns the metadata")
        return list(_PAIR.iter_unpack(self.mv[start:start + 16 * n]))


def read_message_meta(meta) -> MessageMeta:
    """Parses an IPC Message flatbuffer (the M bytes after the 8-byte prefix) holding a RecordBatch."""
    mv = memoryview(meta).cast("B") if not isinstance(meta, memoryview) else meta
    if len(mv) < 8:
        raise CorruptBatchError(f"Arrow IPC metadata of {len(mv)} bytes is too short")
    msg = _FbTable(mv, _U32.unpack_from(mv, 0)[0])
    version = msg.scalar(0, _I16, 0)
    header_type = msg.scalar(1, _U8, 0)
    if header_type != _HEADER_RECORD_BATCH:
        raise CorruptBatchError(f"Arrow IPC message is not a RecordBatch (header type {header_type})")
    body_length = msg.scalar(3, _I64, 0)
    rb = msg.table(2)
    if rb is None:
        raise CorruptBatchError("Arrow IPC RecordBatch message without a header")
    length = rb.scalar(0, _I64, 0)
    nodes = rb.struct_pairs(1)
    buffers = rb.struct_pairs(2)
    comp = rb.table(3)
    codec = method = None
    if comp is not None:
        codec = comp.scalar(0, _I8, 0)
        method = comp.scalar(1, _I8, 0)
    has_variadic = bool(rb.ref(4))
    return MessageMeta(length, nodes, buffers, codec, body_length, version, method or 0,
                       has_variadic)


def write_message_meta(m: MessageMeta) -> bytes:
    """A Message{RecordBatch} flatbuffer for ``m``, padded so that ``8 + len`` is a multiple of 8.

    Laid out front to back: root offset, Message vtable/table, RecordBatch vtable/table,
    BodyCompression vtable/table, nodes vector, buffers vector. Every offset points forward (as
    flatbuffers require for uoffsets), and 8-byte fields and the struct vectors are 8-aligned.
    """
    out = bytearray()

    def pad_to(align: int, mod: int = 0) -> None:
        while len(out) % align != mod:
            out.append(0)

    # root offset, then the Message vtable (4 fields: version, header_type, header, bodyLength)
    out += b"\0\0\0\0"
    msg_vt = len(out)
    out += struct.pack("<HHHHHH", 12, 24, 16, 18, 4, 8)
    pad_to(8)
    msg_tbl = len(out)
    struct.pack_into("<I", out, 0, msg_tbl)
    out += struct.pack("<iIqhBx", msg_tbl - msg_vt, 0, m.body_length, m.version, _HEADER_RECORD_BATCH)
    pad_to(8)
    # RecordBatch vtable: length, nodes, buffers[, compression]
    rb_vt = len(out)
    if m.codec is not None:
        out += struct.pack("<HHHHHH", 12, 24, 8, 4, 16, 20)
    else:
        out += struct.pack("<HHHHH", 10, 24, 8, 4, 16)
    pad_to(8)
    rb_tbl = len(out)
    struct.pack_into("<I", out, msg_tbl + 4, rb_tbl - (msg_tbl + 4))
    out += struct.pack("<iIqII", rb_tbl - rb_vt, 0, m.length, 0, 0)
    comp_tbl = None
    if m.codec is not None:
        comp_vt = len(out)
        out += struct.pack("<HHHH", 8, 8, 4, 5)
        pad_to(4)
        comp_tbl = len(out)
        out += struct.pack("<ibbxx", comp_tbl - comp_vt, m.codec, m.method)
        struct.pack_into("<I", out, rb_tbl + 20, comp_tbl - (rb_tbl + 20))
    for field_at, pairs in ((rb_tbl + 4, m.nodes), (rb_tbl + 16, m.buffers)):
        pad_to(8, 4)
        vec = len(out)
        struct.pack_into("<I", out, field_at, vec - field_at)
        out += _U32.pack(len(pairs))
        for a, b in pairs:
            out += _PAIR.pack(a, b)
    pad_to(8)
    return bytes(out)


_NO_COMPRESSION = _I64.pack(-1)
# From about this much Arrow data on, pyarrow's writer wins: it compresses buffers on its thread
# pool, while below it the per-buffer codec setup it pays dominates (measured: 1000 rows of a
# 4-column batch encode ~1.5x faster with our compressor, 100k rows ~2.5x slower).
_PYARROW_WRITER_MIN_BYTES = 512 * 1024
_ZEROS = bytes(8)
# Threads that are themselves one of several codec workers (client/workers.py) encode without
# pyarrow's thread pool: the parallelism is already there, and handing each buffer to Arrow's
# pool of one-per-core threads would both oversubscribe the cores and cap the whole process at
# that pool's size.
_thread_state = threading.local()


def encode_on_this_thread_only(flag: bool = True) -> None:
    """Mark the calling thread as a codec worker: its encodes compress on it alone."""
    _thread_state.serial = flag


class _BufferCompressor:
    """Compresses single IPC body buffers into standalone frames, reusing codec state.

    Arrow C++ builds a fresh codec context for every buffer, which dominates the cost of small
    batches; a zstd context per thread (they are not thread-safe) and LZ4's one-shot frame API make
    compressing a small batch several times cheaper. LZ4 frames use independent 64 KiB blocks and no
    content size or checksums (FLG 0x60, BD 0x40), which is what Fluss's Java reader accepts.
    """

    def __init__(self, name: str, level: int) -> None:
        self.name = name
        self.level = level
        self._local = threading.local()

    def compress(self, data) -> bytes:
        if self.name == "lz4":
            return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                      block_linked=False, content_checksum=False,
                                      store_size=False)
        z = getattr(self._local, "z", None)
        if z is None:
            z = self._local.z = zstandard.ZstdCompressor(level=self.level)
        return z.compress(data)


def _as_bytes_view(buf) -> memoryview:
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.format not in ("B", "b", "c"):
        mv = mv.cast("B")
    return mv


def _canonical(t: pa.DataType):
    """A type key that ignores nested field names, nullability and timestamp zones."""
    T = pa.types
    if T.is_timestamp(t):
        return ("ts", t.unit)
    if T.is_map(t):
        return ("map", _canonical(t.key_type), _canonical(t.item_type))
    if T.is_list(t):
        return ("list", _canonical(t.value_type))
    if T.is_struct(t):
        return ("struct",) + tuple(_canonical(t.field(i).type) for i in range(t.num_fields))
    return t


# Compressed messages of this size or more are decompressed by ``codec.log.ipcbody`` (one allocation,
# one reused codec context per thread, no GIL), the rest by pyarrow's reader. Ours measured faster
# at every size (4-5x on 16-row batches, where pyarrow's per-buffer codec setup dominates), hence 0;
# the knob stays so that tests and benchmarks can take either path.
_OWN_DECOMPRESS_MIN_BYTES = 0


#: uncompressed bodies of this size or more get their own private mapping (``_mapped_body``); from
#: one whole huge page up, so that at most a tail below 2 MiB faults in small pages
_MAPPED_BODY_BYTES = 2 << 20


def _mapped_body(size: int):
    """``(arrow buffer, writable view)`` of ``size`` bytes in a private anonymous mapping that
    starts on a 2 MiB boundary, its whole 2 MiB blocks marked for transparent huge pages once the
    process has earned them (``rpc.frame_pool._HugePages``: not in its first read).

    pyarrow's default pool (mimalloc) gets huge pages too, which is why it beat the system
    allocator by ~40 % of a full scan's CPU (fresh 4 KiB pages fault one by one), but it rounds
    large blocks up: 150 MB of 4-10 MB bodies took 157-165 MB of RSS, and a bounded read keeps
    all of them, so that rounding sat on top of the result at the read's peak. Here only the
    bytes written become resident (the alignment slack in front is never touched, the tail past
    the last whole block stays in small pages), and unmapping when the last view goes returns
    the memory at once."""
    m, start = aligned_mapping(size)
    advise_huge_pages(m, start, size // HUGE_PAGE * HUGE_PAGE)
    return pa.py_buffer(m).slice(start, size), memoryview(m)[start:start + size]


def _body_memory(size: int, memory=None):
    """``(arrow buffer, writable view)`` for an uncompressed body of ``size`` bytes, from
    ``memory`` (a ``codec.log.bodypool.BodyPool``) when given."""
    if memory is not None:
        got = memory.take(size)
        if got is not None:
            return got
    if size >= _MAPPED_BODY_BYTES and PRIVATE_MAP_FLAGS:
        return _mapped_body(size)
    # smaller ones from pyarrow's pool: one allocation per batch instead of one per buffer (made
    # on whichever Arrow pool thread) is what stopped the peak growing over repeated scans
    buf = pa.allocate_buffer(size)
    return buf, memoryview(buf)


def _read_compressed(msg: memoryview, schema: pa.Schema, memory=None) -> pa.RecordBatch | None:
    """The record batch of a BUFFER-compressed IPC message, decompressed by ``codec.log.ipcbody``
    into one aligned uncompressed message that pyarrow then reads without copying; None for a
    message that is not compressed (or not in a form this path handles), left to pyarrow.
    ``memory``: where the message goes (``_body_memory``)."""
    if len(msg) < 8 or msg[:4] != _CONTINUATION:
        return None
    meta_len = _I32.unpack_from(msg, 4)[0]
    body_at = 8 + meta_len
    if meta_len < 8 or body_at > len(msg):
        return None
    meta = read_message_meta(msg[8:body_at])
    if meta.codec is None or meta.method != 0 or meta.has_variadic:
        return None
    if body_at + meta.body_length > len(msg):
        raise CorruptBatchError(f"Arrow body of {meta.body_length} bytes overruns the batch")
    body = msg[body_at:body_at + meta.body_length]
    new_buffers, body_length = plan_body(body, meta.buffers)
    new_meta = write_message_meta(MessageMeta(meta.length, meta.nodes, new_buffers, None,
                                              body_length, meta.version))
    head = 8 + len(new_meta)
    # the message starts where its body lands on an ALIGN boundary of the allocation
    lead = -head % _BODY_ALIGN
    out, view = _body_memory(lead + head + body_length, memory)
    view = view.cast("B")
    view[lead:lead + 4] = _CONTINUATION
    _I32.pack_into(view, lead + 4, len(new_meta))
    view[lead + 8:lead + head] = new_meta
    decompress_body(body, meta.buffers, new_buffers, meta.codec, view[lead + head:])
    del view
    return pa.ipc.read_record_batch(out.slice(lead), schema)


class ArrowLogCodec:
    """Encodes/decodes the ARROW payload of a table's log batches (one codec per schema id).

    ``compression`` is the table's ``table.log.arrow.compression.type`` (NONE, LZ4_FRAME, ZSTD) and
    ``level`` its zstd level. ``table_name`` only improves error messages.
    """

    def __init__(self, schema: SchemaInfo, compression: str = "ZSTD", level: int = 3, *,
                 table_name: str | None = None) -> None:
        comp = (compression or "NONE").upper()
        if comp not in COMPRESSIONS:
            raise ValueError(f"unknown Arrow compression {compression!r}; expected one of "
                             f"{', '.join(COMPRESSIONS)}")
        self.schema = schema
        self.compression = comp
        self.level = level
        self.table_name = table_name
        self.arrow_schema = arrow_schema_of(schema)
        name = COMPRESSIONS[comp]
        if name is None:
            self._codec_id = None
            self._options = None
        else:
            codec = pa.Codec(name, compression_level=level) if name == "zstd" else pa.Codec(name)
            self._codec_id = _CODEC_ZSTD if name == "zstd" else _CODEC_LZ4_FRAME
            self._options = pa.ipc.IpcWriteOptions(compression=codec)
            self._serial_options = pa.ipc.IpcWriteOptions(compression=codec, use_threads=False)
            self._compressor = _BufferCompressor(name, level)
        self._shapes_cache: dict = {}
        self._empty_cache: dict = {}

    def __repr__(self) -> str:
        return f"ArrowLogCodec({self.table_name or ''!s}, {self.compression})"

    # -- encoding ----------------------------------------------------------------------------------
    def _where(self) -> str:
        return f"table '{self.table_name}'" if self.table_name else "table"

    def conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` relabelled with the table's Arrow schema, or FlussError naming the column.

        Only differences that do not change the bytes on the wire are accepted: field names
        (top level and nested), nullability labels, and timestamp zones.
        """
        target = self.arrow_schema
        if batch.schema.equals(target):
            return batch
        if batch.num_columns != len(target):
            raise FlussError(
                f"{self._where()}: record batch has {batch.num_columns} columns "
                f"({', '.join(batch.schema.names)}), the table has {len(target)} "
                f"({', '.join(target.names)})")
        cols = []
        for i, field in enumerate(target):
            col = batch.column(i)
            if not col.type.equals(field.type):
                if _canonical(col.type) != _canonical(field.type):
                    # pyfluss's sentence ("Column 'x' has Arrow type A but the table declares B"),
                    # which its own tests match on; the types in pyarrow's spelling.
                    raise FlussError(
                        f"{self._where()}: Column '{field.name}' (position {i}) has Arrow type "
                        f"{col.type} but the table declares {field.type}")
                col = col.view(field.type)
            if not field.nullable and col.null_count:
                raise FlussError(
                    f"{self._where()}, column '{field.name}' is NOT NULL but the record batch "
                    f"holds {col.null_count} null value(s)")
            cols.append(col)
        return pa.RecordBatch.from_arrays(cols, schema=target)

    def encode(self, batch: pa.RecordBatch):
        """The IPC RecordBatch message for ``batch`` (bytes-like: ``pa.Buffer`` or ``bytes``)."""
        batch = self.conform(batch)
        if self._options is None:
            return batch.serialize()
        if batch.nbytes >= _PYARROW_WRITER_MIN_BYTES:
            return self._encode_pyarrow(batch)
        return self._compress_message(batch.serialize())

    def _compress_message(self, raw) -> bytes:
        """Turns an uncompressed IPC RecordBatch message into a BUFFER-compressed one.

        Each non-empty buffer becomes ``int64 uncompressed length + frame``, or ``-1 + raw bytes``
        when compression does not pay off (as Arrow-Java does); empty buffers stay empty (as Arrow
        C++ does). Buffers stay 8-aligned within the body.
        """
        mv = memoryview(raw)
        meta_len = _I32.unpack_from(mv, 4)[0]
        meta = read_message_meta(mv[8:8 + meta_len])
        body = mv[8 + meta_len:]
        compress = self._compressor.compress
        parts: list = [None]
        new_bufs = []
        cursor = 0
        for off, length in meta.buffers:
            if length == 0:
                new_bufs.append((cursor, 0))
                continue
            src = body[off:off + length]
            packed = compress(src)
            if len(packed) < length:
                parts.append(_I64.pack(length))
                parts.append(packed)
                size = 8 + len(packed)
            else:
                parts.append(_NO_COMPRESSION)
                parts.append(src)
                size = 8 + length
            new_bufs.append((cursor, size))
            pad = (-size) % 8
            if pad:
                parts.append(_ZEROS[:pad])
            cursor += size + pad
        new_meta = write_message_meta(MessageMeta(meta.length, meta.nodes, new_bufs, self._codec_id,
                                                  cursor, meta.version, 0))
        parts[0] = _CONTINUATION + _I32.pack(len(new_meta)) + new_meta
        return b"".join(parts)

    def encode_with_pyarrow(self, batch: pa.RecordBatch):
        """Same message through pyarrow's IPC writer (its own per-buffer codec contexts)."""
        batch = self.conform(batch)
        if self._options is None:
            return batch.serialize()
        return self._encode_pyarrow(batch)

    def _encode_pyarrow(self, batch: pa.RecordBatch):
        sink = pa.BufferOutputStream()
        options = self._serial_options if getattr(_thread_state, "serial", False) else self._options
        with pa.ipc.new_stream(sink, batch.schema, options=options) as writer:
            writer.write_batch(batch)
        out = sink.getvalue()
        # stream = [schema message (no body)][our message][8-byte end-of-stream]
        start = 8 + _I32.unpack_from(out, 4)[0]
        return out.slice(start, out.size - 8 - start)

    def build(self, batch: pa.RecordBatch, *, schema_id: int, writer_id: int = -1,
              batch_sequence: int = -1, change_types: bytes | None = None) -> bytes:
        """A whole V0 log batch. With ``change_types`` (one byte per row, docs/contributing/formats.md §2.5) the batch
        is a changelog batch (not append-only), as the server writes for primary-key tables."""
        rows = batch.num_rows
        append_only = change_types is None
        if not append_only and len(change_types) != rows:
            raise ValueError(f"change-type vector has {len(change_types)} entries for {rows} rows")
        if rows == 0:
            payload = b""
        elif append_only:
            payload = self.encode(batch)
        else:
            payload = b"".join((bytes(change_types), self.encode(batch)))
        return build_batch(payload, schema_id=schema_id, record_count=rows,
                           append_only=append_only, writer_id=writer_id,
                           batch_sequence=batch_sequence)

    # -- decoding ----------------------------------------------------------------------------------
    def _empty(self, schema: pa.Schema) -> pa.RecordBatch:
        key = id(schema)
        hit = self._empty_cache.get(key)
        if hit is not None and hit[0] is schema:
            return hit[1]
        rb = pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)
        self._empty_cache[key] = (schema, rb)
        return rb

    def decode(self, buf, header: BatchHeader, arrow_schema: pa.Schema | None = None, *,
               projected=None, memory=None) -> tuple[pa.RecordBatch, bytes | None]:
        """``(record batch, change-type vector or None)`` of the batch ``header`` inside ``buf``.

        Uncompressed data is not copied: the arrays point into ``buf`` (which must then stay
        unchanged while they live). ``arrow_schema`` overrides the codec's (another schema id);
        ``projected`` is the Arrow schema (or the list of field positions) of a batch the server
        projected. ``memory``: a ``codec.log.bodypool.BodyPool`` that decompressed data goes into.
        """
        schema = arrow_schema if arrow_schema is not None else self.arrow_schema
        if projected is not None:
            schema = projected if isinstance(projected, pa.Schema) else pa.schema(
                [schema.field(i) for i in projected])
        mv = _as_bytes_view(buf)
        pos = header.position
        start = pos + header.header_size
        end = pos + header.total_size
        if end > len(mv):
            raise CorruptBatchError(
                f"batch at byte {pos}: truncated (size {header.total_size}, "
                f"{len(mv) - pos} bytes left)", position=pos)
        rows = header.record_count
        change_types = None
        if not header.append_only:
            if start + rows > end:
                raise CorruptBatchError(
                    f"batch at byte {pos}: change-type vector of {rows} bytes overruns the batch",
                    position=pos)
            change_types = bytes(mv[start:start + rows])
            start += rows
        if rows == 0 or start == end:
            if rows:
                raise CorruptBatchError(
                    f"batch at byte {pos}: {rows} records but no Arrow message", position=pos)
            return self._empty(schema), change_types
        try:
            rb = None
            if self._codec_id is not None and end - start >= _OWN_DECOMPRESS_MIN_BYTES:
                rb = _read_compressed(mv[start:end], schema, memory)
            if rb is None:
                rb = pa.ipc.read_record_batch(pa.py_buffer(mv[start:end]), schema)
        except (pa.ArrowException, ValueError, OSError) as exc:
            if isinstance(exc, CorruptBatchError):
                raise CorruptBatchError(f"batch at byte {pos}: {exc}", position=pos) from None
            raise CorruptBatchError(f"batch at byte {pos}: bad Arrow IPC message: {exc}",
                                    position=pos) from None
        if rb.num_rows != rows:
            raise CorruptBatchError(
                f"batch at byte {pos}: Arrow message holds {rb.num_rows} rows, "
                f"header says {rows}", position=pos)
        return rb, change_types

    # -- server-side projection --------------------------------------------------------------------
    def _shapes(self, schema: pa.Schema) -> list[tuple[int, int]]:
        key = id(schema)
        hit = self._shapes_cache.get(key)
        if hit is not None and hit[0] is schema:
            return hit[1]
        shapes = field_shapes(schema)
        self._shapes_cache[key] = (schema, shapes)
        return shapes

    def project_batch(self, buf, header: BatchHeader, fields: Sequence[int], *,
                      arrow_schema: pa.Schema | None = None) -> bytes:
        """The batch ``header`` of ``buf`` keeping only top-level ``fields`` (ascending positions),
        as one bytes object (``project_batch_parts`` joined)."""
        return b"".join(self.project_batch_parts(buf, header, fields, arrow_schema=arrow_schema))

    def project_batch_parts(self, buf, header: BatchHeader, fields: Sequence[int], *,
                            arrow_schema: pa.Schema | None = None) -> list:
        """The batch ``header`` of ``buf`` keeping only top-level ``fields`` (ascending positions),
        as a list of buffers to be sent one after the other: the kept column buffers are views
        into ``buf``, not copies (the server writes them to the socket as they are).

        Works on the Arrow metadata only: kept FieldNodes and buffer spans stay as they are
        (still compressed), the RecordBatch flatbuffer is rebuilt. The header keeps its fields but
        gets the new Length and no statistics; the CRC is left stale, as the Java server does.
        Falls back to decode + re-encode only for a body whose buffers are not laid out in order
        on 8-byte boundaries (no known writer does that).
        """
        schema = arrow_schema if arrow_schema is not None else self.arrow_schema
        fields = list(fields)
        nfields = len(schema)
        if not fields:
            raise ValueError("projection needs at least one field")
        for a, b in pairwise(fields):
            if b <= a:
                raise ValueError(f"projected fields must be strictly ascending, got {fields}")
        if fields[0] < 0 or fields[-1] >= nfields:
            raise ValueError(f"projected field positions {fields} out of range for "
                             f"{nfields} columns")
        mv = _as_bytes_view(buf)
        pos = header.position
        end = pos + header.total_size
        if end > len(mv):
            raise CorruptBatchError(f"batch at byte {pos}: truncated", position=pos)
        rows = header.record_count
        start = pos + header.header_size
        if rows == 0 or start == end:
            return [mv[pos:end]]
        ct_len = 0 if header.append_only else rows
        msg = start + ct_len
        if msg + 8 > end or bytes(mv[msg:msg + 4]) != _CONTINUATION:
            raise CorruptBatchError(f"batch at byte {pos}: Arrow message lacks the continuation "
                                    f"marker", position=pos)
        meta_len = _I32.unpack_from(mv, msg + 4)[0]
        body = msg + 8 + meta_len
        if meta_len < 8 or body > end:
            raise CorruptBatchError(f"batch at byte {pos}: bad Arrow metadata length {meta_len}",
                                    position=pos)
        meta = read_message_meta(mv[msg + 8:body])
        if body + meta.body_length > end:
            raise CorruptBatchError(f"batch at byte {pos}: Arrow body of {meta.body_length} bytes "
                                    f"overruns the batch", position=pos)
        shapes = self._shapes(schema)
        want_nodes = sum(s[0] for s in shapes)
        want_bufs = sum(s[1] for s in shapes)
        if len(meta.nodes) != want_nodes or len(meta.buffers) != want_bufs or meta.has_variadic:
            raise CorruptBatchError(
                f"batch at byte {pos}: Arrow message has {len(meta.nodes)} nodes / "
                f"{len(meta.buffers)} buffers, schema {header.schema_id} needs {want_nodes} / "
                f"{want_bufs}", position=pos)
        bufs = meta.buffers
        nbuf = len(bufs)
        ordered = all(off % 8 == 0 and off >= 0 and ln >= 0 for off, ln in bufs) and all(
            bufs[i][0] + bufs[i][1] <= bufs[i + 1][0] for i in range(nbuf - 1)) and (
            not bufs or bufs[-1][0] + bufs[-1][1] <= meta.body_length)
        if not ordered:
            return [self._project_by_reencoding(mv, header, fields, schema, ct_len)]

        keep = set(fields)
        new_nodes = []
        new_bufs = []
        spans = []           # (start, end) relative to the body, merged when contiguous
        cursor = 0
        ni = bi = 0
        for f, (n, b) in enumerate(shapes):
            if f in keep:
                new_nodes.extend(meta.nodes[ni:ni + n])
                first, last = bi, bi + b  # buffers [first, last) of this field
                if b:
                    s = bufs[first][0]
                    e = bufs[last][0] if last < nbuf else meta.body_length
                    shift = cursor - s
                    for off, ln in bufs[first:last]:
                        new_bufs.append((off + shift, ln))
                    if spans and spans[-1][1] == s:
                        spans[-1] = (spans[-1][0], e)
                    else:
                        spans.append((s, e))
                    cursor += e - s
            ni += n
            bi += b
        pad = (-cursor) % 8
        new_meta = write_message_meta(MessageMeta(
            meta.length, new_nodes, new_bufs, meta.codec, cursor + pad, meta.version, meta.method))
        fixed = {0: V0_HEADER_SIZE, 1: V1_HEADER_SIZE}.get(header.magic, V2_HEADER_SIZE)
        head = bytearray(mv[pos:pos + fixed])
        total = fixed + ct_len + 8 + len(new_meta) + cursor + pad
        _I32.pack_into(head, 8, total - LOG_OVERHEAD)
        if header.magic == 1:
            _I32.pack_into(head, 48, 0)
        elif header.magic == 2:
            _I32.pack_into(head, 52, 0)
        parts = [head]
        if ct_len:
            parts.append(mv[start:start + ct_len])
        parts.append(_CONTINUATION + _I32.pack(len(new_meta)) + new_meta)
        for s, e in spans:
            parts.append(mv[body + s:body + e])
        if pad:
            parts.append(b"\0" * pad)
        return parts

    def _project_by_reencoding(self, mv, header: BatchHeader, fields, schema, ct_len) -> bytes:
        rb, change_types = self.decode(mv, header, arrow_schema=schema)
        sub = pa.schema([schema.field(i) for i in fields])
        rb = pa.RecordBatch.from_arrays([rb.column(i) for i in fields], schema=sub)
        msg = rb.serialize()
        if self._options is not None:
            msg = self._compress_message(msg)
        fixed = {0: V0_HEADER_SIZE, 1: V1_HEADER_SIZE}.get(header.magic, V2_HEADER_SIZE)
        pos = header.position
        head = bytearray(mv[pos:pos + fixed])
        total = fixed + ct_len + len(msg)
        _I32.pack_into(head, 8, total - LOG_OVERHEAD)
        if header.magic == 1:
            _I32.pack_into(head, 48, 0)
        elif header.magic == 2:
            _I32.pack_into(head, 52, 0)
        return b"".join((head, change_types or b"", msg))
