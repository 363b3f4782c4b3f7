"""Fluss binary row formats: CompactedRow, IndexedRow, BinaryArray / BinaryMap (docs/contributing/formats.md §3.2, §4, §3.5, §6.2).

Python value model (what decoders return, what encoders accept), the same shapes pyfluss reads back:

=================  ===========================================  =====================================
Fluss type         decode returns                               encode also accepts
=================  ===========================================  =====================================
BOOLEAN            bool                                         numpy.bool_
TINYINT..BIGINT    int                                          objects with ``__index__`` (not bool)
FLOAT / DOUBLE     float                                        int, numpy floats
CHAR / STRING      str
BINARY / BYTES     bytes                                        bytearray, memoryview
DECIMAL(p, s)      decimal.Decimal (exactly s fraction digits)  int; rounded HALF_UP to s digits
DATE               datetime.date
TIME               datetime.time (millisecond resolution)
TIMESTAMP          naive datetime.datetime                      pandas.Timestamp, numpy.datetime64
TIMESTAMP_LTZ      datetime.datetime in UTC                     naive datetimes are taken as UTC
ARRAY<T>           list                                         tuple, other sequences
MAP<K, V>          list of (key, value) tuples                  dict
ROW<...>           dict by field name                           list / tuple by position
=================  ===========================================  =====================================

Encoding mistakes raise ``TypeError`` (wrong kind of value) or ``ValueError`` (out of range, NULL in a
NOT NULL field); the message names the field, the value and the type, callers add the table.
Malformed input to a decoder raises ``ValueError``.

Layout notes that are easy to get wrong, and why the code looks the way it does:

* Nested rows take the enclosing row's format, also when they sit inside arrays or maps, so every
  array/map codec here is parameterised by the format (``"COMPACTED"`` or ``"INDEXED"``).
* BinaryArray always uses 8-byte words for out-of-line data, whatever the enclosing format.
* IndexedRow pads CHAR(n)/BINARY(n) to exactly n bytes and readers strip trailing zero bytes;
  CompactedRow and BinaryArray store them like STRING/BYTES.
* Decimals with precision > 18 are Java ``BigInteger.toByteArray()`` bytes: big-endian, minimal
  two's complement (the only big-endian thing in the row formats).

The code lives in modules of one concern, re-exported here under the names callers use:
``values`` (the value model, shared with appends), ``rowtypes`` (TypeInfo, type codes), ``scalars``,
``varint``, ``binarray`` (arrays, maps, nested values), ``rowbase``, ``compacted`` (CompactedRow and
keys) and ``indexed``. The compiled twin ``_rows`` has the same API; ``X_py`` names keep the pure
versions reachable.
"""
from __future__ import annotations

# Every name the modules define is re-exported (``X as X``), private ones too: the compiled twin
# ``_rows`` and older callers reach the pure helpers through this module. Whole INDEXED log batches
# are indexedlog's, which builds on the modules below (no import cycle).
from .indexedlog import build_indexed_batch, decode_indexed_batch
from .rowtypes import (COMPACTED, INDEXED, T_BOOLEAN as T_BOOLEAN, T_TINYINT as T_TINYINT, T_SMALLINT as T_SMALLINT,
                       T_INT as T_INT, T_BIGINT as T_BIGINT, T_FLOAT as T_FLOAT, T_DOUBLE as T_DOUBLE, T_CHAR as T_CHAR,
                       T_STRING as T_STRING, T_BINARY as T_BINARY, T_BYTES as T_BYTES, T_DECIMAL as T_DECIMAL,
                       T_DATE as T_DATE, T_TIME as T_TIME, T_TIMESTAMP as T_TIMESTAMP,
                       T_TIMESTAMP_LTZ as T_TIMESTAMP_LTZ, T_ARRAY as T_ARRAY, T_MAP as T_MAP, T_ROW as T_ROW,
                       _ROOT_CODES as _ROOT_CODES, _ELEMENT_SIZES as _ELEMENT_SIZES,
                       MAX_COMPACT_PRECISION as MAX_COMPACT_PRECISION,
                       MAX_COMPACT_TIMESTAMP_PRECISION as MAX_COMPACT_TIMESTAMP_PRECISION, TypeInfo as TypeInfo,
                       _per_type as _per_type, type_info as type_info)
