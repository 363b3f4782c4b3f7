"""Fluss binary row formats: CompactedRow, IndexedRow, BinaryArray / BinaryMap (docs/contributing/formats.md §3.2, §4,
§3.5, §6.2).

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

Modules, one concern each (import from them directly; this package re-exports nothing):
``values`` (the value model, shared with appends), ``rowtypes`` (TypeInfo, type codes), ``scalars``,
``binarray`` (arrays, maps, nested values), ``rowbase``, ``compacted`` (CompactedRow and keys),
``indexed``; ``columns`` (Python rows to Arrow) and ``rowarrow`` (binary rows to Arrow). ``X_py``
names keep the pure versions reachable where a compiled twin replaced them.
"""
