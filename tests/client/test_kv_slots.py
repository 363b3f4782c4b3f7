"""The accumulator's hot slots when rows are placed by key: every bucket's batch fills at once,
and with little of the budget free the slots share it instead of taking turns, so nearly every
row still goes through a slot (codec/upsertrow.py's KvSlot, both twins)."""
from __future__ import annotations

import pytest

from fluss_fast.client.write import upsertrow
from fluss_fast.client.write.accumulator import RecordAccumulator
from fluss_fast.client.write.assigners import make_no_key_assigner
from fluss_fast.client.write.batch import KIND_KV


@pytest.mark.parametrize("slot_class", [upsertrow.KvSlot, upsertrow.KvSlot_py])
def test_buckets_share_a_nearly_full_budget(slot_class):
    limit = 30_000
    acc = RecordAccumulator(
        table_name="db.t", memory_size=limit, wait_timeout_ms=1000, batch_size=1 << 20,
        dynamic=False, dynamic_min=1, linger_ms=0, assigner=make_no_key_assigner("sticky"),
        new_builder=upsertrow.KvRecordBuilder, wake=lambda: None, runtime_thread=lambda: None,
        runtime=None, kind=KIND_KV, slot_class=slot_class)
    general = 0
    records = {b: [] for b in range(3)}
    for i in range(270):  # 27 kB of 30: the budget ends up nearly all used
        b = i % 3
        rec = upsertrow.kv_record(i.to_bytes(4, "big"), bytes(90))
        slot = acc.slot_for((None, b))
        assert type(slot) is slot_class
        if slot.append(rec) is None:
            general += 1
            acc.append_slotted(rec, None, b, 3)
        records[b].append(rec)
    assert general < 40, general  # taking turns, it was every row
    assert acc.used <= limit
    batches = acc.take_unsent()  # cools the hot batches: their counts are booked
    assert sorted(x.bucket for x in batches) == [0, 1, 2]
    for batch in batches:
        assert batch.record_count == 90
        assert batch.builder.build().data == b"".join(records[batch.bucket])
