/* Pre-tokenizers: loading from tokenizer.json and cutting split lists. */
#include "tokenizer/pretokenizer.h"

#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "io/json.h"
#include "tokenizer/tok_json.h"

typedef enum pkind {
    P_SPLIT,
    P_BYTELEVEL,
    P_METASPACE,
    P_DIGITS,
    P_PUNCT,
    P_WHITESPACE,
    P_WSPLIT,
    P_CHARDELIM,
} pkind;

typedef enum behavior { B_REMOVED, B_ISOLATED, B_MERGED_PREV, B_MERGED_NEXT, B_CONTIGUOUS } behavior;

typedef enum prepend_scheme { PS_ALWAYS, PS_FIRST, PS_NEVER } prepend_scheme;

typedef struct pstep {
    pkind kind;
    behavior beh;
    bool invert;         /* Split */
    omnic__tpattern pat; /* Split */
    omnic__regex *re;    /* ByteLevel (GPT-2 regex) and Whitespace */
    bool add_prefix;     /* ByteLevel */
    bool individual;     /* Digits */
    uint32_t ch;         /* Metaspace replacement, CharDelimiterSplit delimiter */
    char rep[4];         /* Metaspace replacement in UTF-8 */
    size_t rep_len;
    prepend_scheme scheme; /* Metaspace */
    bool split;            /* Metaspace */
} pstep;

struct omnic__pretokenizer {
    pstep *steps; /* owned, [n] */
    size_t n;
    size_t cap;
};

/* The GPT-2 pattern ByteLevel uses (Oniguruma syntax, as Hugging Face compiles it). */
static const char GPT2_RE[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
/* Whitespace: the regex crate's \w+|[^\w\s]+ with \w = Alphabetic, M, Nd, Pc, Join_Control. */
#define RUST_W "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}"
static const char WHITESPACE_RE[] = "[" RUST_W "]+|[^" RUST_W "\\s]+";

void omnic__pretokenizer_free(omnic__pretokenizer *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) {
        omnic__tpattern_deinit(&p->steps[i].pat);
        omnic__regex_free(p->steps[i].re);
    }
    omnic_free(p->steps);
    omnic_free(p);
}

static omnic_status push_step(omnic__pretokenizer *p, pkind k, pstep **out, omnic_err *err)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 4;
        pstep *s = omnic_realloc(p->steps, cap * sizeof *s);
        if (!s) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory loading a pre-tokenizer");
        p->steps = s;
        p->cap = cap;
    }
    *out = &p->steps[p->n++];
    memset(*out, 0, sizeof **out);
    (*out)->kind = k;
    return OMNIC_OK;
}

static omnic_status get_behavior(const json_t *j, const char *path, bool required, behavior dflt, behavior *b,
                                 omnic_err *err)
{
    const char *s;
    OMNIC_TRY(omnic__json_get_str(j, "behavior", required, NULL, path, &s, err));
    if (!s) {
        *b = dflt;
        return OMNIC_OK;
    }
    static const struct {
        const char *name;
        behavior b;
    } names[] = {{"Removed", B_REMOVED},
                 {"Isolated", B_ISOLATED},
                 {"MergedWithPrevious", B_MERGED_PREV},
                 {"MergedWithNext", B_MERGED_NEXT},
                 {"Contiguous", B_CONTIGUOUS}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            *b = names[i].b;
            return OMNIC_OK;
        }
    return OMNIC_FAIL(
        err, OMNIC_E_INVALID,
        "%s: behavior '%s' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, "
        "Contiguous",
        path, s);
}

