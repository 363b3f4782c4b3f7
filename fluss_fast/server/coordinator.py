"""Coordinator role: metadata, databases, tables, partitions, auto-partitioning (RPC.md §3.3-3.6, §7).

Checks and defaults follow the Java coordinator (``TableDescriptorValidation``, ``ConfigOptions``) so
that error codes match: bad names 16/15, bad descriptors 15, unknown or invalid ``table.*`` properties
39, too many buckets 49, replication factor above the live tablet servers 17, partition rules 37/43/42/36/45.
"""
from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Optional

from ..datatypes import (ARRAY, BIGINT, DATE, INTEGER, MAP, NESTED, PARTITION_KEY_ROOTS, ROW, TIMESTAMP,
                         TIMESTAMP_LTZ, DataType, SchemaInfo, TableDescriptorInfo)
from ..errors import FlussError
from ..metadata import PARTITION_SEPARATOR
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from ..rpc.errors import Errors
from ..rpc.wire import partition_metadata_field, table_metadata_field
from .catalog import BUILTIN_DATABASE, PartitionEntry, TableEntry, now_ms

log = logging.getLogger("fluss_fast.server")

MAX_NAME_LENGTH = 200
INTERNAL_PREFIX = "__"
MAX_BUCKET_NUM = 4096
MAX_PARTITION_NUM = 1000
DEFAULT_BUCKET_NUMBER = 1
DEFAULT_REPLICATION_FACTOR = 1
HISTORICAL_PARTITION = "__historical__"
RESERVED_COLUMNS = ("__offset", "__timestamp", "__bucket", "_change_type", "_log_offset", "_commit_timestamp")
_NAME_RE = re.compile(r"^[A-Za-z0-9_\-]+$")


# ---------------------------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------------------------
def invalid_name_reason(name: str) -> Optional[str]:
    if name is None or name == "":
        return "the empty string is not allowed"
    if name in (".", ".."):
        return "'.' and '..' are not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not _NAME_RE.match(name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '_' and '-'"
    return None


def _prefix_reason(name: str) -> Optional[str]:
    if name.startswith(INTERNAL_PREFIX):
        return f"'{INTERNAL_PREFIX}' is not allowed as prefix, since it is reserved for internal databases/internal tables/internal partitions in Fluss server"
    return None


def check_database_name(name: str, creating: bool = True) -> None:
    reason = invalid_name_reason(name) or (_prefix_reason(name) if creating else None)
    if reason:
        raise FlussError(f"Database name {name} is invalid: {reason}", Errors.INVALID_DATABASE_EXCEPTION)


def check_table_name(name: str, creating: bool = True) -> None:
    reason = invalid_name_reason(name) or (_prefix_reason(name) if creating else None)
    if reason:
        raise FlussError(f"Table name {name} is invalid: {reason}", Errors.INVALID_TABLE_EXCEPTION)


# ---------------------------------------------------------------------------------------------
# table.* options: every option the Java cluster knows, with a parser for its value type
# ---------------------------------------------------------------------------------------------
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

_STATS_ROOTS = ("BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "STRING", "CHAR",
                "DECIMAL", "DATE", "TIME_WITHOUT_TIME_ZONE", "TIMESTAMP_WITHOUT_TIME_ZONE",
                "TIMESTAMP_WITH_LOCAL_TIME_ZONE")


def _invalid_config(msg: str) -> FlussError:
    return FlussError(msg, Errors.INVALID_CONFIG_EXCEPTION)


def _invalid_table(msg: str) -> FlussError:
    return FlussError(msg, Errors.INVALID_TABLE_EXCEPTION)


class _Options:
    """Typed, validated view of a table's ``properties``."""

    def __init__(self, props: dict):
        self.raw = props
        self.values = {}
        for key, value in props.items():
            parser = TABLE_OPTIONS.get(key)
            if parser is None:
                if key.startswith("table."):
                    raise _invalid_config(
                        f"'{key}' is not a recognized Fluss table property in the current cluster version. "
                        "You may be using an older Fluss cluster that does not support this property.")
                raise _invalid_config(
                    f"'{key}' is not a Fluss table property. Please use '.customProperty(..)' to set custom properties.")
            try:
                self.values[key] = parser(value)
            except ValueError as e:
                raise _invalid_config(f"Invalid value for config '{key}'. Reason: {e}") from None

    def get(self, key, default=None):
        return self.values.get(key, default)


# ---------------------------------------------------------------------------------------------
# auto-partitioning time formats (RPC.md §7.6)
# ---------------------------------------------------------------------------------------------
_DEFAULT_TIME_FORMATS = {"YEAR": "yyyy", "QUARTER": "yyyyQ", "MONTH": "yyyyMM", "DAY": "yyyyMMdd",
                         "HOUR": "yyyyMMddHH"}
_UNIT_FIELDS = {"YEAR": ["y"], "QUARTER": ["y", "Q"], "MONTH": ["y", "M"], "DAY": ["y", "M", "d"],
                "HOUR": ["y", "M", "d", "H"]}
_FIELD_WIDTH = {"y": 4, "Q": 1, "M": 2, "d": 2, "H": 2}


def compile_time_format(fmt: str, unit: str) -> list:
    """A Java DateTimeFormatter pattern restricted to what sorts like time: fixed-width year, quarter,
    month, day, hour from largest to smallest, plus literals. Returns tokens: ('y'|'Q'|'M'|'d'|'H', width)
    or ('lit', text)."""
    tokens, fields = [], []
    i, n = 0, len(fmt)
    while i < n:
        ch = fmt[i]
        if ch == "'":
            if i + 1 < n and fmt[i + 1] == "'":
                tokens.append(("lit", "'"))
                i += 2
                continue
            j = fmt.find("'", i + 1)
            if j < 0:
                raise ValueError(f"Time format '{fmt}' has an unterminated quote")
            tokens.append(("lit", fmt[i + 1:j]))
            i = j + 1
            continue
        if ch in "[]":
            raise ValueError(f"Time format '{fmt}' must not contain optional sections ('[' or ']').")
        if not ch.isascii() or not ch.isalpha():
            tokens.append(("lit", ch))
            i += 1
            continue
        j = i
        while j < n and fmt[j] == ch:
            j += 1
        if ch not in _FIELD_WIDTH:
            raise ValueError(f"Time format '{fmt}' contains unsupported time field '{ch}'.")
        if j - i != _FIELD_WIDTH[ch]:
            raise ValueError(f"Time format '{fmt}' must use fixed-width field '{ch * _FIELD_WIDTH[ch]}'.")
        tokens.append((ch, j - i))
        fields.append(ch)
        i = j
    if fields != _UNIT_FIELDS[unit]:
        raise ValueError(f"Time format '{fmt}' must contain exactly the fields {''.join(_UNIT_FIELDS[unit])} "
                         f"in order from the largest to the smallest unit for time unit {unit}.")
    return tokens


