# cython: language_level=3
"""Compiled twin of :mod:`fluss_fast.codec.log.logbatch` (see there for the layout and semantics).

``validate_records`` and ``assign_offsets`` walk the blob in C (without the GIL for large blobs)
and create no per-batch Python objects; error messages are formatted only on failure, identical to
the pure twin's.
"""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, INT64_MAX, INT64_MIN
from libc.string cimport memcpy
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE,
                             PyBUF_WRITABLE)
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING

from fluss_fast.codec.errors import CorruptBatchError

from fluss_fast.codec.wire._crc32c cimport crc32c_update
from fluss_fast.codec.wire.bytebuf cimport (ff_le_get16, ff_le_get32, ff_le_get64, ff_le_put16, ff_le_put32,
                                        ff_le_put64)

LOG_OVERHEAD = 12
V0_HEADER_SIZE = 48
V1_HEADER_SIZE = 52
V2_HEADER_SIZE = 56
NO_WRITER_ID = -1
NO_BATCH_SEQUENCE = -1
APPEND_ONLY_FLAG = 1

cdef enum:
    C_LOG_OVERHEAD = 12
    C_MIN_PREFIX = 13
    C_V0 = 48
    C_V1 = 52
    C_V2 = 56
    # Below this the GIL round trip costs more than the work it would let run in parallel.
    NOGIL_THRESHOLD = 4096

# Why a header (or a blob) is rejected; turned into text by _reason() only on failure.
cdef enum Problem:
    OK = 0
    SHORT_PREFIX          # fewer than 13 bytes: magic unreadable
    BAD_MAGIC
    SHORT_FIXED           # fewer bytes than the fixed header of this magic
    LENGTH_TOO_SMALL
    NEGATIVE_STATS
    STATS_TOO_BIG
    BLOB_SHORT            # fewer than 12 bytes left in a blob
    BLOB_TRUNCATED        # Length reaches past the end of the blob
    CRC_MISMATCH
    NEGATIVE_COUNT
    BAD_DELTA
    WRITER_MISMATCH

cdef struct RawHeader:
    int64_t base_offset
    int32_t length
    int8_t magic
    int64_t commit_timestamp
    int32_t leader_epoch
    uint32_t crc
    int16_t schema_id
    uint8_t attributes
    int32_t last_offset_delta
    int64_t writer_id
    int32_t batch_sequence
    int32_t record_count
    int32_t statistics_length
    Py_ssize_t fixed_size
    Py_ssize_t crc_offset      # relative to the batch start
    Py_ssize_t header_size
    Py_ssize_t total_size


cdef Problem _read_header(const unsigned char *p, Py_ssize_t avail, RawHeader *h) noexcept nogil:
    cdef const unsigned char *q
    cdef int64_t total
    if avail < C_MIN_PREFIX:
        return SHORT_PREFIX
    h.magic = <int8_t>p[12]
    if h.magic == 0:
        h.fixed_size = C_V0
    elif h.magic == 1:
        h.fixed_size = C_V1
    elif h.magic == 2:
        h.fixed_size = C_V2
    else:
        return BAD_MAGIC
    if avail < h.fixed_size:
        return SHORT_FIXED
    h.base_offset = ff_le_get64(p)
    h.length = ff_le_get32(p + 8)
    h.commit_timestamp = ff_le_get64(p + 13)
    if h.magic == 2:
        h.leader_epoch = ff_le_get32(p + 21)
        q = p + 25
    else:
        h.leader_epoch = -1
        q = p + 21
    h.crc_offset = (q - p) + 4
    h.crc = <uint32_t>ff_le_get32(q)
    h.schema_id = ff_le_get16(q + 4)
    h.attributes = q[6]
    h.last_offset_delta = ff_le_get32(q + 7)
    h.writer_id = ff_le_get64(q + 11)
    h.batch_sequence = ff_le_get32(q + 19)
    h.record_count = ff_le_get32(q + 23)
    h.statistics_length = ff_le_get32(q + 27) if h.magic != 0 else 0
    total = <int64_t>h.length + C_LOG_OVERHEAD
    h.total_size = <Py_ssize_t>total
    if total < h.fixed_size:
        return LENGTH_TOO_SMALL
    if h.statistics_length < 0:
        return NEGATIVE_STATS
    if h.fixed_size + <int64_t>h.statistics_length > total:
        return STATS_TOO_BIG
    h.header_size = h.fixed_size + h.statistics_length
    return OK