static omnic_status load_metaspace(omnic__pretokenizer *p, const json_t *j, const char *path, omnic_err *err)
{
    uint32_t cp;
    OMNIC_TRY(omnic__tj_char(j, "replacement", path, &cp, err));
    const char *scheme = NULL;
    OMNIC_TRY(omnic__json_get_str(j, "prepend_scheme", false, NULL, path, &scheme, err));
    prepend_scheme ps = PS_ALWAYS;
    if (scheme) {
        if (!strcmp(scheme, "always"))
            ps = PS_ALWAYS;
        else if (!strcmp(scheme, "first"))
            ps = PS_FIRST;
        else if (!strcmp(scheme, "never"))
            ps = PS_NEVER;
        else
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "%s: prepend_scheme '%s' is not one of always, first, never", path, scheme);
    }
    const json_t *aps = json_object_get(j, "add_prefix_space");
    if (aps && !json_is_null(aps)) {
        bool a;
        OMNIC_TRY(omnic__json_get_bool(j, "add_prefix_space", false, true, path, &a, err));
        if (!a) {
            if (scheme && ps != PS_NEVER)
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "%s: add_prefix_space false does not match prepend_scheme '%s'", path,
                                  scheme);
            ps = PS_NEVER;
        }
    }
    bool split;
    OMNIC_TRY(omnic__json_get_bool(j, "split", false, true, path, &split, err));
    pstep *s;
    OMNIC_TRY(push_step(p, P_METASPACE, &s, err));
    s->ch = cp;
    s->rep_len = omnic__utf8_encode(cp, s->rep);
    s->scheme = ps;
    s->split = split;
    return OMNIC_OK;
}

static omnic_status load_into(omnic__pretokenizer *p, const json_t *j, const char *path, int depth,
                              omnic_err *err)
{
    if (depth > OMNIC_MAX_TOKENIZER_NESTING)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: Sequence nesting deeper than %d", path,
                          OMNIC_MAX_TOKENIZER_NESTING);
    const char *type;
    OMNIC_TRY(omnic__tj_type(j, path, &type, err));
    pstep *s;
    if (!strcmp(type, "Sequence")) {
        const json_t *arr;
        OMNIC_TRY(omnic__json_get_array(j, "pretokenizers", true, path, &arr, err));
        for (size_t i = 0; i < json_array_size(arr); i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.pretokenizers[%zu]", path, i);
            OMNIC_TRY(load_into(p, json_array_get(arr, i), sub, depth + 1, err));
        }
        return OMNIC_OK;
    }
    if (!strcmp(type, "Split")) {
        behavior b;
        bool inv;
        OMNIC_TRY(get_behavior(j, path, true, B_ISOLATED, &b, err));
        OMNIC_TRY(omnic__json_get_bool(j, "invert", false, false, path, &inv, err));
        OMNIC_TRY(push_step(p, P_SPLIT, &s, err));
        s->beh = b;
        s->invert = inv;
        return omnic__tpattern_load(j, "pattern", path, &s->pat, err);
    }
    if (!strcmp(type, "ByteLevel")) {
        bool aps, use_regex;
        OMNIC_TRY(omnic__json_get_bool(j, "add_prefix_space", false, true, path, &aps, err));
        OMNIC_TRY(omnic__json_get_bool(j, "use_regex", false, true, path, &use_regex, err));
        OMNIC_TRY(push_step(p, P_BYTELEVEL, &s, err));
        s->add_prefix = aps;
        if (use_regex)
            return omnic__regex_compile(GPT2_RE, sizeof GPT2_RE - 1, OMNIC__RX_ONIG, path, &s->re, err);
        return OMNIC_OK;
    }
    if (!strcmp(type, "Metaspace")) return load_metaspace(p, j, path, err);
    if (!strcmp(type, "Digits")) {
        bool ind;
        OMNIC_TRY(omnic__json_get_bool(j, "individual_digits", false, false, path, &ind, err));
        OMNIC_TRY(push_step(p, P_DIGITS, &s, err));
        s->individual = ind;
        return OMNIC_OK;
    }
    if (!strcmp(type, "Punctuation")) {
        behavior b;
        OMNIC_TRY(get_behavior(j, path, false, B_ISOLATED, &b, err));
        OMNIC_TRY(push_step(p, P_PUNCT, &s, err));
        s->beh = b;
        return OMNIC_OK;
    }
    if (!strcmp(type, "Whitespace")) {
        OMNIC_TRY(push_step(p, P_WHITESPACE, &s, err));
        return omnic__regex_compile(WHITESPACE_RE, sizeof WHITESPACE_RE - 1, OMNIC__RX_PCRE, path, &s->re,
                                    err);
    }
    if (!strcmp(type, "WhitespaceSplit")) return push_step(p, P_WSPLIT, &s, err);
    if (!strcmp(type, "CharDelimiterSplit")) {
        uint32_t cp;
        OMNIC_TRY(omnic__tj_char(j, "delimiter", path, &cp, err));
        OMNIC_TRY(push_step(p, P_CHARDELIM, &s, err));
        s->ch = cp;
        return OMNIC_OK;
    }
    return OMNIC_FAIL(
        err, OMNIC_E_UNSUPPORTED,
        "%s: pre-tokenizer type '%s' is not supported (supported: ByteLevel, Split, Metaspace, Digits, "
        "Punctuation, Whitespace, WhitespaceSplit, CharDelimiterSplit, Sequence)",
        path, type);
}

