"""Every Fluss type through Spark: Spark -> Fluss -> Spark, and pyfluss -> Fluss -> Spark."""
from __future__ import annotations

import asyncio
import datetime as dt
import decimal

import pyarrow as pa
import pytest

from fluss_fast import sync  # noqa: F401  (the session's client)

from conftest import create_table

UTC = dt.UTC

# one column per Fluss type the Arrow schema can declare
ARROW = pa.schema([
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("dec", pa.decimal128(12, 3)),
    ("d", pa.date32()), ("t", pa.time32("ms")), ("ts", pa.timestamp("us")),
    ("tsl", pa.timestamp("us", tz="UTC")), ("by", pa.binary()), ("fb", pa.binary(4)),
    ("arr", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int64())),
    ("r", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ("deep", pa.list_(pa.struct([("a", pa.int64()), ("tags", pa.list_(pa.string()))]))),
])

SPARK_TYPES = {
    "b": "boolean", "i8": "tinyint", "i16": "smallint", "i32": "int", "i64": "bigint", "f32": "float",
    "f64": "double", "s": "string", "dec": "decimal(12,3)", "d": "date", "t": "int", "ts": "timestamp_ntz",
    "tsl": "timestamp", "by": "binary", "fb": "binary", "arr": "array<int>", "m": "map<string,bigint>",
    "r": "struct<x:int,y:string>", "deep": "array<struct<a:bigint,tags:array<string>>>",
}

ROWS = [
    dict(b=True, i8=-128, i16=32767, i32=-2147483648, i64=9223372036854775807, f32=1.5, f64=-2.25,
         s="héllo ✓", dec=decimal.Decimal("123456789.123"), d=dt.date(2024, 2, 29), t=dt.time(23, 59, 58, 123000),
         ts=dt.datetime(2024, 1, 2, 3, 4, 5, 678901), tsl=dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
         by=b"\x00\xffbytes", fb=b"abcd", arr=[1, None, 3], m=[("k1", 10), ("k2", None)], r={"x": 7, "y": "seven"},
         deep=[{"a": 1, "tags": ["p", "q"]}, {"a": None, "tags": []}]),
    dict(b=False, i8=127, i16=-32768, i32=0, i64=-1, f32=-0.0, f64=1e300, s="", dec=decimal.Decimal("-0.001"),
         d=dt.date(1970, 1, 1), t=dt.time(0, 0, 0), ts=dt.datetime(1900, 1, 1),
         tsl=dt.datetime(2038, 1, 19, tzinfo=UTC),
         by=b"", fb=b"\x00\x00\x00\x00", arr=[], m=[], r={"x": None, "y": None}, deep=[]),
    {name: None for name in ARROW.names},
]


def _expected_spark(row):
    """What Spark hands back for one of ROWS (TIME as milliseconds of the day, maps as dicts)."""
    out = dict(row)
    if row["t"] is not None:
        t = row["t"]
        out["t"] = ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000
    if row["m"] is not None:
        out["m"] = dict(row["m"])
    if row["tsl"] is not None:
        out["tsl"] = row["tsl"].replace(tzinfo=None)  # the session time zone is UTC
    if row["r"] is not None:
        out["r"] = (row["r"]["x"], row["r"]["y"])
    if row["deep"] is not None:
        out["deep"] = [(e["a"], e["tags"]) for e in row["deep"]]
    return out


def _spark_rows(df):
    got = []
    for r in df.collect():
        d = r.asDict(recursive=False)
        if d["r"] is not None:
            d["r"] = tuple(d["r"])
        if d["deep"] is not None:
            d["deep"] = [tuple(e) for e in d["deep"]]
        if d["by"] is not None:
            d["by"] = bytes(d["by"])
        if d["fb"] is not None:
            d["fb"] = bytes(d["fb"])
        got.append(d)
    return sorted(got, key=lambda d: (d["i64"] is None, d["i64"] or 0))


def _assert_rows(got, expected):
    want = sorted((_expected_spark(r) for r in expected), key=lambda d: (d["i64"] is None, d["i64"] or 0))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for k in w:
            if k == "f32" and w[k] is not None:
                assert g[k] == pytest.approx(w[k]), k
            else:
                assert g[k] == w[k], (k, g[k], w[k])


def _reader(spark, bootstrap, name):
    return spark.read.format("fluss").option("bootstrap.servers", bootstrap).load(name)


def test_schema_maps_every_type(spark, conn, database, bootstrap, unique_name):
    name = create_table(conn, database, unique_name("types_schema"), ARROW)
    schema = _reader(spark, bootstrap, name).schema
    assert {f.name: f.dataType.simpleString() for f in schema.fields} == SPARK_TYPES


def test_pyfluss_written_rows_read_by_spark(spark, conn, database, bootstrap, unique_name):
    fluss = pytest.importorskip("fluss")
    name = create_table(conn, database, unique_name("types_pyfluss"), ARROW, buckets=1)
    db, t = name.split(".")

    async def write():
        c = await asyncio.wait_for(fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap})), 30)
        try:
            table = await asyncio.wait_for(c.get_table(fluss.TablePath(db, t)), 30)
            w = table.new_append().create_writer()
            w.write_arrow(pa.Table.from_pylist(ROWS, schema=ARROW))
            await asyncio.wait_for(w.flush(), 30)
        finally:
            await c.close()

    asyncio.run(write())
    _assert_rows(_spark_rows(_reader(spark, bootstrap, name)), ROWS)


def test_spark_written_rows_round_trip(spark, conn, database, bootstrap, unique_name):
    src = create_table(conn, database, unique_name("types_src"), ARROW, buckets=1)
    dst = create_table(conn, database, unique_name("types_dst"), ARROW, buckets=3)
    w = sync.connect({"bootstrap.servers": bootstrap})
    try:
        db, t = src.split(".")
        import fluss_fast as fluss

        writer = w.get_table(fluss.TablePath(db, t)).new_append().create_writer()
        writer.write_arrow(pa.Table.from_pylist(ROWS, schema=ARROW))
        writer.flush()
    finally:
        w.close()
    # Spark reads the source, writes every type into the destination, and reads it back
    _reader(spark, bootstrap, src).write.format("fluss").option("bootstrap.servers", bootstrap) \
        .mode("append").save(dst)
    _assert_rows(_spark_rows(_reader(spark, bootstrap, dst)), ROWS)
    # and a DataFrame built by Spark itself (Spark's own Python -> Arrow conversion)
    dst2 = create_table(conn, database, unique_name("types_dst2"), ARROW, buckets=2)
    spark_df = spark.createDataFrame([_expected_spark(r) for r in ROWS[:2]] + [{}],
                                     schema=_reader(spark, bootstrap, src).schema)
    spark_df.write.format("fluss").option("bootstrap.servers", bootstrap).mode("append").save(dst2)
    _assert_rows(_spark_rows(_reader(spark, bootstrap, dst2)), ROWS)