from .scalars import (_EPOCH_ORDINAL as _EPOCH_ORDINAL, _EPOCH as _EPOCH, _EPOCH_UTC as _EPOCH_UTC,
                      _MILLIS_PER_DAY as _MILLIS_PER_DAY, _Decimal as _Decimal, _FLOAT_NAN as _FLOAT_NAN,
                      _DOUBLE_NAN as _DOUBLE_NAN, _pk_b as _pk_b, _pk_h as _pk_h, _pk_i as _pk_i, _pk_q as _pk_q,
                      _pk_Q as _pk_Q, _pk_f as _pk_f, _pk_d as _pk_d, _pk_qi as _pk_qi, _range as _range,
                      conv_bool as conv_bool, conv_int as conv_int, conv_float as conv_float, pack_f32 as pack_f32,
                      pack_f64 as pack_f64, conv_str as conv_str, conv_bytes as conv_bytes,
                      bigint_bytes as bigint_bytes, conv_decimal as conv_decimal, conv_date as conv_date,
                      conv_time as conv_time, _millis_nanos as _millis_nanos, conv_timestamp as conv_timestamp,
                      conv_timestamp_ltz as conv_timestamp_ltz, as_sequence as as_sequence, map_items as map_items,
                      row_values as row_values, make_decimal as make_decimal, make_date as make_date,
                      make_time as make_time, make_timestamp as make_timestamp,
                      make_timestamp_ltz as make_timestamp_ltz, _strip_zeros as _strip_zeros,
                      _FIXED_WRITE as _FIXED_WRITE, _FIXED_READ as _FIXED_READ)
from .varint import (_U32 as _U32, _U64 as _U64, _put_varint as _put_varint, encode_varint, _get_varint as _get_varint,
                     _get_varint32 as _get_varint32, _get_varint64 as _get_varint64, _get_length as _get_length,
                     decode_varint, _get_varint32_at as _get_varint32_at, _get_varint64_at as _get_varint64_at)
from .binarray import (_nested_encoder as _nested_encoder, _nested_decoder as _nested_decoder, _pad8 as _pad8,
                       _out_of_line as _out_of_line, _array_writer as _array_writer, encode_array, encode_map,
                       _array_reader as _array_reader, _span as _span, _overrun as _overrun, decode_array, decode_map)
from .rowbase import (_field_label as _field_label, _with_field as _with_field, _null_error as _null_error,
                      _arity_error as _arity_error, _infos as _infos, _as_bytes as _as_bytes,
                      _DECODE_ERRORS as _DECODE_ERRORS, _encode_records as _encode_records, _RowCodec as _RowCodec,
                      _RowEncoder as _RowEncoder)
from .compacted import (_compacted_writer as _compacted_writer, _compacted_reader as _compacted_reader,
                        CompactedRowEncoder, CompactedRowDecoder, CompactedKeyEncoder, encode_key,
                        CompactedRowEncoder_py as CompactedRowEncoder_py,
                        CompactedRowDecoder_py as CompactedRowDecoder_py,
                        CompactedKeyEncoder_py as CompactedKeyEncoder_py)
from .indexed import (_indexed_fixed_writer as _indexed_fixed_writer, _indexed_var_writer as _indexed_var_writer,
                      _indexed_fixed_reader as _indexed_fixed_reader, _indexed_var_reader as _indexed_var_reader,
                      IndexedRowEncoder, IndexedRowDecoder, IndexedRowEncoder_py as IndexedRowEncoder_py,
                      IndexedRowDecoder_py as IndexedRowDecoder_py)

__all__ = [
    "COMPACTED", "INDEXED",
    "CompactedRowEncoder", "CompactedRowDecoder", "IndexedRowEncoder", "IndexedRowDecoder",
    "CompactedKeyEncoder", "encode_key",
    "encode_array", "decode_array", "encode_map", "decode_map",
    "encode_varint", "decode_varint", "build_indexed_batch", "decode_indexed_batch",
]
