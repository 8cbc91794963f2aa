/* Decoders: each step maps a list of token strings to a new list; the result is their
 * concatenation. */
#include "tokenizer/decoder.h"

#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "io/json.h"
#include "tokenizer/tok_json.h"

typedef enum dkind { D_BYTELEVEL, D_METASPACE, D_BYTEFALLBACK, D_FUSE, D_STRIP, D_REPLACE } dkind;

typedef struct dstep {
    dkind kind;
    char rep[4]; /* Metaspace replacement / Strip content, UTF-8 */
    size_t rep_len;
    uint32_t ch;
    bool never;          /* Metaspace prepend_scheme == never */
    size_t start, stop;  /* Strip */
    omnic__tpattern pat; /* Replace */
    char *content;       /* Replace (owned) */
    size_t content_len;
} dstep;

struct omnic__decoder {
    dstep *steps; /* owned, [n] */
    size_t n;
    size_t cap;
};

void omnic__decoder_free(omnic__decoder *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->n; i++) {
        omnic__tpattern_deinit(&d->steps[i].pat);
        omnic_free(d->steps[i].content);
    }
    omnic_free(d->steps);
    omnic_free(d);
}

static omnic_status push_step(omnic__decoder *d, dkind k, dstep **out, omnic_err *err)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        dstep *s = omnic_realloc(d->steps, cap * sizeof *s);
        if (!s) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory loading a decoder");
        d->steps = s;
        d->cap = cap;
    }
    *out = &d->steps[d->n++];
    memset(*out, 0, sizeof **out);
    (*out)->kind = k;
    return OMNIC_OK;
}

static omnic_status load_into(omnic__decoder *d, const json_t *j, const char *path, int depth, omnic_err *err)
{
    if (depth > OMNIC_MAX_TOKENIZER_NESTING)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: Sequence nesting deeper than %d", path,
                          OMNIC_MAX_TOKENIZER_NESTING);
    const char *type;
    OMNIC_TRY(omnic__tj_type(j, path, &type, err));
    dstep *s;
    if (!strcmp(type, "Sequence")) {
        const json_t *arr;
        OMNIC_TRY(omnic__json_get_array(j, "decoders", true, path, &arr, err));
        for (size_t i = 0; i < json_array_size(arr); i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.decoders[%zu]", path, i);
            OMNIC_TRY(load_into(d, json_array_get(arr, i), sub, depth + 1, err));
        }
        return OMNIC_OK;
    }
    if (!strcmp(type, "ByteLevel")) return push_step(d, D_BYTELEVEL, &s, err);
    if (!strcmp(type, "ByteFallback")) return push_step(d, D_BYTEFALLBACK, &s, err);
    if (!strcmp(type, "Fuse")) return push_step(d, D_FUSE, &s, err);
    if (!strcmp(type, "Metaspace")) {
        uint32_t cp;
        OMNIC_TRY(omnic__tj_char(j, "replacement", path, &cp, err));
        const char *scheme = NULL;
        OMNIC_TRY(omnic__json_get_str(j, "prepend_scheme", false, NULL, path, &scheme, err));
        bool never = false;
        if (scheme) {
            if (!strcmp(scheme, "never"))
                never = true;
            else if (strcmp(scheme, "always") != 0 && strcmp(scheme, "first") != 0)
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "%s: prepend_scheme '%s' is not one of always, first, never", path, scheme);
        }
        const json_t *aps = json_object_get(j, "add_prefix_space");
        if (aps && !json_is_null(aps)) {
            bool a;
            OMNIC_TRY(omnic__json_get_bool(j, "add_prefix_space", false, true, path, &a, err));
            if (!a) {
                if (scheme && !never)
                    return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                      "%s: add_prefix_space false does not match prepend_scheme '%s'", path,
                                      scheme);
                never = true;
            }
        }
        OMNIC_TRY(push_step(d, D_METASPACE, &s, err));
        s->ch = cp;
        s->rep_len = omnic__utf8_encode(cp, s->rep);
        s->never = never;
        return OMNIC_OK;
    }
    if (!strcmp(type, "Strip")) {
        uint32_t cp;
        int64_t a, b;
        OMNIC_TRY(omnic__tj_char(j, "content", path, &cp, err));
        OMNIC_TRY(omnic__json_get_i64(j, "start", true, 0, 0, 1 << 20, path, &a, err));
        OMNIC_TRY(omnic__json_get_i64(j, "stop", true, 0, 0, 1 << 20, path, &b, err));
        OMNIC_TRY(push_step(d, D_STRIP, &s, err));
        s->ch = cp;
        s->rep_len = omnic__utf8_encode(cp, s->rep);
        s->start = (size_t)a;
        s->stop = (size_t)b;
        return OMNIC_OK;
    }
    if (!strcmp(type, "Replace")) {
        const char *c;
        size_t cl;
        OMNIC_TRY(omnic__tj_strn(j, "content", true, path, &c, &cl, err));
        OMNIC_TRY(push_step(d, D_REPLACE, &s, err));
        OMNIC_TRY(omnic__tj_dup(c, cl, path, &s->content, err));
        s->content_len = cl;
        return omnic__tpattern_load(j, "pattern", path, &s->pat, err);
    }
    return OMNIC_FAIL(
        err, OMNIC_E_UNSUPPORTED,
        "%s: decoder type '%s' is not supported (supported: ByteLevel, Metaspace, ByteFallback, Fuse, "
        "Strip, Replace, Sequence)",
        path, type);
}

