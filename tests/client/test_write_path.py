"""The write path's pieces without a server: hand-framed ProduceLog requests and batch headers
(byte-for-byte against protobuf and logbatch), and the accumulator's single-lock row path."""
from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluss_fast.client.write.accumulator import RecordAccumulator
from fluss_fast.client.write.assigners import make_no_key_assigner
from fluss_fast.client.write.batch import WriteResultHandle, log_batch_header
from fluss_fast.client.write.sender import encode_produce_log_request
from fluss_fast.codec.log import logbatch
from fluss_fast.codec.rows.columns import RowBatchBuilder
from fluss_fast.datatypes import SchemaInfo
from fluss_fast.errors import FlussError
from fluss_fast.rpc import fluss_api_pb2 as pb

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)


def pb_request(acks, table_id, timeout_ms, buckets) -> bytes:
    req = pb.ProduceLogRequest(acks=acks, table_id=table_id, timeout_ms=timeout_ms)
    for pid, bucket, chunks in buckets:
        r = req.buckets_req.add()
        if pid is not None:
            r.partition_id = pid
        r.bucket_id = bucket
        r.records = b"".join(bytes(memoryview(c)) for c in chunks)
    return req.SerializeToString()


def joined(chunks) -> bytes:
    return b"".join(bytes(memoryview(c)) for c in chunks)


@settings(max_examples=200, deadline=None)
@given(acks=st.sampled_from([-1, 0, 1]) | INT32, table_id=INT64, timeout_ms=INT32,
       buckets=st.lists(st.tuples(st.none() | INT64, INT32,
                                  st.lists(st.binary(max_size=300), max_size=3)), max_size=4))
def test_produce_request_equals_protobuf(acks, table_id, timeout_ms, buckets):
    assert joined(encode_produce_log_request(acks, table_id, timeout_ms, buckets)) == \
        pb_request(acks, table_id, timeout_ms, buckets)


def test_produce_request_large_payloads_are_not_copied():
    big = pa.py_buffer(bytes(range(256)) * 1024)  # 256 KiB, a pa.Buffer as the Arrow codec returns
    head = b"h" * 48
    buckets = [(None, 0, [head, big]), (7, 2, [head, b"small"]), (2 ** 40, 1, [head, big])]
    chunks = encode_produce_log_request(-1, 12345678901, 30000, buckets)
    assert joined(chunks) == pb_request(-1, 12345678901, 30000, buckets)
    # the big payloads travel as views of the caller's buffer, the small one is coalesced
    views = [c for c in chunks if isinstance(c, memoryview)]
    assert len(views) == 2 and all(len(v) == big.size and v.obj is big for v in views)
    parsed = pb.ProduceLogRequest.FromString(joined(chunks))
    assert [b.bucket_id for b in parsed.buckets_req] == [0, 2, 1]
    assert not parsed.buckets_req[0].HasField("partition_id")
    assert parsed.buckets_req[2].partition_id == 2 ** 40


@settings(max_examples=200, deadline=None)
@given(payload=st.binary(min_size=0, max_size=2000), schema_id=st.integers(0, (1 << 15) - 1),
       count=st.integers(1, (1 << 31) - 1), writer_id=INT64, seq=INT32, append_only=st.booleans())
def test_batch_header_matches_build_batch(payload, schema_id, count, writer_id, seq, append_only):
    head = log_batch_header(payload, schema_id=schema_id, record_count=count, writer_id=writer_id,
                            batch_sequence=seq, append_only=append_only)
    assert len(head) == logbatch.V0_HEADER_SIZE
    want = logbatch.build_batch(payload, schema_id=schema_id, record_count=count,
                                writer_id=writer_id, batch_sequence=seq, append_only=append_only)
    assert head + payload == want
    h = logbatch.parse_header(want)
    assert logbatch.verify_crc(head + payload) and h.record_count == count


def test_batch_header_rejects_empty_batch():
    with pytest.raises(ValueError):
        log_batch_header(b"x", schema_id=1, record_count=0)


# -- accumulator --------------------------------------------------------------------------------
SCHEMA = SchemaInfo.from_arrow(pa.schema([("id", pa.int64()), ("name", pa.string())]))


def make_acc(*, memory=64 << 20, batch_size=4096, assigner="sticky", wait_ms=1 << 63, wakes=None):
    return RecordAccumulator(
        table_name="db.t", memory_size=memory, wait_timeout_ms=wait_ms, batch_size=batch_size,
        dynamic=False, dynamic_min=1, linger_ms=100, assigner=make_no_key_assigner(assigner),
        new_builder=lambda: RowBatchBuilder(SCHEMA, "db.t"),
        wake=(lambda: wakes.append(1)) if wakes is not None else (lambda: None),
        runtime_thread=lambda: None, runtime=None)