cdef str _header_reason(Problem problem, RawHeader *h, Py_ssize_t avail):
    if problem == SHORT_PREFIX:
        return f"truncated header ({max(avail, 0)} of {C_MIN_PREFIX} bytes)"
    if problem == BAD_MAGIC:
        return f"unknown magic {h.magic}"
    if problem == SHORT_FIXED:
        return f"truncated header ({avail} of {h.fixed_size} bytes)"
    if problem == LENGTH_TOO_SMALL:
        return (f"length {h.length} too small for magic {h.magic} "
                f"(header needs {h.fixed_size} bytes)")
    if problem == NEGATIVE_STATS:
        return f"negative statistics length {h.statistics_length}"
    if problem == STATS_TOO_BIG:
        return (f"statistics length {h.statistics_length} exceeds the batch "
                f"({h.total_size} bytes)")
    return f"problem {<int>problem}"


cdef class BatchHeader:
    """Fields of one batch header, plus where it sits (``position``) and its sizes."""

    cdef readonly int64_t base_offset
    cdef readonly int32_t length
    cdef readonly int magic
    cdef readonly int64_t commit_timestamp
    cdef readonly int32_t leader_epoch
    cdef readonly uint32_t crc
    cdef readonly int16_t schema_id
    cdef readonly int attributes
    cdef readonly int32_t last_offset_delta
    cdef readonly int64_t writer_id
    cdef readonly int32_t batch_sequence
    cdef readonly int32_t record_count
    cdef readonly int32_t statistics_length
    cdef readonly Py_ssize_t header_size
    cdef readonly Py_ssize_t total_size
    cdef readonly Py_ssize_t position

    @property
    def append_only(self):
        return bool(self.attributes & 1)

    # Python ints here: a corrupt or extreme base offset must not wrap around int64.
    @property
    def last_offset(self):
        return <object>self.base_offset + self.last_offset_delta

    @property
    def next_offset(self):
        return <object>self.base_offset + self.last_offset_delta + 1

    def __repr__(self):
        return (f"BatchHeader(position={self.position}, base_offset={self.base_offset}, "
                f"magic={self.magic}, schema_id={self.schema_id}, "
                f"record_count={self.record_count}, total_size={self.total_size})")


cdef BatchHeader _header_object(RawHeader *h, Py_ssize_t position):
    cdef BatchHeader out = BatchHeader.__new__(BatchHeader)
    out.base_offset = h.base_offset
    out.length = h.length
    out.magic = h.magic
    out.commit_timestamp = h.commit_timestamp
    out.leader_epoch = h.leader_epoch
    out.crc = h.crc
    out.schema_id = h.schema_id
    out.attributes = h.attributes
    out.last_offset_delta = h.last_offset_delta
    out.writer_id = h.writer_id
    out.batch_sequence = h.batch_sequence
    out.record_count = h.record_count
    out.statistics_length = h.statistics_length
    out.header_size = h.header_size
    out.total_size = h.total_size
    out.position = position
    return out


