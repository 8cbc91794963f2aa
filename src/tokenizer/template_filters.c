/* Chat-template filters with Python jinja2 semantics (transformers' tojson included): the
 * filter table, attribute getters, stable sorting, and Python's int() / float() of strings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#include "tokenizer/template_internal.h"

/* ---- attribute getters, sorting ------------------------------------------------------------------- */

/* jinja2's make_attrgetter: "a.b.0" through getitem; a default replaces an undefined result. */
static omnic_status attr_get(omnic__jrender *r, omnic__jv item, const omnic__jstr *attr,
                             const omnic__jv *dflt, omnic__jv *out)
{
    omnic__jv cur = omnic__jv_ref(item);
    size_t b = 0;
    for (;;) {
        size_t e = b;
        while (e < attr->len && attr->p[e] != '.')
            e++;
        omnic__jv key = omnic__jv_none(), next = omnic__jv_none();
        bool digits = e > b;
        int64_t iv = 0;
        for (size_t k = b; k < e; k++) {
            if (attr->p[k] < '0' || attr->p[k] > '9' || iv > INT64_MAX / 10 - 10)
                digits = false;
            else
                iv = iv * 10 + (attr->p[k] - '0');
        }
        omnic_status rc =
            digits ? (key = omnic__jv_int(iv), OMNIC_OK) : omnic__jstr_new(r, attr->p + b, e - b, &key);
        if (rc == OMNIC_OK) rc = omnic__jgetitem(r, cur, key, NULL, &next);
        omnic__jv_unref(r, key);
        omnic__jv_unref(r, cur);
        OMNIC_TRY(rc);
        cur = next;
        if (e >= attr->len) break;
        b = e + 1;
    }
    if (cur.kind == OMNIC_JV_UNDEF && omnic__jarg_given(dflt)) cur = omnic__jv_ref(*dflt);
    *out = cur;
    return OMNIC_OK;
}

/* Stable merge sort of idx[0..n) by keys[idx[i]]. */
static omnic_status sort_idx(omnic__jrender *r, const omnic__jv *keys, size_t n, size_t *idx,
                             bool ignore_case, bool reverse)
{
    if (n < 2) return OMNIC_OK;
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_array(r, n, sizeof(size_t), &p));
    size_t *tmp = p;
    omnic_status rc = OMNIC_OK;
    for (size_t w = 1; w < n && rc == OMNIC_OK; w *= 2) {
        if ((rc = omnic__jstep(r, n)) != OMNIC_OK) break;
        for (size_t lo_ = 0; lo_ < n && rc == OMNIC_OK; lo_ += 2 * w) {
            size_t mid = lo_ + w < n ? lo_ + w : n, hi = lo_ + 2 * w < n ? lo_ + 2 * w : n;
            size_t i = lo_, j = mid, k = lo_;
            while (i < mid && j < hi) {
                int c;
                if (reverse)
                    rc = omnic__jv_cmp(r, keys[idx[j]], keys[idx[i]], ignore_case, 0, &c);
                else
                    rc = omnic__jv_cmp(r, keys[idx[i]], keys[idx[j]], ignore_case, 0, &c);
                if (rc != OMNIC_OK) break;
                tmp[k++] = c <= 0 ? idx[i++] : idx[j++];
            }
            if (rc != OMNIC_OK) break;
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        if (rc == OMNIC_OK) memcpy(idx, tmp, n * sizeof(size_t));
    }
    omnic__jmem_free(r, tmp);
    return rc;
}

/* Keys for sorting / unique / min / max: the item or its attribute. */
static omnic_status keys_of(omnic__jrender *r, const omnic__jlist *l, const omnic__jstr *attr,
                            omnic__jv **out)
{
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_array(r, (l->n ? l->n : 1), sizeof(omnic__jv), &p));
    omnic__jv *k = p;
    for (size_t i = 0; i < l->n; i++) {
        omnic_status rc =
            attr ? attr_get(r, l->v[i], attr, NULL, &k[i]) : (k[i] = omnic__jv_ref(l->v[i]), OMNIC_OK);
        if (rc != OMNIC_OK) {
            for (size_t j = 0; j < i; j++)
                omnic__jv_unref(r, k[j]);
            omnic__jmem_free(r, k);
            return rc;
        }
    }
    *out = k;
    return OMNIC_OK;
}

