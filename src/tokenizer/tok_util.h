/* Shared pieces of the tokenizer: growable byte buffers, split lists, UTF-8 helpers, the Unicode
 * predicates Hugging Face tokenizers relies on (Rust's char methods and regex classes), and a
 * byte-string hash. Internal to src/tokenizer/. */
#ifndef OMNIC_TOKENIZER_TOK_UTIL_H
#define OMNIC_TOKENIZER_TOK_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* ---- growable byte buffer ----
 * Owns p (omnic_free). len bytes are used; when cap > 0, p[len] may be written freely. */
typedef struct omnic__tbuf {
    char *p;
    size_t len;
    size_t cap;
} omnic__tbuf;

void omnic__tbuf_free(omnic__tbuf *b);
/* Ensures room for extra more bytes plus a NUL. E_NOMEM / E_TOO_LARGE on failure (b unchanged). */
omnic_status omnic__tbuf_reserve(omnic__tbuf *b, size_t extra, omnic_err *err);
/* Appends n bytes of s (borrowed; may not point into b). */
omnic_status omnic__tbuf_put(omnic__tbuf *b, const void *s, size_t n, omnic_err *err);
/* Appends the UTF-8 encoding of cp (a valid scalar value). */
omnic_status omnic__tbuf_put_cp(omnic__tbuf *b, uint32_t cp, omnic_err *err);

/* ---- split lists: pieces of text during encoding ----
 * A split is a byte range [off, off+len) of some omnic__tbuf. id >= 0 marks an added token that
 * is already tokenized (later stages pass it through); id < 0 is text still to process. */
#define OMNIC__SPLIT_AT_START 1u /* the split begins at offset 0 of the original input */
typedef struct omnic__tsplit {
    size_t off;
    size_t len;
    int32_t id;
    uint32_t flags;
} omnic__tsplit;

typedef struct omnic__tsplits {
    omnic__tsplit *v; /* owned, [cap] */
    size_t n;
    size_t cap;
} omnic__tsplits;

void omnic__tsplits_free(omnic__tsplits *s);
omnic_status omnic__tsplits_push(omnic__tsplits *s, size_t off, size_t len, int32_t id, uint32_t flags,
                                 omnic_err *err);

/* ---- segments: the result of matching a pattern over a text ----
 * Consecutive [s, e) ranges covering the text, each flagged as a match or not (Hugging Face's
 * Pattern::find_matches). Empty matches may appear. */
typedef struct omnic__tseg {
    size_t s;
    size_t e;
    bool match;
} omnic__tseg;

typedef struct omnic__tsegs {
    omnic__tseg *v; /* owned, [cap] */
    size_t n;
    size_t cap;
} omnic__tsegs;

void omnic__tsegs_free(omnic__tsegs *s);
omnic_status omnic__tsegs_push(omnic__tsegs *s, size_t st, size_t e, bool match, omnic_err *err);

/* ---- growable int32 vector (token ids) ---- */
typedef struct omnic__ivec {
    int32_t *v; /* owned, [cap] */
    size_t n;
    size_t cap;
} omnic__ivec;

void omnic__ivec_free(omnic__ivec *v);
omnic_status omnic__ivec_reserve(omnic__ivec *v, size_t extra, omnic_err *err);
static inline omnic_status omnic__ivec_push(omnic__ivec *v, int32_t x, omnic_err *err)
{
    if (v->n == v->cap) OMNIC_TRY(omnic__ivec_reserve(v, 1, err));
    v->v[v->n++] = x;
    return OMNIC_OK;
}

/* ---- UTF-8 ---- */
/* Returns len when s[0..len) is valid UTF-8 (no surrogates, no overlongs, <= U+10FFFF), else the byte
 * offset of the first byte that starts an invalid or truncated sequence. */
size_t omnic__utf8_validate(const char *s, size_t len);
/* Decodes one code point from valid UTF-8 at s (at least one byte available); *n gets its length. */
static inline uint32_t omnic__utf8_decode(const char *s, size_t *n)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80) {
        *n = 1;
        return u[0];
    }
    if (u[0] < 0xE0) {
        *n = 2;
        return ((uint32_t)(u[0] & 0x1F) << 6) | (uint32_t)(u[1] & 0x3F);
    }
    if (u[0] < 0xF0) {
        *n = 3;
        return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (uint32_t)(u[2] & 0x3F);
    }
    *n = 4;
    return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) |
           ((uint32_t)(u[2] & 0x3F) << 6) | (uint32_t)(u[3] & 0x3F);
}
/* Length of the UTF-8 sequence that starts with byte b (1 for continuation/invalid bytes). */
static inline size_t omnic__utf8_len(unsigned char b)
{
    return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}
/* Writes cp (a valid scalar value) to out; returns the byte count (1..4). */
size_t omnic__utf8_encode(uint32_t cp, char out[4]);
/* Appends s[0..len) to out, replacing each maximal invalid subpart by U+FFFD (Rust's
 * String::from_utf8_lossy). */
omnic_status omnic__utf8_lossy_append(omnic__tbuf *out, const char *s, size_t len, omnic_err *err);
/* Number of bytes at the end of s that form a valid but incomplete UTF-8 sequence (0..3): the bytes
 * a following byte could still complete. */
size_t omnic__utf8_incomplete_tail(const char *s, size_t len);

/* ---- Unicode predicates with Rust semantics ---- */
bool omnic__uc_is_whitespace(uint32_t cp); /* char::is_whitespace (White_Space) */
bool omnic__uc_is_numeric(uint32_t cp);    /* char::is_numeric (Nd, Nl, No) */
bool omnic__uc_is_punct(uint32_t cp);      /* is_ascii_punctuation || general category P* */
bool omnic__uc_is_word(uint32_t cp);       /* regex crate \w: Alphabetic, M, Nd, Pc, Join_Control */

/* ---- GPT-2 byte-level alphabet ----
 * Each byte maps to one printable character: bytes 0x21..0x7E, 0xA1..0xAC and 0xAE..0xFF to
 * themselves, the other 68 to U+0100.. in byte order. */
uint32_t omnic__bytelevel_char(unsigned char b);
/* The byte a character stands for, or -1 when cp is not in the alphabet. */
int omnic__bytelevel_byte(uint32_t cp);

/* ---- hashing (not cryptographic) ---- */
uint64_t omnic__hash_bytes(const void *p, size_t n);
static inline uint64_t omnic__hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