cdef class ValidatedRecords:
    """Summary of a records blob that passed :func:`validate_records`.

    ``schema_id`` is the schema id of the first batch and ``mixed_schema_ids`` tells whether any
    later batch has another one (then use :func:`iter_batches` to see them all). With no batches:
    ``schema_id``, ``writer_id``, ``first_sequence`` and ``last_sequence`` are -1.
    ``offset_count`` is the number of offsets the blob consumes (an empty batch takes one).
    ``append_only`` is true when every batch has the append-only attribute.
    """

    cdef readonly Py_ssize_t size
    cdef readonly Py_ssize_t batch_count
    cdef readonly int64_t record_count_total
    cdef readonly int64_t offset_count
    cdef readonly int32_t max_record_count
    cdef readonly int schema_id
    cdef readonly bint mixed_schema_ids
    cdef readonly int64_t writer_id
    cdef readonly int32_t first_sequence
    cdef readonly int32_t last_sequence
    cdef readonly bint append_only

    def __repr__(self):
        return (f"ValidatedRecords(size={self.size}, batch_count={self.batch_count}, "
                f"record_count_total={self.record_count_total}, "
                f"offset_count={self.offset_count}, schema_id={self.schema_id}, "
                f"writer_id={self.writer_id})")


cdef inline int _get_view(object buf, Py_buffer *view, int flags) except -1:
    return PyObject_GetBuffer(buf, view, flags)


def build_batch(payload, *, int16_t schema_id, int32_t record_count, bint append_only=True,
                int64_t writer_id=-1, int32_t batch_sequence=-1, int magic=0,
                statistics=b"", int64_t base_offset=0, int64_t commit_timestamp=0):
    """One complete batch: header (+ statistics for magic 1) + ``payload``, CRC filled in.

    ``payload`` is the already-encoded records (ARROW: change-type vector + IPC message;
    INDEXED/COMPACTED: the records). Only magic 0 and 1 can be written.
    """
    cdef Py_ssize_t fixed
    cdef Py_buffer pview
    cdef Py_buffer sview
    cdef Py_ssize_t total
    cdef unsigned char *p
    cdef uint32_t crc
    cdef bytes out
    if magic == 0:
        fixed = C_V0
    elif magic == 1:
        fixed = C_V1
    else:
        raise ValueError(f"cannot write magic {magic} batches (only 0 and 1)")
    if record_count < 0:
        raise ValueError(f"record_count must be >= 0, got {record_count}")
    _get_view(payload, &pview, PyBUF_SIMPLE)
    try:
        _get_view(statistics, &sview, PyBUF_SIMPLE)
        try:
            if sview.len and magic == 0:
                raise ValueError("magic 0 batches cannot carry statistics")
            total = fixed + sview.len + pview.len
            if total - C_LOG_OVERHEAD > 0x7FFFFFFF:
                raise OverflowError(f"batch of {total} bytes is too large")
            out = PyBytes_FromStringAndSize(NULL, total)
            p = <unsigned char *>PyBytes_AS_STRING(out)
            ff_le_put64(p, base_offset)
            ff_le_put32(p + 8, <int32_t>(total - C_LOG_OVERHEAD))
            p[12] = <unsigned char>magic
            ff_le_put64(p + 13, commit_timestamp)
            ff_le_put16(p + 25, schema_id)
            p[27] = 1 if append_only else 0
            ff_le_put32(p + 28, record_count - 1 if record_count > 0 else 0)
            ff_le_put64(p + 32, writer_id)
            ff_le_put32(p + 40, batch_sequence)
            ff_le_put32(p + 44, record_count)
            if magic == 1:
                ff_le_put32(p + 48, <int32_t>sview.len)
            if total > NOGIL_THRESHOLD:
                with nogil:
                    crc = _fill_and_sum(p, fixed, &sview, &pview, total)
            else:
                crc = _fill_and_sum(p, fixed, &sview, &pview, total)
            ff_le_put32(p + 21, <int32_t>crc)
            return out
        finally:
            PyBuffer_Release(&sview)
    finally:
        PyBuffer_Release(&pview)


cdef inline uint32_t _fill_and_sum(unsigned char *p, Py_ssize_t fixed, Py_buffer *stats,
                                   Py_buffer *payload, Py_ssize_t total) noexcept nogil:
    if stats.len:
        memcpy(p + fixed, stats.buf, stats.len)
    if payload.len:
        memcpy(p + fixed + stats.len, payload.buf, payload.len)
    return crc32c_update(0, p + 25, <size_t>(total - 25))