static void keys_free(omnic__jrender *r, omnic__jv *k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        omnic__jv_unref(r, k[i]);
    omnic__jmem_free(r, k);
}

static omnic_status list_from_idx(omnic__jrender *r, const omnic__jlist *l, const size_t *idx, size_t n,
                                  omnic__jv *out)
{
    OMNIC_TRY(omnic__jlist_new(r, n, false, out));
    for (size_t i = 0; i < n; i++)
        OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(l->v[idx[i]]);
    OMNIC_JLIST(*out)->n = n;
    return OMNIC_OK;
}

static omnic_status iota(omnic__jrender *r, size_t n, size_t **out)
{
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_array(r, (n ? n : 1), sizeof(size_t), &p));
    *out = p;
    for (size_t i = 0; i < n; i++)
        (*out)[i] = i;
    return OMNIC_OK;
}

/* ---- number parsing (Python int() / float() of strings) ------------------------------------------ */

static bool py_parse_int(const omnic__jstr *s, int64_t base, int64_t *out)
{
    size_t b = 0, e = s->len;
    while (b < e && omnic__ju8_space((unsigned char)s->p[b]))
        b++;
    while (e > b && omnic__ju8_space((unsigned char)s->p[e - 1]))
        e--;
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
        int d = c >= '0' && c <= '9'                     ? c - '0'
                : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10
                                                         : 99;
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
    while (b < e && omnic__ju8_space((unsigned char)s->p[b]))
        b++;
    while (e > b && omnic__ju8_space((unsigned char)s->p[e - 1]))
        e--;
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
    OMNIC_JNO_ARGS("abs");
    if (x.kind == OMNIC_JV_FLOAT)
        *out = omnic__jv_float(fabs(x.u.f));
    else if (x.kind == OMNIC_JV_BOOL)
        *out = omnic__jv_int(x.u.b);
    else if (x.kind == OMNIC_JV_INT && x.u.i != INT64_MIN)
        *out = omnic__jv_int(x.u.i < 0 ? -x.u.i : x.u.i);
    else
        return omnic__jfail(r, OMNIC_E_INVALID, "bad operand type for abs(): '%s'", omnic__jv_type(x));
    return OMNIC_OK;
}

static omnic_status f_attr(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("attr", "name");
    const omnic__jstr *name = NULL;
    OMNIC_TRY(omnic__jarg_str(r, arg[0], "attr's name", &name));
    if (x.kind == OMNIC_JV_DICT) { /* attributes only: no fallback to the dict's items */
        if (omnic__jmethod_exists(x.kind, name->p, name->len))
            return omnic__jgetattr(r, x, name->p, name->len, NULL, out);
        *out = omnic__jv_undef(NULL, OMNIC_JV_DICT);
        return OMNIC_OK;
    }
    return omnic__jgetattr(r, x, name->p, name->len, NULL, out);
}

static omnic_status case_filter(omnic__jrender *r, omnic__jv x, omnic__jargs *a, int mode, const char *what,
                                omnic__jv *out)
{
    OMNIC_JNO_ARGS(what);
    omnic__jv s;
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
    omnic_status rc = omnic__jstr_case(r, OMNIC_JSTR(s), mode, out);
    omnic__jv_unref(r, s);
    return rc;
}

static omnic_status f_upper(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return case_filter(r, x, a, OMNIC_JCASE_UPPER, "upper", out);
}
static omnic_status f_lower(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return case_filter(r, x, a, OMNIC_JCASE_LOWER, "lower", out);
}
static omnic_status f_capitalize(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return case_filter(r, x, a, OMNIC_JCASE_CAPITALIZE, "capitalize", out);
}
static omnic_status f_title(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    return case_filter(r, x, a, OMNIC_JCASE_JTITLE, "title", out);
}

