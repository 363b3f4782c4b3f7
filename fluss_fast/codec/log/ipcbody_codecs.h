/* The few libzstd and liblz4 entry points the IPC body decompressor calls, declared here rather
 * than taken from zstd.h / lz4frame.h: they are part of both libraries' stable public API, and
 * declaring them lets the extension build against the runtime libraries alone (libzstd1 and
 * liblz4-1 are on every Debian system, apt itself needs them; their -dev packages are not).
 *
 * Each thread keeps one zstd and one LZ4 frame decompression context for its whole life (created
 * on first use, freed when the thread exits): a fresh context per buffer, as Arrow C++ makes,
 * costs more than decompressing a small buffer.
 */
#ifndef FLUSS_FAST_IPCBODY_CODECS_H
#define FLUSS_FAST_IPCBODY_CODECS_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct ZSTD_DCtx_s ZSTD_DCtx;
ZSTD_DCtx *ZSTD_createDCtx(void);
size_t ZSTD_freeDCtx(ZSTD_DCtx *dctx);
size_t ZSTD_decompressDCtx(ZSTD_DCtx *dctx, void *dst, size_t dst_capacity,
                           const void *src, size_t src_size);
unsigned ZSTD_isError(size_t code);
const char *ZSTD_getErrorName(size_t code);

typedef struct LZ4F_dctx_s LZ4F_dctx;
size_t LZ4F_createDecompressionContext(LZ4F_dctx **dctx, unsigned version);
size_t LZ4F_freeDecompressionContext(LZ4F_dctx *dctx);
void LZ4F_resetDecompressionContext(LZ4F_dctx *dctx);
size_t LZ4F_decompress(LZ4F_dctx *dctx, void *dst, size_t *dst_size,
                       const void *src, size_t *src_size, const void *options);
unsigned LZ4F_isError(size_t code);
const char *LZ4F_getErrorName(size_t code);

#define FFIB_LZ4F_VERSION 100

typedef struct {
    ZSTD_DCtx *zstd;
    LZ4F_dctx *lz4;
} ffib_state;

static pthread_key_t ffib_key;
static pthread_once_t ffib_once = PTHREAD_ONCE_INIT;
static int ffib_key_ok = 0;

static void ffib_free_state(void *p) {
    ffib_state *s = (ffib_state *)p;
    if (s->zstd) ZSTD_freeDCtx(s->zstd);
    if (s->lz4) LZ4F_freeDecompressionContext(s->lz4);
    free(s);
}

static void ffib_make_key(void) {
    ffib_key_ok = pthread_key_create(&ffib_key, ffib_free_state) == 0;
}

static ffib_state *ffib_this_thread(void) {
    ffib_state *s;
    pthread_once(&ffib_once, ffib_make_key);
    if (!ffib_key_ok) return NULL;
    s = (ffib_state *)pthread_getspecific(ffib_key);
    if (s == NULL) {
        s = (ffib_state *)calloc(1, sizeof(ffib_state));
        if (s == NULL) return NULL;
        if (pthread_setspecific(ffib_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    return s;
}

/* Each returns NULL when exactly dst_size bytes came out of the frame(s) in src, else why not. */

static const char *ffib_zstd(void *dst, size_t dst_size, const void *src, size_t src_size) {
    ffib_state *s = ffib_this_thread();
    size_t got;
    if (s == NULL) return "out of memory for a zstd context";
    if (s->zstd == NULL && (s->zstd = ZSTD_createDCtx()) == NULL)
        return "out of memory for a zstd context";
    got = ZSTD_decompressDCtx(s->zstd, dst, dst_size, src, src_size);
    if (ZSTD_isError(got)) return ZSTD_getErrorName(got);
    if (got != dst_size) return "frame holds fewer bytes than declared";
    return NULL;
}

static const char *ffib_lz4(void *dst, size_t dst_size, const void *src, size_t src_size) {
    ffib_state *s = ffib_this_thread();
    const char *in = (const char *)src;
    char *out = (char *)dst;
    size_t in_left = src_size, out_left = dst_size, hint = 1;
    if (s == NULL) return "out of memory for an LZ4 context";
    if (s->lz4 == NULL && LZ4F_isError(LZ4F_createDecompressionContext(&s->lz4, FFIB_LZ4F_VERSION))) {
        s->lz4 = NULL;
        return "out of memory for an LZ4 context";
    }
    /* Several frames may follow each other; every one must end inside src. */
    while (in_left > 0) {
        size_t in_used = in_left, out_made = out_left;
        hint = LZ4F_decompress(s->lz4, out, &out_made, in, &in_used, NULL);
        if (LZ4F_isError(hint)) {
            LZ4F_resetDecompressionContext(s->lz4);
            return LZ4F_getErrorName(hint);
        }
        in += in_used;
        in_left -= in_used;
        out += out_made;
        out_left -= out_made;
        if (in_used == 0 && out_made == 0) {
            LZ4F_resetDecompressionContext(s->lz4);
            return "frame holds more bytes than declared";
        }
    }
    if (hint != 0) {
        LZ4F_resetDecompressionContext(s->lz4);
        return "frame is truncated";
    }
    if (out_left != 0) return "frame holds fewer bytes than declared";
    return NULL;
}

#endif
