"""Data-lake tables: tiering to Paimon and the lake + log union read (docs/guide/lake.md).

``await fluss_fast.lake.tier_table(conn, path)`` runs one tiering round, ``TieringService(conn)`` runs
rounds of every data-lake table at its freshness (what Java's tiering job does);
``await fluss_fast.lake.union_scan(conn, path).project([...]).where(...).to_arrow()`` reads the table
as its lake snapshot plus the log after it. Both need pypaimon (the ``lake`` extra).
"""
from __future__ import annotations

from ..metadata.table import TablePath
from .tiering import TieringResult, TieringService, commit_round, tier_table, write_round
from .union import LakeBucketPlan, LakeUnionScan, plan_buckets, read_bucket, union_read

__all__ = ["LakeBucketPlan", "LakeUnionScan", "TieringResult", "TieringService", "commit_round", "lake_scan",
           "plan_buckets", "read_bucket", "tier_table", "union_read", "union_scan", "write_round"]


def union_scan(conn, table_path: TablePath) -> LakeUnionScan:
    """A union read of ``table_path`` (lake snapshot + log tail); narrow it, then ``await to_arrow()``."""
    return LakeUnionScan(conn, table_path)


def lake_scan(conn, table_path: TablePath) -> LakeUnionScan:
    """The lake snapshot of ``table_path`` alone, with the system columns ``__bucket``, ``__offset``
    and ``__timestamp`` (Java's ``table$lake``): what the coordinator's latest lake snapshot holds."""
    return LakeUnionScan(conn, table_path, lake_only=True)
