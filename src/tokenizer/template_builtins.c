/* Chat-template builtins: the tests (is defined, is string, ...), dict / list methods (mutating
 * ones are refused as transformers' immutable sandbox refuses them) and the global functions
 * (range, namespace, dict, raise_exception, strftime_now). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#include "tokenizer/template_internal.h"

/* ---- tests ---------------------------------------------------------------------------------------- */

enum {
    T_DEFINED,
    T_UNDEFINED,
    T_NONE,
    T_BOOLEAN,
    T_FALSE,
    T_TRUE,
    T_INTEGER,
    T_FLOAT,
    T_NUMBER,
    T_STRING,
    T_MAPPING,
    T_ITERABLE,
    T_SEQUENCE,
    T_CALLABLE,
    T_ODD,
    T_EVEN,
    T_DIVISIBLEBY,
    T_EQ,
    T_NE,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_IN,
    T_SAMEAS,
    T_LOWER,
    T_UPPER,
    T_ESCAPED,
    T_FILTER,
    T_TEST
};

static const struct {
    const char *name;
    int id;
} TESTS[] = {
    {"defined", T_DEFINED},
    {"undefined", T_UNDEFINED},
    {"none", T_NONE},
    {"boolean", T_BOOLEAN},
    {"false", T_FALSE},
    {"true", T_TRUE},
    {"integer", T_INTEGER},
    {"float", T_FLOAT},
    {"number", T_NUMBER},
    {"string", T_STRING},
    {"mapping", T_MAPPING},
    {"iterable", T_ITERABLE},
    {"sequence", T_SEQUENCE},
    {"callable", T_CALLABLE},
    {"odd", T_ODD},
    {"even", T_EVEN},
    {"divisibleby", T_DIVISIBLEBY},
    {"eq", T_EQ},
    {"equalto", T_EQ},
    {"==", T_EQ},
    {"ne", T_NE},
    {"!=", T_NE},
    {"lt", T_LT},
    {"lessthan", T_LT},
    {"<", T_LT},
    {"le", T_LE},
    {"<=", T_LE},
    {"gt", T_GT},
    {"greaterthan", T_GT},
    {">", T_GT},
    {"ge", T_GE},
    {">=", T_GE},
    {"in", T_IN},
    {"sameas", T_SAMEAS},
    {"lower", T_LOWER},
    {"upper", T_UPPER},
    {"escaped", T_ESCAPED},
    {"filter", T_FILTER},
    {"test", T_TEST},
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

omnic_status omnic__jtest(omnic__jrender *r, const char *name, size_t len, omnic__jv x, omnic__jargs *a,
                          bool *out)
{
    int id = find_test(name, len);
    if (id < 0)
        return omnic__jfail(r, OMNIC_E_INVALID, "no test named '%.*s'", (int)(len > 64 ? 64 : len), name);
    const omnic__jv *y = NULL;
    int c;
    bool num = x.kind == OMNIC_JV_INT || x.kind == OMNIC_JV_FLOAT || x.kind == OMNIC_JV_BOOL;
    switch (id) {
    case T_DEFINED:
        *out = x.kind != OMNIC_JV_UNDEF;
        break;
    case T_UNDEFINED:
        *out = x.kind == OMNIC_JV_UNDEF;
        break;
    case T_NONE:
        *out = x.kind == OMNIC_JV_NONE;
        break;
    case T_BOOLEAN:
        *out = x.kind == OMNIC_JV_BOOL;
        break;
    case T_FALSE:
        *out = x.kind == OMNIC_JV_BOOL && !x.u.b;
        break;
    case T_TRUE:
        *out = x.kind == OMNIC_JV_BOOL && x.u.b;
        break;
    case T_INTEGER:
        *out = x.kind == OMNIC_JV_INT;
        break;
    case T_FLOAT:
        *out = x.kind == OMNIC_JV_FLOAT;
        break;
    case T_NUMBER:
        *out = num;
        break;
    case T_STRING:
        *out = x.kind == OMNIC_JV_STR;
        break;
    case T_MAPPING:
        *out = x.kind == OMNIC_JV_DICT;
        break;
    case T_ITERABLE:
        *out = x.kind == OMNIC_JV_LIST || x.kind == OMNIC_JV_DICT || x.kind == OMNIC_JV_STR ||
               x.kind == OMNIC_JV_UNDEF;
        break;
    case T_SEQUENCE:
        *out = x.kind == OMNIC_JV_LIST || x.kind == OMNIC_JV_DICT || x.kind == OMNIC_JV_STR ||
               x.kind == OMNIC_JV_UNDEF;
        break;
    case T_CALLABLE:
        *out = x.kind == OMNIC_JV_FUNC || x.kind == OMNIC_JV_UNDEF;
        break;
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
        if (omnic__jv_is_obj(x) || omnic__jv_is_obj(*y))
            *out = x.kind == y->kind && x.u.o == y->u.o;
        else if (x.kind != y->kind)
            *out = false;
        else if (x.kind == OMNIC_JV_BOOL)
            *out = x.u.b == y->u.b;
        else if (x.kind == OMNIC_JV_INT)
            *out = x.u.i == y->u.i && x.u.i >= -5 && x.u.i <= 256;
        else
            *out = x.kind == OMNIC_JV_NONE || x.kind == OMNIC_JV_UNDEF;
        break;
    case T_LOWER:
        OMNIC_TRY(omnic__jstr_case_test(r, x, false, out));
        break;
    case T_UPPER:
        OMNIC_TRY(omnic__jstr_case_test(r, x, true, out));
        break;
    case T_ESCAPED:
        *out = false;
        break;
    case T_FILTER:
    case T_TEST:
        *out = x.kind == OMNIC_JV_STR &&
               (id == T_FILTER ? omnic__jfilter_exists(OMNIC_JSTR(x)->p, OMNIC_JSTR(x)->len)
                               : omnic__jtest_exists(OMNIC_JSTR(x)->p, OMNIC_JSTR(x)->len));
        break;
    default:
        *out = false;
        break;
    }
    if (id != T_ODD && id != T_EVEN && id != T_DIVISIBLEBY && id != T_EQ && id != T_NE && id != T_LT &&
        id != T_LE && id != T_GT && id != T_GE && id != T_IN && id != T_SAMEAS && (a->npos || a->nkw))
        return omnic__jfail(r, OMNIC_E_INVALID, "test '%.*s' takes no arguments", (int)len, name);
    return OMNIC_OK;
}

static const char *const DICT_METHODS[] = {"get", "items", "keys", "values", "copy"};
static const char *const LIST_METHODS[] = {"count", "index"};
/* Refused (transformers' ImmutableSandboxedEnvironment). */
static const char *const MUTATORS[] = {"append",  "extend",  "insert", "pop",    "remove",
                                       "clear",   "reverse", "sort",   "update", "setdefault",
                                       "popitem", "add",     "discard"};

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
    case OMNIC_JV_STR:
        return omnic__jstr_method_exists(name, len);
    case OMNIC_JV_DICT:
        return IN_LIST(DICT_METHODS, name, len) || IN_LIST(MUTATORS, name, len);
    case OMNIC_JV_LIST:
        return IN_LIST(LIST_METHODS, name, len) || IN_LIST(MUTATORS, name, len);
    default:
        return false;
    }
}

