# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of :mod:`fluss_fast.codec.kv.kvcolumns` (see there for the column specs)."""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE, PyBytes_CheckExact

from fluss_fast.codec.wire.bytebuf cimport WBuf, ff_put_varint, wb_free, wb_init, wb_reserve_nogil

import numpy as np

from fluss_fast.codec.kv.kvcolumns import KeyNullError

cdef extern from "fluss_murmur.h":
    int32_t ffm_bucket(const unsigned char *p, Py_ssize_t n, int32_t nb) nogil

cdef enum:
    K_NULL = 0
    K_BOOL = 1
    K_I8 = 2
    K_I16 = 3
    K_VAR32 = 4
    K_VAR64 = 5
    K_F32 = 6
    K_F64 = 7
    K_BYTES = 8
    K_TS = 9

cdef enum:
    _NULL_KEY = 1
    _NO_MEMORY = 2

cdef struct Col:
    int kind
    const uint8_t *valid
    const uint8_t *a
    const uint8_t *b


cdef inline Py_ssize_t _bound(Col *c, Py_ssize_t r) noexcept nogil:
    """Most bytes field ``r`` of ``c`` can take."""
    cdef const int64_t *off
    if c.kind == K_BYTES:
        off = <const int64_t *>c.a
        return 5 + (off[r + 1] - off[r])
    return 16


cdef inline Py_ssize_t _field(unsigned char *p, Col *c, Py_ssize_t r) noexcept nogil:
    cdef int k = c.kind
    cdef const int64_t *off
    cdef Py_ssize_t s, e
    cdef float f
    cdef double d
    cdef Py_ssize_t w
    if k == K_BOOL:
        p[0] = 1 if c.a[r] else 0
        return 1
    if k == K_I8:
        p[0] = <unsigned char>(<const int8_t *>c.a)[r]
        return 1
    if k == K_I16:
        memcpy(p, c.a + 2 * r, 2)
        return 2
    if k == K_VAR32:
        return ff_put_varint(p, <uint32_t>(<const int32_t *>c.a)[r])
    if k == K_VAR64:
        return ff_put_varint(p, <uint64_t>(<const int64_t *>c.a)[r])
    if k == K_F32:
        f = (<const float *>c.a)[r]
        if f != f:
            p[0] = 0; p[1] = 0; p[2] = 0xC0; p[3] = 0x7F
        else:
            memcpy(p, &f, 4)
        return 4
    if k == K_F64:
        d = (<const double *>c.a)[r]
        if d != d:
            p[0] = 0; p[1] = 0; p[2] = 0; p[3] = 0; p[4] = 0; p[5] = 0; p[6] = 0xF8; p[7] = 0x7F
        else:
            memcpy(p, &d, 8)
        return 8
    if k == K_BYTES:
        off = <const int64_t *>c.a
        s = off[r]
        e = off[r + 1]
        w = ff_put_varint(p, <uint64_t>(e - s))
        memcpy(p + w, c.b + s, e - s)
        return w + (e - s)
    # K_TS
    w = ff_put_varint(p, <uint64_t>(<const int64_t *>c.a)[r])
    return w + ff_put_varint(p + w, <uint32_t>(<const int32_t *>c.b)[r])


cdef inline bint _null(Col *c, Py_ssize_t r) noexcept nogil:
    return c.kind == K_NULL or (c.valid != NULL and not c.valid[r])


cdef int _put_key(WBuf *buf, Col *cols, int *idx, Py_ssize_t n, Py_ssize_t r, int *null_col) noexcept nogil:
    """Row r's key over the columns idx[0..n) into buf, replacing what it held. 0, or
    _NULL_KEY with the column in ``null_col``, or _NO_MEMORY."""
    cdef Py_ssize_t i, bound = 0
    for i in range(n):
        if _null(&cols[idx[i]], r):
            null_col[0] = idx[i]
            return _NULL_KEY
        bound += _bound(&cols[idx[i]], r)
    buf.n = 0
    if wb_reserve_nogil(buf, bound):
        return _NO_MEMORY
    for i in range(n):
        buf.n += _field(buf.p + buf.n, &cols[idx[i]], r)
    return 0


