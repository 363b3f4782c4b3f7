"""Log record batch header: the known answers of docs/contributing/formats.md, round trips, validation and offset
assignment.

Every test runs against both twins (the pure functions ``*_py`` and the compiled module, when
built); hypothesis tests also check that the twins agree with each other.
"""
import importlib
import struct
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluss_fast.codec.errors import CorruptBatchError
from fluss_fast.codec.log import logbatch as lb
from fluss_fast.codec.wire.crc32c import crc32c_py

try:
    _ext = importlib.import_module("fluss_fast.codec.log._logbatch")
except ImportError:
    _ext = None

_NAMES = ["BatchHeader", "ValidatedRecords", "build_batch", "parse_header", "crc_of",
          "verify_crc", "iter_batches", "validate_records", "assign_offsets"]
PY = types.SimpleNamespace(**{n: getattr(lb, n + "_py") for n in _NAMES})
IMPLS = [pytest.param(PY, id="py")]
if _ext is not None:
    EXT = types.SimpleNamespace(**{n: getattr(_ext, n) for n in _NAMES})
    IMPLS.append(pytest.param(EXT, id="ext"))
else:
    EXT = None

HEADER_FIELDS = ["base_offset", "length", "magic", "commit_timestamp", "leader_epoch", "crc",
                 "schema_id", "attributes", "last_offset_delta", "writer_id", "batch_sequence",
                 "record_count", "statistics_length", "header_size", "total_size", "position",
                 "append_only", "last_offset", "next_offset"]
SUMMARY_FIELDS = ["size", "batch_count", "record_count_total", "offset_count",
                  "max_record_count", "schema_id", "mixed_schema_ids", "writer_id",
                  "first_sequence", "last_sequence", "append_only"]

# docs/contributing/formats.md §3.2: INDEXED record (+A) of the row (1, "ab", null, null, "xyz")
DATA_MD_PAYLOAD = bytes.fromhex(
    "17000000" "00" "0c" "02000000" "03000000" "00000000" "01000000" "6162" "78797a")
DATA_MD_BATCH = bytes.fromhex(
    "0000000000000000" "3f000000" "00" "0000000000000000"
    "a5c2e32f" "0100" "01" "00000000"
    "ffffffffffffffff" "ffffffff" "01000000") + DATA_MD_PAYLOAD


@pytest.fixture(params=IMPLS)
def impl(request):
    return request.param


def fields(obj, names):
    return {n: getattr(obj, n) for n in names}


def build_v2(payload, *, schema_id=3, record_count=2, attributes=1, writer_id=77,
             batch_sequence=5, statistics=b"", leader_epoch=9, base_offset=100,
             commit_timestamp=1234, last_offset_delta=None):
    """A magic-2 batch written by hand (nothing in fluss_fast writes V2)."""
    if last_offset_delta is None:
        last_offset_delta = record_count - 1 if record_count > 0 else 0
    total = 56 + len(statistics) + len(payload)
    tail = struct.pack("<hBiqiii", schema_id, attributes, last_offset_delta, writer_id,
                       batch_sequence, record_count, len(statistics)) + statistics + payload
    crc = crc32c_py(tail)
    return struct.pack("<qibqiI", base_offset, total - 12, 2, commit_timestamp,
                       leader_epoch, crc) + tail


def patch(batch, offset, fmt, value, *, fix_crc=True, crc_at=21, crc_from=25):
    """``batch`` with one field overwritten; the CRC recomputed unless told otherwise."""
    out = bytearray(batch)
    struct.pack_into(fmt, out, offset, value)
    if fix_crc:
        struct.pack_into("<I", out, crc_at, crc32c_py(bytes(out[crc_from:])))
    return bytes(out)


# --------------------------------------------------------------------------- constants


def test_constants():
    mods = [lb] + ([_ext] if _ext is not None else [])
    for m in mods:
        assert (m.LOG_OVERHEAD, m.V0_HEADER_SIZE, m.V1_HEADER_SIZE, m.V2_HEADER_SIZE) == (
            12, 48, 52, 56)
        assert (m.NO_WRITER_ID, m.NO_BATCH_SEQUENCE, m.APPEND_ONLY_FLAG) == (-1, -1, 1)


