"""Value types of fluss_fast.metadata next to pyfluss's, constructed the same way and compared."""
from __future__ import annotations

import json
import pickle
import re

import pyarrow as pa
import pytest

import fluss_fast
from fluss_fast.datatypes import TableDescriptorInfo

fluss = pytest.importorskip("fluss")


# One `"key": "value"` entry of a Rust Debug HashMap (strings escaped as Rust's Debug does).
_RUST_STR = r'"(?:[^"\\]|\\.)*"'
_MAP_ENTRY = re.compile(_RUST_STR + ": " + _RUST_STR)


def _map_repr(obj):
    """A repr holding one Rust HashMap (iteration order random per process) as (text around the map,
    the map's entries sorted). The map body must be exactly its entries joined by ", ", so any
    difference in format or content still fails."""
    text = repr(obj)
    start = text.index("custom_properties={") + len("custom_properties={")
    end = text.rindex("}")
    body = text[start:end]
    entries = _MAP_ENTRY.findall(body)
    assert ", ".join(entries) == body, text
    return text[:start], sorted(entries), text[end:]


def _err(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__, str(exc)
    return None


def test_table_path():
    for mod in (fluss, fluss_fast):
        p = mod.TablePath("db", "t")
        assert (p.database_name, p.table_name, p.table_path_str(), str(p)) == ("db", "t", "db.t", "db.t")
    a, b = fluss_fast.TablePath("db", "t"), fluss.TablePath("db", "t")
    assert repr(a) == repr(b)
    assert a == fluss_fast.TablePath("db", "t") and hash(a) == hash(fluss_fast.TablePath("db", "t"))
    assert a != fluss_fast.TablePath("db", "u")
    assert (a == "db.t") is False and (b == "db.t") is False
    assert len({a, fluss_fast.TablePath("db", "t")}) == 1
    assert _err(lambda: fluss_fast.TablePath("a", 1)) == _err(lambda: fluss.TablePath("a", 1))
    assert pickle.loads(pickle.dumps(a)) == a


def test_table_bucket():
    for args in [(1, 2), (0, 0), (2**40, 7)]:
        assert repr(fluss_fast.TableBucket(*args)) == repr(fluss.TableBucket(*args))
        assert str(fluss_fast.TableBucket(*args)) == str(fluss.TableBucket(*args))
    ours = fluss_fast.TableBucket.with_partition(1, 5, 2)
    theirs = fluss.TableBucket.with_partition(1, 5, 2)
    assert repr(ours) == repr(theirs)
    assert (ours.table_id, ours.partition_id, ours.bucket_id) == (theirs.table_id, theirs.partition_id,
                                                                   theirs.bucket_id)
    assert fluss_fast.TableBucket(1, 2).partition_id is None
    assert ours != fluss_fast.TableBucket(1, 2)
    assert ours == fluss_fast.TableBucket.with_partition(1, 5, 2)
    assert {ours: 1}[fluss_fast.TableBucket.with_partition(1, 5, 2)] == 1
    assert _err(lambda: fluss_fast.TableBucket("a", 1)) == _err(lambda: fluss.TableBucket("a", 1))
    assert _err(lambda: fluss_fast.TableBucket(1, 2**31))[0] == _err(lambda: fluss.TableBucket(1, 2**31))[0]
    assert pickle.loads(pickle.dumps(ours)) == ours


SCHEMAS = [
    pa.schema([pa.field("id", pa.int32()), pa.field("n", pa.string())]),
    pa.schema([pa.field("a", pa.bool_()), pa.field("b", pa.int8()), pa.field("c", pa.int16()),
               pa.field("d", pa.int64()), pa.field("e", pa.float32()), pa.field("f", pa.float64()),
               pa.field("g", pa.binary()), pa.field("h", pa.binary(4)), pa.field("i", pa.date32()),
               pa.field("j", pa.decimal128(10, 2)), pa.field("k", pa.timestamp("us")),
               pa.field("l", pa.timestamp("us", tz="UTC")), pa.field("m", pa.large_string()),
               pa.field("n", pa.uint32(), nullable=False)]),
    pa.schema([pa.field("t0", pa.time32("s")), pa.field("t3", pa.time32("ms")), pa.field("t6", pa.time64("us")),
               pa.field("t9", pa.time64("ns")), pa.field("s0", pa.timestamp("s")), pa.field("s3", pa.timestamp("ms")),
               pa.field("s9", pa.timestamp("ns", tz="Asia/Tokyo")), pa.field("d64", pa.date64())]),
    pa.schema([pa.field("arr", pa.list_(pa.int64())), pa.field("map", pa.map_(pa.string(), pa.int32())),
               pa.field("row", pa.struct([("x", pa.int8()), ("y", pa.list_(pa.string()))]))]),
]


@pytest.mark.parametrize("arrow_schema", SCHEMAS)
def test_schema_matches_pyfluss(arrow_schema):
    ours, theirs = fluss_fast.Schema(arrow_schema), fluss.Schema(arrow_schema)
    assert ours.get_column_names() == theirs.get_column_names()
    assert ours.get_column_types() == theirs.get_column_types()
    assert ours.get_columns() == theirs.get_columns()
    assert str(ours) == str(theirs)
    assert ours.get_primary_keys() == theirs.get_primary_keys() == []
    assert ours.get_auto_increment_columns() == theirs.get_auto_increment_columns() == []


def test_schema_primary_key_and_auto_increment():
    sc = pa.schema([pa.field("id", pa.int32()), pa.field("n", pa.string()), pa.field("seq", pa.int64())])
    for kwargs in [dict(primary_keys=["id"]), dict(primary_keys=["id", "n"]), dict(primary_keys=[]),
                   dict(primary_keys=["id"], auto_increment_column="seq")]:
        ours, theirs = fluss_fast.Schema(sc, **kwargs), fluss.Schema(sc, **kwargs)
        assert str(ours) == str(theirs)
        assert ours.get_primary_keys() == theirs.get_primary_keys()
        assert ours.get_auto_increment_columns() == theirs.get_auto_increment_columns()


@pytest.mark.parametrize("build", [
    lambda m, sc: m.Schema(pa.schema([pa.field("a", pa.int32()), pa.field("a", pa.int32())])),
    lambda m, sc: m.Schema(sc, primary_keys=["zz"]),
    lambda m, sc: m.Schema(sc, auto_increment_column="id"),
    lambda m, sc: m.Schema(sc, primary_keys=["id"], auto_increment_column="n"),
    lambda m, sc: m.Schema(sc, primary_keys=["id"], auto_increment_column="zz"),
    lambda m, sc: m.Schema(sc, "id"),
    lambda m, sc: m.Schema("not a schema"),
    lambda m, sc: m.TableDescriptor(m.Schema(sc), log_format="x"),
    lambda m, sc: m.TableDescriptor(m.Schema(sc), kv_format="x"),
    lambda m, sc: m.TableDescriptor(m.Schema(sc), partition_keys=["n"], bucket_keys=["n"]),
    lambda m, sc: m.TableDescriptor(m.Schema(sc, primary_keys=["id"]), partition_keys=["id"]),
    lambda m, sc: m.TableDescriptor(m.Schema(sc, primary_keys=["id"]), bucket_keys=["n"]),
    lambda m, sc: m.TableDescriptor(m.Schema(sc), bucket_count="3"),
    lambda m, sc: m.TableDescriptor(m.Schema(sc), properties={"a": 1}),
    lambda m, sc: m.TableDescriptor("x"),
    lambda m, sc: m.TableDescriptor(m.Schema(sc), comment=None),
])
def test_validation_errors_match_pyfluss(build):
    sc = pa.schema([pa.field("id", pa.int32()), pa.field("n", pa.string())])
    ours, theirs = _err(lambda: build(fluss_fast, sc)), _err(lambda: build(fluss, sc))
    assert theirs is not None
    assert ours is not None and ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "FlussError":
        assert ours[1] == theirs[1]


def test_unconvertible_arrow_type_is_a_flusserror():
    with pytest.raises(fluss_fast.FlussError, match="Cannot convert Arrow type"):
        fluss_fast.Schema(pa.schema([pa.field("h", pa.float16())]))


def test_schema_comment_metadata_and_pk_not_null():
    sc = pa.schema([pa.field("id", pa.int32(), metadata={"comment": "the key"}), pa.field("n", pa.string())])
    s = fluss_fast.Schema(sc, primary_keys=["id"])
    assert s.info.columns[0].comment == "the key"
    assert s.get_column_types() == ["int NOT NULL", "string"]
    assert pickle.loads(pickle.dumps(s)) == s


def test_descriptor_json_layout():
    sc = fluss_fast.Schema(pa.schema([pa.field("id", pa.int32()), pa.field("r", pa.string()),
                                      pa.field("v", pa.int64())]), primary_keys=["id", "r"])
    d = fluss_fast.TableDescriptor(sc, partition_keys=["r"], bucket_count=4, comment="c", log_format="arrow",
                                   kv_format="compacted", properties={"table.replication.factor": "1",
                                                                      "table.log.format": "INDEXED"},
                                   custom_properties={"k": "v"}, unknown_kwarg=1)
    j = json.loads(d.to_json_bytes())
    assert j["partition_key"] == ["r"] and j["bucket_key"] == ["id"] and j["bucket_count"] == 4
    # log_format wins over the same key in properties, as in pyfluss's builder.
    assert j["properties"] == {"table.replication.factor": "1", "table.log.format": "ARROW",
                               "table.kv.format": "COMPACTED"}
    assert j["custom_properties"] == {"k": "v"} and j["comment"] == "c"
    assert j["schema"]["primary_key"] == ["id", "r"]
    assert TableDescriptorInfo.from_json(j) == d.info
    assert d.get_schema() == sc
    plain = json.loads(fluss_fast.TableDescriptor(fluss_fast.Schema(pa.schema([pa.field("x", pa.int8())])))
                       .to_json_bytes())
    assert plain["bucket_key"] == [] and "bucket_count" not in plain and plain["partition_key"] == []


def test_offset_spec():
    for name, args in [("earliest", ()), ("latest", ()), ("timestamp", (5,)), ("timestamp", (-1,))]:
        assert repr(getattr(fluss_fast.OffsetSpec, name)(*args)) == repr(getattr(fluss.OffsetSpec, name)(*args))
    assert _err(lambda: fluss_fast.OffsetSpec.timestamp("x")) == _err(lambda: fluss.OffsetSpec.timestamp("x"))
    assert fluss_fast.OffsetSpec.latest() == fluss_fast.OffsetSpec.latest()
    assert fluss_fast.OffsetSpec.latest() != fluss_fast.OffsetSpec.earliest()


def test_change_type():
    for name in ("AppendOnly", "Insert", "UpdateBefore", "UpdateAfter", "Delete"):
        ours, theirs = getattr(fluss_fast.ChangeType, name), getattr(fluss.ChangeType, name)
        assert int(ours) == int(theirs)
        assert ours.short_string() == theirs.short_string()
        assert str(ours) == str(theirs) and repr(ours) == repr(theirs)
        assert ours == int(theirs)
    assert fluss_fast.ChangeType.from_byte(3) is fluss_fast.ChangeType.UpdateAfter


def test_lake_snapshot_and_database_descriptor():
    for mod in (fluss_fast, fluss):
        s = mod.LakeSnapshot(3)
        assert (s.snapshot_id, s.table_buckets_offset, s.get_table_buckets()) == (3, {}, [])
        assert s.get_bucket_offset(mod.TableBucket(1, 2)) is None
    assert repr(fluss_fast.LakeSnapshot(3)) == repr(fluss.LakeSnapshot(3))
    assert str(fluss_fast.LakeSnapshot(3)) == str(fluss.LakeSnapshot(3))
    tb = fluss_fast.TableBucket(1, 0)
    ls = fluss_fast.LakeSnapshot._make(9, {tb: 42})
    assert ls.get_bucket_offset(tb) == 42 and ls.get_table_buckets() == [tb]
    assert str(ls) == "LakeSnapshot(snapshot_id=9, buckets_count=1)"
    many = {"a": "1", "b": "2", "c": "q\"uo\\te", "d, e": "x: y", "z": ""}
    for args in [(), ("cm",), ("cm", {"x": "y"}), (None, {"b": "q\"uo\\te"}), ("cm", many)]:
        assert _map_repr(fluss_fast.DatabaseDescriptor(*args)) == _map_repr(fluss.DatabaseDescriptor(*args))
        ours, theirs = fluss_fast.DatabaseDescriptor(*args), fluss.DatabaseDescriptor(*args)
        assert ours.comment == theirs.comment
        assert ours.get_custom_properties() == theirs.get_custom_properties()
    # the order-free comparison still sees a different value, key or comment
    assert (_map_repr(fluss_fast.DatabaseDescriptor("cm", {"a": "1"}))
            != _map_repr(fluss.DatabaseDescriptor("cm", {"a": "2"})))
    assert _map_repr(fluss_fast.DatabaseDescriptor("cm", many)) != _map_repr(fluss.DatabaseDescriptor("cx", many))
    assert _err(lambda: fluss_fast.DatabaseDescriptor(comment=5)) == _err(lambda: fluss.DatabaseDescriptor(comment=5))
    d = fluss_fast.DatabaseDescriptor("c", {"k": "v"})
    assert fluss_fast.DatabaseDescriptor.from_json_bytes(d.to_json_bytes()) == d
    assert json.loads(fluss_fast.DatabaseDescriptor().to_json_bytes()) == {"version": 1, "custom_properties": {}}


def test_reprs_of_server_side_types():
    # pyfluss cannot construct these without a server; the formats are those of its __repr__.
    assert repr(fluss_fast.PartitionInfo(3, "US")) == "PartitionInfo(partition_id=3, partition_name='US')"
    node = fluss_fast.ServerNode(1, "h", 9, "TabletServer")
    assert repr(node) == "ServerNode(id=1, host='h', port=9, server_type='TabletServer')"
    assert node.uid == "ts-1" and fluss_fast.ServerNode(0, "h", 9, "CoordinatorServer").uid == "cs-0"
    info = fluss_fast.DatabaseInfo("db", fluss_fast.DatabaseDescriptor(), 1, 2)
    assert repr(info) == "DatabaseInfo(database_name='db', created_time=1, modified_time=2)"


def test_table_info_from_descriptor():
    sc = fluss_fast.Schema(pa.schema([pa.field("id", pa.int32()), pa.field("r", pa.string())]), primary_keys=["id"])
    d = fluss_fast.TableDescriptor(sc, bucket_count=3, comment="hello", properties={"a": "b"})
    info = fluss_fast.TableInfo(fluss_fast.TablePath("db", "t"), 7, 1, d.info, 10, 20)
    assert (info.table_id, info.schema_id, info.num_buckets, info.comment) == (7, 1, 3, "hello")
    assert info.get_primary_keys() == ["id"] and info.has_primary_key() and not info.is_partitioned()
    assert info.get_bucket_keys() == ["id"] and info.get_column_names() == ["id", "r"]
    assert info.get_column_count() == 2 and info.get_properties() == {"a": "b"}
    assert info.get_schema() == sc and info.table_path == fluss_fast.TablePath("db", "t")
    assert pickle.loads(pickle.dumps(info)).get_schema() == sc
