"""Prometheus export of the client metrics (``pip install 'fluss-fast[metrics]'``): a collector
that takes a ``FlussConnection.metrics()`` snapshot on every scrape.

Example:
    ```python
    from prometheus_client import REGISTRY, start_http_server
    from fluss_fast.client.prometheus import FlussCollector

    REGISTRY.register(FlussCollector(conn))
    start_http_server(9464)
    ```

Each metric is ``fluss_client_<section>_<name>`` (section: writer, scanner, lookup; the name the
Java one, e.g. ``fluss_client_writer_recordsSendTotal``) with a ``table`` label; ``recordsLag``
has a ``bucket`` label too. All are gauges: the snapshot's totals only grow, its rates are over
the time since the previous snapshot (the previous scrape).
"""
from __future__ import annotations

from collections.abc import Iterator


def _families(snapshot: dict):
    try:
        from prometheus_client.core import GaugeMetricFamily
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the Prometheus export needs prometheus-client: pip install 'fluss-fast[metrics]'") from e
    families: dict[str, GaugeMetricFamily] = {}

    def family(name: str, labels: list[str]) -> GaugeMetricFamily:
        f = families.get(name)
        if f is None:
            f = families[name] = GaugeMetricFamily(name, f"Fluss client metric {name}", labels=labels)
        return f

    for section, tables in snapshot.items():
        for table, entry in tables.items():
            for key, value in entry.items():
                name = f"fluss_client_{section}_{key}"
                if isinstance(value, dict):
                    f = family(name, ["table", "bucket"])
                    for bucket, v in value.items():
                        f.add_metric([table, str(bucket)], float(v))
                else:
                    family(name, ["table"]).add_metric([table], float(value))
    return list(families.values())


class FlussCollector:
    """A prometheus_client collector over one connection (or anything with ``metrics()``, such as
    the sync API's connection)."""

    def __init__(self, conn) -> None:
        self._conn = conn

    def collect(self) -> Iterator:
        if getattr(self._conn, "closed", False):
            return iter(())
        return iter(_families(self._conn.metrics()))

    def describe(self) -> list:
        # no metrics at registration time: the registry must not scrape the connection then
        return []
