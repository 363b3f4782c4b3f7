"""Stored primary-key rows -> Arrow: CompactedRow / IndexedRow values straight into record batches.

The server's changelog (PUT_KV) and the client's reads of a primary-key table's current state
(SCAN_KV, LIMIT_SCAN) hold rows in the table's kv format; they want a ``pa.RecordBatch`` of the
table's Arrow schema (``SchemaInfo.to_arrow()``, the same fields ``columns.RowBatchBuilder`` builds).

API (both twins)::

    conv = RowsToArrow(schema, kv_format="COMPACTED", schemas={1: old_schema, 2: schema},
                       table_name="db.t")
    conv.arrow_schema
    conv.values(buf, starts, ends)          # spans of stored values: int16 LE schema id + row
    conv.rows(buf, starts, ends, schema_id) # spans of bare rows written under one schema id
    conv.value_list([value, ...])           # stored values as separate bytes-likes
    conv.value_batch(records)               # the records of a LIMIT_SCAN / SCAN_KV answer
    conv.add_schema(schema_id, schema)      # after an UnknownSchemaError (a ValueError)
    b = conv.builder()                      # one row at a time, no copy of the row bytes:
    b.add_value(buf, start, end); b.add_row(buf, start, end, schema_id); len(b); b.finish()

``starts`` / ``ends`` are int64 sequences (numpy arrays, ``array('q')``, lists). Every call returns
a RecordBatch in the LATEST schema: rows written under an older schema id are mapped column by
column (by column id when both schemas have ids, else by position) and columns the old schema did
not have are null. A column whose type changed between the schemas cannot be mapped (ValueError
when a row of that schema first turns up).

Values are the Arrow storage values the Java writer produces (docs/contributing/formats.md §2.4): TIME and TIMESTAMP
scaled to the unit, nanoseconds kept for TIMESTAMP(7..9), DECIMAL unscaled. Two deliberate
differences from decoding to Python first: IndexedRow BINARY(n) keeps its n bytes (the row reader
strips trailing zero bytes, which ``fixed_size_binary(n)`` could not hold), and a CompactedRow
BINARY(n) shorter than n is zero-padded to n. Nested columns (ARRAY, MAP, ROW) are decoded to Python
values with ``rows`` and converted as ``columns`` does, in both twins.

Malformed rows raise ``ValueError`` naming the row index, the column and what is wrong (truncated
row, bad varint, length past the end, invalid UTF-8, decimal over its precision, TIME outside the
day, NULL in a NOT NULL column, unknown schema id); the builder then holds the rows before the bad
one, nothing of it.

The compiled twin ``_rowarrow`` decodes flat columns straight into Arrow buffers (long calls on
flat schemas with the GIL released); this module is the reference (one Python list per column,
``pa.array`` at the end).
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from ...datatypes import SchemaInfo
from .._select import pick
from ..wire.varint import _get_varint32, _get_varint64
from .binarray import _nested_decoder
from .rowtypes import (
    COMPACTED,
    INDEXED,
    T_BIGINT,
    T_BINARY,
    T_BOOLEAN,
    T_BYTES,
    T_CHAR,
    T_DATE,
    T_DECIMAL,
    T_DOUBLE,
    T_FLOAT,
    T_INT,
    T_SMALLINT,
    T_STRING,
    T_TIME,
    T_TIMESTAMP,
    T_TIMESTAMP_LTZ,
    T_TINYINT,
    TypeInfo,
    type_info,
)
from .scalars import make_decimal

__all__ = ["RowsToArrow", "RowArrowBuilder", "UnknownSchemaError", "column_mapping"]

_i16 = struct.Struct("<h")
_i32 = struct.Struct("<i")
_i64 = struct.Struct("<q")
_f32 = struct.Struct("<f")
_f64 = struct.Struct("<d")
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_MILLIS_PER_DAY = 86_400_000
_MAX_DECIMAL_BYTES = 16  # decimal128: BigInteger bytes of any DECIMAL(p <= 38) fit in 16
_DECODE_ERRORS = (struct.error, IndexError, OverflowError, UnicodeDecodeError, ValueError)


# ----------------------------------------------------------------------------------------------
# Shared by both twins
# ----------------------------------------------------------------------------------------------
def column_mapping(target: SchemaInfo, source: SchemaInfo) -> list[int]:
    """For each column of ``source`` (an older schema of the table), its index in ``target`` (the
    latest schema) or -1 when the column is gone. Columns match by id when every column of both
    schemas has one, else by position; a matched column must keep its type (nullability aside)."""
    tcols, scols = target.columns, source.columns
    if all(c.id is not None for c in tcols) and all(c.id is not None for c in scols):
        by_id = {c.id: i for i, c in enumerate(tcols)}
        out = [by_id.get(c.id, -1) for c in scols]
    else:
        out = [i if i < len(tcols) else -1 for i in range(len(scols))]
    for k, j in enumerate(out):
        if j >= 0 and scols[k].type.with_nullable(True) != tcols[j].type.with_nullable(True):
            raise ValueError(f"column '{tcols[j].name}' changed type from {scols[k].type} to "
                             f"{tcols[j].type}: rows of the older schema cannot be read in the new one")
    return out


def nested_converter(dtype, fmt: str) -> Callable:
    """fn(buf, pos, n) -> the storage value ``pa.array`` takes for an ARRAY/MAP/ROW value: the
    ``rows`` decoder's Python value converted as ``columns.RowBatchBuilder`` converts it."""
    from .columns import converter_for

    decode = _nested_decoder(type_info(dtype), fmt)
    conv = converter_for(dtype)
    return lambda buf, pos, n: conv(decode(buf, pos, n))