omnic_status omnic__pretokenizer_load(const json_t *j, const char *path, omnic__pretokenizer **out,
                                      omnic_err *err)
{
    omnic__pretokenizer *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", path);
    omnic_status st = load_into(p, j, path, 0, err);
    if (st != OMNIC_OK) {
        omnic__pretokenizer_free(p);
        return st;
    }
    *out = p;
    return OMNIC_OK;
}

/* ---- running ---- */

/* Segments text by a character predicate: each matching character is its own match. */
static omnic_status char_segments(const pstep *st, const char *t, size_t len, omnic__tsegs *segs,
                                  omnic_err *err)
{
    if (len == 0) return omnic__tsegs_push(segs, 0, 0, false, err);
    size_t last = 0;
    for (size_t i = 0; i < len;) {
        size_t cl;
        uint32_t cp = omnic__utf8_decode(t + i, &cl);
        bool hit;
        switch (st->kind) {
        case P_DIGITS:
            hit = omnic__uc_is_numeric(cp);
            break;
        case P_PUNCT:
            hit = omnic__uc_is_punct(cp);
            break;
        case P_WSPLIT:
            hit = omnic__uc_is_whitespace(cp);
            break;
        default:
            hit = cp == st->ch;
            break;
        }
        if (hit) {
            if (last < i) OMNIC_TRY(omnic__tsegs_push(segs, last, i, false, err));
            OMNIC_TRY(omnic__tsegs_push(segs, i, i + cl, true, err));
            last = i + cl;
        }
        i += cl;
    }
    if (last < len) OMNIC_TRY(omnic__tsegs_push(segs, last, len, false, err));
    return OMNIC_OK;
}

/* Turns segments into kept ranges per the delimiter behavior (Hugging Face's
 * NormalizedString::split), rewriting segs in place: match = true now means "remove". */
static void apply_behavior(omnic__tsegs *segs, behavior b)
{
    omnic__tseg *v = segs->v;
    size_t n = segs->n, k = 0;
    bool prev = false;
    switch (b) {
    case B_ISOLATED:
        for (size_t i = 0; i < n; i++)
            v[i].match = false;
        return;
    case B_REMOVED:
        return;
    case B_CONTIGUOUS:
        for (size_t i = 0; i < n; i++) {
            bool m = v[i].match;
            if (m == prev && k > 0)
                v[k - 1].e = v[i].e;
            else
                v[k++] = (omnic__tseg){v[i].s, v[i].e, false};
            prev = m;
        }
        segs->n = k;
        return;
    case B_MERGED_PREV:
        for (size_t i = 0; i < n; i++) {
            bool m = v[i].match;
            if (m && !prev && k > 0)
                v[k - 1].e = v[i].e;
            else
                v[k++] = (omnic__tseg){v[i].s, v[i].e, false};
            prev = m;
        }
        segs->n = k;
        return;
    case B_MERGED_NEXT: {
        /* walk backwards, compacting towards the end, then shift down */
        size_t w = n;
        for (size_t i = n; i-- > 0;) {
            bool m = v[i].match;
            if (m && !prev && w < n)
                v[w].s = v[i].s;
            else
                v[--w] = (omnic__tseg){v[i].s, v[i].e, false};
            prev = m;
        }
        memmove(v, v + w, (n - w) * sizeof *v);
        segs->n = n - w;
        return;
    }
    }
}

