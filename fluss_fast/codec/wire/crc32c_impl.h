/*
 * CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, for the fluss_fast Cython codecs.
 *
 * Header-only with static state so that every extension that needs a checksum (crc32c, logbatch, ...)
 * can include it without a shared C library; each module calls ff_crc32c_init() once at import.
 *
 * ff_crc32c_update() takes and returns the *standard* value (pre/post inverted), so
 * update(update(0, a), b) == update(0, a || b).
 *
 * On x86-64 with SSE4.2 the crc32 instruction is used on three independent streams at once (the
 * instruction has a 3-cycle latency but 1-cycle throughput), and the three partial results are
 * merged by multiplying with x^(8*len) mod P through precomputed tables. Elsewhere: slicing-by-8.
 */
#ifndef FLUSS_FAST_CRC32C_IMPL_H
#define FLUSS_FAST_CRC32C_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FF_CRC32C_X86_64 1
#include <nmmintrin.h>
#endif

#define FF_CRC32C_POLY 0x82F63B78u
/* Stream lengths for the 3-way hardware loop: long blocks for throughput, short ones so that
 * medium buffers (a few KiB, typical record batches) still get the interleaving. */
#define FF_CRC32C_LONG 8192
#define FF_CRC32C_SHORT 256

static uint32_t ff_crc32c_table[8][256];
static uint32_t ff_crc32c_long_shift[4][256];
static uint32_t ff_crc32c_short_shift[4][256];
static int ff_crc32c_use_hw = 0;
static int ff_crc32c_initialised = 0;

static inline uint64_t ff_crc32c_load_le64(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) | ((uint64_t)p[3] << 24) |
           ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) | ((uint64_t)p[6] << 48) |
           ((uint64_t)p[7] << 56);
#endif
}

/* Product of two polynomials mod P in the reflected bit order used by the CRC register, where
 * bit 31 holds the coefficient of x^0 and bit 0 that of x^31. */
static uint32_t ff_crc32c_mulmod(uint32_t a, uint32_t b)
{
    uint32_t product = 0;
    int i;
    for (i = 0; i < 32; i++) {
        if (a & 0x80000000u)
            product ^= b;
        a <<= 1;
        b = (b & 1u) ? (b >> 1) ^ FF_CRC32C_POLY : (b >> 1);
    }
    return product;
}

/* x^(8n) mod P: feeding n zero bytes to a raw CRC register multiplies it by this. */
static uint32_t ff_crc32c_x8n(size_t n)
{
    uint32_t result = 0x80000000u; /* x^0 */
    uint32_t square = 0x00800000u; /* x^8 */
    while (n) {
        if (n & 1u)
            result = ff_crc32c_mulmod(square, result);
        square = ff_crc32c_mulmod(square, square);
        n >>= 1;
    }
    return result;
}

static void ff_crc32c_build_shift(uint32_t table[4][256], size_t n)
{
    uint32_t op = ff_crc32c_x8n(n);
    int k;
    uint32_t b;
    for (k = 0; k < 4; k++)
        for (b = 0; b < 256; b++)
            table[k][b] = ff_crc32c_mulmod(op, b << (8 * k));
}

/* Advances a raw register over n zero bytes (n fixed by the table); linear, so byte-wise tables. */
static inline uint32_t ff_crc32c_shift(const uint32_t table[4][256], uint32_t crc)
{
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
           table[3][crc >> 24];
}

static uint32_t ff_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7u)) {
        crc = ff_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w = ff_crc32c_load_le64(p) ^ crc;
        crc = ff_crc32c_table[7][w & 0xff] ^ ff_crc32c_table[6][(w >> 8) & 0xff] ^
              ff_crc32c_table[5][(w >> 16) & 0xff] ^ ff_crc32c_table[4][(w >> 24) & 0xff] ^
              ff_crc32c_table[3][(w >> 32) & 0xff] ^ ff_crc32c_table[2][(w >> 40) & 0xff] ^
              ff_crc32c_table[1][(w >> 48) & 0xff] ^ ff_crc32c_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = ff_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#ifdef FF_CRC32C_X86_64
__attribute__((target("sse4.2"))) static uint32_t
ff_crc32c_hw_blocks(uint64_t c0, const unsigned char **pp, size_t *np, size_t block,
                    const uint32_t shift[4][256])
{
    const unsigned char *p = *pp;
    size_t n = *np;
    while (n >= 3 * block) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + block;
        do {
            c0 = _mm_crc32_u64(c0, ff_crc32c_load_le64(p));
            c1 = _mm_crc32_u64(c1, ff_crc32c_load_le64(p + block));
            c2 = _mm_crc32_u64(c2, ff_crc32c_load_le64(p + 2 * block));
            p += 8;
        } while (p < end);
        /* crc(s, A|B|C) = shift(shift(crc(s,A), |B|) ^ crc(0,B), |C|) ^ crc(0,C) */
        c0 = ff_crc32c_shift(shift, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = ff_crc32c_shift(shift, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * block;
        n -= 3 * block;
    }
    *pp = p;
    *np = n;
    return (uint32_t)c0;
}

__attribute__((target("sse4.2"))) static uint32_t ff_crc32c_hw(uint32_t crc, const unsigned char *p,
                                                               size_t n)
{
    uint64_t c = crc;
    while (n && ((uintptr_t)p & 7u)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    c = ff_crc32c_hw_blocks(c, &p, &n, FF_CRC32C_LONG, ff_crc32c_long_shift);
    c = ff_crc32c_hw_blocks(c, &p, &n, FF_CRC32C_SHORT, ff_crc32c_short_shift);
    while (n >= 8) {
        c = _mm_crc32_u64(c, ff_crc32c_load_le64(p));
        p += 8;
        n -= 8;
    }
    while (n--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return (uint32_t)c;
}
#endif

static void ff_crc32c_init(void)
{
    uint32_t i, c;
    int k, bit;
    if (ff_crc32c_initialised)
        return;
    for (i = 0; i < 256; i++) {
        c = i;
        for (bit = 0; bit < 8; bit++)
            c = (c & 1u) ? (c >> 1) ^ FF_CRC32C_POLY : (c >> 1);
        ff_crc32c_table[0][i] = c;
    }
    for (k = 1; k < 8; k++)
        for (i = 0; i < 256; i++) {
            c = ff_crc32c_table[k - 1][i];
            ff_crc32c_table[k][i] = (c >> 8) ^ ff_crc32c_table[0][c & 0xff];
        }
    ff_crc32c_build_shift(ff_crc32c_long_shift, FF_CRC32C_LONG);
    ff_crc32c_build_shift(ff_crc32c_short_shift, FF_CRC32C_SHORT);
#ifdef FF_CRC32C_X86_64
    __builtin_cpu_init();
    ff_crc32c_use_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
    ff_crc32c_initialised = 1;
}

static inline int ff_crc32c_hw_enabled(void) { return ff_crc32c_use_hw; }

static inline uint32_t ff_crc32c_update(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    crc = ~crc;
#ifdef FF_CRC32C_X86_64
    if (ff_crc32c_use_hw)
        return ~ff_crc32c_hw(crc, p, n);
#endif
    return ~ff_crc32c_sw(crc, p, n);
}

/* The table path regardless of the CPU, so tests can check it on machines with SSE4.2. */
static inline uint32_t ff_crc32c_update_sw(uint32_t crc, const void *data, size_t n)
{
    return ~ff_crc32c_sw(~crc, (const unsigned char *)data, n);
}

#endif /* FLUSS_FAST_CRC32C_IMPL_H */
