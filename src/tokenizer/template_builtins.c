/* Chat-template builtins with Python jinja2 semantics: the filters, tests, string / dict / list
 * methods and global functions chat templates use (plus transformers' tojson, raise_exception
 * and strftime_now). Mutating methods (append, update, ...) are refused as transformers'
 * immutable sandbox refuses them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#include "tokenizer/template_internal.h"

#define NAME_IS(name, len, lit) ((len) == sizeof(lit) - 1 && !memcmp((name), (lit), (len)))

/* ---- argument binding --------------------------------------------------------------------- */

/* Binds a's positional and keyword arguments to the parameter names (out[i] NULL when absent). */
static omnic_status bind(omnic__jrender *r, const char *what, omnic__jargs *a, const char *const *names, size_t n,
                         const omnic__jv **out)
{
    for (size_t i = 0; i < n; i++) out[i] = NULL;
    if (a->npos > n)
        return omnic__jfail(r, OMNIC_E_INVALID, "%s takes at most %zu argument(s) (%zu given)", what, n, a->npos);
    for (size_t i = 0; i < a->npos; i++) out[i] = &a->pos[i];
    for (size_t k = 0; k < a->nkw; k++) {
        size_t j;
        for (j = 0; j < n; j++)
            if (strlen(names[j]) == a->klen[k] && !memcmp(names[j], a->kname[k], a->klen[k])) break;
        if (j == n)
            return omnic__jfail(r, OMNIC_E_INVALID, "%s got an unexpected keyword argument '%.*s'", what,
                                (int)a->klen[k], a->kname[k]);
        if (out[j]) return omnic__jfail(r, OMNIC_E_INVALID, "%s got multiple values for argument '%s'", what, names[j]);
        out[j] = &a->kw[k];
    }
    return OMNIC_OK;
}

#define BIND(what, ...)                                                                                     \
    static const char *const names_[] = {__VA_ARGS__};                                                     \
    const omnic__jv *arg[sizeof names_ / sizeof names_[0]];                                                 \
    OMNIC_TRY(bind(r, what, a, names_, sizeof names_ / sizeof names_[0], arg))

#define NO_ARGS(what)                                                                                       \
    do {                                                                                                    \
        if (a->npos || a->nkw) return omnic__jfail(r, OMNIC_E_INVALID, "%s takes no arguments", what);      \
    } while (0)

static bool given(const omnic__jv *v)
{
    return v && v->kind != OMNIC_JV_UNDEF;
}

static bool opt_bool(const omnic__jv *v, bool dflt)
{
    return given(v) ? omnic__jv_truthy(*v) : dflt;
}

static omnic_status opt_int(omnic__jrender *r, const omnic__jv *v, int64_t dflt, const char *what, int64_t *out)
{
    if (!given(v) || v->kind == OMNIC_JV_NONE) {
        *out = dflt;
        return OMNIC_OK;
    }
    if (v->kind == OMNIC_JV_INT) *out = v->u.i;
    else if (v->kind == OMNIC_JV_BOOL) *out = v->u.b;
    else return omnic__jfail(r, OMNIC_E_INVALID, "%s must be an integer, not %s", what, omnic__jv_type(*v));
    return OMNIC_OK;
}

static omnic_status need_str(omnic__jrender *r, const omnic__jv *v, const char *what, const omnic__jstr **out)
{
    if (!v || v->kind != OMNIC_JV_STR)
        return omnic__jfail(r, OMNIC_E_INVALID, "%s must be a string, not %s", what, v ? omnic__jv_type(*v) : "missing");
    *out = OMNIC_JSTR(*v);
    return OMNIC_OK;
}

/* ---- string helpers ------------------------------------------------------------------------ */

enum { CASE_UPPER, CASE_LOWER, CASE_TITLE, CASE_CAPITALIZE, CASE_SWAP, CASE_JTITLE };

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

static omnic_status map_case(omnic__jrender *r, const omnic__jstr *s, int mode, omnic__jv *out)
{
    omnic__jbuf b = {0};
    omnic_status rc = OMNIC_OK;
    bool prev_cased = false, first = true;
    for (size_t i = 0; i < s->len && rc == OMNIC_OK;) {
        uint32_t cp = omnic__ju8_next(s->p, s->len, &i), m = cp;
        switch (mode) {
        case CASE_UPPER:
            if (cp == 0xDF) {
                rc = omnic__jbuf_put(r, &b, "SS", 2);
                continue;
            }
            m = up(cp);
            break;
        case CASE_LOWER: m = lo(cp); break;
        case CASE_TITLE:
            m = prev_cased ? lo(cp) : ti(cp);
            prev_cased = cased(cp);
            break;
        case CASE_CAPITALIZE: m = first ? ti(cp) : lo(cp); break;
        case CASE_SWAP: m = cased(cp) ? (up(cp) == cp ? lo(cp) : up(cp)) : cp; break;
        case CASE_JTITLE:
            if (jtitle_sep(cp)) {
                prev_cased = false;
            } else {
                m = prev_cased ? lo(cp) : up(cp);
                prev_cased = true;
            }
            break;
        default: break;
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
static omnic_status strip(omnic__jrender *r, omnic__jv s, const omnic__jstr *chars, int which, omnic__jv *out)
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
            while (st > b && ((unsigned char)str->p[st] & 0xC0u) == 0x80u) st--;
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

static omnic_status replace_str(omnic__jrender *r, omnic__jv s, const omnic__jstr *old, const omnic__jstr *rep,
                                int64_t count, omnic__jv *out)
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
    OMNIC_TRY(omnic__jstr_new(r, s, n, &piece));
    OMNIC_TRY(omnic__jstep(r, 1));
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
    if ((rc = omnic__jmem_alloc(r, cap * 2 * sizeof(size_t), &p)) != OMNIC_OK) goto fail;
    cuts = p;
#define ADD_CUT(B, E)                                                                                       \
    do {                                                                                                    \
        if (n == cap) {                                                                                     \
            if ((rc = omnic__jmem_realloc(r, cuts, cap * 4 * sizeof(size_t), &p)) != OMNIC_OK) goto fail;   \
            cuts = p;                                                                                       \
            cap *= 2;                                                                                       \
        }                                                                                                   \
        cuts[2 * n] = (B);                                                                                  \
        cuts[2 * n + 1] = (E);                                                                              \
        n++;                                                                                                \
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
                    while (st > 0 && ((unsigned char)s->p[st] & 0xC0u) == 0x80u) st--;
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
                    while (st > 0 && ((unsigned char)s->p[st] & 0xC0u) == 0x80u) st--;
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
    for (size_t k = 0; k < n && rc == OMNIC_OK; k++) rc = push_piece(r, *out, s->p + cuts[2 * k], cuts[2 * k + 1] - cuts[2 * k]);
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

static omnic_status splitlines(omnic__jrender *r, const omnic__jstr *s, bool keepends, omnic__jv *out)
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

/* str(x) as a string value (undefined -> ""). */
static omnic_status soft_str(omnic__jrender *r, omnic__jv x, omnic__jv *out)
{
    return omnic__jv_to_str(r, x, out);
}

/* ---- attribute getters, sorting ------------------------------------------------------------------- */

/* jinja2's make_attrgetter: "a.b.0" through getitem; a default replaces an undefined result. */
static omnic_status attr_get(omnic__jrender *r, omnic__jv item, const omnic__jstr *attr, const omnic__jv *dflt,
                             omnic__jv *out)
{
    omnic__jv cur = omnic__jv_ref(item);
    size_t b = 0;
    for (;;) {
        size_t e = b;
        while (e < attr->len && attr->p[e] != '.') e++;
        omnic__jv key = omnic__jv_none(), next = omnic__jv_none();
        bool digits = e > b;
        int64_t iv = 0;
        for (size_t k = b; k < e; k++) {
            if (attr->p[k] < '0' || attr->p[k] > '9' || iv > INT64_MAX / 10 - 10) digits = false;
            else iv = iv * 10 + (attr->p[k] - '0');
        }
        omnic_status rc = digits ? (key = omnic__jv_int(iv), OMNIC_OK) : omnic__jstr_new(r, attr->p + b, e - b, &key);
        if (rc == OMNIC_OK) rc = omnic__jgetitem(r, cur, key, NULL, &next);
        omnic__jv_unref(r, key);
        omnic__jv_unref(r, cur);
        OMNIC_TRY(rc);
        cur = next;
        if (e >= attr->len) break;
        b = e + 1;
    }
    if (cur.kind == OMNIC_JV_UNDEF && given(dflt)) cur = omnic__jv_ref(*dflt);
    *out = cur;
    return OMNIC_OK;
}

/* Stable merge sort of idx[0..n) by keys[idx[i]]. */
static omnic_status sort_idx(omnic__jrender *r, const omnic__jv *keys, size_t n, size_t *idx, bool ignore_case,
                             bool reverse)
{
    if (n < 2) return OMNIC_OK;
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, n * sizeof(size_t), &p));
    size_t *tmp = p;
    omnic_status rc = OMNIC_OK;
    for (size_t w = 1; w < n && rc == OMNIC_OK; w *= 2) {
        if ((rc = omnic__jstep(r, n)) != OMNIC_OK) break;
        for (size_t lo_ = 0; lo_ < n && rc == OMNIC_OK; lo_ += 2 * w) {
            size_t mid = lo_ + w < n ? lo_ + w : n, hi = lo_ + 2 * w < n ? lo_ + 2 * w : n;
            size_t i = lo_, j = mid, k = lo_;
            while (i < mid && j < hi) {
                int c;
                if (reverse) rc = omnic__jv_cmp(r, keys[idx[j]], keys[idx[i]], ignore_case, 0, &c);
                else rc = omnic__jv_cmp(r, keys[idx[i]], keys[idx[j]], ignore_case, 0, &c);
                if (rc != OMNIC_OK) break;
                tmp[k++] = c <= 0 ? idx[i++] : idx[j++];
            }
            if (rc != OMNIC_OK) break;
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        if (rc == OMNIC_OK) memcpy(idx, tmp, n * sizeof(size_t));
    }
    omnic__jmem_free(r, tmp);
    return rc;
}

/* Keys for sorting / unique / min / max: the item or its attribute. */
static omnic_status keys_of(omnic__jrender *r, const omnic__jlist *l, const omnic__jstr *attr, omnic__jv **out)
{
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, (l->n ? l->n : 1) * sizeof(omnic__jv), &p));
    omnic__jv *k = p;
    for (size_t i = 0; i < l->n; i++) {
        omnic_status rc = attr ? attr_get(r, l->v[i], attr, NULL, &k[i]) : (k[i] = omnic__jv_ref(l->v[i]), OMNIC_OK);
        if (rc != OMNIC_OK) {
            for (size_t j = 0; j < i; j++) omnic__jv_unref(r, k[j]);
            omnic__jmem_free(r, k);
            return rc;
        }
    }
    *out = k;
    return OMNIC_OK;
}

static void keys_free(omnic__jrender *r, omnic__jv *k, size_t n)
{
    for (size_t i = 0; i < n; i++) omnic__jv_unref(r, k[i]);
    omnic__jmem_free(r, k);
}

static omnic_status list_from_idx(omnic__jrender *r, const omnic__jlist *l, const size_t *idx, size_t n,
                                  omnic__jv *out)
{
    OMNIC_TRY(omnic__jlist_new(r, n, false, out));
    for (size_t i = 0; i < n; i++) OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(l->v[idx[i]]);
    OMNIC_JLIST(*out)->n = n;
    return OMNIC_OK;
}

static omnic_status iota(omnic__jrender *r, size_t n, size_t **out)
{
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, (n ? n : 1) * sizeof(size_t), &p));
    *out = p;
    for (size_t i = 0; i < n; i++) (*out)[i] = i;
    return OMNIC_OK;
}

