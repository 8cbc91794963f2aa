/* Chat-template strings: Python's str methods (case mapping with the Unicode tables of utf8proc,
 * strip, split, replace, find, format, ...), and the argument binding every builtin uses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#include "tokenizer/template_internal.h"

/* ---- argument binding --------------------------------------------------------------------- */

/* Binds a's positional and keyword arguments to the parameter names (out[i] NULL when absent). */
omnic_status omnic__jbind(omnic__jrender *r, const char *what, omnic__jargs *a, const char *const *names,
                          size_t n, const omnic__jv **out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (a->npos > n)
        return omnic__jfail(r, OMNIC_E_INVALID, "%s takes at most %zu argument(s) (%zu given)", what, n,
                            a->npos);
    for (size_t i = 0; i < a->npos; i++)
        out[i] = &a->pos[i];
    for (size_t k = 0; k < a->nkw; k++) {
        size_t j;
        for (j = 0; j < n; j++)
            if (strlen(names[j]) == a->klen[k] && !memcmp(names[j], a->kname[k], a->klen[k])) break;
        if (j == n)
            return omnic__jfail(r, OMNIC_E_INVALID, "%s got an unexpected keyword argument '%.*s'", what,
                                (int)a->klen[k], a->kname[k]);
        if (out[j])
            return omnic__jfail(r, OMNIC_E_INVALID, "%s got multiple values for argument '%s'", what,
                                names[j]);
        out[j] = &a->kw[k];
    }
    return OMNIC_OK;
}

omnic_status omnic__jarg_int(omnic__jrender *r, const omnic__jv *v, int64_t dflt, const char *what,
                             int64_t *out)
{
    if (!omnic__jarg_given(v) || v->kind == OMNIC_JV_NONE) {
        *out = dflt;
        return OMNIC_OK;
    }
    if (v->kind == OMNIC_JV_INT)
        *out = v->u.i;
    else if (v->kind == OMNIC_JV_BOOL)
        *out = v->u.b;
    else
        return omnic__jfail(r, OMNIC_E_INVALID, "%s must be an integer, not %s", what, omnic__jv_type(*v));
    return OMNIC_OK;
}

omnic_status omnic__jarg_str(omnic__jrender *r, const omnic__jv *v, const char *what, const omnic__jstr **out)
{
    if (!v || v->kind != OMNIC_JV_STR)
        return omnic__jfail(r, OMNIC_E_INVALID, "%s must be a string, not %s", what,
                            v ? omnic__jv_type(*v) : "missing");
    *out = OMNIC_JSTR(*v);
    return OMNIC_OK;
}

/* ---- string helpers ------------------------------------------------------------------------ */

static bool cased(uint32_t cp)
{
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}

