"""Writes through the Ray datasink: appends to a log table, bulk Arrow upserts into a primary-key
table, and a round trip from one Fluss table to another through a Ray transformation."""
from __future__ import annotations

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast.errors import FlussError
from fluss_fast.ray import FlussDatasink, read_fluss, write_fluss

from conftest import create_table, rows, table_of, upsert

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])


def _data(lo, hi, name="n"):
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()), "name": [f"{name}{i}" for i in range(lo, hi)],
                     "score": [i / 2 for i in range(lo, hi)]}, schema=SCHEMA)


def test_append_sink(ray_cluster, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("sink_log"), SCHEMA, buckets=2)
    ds = ray_cluster.data.from_arrow(_data(0, 500)).repartition(4)
    stats = write_fluss(ds, bootstrap, name)
    assert stats.rows == 500 and stats.blocks >= 4
    got = rows(read_fluss(bootstrap, name))
    assert got == _data(0, 500).to_pylist()
    # a dataset built from pandas hands pandas blocks to the sink
    more = ray_cluster.data.from_pandas(_data(500, 510).to_pandas())
    more.write_datasink(FlussDatasink(bootstrap, name, mode="append"))
    assert read_fluss(bootstrap, name).count() == 510


def test_upsert_sink_then_lookup_and_snapshot(ray_cluster, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("sink_pk"), SCHEMA, primary_keys=["id"], buckets=3)
    upsert(conn, name, _data(0, 100, "old"))
    changed = ray_cluster.data.from_arrow(_data(50, 150, "new")).repartition(3)
    stats = write_fluss(changed, bootstrap, name, mode="upsert")
    assert stats.rows == 100
    lookuper = table_of(conn, name).new_lookup().create_lookuper()
    assert lookuper.lookup({"id": 10})["name"] == "old10"
    assert lookuper.lookup({"id": 60})["name"] == "new60"
    assert lookuper.lookup({"id": 149})["name"] == "new149"
    state = rows(read_fluss(bootstrap, name, columns=["id", "name"]))
    assert state == [{"id": i, "name": f"{'old' if i < 50 else 'new'}{i}"} for i in range(150)]
    # a partial upsert: only the key and the columns given; without it, a left-out column is null
    one = pa.table({"id": pa.array([1], pa.int64()), "score": [99.0]})
    write_fluss(ray_cluster.data.from_arrow(one), bootstrap, name, partial_update=["id", "score"])
    assert lookuper.lookup({"id": 1}) == {"id": 1, "name": "old1", "score": 99.0}
    write_fluss(ray_cluster.data.from_arrow(one), bootstrap, name)
    assert lookuper.lookup({"id": 1}) == {"id": 1, "name": None, "score": 99.0}
    with pytest.raises(FlussError, match="whole primary key"):
        write_fluss(ray_cluster.data.from_arrow(one), bootstrap, name, partial_update=["score"])


def test_pipeline_from_table_to_table(ray_cluster, conn, database, bootstrap, unique_name):
    src = create_table(conn, database, unique_name("src"), SCHEMA, buckets=2)
    dst = create_table(conn, database, unique_name("dst"), pa.schema([("name", pa.string()), ("total", pa.float64())]),
                       primary_keys=["name"], buckets=2)
    write_fluss(ray_cluster.data.from_arrow(_data(0, 300)), bootstrap, src)

    def totals(batch: pa.Table) -> pa.Table:
        return pa.table({"name": pa.compute.utf8_slice_codeunits(batch["name"], 0, 2),
                         "total": batch["score"]})

    big = read_fluss(bootstrap, src, columns=["name", "score"], filter=fluss.col("score") >= 100.0)
    write_fluss(big.map_batches(totals, batch_format="pyarrow"), bootstrap, dst)
    state = read_fluss(bootstrap, dst).take_all()
    assert {r["name"] for r in state} == {"n2"}
    assert len(state) == 1


def test_sink_refuses_the_wrong_mode_and_unknown_columns(ray_cluster, conn, database, bootstrap, unique_name):
    log = create_table(conn, database, unique_name("mode_log"), SCHEMA, buckets=1)
    pk = create_table(conn, database, unique_name("mode_pk"), SCHEMA, primary_keys=["id"], buckets=1)
    ds = ray_cluster.data.from_arrow(_data(0, 3))
    with pytest.raises(FlussError, match="log table .* mode='append'"):
        write_fluss(ds, bootstrap, log, mode="upsert")
    with pytest.raises(FlussError, match="primary key .* mode='upsert'"):
        write_fluss(ds, bootstrap, pk, mode="append")
    with pytest.raises(FlussError, match="Invalid write mode 'overwrite'"):
        FlussDatasink(bootstrap, log, mode="overwrite")
    with pytest.raises(FlussError, match=r"Cannot write to virtual table .*\$changelog"):
        FlussDatasink(bootstrap, f"{log}$changelog")
    extra = ray_cluster.data.from_arrow(_data(0, 3).append_column("nope", pa.array([1, 2, 3])))
    with pytest.raises(FlussError, match="nope"):
        write_fluss(extra, bootstrap, log)
    assert read_fluss(bootstrap, log).count() == 0
