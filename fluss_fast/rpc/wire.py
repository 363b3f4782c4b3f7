"""Hand-framed protobuf: the messages whose record bytes must not be copied into or out of a
protobuf object (docs/contributing/protocol.md §3). Each message has its encoder and its parser side by side here, one
for the client and one for the server, and both match the generated classes byte for byte
(tests/rpc/test_wire.py). Field numbers and wire types are read from the generated descriptors.

* ProduceLog / PutKv requests: the client encodes them around the encoded batches; the server
  parses ProduceLog straight from the frame so that ``records`` stay views of the frame buffer.
* FetchLog response: the server frames segment bytes without copying them, the client walks the
  response so that ``records`` stay spans of the response buffer.
* Metadata response: the coordinator caches serialized table/partition fields and splices them.
"""
from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor

from ..codec.wire.varint import encode_varint, read_varint
from . import fluss_api_pb2 as pb

__all__ = [
    "encode_varint", "read_varint", "int32", "int64", "field_number", "field_tag", "walk",
    "RecordsRequest", "PRODUCE_LOG", "PUT_KV", "RawRecordsRequest", "RawRecordsBucket",
    "parse_produce_request", "FetchLogBucket", "encode_fetch_response", "BucketFetchResult",
    "parse_fetch_response", "table_metadata_field", "partition_metadata_field",
]

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5

_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1

_FIXED64_TYPES = (FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64, FieldDescriptor.TYPE_DOUBLE)
_FIXED32_TYPES = (FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_SFIXED32, FieldDescriptor.TYPE_FLOAT)
_DELIMITED_TYPES = (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES)
_ZIGZAG_TYPES = (FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64)


# -- primitives -----------------------------------------------------------------------------------
def int32(v: int) -> int:
    """A decoded varint as protobuf reads an int32: its low 32 bits, two's complement."""
    v &= _U32
    return v - (1 << 32) if v >= 1 << 31 else v


def int64(v: int) -> int:
    """A decoded varint as protobuf reads an int64: its low 64 bits, two's complement."""
    v &= _U64
    return v - (1 << 64) if v >= 1 << 63 else v


def _field(message_cls, name: str):
    return message_cls.DESCRIPTOR.fields_by_name[name]


def field_number(message_cls, name: str) -> int:
    return _field(message_cls, name).number


def _is_packed(fd) -> bool:
    # FieldDescriptor.is_packed came with protobuf 5.29; the older runtimes pyproject.toml allows
    # lack it. fluss_api.proto is proto2, where a field is packed exactly when it says [packed = true].
    packed = getattr(fd, "is_packed", None)
    return bool(fd.GetOptions().packed) if packed is None else packed


def _wire_type(fd) -> int:
    if fd.type in _ZIGZAG_TYPES:
        raise TypeError(f"{fd.full_name}: zigzag fields are not framed by hand")
    if fd.type in _DELIMITED_TYPES:
        return LENGTH_DELIMITED
    if _is_packed(fd):
        return LENGTH_DELIMITED
    if fd.type in _FIXED64_TYPES:
        return FIXED64
    if fd.type in _FIXED32_TYPES:
        return FIXED32
    return VARINT


def field_tag(message_cls, name: str) -> bytes:
    """The encoded key (field number and wire type) of a field."""
    fd = _field(message_cls, name)
    return encode_varint((fd.number << 3) | _wire_type(fd))


def walk(buf, pos: int, end: int):
    """(field number, value) pairs of the message in ``buf[pos:end]``: varints as unsigned ints,
    length-delimited fields as (start, end) spans of ``buf``, fixed-width fields skipped."""
    while pos < end:
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = read_varint(buf, pos, end)
        fn, wt = key >> 3, key & 7
        if wt == VARINT:
            v = buf[pos] if pos < end else 0x80
            if v < 0x80:
                pos += 1
            else:
                v, pos = read_varint(buf, pos, end)
            yield fn, v
        elif wt == LENGTH_DELIMITED:
            n, pos = read_varint(buf, pos, end)
            if pos + n > end:
                raise ValueError(f"field {fn} overruns its message")
            yield fn, (pos, pos + n)
            pos += n
        elif wt == FIXED64:
            pos += 8
        elif wt == FIXED32:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wt}")
    if pos != end:
        raise ValueError("message overruns its end")


