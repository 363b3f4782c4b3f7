"""The settings of one read or write of one table, as every engine hands them to its tasks."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..metadata import TablePath


@dataclass(frozen=True)
class SourceOptions:
    """Which table, the client configuration and the scan settings; picklable, so it travels to the
    engine's workers. ``fluss_fast.spark.options.parse`` builds it from a Spark option map."""

    database: str
    table: str
    virtual: str | None
    client: tuple[tuple[str, str], ...]
    startup_mode: str = "full"
    startup_timestamp: int | None = None
    incremental_start: int | None = None
    incremental_end: int | None = None
    max_records_per_partition: int | None = None
    poll_timeout_ms: int = 10000
    max_records_per_trigger: int | None = None
    pushdown: bool = False
    stats_dir: str | None = None
    # a data-lake table's lake snapshot only (Java's read.optimized), not the union with the log
    read_optimized: bool = False
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def path(self) -> TablePath:
        return TablePath(self.database, self.table)

    @property
    def name(self) -> str:
        base = f"{self.database}.{self.table}"
        return base if self.virtual is None else f"{base}${self.virtual}"

    def client_config(self) -> dict[str, str]:
        return dict(self.client)