def format_time(tokens: list, dt: datetime) -> str:
    out = []
    for kind, arg in tokens:
        if kind == "lit":
            out.append(arg)
        elif kind == "y":
            out.append(f"{dt.year:04d}")
        elif kind == "Q":
            out.append(str((dt.month - 1) // 3 + 1))
        elif kind == "M":
            out.append(f"{dt.month:02d}")
        elif kind == "d":
            out.append(f"{dt.day:02d}")
        elif kind == "H":
            out.append(f"{dt.hour:02d}")
    return "".join(out)


def parses_as_time(tokens: list, value: str) -> bool:
    pos = 0
    parts = {}
    for kind, arg in tokens:
        if kind == "lit":
            if not value.startswith(arg, pos):
                return False
            pos += len(arg)
            continue
        piece = value[pos:pos + arg]
        if len(piece) != arg or not piece.isdigit():
            return False
        parts[kind] = int(piece)
        pos += arg
    if pos != len(value):
        return False
    try:
        month = parts.get("M", 1)
        if "Q" in parts and not 1 <= parts["Q"] <= 4:
            return False
        datetime(parts.get("y", 2000), month, parts.get("d", 1), parts.get("H", 0))
    except ValueError:
        return False
    return True


def _add_months(dt: datetime, months: int) -> datetime:
    total = dt.year * 12 + (dt.month - 1) + months
    year, month = divmod(total, 12)
    month += 1
    # clamp the day the way java.time does (Jan 31 + 1 month = Feb 28/29)
    for day in (dt.day, 30, 29, 28):
        try:
            return dt.replace(year=year, month=month, day=min(dt.day, day))
        except ValueError:
            continue
    raise ValueError("unreachable")


def shift_time(dt: datetime, unit: str, offset: int) -> datetime:
    if unit == "YEAR":
        return _add_months(dt, 12 * offset)
    if unit == "QUARTER":
        return _add_months(dt, 3 * offset)
    if unit == "MONTH":
        return _add_months(dt, offset)
    if unit == "DAY":
        return dt + timedelta(days=offset)
    return dt + timedelta(hours=offset)


def _zone(name: Optional[str]):
    if not name:
        return datetime.now().astimezone().tzinfo
    if name.upper() in ("UTC", "GMT", "Z"):
        return timezone.utc
    m = re.match(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$", name)
    if m:
        delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        return timezone(-delta if m.group(1) == "-" else delta)
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


class AutoPartition:
    """A table's auto-partition strategy (``table.auto-partition.*``)."""

    def __init__(self, opts: _Options, partition_keys: tuple):
        self.enabled = bool(opts.get("table.auto-partition.enabled", False))
        self.key = opts.get("table.auto-partition.key") or (partition_keys[0] if partition_keys else None)
        self.explicit_key = opts.get("table.auto-partition.key")
        self.unit = opts.get("table.auto-partition.time-unit", "DAY")
        self.format = opts.get("table.auto-partition.time-format")
        self.num_precreate = opts.get("table.auto-partition.num-precreate", 2)
        self.num_retention = opts.get("table.auto-partition.num-retention", 7)
        self.zone_name = opts.get("table.auto-partition.time-zone")
        self.tokens = compile_time_format(self.format or _DEFAULT_TIME_FORMATS[self.unit], self.unit)
        self.zone = _zone(self.zone_name)

    @property
    def checks_time(self) -> bool:
        return self.enabled or self.format is not None

    def time_value(self, now: datetime, offset: int) -> str:
        return format_time(self.tokens, shift_time(now.astimezone(self.zone), self.unit, offset))

    @staticmethod
    def of(entry: TableEntry) -> Optional["AutoPartition"]:
        try:
            return AutoPartition(_Options(entry.descriptor.properties), entry.descriptor.partition_keys)
        except (FlussError, ValueError, KeyError):
            return None


# ---------------------------------------------------------------------------------------------
# CREATE_TABLE: parse, check, default (RPC.md §7.3/7.4)
# ---------------------------------------------------------------------------------------------
def _walk_row_ids(t: DataType, out: list) -> None:
    if t.root == ROW:
        for f in t.fields:
            if f.field_id is not None:
                out.append(f.field_id)
            _walk_row_ids(f.type, out)
    elif t.root == ARRAY:
        _walk_row_ids(t.element, out)
    elif t.root == MAP:
        _walk_row_ids(t.key, out)
        _walk_row_ids(t.value, out)


def _type_name(t: DataType) -> str:
    return str(t).upper()


def prepare_descriptor(path: str, table_json: bytes, num_tablet_servers: int) -> TableDescriptorInfo:
    """The stored descriptor for a CREATE_TABLE, or FlussError with the Java server's code."""
    try:
        desc = TableDescriptorInfo.from_json_bytes(table_json)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise _invalid_table(f"Invalid table descriptor JSON for table {path}: {e}") from None
    schema = desc.schema
    names = [c.name for c in schema.columns]
    if not names:
        raise _invalid_table(f"Table {path} must have at least one column")
    seen = set()
    for n in names:
        if not isinstance(n, str) or not n:
            raise _invalid_table(f"Table {path} has a column with an empty or non-string name")
        if n in seen:
            raise _invalid_table(f"Table column {names} must not contain duplicate fields. Found: ['{n}']")
        seen.add(n)
    pk = tuple(schema.primary_key)
    if len(set(pk)) != len(pk):
        raise _invalid_table(f"Primary key constraint {list(pk)} of table {path} must not contain duplicate columns.")
    for k in pk:
        if k not in seen:
            raise _invalid_table(f"Primary key column '{k}' of table {path} does not exist in the schema {names}.")
    for k in schema.auto_increment_columns:
        if k not in seen:
            raise _invalid_table(f"Auto increment column '{k}' of table {path} does not exist in the schema.")
    # Column ids: all or none; none -> 0..n-1.
    ids = [c.id for c in schema.columns]
    columns = list(schema.columns)
    if all(i is None for i in ids):
        columns = [replace(c, id=i) for i, c in enumerate(columns)]
    elif any(i is None for i in ids):
        raise _invalid_table(f"Table {path}: either all columns must have an id or none may")
    elif len(set(ids)) != len(ids):
        raise _invalid_table(f"Table {path}: column ids {ids} must be unique")
    if pk:
        columns = [replace(c, type=c.type.with_nullable(False)) if c.name in pk else c for c in columns]
    used_ids = [c.id for c in columns]
    for c in columns:
        _walk_row_ids(c.type, used_ids)
    highest = max(used_ids) if used_ids else -1
    if schema.highest_field_id is not None and schema.highest_field_id < highest:
        raise _invalid_table(f"Table {path}: highest_field_id {schema.highest_field_id} is smaller than the "
                             f"largest field id in use ({highest})")
    new_schema = SchemaInfo(tuple(columns), pk, tuple(schema.auto_increment_columns),
                            schema.highest_field_id if schema.highest_field_id is not None else highest)
    types = {c.name: c.type for c in columns}

    partition_keys = tuple(desc.partition_keys)
    if len(set(partition_keys)) != len(partition_keys):
        raise _invalid_table(f"Partition keys {list(partition_keys)} of table {path} must not contain duplicates.")
    for k in partition_keys:
        if k not in seen:
            raise _invalid_table(f"Partition key '{k}' of table {path} does not exist in the schema {names}.")
        if pk and k not in pk:
            raise _invalid_table(
                f"Partitioned Primary Key Table requires partition key {list(partition_keys)} is a subset of the "
                f"primary key {list(pk)}.")
    bucket_keys = tuple(desc.bucket_keys)
    for k in bucket_keys:
        if k not in seen:
            raise _invalid_table(f"Bucket key '{k}' of table {path} does not exist in the schema {names}.")
        if k in partition_keys:
            raise _invalid_table(f"Bucket key {list(bucket_keys)} shouldn't include any column in partition keys "
                                 f"{list(partition_keys)}.")
        if pk and k not in pk:
            raise _invalid_table(f"Bucket keys must be a subset of primary keys excluding partition keys for primary "
                                 f"key table. The primary keys are {list(pk)}, the partition keys are "
                                 f"{list(partition_keys)}, but the user-defined bucket keys are {list(bucket_keys)}.")
    if pk and not bucket_keys:
        bucket_keys = tuple(k for k in pk if k not in partition_keys)
        if not bucket_keys:
            raise _invalid_table(f"Primary Key constraint {list(pk)} should not be same with partition fields "
                                 f"{list(partition_keys)}.")

    # -- defaults (§7.4) --
    bucket_count = desc.bucket_count if desc.bucket_count is not None else DEFAULT_BUCKET_NUMBER
    props = dict(desc.properties)
    props.setdefault("table.replication.factor", str(DEFAULT_REPLICATION_FACTOR))
    if len(partition_keys) > 1 and props.get("table.auto-partition.enabled", "").strip().lower() == "true":
        props.setdefault("table.auto-partition.num-precreate", "0")
    if pk:
        engine = props.get("table.merge-engine", "").strip().upper()
        if engine in ("FIRST_ROW", "VERSIONED", "AGGREGATION"):
            props.setdefault("table.delete.behavior", "IGNORE")
        props.setdefault("table.kv.format-version", "2")
        props.setdefault("table.kv.standby-replica.enabled", "true")

    # -- validation in the Java order --
    opts = _Options(props)
    if bucket_count < 1:
        raise _invalid_table(f"Bucket number of table {path} must be positive, got {bucket_count}.")
    if bucket_count > MAX_BUCKET_NUM:
        raise FlussError(f"Bucket count {bucket_count} exceeds the maximum limit {MAX_BUCKET_NUM} for a "
                         "non-partitioned table or partition.", Errors.BUCKET_MAX_NUM_EXCEPTION)
    for k in bucket_keys:
        if types[k].root in NESTED:
            raise _invalid_table(f"Bucket key column '{k}' has unsupported data type {_type_name(types[k])}. "
                                 "Currently, bucket key column does not support types: [ARRAY, MAP, ROW].")
    for k in pk:
        if types[k].root in NESTED:
            raise _invalid_table(f"Primary key column '{k}' has unsupported data type {_type_name(types[k])}. "
                                 "Currently, primary key column does not support types: [ARRAY, MAP, ROW].")
    rf = opts.get("table.replication.factor")
    if rf <= 0:
        raise _invalid_config("'table.replication.factor' must be greater than 0.")
    kv_format = opts.get("table.kv.format", "COMPACTED")
    log_format = opts.get("table.log.format", "ARROW")
    if pk and kv_format == "COMPACTED" and log_format not in ("ARROW", "COMPACTED"):
        raise _invalid_config("Currently, Primary Key Table supports ARROW or COMPACTED log format when kv format "
                              "is COMPACTED.")
    version = opts.get("table.kv.format-version")
    if version is not None and not 1 <= version <= 2:
        raise _invalid_config(f"Invalid value for config 'table.kv.format-version': {version}. Supported versions "
                              "are 1 and 2.")
    level = opts.get("table.log.arrow.compression.zstd.level")
    if level is not None and not 1 <= level <= 22:
        raise _invalid_config(f"Invalid ZSTD compression level: {level}. Expected a value between 1 and 22.")
    _check_merge_engine(opts, pk, columns, types)
    delete_behavior = opts.get("table.delete.behavior")
    if not pk and "table.delete.behavior" in props:
        raise _invalid_config("The 'table.delete.behavior' configuration is only supported for primary key tables.")
    engine = opts.get("table.merge-engine")
    if engine in ("FIRST_ROW", "VERSIONED") and delete_behavior == "ALLOW":
        raise _invalid_config(f"Table with '{engine}' merge engine does not support delete operations. The "
                              "'table.delete.behavior' config must be set to 'ignore' or 'disable', but got 'allow'.")
    if opts.get("table.log.tiered.local-segments", 2) <= 0:
        raise _invalid_config("'table.log.tiered.local-segments' must be greater than 0.")
    local_ttl, ttl = opts.get("table.log.local-ttl"), opts.get("table.log.ttl", 7 * 86400.0)
    if local_ttl is not None and local_ttl > 0 and ttl > 0 and local_ttl > ttl:
        raise _invalid_config("'table.log.local-ttl' must be less than or equal to 'table.log.ttl'.")
    _check_historical_partition(opts, pk, partition_keys)
    _check_partitioning(opts, partition_keys, types)
    reserved = [n for n in names if n in RESERVED_COLUMNS]
    if reserved:
        raise _invalid_table(f"{', '.join(reserved)} cannot be used as column names, because they are reserved "
                             "system columns in Fluss. Please use other names for these columns. The reserved "
                             f"system columns are: {', '.join(RESERVED_COLUMNS)}")
    _check_statistics(opts, pk, types)
    if rf > num_tablet_servers:
        raise FlussError(f"Replication factor: {rf} larger than available tablet servers: {num_tablet_servers}.",
                         Errors.INVALID_REPLICATION_FACTOR)
    return TableDescriptorInfo(new_schema, partition_keys, bucket_keys, bucket_count, props,
                               dict(desc.custom_properties), desc.comment)


def _check_merge_engine(opts, pk, columns, types) -> None:
    engine = opts.get("table.merge-engine")
    if engine != "AGGREGATION":
        for c in columns:
            if c.agg_function is not None:
                raise _invalid_config("Aggregation function is only supported for aggregation merge engine table, "
                                      f"but column '{c.name}' has aggregation function '{c.agg_function}'.")
    if engine is None:
        return
    if not pk:
        raise _invalid_config("Merge engine is only supported in primary key table.")
    if engine == "VERSIONED":
        ver = opts.get("table.merge-engine.versioned.ver-column")
        if ver is None:
            raise _invalid_config("'table.merge-engine.versioned.ver-column' must be set for versioned merge engine.")
        if ver not in types:
            raise _invalid_config(f"The version column '{ver}' for versioned merge engine doesn't exist in schema.")
        if types[ver].root not in (INTEGER, BIGINT, TIMESTAMP, TIMESTAMP_LTZ):
            raise _invalid_config(f"The version column '{ver}' for versioned merge engine must be one type of "
                                  f"[INT, BIGINT, TIMESTAMP, TIMESTAMP_LTZ], but got {_type_name(types[ver])}.")
    elif engine == "AGGREGATION" and opts.get("table.changelog.image") == "WAL":
        raise _invalid_config("Table with 'AGGREGATION' merge engine does not support 'WAL' changelog image mode. "
                              "Please set 'table.changelog.image' to 'FULL' or remove the setting.")


def _check_historical_partition(opts, pk, partition_keys) -> None:
    if not opts.get("table.datalake.historical-partition.enabled", False):
        return
    unmet = []
    if not opts.get("table.auto-partition.enabled", False):
        unmet.append("'table.auto-partition.enabled' must be set to true")
    if not opts.get("table.datalake.enabled", False):
        unmet.append("'table.datalake.enabled' must be set to true")
    fmt = opts.get("table.datalake.format")
    if fmt != "PAIMON":
        unmet.append(f"'table.datalake.format' must be set to 'paimon' (currently {fmt or 'not set'})")
    if not pk:
        unmet.append("the table must define a primary key")
    if len(partition_keys) != 1:
        unmet.append(f"the table must define exactly one partition key (found {len(partition_keys)})")
    if unmet:
        raise _invalid_config(f"'table.datalake.historical-partition.enabled' has unmet requirements: {'; '.join(unmet)}.")


def _check_partitioning(opts, partition_keys, types) -> None:
    enabled = opts.get("table.auto-partition.enabled", False)
    if not partition_keys:
        if enabled:
            raise _invalid_config("Currently, auto partition is only supported for partitioned table, please set "
                                  "table property 'table.auto-partition.enabled' to false.")
        return
    for k in partition_keys:
        if types[k].root not in PARTITION_KEY_ROOTS:
            raise _invalid_table(f"Currently, partitioned table supported partition key type are "
                                 f"{list(PARTITION_KEY_ROOTS)}, but got partition key '{k}' with data type "
                                 f"{_type_name(types[k])}.")
    unit = opts.get("table.auto-partition.time-unit", "DAY")
    fmt = opts.get("table.auto-partition.time-format")
    zone_name = opts.get("table.auto-partition.time-zone")
    if zone_name is not None:
        try:
            zone = _zone(zone_name)
        except Exception:  # noqa: BLE001 - ZoneInfo raises several kinds
            raise _invalid_config(f"Invalid value for config 'table.auto-partition.time-zone': unknown time zone "
                                  f"'{zone_name}'") from None
    else:
        zone = _zone(None)
    if fmt is not None:
        try:
            tokens = compile_time_format(fmt, unit)
        except ValueError as e:
            raise _invalid_table(f"Invalid table property 'table.auto-partition.time-format': {e}") from None
        sample = format_time(tokens, datetime(2024, 11, 11, 11, tzinfo=zone))
        reason = invalid_name_reason(sample) or _prefix_reason(sample)
        if reason:
            raise _invalid_table(f"Invalid table property 'table.auto-partition.time-format': Time format '{fmt}' "
                                 f"generates invalid partition value '{sample}': {reason}.")
    if not enabled:
        return
    key = opts.get("table.auto-partition.key")
    if len(partition_keys) > 1:
        if not key or not key.strip():
            raise _invalid_table("Currently, auto partitioned table must set one auto partition key when it has "
                                 "multiple partition keys. Please set table property 'table.auto-partition.key'.")
        if key not in partition_keys:
            raise _invalid_table(f"The specified key for auto partitioned table is not a partition key. Your key "
                                 f"'{key}' is not in key list {list(partition_keys)}")
        if opts.get("table.auto-partition.num-precreate", 2) > 0:
            raise _invalid_table("For a partitioned table with multiple partition keys, auto pre-create is "
                                 "unsupported and this value must be set to 0, but is "
                                 f"{opts.get('table.auto-partition.num-precreate')}")
    auto_key = key if key and key.strip() else partition_keys[0]
    if auto_key not in types:
        raise _invalid_table(f"The specified key for auto partitioned table is not a partition key. Your key "
                             f"'{auto_key}' is not in key list {list(partition_keys)}")
    if types[auto_key].root == DATE:
        if unit != "DAY":
            raise _invalid_table(f"Table property 'table.auto-partition.time-unit' must be 'DAY' when auto "
                                 f"partition key '{auto_key}' has DATE type.")
        if fmt != "yyyy-MM-dd":
            raise _invalid_table(f"Table property 'table.auto-partition.time-format' must be 'yyyy-MM-dd' when "
                                 f"auto partition key '{auto_key}' has DATE type.")


def _check_statistics(opts, pk, types) -> None:
    value = opts.get("table.statistics.columns")
    if value is None:
        return
    if pk:
        raise _invalid_config("Statistics columns are not supported for primary key tables. Please remove the "
                              "'table.statistics.columns' property.")
    if value.strip() == "*":
        return
    cols = [c.strip() for c in value.split(",") if c.strip()]
    if not cols:
        raise _invalid_config("Statistics columns configuration cannot be empty. Use '*' to collect statistics "
                              "for all supported columns, or remove the property to disable statistics collection.")
    for c in cols:
        if c not in types:
            raise _invalid_config(f"Column '{c}' specified in statistics collection does not exist in table schema")
        if types[c].root not in _STATS_ROOTS:
            raise _invalid_config(f"Column '{c}' of type {_type_name(types[c])} is not supported for statistics "
                                  "collection.")


def parse_database_json(data: Optional[bytes], name: str) -> tuple:
    if not data:
        return None, {}
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FlussError(f"Invalid database descriptor JSON for database {name}: {e}",
                         Errors.INVALID_DATABASE_EXCEPTION) from None
    if not isinstance(obj, dict):
        raise FlussError(f"Invalid database descriptor for database {name}: expected a JSON object",
                         Errors.INVALID_DATABASE_EXCEPTION)
    comment = obj.get("comment")
    custom = obj.get("custom_properties") or {}
    if (comment is not None and not isinstance(comment, str)) or not isinstance(custom, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in custom.items()):
        raise FlussError(f"Invalid database descriptor for database {name}: 'comment' must be a string and "
                         "'custom_properties' a string map", Errors.INVALID_DATABASE_EXCEPTION)
    return comment, dict(custom)


# ---------------------------------------------------------------------------------------------
# the service
# ---------------------------------------------------------------------------------------------
def _path(tp) -> str:
    return f"{tp.database_name}.{tp.table_name}"


class Coordinator:
    def __init__(self, server, replicas):
        self.server = server
        self.replicas = replicas
        self.catalog = server.catalog
        self._task: Optional[asyncio.Task] = None
        self._nodes_cache: dict = {}
        self._meta_cache: dict = {}  # table id -> (version key, serialized field 3 of MetadataResponse)
        self._pmeta_cache: dict = {}  # partition id -> serialized field 4 (ids are never reused)

    # -- life cycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        await self.run_auto_partitioning()
        self._task = asyncio.get_running_loop().create_task(self._auto_partition_loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
            self._task = None

    def handlers(self) -> dict:
        return {
            Api.GET_METADATA: self.get_metadata,
            Api.CREATE_DATABASE: self.create_database,
            Api.DROP_DATABASE: self.drop_database,
            Api.LIST_DATABASES: self.list_databases,
            Api.DATABASE_EXISTS: self.database_exists,
            Api.GET_DATABASE_INFO: self.get_database_info,
            Api.ALTER_DATABASE: self.alter_database,
            Api.CREATE_TABLE: self.create_table,
            Api.DROP_TABLE: self.drop_table,
            Api.GET_TABLE_INFO: self.get_table_info,
            Api.LIST_TABLES: self.list_tables,
            Api.TABLE_EXISTS: self.table_exists,
            Api.GET_TABLE_SCHEMA: self.get_table_schema,
            Api.LIST_PARTITION_INFOS: self.list_partition_infos,
            Api.CREATE_PARTITION: self.create_partition,
            Api.DROP_PARTITION: self.drop_partition,
            Api.GET_LAKE_SNAPSHOT: self.get_lake_snapshot,
            Api.GET_LATEST_KV_SNAPSHOTS: self.get_latest_kv_snapshots,
            Api.GET_KV_SNAPSHOT_METADATA: self.get_kv_snapshot_metadata,
            Api.GET_FILESYSTEM_SECURITY_TOKEN: self.get_filesystem_security_token,
            Api.CREATE_ACLS: self.security_disabled,
            Api.LIST_ACLS: self.security_disabled,
            Api.DROP_ACLS: self.security_disabled,
            Api.DESCRIBE_CLUSTER_CONFIGS: self.describe_cluster_configs,
            Api.GET_CLUSTER_HEALTH: self.get_cluster_health,
        }

    # -- helpers -------------------------------------------------------------------------------
    def _table(self, tp) -> TableEntry:
        entry = self.catalog.table(tp.database_name, tp.table_name)
        if entry is None:
            raise FlussError(f"Table '{_path(tp)}' does not exist.", Errors.TABLE_NOT_EXIST)
        return entry

    def _fill_buckets(self, target, table_id: int, partition_id: Optional[int], entry: TableEntry) -> None:
        rf = _rf_of(entry)
        leader_of = self.server.leader_of
        replicas_of = self.server.replicas_of
        for b in range(entry.bucket_count):
            bm = target.add(bucket_id=b, leader_id=leader_of(table_id, partition_id, b), leader_epoch=0)
            bm.replica_id.extend(replicas_of(table_id, partition_id, b, rf))

    def _drop_data(self, table_id: int, partition_id: Optional[int] = None) -> None:
        if partition_id is None:
            self._meta_cache.pop(table_id, None)
        else:
            self._pmeta_cache.pop(partition_id, None)
        try:
            if partition_id is None:
                self.replicas.drop_table(table_id)
            else:
                self.replicas.drop_partition(table_id, partition_id)
        except Exception:  # noqa: BLE001 - metadata is already gone; leftover files are only garbage
            log.exception("cleaning up data of table %s partition %s failed", table_id, partition_id)

    # -- metadata ------------------------------------------------------------------------------
    async def get_metadata(self, ctx, version, req):
        # Clients ask for the same tables over and over: the answer is spliced together from cached,
        # already-serialized pieces (a protobuf message is the concatenation of its fields).
        parts = [self._nodes_prefix(ctx.listener)]
        for tp in req.table_path:
            parts.append(self._table_metadata_field(self._table(tp)))
        for pp in req.partitions_path:
            entry = self.catalog.table(pp.database_name, pp.table_name)
            if entry is None:
                raise FlussError(f"Table '{pp.database_name}.{pp.table_name}' does not exist.", Errors.TABLE_NOT_EXIST)
            part = entry.partition_by_name(pp.partition_name) if pp.HasField("partition_name") else None
            if part is None:
                raise FlussError(f"Table partition '{entry.path}(p={pp.partition_name})' does not exist.",
                                 Errors.PARTITION_NOT_EXISTS)
            parts.append(self._partition_metadata_field(entry, part))
        for pid in req.partitions_id:
            entry = self.catalog.table_of_partition(pid)
            part = entry.partitions.get(pid) if entry is not None else None
            if part is None:
                raise FlussError(f"Partition with id {pid} does not exist.", Errors.PARTITION_NOT_EXISTS)
            parts.append(self._partition_metadata_field(entry, part))
        return b"".join(parts)

    def _nodes_prefix(self, listener: str) -> bytes:
        cached = self._nodes_cache.get(listener)
        if cached is None:
            resp = pb.MetadataResponse()
            node_id, host, port = self.server.coordinator_node(listener)
            cs = resp.coordinator_server
            cs.node_id, cs.host, cs.port = node_id, host, port
            for nid, h, p in self.server.tablet_nodes(listener):
                resp.tablet_servers.add(node_id=nid, host=h, port=p)
            cached = self._nodes_cache[listener] = resp.SerializeToString()
        return cached

    def _table_metadata_field(self, entry: TableEntry) -> bytes:
        key = (entry.table_id, entry.schema_id, entry.modified_time)
        cached = self._meta_cache.get(entry.table_id)
        if cached is None or cached[0] != key:
            tm = pb.PbTableMetadata(table_id=entry.table_id, schema_id=entry.schema_id, table_json=entry.table_json,
                                    created_time=entry.created_time, modified_time=entry.modified_time)
            tm.table_path.database_name = entry.database
            tm.table_path.table_name = entry.table_name
            if not entry.is_partitioned:
                self._fill_buckets(tm.bucket_metadata, entry.table_id, None, entry)
            cached = (key, table_metadata_field(tm.SerializeToString()))
            self._meta_cache[entry.table_id] = cached
        return cached[1]

    def _partition_metadata_field(self, entry: TableEntry, part: PartitionEntry) -> bytes:
        cached = self._pmeta_cache.get(part.partition_id)
        if cached is None:
            pm = pb.PbPartitionMetadata(table_id=entry.table_id, partition_name=part.name,
                                        partition_id=part.partition_id)
            self._fill_buckets(pm.bucket_metadata, entry.table_id, part.partition_id, entry)
            cached = self._pmeta_cache[part.partition_id] = partition_metadata_field(pm.SerializeToString())
        return cached

    # -- databases -----------------------------------------------------------------------------
    async def create_database(self, ctx, version, req):
        name = req.database_name
        check_database_name(name)
        comment, custom = parse_database_json(req.database_json if req.HasField("database_json") else None, name)
        if name in self.catalog.databases:
            if req.ignore_if_exists:
                return pb.CreateDatabaseResponse()
            raise FlussError(f"Database {name} already exists.", Errors.DATABASE_ALREADY_EXIST)
        self.catalog.add_database(name, comment, custom)
        await self.catalog.commit()
        return pb.CreateDatabaseResponse()

    async def drop_database(self, ctx, version, req):
        name = req.database_name
        db = self.catalog.databases.get(name)
        if db is None:
            if req.ignore_if_not_exists:
                return pb.DropDatabaseResponse()
            raise FlussError(f"Database {name} does not exist.", Errors.DATABASE_NOT_EXIST)
        if name == BUILTIN_DATABASE:
            raise FlussError(f"Dropping the built-in database '{BUILTIN_DATABASE}' is not allowed.",
                             Errors.UNKNOWN_SERVER_ERROR)
        if db.tables and not req.cascade:
            raise FlussError(f"Database {name} is not empty.", Errors.DATABASE_NOT_EMPTY)
        dropped = self.catalog.remove_database(name)
        await self.catalog.commit()
        for t in dropped:
            self._drop_data(t.table_id)
        return pb.DropDatabaseResponse()

    async def list_databases(self, ctx, version, req):
        resp = pb.ListDatabasesResponse()
        if req.include_summary:
            for db in self.catalog.databases.values():
                resp.database_summary.add(database_name=db.name, created_time=db.created_time,
                                          table_count=len(db.tables))
        else:
            resp.database_name.extend(self.catalog.databases.keys())
        return resp

    async def database_exists(self, ctx, version, req):
        return pb.DatabaseExistsResponse(exists=req.database_name in self.catalog.databases)

    def _database(self, name):
        db = self.catalog.databases.get(name)
        if db is None:
            raise FlussError(f"Database {name} does not exist.", Errors.DATABASE_NOT_EXIST)
        return db

    async def get_database_info(self, ctx, version, req):
        db = self._database(req.database_name)
        return pb.GetDatabaseInfoResponse(database_json=db.descriptor_json(), created_time=db.created_time,
                                          modified_time=db.modified_time)

    async def alter_database(self, ctx, version, req):
        db = self.catalog.databases.get(req.database_name)
        if db is None:
            if req.ignore_if_not_exists:
                return pb.AlterDatabaseResponse()
            raise FlussError(f"Database {req.database_name} does not exist.", Errors.DATABASE_NOT_EXIST)
        custom = dict(db.custom_properties)
        for change in req.config_changes:
            if change.op_type == 0:
                if not change.HasField("config_value"):
                    raise FlussError(f"Setting '{change.config_key}' of database {db.name} needs a value",
                                     Errors.INVALID_CONFIG_EXCEPTION)
                custom[change.config_key] = change.config_value
            elif change.op_type == 1:
                custom.pop(change.config_key, None)
            else:
                raise FlussError(f"Unsupported alter operation {change.op_type} for '{change.config_key}' of "
                                 f"database {db.name}", Errors.INVALID_CONFIG_EXCEPTION)
        db.custom_properties = custom
        if req.HasField("comment"):
            db.comment = req.comment
        db.modified_time = now_ms()
        self.catalog.touch()
        await self.catalog.commit()
        return pb.AlterDatabaseResponse()

    # -- tables --------------------------------------------------------------------------------
    async def create_table(self, ctx, version, req):
        tp = req.table_path
        check_database_name(tp.database_name, creating=False)
        check_table_name(tp.table_name)
        path = _path(tp)
        desc = prepare_descriptor(path, req.table_json, self.server.num_tablet_servers)
        db = self.catalog.databases.get(tp.database_name)
        if req.ignore_if_exists and db is not None and tp.table_name in db.tables:
            return pb.CreateTableResponse()
        if db is None:
            raise FlussError(f"Database {tp.database_name} does not exist.", Errors.DATABASE_NOT_EXIST)
        if tp.table_name in db.tables:
            raise FlussError(f"Table {path} already exists.", Errors.TABLE_ALREADY_EXIST)
        entry = self.catalog.add_table(tp.database_name, tp.table_name, desc)
        await self._auto_partition_table(entry, commit=False)
        await self.catalog.commit()
        return pb.CreateTableResponse()

    async def drop_table(self, ctx, version, req):
        entry = self.catalog.table(req.table_path.database_name, req.table_path.table_name)
        if entry is None:
            if req.ignore_if_not_exists:
                return pb.DropTableResponse()
            raise FlussError(f"Table {_path(req.table_path)} does not exist.", Errors.TABLE_NOT_EXIST)
        self.catalog.remove_table(entry)
        await self.catalog.commit()
        self._drop_data(entry.table_id)
        return pb.DropTableResponse()

    async def get_table_info(self, ctx, version, req):
        entry = self._table(req.table_path)
        return pb.GetTableInfoResponse(table_id=entry.table_id, schema_id=entry.schema_id,
                                       table_json=entry.table_json, created_time=entry.created_time,
                                       modified_time=entry.modified_time)

    async def list_tables(self, ctx, version, req):
        db = self._database(req.database_name)
        resp = pb.ListTablesResponse()
        resp.table_name.extend(db.tables.keys())
        return resp

    async def table_exists(self, ctx, version, req):
        tp = req.table_path
        return pb.TableExistsResponse(exists=self.catalog.table(tp.database_name, tp.table_name) is not None)

    async def get_table_schema(self, ctx, version, req):
        tp = req.table_path
        entry = self.catalog.table(tp.database_name, tp.table_name)
        sid = req.schema_id if req.HasField("schema_id") else (entry.schema_id if entry is not None else 0)
        schema = entry.schemas.get(sid) if entry is not None else None
        if schema is None:
            raise FlussError(f"Schema for table {_path(tp)} with schema id {sid} does not exist.",
                             Errors.SCHEMA_NOT_EXIST)
        return pb.GetTableSchemaResponse(schema_id=sid,
                                         schema_json=json.dumps(schema.to_json(), separators=(",", ":")).encode())

    # -- partitions ----------------------------------------------------------------------------
    def _partitioned_table(self, tp) -> TableEntry:
        entry = self._table(tp)
        if not entry.is_partitioned:
            raise FlussError(f"Table {entry.path} is not a partitioned table.", Errors.TABLE_NOT_PARTITIONED_EXCEPTION)
        return entry

    def _resolve_spec(self, entry: TableEntry, spec_pb, creating: bool) -> tuple:
        spec = {}
        for kv in spec_pb.partition_key_values:
            spec[kv.key] = kv.value
        keys = entry.descriptor.partition_keys
        shown = "{" + ", ".join(f"{k}={v}" for k, v in spec.items()) + "}"
        if len(spec) != len(keys) or len(spec_pb.partition_key_values) != len(keys):
            raise FlussError(f"PartitionSpec size is not equal to partition keys size for partitioned table "
                             f"{entry.path}.", Errors.PARTITION_SPEC_INVALID_EXCEPTION)
        values = []
        for k in keys:
            if k not in spec:
                raise FlussError(f"PartitionSpec {shown} does not contain partition key '{k}' for partitioned "
                                 f"table {entry.path}.", Errors.PARTITION_SPEC_INVALID_EXCEPTION)
            values.append(spec[k])
        for v in values:
            reason = invalid_name_reason(v) or (_prefix_reason(v) if creating else None)
            if reason:
                raise FlussError(f"The partition value {v} is invalid: {reason}", Errors.PARTITION_SPEC_INVALID_EXCEPTION)
        ordered = {k: spec[k] for k in keys}
        return ordered, PARTITION_SEPARATOR.join(values)

    def _check_partition_time(self, entry: TableEntry, spec: dict) -> None:
        auto = AutoPartition.of(entry)
        if auto is None or not auto.checks_time:
            return
        value = spec.get(auto.key)
        if value is None or not parses_as_time(auto.tokens, value):
            fmt = auto.format or _DEFAULT_TIME_FORMATS[auto.unit]
            raise FlussError(f"Partition value '{value}' does not match the expected format '{fmt}' for "
                             f"auto-partition time unit '{auto.unit}'.", Errors.PARTITION_SPEC_INVALID_EXCEPTION)
        if not auto.enabled or auto.num_retention < 0:
            return
        earliest = auto.time_value(datetime.now(timezone.utc), -auto.num_retention)
        if earliest > value:
            raise FlussError(f"Partition value '{value}' is out-of-date. The earliest retained partition is "
                             f"'{earliest}'.", Errors.PARTITION_SPEC_INVALID_EXCEPTION)

    async def list_partition_infos(self, ctx, version, req):
        entry = self._partitioned_table(req.table_path)
        wanted = {}
        if req.HasField("partial_partition_spec"):
            for kv in req.partial_partition_spec.partition_key_values:
                if kv.key not in entry.descriptor.partition_keys:
                    raise FlussError(f"Partition key '{kv.key}' in the partial partition spec is not a partition "
                                     f"key of table {entry.path} (keys: {list(entry.descriptor.partition_keys)}).",
                                     Errors.PARTITION_SPEC_INVALID_EXCEPTION)
                wanted[kv.key] = kv.value
        resp = pb.ListPartitionInfosResponse()
        for pid in sorted(entry.partitions):
            part = entry.partitions[pid]
            if part.name == HISTORICAL_PARTITION:
                continue
            if any(part.spec.get(k) != v for k, v in wanted.items()):
                continue
            info = resp.partitions_info.add(partition_id=pid)
            for k, v in part.spec.items():
                info.partition_spec.partition_key_values.add(key=k, value=v)
        return resp

    async def create_partition(self, ctx, version, req):
        entry = self._partitioned_table(req.table_path)
        spec, name = self._resolve_spec(entry, req.partition_spec, creating=True)
        self._check_partition_time(entry, spec)
        if entry.partition_by_name(name) is not None:
            if req.ignore_if_not_exists:  # the field's name lies: it means "ignore if it already exists"
                return pb.CreatePartitionResponse()
            raise FlussError(f"Partition '{name}' already exists for table {entry.path}.",
                             Errors.PARTITION_ALREADY_EXISTS)
        self._check_partition_limit(entry)
        self.catalog.add_partition(entry, name, spec)
        await self.catalog.commit()
        return pb.CreatePartitionResponse()

    def _check_partition_limit(self, entry: TableEntry) -> None:
        if len(entry.partitions) >= MAX_PARTITION_NUM:
            raise FlussError(f"Exceed the maximum number of partitions for table {entry.path}: only allow "
                             f"{MAX_PARTITION_NUM} partitions.", Errors.PARTITION_MAX_NUM_EXCEPTION)

    async def drop_partition(self, ctx, version, req):
        entry = self._partitioned_table(req.table_path)
        spec, name = self._resolve_spec(entry, req.partition_spec, creating=False)
        part = entry.partition_by_name(name)
        if part is None:
            if req.ignore_if_not_exists:
                return pb.DropPartitionResponse()
            raise FlussError(f"Partition '{name}' does not exist for table {entry.path}.", Errors.PARTITION_NOT_EXISTS)
        self.catalog.remove_partition(entry, part)
        await self.catalog.commit()
        self._drop_data(entry.table_id, part.partition_id)
        return pb.DropPartitionResponse()

    # -- snapshots, tokens, misc -----------------------------------------------------------------
    async def get_lake_snapshot(self, ctx, version, req):
        entry = self._table(req.table_path)
        if req.HasField("snapshot_id") and req.readable:
            raise FlussError("snapshot_id and readable=true cannot be set together", Errors.UNKNOWN_SERVER_ERROR)
        raise FlussError(f"Lake table snapshot not exist for table: {entry.path}, table id: {entry.table_id}",
                         Errors.LAKE_SNAPSHOT_NOT_EXIST)

    async def get_latest_kv_snapshots(self, ctx, version, req):
        entry = self._table(req.table_path)
        if not entry.has_primary_key:
            raise FlussError(f"Table '{entry.path}' is not a primary key table", Errors.NON_PRIMARY_KEY_TABLE_EXCEPTION)
        resp = pb.GetLatestKvSnapshotsResponse(table_id=entry.table_id)
        if entry.is_partitioned:
            if not req.HasField("partition_name"):
                raise FlussError(f"Partition name is required for partitioned table {entry.path}",
                                 Errors.PARTITION_NOT_EXISTS)
            part = entry.partition_by_name(req.partition_name)
            if part is None:
                raise FlussError(f"Table partition '{entry.path}(p={req.partition_name})' does not exist.",
                                 Errors.PARTITION_NOT_EXISTS)
            resp.partition_id = part.partition_id
        elif req.HasField("partition_name"):
            raise FlussError(f"Table {entry.path} is not a partitioned table.", Errors.TABLE_NOT_PARTITIONED_EXCEPTION)
        for b in range(entry.bucket_count):
            resp.latest_snapshots.add(bucket_id=b)
        return resp

    async def get_kv_snapshot_metadata(self, ctx, version, req):
        entry = self.catalog.table_by_id(req.table_id)
        where = entry.path if entry is not None else f"table id {req.table_id}"
        raise FlussError(f"Kv snapshot {req.snapshot_id} of {where} bucket {req.bucket_id} does not exist.",
                         Errors.KV_SNAPSHOT_NOT_EXIST)

    async def get_filesystem_security_token(self, ctx, version, req):
        # the replicas know the remote store (file system or S3 credentials)
        return self.replicas.filesystem_security_token()

    async def security_disabled(self, ctx, version, req):
        raise FlussError("No Authorizer is configured.", Errors.SECURITY_DISABLED_EXCEPTION)

    async def describe_cluster_configs(self, ctx, version, req):
        resp = pb.DescribeClusterConfigsResponse()
        for key, value in (("default.bucket.number", str(DEFAULT_BUCKET_NUMBER)),
                           ("default.replication.factor", str(DEFAULT_REPLICATION_FACTOR)),
                           ("max.bucket.num", str(MAX_BUCKET_NUM)),
                           ("max.partition.num", str(MAX_PARTITION_NUM))):
            resp.configs.add(config_key=key, config_value=value, config_source="DEFAULT")
        return resp

    async def get_cluster_health(self, ctx, version, req):
        replicas = 0
        leaders = 0
        for entry in self.catalog.tables_by_id.values():
            units = len(entry.partitions) if entry.is_partitioned else 1
            leaders += units * entry.bucket_count
            replicas += units * entry.bucket_count * _rf_of(entry)
        return pb.GetClusterHealthResponse(num_replicas=replicas, in_sync_replicas=replicas,
                                           num_leader_replicas=leaders, active_leader_replicas=leaders, status=0)

    # -- auto-partitioning (RPC.md §7.6) -------------------------------------------------------
    async def _auto_partition_loop(self) -> None:
        while True:
            await asyncio.sleep(self.server.auto_partition_interval)
            try:
                await self.run_auto_partitioning()
            except Exception:  # noqa: BLE001 - keep the loop alive; the next round retries
                log.exception("auto-partitioning round failed")

    async def run_auto_partitioning(self) -> None:
        changed = False
        for entry in list(self.catalog.tables_by_id.values()):
            changed |= await self._auto_partition_table(entry, commit=False)
        if changed:
            await self.catalog.commit()

    async def _auto_partition_table(self, entry: TableEntry, commit: bool = True) -> bool:
        if not entry.is_partitioned:
            return False
        auto = AutoPartition.of(entry)
        if auto is None or not auto.enabled:
            return False
        now = datetime.now(timezone.utc)
        changed = False
        if auto.num_retention >= 0:
            earliest = auto.time_value(now, -auto.num_retention)
            for part in list(entry.partitions.values()):
                value = part.spec.get(auto.key)
                if value is not None and parses_as_time(auto.tokens, value) and value < earliest:
                    self.catalog.remove_partition(entry, part)
                    self._drop_data(entry.table_id, part.partition_id)
                    changed = True
        if len(entry.descriptor.partition_keys) == 1:
            for offset in range(max(0, auto.num_precreate)):
                value = auto.time_value(now, offset)
                if entry.partition_by_name(value) is not None:
                    continue
                if len(entry.partitions) >= MAX_PARTITION_NUM:
                    log.warning("auto-partitioning %s: partition limit %d reached", entry.path, MAX_PARTITION_NUM)
                    break
                self.catalog.add_partition(entry, value, {auto.key: value})
                changed = True
        if changed and commit:
            await self.catalog.commit()
        return changed


def _rf_of(entry: TableEntry) -> int:
    try:
        return int(entry.descriptor.properties.get("table.replication.factor", "1"))
    except ValueError:
        return 1
