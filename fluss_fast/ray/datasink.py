"""``FlussDatasink``: writes a Ray Dataset into a Fluss table, Arrow throughout.

Each write task appends its blocks to a log table, or upserts them into a primary-key table through
the bulk Arrow path (``upsert_arrow``), and flushes before it reports: what a finished task wrote is
durable and visible. Fluss has no transactions, so a failed job leaves the rows of the tasks that
finished; a retried task writes its rows again (appends may repeat, upserts are idempotent).
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from ray.data import Datasink

from ..engine import connections, ranges
from ..errors import FlussError
from ..metadata import TablePath
from .datasource import _err, source_options

__all__ = ["FlussDatasink", "WriteStats"]

MODES = ("append", "upsert")


@dataclass
class WriteStats:
    """What one write task (or, summed, the whole write) did."""

    rows: int = 0
    blocks: int = 0
    seconds: float = 0.0


def _as_arrow(block, target: pa.Schema) -> pa.Table:
    if not isinstance(block, pa.Table):
        # Ray hands pandas blocks to sinks of datasets built from pandas
        block = pa.Table.from_pandas(block, preserve_index=False)
    # Ray's own steps turn string into large_string (and pandas 3 strings arrive as large_string):
    # a cast that loses nothing makes them the table's types; anything else is left for the
    # client to refuse with its message naming the column
    for i, field in enumerate(block.schema):
        if field.name not in target.names:
            continue
        want = target.field(field.name).type
        if field.type != want:
            with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
                block = block.set_column(i, field.name, block.column(i).cast(want, safe=True))
    return block


class FlussDatasink(Datasink):
    """Appends to a log table or upserts into a primary-key table.

    Args:
        bootstrap_servers: ``host:port`` of a Fluss coordinator.
        table: ``"database.table"`` or a TablePath.
        mode: ``"append"`` (log tables) or ``"upsert"`` (primary-key tables); None picks the one the
            table takes.
        config: More client settings (``{"writer.batch-size": "4mb"}``, SASL keys, ...).
        partial_update: Upsert only these columns (the whole primary key among them); the other
            columns of existing rows keep their values. Without it, columns the dataset leaves out
            become null.

    Raises:
        FlussError: An unknown table, a virtual table, or a mode the table does not take; raised
            when the write starts, on the driver. A column the table does not have, or a type it
            cannot take, fails the first write task with the client's message (Ray raises it as a
            ``RayTaskError`` that is also a FlussError).
    """

    def __init__(self, bootstrap_servers: str, table: str | TablePath, *, mode: str | None = None,
                 config: Mapping[str, str] | None = None, partial_update: Sequence[str] | None = None):
        if mode is not None and mode not in MODES:
            raise _err(f"Invalid write mode '{mode}': expected 'append' or 'upsert'")
        self._opts = source_options(bootstrap_servers, table, config)
        if self._opts.virtual is not None:
            raise _err(f"Cannot write to virtual table '{self._opts.name}'")
        if partial_update is not None and (isinstance(partial_update, str) or mode == "append"):
            raise _err("partial_update takes a list of column names, and only with mode='upsert'")
        self._partial = list(partial_update) if partial_update is not None else None
        self._mode = mode
        self._table_id: int | None = None
        self.result: WriteStats | None = None

    def get_name(self) -> str:
        """The name Ray shows for the write (``Write(Fluss(db.table))``)."""
        return f"Fluss({self._opts.name})"

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        """On the driver, before any task: the table exists and takes this mode (FlussError if not)."""
        # the schema Ray passes here is not always the one the blocks will have (after map_batches,
        # say): columns are checked against the blocks themselves, by the writer
        opts = self._opts
        meta = ranges.table_meta(opts)
        pk = bool(meta.schema.primary_key)
        mode = self._mode or ("upsert" if pk else "append")
        if mode == "append" and pk:
            raise _err(f"Table '{opts.name}' has a primary key ({', '.join(meta.schema.primary_key)}): "
                       f"write with mode='upsert'")
        if mode == "upsert" and not pk:
            raise _err(f"Table '{opts.name}' is a log table (no primary key): write with mode='append'")
        if self._partial is not None:
            if not pk:
                raise _err(f"partial_update needs a primary-key table; '{opts.name}' is a log table")
            missing = [k for k in meta.schema.primary_key if k not in self._partial]
            unknown = [c for c in self._partial if c not in meta.schema.names]
            if missing or unknown:
                raise _err(f"partial_update of table '{opts.name}' must name columns of the table and "
                           f"its whole primary key ({', '.join(meta.schema.primary_key)}): {self._partial}")
        self._mode = mode
        self._table_id = meta.table_id

    def write(self, blocks: Iterable, ctx) -> WriteStats:
        """In a worker: writes the task's blocks, flushes, and returns what it wrote."""
        opts = self._opts
        began = time.perf_counter()
        table = connections.table(opts.client, opts.database, opts.table, self._table_id)
        if self._mode == "upsert":
            builder = table.new_upsert()
            if self._partial is not None:
                builder = builder.partial_update_by_name(self._partial)
            writer = builder.create_writer()
            put = writer.upsert_arrow
        else:
            writer = table.new_append().create_writer()
            put = writer.write_arrow
        target = table.unwrap()._meta.schema.to_arrow()
        stats = WriteStats()
        try:
            for block in blocks:
                data = _as_arrow(block, target)
                if data.num_rows == 0:
                    continue
                put(data)
                stats.rows += data.num_rows
                stats.blocks += 1
            writer.flush()
        finally:
            # a failed flush above already raised what matters; close's own error would hide it
            with contextlib.suppress(FlussError):
                writer.close()
        stats.seconds = time.perf_counter() - began
        return stats

    def on_write_complete(self, write_result) -> None:
        """On the driver, after every task flushed: sums the tasks' WriteStats into ``result``."""
        # a WriteResult whose write_returns are the tasks' WriteStats (older Rays: the list itself)
        returns = getattr(write_result, "write_returns", write_result) or []
        total = WriteStats()
        for s in returns:
            if isinstance(s, WriteStats):
                total.rows += s.rows
                total.blocks += s.blocks
                total.seconds += s.seconds
        self.result = total