def hot(acc):
    """The batch the plain-table slot feeds, if any."""
    return acc._hots.get(acc.slot)


def all_batches(acc):
    """Every batch not yet drained, with the hot batch's rows booked (as drain() does)."""
    with acc._lock:
        acc._cool_all()
    out = []
    for st_ in acc._states.values():
        out.extend(st_.queue)
        if st_.open is not None:
            out.append(st_.open)
    return out


def rows_of(batch):
    """The ids in ``batch``, finishing its row builder the way the sender's encode does."""
    if batch.builder is not None and len(batch.builder):
        batch.chunks.append(batch.builder.build())
        batch.builder = None
    return [r["id"] for c in batch.chunks for r in c.to_pylist()]


def test_plain_append_shares_one_handle_per_batch_and_keeps_order():
    acc = make_acc(batch_size=2000)
    handles = [acc.append_plain({"id": i, "name": f"n{i}"}, 4) for i in range(500)]
    assert all(isinstance(h, WriteResultHandle) for h in handles)
    batches = all_batches(acc)
    assert len(batches) > 3  # the batch size forced several batches
    assert len({id(h) for h in handles}) == len(batches)
    # every row once, each batch in append order, and the accounting matches the builders
    ids = sorted(i for b in batches for i in rows_of(b))
    assert ids == list(range(500))
    for b in batches:
        r = rows_of(b)
        assert r == sorted(r) and b.record_count == len(r)
    assert acc.used == sum(b.est_bytes for b in batches)
    sealed = [b for st_ in acc._states.values() for b in st_.queue]
    assert all(b.est_bytes >= b.target for b in sealed)


def test_plain_append_rejected_row_changes_nothing():
    acc = make_acc()
    acc.append_plain({"id": 1}, 1)
    used = acc.used
    with pytest.raises(FlussError, match="id"):
        acc.append_plain({"id": "not a number"}, 1)  # through the hot batch
    assert acc.used == used
    acc.append_plain((2, "b"), 1)
    (b,) = all_batches(acc)
    assert rows_of(b) == [1, 2] and b.record_count == 2


def test_rejected_first_row_leaves_no_batch():
    acc = make_acc()
    with pytest.raises(FlussError):
        acc.append_plain({"id": 1, "nope": 2}, 1)
    assert acc.used == 0 and not acc.has_pending() and hot(acc) is None


def test_drain_and_chunks_and_close_invalidate_the_hot_batch():
    acc = make_acc()
    acc.append_plain({"id": 1}, 1)
    first = hot(acc)
    assert first is not None
    by_node, _, _ = acc.drain(time.monotonic() + 1.0, lambda pid, b: 0, 5, 1 << 30)
    assert by_node == {0: [first]} and hot(acc) is None
    acc.append_plain({"id": 2}, 1)
    second = hot(acc)
    assert second is not first and rows_of(first) == [1]
    rb = pa.record_batch([pa.array([3], pa.int64()), pa.array(["c"])], names=["id", "name"])
    acc.append_chunk(rb, rb.nbytes, None, None, 1)
    assert hot(acc) is None
    acc.append_plain({"id": 4}, 1)
    assert rows_of(second) == [2, 3, 4]
    acc.set_closing()
    with pytest.raises(FlussError, match="closed"):
        acc.append_plain({"id": 5}, 1)


def test_round_robin_does_not_use_the_hot_batch():
    acc = make_acc(assigner="round_robin")
    for i in range(8):
        acc.append_plain({"id": i}, 4)
    assert hot(acc) is None
    assert sorted(len(rows_of(b)) for b in all_batches(acc)) == [2, 2, 2, 2]


def test_plain_append_waits_for_budget_then_fails_on_timeout():
    acc = make_acc(memory=2000, batch_size=1 << 20, wait_ms=300)
    n = 0
    t0 = time.monotonic()
    with pytest.raises(FlussError, match="buffer stayed full"):
        while n < 10_000:
            acc.append_plain({"id": n, "name": "x" * 20}, 1)
            n += 1
    assert time.monotonic() - t0 >= 0.25
    assert 0 < acc.used <= 2000 + 200 and n > 10


def test_plain_append_resumes_when_space_is_freed():
    acc = make_acc(memory=2000, batch_size=1 << 20)
    done = threading.Event()
    count = [0]

    def writer():
        for i in range(200):
            acc.append_plain({"id": i, "name": "y" * 20}, 1)
            count[0] += 1
        done.set()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    freed = 0
    deadline = time.monotonic() + 20
    while not done.is_set() and time.monotonic() < deadline:
        time.sleep(0.01)
        by_node, _, _ = acc.drain(time.monotonic() + 1.0, lambda pid, b: 0, 5, 1 << 30)
        for b in by_node.get(0, []):
            freed += b.record_count
            b.complete(0)
            acc.completed(b)
        assert acc.used <= 2000 + 200
    t.join(5)
    assert done.is_set() and count[0] == 200
    rest = sum(b.record_count for b in all_batches(acc))
    assert freed + rest == 200