# --------------------------------------------------------------------------- formats.md batch


def test_build_data_md_batch(impl):
    built = impl.build_batch(DATA_MD_PAYLOAD, schema_id=1, record_count=1)
    assert type(built) is bytes
    assert built == DATA_MD_BATCH


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview,
                                  lambda b: memoryview(b"??" + b)[2:]])
def test_build_accepts_buffers(impl, wrap):
    assert impl.build_batch(wrap(DATA_MD_PAYLOAD), schema_id=1, record_count=1) == DATA_MD_BATCH


def test_parse_data_md_batch(impl):
    h = impl.parse_header(DATA_MD_BATCH)
    assert isinstance(h, impl.BatchHeader)
    assert fields(h, HEADER_FIELDS) == dict(
        base_offset=0, length=63, magic=0, commit_timestamp=0, leader_epoch=-1, crc=0x2FE3C2A5,
        schema_id=1, attributes=1, last_offset_delta=0, writer_id=-1, batch_sequence=-1,
        record_count=1, statistics_length=0, header_size=48, total_size=75, position=0,
        append_only=True, last_offset=0, next_offset=1)
    assert impl.crc_of(DATA_MD_BATCH) == 0x2FE3C2A5
    assert impl.verify_crc(DATA_MD_BATCH) is True
    assert "BatchHeader(" in repr(h)


def test_header_only_needs_header_bytes(impl):
    h = impl.parse_header(DATA_MD_BATCH[:48])
    assert h.total_size == 75
    with pytest.raises(CorruptBatchError, match="truncated batch"):
        impl.crc_of(DATA_MD_BATCH[:74])
    with pytest.raises(CorruptBatchError, match="truncated batch"):
        impl.verify_crc(DATA_MD_BATCH[:74])


def test_parse_at_position(impl):
    blob = b"\x00" * 7 + DATA_MD_BATCH
    h = impl.parse_header(blob, 7)
    assert h.position == 7 and h.crc == 0x2FE3C2A5
    assert impl.verify_crc(blob, 7)
    assert impl.crc_of(blob, 7) == 0x2FE3C2A5
    with pytest.raises(ValueError):
        impl.parse_header(blob, -1)


def test_verify_crc_false_on_flip(impl):
    bad = bytearray(DATA_MD_BATCH)
    bad[60] ^= 1
    assert impl.verify_crc(bad) is False
    assert impl.crc_of(bad) != 0x2FE3C2A5


# --------------------------------------------------------------------------- V1 / V2


def test_v1_with_statistics(impl):
    stats = b"\x01\x01\x00\x00\x00" + bytes(range(20))
    payload = b"arrow-ipc-bytes"
    b = impl.build_batch(payload, schema_id=7, record_count=3, magic=1, statistics=stats,
                         append_only=False, writer_id=5, batch_sequence=11, base_offset=40,
                         commit_timestamp=99)
    assert len(b) == 52 + len(stats) + len(payload)
    h = impl.parse_header(b)
    assert fields(h, HEADER_FIELDS) == dict(
        base_offset=40, length=len(b) - 12, magic=1, commit_timestamp=99, leader_epoch=-1,
        crc=crc32c_py(b[25:]), schema_id=7, attributes=0, last_offset_delta=2, writer_id=5,
        batch_sequence=11, record_count=3, statistics_length=len(stats),
        header_size=52 + len(stats), total_size=len(b), position=0, append_only=False,
        last_offset=42, next_offset=43)
    assert b[52:h.header_size] == stats
    assert b[h.header_size:] == payload
    assert impl.verify_crc(b)


def test_v1_without_statistics(impl):
    b = impl.build_batch(b"xyz", schema_id=1, record_count=1, magic=1)
    h = impl.parse_header(b)
    assert (h.magic, h.statistics_length, h.header_size, len(b)) == (1, 0, 52, 55)
    assert b[48:52] == b"\x00\x00\x00\x00"


