"""What the CompactedRow and IndexedRow codecs share: field labels in errors, the record framing of
row-format logs (``int32 length | change type | row``, docs/contributing/formats.md §3.1) and the codec base classes."""
from __future__ import annotations

import struct
from collections.abc import Sequence

from .._select import pick
from ..wire.bytebuf import wb_le32
from .rowtypes import TypeInfo, type_info


def _field_label(names, i: int) -> str:
    return f"field {names[i]!r}" if names is not None and i < len(names) else f"field {i}"


def _with_field(exc: Exception, names, i: int) -> Exception:
    return type(exc)(f"{_field_label(names, i)}: {exc}")


def _null_error(names, i: int, t: TypeInfo) -> ValueError:
    return ValueError(f"{_field_label(names, i)} is null but its type is {t.dtype}")


def _arity_error(got: int, n: int) -> ValueError:
    return ValueError(f"row has {got} values but the schema has {n} fields")


def _infos(types) -> tuple[TypeInfo, ...]:
    return tuple(type_info(t) for t in types)


def _as_bytes(buf, pos: int, end: int | None):
    """(bytes-like, pos, end) suitable for slicing: bytes stay as they are, other buffers are copied."""
    if type(buf) is bytes:
        return buf, pos, len(buf) if end is None else end
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    if end is None:
        end = mv.nbytes
    return bytes(mv[pos:end]), 0, end - pos


_DECODE_ERRORS = (struct.error, IndexError, OverflowError, UnicodeDecodeError)


def _encode_records(encode, rows, change_types) -> bytes:
    n = len(rows)
    if change_types is not None and len(change_types) != n:
        raise ValueError(f"{len(change_types)} change types for {n} rows")
    out = bytearray()
    for i in range(n):
        ct = 0 if change_types is None else change_types[i]
        if not 0 <= ct <= 4:
            raise ValueError(f"row {i}: change type {ct} is not one of 0..4")
        try:
            row = encode(rows[i])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"row {i}: {exc}") from None
        wb_le32(out, len(row) + 1)
        out.append(ct)
        out += row
    return bytes(out)


class _RowCodec:
    """What every row encoder/decoder knows: the field types, their names and the null bitset size."""

    def __init__(self, types, names: Sequence[str] | None = None) -> None:
        self._infos = _infos(types)
        self._names = list(names) if names is not None else None
        self._n = len(self._infos)
        self._nbytes = (self._n + 7) >> 3

    @property
    def arity(self) -> int:
        return self._n


class _RowEncoder(_RowCodec):
    def encode_records(self, rows, change_types=None) -> bytes:
        """Log records ``int32 length | change type | row`` for every row, concatenated (§3.1)."""
        return _encode_records(self.encode, rows, change_types)

    def _null(self, out: bytearray, i: int, nullable: bool) -> None:
        """Mark field i null in the bitset at the start of ``out``, refusing NOT NULL fields."""
        if not nullable:
            raise _null_error(self._names, i, self._infos[i])
        out[i >> 3] |= 1 << (i & 7)


# ``_rowbase`` holds the compiled codecs' own base classes: it replaces nothing here (the pure row
# codecs keep extending the classes above), but it is loaded, and reported, like every twin.
pick("_rowbase", globals(), [])
