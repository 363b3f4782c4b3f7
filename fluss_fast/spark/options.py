"""The data source's options: which table, the client configuration, and the scan settings.

Option names follow the Scala connector where it has them (``scan.startup.mode``,
``scan.incremental.start.timestamp``, ``scan.maxRecordsPerPartition``, ...). Every other option must be
a client key (``bootstrap.servers``, ``writer.batch-size``, ``security.sasl.username``, ...), with or
without the Java client's ``client.`` prefix; anything else is refused by name, so a typo never
silently falls back to a default. Spark hands options over lower-cased.
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

from ..config import _BY_KEY, ALIASES, Config
from ..engine.options import SourceOptions
from ..errors import ErrorCode, FlussError

STARTUP_MODES = ("full", "earliest", "latest", "timestamp")
VIRTUAL_SUFFIXES = ("changelog", "binlog", "lake")

# Scala connector options (and ours), lower-cased as Spark delivers them
SCAN_STARTUP_MODE = "scan.startup.mode"
SCAN_STARTUP_TIMESTAMP = "scan.startup.timestamp"
SCAN_INCREMENTAL_START = "scan.incremental.start.timestamp"
SCAN_INCREMENTAL_END = "scan.incremental.end.timestamp"
SCAN_MAX_RECORDS_PER_PARTITION = "scan.maxrecordsperpartition"
SCAN_POLL_TIMEOUT = "scan.poll.timeout"
READ_OPTIMIZED = "read.optimized"
MAX_RECORDS_PER_TRIGGER = "maxrecordspertrigger"
SCAN_PUSHDOWN = "scan.filter-pushdown.enabled"
SCAN_STATS_DIR = "scan.stats.dir"
TABLE = "table"
PATH = "path"

_SOURCE_KEYS = {SCAN_STARTUP_MODE, SCAN_STARTUP_TIMESTAMP, SCAN_INCREMENTAL_START, SCAN_INCREMENTAL_END,
                SCAN_MAX_RECORDS_PER_PARTITION, SCAN_POLL_TIMEOUT, READ_OPTIMIZED, MAX_RECORDS_PER_TRIGGER,
                SCAN_PUSHDOWN, SCAN_STATS_DIR, TABLE, PATH}
# options Spark itself sets or reads on every source and sink
_SPARK_KEYS = {"checkpointlocation", "queryname"}
_CLIENT_KEYS = {k.lower(): k for k in list(_BY_KEY) + list(ALIASES)}


def _err(message: str) -> FlussError:
    return FlussError(message, ErrorCode.CLIENT_ERROR)


def parse_timestamp(key: str, value: str) -> int:
    """Epoch milliseconds, or ``yyyy-MM-dd HH:mm:ss`` in the local time zone (the Scala connector
    reads it in the session time zone, which defaults to the JVM's local one)."""
    text = value.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = _dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise _err(f"Invalid value '{value}' for option '{key}': expected epoch milliseconds or "
                   f"'yyyy-MM-dd HH:mm:ss'") from None
    return int(moment.astimezone().timestamp() * 1000)


def _positive_int(key: str, value: str) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        n = 0
    if n <= 0:
        raise _err(f"Invalid value '{value}' for option '{key}': expected a positive integer")
    return n


def _bool(key: str, value: str) -> bool:
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise _err(f"Invalid value '{value}' for option '{key}': expected 'true' or 'false'")


def _duration_ms(key: str, value: str) -> int:
    text = value.strip().lower()
    for suffix, scale in (("ms", 1), ("s", 1000), ("min", 60000)):
        if text.endswith(suffix) and text[:-len(suffix)].strip().isdigit():
            return int(text[:-len(suffix)]) * scale
    if text.isdigit():
        return int(text)
    raise _err(f"Invalid value '{value}' for option '{key}': expected a duration such as '10s' or '500ms'")


def _table_name(options: Mapping[str, str]) -> tuple[str, str, str | None]:
    raw = options.get(TABLE) or options.get(PATH)
    if not raw:
        raise _err("The fluss data source needs a table: .load('db.table') / .save('db.table') or "
                   ".option('table', 'db.table')")
    name, virtual = raw, None
    if "$" in raw:
        name, virtual = raw.split("$", 1)
        if virtual.lower() not in VIRTUAL_SUFFIXES:
            raise _err(f"Unknown virtual table '${virtual}' in '{raw}': expected $changelog, $binlog or $lake")
        virtual = virtual.lower()
    parts = name.split(".")
    if len(parts) != 2 or not all(parts):
        raise _err(f"Invalid table '{raw}': expected 'database.table'")
    return parts[0], parts[1], virtual


def parse(options: Mapping[str, str]) -> SourceOptions:
    """SourceOptions of a data source's option map; FlussError naming the first bad option."""
    opts = {str(k).lower(): str(v) for k, v in dict(options).items()}
    database, table, virtual = _table_name(opts)
    client: dict[str, str] = {}
    for key, value in opts.items():
        if key in _SOURCE_KEYS or key in _SPARK_KEYS:
            continue
        # a few client keys (client.compression-threads) carry the prefix in their own name
        canonical = _CLIENT_KEYS.get(key)
        if canonical is None and key.startswith("client."):
            canonical = _CLIENT_KEYS.get(key[len("client."):])
        if canonical is None:
            raise _err(f"Unknown option '{key}' for the fluss data source. Known options: table, "
                       f"scan.startup.mode, scan.startup.timestamp, scan.incremental.start.timestamp, "
                       f"scan.incremental.end.timestamp, scan.maxRecordsPerPartition, scan.poll.timeout, "
                       f"maxRecordsPerTrigger, read.optimized, {SCAN_PUSHDOWN}, {SCAN_STATS_DIR}, and the client keys "
                       f"({', '.join(sorted(_BY_KEY))})")
        client[ALIASES.get(canonical, canonical)] = value
    if "bootstrap.servers" not in client:
        raise _err("Missing option 'bootstrap.servers' (host:port of a Fluss coordinator)")
    try:
        Config(client)  # the client's own checks, with its messages naming key and value
    except FlussError as e:
        raise _err(f"Invalid client option: {e.message}") from None
    mode = opts.get(SCAN_STARTUP_MODE, "full").strip().lower()
    if mode not in STARTUP_MODES:
        raise _err(f"Invalid value '{opts[SCAN_STARTUP_MODE]}' for option 'scan.startup.mode': expected "
                   f"one of {', '.join(STARTUP_MODES)}")
    startup_ts = None
    if SCAN_STARTUP_TIMESTAMP in opts:
        startup_ts = parse_timestamp(SCAN_STARTUP_TIMESTAMP, opts[SCAN_STARTUP_TIMESTAMP])
    if mode == "timestamp" and startup_ts is None:
        raise _err("scan.startup.mode 'timestamp' needs option 'scan.startup.timestamp'")
    inc_start = inc_end = None
    if SCAN_INCREMENTAL_START in opts:
        if not opts[SCAN_INCREMENTAL_START].strip():
            raise _err("Option 'scan.incremental.start.timestamp' is blank: give epoch milliseconds "
                       "or 'yyyy-MM-dd HH:mm:ss', or leave it out for a full batch read")
        inc_start = parse_timestamp(SCAN_INCREMENTAL_START, opts[SCAN_INCREMENTAL_START])
    if SCAN_INCREMENTAL_END in opts:
        if inc_start is None:
            raise _err("Option 'scan.incremental.end.timestamp' needs 'scan.incremental.start.timestamp'")
        inc_end = parse_timestamp(SCAN_INCREMENTAL_END, opts[SCAN_INCREMENTAL_END])
        if inc_end < inc_start:
            raise _err(f"Option 'scan.incremental.end.timestamp' ({inc_end}) is before "
                       f"'scan.incremental.start.timestamp' ({inc_start})")
    read_optimized = _bool(READ_OPTIMIZED, opts[READ_OPTIMIZED]) if READ_OPTIMIZED in opts else False
    if read_optimized and inc_start is not None:
        # as Java's connector: a time-range read folds only the log, read.optimized skips the log
        raise _err("Option 'read.optimized' = true (the lake snapshot only) cannot be combined with "
                   "'scan.incremental.start.timestamp' (a time-range read of the Fluss log only)")
    if virtual == "lake" and inc_start is not None:
        raise _err(f"'{database}.{table}$lake' is the lake snapshot: it takes no "
                   "'scan.incremental.start.timestamp'")
    return SourceOptions(
        database=database, table=table, virtual=virtual,
        client=tuple(sorted(client.items())),
        startup_mode=mode, startup_timestamp=startup_ts,
        incremental_start=inc_start, incremental_end=inc_end,
        max_records_per_partition=(_positive_int("scan.maxRecordsPerPartition", opts[SCAN_MAX_RECORDS_PER_PARTITION])
                                   if SCAN_MAX_RECORDS_PER_PARTITION in opts else None),
        poll_timeout_ms=(_duration_ms(SCAN_POLL_TIMEOUT, opts[SCAN_POLL_TIMEOUT])
                         if SCAN_POLL_TIMEOUT in opts else 10000),
        max_records_per_trigger=(_positive_int("maxRecordsPerTrigger", opts[MAX_RECORDS_PER_TRIGGER])
                                 if MAX_RECORDS_PER_TRIGGER in opts else None),
        # off unless asked for: Spark (4.1-4.3) keeps the reader planned with one query's pushed
        # filters for a later query on the same DataFrame that has no filter it can push, which
        # would apply stale filters (PythonDataSourceV2.readInfo is only replaced by a pushdown)
        pushdown=_bool(SCAN_PUSHDOWN, opts[SCAN_PUSHDOWN]) if SCAN_PUSHDOWN in opts else False,
        stats_dir=opts.get(SCAN_STATS_DIR) or None,
        read_optimized=read_optimized,
    )
