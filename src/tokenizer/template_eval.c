/* Chat-template evaluator: scopes, expressions, statements, macro calls and Python's getattr /
 * getitem / operator semantics. Every function that produces a value returns a new reference;
 * on failure nothing is produced and everything taken is released. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tokenizer/template_internal.h"

#define JUMP_BREAK 1
#define JUMP_CONTINUE 2

/* ---- scopes -------------------------------------------------------------------------------- */

omnic_status omnic__jscope_new(omnic__jrender *r, omnic__jscope *parent, omnic__jscope **out)
{
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, sizeof(omnic__jscope), &p));
    omnic__jscope *s = p;
    *s = (omnic__jscope){.rc = 1, .parent = parent};
    if (parent) parent->rc++;
    s->next = r->scopes;
    if (r->scopes) r->scopes->prev = s;
    r->scopes = s;
    *out = s;
    return OMNIC_OK;
}

void omnic__jscope_unref(omnic__jrender *r, omnic__jscope *s)
{
    while (s) {
        if (--s->rc > 0 || r->sweeping) return;
        omnic__jscope *parent = s->parent;
        if (s->prev)
            s->prev->next = s->next;
        else
            r->scopes = s->next;
        if (s->next) s->next->prev = s->prev;
        for (size_t i = 0; i < s->n; i++)
            omnic__jv_unref(r, s->vars[i].v);
        omnic__jmem_free(r, s->vars);
        omnic__jmem_free(r, s);
        s = parent;
    }
}

omnic_status omnic__jscope_set(omnic__jrender *r, omnic__jscope *s, const char *name, size_t len, omnic__jv v)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->vars[i].len == len && !memcmp(s->vars[i].name, name, len)) {
            omnic__jv old = s->vars[i].v;
            s->vars[i].v = v;
            omnic__jv_unref(r, old);
            return OMNIC_OK;
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        void *p = NULL;
        omnic_status rc = omnic__jmem_realloc_array(r, s->vars, cap, sizeof *s->vars, &p);
        if (rc != OMNIC_OK) {
            omnic__jv_unref(r, v);
            return rc;
        }
        s->vars = p;
        s->cap = cap;
    }
    s->vars[s->n++] = (omnic__jvar){name, len, v};
    return OMNIC_OK;
}

static const omnic__jv *scope_get(const omnic__jscope *s, const char *name, size_t len)
{
    for (; s; s = s->parent)
        for (size_t i = s->n; i-- > 0;)
            if (s->vars[i].len == len && !memcmp(s->vars[i].name, name, len)) return &s->vars[i].v;
    return NULL;
}

/* ---- arguments ------------------------------------------------------------------------------ */

void omnic__jargs_free(omnic__jrender *r, omnic__jargs *a)
{
    for (size_t i = 0; i < a->npos; i++)
        omnic__jv_unref(r, a->pos[i]);
    for (size_t i = 0; i < a->nkw; i++)
        omnic__jv_unref(r, a->kw[i]);
    omnic__jmem_free(r, a->pos);
    omnic__jmem_free(r, a->kname);
    omnic__jmem_free(r, a->klen);
    omnic__jmem_free(r, a->kw);
    omnic__jv_unref(r, a->hold);
    *a = (omnic__jargs){0};
}

omnic_status omnic__jargs_push(omnic__jrender *r, omnic__jargs *a, omnic__jv v)
{
    if (a->npos == a->cap_pos) {
        size_t cap = a->cap_pos ? a->cap_pos * 2 : 4;
        void *p = NULL;
        omnic_status rc = omnic__jmem_realloc_array(r, a->pos, cap, sizeof *a->pos, &p);
        if (rc != OMNIC_OK) {
            omnic__jv_unref(r, v);
            return rc;
        }
        a->pos = p;
        a->cap_pos = cap;
    }
    a->pos[a->npos++] = v;
    return OMNIC_OK;
}

omnic_status omnic__jargs_push_kw(omnic__jrender *r, omnic__jargs *a, const char *name, size_t len,
                                  omnic__jv v)
{
    for (size_t i = 0; i < a->nkw; i++)
        if (a->klen[i] == len && !memcmp(a->kname[i], name, len)) {
            omnic__jv_unref(r, v);
            return omnic__jfail(r, OMNIC_E_INVALID, "got multiple values for keyword argument '%.*s'",
                                (int)len, name);
        }
    if (a->nkw == a->cap_kw) {
        size_t cap = a->cap_kw ? a->cap_kw * 2 : 4;
        void *p1, *p2, *p3;
        omnic_status rc = omnic__jmem_realloc_array(r, a->kname, cap, sizeof *a->kname, &p1);
        if (rc == OMNIC_OK) a->kname = p1;
        if (rc == OMNIC_OK &&
            (rc = omnic__jmem_realloc_array(r, a->klen, cap, sizeof *a->klen, &p2)) == OMNIC_OK)
            a->klen = p2;
        if (rc == OMNIC_OK && (rc = omnic__jmem_realloc_array(r, a->kw, cap, sizeof *a->kw, &p3)) == OMNIC_OK)
            a->kw = p3;
        if (rc != OMNIC_OK) {
            omnic__jv_unref(r, v);
            return rc;
        }
        a->cap_kw = cap;
    }
    a->kname[a->nkw] = name;
    a->klen[a->nkw] = len;
    a->kw[a->nkw++] = v;
    return OMNIC_OK;
}

/* Evaluates argument nodes (expressions, KWARG, STARARG, DSTARARG) into a. */
static omnic_status eval_args(omnic__jrender *r, omnic__jnode *const *kids, size_t n, omnic__jscope *s,
                              omnic__jargs *a)
{
    for (size_t i = 0; i < n; i++) {
        const omnic__jnode *k = kids[i];
        omnic__jv v;
        if (k->kind == OMNIC_JN_KWARG) {
            OMNIC_TRY(omnic__jeval(r, k->a, s, &v));
            OMNIC_TRY(omnic__jargs_push_kw(r, a, k->s, k->slen, v));
        } else if (k->kind == OMNIC_JN_STARARG) {
            omnic__jv it, l;
            OMNIC_TRY(omnic__jeval(r, k->a, s, &it));
            omnic_status rc = omnic__jiter(r, it, &l);
            omnic__jv_unref(r, it);
            OMNIC_TRY(rc);
            for (size_t j = 0; j < OMNIC_JLIST(l)->n && rc == OMNIC_OK; j++)
                rc = omnic__jargs_push(r, a, omnic__jv_ref(OMNIC_JLIST(l)->v[j]));
            omnic__jv_unref(r, l);
            OMNIC_TRY(rc);
        } else if (k->kind == OMNIC_JN_DSTARARG) {
            OMNIC_TRY(omnic__jeval(r, k->a, s, &v));
            if (v.kind != OMNIC_JV_DICT) {
                omnic_status rc = omnic__jfail(
                    r, OMNIC_E_INVALID, "argument after ** must be a mapping, not %s", omnic__jv_type(v));
                omnic__jv_unref(r, v);
                return rc;
            }
            if (a->hold.kind != OMNIC_JV_UNDEF) {
                omnic__jv_unref(r, v);
                return omnic__jfail(r, OMNIC_E_INVALID, "only one ** argument is allowed");
            }
            a->hold = v; /* keeps the key strings the keyword names point to */
            omnic_status rc = OMNIC_OK;
            const omnic__jdict *d = OMNIC_JDICT(v);
            for (size_t j = 0; j < d->n && rc == OMNIC_OK; j++)
                rc = omnic__jargs_push_kw(r, a, d->k[j]->p, d->k[j]->len, omnic__jv_ref(d->v[j]));
            OMNIC_TRY(rc);
        } else {
            OMNIC_TRY(omnic__jeval(r, k, s, &v));
            OMNIC_TRY(omnic__jargs_push(r, a, v));
        }
    }
    return OMNIC_OK;
}

/* ---- undefined ------------------------------------------------------------------------------- */

static const char *obj_name(int kind)
{
    switch (kind) {
    case OMNIC_JV_DICT:
        return "dict object";
    case OMNIC_JV_NS:
        return "Namespace object";
    case OMNIC_JV_STR:
        return "str object";
    case OMNIC_JV_LIST:
        return "list object";
    case OMNIC_JV_INT:
        return "int object";
    case OMNIC_JV_FLOAT:
        return "float object";
    case OMNIC_JV_BOOL:
        return "bool object";
    case OMNIC_JV_NONE:
        return "None";
    case OMNIC_JV_LOOP:
        return "LoopContext object";
    default:
        return "object";
    }
}