/* ---- number parsing (Python int() / float() of strings) ------------------------------------------ */

static bool py_parse_int(const omnic__jstr *s, int64_t base, int64_t *out)
{
    size_t b = 0, e = s->len;
    while (b < e && omnic__ju8_space((unsigned char)s->p[b])) b++;
    while (e > b && omnic__ju8_space((unsigned char)s->p[e - 1])) e--;
    bool neg = false;
    if (b < e && (s->p[b] == '+' || s->p[b] == '-')) neg = s->p[b++] == '-';
    if (e - b > 2 && s->p[b] == '0') {
        char c = (char)(s->p[b + 1] | 0x20);
        if ((c == 'x' && (base == 16 || base == 0)) || (c == 'o' && (base == 8 || base == 0)) ||
            (c == 'b' && (base == 2 || base == 0))) {
            base = c == 'x' ? 16 : c == 'o' ? 8 : 2;
            b += 2;
            if (b < e && s->p[b] == '_') b++;
        }
    }
    if (base == 0) base = 10;
    if (base < 2 || base > 36 || b >= e) return false;
    uint64_t v = 0;
    for (size_t i = b; i < e; i++) {
        char c = s->p[i];
        if (c == '_' && i > b && i + 1 < e && s->p[i - 1] != '_') continue;
        int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10 : 99;
        if (d >= base) return false;
        if (v > (UINT64_C(0x8000000000000000) - (uint64_t)d) / (uint64_t)base) return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (!neg && v > INT64_MAX) return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static bool py_parse_float(const omnic__jstr *s, double *out)
{
    char buf[128];
    size_t b = 0, e = s->len, o = 0;
    while (b < e && omnic__ju8_space((unsigned char)s->p[b])) b++;
    while (e > b && omnic__ju8_space((unsigned char)s->p[e - 1])) e--;
    if (b == e || e - b >= sizeof buf) return false;
    for (size_t i = b; i < e; i++) {
        char c = s->p[i];
        if (c == '_') {
            if (i == b || i + 1 == e || !(s->p[i - 1] >= '0' && s->p[i - 1] <= '9') ||
                !(s->p[i + 1] >= '0' && s->p[i + 1] <= '9'))
                return false;
            continue;
        }
        if (c == 'x' || c == 'X' || c == '(' || c == 'p' || c == 'P') return false;
        buf[o++] = c;
    }
    buf[o] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (end != buf + o) return false;
    *out = d;
    return true;
}

/* ---- filters ----------------------------------------------------------------------------------- */

typedef omnic_status (*filter_fn)(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out);

static omnic_status f_abs(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("abs");
    if (x.kind == OMNIC_JV_FLOAT) *out = omnic__jv_float(fabs(x.u.f));
    else if (x.kind == OMNIC_JV_BOOL) *out = omnic__jv_int(x.u.b);
    else if (x.kind == OMNIC_JV_INT && x.u.i != INT64_MIN) *out = omnic__jv_int(x.u.i < 0 ? -x.u.i : x.u.i);
    else return omnic__jfail(r, OMNIC_E_INVALID, "bad operand type for abs(): '%s'", omnic__jv_type(x));
    return OMNIC_OK;
}

static omnic_status f_attr(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("attr", "name");
    const omnic__jstr *name = NULL;
    OMNIC_TRY(need_str(r, arg[0], "attr's name", &name));
    if (x.kind == OMNIC_JV_DICT) { /* attributes only: no fallback to the dict's items */
        if (omnic__jmethod_exists(x.kind, name->p, name->len)) return omnic__jgetattr(r, x, name->p, name->len, NULL, out);
        *out = omnic__jv_undef(NULL, OMNIC_JV_DICT);
        return OMNIC_OK;
    }
    return omnic__jgetattr(r, x, name->p, name->len, NULL, out);
}

static omnic_status case_filter(omnic__jrender *r, omnic__jv x, omnic__jargs *a, int mode, const char *what,
                                omnic__jv *out)
{
    NO_ARGS(what);
    omnic__jv s;
    OMNIC_TRY(soft_str(r, x, &s));
    omnic_status rc = map_case(r, OMNIC_JSTR(s), mode, out);
    omnic__jv_unref(r, s);
    return rc;
}

static omnic_status f_upper(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return case_filter(r, x, a, CASE_UPPER, "upper", out);
}
static omnic_status f_lower(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return case_filter(r, x, a, CASE_LOWER, "lower", out);
}
static omnic_status f_capitalize(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return case_filter(r, x, a, CASE_CAPITALIZE, "capitalize", out);
}
static omnic_status f_title(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return case_filter(r, x, a, CASE_JTITLE, "title", out);
}

static omnic_status center(omnic__jrender *r, omnic__jv s, int64_t width, const omnic__jstr *fill, omnic__jv *out)
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
    for (size_t i = 0; i < left && rc == OMNIC_OK; i++) rc = omnic__jbuf_put(r, &b, f, fl);
    if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, &b, str->p, str->len);
    for (size_t i = left; i < marg && rc == OMNIC_OK; i++) rc = omnic__jbuf_put(r, &b, f, fl);
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

static omnic_status f_center(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("center", "width");
    int64_t w = 0;
    OMNIC_TRY(opt_int(r, arg[0], 80, "center's width", &w));
    if (w > (int64_t)r->lim.max_output) w = (int64_t)r->lim.max_output + 1;
    omnic__jv s;
    OMNIC_TRY(soft_str(r, x, &s));
    omnic_status rc = center(r, s, w, NULL, out);
    omnic__jv_unref(r, s);
    return rc;
}

static omnic_status f_default(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("default", "default_value", "boolean");
    bool boolean = opt_bool(arg[1], false);
    if (x.kind == OMNIC_JV_UNDEF || (boolean && !omnic__jv_truthy(x))) {
        if (arg[0]) *out = omnic__jv_ref(*arg[0]);
        else OMNIC_TRY(omnic__jstr_new(r, "", 0, out));
        return OMNIC_OK;
    }
    *out = omnic__jv_ref(x);
    return OMNIC_OK;
}

static omnic_status items_list(omnic__jrender *r, const omnic__jdict *d, omnic__jv *out)
{
    OMNIC_TRY(omnic__jstep(r, d->n));
    OMNIC_TRY(omnic__jlist_new(r, d->n, false, out));
    for (size_t i = 0; i < d->n; i++) {
        omnic__jv t;
        omnic_status rc = omnic__jlist_new(r, 2, true, &t);
        if (rc != OMNIC_OK) {
            omnic__jv_unref(r, *out);
            return rc;
        }
        OMNIC_JLIST(t)->v[0] = omnic__jv_ref(omnic__jv_obj(&d->k[i]->h));
        OMNIC_JLIST(t)->v[1] = omnic__jv_ref(d->v[i]);
        OMNIC_JLIST(t)->n = 2;
        OMNIC_JLIST(*out)->v[OMNIC_JLIST(*out)->n++] = t;
    }
    return OMNIC_OK;
}

static omnic_status f_items(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("items");
    if (x.kind == OMNIC_JV_UNDEF) return omnic__jlist_new(r, 0, false, out);
    if (x.kind != OMNIC_JV_DICT) return omnic__jfail(r, OMNIC_E_INVALID, "can only get item pairs from a mapping");
    return items_list(r, OMNIC_JDICT(x), out);
}

static omnic_status f_dictsort(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("dictsort", "case_sensitive", "by", "reverse");
    if (x.kind != OMNIC_JV_DICT)
        return omnic__jfail(r, OMNIC_E_INVALID, "dictsort needs a mapping, not %s", omnic__jv_type(x));
    int by = 0;
    if (given(arg[1])) {
        const omnic__jstr *s = NULL;
        OMNIC_TRY(need_str(r, arg[1], "dictsort's by", &s));
        if (NAME_IS(s->p, s->len, "value")) by = 1;
        else if (!NAME_IS(s->p, s->len, "key"))
            return omnic__jfail(r, OMNIC_E_INVALID, "You can only sort by either \"key\" or \"value\"");
    }
    omnic__jv items;
    OMNIC_TRY(items_list(r, OMNIC_JDICT(x), &items));
    const omnic__jlist *l = OMNIC_JLIST(items);
    omnic__jv *keys = NULL;
    size_t *idx = NULL;
    void *p = NULL;
    omnic_status rc = omnic__jmem_alloc(r, (l->n ? l->n : 1) * sizeof(omnic__jv), &p);
    if (rc == OMNIC_OK) {
        keys = p;
        for (size_t i = 0; i < l->n; i++) keys[i] = OMNIC_JLIST(l->v[i])->v[by];
        rc = iota(r, l->n, &idx);
    }
    if (rc == OMNIC_OK) rc = sort_idx(r, keys, l->n, idx, !opt_bool(arg[0], false), opt_bool(arg[2], false));
    if (rc == OMNIC_OK) rc = list_from_idx(r, l, idx, l->n, out);
    omnic__jmem_free(r, keys);
    omnic__jmem_free(r, idx);
    omnic__jv_unref(r, items);
    return rc;
}

static omnic_status f_escape(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("escape");
    omnic__jv s;
    OMNIC_TRY(soft_str(r, x, &s));
    const omnic__jstr *str = OMNIC_JSTR(s);
    omnic__jbuf b = {0};
    omnic_status rc = OMNIC_OK;
    for (size_t i = 0; i < str->len && rc == OMNIC_OK; i++) {
        switch (str->p[i]) {
        case '&': rc = omnic__jbuf_put(r, &b, "&amp;", 5); break;
        case '<': rc = omnic__jbuf_put(r, &b, "&lt;", 4); break;
        case '>': rc = omnic__jbuf_put(r, &b, "&gt;", 4); break;
        case '"': rc = omnic__jbuf_put(r, &b, "&#34;", 5); break;
        case '\'': rc = omnic__jbuf_put(r, &b, "&#39;", 5); break;
        default: rc = omnic__jbuf_putc(r, &b, str->p[i]); break;
        }
    }
    omnic__jv_unref(r, s);
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

static omnic_status first_last(omnic__jrender *r, omnic__jv x, bool last, omnic__jv *out)
{
    if (x.kind == OMNIC_JV_LIST && OMNIC_JLIST(x)->n) {
        *out = omnic__jv_ref(OMNIC_JLIST(x)->v[last ? OMNIC_JLIST(x)->n - 1 : 0]);
        return OMNIC_OK;
    }
    if (x.kind == OMNIC_JV_DICT && OMNIC_JDICT(x)->n) {
        *out = omnic__jv_ref(omnic__jv_obj(&OMNIC_JDICT(x)->k[last ? OMNIC_JDICT(x)->n - 1 : 0]->h));
        return OMNIC_OK;
    }
    if (x.kind == OMNIC_JV_STR && OMNIC_JSTR(x)->len) {
        const omnic__jstr *s = OMNIC_JSTR(x);
        size_t b = 0, e;
        if (last) {
            b = s->len - 1;
            while (b > 0 && ((unsigned char)s->p[b] & 0xC0u) == 0x80u) b--;
        }
        e = b;
        (void)omnic__ju8_next(s->p, s->len, &e);
        return omnic__jstr_new(r, s->p + b, e - b, out);
    }
    if (x.kind == OMNIC_JV_LIST || x.kind == OMNIC_JV_DICT || x.kind == OMNIC_JV_STR || x.kind == OMNIC_JV_UNDEF) {
        *out = omnic__jv_undef(NULL, OMNIC_JV_KIND_COUNT);
        return OMNIC_OK;
    }
    return omnic__jfail(r, OMNIC_E_INVALID, "'%s' object is not iterable", omnic__jv_type(x));
}

static omnic_status f_first(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("first");
    return first_last(r, x, false, out);
}
static omnic_status f_last(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("last");
    return first_last(r, x, true, out);
}

static omnic_status f_float(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("float", "default");
    double d;
    if (x.kind == OMNIC_JV_FLOAT || x.kind == OMNIC_JV_INT || x.kind == OMNIC_JV_BOOL) {
        *out = omnic__jv_float(x.kind == OMNIC_JV_FLOAT ? x.u.f : x.kind == OMNIC_JV_INT ? (double)x.u.i : x.u.b);
    } else if (x.kind == OMNIC_JV_STR && py_parse_float(OMNIC_JSTR(x), &d)) {
        *out = omnic__jv_float(d);
    } else if (x.kind == OMNIC_JV_UNDEF) {
        return omnic__jundef_fail(r, x);
    } else {
        *out = arg[0] ? omnic__jv_ref(*arg[0]) : omnic__jv_float(0.0);
    }
    return OMNIC_OK;
}

static omnic_status f_int(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("int", "default", "base");
    int64_t base = 0, v = 0;
    double d;
    OMNIC_TRY(opt_int(r, arg[1], 10, "int's base", &base));
    if (x.kind == OMNIC_JV_INT || x.kind == OMNIC_JV_BOOL) {
        *out = omnic__jv_int(x.kind == OMNIC_JV_BOOL ? x.u.b : x.u.i);
        return OMNIC_OK;
    }
    if (x.kind == OMNIC_JV_FLOAT && isfinite(x.u.f) && fabs(x.u.f) < 9.2e18) {
        *out = omnic__jv_int((int64_t)x.u.f);
        return OMNIC_OK;
    }
    if (x.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, x);
    if (x.kind == OMNIC_JV_STR) {
        if (py_parse_int(OMNIC_JSTR(x), base, &v)) {
            *out = omnic__jv_int(v);
            return OMNIC_OK;
        }
        if (py_parse_float(OMNIC_JSTR(x), &d) && isfinite(d) && fabs(d) < 9.2e18) {
            *out = omnic__jv_int((int64_t)d);
            return OMNIC_OK;
        }
    }
    *out = arg[0] ? omnic__jv_ref(*arg[0]) : omnic__jv_int(0);
    return OMNIC_OK;
}

static omnic_status f_format(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    if (a->npos && a->nkw)
        return omnic__jfail(r, OMNIC_E_INVALID, "format can't handle positional and keyword arguments at the same time");
    if (a->nkw) return omnic__jfail(r, OMNIC_E_UNSUPPORTED, "format with keyword arguments (%%(name)s) is not supported");
    omnic__jv s, t;
    OMNIC_TRY(soft_str(r, x, &s));
    omnic_status rc = omnic__jlist_new(r, a->npos, true, &t);
    if (rc == OMNIC_OK) {
        for (size_t i = 0; i < a->npos; i++) OMNIC_JLIST(t)->v[i] = omnic__jv_ref(a->pos[i]);
        OMNIC_JLIST(t)->n = a->npos;
        rc = omnic__jbinop(r, OMNIC_JOP_MOD, s, t, out);
        omnic__jv_unref(r, t);
    }
    omnic__jv_unref(r, s);
    return rc;
}

static omnic_status f_batch(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("batch", "linecount", "fill_with");
    int64_t n = 0;
    OMNIC_TRY(opt_int(r, arg[0], 0, "batch's linecount", &n));
    if (n <= 0) return omnic__jfail(r, OMNIC_E_INVALID, "batch's linecount must be positive");
    omnic__jv items, row = omnic__jv_none();
    OMNIC_TRY(omnic__jiter(r, x, &items));
    const omnic__jlist *l = OMNIC_JLIST(items);
    omnic_status rc = omnic__jstep(r, l->n);
    if (rc == OMNIC_OK) rc = omnic__jlist_new(r, 0, false, out);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
        if (row.kind == OMNIC_JV_NONE && (rc = omnic__jlist_new(r, (size_t)n, false, &row)) != OMNIC_OK) break;
        rc = omnic__jlist_push(r, OMNIC_JLIST(row), omnic__jv_ref(l->v[i]));
        if (rc == OMNIC_OK && OMNIC_JLIST(row)->n == (size_t)n) {
            rc = omnic__jlist_push(r, OMNIC_JLIST(*out), row);
            row = omnic__jv_none();
        }
    }
    if (rc == OMNIC_OK && row.kind != OMNIC_JV_NONE) {
        while (given(arg[1]) && OMNIC_JLIST(row)->n < (size_t)n && rc == OMNIC_OK)
            rc = omnic__jlist_push(r, OMNIC_JLIST(row), omnic__jv_ref(*arg[1]));
        if (rc == OMNIC_OK) rc = omnic__jlist_push(r, OMNIC_JLIST(*out), row);
        else omnic__jv_unref(r, row);
        row = omnic__jv_none();
    }
    omnic__jv_unref(r, row);
    if (rc != OMNIC_OK && out->kind == OMNIC_JV_LIST) omnic__jv_unref(r, *out);
    omnic__jv_unref(r, items);
    return rc;
}

/* groupby(attribute, default=None, case_sensitive=False): (grouper, list) tuples sorted by the
 * key; tuples answer .grouper and .list (OMNIC_JLIST_GROUP). */
static omnic_status f_groupby(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("groupby", "attribute", "default", "case_sensitive");
    omnic__jv attr_hold = omnic__jv_none();
    if (!given(arg[0])) return omnic__jfail(r, OMNIC_E_INVALID, "groupby needs an attribute");
    OMNIC_TRY(soft_str(r, *arg[0], &attr_hold));
    const omnic__jstr *attr = OMNIC_JSTR(attr_hold);
    bool ic = !opt_bool(arg[2], false);
    omnic__jv items, *keys = NULL;
    size_t *idx = NULL;
    omnic_status rc = omnic__jiter(r, x, &items);
    if (rc != OMNIC_OK) {
        omnic__jv_unref(r, attr_hold);
        return rc;
    }
    const omnic__jlist *l = OMNIC_JLIST(items);
    void *p = NULL;
    if ((rc = omnic__jmem_alloc(r, (l->n ? l->n : 1) * sizeof(omnic__jv), &p)) == OMNIC_OK) {
        keys = p;
        size_t k = 0;
        for (; k < l->n && rc == OMNIC_OK; k++) rc = attr_get(r, l->v[k], attr, arg[1], &keys[k]);
        if (rc != OMNIC_OK) {
            for (size_t j = 0; j + 1 < k; j++) omnic__jv_unref(r, keys[j]);
            omnic__jmem_free(r, keys);
            keys = NULL;
        }
    }
    if (rc == OMNIC_OK) rc = iota(r, l->n, &idx);
    if (rc == OMNIC_OK) rc = sort_idx(r, keys, l->n, idx, ic, false);
    if (rc == OMNIC_OK) rc = omnic__jlist_new(r, 0, false, out);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK;) {
        size_t j = i + 1;
        while (j < l->n && rc == OMNIC_OK) {
            int c = 1;
            rc = omnic__jv_cmp(r, keys[idx[i]], keys[idx[j]], ic, 0, &c);
            if (c != 0) break;
            j++;
        }
        omnic__jv group, tup;
        if (rc == OMNIC_OK) rc = list_from_idx(r, l, idx + i, j - i, &group);
        if (rc == OMNIC_OK && (rc = omnic__jlist_new(r, 2, true, &tup)) != OMNIC_OK) omnic__jv_unref(r, group);
        if (rc == OMNIC_OK) {
            tup.u.o->flags |= OMNIC_JLIST_GROUP;
            OMNIC_JLIST(tup)->v[0] = omnic__jv_ref(keys[idx[i]]);
            OMNIC_JLIST(tup)->v[1] = group;
            OMNIC_JLIST(tup)->n = 2;
            rc = omnic__jlist_push(r, OMNIC_JLIST(*out), tup);
        }
        if (rc != OMNIC_OK) omnic__jv_unref(r, *out);
        i = j;
    }
    omnic__jmem_free(r, idx);
    if (keys) keys_free(r, keys, l->n);
    omnic__jv_unref(r, items);
    omnic__jv_unref(r, attr_hold);
    return rc;
}

