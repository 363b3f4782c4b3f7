"""Client metrics: counters kept by the writers' senders, the scanners' fetchers and the lookup
client, read into a snapshot by ``FlussConnection.metrics()``.

The names are the Java client's (``MetricNames`` in fluss-common: ``recordSendPerSecond``,
``bytesSendPerSecond``, ``recordsRetryPerSecond``, ``sendLatencyMs``, ``bufferTotalBytes``,
``fetchRequestsPerSecond``, ``fetchLatencyMs``, ``bytesPerRequest`` ...), plus ``...Total``
counters behind each rate and a few the Java client lacks (errors, fetch lag per bucket, lookups).

Cost: every counter is a plain int attribute of a small object shared by the writers (or
scanners, or lookups) of one table, bumped once per batch or request on the runtime thread (one
thread, so no locks). Nothing happens per row. Rates, averages, buffer use and fetch lag are
worked out when a snapshot is taken.
"""
from __future__ import annotations

import contextlib
import threading
import time
import weakref

__all__ = ["LookupMetrics", "MetricsRegistry", "ScannerMetrics", "WriterMetrics", "metrics_of"]


class _Latency:
    """Running count / sum / max / last of request latencies, in seconds."""

    __slots__ = ("count", "last", "max", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.max = 0.0
        self.last = -1.0

    def record(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        self.last = seconds
        if seconds > self.max:
            self.max = seconds

    def report(self, prefix: str, out: dict) -> None:
        # the Java gauge is the latest request's latency (-1 before the first)
        out[prefix] = round(self.last * 1000.0, 3) if self.count else -1
        out[prefix + "_avg"] = round(self.total * 1000.0 / self.count, 3) if self.count else 0.0
        out[prefix + "_max"] = round(self.max * 1000.0, 3)
        out[prefix + "_count"] = self.count


class WriterMetrics:
    """Shared by the writers of one table; their senders bump it per batch and per request."""

    __slots__ = ("__weakref__", "accumulators", "batches", "bytes", "errors", "latency", "records",
                 "records_failed", "records_retry", "requests")

    def __init__(self) -> None:
        self.records = 0          # records acknowledged by the server
        self.bytes = 0            # bytes of the acknowledged batches (header included)
        self.batches = 0          # acknowledged batches
        self.records_retry = 0    # records of batches sent again
        self.records_failed = 0   # records of batches given up on
        self.errors = 0           # batches that met an error: sent again or given up on
        self.requests = 0         # ProduceLog / PutKv requests sent
        self.latency = _Latency()
        self.accumulators: weakref.WeakSet = weakref.WeakSet()

    def totals(self) -> dict:
        return {"records": self.records, "bytes": self.bytes, "records_retry": self.records_retry,
                "errors": self.errors, "requests": self.requests}


class ScannerMetrics:
    """Shared by the log scanners of one table; their fetchers bump it per FetchLog."""

    __slots__ = ("__weakref__", "bytes", "errors", "fetchers", "latency", "records", "requests")

    def __init__(self) -> None:
        self.requests = 0   # FetchLog answers received
        self.errors = 0     # FetchLogs that failed, and bucket errors in their answers
        self.bytes = 0      # record bytes in the answers
        self.records = 0    # log offsets the answers moved the fetch positions by
        self.latency = _Latency()
        self.fetchers: weakref.WeakSet = weakref.WeakSet()

    def totals(self) -> dict:
        return {"requests": self.requests, "bytes": self.bytes, "records": self.records,
                "errors": self.errors}


class LookupMetrics:
    """The lookups of one table (point and prefix), counted per Lookup request."""

    __slots__ = ("errors", "keys", "latency", "requests")

    def __init__(self) -> None:
        self.requests = 0   # Lookup / PrefixLookup requests sent
        self.keys = 0       # keys in them
        self.errors = 0     # lookups (keys) that failed, after their retries
        self.latency = _Latency()

    def totals(self) -> dict:
        return {"requests": self.requests, "keys": self.keys, "errors": self.errors}


def _rate(now_totals: dict, before: tuple | None, key: str, created: float, now: float) -> float:
    if before is None:
        then, old = created, 0
    else:
        then, old = before[0], before[1].get(key, 0)
    elapsed = now - then
    return round((now_totals[key] - old) / elapsed, 3) if elapsed > 0 else 0.0


class MetricsRegistry:
    """One per connection: the metric objects of its tables, and the last snapshot's totals
    (the per-second rates are over the time since the previous snapshot)."""

    def __init__(self) -> None:
        self.created = time.monotonic()
        self._writers: dict[str, WriterMetrics] = {}
        self._scanners: dict[str, ScannerMetrics] = {}
        self._lookups: dict[int, LookupMetrics] = {}
        self._lookup_names: dict[int, str] = {}
        self._previous: dict[tuple, tuple] = {}
        self._lock = threading.Lock()  # snapshots from several threads; never on the hot paths

    # -- for the writers, scanners and lookups (when they are made, not per row) -----------------
    def writer(self, table: str, accumulator=None) -> WriterMetrics:
        m = self._writers.get(table)
        if m is None:
            m = self._writers.setdefault(table, WriterMetrics())
        if accumulator is not None:
            m.accumulators.add(accumulator)
        return m

    def scanner(self, table: str, fetcher=None) -> ScannerMetrics:
        m = self._scanners.get(table)
        if m is None:
            m = self._scanners.setdefault(table, ScannerMetrics())
        if fetcher is not None:
            m.fetchers.add(fetcher)
        return m

    def name_table(self, table_id: int, table: str) -> None:
        self._lookup_names[table_id] = table

    def lookup(self, table_id: int) -> LookupMetrics:
        m = self._lookups.get(table_id)
        if m is None:
            m = self._lookups.setdefault(table_id, LookupMetrics())
        return m

    # -- the snapshot ------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        with self._lock:
            now = time.monotonic()
            out: dict = {"writer": {}, "scanner": {}, "lookup": {}}
            for table, w in list(self._writers.items()):
                out["writer"][table] = self._writer_entry(table, w, now)
            for table, s in list(self._scanners.items()):
                out["scanner"][table] = self._scanner_entry(table, s, now)
            for table_id, lk in list(self._lookups.items()):
                table = self._lookup_names.get(table_id, str(table_id))
                out["lookup"][table] = self._lookup_entry(table, lk, now)
            return out

    def _rates(self, key: tuple, totals: dict, now: float) -> dict:
        before = self._previous.get(key)
        self._previous[key] = (now, totals)
        return {k: _rate(totals, before, k, self.created, now) for k in totals}

    def _writer_entry(self, table: str, w: WriterMetrics, now: float) -> dict:
        totals = w.totals()
        rate = self._rates(("writer", table), totals, now)
        total_bytes = available = 0
        for acc in list(w.accumulators):
            limit = getattr(acc, "limit", 0) or 0
            total_bytes += limit
            available += max(0, limit - acc.used)
        e = {
            "recordSendPerSecond": rate["records"],
            "recordsSendTotal": w.records,
            "bytesSendPerSecond": rate["bytes"],
            "bytesSendTotal": w.bytes,
            "recordsRetryPerSecond": rate["records_retry"],
            "recordsRetryTotal": w.records_retry,
            "recordsFailedTotal": w.records_failed,
            "errorsPerSecond": rate["errors"],
            "errorsTotal": w.errors,
            "requestsPerSecond": rate["requests"],
            "requestsTotal": w.requests,
            "bytesPerBatch": round(w.bytes / w.batches, 1) if w.batches else 0.0,
            "recordsPerBatch": round(w.records / w.batches, 1) if w.batches else 0.0,
            "bufferTotalBytes": total_bytes,
            "bufferAvailableBytes": available,
        }
        w.latency.report("sendLatencyMs", e)
        return e

    def _scanner_entry(self, table: str, s: ScannerMetrics, now: float) -> dict:
        totals = s.totals()
        rate = self._rates(("scanner", table), totals, now)
        lag: dict[str, int] = {}
        for f in list(s.fetchers):
            for key, value in f.lag_by_bucket().items():
                if value > lag.get(key, -1):
                    lag[key] = value
        e = {
            "fetchRequestsPerSecond": rate["requests"],
            "fetchRequestsTotal": s.requests,
            "bytesPerRequest": round(s.bytes / s.requests, 1) if s.requests else 0.0,
            "bytesFetchedPerSecond": rate["bytes"],
            "bytesFetchedTotal": s.bytes,
            "recordsFetchedPerSecond": rate["records"],
            "recordsFetchedTotal": s.records,
            "errorsPerSecond": rate["errors"],
            "errorsTotal": s.errors,
            "recordsLag": lag,
            "recordsLagMax": max(lag.values()) if lag else 0,
        }
        s.latency.report("fetchLatencyMs", e)
        return e

    def _lookup_entry(self, table: str, lk: LookupMetrics, now: float) -> dict:
        totals = lk.totals()
        rate = self._rates(("lookup", table), totals, now)
        e = {
            "lookupRequestsPerSecond": rate["requests"],
            "lookupRequestsTotal": lk.requests,
            "lookupKeysTotal": lk.keys,
            "errorsPerSecond": rate["errors"],
            "errorsTotal": lk.errors,
        }
        lk.latency.report("lookupLatencyMs", e)
        return e


def metrics_of(ctx) -> MetricsRegistry:
    """The registry of a connection's context (made on first use)."""
    reg = getattr(ctx, "client_metrics", None)
    if reg is None:
        reg = MetricsRegistry()
        # a context that takes no attributes (a test's stand-in): counted, never reported
        with contextlib.suppress(AttributeError):
            ctx.client_metrics = reg
    return reg