static omnic_status f_center(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("center", "width");
    int64_t w = 0;
    OMNIC_TRY(omnic__jarg_int(r, arg[0], 80, "center's width", &w));
    if (w > (int64_t)r->lim.max_output) w = (int64_t)r->lim.max_output + 1;
    omnic__jv s;
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
    omnic_status rc = omnic__jstr_center(r, s, w, NULL, out);
    omnic__jv_unref(r, s);
    return rc;
}

static omnic_status f_default(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("default", "default_value", "boolean");
    bool boolean = omnic__jarg_bool(arg[1], false);
    if (x.kind == OMNIC_JV_UNDEF || (boolean && !omnic__jv_truthy(x))) {
        if (arg[0])
            *out = omnic__jv_ref(*arg[0]);
        else
            OMNIC_TRY(omnic__jstr_new(r, "", 0, out));
        return OMNIC_OK;
    }
    *out = omnic__jv_ref(x);
    return OMNIC_OK;
}

static omnic_status f_items(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JNO_ARGS("items");
    if (x.kind == OMNIC_JV_UNDEF) return omnic__jlist_new(r, 0, false, out);
    if (x.kind != OMNIC_JV_DICT)
        return omnic__jfail(r, OMNIC_E_INVALID, "can only get item pairs from a mapping");
    return omnic__jdict_items(r, OMNIC_JDICT(x), out);
}

static omnic_status f_dictsort(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("dictsort", "case_sensitive", "by", "reverse");
    if (x.kind != OMNIC_JV_DICT)
        return omnic__jfail(r, OMNIC_E_INVALID, "dictsort needs a mapping, not %s", omnic__jv_type(x));
    int by = 0;
    if (omnic__jarg_given(arg[1])) {
        const omnic__jstr *s = NULL;
        OMNIC_TRY(omnic__jarg_str(r, arg[1], "dictsort's by", &s));
        if (OMNIC_JNAME_IS(s->p, s->len, "value"))
            by = 1;
        else if (!OMNIC_JNAME_IS(s->p, s->len, "key"))
            return omnic__jfail(r, OMNIC_E_INVALID, "You can only sort by either \"key\" or \"value\"");
    }
    omnic__jv items;
    OMNIC_TRY(omnic__jdict_items(r, OMNIC_JDICT(x), &items));
    const omnic__jlist *l = OMNIC_JLIST(items);
    omnic__jv *keys = NULL;
    size_t *idx = NULL;
    void *p = NULL;
    omnic_status rc = omnic__jmem_array(r, (l->n ? l->n : 1), sizeof(omnic__jv), &p);
    if (rc == OMNIC_OK) {
        keys = p;
        for (size_t i = 0; i < l->n; i++)
            keys[i] = OMNIC_JLIST(l->v[i])->v[by];
        rc = iota(r, l->n, &idx);
    }
    if (rc == OMNIC_OK)
        rc = sort_idx(r, keys, l->n, idx, !omnic__jarg_bool(arg[0], false), omnic__jarg_bool(arg[2], false));
    if (rc == OMNIC_OK) rc = list_from_idx(r, l, idx, l->n, out);
    omnic__jmem_free(r, keys);
    omnic__jmem_free(r, idx);
    omnic__jv_unref(r, items);
    return rc;
}

static omnic_status f_escape(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JNO_ARGS("escape");
    omnic__jv s;
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
    const omnic__jstr *str = OMNIC_JSTR(s);
    omnic__jbuf b = {0};
    omnic_status rc = OMNIC_OK;
    for (size_t i = 0; i < str->len && rc == OMNIC_OK; i++) {
        switch (str->p[i]) {
        case '&':
            rc = omnic__jbuf_put(r, &b, "&amp;", 5);
            break;
        case '<':
            rc = omnic__jbuf_put(r, &b, "&lt;", 4);
            break;
        case '>':
            rc = omnic__jbuf_put(r, &b, "&gt;", 4);
            break;
        case '"':
            rc = omnic__jbuf_put(r, &b, "&#34;", 5);
            break;
        case '\'':
            rc = omnic__jbuf_put(r, &b, "&#39;", 5);
            break;
        default:
            rc = omnic__jbuf_putc(r, &b, str->p[i]);
            break;
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
            while (b > 0 && ((unsigned char)s->p[b] & 0xC0u) == 0x80u)
                b--;
        }
        e = b;
        (void)omnic__ju8_next(s->p, s->len, &e);
        return omnic__jstr_new(r, s->p + b, e - b, out);
    }
    if (x.kind == OMNIC_JV_LIST || x.kind == OMNIC_JV_DICT || x.kind == OMNIC_JV_STR ||
        x.kind == OMNIC_JV_UNDEF) {
        *out = omnic__jv_undef(NULL, OMNIC_JV_KIND_COUNT);
        return OMNIC_OK;
    }
    return omnic__jfail(r, OMNIC_E_INVALID, "'%s' object is not iterable", omnic__jv_type(x));
}

