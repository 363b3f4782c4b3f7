"""``table.*`` properties: every option the Java cluster knows with a parser for its value type, and
the limits and defaults a CREATE_TABLE is checked against."""
from __future__ import annotations

import re

from ..error_codes import Errors
from ..errors import FlussError

MAX_BUCKET_NUM = 4096
MAX_PARTITION_NUM = 1000
DEFAULT_BUCKET_NUMBER = 1
DEFAULT_REPLICATION_FACTOR = 1
HISTORICAL_PARTITION = "__historical__"
RESERVED_COLUMNS = ("__offset", "__timestamp", "__bucket", "_change_type", "_log_offset", "_commit_timestamp")

_INT_RE = re.compile(r"^[+-]?\d+$")
_DURATION_RE = re.compile(r"^\s*(\d+)\s*([a-zµ]*)\s*$")
_DURATION_UNITS = {}
for _unit, _labels in (
        (86400.0, ("d", "day", "days")), (3600.0, ("h", "hour", "hours")),
        (60.0, ("min", "m", "minute", "minutes")), (1.0, ("s", "sec", "secs", "second", "seconds")),
        (1e-3, ("ms", "milli", "millis", "millisecond", "milliseconds", "")),
        (1e-6, ("µs", "micro", "micros", "microsecond", "microseconds")),
        (1e-9, ("ns", "nano", "nanos", "nanosecond", "nanoseconds"))):
    for _label in _labels:
        _DURATION_UNITS[_label] = _unit


def _parse_int(v: str) -> int:
    s = v.strip()
    if not _INT_RE.match(s):
        raise ValueError(f"'{v}' is not an integer")
    n = int(s)
    if not -(2 ** 31) <= n < 2 ** 31:
        raise ValueError(f"'{v}' is out of the int range")
    return n


def _parse_long(v: str) -> int:
    s = v.strip()
    if not _INT_RE.match(s):
        raise ValueError(f"'{v}' is not a long")
    return int(s)


def _parse_bool(v: str) -> bool:
    s = v.strip().lower()
    if s not in ("true", "false"):
        raise ValueError(f"'{v}' is not a boolean (true/false)")
    return s == "true"


def _parse_duration(v: str) -> float:
    m = _DURATION_RE.match(v.lower())
    if not m or m.group(2) not in _DURATION_UNITS:
        raise ValueError(f"'{v}' is not a duration (e.g. '7 d', '10 min', '500 ms')")
    return int(m.group(1)) * _DURATION_UNITS[m.group(2)]


def _enum(*values):
    def parse(v: str) -> str:
        s = v.strip().upper()
        if s not in values:
            raise ValueError(f"'{v}' is not one of {list(values)}")
        return s

    return parse


def _string(v: str) -> str:
    return v


TABLE_OPTIONS = {
    "table.replication.factor": _parse_int,
    "table.log.format": _enum("ARROW", "INDEXED", "COMPACTED"),
    "table.log.arrow.compression.type": _enum("NONE", "LZ4_FRAME", "ZSTD"),
    "table.log.arrow.compression.zstd.level": _parse_int,
    "table.kv.format": _enum("COMPACTED", "INDEXED"),
    "table.kv.format-version": _parse_int,
    "table.kv.standby-replica.enabled": _parse_bool,
    "table.auto-partition.enabled": _parse_bool,
    "table.auto-partition.key": _string,
    "table.auto-partition.time-unit": _enum("HOUR", "DAY", "MONTH", "QUARTER", "YEAR"),
    "table.auto-partition.time-format": _string,
    "table.auto-partition.time-zone": _string,
    "table.auto-partition.num-precreate": _parse_int,
    "table.auto-partition.num-retention": _parse_int,
    "table.log.ttl": _parse_duration,
    "table.log.tiered.local-segments": _parse_int,
    "table.log.local-ttl": _parse_duration,
    "table.datalake.enabled": _parse_bool,
    "table.datalake.historical-partition.enabled": _parse_bool,
    "table.datalake.format": _enum("PAIMON", "ICEBERG", "HUDI", "LANCE"),
    "table.datalake.freshness": _parse_duration,
    "table.datalake.auto-compaction": _parse_bool,
    "table.datalake.auto-expire-snapshot": _parse_bool,
    "table.merge-engine": _enum("FIRST_ROW", "VERSIONED", "AGGREGATION"),
    "table.merge-engine.versioned.ver-column": _string,
    "table.delete.behavior": _enum("ALLOW", "IGNORE", "DISABLE"),
    "table.auto-increment.cache-size": _parse_long,
    "table.changelog.image": _enum("FULL", "WAL"),
    "table.statistics.columns": _string,
}

LAKE_OPTION_PREFIXES = ("table.datalake.paimon.", "table.datalake.iceberg.", "table.datalake.lance.",
                        "table.datalake.hudi.")


def invalid_config(msg: str) -> FlussError:
    return FlussError(msg, Errors.INVALID_CONFIG_EXCEPTION)


def invalid_table(msg: str) -> FlussError:
    return FlussError(msg, Errors.INVALID_TABLE_EXCEPTION)


class TableOptions:
    """Typed, validated view of a table's ``properties``."""

    def __init__(self, props: dict):
        self.raw = props
        self.values = {}
        for key, value in props.items():
            parser = TABLE_OPTIONS.get(key)
            if parser is None and key.startswith(LAKE_OPTION_PREFIXES):
                # the lake's own options (catalog settings the coordinator copies, lake table
                # options), passed through to the lake as Java does
                parser = _string
            if parser is None:
                if key.startswith("table."):
                    raise invalid_config(
                        f"'{key}' is not a recognized Fluss table property in the current cluster version. "
                        "You may be using an older Fluss cluster that does not support this property.")
                raise invalid_config(
                    f"'{key}' is not a Fluss table property. "
                    "Please use '.customProperty(..)' to set custom properties.")
            try:
                self.values[key] = parser(value)
            except ValueError as e:
                raise invalid_config(f"Invalid value for config '{key}'. Reason: {e}") from None

    def get(self, key, default=None):
        return self.values.get(key, default)


def deletes_disabled() -> FlussError:
    """A delete sent to a table whose ``table.delete.behavior`` is DISABLE (the Java server's words)."""
    return FlussError("Delete operations are disabled for this table. The table.delete.behavior is "
                      "set to 'disable'.", Errors.DELETION_DISABLED_EXCEPTION)
