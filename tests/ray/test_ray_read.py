"""Reads through the Ray datasource: every bucket and partition, offsets fixed when the dataset is
created, projection and filters, primary-key snapshots, the virtual tables."""
from __future__ import annotations

import pyarrow as pa

import fluss_fast as fluss
from fluss_fast.ray import FlussDatasource, read_fluss

from conftest import append, create_table, rows, upsert

SCHEMA = pa.schema([("id", pa.int64()), ("cust", pa.string()), ("amount", pa.float64())])


def _data(lo, hi):
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()), "cust": [f"c{i % 7}" for i in range(lo, hi)],
                     "amount": [float(i) for i in range(lo, hi)]}, schema=SCHEMA)


def test_log_table_every_bucket_and_offsets_fixed_at_planning(ray_cluster, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("log"), SCHEMA, buckets=3)
    for lo in range(0, 300, 50):
        append(conn, name, _data(lo, lo + 50))
    ds = read_fluss(bootstrap, name)
    append(conn, name, _data(300, 400))  # after planning: not part of ds
    got = rows(ds)
    assert [r["id"] for r in got] == list(range(300))
    assert got[5] == {"id": 5, "cust": "c5", "amount": 5.0}
    # consumed again, the same rows: the ranges were fixed once
    assert ds.count() == 300
    assert ds.schema().names == ["id", "cust", "amount"]
    source = FlussDatasource(bootstrap, name)
    planned = source.planned
    assert len(source.get_read_tasks(200)) == len(planned)  # one task per range, whatever Ray asks for
    # one range per bucket that holds rows (a bucket with none gets no task)
    buckets = sorted(r.bucket for r in planned)
    assert len(buckets) == len(set(buckets)) >= 2 and set(buckets) <= {0, 1, 2}
    assert sum(r.stop - r.start for r in planned) == 400
    assert read_fluss(bootstrap, name).count() == 400


def test_projection_filter_and_split_ranges(ray_cluster, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("proj"), SCHEMA, buckets=2)
    for lo in range(0, 1000, 250):
        append(conn, name, _data(lo, lo + 250))
    ds = read_fluss(bootstrap, name, columns=["amount", "id"],
                    filter=(fluss.col("id") >= 900) & (fluss.col("cust") == "c3"))
    assert ds.schema().names == ["amount", "id"]
    got = rows(ds)
    assert got == [{"amount": float(i), "id": i} for i in range(900, 1000) if i % 7 == 3]
    small = FlussDatasource(bootstrap, name, max_offsets_per_task=100)
    assert len(small.planned) >= 10
    assert read_fluss(bootstrap, name, max_offsets_per_task=100).count() == 1000


def test_partitioned_table(ray_cluster, conn, database, bootstrap, unique_name):
    schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
    name = create_table(conn, database, unique_name("parts"), schema, partition_keys=["day"], buckets=2)
    db, t = name.split(".")
    days = ("2024-01-01", "2024-01-02", "2024-01-03")
    for day in days:
        conn.get_admin().create_partition(fluss.TablePath(db, t), {"day": day})
    append(conn, name, pa.table({"id": pa.array(range(90), pa.int64()), "day": [days[i % 3] for i in range(90)]}))
    source = FlussDatasource(bootstrap, name)
    assert len({r.partition_id for r in source.planned}) == 3
    got = rows(read_fluss(bootstrap, name))
    assert [(r["id"], r["day"]) for r in got] == [(i, days[i % 3]) for i in range(90)]
    only = rows(read_fluss(bootstrap, name, columns=["id"], filter=fluss.col("day") == "2024-01-02"))
    assert [r["id"] for r in only] == [i for i in range(90) if i % 3 == 1]
    # a filter on the partition key alone prunes at planning: the other partitions get no task
    pruned = FlussDatasource(bootstrap, name, filter=fluss.col("day").is_in(["2024-01-02", "2024-01-03"]))
    assert len({r.partition_id for r in pruned.planned}) == 2
    either = FlussDatasource(bootstrap, name, filter=(fluss.col("day") == "2024-01-02") | (fluss.col("id") < 3))
    assert len({r.partition_id for r in either.planned}) == 3
    both = (fluss.col("id") >= 60) & (fluss.col("day") == "2024-01-02")
    assert len({r.partition_id for r in FlussDatasource(bootstrap, name, filter=both).planned}) == 1
    assert sorted(r["id"] for r in read_fluss(bootstrap, name, filter=both).take_all()) == [
        i for i in range(60, 90) if i % 3 == 1]
    assert sorted(r["id"] for r in read_fluss(bootstrap, name, filter=fluss.col("day") > "2024-01-02")
                  .take_all()) == [i for i in range(90) if i % 3 == 2]


def test_primary_key_snapshot_with_projection_and_filter(ray_cluster, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("pk"), SCHEMA, primary_keys=["id"], buckets=3)
    upsert(conn, name, _data(0, 100))
    upsert(conn, name, pa.table({"id": pa.array([1, 2], pa.int64()), "cust": ["new", "new"],
                                 "amount": [-1.0, -2.0]}, schema=SCHEMA))
    got = rows(read_fluss(bootstrap, name))
    assert len(got) == 100
    assert got[1] == {"id": 1, "cust": "new", "amount": -1.0}
    assert got[3] == {"id": 3, "cust": "c3", "amount": 3.0}
    # the filter's column is read and dropped again
    some = rows(read_fluss(bootstrap, name, columns=["id"], filter=fluss.col("cust") == "new"))
    assert some == [{"id": 1}, {"id": 2}]
    assert len(FlussDatasource(bootstrap, name).planned) == 3


def test_changelog_and_binlog(ray_cluster, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("chg"), SCHEMA, primary_keys=["id"], buckets=2)
    upsert(conn, name, _data(0, 10))
    upsert(conn, name, pa.table({"id": pa.array([4], pa.int64()), "cust": ["x"], "amount": [0.5]}, schema=SCHEMA))
    changes = read_fluss(bootstrap, f"{name}$changelog")
    assert changes.schema().names[:3] == ["_change_type", "_log_offset", "_commit_timestamp"]
    got = changes.take_all()
    kinds = sorted(r["_change_type"] for r in got)
    assert kinds == ["insert"] * 10 + ["update_after", "update_before"]
    before = [r for r in got if r["_change_type"] == "update_before"]
    assert before[0]["id"] == 4 and before[0]["cust"] == "c4"
    updates = read_fluss(bootstrap, f"{name}$changelog", columns=["id", "cust"],
                         filter=fluss.col("_change_type") == "update_after")
    assert updates.take_all() == [{"id": 4, "cust": "x"}]
    binlog = read_fluss(bootstrap, f"{name}$binlog").take_all()
    assert len(binlog) == 11
    update = [r for r in binlog if r["_change_type"] == "update"]
    assert update[0]["before"]["cust"] == "c4" and update[0]["after"]["cust"] == "x"