# -- ProduceLog / PutKv requests ------------------------------------------------------------------
COALESCE_BELOW = 64 * 1024  # smaller payloads are joined to their framing: fewer socket writes


class RawRecordsBucket:
    """One bucket of a parsed write request; ``records`` is a view of the request frame."""

    __slots__ = ("partition_id", "bucket_id", "records", "_has_pid")

    def __init__(self):
        self.partition_id = 0
        self.bucket_id = None
        self.records = None
        self._has_pid = False

    def HasField(self, name: str) -> bool:  # noqa: N802 - the protobuf spelling the handlers use
        if name == "partition_id":
            return self._has_pid
        raise ValueError(f"no optional field {name!r}")


class RawRecordsRequest:
    """A parsed write request, read like the generated message by the handlers."""

    __slots__ = ("acks", "table_id", "timeout_ms", "target_columns", "buckets_req")


class RecordsRequest:
    """Framing of the write requests: acks, table_id, timeout_ms, (PutKv: packed target_columns),
    then repeated buckets {partition_id, bucket_id, records}."""

    def __init__(self, request_cls, bucket_cls):
        fields = request_cls.DESCRIPTOR.fields_by_name
        self.target_columns_tag = self._target_columns = None  # ProduceLog has none
        # per field: ``<attr>_tag`` (the encoder's key bytes) and ``_<attr>`` (the parser's number)
        for attr, cls, name in (("acks", request_cls, "acks"), ("table_id", request_cls, "table_id"),
                                ("timeout_ms", request_cls, "timeout_ms"),
                                ("target_columns", request_cls, "target_columns"),
                                ("buckets", request_cls, "buckets_req"),
                                ("partition_id", bucket_cls, "partition_id"),
                                ("bucket_id", bucket_cls, "bucket_id"), ("records", bucket_cls, "records")):
            if cls is request_cls and name not in fields:
                continue
            setattr(self, attr + "_tag", field_tag(cls, name))
            setattr(self, "_" + attr, field_number(cls, name))

    def encode(self, acks: int, table_id: int, timeout_ms: int, buckets, target_columns=None) -> list:
        """The request as a list of bytes-like chunks (to be written in order).

        ``buckets`` is ``[(partition_id | None, bucket_id, [records_chunk, ...]), ...]``; the records
        of one bucket are the concatenation of its chunks. Large chunks are passed through as they
        are, not copied."""
        out = []
        cur = bytearray(self.acks_tag)
        cur += encode_varint(acks)
        cur += self.table_id_tag
        cur += encode_varint(table_id)
        cur += self.timeout_ms_tag
        cur += encode_varint(timeout_ms)
        if target_columns:
            packed = b"".join(encode_varint(c) for c in target_columns)
            cur += self.target_columns_tag
            cur += encode_varint(len(packed))
            cur += packed
        buckets_tag = self.buckets_tag
        for partition_id, bucket_id, records in buckets:
            views = [c if isinstance(c, (bytes, bytearray)) else memoryview(c).cast("B") for c in records]
            rec_len = 0
            for v in views:
                rec_len += len(v)
            sub = bytearray()
            if partition_id is not None:
                sub += self.partition_id_tag
                sub += encode_varint(partition_id)
            sub += self.bucket_id_tag
            sub += encode_varint(bucket_id)
            sub += self.records_tag
            sub += encode_varint(rec_len)
            cur += buckets_tag
            cur += encode_varint(len(sub) + rec_len)
            cur += sub
            for v in views:
                if len(v) < COALESCE_BELOW:
                    cur += v
                else:
                    out.append(bytes(cur))
                    out.append(v)
                    cur = bytearray()
        if cur:
            out.append(bytes(cur))
        return out

    def parse(self, body) -> RawRecordsRequest | None:
        """The request with ``records`` as views of ``body`` (a memoryview), or None for anything
        but the plain encoding of a complete request (unknown fields, unpacked or wrongly typed
        fields, truncation, missing required fields): protobuf then parses it and reports the
        problem the usual way."""
        try:
            return self._parse(body)
        except ValueError:
            return None

    def _parse(self, buf) -> RawRecordsRequest | None:
        end = len(buf)
        pos = 0
        acks = table_id = timeout_ms = None
        target_columns = []
        buckets = []
        f_acks, f_table_id, f_timeout_ms = self._acks, self._table_id, self._timeout_ms
        f_buckets, f_target_columns = self._buckets, self._target_columns
        while pos < end:
            key = buf[pos]
            if key < 0x80:
                pos += 1
            else:
                key, pos = read_varint(buf, pos, end)
            fn, wt = key >> 3, key & 7
            if wt == VARINT and fn in (f_acks, f_table_id, f_timeout_ms):
                v, pos = read_varint(buf, pos, end)
                if fn == f_acks:
                    acks = int32(v)
                elif fn == f_table_id:
                    table_id = int64(v)
                else:
                    timeout_ms = int32(v)
            elif wt == LENGTH_DELIMITED and fn == f_buckets:
                n, pos = read_varint(buf, pos, end)
                if pos + n > end:
                    return None
                b = self._parse_bucket(buf, pos, pos + n)
                if b is None:
                    return None
                buckets.append(b)
                pos += n
            elif wt == LENGTH_DELIMITED and fn == f_target_columns:
                n, pos = read_varint(buf, pos, end)
                if pos + n > end:
                    return None
                stop = pos + n
                while pos < stop:
                    v, pos = read_varint(buf, pos, stop)
                    target_columns.append(int32(v))
            else:
                return None
        if acks is None or table_id is None or timeout_ms is None:
            return None
        req = RawRecordsRequest()
        req.acks = acks
        req.table_id = table_id
        req.timeout_ms = timeout_ms
        req.target_columns = target_columns
        req.buckets_req = buckets
        return req

    def _parse_bucket(self, buf, pos: int, end: int) -> RawRecordsBucket | None:
        out = RawRecordsBucket()
        f_partition_id, f_bucket_id, f_records = self._partition_id, self._bucket_id, self._records
        while pos < end:
            key = buf[pos]
            if key < 0x80:
                pos += 1
            else:
                key, pos = read_varint(buf, pos, end)
            fn, wt = key >> 3, key & 7
            if wt == VARINT and fn in (f_partition_id, f_bucket_id):
                v, pos = read_varint(buf, pos, end)
                if fn == f_partition_id:
                    out.partition_id = int64(v)
                    out._has_pid = True
                else:
                    out.bucket_id = int32(v)
            elif wt == LENGTH_DELIMITED and fn == f_records:
                n, pos = read_varint(buf, pos, end)
                if pos + n > end:
                    return None
                out.records = buf[pos:pos + n]
                pos += n
            else:
                return None
        if pos != end or out.bucket_id is None or out.records is None:
            return None
        return out