def test_v2_read(impl):
    stats = b"STATS"
    b = build_v2(b"payload!", statistics=stats)
    h = impl.parse_header(b)
    assert fields(h, HEADER_FIELDS) == dict(
        base_offset=100, length=len(b) - 12, magic=2, commit_timestamp=1234, leader_epoch=9,
        crc=crc32c_py(b[29:]), schema_id=3, attributes=1, last_offset_delta=1, writer_id=77,
        batch_sequence=5, record_count=2, statistics_length=5, header_size=61,
        total_size=len(b), position=0, append_only=True, last_offset=101, next_offset=102)
    assert impl.verify_crc(b)
    assert impl.crc_of(b) == h.crc
    bad = bytearray(b)
    bad[22] ^= 0xFF  # LeaderEpoch is outside the V2 CRC ...
    assert impl.verify_crc(bad)
    bad[29] ^= 0xFF  # ... SchemaId is inside
    assert not impl.verify_crc(bad)


def test_v2_blob(impl):
    blob = build_v2(b"abc", record_count=3) + build_v2(b"", record_count=0, batch_sequence=6)
    summary = impl.validate_records(blob)
    assert (summary.batch_count, summary.record_count_total, summary.offset_count,
            summary.first_sequence, summary.last_sequence) == (2, 3, 4, 5, 6)
    buf = bytearray(blob)
    assert impl.assign_offsets(buf, 10, 5) == 14
    assert [(h.base_offset, h.commit_timestamp, h.leader_epoch)
            for h in impl.iter_batches(buf)] == [(10, 5, 9), (13, 5, 9)]
    impl.validate_records(buf)


def test_cannot_write_v2_or_stats_in_v0(impl):
    with pytest.raises(ValueError):
        impl.build_batch(b"", schema_id=1, record_count=0, magic=2)
    with pytest.raises(ValueError):
        impl.build_batch(b"", schema_id=1, record_count=0, magic=0, statistics=b"x")
    with pytest.raises(ValueError):
        impl.build_batch(b"", schema_id=1, record_count=-1)
    with pytest.raises(OverflowError):
        impl.build_batch(b"", schema_id=1 << 15, record_count=0)
    with pytest.raises(OverflowError):
        impl.build_batch(b"", schema_id=1, record_count=1 << 31)


def test_empty_batch(impl):
    b = impl.build_batch(b"", schema_id=1, record_count=0)
    h = impl.parse_header(b)
    assert (h.total_size, h.last_offset_delta, h.record_count, h.next_offset) == (48, 0, 0, 1)


# --------------------------------------------------------------------------- parse errors

V0 = DATA_MD_BATCH


@pytest.mark.parametrize("data, message", [
    (b"", "truncated header (0 of 13 bytes)"),
    (V0[:12], "truncated header (12 of 13 bytes)"),
    (V0[:47], "truncated header (47 of 48 bytes)"),
    (V0[:12] + b"\x05" + V0[13:], "unknown magic 5"),
    (V0[:12] + b"\xff" + V0[13:], "unknown magic -1"),
    (patch(V0, 8, "<i", 35), "length 35 too small for magic 0 (header needs 48 bytes)"),
    (patch(V0, 8, "<i", -12), "length -12 too small for magic 0"),
    (build_v2(b"xx")[:55], "truncated header (55 of 56 bytes)"),
    (patch(build_v2(b"xx"), 52, "<i", -1, fix_crc=False), "negative statistics length -1"),
    (patch(build_v2(b"xx"), 52, "<i", 3, fix_crc=False),
     "statistics length 3 exceeds the batch (58 bytes)"),
])
def test_parse_header_rejects(impl, data, message):
    with pytest.raises(CorruptBatchError) as info:
        impl.parse_header(data)
    assert message in str(info.value)
    assert str(info.value).startswith("batch at byte 0: ")
    assert info.value.error_code == 3
    assert info.value.position == 0


def test_v1_statistics_beyond_batch(impl):
    b = impl.build_batch(b"abcd", schema_id=1, record_count=1, magic=1, statistics=b"st")
    with pytest.raises(CorruptBatchError, match="statistics length 7 exceeds the batch"):
        impl.parse_header(patch(b, 48, "<i", 7))
    assert impl.parse_header(patch(b, 48, "<i", 6)).header_size == 58  # exactly fills it