omnic_status omnic__jundef_fail(omnic__jrender *r, omnic__jv v)
{
    const omnic__jnode *n = v.u.node;
    if (!n) return omnic__jfail(r, OMNIC_E_INVALID, "value is undefined");
    int32_t saved = r->line;
    r->line = n->line;
    omnic_status rc;
    if (n->kind == OMNIC_JN_NAME || n->kind == OMNIC_JN_PARAM)
        rc = omnic__jfail(r, OMNIC_E_INVALID, "'%.*s' is undefined", (int)n->slen, n->s);
    else if (n->kind == OMNIC_JN_GETATTR)
        rc = omnic__jfail(r, OMNIC_E_INVALID, "'%s' has no attribute '%.*s'", obj_name(v.aux), (int)n->slen,
                          n->s);
    else if (n->kind == OMNIC_JN_GETITEM && n->b->kind == OMNIC_JN_CONST && n->b->k.kind == OMNIC_JV_STR)
        rc = omnic__jfail(r, OMNIC_E_INVALID, "'%s' has no attribute '%.*s'", obj_name(v.aux),
                          (int)(OMNIC_JSTR(n->b->k)->len > 100 ? 100 : OMNIC_JSTR(n->b->k)->len),
                          OMNIC_JSTR(n->b->k)->p);
    else if (n->kind == OMNIC_JN_GETITEM && n->b->kind == OMNIC_JN_CONST && n->b->k.kind == OMNIC_JV_INT)
        rc = omnic__jfail(r, OMNIC_E_INVALID, "'%s' has no element %lld", obj_name(v.aux),
                          (long long)n->b->k.u.i);
    else if (n->kind == OMNIC_JN_GETITEM)
        rc = omnic__jfail(r, OMNIC_E_INVALID, "'%s' has no such item", obj_name(v.aux));
    else
        rc = omnic__jfail(r, OMNIC_E_INVALID, "value is undefined");
    r->line = saved;
    return rc;
}

/* ---- attribute and item access --------------------------------------------------------------- */

static omnic_status bound_method(omnic__jrender *r, omnic__jv self, const char *name, size_t len,
                                 omnic__jv *out)
{
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, sizeof(omnic__jfunc), &p));
    omnic__jfunc *f = p;
    *f = (omnic__jfunc){
        .h = {.rc = 1, .kind = OMNIC_JV_FUNC}, .fkind = OMNIC_JF_METHOD, .name = name, .name_len = len};
    f->self = omnic__jv_ref(self);
    *out = omnic__jv_obj(&f->h);
    return OMNIC_OK;
}

static omnic_status loop_attr(omnic__jrender *r, omnic__jv obj, const char *name, size_t len, bool *found,
                              omnic__jv *out)
{
    const omnic__jloop *l = OMNIC_JLOOP(obj);
    size_t i = l->index0, n = l->length;
    *found = true;
#define IS(lit) (len == sizeof(lit) - 1 && !memcmp(name, lit, len))
    if (IS("index"))
        *out = omnic__jv_int((int64_t)i + 1);
    else if (IS("index0"))
        *out = omnic__jv_int((int64_t)i);
    else if (IS("revindex"))
        *out = omnic__jv_int((int64_t)(n - i));
    else if (IS("revindex0"))
        *out = omnic__jv_int((int64_t)(n - i - 1));
    else if (IS("first"))
        *out = omnic__jv_bool(i == 0);
    else if (IS("last"))
        *out = omnic__jv_bool(i + 1 == n);
    else if (IS("length"))
        *out = omnic__jv_int((int64_t)n);
    else if (IS("depth"))
        *out = omnic__jv_int(1);
    else if (IS("depth0"))
        *out = omnic__jv_int(0);
    else if (IS("previtem"))
        *out = i > 0 ? omnic__jv_ref(l->items->v[i - 1]) : omnic__jv_undef(NULL, OMNIC_JV_LOOP);
    else if (IS("nextitem"))
        *out = i + 1 < n ? omnic__jv_ref(l->items->v[i + 1]) : omnic__jv_undef(NULL, OMNIC_JV_LOOP);
    else if (IS("cycle"))
        return bound_method(r, obj, "cycle", 5, out);
    else
        *found = false;
#undef IS
    return OMNIC_OK;
}

omnic_status omnic__jgetattr(omnic__jrender *r, omnic__jv obj, const char *name, size_t len,
                             const omnic__jnode *n, omnic__jv *out)
{
    switch (obj.kind) {
    case OMNIC_JV_UNDEF:
        return omnic__jundef_fail(r, obj);
    case OMNIC_JV_DICT:
        if (omnic__jmethod_exists(obj.kind, name, len)) return bound_method(r, obj, name, len, out);
        __attribute__((fallthrough));
    case OMNIC_JV_NS: {
        const omnic__jv *v = omnic__jdict_get(OMNIC_JDICT(obj), name, len);
        if (v) {
            *out = omnic__jv_ref(*v);
            return OMNIC_OK;
        }
        break;
    }
    case OMNIC_JV_STR:
    case OMNIC_JV_LIST:
        if (omnic__jmethod_exists(obj.kind, name, len)) return bound_method(r, obj, name, len, out);
        if (obj.kind == OMNIC_JV_LIST && (obj.u.o->flags & OMNIC_JLIST_GROUP)) {
            bool grouper = len == 7 && !memcmp(name, "grouper", 7),
                 list = len == 4 && !memcmp(name, "list", 4);
            if (grouper || list) {
                *out = omnic__jv_ref(OMNIC_JLIST(obj)->v[grouper ? 0 : 1]);
                return OMNIC_OK;
            }
        }
        break;
    case OMNIC_JV_LOOP: {
        bool found;
        OMNIC_TRY(loop_attr(r, obj, name, len, &found, out));
        if (found) return OMNIC_OK;
        break;
    }
    default:
        break;
    }
    *out = omnic__jv_undef(n, obj.kind);
    return OMNIC_OK;
}

/* Index i (may be negative) into a sequence of n items: the position, or -1 when out of range. */
static int64_t seq_index(int64_t i, size_t n)
{
    if (i < 0) i += (int64_t)n;
    return i >= 0 && (uint64_t)i < n ? i : -1;
}

omnic_status omnic__jgetitem(omnic__jrender *r, omnic__jv obj, omnic__jv key, const omnic__jnode *n,
                             omnic__jv *out)
{
    if (obj.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, obj);
    bool int_key = key.kind == OMNIC_JV_INT || key.kind == OMNIC_JV_BOOL;
    int64_t ik = key.kind == OMNIC_JV_BOOL ? key.u.b : key.u.i;
    switch (obj.kind) {
    case OMNIC_JV_DICT:
    case OMNIC_JV_NS:
        if (key.kind == OMNIC_JV_STR) {
            const omnic__jv *v = omnic__jdict_get(OMNIC_JDICT(obj), OMNIC_JSTR(key)->p, OMNIC_JSTR(key)->len);
            if (v) {
                *out = omnic__jv_ref(*v);
                return OMNIC_OK;
            }
        }
        break;
    case OMNIC_JV_LIST:
        if (int_key) {
            int64_t i = seq_index(ik, OMNIC_JLIST(obj)->n);
            if (i >= 0) {
                *out = omnic__jv_ref(OMNIC_JLIST(obj)->v[i]);
                return OMNIC_OK;
            }
        }
        break;
    case OMNIC_JV_STR:
        if (int_key) {
            const omnic__jstr *s = OMNIC_JSTR(obj);
            int64_t i = seq_index(ik, s->ncp);
            if (i >= 0) {
                size_t b = s->ncp == s->len ? (size_t)i : omnic__ju8_offset(s->p, s->len, (size_t)i), e = b;
                (void)omnic__ju8_next(s->p, s->len, &e);
                return omnic__jstr_new(r, s->p + b, e - b, out);
            }
        }
        break;
    default:
        break;
    }
    if (key.kind == OMNIC_JV_STR && obj.kind != OMNIC_JV_NS)
        return omnic__jgetattr(r, obj, OMNIC_JSTR(key)->p, OMNIC_JSTR(key)->len, n, out);
    *out = omnic__jv_undef(n, obj.kind);
    return OMNIC_OK;
}