omnic_status omnic__decoder_load(const json_t *j, const char *path, omnic__decoder **out, omnic_err *err)
{
    omnic__decoder *d = omnic_alloc_array(1, sizeof *d);
    if (!d) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", path);
    omnic_status st = load_into(d, j, path, 0, err);
    if (st != OMNIC_OK) {
        omnic__decoder_free(d);
        return st;
    }
    *out = d;
    return OMNIC_OK;
}

omnic__decoder_traits omnic__decoder_get_traits(const omnic__decoder *d)
{
    omnic__decoder_traits t = {0};
    for (size_t i = 0; d && i < d->n; i++) {
        if (d->steps[i].kind == D_BYTELEVEL) t.byte_level = true;
        if (d->steps[i].kind == D_BYTEFALLBACK) t.byte_fallback = true;
        if (d->steps[i].kind == D_STRIP && d->steps[i].stop > 0) t.strip_end = true;
    }
    return t;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool omnic__decoder_byte_token(const char *s, size_t n, unsigned char *b)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return false;
    /* u8::from_str_radix(&s[3..5], 16): two hex digits, or '+' and one */
    int hi = hexval(s[3]), lo = hexval(s[4]);
    if (s[3] == '+' && lo >= 0) {
        *b = (unsigned char)lo;
        return true;
    }
    if (hi < 0 || lo < 0) return false;
    *b = (unsigned char)(hi * 16 + lo);
    return true;
}

/* ---- steps: read list src (text in sc->text), write list dst ---- */

static omnic_status put_tok(omnic__tok_scratch *sc, omnic__tsplits *dst, size_t off, omnic_err *err)
{
    return omnic__tsplits_push(dst, off, sc->text.len - off, -1, 0, err);
}