cdef inline uint32_t _sum(const unsigned char *p, Py_ssize_t n) noexcept:
    cdef uint32_t crc
    if n > NOGIL_THRESHOLD:
        with nogil:
            crc = crc32c_update(0, p, <size_t>n)
        return crc
    return crc32c_update(0, p, <size_t>n)


def parse_header(buf, Py_ssize_t pos=0):
    """The header of the batch at ``pos``; the payload need not be present.

    Raises CorruptBatchError on a short buffer, unknown magic or inconsistent sizes.
    """
    cdef Py_buffer view
    cdef RawHeader h
    cdef Problem problem
    cdef Py_ssize_t avail
    if pos < 0:
        raise ValueError("pos must be >= 0")
    _get_view(buf, &view, PyBUF_SIMPLE)
    try:
        avail = view.len - pos
        problem = _read_header(<const unsigned char *>view.buf + pos, avail, &h)
        if problem != OK:
            raise CorruptBatchError(f"batch at byte {pos}: {_header_reason(problem, &h, avail)}",
                                    position=pos)
        return _header_object(&h, pos)
    finally:
        PyBuffer_Release(&view)


cdef uint32_t _whole_batch_crc(object buf, Py_ssize_t pos, uint32_t *stored) except? 0:
    cdef Py_buffer view
    cdef RawHeader h
    cdef Problem problem
    cdef Py_ssize_t avail
    cdef const unsigned char *p
    if pos < 0:
        raise ValueError("pos must be >= 0")
    _get_view(buf, &view, PyBUF_SIMPLE)
    try:
        avail = view.len - pos
        p = <const unsigned char *>view.buf + pos
        problem = _read_header(p, avail, &h)
        if problem != OK:
            raise CorruptBatchError(f"batch at byte {pos}: {_header_reason(problem, &h, avail)}",
                                    position=pos)
        if h.total_size > avail:
            raise CorruptBatchError(f"batch at byte {pos}: truncated batch "
                                    f"(size {h.total_size}, {avail} bytes left)", position=pos)
        stored[0] = h.crc
        return _sum(p + h.crc_offset, h.total_size - h.crc_offset)
    finally:
        PyBuffer_Release(&view)


def crc_of(buf, Py_ssize_t pos=0):
    """The CRC the (complete) batch at ``pos`` should store."""
    cdef uint32_t stored
    return _whole_batch_crc(buf, pos, &stored)


def verify_crc(buf, Py_ssize_t pos=0):
    """Whether the stored CRC of the batch at ``pos`` matches; raises if it is not even complete."""
    cdef uint32_t stored = 0
    cdef uint32_t computed = _whole_batch_crc(buf, pos, &stored)
    return computed == stored


cdef class _BatchIterator:
    # Holds the buffer export for the iteration's lifetime, like the pure generator's memoryview.
    cdef Py_buffer view
    cdef bint has_view
    cdef Py_ssize_t pos
    cdef Py_ssize_t end

    def __cinit__(self):
        self.has_view = False

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)
            self.has_view = False

    def __iter__(self):
        return self

    def __next__(self):
        cdef RawHeader h
        cdef Problem problem
        cdef Py_ssize_t pos = self.pos
        cdef Py_ssize_t avail = self.end - pos
        cdef const unsigned char *p
        if not self.has_view or avail < C_LOG_OVERHEAD:
            self._finish()
            raise StopIteration
        p = <const unsigned char *>self.view.buf + pos
        if <int64_t>ff_le_get32(p + 8) + C_LOG_OVERHEAD > avail:
            self._finish()
            raise StopIteration
        problem = _read_header(p, avail, &h)
        if problem != OK:
            self._finish()
            raise CorruptBatchError(f"batch at byte {pos}: {_header_reason(problem, &h, avail)}",
                                    position=pos)
        self.pos = pos + h.total_size
        return _header_object(&h, pos)

    cdef _finish(self):
        if self.has_view:
            PyBuffer_Release(&self.view)
            self.has_view = False


