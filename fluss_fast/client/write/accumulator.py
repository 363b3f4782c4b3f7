"""The record accumulator: open batches per (partition, bucket), bounded by a memory budget.

Callers (any thread, including a user's event loop thread) append rows or Arrow slices under one
lock; the sender (runtime thread) drains ready batches under the same lock and does everything
slow (finishing row builders, Arrow IPC, compression, CRC) outside it. The memory budget
(``writer.buffer.memory-size``) counts the estimated bytes of every batch not yet completed; an
append that does not fit waits on the caller's own thread (never the runtime's) until the sender
frees space, or fails after ``writer.buffer.wait-timeout-ms``. Nothing is ever dropped.

Rows of tables without partitions take a shorter way: they go straight into a "hot" batch (the
sticky bucket's open batch, or for a bucket-key table the open batch of the row's bucket) through
a ``client.write.appendslot.HotSlot`` (compiled), which holds the lock only around one row-builder call;
the batch's byte and row counts are brought up to date lazily, under the lock, before anyone else
looks at them, and a lease on the budget bounds how much a slot may add meanwhile.

Batch sizing follows the Java client: the target is ``writer.batch-size``, or, with dynamic
sizing, a per-partition estimate that grows 10% when a batch filled more than 80% of it and
shrinks 5% when it filled less than half, within ``[writer.dynamic-batch-size-min, batch-size]``.
"""
from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

from ...errors import FlussError
from .appendslot import HotSlot
from .batch import KIND_LOG, WriteBatch, WriteResultHandle

_GROW_ABOVE = 0.8
_SHRINK_BELOW = 0.5
_GROW = 1.1
_SHRINK = 0.95


class BucketState:
    __slots__ = ("partition_id", "bucket", "open", "queue", "inflight", "backoff_until", "gate")

    def __init__(self, partition_id, bucket):
        self.partition_id = partition_id
        self.bucket = bucket
        self.open: WriteBatch | None = None
        self.queue = collections.deque()  # sealed batches, oldest (lowest sequence) first
        self.inflight = 0
        self.backoff_until = 0.0
        # True while retried batches wait: nothing else goes out for this bucket until the
        # in-flight requests have come back, so retries reach the server in sequence order.
        self.gate = False


class BatchSizeEstimator:
    def __init__(self, enabled: bool, max_size: int, min_size: int):
        self.enabled = enabled
        self.max = max(1, max_size)
        self.min = max(1, min(min_size, self.max))
        self._est = {}

    def target(self, partition_id) -> int:
        if not self.enabled:
            return self.max
        return self._est.get(partition_id, self.max)

    def observe(self, partition_id, size: int) -> None:
        if not self.enabled:
            return
        cur = self._est.get(partition_id, self.max)
        if size > cur * _GROW_ABOVE:
            nxt = int(cur * _GROW)
        elif size < cur * _SHRINK_BELOW:
            nxt = int(cur * _SHRINK)
        else:
            return
        self._est[partition_id] = min(self.max, max(self.min, nxt))


