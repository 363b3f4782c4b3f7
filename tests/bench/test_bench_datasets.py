"""bench_data generators: deterministic, the advertised shapes, cached as Parquet, and a checksum that
ignores row order but notices any changed value."""
import pyarrow as pa
import pytest

from fluss_fast.bench import datasets as ds


@pytest.mark.parametrize("name", ["orders", "clicks", "numeric"])
def test_deterministic_and_schema(name):
    a = ds.generate(name, 3000)
    b = ds.generate(name, 3000)
    assert a.equals(b)
    assert a.schema.equals(ds.DATASETS[name].schema)
    assert a.num_rows == 3000
    assert ds.generate(name, 3000, seed=1).equals(a) is False
    ids = a.column(ds.DATASETS[name].id_column)
    assert ids.null_count == 0 and len(set(ids.to_pylist())) == 3000


def test_orders_shape():
    t = ds.generate("orders", 5000)
    assert pa.types.is_decimal(t.schema.field("amount").type)
    assert t.schema.field("created_at").type == pa.timestamp("us", tz="UTC")
    coupon_nulls = t.column("coupon").null_count
    assert 0.6 * 5000 < coupon_nulls < 0.8 * 5000
    assert len(set(t.column("category").to_pylist())) <= len(ds.CATEGORIES)
    lens = [len(s) for s in t.column("description").to_pylist()]
    assert min(lens) >= 10 and max(lens) > 60
    assert all(v > 0 for v in t.column("amount").to_pylist())


def test_numeric_shape():
    """Narrow numeric rows whose random columns do not compress; 4 buckets unless told otherwise."""
    import zlib

    t = ds.generate("numeric", 20_000)
    spec = ds.DATASETS["numeric"]
    assert spec.buckets == 4 and t.schema.names == ["id", "reading", "value", "tag", "seq"]
    assert [f.type for f in t.schema] == [pa.int64(), pa.int32(), pa.float32(), pa.string(), pa.int64()]
    for col in ("reading", "value"):
        raw = t.column(col).combine_chunks().buffers()[1].to_pybytes()
        assert len(zlib.compress(raw, 6)) > 0.85 * len(raw), col
    assert max(len(s) for s in t.column("tag").to_pylist()) <= 8
    assert len(set(t.column("reading").to_pylist())) > 19_000
    assert all(spec.id_column in spec.projection and spec.short_string_column in spec.projection
               for spec in ds.DATASETS.values())


def test_cache_roundtrip(tmp_path):
    a = ds.load("clicks", 1234, cache_dir=tmp_path)
    path = ds.cache_path("clicks", 1234, cache_dir=tmp_path)
    assert path.exists()
    b = ds.load("clicks", 1234, cache_dir=tmp_path)
    assert a.equals(b)
    path.write_bytes(b"torn")  # a broken cache file is regenerated, not trusted
    assert ds.load("clicks", 1234, cache_dir=tmp_path).equals(a)


def test_parse_rows():
    assert ds.parse_rows("10k") == 10_000
    assert ds.parse_rows("1m") == 1_000_000
    assert ds.parse_rows("2.5m") == 2_500_000
    assert ds.parse_rows("1_000") == 1000
    with pytest.raises(ValueError, match="not a row count"):
        ds.parse_rows("lots")
    with pytest.raises(ValueError):
        ds.parse_rows("0")


def test_checksum_order_independent_and_sensitive():
    t = ds.generate("orders", 4000)
    spec = ds.DATASETS["orders"]
    want = ds.checksum(t, spec.id_column, spec.string_column)
    shuffled = t.take(pa.array(list(range(3999, -1, -1))))
    assert ds.checksum(shuffled, spec.id_column, spec.string_column) == want
    assert ds.checksum(t.to_batches(max_chunksize=333), spec.id_column, spec.string_column) == want
    rows = t.to_pylist()
    assert ds.checksum_values([r["order_id"] for r in rows], [r["description"] for r in rows]) == want
    # one changed character, two swapped strings, one dropped row: all caught
    desc = [r["description"] for r in rows]
    ids = [r["order_id"] for r in rows]
    changed = list(desc)
    changed[7] = changed[7][:-1] + "?"
    assert ds.checksum_values(ids, changed) != want
    swapped = list(desc)
    swapped[1], swapped[2] = swapped[2], swapped[1]
    assert ds.checksum_values(ids, swapped) != want
    assert ds.checksum_values(ids[1:], desc[1:]).rows == 3999
    nulled = list(desc)
    nulled[3] = None
    assert ds.checksum_values(ids, nulled) != want


def test_unwritable_cache_still_returns_data(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    t = ds.load("clicks", 500, cache_dir=blocker / "cache")
    assert t.num_rows == 500 and t.equals(ds.generate("clicks", 500))