def iter_batches(buf, Py_ssize_t pos=0, end=None):
    """Headers of the batches in ``buf[pos:end]``, each with its absolute ``position``.

    Stops quietly at a truncated trailing batch (fewer than 12 bytes left, or a Length reaching
    past ``end``), since fetch responses are cut by byte count. Malformed complete batches raise
    CorruptBatchError. CRCs are not checked.
    """
    cdef _BatchIterator it
    if pos < 0:
        raise ValueError("pos must be >= 0")
    it = _BatchIterator.__new__(_BatchIterator)
    _get_view(buf, &it.view, PyBUF_SIMPLE)
    it.has_view = True
    it.pos = pos
    it.end = it.view.len
    if end is not None and end < it.end:
        it.end = end
    return it


cdef struct Walk:
    # running totals
    Py_ssize_t batch_count
    int64_t record_count_total
    int64_t offset_count
    int32_t max_record_count
    int schema_id
    bint mixed_schema_ids
    int64_t writer_id
    int32_t first_sequence
    int32_t last_sequence
    bint append_only
    # failure details
    Py_ssize_t error_pos
    Py_ssize_t remaining
    uint32_t computed_crc
    RawHeader h


cdef Problem _complete_header(const unsigned char *base, Py_ssize_t pos, Py_ssize_t n,
                              Walk *w) noexcept nogil:
    cdef Py_ssize_t remaining = n - pos
    cdef const unsigned char *p = base + pos
    w.error_pos = pos
    w.remaining = remaining
    if remaining < C_LOG_OVERHEAD:
        return BLOB_SHORT
    w.h.length = ff_le_get32(p + 8)
    if <int64_t>w.h.length + C_LOG_OVERHEAD > remaining:
        return BLOB_TRUNCATED
    return _read_header(p, remaining, &w.h)


cdef Problem _validate(const unsigned char *base, Py_ssize_t n, Walk *w) noexcept nogil:
    cdef Py_ssize_t pos = 0
    cdef Problem problem
    cdef int32_t rc
    cdef int32_t expected
    cdef const unsigned char *p
    while pos < n:
        problem = _complete_header(base, pos, n, w)
        if problem != OK:
            return problem
        p = base + pos
        w.computed_crc = crc32c_update(0, p + w.h.crc_offset,
                                          <size_t>(w.h.total_size - w.h.crc_offset))
        if w.computed_crc != w.h.crc:
            return CRC_MISMATCH
        rc = w.h.record_count
        if rc < 0:
            return NEGATIVE_COUNT
        expected = rc - 1 if rc > 0 else 0
        if w.h.last_offset_delta != expected:
            return BAD_DELTA
        if w.batch_count == 0:
            w.schema_id = w.h.schema_id
            w.writer_id = w.h.writer_id
            w.first_sequence = w.h.batch_sequence
        else:
            if w.h.writer_id != w.writer_id:
                return WRITER_MISMATCH
            if w.h.schema_id != w.schema_id:
                w.mixed_schema_ids = True
        w.last_sequence = w.h.batch_sequence
        if not (w.h.attributes & 1):
            w.append_only = False
        w.record_count_total += rc
        w.offset_count += <int64_t>w.h.last_offset_delta + 1
        if rc > w.max_record_count:
            w.max_record_count = rc
        w.batch_count += 1
        pos += w.h.total_size
    return OK


cdef str _blob_reason(Problem problem, Walk *w):
    if problem == BLOB_SHORT:
        return (f"{w.remaining} trailing bytes, too few for a batch "
                f"(need at least {C_LOG_OVERHEAD})")
    if problem == BLOB_TRUNCATED:
        return (f"truncated batch (size {<int64_t>w.h.length + C_LOG_OVERHEAD}, "
                f"{w.remaining} bytes left)")
    if problem == CRC_MISMATCH:
        return (f"CRC mismatch (stored 0x{w.h.crc:08x}, "
                f"computed 0x{w.computed_crc:08x})")
    if problem == NEGATIVE_COUNT:
        return f"negative record count {w.h.record_count}"
    if problem == BAD_DELTA:
        rc = w.h.record_count
        return (f"last offset delta {w.h.last_offset_delta} inconsistent with record count "
                f"{rc} (expected {rc - 1 if rc > 0 else 0})")
    if problem == WRITER_MISMATCH:
        return f"writer id {w.h.writer_id} differs from writer id {w.writer_id} of batch 0"
    return _header_reason(problem, &w.h, w.remaining)