def time_scale(precision: int) -> int:
    """Multiplier of millis-of-day for TIME(p) (0 means divide by 1000)."""
    return 0 if precision == 0 else 1 if precision <= 3 else 1000 if precision <= 6 else 1000000


def timestamp_value(millis: int, nanos: int, precision: int) -> int:
    """The Arrow value of a timestamp as the Java writer computes it (docs/contributing/formats.md §2.4)."""
    if precision == 0:
        q = abs(millis) // 1000
        v = -q if millis < 0 else q
    elif precision <= 3:
        v = millis
    elif precision <= 6:
        v = millis * 1000 + nanos // 1000
    else:
        v = millis * 1000000 + nanos
    if not _I64_MIN <= v <= _I64_MAX:
        raise ValueError(f"timestamp {millis} ms + {nanos} ns is out of range for precision {precision}")
    return v


class UnknownSchemaError(ValueError):
    """A row written under a schema id the decoder was not given: fetch that schema, ``add_schema``
    it and decode again."""

    def __init__(self, schema_id: int, latest: int) -> None:
        super().__init__(f"unknown schema id {schema_id} (latest {latest})")
        self.schema_id = schema_id


def unknown_schema(schema_id: int, latest: int) -> ValueError:
    return UnknownSchemaError(schema_id, latest)


def row_error(fmt: str, table: str, index: int, column: str, detail) -> ValueError:
    where = f" of {table}" if table else ""
    return ValueError(f"corrupt {fmt} row {index}{where}, column '{column}': {detail}")


def as_bytes(buf) -> bytes:
    if type(buf) is bytes:
        return buf
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    return mv.tobytes()


