# RowsToArrow, the converter's API, and _Plan, its reading of one schema's rows: included by
# _rowarrow.pyx between the column writers they use and the RowArrowBuilder they feed.

cdef class _Plan:
    """How to read rows of one (possibly older) schema into the latest schema's columns."""
    cdef Field* fields
    cdef int nfields
    cdef int nbytes
    cdef int header
    cdef int* missing
    cdef int nmissing
    cdef list readers   # nested converters per field, None for flat fields
    cdef list names
    cdef int schema_id

    def __dealloc__(self):
        free(self.fields)
        free(self.missing)


cdef class RowsToArrow:
    """Decoder of a table's stored rows into RecordBatches of its latest schema."""
    cdef readonly object schema
    cdef readonly str kv_format
    cdef readonly str table_name
    cdef readonly dict schemas
    cdef readonly int schema_id
    cdef readonly object arrow_schema
    cdef list _arrow_types
    cdef dict _plans
    cdef bint _indexed
    cdef int ncols
    cdef int* _outs
    cdef int* _widths
    cdef bint* _nullable
    cdef double* _var_hint  # O_VAR columns: data bytes per row of the last batch, -1 before one
    cdef bint _has_nested   # a nested column: rows need Python, the GIL is kept
    cdef list _names

    def __cinit__(self):
        self._outs = NULL
        self._widths = NULL
        self._nullable = NULL
        self._var_hint = NULL

    def __init__(self, schema, kv_format="COMPACTED", schemas=None, table_name="", schema_id=None):
        fmt = (kv_format or "COMPACTED").upper()
        if fmt not in ("COMPACTED", "INDEXED"):
            raise ValueError(f"unknown kv format {kv_format!r}: COMPACTED or INDEXED")
        self.schema = schema
        self.kv_format = fmt
        self._indexed = fmt == "INDEXED"
        self.table_name = table_name
        self.schemas = dict(schemas or {})
        if schema_id is None:
            schema_id = max((k for k, s in self.schemas.items() if s == schema), default=None)
            if schema_id is None:
                schema_id = max(self.schemas, default=0) + 1 if self.schemas else 1
        self.schema_id = schema_id
        self.schemas[schema_id] = schema
        self.arrow_schema = schema.to_arrow()
        self._arrow_types = [f.type for f in self.arrow_schema]
        self._plans = {}
        cols = schema.columns
        self.ncols = len(cols)
        self._names = [c.name for c in cols]
        self._outs = <int*>calloc(max(self.ncols, 1), sizeof(int))
        self._widths = <int*>calloc(max(self.ncols, 1), sizeof(int))
        self._nullable = <bint*>calloc(max(self.ncols, 1), sizeof(bint))
        self._var_hint = <double*>calloc(max(self.ncols, 1), sizeof(double))
        if self._outs == NULL or self._widths == NULL or self._nullable == NULL or self._var_hint == NULL:
            raise MemoryError()
        for j, c in enumerate(cols):
            self._var_hint[j] = -1
            t = _type_info(c.type)
            self._nullable[j] = c.type.nullable
            code = t.code
            if code == C_BOOLEAN:
                self._outs[j], self._widths[j] = O_BOOL, 1
            elif code in (C_CHAR, C_STRING, C_BYTES):
                self._outs[j], self._widths[j] = O_VAR, 0
            elif code == C_BINARY:
                self._outs[j], self._widths[j] = O_FSB, t.length
            elif code == C_DECIMAL:
                self._outs[j], self._widths[j] = O_DEC, 16
            elif code in (C_ARRAY, C_MAP, C_ROW):
                self._outs[j], self._widths[j] = O_NESTED, 0
                self._has_nested = True
            else:
                self._outs[j] = O_FIXED
                if code == C_TINYINT:
                    self._widths[j] = 1
                elif code == C_SMALLINT:
                    self._widths[j] = 2
                elif code in (C_INT, C_DATE, C_FLOAT):
                    self._widths[j] = 4
                elif code == C_TIME:
                    self._widths[j] = 4 if t.precision <= 3 else 8
                else:
                    self._widths[j] = 8

    def __dealloc__(self):
        free(self._outs)
        free(self._widths)
        free(self._nullable)
        free(self._var_hint)

    cdef _Plan _plan(self, int schema_id):
        if schema_id < 0:
            schema_id = self.schema_id
        plan = self._plans.get(schema_id)
        if plan is not None:
            return <_Plan>plan
        source = self.schemas.get(schema_id)
        if source is None:
            from fluss_fast.codec.rows.rowarrow import unknown_schema
            raise unknown_schema(schema_id, self.schema_id)
        p = self._make_plan(source, schema_id)
        self._plans[schema_id] = p
        return p

    cdef _Plan _make_plan(self, source, int schema_id):
        from fluss_fast.codec.rows.rowarrow import column_mapping, nested_converter
        mapping = column_mapping(self.schema, source)
        cdef _Plan p = _Plan()
        cdef int k, nvar = 0, j
        cdef Field* f
        scols = source.columns
        p.schema_id = schema_id
        p.nfields = len(scols)
        p.fields = <Field*>calloc(max(p.nfields, 1), sizeof(Field))
        if p.fields == NULL:
            raise MemoryError()
        p.readers = []
        p.names = []
        for k, c in enumerate(scols):
            t = _type_info(c.type)
            f = &p.fields[k]
            f.code = t.code
            f.target = mapping[k]
            f.length = t.length
            f.precision = t.precision
            f.scale = t.scale
            f.compact = t.compact
            f.fixed = t.fixed
            f.size = t.size
            if self._indexed and not t.fixed:
                nvar += 1
            p.readers.append(nested_converter(c.type, self.kv_format)
                             if t.code in (C_ARRAY, C_MAP, C_ROW) else None)
            p.names.append(c.name)
        present = set(j for j in mapping if j >= 0)
        missing = [j for j in range(self.ncols) if j not in present]
        p.nmissing = len(missing)
        p.missing = <int*>calloc(max(p.nmissing, 1), sizeof(int))
        if p.missing == NULL:
            raise MemoryError()
        for k, j in enumerate(missing):
            p.missing[k] = j
        p.nbytes = (p.nfields + 7) >> 3
        p.header = p.nbytes + 4 * nvar if self._indexed else p.nbytes
        return p

    def add_schema(self, int schema_id, schema):
        """Makes rows written under ``schema_id`` (an older schema of the table) readable."""
        self.schemas[schema_id] = schema
        self._plans.pop(schema_id, None)

    def builder(self):
        return RowArrowBuilder(self)

    def values(self, buf, starts, ends):
        """Stored values (int16 LE schema id + row) at ``buf[starts[i]:ends[i]]``."""
        return self._spans(buf, starts, ends, True, -1)

    def rows(self, buf, starts, ends, int schema_id=-1):
        """Bare rows at ``buf[starts[i]:ends[i]]``, all written under ``schema_id`` (-1: latest)."""
        return self._spans(buf, starts, ends, False, schema_id)

    cdef object _spans(self, buf, starts, ends, bint values, int schema_id):
        cdef RowArrowBuilder b = RowArrowBuilder(self)
        cdef Py_buffer view
        cdef const int64_t[::1] s = _as_i64(starts)
        cdef const int64_t[::1] e = _as_i64(ends)
        cdef Py_ssize_t i, n = s.shape[0], total = 0
        cdef bint release
        if e.shape[0] != n:
            raise ValueError(f"{n} starts but {e.shape[0]} ends")
        PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
        try:
            b._reserve(n)
            release = n >= NOGIL_MIN_ROWS and not self._has_nested
            if release:
                for i in range(n):
                    if e[i] > s[i]:
                        total += e[i] - s[i]
                b._reserve_var(n, total)
            if release:
                with nogil:
                    _add_spans(b, <const uint8_t*>view.buf, view.len, s, e, values, schema_id)
            else:
                _add_spans(b, <const uint8_t*>view.buf, view.len, s, e, values, schema_id)
        finally:
            PyBuffer_Release(&view)
        return b._finish(False)

    def value_list(self, values):
        """Stored values given one bytes-like each."""
        cdef RowArrowBuilder b = RowArrowBuilder(self)
        cdef Py_ssize_t n = len(values), i = 0, total = 0
        cdef const uint8_t** ptrs = NULL
        cdef Py_ssize_t* lens = NULL
        cdef tuple vals
        b._reserve(n)
        if n < NOGIL_MIN_ROWS or self._has_nested:
            for v in values:
                b.add_value(v)
            return b._finish(False)
        # the tuple keeps every value alive (and the list's order fixed) while the GIL is released;
        # bytes are immutable, so their pointers stay valid. Other bytes-likes go one at a time
        # through add_value with the GIL held (their buffers need a Py_buffer each).
        vals = tuple(values)
        n = len(vals)
        ptrs = <const uint8_t**>malloc(max(n, 1) * sizeof(uint8_t*))
        lens = <Py_ssize_t*>malloc(max(n, 1) * sizeof(Py_ssize_t))
        try:
            if ptrs == NULL or lens == NULL:
                raise MemoryError()
            for i in range(n):
                v = vals[i]
                if PyBytes_CheckExact(v):
                    ptrs[i] = <const uint8_t*>PyBytes_AS_STRING(v)
                    lens[i] = PyBytes_GET_SIZE(v)
                    total += lens[i]
                else:
                    ptrs[i] = NULL
            b._reserve(n)
            b._reserve_var(n, total)
            i = 0
            while i < n:
                with nogil:
                    while i < n and ptrs[i] != NULL:
                        b._add_span(ptrs[i], lens[i], 0, lens[i], True, -1)
                        i += 1
                if i < n:
                    b.add_value(vals[i])
                    i += 1
        finally:
            free(ptrs)
            free(lens)
        return b._finish(False)

    def value_batch(self, records):
        """Every row of the value batches in ``records`` (LIMIT_SCAN / SCAN_KV answers)."""
        cdef RowArrowBuilder b = RowArrowBuilder(self)
        cdef Py_buffer view
        cdef const uint8_t* d
        cdef Py_ssize_t end, pos = 0, p, stop
        cdef int32_t length, count, i, n
        cdef bint release
        PyObject_GetBuffer(records, &view, PyBUF_SIMPLE)
        try:
            d = <const uint8_t*>view.buf
            end = view.len
            while pos < end:
                if pos + 9 > end:
                    raise ValueError(f"value batch at byte {pos}: truncated header")
                length = ff_le_get32(d + pos)
                count = ff_le_get32(d + pos + 5)
                if d[pos + 4] != 0:
                    raise ValueError(f"value batch at byte {pos}: unknown magic {d[pos + 4]}")
                stop = pos + 4 + <Py_ssize_t>length
                if length < 5 or stop > end or count < 0:
                    raise ValueError(f"value batch at byte {pos}: length {length} / count {count} do "
                                     f"not fit the {end - pos} bytes available")
                p = pos + 9
                b._reserve(b.n + count)
                release = count >= NOGIL_MIN_ROWS and not self._has_nested
                if release:
                    b._reserve_var(count, stop - p)
                if release:
                    with nogil:
                        p = _add_records(b, d, end, pos, p, stop, count)
                else:
                    p = _add_records(b, d, end, pos, p, stop, count)
                if p != stop:
                    raise ValueError(f"value batch at byte {pos}: {stop - p} bytes after the last record")
                pos = stop
        finally:
            PyBuffer_Release(&view)
        return b._finish(False)