/* Pushes the kept, non-empty ranges of segs (relative to split sp) onto dst. */
static omnic_status emit(const omnic__tsegs *segs, const omnic__tsplit *sp, size_t base, omnic__tsplits *dst,
                         omnic_err *err)
{
    for (size_t i = 0; i < segs->n; i++) {
        const omnic__tseg *g = &segs->v[i];
        if (g->match || g->e == g->s) continue;
        uint32_t fl = (sp->flags & OMNIC__SPLIT_AT_START) && g->s == 0 ? OMNIC__SPLIT_AT_START : 0;
        OMNIC_TRY(omnic__tsplits_push(dst, base + g->s, g->e - g->s, -1, fl, err));
    }
    return OMNIC_OK;
}

/* Appends the byte-level form of t[0..len) to text; returns its offset. */
static omnic_status bytelevel_map(omnic__tbuf *text, size_t src, size_t len, size_t *off, omnic_err *err)
{
    OMNIC_TRY(omnic__tbuf_reserve(text, 2 * len, err)); /* every byte maps to at most 2 bytes */
    const unsigned char *t = (const unsigned char *)text->p + src;
    char *o = text->p + text->len;
    *off = text->len;
    for (size_t i = 0; i < len; i++) {
        uint32_t c = omnic__bytelevel_char(t[i]);
        if (c < 0x80)
            *o++ = (char)c;
        else {
            *o++ = (char)(0xC0 | (c >> 6));
            *o++ = (char)(0x80 | (c & 0x3F));
        }
    }
    text->len = (size_t)(o - text->p);
    return OMNIC_OK;
}

static omnic_status run_bytelevel(const pstep *st, omnic__tok_scratch *sc, const omnic__tsplit *sp,
                                  omnic__tsplits *dst, omnic_err *err)
{
    size_t src = sp->off, len = sp->len;
    if (st->add_prefix && (len == 0 || sc->text.p[src] != ' ')) {
        OMNIC_TRY(omnic__tbuf_reserve(&sc->text, len + 1, err));
        size_t o = sc->text.len;
        sc->text.p[o] = ' ';
        memcpy(sc->text.p + o + 1, sc->text.p + src, len);
        sc->text.len += len + 1;
        src = o;
        len++;
    }
    if (!st->re) {
        size_t off;
        OMNIC_TRY(bytelevel_map(&sc->text, src, len, &off, err));
        if (len) OMNIC_TRY(omnic__tsplits_push(dst, off, sc->text.len - off, -1, sp->flags, err));
        return OMNIC_OK;
    }
    sc->segs.n = 0;
    OMNIC_TRY(omnic__regex_segments(st->re, &sc->rx, sc->text.p + src, len, &sc->segs, err));
    for (size_t i = 0; i < sc->segs.n; i++) {
        const omnic__tseg *g = &sc->segs.v[i];
        if (g->e == g->s) continue;
        size_t off;
        OMNIC_TRY(bytelevel_map(&sc->text, src + g->s, g->e - g->s, &off, err));
        uint32_t fl = (sp->flags & OMNIC__SPLIT_AT_START) && g->s == 0 ? OMNIC__SPLIT_AT_START : 0;
        OMNIC_TRY(omnic__tsplits_push(dst, off, sc->text.len - off, -1, fl, err));
    }
    return OMNIC_OK;
}