/* Python slice semantics on a length n: fills start, stop, step and the item count. */
static omnic_status slice_bounds(omnic__jrender *r, const omnic__jv *parts, size_t n, int64_t *start,
                                 int64_t *step, size_t *count)
{
    int64_t v[3];
    bool given[3];
    for (int k = 0; k < 3; k++) {
        given[k] = parts[k].kind != OMNIC_JV_UNDEF && parts[k].kind != OMNIC_JV_NONE;
        if (given[k] && parts[k].kind != OMNIC_JV_INT && parts[k].kind != OMNIC_JV_BOOL)
            return omnic__jfail(r, OMNIC_E_INVALID, "slice indices must be integers or None, not %s",
                                omnic__jv_type(parts[k]));
        v[k] = parts[k].kind == OMNIC_JV_BOOL ? parts[k].u.b : parts[k].u.i;
    }
    int64_t st = given[2] ? v[2] : 1, len = (int64_t)n;
    if (st == 0) return omnic__jfail(r, OMNIC_E_INVALID, "slice step cannot be zero");
    if (st == INT64_MIN) st = -INT64_MAX;
    int64_t a, b;
    if (st > 0) {
        a = given[0] ? v[0] : 0;
        b = given[1] ? v[1] : len;
        if (a < 0) a = a < -len ? 0 : a + len;
        if (a > len) a = len;
        if (b < 0) b = b < -len ? 0 : b + len;
        if (b > len) b = len;
        *count = b > a ? (size_t)((b - a - 1) / st + 1) : 0;
    } else {
        a = given[0] ? v[0] : len - 1;
        b = given[1] ? v[1] : -1 - len; /* "to the beginning" */
        if (a < 0) a = a < -len ? -1 : a + len;
        if (a >= len) a = len - 1;
        if (b < 0) b = b < -len ? -1 : b + len;
        if (b >= len) b = len - 1;
        *count = a > b ? (size_t)((a - b - 1) / (-st) + 1) : 0;
    }
    *start = a;
    *step = st;
    return OMNIC_OK;
}

static omnic_status do_slice(omnic__jrender *r, omnic__jv obj, const omnic__jv *parts, omnic__jv *out)
{
    int64_t start, step;
    size_t count;
    if (obj.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, obj);
    if (obj.kind == OMNIC_JV_LIST) {
        const omnic__jlist *l = OMNIC_JLIST(obj);
        OMNIC_TRY(slice_bounds(r, parts, l->n, &start, &step, &count));
        OMNIC_TRY(omnic__jstep(r, count));
        omnic__jv res;
        OMNIC_TRY(omnic__jlist_new(r, count, obj.u.o->flags & OMNIC_JLIST_TUPLE, &res));
        for (size_t k = 0; k < count; k++) {
            omnic_status rc =
                omnic__jlist_push(r, OMNIC_JLIST(res), omnic__jv_ref(l->v[start + (int64_t)k * step]));
            if (rc != OMNIC_OK) {
                omnic__jv_unref(r, res);
                return rc;
            }
        }
        *out = res;
        return OMNIC_OK;
    }
    if (obj.kind == OMNIC_JV_STR) {
        const omnic__jstr *s = OMNIC_JSTR(obj);
        OMNIC_TRY(slice_bounds(r, parts, s->ncp, &start, &step, &count));
        if (step == 1) {
            size_t b = omnic__ju8_offset(s->p, s->len, (size_t)start);
            size_t e = b + omnic__ju8_offset(s->p + b, s->len - b, count);
            return omnic__jstr_new(r, s->p + b, e - b, out);
        }
        OMNIC_TRY(omnic__jstep(r, count));
        /* code point offsets, then gather */
        void *p = NULL;
        size_t *offs;
        OMNIC_TRY(omnic__jmem_array(r, (s->ncp + 1), sizeof(size_t), &p));
        offs = p;
        for (size_t i = 0, k = 0; k <= s->ncp; k++) {
            offs[k] = i;
            if (i < s->len) (void)omnic__ju8_next(s->p, s->len, &i);
        }
        omnic__jbuf b = {0};
        omnic_status rc = OMNIC_OK;
        for (size_t k = 0; k < count && rc == OMNIC_OK; k++) {
            size_t cp = (size_t)(start + (int64_t)k * step);
            rc = omnic__jbuf_put(r, &b, s->p + offs[cp], offs[cp + 1] - offs[cp]);
        }
        omnic__jmem_free(r, offs);
        if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
        omnic__jbuf_free(r, &b);
        return rc;
    }
    return omnic__jfail(r, OMNIC_E_INVALID, "'%s' object is not subscriptable with a slice",
                        omnic__jv_type(obj));
}

/* ---- iteration ---------------------------------------------------------------------------------- */

omnic_status omnic__jiter(omnic__jrender *r, omnic__jv v, omnic__jv *out)
{
    switch (v.kind) {
    case OMNIC_JV_LIST: {
        if (!(v.u.o->flags & OMNIC_JLIST_TUPLE)) {
            *out = omnic__jv_ref(v);
            return OMNIC_OK;
        }
        const omnic__jlist *l = OMNIC_JLIST(v);
        OMNIC_TRY(omnic__jlist_new(r, l->n, false, out));
        for (size_t i = 0; i < l->n; i++)
            OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(l->v[i]);
        OMNIC_JLIST(*out)->n = l->n;
        return OMNIC_OK;
    }
    case OMNIC_JV_UNDEF:
        return omnic__jlist_new(r, 0, false, out);
    case OMNIC_JV_DICT: {
        const omnic__jdict *d = OMNIC_JDICT(v);
        OMNIC_TRY(omnic__jlist_new(r, d->n, false, out));
        for (size_t i = 0; i < d->n; i++)
            OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(omnic__jv_obj(&d->k[i]->h));
        OMNIC_JLIST(*out)->n = d->n;
        return OMNIC_OK;
    }
    case OMNIC_JV_STR: {
        const omnic__jstr *s = OMNIC_JSTR(v);
        OMNIC_TRY(omnic__jstep(r, s->ncp));
        OMNIC_TRY(omnic__jlist_new(r, s->ncp, false, out));
        for (size_t i = 0; i < s->len;) {
            size_t b = i;
            (void)omnic__ju8_next(s->p, s->len, &i);
            omnic__jv c;
            omnic_status rc = omnic__jstr_new(r, s->p + b, i - b, &c);
            if (rc == OMNIC_OK) rc = omnic__jlist_push(r, OMNIC_JLIST(*out), c);
            if (rc != OMNIC_OK) {
                omnic__jv_unref(r, *out);
                return rc;
            }
        }
        return OMNIC_OK;
    }
    default:
        return omnic__jfail(r, OMNIC_E_INVALID, "'%s' object is not iterable", omnic__jv_type(v));
    }
}

/* ---- operators ------------------------------------------------------------------------------------ */

static bool is_num(omnic__jv v)
{
    return v.kind == OMNIC_JV_INT || v.kind == OMNIC_JV_FLOAT || v.kind == OMNIC_JV_BOOL;
}
static double as_f(omnic__jv v)
{
    return v.kind == OMNIC_JV_FLOAT ? v.u.f : v.kind == OMNIC_JV_BOOL ? (double)v.u.b : (double)v.u.i;
}
static int64_t as_i(omnic__jv v)
{
    return v.kind == OMNIC_JV_BOOL ? v.u.b : v.u.i;
}

static const char *op_sym(int op)
{
    switch (op) {
    case OMNIC_JOP_ADD:
        return "+";
    case OMNIC_JOP_SUB:
        return "-";
    case OMNIC_JOP_MUL:
        return "*";
    case OMNIC_JOP_DIV:
        return "/";
    case OMNIC_JOP_FLOORDIV:
        return "//";
    case OMNIC_JOP_MOD:
        return "%";
    case OMNIC_JOP_POW:
        return "** or pow()";
    default:
        return "?";
    }
}

static omnic_status int_overflow(omnic__jrender *r, int op)
{
    return omnic__jfail(r, OMNIC_E_INVALID, "integer overflow in '%s' (omnic's integers are 64-bit)",
                        op_sym(op));
}