class RecordAccumulator:
    def __init__(self, *, table_name: str, memory_size: int, wait_timeout_ms: int, batch_size: int,
                 dynamic: bool, dynamic_min: int, linger_ms: int, assigner, new_builder: Callable,
                 wake: Callable[[], None], runtime_thread: Callable[[], int | None],
                 runtime=None, kind=KIND_LOG, slot_class=None):
        self.table_name = table_name
        self.kind = kind
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)
        self.limit = memory_size
        # u64::MAX means "wait forever" (pyfluss's default)
        self._wait_timeout = None if wait_timeout_ms >= (1 << 62) else wait_timeout_ms / 1000.0
        self._used = 0  # booked bytes; the hot batch's rows since it turned hot come on top
        self._waiters = 0
        self.estimator = BatchSizeEstimator(dynamic, batch_size, dynamic_min)
        self.linger = max(0, linger_ms) / 1000.0
        self.assigner = assigner
        self._new_builder = new_builder
        self._wake = wake
        self._runtime_thread = runtime_thread
        self._states = {}
        self._active = {}  # states with an open or queued batch
        self._incomplete = {}  # batch -> None, insertion ordered
        self.flushing = 0
        self.closing = False
        self.row_bytes = 64  # guess of one row's Arrow size, reserved before the row is validated
        self._runtime = runtime
        self._sticky = getattr(assigner, "sticky", False)
        # "Hot" batches take rows through a HotSlot (client/write/appendslot.py, compiled) that holds the
        # lock only around one row-builder call and books nothing else. There is one slot per
        # (partition id, bucket), where bucket None stands for "the bucket the assigner picks"
        # (then the slot feeds the sticky bucket's open batch); ``slot`` is (None, None), the one
        # of tables without partitions or bucket key. A hot batch's byte and row counts are
        # brought up to date in ``_cool`` (lock held) before anything reads them or the batch
        # changes hands. Each hot batch holds a lease on the memory budget: its slot takes rows
        # while the builder has grown less than the lease since the batch turned hot, so the
        # budget and the batch target are kept without per-row bookkeeping.
        # KV writers use client.write.upsertrow.KvSlot, the slot their compiled per-row path writes into
        self._slot_class = slot_class or HotSlot
        self.slot = self._slot_class(self._lock)
        self._slots = {(None, None): self.slot}
        self._hots = {}  # slot -> its hot batch
        self._leased = 0  # budget leased to hot batches, beyond what ``_used`` has booked
        # sealed batches in seal order, for a sender that encodes ahead of the drain
        # (client/write/encode_ahead.py); None while no sender asked for them
        self.sealed: collections.deque | None = None

    @property
    def used(self) -> int:
        """Bytes held by batches not yet completed (estimated, as booked against the budget)."""
        with self._lock:
            return self._used + sum(s.size - b.builder_bytes for s, b in self._hots.items())

    def slot_for(self, key) -> HotSlot:
        """The slot of ``(partition_id, bucket)`` (bucket None: the assigner's choice)."""
        return self._slots.get(key) or self._new_slot(key)

    def _new_slot(self, key) -> HotSlot:
        with self._lock:
            s = self._slots.get(key)
            if s is None:
                if len(self._slots) >= 4096:  # many partitions come and go: forget idle slots
                    for k, old in list(self._slots.items()):
                        if old is not self.slot and old not in self._hots:
                            del self._slots[k]
                s = self._slots[key] = self._slot_class(self._lock)
            return s

    # -- caller side --------------------------------------------------------------------------
    def _state(self, partition_id, bucket) -> BucketState:
        key = (partition_id, bucket)
        st = self._states.get(key)
        if st is None:
            st = self._states[key] = BucketState(partition_id, bucket)
        return st

    def _cool(self, b: WriteBatch) -> None:
        """Book the rows ``b`` took while hot and take it out of its slot (lock held)."""
        slot = b.hot
        if slot is None:
            return
        builder = slot.builder
        slot.builder = slot.handle = None
        slot.cap = 0
        b.hot = None
        del self._hots[slot]
        self._leased -= b.lease
        size = slot.size
        delta = size - b.builder_bytes
        b.builder_bytes = size
        b.est_bytes += delta
        self._used += delta
        b.record_count += len(builder) - b.hot_rows

    def _cool_all(self) -> None:
        if self._hots:
            for b in list(self._hots.values()):
                self._cool(b)

    def _heat(self, slot: HotSlot, b: WriteBatch, share: int, parts: int = 1) -> None:
        """Let ``slot`` feed ``b`` (open, with a row builder) for up to ``share`` budget bytes,
        and no more than its ``parts``-th of what is free."""
        old = self._hots.get(slot)
        if old is not None:
            self._cool(old)
        self._cool(b)  # one slot per batch: two would both book the same rows
        # the general path lets a row in while used + row_bytes <= limit, and seals a batch once
        # est_bytes reaches its target; the lease keeps both, in builder-size units
        lease = self.limit - self._used - self._leased - self.row_bytes + 1
        lease = min(lease, b.target - b.est_bytes, share)
        if parts > 1:
            lease = min(lease, (self.limit - self._used - self._leased) // parts)
        if lease <= 0:
            return
        builder = b.builder
        b.hot = slot
        b.hot_rows = len(builder)
        b.lease = lease
        self._hots[slot] = b
        self._leased += lease
        slot.size = b.builder_bytes
        slot.cap = b.builder_bytes + lease
        slot.handle = b.handle
        slot.builder = builder

    def _reserve(self, nbytes: int) -> None:
        """Wait (lock held, released while waiting) until ``nbytes`` fit in the budget."""
        self._cool_all()
        if self._used + nbytes <= self.limit or self._used == 0:
            self._used += nbytes
            return
        if threading.get_ident() == self._runtime_thread():
            raise FlussError(f"table '{self.table_name}': the write buffer is full "
                             f"({self._used} of {self.limit} bytes) and a write was made on the "
                             f"client's own runtime thread, which cannot wait for it to drain")
        deadline = None if self._wait_timeout is None else time.monotonic() + self._wait_timeout
        self._waiters += 1
        self._wake()  # full buffer: let the sender ship open batches without waiting for linger
        try:
            while True:
                # another thread may have made a batch hot while the lock was released
                self._cool_all()
                if self._used + nbytes <= self.limit or self._used <= 0:
                    break
                if self.closing:
                    raise FlussError(f"table '{self.table_name}': the writer was closed")
                if deadline is None:
                    self._space.wait(1.0)
                else:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise FlussError(
                            f"table '{self.table_name}': the write buffer stayed full for "
                            f"{int(self._wait_timeout * 1000)} ms (writer.buffer.wait-timeout-ms): "
                            f"{self._used} of {self.limit} bytes (writer.buffer.memory-size) are "
                            f"held by unacknowledged batches; could not add {nbytes} bytes")
                    self._space.wait(left)
        finally:
            self._waiters -= 1
        self._used += nbytes

    def _open_batch(self, st: BucketState) -> WriteBatch:
        b = WriteBatch(self.kind, st, st.partition_id, st.bucket)
        b.target = self.estimator.target(st.partition_id)
        # one handle per batch, shared by all its rows: they share the outcome anyway
        b.handle = WriteResultHandle(b.future, self._runtime)
        st.open = b
        self._incomplete[b] = None
        self._active[(st.partition_id, st.bucket)] = st
        self._wake()
        return b

    def _seal(self, st: BucketState, full: bool, num_buckets: int) -> None:
        b = st.open
        self._cool(b)
        st.open = None
        st.queue.append(b)
        if self.sealed is not None:
            self.sealed.append(b)
        self._observe(b)
        if full:
            self.assigner.on_batch_full(st.partition_id, st.bucket, num_buckets)
            self._wake()

    def _retry_slot(self, slot: HotSlot, row):
        """``slot.append`` under the lock (held): another thread may have refilled the slot
        after the caller's attempt came back empty. None when it still has no room."""
        if slot.builder is not None and slot.size < slot.cap:
            slot.size = slot.builder.append(row)
            return slot.handle
        return None

    def append_plain(self, row, num_buckets: int):
        """Add one row of a table without partitions or bucket key; returns its batch's handle.

        The writer tries ``slot.append`` itself first; this is also the way when it has no room.
        """
        return self.append_slotted(row, None, None, num_buckets)

    def append_slotted(self, row, partition_id, bucket: int | None, num_buckets: int):
        """Add one row to ``partition_id`` and ``bucket`` (None: the assigner's choice) through
        their slot; returns the handle of the batch it went into.

        The common case is ``slot.append``; everything else goes the general way and then
        points the slot at the batch the row went to.
        """
        key = (partition_id, bucket)
        slot = self._slots.get(key) or self._new_slot(key)
        h = slot.append(row)
        if h is not None:
            return h
        with self._lock:
            h = self._retry_slot(slot, row)
            if h is not None:
                return h
            b = self._append_locked(row, partition_id, bucket, num_buckets)
            if (bucket is not None or self._sticky) and b.state.open is b and b.builder is not None:
                # several batches may be filling at once: none may lease more than its share
                n = len(self._hots) + (slot not in self._hots)
                # Rows placed by bucket (keys) fill every bucket's batch at once: with little
                # free, one slot leasing all of it would make the next row of any other bucket
                # cool them all, and every bucket take turns on this path row by row
                parts = max(n, len(self._active)) if bucket is not None else 1
                self._heat(slot, b, self.limit if n <= 1 else self.limit // (n + 1), parts)
            return b.handle

    def append_row(self, row, partition_id, bucket: int | None, num_buckets: int):
        """Add one row; returns the handle of the batch it went into."""
        with self._lock:
            return self._append_locked(row, partition_id, bucket, num_buckets).handle

    def _append_locked(self, row, partition_id, bucket: int | None, num_buckets: int) -> WriteBatch:
        if self.closing:
            raise FlussError(f"table '{self.table_name}': the writer was closed")
        est = self.row_bytes
        if self._used + self._leased + est > self.limit and (self._used or self._leased):
            self._reserve(est)  # books est
        else:
            self._used += est
        b = None
        try:
            chosen = bucket is None
            if chosen:
                bucket = self.assigner.bucket(partition_id, num_buckets)
            st = self._states.get((partition_id, bucket)) or self._state(partition_id, bucket)
            b = st.open
            if b is not None:
                self._cool(b)  # its builder is about to change outside its slot
                if b.est_bytes >= b.target:
                    # filled through its slot, which leaves sealing to the next row
                    self._seal(st, True, num_buckets)
                    if chosen:  # the assigner has moved on from the full bucket
                        bucket = self.assigner.bucket(partition_id, num_buckets)
                        st = self._states.get((partition_id, bucket)) or self._state(partition_id, bucket)
                    b = st.open
                    if b is not None:
                        self._cool(b)
            if b is None:
                b = self._open_batch(st)
            builder = b.builder
            if builder is None:
                builder = b.builder = self._new_builder()
            size = builder.append(row)
        except BaseException:
            self._used -= est
            if b is not None and not b.record_count and st.open is b:
                # a rejected first row must not leave an empty batch for flush() to wait on
                st.open = None
                self._incomplete.pop(b, None)
                b.complete(-1)
            raise
        actual = size - b.builder_bytes
        b.builder_bytes = size
        # the reservation was a guess; book what the row really takes
        self._used += actual - est
        b.record_count += 1
        b.est_bytes += actual
        if b.est_bytes >= b.target:
            self._seal(st, True, num_buckets)
        return b

    def append_chunk(self, rb, nbytes: int, partition_id, bucket: int | None, num_buckets: int,
                     alone: bool = False):
        """Add an Arrow record batch (already conformed to the table schema and sized to fit).
        ``alone``: the chunk goes out as a batch of its own (a table collecting batch statistics:
        each Arrow write keeps its own min / max, as pyfluss sends it)."""
        with self._lock:
            if self.closing:
                raise FlussError(f"table '{self.table_name}': the writer was closed")
            self._reserve(nbytes)  # also cools every hot batch: the chunk may go behind its rows
            if bucket is None:
                bucket = self.assigner.bucket(partition_id, num_buckets)
            st = self._states.get((partition_id, bucket)) or self._state(partition_id, bucket)
            b = st.open
            if b is not None and b.record_count and (alone or b.est_bytes + nbytes > b.target):
                self._seal(st, True, num_buckets)
                b = None
            if b is None:
                b = self._open_batch(st)
            if b.builder is not None and len(b.builder):
                # keep append order: rows appended so far come before this chunk
                b.chunks.append(b.builder.build())
                b.builder = None
                b.builder_bytes = 0
            b.chunks.append(rb)
            b.record_count += rb.num_rows
            b.est_bytes += nbytes
            if alone or b.est_bytes >= b.target:
                self._seal(st, True, num_buckets)
            return b.future

    def target_size(self, partition_id) -> int:
        return self.estimator.target(partition_id)

    # -- sender side (runtime thread) -----------------------------------------------------------
    def drain(self, now: float, leader_of: Callable, max_inflight: int, request_max: int):
        """Take the batches that may go out now.

        Returns ``(by_node, next_wake, no_leader)``: ``{node_id: [batch, ...]}`` with at most one
        batch per bucket and no more than ``request_max`` estimated bytes per node (a single
        larger batch still goes alone), when to look again (None = only when woken), and the
        partition ids (None for the table) whose leaders are unknown.
        """
        by_node = {}
        node_bytes = {}
        next_wake = None
        no_leader = set()
        with self._lock:
            force = self.flushing > 0 or self.closing or self._waiters > 0
            for key, st in list(self._active.items()):
                if st.inflight >= max_inflight or (st.gate and st.inflight > 0):
                    continue
                if st.backoff_until > now:
                    next_wake = st.backoff_until if next_wake is None else min(next_wake, st.backoff_until)
                    continue
                if st.queue:
                    b = st.queue[0]
                elif st.open is not None:
                    b = st.open
                    if not b.record_count:
                        continue
                    due = b.created + self.linger
                    if not force and now < due:
                        next_wake = due if next_wake is None else min(next_wake, due)
                        continue
                    self._cool(b)  # about to be sized and maybe taken: book its rows
                else:
                    del self._active[key]
                    continue
                node = leader_of(b.partition_id, b.bucket)
                if node is None:
                    no_leader.add(b.partition_id)
                    continue
                size = b.est_bytes
                used = node_bytes.get(node, 0)
                if used and used + size > request_max:
                    next_wake = now
                    continue
                if b is st.open:
                    st.open = None
                    self._observe(b)
                else:
                    st.queue.popleft()
                st.inflight += 1
                st.gate = any(q.requeued for q in st.queue)
                lst = by_node.get(node)
                if lst is None:
                    by_node[node] = [b]
                else:
                    lst.append(b)
                node_bytes[node] = used + size
                if ((st.queue or (st.open is not None and st.open.record_count and force))
                        and st.inflight < max_inflight and not st.gate):
                    next_wake = now
                if not st.queue and st.open is None:
                    del self._active[key]
        return by_node, next_wake, no_leader

    def requeue(self, batch: WriteBatch, backoff_until: float) -> None:
        """Put a batch that failed retriably back at the head of its bucket, in sequence order."""
        st = batch.state
        with self._lock:
            st.inflight -= 1
            batch.requeued = True
            q = st.queue
            i = 0
            if batch.sequence >= 0:
                while i < len(q) and q[i].requeued and 0 <= q[i].sequence < batch.sequence:
                    i += 1
            q.insert(i, batch)
            st.gate = True
            st.backoff_until = max(st.backoff_until, backoff_until)
            self._active[(st.partition_id, st.bucket)] = st

    def throttle(self, batch: WriteBatch, until: float) -> None:
        """Hold the batch's bucket back until ``until`` (server backpressure)."""
        st = batch.state
        with self._lock:
            st.backoff_until = max(st.backoff_until, until)

    def completed(self, batch: WriteBatch, sent: bool = True) -> None:
        """Free the budget of a finished batch (acknowledged or failed)."""
        st = batch.state
        with self._lock:
            if sent:
                st.inflight -= 1
            self._incomplete.pop(batch, None)
            self._used -= batch.est_bytes
            if self._used < 0:
                self._used = 0
            self._space.notify_all()

    def _observe(self, b: WriteBatch) -> None:
        self.estimator.observe(b.partition_id, b.est_bytes)
        if b.builder_bytes and b.record_count:
            self.row_bytes = max(8, b.builder_bytes // b.record_count)

    def incomplete(self) -> list:
        with self._lock:
            return list(self._incomplete)

    def has_pending(self) -> bool:
        with self._lock:
            return bool(self._incomplete)

    def take_unsent(self) -> list:
        """Remove and return every batch that has not gone out (for failing them on close)."""
        out = []
        with self._lock:
            self._cool_all()
            for st in self._active.values():
                out.extend(st.queue)
                st.queue.clear()
                if st.open is not None:
                    out.append(st.open)
                    st.open = None
            self._active.clear()
        return out

    def begin_flush(self) -> list:
        with self._lock:
            self.flushing += 1
            if self.sealed is not None:
                # flush sends the open batches anyway: sealed now, they are encoded ahead too
                # instead of waiting for a free in-flight slot before their compression starts
                self._cool_all()  # a hot batch's row count is only current once cooled
                for st in list(self._active.values()):
                    if st.open is not None and st.open.record_count:
                        self._seal(st, False, 0)
            return list(self._incomplete)

    def end_flush(self) -> None:
        with self._lock:
            self.flushing -= 1

    def set_closing(self) -> None:
        with self._lock:
            self.closing = True
            self._cool_all()
            self._space.notify_all()