cdef int _add_spans(RowArrowBuilder b, const uint8_t* d, Py_ssize_t size, const int64_t[::1] s,
                    const int64_t[::1] e, bint values, int schema_id) except -1 nogil:
    """RowsToArrow._spans' loop (with or without the GIL)."""
    cdef Py_ssize_t i
    for i in range(s.shape[0]):
        b._add_span(d, size, s[i], e[i], values, schema_id)
    return 0


cdef Py_ssize_t _add_records(RowArrowBuilder b, const uint8_t* d, Py_ssize_t end, Py_ssize_t pos, Py_ssize_t p,
                             Py_ssize_t stop, int32_t count) except -1 nogil:
    """The ``count`` records of the value batch at ``pos`` (its records from ``p`` to ``stop``), with
    or without the GIL; returns where they end."""
    cdef int32_t i, n
    for i in range(count):
        if p + 6 > stop:
            with gil:
                raise ValueError(f"value batch at byte {pos}: record {i} is truncated")
        n = ff_le_get32(d + p)
        if n < 2 or p + 4 + n > stop:
            with gil:
                raise ValueError(f"value batch at byte {pos}: record {i} has bad length {n}")
        b._add_span(d, end, p + 4, p + 4 + n, True, -1)
        p += 4 + n
    return p
