"""A table's auto-partition strategy (``table.auto-partition.*``, docs/contributing/protocol.md §7.6)."""
from __future__ import annotations

from datetime import datetime

from ..errors import FlussError
from .catalog import TableEntry
from .table_options import TableOptions
from .time_formats import DEFAULT_TIME_FORMATS, compile_time_format, format_time, shift_time, time_zone


class AutoPartition:
    """A table's auto-partition strategy (``table.auto-partition.*``)."""

    def __init__(self, opts: TableOptions, partition_keys: tuple):
        self.enabled = bool(opts.get("table.auto-partition.enabled", False))
        self.key = opts.get("table.auto-partition.key") or (partition_keys[0] if partition_keys else None)
        self.explicit_key = opts.get("table.auto-partition.key")
        self.unit = opts.get("table.auto-partition.time-unit", "DAY")
        self.format = opts.get("table.auto-partition.time-format")
        self.num_precreate = opts.get("table.auto-partition.num-precreate", 2)
        self.num_retention = opts.get("table.auto-partition.num-retention", 7)
        self.zone_name = opts.get("table.auto-partition.time-zone")
        self.tokens = compile_time_format(self.format or DEFAULT_TIME_FORMATS[self.unit], self.unit)
        self.zone = time_zone(self.zone_name)

    @property
    def checks_time(self) -> bool:
        return self.enabled or self.format is not None

    def time_value(self, now: datetime, offset: int) -> str:
        return format_time(self.tokens, shift_time(now.astimezone(self.zone), self.unit, offset))

    @staticmethod
    def of(entry: TableEntry) -> AutoPartition | None:
        try:
            return AutoPartition(TableOptions(entry.descriptor.properties), entry.descriptor.partition_keys)
        except (FlussError, ValueError, KeyError):
            return None