static omnic_status step_bytelevel(omnic__tok_scratch *sc, const omnic__tsplits *src, omnic__tsplits *dst,
                                   omnic_err *err)
{
    omnic__tbuf *bytes = &sc->nb[0];
    bytes->len = 0;
    for (size_t i = 0; i < src->n; i++) {
        const char *t = sc->text.p + src->v[i].off;
        size_t n = src->v[i].len;
        OMNIC_TRY(omnic__tbuf_reserve(bytes, n, err));
        size_t mark = bytes->len;
        bool ok = true;
        for (size_t k = 0; k < n;) {
            size_t cl;
            int b = omnic__bytelevel_byte(omnic__utf8_decode(t + k, &cl));
            if (b < 0) {
                ok = false;
                break;
            }
            bytes->p[bytes->len++] = (char)b;
            k += cl;
        }
        if (!ok) {
            bytes->len = mark;
            memcpy(bytes->p + bytes->len, t, n);
            bytes->len += n;
        }
    }
    size_t off = sc->text.len;
    OMNIC_TRY(omnic__utf8_lossy_append(&sc->text, bytes->p ? bytes->p : "", bytes->len, err));
    return put_tok(sc, dst, off, err);
}

static omnic_status step_metaspace(const dstep *st, omnic__tok_scratch *sc, const omnic__tsplits *src,
                                   omnic__tsplits *dst, omnic_err *err)
{
    for (size_t i = 0; i < src->n; i++) {
        size_t n = src->v[i].len;
        OMNIC_TRY(omnic__tbuf_reserve(&sc->text, n, err));
        const char *t = sc->text.p + src->v[i].off;
        size_t off = sc->text.len;
        char *o = sc->text.p + off;
        for (size_t k = 0; k < n;) {
            if (n - k >= st->rep_len && !memcmp(t + k, st->rep, st->rep_len)) {
                if (!(i == 0 && !st->never)) *o++ = ' ';
                k += st->rep_len;
                continue;
            }
            *o++ = t[k++];
        }
        sc->text.len = (size_t)(o - sc->text.p);
        OMNIC_TRY(put_tok(sc, dst, off, err));
    }
    return OMNIC_OK;
}

static omnic_status flush_bytes(omnic__tok_scratch *sc, omnic__tbuf *run, omnic__tsplits *dst, omnic_err *err)
{
    if (!run->len) return OMNIC_OK;
    size_t off = sc->text.len;
    if (omnic__utf8_validate(run->p, run->len) == run->len) {
        OMNIC_TRY(omnic__tbuf_put(&sc->text, run->p, run->len, err));
        OMNIC_TRY(put_tok(sc, dst, off, err));
    } else {
        for (size_t k = 0; k < run->len; k++) {
            off = sc->text.len;
            OMNIC_TRY(omnic__tbuf_put(&sc->text, "\xEF\xBF\xBD", 3, err));
            OMNIC_TRY(put_tok(sc, dst, off, err));
        }
    }
    run->len = 0;
    return OMNIC_OK;
}

static omnic_status step_bytefallback(omnic__tok_scratch *sc, const omnic__tsplits *src, omnic__tsplits *dst,
                                      omnic_err *err)
{
    omnic__tbuf *run = &sc->nb[0];
    run->len = 0;
    for (size_t i = 0; i < src->n; i++) {
        const omnic__tsplit *t = &src->v[i];
        unsigned char b;
        if (omnic__decoder_byte_token(sc->text.p + t->off, t->len, &b)) {
            OMNIC_TRY(omnic__tbuf_put(run, &b, 1, err));
            continue;
        }
        OMNIC_TRY(flush_bytes(sc, run, dst, err));
        OMNIC_TRY(omnic__tsplits_push(dst, t->off, t->len, -1, 0, err));
    }
    return flush_bytes(sc, run, dst, err);
}

static omnic_status step_fuse(omnic__tok_scratch *sc, const omnic__tsplits *src, omnic__tsplits *dst,
                              omnic_err *err)
{
    size_t total = 0;
    for (size_t i = 0; i < src->n; i++)
        total += src->v[i].len;
    OMNIC_TRY(omnic__tbuf_reserve(&sc->text, total, err));
    size_t off = sc->text.len;
    for (size_t i = 0; i < src->n; i++) {
        memcpy(sc->text.p + sc->text.len, sc->text.p + src->v[i].off, src->v[i].len);
        sc->text.len += src->v[i].len;
    }
    return put_tok(sc, dst, off, err);
}