static omnic_status f_first(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JNO_ARGS("first");
    return first_last(r, x, false, out);
}
static omnic_status f_last(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JNO_ARGS("last");
    return first_last(r, x, true, out);
}

static omnic_status f_float(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("float", "default");
    double d;
    if (x.kind == OMNIC_JV_FLOAT || x.kind == OMNIC_JV_INT || x.kind == OMNIC_JV_BOOL) {
        *out = omnic__jv_float(x.kind == OMNIC_JV_FLOAT ? x.u.f
                               : x.kind == OMNIC_JV_INT ? (double)x.u.i
                                                        : x.u.b);
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
    OMNIC_JBIND("int", "default", "base");
    int64_t base = 0, v = 0;
    double d;
    OMNIC_TRY(omnic__jarg_int(r, arg[1], 10, "int's base", &base));
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
        return omnic__jfail(r, OMNIC_E_INVALID,
                            "format can't handle positional and keyword arguments at the same time");
    if (a->nkw)
        return omnic__jfail(r, OMNIC_E_UNSUPPORTED,
                            "format with keyword arguments (%%(name)s) is not supported");
    omnic__jv s, t;
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
    omnic_status rc = omnic__jlist_new(r, a->npos, true, &t);
    if (rc == OMNIC_OK) {
        for (size_t i = 0; i < a->npos; i++)
            OMNIC_JLIST(t)->v[i] = omnic__jv_ref(a->pos[i]);
        OMNIC_JLIST(t)->n = a->npos;
        rc = omnic__jbinop(r, OMNIC_JOP_MOD, s, t, out);
        omnic__jv_unref(r, t);
    }
    omnic__jv_unref(r, s);
    return rc;
}

static omnic_status f_batch(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("batch", "linecount", "fill_with");
    int64_t n = 0;
    OMNIC_TRY(omnic__jarg_int(r, arg[0], 0, "batch's linecount", &n));
    if (n <= 0) return omnic__jfail(r, OMNIC_E_INVALID, "batch's linecount must be positive");
    omnic__jv items, row = omnic__jv_none(), res = omnic__jv_none();
    OMNIC_TRY(omnic__jiter(r, x, &items));
    const omnic__jlist *l = OMNIC_JLIST(items);
    omnic_status rc = omnic__jstep(r, l->n);
    if (rc == OMNIC_OK) rc = omnic__jlist_new(r, 0, false, &res);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
        if (row.kind == OMNIC_JV_NONE && (rc = omnic__jlist_new(r, (size_t)n, false, &row)) != OMNIC_OK)
            break;
        rc = omnic__jlist_push(r, OMNIC_JLIST(row), omnic__jv_ref(l->v[i]));
        if (rc == OMNIC_OK && OMNIC_JLIST(row)->n == (size_t)n) {
            rc = omnic__jlist_push(r, OMNIC_JLIST(res), row);
            row = omnic__jv_none();
        }
    }
    if (rc == OMNIC_OK && row.kind != OMNIC_JV_NONE) {
        while (omnic__jarg_given(arg[1]) && OMNIC_JLIST(row)->n < (size_t)n && rc == OMNIC_OK)
            rc = omnic__jlist_push(r, OMNIC_JLIST(row), omnic__jv_ref(*arg[1]));
        if (rc == OMNIC_OK)
            rc = omnic__jlist_push(r, OMNIC_JLIST(res), row);
        else
            omnic__jv_unref(r, row);
        row = omnic__jv_none();
    }
    omnic__jv_unref(r, row);
    if (rc == OMNIC_OK)
        *out = res;
    else
        omnic__jv_unref(r, res);
    omnic__jv_unref(r, items);
    return rc;
}