def test_error_is_value_error():
    assert issubclass(CorruptBatchError, ValueError)
    err = CorruptBatchError("boom", batch_index=2, position=10)
    assert (err.error_code, err.batch_index, err.position) == (3, 2, 10)
    import pickle
    again = pickle.loads(pickle.dumps(err))
    assert (str(again), again.batch_index, again.position) == ("boom", 2, 10)


# --------------------------------------------------------------------------- iter_batches


def _blob(impl, counts, **kw):
    return b"".join(impl.build_batch(bytes([i]) * (3 * c), schema_id=1, record_count=c,
                                     batch_sequence=i, **kw) for i, c in enumerate(counts))


def test_iter_batches_positions(impl):
    blob = _blob(impl, [1, 0, 5, 2])
    hs = list(impl.iter_batches(blob))
    assert [h.record_count for h in hs] == [1, 0, 5, 2]
    positions = [0]
    for h in hs[:-1]:
        positions.append(positions[-1] + h.total_size)
    assert [h.position for h in hs] == positions
    assert sum(h.total_size for h in hs) == len(blob)


def test_iter_batches_stops_at_truncation(impl):
    blob = _blob(impl, [1, 4, 2])
    sizes = [h.total_size for h in impl.iter_batches(blob)]
    for cut in range(len(blob) + 1):
        got = [h.position for h in impl.iter_batches(blob[:cut])]
        complete, pos = [], 0
        for s in sizes:
            if pos + s <= cut:
                complete.append(pos)
            pos += s
        assert got == complete, cut


def test_iter_batches_pos_and_end(impl):
    blob = _blob(impl, [1, 1, 1])
    s = impl.parse_header(blob).total_size
    assert [h.position for h in impl.iter_batches(blob, s)] == [s, 2 * s]
    assert [h.position for h in impl.iter_batches(blob, 0, 2 * s)] == [0, s]
    assert [h.position for h in impl.iter_batches(blob, 0, 2 * s - 1)] == [0]
    assert list(impl.iter_batches(blob, 0, 0)) == []
    assert len(list(impl.iter_batches(blob, 0, 10 * s))) == 3


def test_iter_batches_raises_on_bad_complete_batch(impl):
    good = _blob(impl, [1])
    bad = good[:12] + b"\x09" + good[13:]
    it = impl.iter_batches(good + bad)
    assert next(it).position == 0
    with pytest.raises(CorruptBatchError, match=f"batch at byte {len(good)}: unknown magic 9"):
        next(it)


def test_iter_batches_negative_length_does_not_loop(impl):
    blob = patch(DATA_MD_BATCH, 8, "<i", -5, fix_crc=False) + DATA_MD_BATCH
    with pytest.raises(CorruptBatchError):
        list(impl.iter_batches(blob))


# --------------------------------------------------------------------------- validate_records


def test_validate_summary(impl):
    parts = [
        impl.build_batch(b"a" * 9, schema_id=4, record_count=3, writer_id=8, batch_sequence=0),
        impl.build_batch(b"", schema_id=4, record_count=0, writer_id=8, batch_sequence=1),
        impl.build_batch(b"b" * 70, schema_id=4, record_count=7, writer_id=8, batch_sequence=2,
                         magic=1, statistics=b"ss"),
    ]
    blob = b"".join(parts)
    s = impl.validate_records(blob)
    assert isinstance(s, impl.ValidatedRecords)
    assert fields(s, SUMMARY_FIELDS) == dict(
        size=len(blob), batch_count=3, record_count_total=10, offset_count=3 + 1 + 7,
        max_record_count=7, schema_id=4, mixed_schema_ids=False, writer_id=8,
        first_sequence=0, last_sequence=2, append_only=True)
    assert "ValidatedRecords(" in repr(s)


def test_validate_mixed_schemas_and_change_log(impl):
    blob = (impl.build_batch(b"x", schema_id=1, record_count=1)
            + impl.build_batch(b"y", schema_id=2, record_count=1, append_only=False))
    s = impl.validate_records(blob)
    assert (s.schema_id, s.mixed_schema_ids, s.append_only) == (1, True, False)


