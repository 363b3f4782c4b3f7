/* Fluss's default bucket function (docs/contributing/formats.md §6.3) and the MurmurHash3 pieces it is made of: the one
 * C definition, used by _murmur.pyx and by C callers that hash many keys in a loop (_kvcolumns).
 * The pure definition is codec/murmur.py; tests check this one against it. */
#ifndef FLUSS_FAST_FLUSS_MURMUR_H
#define FLUSS_FAST_FLUSS_MURMUR_H

#include <stdint.h>
#include <string.h>

static inline uint32_t ffm_rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static inline uint32_t ffm_mix_k(uint32_t k) { return ffm_rotl(k * 0xCC9E2D51u, 15) * 0x1B873593u; }
static inline uint32_t ffm_mix_h(uint32_t h, uint32_t k) { return ffm_rotl(h ^ k, 13) * 5u + 0xE6546B64u; }
static inline uint32_t ffm_fmix(uint32_t h)
{
    h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; h ^= h >> 16;
    return h;
}

static inline uint32_t ffm_le32(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
#else
    uint32_t v; memcpy(&v, p, 4); return v;
#endif
}

/* Fluss's MurmurHash3 variant (Flink's): standard body, but each tail byte is mixed as its own
 * sign-extended block */
static inline int32_t ffm_fluss32(const unsigned char *p, Py_ssize_t len, uint32_t seed)
{
    uint32_t h = seed;
    Py_ssize_t i, blocks = len & ~(Py_ssize_t)3;
    for (i = 0; i < blocks; i += 4)
        h = ffm_mix_h(h, ffm_mix_k(ffm_le32(p + i)));
    for (i = blocks; i < len; i++)  /* Java widens each tail byte with its sign */
        h = ffm_mix_h(h, ffm_mix_k((uint32_t)(int32_t)(signed char)p[i]));
    return (int32_t)ffm_fmix(h ^ (uint32_t)len);
}

/* MathUtils.murmurHash(int): a non-negative spread of code (INT32_MIN's absolute value is 0) */
static inline int32_t ffm_int_murmur(uint32_t code)
{
    int32_t k = (int32_t)ffm_fmix(ffm_mix_h(0u, ffm_mix_k(code)) ^ 4u);
    if (k < 0) k = (k == INT32_MIN) ? 0 : -k;
    return k;
}

/* the bucket of an encoded bucket key among n buckets */
static inline int32_t ffm_bucket(const unsigned char *p, Py_ssize_t len, int32_t n)
{
    return ffm_int_murmur((uint32_t)ffm_fluss32(p, len, 42u)) % n;
}

#endif