# ----------------------------------------------------------------------------------------------
# Pure twin
# ----------------------------------------------------------------------------------------------
def _flat_reader(t: TypeInfo, fmt: str, unit_precision: int):
    """fn(buf, pos, end) -> (storage value, next pos) of one non-null field (not ARRAY/MAP/ROW)."""
    c = t.code
    compacted = fmt == COMPACTED

    def need(pos, n, end):
        if n < 0 or pos + n > end:
            raise ValueError(f"needs {n} bytes at byte {pos}, the row ends at byte {end}")

    def length_at(buf, pos, end):
        if compacted:
            n, pos = _get_varint32(buf, pos)
            need(pos, n, end)
            return n, pos
        raise AssertionError  # pragma: no cover

    def int32(buf, pos, end):
        if compacted:
            v, p = _get_varint32(buf, pos)
            if p > end:
                raise ValueError(f"varint at byte {pos} runs past the row's end")
            return v, p
        need(pos, 4, end)
        return _i32.unpack_from(buf, pos)[0], pos + 4

    def int64(buf, pos, end):
        if compacted:
            v, p = _get_varint64(buf, pos)
            if p > end:
                raise ValueError(f"varint at byte {pos} runs past the row's end")
            return v, p
        need(pos, 8, end)
        return _i64.unpack_from(buf, pos)[0], pos + 8

    if c == T_BOOLEAN:
        def r(buf, pos, end):
            need(pos, 1, end)
            return buf[pos] != 0, pos + 1
    elif c == T_TINYINT:
        def r(buf, pos, end):
            need(pos, 1, end)
            b = buf[pos]
            return (b - 256 if b > 127 else b), pos + 1
    elif c == T_SMALLINT:
        def r(buf, pos, end):
            need(pos, 2, end)
            return _i16.unpack_from(buf, pos)[0], pos + 2
    elif c in (T_INT, T_DATE):
        r = int32
    elif c == T_BIGINT:
        r = int64
    elif c in (T_FLOAT, T_DOUBLE):
        st = _f32 if c == T_FLOAT else _f64

        def r(buf, pos, end):
            need(pos, st.size, end)
            return st.unpack_from(buf, pos)[0], pos + st.size
    elif c == T_TIME:
        scale = time_scale(t.precision)

        def r(buf, pos, end):
            ms, pos = int32(buf, pos, end)
            if not 0 <= ms < _MILLIS_PER_DAY:
                raise ValueError(f"TIME value {ms} ms is outside a day")
            return (ms // 1000 if scale == 0 else ms * scale), pos
    elif c in (T_CHAR, T_STRING, T_BINARY, T_BYTES):
        text = c in (T_CHAR, T_STRING)
        if not compacted and c in (T_CHAR, T_BINARY):
            n = t.length

            def r(buf, pos, end):
                need(pos, n, end)
                data = buf[pos:pos + n]
                return (str(data.rstrip(b"\x00"), "utf-8") if text else data), pos + n
        elif compacted:
            width = t.length if c == T_BINARY else 0

            def r(buf, pos, end):
                n, pos = length_at(buf, pos, end)
                data = buf[pos:pos + n]
                if text:
                    return str(data, "utf-8"), pos + n
                if width:
                    if n > width:
                        raise ValueError(f"{n} bytes do not fit BINARY({width})")
                    data += b"\x00" * (width - n)
                return data, pos + n
        else:  # IndexedRow STRING / BYTES are variable-length: see _var_reader
            raise AssertionError  # pragma: no cover
    elif c == T_DECIMAL:
        scale, limit = t.scale, 10 ** t.precision

        def make(u):
            if not -limit < u < limit:
                raise ValueError(f"unscaled decimal {u} has more than {t.precision} digits")
            return make_decimal(u, scale)
        if t.compact:
            def r(buf, pos, end):
                u, pos = int64(buf, pos, end)
                return make(u), pos
        else:  # compacted only; IndexedRow keeps these as variable-length fields
            def r(buf, pos, end):
                n, pos = length_at(buf, pos, end)
                if n > _MAX_DECIMAL_BYTES:
                    raise ValueError(f"decimal of {n} bytes, at most {_MAX_DECIMAL_BYTES}")
                return make(int.from_bytes(buf[pos:pos + n], "big", signed=True)), pos + n
    elif c in (T_TIMESTAMP, T_TIMESTAMP_LTZ):
        prec = t.precision

        def r(buf, pos, end):
            millis, pos = int64(buf, pos, end)
            nanos = 0
            if not t.compact:
                nanos, pos = int32(buf, pos, end)
                if not 0 <= nanos < 1000000:
                    raise ValueError(f"nanosecond of millisecond {nanos} is outside 0..999999")
            return timestamp_value(millis, nanos, prec), pos
    else:  # pragma: no cover
        raise ValueError(f"no flat reader for {t.dtype}")
    return r


def _var_reader(t: TypeInfo):
    """fn(buf, pos, n) -> storage value of an IndexedRow variable-length flat field."""
    c = t.code
    if c == T_STRING:
        return lambda buf, pos, n: str(buf[pos:pos + n], "utf-8")
    if c == T_BYTES:
        return lambda buf, pos, n: buf[pos:pos + n]
    if c == T_DECIMAL:
        scale, limit = t.scale, 10 ** t.precision

        def r(buf, pos, n):
            if n > _MAX_DECIMAL_BYTES:
                raise ValueError(f"decimal of {n} bytes, at most {_MAX_DECIMAL_BYTES}")
            u = int.from_bytes(buf[pos:pos + n], "big", signed=True)
            if not -limit < u < limit:
                raise ValueError(f"unscaled decimal {u} has more than {t.precision} digits")
            return make_decimal(u, scale)
        return r
    raise AssertionError(f"no variable-length reader for {t.dtype}")  # pragma: no cover


class _SourcePlan:
    """How to read rows written under one schema into the latest schema's columns."""

    __slots__ = ("fields", "missing", "nbytes", "header")

    def __init__(self, conv: RowsToArrow, source: SchemaInfo) -> None:
        mapping = column_mapping(conv.schema, source)
        fmt = conv.kv_format
        self.fields = []
        nvar = 0
        for k, col in enumerate(source.columns):
            t = type_info(col.type)
            nested = col.type.is_nested
            fixed = t.fixed if fmt == INDEXED else not nested
            if fmt == INDEXED and not t.fixed:
                nvar += 1
            if nested:
                reader = nested_converter(col.type, fmt)
            elif fmt == INDEXED and not t.fixed:
                reader = _var_reader(t)
            else:
                reader = _flat_reader(t, fmt, t.precision)
            self.fields.append((mapping[k], fixed, t.size, reader, col.name))
        present = set(j for j in mapping if j >= 0)
        self.missing = [j for j in range(len(conv.schema.columns)) if j not in present]
        self.nbytes = (len(source.columns) + 7) >> 3
        self.header = self.nbytes + 4 * nvar if fmt == INDEXED else self.nbytes


class RowArrowBuilder:
    """Rows added one at a time (decoded at once, the bytes are not kept); ``finish()`` returns
    them as a RecordBatch of the latest schema and starts over."""

    def __init__(self, conv: RowsToArrow) -> None:
        self._conv = conv
        self._ncols = len(conv.schema.columns)
        self._cols: list[list] = [[] for _ in range(self._ncols)]
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add_value(self, buf, start: int = 0, end: int | None = None) -> None:
        """A stored value ``buf[start:end]``: int16 LE schema id, then the row."""
        data = as_bytes(buf)
        end = len(data) if end is None else end
        if not 0 <= start <= end <= len(data):
            raise ValueError(f"span {start}..{end} is outside the {len(data)}-byte buffer")
        if end - start < 2:
            raise ValueError(f"row {self._n}: a value of {end - start} bytes has no schema id")
        self._add(data, start + 2, end, _i16.unpack_from(data, start)[0])

    def add_row(self, buf, start: int = 0, end: int | None = None, schema_id: int = -1) -> None:
        """A bare row ``buf[start:end]`` written under ``schema_id`` (-1: the latest schema)."""
        data = as_bytes(buf)
        end = len(data) if end is None else end
        if not 0 <= start <= end <= len(data):
            raise ValueError(f"span {start}..{end} is outside the {len(data)}-byte buffer")
        self._add(data, start, end, schema_id)

    def _add(self, buf: bytes, pos: int, end: int, schema_id: int) -> None:
        conv = self._conv
        plan = conv._plan(schema_id)
        cols = self._cols
        fmt = conv.kv_format
        index = self._n
        name = "?"
        try:
            if pos + plan.header > end:
                raise ValueError(f"{end - pos} bytes, the header needs {plan.header}")
            nulls = buf[pos:pos + plan.nbytes]
            vslot = pos + plan.nbytes
            p = pos + plan.header
            # ``name`` is read by the except clause below: the field a failure is reported against
            for k, (target, fixed, _size, reader, name) in enumerate(plan.fields):  # noqa: B007
                if nulls[k >> 3] & (1 << (k & 7)):
                    v = None
                elif fmt == COMPACTED:
                    if fixed:
                        v, p = reader(buf, p, end)
                    else:
                        n, q = _get_varint32(buf, p)
                        if n < 0 or q + n > end:
                            raise ValueError(f"length {n} at byte {p} runs past the row's end")
                        v = reader(buf, q, n)
                        p = q + n
                elif fixed:
                    v, p = reader(buf, p, end)
                else:
                    n = _i32.unpack_from(buf, vslot)[0]
                    vslot += 4
                    if n < 0 or p + n > end:
                        raise ValueError(f"length {n} at byte {p} runs past the row's end")
                    v = reader(buf, p, n)
                    p += n
                if target >= 0:
                    if v is None and not conv._nullable[target]:
                        raise ValueError("NULL in a NOT NULL column")
                    cols[target].append(v)
            if p > end:
                raise ValueError(f"fields run {p - end} bytes past the row's end")
            for j in plan.missing:
                if not conv._nullable[j]:
                    name = conv.schema.columns[j].name
                    raise ValueError(f"schema {schema_id} has no value for this NOT NULL column")
                cols[j].append(None)
        except _DECODE_ERRORS as e:
            for col in cols:
                del col[index:]
            raise row_error(fmt, conv.table_name, index, name, e) from None
        self._n += 1

    def finish(self) -> pa.RecordBatch:
        conv = self._conv
        arrays = []
        for j, col in enumerate(self._cols):
            try:
                arrays.append(pa.array(col, type=conv._arrow_types[j]))
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
                raise ValueError(f"column '{conv.schema.columns[j].name}': cannot build the Arrow "
                                 f"column: {e}") from None
        self._cols = [[] for _ in range(self._ncols)]
        self._n = 0
        return pa.RecordBatch.from_arrays(arrays, schema=conv.arrow_schema)


_PyBuilder = RowArrowBuilder  # the pure builder, whatever ``pick`` binds the public name to


class RowsToArrow:
    """Decoder of a table's stored rows into RecordBatches of its latest schema (see module doc).

    ``schemas`` maps schema ids to the table's schemas (older ones included); ``schema`` is the
    latest, under ``schema_id`` (default: the highest id of ``schemas``, else 1)."""

    def __init__(self, schema: SchemaInfo, kv_format: str = "COMPACTED",
                 schemas: Mapping[int, SchemaInfo] | None = None, table_name: str = "",
                 schema_id: int | None = None) -> None:
        fmt = (kv_format or COMPACTED).upper()
        if fmt not in (COMPACTED, INDEXED):
            raise ValueError(f"unknown kv format {kv_format!r}: COMPACTED or INDEXED")
        self.schema = schema
        self.kv_format = fmt
        self.table_name = table_name
        self.schemas: dict[int, SchemaInfo] = dict(schemas or {})
        if schema_id is None:
            schema_id = max((k for k, s in self.schemas.items() if s == schema), default=None)
            if schema_id is None:
                schema_id = max(self.schemas, default=0) + 1 if self.schemas else 1
        self.schema_id = schema_id
        self.schemas[schema_id] = schema
        self.arrow_schema = schema.to_arrow()
        self._arrow_types = [f.type for f in self.arrow_schema]
        self._nullable = [c.type.nullable for c in schema.columns]
        self._plans: dict[int, _SourcePlan] = {}

    def _plan(self, schema_id: int) -> _SourcePlan:
        if schema_id < 0:
            schema_id = self.schema_id
        plan = self._plans.get(schema_id)
        if plan is None:
            source = self.schemas.get(schema_id)
            if source is None:
                raise unknown_schema(schema_id, self.schema_id)
            plan = self._plans[schema_id] = _SourcePlan(self, source)
        return plan

    def add_schema(self, schema_id: int, schema: SchemaInfo) -> None:
        """Makes rows written under ``schema_id`` (an older schema of the table) readable."""
        self.schemas[schema_id] = schema
        self._plans.pop(schema_id, None)

    def builder(self) -> RowArrowBuilder:
        return _PyBuilder(self)

    def values(self, buf, starts, ends) -> pa.RecordBatch:
        """Stored values at ``buf[starts[i]:ends[i]]``."""
        b = _PyBuilder(self)
        data = as_bytes(buf)
        if len(starts) != len(ends):
            raise ValueError(f"{len(starts)} starts but {len(ends)} ends")
        for s, e in zip(starts, ends, strict=True):
            b.add_value(data, int(s), int(e))
        return b.finish()

    def rows(self, buf, starts, ends, schema_id: int = -1) -> pa.RecordBatch:
        """Bare rows at ``buf[starts[i]:ends[i]]``, all written under ``schema_id`` (-1: latest)."""
        b = _PyBuilder(self)
        data = as_bytes(buf)
        if len(starts) != len(ends):
            raise ValueError(f"{len(starts)} starts but {len(ends)} ends")
        for s, e in zip(starts, ends, strict=True):
            b.add_row(data, int(s), int(e), schema_id)
        return b.finish()

    def value_list(self, values: Sequence) -> pa.RecordBatch:
        """Stored values given one bytes-like each."""
        b = _PyBuilder(self)
        for v in values:
            b.add_value(v)
        return b.finish()

    def value_batch(self, records) -> pa.RecordBatch:
        """Every row of the value batches in ``records`` (LIMIT_SCAN / SCAN_KV, ``valuebatch``)."""
        starts, ends = value_batch_spans(records)
        return self.values(records, starts, ends)


def value_batch_spans(records) -> tuple[list[int], list[int]]:
    """(starts, ends) of the stored values (schema id + row) in value batches, checked."""
    from ..kv.valuebatch import VALUE_HEADER_SIZE, VALUE_MAGIC

    data = as_bytes(records)
    end = len(data)
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    while pos < end:
        if pos + VALUE_HEADER_SIZE > end:
            raise ValueError(f"value batch at byte {pos}: truncated header")
        length = _i32.unpack_from(data, pos)[0]
        magic = data[pos + 4]
        count = _i32.unpack_from(data, pos + 5)[0]
        if magic != VALUE_MAGIC:
            raise ValueError(f"value batch at byte {pos}: unknown magic {magic}")
        stop = pos + 4 + length
        if length < VALUE_HEADER_SIZE - 4 or stop > end or count < 0:
            raise ValueError(f"value batch at byte {pos}: length {length} / count {count} do not fit "
                             f"the {end - pos} bytes available")
        p = pos + VALUE_HEADER_SIZE
        for i in range(count):
            if p + 6 > stop:
                raise ValueError(f"value batch at byte {pos}: record {i} is truncated")
            n = _i32.unpack_from(data, p)[0]
            if n < 2 or p + 4 + n > stop:
                raise ValueError(f"value batch at byte {pos}: record {i} has bad length {n}")
            starts.append(p + 4)
            ends.append(p + 4 + n)
            p += 4 + n
        if p != stop:
            raise ValueError(f"value batch at byte {pos}: {stop - p} bytes after the last record")
        pos = stop
    return starts, ends


RowsToArrow_py = RowsToArrow
RowArrowBuilder_py = RowArrowBuilder

pick("_rowarrow", globals(), ["RowsToArrow", "RowArrowBuilder"])