/* Repeats seq (str or list) k times. */
static omnic_status repeat(omnic__jrender *r, omnic__jv seq, int64_t k, omnic__jv *out)
{
    if (k < 0) k = 0;
    if (seq.kind == OMNIC_JV_STR) {
        const omnic__jstr *s = OMNIC_JSTR(seq);
        size_t total;
        if (!omnic_size_mul(&total, s->len, (size_t)k) || total > r->lim.max_output)
            return omnic__jfail(r, OMNIC_E_TOO_LARGE,
                                "string repetition over %zu bytes (OMNIC_MAX_TEMPLATE_OUTPUT)",
                                r->lim.max_output);
        omnic__jbuf b = {0};
        omnic_status rc = total ? omnic__jbuf_reserve(r, &b, total) : OMNIC_OK; /* one allocation */
        if (rc == OMNIC_OK && total) { /* one copy, then doubling copies of what is there */
            memcpy(b.p, s->p, s->len);
            for (size_t have = s->len; have < total; have *= 2)
                memcpy(b.p + have, b.p, have < total - have ? have : total - have);
            b.n = total;
            b.p[total] = '\0';
        }
        if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
        omnic__jbuf_free(r, &b);
        return rc;
    }
    const omnic__jlist *l = OMNIC_JLIST(seq);
    size_t total;
    if (!omnic_size_mul(&total, l->n, (size_t)k)) return omnic__jstep(r, UINT64_MAX);
    OMNIC_TRY(omnic__jstep(r, total));
    OMNIC_TRY(omnic__jlist_new(r, total, seq.u.o->flags & OMNIC_JLIST_TUPLE, out));
    for (size_t i = 0; i < total; i++)
        OMNIC_JLIST(*out)->v[i] = omnic__jv_ref(l->v[i % l->n]);
    OMNIC_JLIST(*out)->n = total;
    return OMNIC_OK;
}

static omnic_status type_error(omnic__jrender *r, int op, omnic__jv a, omnic__jv b)
{
    if (a.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, a);
    if (b.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, b);
    if (op == OMNIC_JOP_ADD && a.kind == OMNIC_JV_STR)
        return omnic__jfail(r, OMNIC_E_INVALID, "can only concatenate str (not \"%s\") to str",
                            omnic__jv_type(b));
    if (op == OMNIC_JOP_ADD && a.kind == OMNIC_JV_LIST)
        return omnic__jfail(r, OMNIC_E_INVALID, "can only concatenate %s (not \"%s\") to %s",
                            omnic__jv_type(a), omnic__jv_type(b), omnic__jv_type(a));
    return omnic__jfail(r, OMNIC_E_INVALID, "unsupported operand type(s) for %s: '%s' and '%s'", op_sym(op),
                        omnic__jv_type(a), omnic__jv_type(b));
}

omnic_status omnic__jbinop(omnic__jrender *r, int op, omnic__jv a, omnic__jv b, omnic__jv *out)
{
    if (is_num(a) && is_num(b)) {
        bool fl = a.kind == OMNIC_JV_FLOAT || b.kind == OMNIC_JV_FLOAT;
        int64_t x = as_i(a), y = as_i(b), z;
        double fx = as_f(a), fy = as_f(b);
        switch (op) {
        case OMNIC_JOP_ADD:
            if (fl)
                *out = omnic__jv_float(fx + fy);
            else if (__builtin_add_overflow(x, y, &z))
                return int_overflow(r, op);
            else
                *out = omnic__jv_int(z);
            return OMNIC_OK;
        case OMNIC_JOP_SUB:
            if (fl)
                *out = omnic__jv_float(fx - fy);
            else if (__builtin_sub_overflow(x, y, &z))
                return int_overflow(r, op);
            else
                *out = omnic__jv_int(z);
            return OMNIC_OK;
        case OMNIC_JOP_MUL:
            if (fl)
                *out = omnic__jv_float(fx * fy);
            else if (__builtin_mul_overflow(x, y, &z))
                return int_overflow(r, op);
            else
                *out = omnic__jv_int(z);
            return OMNIC_OK;
        case OMNIC_JOP_DIV:
            if (fy == 0.0) return omnic__jfail(r, OMNIC_E_INVALID, "division by zero");
            *out = omnic__jv_float(fx / fy);
            return OMNIC_OK;
        case OMNIC_JOP_FLOORDIV:
        case OMNIC_JOP_MOD:
            if (fl) { /* Python's float divmod */
                if (fy == 0.0)
                    return omnic__jfail(r, OMNIC_E_INVALID,
                                        op == OMNIC_JOP_MOD ? "float modulo"
                                                            : "float floor division by zero");
                double mod = fmod(fx, fy), div = (fx - mod) / fy, fdiv;
                if (mod != 0.0) {
                    if ((fy < 0) != (mod < 0)) {
                        mod += fy;
                        div -= 1.0;
                    }
                } else {
                    mod = copysign(0.0, fy);
                }
                if (div != 0.0) {
                    fdiv = floor(div);
                    if (div - fdiv > 0.5) fdiv += 1.0;
                } else {
                    fdiv = copysign(0.0, fx / fy);
                }
                *out = omnic__jv_float(op == OMNIC_JOP_MOD ? mod : fdiv);
                return OMNIC_OK;
            }
            if (y == 0) return omnic__jfail(r, OMNIC_E_INVALID, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) {
                if (op == OMNIC_JOP_MOD)
                    *out = omnic__jv_int(0);
                else
                    return int_overflow(r, op);
                return OMNIC_OK;
            }
            {
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) {
                    q--;
                    m += y;
                }
                *out = omnic__jv_int(op == OMNIC_JOP_MOD ? m : q);
            }
            return OMNIC_OK;
        case OMNIC_JOP_POW:
            if (!fl && y >= 0) {
                int64_t res = 1, base = x;
                int64_t e = y;
                while (e > 0) {
                    if (e & 1) {
                        if (__builtin_mul_overflow(res, base, &res)) return int_overflow(r, op);
                    }
                    e >>= 1;
                    if (e && __builtin_mul_overflow(base, base, &base)) return int_overflow(r, op);
                }
                *out = omnic__jv_int(res);
                return OMNIC_OK;
            }
            if (fx == 0.0 && fy < 0)
                return omnic__jfail(r, OMNIC_E_INVALID, "0.0 cannot be raised to a negative power");
            {
                double v = pow(fx, fy);
                if (isnan(v) && !isnan(fx) && !isnan(fy))
                    return omnic__jfail(r, OMNIC_E_INVALID,
                                        "negative number cannot be raised to a fractional power");
                *out = omnic__jv_float(v);
            }
            return OMNIC_OK;
        default:
            break;
        }
    }
    if (op == OMNIC_JOP_ADD && a.kind == OMNIC_JV_STR && b.kind == OMNIC_JV_STR) {
        const omnic__jstr *x = OMNIC_JSTR(a), *y = OMNIC_JSTR(b);
        if (y->len == 0) {
            *out = omnic__jv_ref(a);
            return OMNIC_OK;
        }
        if (x->len == 0) {
            *out = omnic__jv_ref(b);
            return OMNIC_OK;
        }
        omnic__jbuf buf = {0};
        omnic_status rc = omnic__jbuf_put(r, &buf, x->p, x->len);
        if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, &buf, y->p, y->len);
        if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &buf, out);
        omnic__jbuf_free(r, &buf);
        return rc;
    }
    if (op == OMNIC_JOP_ADD && a.kind == OMNIC_JV_LIST && b.kind == OMNIC_JV_LIST &&
        (a.u.o->flags & OMNIC_JLIST_TUPLE) == (b.u.o->flags & OMNIC_JLIST_TUPLE)) {
        const omnic__jlist *x = OMNIC_JLIST(a), *y = OMNIC_JLIST(b);
        OMNIC_TRY(omnic__jstep(r, x->n + y->n));
        OMNIC_TRY(omnic__jlist_new(r, x->n + y->n, a.u.o->flags & OMNIC_JLIST_TUPLE, out));
        omnic__jlist *l = OMNIC_JLIST(*out);
        for (size_t i = 0; i < x->n; i++)
            l->v[l->n++] = omnic__jv_ref(x->v[i]);
        for (size_t i = 0; i < y->n; i++)
            l->v[l->n++] = omnic__jv_ref(y->v[i]);
        return OMNIC_OK;
    }
    if (op == OMNIC_JOP_MUL) {
        if ((a.kind == OMNIC_JV_STR || a.kind == OMNIC_JV_LIST) &&
            (b.kind == OMNIC_JV_INT || b.kind == OMNIC_JV_BOOL))
            return repeat(r, a, as_i(b), out);
        if ((b.kind == OMNIC_JV_STR || b.kind == OMNIC_JV_LIST) &&
            (a.kind == OMNIC_JV_INT || a.kind == OMNIC_JV_BOOL))
            return repeat(r, b, as_i(a), out);
    }
    if (op == OMNIC_JOP_MOD && a.kind == OMNIC_JV_STR) return omnic__jstr_percent(r, OMNIC_JSTR(a), b, out);
    return type_error(r, op, a, b);
}

