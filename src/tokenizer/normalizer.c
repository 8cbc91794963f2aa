/* Normalizers: loading from tokenizer.json and applying them to one piece of text. A Sequence is
 * flattened into a list of steps at load. */
#include "tokenizer/normalizer.h"

#include <stdio.h>
#include <string.h>
#include <utf8proc.h>

#include "core/limits.h"
#include "io/json.h"
#include "tokenizer/tok_json.h"

typedef enum nkind { N_NFC, N_NFD, N_NFKC, N_NFKD, N_LOWERCASE, N_REPLACE, N_PREPEND, N_STRIP } nkind;

typedef struct nstep {
    nkind kind;
    omnic__tpattern pat; /* Replace */
    char *str;           /* Replace content / Prepend text (owned) */
    size_t str_len;
    bool left, right; /* Strip */
} nstep;

struct omnic__normalizer {
    nstep *steps; /* owned, [n] */
    size_t n;
    size_t cap;
};

void omnic__normalizer_free(omnic__normalizer *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->n; i++) {
        omnic__tpattern_deinit(&n->steps[i].pat);
        omnic_free(n->steps[i].str);
    }
    omnic_free(n->steps);
    omnic_free(n);
}

static omnic_status push_step(omnic__normalizer *n, nstep **out, omnic_err *err)
{
    if (n->n == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 4;
        nstep *s = omnic_realloc(n->steps, cap * sizeof *s);
        if (!s) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory loading a normalizer");
        n->steps = s;
        n->cap = cap;
    }
    *out = &n->steps[n->n++];
    memset(*out, 0, sizeof **out);
    return OMNIC_OK;
}

static omnic_status load_into(omnic__normalizer *n, const json_t *j, const char *path, int depth,
                              omnic_err *err)
{
    if (depth > OMNIC_MAX_TOKENIZER_NESTING)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: Sequence nesting deeper than %d", path,
                          OMNIC_MAX_TOKENIZER_NESTING);
    const char *type;
    OMNIC_TRY(omnic__tj_type(j, path, &type, err));
    static const struct {
        const char *name;
        nkind kind;
    } simple[] = {
        {"NFC", N_NFC}, {"NFD", N_NFD}, {"NFKC", N_NFKC}, {"NFKD", N_NFKD}, {"Lowercase", N_LOWERCASE}};
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (!strcmp(type, simple[i].name)) {
            nstep *s;
            OMNIC_TRY(push_step(n, &s, err));
            s->kind = simple[i].kind;
            return OMNIC_OK;
        }
    if (!strcmp(type, "Sequence")) {
        const json_t *arr;
        OMNIC_TRY(omnic__json_get_array(j, "normalizers", true, path, &arr, err));
        for (size_t i = 0; i < json_array_size(arr); i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.normalizers[%zu]", path, i);
            OMNIC_TRY(load_into(n, json_array_get(arr, i), sub, depth + 1, err));
        }
        return OMNIC_OK;
    }
    if (!strcmp(type, "Replace")) {
        const char *c;
        size_t cl;
        OMNIC_TRY(omnic__tj_strn(j, "content", true, path, &c, &cl, err));
        nstep *s;
        OMNIC_TRY(push_step(n, &s, err));
        s->kind = N_REPLACE;
        OMNIC_TRY(omnic__tj_dup(c, cl, path, &s->str, err));
        s->str_len = cl;
        return omnic__tpattern_load(j, "pattern", path, &s->pat, err);
    }
    if (!strcmp(type, "Prepend")) {
        const char *c;
        size_t cl;
        OMNIC_TRY(omnic__tj_strn(j, "prepend", true, path, &c, &cl, err));
        nstep *s;
        OMNIC_TRY(push_step(n, &s, err));
        s->kind = N_PREPEND;
        s->str_len = cl;
        return omnic__tj_dup(c, cl, path, &s->str, err);
    }
    if (!strcmp(type, "Strip")) {
        bool l, r;
        OMNIC_TRY(omnic__json_get_bool(j, "strip_left", false, true, path, &l, err));
        OMNIC_TRY(omnic__json_get_bool(j, "strip_right", false, true, path, &r, err));
        nstep *s;
        OMNIC_TRY(push_step(n, &s, err));
        s->kind = N_STRIP;
        s->left = l;
        s->right = r;
        return OMNIC_OK;
    }
    return OMNIC_FAIL(
        err, OMNIC_E_UNSUPPORTED,
        "%s: normalizer type '%s' is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, "
        "Replace, Prepend, Strip, Sequence)",
        path, type);
}

omnic_status omnic__normalizer_load(const json_t *j, const char *path, omnic__normalizer **out,
                                    omnic_err *err)
{
    omnic__normalizer *n = omnic_alloc_array(1, sizeof *n);
    if (!n) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", path);
    omnic_status st = load_into(n, j, path, 0, err);
    if (st != OMNIC_OK) {
        omnic__normalizer_free(n);
        return st;
    }
    *out = n;
    return OMNIC_OK;
}

/* ---- steps ---- */

static bool all_below(const char *s, size_t len, unsigned char limit)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= limit) return false;
    return true;
}