static omnic_status f_indent(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("indent", "width", "first", "blank");
    const char *ind = "    ";
    size_t ind_len = 4;
    char spaces[256];
    if (given(arg[0]) && arg[0]->kind == OMNIC_JV_STR) {
        ind = OMNIC_JSTR(*arg[0])->p;
        ind_len = OMNIC_JSTR(*arg[0])->len;
    } else if (given(arg[0])) {
        int64_t w = 0;
        OMNIC_TRY(opt_int(r, arg[0], 4, "indent's width", &w));
        if (w < 0) w = 0;
        if (w > (int64_t)sizeof spaces) return omnic__jfail(r, OMNIC_E_TOO_LARGE, "indent width %lld over 256", (long long)w);
        memset(spaces, ' ', (size_t)w);
        ind = spaces;
        ind_len = (size_t)w;
    }
    bool first = opt_bool(arg[1], false), blank = opt_bool(arg[2], false);
    omnic__jv s, lines;
    OMNIC_TRY(soft_str(r, x, &s));
    /* jinja2: s += "\n"; then splitlines */
    omnic__jbuf b = {0};
    omnic_status rc = omnic__jbuf_put(r, &b, OMNIC_JSTR(s)->p, OMNIC_JSTR(s)->len);
    if (rc == OMNIC_OK) rc = omnic__jbuf_putc(r, &b, '\n');
    omnic__jv_unref(r, s);
    if (rc == OMNIC_OK) rc = omnic__jstr_from_buf(r, &b, &s);
    if (rc != OMNIC_OK) {
        omnic__jbuf_free(r, &b);
        return rc;
    }
    rc = splitlines(r, OMNIC_JSTR(s), false, &lines);
    omnic__jv_unref(r, s);
    OMNIC_TRY(rc);
    const omnic__jlist *l = OMNIC_JLIST(lines);
    omnic__jbuf o = {0};
    if (first) rc = omnic__jbuf_put(r, &o, ind, ind_len);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
        const omnic__jstr *line = OMNIC_JSTR(l->v[i]);
        if (i) rc = omnic__jbuf_putc(r, &o, '\n');
        if (rc == OMNIC_OK && i > 0 && (blank || line->len)) rc = omnic__jbuf_put(r, &o, ind, ind_len);
        if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, &o, line->p, line->len);
    }
    omnic__jv_unref(r, lines);
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &o, out);
    omnic__jbuf_free(r, &o);
    return rc;
}