/* x in container (Python's `in`). */
omnic_status omnic__jcontains(omnic__jrender *r, omnic__jv x, omnic__jv c, bool *out)
{
    *out = false;
    switch (c.kind) {
    case OMNIC_JV_STR:
        if (x.kind != OMNIC_JV_STR)
            return omnic__jfail(r, OMNIC_E_INVALID, "'in <string>' requires string as left operand, not %s",
                                omnic__jv_type(x));
        if (OMNIC_JSTR(x)->len == 0)
            *out = true;
        else
            *out = memmem(OMNIC_JSTR(c)->p, OMNIC_JSTR(c)->len, OMNIC_JSTR(x)->p, OMNIC_JSTR(x)->len) != NULL;
        return OMNIC_OK;
    case OMNIC_JV_LIST: {
        const omnic__jlist *l = OMNIC_JLIST(c);
        OMNIC_TRY(omnic__jstep(r, l->n));
        for (size_t i = 0; i < l->n && !*out; i++)
            OMNIC_TRY(omnic__jv_eq(r, x, l->v[i], 0, out));
        return OMNIC_OK;
    }
    case OMNIC_JV_DICT:
        if (x.kind == OMNIC_JV_STR)
            *out = omnic__jdict_get(OMNIC_JDICT(c), OMNIC_JSTR(x)->p, OMNIC_JSTR(x)->len) != NULL;
        return OMNIC_OK;
    case OMNIC_JV_UNDEF:
        return OMNIC_OK;
    default:
        return omnic__jfail(r, OMNIC_E_INVALID, "argument of type '%s' is not iterable", omnic__jv_type(c));
    }
}

static omnic_status compare(omnic__jrender *r, int op, omnic__jv a, omnic__jv b, bool *out)
{
    int c;
    switch (op) {
    case OMNIC_JOP_EQ:
        return omnic__jv_eq(r, a, b, 0, out);
    case OMNIC_JOP_NE:
        OMNIC_TRY(omnic__jv_eq(r, a, b, 0, out));
        *out = !*out;
        return OMNIC_OK;
    case OMNIC_JOP_IN:
        return omnic__jcontains(r, a, b, out);
    case OMNIC_JOP_NOTIN:
        OMNIC_TRY(omnic__jcontains(r, a, b, out));
        *out = !*out;
        return OMNIC_OK;
    default:
        break;
    }
    if ((a.kind == OMNIC_JV_FLOAT && isnan(a.u.f)) || (b.kind == OMNIC_JV_FLOAT && isnan(b.u.f))) {
        if (is_num(a) && is_num(b)) {
            *out = false;
            return OMNIC_OK;
        }
    }
    if (a.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, a);
    if (b.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, b);
    omnic_status rc = omnic__jv_cmp(r, a, b, false, 0, &c);
    if (rc != OMNIC_OK) {
        const char *sym = op == OMNIC_JOP_LT   ? "<"
                          : op == OMNIC_JOP_LE ? "<="
                          : op == OMNIC_JOP_GT ? ">"
                                               : ">=";
        if (rc == OMNIC_E_INVALID && !(is_num(a) && is_num(b)))
            return omnic__jfail(r, OMNIC_E_INVALID, "'%s' not supported between instances of '%s' and '%s'",
                                sym, omnic__jv_type(a), omnic__jv_type(b));
        return rc;
    }
    *out = op == OMNIC_JOP_LT ? c < 0 : op == OMNIC_JOP_LE ? c <= 0 : op == OMNIC_JOP_GT ? c > 0 : c >= 0;
    return OMNIC_OK;
}

/* ---- calls ------------------------------------------------------------------------------------------- */

static omnic_status call_macro(omnic__jrender *r, const omnic__jfunc *f, omnic__jargs *a, omnic__jv *out)
{
    const omnic__jnode *m = f->node;
    const char *mname = f->fkind == OMNIC_JF_MACRO ? m->s : "caller";
    int mlen = f->fkind == OMNIC_JF_MACRO ? (int)m->slen : 6;
    if (r->depth >= r->lim.max_call_depth)
        return omnic__jfail(
            r, OMNIC_E_TOO_LARGE,
            "macro calls nested deeper than %d (OMNIC_MAX_TEMPLATE_CALL_DEPTH) calling '%.*s'",
            r->lim.max_call_depth, mlen, mname);
    OMNIC_TRY(omnic__jstep(r, 1));
    omnic__jscope *s;
    OMNIC_TRY(omnic__jscope_new(r, f->closure, &s));
    omnic_status rc = OMNIC_OK;
    bool *used = NULL;
    omnic__jv extra_kw = omnic__jv_none();
    if (a->nkw) {
        void *p = NULL;
        if ((rc = omnic__jmem_array(r, a->nkw, sizeof(bool), &p)) != OMNIC_OK) goto out;
        used = p;
        memset(used, 0, a->nkw * sizeof(bool));
    }
    for (size_t i = 0; i < m->nkids && rc == OMNIC_OK; i++) {
        const omnic__jnode *param = m->kids[i];
        omnic__jv v;
        bool have = false;
        if (i < a->npos) {
            v = omnic__jv_ref(a->pos[i]);
            have = true;
        }
        for (size_t k = 0; k < a->nkw; k++)
            if (a->klen[k] == param->slen && !memcmp(a->kname[k], param->s, param->slen)) {
                if (have) {
                    omnic__jv_unref(r, v);
                    rc = omnic__jfail(r, OMNIC_E_INVALID,
                                      "macro '%.*s' got multiple values for argument '%.*s'", mlen, mname,
                                      (int)param->slen, param->s);
                    goto out;
                }
                v = omnic__jv_ref(a->kw[k]);
                used[k] = true;
                have = true;
            }
        if (!have && param->a) {
            if ((rc = omnic__jeval(r, param->a, s, &v)) != OMNIC_OK) goto out;
            have = true;
        }
        if (!have) v = omnic__jv_undef(param, OMNIC_JV_KIND_COUNT);
        rc = omnic__jscope_set(r, s, param->s, param->slen, v);
    }
    if (rc != OMNIC_OK) goto out;
    if (a->npos > m->nkids) {
        if (!(m->flags & OMNIC_JMACRO_VARARGS)) {
            rc = omnic__jfail(r, OMNIC_E_INVALID, "macro '%.*s' takes not more than %zu argument(s)", mlen,
                              mname, m->nkids);
            goto out;
        }
    }
    if (m->flags & OMNIC_JMACRO_VARARGS) {
        omnic__jv t;
        size_t extra = a->npos > m->nkids ? a->npos - m->nkids : 0;
        if ((rc = omnic__jlist_new(r, extra, true, &t)) != OMNIC_OK) goto out;
        for (size_t i = 0; i < extra; i++)
            OMNIC_JLIST(t)->v[i] = omnic__jv_ref(a->pos[m->nkids + i]);
        OMNIC_JLIST(t)->n = extra;
        if ((rc = omnic__jscope_set(r, s, "varargs", 7, t)) != OMNIC_OK) goto out;
    }
    if (m->flags & OMNIC_JMACRO_KWARGS) {
        if ((rc = omnic__jdict_new(r, false, &extra_kw)) != OMNIC_OK) goto out;
    }
    for (size_t k = 0; k < a->nkw; k++) {
        if (used[k]) continue;
        if (a->klen[k] == 6 && !memcmp(a->kname[k], "caller", 6) && f->fkind == OMNIC_JF_MACRO) {
            if (m->flags & OMNIC_JMACRO_CALLER) {
                if ((rc = omnic__jscope_set(r, s, "caller", 6, omnic__jv_ref(a->kw[k]))) != OMNIC_OK)
                    goto out;
                continue;
            }
        }
        if (!(m->flags & OMNIC_JMACRO_KWARGS)) {
            rc = omnic__jfail(r, OMNIC_E_INVALID, "macro '%.*s' takes no keyword argument '%.*s'", mlen,
                              mname, (int)a->klen[k], a->kname[k]);
            goto out;
        }
        if ((rc = omnic__jdict_setc(r, OMNIC_JDICT(extra_kw), a->kname[k], a->klen[k],
                                    omnic__jv_ref(a->kw[k]))) != OMNIC_OK)
            goto out;
    }
    if (m->flags & OMNIC_JMACRO_KWARGS) {
        rc = omnic__jscope_set(r, s, "kwargs", 6, extra_kw);
        extra_kw = omnic__jv_none();
        if (rc != OMNIC_OK) goto out;
    }
    {
        omnic__jbuf buf = {0}, *saved = r->out;
        int32_t line = r->line;
        r->out = &buf;
        r->depth++;
        rc = omnic__jexec(r, m->b, s);
        r->depth--;
        r->out = saved;
        r->line = line;
        r->jump = 0;
        if (rc == OMNIC_OK)
            rc = omnic__jstr_from_buf(r, &buf, out);
        else
            omnic__jbuf_free(r, &buf);
    }
out:
    omnic__jv_unref(r, extra_kw);
    omnic__jmem_free(r, used);
    omnic__jscope_unref(r, s);
    return rc;
}

