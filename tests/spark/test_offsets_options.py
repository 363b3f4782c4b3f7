"""Offsets JSON, admission control and option parsing, without a Spark session."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from fluss_fast.errors import FlussError  # noqa: E402
from fluss_fast.spark import options, stream  # noqa: E402


def test_offsets_json_has_the_scala_connector_shape():
    plain = {(None, 0): 12, (None, 2): 40}
    assert stream.to_json(7, plain) == {"version": 1, "table_id": 7, "bucket_offsets": [12, -1, 40]}
    assert stream.from_json(stream.to_json(7, plain), 7) == plain
    parts = {(5, 1): 3, (3, 0): 9}
    assert stream.to_json(7, parts) == {"version": 1, "table_id": 7, "partition_offsets": [
        {"partition_id": 3, "bucket_offsets": [9]}, {"partition_id": 5, "bucket_offsets": [-1, 3]}]}
    assert stream.from_json(stream.to_json(7, parts), 7) == parts
    with pytest.raises(FlussError, match="table id 7"):
        stream.from_json(stream.to_json(7, plain), 8, "db.t")


def test_admission_control_caps_and_shares_the_backlog():
    reader = stream.FlussStreamReader.__new__(stream.FlussStreamReader)
    start = {(None, 0): 0, (None, 1): 100}
    latest = {(None, 0): 1000, (None, 1): 110, (None, 2): 50}
    end = reader._limited(start, latest, 60)
    assert sum(end[k] - start.get(k, 0) for k in end) == 60
    assert all(end[k] >= start.get(k, 0) for k in end) and all(end[k] <= latest[k] for k in end)
    assert end[(None, 1)] == 110  # the small backlog is drained, the rest shared
    assert reader._limited(start, latest, None) == latest
    # a bucket never goes backwards, even if the listing lags
    assert reader._limited({(None, 0): 500}, {(None, 0): 400}, None) == {(None, 0): 500}


def test_options_parse_and_name_what_is_wrong():
    o = options.parse({"path": "db.t", "bootstrap.servers": "h:1", "client.writer.batch-size": "1024",
                       "scan.maxrecordsperpartition": "10", "scan.startup.mode": "LATEST",
                       "checkpointLocation": "/x"})
    assert (o.database, o.table, o.startup_mode, o.max_records_per_partition) == ("db", "t", "latest", 10)
    assert o.client_config() == {"bootstrap.servers": "h:1", "writer.batch-size": "1024"}
    assert options.parse({"table": "db.t$changelog", "bootstrap.servers": "h:1"}).virtual == "changelog"
    assert options.parse({"table": "db.t$lake", "bootstrap.servers": "h:1"}).virtual == "lake"
    assert options.parse({"table": "db.t", "bootstrap.servers": "h:1", "read.optimized": "true"}).read_optimized
    # a client key whose own name starts with "client." is not taken for a prefixed one
    assert options.parse({"table": "db.t", "bootstrap.servers": "h:1", "client.compression-threads": "1"}
                         ).client_config()["client.compression-threads"] == "1"
    for bad, needle in [({"table": "db.t"}, "bootstrap.servers"),
                        ({"table": "t", "bootstrap.servers": "h:1"}, "database.table"),
                        ({"table": "db.t$lakes", "bootstrap.servers": "h:1"}, "$lake"),
                        ({"table": "db.t", "bootstrap.servers": "h:1", "scan.startup.mode": "timestamp"},
                         "scan.startup.timestamp"),
                        ({"table": "db.t", "bootstrap.servers": "h:1", "scan.poll.timeout": "soon"},
                         "scan.poll.timeout"),
                        ({"table": "db.t", "bootstrap.servers": "h:1", "read.optimized": "true",
                          "scan.incremental.start.timestamp": "0"}, "read.optimized"),
                        ({"table": "db.t", "bootstrap.servers": "h:1", "read.optimized": "maybe"},
                         "read.optimized")]:
        with pytest.raises(FlussError, match=needle.replace("$", r"\$")):
            options.parse(bad)
    assert options.parse({"table": "db.t", "bootstrap.servers": "h:1",
                          "scan.incremental.start.timestamp": "2024-01-02 03:04:05"}).incremental_start > 0