PRODUCE_LOG = RecordsRequest(pb.ProduceLogRequest, pb.PbProduceLogReqForBucket)
PUT_KV = RecordsRequest(pb.PutKvRequest, pb.PbPutKvReqForBucket)


def parse_produce_request(body) -> RawRecordsRequest | None:
    """A ProduceLogRequest look-alike whose ``records`` are views of ``body`` (a writable
    memoryview), or None when protobuf should parse it (see ``RecordsRequest.parse``)."""
    return PRODUCE_LOG.parse(body)


# -- FetchLog response ----------------------------------------------------------------------------
_SMALL_CHUNK = 16 * 1024  # record data below this is copied into the framing buffer

_RESP_TABLES_TAG = field_tag(pb.FetchLogResponse, "tables_resp")
_TABLE_ID_TAG = field_tag(pb.PbFetchLogRespForTable, "table_id")
_TABLE_BUCKETS_TAG = field_tag(pb.PbFetchLogRespForTable, "buckets_resp")
_BUCKET_RECORDS_TAG = field_tag(pb.PbFetchLogRespForBucket, "records")

_F_TABLES = field_number(pb.FetchLogResponse, "tables_resp")
_F_TABLE_ID = field_number(pb.PbFetchLogRespForTable, "table_id")
_F_TABLE_BUCKETS = field_number(pb.PbFetchLogRespForTable, "buckets_resp")
_F_PARTITION_ID = field_number(pb.PbFetchLogRespForBucket, "partition_id")
_F_BUCKET_ID = field_number(pb.PbFetchLogRespForBucket, "bucket_id")
_F_ERROR_CODE = field_number(pb.PbFetchLogRespForBucket, "error_code")
_F_ERROR_MESSAGE = field_number(pb.PbFetchLogRespForBucket, "error_message")
_F_HIGH_WATERMARK = field_number(pb.PbFetchLogRespForBucket, "high_watermark")
_F_REMOTE = field_number(pb.PbFetchLogRespForBucket, "remote_log_fetch_info")
_F_RECORDS = field_number(pb.PbFetchLogRespForBucket, "records")
_F_FILTERED_END = field_number(pb.PbFetchLogRespForBucket, "filtered_end_offset")
_FILTERED_END_TAG = field_tag(pb.PbFetchLogRespForBucket, "filtered_end_offset")