def test_validate_empty_blob(impl):
    s = impl.validate_records(b"")
    assert fields(s, SUMMARY_FIELDS) == dict(
        size=0, batch_count=0, record_count_total=0, offset_count=0, max_record_count=0,
        schema_id=-1, mixed_schema_ids=False, writer_id=-1, first_sequence=-1,
        last_sequence=-1, append_only=True)


def test_validate_large_blob_releases_gil_path(impl):
    blob = _blob(impl, [1000, 3000, 10])  # > 4 KiB takes the nogil branch in the extension
    s = impl.validate_records(bytearray(blob))
    assert (s.batch_count, s.record_count_total) == (3, 4010)
    bad = bytearray(blob)
    bad[-1] ^= 0x40
    with pytest.raises(CorruptBatchError, match="batch 2 at byte .*: CRC mismatch"):
        impl.validate_records(bad)


def _raises(impl, blob, pattern):
    with pytest.raises(CorruptBatchError, match=pattern) as info:
        impl.validate_records(blob)
    assert info.value.error_code == 3
    return info.value


def test_validate_rejects_flipped_bytes(impl):
    blob = _blob(impl, [2, 3])
    first = impl.parse_header(blob).total_size
    for i in list(range(25, first)) + list(range(first + 25, len(blob))):
        bad = bytearray(blob)
        bad[i] ^= 0x01
        err = _raises(impl, bytes(bad), "CRC mismatch")  # checked before any counted field
        expected_batch = 0 if i < first else 1
        assert err.batch_index == expected_batch
        assert err.position == (0 if i < first else first)


def test_validate_crc_message(impl):
    bad = bytearray(DATA_MD_BATCH * 3)
    bad[75 * 2 + 60] ^= 0x01
    computed = crc32c_py(bytes(bad[150 + 25:]))
    err = _raises(impl, bytes(bad), "CRC")
    assert str(err) == (f"batch 2 at byte 150: CRC mismatch (stored 0x2fe3c2a5, "
                        f"computed 0x{computed:08x})")
    assert (err.batch_index, err.position) == (2, 150)


def test_validate_ignores_fields_outside_crc(impl):
    bad = bytearray(DATA_MD_BATCH)
    bad[0:8] = b"\x01" * 8      # BaseOffset
    bad[13:21] = b"\x02" * 8    # CommitTimestamp
    assert impl.validate_records(bad).batch_count == 1


def test_validate_rejects_truncation(impl):
    blob = _blob(impl, [2, 3])
    first = impl.parse_header(blob).total_size
    for cut in range(1, len(blob)):
        if cut == first:
            continue
        err = _raises(impl, blob[:cut], "truncated|trailing bytes")
        assert err.batch_index == (0 if cut < first else 1)


def test_validate_rejects_trailing_garbage(impl):
    for extra in [b"\x00", b"\xff" * 11, b"\x00" * 12, DATA_MD_BATCH[:30]]:
        _raises(impl, DATA_MD_BATCH + extra, "batch 1 at byte 75: ")
    assert "trailing bytes" in str(_raises(impl, DATA_MD_BATCH + b"zz", "batch 1"))


def test_validate_rejects_bad_magic(impl):
    bad = DATA_MD_BATCH + DATA_MD_BATCH[:12] + b"\x03" + DATA_MD_BATCH[13:]
    err = _raises(impl, bad, r"^batch 1 at byte 75: unknown magic 3$")
    assert err.position == 75


def test_validate_rejects_inconsistent_delta(impl):
    b = impl.build_batch(b"r" * 30, schema_id=1, record_count=3)
    _raises(impl, patch(b, 28, "<i", 5),
            r"^batch 0 at byte 0: last offset delta 5 inconsistent with record count 3 "
            r"\(expected 2\)$")
    empty = impl.build_batch(b"", schema_id=1, record_count=0)
    _raises(impl, DATA_MD_BATCH + patch(empty, 28, "<i", -1), "batch 1 at byte 75: last offset")
    # the record count is wrong instead of the delta
    _raises(impl, patch(b, 44, "<i", 4), "inconsistent with record count 4")


