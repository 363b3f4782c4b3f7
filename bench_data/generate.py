"""Fill bench_data/cache/ with the benchmark data sets (Parquet, git-ignored).

    python bench_data/generate.py                       # every data set, 10k 100k 1m
    python bench_data/generate.py --rows 10m --dataset orders --force
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fluss_fast.bench import datasets as ds  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--dataset", default="all", choices=["all"] + sorted(ds.DATASETS))
    p.add_argument("--rows", default="10k,100k,1m", help="comma-separated sizes (10k, 100k, 1m, 10m, or numbers)")
    p.add_argument("--seed", type=int, default=ds.DEFAULT_SEED)
    p.add_argument("--force", action="store_true", help="regenerate even when cached")
    opts = p.parse_args(argv)
    names = sorted(ds.DATASETS) if opts.dataset == "all" else [opts.dataset]
    for name in names:
        for size in opts.rows.split(","):
            rows = ds.parse_rows(size)
            path = ds.cache_path(name, rows, opts.seed)
            if opts.force and path.exists():
                path.unlink()
            t0 = time.perf_counter()
            table = ds.load(name, rows, opts.seed)
            spec = ds.DATASETS[name]
            print(f"{name:7} {rows:>11,} rows  {table.nbytes / 1e6:9.1f} MB Arrow  "
                  f"{path.stat().st_size / 1e6:8.1f} MB Parquet  {time.perf_counter() - t0:6.2f} s  "
                  f"{ds.checksum(table, spec.id_column, spec.string_column)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