class FetchLogBucket:
    """One bucket of the server's fetch answer: an error, or the high watermark and record chunks."""

    __slots__ = ("partition_id", "bucket_id", "error_code", "error_message", "high_watermark", "chunks",
                 "size", "remote", "batch_sizes", "filtered_end_offset")

    def __init__(self, partition_id, bucket_id):
        self.partition_id = partition_id
        self.bucket_id = bucket_id
        self.error_code = 0
        self.error_message = None
        self.high_watermark = -1
        self.chunks = []
        self.size = 0
        self.remote = None  # PbRemoteLogFetchInfo: the data is only in remote storage
        self.batch_sizes = None  # projected answers: (bytes, chunks) of each batch in ``chunks``
        # filter push-down: the offset the client resumes at past batches the filter skipped
        self.filtered_end_offset = None

    def fail(self, code: int, message: str) -> None:
        self.error_code = code
        self.error_message = message
        self.chunks = []
        self.size = 0
        self.batch_sizes = None
        self.filtered_end_offset = None

    def tail(self) -> bytes:
        """The fields after the records (field 9, filtered_end_offset), as SerializeToString
        orders them."""
        if self.filtered_end_offset is None or self.error_code or self.remote is not None:
            return b""
        return _FILTERED_END_TAG + encode_varint(self.filtered_end_offset & 0xFFFFFFFFFFFFFFFF)

    def head(self) -> bytes:
        m = pb.PbFetchLogRespForBucket(bucket_id=self.bucket_id)
        if self.partition_id is not None:
            m.partition_id = self.partition_id
        if self.error_code:
            m.error_code = self.error_code
            if self.error_message:
                m.error_message = self.error_message
            return m.SerializeToString()
        m.high_watermark = self.high_watermark
        m.log_start_offset = 0
        if self.remote is not None:
            m.remote_log_fetch_info.CopyFrom(self.remote)  # instead of records, as Java answers
            return m.SerializeToString()
        # records follow every field the head sets (all numbered below it), so appending them here
        # gives exactly what SerializeToString would.
        return m.SerializeToString() + _BUCKET_RECORDS_TAG + encode_varint(self.size)


def encode_fetch_response(tables) -> list:
    """Chunks of a serialized FetchLogResponse; ``tables`` = [(table_id, [FetchLogBucket, ...]), ...]."""
    chunks: list = []
    pending = bytearray()
    for table_id, buckets in tables:
        parts = []
        body_len = 0
        tid = _TABLE_ID_TAG + encode_varint(table_id)
        body_len += len(tid)
        for b in buckets:
            head = b.head()
            tail = b.tail()
            blen = len(head) + b.size + len(tail)
            prefix = _TABLE_BUCKETS_TAG + encode_varint(blen)
            parts.append((prefix + head, b.chunks + [tail] if tail else b.chunks))
            body_len += len(prefix) + blen
        pending += _RESP_TABLES_TAG
        pending += encode_varint(body_len)
        pending += tid
        for framing, data in parts:
            pending += framing
            for chunk in data:
                if len(chunk) < _SMALL_CHUNK:
                    pending += chunk
                else:
                    if pending:
                        chunks.append(bytes(pending))
                        pending = bytearray()
                    chunks.append(chunk)
    if pending:
        chunks.append(bytes(pending))
    return chunks


