/* Byte buffers, split and segment lists, UTF-8 helpers, Unicode predicates and hashing for the
 * tokenizer. */
#include "tokenizer/tok_util.h"

#include <string.h>
#include <utf8proc.h>

#include "core/limits.h"

/* ---- byte buffer ---- */

void omnic__tbuf_free(omnic__tbuf *b)
{
    if (!b) return;
    omnic_free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

omnic_status omnic__tbuf_reserve(omnic__tbuf *b, size_t extra, omnic_err *err)
{
    size_t need;
    if (!omnic_size_add(&need, b->len, extra) || !omnic_size_add(&need, need, 1))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: text buffer size overflows (%zu + %zu bytes)",
                          b->len, extra);
    if (need <= b->cap) return OMNIC_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > OMNIC_MAX_ALLOC / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    if (cap > OMNIC_MAX_ALLOC)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "tokenizer: text buffer of %zu bytes is over the %zu byte limit", need,
                          (size_t)OMNIC_MAX_ALLOC);
    char *p = omnic_realloc(b->p, cap);
    if (!p)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory growing a text buffer to %zu bytes",
                          cap);
    b->p = p;
    b->cap = cap;
    return OMNIC_OK;
}

omnic_status omnic__tbuf_put(omnic__tbuf *b, const void *s, size_t n, omnic_err *err)
{
    OMNIC_TRY(omnic__tbuf_reserve(b, n, err));
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    return OMNIC_OK;
}

omnic_status omnic__tbuf_put_cp(omnic__tbuf *b, uint32_t cp, omnic_err *err)
{
    OMNIC_TRY(omnic__tbuf_reserve(b, 4, err));
    b->len += omnic__utf8_encode(cp, b->p + b->len);
    return OMNIC_OK;
}

/* ---- split and segment lists ---- */

void omnic__tsplits_free(omnic__tsplits *s)
{
    if (!s) return;
    omnic_free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static omnic_status grow(void **v, size_t *cap, size_t elem, omnic_err *err)
{
    size_t ncap = *cap ? *cap * 2 : 64;
    size_t bytes;
    if (!omnic_size_mul(&bytes, ncap, elem))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: list of %zu entries overflows", ncap);
    void *p = omnic_realloc(*v, bytes);
    if (!p)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory growing a list to %zu bytes", bytes);
    *v = p;
    *cap = ncap;
    return OMNIC_OK;
}

omnic_status omnic__tsplits_push(omnic__tsplits *s, size_t off, size_t len, int32_t id, uint32_t flags,
                                 omnic_err *err)
{
    if (s->n == s->cap) {
        void *v = s->v;
        OMNIC_TRY(grow(&v, &s->cap, sizeof *s->v, err));
        s->v = v;
    }
    s->v[s->n++] = (omnic__tsplit){.off = off, .len = len, .id = id, .flags = flags};
    return OMNIC_OK;
}

void omnic__tsegs_free(omnic__tsegs *s)
{
    if (!s) return;
    omnic_free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

omnic_status omnic__tsegs_push(omnic__tsegs *s, size_t st, size_t e, bool match, omnic_err *err)
{
    if (s->n == s->cap) {
        void *v = s->v;
        OMNIC_TRY(grow(&v, &s->cap, sizeof *s->v, err));
        s->v = v;
    }
    s->v[s->n++] = (omnic__tseg){.s = st, .e = e, .match = match};
    return OMNIC_OK;
}

void omnic__ivec_free(omnic__ivec *v)
{
    if (!v) return;
    omnic_free(v->v);
    v->v = NULL;
    v->n = v->cap = 0;
}

omnic_status omnic__ivec_reserve(omnic__ivec *v, size_t extra, omnic_err *err)
{
    size_t need;
    if (!omnic_size_add(&need, v->n, extra))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: id list of %zu + %zu entries overflows", v->n,
                          extra);
    if (need <= v->cap) return OMNIC_OK;
    size_t cap = v->cap ? v->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    size_t bytes;
    if (!omnic_size_mul(&bytes, cap, sizeof *v->v))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: id list of %zu entries overflows", cap);
    int32_t *p = omnic_realloc(v->v, bytes);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory for %zu token ids", cap);
    v->v = p;
    v->cap = cap;
    return OMNIC_OK;
}

/* ---- UTF-8 ---- */

/* Length of the valid sequence at s[i..len), 0 when invalid; *sub gets the length of the maximal
 * valid prefix of a sequence (the bytes one U+FFFD replaces), at least 1. */
static size_t seq_len(const unsigned char *s, size_t i, size_t len, size_t *sub)
{
    unsigned char b = s[i];
    *sub = 1;
    if (b < 0x80) return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF)
        need = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else
        return 0;
    for (size_t k = 1; k < need; k++) {
        if (i + k >= len) return 0;
        unsigned char c = s[i + k];
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return 0;
        *sub = k + 1;
    }
    return need;
}