static uint32_t up(uint32_t cp)
{
    return (uint32_t)utf8proc_toupper((utf8proc_int32_t)cp);
}
static uint32_t lo(uint32_t cp)
{
    return (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
}
static uint32_t ti(uint32_t cp)
{
    return (uint32_t)utf8proc_totitle((utf8proc_int32_t)cp);
}

static bool jtitle_sep(uint32_t cp)
{
    return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || omnic__ju8_space(cp);
}

static omnic_status put_cp(omnic__jrender *r, omnic__jbuf *b, uint32_t cp)
{
    char tmp[4];
    return omnic__jbuf_put(r, b, tmp, omnic__ju8_put(tmp, cp));
}

omnic_status omnic__jstr_case(omnic__jrender *r, const omnic__jstr *s, int mode, omnic__jv *out)
{
    omnic__jbuf b = {0};
    omnic_status rc = OMNIC_OK;
    bool prev_cased = false, first = true;
    for (size_t i = 0; i < s->len && rc == OMNIC_OK;) {
        uint32_t cp = omnic__ju8_next(s->p, s->len, &i), m = cp;
        switch (mode) {
        case OMNIC_JCASE_UPPER:
            if (cp == 0xDF) {
                rc = omnic__jbuf_put(r, &b, "SS", 2);
                continue;
            }
            m = up(cp);
            break;
        case OMNIC_JCASE_LOWER:
            m = lo(cp);
            break;
        case OMNIC_JCASE_TITLE:
            m = prev_cased ? lo(cp) : ti(cp);
            prev_cased = cased(cp);
            break;
        case OMNIC_JCASE_CAPITALIZE:
            m = first ? ti(cp) : lo(cp);
            break;
        case OMNIC_JCASE_SWAP:
            m = cased(cp) ? (up(cp) == cp ? lo(cp) : up(cp)) : cp;
            break;
        case OMNIC_JCASE_JTITLE:
            if (jtitle_sep(cp)) {
                prev_cased = false;
            } else {
                m = prev_cased ? lo(cp) : up(cp);
                prev_cased = true;
            }
            break;
        default:
            break;
        }
        first = false;
        rc = put_cp(r, &b, m);
    }
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

/* Whether cp is in the set chars (NULL: whitespace). */
static bool in_set(uint32_t cp, const omnic__jstr *chars)
{
    if (!chars) return omnic__ju8_space(cp);
    for (size_t i = 0; i < chars->len;)
        if (omnic__ju8_next(chars->p, chars->len, &i) == cp) return true;
    return false;
}

/* strip / lstrip / rstrip (which: 1 left, 2 right, 3 both). */
omnic_status omnic__jstr_strip(omnic__jrender *r, omnic__jv s, const omnic__jstr *chars, int which,
                               omnic__jv *out)
{
    const omnic__jstr *str = OMNIC_JSTR(s);
    size_t b = 0, e = str->len;
    if (which & 1)
        while (b < e) {
            size_t j = b;
            if (!in_set(omnic__ju8_next(str->p, e, &j), chars)) break;
            b = j;
        }
    if (which & 2)
        while (e > b) {
            size_t st = e - 1;
            while (st > b && ((unsigned char)str->p[st] & 0xC0u) == 0x80u)
                st--;
            size_t j = st;
            if (!in_set(omnic__ju8_next(str->p, e, &j), chars)) break;
            e = st;
        }
    if (b == 0 && e == str->len) {
        *out = omnic__jv_ref(s);
        return OMNIC_OK;
    }
    return omnic__jstr_new(r, str->p + b, e - b, out);
}

static const char *find_sub(const omnic__jstr *s, size_t from, const omnic__jstr *sub)
{
    if (from > s->len) return NULL;
    return memmem(s->p + from, s->len - from, sub->p, sub->len);
}

omnic_status omnic__jstr_replace(omnic__jrender *r, omnic__jv s, const omnic__jstr *old,
                                 const omnic__jstr *rep, int64_t count, omnic__jv *out)
{
    const omnic__jstr *str = OMNIC_JSTR(s);
    if (count == 0 || (old->len > 0 && !find_sub(str, 0, old))) {
        *out = omnic__jv_ref(s);
        return OMNIC_OK;
    }
    omnic__jbuf b = {0};
    omnic_status rc = OMNIC_OK;
    int64_t done = 0;
    if (old->len == 0) { /* Python: insert rep before every character and at the end */
        for (size_t i = 0; i <= str->len && rc == OMNIC_OK;) {
            if (count < 0 || done < count) {
                rc = omnic__jbuf_put(r, &b, rep->p, rep->len);
                done++;
            }
            if (i == str->len) break;
            size_t st = i;
            (void)omnic__ju8_next(str->p, str->len, &i);
            if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, &b, str->p + st, i - st);
        }
    } else {
        size_t pos = 0;
        const char *hit;
        while (rc == OMNIC_OK && (count < 0 || done < count) && (hit = find_sub(str, pos, old))) {
            size_t at = (size_t)(hit - str->p);
            rc = omnic__jbuf_put(r, &b, str->p + pos, at - pos);
            if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, &b, rep->p, rep->len);
            pos = at + old->len;
            done++;
        }
        if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, &b, str->p + pos, str->len - pos);
    }
    if (rc == OMNIC_OK) rc = omnic__jstep(r, (uint64_t)done);
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

static omnic_status push_piece(omnic__jrender *r, omnic__jv list, const char *s, size_t n)
{
    omnic__jv piece;
    OMNIC_TRY(omnic__jstep(r, 1));
    OMNIC_TRY(omnic__jstr_new(r, s, n, &piece));
    return omnic__jlist_push(r, OMNIC_JLIST(list), piece);
}