static omnic_status f_join(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("join", "d", "attribute");
    const omnic__jstr *sep = NULL, *attr = NULL;
    omnic__jv sepv = omnic__jv_none();
    if (given(arg[1]) && arg[1]->kind != OMNIC_JV_NONE) OMNIC_TRY(need_str(r, arg[1], "join's attribute", &attr));
    if (given(arg[0])) { /* soft_str(d) */
        OMNIC_TRY(soft_str(r, *arg[0], &sepv));
        sep = OMNIC_JSTR(sepv);
    }
    omnic__jv items;
    omnic_status rc0 = omnic__jiter(r, x, &items);
    if (rc0 != OMNIC_OK) {
        omnic__jv_unref(r, sepv);
        return rc0;
    }
    const omnic__jlist *l = OMNIC_JLIST(items);
    omnic__jbuf b = {0};
    omnic_status rc = omnic__jstep(r, l->n);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
        if (i && sep) rc = omnic__jbuf_put(r, &b, sep->p, sep->len);
        if (rc != OMNIC_OK) break;
        if (attr) {
            omnic__jv v;
            if ((rc = attr_get(r, l->v[i], attr, NULL, &v)) == OMNIC_OK) {
                rc = omnic__jv_write_str(r, &b, v);
                omnic__jv_unref(r, v);
            }
        } else {
            rc = omnic__jv_write_str(r, &b, l->v[i]);
        }
    }
    omnic__jv_unref(r, items);
    omnic__jv_unref(r, sepv);
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

static omnic_status length_of(omnic__jrender *r, omnic__jv x, int64_t *n)
{
    switch (x.kind) {
    case OMNIC_JV_STR: *n = (int64_t)OMNIC_JSTR(x)->ncp; return OMNIC_OK;
    case OMNIC_JV_LIST: *n = (int64_t)OMNIC_JLIST(x)->n; return OMNIC_OK;
    case OMNIC_JV_DICT: *n = (int64_t)OMNIC_JDICT(x)->n; return OMNIC_OK;
    case OMNIC_JV_UNDEF: *n = 0; return OMNIC_OK;
    default: return omnic__jfail(r, OMNIC_E_INVALID, "object of type '%s' has no len()", omnic__jv_type(x));
    }
}

static omnic_status f_length(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("length");
    int64_t n = 0;
    OMNIC_TRY(length_of(r, x, &n));
    *out = omnic__jv_int(n);
    return OMNIC_OK;
}

static omnic_status f_list(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("list");
    omnic__jv it;
    OMNIC_TRY(omnic__jiter(r, x, &it));
    if (it.u.o == x.u.o && x.kind == OMNIC_JV_LIST) { /* a copy, like list(x) */
        omnic__jv_unref(r, it);
        const omnic__jlist *l = OMNIC_JLIST(x);
        OMNIC_TRY(omnic__jlist_new(r, l->n, false, out));
        for (size_t i = 0; i < l->n; i++) OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(l->v[i]);
        OMNIC_JLIST(*out)->n = l->n;
        return OMNIC_OK;
    }
    *out = it;
    return OMNIC_OK;
}

static omnic_status sub_args(omnic__jrender *r, const omnic__jargs *a, size_t skip, bool with_kw, omnic__jargs *out)
{
    *out = (omnic__jargs){0};
    for (size_t i = skip; i < a->npos; i++) OMNIC_TRY(omnic__jargs_push(r, out, omnic__jv_ref(a->pos[i])));
    if (with_kw)
        for (size_t i = 0; i < a->nkw; i++)
            OMNIC_TRY(omnic__jargs_push_kw(r, out, a->kname[i], a->klen[i], omnic__jv_ref(a->kw[i])));
    return OMNIC_OK;
}

static omnic_status f_map(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    omnic__jv items;
    const omnic__jstr *attr = NULL, *fname = NULL;
    const omnic__jv *dflt = NULL;
    if (a->npos == 0) {
        for (size_t k = 0; k < a->nkw; k++) {
            if (NAME_IS(a->kname[k], a->klen[k], "attribute")) OMNIC_TRY(need_str(r, &a->kw[k], "map's attribute", &attr));
            else if (NAME_IS(a->kname[k], a->klen[k], "default")) dflt = &a->kw[k];
            else
                return omnic__jfail(r, OMNIC_E_INVALID, "map: unexpected keyword argument '%.*s'", (int)a->klen[k],
                                    a->kname[k]);
        }
        if (!attr) return omnic__jfail(r, OMNIC_E_INVALID, "map requires a filter argument");
    } else {
        OMNIC_TRY(need_str(r, &a->pos[0], "map's filter name", &fname));
        if (!omnic__jfilter_exists(fname->p, fname->len))
            return omnic__jfail(r, OMNIC_E_INVALID, "no filter named '%.*s'", (int)fname->len, fname->p);
    }
    OMNIC_TRY(omnic__jiter(r, x, &items));
    omnic__jargs fa = {0};
    omnic_status rc = fname ? sub_args(r, a, 1, true, &fa) : OMNIC_OK;
    const omnic__jlist *l = OMNIC_JLIST(items);
    if (rc == OMNIC_OK) rc = omnic__jstep(r, l->n);
    if (rc == OMNIC_OK) rc = omnic__jlist_new(r, l->n, false, out);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
        omnic__jv v;
        rc = fname ? omnic__jfilter(r, fname->p, fname->len, l->v[i], &fa, &v) : attr_get(r, l->v[i], attr, dflt, &v);
        if (rc == OMNIC_OK) rc = omnic__jlist_push(r, OMNIC_JLIST(*out), v);
        if (rc != OMNIC_OK) omnic__jv_unref(r, *out);
    }
    omnic__jargs_free(r, &fa);
    omnic__jv_unref(r, items);
    return rc;
}

static omnic_status min_max(omnic__jrender *r, omnic__jv x, omnic__jargs *a, bool max, omnic__jv *out)
{
    BIND(max ? "max" : "min", "case_sensitive", "attribute");
    const omnic__jstr *attr = NULL;
    if (given(arg[1]) && arg[1]->kind != OMNIC_JV_NONE) OMNIC_TRY(need_str(r, arg[1], "attribute", &attr));
    omnic__jv items, *keys;
    OMNIC_TRY(omnic__jiter(r, x, &items));
    const omnic__jlist *l = OMNIC_JLIST(items);
    if (l->n == 0) {
        omnic__jv_unref(r, items);
        *out = omnic__jv_undef(NULL, OMNIC_JV_KIND_COUNT);
        return OMNIC_OK;
    }
    omnic_status rc = keys_of(r, l, attr, &keys);
    if (rc != OMNIC_OK) {
        omnic__jv_unref(r, items);
        return rc;
    }
    size_t best = 0;
    bool ic = !opt_bool(arg[0], false);
    rc = omnic__jstep(r, l->n);
    for (size_t i = 1; i < l->n && rc == OMNIC_OK; i++) {
        int c;
        rc = omnic__jv_cmp(r, keys[i], keys[best], ic, 0, &c);
        if (rc == OMNIC_OK && (max ? c > 0 : c < 0)) best = i;
    }
    if (rc == OMNIC_OK) *out = omnic__jv_ref(l->v[best]);
    keys_free(r, keys, l->n);
    omnic__jv_unref(r, items);
    return rc;
}

static omnic_status f_max(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return min_max(r, x, a, true, out);
}
static omnic_status f_min(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return min_max(r, x, a, false, out);
}

/* select / reject / selectattr / rejectattr */
static omnic_status select_impl(omnic__jrender *r, omnic__jv x, omnic__jargs *a, bool keep_true, bool by_attr,
                                omnic__jv *out)
{
    const omnic__jstr *attr = NULL, *test = NULL;
    size_t off = 0;
    if (by_attr) {
        if (a->npos < 1) return omnic__jfail(r, OMNIC_E_INVALID, "missing parameter for attribute name");
        OMNIC_TRY(need_str(r, &a->pos[0], "attribute name", &attr));
        off = 1;
    }
    if (a->npos > off) {
        OMNIC_TRY(need_str(r, &a->pos[off], "test name", &test));
        if (!omnic__jtest_exists(test->p, test->len))
            return omnic__jfail(r, OMNIC_E_INVALID, "no test named '%.*s'", (int)test->len, test->p);
    }
    omnic__jv items;
    OMNIC_TRY(omnic__jiter(r, x, &items));
    omnic__jargs ta = {0};
    omnic_status rc = test ? sub_args(r, a, off + 1, true, &ta) : OMNIC_OK;
    const omnic__jlist *l = OMNIC_JLIST(items);
    if (rc == OMNIC_OK) rc = omnic__jstep(r, l->n);
    if (rc == OMNIC_OK) rc = omnic__jlist_new(r, 0, false, out);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
        omnic__jv v;
        bool t = false;
        if (attr) rc = attr_get(r, l->v[i], attr, NULL, &v);
        else v = omnic__jv_ref(l->v[i]);
        if (rc == OMNIC_OK) {
            if (test) rc = omnic__jtest(r, test->p, test->len, v, &ta, &t);
            else t = omnic__jv_truthy(v);
            omnic__jv_unref(r, v);
        }
        if (rc == OMNIC_OK && t == keep_true) rc = omnic__jlist_push(r, OMNIC_JLIST(*out), omnic__jv_ref(l->v[i]));
        if (rc != OMNIC_OK) omnic__jv_unref(r, *out);
    }
    omnic__jargs_free(r, &ta);
    omnic__jv_unref(r, items);
    return rc;
}

static omnic_status f_select(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return select_impl(r, x, a, true, false, out);
}
static omnic_status f_reject(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return select_impl(r, x, a, false, false, out);
}
static omnic_status f_selectattr(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return select_impl(r, x, a, true, true, out);
}
static omnic_status f_rejectattr(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return select_impl(r, x, a, false, true, out);
}

static omnic_status f_replace(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("replace", "old", "new", "count");
    omnic__jv s, o, n;
    int64_t count = 0;
    OMNIC_TRY(opt_int(r, arg[2], -1, "replace's count", &count));
    if (!arg[0] || !arg[1]) return omnic__jfail(r, OMNIC_E_INVALID, "replace needs old and new strings");
    OMNIC_TRY(soft_str(r, x, &s));
    omnic_status rc = soft_str(r, *arg[0], &o);
    if (rc == OMNIC_OK) {
        rc = soft_str(r, *arg[1], &n);
        if (rc == OMNIC_OK) {
            rc = replace_str(r, s, OMNIC_JSTR(o), OMNIC_JSTR(n), count, out);
            omnic__jv_unref(r, n);
        }
        omnic__jv_unref(r, o);
    }
    omnic__jv_unref(r, s);
    return rc;
}

static omnic_status reversed(omnic__jrender *r, omnic__jv x, omnic__jv *out)
{
    if (x.kind == OMNIC_JV_STR) {
        const omnic__jstr *s = OMNIC_JSTR(x);
        omnic__jbuf b = {0};
        omnic_status rc = OMNIC_OK;
        for (size_t e = s->len; e > 0 && rc == OMNIC_OK;) {
            size_t st = e - 1;
            while (st > 0 && ((unsigned char)s->p[st] & 0xC0u) == 0x80u) st--;
            rc = omnic__jbuf_put(r, &b, s->p + st, e - st);
            e = st;
        }
        if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
        omnic__jbuf_free(r, &b);
        return rc;
    }
    omnic__jv items;
    OMNIC_TRY(omnic__jiter(r, x, &items));
    const omnic__jlist *l = OMNIC_JLIST(items);
    omnic_status rc = omnic__jlist_new(r, l->n, false, out);
    if (rc == OMNIC_OK) {
        for (size_t i = 0; i < l->n; i++) OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(l->v[l->n - 1 - i]);
        OMNIC_JLIST(*out)->n = l->n;
    }
    omnic__jv_unref(r, items);
    return rc;
}

