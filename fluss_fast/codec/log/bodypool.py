"""Reusable memory for the decoded batches of a bounded read (``to_arrow`` / ``to_pandas``).

A scan's result is mostly fresh memory: every page of it is zeroed by the kernel as it faults
in, and then overwritten by the decompression. For a 1 M-row clicks scan that zeroing was about a
tenth of the client's CPU, and each of the ~1 MB bodies faulted in 4 KiB pages. Here bodies are
laid out one after another in *chunks*: private mappings starting on a 2 MiB boundary, marked for
transparent huge pages (a few faults per chunk) once the process has earned them (its first bounded
read ended: see ``rpc.frame_pool._HugePages`` for why the first read of a process does without).
Once nothing refers to any body of a chunk (the caller dropped the result), the next read writes
its bodies into the same, already resident, pages: nothing is zeroed or faulted again. This is the "allocator that keeps
freed memory" of the performance issue, with two bounds:

* idle chunks are given back ``IDLE_S`` seconds after the last bounded read ended (``end``),
  and the pool keeps hold of no more than ``MAX_IDLE_BYTES`` of chunks once the reads end (the
  chunks of a larger result are unmapped as soon as the result is dropped);
* a chunk that takes no more bodies (the next one did not fit, or the reads ended) gives the pages
  past its last body back at once, so a result that is kept holds no more than its own bytes
  (rounded to pages).

All chunks have one size, so any idle chunk serves the next read; a body larger than a chunk is
allocated as before (``codec.log.arrowlog._body_memory``).

Only bounded reads use it: a streaming consumer that keeps one batch in a hundred would pin whole
chunks, a bounded read keeps every batch anyway. Whether a chunk is still referred to is read from
its mapping's reference count: every body is a ``memoryview`` of the mapping, wrapped by pyarrow,
and each such view (and every Arrow buffer sliced from it) keeps the mapping referenced.
"""
from __future__ import annotations

import mmap
import os
import sys
import threading

import pyarrow as pa

from ..wire.memory import HUGE_PAGE, PRIVATE_MAP_FLAGS, advise_huge_pages, aligned_mapping, earn_huge_pages

__all__ = ["BodyPool", "BODY_POOL", "CHUNK_BYTES"]

#: bodies are packed into chunks of this size (a larger one is allocated as usual)
CHUNK_BYTES = 16 << 20
#: idle chunks kept for the next read at most
MAX_IDLE_BYTES = 256 << 20
#: idle chunks go this long after the last bounded read ended (jemalloc, for one, keeps freed
#: pages for 10 s)
IDLE_S = 5.0
#: bodies start on this boundary (Arrow's buffer alignment, see ``codec.log.ipcbody``)
ALIGN = 64
_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)
_PAGE = mmap.PAGESIZE


class _Chunk:
    __slots__ = ("m", "start", "end", "pos", "resident")

    def __init__(self, m: mmap.mmap, start: int, end: int) -> None:
        self.m = m
        self.start = start     # first usable byte: the first 2 MiB boundary of the mapping
        self.end = end         # one past the last usable byte
        self.pos = start       # next free byte while the chunk is being filled
        self.resident = start  # pages from here on are not resident (those below may be)


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


