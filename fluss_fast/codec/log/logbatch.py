"""Fluss log record batch framing: header layout, building, parsing and server-side validation.

A records blob (ProduceLog/FetchLog ``records``, ``.log`` segments) is a concatenation of
self-delimiting batches. All magic versions share the first 21 bytes; the rest depends on magic::

    off  V0/V1                         V2
      0  BaseOffset        int64       BaseOffset        int64
      8  Length            int32       Length            int32   (batch size - 12)
     12  Magic             int8        Magic             int8
     13  CommitTimestamp   int64       CommitTimestamp   int64
     21  CRC               uint32      LeaderEpoch       int32
     25  SchemaId          int16       CRC               uint32
     27  Attributes        int8        SchemaId          int16   (V2: +4 from here on)
     28  LastOffsetDelta   int32       ...
     32  WriterId          int64
     40  BatchSequence     int32
     44  RecordCount       int32
     48  V1: StatisticsLength int32, then the statistics block (V2: at 52 / 56)

All little-endian. The CRC-32C covers SchemaId to the end of the batch, so the leader can rewrite
BaseOffset and CommitTimestamp (:func:`assign_offsets`) without recomputing it.

The compiled twin ``_logbatch`` has the same API; ``validate_records`` and ``assign_offsets`` there
walk the blob in C without creating per-batch objects.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator

from .._select import pick
from ..errors import CorruptBatchError

# The selected checksum (compiled when available): the header logic here is pure either way, and
# FLUSS_FAST_NO_EXTENSIONS makes this pure too.
from ..wire.crc32c import crc32c

__all__ = [
    "LOG_OVERHEAD", "V0_HEADER_SIZE", "V1_HEADER_SIZE", "V2_HEADER_SIZE",
    "NO_WRITER_ID", "NO_BATCH_SEQUENCE", "APPEND_ONLY_FLAG",
    "BatchHeader", "ValidatedRecords", "CorruptBatchError",
    "build_batch", "parse_header", "crc_of", "verify_crc", "iter_batches",
    "validate_records", "assign_offsets",
]

LOG_OVERHEAD = 12  # BaseOffset + Length: the bytes not counted by Length
V0_HEADER_SIZE = 48
V1_HEADER_SIZE = 52
V2_HEADER_SIZE = 56
NO_WRITER_ID = -1
NO_BATCH_SEQUENCE = -1
APPEND_ONLY_FLAG = 1

_MAGIC_OFFSET = 12
_MIN_PREFIX = 13  # enough to read the magic, which decides everything else

_PREFIX = struct.Struct("<qibq")             # base_offset, length, magic, commit_timestamp
_V0_TAIL = struct.Struct("<IhBiqii")         # crc .. record_count (offset 21)
_V1_TAIL = struct.Struct("<IhBiqiii")        # + statistics_length
_V2_TAIL = struct.Struct("<iIhBiqiii")       # leader_epoch first
_CRC_FREE_V0 = struct.Struct("<hBiqii")      # the part of the V0 header inside the CRC
_CRC_FREE_V1 = struct.Struct("<hBiqiii")
_HEAD = struct.Struct("<qibqI")              # the part of a V0/V1 header before SchemaId
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")

_INT16 = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)


class BatchHeader:
    """Fields of one batch header, plus where it sits (``position``) and its sizes."""

    __slots__ = (
        "base_offset", "length", "magic", "commit_timestamp", "leader_epoch", "crc", "schema_id",
        "attributes", "last_offset_delta", "writer_id", "batch_sequence", "record_count",
        "statistics_length", "header_size", "total_size", "position",
    )
    base_offset: int
    length: int
    magic: int
    commit_timestamp: int
    leader_epoch: int
    crc: int
    schema_id: int
    attributes: int
    last_offset_delta: int
    writer_id: int
    batch_sequence: int
    record_count: int
    statistics_length: int
    header_size: int
    total_size: int
    position: int

    @property
    def append_only(self) -> bool:
        return bool(self.attributes & APPEND_ONLY_FLAG)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    def __repr__(self) -> str:
        return (f"BatchHeader(position={self.position}, base_offset={self.base_offset}, "
                f"magic={self.magic}, schema_id={self.schema_id}, "
                f"record_count={self.record_count}, total_size={self.total_size})")


# The public names may be rebound to the compiled classes by pick(); the pure functions keep
# building the pure ones through these aliases.
_BatchHeaderPy = BatchHeader


class ValidatedRecords:
    """Summary of a records blob that passed :func:`validate_records`.

    ``schema_id`` is the schema id of the first batch and ``mixed_schema_ids`` tells whether any
    later batch has another one (then use :func:`iter_batches` to see them all). With no batches:
    ``schema_id``, ``writer_id``, ``first_sequence`` and ``last_sequence`` are -1.
    ``offset_count`` is the number of offsets the blob consumes (an empty batch takes one).
    ``append_only`` is true when every batch has the append-only attribute.
    """

    __slots__ = ("size", "batch_count", "record_count_total", "offset_count", "max_record_count",
                 "schema_id", "mixed_schema_ids", "writer_id", "first_sequence", "last_sequence",
                 "append_only")

    def __repr__(self) -> str:
        return (f"ValidatedRecords(size={self.size}, batch_count={self.batch_count}, "
                f"record_count_total={self.record_count_total}, "
                f"offset_count={self.offset_count}, schema_id={self.schema_id}, "
                f"writer_id={self.writer_id})")


_ValidatedRecordsPy = ValidatedRecords


def _check_range(name: str, value: int, bounds) -> None:
    if not bounds[0] <= value <= bounds[1]:
        raise OverflowError(f"{name}={value} out of range")


def _byte_view(buf) -> memoryview:
    mv = memoryview(buf)
    if not mv.c_contiguous:
        # same exception as the extension's PyObject_GetBuffer(PyBUF_SIMPLE)
        raise BufferError("a C-contiguous buffer is required")
    if mv.ndim != 1 or mv.format not in ("B", "b", "c"):
        mv = mv.cast("B")
    return mv


def build_batch(payload, *, schema_id: int, record_count: int, append_only: bool = True,
                writer_id: int = NO_WRITER_ID, batch_sequence: int = NO_BATCH_SEQUENCE,
                magic: int = 0, statistics=b"", base_offset: int = 0,
                commit_timestamp: int = 0) -> bytes:
    """One complete batch: header (+ statistics for magic 1) + ``payload``, CRC filled in.

    ``payload`` is the already-encoded records (ARROW: change-type vector + IPC message;
    INDEXED/COMPACTED: the records). Only magic 0 and 1 can be written.
    """
    if magic == 0:
        fixed = V0_HEADER_SIZE
    elif magic == 1:
        fixed = V1_HEADER_SIZE
    else:
        raise ValueError(f"cannot write magic {magic} batches (only 0 and 1)")
    _check_range("schema_id", schema_id, _INT16)
    _check_range("record_count", record_count, _INT32)
    _check_range("batch_sequence", batch_sequence, _INT32)
    _check_range("writer_id", writer_id, _INT64)
    _check_range("base_offset", base_offset, _INT64)
    _check_range("commit_timestamp", commit_timestamp, _INT64)
    if record_count < 0:
        raise ValueError(f"record_count must be >= 0, got {record_count}")
    payload_len = memoryview(payload).nbytes
    stats_len = memoryview(statistics).nbytes
    if stats_len and magic == 0:
        raise ValueError("magic 0 batches cannot carry statistics")
    total = fixed + stats_len + payload_len
    if total - LOG_OVERHEAD > _INT32[1]:
        raise OverflowError(f"batch of {total} bytes is too large")
    last_offset_delta = record_count - 1 if record_count > 0 else 0
    attributes = APPEND_ONLY_FLAG if append_only else 0
    if magic == 0:
        checked = _CRC_FREE_V0.pack(schema_id, attributes, last_offset_delta, writer_id,
                                    batch_sequence, record_count)
    else:
        checked = _CRC_FREE_V1.pack(schema_id, attributes, last_offset_delta, writer_id,
                                    batch_sequence, record_count, stats_len)
    # Chain the checksum over the three parts instead of assembling first: the join below is then
    # the only copy of the payload.
    crc = crc32c(payload, crc32c(statistics, crc32c(checked)))
    head = _HEAD.pack(base_offset, total - LOG_OVERHEAD, magic, commit_timestamp, crc)
    return b"".join((head, checked, statistics, payload))


def _read_header(mv: memoryview, pos: int, end: int):
    """``(header, None)`` or ``(None, reason)`` for the batch header at ``pos`` (bytes up to end)."""
    avail = end - pos
    if avail < _MIN_PREFIX:
        return None, f"truncated header ({max(avail, 0)} of {_MIN_PREFIX} bytes)"
    magic = struct.unpack_from("<b", mv, pos + _MAGIC_OFFSET)[0]
    if magic == 0:
        fixed = V0_HEADER_SIZE
    elif magic == 1:
        fixed = V1_HEADER_SIZE
    elif magic == 2:
        fixed = V2_HEADER_SIZE
    else:
        return None, f"unknown magic {magic}"
    if avail < fixed:
        return None, f"truncated header ({avail} of {fixed} bytes)"
    h = _BatchHeaderPy()
    h.base_offset, h.length, h.magic, h.commit_timestamp = _PREFIX.unpack_from(mv, pos)
    if magic == 0:
        (h.crc, h.schema_id, h.attributes, h.last_offset_delta, h.writer_id, h.batch_sequence,
         h.record_count) = _V0_TAIL.unpack_from(mv, pos + 21)
        h.leader_epoch = -1
        h.statistics_length = 0
    elif magic == 1:
        (h.crc, h.schema_id, h.attributes, h.last_offset_delta, h.writer_id, h.batch_sequence,
         h.record_count, h.statistics_length) = _V1_TAIL.unpack_from(mv, pos + 21)
        h.leader_epoch = -1
    else:
        (h.leader_epoch, h.crc, h.schema_id, h.attributes, h.last_offset_delta, h.writer_id,
         h.batch_sequence, h.record_count, h.statistics_length) = _V2_TAIL.unpack_from(mv, pos + 21)
    total = h.length + LOG_OVERHEAD
    if total < fixed:
        return None, f"length {h.length} too small for magic {magic} (header needs {fixed} bytes)"
    if h.statistics_length < 0:
        return None, f"negative statistics length {h.statistics_length}"
    if fixed + h.statistics_length > total:
        return None, (f"statistics length {h.statistics_length} exceeds the batch "
                      f"({total} bytes)")
    h.header_size = fixed + h.statistics_length
    h.total_size = total
    h.position = pos
    return h, None


def _crc_start(h: BatchHeader) -> int:
    return h.position + (29 if h.magic == 2 else 25)


def _header_at(mv: memoryview, pos: int) -> BatchHeader:
    h, reason = _read_header(mv, pos, len(mv))
    if reason is not None:
        raise CorruptBatchError(f"batch at byte {pos}: {reason}", position=pos)
    return h


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """The header of the batch at ``pos``; the payload need not be present.

    Raises CorruptBatchError on a short buffer, unknown magic or inconsistent sizes.
    """
    if pos < 0:
        raise ValueError("pos must be >= 0")
    return _header_at(_byte_view(buf), pos)


def _whole_batch(mv: memoryview, pos: int) -> BatchHeader:
    h = _header_at(mv, pos)
    avail = len(mv) - pos
    if h.total_size > avail:
        raise CorruptBatchError(
            f"batch at byte {pos}: truncated batch (size {h.total_size}, {avail} bytes left)",
            position=pos)
    return h


def _header_and_crc(buf, pos: int):
    """The header of the complete batch at ``pos`` and the CRC its bytes give."""
    if pos < 0:
        raise ValueError("pos must be >= 0")
    mv = _byte_view(buf)
    h = _whole_batch(mv, pos)
    return h, crc32c(mv[_crc_start(h):pos + h.total_size])


def crc_of(buf, pos: int = 0) -> int:
    """The CRC the (complete) batch at ``pos`` should store."""
    return _header_and_crc(buf, pos)[1]


def verify_crc(buf, pos: int = 0) -> bool:
    """Whether the stored CRC of the batch at ``pos`` matches; raises if it is not even complete."""
    h, crc = _header_and_crc(buf, pos)
    return crc == h.crc


def iter_batches(buf, pos: int = 0, end: int | None = None) -> Iterator[BatchHeader]:
    """Headers of the batches in ``buf[pos:end]``, each with its absolute ``position``.

    Stops quietly at a truncated trailing batch (fewer than 12 bytes left, or a Length reaching
    past ``end``), since fetch responses are cut by byte count. Malformed complete batches raise
    CorruptBatchError. CRCs are not checked.
    """
    if pos < 0:
        raise ValueError("pos must be >= 0")
    mv = _byte_view(buf)
    n = len(mv)
    if end is None or end > n:
        end = n
    while end - pos >= LOG_OVERHEAD:
        length = _I32.unpack_from(mv, pos + 8)[0]
        if length + LOG_OVERHEAD > end - pos:
            return
        h, reason = _read_header(mv, pos, end)
        if reason is not None:
            raise CorruptBatchError(f"batch at byte {pos}: {reason}", position=pos)
        yield h
        pos += h.total_size


def _blob_error(index: int, pos: int, reason: str) -> CorruptBatchError:
    return CorruptBatchError(f"batch {index} at byte {pos}: {reason}", batch_index=index,
                             position=pos)


def _complete_header(mv: memoryview, index: int, pos: int, n: int) -> BatchHeader:
    remaining = n - pos
    if remaining < LOG_OVERHEAD:
        raise _blob_error(index, pos, f"{remaining} trailing bytes, too few for a batch "
                                      f"(need at least {LOG_OVERHEAD})")
    length = _I32.unpack_from(mv, pos + 8)[0]
    if length + LOG_OVERHEAD > remaining:
        raise _blob_error(index, pos, f"truncated batch (size {length + LOG_OVERHEAD}, "
                                      f"{remaining} bytes left)")
    h, reason = _read_header(mv, pos, n)
    if reason is not None:
        raise _blob_error(index, pos, reason)
    return h


def validate_records(buf) -> ValidatedRecords:
    """Checks every batch of a produced records blob and summarises it (see ValidatedRecords).

    Each batch must be complete (no truncation, no trailing bytes), of known magic, with
    consistent sizes, a correct CRC, a non-negative record count, LastOffsetDelta equal to
    ``record_count - 1`` (0 for an empty batch), and the same writer id as the first batch.
    Raises CorruptBatchError naming the batch index and byte position otherwise.
    """
    mv = _byte_view(buf)
    n = len(mv)
    out = _ValidatedRecordsPy()
    out.size = n
    batches = records = offsets = max_records = 0
    schema_id = writer_id = first_seq = last_seq = -1
    mixed = False
    append_only = True
    pos = 0
    while pos < n:
        h = _complete_header(mv, batches, pos, n)
        computed = crc32c(mv[_crc_start(h):pos + h.total_size])
        if computed != h.crc:
            raise _blob_error(batches, pos, f"CRC mismatch (stored 0x{h.crc:08x}, "
                                            f"computed 0x{computed:08x})")
        rc = h.record_count
        if rc < 0:
            raise _blob_error(batches, pos, f"negative record count {rc}")
        expected = rc - 1 if rc > 0 else 0
        if h.last_offset_delta != expected:
            raise _blob_error(batches, pos, f"last offset delta {h.last_offset_delta} "
                                            f"inconsistent with record count {rc} "
                                            f"(expected {expected})")
        if batches == 0:
            schema_id = h.schema_id
            writer_id = h.writer_id
            first_seq = h.batch_sequence
        else:
            if h.writer_id != writer_id:
                raise _blob_error(batches, pos, f"writer id {h.writer_id} differs from writer "
                                                f"id {writer_id} of batch 0")
            if h.schema_id != schema_id:
                mixed = True
        last_seq = h.batch_sequence
        if not h.attributes & APPEND_ONLY_FLAG:
            append_only = False
        records += rc
        offsets += h.last_offset_delta + 1
        if rc > max_records:
            max_records = rc
        batches += 1
        pos += h.total_size
    out.batch_count = batches
    out.record_count_total = records
    out.offset_count = offsets
    out.max_record_count = max_records
    out.schema_id = schema_id
    out.mixed_schema_ids = mixed
    out.writer_id = writer_id
    out.first_sequence = first_seq
    out.last_sequence = last_seq
    out.append_only = append_only
    return out


def assign_offsets(buf, base_offset: int, commit_timestamp: int) -> int:
    """Leader-side rewrite, in place: BaseOffset (running) and CommitTimestamp of every batch.

    ``buf`` must be writable (bytearray, writable memoryview). Returns the next offset to assign.
    The CRC stays valid because neither field is covered by it. The blob is expected to have
    passed :func:`validate_records`; sizes are still checked so a bad blob cannot be overrun.
    """
    mv = memoryview(buf)
    if mv.readonly:
        raise TypeError("assign_offsets needs a writable buffer (bytearray or writable memoryview)")
    mv = _byte_view(mv)
    _check_range("base_offset", base_offset, _INT64)
    _check_range("commit_timestamp", commit_timestamp, _INT64)
    n = len(mv)
    offset = base_offset
    pos = 0
    index = 0
    ts = _I64.pack(commit_timestamp)
    while pos < n:
        h = _complete_header(mv, index, pos, n)
        _I64.pack_into(mv, pos, offset)
        mv[pos + 13:pos + 21] = ts
        offset += h.last_offset_delta + 1
        if not _INT64[0] <= offset <= _INT64[1]:
            raise OverflowError("assigned offsets exceed int64")
        pos += h.total_size
        index += 1
    return offset


BatchHeader_py = BatchHeader
ValidatedRecords_py = ValidatedRecords
build_batch_py = build_batch
parse_header_py = parse_header
crc_of_py = crc_of
verify_crc_py = verify_crc
iter_batches_py = iter_batches
validate_records_py = validate_records
assign_offsets_py = assign_offsets

pick("_logbatch", globals(), [
    "BatchHeader", "ValidatedRecords", "build_batch", "parse_header", "crc_of", "verify_crc",
    "iter_batches", "validate_records", "assign_offsets",
])