def test_hot_rows_count_in_used_before_they_are_booked():
    acc = make_acc(batch_size=1 << 20)
    acc.append_plain({"id": 0, "name": "a"}, 1)
    before = acc.used
    for i in range(1, 50):
        acc.append_plain({"id": i, "name": "a"}, 1)
    assert hot(acc) is not None and acc.used > before
    seen = acc.used
    (b,) = all_batches(acc)  # books the hot rows
    assert acc.used == seen == b.est_bytes and b.record_count == 50


def test_full_hot_batch_is_sealed_by_the_next_row_and_the_bucket_moves():
    acc = make_acc(batch_size=600)
    first = acc.append_plain({"id": 0}, 8)
    bucket = hot(acc).bucket
    i = 1
    while acc.append_plain({"id": i}, 8) is first:
        i += 1
    batches = all_batches(acc)
    sealed = [b for b in batches if b.handle is first]
    (full,) = sealed
    assert full.est_bytes >= full.target and full.state.queue[0] is full
    assert hot(acc) is None or hot(acc).bucket != bucket
    assert sorted(x for b in batches for x in rows_of(b)) == list(range(i + 1))


@pytest.mark.parametrize("buckets", [2, 3, 5, 16])
def test_sticky_assigner_moves_to_the_bucket_with_fewest_full_batches(buckets):
    a = make_no_key_assigner("sticky")
    filled = [0] * buckets
    prev = None
    for _ in range(40 * buckets):
        b = a.bucket(None, buckets)
        assert b != prev  # a full batch always moves the writer on
        filled[b] += 1
        a.on_batch_full(None, b, buckets)
        assert max(filled) - min(filled) <= 1, filled
        prev = b


def test_sticky_assigner_stays_when_another_bucket_filled():
    # a concurrent writer's full batch of another bucket is counted but does not move this one
    a = make_no_key_assigner("sticky")
    b = a.bucket(7, 3)
    other = (b + 1) % 3
    a.on_batch_full(7, other, 3)
    assert a.bucket(7, 3) == b
    a.on_batch_full(7, b, 3)
    assert a.bucket(7, 3) == 3 - b - other  # the one bucket with no full batch yet
    assert a.bucket(None, 3) in range(3)  # partitions are independent


