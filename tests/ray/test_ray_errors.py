"""Bad input fails on the driver, when the dataset is created, with a FlussError that names it."""
from __future__ import annotations

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast.errors import FlussError
from fluss_fast.ray import read_fluss

from conftest import create_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_unknown_table_column_and_virtual_table(ray_cluster, conn, database, bootstrap, unique_name):
    with pytest.raises(FlussError, match=f"Table '{database}.no_such_table' does not exist"):
        read_fluss(bootstrap, f"{database}.no_such_table")
    name = create_table(conn, database, unique_name("errs"), SCHEMA, buckets=1)
    with pytest.raises(FlussError, match=r"Column 'nope' does not exist in table .* \(columns: id, name\)"):
        read_fluss(bootstrap, name, columns=["id", "nope"])
    with pytest.raises(FlussError, match="Filter on table .*nope"):
        read_fluss(bootstrap, name, filter=fluss.col("nope") > 1)
    with pytest.raises(FlussError, match="Filter on table"):
        read_fluss(bootstrap, name, filter=fluss.col("id") > "text")
    with pytest.raises(FlussError, match="filter must be a fluss_fast predicate"):
        read_fluss(bootstrap, name, filter="id > 1")
    with pytest.raises(FlussError, match=r"Unknown virtual table '\$snapshots'"):
        read_fluss(bootstrap, f"{name}$snapshots")
    with pytest.raises(FlussError, match=r"\$binlog is only supported for primary-key tables"):
        read_fluss(bootstrap, f"{name}$binlog")
    with pytest.raises(FlussError, match="expected 'database.table'"):
        read_fluss(bootstrap, "just_a_name")
    with pytest.raises(FlussError, match="columns must be a list"):
        read_fluss(bootstrap, name, columns="id")


def test_unreachable_server():
    with pytest.raises(FlussError, match="Cannot connect to Fluss at bootstrap.servers='127.0.0.1:1'"):
        read_fluss("127.0.0.1:1", "db.t", config={"request-timeout": "2000"})
