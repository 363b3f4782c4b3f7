"""Decoding fetched responses on the codec worker threads, results applied in the order sent.

A FetchLog response is decoded as one job (``decode_response``) on the process's codec threads
(``client/workers.py``): pyarrow releases the GIL while it decompresses, so the runtime loop keeps
receiving and several responses decode at once. Jobs finish in any order; ``InOrder`` hands their
results back to the fetch loop in submission order, which keeps every bucket's results in offset
order.
"""
from __future__ import annotations

import functools
from typing import Callable, Dict

__all__ = ["InOrder", "decode_response"]


def decode_response(spec, mv, todo):
    """``(results, error)`` for the buckets ``todo`` (``(bucket, state, fetch offset, result)``)
    of one response: ``(chunks, next offset)`` per bucket decoded before the first failure, and
    that failure (None when all went well). Runs on a worker or on the loop."""
    out = []
    for tb, _st, off, r in todo:
        try:
            chunks, nxt = [], off
            if r.records is not None and r.records[1] > r.records[0]:
                chunks, nxt = spec.decode_records(tb, mv, r.records[0], r.records[1], off)
            if r.filtered_end_offset is not None and r.filtered_end_offset > nxt:
                nxt = r.filtered_end_offset
        except BaseException as exc:  # noqa: BLE001 - reported by the fetcher on the loop
            return out, exc
        out.append((chunks, nxt))
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
        self._done: Dict[int, tuple] = {}   # finished early, waiting for their turn
        self.pending = 0       # submitted, not yet applied

    def submit(self, loop, job: Callable, *args) -> None:
        seq = self._seq
        self._seq += 1
        self.pending += 1
        self._workers.submit_to_loop(loop, job, functools.partial(self._finished, seq, args))

    def _finished(self, seq: int, args, result, exc) -> None:
        done = self._done
        done[seq] = (args, result, exc)
        while self._next in done:
            args, result, exc = done.pop(self._next)
            self._next += 1
            self.pending -= 1
            self._apply(*args, result, exc)