static omnic_status loop_cycle(omnic__jrender *r, const omnic__jloop *l, omnic__jargs *a, omnic__jv *out)
{
    if (a->npos == 0) return omnic__jfail(r, OMNIC_E_INVALID, "no items for cycling given");
    *out = omnic__jv_ref(a->pos[l->index0 % a->npos]);
    return OMNIC_OK;
}

omnic_status omnic__jcall(omnic__jrender *r, omnic__jv fn, omnic__jargs *a, omnic__jv *out)
{
    if (fn.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, fn);
    if (fn.kind != OMNIC_JV_FUNC)
        return omnic__jfail(r, OMNIC_E_INVALID, "'%s' object is not callable", omnic__jv_type(fn));
    const omnic__jfunc *f = OMNIC_JFUNC(fn);
    switch (f->fkind) {
    case OMNIC_JF_MACRO:
    case OMNIC_JF_CALLER:
        return call_macro(r, f, a, out);
    case OMNIC_JF_GLOBAL:
        return omnic__jglobal_call(r, f->id, a, out);
    case OMNIC_JF_METHOD:
        if (f->self.kind == OMNIC_JV_LOOP) return loop_cycle(r, OMNIC_JLOOP(f->self), a, out);
        return omnic__jmethod(r, f->self, f->name, f->name_len, a, out);
    default:
        return omnic__jfail(r, OMNIC_E_INTERNAL, "bad function kind");
    }
}

static omnic_status make_func(omnic__jrender *r, int fkind, const omnic__jnode *n, omnic__jscope *closure,
                              omnic__jv *out)
{
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, sizeof(omnic__jfunc), &p));
    omnic__jfunc *f = p;
    *f = (omnic__jfunc){
        .h = {.rc = 1, .kind = OMNIC_JV_FUNC}, .fkind = (uint8_t)fkind, .node = n, .closure = closure};
    closure->rc++;
    *out = omnic__jv_obj(&f->h);
    return OMNIC_OK;
}

/* ---- expressions ----------------------------------------------------------------------------------- */

static omnic_status eval_call(omnic__jrender *r, const omnic__jnode *n, omnic__jscope *s, omnic__jv *out)
{
    omnic__jv fn = omnic__jv_none();
    omnic__jargs a = {0};
    omnic_status rc;
    const omnic__jnode *callee = n->a;
    if (callee->kind == OMNIC_JN_GETATTR) {
        omnic__jv obj;
        OMNIC_TRY(omnic__jeval(r, callee->a, s, &obj));
        r->line = n->line;
        if ((obj.kind == OMNIC_JV_STR || obj.kind == OMNIC_JV_LIST || obj.kind == OMNIC_JV_DICT) &&
            omnic__jmethod_exists(obj.kind, callee->s, callee->slen)) {
            rc = eval_args(r, n->kids, n->nkids, s, &a);
            r->line = n->line;
            if (rc == OMNIC_OK) rc = omnic__jmethod(r, obj, callee->s, callee->slen, &a, out);
            omnic__jargs_free(r, &a);
            omnic__jv_unref(r, obj);
            return rc;
        }
        rc = omnic__jgetattr(r, obj, callee->s, callee->slen, callee, &fn);
        omnic__jv_unref(r, obj);
        OMNIC_TRY(rc);
    } else {
        OMNIC_TRY(omnic__jeval(r, callee, s, &fn));
    }
    rc = eval_args(r, n->kids, n->nkids, s, &a);
    r->line = n->line;
    if (rc == OMNIC_OK) rc = omnic__jcall(r, fn, &a, out);
    omnic__jargs_free(r, &a);
    omnic__jv_unref(r, fn);
    return rc;
}

/* Applies a filter chain (FILTER nodes; the innermost has a == NULL and gets x). */
static omnic_status eval_filter_chain(omnic__jrender *r, const omnic__jnode *n, omnic__jscope *s, omnic__jv x,
                                      omnic__jv *out)
{
    omnic__jv in;
    if (n->a)
        OMNIC_TRY(eval_filter_chain(r, n->a, s, x, &in));
    else
        in = omnic__jv_ref(x);
    omnic__jargs a = {0};
    omnic_status rc = eval_args(r, n->kids, n->nkids, s, &a);
    r->line = n->line;
    if (rc == OMNIC_OK) rc = omnic__jfilter(r, n->s, n->slen, in, &a, out);
    omnic__jargs_free(r, &a);
    omnic__jv_unref(r, in);
    return rc;
}