size_t omnic__utf8_validate(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        /* ASCII fast path, 8 bytes at a time */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, u + i, 8);
            if (w & 0x8080808080808080ULL) break;
            i += 8;
        }
        if (i >= len) break;
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t sub;
        size_t n = seq_len(u, i, len, &sub);
        if (!n) return i;
        i += n;
    }
    return len;
}

size_t omnic__utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

omnic_status omnic__utf8_lossy_append(omnic__tbuf *out, const char *s, size_t len, omnic_err *err)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0; /* [run, i) is valid and not yet copied */
    while (i < len) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t sub;
        size_t n = seq_len(u, i, len, &sub);
        if (n) {
            i += n;
            continue;
        }
        OMNIC_TRY(omnic__tbuf_put(out, s + run, i - run, err));
        OMNIC_TRY(omnic__tbuf_put(out, "\xEF\xBF\xBD", 3, err));
        i += sub;
        run = i;
    }
    return omnic__tbuf_put(out, s + run, len - run, err);
}

size_t omnic__utf8_incomplete_tail(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t back = len < 3 ? len : 3;
    for (size_t k = 1; k <= back; k++) {
        size_t i = len - k;
        if (u[i] < 0x80) return 0;
        if (u[i] >= 0xC0) {
            if (u[i] < 0xC2 || u[i] > 0xF4) return 0;
            size_t sub;
            /* valid-but-incomplete: seq_len fails only for running out of bytes */
            if (seq_len(u, i, len, &sub) == 0 && sub == k && omnic__utf8_len(u[i]) > k) return k;
            return 0;
        }
    }
    return 0;
}

/* ---- Unicode predicates ---- */

bool omnic__uc_is_whitespace(uint32_t cp)
{
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    if (cp < 0x85) return false;
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool omnic__uc_is_numeric(uint32_t cp)
{
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool omnic__uc_is_punct(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
               (cp >= 0x7B && cp <= 0x7E);
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

bool omnic__uc_is_word(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
    if (cp == 0x200C || cp == 0x200D) return true;
    /* Other_Alphabetic symbols: circled and squared Latin letters */
    if ((cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
        (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189))
        return true;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_ND) || c == UTF8PROC_CATEGORY_NL ||
           c == UTF8PROC_CATEGORY_PC;
}

/* ---- byte-level alphabet ---- */

static bool bl_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

uint32_t omnic__bytelevel_char(unsigned char b)
{
    if (bl_printable(b)) return b;
    /* rank among the non-printable bytes: 0x00..0x20 (33), 0x7F..0xA0 (34), 0xAD (1) */
    if (b <= 0x20) return 0x100u + b;
    if (b <= 0xA0) return 0x100u + 33u + (b - 0x7Fu);
    return 0x100u + 67u;
}

int omnic__bytelevel_byte(uint32_t cp)
{
    if (cp < 0x100) return bl_printable(cp) ? (int)cp : -1;
    if (cp < 0x100 + 33) return (int)(cp - 0x100);
    if (cp < 0x100 + 67) return (int)(cp - 0x100 - 33 + 0x7F);
    if (cp == 0x100 + 67) return 0xAD;
    return -1;
}

/* ---- hashing: 64-bit multiply-mix over 8-byte words ---- */

uint64_t omnic__hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xC2B2AE3D27D4EB4FULL);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ omnic__hash_u64(w)) * 0x9E3779B97F4A7C15ULL;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    if (n) {
        memcpy(&w, s, n);
        h = (h ^ omnic__hash_u64(w ^ n)) * 0x9E3779B97F4A7C15ULL;
    }
    return omnic__hash_u64(h);
}
