"""Ray Data source and sink for Fluss tables (``pip install 'fluss-fast[ray]'``).

    import fluss_fast
    from fluss_fast.ray import read_fluss, write_fluss

    ds = read_fluss("127.0.0.1:9123", "shop.orders", columns=["id", "amount"],
                    filter=fluss_fast.col("amount") > 100)
    write_fluss(ds.map_batches(enrich), "127.0.0.1:9123", "shop.big_orders")

One read task per bucket (and partition), offsets fixed when the dataset is created; appends to log
tables, bulk Arrow upserts into primary-key tables. Importing this module does not import Ray: the
first call does (Ray takes seconds to import).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..client.predicate import Predicate
from ..metadata import TablePath

if TYPE_CHECKING:
    import ray.data

    from .datasink import FlussDatasink, WriteStats
    from .datasource import FlussDatasource
    from .lake import FlussLakeDatasource

__all__ = ["FlussDatasink", "FlussDatasource", "FlussLakeDatasource", "WriteStats", "read_fluss", "read_fluss_lake",
           "write_fluss"]


def __getattr__(name: str):
    if name == "FlussDatasource":
        from .datasource import FlussDatasource

        return FlussDatasource
    if name == "FlussLakeDatasource":
        from .lake import FlussLakeDatasource
        return FlussLakeDatasource
    if name in ("FlussDatasink", "WriteStats"):
        from . import datasink

        return getattr(datasink, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_fluss(bootstrap_servers: str, table: str | TablePath, *, columns: Sequence[str] | None = None,
               filter: Predicate | None = None, config: Mapping[str, str] | None = None,
               max_offsets_per_task: int | None = None, poll_timeout_ms: int = 10000,
               concurrency: int | None = None, ray_remote_args: dict[str, Any] | None = None) -> ray.data.Dataset:
    """A Ray Dataset of a Fluss table's rows: a log table's log up to its end now, a primary-key
    table's current state, or a ``$changelog`` / ``$binlog`` virtual table.

    Args:
        bootstrap_servers: ``host:port`` of a Fluss coordinator.
        table: ``"database.table"``, a TablePath, or ``"database.table$changelog"`` / ``"$binlog"``.
        columns: The columns to read, in this order; all when None.
        filter: A predicate built with `fluss_fast.col`, e.g. ``fluss_fast.col("amount") > 100``;
            only the matching rows are read.
        config: More client settings, e.g. ``{"request-timeout": "60000"}``.
        max_offsets_per_task: Cut each bucket's offsets into read tasks of at most this many.
        poll_timeout_ms: How long a read task waits for rows it knows are there before failing.
        concurrency: At most this many read tasks at once (Ray's ``read_datasource`` argument).
        ray_remote_args: Ray options of the read tasks (``num_cpus``, ``memory``, ...).

    Returns:
        The dataset. Each bucket's range of offsets is fixed now: rows appended later are not part
        of it, however often it is consumed.

    Raises:
        FlussError: An unknown table or column, a filter that does not fit the columns, or no
            server at ``bootstrap_servers``.
    """
    import ray.data

    from .datasource import FlussDatasource

    source = FlussDatasource(bootstrap_servers, table, columns=columns, filter=filter, config=config,
                             max_offsets_per_task=max_offsets_per_task, poll_timeout_ms=poll_timeout_ms)
    return ray.data.read_datasource(source, concurrency=concurrency, ray_remote_args=ray_remote_args)


def read_fluss_lake(bootstrap_servers: str, table: str | TablePath, *, columns: Sequence[str] | None = None,
                    filter: Predicate | None = None, config: Mapping[str, str] | None = None,
                    concurrency: int | None = None, ray_remote_args: dict[str, Any] | None = None) -> ray.data.Dataset:
    """A Ray Dataset of a data-lake table's union read: its lake snapshot (Paimon) plus its log after
    it, one read task per bucket (and partition); a log table's rows or a primary-key table's state.

    Args:
        bootstrap_servers: ``host:port`` of a Fluss coordinator.
        table: ``"database.table"`` or a TablePath of a table with ``table.datalake.enabled``.
        columns: The columns to read, in this order; all when None.
        filter: A predicate built with `fluss_fast.col`; pushed to the lake reader too.
        config: More client settings.
        concurrency: At most this many read tasks at once.
        ray_remote_args: Ray options of the read tasks.

    Returns:
        The dataset. The lake snapshot and each bucket's log end are fixed now.

    Raises:
        FlussError: A table without a Paimon lake (40), an unknown column, a filter that does not fit
            the table, or no server at ``bootstrap_servers``.
    """
    import ray.data

    from .lake import FlussLakeDatasource

    source = FlussLakeDatasource(bootstrap_servers, table, columns=columns, filter=filter, config=config)
    return ray.data.read_datasource(source, concurrency=concurrency, ray_remote_args=ray_remote_args)


def write_fluss(dataset: ray.data.Dataset, bootstrap_servers: str, table: str | TablePath, *,
                mode: str | None = None, config: Mapping[str, str] | None = None,
                partial_update: Sequence[str] | None = None, concurrency: int | None = None,
                ray_remote_args: dict[str, Any] | None = None) -> WriteStats:
    """Write ``dataset`` into a Fluss table and wait until every row is acknowledged.

    Args:
        dataset: The rows; columns are matched to the table's by name.
        bootstrap_servers: ``host:port`` of a Fluss coordinator.
        table: ``"database.table"`` or a TablePath.
        mode: ``"append"`` (log tables) or ``"upsert"`` (primary-key tables, through the bulk Arrow
            path); None picks the one the table takes.
        config: More client settings, e.g. ``{"writer.batch-size": "4mb"}``.
        partial_update: Upsert only these columns (with the whole primary key); other columns of
            existing rows keep their values. Without it, columns the dataset leaves out become null.
        concurrency: At most this many write tasks at once.
        ray_remote_args: Ray options of the write tasks.

    Returns:
        Rows and blocks written, summed over the write tasks.

    Raises:
        FlussError: An unknown or virtual table, a mode the table does not take, or a column the
            table does not have.
    """
    from .datasink import FlussDatasink, WriteStats

    sink = FlussDatasink(bootstrap_servers, table, mode=mode, config=config, partial_update=partial_update)
    dataset.write_datasink(sink, concurrency=concurrency, ray_remote_args=ray_remote_args)
    # Ray calls on_write_complete on this very object once every task has flushed
    return sink.result if sink.result is not None else WriteStats()