omnic_status omnic__jeval(omnic__jrender *r, const omnic__jnode *n, omnic__jscope *s, omnic__jv *out)
{
    r->line = n->line;
    omnic_status rc = OMNIC_OK;
    omnic__jv a = omnic__jv_none(), b = omnic__jv_none();
    switch (n->kind) {
    case OMNIC_JN_CONST:
        *out = omnic__jv_ref(n->k);
        return OMNIC_OK;
    case OMNIC_JN_NAME: {
        const omnic__jv *v = scope_get(s, n->s, n->slen);
        if (v) {
            *out = omnic__jv_ref(*v);
            return OMNIC_OK;
        }
        int g = omnic__jglobal_find(n->s, n->slen);
        *out = g >= 0 ? omnic__jglobal_value(g) : omnic__jv_undef(n, OMNIC_JV_KIND_COUNT);
        return OMNIC_OK;
    }
    case OMNIC_JN_GETATTR:
        OMNIC_TRY(omnic__jeval(r, n->a, s, &a));
        r->line = n->line;
        rc = omnic__jgetattr(r, a, n->s, n->slen, n, out);
        break;
    case OMNIC_JN_GETITEM:
        OMNIC_TRY(omnic__jeval(r, n->a, s, &a));
        if ((rc = omnic__jeval(r, n->b, s, &b)) != OMNIC_OK) break;
        r->line = n->line;
        rc = omnic__jgetitem(r, a, b, n, out);
        break;
    case OMNIC_JN_SLICE: {
        omnic__jv parts[3] = {omnic__jv_none(), omnic__jv_none(), omnic__jv_none()};
        const omnic__jnode *pn[3] = {n->b, n->c, n->d};
        OMNIC_TRY(omnic__jeval(r, n->a, s, &a));
        for (int k = 0; k < 3 && rc == OMNIC_OK; k++)
            if (pn[k]) rc = omnic__jeval(r, pn[k], s, &parts[k]);
        r->line = n->line;
        if (rc == OMNIC_OK) rc = do_slice(r, a, parts, out);
        for (int k = 0; k < 3; k++)
            omnic__jv_unref(r, parts[k]);
        break;
    }
    case OMNIC_JN_CALL:
        return eval_call(r, n, s, out);
    case OMNIC_JN_FILTER: {
        OMNIC_TRY(omnic__jeval(r, n->a, s, &a));
        omnic__jargs args = {0};
        rc = eval_args(r, n->kids, n->nkids, s, &args);
        r->line = n->line;
        if (rc == OMNIC_OK) rc = omnic__jfilter(r, n->s, n->slen, a, &args, out);
        omnic__jargs_free(r, &args);
        break;
    }
    case OMNIC_JN_TEST: {
        OMNIC_TRY(omnic__jeval(r, n->a, s, &a));
        omnic__jargs args = {0};
        bool res = false;
        rc = eval_args(r, n->kids, n->nkids, s, &args);
        r->line = n->line;
        if (rc == OMNIC_OK) rc = omnic__jtest(r, n->s, n->slen, a, &args, &res);
        omnic__jargs_free(r, &args);
        if (rc == OMNIC_OK) *out = omnic__jv_bool(n->op ? !res : res);
        break;
    }
    case OMNIC_JN_UNARY:
        OMNIC_TRY(omnic__jeval(r, n->a, s, &a));
        r->line = n->line;
        if (n->op == OMNIC_JOP_NOT)
            *out = omnic__jv_bool(!omnic__jv_truthy(a));
        else if (a.kind == OMNIC_JV_FLOAT)
            *out = omnic__jv_float(n->op == OMNIC_JOP_NEG ? -a.u.f : a.u.f);
        else if (a.kind == OMNIC_JV_INT || a.kind == OMNIC_JV_BOOL) {
            int64_t x = as_i(a);
            if (n->op == OMNIC_JOP_NEG && x == INT64_MIN)
                rc = int_overflow(r, OMNIC_JOP_SUB);
            else
                *out = omnic__jv_int(n->op == OMNIC_JOP_NEG ? -x : x);
        } else if (a.kind == OMNIC_JV_UNDEF)
            rc = omnic__jundef_fail(r, a);
        else
            rc = omnic__jfail(r, OMNIC_E_INVALID, "bad operand type for unary %c: '%s'",
                              n->op == OMNIC_JOP_NEG ? '-' : '+', omnic__jv_type(a));
        break;
    case OMNIC_JN_BINOP:
        OMNIC_TRY(omnic__jeval(r, n->a, s, &a));
        if (n->op == OMNIC_JOP_AND || n->op == OMNIC_JOP_OR) {
            bool t = omnic__jv_truthy(a);
            if ((n->op == OMNIC_JOP_AND) != t) {
                *out = a;
                return OMNIC_OK;
            }
            omnic__jv_unref(r, a);
            return omnic__jeval(r, n->b, s, out);
        }
        if ((rc = omnic__jeval(r, n->b, s, &b)) != OMNIC_OK) break;
        r->line = n->line;
        rc = omnic__jbinop(r, n->op, a, b, out);
        break;
    case OMNIC_JN_CONCAT: {
        omnic__jbuf buf = {0};
        for (size_t i = 0; i < n->nkids && rc == OMNIC_OK; i++) {
            omnic__jv x;
            if ((rc = omnic__jeval(r, n->kids[i], s, &x)) != OMNIC_OK) break;
            rc = omnic__jv_write_str(r, &buf, x);
            omnic__jv_unref(r, x);
        }
        if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &buf, out);
        omnic__jbuf_free(r, &buf);
        return rc;
    }
    case OMNIC_JN_COMPARE: {
        OMNIC_TRY(omnic__jeval(r, n->a, s, &a));
        bool res = true;
        for (size_t i = 0; i < n->nkids && res; i++) {
            if ((rc = omnic__jeval(r, n->kids[i]->a, s, &b)) != OMNIC_OK) break;
            r->line = n->line;
            if ((rc = compare(r, n->kids[i]->op, a, b, &res)) != OMNIC_OK) break;
            omnic__jv_unref(r, a);
            a = b;
            b = omnic__jv_none();
        }
        if (rc == OMNIC_OK) *out = omnic__jv_bool(res);
        break;
    }
    case OMNIC_JN_COND:
        OMNIC_TRY(omnic__jeval(r, n->a, s, &a));
        {
            bool t = omnic__jv_truthy(a);
            omnic__jv_unref(r, a);
            if (t) return omnic__jeval(r, n->b, s, out);
            if (n->c) return omnic__jeval(r, n->c, s, out);
            *out = omnic__jv_undef(NULL, OMNIC_JV_KIND_COUNT);
            return OMNIC_OK;
        }
    case OMNIC_JN_LIST:
    case OMNIC_JN_TUPLE:
        OMNIC_TRY(omnic__jlist_new(r, n->nkids, n->kind == OMNIC_JN_TUPLE, &a));
        for (size_t i = 0; i < n->nkids && rc == OMNIC_OK; i++) {
            omnic__jv x;
            if ((rc = omnic__jeval(r, n->kids[i], s, &x)) == OMNIC_OK)
                rc = omnic__jlist_push(r, OMNIC_JLIST(a), x);
        }
        if (rc == OMNIC_OK) {
            *out = a;
            return OMNIC_OK;
        }
        break;
    case OMNIC_JN_DICT:
        OMNIC_TRY(omnic__jdict_new(r, false, &a));
        for (size_t i = 0; i < n->nkids && rc == OMNIC_OK; i++) {
            omnic__jv k, v;
            if ((rc = omnic__jeval(r, n->kids[i]->a, s, &k)) != OMNIC_OK) break;
            if (k.kind != OMNIC_JV_STR) {
                rc = omnic__jfail(r, OMNIC_E_UNSUPPORTED, "dict keys must be strings here, not %s",
                                  omnic__jv_type(k));
                omnic__jv_unref(r, k);
                break;
            }
            if ((rc = omnic__jeval(r, n->kids[i]->b, s, &v)) == OMNIC_OK)
                rc = omnic__jdict_set(r, OMNIC_JDICT(a), OMNIC_JSTR(k), v);
            omnic__jv_unref(r, k);
        }
        if (rc == OMNIC_OK) {
            *out = a;
            return OMNIC_OK;
        }
        break;
    default:
        rc = omnic__jfail(r, OMNIC_E_INTERNAL, "unexpected node %d in an expression", n->kind);
        break;
    }
    omnic__jv_unref(r, a);
    omnic__jv_unref(r, b);
    return rc;
}

/* ---- statements ------------------------------------------------------------------------------------- */

/* Binds target (NAME or TUPLE of NAME) to v in s; takes the reference of v. */
static omnic_status assign(omnic__jrender *r, const omnic__jnode *target, omnic__jscope *s, omnic__jv v)
{
    if (target->kind == OMNIC_JN_NAME) return omnic__jscope_set(r, s, target->s, target->slen, v);
    omnic__jv items;
    omnic_status rc;
    if (v.kind == OMNIC_JV_LIST || v.kind == OMNIC_JV_STR || v.kind == OMNIC_JV_DICT) {
        rc = omnic__jiter(r, v, &items);
    } else {
        rc = omnic__jfail(r, OMNIC_E_INVALID, "cannot unpack non-iterable %s object", omnic__jv_type(v));
    }
    omnic__jv_unref(r, v);
    OMNIC_TRY(rc);
    const omnic__jlist *l = OMNIC_JLIST(items);
    if (l->n != target->nkids) {
        rc = l->n > target->nkids
                 ? omnic__jfail(r, OMNIC_E_INVALID, "too many values to unpack (expected %zu)", target->nkids)
                 : omnic__jfail(r, OMNIC_E_INVALID, "not enough values to unpack (expected %zu, got %zu)",
                                target->nkids, l->n);
    }
    for (size_t i = 0; i < target->nkids && rc == OMNIC_OK; i++)
        rc = omnic__jscope_set(r, s, target->kids[i]->s, target->kids[i]->slen, omnic__jv_ref(l->v[i]));
    omnic__jv_unref(r, items);
    return rc;
}

static omnic_status exec_set(omnic__jrender *r, const omnic__jnode *target, omnic__jscope *s, omnic__jv v)
{
    if (target->kind != OMNIC_JN_NSATTR) return assign(r, target, s, v);
    const omnic__jv *ns = scope_get(s, target->a->s, target->a->slen);
    if (!ns || ns->kind != OMNIC_JV_NS) {
        omnic__jv_unref(r, v);
        if (!ns)
            return omnic__jfail(r, OMNIC_E_INVALID, "'%.*s' is undefined", (int)target->a->slen,
                                target->a->s);
        return omnic__jfail(r, OMNIC_E_INVALID,
                            "cannot assign attribute on non-namespace object ('%.*s' is %s)",
                            (int)target->a->slen, target->a->s, omnic__jv_type(*ns));
    }
    return omnic__jdict_setc(r, OMNIC_JDICT(*ns), target->s, target->slen, v);
}

