"""fluss_fast: a fast, drop-in replacement for the Apache Fluss Python client (pyfluss 1.0.0).

``import fluss_fast as fluss`` runs code written for pyfluss unchanged. Extras: ``LATEST_OFFSET``,
``fluss_fast.sync`` (a blocking facade) and ``fluss_fast.server`` (an embedded Fluss-protocol server).
"""
from __future__ import annotations

import importlib as _importlib
import typing as _typing

__version__ = "0.1.0"

from .client.admin import FlussAdmin
from .client.connection import FlussConnection
from .client.lookup import Lookuper, PrefixLookuper
from .client.predicate import ColumnRef, Predicate, col
from .client.scan import BatchScanner, LogScanner, RecordBatch, ScanRecord, ScanRecords, TableScan
from .client.table import FlussTable, TableAppend, TableLookup, TablePrefixLookup, TableUpsert
from .client.write import AppendWriter, WriteResultHandle
from .client.write.upsert import UpsertWriter
from .config import Config
from .errors import ErrorCode, FlussError
from .metadata import (
    EARLIEST_OFFSET,
    LATEST_OFFSET,
    ChangeType,
    DatabaseDescriptor,
    DatabaseInfo,
    LakeSnapshot,
    OffsetSpec,
    PartitionInfo,
    Schema,
    ServerNode,
    TableBucket,
    TableDescriptor,
    TableInfo,
    TablePath,
)

__all__ = [
    "AppendWriter", "BatchScanner", "ChangeType", "ColumnRef", "Config", "DatabaseDescriptor", "DatabaseInfo",
    "EARLIEST_OFFSET", "ErrorCode", "FlussAdmin", "FlussConnection", "FlussError", "FlussTable", "LakeSnapshot",
    "LogScanner", "Lookuper", "OffsetSpec", "PartitionInfo", "Predicate", "PrefixLookuper", "RecordBatch",
    "ScanRecord", "ScanRecords", "Schema", "ServerNode", "TableAppend", "TableBucket", "TableDescriptor",
    "TableInfo", "TableLookup", "TablePath", "TablePrefixLookup", "TableScan", "TableUpsert", "UpsertWriter",
    "WriteResultHandle", "col",
    # fluss_fast extras
    "LATEST_OFFSET", "sync", "server",
]

_LAZY = {"sync": "fluss_fast.sync", "server": "fluss_fast.server"}


if _typing.TYPE_CHECKING:  # a checker sees the two lazy modules as plain imports, and no catch-all __getattr__
    from . import server, sync
else:
    def __getattr__(name: str):
        target = _LAZY.get(name)
        if target is not None:
            module = _importlib.import_module(target)
            globals()[name] = module
            return module
        raise AttributeError(f"module 'fluss_fast' has no attribute '{name}'")


def __dir__():
    return sorted(set(__all__) | {"__version__"})