/* Python's str.split / str.rsplit. */
static omnic_status split(omnic__jrender *r, const omnic__jstr *s, const omnic__jstr *sep, int64_t maxsplit,
                          bool from_right, omnic__jv *out)
{
    if (sep && sep->len == 0) return omnic__jfail(r, OMNIC_E_INVALID, "empty separator");
    OMNIC_TRY(omnic__jlist_new(r, 0, false, out));
    omnic_status rc = OMNIC_OK;
    /* collect [begin, end) pieces left to right; for rsplit with a limit, compute the cut points
     * from the right first */
    size_t cap = 16, n = 0;
    size_t *cuts = NULL; /* pairs: piece begin, end */
    void *p = NULL;
    if ((rc = omnic__jmem_array(r, cap * 2, sizeof(size_t), &p)) != OMNIC_OK) goto fail;
    cuts = p;
#define ADD_CUT(B, E)                                                                                        \
    do {                                                                                                     \
        if (n == cap) {                                                                                      \
            if ((rc = omnic__jmem_realloc_array(r, cuts, cap * 4, sizeof(size_t), &p)) != OMNIC_OK)          \
                goto fail;                                                                                   \
            cuts = p;                                                                                        \
            cap *= 2;                                                                                        \
        }                                                                                                    \
        cuts[2 * n] = (B);                                                                                   \
        cuts[2 * n + 1] = (E);                                                                               \
        n++;                                                                                                 \
    } while (0)
    if (!from_right) {
        size_t i = 0;
        int64_t splits = 0;
        if (sep) {
            const char *hit;
            while ((maxsplit < 0 || splits < maxsplit) && (hit = find_sub(s, i, sep))) {
                size_t at = (size_t)(hit - s->p);
                ADD_CUT(i, at);
                i = at + sep->len;
                splits++;
            }
            ADD_CUT(i, s->len);
        } else {
            for (;;) {
                while (i < s->len) { /* skip whitespace */
                    size_t j = i;
                    if (!omnic__ju8_space(omnic__ju8_next(s->p, s->len, &j))) break;
                    i = j;
                }
                if (i >= s->len) break;
                if (maxsplit >= 0 && splits >= maxsplit) {
                    size_t e = s->len;
                    ADD_CUT(i, e);
                    break;
                }
                size_t b = i;
                while (i < s->len) {
                    size_t j = i;
                    if (omnic__ju8_space(omnic__ju8_next(s->p, s->len, &j))) break;
                    i = j;
                }
                ADD_CUT(b, i);
                splits++;
            }
        }
    } else {
        size_t e = s->len;
        int64_t splits = 0;
        if (sep) {
            while (maxsplit < 0 || splits < maxsplit) {
                const char *last = NULL;
                for (size_t k = 0; k + sep->len <= e; k++) {
                    const char *hit = memmem(s->p + k, e - k, sep->p, sep->len);
                    if (!hit) break;
                    last = hit;
                    k = (size_t)(hit - s->p);
                }
                if (!last) break;
                size_t at = (size_t)(last - s->p);
                ADD_CUT(at + sep->len, e);
                e = at;
                splits++;
            }
            ADD_CUT(0, e);
        } else {
            for (;;) {
                while (e > 0) {
                    size_t st = e - 1;
                    while (st > 0 && ((unsigned char)s->p[st] & 0xC0u) == 0x80u)
                        st--;
                    size_t j = st;
                    if (!omnic__ju8_space(omnic__ju8_next(s->p, e, &j))) break;
                    e = st;
                }
                if (e == 0) break;
                if (maxsplit >= 0 && splits >= maxsplit) {
                    ADD_CUT(0, e);
                    break;
                }
                size_t b = e;
                while (b > 0) {
                    size_t st = b - 1;
                    while (st > 0 && ((unsigned char)s->p[st] & 0xC0u) == 0x80u)
                        st--;
                    size_t j = st;
                    if (omnic__ju8_space(omnic__ju8_next(s->p, b, &j))) break;
                    b = st;
                }
                ADD_CUT(b, e);
                e = b;
                splits++;
            }
        }
        for (size_t k = 0; k < n / 2; k++) { /* reverse into left-to-right order */
            size_t b0 = cuts[2 * k], e0 = cuts[2 * k + 1];
            cuts[2 * k] = cuts[2 * (n - 1 - k)];
            cuts[2 * k + 1] = cuts[2 * (n - 1 - k) + 1];
            cuts[2 * (n - 1 - k)] = b0;
            cuts[2 * (n - 1 - k) + 1] = e0;
        }
    }
#undef ADD_CUT
    for (size_t k = 0; k < n && rc == OMNIC_OK; k++)
        rc = push_piece(r, *out, s->p + cuts[2 * k], cuts[2 * k + 1] - cuts[2 * k]);
    if (rc != OMNIC_OK) goto fail;
    omnic__jmem_free(r, cuts);
    return OMNIC_OK;
fail:
    omnic__jmem_free(r, cuts);
    omnic__jv_unref(r, *out);
    return rc;
}

