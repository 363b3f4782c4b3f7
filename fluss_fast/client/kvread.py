"""Current rows of primary-key buckets as Arrow: value batches (LIMIT_SCAN, SCAN_KV) decoded with
the table's kv format and turned into record batches of the table's Arrow schema."""
from __future__ import annotations

from typing import List

import pyarrow as pa

from ..codec.rows import CompactedRowDecoder, IndexedRowDecoder
from ..codec.valuebatch import iter_value_records
from ..errors import FlussError
from ..rpc.errors import Errors


class ValueRows:
    """Decoder of a table's stored rows (all of them written with schema ``schema_id``)."""

    def __init__(self, meta):
        self.meta = meta
        schema = meta.schema
        fmt = meta.descriptor.kv_format
        self._decoder = (IndexedRowDecoder if fmt == "INDEXED" else CompactedRowDecoder)(
            schema.types, schema.names)
        self.arrow_schema = schema.to_arrow()
        self._types = [f.type for f in self.arrow_schema]

    def rows(self, raw) -> List[list]:
        out = []
        dec = self._decoder.decode
        try:
            for _schema_id, row in iter_value_records(raw):
                out.append(dec(row))
        except ValueError as e:
            raise FlussError(f"table '{self.meta.path}': corrupt value batch: {e}",
                             getattr(e, "error_code", Errors.CORRUPT_MESSAGE)) from None
        return out

    def to_batch(self, rows: List[list]) -> pa.RecordBatch:
        if not rows:
            return pa.RecordBatch.from_pylist([], schema=self.arrow_schema)
        cols = list(zip(*rows))
        arrays = []
        for i, t in enumerate(self._types):
            try:
                arrays.append(pa.array(cols[i], type=t))
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
                raise FlussError(f"table '{self.meta.path}', column '{self.arrow_schema.names[i]}': "
                                 f"cannot build the Arrow column: {e}") from None
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)

    def batch_of(self, raw) -> pa.RecordBatch:
        return self.to_batch(self.rows(raw))