def test_validate_rejects_negative_count(impl):
    b = impl.build_batch(b"", schema_id=1, record_count=0)
    _raises(impl, patch(b, 44, "<i", -2), "negative record count -2")


def test_validate_rejects_mixed_writers(impl):
    blob = (impl.build_batch(b"", schema_id=1, record_count=0, writer_id=3)
            + impl.build_batch(b"", schema_id=1, record_count=0, writer_id=3)
            + impl.build_batch(b"", schema_id=1, record_count=0, writer_id=4))
    _raises(impl, blob, r"^batch 2 at byte 96: writer id 4 differs from writer id 3 of batch 0$")


def test_validate_rejects_bad_sizes(impl):
    _raises(impl, patch(DATA_MD_BATCH, 8, "<i", 20, fix_crc=False), "length 20 too small")
    _raises(impl, patch(DATA_MD_BATCH, 8, "<i", 64, fix_crc=False), "truncated batch")
    shorter = bytearray(patch(DATA_MD_BATCH, 8, "<i", 62, fix_crc=False))
    struct.pack_into("<I", shorter, 21, crc32c_py(bytes(shorter[25:74])))  # valid 74-byte batch
    _raises(impl, bytes(shorter), r"^batch 1 at byte 74: 1 trailing bytes")
    v1 = impl.build_batch(b"abc", schema_id=1, record_count=1, magic=1)
    _raises(impl, patch(v1, 48, "<i", 4), "statistics length 4 exceeds the batch")


# --------------------------------------------------------------------------- assign_offsets


def test_assign_offsets(impl):
    blob = bytearray(_blob(impl, [3, 0, 1, 5]))
    nxt = impl.assign_offsets(blob, 1000, 1_700_000_000_123)
    assert nxt == 1000 + 3 + 1 + 1 + 5
    hs = list(impl.iter_batches(blob))
    assert [h.base_offset for h in hs] == [1000, 1003, 1004, 1005]
    assert [h.last_offset for h in hs] == [1002, 1003, 1004, 1009]
    assert {h.commit_timestamp for h in hs} == {1_700_000_000_123}
    assert all(impl.verify_crc(blob, h.position) for h in hs)
    impl.validate_records(blob)


def test_assign_offsets_on_memoryview_slice(impl):
    buf = bytearray(b"HEAD" + DATA_MD_BATCH * 2 + b"TAIL")
    assert impl.assign_offsets(memoryview(buf)[4:-4], -5, -1) == -3
    assert buf[:4] == b"HEAD" and buf[-4:] == b"TAIL"
    assert [h.base_offset for h in impl.iter_batches(buf, 4, len(buf) - 4)] == [-5, -4]


def test_assign_offsets_needs_writable(impl):
    with pytest.raises(TypeError):
        impl.assign_offsets(DATA_MD_BATCH, 0, 0)
    with pytest.raises(TypeError):
        impl.assign_offsets(memoryview(bytearray(DATA_MD_BATCH)).toreadonly(), 0, 0)


def test_assign_offsets_rejects_bad_blob(impl):
    buf = bytearray(DATA_MD_BATCH + DATA_MD_BATCH[:40])
    with pytest.raises(CorruptBatchError, match="batch 1 at byte 75: truncated batch"):
        impl.assign_offsets(buf, 0, 0)
    assert impl.assign_offsets(bytearray(), 7, 0) == 7


# --------------------------------------------------------------------------- properties

int16 = st.integers(-(1 << 15), (1 << 15) - 1)
int32 = st.integers(-(1 << 31), (1 << 31) - 1)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)

batch_args = st.fixed_dictionaries({
    "schema_id": int16,
    "record_count": st.integers(0, (1 << 31) - 1),
    "append_only": st.booleans(),
    "writer_id": int64,
    "batch_sequence": int32,
    "magic": st.sampled_from([0, 1]),
    "base_offset": int64,
    "commit_timestamp": int64,
})