omnic_status omnic__jmethod(omnic__jrender *r, omnic__jv self, const char *name, size_t len, omnic__jargs *a,
                            omnic__jv *out)
{
    if ((self.kind == OMNIC_JV_LIST || self.kind == OMNIC_JV_DICT) && IN_LIST(MUTATORS, name, len))
        return omnic__jfail(
            r, OMNIC_E_INVALID,
            "access to attribute '%.*s' of '%s' object is unsafe (chat templates run in an immutable "
            "sandbox, as in transformers)",
            (int)len, name, omnic__jv_type(self));
    if (self.kind == OMNIC_JV_STR) return omnic__jstr_method(r, self, name, len, a, out);
    if (self.kind == OMNIC_JV_DICT) {
        const omnic__jdict *d = OMNIC_JDICT(self);
        if (OMNIC_JNAME_IS(name, len, "get")) {
            OMNIC_JBIND("get", "key", "default");
            if (!arg[0]) return omnic__jfail(r, OMNIC_E_INVALID, "get expected at least 1 argument, got 0");
            const omnic__jv *v = arg[0]->kind == OMNIC_JV_STR
                                     ? omnic__jdict_get(d, OMNIC_JSTR(*arg[0])->p, OMNIC_JSTR(*arg[0])->len)
                                     : NULL;
            *out = v ? omnic__jv_ref(*v) : arg[1] ? omnic__jv_ref(*arg[1]) : omnic__jv_none();
            return OMNIC_OK;
        }
        OMNIC_JNO_ARGS("dict method");
        if (OMNIC_JNAME_IS(name, len, "items")) return omnic__jdict_items(r, d, out);
        if (OMNIC_JNAME_IS(name, len, "keys")) return omnic__jiter(r, self, out);
        if (OMNIC_JNAME_IS(name, len, "copy")) {
            *out = omnic__jv_ref(self);
            return OMNIC_OK;
        }
        OMNIC_TRY(omnic__jstep(r, d->n));
        OMNIC_TRY(omnic__jlist_new(r, d->n, false, out));
        for (size_t i = 0; i < d->n; i++)
            OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(d->v[i]);
        OMNIC_JLIST(*out)->n = d->n;
        return OMNIC_OK;
    }
    if (self.kind == OMNIC_JV_LIST) {
        OMNIC_JBIND("list method", "value");
        if (!arg[0])
            return omnic__jfail(r, OMNIC_E_INVALID, "%.*s() takes exactly one argument", (int)len, name);
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
        if (OMNIC_JNAME_IS(name, len, "index") && first < 0)
            return omnic__jfail(r, OMNIC_E_INVALID, "list.index(x): x not in list");
        *out = omnic__jv_int(OMNIC_JNAME_IS(name, len, "index") ? first : count);
        return OMNIC_OK;
    }
    return omnic__jfail(r, OMNIC_E_INVALID, "'%s' object has no method '%.*s'", omnic__jv_type(self),
                        (int)len, name);
}

