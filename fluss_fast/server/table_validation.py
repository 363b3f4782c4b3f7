"""CREATE_TABLE / CREATE_DATABASE requests: parse, check and default the descriptor
(docs/contributing/protocol.md §7.3, §7.4) in the Java coordinator's order, so that error codes match
(``TableDescriptorValidation``)."""
from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

from ..datatypes import (
    ARRAY,
    BIGINT,
    DATE,
    INTEGER,
    MAP,
    NESTED,
    PARTITION_KEY_ROOTS,
    ROW,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    DataType,
    SchemaInfo,
    TableDescriptorInfo,
)
from ..error_codes import Errors
from ..errors import FlussError
from .names import invalid_name_reason, prefix_reason
from .table_options import (
    DEFAULT_BUCKET_NUMBER,
    DEFAULT_REPLICATION_FACTOR,
    MAX_BUCKET_NUM,
    RESERVED_COLUMNS,
    TableOptions,
    invalid_config,
    invalid_table,
)
from .time_formats import compile_time_format, format_time, time_zone

_STATS_ROOTS = ("BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "STRING", "CHAR",
                "DECIMAL", "DATE", "TIME_WITHOUT_TIME_ZONE", "TIMESTAMP_WITHOUT_TIME_ZONE",
                "TIMESTAMP_WITH_LOCAL_TIME_ZONE")


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
        raise invalid_table(f"Invalid table descriptor JSON for table {path}: {e}") from None
    schema = desc.schema
    names = [c.name for c in schema.columns]
    if not names:
        raise invalid_table(f"Table {path} must have at least one column")
    seen = set()
    for n in names:
        if not isinstance(n, str) or not n:
            raise invalid_table(f"Table {path} has a column with an empty or non-string name")
        if n in seen:
            raise invalid_table(f"Table column {names} must not contain duplicate fields. Found: ['{n}']")
        seen.add(n)
    pk = tuple(schema.primary_key)
    if len(set(pk)) != len(pk):
        raise invalid_table(f"Primary key constraint {list(pk)} of table {path} must not contain duplicate columns.")
    for k in pk:
        if k not in seen:
            raise invalid_table(f"Primary key column '{k}' of table {path} does not exist in the schema {names}.")
    for k in schema.auto_increment_columns:
        if k not in seen:
            raise invalid_table(f"Auto increment column '{k}' of table {path} does not exist in the schema.")
    # Column ids: all or none; none -> 0..n-1.
    ids = [c.id for c in schema.columns]
    columns = list(schema.columns)
    if all(i is None for i in ids):
        columns = [replace(c, id=i) for i, c in enumerate(columns)]
    elif any(i is None for i in ids):
        raise invalid_table(f"Table {path}: either all columns must have an id or none may")
    elif len(set(ids)) != len(ids):
        raise invalid_table(f"Table {path}: column ids {ids} must be unique")
    if pk:
        columns = [replace(c, type=c.type.with_nullable(False)) if c.name in pk else c for c in columns]
    used_ids = [c.id for c in columns]
    for c in columns:
        _walk_row_ids(c.type, used_ids)
    highest = max(used_ids) if used_ids else -1
    if schema.highest_field_id is not None and schema.highest_field_id < highest:
        raise invalid_table(f"Table {path}: highest_field_id {schema.highest_field_id} is smaller than the "
                             f"largest field id in use ({highest})")
    new_schema = SchemaInfo(tuple(columns), pk, tuple(schema.auto_increment_columns),
                            schema.highest_field_id if schema.highest_field_id is not None else highest)
    types = {c.name: c.type for c in columns}

    partition_keys = tuple(desc.partition_keys)
    if len(set(partition_keys)) != len(partition_keys):
        raise invalid_table(f"Partition keys {list(partition_keys)} of table {path} must not contain duplicates.")
    for k in partition_keys:
        if k not in seen:
            raise invalid_table(f"Partition key '{k}' of table {path} does not exist in the schema {names}.")
        if pk and k not in pk:
            raise invalid_table(
                f"Partitioned Primary Key Table requires partition key {list(partition_keys)} is a subset of the "
                f"primary key {list(pk)}.")
    bucket_keys = tuple(desc.bucket_keys)
    for k in bucket_keys:
        if k not in seen:
            raise invalid_table(f"Bucket key '{k}' of table {path} does not exist in the schema {names}.")
        if k in partition_keys:
            raise invalid_table(f"Bucket key {list(bucket_keys)} shouldn't include any column in partition keys "
                                 f"{list(partition_keys)}.")
        if pk and k not in pk:
            raise invalid_table(f"Bucket keys must be a subset of primary keys excluding partition keys for primary "
                                 f"key table. The primary keys are {list(pk)}, the partition keys are "
                                 f"{list(partition_keys)}, but the user-defined bucket keys are {list(bucket_keys)}.")
    if pk and not bucket_keys:
        bucket_keys = tuple(k for k in pk if k not in partition_keys)
        if not bucket_keys:
            raise invalid_table(f"Primary Key constraint {list(pk)} should not be same with partition fields "
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
    opts = TableOptions(props)
    if bucket_count < 1:
        if not partition_keys:
            # Java finds this when it assigns the buckets (TableAssignmentUtils), with an exception
            # Errors has no code for
            raise FlussError(f"Number of buckets must be larger than 0 (table {path} has {bucket_count}).",
                             Errors.UNKNOWN_SERVER_ERROR)
        raise invalid_table(f"Bucket number of table {path} must be positive, got {bucket_count}.")
    if bucket_count > MAX_BUCKET_NUM:
        raise FlussError(f"Bucket count {bucket_count} exceeds the maximum limit {MAX_BUCKET_NUM} for a "
                         "non-partitioned table or partition.", Errors.BUCKET_MAX_NUM_EXCEPTION)
    for k in bucket_keys:
        if types[k].root in NESTED:
            raise invalid_table(f"Bucket key column '{k}' has unsupported data type {_type_name(types[k])}. "
                                 "Currently, bucket key column does not support types: [ARRAY, MAP, ROW].")
    for k in pk:
        if types[k].root in NESTED:
            raise invalid_table(f"Primary key column '{k}' has unsupported data type {_type_name(types[k])}. "
                                 "Currently, primary key column does not support types: [ARRAY, MAP, ROW].")
    rf = opts.get("table.replication.factor")
    if rf <= 0:
        raise invalid_config("'table.replication.factor' must be greater than 0.")
    kv_format = opts.get("table.kv.format", "COMPACTED")
    log_format = opts.get("table.log.format", "ARROW")
    if pk and kv_format == "COMPACTED" and log_format not in ("ARROW", "COMPACTED"):
        raise invalid_config("Currently, Primary Key Table supports ARROW or COMPACTED log format when kv format "
                              "is COMPACTED.")
    version = opts.get("table.kv.format-version")
    if version is not None and not 1 <= version <= 2:
        raise invalid_config(f"Invalid value for config 'table.kv.format-version': {version}. Supported versions "
                              "are 1 and 2.")
    level = opts.get("table.log.arrow.compression.zstd.level")
    if level is not None and not 1 <= level <= 22:
        raise invalid_config(f"Invalid ZSTD compression level: {level}. Expected a value between 1 and 22.")
    _check_merge_engine(opts, pk, columns, types)
    delete_behavior = opts.get("table.delete.behavior")
    if not pk and "table.delete.behavior" in props:
        raise invalid_config("The 'table.delete.behavior' configuration is only supported for primary key tables.")
    engine = opts.get("table.merge-engine")
    if engine in ("FIRST_ROW", "VERSIONED") and delete_behavior == "ALLOW":
        raise invalid_config(f"Table with '{engine}' merge engine does not support delete operations. The "
                              "'table.delete.behavior' config must be set to 'ignore' or 'disable', but got 'allow'.")
    if opts.get("table.log.tiered.local-segments", 2) <= 0:
        raise invalid_config("'table.log.tiered.local-segments' must be greater than 0.")
    local_ttl, ttl = opts.get("table.log.local-ttl"), opts.get("table.log.ttl", 7 * 86400.0)
    if local_ttl is not None and local_ttl > 0 and ttl > 0 and local_ttl > ttl:
        raise invalid_config("'table.log.local-ttl' must be less than or equal to 'table.log.ttl'.")
    _check_historical_partition(opts, pk, partition_keys)
    _check_partitioning(opts, partition_keys, types)
    reserved = [n for n in names if n in RESERVED_COLUMNS]
    if reserved:
        raise invalid_table(f"{', '.join(reserved)} cannot be used as column names, because they are reserved "
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
                raise invalid_config("Aggregation function is only supported for aggregation merge engine table, "
                                      f"but column '{c.name}' has aggregation function '{c.agg_function}'.")
    if engine is None:
        return
    if not pk:
        raise invalid_config("Merge engine is only supported in primary key table.")
    if engine == "VERSIONED":
        ver = opts.get("table.merge-engine.versioned.ver-column")
        if ver is None:
            raise invalid_config("'table.merge-engine.versioned.ver-column' must be set for versioned merge engine.")
        if ver not in types:
            raise invalid_config(f"The version column '{ver}' for versioned merge engine doesn't exist in schema.")
        if types[ver].root not in (INTEGER, BIGINT, TIMESTAMP, TIMESTAMP_LTZ):
            raise invalid_config(f"The version column '{ver}' for versioned merge engine must be one type of "
                                  f"[INT, BIGINT, TIMESTAMP, TIMESTAMP_LTZ], but got {_type_name(types[ver])}.")
    elif engine == "AGGREGATION" and opts.get("table.changelog.image") == "WAL":
        raise invalid_config("Table with 'AGGREGATION' merge engine does not support 'WAL' changelog image mode. "
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
        raise invalid_config("'table.datalake.historical-partition.enabled' has unmet requirements: "
                             f"{'; '.join(unmet)}.")


def _check_partitioning(opts, partition_keys, types) -> None:
    enabled = opts.get("table.auto-partition.enabled", False)
    if not partition_keys:
        if enabled:
            raise invalid_config("Currently, auto partition is only supported for partitioned table, please set "
                                  "table property 'table.auto-partition.enabled' to false.")
        return
    for k in partition_keys:
        if types[k].root not in PARTITION_KEY_ROOTS:
            raise invalid_table(f"Currently, partitioned table supported partition key type are "
                                 f"{list(PARTITION_KEY_ROOTS)}, but got partition key '{k}' with data type "
                                 f"{_type_name(types[k])}.")
    unit = opts.get("table.auto-partition.time-unit", "DAY")
    fmt = opts.get("table.auto-partition.time-format")
    zone_name = opts.get("table.auto-partition.time-zone")
    if zone_name is not None:
        try:
            zone = time_zone(zone_name)
        except Exception:  # noqa: BLE001 - ZoneInfo raises several kinds
            raise invalid_config(f"Invalid value for config 'table.auto-partition.time-zone': unknown time zone "
                                  f"'{zone_name}'") from None
    else:
        zone = time_zone(None)
    if fmt is not None:
        try:
            tokens = compile_time_format(fmt, unit)
        except ValueError as e:
            raise invalid_table(f"Invalid table property 'table.auto-partition.time-format': {e}") from None
        sample = format_time(tokens, datetime(2024, 11, 11, 11, tzinfo=zone))
        reason = invalid_name_reason(sample) or prefix_reason(sample)
        if reason:
            raise invalid_table(f"Invalid table property 'table.auto-partition.time-format': Time format '{fmt}' "
                                 f"generates invalid partition value '{sample}': {reason}.")
    if not enabled:
        return
    key = opts.get("table.auto-partition.key")
    if len(partition_keys) > 1:
        if not key or not key.strip():
            raise invalid_table("Currently, auto partitioned table must set one auto partition key when it has "
                                 "multiple partition keys. Please set table property 'table.auto-partition.key'.")
        if key not in partition_keys:
            raise invalid_table(f"The specified key for auto partitioned table is not a partition key. Your key "
                                 f"'{key}' is not in key list {list(partition_keys)}")
        if opts.get("table.auto-partition.num-precreate", 2) > 0:
            raise invalid_table("For a partitioned table with multiple partition keys, auto pre-create is "
                                 "unsupported and this value must be set to 0, but is "
                                 f"{opts.get('table.auto-partition.num-precreate')}")
    auto_key = key if key and key.strip() else partition_keys[0]
    if auto_key not in types:
        raise invalid_table(f"The specified key for auto partitioned table is not a partition key. Your key "
                             f"'{auto_key}' is not in key list {list(partition_keys)}")
    if types[auto_key].root == DATE:
        if unit != "DAY":
            raise invalid_table(f"Table property 'table.auto-partition.time-unit' must be 'DAY' when auto "
                                 f"partition key '{auto_key}' has DATE type.")
        if fmt != "yyyy-MM-dd":
            raise invalid_table(f"Table property 'table.auto-partition.time-format' must be 'yyyy-MM-dd' when "
                                 f"auto partition key '{auto_key}' has DATE type.")


def _check_statistics(opts, pk, types) -> None:
    value = opts.get("table.statistics.columns")
    if value is None:
        return
    if pk:
        raise invalid_config("Statistics columns are not supported for primary key tables. Please remove the "
                              "'table.statistics.columns' property.")
    if value.strip() == "*":
        return
    cols = [c.strip() for c in value.split(",") if c.strip()]
    if not cols:
        raise invalid_config("Statistics columns configuration cannot be empty. Use '*' to collect statistics "
                              "for all supported columns, or remove the property to disable statistics collection.")
    for c in cols:
        if c not in types:
            raise invalid_config(f"Column '{c}' specified in statistics collection does not exist in table schema")
        if types[c].root not in _STATS_ROOTS:
            raise invalid_config(f"Column '{c}' of type {_type_name(types[c])} is not supported for statistics "
                                  "collection.")


def parse_database_json(data: bytes | None, name: str) -> tuple:
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