static omnic_status exec_for(omnic__jrender *r, const omnic__jnode *n, omnic__jscope *s)
{
    omnic__jv it, items = omnic__jv_none(), loopv = omnic__jv_none();
    OMNIC_TRY(omnic__jeval(r, n->b, s, &it));
    r->line = n->line;
    omnic_status rc = omnic__jiter(r, it, &items);
    omnic__jv_unref(r, it);
    OMNIC_TRY(rc);
    if (n->c) { /* {% for x in xs if test %}: filter first, so loop.length counts the kept items */
        omnic__jv kept;
        if ((rc = omnic__jlist_new(r, 0, false, &kept)) != OMNIC_OK) goto out;
        for (size_t i = 0; i < OMNIC_JLIST(items)->n && rc == OMNIC_OK; i++) {
            omnic__jscope *fs;
            omnic__jv t;
            if ((rc = omnic__jstep(r, 1)) != OMNIC_OK) break;
            if ((rc = omnic__jscope_new(r, s, &fs)) != OMNIC_OK) break;
            omnic__jv item = OMNIC_JLIST(items)->v[i];
            rc = assign(r, n->a, fs, omnic__jv_ref(item));
            if (rc == OMNIC_OK) rc = omnic__jeval(r, n->c, fs, &t);
            omnic__jscope_unref(r, fs);
            if (rc != OMNIC_OK) break;
            bool keep = omnic__jv_truthy(t);
            omnic__jv_unref(r, t);
            if (keep) rc = omnic__jlist_push(r, OMNIC_JLIST(kept), omnic__jv_ref(item));
        }
        omnic__jv_unref(r, items);
        items = kept;
        if (rc != OMNIC_OK) goto out;
    }
    {
        void *p = NULL;
        if ((rc = omnic__jmem_alloc(r, sizeof(omnic__jloop), &p)) != OMNIC_OK) goto out;
        omnic__jloop *l = p;
        *l = (omnic__jloop){.h = {.rc = 1, .kind = OMNIC_JV_LOOP},
                            .length = OMNIC_JLIST(items)->n,
                            .items = (omnic__jlist *)omnic__jv_ref(items).u.o};
        loopv = omnic__jv_obj(&l->h);
    }
    bool iterated = false;
    for (size_t i = 0; i < OMNIC_JLIST(items)->n; i++) {
        if ((rc = omnic__jstep(r, 1)) != OMNIC_OK) goto out;
        OMNIC_JLOOP(loopv)->index0 = i;
        omnic__jscope *is;
        if ((rc = omnic__jscope_new(r, s, &is)) != OMNIC_OK) goto out;
        rc = omnic__jscope_set(r, is, "loop", 4, omnic__jv_ref(loopv));
        r->line = n->line;
        if (rc == OMNIC_OK) rc = assign(r, n->a, is, omnic__jv_ref(OMNIC_JLIST(items)->v[i]));
        if (rc == OMNIC_OK) rc = omnic__jexec(r, n->d, is);
        omnic__jscope_unref(r, is);
        if (rc != OMNIC_OK) goto out;
        if (r->jump == JUMP_BREAK) {
            r->jump = 0;
            break;
        }
        if (r->jump == JUMP_CONTINUE) {
            r->jump = 0;
            continue;
        }
        iterated = true;
    }
    if (!iterated && n->e) {
        omnic__jscope *es;
        if ((rc = omnic__jscope_new(r, s, &es)) != OMNIC_OK) goto out;
        rc = omnic__jexec(r, n->e, es);
        omnic__jscope_unref(r, es);
    }
out:
    omnic__jv_unref(r, loopv);
    omnic__jv_unref(r, items);
    return rc;
}

/* Renders body into a new string value. */
static omnic_status capture(omnic__jrender *r, const omnic__jnode *body, omnic__jscope *s, omnic__jv *out)
{
    omnic__jbuf buf = {0}, *saved = r->out;
    r->out = &buf;
    omnic_status rc = omnic__jexec(r, body, s);
    r->out = saved;
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &buf, out);
    omnic__jbuf_free(r, &buf);
    return rc;
}

omnic_status omnic__jexec(omnic__jrender *r, const omnic__jnode *n, omnic__jscope *s)
{
    omnic__jv v;
    omnic_status rc;
    r->line = n->line;
    switch (n->kind) {
    case OMNIC_JN_BODY:
        for (size_t i = 0; i < n->nkids; i++) {
            OMNIC_TRY(omnic__jexec(r, n->kids[i], s));
            if (r->jump) return OMNIC_OK;
        }
        return OMNIC_OK;
    case OMNIC_JN_TEXT:
        return omnic__jbuf_put(r, r->out, n->s, n->slen);
    case OMNIC_JN_OUTPUT:
        OMNIC_TRY(omnic__jeval(r, n->a, s, &v));
        rc = omnic__jv_write_str(r, r->out, v);
        omnic__jv_unref(r, v);
        return rc;
    case OMNIC_JN_IF:
        OMNIC_TRY(omnic__jeval(r, n->a, s, &v));
        {
            bool t = omnic__jv_truthy(v);
            omnic__jv_unref(r, v);
            if (t) return omnic__jexec(r, n->b, s);
            return n->c ? omnic__jexec(r, n->c, s) : OMNIC_OK;
        }
    case OMNIC_JN_FOR:
        return exec_for(r, n, s);
    case OMNIC_JN_SET:
        OMNIC_TRY(omnic__jeval(r, n->b, s, &v));
        r->line = n->line;
        return exec_set(r, n->a, s, v);
    case OMNIC_JN_SET_BLOCK:
        OMNIC_TRY(capture(r, n->b, s, &v));
        if (n->c) {
            omnic__jv f;
            rc = eval_filter_chain(r, n->c, s, v, &f);
            omnic__jv_unref(r, v);
            OMNIC_TRY(rc);
            v = f;
        }
        r->line = n->line;
        return exec_set(r, n->a, s, v);
    case OMNIC_JN_MACRO:
        OMNIC_TRY(make_func(r, OMNIC_JF_MACRO, n, s, &v));
        return omnic__jscope_set(r, s, n->s, n->slen, v);
    case OMNIC_JN_CALL_BLOCK: {
        const omnic__jnode *call = n->a;
        omnic__jv fn, caller, res;
        omnic__jargs a = {0};
        OMNIC_TRY(omnic__jeval(r, call->a, s, &fn));
        rc = make_func(r, OMNIC_JF_CALLER, n, s, &caller);
        if (rc != OMNIC_OK) {
            omnic__jv_unref(r, fn);
            return rc;
        }
        rc = eval_args(r, call->kids, call->nkids, s, &a);
        if (rc == OMNIC_OK)
            rc = omnic__jargs_push_kw(r, &a, "caller", 6, caller);
        else
            omnic__jv_unref(r, caller);
        r->line = n->line;
        if (rc == OMNIC_OK) rc = omnic__jcall(r, fn, &a, &res);
        omnic__jargs_free(r, &a);
        omnic__jv_unref(r, fn);
        OMNIC_TRY(rc);
        rc = omnic__jv_write_str(r, r->out, res);
        omnic__jv_unref(r, res);
        return rc;
    }
    case OMNIC_JN_FILTER_BLOCK: {
        omnic__jv f;
        OMNIC_TRY(capture(r, n->b, s, &v));
        rc = eval_filter_chain(r, n->a, s, v, &f);
        omnic__jv_unref(r, v);
        OMNIC_TRY(rc);
        rc = omnic__jv_write_str(r, r->out, f);
        omnic__jv_unref(r, f);
        return rc;
    }
    case OMNIC_JN_WITH: {
        omnic__jscope *ws;
        OMNIC_TRY(omnic__jscope_new(r, s, &ws));
        rc = OMNIC_OK;
        for (size_t i = 0; i < n->nkids && rc == OMNIC_OK; i++) {
            if ((rc = omnic__jeval(r, n->kids[i]->b, s, &v)) == OMNIC_OK)
                rc = assign(r, n->kids[i]->a, ws, v);
        }
        if (rc == OMNIC_OK) rc = omnic__jexec(r, n->b, ws);
        omnic__jscope_unref(r, ws);
        return rc;
    }
    case OMNIC_JN_BREAK:
        r->jump = JUMP_BREAK;
        return OMNIC_OK;
    case OMNIC_JN_CONTINUE:
        r->jump = JUMP_CONTINUE;
        return OMNIC_OK;
    default:
        return omnic__jfail(r, OMNIC_E_INTERNAL, "unexpected node %d as a statement", n->kind);
    }
}
