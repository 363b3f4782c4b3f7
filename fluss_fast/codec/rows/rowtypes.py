"""Fluss data types flattened for the binary row codecs (docs/contributing/formats.md §3.2, §4): the row format names,
the type codes the Cython twin ``_rows`` switches on, and :class:`TypeInfo`, built once per DataType."""
from __future__ import annotations

import functools
from collections.abc import Callable

COMPACTED = "COMPACTED"
INDEXED = "INDEXED"

# Type codes. Kept identical in the Cython twin, which switches on them.
T_BOOLEAN, T_TINYINT, T_SMALLINT, T_INT, T_BIGINT, T_FLOAT, T_DOUBLE = 0, 1, 2, 3, 4, 5, 6
T_CHAR, T_STRING, T_BINARY, T_BYTES, T_DECIMAL, T_DATE, T_TIME = 7, 8, 9, 10, 11, 12, 13
T_TIMESTAMP, T_TIMESTAMP_LTZ, T_ARRAY, T_MAP, T_ROW = 14, 15, 16, 17, 18

_ROOT_CODES = {
    "BOOLEAN": T_BOOLEAN, "TINYINT": T_TINYINT, "SMALLINT": T_SMALLINT, "INTEGER": T_INT,
    "BIGINT": T_BIGINT, "FLOAT": T_FLOAT, "DOUBLE": T_DOUBLE, "CHAR": T_CHAR, "STRING": T_STRING,
    "BINARY": T_BINARY, "BYTES": T_BYTES, "DECIMAL": T_DECIMAL, "DATE": T_DATE,
    "TIME_WITHOUT_TIME_ZONE": T_TIME, "TIMESTAMP_WITHOUT_TIME_ZONE": T_TIMESTAMP,
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": T_TIMESTAMP_LTZ, "ARRAY": T_ARRAY, "MAP": T_MAP, "ROW": T_ROW,
}

# BinaryArray element slot sizes (BinaryArray.calculateFixLengthPartSize)
_ELEMENT_SIZES = {T_BOOLEAN: 1, T_TINYINT: 1, T_SMALLINT: 2, T_INT: 4, T_FLOAT: 4, T_DATE: 4, T_TIME: 4}
MAX_COMPACT_PRECISION = 18  # DECIMAL(p<=18) fits an int64 unscaled value
MAX_COMPACT_TIMESTAMP_PRECISION = 3  # only millis are stored


class TypeInfo:
    """A DataType flattened into what the codecs need; built once per type (see :func:`type_info`)."""

    __slots__ = ("code", "nullable", "length", "precision", "scale", "compact", "elem", "key",
                 "value", "fields", "names", "name_set", "field_types", "dtype", "esize", "fixed", "size",
                 "limit", "_cache")

    def __init__(self, dtype) -> None:
        root = dtype.root
        if root not in _ROOT_CODES:
            raise ValueError(f"unsupported data type {dtype}")
        code = _ROOT_CODES[root]
        self.code = code
        self.dtype = dtype
        self.nullable = bool(dtype.nullable)
        self.length = dtype.length or 0
        self.precision = dtype.precision if dtype.precision is not None else 0
        self.scale = dtype.scale or 0
        self.compact = True
        self.elem = self.key = self.value = None
        self.fields = ()
        self.names = ()
        self.name_set = frozenset()
        self.field_types = ()
        self.limit = 0
        self._cache = {}
        if code == T_DECIMAL:
            self.compact = self.precision <= MAX_COMPACT_PRECISION
            self.limit = 10 ** self.precision
        elif code in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
            self.compact = self.precision <= MAX_COMPACT_TIMESTAMP_PRECISION
        elif code == T_ARRAY:
            self.elem = type_info(dtype.element)
        elif code == T_MAP:
            self.key = type_info(dtype.key)
            self.value = type_info(dtype.value)
        elif code == T_ROW:
            self.fields = tuple(type_info(f.type) for f in dtype.fields)
            self.names = tuple(f.name for f in dtype.fields)
            self.name_set = frozenset(self.names)
            self.field_types = tuple(f.type for f in dtype.fields)
        self.esize = _ELEMENT_SIZES.get(code, 8)
        # IndexedRow: fixed-length fields sit inline with a size known from the type alone.
        if code in (T_BOOLEAN, T_TINYINT):
            self.fixed, self.size = True, 1
        elif code == T_SMALLINT:
            self.fixed, self.size = True, 2
        elif code in (T_INT, T_FLOAT, T_DATE, T_TIME):
            self.fixed, self.size = True, 4
        elif code in (T_BIGINT, T_DOUBLE):
            self.fixed, self.size = True, 8
        elif code in (T_CHAR, T_BINARY):
            self.fixed, self.size = True, self.length
        elif code == T_DECIMAL:
            self.fixed, self.size = self.compact, 8 if self.compact else 0
        elif code in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
            self.fixed, self.size = True, 8 if self.compact else 12
        else:
            self.fixed, self.size = False, 0

    def __repr__(self) -> str:
        return f"TypeInfo({self.dtype})"


_TYPE_CACHE: dict[object, TypeInfo] = {}


def _per_type(tag: str) -> Callable:
    """Memoises a codec-function builder ``build(t, *args)`` in ``t._cache`` under ``(tag, *args)``."""
    def deco(build: Callable) -> Callable:
        @functools.wraps(build)
        def get(t: TypeInfo, *args):
            key = (tag,) + args
            fn = t._cache.get(key)
            if fn is None:
                fn = t._cache[key] = build(t, *args)
            return fn
        return get
    return deco


def type_info(dtype) -> TypeInfo:
    """The (cached) :class:`TypeInfo` of a ``datatypes.DataType``; TypeInfo passes through."""
    if isinstance(dtype, TypeInfo):
        return dtype
    try:
        return _TYPE_CACHE[dtype]
    except KeyError:
        pass
    except TypeError:  # unhashable (should not happen with the frozen DataType)
        return TypeInfo(dtype)
    info = TypeInfo(dtype)
    if len(_TYPE_CACHE) < 10_000:
        _TYPE_CACHE[dtype] = info
    return info
