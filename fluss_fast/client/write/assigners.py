"""Bucket choice for rows without a bucket key, and by bucket key hash.

Tables without a bucket key spread rows themselves: ``sticky`` (the default) keeps sending to one
bucket until its batch is full and then moves to another one, so batches fill up quickly even with
many buckets; ``round_robin`` gives every write the next bucket. Bucket-key tables hash
the encoded key with Fluss's MurmurHash variant (docs/contributing/formats.md §6.3) via ``codec.murmur``.
"""
from __future__ import annotations

import random

from ...codec.wire import murmur


class StickyBucketAssigner:
    """Sticky, and even: a full batch moves the writer to the bucket it has filled the fewest
    batches for (ties broken at random). The Java client picks the next bucket at random, which
    over a bulk write of a few dozen batches left buckets 15-25 % apart; here they end at most one
    batch apart, so scans and Spark tasks over the table get equal shares."""

    __slots__ = ("_current", "_filled", "_rng")
    #: the bucket only changes in ``on_batch_full``, so the accumulator may cache its open batch
    sticky = True

    def __init__(self):
        self._current = {}  # partition id -> bucket
        self._filled = {}  # partition id -> full batches per bucket
        self._rng = random.Random()

    def bucket(self, partition_id: int | None, num_buckets: int) -> int:
        b = self._current.get(partition_id)
        if b is None:
            b = self._current[partition_id] = self._rng.randrange(num_buckets)
        return b

    def on_batch_full(self, partition_id: int | None, bucket: int, num_buckets: int) -> None:
        filled = self._filled.get(partition_id)
        if filled is None or len(filled) != num_buckets:
            filled = self._filled[partition_id] = [0] * num_buckets
        if 0 <= bucket < num_buckets:
            filled[bucket] += 1
        # Only move on when the full batch was the sticky one; a concurrent writer may already have.
        if self._current.get(partition_id) == bucket and num_buckets > 1:
            least = min(n for i, n in enumerate(filled) if i != bucket)
            choices = [i for i, n in enumerate(filled) if n == least and i != bucket]
            self._current[partition_id] = choices[self._rng.randrange(len(choices))]


class RoundRobinBucketAssigner:
    __slots__ = ("_counter",)
    sticky = False

    def __init__(self):
        self._counter = {}

    def bucket(self, partition_id: int | None, num_buckets: int) -> int:
        n = self._counter.get(partition_id)
        if n is None:
            n = random.randrange(num_buckets)
        self._counter[partition_id] = n + 1
        return n % num_buckets

    def on_batch_full(self, partition_id, bucket, num_buckets) -> None:
        pass


def make_no_key_assigner(name: str):
    if name == "round_robin":
        return RoundRobinBucketAssigner()
    return StickyBucketAssigner()


def bucket_of_key(key_bytes, num_buckets: int) -> int:
    return murmur.bucket_for_key(key_bytes, num_buckets)


def buckets_of_keys(keys, num_buckets: int):
    return murmur.buckets_for_keys(keys, num_buckets)
