"""An end-to-end Ray Data pipeline on Fluss, Arrow all the way (the Spark one's twin):

  bench orders --(write_fluss, append)--> Fluss log table db.orders
  db.orders --(read_fluss: 3 columns, quantity >= 2; Ray group-by: count and total per customer)
            --(write_fluss, bulk Arrow upsert)--> Fluss primary-key table db.customer_totals
  then point lookups, a read_fluss of db.customer_totals and of its $changelog are checked against pandas.

    python examples/ray_pipeline.py --bootstrap-servers 127.0.0.1:9123 [--rows 20000]
    python examples/ray_pipeline.py --embedded        # starts a local fluss-fast server itself

Needs ``pip install 'fluss-fast[ray]'``; starts a local Ray cluster unless one is already running.
"""
from __future__ import annotations

import argparse
import contextlib
import decimal
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc

import fluss_fast as fluss
from fluss_fast import sync
from fluss_fast.bench import datasets
from fluss_fast.server import ServerProcess

TOTALS_SCHEMA = pa.schema([pa.field("user_id", pa.int64(), nullable=False),
                           pa.field("orders", pa.int64()),
                           pa.field("total", pa.decimal128(22, 2))])


def create_tables(conn, database: str, orders: str, totals: str) -> None:
    admin = conn.get_admin()
    admin.create_database(database, ignore_if_exists=True)
    admin.create_table(fluss.TablePath(database, orders),
                       fluss.TableDescriptor(fluss.Schema(datasets.ORDERS_SCHEMA), bucket_count=4))
    admin.create_table(fluss.TablePath(database, totals),
                       fluss.TableDescriptor(fluss.Schema(TOTALS_SCHEMA, primary_keys=["user_id"]),
                                             bucket_count=2))


def per_customer(group: pa.Table) -> pa.Table:
    """One customer's orders -> their count and total (Ray hands each group over as one table)."""
    total = pc.sum(group["amount"]).cast(pa.decimal128(22, 2))
    return pa.table({"user_id": group["user_id"].slice(0, 1), "orders": pa.array([group.num_rows], pa.int64()),
                     "total": pa.array([total.as_py()], pa.decimal128(22, 2))}, schema=TOTALS_SCHEMA)


def run(bootstrap: str, rows: int, database: str = "pipeline") -> dict:
    """Runs the pipeline on the current Ray cluster; returns what it checked. Raises AssertionError
    on any mismatch."""
    import ray

    from fluss_fast.ray import read_fluss, write_fluss

    suffix = uuid.uuid4().hex[:8]
    orders, totals = f"{database}.orders_{suffix}", f"{database}.customer_totals_{suffix}"
    conn = sync.connect({"bootstrap.servers": bootstrap})
    try:
        create_tables(conn, database, orders.split(".")[1], totals.split(".")[1])
        data = datasets.load("orders", rows)

        # 1. the orders, from Arrow, appended to the log table by Ray's write tasks
        written = write_fluss(ray.data.from_arrow(data).repartition(4), bootstrap, orders)
        assert written.rows == rows, written

        # 2. one read task per bucket; only three columns and the matching rows leave the server's
        # side of the client; a group-by per customer; upserted by key into the primary-key table
        big = read_fluss(bootstrap, orders, columns=["user_id", "quantity", "amount"],
                         filter=fluss.col("quantity") >= 2)
        summary = big.groupby("user_id").map_groups(per_customer, batch_format="pyarrow")
        upserted = write_fluss(summary, bootstrap, totals, mode="upsert")

        # 3. the reference: the same in pandas
        frame = data.select(["user_id", "quantity", "amount"]).to_pandas()
        frame = frame[frame["quantity"] >= 2]
        expected = frame.groupby("user_id").agg(orders=("amount", "size"), total=("amount", "sum"))
        assert upserted.rows == len(expected), (upserted, len(expected))

        # 4a. point lookups by primary key
        lookuper = conn.get_table(fluss.TablePath(*totals.split("."))).new_lookup().create_lookuper()
        sample = list(expected.index[:50]) + [-1]
        for user in sample:
            row = lookuper.lookup({"user_id": int(user)})
            if user == -1:
                assert row is None, f"unexpected row for an unknown customer: {row}"
                continue
            assert row is not None, f"customer {user} missing from {totals}"
            want = expected.loc[user]
            assert row["orders"] == int(want["orders"]), (user, row, want)
            assert decimal.Decimal(row["total"]) == decimal.Decimal(want["total"]), (user, row, want)

        # 4b. the primary-key table's current state, read back through Ray (a snapshot per bucket)
        got = read_fluss(bootstrap, totals).to_pandas().set_index("user_id").sort_index()
        assert [int(u) for u in got.index] == [int(u) for u in expected.index], "customers differ"
        assert got["orders"].astype("int64").tolist() == expected["orders"].astype("int64").tolist()
        assert [decimal.Decimal(t) for t in got["total"]] == [decimal.Decimal(t) for t in expected["total"]]

        # 4c. its changelog: one insert per customer, nothing else
        kinds = read_fluss(bootstrap, f"{totals}$changelog", columns=["_change_type"]).to_pandas()
        assert (kinds["_change_type"] == "insert").sum() == len(expected), kinds.value_counts()
        return {"orders": rows, "customers": len(expected), "lookups": len(sample)}
    finally:
        conn.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-servers", help="host:port of a Fluss coordinator")
    p.add_argument("--embedded", action="store_true", help="start a local fluss-fast server for the run")
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    args = p.parse_args(argv)
    if not args.bootstrap_servers and not args.embedded:
        p.error("give --bootstrap-servers or --embedded")
    import ray

    with contextlib.ExitStack() as stack:
        bootstrap = args.bootstrap_servers
        if args.embedded:
            bootstrap = stack.enter_context(ServerProcess()).bootstrap_servers
        ray.init(num_cpus=args.num_cpus, include_dashboard=False)
        stack.callback(ray.shutdown)
        began = time.perf_counter()
        result = run(bootstrap, args.rows)
        print(f"pipeline ok in {time.perf_counter() - began:.1f} s: {result}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