static omnic_status step_strip(const dstep *st, omnic__tok_scratch *sc, const omnic__tsplits *src,
                               omnic__tsplits *dst, omnic_err *err)
{
    for (size_t i = 0; i < src->n; i++) {
        const char *t = sc->text.p + src->v[i].off;
        size_t n = src->v[i].len, a = 0, b = n;
        for (size_t k = 0; k < st->start && a < n; k++) {
            if (n - a < st->rep_len || memcmp(t + a, st->rep, st->rep_len) != 0) break;
            a += st->rep_len;
        }
        for (size_t k = 0; k < st->stop && b > 0; k++) {
            size_t q = b - 1;
            while (q > 0 && ((unsigned char)t[q] & 0xC0) == 0x80)
                q--;
            if (b - q != st->rep_len || memcmp(t + q, st->rep, st->rep_len) != 0) break;
            b = q;
        }
        if (b < a) b = a;
        OMNIC_TRY(omnic__tsplits_push(dst, src->v[i].off + a, b - a, -1, 0, err));
    }
    return OMNIC_OK;
}

static omnic_status step_replace(const dstep *st, omnic__tok_scratch *sc, const omnic__tsplits *src,
                                 omnic__tsplits *dst, omnic_err *err)
{
    for (size_t i = 0; i < src->n; i++) {
        sc->segs.n = 0;
        OMNIC_TRY(omnic__tpattern_segments(&st->pat, &sc->rx, sc->text.p + src->v[i].off, src->v[i].len,
                                           &sc->segs, err));
        /* build into nb[1], then append (the source lives in sc->text) */
        omnic__tbuf *o = &sc->nb[1];
        o->len = 0;
        for (size_t k = 0; k < sc->segs.n; k++) {
            const omnic__tseg *g = &sc->segs.v[k];
            if (g->match)
                OMNIC_TRY(omnic__tbuf_put(o, st->content, st->content_len, err));
            else
                OMNIC_TRY(omnic__tbuf_put(o, sc->text.p + src->v[i].off + g->s, g->e - g->s, err));
        }
        size_t off = sc->text.len;
        OMNIC_TRY(omnic__tbuf_put(&sc->text, o->p ? o->p : "", o->len, err));
        OMNIC_TRY(put_tok(sc, dst, off, err));
    }
    return OMNIC_OK;
}

omnic_status omnic__decoder_run(const omnic__decoder *d, omnic__tok_scratch *sc, int cur, omnic__tbuf *out,
                                omnic_err *err)
{
    for (size_t s = 0; d && s < d->n; s++) {
        const dstep *st = &d->steps[s];
        omnic__tsplits *src = &sc->sp[cur], *dst = &sc->sp[1 - cur];
        dst->n = 0;
        switch (st->kind) {
        case D_BYTELEVEL:
            OMNIC_TRY(step_bytelevel(sc, src, dst, err));
            break;
        case D_METASPACE:
            OMNIC_TRY(step_metaspace(st, sc, src, dst, err));
            break;
        case D_BYTEFALLBACK:
            OMNIC_TRY(step_bytefallback(sc, src, dst, err));
            break;
        case D_FUSE:
            OMNIC_TRY(step_fuse(sc, src, dst, err));
            break;
        case D_STRIP:
            OMNIC_TRY(step_strip(st, sc, src, dst, err));
            break;
        case D_REPLACE:
            OMNIC_TRY(step_replace(st, sc, src, dst, err));
            break;
        }
        cur = 1 - cur;
    }
    const omnic__tsplits *fin = &sc->sp[cur];
    for (size_t i = 0; i < fin->n; i++) {
        if (!d && i > 0) OMNIC_TRY(omnic__tbuf_put(out, " ", 1, err));
        OMNIC_TRY(omnic__tbuf_put(out, sc->text.p + fin->v[i].off, fin->v[i].len, err));
    }
    return OMNIC_OK;
}
