/* Little-endian loads and stores for the Cython codecs: every fixed-width integer in Fluss's own
 * structures is little-endian (docs/contributing/formats.md §0). memcpy keeps unaligned access defined; the swaps compile
 * away on little-endian hosts. */
#ifndef FLUSS_FAST_LE_BYTES_H
#define FLUSS_FAST_LE_BYTES_H
#include <stdint.h>
#include <string.h>
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define FF_LE_BSWAP16(x) __builtin_bswap16(x)
#define FF_LE_BSWAP32(x) __builtin_bswap32(x)
#define FF_LE_BSWAP64(x) __builtin_bswap64(x)
#else
#define FF_LE_BSWAP16(x) (x)
#define FF_LE_BSWAP32(x) (x)
#define FF_LE_BSWAP64(x) (x)
#endif
static inline int16_t ff_le_get16(const unsigned char *p)
{ uint16_t v; memcpy(&v, p, 2); return (int16_t)FF_LE_BSWAP16(v); }
static inline int32_t ff_le_get32(const unsigned char *p)
{ uint32_t v; memcpy(&v, p, 4); return (int32_t)FF_LE_BSWAP32(v); }
static inline int64_t ff_le_get64(const unsigned char *p)
{ uint64_t v; memcpy(&v, p, 8); return (int64_t)FF_LE_BSWAP64(v); }
static inline void ff_le_put16(unsigned char *p, int16_t x)
{ uint16_t v = FF_LE_BSWAP16((uint16_t)x); memcpy(p, &v, 2); }
static inline void ff_le_put32(unsigned char *p, int32_t x)
{ uint32_t v = FF_LE_BSWAP32((uint32_t)x); memcpy(p, &v, 4); }
static inline void ff_le_put64(unsigned char *p, int64_t x)
{ uint64_t v = FF_LE_BSWAP64((uint64_t)x); memcpy(p, &v, 8); }
#endif