static omnic_status f_reverse(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("reverse");
    return reversed(r, x, out);
}

static omnic_status f_round(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("round", "precision", "method");
    int64_t prec = 0;
    OMNIC_TRY(opt_int(r, arg[0], 0, "round's precision", &prec));
    int method = 0; /* common, ceil, floor */
    if (given(arg[1])) {
        const omnic__jstr *m = NULL;
        OMNIC_TRY(need_str(r, arg[1], "round's method", &m));
        if (NAME_IS(m->p, m->len, "ceil")) method = 1;
        else if (NAME_IS(m->p, m->len, "floor")) method = 2;
        else if (!NAME_IS(m->p, m->len, "common"))
            return omnic__jfail(r, OMNIC_E_INVALID, "method must be common, ceil or floor");
    }
    if (x.kind != OMNIC_JV_INT && x.kind != OMNIC_JV_FLOAT && x.kind != OMNIC_JV_BOOL)
        return omnic__jfail(r, OMNIC_E_INVALID, "round needs a number, not %s", omnic__jv_type(x));
    if (prec > 300) prec = 300;
    if (prec < -300) prec = -300;
    double v = x.kind == OMNIC_JV_FLOAT ? x.u.f : x.kind == OMNIC_JV_INT ? (double)x.u.i : x.u.b;
    if (method == 0) {
        if (x.kind != OMNIC_JV_FLOAT && prec >= 0) { /* round(int, n) is the int */
            *out = omnic__jv_int(x.kind == OMNIC_JV_INT ? x.u.i : x.u.b);
            return OMNIC_OK;
        }
        if (!isfinite(v)) {
            *out = omnic__jv_float(v);
            return OMNIC_OK;
        }
        if (prec == 0) {
            *out = omnic__jv_float(nearbyint(v));
        } else if (prec > 0) {
            char buf[400];
            snprintf(buf, sizeof buf, "%.*f", (int)prec, v);
            *out = omnic__jv_float(strtod(buf, NULL));
        } else {
            double p = pow(10.0, (double)-prec);
            *out = omnic__jv_float(nearbyint(v / p) * p);
        }
        return OMNIC_OK;
    }
    double p = pow(10.0, (double)prec);
    *out = omnic__jv_float((method == 1 ? ceil(v * p) : floor(v * p)) / p);
    return OMNIC_OK;
}

static omnic_status f_safe(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("safe");
    *out = omnic__jv_ref(x);
    return OMNIC_OK;
}

static omnic_status f_sort(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("sort", "reverse", "case_sensitive", "attribute");
    const omnic__jstr *attr = NULL;
    omnic__jv attr_hold = omnic__jv_none(); /* an integer attribute, as its digits */
    if (given(arg[2]) && arg[2]->kind != OMNIC_JV_NONE) {
        if (arg[2]->kind == OMNIC_JV_INT) {
            OMNIC_TRY(soft_str(r, *arg[2], &attr_hold));
            attr = OMNIC_JSTR(attr_hold);
        } else {
            OMNIC_TRY(need_str(r, arg[2], "sort's attribute", &attr));
        }
    }
    omnic__jv items, *keys;
    size_t *idx = NULL;
    omnic_status rc = omnic__jiter(r, x, &items);
    if (rc != OMNIC_OK) {
        omnic__jv_unref(r, attr_hold);
        return rc;
    }
    const omnic__jlist *l = OMNIC_JLIST(items);
    rc = keys_of(r, l, attr, &keys);
    if (rc == OMNIC_OK) {
        rc = iota(r, l->n, &idx);
        if (rc == OMNIC_OK) rc = sort_idx(r, keys, l->n, idx, !opt_bool(arg[1], false), opt_bool(arg[0], false));
        if (rc == OMNIC_OK) rc = list_from_idx(r, l, idx, l->n, out);
        omnic__jmem_free(r, idx);
        keys_free(r, keys, l->n);
    }
    omnic__jv_unref(r, items);
    omnic__jv_unref(r, attr_hold);
    return rc;
}

static omnic_status f_string(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("string");
    return soft_str(r, x, out);
}

static omnic_status f_sum(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("sum", "attribute", "start");
    const omnic__jstr *attr = NULL;
    if (given(arg[0]) && arg[0]->kind != OMNIC_JV_NONE) OMNIC_TRY(need_str(r, arg[0], "sum's attribute", &attr));
    omnic__jv items, acc = given(arg[1]) ? omnic__jv_ref(*arg[1]) : omnic__jv_int(0);
    omnic_status rc = omnic__jiter(r, x, &items);
    if (rc != OMNIC_OK) {
        omnic__jv_unref(r, acc);
        return rc;
    }
    const omnic__jlist *l = OMNIC_JLIST(items);
    rc = omnic__jstep(r, l->n);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
        omnic__jv v, nacc;
        if (attr) rc = attr_get(r, l->v[i], attr, NULL, &v);
        else v = omnic__jv_ref(l->v[i]);
        if (rc != OMNIC_OK) break;
        if (v.kind == OMNIC_JV_STR)
            rc = omnic__jfail(r, OMNIC_E_INVALID, "sum() can't sum strings [use ''.join(seq) instead]");
        else rc = omnic__jbinop(r, OMNIC_JOP_ADD, acc, v, &nacc);
        omnic__jv_unref(r, v);
        if (rc != OMNIC_OK) break;
        omnic__jv_unref(r, acc);
        acc = nacc;
    }
    omnic__jv_unref(r, items);
    if (rc != OMNIC_OK) {
        omnic__jv_unref(r, acc);
        return rc;
    }
    *out = acc;
    return OMNIC_OK;
}

/* transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
 * json.dumps with those options. */
static omnic_status f_tojson(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("tojson", "ensure_ascii", "indent", "separators", "sort_keys");
    omnic__jjson_opts o = {.item_sep = ", ", .key_sep = ": ", .item_sep_len = 2, .key_sep_len = 2};
    char spaces[256];
    o.ensure_ascii = opt_bool(arg[0], false);
    o.sort_keys = opt_bool(arg[3], false);
    if (given(arg[1]) && arg[1]->kind != OMNIC_JV_NONE) {
        if (arg[1]->kind == OMNIC_JV_STR) {
            o.indent = OMNIC_JSTR(*arg[1])->p;
            o.indent_len = OMNIC_JSTR(*arg[1])->len;
        } else {
            int64_t w = 0;
            OMNIC_TRY(opt_int(r, arg[1], 0, "tojson's indent", &w));
            if (w < 0) w = 0;
            if (w > (int64_t)sizeof spaces)
                return omnic__jfail(r, OMNIC_E_TOO_LARGE, "tojson indent %lld over 256", (long long)w);
            memset(spaces, ' ', (size_t)w);
            o.indent = spaces;
            o.indent_len = (size_t)w;
        }
        o.item_sep = ",";
        o.item_sep_len = 1;
    }
    if (given(arg[2]) && arg[2]->kind != OMNIC_JV_NONE) {
        const omnic__jv *sv = arg[2];
        if (sv->kind != OMNIC_JV_LIST || OMNIC_JLIST(*sv)->n != 2 || OMNIC_JLIST(*sv)->v[0].kind != OMNIC_JV_STR ||
            OMNIC_JLIST(*sv)->v[1].kind != OMNIC_JV_STR)
            return omnic__jfail(r, OMNIC_E_INVALID, "tojson's separators must be (item_separator, key_separator)");
        o.item_sep = OMNIC_JSTR(OMNIC_JLIST(*sv)->v[0])->p;
        o.item_sep_len = OMNIC_JSTR(OMNIC_JLIST(*sv)->v[0])->len;
        o.key_sep = OMNIC_JSTR(OMNIC_JLIST(*sv)->v[1])->p;
        o.key_sep_len = OMNIC_JSTR(OMNIC_JLIST(*sv)->v[1])->len;
    }
    omnic__jbuf b = {0};
    omnic_status rc = omnic__jv_write_json(r, &b, x, &o, 0);
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

static omnic_status f_trim(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("trim", "chars");
    const omnic__jstr *chars = NULL;
    if (given(arg[0]) && arg[0]->kind != OMNIC_JV_NONE) OMNIC_TRY(need_str(r, arg[0], "trim's chars", &chars));
    omnic__jv s;
    OMNIC_TRY(soft_str(r, x, &s));
    omnic_status rc = strip(r, s, chars, 3, out);
    omnic__jv_unref(r, s);
    return rc;
}

static omnic_status f_truncate(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("truncate", "length", "killwords", "end", "leeway");
    int64_t length = 0, leeway = 0;
    OMNIC_TRY(opt_int(r, arg[0], 255, "truncate's length", &length));
    OMNIC_TRY(opt_int(r, arg[3], 5, "truncate's leeway", &leeway));
    const omnic__jstr *end = NULL;
    if (given(arg[2])) OMNIC_TRY(need_str(r, arg[2], "truncate's end", &end));
    size_t end_cp = end ? end->ncp : 3;
    if (length < (int64_t)end_cp || leeway < 0)
        return omnic__jfail(r, OMNIC_E_INVALID, "truncate: expected length >= %zu and leeway >= 0", end_cp);
    omnic__jv s;
    OMNIC_TRY(soft_str(r, x, &s));
    const omnic__jstr *str = OMNIC_JSTR(s);
    if ((int64_t)str->ncp <= length + leeway) {
        *out = s;
        return OMNIC_OK;
    }
    size_t keep = omnic__ju8_offset(str->p, str->len, (size_t)length - end_cp);
    if (!opt_bool(arg[1], false)) { /* rsplit(" ", 1)[0] */
        size_t k = keep;
        while (k > 0 && str->p[k - 1] != ' ') k--;
        if (k > 0) keep = k - 1;
    }
    omnic__jbuf b = {0};
    omnic_status rc = omnic__jbuf_put(r, &b, str->p, keep);
    if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, &b, end ? end->p : "...", end ? end->len : 3);
    omnic__jv_unref(r, s);
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

static omnic_status f_unique(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    BIND("unique", "case_sensitive", "attribute");
    const omnic__jstr *attr = NULL;
    if (given(arg[1]) && arg[1]->kind != OMNIC_JV_NONE) OMNIC_TRY(need_str(r, arg[1], "unique's attribute", &attr));
    bool ic = !opt_bool(arg[0], false);
    omnic__jv items, *keys;
    OMNIC_TRY(omnic__jiter(r, x, &items));
    const omnic__jlist *l = OMNIC_JLIST(items);
    omnic_status rc = keys_of(r, l, attr, &keys);
    if (rc != OMNIC_OK) {
        omnic__jv_unref(r, items);
        return rc;
    }
    size_t *idx = NULL, n = 0;
    rc = iota(r, l->n, &idx);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
        bool dup = false;
        if (keys[i].kind == OMNIC_JV_LIST || keys[i].kind == OMNIC_JV_DICT || keys[i].kind == OMNIC_JV_NS) {
            if (!(keys[i].kind == OMNIC_JV_LIST && (keys[i].u.o->flags & OMNIC_JLIST_TUPLE))) {
                rc = omnic__jfail(r, OMNIC_E_INVALID, "unhashable type: '%s'", omnic__jv_type(keys[i]));
                break;
            }
        }
        rc = omnic__jstep(r, n + 1);
        for (size_t j = 0; j < n && rc == OMNIC_OK && !dup; j++) {
            if (ic && keys[i].kind == OMNIC_JV_STR && keys[idx[j]].kind == OMNIC_JV_STR) {
                int c;
                rc = omnic__jv_cmp(r, keys[i], keys[idx[j]], true, 0, &c);
                dup = c == 0;
            } else {
                rc = omnic__jv_eq(r, keys[i], keys[idx[j]], 0, &dup);
            }
        }
        if (rc == OMNIC_OK && !dup) idx[n++] = i;
    }
    if (rc == OMNIC_OK) rc = list_from_idx(r, l, idx, n, out);
    omnic__jmem_free(r, idx);
    keys_free(r, keys, l->n);
    omnic__jv_unref(r, items);
    return rc;
}

