# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of :mod:`fluss_fast.client.write.upsertrow`."""
from libc.stdint cimport int32_t, uint32_t
from libc.string cimport memcpy
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF

from fluss_fast.client.write._appendslot cimport HotSlot
from fluss_fast.codec.rows._rowbase cimport _RowEncoder
from fluss_fast.codec.wire.bytebuf cimport WBuf, ff_le_put32, ff_put_varint, wb_free, wb_grow_to, wb_init

cdef extern from "fluss_murmur.h":
    int32_t ffm_bucket(const unsigned char *p, Py_ssize_t n, int32_t nb) nogil

cdef object _KvChunk = None


cdef object _chunk_class():
    # the pure module defines KvChunk and imports this one: look it up once it is complete
    global _KvChunk
    if _KvChunk is None:
        from fluss_fast.client.write.upsertrow import KvChunk
        _KvChunk = KvChunk
    return _KvChunk


cdef bytes _record(const unsigned char *kp, Py_ssize_t kn, const unsigned char *vp, Py_ssize_t vn):
    """``int32 length | varint key length | key | value`` (``vn`` < 0: a delete)."""
    cdef unsigned char kl[5]
    cdef Py_ssize_t w = ff_put_varint(kl, <uint32_t>kn)
    cdef Py_ssize_t body = kn + (vn if vn > 0 else 0)
    cdef bytes record = PyBytes_FromStringAndSize(NULL, 4 + w + body)
    cdef unsigned char *p = <unsigned char *>PyBytes_AS_STRING(record)
    ff_le_put32(p, <int32_t>w + body)
    memcpy(p + 4, kl, w)
    memcpy(p + 4 + w, kp, kn)
    if vn > 0:
        memcpy(p + 4 + w + kn, vp, vn)
    return record


cdef class KvRecordBuilder:
    cdef WBuf _buf
    cdef Py_ssize_t _count

    def __cinit__(self, Py_ssize_t capacity=0):
        wb_init(&self._buf)
        self._count = 0
        # the batch's size up front: growing by copies would move each byte several times
        # (untouched pages of a big block cost no memory until rows reach them)
        if capacity > 0:
            self._reserve(capacity)

    def __dealloc__(self):
        wb_free(&self._buf)

    cdef int _reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t want = self._buf.n + extra
        cdef Py_ssize_t cap
        if want <= self._buf.cap:
            return 0
        # a quarter more, not double: big blocks are mmap'd and grow in place, while spare capacity
        # of the batches waiting for the server would count against the process, not the write budget
        cap = want + (want >> 2)
        if cap < 65536:
            cap = 65536
        if wb_grow_to(&self._buf, cap):
            raise MemoryError()
        return 0

    cdef Py_ssize_t _put(self, const unsigned char *k, Py_ssize_t kn, const unsigned char *v,
                         Py_ssize_t vn) except -1:
        """Frame one record in place; ``vn`` < 0 is a delete. The bytes now held."""
        cdef Py_ssize_t body = kn + (vn if vn > 0 else 0)
        cdef Py_ssize_t w
        cdef unsigned char *p
        self._reserve(9 + body)
        p = self._buf.p + self._buf.n
        w = ff_put_varint(p + 4, <uint32_t>kn)
        ff_le_put32(p, <int32_t>w + body)
        memcpy(p + 4 + w, k, kn)
        if vn > 0:
            memcpy(p + 4 + w + kn, v, vn)
        self._buf.n += 4 + w + body
        self._count += 1
        return self._buf.n

    def append(self, record):
        cdef Py_buffer view
        if PyBytes_CheckExact(record):
            self._reserve(PyBytes_GET_SIZE(record))
            memcpy(self._buf.p + self._buf.n, PyBytes_AS_STRING(record), PyBytes_GET_SIZE(record))
            self._buf.n += PyBytes_GET_SIZE(record)
        else:
            PyObject_GetBuffer(record, &view, PyBUF_SIMPLE)
            try:
                self._reserve(view.len)
                memcpy(self._buf.p + self._buf.n, view.buf, view.len)
                self._buf.n += view.len
            finally:
                PyBuffer_Release(&view)
        self._count += 1
        return self._buf.n

    def put(self, key, value):
        cdef bytes k = key if PyBytes_CheckExact(key) else bytes(key)
        cdef bytes v
        if value is None:
            return self._put(<const unsigned char *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), NULL, -1)
        v = value if PyBytes_CheckExact(value) else bytes(value)
        return self._put(<const unsigned char *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k),
                         <const unsigned char *>PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))

    def __len__(self):
        return self._count

    def build(self):
        data = PyBytes_FromStringAndSize(<char *>self._buf.p, self._buf.n)
        n = self._count
        wb_free(&self._buf)  # builders live for one batch: give the memory back now
        wb_init(&self._buf)
        self._count = 0
        return _chunk_class()(data, n)


