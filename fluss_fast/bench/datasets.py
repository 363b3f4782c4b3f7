"""Deterministic, seeded benchmark data sets, generated with vectorised numpy/Arrow and cached as Parquet.

Three shapes:

* ``orders``: an e-commerce order stream (ids, user ids, short and long strings, DECIMAL amounts,
  TIMESTAMP_LTZ, a nullable column, a low-cardinality category) -- wide rows, realistic mix;
* ``clicks``: a narrow clickstream (5 small columns) -- many tiny rows, where per-row overhead shows;
* ``numeric``: narrow numeric rows (int64 id, random int32, random float32, short string, int64) in
  4 buckets -- the random columns do not compress, so a read moves nearly its full size and the
  memory it lands in (page faults, huge pages) shows.

``load(name, rows)`` returns a ``pa.Table``; the first call for a (name, rows, seed) writes
``bench_data/cache/{name}-{rows}-s{seed}.parquet`` so later runs skip generation. Rows are a pure
function of (name, seed, row index range) only through the seed: the same (name, rows, seed) always
gives the same table, byte for byte.

``checksum(table, id_col, str_col)`` is an order-independent fingerprint (row count, sum of the id
column, a 64-bit hash of the string column bound to the ids) used to check what a client read or wrote:
buckets come back in any order, so the fingerprint must not depend on row order.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

DEFAULT_SEED = 20240601
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000, "10m": 10_000_000}

# Fixed epoch so that timestamps do not depend on when the data was generated.
_EPOCH_US = 1_717_200_000_000_000  # 2024-06-01T00:00:00Z

_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
          "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
          "xray", "yankee", "zulu", "red", "green", "blue", "cotton", "linen", "wool", "leather", "steel", "oak",
          "maple", "walnut", "small", "medium", "large", "extra", "soft", "hard", "light", "dark", "classic", "modern",
          "vintage", "premium", "basic", "deluxe", "eco", "organic", "handmade", "imported", "local", "fresh", "frozen",
          "dried", "smart", "wireless", "portable", "compact", "heavy", "duty", "indoor", "outdoor", "summer", "winter",
          "spring", "autumn", "kitchen", "garden", "office", "travel", "sport", "kids", "adult", "unisex", "pack",
          "set", "bundle", "refill", "spare", "cable", "charger", "lamp", "chair", "table", "shelf", "rug", "pillow",
          "blanket", "mug", "bottle", "bag", "case", "cover", "stand", "holder"]

CATEGORIES = ["electronics", "books", "home", "garden", "toys", "sports", "fashion", "beauty",
              "grocery", "automotive", "health", "music"]
ACTIONS = ["view", "click", "scroll", "add_to_cart", "purchase", "search"]


def default_cache_dir() -> Path:
    """``$FLUSS_FAST_BENCH_CACHE``, else ``<checkout>/bench_data/cache`` (git-ignored) when running from
    a source tree, else ``~/.cache/fluss-fast/bench_data`` (an installed package)."""
    env = os.environ.get("FLUSS_FAST_BENCH_CACHE")
    if env:
        return Path(env)
    repo_data = Path(__file__).resolve().parents[2] / "bench_data"
    if repo_data.is_dir():
        return repo_data / "cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fluss-fast" / "bench_data"


# ------------------------------------------------------------------------------------------------
# schemas
# ------------------------------------------------------------------------------------------------
ORDERS_SCHEMA = pa.schema([
    pa.field("order_id", pa.int64(), nullable=False),
    pa.field("user_id", pa.int64()),
    pa.field("sku", pa.string()),
    pa.field("category", pa.string()),
    pa.field("quantity", pa.int32()),
    pa.field("amount", pa.decimal128(12, 2)),
    pa.field("created_at", pa.timestamp("us", tz="UTC")),
    pa.field("coupon", pa.string()),  # mostly null
    pa.field("description", pa.string()),
])

CLICKS_SCHEMA = pa.schema([
    pa.field("event_id", pa.int64(), nullable=False),
    pa.field("user_id", pa.int32()),
    pa.field("page_id", pa.int32()),
    pa.field("action", pa.string()),
    pa.field("ts", pa.timestamp("ms", tz="UTC")),
])


NUMERIC_SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("reading", pa.int32()),
    pa.field("value", pa.float32()),
    pa.field("tag", pa.string()),
    pa.field("seq", pa.int64()),
])


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    schema: pa.Schema
    id_column: str       # unique, non-null int64: summed by the checksum
    string_column: str   # hashed by the checksum
    short_string_column: str  # small string column for projected scans
    projection: tuple    # columns a projected scan reads
    buckets: int = 3     # buckets of a bench table unless --buckets says otherwise


DATASETS: dict[str, DatasetSpec] = {
    "orders": DatasetSpec("orders", ORDERS_SCHEMA, "order_id", "description", "sku",
                          ("order_id", "sku", "amount")),
    "clicks": DatasetSpec("clicks", CLICKS_SCHEMA, "event_id", "action", "action",
                          ("event_id", "action")),
    "numeric": DatasetSpec("numeric", NUMERIC_SCHEMA, "id", "tag", "tag", ("id", "value", "tag"),
                           buckets=4),
}


# ------------------------------------------------------------------------------------------------
# generation
# ------------------------------------------------------------------------------------------------
def _string_pool(rng: np.random.Generator, size: int, min_words: int, max_words: int) -> pa.Array:
    """``size`` distinct-ish phrases; rows then pick from the pool with Arrow ``take`` (C++ speed)."""
    words = np.array(_WORDS, dtype=object)
    counts = rng.integers(min_words, max_words + 1, size=size)
    picks = rng.integers(0, len(words), size=int(counts.sum()))
    out, pos = [], 0
    for i, c in enumerate(counts.tolist()):
        out.append(f"{' '.join(words[picks[pos:pos + c]])} #{i}")
        pos += c
    return pa.array(out, type=pa.string())


def _fixed_codes(prefix: str, numbers: np.ndarray, digits: int) -> pa.Array:
    """``prefix`` + zero-padded decimal ``numbers`` as one Arrow string array, built from raw buffers."""
    n = len(numbers)
    p = np.frombuffer(prefix.encode(), dtype=np.uint8)
    width = len(p) + digits
    mat = np.empty((n, width), dtype=np.uint8)
    mat[:, :len(p)] = p
    v = numbers.astype(np.int64).copy()
    for d in range(digits - 1, -1, -1):
        mat[:, len(p) + d] = (v % 10).astype(np.uint8) + ord("0")
        v //= 10
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(mat.tobytes()))


def generate_orders(rows: int, seed: int = DEFAULT_SEED) -> pa.Table:
    rng = np.random.default_rng([seed, 1])
    order_id = np.arange(rows, dtype=np.int64) + 1_000_000
    # Heavy-tailed users: a few big spenders, a long tail.
    user_id = (rng.zipf(1.3, size=rows) % 2_000_000).astype(np.int64)
    sku = _fixed_codes("SKU-", rng.integers(0, 1_000_000, size=rows), 7)
    cat_idx = rng.choice(len(CATEGORIES), size=rows, p=_skewed(len(CATEGORIES), rng))
    category = pa.array(CATEGORIES, type=pa.string()).take(pa.array(cat_idx.astype(np.int32)))
    quantity = rng.integers(1, 10, size=rows, dtype=np.int32)
    # DECIMAL(12,2): Arrow decimal128 is two little-endian int64 words (low, high) per value.
    cents = np.round(rng.lognormal(3.5, 1.0, size=rows) * 100).astype(np.int64) + 1
    words = np.empty((rows, 2), dtype=np.int64)
    words[:, 0] = cents
    words[:, 1] = 0
    amount = pa.Array.from_buffers(pa.decimal128(12, 2), rows, [None, pa.py_buffer(words.tobytes())])
    created = _EPOCH_US + np.cumsum(rng.integers(0, 20_000, size=rows, dtype=np.int64))
    created_at = pa.array(created, type=pa.timestamp("us", tz="UTC"))
    coupon_pool = _fixed_codes("CPN", np.arange(500), 5)
    coupon_idx = rng.integers(0, 500, size=rows).astype(np.int32)
    coupon_null = rng.random(rows) < 0.7
    coupon = coupon_pool.take(pa.array(coupon_idx, mask=coupon_null))
    desc_pool = _string_pool(rng, 20_000, 3, 16)
    description = desc_pool.take(pa.array(rng.integers(0, len(desc_pool), size=rows).astype(np.int32)))
    return pa.Table.from_arrays(
        [pa.array(order_id), pa.array(user_id), sku, category, pa.array(quantity), amount, created_at,
         coupon, description], schema=ORDERS_SCHEMA)


def generate_clicks(rows: int, seed: int = DEFAULT_SEED) -> pa.Table:
    rng = np.random.default_rng([seed, 2])
    event_id = np.arange(rows, dtype=np.int64)
    user_id = rng.integers(0, 500_000, size=rows, dtype=np.int32)
    page_id = (rng.zipf(1.5, size=rows) % 100_000).astype(np.int32)
    act_idx = rng.choice(len(ACTIONS), size=rows, p=[0.55, 0.2, 0.12, 0.07, 0.02, 0.04]).astype(np.int32)
    action = pa.array(ACTIONS, type=pa.string()).take(pa.array(act_idx))
    ts = _EPOCH_US // 1000 + np.cumsum(rng.integers(0, 3, size=rows, dtype=np.int64))
    return pa.Table.from_arrays(
        [pa.array(event_id), pa.array(user_id), pa.array(page_id), action,
         pa.array(ts, type=pa.timestamp("ms", tz="UTC"))], schema=CLICKS_SCHEMA)


def generate_numeric(rows: int, seed: int = DEFAULT_SEED) -> pa.Table:
    rng = np.random.default_rng([seed, 3])
    ident = np.arange(rows, dtype=np.int64)
    # full-range random bits: nothing for zstd/lz4 to find in these two columns
    reading = rng.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max, size=rows, dtype=np.int32,
                           endpoint=True)
    value = rng.random(rows, dtype=np.float32) * np.float32(2000.0) - np.float32(1000.0)
    tag = _fixed_codes("t", rng.integers(0, 1000, size=rows), 3)
    seq = np.cumsum(rng.integers(1, 1000, size=rows, dtype=np.int64))
    return pa.Table.from_arrays(
        [pa.array(ident), pa.array(reading), pa.array(value), tag, pa.array(seq)], schema=NUMERIC_SCHEMA)


def _skewed(k: int, rng: np.random.Generator) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1) ** 0.8
    return w / w.sum()


_GENERATORS = {"orders": generate_orders, "clicks": generate_clicks, "numeric": generate_numeric}


def parse_rows(text: str | int) -> int:
    """``10000``, ``10k``, ``1m``, ``1_000_000`` -> int."""
    if isinstance(text, int):
        return text
    t = str(text).strip().lower().replace("_", "")
    if t in SIZES:
        return SIZES[t]
    mult = 1
    if t.endswith("k"):
        mult, t = 1_000, t[:-1]
    elif t.endswith("m"):
        mult, t = 1_000_000, t[:-1]
    try:
        value = int(float(t) * mult)
    except ValueError:
        raise ValueError(f"not a row count: {text!r} (use e.g. 10000, 100k, 1m)") from None
    if value <= 0:
        raise ValueError(f"row count must be positive, got {text!r}")
    return value


def generate(name: str, rows: int, seed: int = DEFAULT_SEED) -> pa.Table:
    try:
        gen = _GENERATORS[name]
    except KeyError:
        raise ValueError(f"unknown data set {name!r}; expected one of {', '.join(_GENERATORS)}") from None
    return gen(int(rows), seed)


def cache_path(name: str, rows: int, seed: int = DEFAULT_SEED, cache_dir: Path | None = None) -> Path:
    return Path(cache_dir or default_cache_dir()) / f"{name}-{rows}-s{seed}.parquet"


def load(name: str, rows: int | str, seed: int = DEFAULT_SEED, *, cache: bool = True,
         cache_dir: Path | None = None) -> pa.Table:
    """The data set as a ``pa.Table``, generated once and then read from the Parquet cache."""
    rows = parse_rows(rows)
    if not cache:
        return generate(name, rows, seed)
    import pyarrow.parquet as pq

    path = cache_path(name, rows, seed, cache_dir)
    if path.exists():
        try:
            table = pq.read_table(path)
            if table.num_rows == rows and table.schema.equals(DATASETS[name].schema):
                return table.combine_chunks()
        except (OSError, pa.ArrowException):
            pass  # a torn or stale cache file: regenerate below
    table = generate(name, rows, seed)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    except OSError:
        # A read-only or full cache dir only costs the next run a regeneration.
        with contextlib.suppress(OSError):
            tmp.unlink()
    return table


def to_rows(table: pa.Table) -> list[dict]:
    """Row dicts as a pyfluss user would pass them to ``append`` (Python values, ``None`` for null)."""
    return table.to_pylist()


# ------------------------------------------------------------------------------------------------
# checksums
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Checksum:
    rows: int
    id_sum: int
    str_hash: int

    def __str__(self) -> str:
        return f"rows={self.rows} id_sum={self.id_sum} str_hash={self.str_hash:016x}"


def _sorted_by(table: pa.Table, id_col: str) -> pa.Table:
    ids = table.column(id_col)
    if len(ids) > 1:
        id_np = ids.to_numpy()
        if not bool(np.all(id_np[1:] > id_np[:-1])):
            import pyarrow.compute as pc

            table = table.take(pc.sort_indices(ids))
    return table


def _hash_strings(h, arr: pa.Array) -> None:
    """Feeds lengths, validity and bytes of a string array into ``h``, independent of its offsets."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    off_dtype = np.int64 if (pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)) \
        else np.int32
    n = len(arr)
    if n == 0:
        return
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=off_dtype, count=arr.offset + n + 1)[arr.offset:]
    h.update(np.diff(offsets).astype(np.int64).tobytes())
    if arr.null_count:
        h.update(np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8).tobytes())
    start, end = int(offsets[0]), int(offsets[-1])
    if end > start:
        h.update(memoryview(bufs[2])[start:end])