static bool word_char(uint32_t cp)
{
    if (cp == '_') return true;
    if (cp < 0x80) return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return true;
    default: return false;
    }
}

static omnic_status f_wordcount(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    NO_ARGS("wordcount");
    omnic__jv s;
    OMNIC_TRY(soft_str(r, x, &s));
    const omnic__jstr *str = OMNIC_JSTR(s);
    int64_t n = 0;
    bool in = false;
    for (size_t i = 0; i < str->len;) {
        bool w = word_char(omnic__ju8_next(str->p, str->len, &i));
        if (w && !in) n++;
        in = w;
    }
    omnic__jv_unref(r, s);
    *out = omnic__jv_int(n);
    return OMNIC_OK;
}

static const struct {
    const char *name;
    filter_fn fn;
} FILTERS[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", f_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_escape},
    {"format", f_format},
    {"groupby", f_groupby},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"sort", f_sort},
    {"string", f_string},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", f_unique},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
};

static filter_fn find_filter(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof FILTERS / sizeof FILTERS[0]; i++)
        if (strlen(FILTERS[i].name) == len && !memcmp(FILTERS[i].name, name, len)) return FILTERS[i].fn;
    return NULL;
}

bool omnic__jfilter_exists(const char *name, size_t len)
{
    return find_filter(name, len) != NULL;
}

omnic_status omnic__jfilter(omnic__jrender *r, const char *name, size_t len, omnic__jv x, omnic__jargs *a,
                            omnic__jv *out)
{
    filter_fn fn = find_filter(name, len);
    if (!fn) return omnic__jfail(r, OMNIC_E_INVALID, "no filter named '%.*s'", (int)(len > 64 ? 64 : len), name);
    return fn(r, x, a, out);
}

/* ---- tests ---------------------------------------------------------------------------------------- */

enum {
    T_DEFINED, T_UNDEFINED, T_NONE, T_BOOLEAN, T_FALSE, T_TRUE, T_INTEGER, T_FLOAT, T_NUMBER, T_STRING,
    T_MAPPING, T_ITERABLE, T_SEQUENCE, T_CALLABLE, T_ODD, T_EVEN, T_DIVISIBLEBY, T_EQ, T_NE, T_LT, T_LE,
    T_GT, T_GE, T_IN, T_SAMEAS, T_LOWER, T_UPPER, T_ESCAPED, T_FILTER, T_TEST
};

static const struct {
    const char *name;
    int id;
} TESTS[] = {
    {"defined", T_DEFINED},   {"undefined", T_UNDEFINED}, {"none", T_NONE},         {"boolean", T_BOOLEAN},
    {"false", T_FALSE},       {"true", T_TRUE},           {"integer", T_INTEGER},   {"float", T_FLOAT},
    {"number", T_NUMBER},     {"string", T_STRING},       {"mapping", T_MAPPING},   {"iterable", T_ITERABLE},
    {"sequence", T_SEQUENCE}, {"callable", T_CALLABLE},   {"odd", T_ODD},           {"even", T_EVEN},
    {"divisibleby", T_DIVISIBLEBY}, {"eq", T_EQ},         {"equalto", T_EQ},        {"==", T_EQ},
    {"ne", T_NE},             {"!=", T_NE},               {"lt", T_LT},             {"lessthan", T_LT},
    {"<", T_LT},              {"le", T_LE},               {"<=", T_LE},             {"gt", T_GT},
    {"greaterthan", T_GT},    {">", T_GT},                {"ge", T_GE},             {">=", T_GE},
    {"in", T_IN},             {"sameas", T_SAMEAS},       {"lower", T_LOWER},       {"upper", T_UPPER},
    {"escaped", T_ESCAPED},   {"filter", T_FILTER},       {"test", T_TEST},
};

static int find_test(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof TESTS / sizeof TESTS[0]; i++)
        if (strlen(TESTS[i].name) == len && !memcmp(TESTS[i].name, name, len)) return TESTS[i].id;
    return -1;
}

bool omnic__jtest_exists(const char *name, size_t len)
{
    return find_test(name, len) >= 0;
}

static omnic_status one_arg(omnic__jrender *r, omnic__jargs *a, const char *name, const omnic__jv **v)
{
    if (a->npos + a->nkw != 1)
        return omnic__jfail(r, OMNIC_E_INVALID, "test '%s' takes exactly one argument (%zu given)", name,
                            a->npos + a->nkw);
    *v = a->npos ? &a->pos[0] : &a->kw[0];
    return OMNIC_OK;
}

static omnic_status case_test(omnic__jrender *r, omnic__jv x, bool upper, bool *out)
{
    omnic__jv s;
    OMNIC_TRY(soft_str(r, x, &s));
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

omnic_status omnic__jtest(omnic__jrender *r, const char *name, size_t len, omnic__jv x, omnic__jargs *a, bool *out)
{
    int id = find_test(name, len);
    if (id < 0) return omnic__jfail(r, OMNIC_E_INVALID, "no test named '%.*s'", (int)(len > 64 ? 64 : len), name);
    const omnic__jv *y = NULL;
    int c;
    bool num = x.kind == OMNIC_JV_INT || x.kind == OMNIC_JV_FLOAT || x.kind == OMNIC_JV_BOOL;
    switch (id) {
    case T_DEFINED: *out = x.kind != OMNIC_JV_UNDEF; break;
    case T_UNDEFINED: *out = x.kind == OMNIC_JV_UNDEF; break;
    case T_NONE: *out = x.kind == OMNIC_JV_NONE; break;
    case T_BOOLEAN: *out = x.kind == OMNIC_JV_BOOL; break;
    case T_FALSE: *out = x.kind == OMNIC_JV_BOOL && !x.u.b; break;
    case T_TRUE: *out = x.kind == OMNIC_JV_BOOL && x.u.b; break;
    case T_INTEGER: *out = x.kind == OMNIC_JV_INT; break;
    case T_FLOAT: *out = x.kind == OMNIC_JV_FLOAT; break;
    case T_NUMBER: *out = num; break;
    case T_STRING: *out = x.kind == OMNIC_JV_STR; break;
    case T_MAPPING: *out = x.kind == OMNIC_JV_DICT; break;
    case T_ITERABLE:
        *out = x.kind == OMNIC_JV_LIST || x.kind == OMNIC_JV_DICT || x.kind == OMNIC_JV_STR || x.kind == OMNIC_JV_UNDEF;
        break;
    case T_SEQUENCE:
        *out = x.kind == OMNIC_JV_LIST || x.kind == OMNIC_JV_DICT || x.kind == OMNIC_JV_STR || x.kind == OMNIC_JV_UNDEF;
        break;
    case T_CALLABLE: *out = x.kind == OMNIC_JV_FUNC || x.kind == OMNIC_JV_UNDEF; break;
    case T_ODD:
    case T_EVEN:
    case T_DIVISIBLEBY: {
        omnic__jv div = omnic__jv_int(2), m;
        if (id == T_DIVISIBLEBY) {
            OMNIC_TRY(one_arg(r, a, "divisibleby", &y));
            div = *y;
        }
        OMNIC_TRY(omnic__jbinop(r, OMNIC_JOP_MOD, x, div, &m));
        bool zero = (m.kind == OMNIC_JV_INT && m.u.i == 0) || (m.kind == OMNIC_JV_FLOAT && m.u.f == 0.0);
        omnic__jv_unref(r, m);
        *out = id == T_ODD ? !zero : zero;
        break;
    }
    case T_EQ:
    case T_NE:
        OMNIC_TRY(one_arg(r, a, "eq", &y));
        OMNIC_TRY(omnic__jv_eq(r, x, *y, 0, out));
        if (id == T_NE) *out = !*out;
        break;
    case T_LT:
    case T_LE:
    case T_GT:
    case T_GE:
        OMNIC_TRY(one_arg(r, a, "comparison", &y));
        if (x.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, x);
        if (y->kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, *y);
        OMNIC_TRY(omnic__jv_cmp(r, x, *y, false, 0, &c));
        *out = id == T_LT ? c < 0 : id == T_LE ? c <= 0 : id == T_GT ? c > 0 : c >= 0;
        break;
    case T_IN:
        OMNIC_TRY(one_arg(r, a, "in", &y));
        OMNIC_TRY(omnic__jcontains(r, x, *y, out));
        break;
    case T_SAMEAS:
        OMNIC_TRY(one_arg(r, a, "sameas", &y));
        if (omnic__jv_is_obj(x) || omnic__jv_is_obj(*y)) *out = x.kind == y->kind && x.u.o == y->u.o;
        else if (x.kind != y->kind) *out = false;
        else if (x.kind == OMNIC_JV_BOOL) *out = x.u.b == y->u.b;
        else if (x.kind == OMNIC_JV_INT) *out = x.u.i == y->u.i && x.u.i >= -5 && x.u.i <= 256;
        else *out = x.kind == OMNIC_JV_NONE || x.kind == OMNIC_JV_UNDEF;
        break;
    case T_LOWER: OMNIC_TRY(case_test(r, x, false, out)); break;
    case T_UPPER: OMNIC_TRY(case_test(r, x, true, out)); break;
    case T_ESCAPED: *out = false; break;
    case T_FILTER:
    case T_TEST:
        *out = x.kind == OMNIC_JV_STR && (id == T_FILTER ? omnic__jfilter_exists(OMNIC_JSTR(x)->p, OMNIC_JSTR(x)->len)
                                                         : omnic__jtest_exists(OMNIC_JSTR(x)->p, OMNIC_JSTR(x)->len));
        break;
    default: *out = false; break;
    }
    if (id != T_ODD && id != T_EVEN && id != T_DIVISIBLEBY && id != T_EQ && id != T_NE && id != T_LT && id != T_LE &&
        id != T_GT && id != T_GE && id != T_IN && id != T_SAMEAS && (a->npos || a->nkw))
        return omnic__jfail(r, OMNIC_E_INVALID, "test '%.*s' takes no arguments", (int)len, name);
    return OMNIC_OK;
}

/* ---- methods ----------------------------------------------------------------------------------------- */

static const char *const STR_METHODS[] = {
    "capitalize", "center", "count", "endswith", "find", "format", "index", "isalnum", "isalpha", "isdigit",
    "islower", "isnumeric", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "removeprefix",
    "removesuffix", "replace", "rfind", "rindex", "rjust", "rsplit", "rstrip", "split", "splitlines",
    "startswith", "strip", "swapcase", "title", "upper", "zfill",
};
static const char *const DICT_METHODS[] = {"get", "items", "keys", "values", "copy"};
static const char *const LIST_METHODS[] = {"count", "index"};
/* Refused (transformers' ImmutableSandboxedEnvironment). */
static const char *const MUTATORS[] = {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort",
                                       "update", "setdefault", "popitem", "add", "discard"};

static bool in_list(const char *const *names, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == len && !memcmp(names[i], name, len)) return true;
    return false;
}
#define IN_LIST(arr, name, len) in_list(arr, sizeof arr / sizeof arr[0], name, len)