def race_appenders_and_drainer(acc, threads, per_thread, append, check, budget) -> list:
    """``threads`` threads call ``append(k, i)`` for i < per_thread while one thread drains node 0
    and completes what it drains; ``check(batch, rows)`` names what is wrong with a drained batch.
    Returns the rows drained; fails on any error or when ``acc.used`` ever exceeds ``budget``."""
    got, errors = [], []
    stop = threading.Event()

    def appender(k):
        try:
            for i in range(per_thread):
                append(k, i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def drainer():
        while not stop.is_set():
            by_node, _, _ = acc.drain(time.monotonic() + 1.0, lambda pid, b: 0, 5, 1 << 30)
            for b in by_node.get(0, []):
                rows = rows_of(b)
                problem = check(b, rows)
                if problem:
                    errors.append(AssertionError(f"{problem} in {b}"))
                got.extend(rows)
                b.complete(0)
                acc.completed(b)
            if acc.used > budget:
                errors.append(AssertionError(f"budget overrun: {acc.used}"))
            time.sleep(0.001)

    d = threading.Thread(target=drainer, daemon=True)
    d.start()
    ts = [threading.Thread(target=appender, args=(k,), daemon=True) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    stop.set()
    d.join(10)
    assert not errors
    return got


def test_concurrent_appenders_and_drainer_lose_and_duplicate_nothing():
    acc = make_acc(memory=64 * 1024, batch_size=4096)
    per_thread, threads = 3000, 3

    def append(k, i):
        acc.append_plain((k * per_thread + i, "z" * (i % 17)), 3)

    def check(b, rows):
        for k in range(threads):  # within a batch, each appender's rows are in order
            mine = [x for x in rows if k * per_thread <= x < (k + 1) * per_thread]
            if mine != sorted(mine):
                return "out of order"
        return None

    got = race_appenders_and_drainer(acc, threads, per_thread, append, check, 64 * 1024 + 1024)
    with acc._lock:
        acc._cool_all()
    for b in acc.take_unsent():
        got.extend(rows_of(b))
    assert sorted(got) == list(range(per_thread * threads))


# -- the per-row fast path (codec/appendslot.py and its compiled twin) ---------------------------
def slot_classes():
    from fluss_fast.client.write import appendslot

    return [appendslot.HotSlot, appendslot.HotSlot_py]


def test_appendslot_twin_is_selected():
    from fluss_fast.client.write import appendslot
    from fluss_fast.codec import LOADED, NO_EXTENSIONS

    if NO_EXTENSIONS:
        assert appendslot.HotSlot is appendslot.HotSlot_py and LOADED["_appendslot"] is False
    else:
        from fluss_fast.client.write import _appendslot

        assert appendslot.HotSlot is _appendslot.HotSlot and LOADED["_appendslot"] is True


@pytest.mark.parametrize("cls", slot_classes(), ids=["selected", "pure"])
def test_hot_slot_appends_only_within_cap_and_always_unlocks(cls):
    lock = threading.Lock()
    slot = cls(lock)
    assert slot.append((1, "a")) is None  # empty slot: nothing added
    builder = RowBatchBuilder(SCHEMA, "db.t")
    slot.builder, slot.handle, slot.size, slot.cap = builder, "H", 0, 10 ** 9
    assert slot.append((1, "a")) == "H" and slot.size == builder.estimated_size and len(builder) == 1
    with pytest.raises(FlussError, match="column 'id'"):
        slot.append(("x", "b"))
    assert not lock.locked() and len(builder) == 1
    slot.cap = slot.size  # full: the caller must go the general way
    assert slot.append((2, "c")) is None and len(builder) == 1
    assert not lock.locked()
    lock.acquire()  # the accumulator holds the lock: a slot append waits for it
    done = []
    slot.cap = 10 ** 9
    t = threading.Thread(target=lambda: done.append(slot.append((3, "d"))))
    t.start()
    time.sleep(0.05)
    assert not done
    lock.release()
    t.join(5)
    assert done == ["H"] and len(builder) == 2


# -- bucket-key tables: one slot per bucket ------------------------------------------------------
def test_bucket_slots_keep_rows_in_their_bucket_and_order():
    acc = make_acc(batch_size=1500)
    n_buckets = 4
    handles = {}
    for i in range(400):
        h = acc.append_slotted((i, f"r{i}"), None, i % n_buckets, n_buckets)
        handles.setdefault(i % n_buckets, set()).add(id(h))
    assert len(acc._hots) >= 2  # several buckets fill at the same time
    batches = all_batches(acc)
    for b in batches:
        r = rows_of(b)
        assert r == sorted(r) and all(x % n_buckets == b.bucket for x in r)
        assert b.record_count == len(r) and b.partition_id is None
    assert sorted(x for b in batches for x in rows_of(b)) == list(range(400))
    # a handle belongs to one batch of one bucket
    for bucket, ids in handles.items():
        assert len(ids) == sum(1 for b in batches if b.bucket == bucket)
    assert acc.used == sum(b.est_bytes for b in batches)


def test_bucket_slots_share_the_budget():
    limit = 6000
    acc = make_acc(memory=limit, batch_size=1 << 20, wait_ms=200)
    n = 0
    with pytest.raises(FlussError, match="buffer stayed full"):
        while n < 10_000:
            acc.append_slotted((n, "x" * 30), None, n % 3, 3)
            n += 1
            assert acc.used <= limit + 3 * 200  # at most one row over per hot bucket
    assert 0 < acc._leased + acc._used <= limit + 3 * 200


def test_bucket_slot_is_cooled_before_a_chunk_or_a_general_row_touches_the_batch():
    acc = make_acc()
    acc.append_slotted((1, "a"), None, 1, 2)
    acc.append_slotted((2, "b"), None, 1, 2)
    slot = acc._slots[(None, 1)]
    assert acc._hots.get(slot) is not None
    acc.append_row((3, "c"), None, 1, 2)  # same bucket, the general way
    assert acc._hots.get(slot) is None
    rb = pa.record_batch([pa.array([4], pa.int64()), pa.array(["d"])], names=["id", "name"])
    acc.append_slotted((5, "e"), None, 1, 2)
    acc.append_chunk(rb, rb.nbytes, None, 1, 2)
    acc.append_slotted((6, "f"), None, 1, 2)
    (b,) = [b for b in all_batches(acc) if b.bucket == 1]
    assert rows_of(b) == [1, 2, 3, 5, 4, 6] and b.record_count == 6


def test_concurrent_bucket_appenders_and_drainer():
    acc = make_acc(memory=48 * 1024, batch_size=2048)
    per_thread, threads, n_buckets = 2000, 3, 5

    def append(k, i):
        x = k * per_thread + i
        acc.append_slotted((x, "q" * (x % 13)), None, x % n_buckets, n_buckets)

    def check(b, rows):
        return "row in the wrong bucket" if any(x % n_buckets != b.bucket for x in rows) else None

    got = race_appenders_and_drainer(acc, threads, per_thread, append, check, 48 * 1024 + n_buckets * 200)
    for b in acc.take_unsent():
        got.extend(rows_of(b))
    assert sorted(got) == list(range(per_thread * threads))
    assert acc._leased == 0 and not acc._hots
