"""ALTER_TABLE (1044) for the embedded coordinator: properties set and reset, and nullable columns
added at the end, with the Java coordinator's rules and codes (``CoordinatorService.alterTable``,
``TableDescriptorValidation.validateAlterTableProperties``, ``SchemaUpdate``).

- A request changes properties or the schema, not both: ``INVALID_ALTER_TABLE_EXCEPTION`` (56).
- ``table.*`` keys outside Java's alterable list are refused with 56, and so are
  ``table.datalake.*`` keys of a table created without a data-lake format; the new values are
  checked as CREATE_TABLE checks them (``INVALID_CONFIG_EXCEPTION``, 39). Other keys are custom
  properties.
- An added column is nullable, goes last and gets the next field id; the table gets a new schema
  id (the old ones stay readable through GET_TABLE_SCHEMA).
"""
from __future__ import annotations

import json
from dataclasses import replace

from ..datatypes import Column, DataType, SchemaInfo, TableDescriptorInfo, assign_field_ids, highest_field_id_of
from ..error_codes import Errors
from ..errors import FlussError
from .table_options import TableOptions

#: Java's ``FlussConfigUtils.ALTERABLE_TABLE_OPTIONS``.
ALTERABLE_TABLE_OPTIONS = frozenset((
    "table.datalake.enabled",
    "table.datalake.historical-partition.enabled",
    "table.datalake.freshness",
    "table.datalake.auto-compaction",
    "table.log.ttl",
    "table.log.tiered.local-segments",
    "table.log.local.ttl",
    "table.auto-partition.enabled",
    "table.auto-partition.num-retention",
    "table.auto-partition.num-precreate",
    "table.statistics.columns",
    "table.kv.standby-replica.enabled",
))

_SET, _DELETE = 0, 1
_POSITION_LAST = 0


def _invalid(msg: str) -> FlussError:
    return FlussError(msg, Errors.INVALID_ALTER_TABLE_EXCEPTION)


def _quoted(keys) -> str:
    return ", ".join(f"'{k}'" for k in keys)


def altered_descriptor(path: str, desc: TableDescriptorInfo, req) -> tuple[TableDescriptorInfo, bool]:
    """The descriptor after the request's changes, and whether the schema changed."""
    has_config = len(req.config_changes) > 0
    schema_changes = len(req.add_columns) + len(req.drop_columns) + len(req.rename_columns) + len(req.modify_columns)
    if has_config and schema_changes:
        raise _invalid("Table alteration can only be applied to one of the following: "
                       "table properties or table schema.")
    if schema_changes:
        # Java's SchemaUpdate: a SchemaChangeException, which has no code of its own (-1)
        for kind, items in (("drop", req.drop_columns), ("modify", req.modify_columns),
                            ("rename", req.rename_columns)):
            if len(items):
                raise FlussError(f"Not support {kind} column now.", Errors.UNKNOWN_SERVER_ERROR)
        return replace(desc, schema=_with_columns(path, desc.schema, req.add_columns)), True
    if not has_config:
        return desc, False
    props = dict(desc.properties)
    custom = dict(desc.custom_properties)
    table_keys = []
    for change in req.config_changes:
        key = change.config_key
        target = props if key.startswith("table.") else custom
        if key.startswith("table."):
            table_keys.append(key)
        if change.op_type == _SET:
            if not change.HasField("config_value"):
                raise FlussError(f"Setting '{key}' of table {path} needs a value", Errors.INVALID_CONFIG_EXCEPTION)
            target[key] = change.config_value
        elif change.op_type == _DELETE:
            target.pop(key, None)
        else:
            raise _invalid(f"Unsupported alter config operation {change.op_type} for '{key}' of table {path}.")
    refused = [k for k in dict.fromkeys(table_keys) if k not in ALTERABLE_TABLE_OPTIONS]
    if refused:
        raise _invalid(f"The following options are not supported to alter yet: {_quoted(refused)}.")
    if "table.kv.standby-replica.enabled" in table_keys and not desc.schema.primary_key:
        raise _invalid("'table.kv.standby-replica.enabled' can only be altered on primary key tables.")
    if "table.datalake.format" not in desc.properties:
        lake = [k for k in dict.fromkeys(table_keys) if k.startswith("table.datalake.")]
        legacy_log = not desc.schema.primary_key and not desc.bucket_keys and lake == ["table.datalake.enabled"]
        if lake and not legacy_log:
            raise _invalid("The following options cannot be altered for tables that were created before the "
                           f"Fluss cluster enabled datalake: {_quoted(lake)}.")
    TableOptions(props)  # the values, as CREATE_TABLE checks them (39)
    return replace(desc, properties=props, custom_properties=custom), False


def _with_columns(path: str, schema: SchemaInfo, add_columns) -> SchemaInfo:
    names = {c.name for c in schema.columns}
    cols = list(schema.columns)
    highest = schema.highest_field_id
    if highest is None:
        highest = max((max(c.id, highest_field_id_of(c.type)) for c in cols if c.id is not None), default=-1)
    for add in add_columns:
        name = add.column_name
        if name in names:
            raise _invalid(f"Column {name} already exists.")
        if add.column_position_type != _POSITION_LAST:
            # Java: an IllegalArgumentException (-1)
            raise FlussError("Only support addColumn column at last now.", Errors.UNKNOWN_SERVER_ERROR)
        try:
            dtype = DataType.from_json(json.loads(add.data_type_json))
        except (ValueError, KeyError, TypeError) as exc:
            raise _invalid(f"Invalid data type of column {name}: {exc}") from None
        if not dtype.nullable:
            raise FlussError(f"Column {name} must be nullable.", Errors.UNKNOWN_SERVER_ERROR)
        highest += 1
        column_id = highest
        if dtype.is_nested:  # nested fields are numbered after the column, depth first
            counter = [highest]
            dtype = assign_field_ids(dtype, counter)
            highest = counter[0]
        cols.append(Column(name, dtype, add.comment if add.HasField("comment") else None, column_id))
        names.add(name)
    return replace(schema, columns=tuple(cols), highest_field_id=highest)