/* groupby(attribute, default=None, case_sensitive=False): (grouper, list) tuples sorted by the
 * key; tuples answer .grouper and .list (OMNIC_JLIST_GROUP). */
static omnic_status f_groupby(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("groupby", "attribute", "default", "case_sensitive");
    omnic__jv attr_hold = omnic__jv_none();
    if (!omnic__jarg_given(arg[0])) return omnic__jfail(r, OMNIC_E_INVALID, "groupby needs an attribute");
    OMNIC_TRY(omnic__jv_to_str(r, *arg[0], &attr_hold));
    const omnic__jstr *attr = OMNIC_JSTR(attr_hold);
    bool ic = !omnic__jarg_bool(arg[2], false);
    omnic__jv items, *keys = NULL;
    size_t *idx = NULL;
    omnic_status rc = omnic__jiter(r, x, &items);
    if (rc != OMNIC_OK) {
        omnic__jv_unref(r, attr_hold);
        return rc;
    }
    const omnic__jlist *l = OMNIC_JLIST(items);
    void *p = NULL;
    if ((rc = omnic__jmem_array(r, (l->n ? l->n : 1), sizeof(omnic__jv), &p)) == OMNIC_OK) {
        keys = p;
        size_t k = 0;
        for (; k < l->n && rc == OMNIC_OK; k++)
            rc = attr_get(r, l->v[k], attr, arg[1], &keys[k]);
        if (rc != OMNIC_OK) {
            for (size_t j = 0; j + 1 < k; j++)
                omnic__jv_unref(r, keys[j]);
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
        if (rc == OMNIC_OK && (rc = omnic__jlist_new(r, 2, true, &tup)) != OMNIC_OK)
            omnic__jv_unref(r, group);
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
    OMNIC_JBIND("indent", "width", "first", "blank");
    const char *ind = "    ";
    size_t ind_len = 4;
    char spaces[256];
    if (omnic__jarg_given(arg[0]) && arg[0]->kind == OMNIC_JV_STR) {
        ind = OMNIC_JSTR(*arg[0])->p;
        ind_len = OMNIC_JSTR(*arg[0])->len;
    } else if (omnic__jarg_given(arg[0])) {
        int64_t w = 0;
        OMNIC_TRY(omnic__jarg_int(r, arg[0], 4, "indent's width", &w));
        if (w < 0) w = 0;
        if (w > (int64_t)sizeof spaces)
            return omnic__jfail(r, OMNIC_E_TOO_LARGE, "indent width %lld over 256", (long long)w);
        memset(spaces, ' ', (size_t)w);
        ind = spaces;
        ind_len = (size_t)w;
    }
    bool first = omnic__jarg_bool(arg[1], false), blank = omnic__jarg_bool(arg[2], false);
    omnic__jv s, lines;
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
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
    rc = omnic__jstr_splitlines(r, OMNIC_JSTR(s), false, &lines);
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
    OMNIC_JBIND("join", "d", "attribute");
    const omnic__jstr *sep = NULL, *attr = NULL;
    omnic__jv sepv = omnic__jv_none();
    if (omnic__jarg_given(arg[1]) && arg[1]->kind != OMNIC_JV_NONE)
        OMNIC_TRY(omnic__jarg_str(r, arg[1], "join's attribute", &attr));
    if (omnic__jarg_given(arg[0])) { /* omnic__jv_to_str(d) */
        OMNIC_TRY(omnic__jv_to_str(r, *arg[0], &sepv));
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
    case OMNIC_JV_STR:
        *n = (int64_t)OMNIC_JSTR(x)->ncp;
        return OMNIC_OK;
    case OMNIC_JV_LIST:
        *n = (int64_t)OMNIC_JLIST(x)->n;
        return OMNIC_OK;
    case OMNIC_JV_DICT:
        *n = (int64_t)OMNIC_JDICT(x)->n;
        return OMNIC_OK;
    case OMNIC_JV_UNDEF:
        *n = 0;
        return OMNIC_OK;
    default:
        return omnic__jfail(r, OMNIC_E_INVALID, "object of type '%s' has no len()", omnic__jv_type(x));
    }
}

static omnic_status f_length(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JNO_ARGS("length");
    int64_t n = 0;
    OMNIC_TRY(length_of(r, x, &n));
    *out = omnic__jv_int(n);
    return OMNIC_OK;
}

static omnic_status f_list(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JNO_ARGS("list");
    omnic__jv it;
    OMNIC_TRY(omnic__jiter(r, x, &it));
    if (it.u.o == x.u.o && x.kind == OMNIC_JV_LIST) { /* a copy, like list(x) */
        omnic__jv_unref(r, it);
        const omnic__jlist *l = OMNIC_JLIST(x);
        OMNIC_TRY(omnic__jlist_new(r, l->n, false, out));
        for (size_t i = 0; i < l->n; i++)
            OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(l->v[i]);
        OMNIC_JLIST(*out)->n = l->n;
        return OMNIC_OK;
    }
    *out = it;
    return OMNIC_OK;
}

static omnic_status sub_args(omnic__jrender *r, const omnic__jargs *a, size_t skip, bool with_kw,
                             omnic__jargs *out)
{
    *out = (omnic__jargs){0};
    for (size_t i = skip; i < a->npos; i++)
        OMNIC_TRY(omnic__jargs_push(r, out, omnic__jv_ref(a->pos[i])));
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
            if (OMNIC_JNAME_IS(a->kname[k], a->klen[k], "attribute"))
                OMNIC_TRY(omnic__jarg_str(r, &a->kw[k], "map's attribute", &attr));
            else if (OMNIC_JNAME_IS(a->kname[k], a->klen[k], "default"))
                dflt = &a->kw[k];
            else
                return omnic__jfail(r, OMNIC_E_INVALID, "map: unexpected keyword argument '%.*s'",
                                    (int)a->klen[k], a->kname[k]);
        }
        if (!attr) return omnic__jfail(r, OMNIC_E_INVALID, "map requires a filter argument");
    } else {
        OMNIC_TRY(omnic__jarg_str(r, &a->pos[0], "map's filter name", &fname));
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
        rc = fname ? omnic__jfilter(r, fname->p, fname->len, l->v[i], &fa, &v)
                   : attr_get(r, l->v[i], attr, dflt, &v);
        if (rc == OMNIC_OK) rc = omnic__jlist_push(r, OMNIC_JLIST(*out), v);
        if (rc != OMNIC_OK) omnic__jv_unref(r, *out);
    }
    omnic__jargs_free(r, &fa);
    omnic__jv_unref(r, items);
    return rc;
}

