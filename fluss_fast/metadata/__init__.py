"""Public value types, shaped like pyfluss 1.0.0's (constructors, properties, reprs, equality).

``fluss_fast.metadata`` is where the API reference documents them (``fluss_fast`` exports them
too); each lives in the module of its concern:

* ``log``: ``EARLIEST_OFFSET`` / ``LATEST_OFFSET``, ``OffsetSpec``, ``ChangeType``;
* ``schema``: ``Schema``, ``TableDescriptor``;
* ``table``: ``TablePath``, ``TableBucket``, ``TableInfo``, ``PartitionInfo``, ``PARTITION_SEPARATOR``;
* ``cluster``: ``ServerNode``, ``DatabaseDescriptor``, ``DatabaseInfo``, ``LakeSnapshot``;
* ``_args``: argument checks; their messages follow pyfluss's (which formats Rust ``Debug``
  values), so code that matches on them keeps working.
"""
from __future__ import annotations

from ..datatypes import DataType
from .cluster import COORDINATOR_SERVER, TABLET_SERVER, DatabaseDescriptor, DatabaseInfo, LakeSnapshot, ServerNode
from .log import EARLIEST_OFFSET, LATEST_OFFSET, ChangeType, OffsetSpec
from .schema import Schema, TableDescriptor
from .table import PARTITION_SEPARATOR, PartitionInfo, TableBucket, TableInfo, TablePath

__all__ = [
    "ChangeType", "TablePath", "TableBucket", "Schema", "TableDescriptor", "TableInfo", "PartitionInfo",
    "ServerNode", "DatabaseDescriptor", "DatabaseInfo", "LakeSnapshot", "OffsetSpec", "EARLIEST_OFFSET",
    "LATEST_OFFSET", "DataType", "PARTITION_SEPARATOR", "COORDINATOR_SERVER", "TABLET_SERVER",
]