cdef class KvSlot(HotSlot):
    """``HotSlot`` for KV batches: its own type so ``UpsertRow`` knows the slot's builder is a
    ``KvRecordBuilder`` it may feed directly."""


cdef class UpsertRow:
    cdef list _names
    cdef list _key_positions
    cdef object _key_encode
    cdef object _row_encode
    cdef _RowEncoder _key_enc  # the compiled encoders, when they are (else None)
    cdef _RowEncoder _row_enc
    cdef int32_t _nb
    cdef dict _slots
    cdef list _found  # bucket -> its compiled slot once seen, so most rows skip the dict
    cdef Py_ssize_t _width
    cdef dict _col_of  # column name -> position
    # A dict row is read in its own order: the key object seen at that place in the previous row
    # and its column. Rows built alike share their key objects, so most keys are matched by
    # identity, without hashing or comparing strings.
    cdef list _seen_keys
    cdef list _seen_cols
    cdef object _writer
    cdef object _ctx
    cdef object _fallback
    cdef object _append
    cdef object _bucketing  # a data-lake table's bucket function, or None (Fluss's, in C)

    def __init__(self, names, key_positions, key_encoder, row_encoder, int num_buckets, dict slots,
                 bucketing=None):
        if num_buckets <= 0:
            raise ValueError(f"num_buckets must be positive, got {num_buckets}")
        self._names = list(names)
        self._key_positions = [int(i) for i in key_positions]
        self._key_encode = key_encoder.encode
        self._row_encode = row_encoder.encode
        self._bucketing = bucketing
        if (bucketing is None and isinstance(key_encoder, _RowEncoder)
                and isinstance(row_encoder, _RowEncoder)):
            self._key_enc = key_encoder
            self._row_enc = row_encoder
        self._nb = num_buckets
        self._slots = slots
        self._found = [None] * num_buckets
        self._width = len(self._names)
        self._col_of = {name: i for i, name in enumerate(self._names)}
        self._seen_keys = [None] * self._width
        self._seen_cols = [0] * self._width

    @property
    def names(self):
        return self._names

    @property
    def key_positions(self):
        return self._key_positions

    @property
    def num_buckets(self):
        return self._nb

    @property
    def slots(self):
        return self._slots

    def bind(self, writer, ctx, fallback, append):
        self._writer = writer
        self._ctx = ctx
        self._fallback = fallback
        self._append = append

    def upsert(self, row):
        """Insert or replace the row with this primary key: ``UpsertWriter.upsert`` (it stands
        in for the writer's method)."""
        if self._writer._closed or self._ctx._closed:
            return self._fallback(row)
        got = self._put(row)
        if got is None:
            return self._fallback(row)
        if type(got) is tuple:
            return self._append((<tuple>got)[0], None, (<tuple>got)[1], self._nb)
        return got

    def put(self, row):
        return self._put(row)

    cdef object _put(self, row):
        cdef list values, kvals
        cdef Py_ssize_t i, nk, pos, j, col
        cdef PyObject *got
        cdef PyObject *k
        cdef PyObject *pv
        cdef object v, key, value
        cdef int32_t bucket
        cdef WBuf kb, vb
        if type(row) is dict:
            if len(<dict>row) != self._width:
                return None
            values = PyList_New(self._width)  # NULL slots: all set below, or freed as they are
            pos = 0
            j = 0
            while PyDict_Next(<dict>row, &pos, &k, &pv):
                if k == <PyObject *>self._seen_keys[j]:
                    col = self._seen_cols[j]
                else:
                    got = PyDict_GetItem(self._col_of, <object>k)
                    if got == NULL:
                        return None  # not a column (the general path words it)
                    col = <object>got
                    self._seen_keys[j] = <object>k
                    self._seen_cols[j] = col
                # distinct keys are distinct columns, and there are as many keys as columns
                Py_INCREF(<object>pv)
                PyList_SET_ITEM(values, col, <object>pv)
                j += 1
        elif type(row) is list or type(row) is tuple:
            if len(row) != self._width:
                return None
            values = list(row)
        else:
            return None
        nk = len(self._key_positions)
        kvals = PyList_New(nk)
        for i in range(nk):
            v = values[<Py_ssize_t>self._key_positions[i]]
            Py_INCREF(v)
            PyList_SET_ITEM(kvals, i, v)
        if self._key_enc is None:  # pure encoders (tests mixing the twins), or a data-lake table's keys
            try:
                key = self._key_encode(kvals)
                value = self._row_encode(values)
                key = bytes(key)
                value = bytes(value)
                bucket = -1 if self._bucketing is None else self._bucketing(key, self._nb)
            except (TypeError, ValueError, OverflowError):
                return None
            return self._place(<const unsigned char *>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key),
                               <const unsigned char *>PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value),
                               bucket)
        # the compiled encoders write into buffers on the stack: no call through Python, no bytes
        # objects unless the record has to travel the general way
        wb_init(&kb)
        wb_init(&vb)
        try:
            try:
                self._key_enc._put(&kb, kvals)
                self._row_enc._put(&vb, values)
            except (TypeError, ValueError, OverflowError):
                return None
            return self._place(kb.p, kb.n, vb.p, vb.n)
        finally:
            wb_free(&kb)
            wb_free(&vb)

    cdef object _place(self, const unsigned char *kp, Py_ssize_t kn, const unsigned char *vp, Py_ssize_t vn,
                       int32_t bucket=-1):
        """The encoded record into its bucket's slot (``bucket`` -1: Fluss's bucket of the key): the
        handle, or (record, bucket)."""
        cdef PyObject *got
        cdef object slot, builder, h
        cdef KvSlot ks
        cdef bytes record
        if bucket < 0:
            bucket = ffm_bucket(kp, kn, self._nb)
        slot = self._found[bucket]
        if slot is None:
            got = PyDict_GetItem(self._slots, (None, bucket))
            if got == NULL:
                return (_record(kp, kn, vp, vn), bucket)
            slot = <object>got
            if type(slot) is KvSlot:
                self._found[bucket] = slot
        if type(slot) is KvSlot:
            ks = <KvSlot>slot
            # Without the slot's lock: from reading the builder to the return no Python code
            # runs, so no other thread can run in between (the GIL), and every step of the
            # accumulator that holds the lock sees the slot before or after this record, never
            # in between: what the lock around ``append`` guarantees, without two calls into it.
            builder = ks.builder
            if builder is None:
                # cooled: the accumulator may also have replaced the slot, look it up again
                self._found[bucket] = None
            elif ks.size < ks.cap and type(builder) is KvRecordBuilder:
                ks.size = (<KvRecordBuilder>builder)._put(kp, kn, vp, vn)
                return ks.handle
        record = _record(kp, kn, vp, vn)
        h = slot.append(record)
        if h is not None:
            return h
        return (record, bucket)