/* ---- globals ------------------------------------------------------------------------------------------- */

enum { G_RANGE, G_NAMESPACE, G_DICT, G_RAISE, G_STRFTIME, G_COUNT };

static omnic__jfunc GLOBALS[G_COUNT] = {
    [G_RANGE] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL},
                 .fkind = OMNIC_JF_GLOBAL,
                 .id = G_RANGE,
                 .name = "range",
                 .name_len = 5},
    [G_NAMESPACE] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL},
                     .fkind = OMNIC_JF_GLOBAL,
                     .id = G_NAMESPACE,
                     .name = "namespace",
                     .name_len = 9},
    [G_DICT] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL},
                .fkind = OMNIC_JF_GLOBAL,
                .id = G_DICT,
                .name = "dict",
                .name_len = 4},
    [G_RAISE] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL},
                 .fkind = OMNIC_JF_GLOBAL,
                 .id = G_RAISE,
                 .name = "raise_exception",
                 .name_len = 15},
    [G_STRFTIME] = {.h = {-1, OMNIC_JV_FUNC, 0, NULL},
                    .fkind = OMNIC_JF_GLOBAL,
                    .id = G_STRFTIME,
                    .name = "strftime_now",
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
    if (a->npos > 1)
        return omnic__jfail(r, OMNIC_E_INVALID, "%s expected at most 1 argument, got %zu", what, a->npos);
    OMNIC_TRY(omnic__jdict_new(r, ns, out));
    omnic__jdict *d = OMNIC_JDICT(*out);
    omnic_status rc = OMNIC_OK;
    if (a->npos == 1) {
        omnic__jv src = a->pos[0];
        if (src.kind == OMNIC_JV_DICT || src.kind == OMNIC_JV_NS) {
            const omnic__jdict *s = OMNIC_JDICT(src);
            for (size_t i = 0; i < s->n && rc == OMNIC_OK; i++)
                rc = omnic__jdict_set(r, d, s->k[i], omnic__jv_ref(s->v[i]));
        } else if (src.kind == OMNIC_JV_LIST) {
            const omnic__jlist *l = OMNIC_JLIST(src);
            for (size_t i = 0; i < l->n && rc == OMNIC_OK; i++) {
                omnic__jv pair = l->v[i];
                if (pair.kind != OMNIC_JV_LIST || OMNIC_JLIST(pair)->n != 2 ||
                    OMNIC_JLIST(pair)->v[0].kind != OMNIC_JV_STR)
                    rc = omnic__jfail(r, OMNIC_E_INVALID, "%s: element %zu is not a (string key, value) pair",
                                      what, i);
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
            return omnic__jfail(r, OMNIC_E_INVALID, "'%s' object cannot be interpreted as an integer",
                                omnic__jv_type(x));
        v[i] = x.kind == OMNIC_JV_BOOL ? x.u.b : x.u.i;
    }
    int64_t start = a->npos == 1 ? 0 : v[0], stop = a->npos == 1 ? v[0] : v[1],
            step = a->npos == 3 ? v[2] : 1;
    if (step == 0) return omnic__jfail(r, OMNIC_E_INVALID, "range() arg 3 must not be zero");
    /* count in unsigned 64 bits: the bounds may be far apart */
    uint64_t span = 0, st = step > 0 ? (uint64_t)step : (uint64_t)0 - (uint64_t)step, count = 0;
    if (step > 0 && stop > start) span = (uint64_t)stop - (uint64_t)start;
    if (step < 0 && start > stop) span = (uint64_t)start - (uint64_t)stop;
    if (span) count = (span - 1) / st + 1;
    if (count > (uint64_t)r->lim.max_range)
        return omnic__jfail(r, OMNIC_E_TOO_LARGE,
                            "range() of %llu items is over %lld (OMNIC_MAX_TEMPLATE_RANGE)",
                            (unsigned long long)count, (long long)r->lim.max_range);
    OMNIC_TRY(omnic__jstep(r, (uint64_t)count));
    OMNIC_TRY(omnic__jlist_new(r, (size_t)count, false, out));
    for (int64_t i = 0; i < (int64_t)count; i++)
        OMNIC_JLIST(*out)->v[i] = omnic__jv_int(start + i * step);
    OMNIC_JLIST(*out)->n = (size_t)count;
    return OMNIC_OK;
}

static omnic_status g_strftime(omnic__jrender *r, omnic__jargs *a, omnic__jv *out)
{
    OMNIC_JBIND("strftime_now", "format");
    const omnic__jstr *fmt = NULL;
    OMNIC_TRY(omnic__jarg_str(r, arg[0], "strftime_now's format", &fmt));
    if (fmt->len > 4096)
        return omnic__jfail(r, OMNIC_E_TOO_LARGE, "strftime_now format of %zu bytes is over 4096", fmt->len);
    if (memchr(fmt->p, '\0', fmt->len)) return omnic__jfail(r, OMNIC_E_INVALID, "embedded null character");
    time_t now = r->lim.now ? (time_t)r->lim.now : time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm))
        return omnic__jfail(r, OMNIC_E_INVALID, "strftime_now: the clock is out of range");
    size_t cap = fmt->len * 32 + 64;
    omnic_status rc;
    void *p = NULL;
    if ((rc = omnic__jmem_alloc(r, cap, &p)) != OMNIC_OK) return rc;
    void *fzp = NULL;
    if ((rc = omnic__jmem_alloc(r, fmt->len + 1, &fzp)) != OMNIC_OK) {
        omnic__jmem_free(r, p);
        return rc;
    }
    char *fz = fzp;
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
    case G_RANGE:
        return g_range(r, a, out);
    case G_NAMESPACE:
        return build_mapping(r, a, true, out);
    case G_DICT:
        return build_mapping(r, a, false, out);
    case G_RAISE: {
        omnic__jbuf b = {0};
        omnic_status rc = OMNIC_OK;
        for (size_t i = 0; i < a->npos && rc == OMNIC_OK; i++)
            rc = omnic__jv_write_str(r, &b, a->pos[i]);
        if (rc == OMNIC_OK)
            rc = OMNIC_FAIL(r->err, OMNIC_E_INVALID, "chat template raised an exception at line %d: %.*s",
                            (int)r->line, (int)(b.n > 400 ? 400 : b.n), b.p ? b.p : "");
        omnic__jbuf_free(r, &b);
        return rc;
    }
    case G_STRFTIME:
        return g_strftime(r, a, out);
    default:
        return omnic__jfail(r, OMNIC_E_INTERNAL, "bad global %d", id);
    }
}