static bool line_break(uint32_t cp)
{
    return cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || cp == 0x1c || cp == 0x1d || cp == 0x1e ||
           cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

omnic_status omnic__jstr_splitlines(omnic__jrender *r, const omnic__jstr *s, bool keepends, omnic__jv *out)
{
    OMNIC_TRY(omnic__jlist_new(r, 0, false, out));
    size_t b = 0, i = 0;
    omnic_status rc = OMNIC_OK;
    while (i < s->len && rc == OMNIC_OK) {
        size_t st = i;
        uint32_t cp = omnic__ju8_next(s->p, s->len, &i);
        if (!line_break(cp)) continue;
        if (cp == '\r' && i < s->len && s->p[i] == '\n') i++;
        rc = push_piece(r, *out, s->p + b, (keepends ? i : st) - b);
        b = i;
    }
    if (rc == OMNIC_OK && b < s->len) rc = push_piece(r, *out, s->p + b, s->len - b);
    if (rc != OMNIC_OK) omnic__jv_unref(r, *out);
    return rc;
}

omnic_status omnic__jstr_center(omnic__jrender *r, omnic__jv s, int64_t width, const omnic__jstr *fill,
                                omnic__jv *out)
{
    const omnic__jstr *str = OMNIC_JSTR(s);
    if (width <= (int64_t)str->ncp) {
        *out = omnic__jv_ref(s);
        return OMNIC_OK;
    }
    size_t marg = (size_t)width - str->ncp, left = marg / 2 + (marg & (size_t)width & 1);
    const char *f = fill ? fill->p : " ";
    size_t fl = fill ? fill->len : 1;
    omnic__jbuf b = {0};
    omnic_status rc = OMNIC_OK;
    for (size_t i = 0; i < left && rc == OMNIC_OK; i++)
        rc = omnic__jbuf_put(r, &b, f, fl);
    if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, &b, str->p, str->len);
    for (size_t i = left; i < marg && rc == OMNIC_OK; i++)
        rc = omnic__jbuf_put(r, &b, f, fl);
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

omnic_status omnic__jstr_case_test(omnic__jrender *r, omnic__jv x, bool upper, bool *out)
{
    omnic__jv s;
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
    const omnic__jstr *str = OMNIC_JSTR(s);
    bool any = false, ok = true;
    for (size_t i = 0; i < str->len && ok;) {
        uint32_t cp = omnic__ju8_next(str->p, str->len, &i);
        if (!cased(cp)) continue;
        any = true;
        if (upper ? lo(cp) == cp && up(cp) != cp : up(cp) == cp && lo(cp) != cp) ok = false;
    }
    omnic__jv_unref(r, s);
    *out = any && ok;
    return OMNIC_OK;
}

/* Python's printf-style str % args for %s %r %d %i %f %% (with width/precision). */
omnic_status omnic__jstr_percent(omnic__jrender *r, const omnic__jstr *fmt, omnic__jv args, omnic__jv *out)
{
    const omnic__jv *items = &args;
    size_t nitems = 1, used = 0;
    if (args.kind == OMNIC_JV_LIST && (args.u.o->flags & OMNIC_JLIST_TUPLE)) {
        items = OMNIC_JLIST(args)->v;
        nitems = OMNIC_JLIST(args)->n;
    }
    omnic__jbuf b = {0};
    omnic_status rc = OMNIC_OK;
    for (size_t i = 0; i < fmt->len && rc == OMNIC_OK; i++) {
        char c = fmt->p[i];
        if (c != '%') {
            rc = omnic__jbuf_putc(r, &b, c);
            continue;
        }
        char spec[32];
        size_t k = 0;
        spec[k++] = '%';
        i++;
        while (i < fmt->len && k < 20 && strchr("-+ 0#", fmt->p[i]))
            spec[k++] = fmt->p[i++];
        while (i < fmt->len && k < 24 && ((fmt->p[i] >= '0' && fmt->p[i] <= '9') || fmt->p[i] == '.'))
            spec[k++] = fmt->p[i++];
        if (i >= fmt->len) {
            rc = omnic__jfail(r, OMNIC_E_INVALID, "incomplete format");
            break;
        }
        char conv = fmt->p[i];
        if (conv == '%') {
            rc = omnic__jbuf_putc(r, &b, '%');
            continue;
        }
        if (used >= nitems) {
            rc = omnic__jfail(r, OMNIC_E_INVALID, "not enough arguments for format string");
            break;
        }
        omnic__jv a = items[used++];
        if (conv == 's' || conv == 'r') {
            omnic__jbuf t = {0};
            rc = conv == 's' ? omnic__jv_write_str(r, &t, a) : omnic__jv_write_repr(r, &t, a, 0);
            if (rc == OMNIC_OK) {
                spec[k++] = 's';
                spec[k] = '\0';
                if (k == 2)
                    rc = omnic__jbuf_put(r, &b, t.p ? t.p : "", t.n);
                else
                    rc = omnic__jbuf_printf(r, &b, spec, t.p ? t.p : "");
            }
            omnic__jbuf_free(r, &t);
        } else if (conv == 'd' || conv == 'i' || conv == 'f' || conv == 'e' || conv == 'g' || conv == 'x') {
            if (!(a.kind == OMNIC_JV_INT || a.kind == OMNIC_JV_FLOAT || a.kind == OMNIC_JV_BOOL)) {
                rc = omnic__jfail(r, OMNIC_E_INVALID, "%%%c format: a real number is required, not %s", conv,
                                  omnic__jv_type(a));
                break;
            }
            if (conv == 'd' || conv == 'i' || conv == 'x') {
                memcpy(spec + k, "ll", 2);
                k += 2;
                spec[k++] = conv == 'x' ? 'x' : 'd';
                spec[k] = '\0';
                rc =
                    omnic__jbuf_printf(r, &b, spec,
                                       (long long)(a.kind == OMNIC_JV_FLOAT
                                                       ? (int64_t)a.u.f
                                                       : (a.kind == OMNIC_JV_BOOL ? (int64_t)a.u.b : a.u.i)));
            } else {
                spec[k++] = conv;
                spec[k] = '\0';
                rc = omnic__jbuf_printf(r, &b, spec,
                                        (a.kind == OMNIC_JV_FLOAT  ? a.u.f
                                         : a.kind == OMNIC_JV_BOOL ? (double)a.u.b
                                                                   : (double)a.u.i));
            }
        } else {
            rc = omnic__jfail(r, OMNIC_E_UNSUPPORTED, "unsupported format character '%c'", conv);
        }
    }
    if (rc == OMNIC_OK && used < nitems && args.kind == OMNIC_JV_LIST &&
        (args.u.o->flags & OMNIC_JLIST_TUPLE))
        rc = omnic__jfail(r, OMNIC_E_INVALID, "not all arguments converted during string formatting");
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

/* ---- str methods ------------------------------------------------------------------------------- */

static const char *const STR_METHODS[] = {
    "capitalize", "center",     "count",   "endswith", "find",      "format",       "index",
    "isalnum",    "isalpha",    "isdigit", "islower",  "isnumeric", "isspace",      "istitle",
    "isupper",    "join",       "ljust",   "lower",    "lstrip",    "removeprefix", "removesuffix",
    "replace",    "rfind",      "rindex",  "rjust",    "rsplit",    "rstrip",       "split",
    "splitlines", "startswith", "strip",   "swapcase", "title",     "upper",        "zfill",
};
/* A substring position argument pair (start, end) in code points -> byte range. */
static omnic_status sub_range(omnic__jrender *r, const omnic__jstr *s, const omnic__jv *start,
                              const omnic__jv *end, size_t *b, size_t *e)
{
    int64_t st = 0, en = 0;
    OMNIC_TRY(omnic__jarg_int(r, start, 0, "start", &st));
    OMNIC_TRY(omnic__jarg_int(r, end, (int64_t)s->ncp, "end", &en));
    int64_t n = (int64_t)s->ncp;
    if (st < 0) st = st + n < 0 ? 0 : st + n;
    if (en < 0) en = en + n < 0 ? 0 : en + n;
    if (st > n) st = n;
    if (en > n) en = n;
    if (en < st) en = st;
    *b = omnic__ju8_offset(s->p, s->len, (size_t)st);
    *e = omnic__ju8_offset(s->p, s->len, (size_t)en);
    return OMNIC_OK;
}

static omnic_status affix(omnic__jrender *r, const omnic__jstr *s, const omnic__jv *what,
                          const omnic__jv *start, const omnic__jv *end, bool suffix, bool *out)
{
    size_t b, e;
    OMNIC_TRY(sub_range(r, s, start, end, &b, &e));
    const omnic__jv *items = what;
    size_t n = 1;
    if (what->kind == OMNIC_JV_LIST) {
        items = OMNIC_JLIST(*what)->v;
        n = OMNIC_JLIST(*what)->n;
    }
    *out = false;
    for (size_t i = 0; i < n; i++) {
        if (items[i].kind != OMNIC_JV_STR)
            return omnic__jfail(r, OMNIC_E_INVALID, "%s first arg must be str or a tuple of str, not %s",
                                suffix ? "endswith" : "startswith", omnic__jv_type(items[i]));
        const omnic__jstr *x = OMNIC_JSTR(items[i]);
        if (x->len > e - b) continue;
        if (!memcmp(s->p + (suffix ? e - x->len : b), x->p, x->len)) *out = true;
    }
    return OMNIC_OK;
}

/* find / rfind / index / rindex / count */
static omnic_status find_impl(omnic__jrender *r, const omnic__jstr *s, omnic__jargs *a, const char *what,
                              int mode, omnic__jv *out)
{
    OMNIC_JBIND(what, "sub", "start", "end");
    const omnic__jstr *sub = NULL;
    OMNIC_TRY(omnic__jarg_str(r, arg[0], "the substring", &sub));
    size_t b, e;
    OMNIC_TRY(sub_range(r, s, arg[1], arg[2], &b, &e));
    if (mode == 2) { /* count */
        int64_t n = 0;
        if (sub->len == 0)
            n = (int64_t)omnic__ju8_count(s->p + b, e - b) + 1;
        else
            for (size_t i = b; i + sub->len <= e;) {
                const char *hit = memmem(s->p + i, e - i, sub->p, sub->len);
                if (!hit) break;
                n++;
                i = (size_t)(hit - s->p) + sub->len;
            }
        *out = omnic__jv_int(n);
        return OMNIC_OK;
    }
    int64_t pos = -1;
    if (sub->len <= e - b) {
        if (mode == 0) {
            const char *hit = memmem(s->p + b, e - b, sub->p, sub->len);
            if (hit) pos = (int64_t)omnic__ju8_count(s->p, (size_t)(hit - s->p));
        } else {
            for (size_t i = e - sub->len + 1; i-- > b;)
                if (!memcmp(s->p + i, sub->p, sub->len) && ((unsigned char)s->p[i] & 0xC0u) != 0x80u) {
                    pos = (int64_t)omnic__ju8_count(s->p, i);
                    break;
                }
        }
    }
    if (pos < 0 && (!strcmp(what, "index") || !strcmp(what, "rindex")))
        return omnic__jfail(r, OMNIC_E_INVALID, "substring not found");
    *out = omnic__jv_int(pos);
    return OMNIC_OK;
}

/* Python's str.format: {} {0} {name} {name.attr} {name[key]} with !s / !r; no format specs. */
static omnic_status str_dot_format(omnic__jrender *r, const omnic__jstr *fmt, omnic__jargs *a, omnic__jv *out)
{
    omnic__jbuf b = {0};
    omnic_status rc = OMNIC_OK;
    size_t auto_idx = 0;
    for (size_t i = 0; i < fmt->len && rc == OMNIC_OK; i++) {
        char c = fmt->p[i];
        if (c == '}') {
            if (i + 1 < fmt->len && fmt->p[i + 1] == '}')
                i++;
            else {
                rc = omnic__jfail(r, OMNIC_E_INVALID, "Single '}' encountered in format string");
                break;
            }
            rc = omnic__jbuf_putc(r, &b, '}');
            continue;
        }
        if (c != '{') {
            rc = omnic__jbuf_putc(r, &b, c);
            continue;
        }
        if (i + 1 < fmt->len && fmt->p[i + 1] == '{') {
            i++;
            rc = omnic__jbuf_putc(r, &b, '{');
            continue;
        }
        size_t e = i + 1;
        while (e < fmt->len && fmt->p[e] != '}')
            e++;
        if (e >= fmt->len) {
            rc = omnic__jfail(r, OMNIC_E_INVALID, "Single '{' encountered in format string");
            break;
        }
        /* field [!conv] [:spec] */
        size_t fe = i + 1;
        while (fe < e && fmt->p[fe] != '!' && fmt->p[fe] != ':' && fmt->p[fe] != '.' && fmt->p[fe] != '[')
            fe++;
        const char *field = fmt->p + i + 1;
        size_t flen = fe - (i + 1);
        omnic__jv v;
        if (flen == 0 || (field[0] >= '0' && field[0] <= '9')) {
            size_t idx = auto_idx++;
            if (flen) {
                idx = 0;
                for (size_t k = 0; k < flen; k++)
                    idx = idx * 10 + (size_t)(field[k] - '0');
            }
            if (idx >= a->npos) {
                rc = omnic__jfail(r, OMNIC_E_INVALID,
                                  "Replacement index %zu out of range for positional args tuple", idx);
                break;
            }
            v = omnic__jv_ref(a->pos[idx]);
        } else {
            size_t k;
            for (k = 0; k < a->nkw; k++)
                if (a->klen[k] == flen && !memcmp(a->kname[k], field, flen)) break;
            if (k == a->nkw) {
                rc = omnic__jfail(r, OMNIC_E_INVALID, "format: missing keyword argument '%.*s'", (int)flen,
                                  field);
                break;
            }
            v = omnic__jv_ref(a->kw[k]);
        }
        /* .attr and [key] accessors */
        while (rc == OMNIC_OK && fe < e && (fmt->p[fe] == '.' || fmt->p[fe] == '[')) {
            bool dot = fmt->p[fe] == '.';
            size_t ks = fe + 1, ke = ks;
            while (ke < e &&
                   (dot ? fmt->p[ke] != '.' && fmt->p[ke] != '[' && fmt->p[ke] != '!' && fmt->p[ke] != ':'
                        : fmt->p[ke] != ']'))
                ke++;
            omnic__jv next;
            omnic__jstr kstr = {.h = {.rc = -1, .kind = OMNIC_JV_STR, .flags = OMNIC_JSTR_BORROWED},
                                .len = ke - ks,
                                .ncp = omnic__ju8_count(fmt->p + ks, ke - ks),
                                .p = fmt->p + ks};
            rc = dot ? omnic__jgetattr(r, v, kstr.p, kstr.len, NULL, &next)
                     : omnic__jgetitem(r, v, omnic__jv_obj(&kstr.h), NULL, &next);
            omnic__jv_unref(r, v);
            v = next;
            fe = dot ? ke : ke + 1;
        }
        if (rc != OMNIC_OK) break;
        bool repr = false;
        if (fe < e && fmt->p[fe] == '!') {
            repr = fe + 1 < e && fmt->p[fe + 1] == 'r';
            fe += 2;
        }
        if (fe < e && fmt->p[fe] == ':' && fe + 1 < e) {
            omnic__jv_unref(r, v);
            rc = omnic__jfail(r, OMNIC_E_UNSUPPORTED, "format specs in str.format are not supported");
            break;
        }
        rc = repr ? omnic__jv_write_repr(r, &b, v, 0) : omnic__jv_write_str(r, &b, v);
        omnic__jv_unref(r, v);
        i = e;
    }
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

static omnic_status str_pred(omnic__jrender *r, const omnic__jstr *s, const char *name, size_t len,
                             omnic__jv *out)
{
    bool ok = s->len > 0, any_cased = false;
    if (OMNIC_JNAME_IS(name, len, "islower") || OMNIC_JNAME_IS(name, len, "isupper")) {
        omnic__jv sv = omnic__jv_obj((omnic__jobj *)(uintptr_t)&s->h);
        OMNIC_TRY(omnic__jstr_case_test(r, sv, name[2] == 'u', &ok));
        *out = omnic__jv_bool(ok);
        return OMNIC_OK;
    }
    bool prev_cased = false, title_ok = true;
    for (size_t i = 0; i < s->len;) {
        uint32_t cp = omnic__ju8_next(s->p, s->len, &i);
        utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
        bool alpha = c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
                     c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO;
        bool digit = c == UTF8PROC_CATEGORY_ND;
        bool numeric = digit || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
        if (OMNIC_JNAME_IS(name, len, "isalpha") && !alpha) ok = false;
        if (OMNIC_JNAME_IS(name, len, "isdigit") && !digit) ok = false;
        if (OMNIC_JNAME_IS(name, len, "isnumeric") && !numeric) ok = false;
        if (OMNIC_JNAME_IS(name, len, "isalnum") && !alpha && !numeric) ok = false;
        if (OMNIC_JNAME_IS(name, len, "isspace") && !omnic__ju8_space(cp)) ok = false;
        if (OMNIC_JNAME_IS(name, len, "istitle")) {
            if (c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LT) {
                if (prev_cased) title_ok = false;
                prev_cased = any_cased = true;
            } else if (c == UTF8PROC_CATEGORY_LL) {
                if (!prev_cased) title_ok = false;
                prev_cased = any_cased = true;
            } else {
                prev_cased = false;
            }
        }
    }
    if (OMNIC_JNAME_IS(name, len, "istitle")) ok = title_ok && any_cased;
    *out = omnic__jv_bool(ok);
    return OMNIC_OK;
}

omnic_status omnic__jstr_method(omnic__jrender *r, omnic__jv self, const char *name, size_t len,
                                omnic__jargs *a, omnic__jv *out)
{
    const omnic__jstr *s = OMNIC_JSTR(self);
    if (OMNIC_JNAME_IS(name, len, "upper") || OMNIC_JNAME_IS(name, len, "lower") ||
        OMNIC_JNAME_IS(name, len, "title") || OMNIC_JNAME_IS(name, len, "capitalize") ||
        OMNIC_JNAME_IS(name, len, "swapcase")) {
        OMNIC_JNO_ARGS("str method");
        int mode = name[0] == 'u'   ? OMNIC_JCASE_UPPER
                   : name[0] == 'l' ? OMNIC_JCASE_LOWER
                   : name[0] == 't' ? OMNIC_JCASE_TITLE
                   : name[0] == 'c' ? OMNIC_JCASE_CAPITALIZE
                                    : OMNIC_JCASE_SWAP;
        return omnic__jstr_case(r, s, mode, out);
    }
    if (OMNIC_JNAME_IS(name, len, "strip") || OMNIC_JNAME_IS(name, len, "lstrip") ||
        OMNIC_JNAME_IS(name, len, "rstrip")) {
        OMNIC_JBIND("strip", "chars");
        const omnic__jstr *chars = NULL;
        if (omnic__jarg_given(arg[0]) && arg[0]->kind != OMNIC_JV_NONE)
            OMNIC_TRY(omnic__jarg_str(r, arg[0], "strip's chars", &chars));
        return omnic__jstr_strip(r, self, chars, name[0] == 'l' ? 1 : name[0] == 'r' ? 2 : 3, out);
    }
    if (OMNIC_JNAME_IS(name, len, "startswith") || OMNIC_JNAME_IS(name, len, "endswith")) {
        OMNIC_JBIND(name[0] == 's' ? "startswith" : "endswith", "prefix", "start", "end");
        if (!arg[0]) return omnic__jfail(r, OMNIC_E_INVALID, "%.*s needs an argument", (int)len, name);
        bool res;
        OMNIC_TRY(affix(r, s, arg[0], arg[1], arg[2], name[0] == 'e', &res));
        *out = omnic__jv_bool(res);
        return OMNIC_OK;
    }
    if (OMNIC_JNAME_IS(name, len, "split") || OMNIC_JNAME_IS(name, len, "rsplit")) {
        OMNIC_JBIND("split", "sep", "maxsplit");
        const omnic__jstr *sep = NULL;
        int64_t maxsplit = 0;
        if (omnic__jarg_given(arg[0]) && arg[0]->kind != OMNIC_JV_NONE)
            OMNIC_TRY(omnic__jarg_str(r, arg[0], "split's sep", &sep));
        OMNIC_TRY(omnic__jarg_int(r, arg[1], -1, "split's maxsplit", &maxsplit));
        return split(r, s, sep, maxsplit, name[0] == 'r', out);
    }
    if (OMNIC_JNAME_IS(name, len, "splitlines")) {
        OMNIC_JBIND("splitlines", "keepends");
        return omnic__jstr_splitlines(r, s, omnic__jarg_bool(arg[0], false), out);
    }
    if (OMNIC_JNAME_IS(name, len, "replace")) {
        OMNIC_JBIND("replace", "old", "new", "count");
        const omnic__jstr *o = NULL, *n = NULL;
        int64_t count = 0;
        OMNIC_TRY(omnic__jarg_str(r, arg[0], "replace's old", &o));
        OMNIC_TRY(omnic__jarg_str(r, arg[1], "replace's new", &n));
        OMNIC_TRY(omnic__jarg_int(r, arg[2], -1, "replace's count", &count));
        return omnic__jstr_replace(r, self, o, n, count, out);
    }
    if (OMNIC_JNAME_IS(name, len, "find")) return find_impl(r, s, a, "find", 0, out);
    if (OMNIC_JNAME_IS(name, len, "index")) return find_impl(r, s, a, "index", 0, out);
    if (OMNIC_JNAME_IS(name, len, "rfind")) return find_impl(r, s, a, "rfind", 1, out);
    if (OMNIC_JNAME_IS(name, len, "rindex")) return find_impl(r, s, a, "rindex", 1, out);
    if (OMNIC_JNAME_IS(name, len, "count")) return find_impl(r, s, a, "count", 2, out);
    if (OMNIC_JNAME_IS(name, len, "format")) return str_dot_format(r, s, a, out);
    if (OMNIC_JNAME_IS(name, len, "join")) {
        OMNIC_JBIND("join", "iterable");
        if (!arg[0]) return omnic__jfail(r, OMNIC_E_INVALID, "join() takes exactly one argument");
        omnic__jv items;
        OMNIC_TRY(omnic__jiter(r, *arg[0], &items));
        const omnic__jlist *l = OMNIC_JLIST(items);
        omnic__jbuf b = {0};
        omnic_status rc = omnic__jstep(r, l->n);
        for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
            if (l->v[i].kind != OMNIC_JV_STR) {
                rc = omnic__jfail(r, OMNIC_E_INVALID, "sequence item %zu: expected str instance, %s found", i,
                                  omnic__jv_type(l->v[i]));
                break;
            }
            if (i) rc = omnic__jbuf_put(r, &b, s->p, s->len);
            if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, &b, OMNIC_JSTR(l->v[i])->p, OMNIC_JSTR(l->v[i])->len);
        }
        omnic__jv_unref(r, items);
        if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
        omnic__jbuf_free(r, &b);
        return rc;
    }
    if (OMNIC_JNAME_IS(name, len, "center") || OMNIC_JNAME_IS(name, len, "ljust") ||
        OMNIC_JNAME_IS(name, len, "rjust") || OMNIC_JNAME_IS(name, len, "zfill")) {
        OMNIC_JBIND("str method", "width", "fillchar");
        int64_t w = 0;
        OMNIC_TRY(omnic__jarg_int(r, arg[0], 0, "width", &w));
        if (w > (int64_t)r->lim.max_output) w = (int64_t)r->lim.max_output + 1;
        const omnic__jstr *fill = NULL;
        if (omnic__jarg_given(arg[1])) OMNIC_TRY(omnic__jarg_str(r, arg[1], "fillchar", &fill));
        if (name[0] == 'c') return omnic__jstr_center(r, self, w, fill, out);
        if (w <= (int64_t)s->ncp) {
            *out = omnic__jv_ref(self);
            return OMNIC_OK;
        }
        size_t pad = (size_t)w - s->ncp;
        omnic__jbuf b = {0};
        omnic_status rc = OMNIC_OK;
        size_t lead = 0;
        if (name[0] == 'z' && s->len && (s->p[0] == '+' || s->p[0] == '-')) {
            rc = omnic__jbuf_putc(r, &b, s->p[0]);
            lead = 1;
        }
        if (name[0] == 'l') rc = omnic__jbuf_put(r, &b, s->p, s->len);
        for (size_t i = 0; i < pad && rc == OMNIC_OK; i++)
            rc = name[0] == 'z' ? omnic__jbuf_putc(r, &b, '0')
                                : omnic__jbuf_put(r, &b, fill ? fill->p : " ", fill ? fill->len : 1);
        if (rc == OMNIC_OK && name[0] != 'l') rc = omnic__jbuf_put(r, &b, s->p + lead, s->len - lead);
        if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
        omnic__jbuf_free(r, &b);
        return rc;
    }
    if (OMNIC_JNAME_IS(name, len, "removeprefix") || OMNIC_JNAME_IS(name, len, "removesuffix")) {
        OMNIC_JBIND("str method", "affix");
        const omnic__jstr *x = NULL;
        OMNIC_TRY(omnic__jarg_str(r, arg[0], "the affix", &x));
        bool pre = name[6] == 'p';
        if (x->len <= s->len && !memcmp(pre ? s->p : s->p + s->len - x->len, x->p, x->len) && x->len)
            return omnic__jstr_new(r, pre ? s->p + x->len : s->p, s->len - x->len, out);
        *out = omnic__jv_ref(self);
        return OMNIC_OK;
    }
    OMNIC_JNO_ARGS("str method");
    return str_pred(r, s, name, len, out);
}

bool omnic__jstr_method_exists(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof STR_METHODS / sizeof STR_METHODS[0]; i++)
        if (strlen(STR_METHODS[i]) == len && !memcmp(STR_METHODS[i], name, len)) return true;
    return false;
}
