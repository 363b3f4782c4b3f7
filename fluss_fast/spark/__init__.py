"""PySpark data source ``fluss`` (Spark 4 Python Data Source API; ``pip install 'fluss-fast[spark]'``).

    import fluss_fast.spark
    fluss_fast.spark.register(spark)
    df = (spark.read.format("fluss").option("bootstrap.servers", "127.0.0.1:9123")
          .load("db.orders"))
    df.write.format("fluss").option("bootstrap.servers", "...").mode("append").save("db.orders_copy")

Batch and streaming, read and write; every batch crosses the Python worker as Arrow.
"""
from __future__ import annotations

import contextlib

from pyspark.sql.datasource import DataSource

from . import options as _options

__all__ = ["FlussDataSource", "register"]

_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class FlussDataSource(DataSource):
    """The ``fluss`` format: ``load``/``save`` take ``"database.table"``."""

    @classmethod
    def name(cls) -> str:
        return "fluss"

    def _opts(self):
        return _options.parse(self.options)

    def schema(self):
        from .reader import read_meta
        from .types import spark_schema

        opts = self._opts()
        meta = read_meta(opts)
        return spark_schema(meta.schema, opts.name)

    def reader(self, schema):
        from .reader import FlussBatchReader, FlussPushdownReader

        opts = self._opts()
        cls = FlussPushdownReader if opts.pushdown else FlussBatchReader
        return cls(opts, schema)

    def streamReader(self, schema):
        from ..errors import ErrorCode, FlussError
        from .stream import FlussStreamReader

        opts = self._opts()
        if opts.virtual == "lake" or opts.read_optimized:
            # as Java's connector, a stream reads the Fluss log; the lake snapshot is a batch read
            what = f"'{opts.name}'" if opts.virtual == "lake" else "option 'read.optimized' = true"
            raise FlussError(f"Streaming reads take no lake snapshot: {what} is for batch reads "
                             "(spark.read)", ErrorCode.CLIENT_ERROR)
        return FlussStreamReader(opts, schema)

    def writer(self, schema, overwrite: bool):
        from .writer import FlussBatchWriter

        return FlussBatchWriter(self._opts(), schema, overwrite)

    def streamWriter(self, schema, overwrite: bool):
        from .writer import FlussStreamWriter

        return FlussStreamWriter(self._opts(), schema, overwrite)


def register(spark) -> None:
    """Registers the ``fluss`` format with ``spark`` and turns on Spark's filter pushdown to Python
    data sources, so that ``.option("scan.filter-pushdown.enabled", "true")`` is all a read needs."""
    spark.dataSource.register(FlussDataSource)
    with contextlib.suppress(Exception):  # a conf Spark Connect may refuse; pushdown then stays off
        spark.conf.set(_PUSHDOWN_CONF, "true")