static omnic_status run_metaspace(const pstep *st, omnic__tok_scratch *sc, const omnic__tsplit *sp,
                                  omnic__tsplits *dst, omnic_err *err)
{
    size_t len = sp->len, need;
    if (!omnic_size_mul(&need, len, st->rep_len) || !omnic_size_add(&need, need, st->rep_len))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: text of %zu bytes is too long", len);
    OMNIC_TRY(omnic__tbuf_reserve(&sc->text, need, err));
    const char *t = sc->text.p + sp->off;
    char *o = sc->text.p + sc->text.len;
    size_t off = sc->text.len;
    /* after replacing spaces, does the text start with the replacement? */
    bool starts = (len > 0 && t[0] == ' ') || (len >= st->rep_len && !memcmp(t, st->rep, st->rep_len));
    bool prepend = !starts && (st->scheme == PS_ALWAYS ||
                               (st->scheme == PS_FIRST && (sp->flags & OMNIC__SPLIT_AT_START)));
    if (prepend) {
        memcpy(o, st->rep, st->rep_len);
        o += st->rep_len;
    }
    for (size_t i = 0; i < len; i++) {
        if (t[i] == ' ') {
            memcpy(o, st->rep, st->rep_len);
            o += st->rep_len;
        } else
            *o++ = t[i];
    }
    sc->text.len = (size_t)(o - sc->text.p);
    size_t nlen = sc->text.len - off;
    if (!st->split) {
        if (nlen) OMNIC_TRY(omnic__tsplits_push(dst, off, nlen, -1, sp->flags, err));
        return OMNIC_OK;
    }
    /* split on the replacement, MergedWithNext */
    sc->segs.n = 0;
    OMNIC_TRY(omnic__literal_segments(st->rep, st->rep_len, sc->text.p + off, nlen, &sc->segs, err));
    apply_behavior(&sc->segs, B_MERGED_NEXT);
    omnic__tsplit tmp = *sp;
    return emit(&sc->segs, &tmp, off, dst, err);
}

static omnic_status run_step(const pstep *st, omnic__tok_scratch *sc, const omnic__tsplit *sp,
                             omnic__tsplits *dst, omnic_err *err)
{
    switch (st->kind) {
    case P_BYTELEVEL:
        return run_bytelevel(st, sc, sp, dst, err);
    case P_METASPACE:
        return run_metaspace(st, sc, sp, dst, err);
    default:
        break;
    }
    const char *t = sc->text.p + sp->off;
    sc->segs.n = 0;
    behavior b;
    switch (st->kind) {
    case P_SPLIT:
        OMNIC_TRY(omnic__tpattern_segments(&st->pat, &sc->rx, t, sp->len, &sc->segs, err));
        if (st->invert)
            for (size_t i = 0; i < sc->segs.n; i++)
                sc->segs.v[i].match = !sc->segs.v[i].match;
        b = st->beh;
        break;
    case P_WHITESPACE:
        OMNIC_TRY(omnic__regex_segments(st->re, &sc->rx, t, sp->len, &sc->segs, err));
        for (size_t i = 0; i < sc->segs.n; i++)
            sc->segs.v[i].match = !sc->segs.v[i].match;
        b = B_REMOVED;
        break;
    case P_DIGITS:
        OMNIC_TRY(char_segments(st, t, sp->len, &sc->segs, err));
        b = st->individual ? B_ISOLATED : B_CONTIGUOUS;
        break;
    case P_PUNCT:
        OMNIC_TRY(char_segments(st, t, sp->len, &sc->segs, err));
        b = st->beh;
        break;
    default: /* P_WSPLIT, P_CHARDELIM */
        OMNIC_TRY(char_segments(st, t, sp->len, &sc->segs, err));
        b = B_REMOVED;
        break;
    }
    apply_behavior(&sc->segs, b);
    return emit(&sc->segs, sp, sp->off, dst, err);
}

omnic_status omnic__pretokenizer_run(const omnic__pretokenizer *p, omnic__tok_scratch *sc, int *cur,
                                     omnic_err *err)
{
    for (size_t k = 0; k < p->n; k++) {
        omnic__tsplits *src = &sc->sp[*cur], *dst = &sc->sp[1 - *cur];
        dst->n = 0;
        for (size_t i = 0; i < src->n; i++) {
            omnic__tsplit sp = src->v[i];
            if (sp.id >= 0) {
                OMNIC_TRY(omnic__tsplits_push(dst, sp.off, sp.len, sp.id, sp.flags, err));
                continue;
            }
            OMNIC_TRY(run_step(&p->steps[k], sc, &sp, dst, err));
        }
        *cur = 1 - *cur;
    }
    return OMNIC_OK;
}