static omnic_status min_max(omnic__jrender *r, omnic__jv x, omnic__jargs *a, bool max, omnic__jv *out)
{
    OMNIC_JBIND(max ? "max" : "min", "case_sensitive", "attribute");
    const omnic__jstr *attr = NULL;
    if (omnic__jarg_given(arg[1]) && arg[1]->kind != OMNIC_JV_NONE)
        OMNIC_TRY(omnic__jarg_str(r, arg[1], "attribute", &attr));
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
    bool ic = !omnic__jarg_bool(arg[0], false);
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
        OMNIC_TRY(omnic__jarg_str(r, &a->pos[0], "attribute name", &attr));
        off = 1;
    }
    if (a->npos > off) {
        OMNIC_TRY(omnic__jarg_str(r, &a->pos[off], "test name", &test));
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
        if (attr)
            rc = attr_get(r, l->v[i], attr, NULL, &v);
        else
            v = omnic__jv_ref(l->v[i]);
        if (rc == OMNIC_OK) {
            if (test)
                rc = omnic__jtest(r, test->p, test->len, v, &ta, &t);
            else
                t = omnic__jv_truthy(v);
            omnic__jv_unref(r, v);
        }
        if (rc == OMNIC_OK && t == keep_true)
            rc = omnic__jlist_push(r, OMNIC_JLIST(*out), omnic__jv_ref(l->v[i]));
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
    OMNIC_JBIND("replace", "old", "new", "count");
    omnic__jv s, o, n;
    int64_t count = 0;
    OMNIC_TRY(omnic__jarg_int(r, arg[2], -1, "replace's count", &count));
    if (!arg[0] || !arg[1]) return omnic__jfail(r, OMNIC_E_INVALID, "replace needs old and new strings");
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
    omnic_status rc = omnic__jv_to_str(r, *arg[0], &o);
    if (rc == OMNIC_OK) {
        rc = omnic__jv_to_str(r, *arg[1], &n);
        if (rc == OMNIC_OK) {
            rc = omnic__jstr_replace(r, s, OMNIC_JSTR(o), OMNIC_JSTR(n), count, out);
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
            while (st > 0 && ((unsigned char)s->p[st] & 0xC0u) == 0x80u)
                st--;
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
        for (size_t i = 0; i < l->n; i++)
            OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(l->v[l->n - 1 - i]);
        OMNIC_JLIST(*out)->n = l->n;
    }
    omnic__jv_unref(r, items);
    return rc;
}

static omnic_status f_reverse(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JNO_ARGS("reverse");
    return reversed(r, x, out);
}

static omnic_status f_round(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("round", "precision", "method");
    int64_t prec = 0;
    OMNIC_TRY(omnic__jarg_int(r, arg[0], 0, "round's precision", &prec));
    int method = 0; /* common, ceil, floor */
    if (omnic__jarg_given(arg[1])) {
        const omnic__jstr *m = NULL;
        OMNIC_TRY(omnic__jarg_str(r, arg[1], "round's method", &m));
        if (OMNIC_JNAME_IS(m->p, m->len, "ceil"))
            method = 1;
        else if (OMNIC_JNAME_IS(m->p, m->len, "floor"))
            method = 2;
        else if (!OMNIC_JNAME_IS(m->p, m->len, "common"))
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
    OMNIC_JNO_ARGS("safe");
    *out = omnic__jv_ref(x);
    return OMNIC_OK;
}

static omnic_status f_sort(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("sort", "reverse", "case_sensitive", "attribute");
    const omnic__jstr *attr = NULL;
    omnic__jv attr_hold = omnic__jv_none(); /* an integer attribute, as its digits */
    if (omnic__jarg_given(arg[2]) && arg[2]->kind != OMNIC_JV_NONE) {
        if (arg[2]->kind == OMNIC_JV_INT) {
            OMNIC_TRY(omnic__jv_to_str(r, *arg[2], &attr_hold));
            attr = OMNIC_JSTR(attr_hold);
        } else {
            OMNIC_TRY(omnic__jarg_str(r, arg[2], "sort's attribute", &attr));
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
        if (rc == OMNIC_OK)
            rc = sort_idx(r, keys, l->n, idx, !omnic__jarg_bool(arg[1], false),
                          omnic__jarg_bool(arg[0], false));
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
    OMNIC_JNO_ARGS("string");
    return omnic__jv_to_str(r, x, out);
}

static omnic_status f_sum(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("sum", "attribute", "start");
    const omnic__jstr *attr = NULL;
    if (omnic__jarg_given(arg[0]) && arg[0]->kind != OMNIC_JV_NONE)
        OMNIC_TRY(omnic__jarg_str(r, arg[0], "sum's attribute", &attr));
    omnic__jv items, acc = omnic__jarg_given(arg[1]) ? omnic__jv_ref(*arg[1]) : omnic__jv_int(0);
    omnic_status rc = omnic__jiter(r, x, &items);
    if (rc != OMNIC_OK) {
        omnic__jv_unref(r, acc);
        return rc;
    }
    const omnic__jlist *l = OMNIC_JLIST(items);
    rc = omnic__jstep(r, l->n);
    for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
        omnic__jv v, nacc;
        if (attr)
            rc = attr_get(r, l->v[i], attr, NULL, &v);
        else
            v = omnic__jv_ref(l->v[i]);
        if (rc != OMNIC_OK) break;
        if (v.kind == OMNIC_JV_STR)
            rc = omnic__jfail(r, OMNIC_E_INVALID, "sum() can't sum strings [use ''.join(seq) instead]");
        else
            rc = omnic__jbinop(r, OMNIC_JOP_ADD, acc, v, &nacc);
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
    OMNIC_JBIND("tojson", "ensure_ascii", "indent", "separators", "sort_keys");
    omnic__jjson_opts o = {.item_sep = ", ", .key_sep = ": ", .item_sep_len = 2, .key_sep_len = 2};
    char spaces[256];
    o.ensure_ascii = omnic__jarg_bool(arg[0], false);
    o.sort_keys = omnic__jarg_bool(arg[3], false);
    if (omnic__jarg_given(arg[1]) && arg[1]->kind != OMNIC_JV_NONE) {
        if (arg[1]->kind == OMNIC_JV_STR) {
            o.indent = OMNIC_JSTR(*arg[1])->p;
            o.indent_len = OMNIC_JSTR(*arg[1])->len;
        } else {
            int64_t w = 0;
            OMNIC_TRY(omnic__jarg_int(r, arg[1], 0, "tojson's indent", &w));
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
    if (omnic__jarg_given(arg[2]) && arg[2]->kind != OMNIC_JV_NONE) {
        const omnic__jv *sv = arg[2];
        if (sv->kind != OMNIC_JV_LIST || OMNIC_JLIST(*sv)->n != 2 ||
            OMNIC_JLIST(*sv)->v[0].kind != OMNIC_JV_STR || OMNIC_JLIST(*sv)->v[1].kind != OMNIC_JV_STR)
            return omnic__jfail(r, OMNIC_E_INVALID,
                                "tojson's separators must be (item_separator, key_separator)");
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
    OMNIC_JBIND("trim", "chars");
    const omnic__jstr *chars = NULL;
    if (omnic__jarg_given(arg[0]) && arg[0]->kind != OMNIC_JV_NONE)
        OMNIC_TRY(omnic__jarg_str(r, arg[0], "trim's chars", &chars));
    omnic__jv s;
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
    omnic_status rc = omnic__jstr_strip(r, s, chars, 3, out);
    omnic__jv_unref(r, s);
    return rc;
}

static omnic_status f_truncate(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("truncate", "length", "killwords", "end", "leeway");
    int64_t length = 0, leeway = 0;
    OMNIC_TRY(omnic__jarg_int(r, arg[0], 255, "truncate's length", &length));
    OMNIC_TRY(omnic__jarg_int(r, arg[3], 5, "truncate's leeway", &leeway));
    const omnic__jstr *end = NULL;
    if (omnic__jarg_given(arg[2])) OMNIC_TRY(omnic__jarg_str(r, arg[2], "truncate's end", &end));
    size_t end_cp = end ? end->ncp : 3;
    if (length < (int64_t)end_cp || leeway < 0)
        return omnic__jfail(r, OMNIC_E_INVALID, "truncate: expected length >= %zu and leeway >= 0", end_cp);
    omnic__jv s;
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
    const omnic__jstr *str = OMNIC_JSTR(s);
    if ((int64_t)str->ncp <= length + leeway) {
        *out = s;
        return OMNIC_OK;
    }
    size_t keep = omnic__ju8_offset(str->p, str->len, (size_t)length - end_cp);
    if (!omnic__jarg_bool(arg[1], false)) { /* rsplit(" ", 1)[0] */
        size_t k = keep;
        while (k > 0 && str->p[k - 1] != ' ')
            k--;
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
    OMNIC_JBIND("unique", "case_sensitive", "attribute");
    const omnic__jstr *attr = NULL;
    if (omnic__jarg_given(arg[1]) && arg[1]->kind != OMNIC_JV_NONE)
        OMNIC_TRY(omnic__jarg_str(r, arg[1], "unique's attribute", &attr));
    bool ic = !omnic__jarg_bool(arg[0], false);
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
    case UTF8PROC_CATEGORY_NO:
        return true;
    default:
        return false;
    }
}

static omnic_status f_wordcount(omnic__jrender *r, omnic__jv x, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JNO_ARGS("wordcount");
    omnic__jv s;
    OMNIC_TRY(omnic__jv_to_str(r, x, &s));
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
    if (!fn)
        return omnic__jfail(r, OMNIC_E_INVALID, "no filter named '%.*s'", (int)(len > 64 ? 64 : len), name);
    return fn(r, x, a, out);
}
