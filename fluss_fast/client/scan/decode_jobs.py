"""Decoding fetched responses on the codec worker threads, results applied in the order sent.

A FetchLog response is decoded on the process's codec threads (``client/workers.py``), so the
runtime loop keeps receiving and several responses decode at once. A large answer (a bounded read
asks for megabytes per bucket) is cut at batch boundaries into parts of about ``PART_BYTES``
(``split_response``), each its own job: one answer then keeps every core busy instead of one, and
the last answer of a scan does not leave the other cores idle at the end. Jobs finish in any order;
``InOrder`` puts the parts of a response back together and hands the responses to the fetch loop
in submission order, which keeps every bucket's results in offset order.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

from ...codec.log import logbatch

__all__ = ["InOrder", "decode_response", "split_response", "PART_BYTES"]

#: record bytes per decode job of a large answer; cut at batch boundaries, so a part holds at
#: least one whole batch (a thread hop costs tens of microseconds, a 256 KiB ZSTD batch about a
#: millisecond to decode)
PART_BYTES = 256 * 1024


def _entry_next(r, nxt: int) -> int:
    if r.filtered_end_offset is not None and r.filtered_end_offset > nxt:
        return r.filtered_end_offset
    return nxt


def decode_response(spec, mv, todo, memory=None):
    """``(results, error)`` for the buckets ``todo`` (``(bucket, state, fetch offset, result)``)
    of one response: ``(chunks, next offset)`` per bucket decoded before the first failure, and
    that failure (None when all went well). Runs on a worker or on the loop. ``memory``: where
    decompressed data goes (``ScanSpec.decode_records``)."""
    out = []
    for tb, _st, off, r in todo:
        try:
            chunks, nxt = [], off
            if r.records is not None and r.records[1] > r.records[0]:
                chunks, nxt = spec.decode_records(tb, mv, r.records[0], r.records[1], off, memory)
            nxt = _entry_next(r, nxt)
        except BaseException as exc:  # noqa: BLE001 - reported by the fetcher on the loop
            return out, exc
        out.append((chunks, nxt))
    return out, None


def _decode_part(spec, tb, mv, start: int, end: int, fetch_offset: int, memory=None):
    return spec.decode_records(tb, mv, start, end, fetch_offset, memory)


def split_response(spec, mv, todo, part_bytes: int = PART_BYTES, *, memory=None):
    """The decode jobs of one response as ``[(entry index, job or None)]`` in entry and offset
    order. A job returns ``(chunks, next offset)`` of its span; None stands for an entry without
    records. A bucket's span is cut only after a whole batch and before its last whole batch,
    so every part decodes at least one batch and a cut-off tail stays with the last part (which
    reports it exactly as one job over the whole span would)."""
    parts: list[tuple] = []
    for k, (tb, _st, off, r) in enumerate(todo):
        rec = r.records
        if rec is None or rec[1] <= rec[0]:
            parts.append((k, None))
            continue
        start, end = rec
        ends = []
        nexts = []
        for h in logbatch.iter_batches(mv, start, end):
            ends.append(h.position + h.total_size)
            nexts.append(h.next_offset)
        cut_from, fetch_at = start, off
        for i in range(len(ends) - 1):
            if ends[i] - cut_from >= part_bytes:
                parts.append((k, functools.partial(_decode_part, spec, tb, mv, cut_from, ends[i],
                                                   fetch_at, memory)))
                cut_from = ends[i]
                # the next part starts at the following batch; rows below the fetch offset are
                # still dropped should the server have answered from further back
                fetch_at = max(nexts[i], off)
        parts.append((k, functools.partial(_decode_part, spec, tb, mv, cut_from, end, fetch_at,
                                           memory)))
    return parts


def combine_parts(todo, parts, outcomes):
    """``(results, error)`` in ``decode_response``'s form from the parts' ``(result, exc)``."""
    out = []
    current = -1
    chunks: list = []
    nxt = 0
    for (k, _job), (result, exc) in zip(parts, outcomes, strict=True):
        if k != current:
            if current >= 0:
                out.append((chunks, _entry_next(todo[current][3], nxt)))
            current = k
            chunks = []
            nxt = todo[k][2]
        if exc is not None:
            return out, exc
        if result is not None:
            part_chunks, part_next = result
            chunks.extend(part_chunks)
            nxt = part_next
    if current >= 0:
        out.append((chunks, _entry_next(todo[current][3], nxt)))
    return out, None


class InOrder:
    """Jobs of one fetcher on the codec workers; ``apply(*args, result, exc)`` runs on the loop
    for each, in the order the jobs were submitted."""

    __slots__ = ("_workers", "_apply", "_seq", "_next", "_done", "pending")

    def __init__(self, workers, apply: Callable) -> None:
        self._workers = workers
        self._apply = apply
        self._seq = 0          # next job number to hand out
        self._next = 0         # job number whose result is applied next
        self._done: dict[int, tuple] = {}   # finished early, waiting for their turn
        self.pending = 0       # submitted, not yet applied

    def submit(self, loop, job: Callable, *args) -> None:
        seq = self._seq
        self._seq += 1
        self.pending += 1
        self._workers.submit_to_loop(loop, job, functools.partial(self._finished, seq, args))

    def submit_parts(self, loop, todo, parts, *args) -> None:
        """One response decoded as several jobs (``split_response``); applied once all are done,
        as ``apply(*args, (results, error), None)``."""
        seq = self._seq
        self._seq += 1
        self.pending += 1
        jobs = [job for _k, job in parts if job is not None]
        if not jobs:
            self._finished(seq, args, combine_parts(todo, parts, [(None, None)] * len(parts)), None)
            return
        self._workers.submit_group(loop, jobs, functools.partial(self._parts_done, seq, args, todo, parts))

    def _parts_done(self, seq: int, args, todo, parts, outcomes) -> None:
        # the outcomes of the jobs, back in the places of the parts (those without a job: none)
        it = iter(outcomes)
        every = [next(it) if job is not None else (None, None) for _k, job in parts]
        self._finished(seq, args, combine_parts(todo, parts, every), None)

    def _finished(self, seq: int, args, result, exc) -> None:
        done = self._done
        done[seq] = (args, result, exc)
        while self._next in done:
            args, result, exc = done.pop(self._next)
            self._next += 1
            self.pending -= 1
            self._apply(*args, result, exc)