bool omnic__jmethod_exists(int kind, const char *name, size_t len)
{
    switch (kind) {
    case OMNIC_JV_STR: return IN_LIST(STR_METHODS, name, len);
    case OMNIC_JV_DICT: return IN_LIST(DICT_METHODS, name, len) || IN_LIST(MUTATORS, name, len);
    case OMNIC_JV_LIST: return IN_LIST(LIST_METHODS, name, len) || IN_LIST(MUTATORS, name, len);
    default: return false;
    }
}

/* A substring position argument pair (start, end) in code points -> byte range. */
static omnic_status sub_range(omnic__jrender *r, const omnic__jstr *s, const omnic__jv *start, const omnic__jv *end,
                              size_t *b, size_t *e)
{
    int64_t st = 0, en = 0;
    OMNIC_TRY(opt_int(r, start, 0, "start", &st));
    OMNIC_TRY(opt_int(r, end, (int64_t)s->ncp, "end", &en));
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

static omnic_status affix(omnic__jrender *r, const omnic__jstr *s, const omnic__jv *what, const omnic__jv *start,
                          const omnic__jv *end, bool suffix, bool *out)
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
static omnic_status find_impl(omnic__jrender *r, const omnic__jstr *s, omnic__jargs *a, const char *what, int mode,
                              omnic__jv *out)
{
    BIND(what, "sub", "start", "end");
    const omnic__jstr *sub = NULL;
    OMNIC_TRY(need_str(r, arg[0], "the substring", &sub));
    size_t b, e;
    OMNIC_TRY(sub_range(r, s, arg[1], arg[2], &b, &e));
    if (mode == 2) { /* count */
        int64_t n = 0;
        if (sub->len == 0) n = (int64_t)omnic__ju8_count(s->p + b, e - b) + 1;
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
        if (c == '}' ) {
            if (i + 1 < fmt->len && fmt->p[i + 1] == '}') i++;
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
        while (e < fmt->len && fmt->p[e] != '}') e++;
        if (e >= fmt->len) {
            rc = omnic__jfail(r, OMNIC_E_INVALID, "Single '{' encountered in format string");
            break;
        }
        /* field [!conv] [:spec] */
        size_t fe = i + 1;
        while (fe < e && fmt->p[fe] != '!' && fmt->p[fe] != ':' && fmt->p[fe] != '.' && fmt->p[fe] != '[') fe++;
        const char *field = fmt->p + i + 1;
        size_t flen = fe - (i + 1);
        omnic__jv v;
        if (flen == 0 || (field[0] >= '0' && field[0] <= '9')) {
            size_t idx = auto_idx++;
            if (flen) {
                idx = 0;
                for (size_t k = 0; k < flen; k++) idx = idx * 10 + (size_t)(field[k] - '0');
            }
            if (idx >= a->npos) {
                rc = omnic__jfail(r, OMNIC_E_INVALID, "Replacement index %zu out of range for positional args tuple", idx);
                break;
            }
            v = omnic__jv_ref(a->pos[idx]);
        } else {
            size_t k;
            for (k = 0; k < a->nkw; k++)
                if (a->klen[k] == flen && !memcmp(a->kname[k], field, flen)) break;
            if (k == a->nkw) {
                rc = omnic__jfail(r, OMNIC_E_INVALID, "format: missing keyword argument '%.*s'", (int)flen, field);
                break;
            }
            v = omnic__jv_ref(a->kw[k]);
        }
        /* .attr and [key] accessors */
        while (rc == OMNIC_OK && fe < e && (fmt->p[fe] == '.' || fmt->p[fe] == '[')) {
            bool dot = fmt->p[fe] == '.';
            size_t ks = fe + 1, ke = ks;
            while (ke < e && (dot ? fmt->p[ke] != '.' && fmt->p[ke] != '[' && fmt->p[ke] != '!' && fmt->p[ke] != ':'
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

static omnic_status str_pred(omnic__jrender *r, const omnic__jstr *s, const char *name, size_t len, omnic__jv *out)
{
    bool ok = s->len > 0, any_cased = false;
    if (NAME_IS(name, len, "islower") || NAME_IS(name, len, "isupper")) {
        omnic__jv sv = omnic__jv_obj((omnic__jobj *)(uintptr_t)&s->h);
        OMNIC_TRY(case_test(r, sv, name[2] == 'u', &ok));
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
        if (NAME_IS(name, len, "isalpha") && !alpha) ok = false;
        if (NAME_IS(name, len, "isdigit") && !digit) ok = false;
        if (NAME_IS(name, len, "isnumeric") && !numeric) ok = false;
        if (NAME_IS(name, len, "isalnum") && !alpha && !numeric) ok = false;
        if (NAME_IS(name, len, "isspace") && !omnic__ju8_space(cp)) ok = false;
        if (NAME_IS(name, len, "istitle")) {
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
    if (NAME_IS(name, len, "istitle")) ok = title_ok && any_cased;
    *out = omnic__jv_bool(ok);
    return OMNIC_OK;
}

static omnic_status str_method(omnic__jrender *r, omnic__jv self, const char *name, size_t len, omnic__jargs *a,
                               omnic__jv *out)
{
    const omnic__jstr *s = OMNIC_JSTR(self);
    if (NAME_IS(name, len, "upper") || NAME_IS(name, len, "lower") || NAME_IS(name, len, "title") ||
        NAME_IS(name, len, "capitalize") || NAME_IS(name, len, "swapcase")) {
        NO_ARGS("str method");
        int mode = name[0] == 'u' ? CASE_UPPER : name[0] == 'l' ? CASE_LOWER : name[0] == 't' ? CASE_TITLE
                   : name[0] == 'c'                               ? CASE_CAPITALIZE
                                                                  : CASE_SWAP;
        return map_case(r, s, mode, out);
    }
    if (NAME_IS(name, len, "strip") || NAME_IS(name, len, "lstrip") || NAME_IS(name, len, "rstrip")) {
        BIND("strip", "chars");
        const omnic__jstr *chars = NULL;
        if (given(arg[0]) && arg[0]->kind != OMNIC_JV_NONE) OMNIC_TRY(need_str(r, arg[0], "strip's chars", &chars));
        return strip(r, self, chars, name[0] == 'l' ? 1 : name[0] == 'r' ? 2 : 3, out);
    }
    if (NAME_IS(name, len, "startswith") || NAME_IS(name, len, "endswith")) {
        BIND(name[0] == 's' ? "startswith" : "endswith", "prefix", "start", "end");
        if (!arg[0]) return omnic__jfail(r, OMNIC_E_INVALID, "%.*s needs an argument", (int)len, name);
        bool res;
        OMNIC_TRY(affix(r, s, arg[0], arg[1], arg[2], name[0] == 'e', &res));
        *out = omnic__jv_bool(res);
        return OMNIC_OK;
    }
    if (NAME_IS(name, len, "split") || NAME_IS(name, len, "rsplit")) {
        BIND("split", "sep", "maxsplit");
        const omnic__jstr *sep = NULL;
        int64_t maxsplit = 0;
        if (given(arg[0]) && arg[0]->kind != OMNIC_JV_NONE) OMNIC_TRY(need_str(r, arg[0], "split's sep", &sep));
        OMNIC_TRY(opt_int(r, arg[1], -1, "split's maxsplit", &maxsplit));
        return split(r, s, sep, maxsplit, name[0] == 'r', out);
    }
    if (NAME_IS(name, len, "splitlines")) {
        BIND("splitlines", "keepends");
        return splitlines(r, s, opt_bool(arg[0], false), out);
    }
    if (NAME_IS(name, len, "replace")) {
        BIND("replace", "old", "new", "count");
        const omnic__jstr *o = NULL, *n = NULL;
        int64_t count = 0;
        OMNIC_TRY(need_str(r, arg[0], "replace's old", &o));
        OMNIC_TRY(need_str(r, arg[1], "replace's new", &n));
        OMNIC_TRY(opt_int(r, arg[2], -1, "replace's count", &count));
        return replace_str(r, self, o, n, count, out);
    }
    if (NAME_IS(name, len, "find")) return find_impl(r, s, a, "find", 0, out);
    if (NAME_IS(name, len, "index")) return find_impl(r, s, a, "index", 0, out);
    if (NAME_IS(name, len, "rfind")) return find_impl(r, s, a, "rfind", 1, out);
    if (NAME_IS(name, len, "rindex")) return find_impl(r, s, a, "rindex", 1, out);
    if (NAME_IS(name, len, "count")) return find_impl(r, s, a, "count", 2, out);
    if (NAME_IS(name, len, "format")) return str_dot_format(r, s, a, out);
    if (NAME_IS(name, len, "join")) {
        BIND("join", "iterable");
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
    if (NAME_IS(name, len, "center") || NAME_IS(name, len, "ljust") || NAME_IS(name, len, "rjust") ||
        NAME_IS(name, len, "zfill")) {
        BIND("str method", "width", "fillchar");
        int64_t w = 0;
        OMNIC_TRY(opt_int(r, arg[0], 0, "width", &w));
        if (w > (int64_t)r->lim.max_output) w = (int64_t)r->lim.max_output + 1;
        const omnic__jstr *fill = NULL;
        if (given(arg[1])) OMNIC_TRY(need_str(r, arg[1], "fillchar", &fill));
        if (name[0] == 'c') return center(r, self, w, fill, out);
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
            rc = name[0] == 'z' ? omnic__jbuf_putc(r, &b, '0') : omnic__jbuf_put(r, &b, fill ? fill->p : " ", fill ? fill->len : 1);
        if (rc == OMNIC_OK && name[0] != 'l') rc = omnic__jbuf_put(r, &b, s->p + lead, s->len - lead);
        if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
        omnic__jbuf_free(r, &b);
        return rc;
    }
    if (NAME_IS(name, len, "removeprefix") || NAME_IS(name, len, "removesuffix")) {
        BIND("str method", "affix");
        const omnic__jstr *x = NULL;
        OMNIC_TRY(need_str(r, arg[0], "the affix", &x));
        bool pre = name[6] == 'p';
        if (x->len <= s->len && !memcmp(pre ? s->p : s->p + s->len - x->len, x->p, x->len) && x->len)
            return omnic__jstr_new(r, pre ? s->p + x->len : s->p, s->len - x->len, out);
        *out = omnic__jv_ref(self);
        return OMNIC_OK;
    }
    NO_ARGS("str method");
    return str_pred(r, s, name, len, out);
}

omnic_status omnic__jmethod(omnic__jrender *r, omnic__jv self, const char *name, size_t len, omnic__jargs *a,
                            omnic__jv *out)
{
    if ((self.kind == OMNIC_JV_LIST || self.kind == OMNIC_JV_DICT) && IN_LIST(MUTATORS, name, len))
        return omnic__jfail(r, OMNIC_E_INVALID,
                            "access to attribute '%.*s' of '%s' object is unsafe (chat templates run in an immutable "
                            "sandbox, as in transformers)",
                            (int)len, name, omnic__jv_type(self));
    if (self.kind == OMNIC_JV_STR) return str_method(r, self, name, len, a, out);
    if (self.kind == OMNIC_JV_DICT) {
        const omnic__jdict *d = OMNIC_JDICT(self);
        if (NAME_IS(name, len, "get")) {
            BIND("get", "key", "default");
            if (!arg[0]) return omnic__jfail(r, OMNIC_E_INVALID, "get expected at least 1 argument, got 0");
            const omnic__jv *v = arg[0]->kind == OMNIC_JV_STR
                                     ? omnic__jdict_get(d, OMNIC_JSTR(*arg[0])->p, OMNIC_JSTR(*arg[0])->len)
                                     : NULL;
            *out = v ? omnic__jv_ref(*v) : arg[1] ? omnic__jv_ref(*arg[1]) : omnic__jv_none();
            return OMNIC_OK;
        }
        NO_ARGS("dict method");
        if (NAME_IS(name, len, "items")) return items_list(r, d, out);
        if (NAME_IS(name, len, "keys")) return omnic__jiter(r, self, out);
        if (NAME_IS(name, len, "copy")) {
            *out = omnic__jv_ref(self);
            return OMNIC_OK;
        }
        OMNIC_TRY(omnic__jstep(r, d->n));
        OMNIC_TRY(omnic__jlist_new(r, d->n, false, out));
        for (size_t i = 0; i < d->n; i++) OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(d->v[i]);
        OMNIC_JLIST(*out)->n = d->n;
        return OMNIC_OK;
    }
    if (self.kind == OMNIC_JV_LIST) {
        BIND("list method", "value");
        if (!arg[0]) return omnic__jfail(r, OMNIC_E_INVALID, "%.*s() takes exactly one argument", (int)len, name);
        const omnic__jlist *l = OMNIC_JLIST(self);
        int64_t count = 0, first = -1;
        OMNIC_TRY(omnic__jstep(r, l->n));
        for (size_t i = 0; i < l->n; i++) {
            bool e;
            OMNIC_TRY(omnic__jv_eq(r, l->v[i], *arg[0], 0, &e));
            if (e) {
                count++;
                if (first < 0) first = (int64_t)i;
            }
        }
        if (NAME_IS(name, len, "index") && first < 0)
            return omnic__jfail(r, OMNIC_E_INVALID, "list.index(x): x not in list");
        *out = omnic__jv_int(NAME_IS(name, len, "index") ? first : count);
        return OMNIC_OK;
    }
    return omnic__jfail(r, OMNIC_E_INVALID, "'%s' object has no method '%.*s'", omnic__jv_type(self), (int)len, name);
}

/* ---- globals ------------------------------------------------------------------------------------------- */

enum { G_RANGE, G_NAMESPACE, G_DICT, G_RAISE, G_STRFTIME, G_COUNT };

static omnic__jfunc GLOBALS[G_COUNT] = {
    [G_RANGE] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL}, .fkind = OMNIC_JF_GLOBAL, .id = G_RANGE, .name = "range", .name_len = 5},
    [G_NAMESPACE] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL}, .fkind = OMNIC_JF_GLOBAL, .id = G_NAMESPACE, .name = "namespace",
                     .name_len = 9},
    [G_DICT] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL}, .fkind = OMNIC_JF_GLOBAL, .id = G_DICT, .name = "dict", .name_len = 4},
    [G_RAISE] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL}, .fkind = OMNIC_JF_GLOBAL, .id = G_RAISE, .name = "raise_exception",
                 .name_len = 15},
    [G_STRFTIME] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL}, .fkind = OMNIC_JF_GLOBAL, .id = G_STRFTIME, .name = "strftime_now",
                    .name_len = 12},
};

