# The decimal column's readers, included by _columns.pyx: a ``decimal.Decimal`` to its unscaled
# int128 at a column's scale, from libmpdec's limbs when the layout is known, else from str().

# CPython's C ``decimal.Decimal`` (libmpdec, 64-bit build): the coefficient is ``len`` little-endian
# limbs of base 10**19, the value (-1)**(flags & 1) * coefficient * 10**exp. Reading it directly
# saves the str() round trip; ``_mpd_layout_ok`` checks the layout against ``as_tuple()`` at import
# and the str() parser stays in use when it does not match (pure-Python decimal, other builds).
cdef struct MpdT:
    uint8_t flags
    Py_ssize_t exp
    Py_ssize_t digits
    Py_ssize_t len
    Py_ssize_t alloc
    uint64_t* data

cdef struct DecObject:
    Py_ssize_t ob_refcnt
    void* ob_type
    Py_ssize_t hash
    MpdT dec

cdef enum:
    MPD_NEG = 1
    MPD_SPECIAL = 14  # inf, nan, snan


cdef uint128 POW10[39]
cdef int _i
POW10[0] = 1
for _i in range(1, 39):
    POW10[_i] = POW10[_i - 1] * 10


cdef int mpd_unscaled(object v, int precision, int scale, int128* out):
    """Exact C ``Decimal`` -> unscaled value at ``scale``, rounded HALF_UP; 0 on success.

    Returns 1 for anything it does not settle alone (specials, more than 38 coefficient digits,
    too many digits for ``precision``), which then goes the slow way.
    """
    cdef MpdT* m = &(<DecObject*><PyObject*>v).dec
    cdef uint128 coef, q, r
    cdef Py_ssize_t k
    if m.flags & MPD_SPECIAL or m.digits > 38 or m.len > 2 or m.len < 1:
        return 1
    coef = m.data[0]
    if m.len == 2:
        coef += <uint128>m.data[1] * <uint128>10000000000000000000ULL
    k = m.exp + scale
    if k >= 0:
        if coef != 0:
            if k > precision or coef >= POW10[precision - k]:
                return 1
            coef *= POW10[k]
    elif k < -38:
        coef = 0  # below 10**38 / 10**39 < 0.5: rounds to zero
    else:
        q = coef // POW10[-k]
        r = coef - q * POW10[-k]
        if r >= POW10[-k] // 2:
            q += 1
        coef = q
        if coef >= POW10[precision]:
            return 1
    out[0] = -<int128>coef if m.flags & MPD_NEG else <int128>coef
    return 0


def _mpd_layout_ok():
    """Whether ``mpd_unscaled`` reads this interpreter's Decimal objects correctly."""
    import decimal
    D = decimal.Decimal
    ctx = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_UP)
    cdef int128 got
    try:
        import _decimal
    except ImportError:
        return False
    if (D is not _decimal.Decimal or object.__basicsize__ != 2 * sizeof(void*)
            or D.__basicsize__ < <Py_ssize_t>sizeof(DecObject) + 8):
        return False
    # small coefficients live in the object, right after the mpd_t: a layout check that
    # dereferences nothing
    d = D("123.45")
    if <char*>(<DecObject*><PyObject*>d).dec.data != <char*><PyObject*>d + sizeof(DecObject):
        return False
    samples = [("0", 38, 0), ("-0.00", 10, 2), ("123.45", 10, 2), ("-123.45", 10, 2),
               ("9999999999999999999", 19, 0), ("10000000000000000000", 20, 0),
               ("-12345678901234567890123456789012345678", 38, 0), ("1.5E-3", 10, 3),
               ("4.2E+5", 10, 0), ("0.125", 5, 2), ("-0.125", 5, 2)]
    try:
        for text, p, sc in samples:
            d = D(text)
            if mpd_unscaled(d, p, sc, &got) != 0:
                return False
            want = int(ctx.quantize(d, D(1).scaleb(-sc)).scaleb(sc, ctx))
            if (<int64_t>(got >> 64), <uint64_t>got) != (want >> 64, want & 0xFFFFFFFFFFFFFFFF):
                return False
        return (mpd_unscaled(D("NaN"), 38, 0, &got) == 1
                and mpd_unscaled(D("1E+40"), 38, 0, &got) == 1)
    except Exception:  # noqa: BLE001 - any surprise means: keep the portable parser
        return False


cdef bint MPD_OK = _mpd_layout_ok()


def _use_mpd_reader(bint on):
    """Turns the direct Decimal reader off (the str() parser then runs) or back on; returns the
    previous state. For tests, which check both against the pure converter."""
    global MPD_OK
    prev = MPD_OK
    MPD_OK = on and _mpd_layout_ok()
    return prev


cdef int parse_decimal(object text, int precision, int scale, int128* out):
    """``str(Decimal)`` -> unscaled value at ``scale``, rounded half away from zero (HALF_UP).

    Returns 0 on success, 1 when the text is not a plain finite number or the value does not fit
    ``precision`` digits (the caller then asks the pure converter, which decides and explains).
    """
    cdef Py_ssize_t n, i = 0, ndig = 0, frac = 0, sig = 0
    cdef const char* p = PyUnicode_AsUTF8AndSize(text, &n)
    cdef bint neg = False, point = False
    cdef int128 acc = 0, limit = 1
    cdef long long exp = 0, k
    cdef int c, esign = 1, round_digit = 0, j
    cdef Py_ssize_t start, keep, pos
    if n == 0:
        return 1
    if p[0] == 45:  # '-'
        neg = True
        i = 1
    start = i
    # digits, at most one '.', then an optional exponent
    while i < n:
        c = p[i]
        if 48 <= c <= 57:
            ndig += 1
            if point:
                frac += 1
        elif c == 46 and not point:
            point = True
        else:
            break
        i += 1
    if ndig == 0:
        return 1
    if i < n:
        if p[i] != 69 and p[i] != 101:  # 'E' / 'e'
            return 1
        i += 1
        if i < n and (p[i] == 43 or p[i] == 45):
            if p[i] == 45:
                esign = -1
            i += 1
        if i == n:
            return 1
        while i < n:
            c = p[i]
            if not (48 <= c <= 57) or exp > 100000:
                return 1
            exp = exp * 10 + (c - 48)
            i += 1
    # value = digits * 10^(esign*exp - frac); we need digits * 10^k at the target scale
    k = esign * exp - frac + scale
    keep = ndig + k if k < 0 else ndig
    if keep < 0:
        # every digit lies below the rounding position (even the first is < 0.5 units of scale)
        out[0] = 0
        return 0
    for j in range(precision):
        limit *= 10
    pos = 0
    i = start
    while i < n and pos < ndig:
        c = p[i]
        i += 1
        if c == 46:
            continue
        if pos < keep:
            if acc != 0 or c != 48:
                sig += 1
                if sig > 38:
                    return 1
            acc = acc * 10 + (c - 48)
        elif pos == keep:
            round_digit = c - 48
        pos += 1
    if k > 0:
        if k > 38:
            if acc != 0:
                return 1
        else:
            for j in range(k):
                if acc >= limit // 10:
                    return 1  # checked before multiplying: 10 * 10**38 would overflow int128
                acc *= 10
    if round_digit >= 5:
        acc += 1
    if acc >= limit:
        return 1
    out[0] = -acc if neg else acc
    return 0