class BodyPool:
    """Chunks of reusable memory; ``take`` is thread-safe (codec threads call it)."""

    def __init__(self, chunk_bytes: int = CHUNK_BYTES, max_idle_bytes: int = MAX_IDLE_BYTES) -> None:
        self.chunk_bytes = chunk_bytes
        self.max_idle_bytes = max_idle_bytes
        self._lock = threading.Lock()
        self._chunks: list[_Chunk] = []   # every chunk handed out or idle, not the current one
        self._current: _Chunk | None = None
        self._reads = 0                   # bounded reads going on
        self._generation = 0              # bumped by every ``begin``: a stale trim does nothing
        self.created = 0
        self.reused = 0

    # -- bounded reads --------------------------------------------------------------------------
    def begin(self) -> None:
        with self._lock:
            self._reads += 1
            self._generation += 1

    def end(self, loop=None) -> None:
        """A bounded read finished. With no read left, the chunk being filled gives its unused
        tail back, and the idle chunks go ``IDLE_S`` from now (on ``loop``; at once without one)
        unless a read begins first."""
        with self._lock:
            self._reads = max(0, self._reads - 1)
            if self._reads:
                return
            earn_huge_pages()
            if self._current is not None:
                self._retire(self._current)
                self._current = None
            # keep track of no more chunks than may be kept idle: the others go back to the
            # kernel the moment the result using them is dropped, not at the idle trim
            keep = self.max_idle_bytes // self.chunk_bytes
            if len(self._chunks) > keep:
                self._chunks = self._chunks[len(self._chunks) - keep:] if keep else []
            generation = self._generation
        if loop is None:
            self.trim(generation)
            return
        try:
            loop.call_later(IDLE_S, self.trim, generation)
        except RuntimeError:
            self.trim(generation)   # the loop is closing: now rather than later

    def trim(self, generation: int | None = None) -> None:
        """Unmap the idle chunks and stop tracking the ones results still use (they go when the
        results do). Does nothing when a read began since ``generation``."""
        with self._lock:
            if self._reads or (generation is not None and generation != self._generation):
                return
            self._chunks = []

    # -- memory ---------------------------------------------------------------------------------
    def take(self, size: int) -> tuple[pa.Buffer, memoryview] | None:
        """``(arrow buffer, writable view)`` of ``size`` bytes, ``ALIGN``-aligned; None for a body
        larger than a chunk, or when no bounded read is going on (a late answer of one that
        ended: nothing would give its chunk back), which the caller allocates as usual."""
        need = _round_up(max(size, 1), ALIGN)
        if need > self.chunk_bytes:
            return None
        with self._lock:
            if not self._reads:
                return None
            chunk = self._current
            if chunk is None or chunk.pos + need > chunk.end:
                if chunk is not None:
                    self._retire(chunk)
                chunk = self._current = self._chunk()
            pos = chunk.pos
            chunk.pos = pos + need
            # touched pages become resident, a whole huge page at a time
            chunk.resident = max(chunk.resident, min(_round_up(pos + need - chunk.start, HUGE_PAGE)
                                                     + chunk.start, chunk.end))
            view = memoryview(chunk.m)[pos:pos + size]
        return pa.py_buffer(view), view

    def _chunk(self) -> _Chunk:
        """An idle chunk (its pages still resident from its last use), else a fresh one."""
        chunks = self._chunks
        best = -1
        idle = 0
        for i in range(len(chunks)):
            # references: the chunk's slot, and getrefcount's argument; a live body adds one
            if sys.getrefcount(chunks[i].m) > 2:
                continue
            idle += 1
            # the one with the most pages still resident: the fewest to fault in again
            if best < 0 or chunks[i].resident > chunks[best].resident:
                best = i
        if best >= 0:
            found = chunks.pop(best)
            if (idle - 1) * self.chunk_bytes > self.max_idle_bytes:
                self._chunks = [c for c in chunks if sys.getrefcount(c.m) > 2]
            self.reused += 1
            found.pos = found.start
            return found
        self.created += 1
        m, start = aligned_mapping(self.chunk_bytes)
        advise_huge_pages(m, start, self.chunk_bytes)
        return _Chunk(m, start, start + self.chunk_bytes)

    def _retire(self, chunk: _Chunk) -> None:
        """``chunk`` takes no more bodies: the pages past its last body go back now (a reused chunk
        had them resident, a fresh one its last huge page), so that a result held for long holds
        no more than its own bytes."""
        lo = _round_up(chunk.pos, _PAGE)
        if _MADV_DONTNEED is not None and chunk.resident > lo:
            try:
                chunk.m.madvise(_MADV_DONTNEED, lo, chunk.resident - lo)
                chunk.resident = lo
            except (OSError, ValueError):
                pass
        chunk.pos = chunk.end
        self._chunks.append(chunk)

    def stats(self) -> dict:
        with self._lock:
            busy = sum(1 for c in self._chunks if sys.getrefcount(c.m) > 2)
            return {"chunks": len(self._chunks) + (self._current is not None), "busy": busy,
                    "created": self.created, "reused": self.reused}


#: the process's pool (private anonymous mappings are Linux/macOS; elsewhere none)
BODY_POOL: BodyPool | None = BodyPool() if PRIVATE_MAP_FLAGS else None


def _forget_in_child() -> None:
    # a forked child starts with no reads going on and an unlocked lock (a codec thread of the
    # parent may have held it); chunks it inherited are copies nothing will reuse
    if BODY_POOL is not None:
        BODY_POOL.__init__(BODY_POOL.chunk_bytes, BODY_POOL.max_idle_bytes)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