@given(batch_args, st.binary(max_size=300), st.binary(max_size=40), st.integers(0, 7))
@settings(max_examples=200, deadline=None)
def test_build_parse_round_trip(args, payload, stats, skew):
    if args["magic"] == 0:
        stats = b""
    view = memoryview(b"\x00" * skew + payload)[skew:]  # unaligned payload
    built = {}
    for name, m in [("py", PY), ("ext", EXT)]:
        if m is None:
            continue
        b = m.build_batch(view, statistics=stats, **args)
        built[name] = b
        h = m.parse_header(b)
        rc = args["record_count"]
        assert (h.schema_id, h.record_count, h.append_only, h.writer_id, h.batch_sequence,
                h.magic, h.base_offset, h.commit_timestamp) == (
            args["schema_id"], rc, args["append_only"], args["writer_id"],
            args["batch_sequence"], args["magic"], args["base_offset"],
            args["commit_timestamp"])
        assert h.last_offset_delta == (rc - 1 if rc else 0)
        assert h.statistics_length == len(stats)
        assert b[h.header_size - len(stats):h.header_size] == stats
        assert b[h.header_size:] == payload
        assert h.total_size == len(b) and h.crc == crc32c_py(b[25:])
        assert m.verify_crc(b)
        s = m.validate_records(b + b)
        assert (s.batch_count, s.record_count_total, s.offset_count) == (
            2, 2 * rc, 2 * (h.last_offset_delta + 1))
    if EXT is not None:
        assert built["py"] == built["ext"]
        assert fields(PY.parse_header(built["py"]), HEADER_FIELDS) == fields(
            EXT.parse_header(built["py"]), HEADER_FIELDS)


def _outcome(fn, *args):
    try:
        result = fn(*args)
    except CorruptBatchError as e:
        return ("error", str(e), e.batch_index, e.position)
    return ("ok", result)


@pytest.mark.skipif(_ext is None, reason="extension not built")
@given(st.lists(st.tuples(st.integers(0, 20), st.binary(max_size=60), st.sampled_from([0, 1])),
                max_size=5),
       st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3),
       st.integers(0, 400), st.binary(max_size=20))
@settings(max_examples=300, deadline=None)
def test_twins_agree_on_corrupted_blobs(batches, flips, cut, garbage):
    blob = bytearray()
    for count, payload, magic in batches:
        blob += PY.build_batch(payload, schema_id=count % 3, record_count=count, magic=magic)
    for where, value in flips:
        if blob:
            blob[where % len(blob)] = value
    blob = bytes(blob[:cut] if cut < len(blob) else blob + garbage)

    def summary(b):
        return fields(PY.validate_records(b), SUMMARY_FIELDS)

    def summary_ext(b):
        return fields(EXT.validate_records(b), SUMMARY_FIELDS)

    assert _outcome(summary, blob) == _outcome(summary_ext, blob)

    def headers(m):
        return lambda b: [fields(h, HEADER_FIELDS) for h in m.iter_batches(b)]

    assert _outcome(headers(PY), blob) == _outcome(headers(EXT), blob)
    pos = cut % (len(blob) + 1)
    assert (_outcome(lambda b: fields(PY.parse_header(b, pos), HEADER_FIELDS), blob)
            == _outcome(lambda b: fields(EXT.parse_header(b, pos), HEADER_FIELDS), blob))
    assert _outcome(PY.crc_of, blob, pos) == _outcome(EXT.crc_of, blob, pos)

    py_buf, ext_buf = bytearray(blob), bytearray(blob)
    assert (_outcome(PY.assign_offsets, py_buf, 17, 4242)
            == _outcome(EXT.assign_offsets, ext_buf, 17, 4242))
    assert py_buf == ext_buf


@given(st.lists(st.integers(0, 50), min_size=1, max_size=8), int64.filter(lambda x: x < 1 << 62),
       st.integers(0, 1 << 50))
@settings(deadline=None)
def test_assign_offsets_keeps_crc_valid(counts, base, ts):
    for m in [PY, EXT]:
        if m is None:
            continue
        buf = bytearray(_blob(m, counts))
        assert m.assign_offsets(buf, base, ts) == base + sum(max(c, 1) for c in counts)
        s = m.validate_records(buf)  # would raise on a CRC mismatch
        assert s.offset_count == sum(max(c, 1) for c in counts)
        assert [h.base_offset for h in m.iter_batches(buf)][0] == base
