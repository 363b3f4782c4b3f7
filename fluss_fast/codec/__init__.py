"""Byte codecs shared by the client and the embedded server.

Each codec ``X`` is a pure-Python module ``X.py`` with a Cython twin ``_X.pyx`` of the same API; the
pure module picks the compiled versions at import (see ``_select``). ``FLUSS_FAST_NO_EXTENSIONS=1``
forces the pure versions, and ``LOADED`` records which extensions were actually used.
"""
from ._select import LOADED, NO_EXTENSIONS  # noqa: F401