class BucketFetchResult:
    """One bucket of a FetchLog response as the client reads it."""

    __slots__ = ("partition_id", "bucket_id", "error_code", "error_message", "high_watermark",
                 "records", "remote", "filtered_end_offset")

    def __init__(self):
        self.partition_id = None
        self.bucket_id = -1
        self.error_code = 0
        self.error_message = None
        self.high_watermark = -1
        self.records = None          # (start, end) inside the response body
        self.remote = None           # serialized PbRemoteLogFetchInfo
        self.filtered_end_offset = None


def _int32_field(fn: int, v) -> int:
    if v.__class__ is tuple:
        raise ValueError(f"field {fn} is length-delimited, expected a varint")
    return v if v < 0x80000000 else int32(v)


def _int64_field(fn: int, v) -> int:
    if v.__class__ is tuple:
        raise ValueError(f"field {fn} is length-delimited, expected a varint")
    return v if v < 0x8000000000000000 else int64(v)


def _span_field(fn: int, v) -> tuple[int, int]:
    if v.__class__ is not tuple:
        raise ValueError(f"field {fn} is a varint, expected length-delimited")
    return v


def _parse_fetch_bucket(mv, start: int, end: int) -> BucketFetchResult:
    r = BucketFetchResult()
    for fn, v in walk(mv, start, end):
        if fn == _F_RECORDS:
            r.records = _span_field(fn, v)
        elif fn == _F_BUCKET_ID:
            r.bucket_id = _int32_field(fn, v)
        elif fn == _F_HIGH_WATERMARK:
            r.high_watermark = _int64_field(fn, v)
        elif fn == _F_PARTITION_ID:
            r.partition_id = _int64_field(fn, v)
        elif fn == _F_ERROR_CODE:
            r.error_code = _int32_field(fn, v)
        elif fn == _F_ERROR_MESSAGE:
            s, e = _span_field(fn, v)
            r.error_message = bytes(mv[s:e]).decode("utf-8", "replace")
        elif fn == _F_REMOTE:
            s, e = _span_field(fn, v)
            r.remote = bytes(mv[s:e])
        elif fn == _F_FILTERED_END:
            r.filtered_end_offset = _int64_field(fn, v)
    return r


def parse_fetch_response(mv) -> list[tuple[int, list[BucketFetchResult]]]:
    """[(table_id, [BucketFetchResult, ...]), ...] of a FetchLogResponse body; ``records`` stay
    spans of it. ValueError for a malformed body."""
    mv = memoryview(mv).cast("B") if not isinstance(mv, memoryview) or mv.format != "B" else mv
    out = []
    for fn, v in walk(mv, 0, len(mv)):
        if fn != _F_TABLES or not isinstance(v, tuple):
            continue
        table_id = None
        buckets = []
        for tfn, tv in walk(mv, v[0], v[1]):
            if tfn == _F_TABLE_ID and not isinstance(tv, tuple):
                table_id = int64(tv)
            elif tfn == _F_TABLE_BUCKETS and isinstance(tv, tuple):
                buckets.append(_parse_fetch_bucket(mv, tv[0], tv[1]))
        out.append((table_id, buckets))
    return out


# -- Metadata response ----------------------------------------------------------------------------
_TABLE_METADATA_TAG = field_tag(pb.MetadataResponse, "table_metadata")
_PARTITION_METADATA_TAG = field_tag(pb.MetadataResponse, "partition_metadata")


def table_metadata_field(serialized_table_metadata: bytes) -> bytes:
    """One ``table_metadata`` entry of a MetadataResponse: a response is the concatenation of its
    fields, so cached entries are spliced after the serialized node list."""
    return _TABLE_METADATA_TAG + encode_varint(len(serialized_table_metadata)) + serialized_table_metadata


def partition_metadata_field(serialized_partition_metadata: bytes) -> bytes:
    """One ``partition_metadata`` entry of a MetadataResponse (see ``table_metadata_field``)."""
    return (_PARTITION_METADATA_TAG + encode_varint(len(serialized_partition_metadata))
            + serialized_partition_metadata)