cdef const uint8_t *_ptr(object arr, list keep) except? NULL:
    if arr is None:
        return NULL
    a = np.ascontiguousarray(arr)
    keep.append(a)
    cdef const uint8_t[::1] view = a.reshape(-1).view(np.uint8)
    if view.shape[0] == 0:
        return <const uint8_t *>""
    return &view[0]


def encode_kv_columns(specs, key_cols, bucket_cols, value_cols, Py_ssize_t nrows, int num_buckets,
                      keys=None, buckets=None):
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    cdef bint given = keys is not None or buckets is not None
    cdef list given_keys = None
    if given:  # the caller's keys and buckets (a data-lake table's): checked before anything runs
        if keys is None or buckets is None:
            raise ValueError("keys and buckets are given together")
        if len(keys) != nrows or len(buckets) != nrows:
            raise ValueError(f"{len(keys)} keys and {len(buckets)} buckets for {nrows} rows")
        for b in buckets:
            if not 0 <= b < num_buckets:
                raise ValueError(f"bucket {b} is not in 0 .. {num_buckets - 1}")
        given_keys = [k if PyBytes_CheckExact(k) else bytes(k) for k in keys]
    cdef const unsigned char **gk = NULL
    cdef Py_ssize_t *gkl = NULL
    cdef const unsigned char *kp
    cdef Py_ssize_t kn
    cdef Py_ssize_t ncols = len(specs)
    cdef list keep = []
    cdef Col *cols = <Col *>malloc(sizeof(Col) * (ncols if ncols else 1))
    cdef int *kc = NULL
    cdef int *bc = NULL
    cdef int *vc = NULL
    cdef Py_ssize_t nk = len(key_cols), nbk = 0 if bucket_cols is None else len(bucket_cols)
    cdef Py_ssize_t nv = -1 if value_cols is None else len(value_cols)
    cdef Py_ssize_t nbits, r, i, klen, bound, start, w, nb
    cdef int32_t bucket
    cdef WBuf out, key, bkey
    cdef int32_t *rec_bucket = NULL
    cdef Py_ssize_t *rec_start = NULL
    cdef unsigned char *row
    cdef int32_t rec_len
    cdef int rc = 0, null_col = 0
    cdef int64_t *bsize = NULL
    cdef int64_t *bcount = NULL
    cdef unsigned char **bptr = NULL
    wb_init(&out)
    wb_init(&key)
    wb_init(&bkey)
    try:
        if cols == NULL:
            raise MemoryError()
        for i, spec in enumerate(specs):
            cols[i].kind = spec[0]
            cols[i].valid = _ptr(spec[1], keep)
            cols[i].a = _ptr(spec[2], keep) if len(spec) > 2 else NULL
            cols[i].b = _ptr(spec[3], keep) if len(spec) > 3 else NULL
        kc = <int *>malloc(sizeof(int) * (nk + 1))
        bc = <int *>malloc(sizeof(int) * (nbk + 1))
        vc = <int *>malloc(sizeof(int) * (nv + 1 if nv > 0 else 1))
        rec_bucket = <int32_t *>malloc(sizeof(int32_t) * (nrows + 1))
        rec_start = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (nrows + 1))
        if kc == NULL or bc == NULL or vc == NULL or rec_bucket == NULL or rec_start == NULL:
            raise MemoryError()
        if given:
            gk = <const unsigned char **>malloc(sizeof(unsigned char *) * (nrows + 1))
            gkl = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (nrows + 1))
            if gk == NULL or gkl == NULL:
                raise MemoryError()
            for r in range(nrows):
                k = given_keys[r]
                gk[r] = <const unsigned char *>PyBytes_AS_STRING(k)
                gkl[r] = PyBytes_GET_SIZE(k)
                rec_bucket[r] = buckets[r]
        for i in range(nk):
            kc[i] = key_cols[i]
        for i in range(nbk):
            bc[i] = bucket_cols[i]
        for i in range(nv if nv > 0 else 0):
            vc[i] = value_cols[i]
        nbits = (nv + 7) >> 3 if nv > 0 else 0
        # the columns are plain buffers from here on: other threads (the sender) run meanwhile
        with nogil:
            for r in range(nrows):
                if given:
                    kp = gk[r]
                    kn = gkl[r]
                    bucket = rec_bucket[r]
                else:
                    # the key, into its scratch buffer
                    rc = _put_key(&key, cols, kc, nk, r, &null_col)
                    if rc:
                        break
                    if nbk:
                        rc = _put_key(&bkey, cols, bc, nbk, r, &null_col)
                        if rc:
                            break
                        bucket = ffm_bucket(bkey.p, bkey.n, num_buckets)
                    else:
                        bucket = ffm_bucket(key.p, key.n, num_buckets)
                    kp = key.p
                    kn = key.n
                # the record: int32 length | varint key length | key | value row
                bound = 4 + 5 + kn + nbits
                for i in range(nv if nv > 0 else 0):
                    bound += _bound(&cols[vc[i]], r)
                if wb_reserve_nogil(&out, bound):
                    rc = _NO_MEMORY
                    break
                start = out.n
                w = start + 4
                w += ff_put_varint(out.p + w, <uint64_t>kn)
                memcpy(out.p + w, kp, kn)
                w += kn
                if nv >= 0:
                    row = out.p + w
                    for i in range(nbits):
                        row[i] = 0
                    w += nbits
                    for i in range(nv):
                        if _null(&cols[vc[i]], r):
                            row[i >> 3] |= <unsigned char>(1 << (i & 7))
                        else:
                            w += _field(out.p + w, &cols[vc[i]], r)
                rec_len = <int32_t>(w - start - 4)
                memcpy(out.p + start, &rec_len, 4)
                out.n = w
                rec_bucket[r] = bucket
                rec_start[r] = start
        if rc == _NULL_KEY:
            raise KeyNullError(null_col, r)
        if rc:
            raise MemoryError()
        rec_start[nrows] = out.n
        # records grouped by bucket, each group in row order
        bsize = <int64_t *>calloc(num_buckets, sizeof(int64_t))
        bcount = <int64_t *>calloc(num_buckets, sizeof(int64_t))
        bptr = <unsigned char **>calloc(num_buckets, sizeof(unsigned char *))
        if bsize == NULL or bcount == NULL or bptr == NULL:
            raise MemoryError()
        for r in range(nrows):
            bsize[rec_bucket[r]] += rec_start[r + 1] - rec_start[r]
            bcount[rec_bucket[r]] += 1
        result = {}
        for nb in range(num_buckets):
            if bcount[nb]:
                data = PyBytes_FromStringAndSize(NULL, bsize[nb])
                bptr[nb] = <unsigned char *>PyBytes_AS_STRING(data)
                result[nb] = (data, bcount[nb])
                bsize[nb] = 0  # from here on: bytes filled
        with nogil:  # the new bytes objects are not visible to anyone yet
            for r in range(nrows):
                nb = rec_bucket[r]
                w = rec_start[r + 1] - rec_start[r]
                memcpy(bptr[nb] + bsize[nb], out.p + rec_start[r], w)
                bsize[nb] += w
        return result
    finally:
        free(gk)
        free(gkl)
        free(bsize)
        free(bcount)
        free(bptr)
        free(cols)
        free(kc)
        free(bc)
        free(vc)
        free(rec_bucket)
        free(rec_start)
        wb_free(&out)
        wb_free(&key)
        wb_free(&bkey)

