"""asv benchmarks for fluss-fast. With ``asv run --python=same`` the package is not installed into an
environment, so fall back to the checkout this folder lives in."""
import os
import sys

try:
    import fluss_fast  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