static omnic_status unicode_form(nkind k, const char *s, size_t len, omnic__tbuf *out, omnic__tok_scratch *sc,
                                 omnic_err *err)
{
    /* Text below U+0300 is unchanged by NFC; ASCII is unchanged by every form. */
    if (all_below(s, len, k == N_NFC ? 0xCC : 0x80)) return omnic__tbuf_put(out, s, len, err);
    utf8proc_option_t opts = UTF8PROC_STABLE;
    opts |= (k == N_NFC || k == N_NFKC) ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE;
    if (k == N_NFKC || k == N_NFKD) opts |= UTF8PROC_COMPAT;
    if (len > (size_t)INT32_MAX)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: %zu bytes is too long to normalize", len);
    for (;;) {
        utf8proc_ssize_t need =
            utf8proc_decompose_custom((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, sc->u32,
                                      (utf8proc_ssize_t)sc->u32_cap, opts, NULL, NULL);
        if (need < 0)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "tokenizer: Unicode normalization failed: %s",
                              utf8proc_errmsg(need));
        if ((size_t)need <= sc->u32_cap) {
            utf8proc_ssize_t m = utf8proc_normalize_utf32(sc->u32, need, opts);
            if (m < 0)
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "tokenizer: Unicode normalization failed: %s",
                                  utf8proc_errmsg(m));
            size_t bytes;
            if (!omnic_size_mul(&bytes, (size_t)m, 4))
                return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: normalized text too long");
            OMNIC_TRY(omnic__tbuf_reserve(out, bytes, err));
            for (utf8proc_ssize_t i = 0; i < m; i++)
                out->len += omnic__utf8_encode((uint32_t)sc->u32[i], out->p + out->len);
            return OMNIC_OK;
        }
        size_t cap = (size_t)need + 16;
        int32_t *p = omnic_alloc_array(cap, sizeof *p);
        if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory normalizing %zu bytes", len);
        omnic_free(sc->u32);
        sc->u32 = p;
        sc->u32_cap = cap;
    }
}

static omnic_status lowercase(const char *s, size_t len, omnic__tbuf *out, omnic_err *err)
{
    /* one character never lowercases to more than 3 bytes per input byte */
    size_t bytes;
    if (!omnic_size_mul(&bytes, len, 3))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: text too long");
    OMNIC_TRY(omnic__tbuf_reserve(out, bytes, err));
    char *o = out->p + out->len;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            *o++ = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            i++;
            continue;
        }
        size_t cl;
        uint32_t cp = omnic__utf8_decode(s + i, &cl);
        i += cl;
        if (cp == 0x130) { /* the one unconditional multi-character lowercase mapping */
            *o++ = 'i';
            o += omnic__utf8_encode(0x307, o);
            continue;
        }
        o += omnic__utf8_encode((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), o);
    }
    out->len = (size_t)(o - out->p);
    return OMNIC_OK;
}

static omnic_status strip(const nstep *st, const char *s, size_t len, omnic__tbuf *out, bool *lead_moved,
                          omnic_err *err)
{
    size_t a = 0, b = len;
    if (st->left)
        while (a < b) {
            size_t cl;
            uint32_t cp = omnic__utf8_decode(s + a, &cl);
            if (!omnic__uc_is_whitespace(cp)) break;
            a += cl;
        }
    if (st->right)
        while (b > a) {
            size_t k = b - 1;
            while (k > a && ((unsigned char)s[k] & 0xC0) == 0x80)
                k--;
            size_t cl;
            uint32_t cp = omnic__utf8_decode(s + k, &cl);
            if (!omnic__uc_is_whitespace(cp)) break;
            b = k;
        }
    if (a > 0 && lead_moved) *lead_moved = true;
    return omnic__tbuf_put(out, s + a, b - a, err);
}

static omnic_status replace(const nstep *st, const char *s, size_t len, omnic__tbuf *out, bool *lead_moved,
                            omnic__tok_scratch *sc, omnic_err *err)
{
    sc->segs.n = 0;
    OMNIC_TRY(omnic__tpattern_segments(&st->pat, &sc->rx, s, len, &sc->segs, err));
    for (size_t i = 0; i < sc->segs.n; i++) {
        const omnic__tseg *g = &sc->segs.v[i];
        if (!g->match) {
            OMNIC_TRY(omnic__tbuf_put(out, s + g->s, g->e - g->s, err));
            continue;
        }
        if (g->s == 0 && g->e > 0 && st->str_len == 0 && lead_moved) *lead_moved = true;
        OMNIC_TRY(omnic__tbuf_put(out, st->str, st->str_len, err));
    }
    return OMNIC_OK;
}

static omnic_status run_step(const nstep *st, const char *s, size_t len, omnic__tbuf *out, bool *lead_moved,
                             omnic__tok_scratch *sc, omnic_err *err)
{
    switch (st->kind) {
    case N_NFC:
    case N_NFD:
    case N_NFKC:
    case N_NFKD:
        return unicode_form(st->kind, s, len, out, sc, err);
    case N_LOWERCASE:
        return lowercase(s, len, out, err);
    case N_REPLACE:
        return replace(st, s, len, out, lead_moved, sc, err);
    case N_PREPEND:
        if (len) OMNIC_TRY(omnic__tbuf_put(out, st->str, st->str_len, err));
        return omnic__tbuf_put(out, s, len, err);
    case N_STRIP:
        return strip(st, s, len, out, lead_moved, err);
    }
    return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "tokenizer: unknown normalizer step %d", (int)st->kind);
}

omnic_status omnic__normalizer_run(const omnic__normalizer *n, const char *s, size_t len, omnic__tbuf *out,
                                   bool *lead_moved, omnic__tok_scratch *sc, omnic_err *err)
{
    if (n->n == 0) return omnic__tbuf_put(out, s, len, err);
    const char *in = s;
    size_t in_len = len;
    for (size_t i = 0; i < n->n; i++) {
        omnic__tbuf *dst = i + 1 == n->n ? out : &sc->nb[i & 1];
        if (dst != out) dst->len = 0;
        OMNIC_TRY(run_step(&n->steps[i], in, in_len, dst, lead_moved, sc, err));
        if (dst != out) {
            in = dst->p ? dst->p : "";
            in_len = dst->len;
        }
    }
    return OMNIC_OK;
}
