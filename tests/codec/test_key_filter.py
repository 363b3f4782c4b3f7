"""``codec.kvsplit.KeyFilter``: the Bloom filter of the keys a bucket's RocksDB may hold. The
compiled twin must set the same bits as the pure one, never rule out a key it was given, rule out
most others, and stop ruling anything out (and let go of its memory) past ``max_keys``."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluss_fast.codec import LOADED
from fluss_fast.codec.kv import kvsplit

TWINS = [kvsplit.KeyFilter_py] + ([kvsplit.KeyFilter] if LOADED.get("_kvsplit") else [])


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.binary(max_size=24), max_size=400), first=st.integers(1, 50),
       probes=st.lists(st.binary(max_size=24), max_size=100))
def test_twins_set_the_same_bits_and_agree(keys, first, probes):
    filters = [cls(first_keys=first) for cls in TWINS]
    for f in filters:
        for key in keys:
            f.add(key)
    assert len({tuple(f.slice_bits()) for f in filters}) == 1
    for key in keys + probes:
        answers = {f.might_contain(key) for f in filters}
        assert len(answers) == 1
        if key in keys:
            assert answers == {True}


@pytest.mark.parametrize("cls", TWINS)
def test_most_other_keys_are_ruled_out(cls):
    rnd = random.Random(5)
    f = cls()
    stored = {rnd.getrandbits(64).to_bytes(8, "big") for _ in range(200_000)}
    f.add_puts(dict.fromkeys(stored, b"v") | {b"deleted": None})
    assert f.keys == len(stored)  # the deleted key was not written
    assert all(f.might_contain(key) for key in stored)
    others = [rnd.getrandbits(64).to_bytes(8, "big") for _ in range(50_000)]
    false_pos = sum(f.might_contain(key) for key in others if key not in stored) / len(others)
    assert false_pos < 0.02
    assert f.nbytes <= 5 * len(stored)  # bits, not keys: ~16-32 bits a key as the slices double


@pytest.mark.parametrize("cls", TWINS)
def test_past_max_keys_it_rules_nothing_out(cls):
    f = cls(first_keys=4, max_keys=10)
    for i in range(10):
        f.add(b"k%d" % i)
    assert not f.given_up and not f.might_contain(b"never")  # (at these sizes: checked, not luck)
    f.add(b"k10")
    assert f.given_up and f.nbytes == 0
    assert f.might_contain(b"never") and f.might_contain(b"k3")
