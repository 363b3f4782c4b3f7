"""The $binlog view pairs a -U with the +U after it, also when the pair is split over two polls,
and the $changelog view names every change type (built from chunks, no server needed)."""
import pyarrow as pa

from fluss_fast.client.scan.records import Chunk, RowSource
from fluss_fast.client.virtual import BINLOG, CHANGELOG, ChangeRows, virtual_schema

BASE = pa.schema([("id", pa.int32()), ("v", pa.string())])


def _rows(kind):
    return ChangeRows(kind, virtual_schema(BASE, kind))


def _chunk(rows, types, base, ts=1000):
    rb = pa.RecordBatch.from_pylist([{"id": i, "v": v} for i, v in rows], schema=BASE)
    return Chunk("b0", RowSource(rb), 0, len(rows), base, None, bytes(types), ts, base + len(rows))


def test_binlog_pairs_updates_across_polls():
    s = _rows(BINLOG)
    first = s.convert({"b0": [_chunk([(1, "a"), (1, "a")], [1, 2], 0)]})  # +I, then a lone -U
    rows = first["b0"][0].rows()
    assert [(r["_change_type"], r["_log_offset"]) for r in rows] == [("insert", 0)]
    assert s.pending == 1  # the -U waits for its +U
    second = s.convert({"b0": [_chunk([(1, "b"), (1, "b")], [3, 4], 2)]})  # its +U, then -D
    rows = second["b0"][0].rows()
    assert [(r["_change_type"], r["_log_offset"]) for r in rows] == [("update", 2), ("delete", 3)]
    assert rows[0]["before"] == {"id": 1, "v": "a"} and rows[0]["after"] == {"id": 1, "v": "b"}
    assert rows[1]["before"] == {"id": 1, "v": "b"} and rows[1]["after"] is None
    assert s.pending == 0


def test_changelog_names_every_change_type():
    s = _rows(CHANGELOG)
    out = s.convert({"b0": [_chunk([(1, "a")] * 5, [0, 1, 2, 3, 4], 10)]})["b0"][0].arrow()
    assert out.column("_change_type").to_pylist() == ["insert", "insert", "update_before",
                                                      "update_after", "delete"]
    assert out.column("_log_offset").to_pylist() == [10, 11, 12, 13, 14]
    assert out.schema.field("_commit_timestamp").type == pa.timestamp("ms", tz="UTC")
    assert not out.schema.field("_change_type").nullable