int omnic__jglobal_find(const char *name, size_t len)
{
    for (int i = 0; i < G_COUNT; i++)
        if (GLOBALS[i].name_len == len && !memcmp(GLOBALS[i].name, name, len)) return i;
    return -1;
}

omnic__jv omnic__jglobal_value(int id)
{
    return omnic__jv_obj(&GLOBALS[id].h);
}

/* namespace(...) / dict(...): one optional mapping or iterable of pairs, then keywords. */
static omnic_status build_mapping(omnic__jrender *r, omnic__jargs *a, bool ns, omnic__jv *out)
{
    const char *what = ns ? "namespace" : "dict";
    if (a->npos > 1) return omnic__jfail(r, OMNIC_E_INVALID, "%s expected at most 1 argument, got %zu", what, a->npos);
    OMNIC_TRY(omnic__jdict_new(r, ns, out));
    omnic__jdict *d = OMNIC_JDICT(*out);
    omnic_status rc = OMNIC_OK;
    if (a->npos == 1) {
        omnic__jv src = a->pos[0];
        if (src.kind == OMNIC_JV_DICT || src.kind == OMNIC_JV_NS) {
            const omnic__jdict *s = OMNIC_JDICT(src);
            for (size_t i = 0; i < s->n && rc == OMNIC_OK; i++) rc = omnic__jdict_set(r, d, s->k[i], omnic__jv_ref(s->v[i]));
        } else if (src.kind == OMNIC_JV_LIST) {
            const omnic__jlist *l = OMNIC_JLIST(src);
            for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
                omnic__jv pair = l->v[i];
                if (pair.kind != OMNIC_JV_LIST || OMNIC_JLIST(pair)->n != 2 ||
                    OMNIC_JLIST(pair)->v[0].kind != OMNIC_JV_STR)
                    rc = omnic__jfail(r, OMNIC_E_INVALID, "%s: element %zu is not a (string key, value) pair", what, i);
                else
                    rc = omnic__jdict_set(r, d, OMNIC_JSTR(OMNIC_JLIST(pair)->v[0]),
                                          omnic__jv_ref(OMNIC_JLIST(pair)->v[1]));
            }
        } else if (src.kind != OMNIC_JV_UNDEF) {
            rc = omnic__jfail(r, OMNIC_E_INVALID, "'%s' object is not iterable", omnic__jv_type(src));
        }
    }
    for (size_t k = 0; k < a->nkw && rc == OMNIC_OK; k++)
        rc = omnic__jdict_setc(r, d, a->kname[k], a->klen[k], omnic__jv_ref(a->kw[k]));
    if (rc != OMNIC_OK) omnic__jv_unref(r, *out);
    return rc;
}

static omnic_status g_range(omnic__jrender *r, omnic__jargs *a, omnic__jv *out)
{
    if (a->nkw) return omnic__jfail(r, OMNIC_E_INVALID, "range() takes no keyword arguments");
    if (a->npos < 1 || a->npos > 3)
        return omnic__jfail(r, OMNIC_E_INVALID, "range expected 1 to 3 arguments, got %zu", a->npos);
    int64_t v[3];
    for (size_t i = 0; i < a->npos; i++) {
        omnic__jv x = a->pos[i];
        if (x.kind != OMNIC_JV_INT && x.kind != OMNIC_JV_BOOL)
            return omnic__jfail(r, OMNIC_E_INVALID, "'%s' object cannot be interpreted as an integer", omnic__jv_type(x));
        v[i] = x.kind == OMNIC_JV_BOOL ? x.u.b : x.u.i;
    }
    int64_t start = a->npos == 1 ? 0 : v[0], stop = a->npos == 1 ? v[0] : v[1], step = a->npos == 3 ? v[2] : 1;
    if (step == 0) return omnic__jfail(r, OMNIC_E_INVALID, "range() arg 3 must not be zero");
    /* count in unsigned 64 bits: the bounds may be far apart */
    uint64_t span = 0, st = step > 0 ? (uint64_t)step : (uint64_t)0 - (uint64_t)step, count = 0;
    if (step > 0 && stop > start) span = (uint64_t)stop - (uint64_t)start;
    if (step < 0 && start > stop) span = (uint64_t)start - (uint64_t)stop;
    if (span) count = (span - 1) / st + 1;
    if (count > (uint64_t)r->lim.max_range)
        return omnic__jfail(r, OMNIC_E_TOO_LARGE, "range() of %llu items is over %lld (OMNIC_MAX_TEMPLATE_RANGE)",
                            (unsigned long long)count, (long long)r->lim.max_range);
    OMNIC_TRY(omnic__jstep(r, (uint64_t)count));
    OMNIC_TRY(omnic__jlist_new(r, (size_t)count, false, out));
    for (int64_t i = 0; i < (int64_t)count; i++) OMNIC_JLIST(*out)->v[i] = omnic__jv_int(start + i * step);
    OMNIC_JLIST(*out)->n = (size_t)count;
    return OMNIC_OK;
}

static omnic_status g_strftime(omnic__jrender *r, omnic__jargs *a, omnic__jv *out)
{
    BIND("strftime_now", "format");
    const omnic__jstr *fmt = NULL;
    OMNIC_TRY(need_str(r, arg[0], "strftime_now's format", &fmt));
    if (fmt->len > 4096)
        return omnic__jfail(r, OMNIC_E_TOO_LARGE, "strftime_now format of %zu bytes is over 4096", fmt->len);
    if (memchr(fmt->p, '\0', fmt->len)) return omnic__jfail(r, OMNIC_E_INVALID, "embedded null character");
    time_t now = r->lim.now ? (time_t)r->lim.now : time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm)) return omnic__jfail(r, OMNIC_E_INVALID, "strftime_now: the clock is out of range");
    size_t cap = fmt->len * 32 + 64;
    omnic_status rc;
    void *p = NULL;
    if ((rc = omnic__jmem_alloc(r, cap, &p)) != OMNIC_OK) return rc;
    char *fz = NULL;
    if ((rc = omnic__jmem_alloc(r, fmt->len + 1, (void **)&fz)) != OMNIC_OK) {
        omnic__jmem_free(r, p);
        return rc;
    }
    memcpy(fz, fmt->p, fmt->len);
    fz[fmt->len] = '\0';
    size_t n = fmt->len ? strftime(p, cap, fz, &tm) : 0;
    rc = omnic__jstr_new(r, p, n, out);
    omnic__jmem_free(r, fz);
    omnic__jmem_free(r, p);
    return rc;
}

omnic_status omnic__jglobal_call(omnic__jrender *r, int id, omnic__jargs *a, omnic__jv *out)
{
    switch (id) {
    case G_RANGE: return g_range(r, a, out);
    case G_NAMESPACE: return build_mapping(r, a, true, out);
    case G_DICT: return build_mapping(r, a, false, out);
    case G_RAISE: {
        omnic__jbuf b = {0};
        omnic_status rc = OMNIC_OK;
        for (size_t i = 0; i < a->npos && rc == OMNIC_OK; i++) rc = omnic__jv_write_str(r, &b, a->pos[i]);
        if (rc == OMNIC_OK)
            rc = OMNIC_FAIL(r->err, OMNIC_E_INVALID, "chat template raised an exception at line %d: %.*s", (int)r->line,
                            (int)(b.n > 400 ? 400 : b.n), b.p ? b.p : "");
        omnic__jbuf_free(r, &b);
        return rc;
    }
    case G_STRFTIME: return g_strftime(r, a, out);
    default: return omnic__jfail(r, OMNIC_E_INTERNAL, "bad global %d", id);
    }
}
