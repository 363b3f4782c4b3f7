/* Strict UTF-8 check for the Cython codecs: accepts exactly what Python's str(b, "utf-8") accepts
 * (no overlong forms, no surrogates, nothing above U+10FFFF). Runs of ASCII are skipped eight bytes
 * at a time because rows are mostly ASCII text. */
#ifndef FLUSS_FAST_UTF8_VALID_H
#define FLUSS_FAST_UTF8_VALID_H
#include <stdint.h>
#include <string.h>

static inline int ff_utf8_valid(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if ((w & 0x8080808080808080ull) == 0) { i += 8; continue; }
        }
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        unsigned char lo = 0x80, hi = 0xBF;
        int more;
        if (c >= 0xC2 && c <= 0xDF) more = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0) lo = 0xA0;
            else if (c == 0xED) hi = 0x9F;   /* no UTF-16 surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0) lo = 0x90;
            else if (c == 0xF4) hi = 0x8F;   /* nothing above U+10FFFF */
        } else return 0;
        if (i + more >= n) return 0;
        unsigned char c1 = s[i + 1];
        if (c1 < lo || c1 > hi) return 0;
        for (int k = 2; k <= more; k++)
            if ((s[i + k] & 0xC0) != 0x80) return 0;
        i += more + 1;
    }
    return 1;
}
#endif