def checksum(data: pa.Table | pa.RecordBatch | Sequence[pa.RecordBatch], id_col: str,
             str_col: str) -> Checksum:
    """Order-independent fingerprint of ``data``: rows, sum(id), and a 64-bit hash of the ids and the
    string column taken in id order (so a row whose string moved to another id is caught)."""
    import hashlib

    if isinstance(data, (list, tuple)):
        if not data:
            return Checksum(0, 0, 0)
        data = pa.Table.from_batches(list(data))
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    data = data.select([id_col, str_col]).combine_chunks()
    n = data.num_rows
    if n == 0:
        return Checksum(0, 0, 0)
    data = _sorted_by(data, id_col)
    ids = data.column(id_col).combine_chunks()
    strs = data.column(str_col).combine_chunks()
    id_np = ids.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    h = hashlib.blake2b(digest_size=8)
    h.update(id_np.tobytes())
    _hash_strings(h, strs)
    return Checksum(n, int(id_np.sum(dtype=np.int64)), int.from_bytes(h.digest(), "big"))


def checksum_values(ids: Sequence[int], strs: Sequence[str | None]) -> Checksum:
    """The same fingerprint from Python values (what a record-by-record reader collected)."""
    table = pa.table({"i": pa.array(ids, type=pa.int64()), "s": pa.array(strs, type=pa.string())})
    return checksum(table, "i", "s")


def expected_checksum(name: str, table: pa.Table, *, projected: bool = False) -> Checksum:
    spec = DATASETS[name]
    return checksum(table, spec.id_column, spec.short_string_column if projected else spec.string_column)