cdef _raise_blob(Problem problem, Walk *w):
    raise CorruptBatchError(f"batch {w.batch_count} at byte {w.error_pos}: "
                            f"{_blob_reason(problem, w)}",
                            batch_index=w.batch_count, position=w.error_pos)


def validate_records(buf):
    """Checks every batch of a produced records blob and summarises it (see ValidatedRecords).

    Each batch must be complete (no truncation, no trailing bytes), of known magic, with
    consistent sizes, a correct CRC, a non-negative record count, LastOffsetDelta equal to
    ``record_count - 1`` (0 for an empty batch), and the same writer id as the first batch.
    Raises CorruptBatchError naming the batch index and byte position otherwise.
    """
    cdef Py_buffer view
    cdef Walk w
    cdef Problem problem
    cdef ValidatedRecords out
    w.batch_count = 0
    w.record_count_total = 0
    w.offset_count = 0
    w.max_record_count = 0
    w.schema_id = -1
    w.mixed_schema_ids = False
    w.writer_id = -1
    w.first_sequence = -1
    w.last_sequence = -1
    w.append_only = True
    _get_view(buf, &view, PyBUF_SIMPLE)
    try:
        if view.len > NOGIL_THRESHOLD:
            with nogil:
                problem = _validate(<const unsigned char *>view.buf, view.len, &w)
        else:
            problem = _validate(<const unsigned char *>view.buf, view.len, &w)
        if problem != OK:
            _raise_blob(problem, &w)
        out = ValidatedRecords.__new__(ValidatedRecords)
        out.size = view.len
    finally:
        PyBuffer_Release(&view)
    out.batch_count = w.batch_count
    out.record_count_total = w.record_count_total
    out.offset_count = w.offset_count
    out.max_record_count = w.max_record_count
    out.schema_id = w.schema_id
    out.mixed_schema_ids = w.mixed_schema_ids
    out.writer_id = w.writer_id
    out.first_sequence = w.first_sequence
    out.last_sequence = w.last_sequence
    out.append_only = w.append_only
    return out


def assign_offsets(buf, int64_t base_offset, int64_t commit_timestamp):
    """Leader-side rewrite, in place: BaseOffset (running) and CommitTimestamp of every batch.

    ``buf`` must be writable (bytearray, writable memoryview). Returns the next offset to assign.
    The CRC stays valid because neither field is covered by it. The blob is expected to have
    passed :func:`validate_records`; sizes are still checked so a bad blob cannot be overrun.
    """
    cdef Py_buffer view
    cdef Walk w
    cdef Problem problem = OK
    cdef Py_ssize_t pos = 0
    cdef int64_t offset = base_offset
    cdef int64_t step
    cdef unsigned char *base
    try:
        _get_view(buf, &view, PyBUF_WRITABLE)
    except BufferError:
        raise TypeError(
            "assign_offsets needs a writable buffer (bytearray or writable memoryview)") from None
    try:
        base = <unsigned char *>view.buf
        w.batch_count = 0
        while pos < view.len:
            problem = _complete_header(base, pos, view.len, &w)
            if problem != OK:
                break
            ff_le_put64(base + pos, offset)
            ff_le_put64(base + pos + 13, commit_timestamp)
            step = <int64_t>w.h.last_offset_delta + 1
            if (step > 0 and offset > INT64_MAX - step) or (step < 0 and offset < INT64_MIN - step):
                raise OverflowError("assigned offsets exceed int64")
            offset += step
            pos += w.h.total_size
            w.batch_count += 1
        if problem != OK:
            _raise_blob(problem, &w)
    finally:
        PyBuffer_Release(&view)
    return offset
