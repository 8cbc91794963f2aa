/* Chat-template values: accounted allocation, refcounting with iterative frees, strings,
 * lists, dicts, conversion from JSON, and Python's str(), repr(), json.dumps(), == and <. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "core/sync.h"
#include "tokenizer/template_internal.h"

/* ---- UTF-8 ------------------------------------------------------------------------------ */

uint32_t omnic__ju8_next(const char *s, size_t len, size_t *i)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t k = *i;
    uint32_t c = u[k];
    if (c < 0x80u || k + 1 >= len) {
        *i = k + 1;
        return c;
    }
    if (c < 0xE0u) {
        *i = k + 2;
        return ((c & 0x1Fu) << 6) | (u[k + 1] & 0x3Fu);
    }
    if (c < 0xF0u || k + 3 >= len) {
        if (k + 2 >= len) {
            *i = len;
            return 0xFFFD;
        }
        *i = k + 3;
        return ((c & 0x0Fu) << 12) | ((u[k + 1] & 0x3Fu) << 6) | (u[k + 2] & 0x3Fu);
    }
    *i = k + 4;
    return ((c & 0x07u) << 18) | ((u[k + 1] & 0x3Fu) << 12) | ((u[k + 2] & 0x3Fu) << 6) | (u[k + 3] & 0x3Fu);
}

size_t omnic__ju8_put(char *out, uint32_t cp)
{
    if (cp < 0x80u) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800u) {
        out[0] = (char)(0xC0u | (cp >> 6));
        out[1] = (char)(0x80u | (cp & 0x3Fu));
        return 2;
    }
    if (cp < 0x10000u) {
        out[0] = (char)(0xE0u | (cp >> 12));
        out[1] = (char)(0x80u | ((cp >> 6) & 0x3Fu));
        out[2] = (char)(0x80u | (cp & 0x3Fu));
        return 3;
    }
    out[0] = (char)(0xF0u | (cp >> 18));
    out[1] = (char)(0x80u | ((cp >> 12) & 0x3Fu));
    out[2] = (char)(0x80u | ((cp >> 6) & 0x3Fu));
    out[3] = (char)(0x80u | (cp & 0x3Fu));
    return 4;
}

size_t omnic__ju8_count(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0u) != 0x80u;
    return n;
}

size_t omnic__ju8_offset(const char *s, size_t len, size_t k)
{
    size_t i = 0;
    while (i < len && k > 0) {
        i++;
        while (i < len && ((unsigned char)s[i] & 0xC0u) == 0x80u)
            i++;
        k--;
    }
    return i;
}

bool omnic__ju8_space(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

size_t omnic__ju8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = u[i];
        size_t need;
        uint32_t cp, min;
        if (c < 0x80u) {
            i++;
            continue;
        } else if (c >= 0xC2u && c < 0xE0u) {
            need = 1, cp = c & 0x1Fu, min = 0x80;
        } else if (c >= 0xE0u && c < 0xF0u) {
            need = 2, cp = c & 0x0Fu, min = 0x800;
        } else if (c >= 0xF0u && c < 0xF5u) {
            need = 3, cp = c & 0x07u, min = 0x10000;
        } else {
            return i;
        }
        if (i + need >= len) return i;
        for (size_t k = 1; k <= need; k++) {
            if ((u[i + k] & 0xC0u) != 0x80u) return i;
            cp = (cp << 6) | (u[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFFu || (cp >= 0xD800u && cp <= 0xDFFFu)) return i;
        i += need + 1;
    }
    return i;
}

/* ---- errors, steps, memory ------------------------------------------------------------- */

omnic_status omnic__jfail(omnic__jrender *r, omnic_status code, const char *fmt, ...)
{
    char msg[440];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return OMNIC_FAIL(r->err, code, "chat template error at line %d: %s", (int)r->line, msg);
}

omnic_status omnic__jstep(omnic__jrender *r, uint64_t n)
{
    if (n > r->lim.max_iterations - r->steps || r->steps + n > r->lim.max_iterations)
        return omnic__jfail(r, OMNIC_E_TOO_LARGE,
                            "over %llu loop iterations, macro calls and filter items "
                            "(the step budget: omnic serve --max-template-steps, else "
                            "OMNIC_MAX_TEMPLATE_ITERATIONS)",
                            (unsigned long long)r->lim.max_iterations);
    uint64_t before = r->steps;
    r->steps += n;
    /* the clock is read once per 1024 steps */
    if (r->lim.deadline > 0 && (before >> 10) != (r->steps >> 10) && omnic__now() >= r->lim.deadline)
        return omnic__jfail(r, OMNIC_E_TIMEOUT, "the request's time ran out after %llu steps",
                            (unsigned long long)r->steps);
    return OMNIC_OK;
}

#define JMEM_HDR 16

static omnic_status mem_over(omnic__jrender *r, size_t want)
{
    return omnic__jfail(
        r, OMNIC_E_TOO_LARGE,
        "needs more than %zu bytes of memory (OMNIC_MAX_TEMPLATE_MEMORY; %zu in use, %zu more "
        "requested)",
        r->lim.max_memory, r->live, want);
}

/* Counts n more bytes of work (allocated) against max_work. */
static omnic_status work(omnic__jrender *r, size_t n)
{
    if (n > r->lim.max_work - r->work || r->work > r->lim.max_work)
        return omnic__jfail(r, OMNIC_E_TOO_LARGE,
                            "builds more than %zu bytes of strings, lists and dicts in all "
                            "(omnic serve --max-template-bytes, else OMNIC_MAX_TEMPLATE_WORK_BYTES; %zu "
                            "so far, %zu more requested)",
                            r->lim.max_work, r->work, n);
    r->work += n;
    return OMNIC_OK;
}

omnic_status omnic__jmem_alloc(omnic__jrender *r, size_t n, void **out)
{
    size_t total;
    if (!omnic_size_add(&total, n, JMEM_HDR) || total > r->lim.max_memory - r->live ||
        r->live > r->lim.max_memory)
        return mem_over(r, n);
    OMNIC_TRY(work(r, total));
    unsigned char *p = omnic_malloc(total);
    if (!p) return omnic__jfail(r, OMNIC_E_NOMEM, "out of memory (%zu bytes)", total);
    memcpy(p, &total, sizeof total);
    r->live += total;
    if (r->live > r->peak) r->peak = r->live;
    *out = p + JMEM_HDR;
    return OMNIC_OK;
}

omnic_status omnic__jmem_realloc(omnic__jrender *r, void *p, size_t n, void **out)
{
    if (!p) return omnic__jmem_alloc(r, n, out);
    unsigned char *b = (unsigned char *)p - JMEM_HDR;
    size_t old, total;
    memcpy(&old, b, sizeof old);
    if (!omnic_size_add(&total, n, JMEM_HDR)) return mem_over(r, n);
    if (total > old && total - old > r->lim.max_memory - r->live) return mem_over(r, total - old);
    if (total > old) OMNIC_TRY(work(r, total - old));
    unsigned char *nb = omnic_realloc(b, total);
    if (!nb) return omnic__jfail(r, OMNIC_E_NOMEM, "out of memory (%zu bytes)", total);
    memcpy(nb, &total, sizeof total);
    r->live = r->live - old + total;
    if (r->live > r->peak) r->peak = r->live;
    *out = nb + JMEM_HDR;
    return OMNIC_OK;
}

omnic_status omnic__jmem_array(omnic__jrender *r, size_t n, size_t elem, void **out)
{
    size_t bytes;
    if (!omnic_size_mul(&bytes, n, elem)) return mem_over(r, SIZE_MAX);
    return omnic__jmem_alloc(r, bytes, out);
}

omnic_status omnic__jmem_realloc_array(omnic__jrender *r, void *p, size_t n, size_t elem, void **out)
{
    size_t bytes;
    if (!omnic_size_mul(&bytes, n, elem)) return mem_over(r, SIZE_MAX);
    return omnic__jmem_realloc(r, p, bytes, out);
}

void omnic__jmem_free(omnic__jrender *r, void *p)
{
    if (!p) return;
    unsigned char *b = (unsigned char *)p - JMEM_HDR;
    size_t old;
    memcpy(&old, b, sizeof old);
    r->live -= old;
    omnic_free(b);
}

/* ---- output buffers ---------------------------------------------------------------------- */

omnic_status omnic__jbuf_reserve(omnic__jrender *r, omnic__jbuf *b, size_t extra)
{
    size_t need;
    if (!omnic_size_add(&need, b->n, extra) || need > r->lim.max_output)
        return omnic__jfail(r, OMNIC_E_TOO_LARGE,
                            "output or string over %zu bytes (OMNIC_MAX_TEMPLATE_OUTPUT)", r->lim.max_output);
    if (need + 1 <= b->cap) return OMNIC_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need + 1)
        cap = cap > SIZE_MAX / 2 ? need + 1 : cap * 2;
    if (cap > r->lim.max_output + 1) cap = r->lim.max_output + 1;
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_realloc(r, b->p, cap, &p));
    b->p = p;
    b->cap = cap;
    return OMNIC_OK;
}

omnic_status omnic__jbuf_put(omnic__jrender *r, omnic__jbuf *b, const char *s, size_t n)
{
    if (n == 0) return OMNIC_OK;
    OMNIC_TRY(omnic__jbuf_reserve(r, b, n));
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return OMNIC_OK;
}

omnic_status omnic__jbuf_putc(omnic__jrender *r, omnic__jbuf *b, char c)
{
    return omnic__jbuf_put(r, b, &c, 1);
}

omnic_status omnic__jbuf_printf(omnic__jrender *r, omnic__jbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return omnic__jfail(r, OMNIC_E_INTERNAL, "formatting failed");
    return omnic__jbuf_put(r, b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

void omnic__jbuf_free(omnic__jrender *r, omnic__jbuf *b)
{
    omnic__jmem_free(r, b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ---- refcounting --------------------------------------------------------------------------- */

static void release(omnic__jrender *r, omnic__jobj *o)
{
    switch (o->kind) {
    case OMNIC_JV_STR: {
        omnic__jstr *s = (omnic__jstr *)o;
        if (o->flags == OMNIC_JSTR_OWNED) {
            union {
                const char *c;
                char *m;
            } u = {.c = s->p};
            omnic__jmem_free(r, u.m);
        }
        break;
    }
    case OMNIC_JV_LIST: {
        omnic__jlist *l = (omnic__jlist *)o;
        for (size_t i = 0; i < l->n; i++)
            omnic__jv_unref(r, l->v[i]);
        omnic__jmem_free(r, l->v);
        break;
    }
    case OMNIC_JV_DICT:
    case OMNIC_JV_NS: {
        omnic__jdict *d = (omnic__jdict *)o;
        for (size_t i = 0; i < d->n; i++) {
            omnic__jv_unref(r, omnic__jv_obj(&d->k[i]->h));
            omnic__jv_unref(r, d->v[i]);
        }
        omnic__jmem_free(r, d->k);
        omnic__jmem_free(r, d->v);
        omnic__jmem_free(r, d->idx);
        if (o->kind == OMNIC_JV_NS) {
            if (d->ns_prev)
                d->ns_prev->ns_next = d->ns_next;
            else
                r->namespaces = d->ns_next;
            if (d->ns_next) d->ns_next->ns_prev = d->ns_prev;
        }
        break;
    }
    case OMNIC_JV_FUNC: {
        omnic__jfunc *f = (omnic__jfunc *)o;
        omnic__jv_unref(r, f->self);
        omnic__jscope_unref(r, f->closure);
        break;
    }
    case OMNIC_JV_LOOP: {
        omnic__jloop *l = (omnic__jloop *)o;
        if (l->items) omnic__jv_unref(r, omnic__jv_obj(&l->items->h));
        break;
    }
    default:
        break;
    }
    omnic__jmem_free(r, o);
}

void omnic__jv_unref(omnic__jrender *r, omnic__jv v)
{
    if (!omnic__jv_is_obj(v)) return;
    omnic__jobj *o = v.u.o;
    if (o->rc < 0) return;
    if (--o->rc > 0) return;
    if (r->sweeping && o->kind == OMNIC_JV_NS) return; /* freed by the sweep */
    o->next = r->free_list;
    r->free_list = o;
    if (r->freeing) return;
    r->freeing = true;
    while (r->free_list) {
        omnic__jobj *x = r->free_list;
        r->free_list = x->next;
        release(r, x);
    }
    r->freeing = false;
}

/* ---- constructors ------------------------------------------------------------------------ */

static omnic__jstr EMPTY_STR = {{-1, OMNIC_JV_STR, OMNIC_JSTR_BORROWED, NULL}, 0, 0, ""};

static omnic_status str_len_ok(omnic__jrender *r, size_t len)
{
    if (len > r->lim.max_output)
        return omnic__jfail(r, OMNIC_E_TOO_LARGE,
                            "string of %zu bytes is over %zu (OMNIC_MAX_TEMPLATE_OUTPUT)", len,
                            r->lim.max_output);
    return OMNIC_OK;
}

omnic_status omnic__jstr_new(omnic__jrender *r, const char *s, size_t len, omnic__jv *out)
{
    if (len == 0) {
        *out = omnic__jv_obj(&EMPTY_STR.h);
        return OMNIC_OK;
    }
    OMNIC_TRY(str_len_ok(r, len));
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, sizeof(omnic__jstr) + len + 1, &p));
    omnic__jstr *str = p;
    char *d = (char *)(str + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    str->h = (omnic__jobj){.rc = 1, .kind = OMNIC_JV_STR, .flags = OMNIC_JSTR_INLINE};
    str->len = len;
    str->ncp = omnic__ju8_count(d, len);
    str->p = d;
    *out = omnic__jv_obj(&str->h);
    return OMNIC_OK;
}

omnic_status omnic__jstr_from_buf(omnic__jrender *r, omnic__jbuf *b, omnic__jv *out)
{
    if (b->n == 0) {
        omnic__jbuf_free(r, b);
        *out = omnic__jv_obj(&EMPTY_STR.h);
        return OMNIC_OK;
    }
    void *p = NULL;
    omnic_status rc = omnic__jmem_alloc(r, sizeof(omnic__jstr), &p);
    if (rc != OMNIC_OK) {
        omnic__jbuf_free(r, b);
        return rc;
    }
    omnic__jstr *str = p;
    str->h = (omnic__jobj){.rc = 1, .kind = OMNIC_JV_STR, .flags = OMNIC_JSTR_OWNED};
    str->len = b->n;
    str->ncp = omnic__ju8_count(b->p, b->n);
    str->p = b->p;
    b->p = NULL;
    b->n = b->cap = 0;
    *out = omnic__jv_obj(&str->h);
    return OMNIC_OK;
}

omnic_status omnic__jstr_borrow(omnic__jrender *r, const char *s, size_t len, omnic__jv *out)
{
    if (len == 0) {
        *out = omnic__jv_obj(&EMPTY_STR.h);
        return OMNIC_OK;
    }
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, sizeof(omnic__jstr), &p));
    omnic__jstr *str = p;
    str->h = (omnic__jobj){.rc = 1, .kind = OMNIC_JV_STR, .flags = OMNIC_JSTR_BORROWED};
    str->len = len;
    str->ncp = omnic__ju8_count(s, len);
    str->p = s;
    *out = omnic__jv_obj(&str->h);
    return OMNIC_OK;
}

omnic_status omnic__jlist_new(omnic__jrender *r, size_t cap, bool tuple, omnic__jv *out)
{
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, sizeof(omnic__jlist), &p));
    omnic__jlist *l = p;
    *l = (omnic__jlist){.h = {.rc = 1, .kind = OMNIC_JV_LIST, .flags = tuple ? OMNIC_JLIST_TUPLE : 0}};
    if (cap) {
        size_t bytes;
        void *v = NULL;
        omnic_status rc = omnic_size_mul(&bytes, cap, sizeof(omnic__jv)) ? omnic__jmem_alloc(r, bytes, &v)
                                                                         : mem_over(r, SIZE_MAX);
        if (rc != OMNIC_OK) {
            omnic__jmem_free(r, l);
            return rc;
        }
        l->v = v;
        l->cap = cap;
    }
    *out = omnic__jv_obj(&l->h);
    return OMNIC_OK;
}

omnic_status omnic__jlist_push(omnic__jrender *r, omnic__jlist *l, omnic__jv v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4, bytes;
        void *nv;
        omnic_status rc = omnic_size_mul(&bytes, cap, sizeof(omnic__jv))
                              ? omnic__jmem_realloc(r, l->v, bytes, &nv)
                              : mem_over(r, SIZE_MAX);
        if (rc != OMNIC_OK) {
            omnic__jv_unref(r, v);
            return rc;
        }
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return OMNIC_OK;
}

omnic_status omnic__jdict_new(omnic__jrender *r, bool ns, omnic__jv *out)
{
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_alloc(r, sizeof(omnic__jdict), &p));
    omnic__jdict *d = p;
    *d = (omnic__jdict){.h = {.rc = 1, .kind = (uint8_t)(ns ? OMNIC_JV_NS : OMNIC_JV_DICT)}};
    if (ns) {
        d->ns_next = r->namespaces;
        if (r->namespaces) r->namespaces->ns_prev = d;
        r->namespaces = d;
    }
    *out = omnic__jv_obj(&d->h);
    return OMNIC_OK;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static size_t dict_find(const omnic__jdict *d, const char *k, size_t klen)
{
    if (d->idx) {
        size_t mask = d->idx_cap - 1;
        for (size_t i = (size_t)hash_bytes(k, klen) & mask;; i = (i + 1) & mask) {
            uint32_t e = d->idx[i];
            if (!e) return SIZE_MAX;
            const omnic__jstr *key = d->k[e - 1];
            if (key->len == klen && !memcmp(key->p, k, klen)) return e - 1;
        }
    }
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i]->len == klen && !memcmp(d->k[i]->p, k, klen)) return i;
    return SIZE_MAX;
}

omnic__jv *omnic__jdict_get(const omnic__jdict *d, const char *k, size_t klen)
{
    size_t i = dict_find(d, k, klen);
    return i == SIZE_MAX ? NULL : &d->v[i];
}

static omnic_status dict_reindex(omnic__jrender *r, omnic__jdict *d)
{
    size_t cap = 16;
    while (cap < d->n * 2 + 2)
        cap *= 2;
    void *p = NULL;
    OMNIC_TRY(omnic__jmem_array(r, cap, sizeof(uint32_t), &p));
    omnic__jmem_free(r, d->idx);
    d->idx = p;
    d->idx_cap = cap;
    memset(d->idx, 0, cap * sizeof(uint32_t));
    for (size_t e = 0; e < d->n; e++) {
        size_t i = (size_t)hash_bytes(d->k[e]->p, d->k[e]->len) & (cap - 1);
        while (d->idx[i])
            i = (i + 1) & (cap - 1);
        d->idx[i] = (uint32_t)(e + 1);
    }
    return OMNIC_OK;
}

omnic_status omnic__jdict_set(omnic__jrender *r, omnic__jdict *d, omnic__jstr *k, omnic__jv v)
{
    size_t i = dict_find(d, k->p, k->len);
    if (i != SIZE_MAX) {
        omnic__jv old = d->v[i];
        d->v[i] = v;
        omnic__jv_unref(r, old);
        return OMNIC_OK;
    }
    omnic_status rc = OMNIC_OK;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        void *nk, *nv;
        if (cap > UINT32_MAX / 4) {
            rc = mem_over(r, SIZE_MAX);
            goto fail;
        }
        if ((rc = omnic__jmem_realloc_array(r, d->k, cap, sizeof *d->k, &nk)) != OMNIC_OK) goto fail;
        d->k = nk;
        if ((rc = omnic__jmem_realloc_array(r, d->v, cap, sizeof *d->v, &nv)) != OMNIC_OK) goto fail;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = (omnic__jstr *)omnic__jv_ref(omnic__jv_obj(&k->h)).u.o;
    d->v[d->n] = v;
    d->n++;
    if (d->n > 8 && d->n * 2 + 2 > d->idx_cap) {
        if ((rc = dict_reindex(r, d)) != OMNIC_OK) {
            /* keep the entry; fall back to linear search */
            omnic__jmem_free(r, d->idx);
            d->idx = NULL;
            d->idx_cap = 0;
            return rc;
        }
    } else if (d->idx) {
        size_t mask = d->idx_cap - 1;
        size_t j = (size_t)hash_bytes(k->p, k->len) & mask;
        while (d->idx[j])
            j = (j + 1) & mask;
        d->idx[j] = (uint32_t)d->n;
    }
    return OMNIC_OK;
fail:
    omnic__jv_unref(r, v);
    return rc;
}

omnic_status omnic__jdict_setc(omnic__jrender *r, omnic__jdict *d, const char *k, size_t klen, omnic__jv v)
{
    size_t i = dict_find(d, k, klen);
    if (i != SIZE_MAX) {
        omnic__jv old = d->v[i];
        d->v[i] = v;
        omnic__jv_unref(r, old);
        return OMNIC_OK;
    }
    omnic__jv key;
    omnic_status rc = omnic__jstr_new(r, k, klen, &key);
    if (rc != OMNIC_OK) {
        omnic__jv_unref(r, v);
        return rc;
    }
    rc = omnic__jdict_set(r, d, OMNIC_JSTR(key), v);
    omnic__jv_unref(r, key);
    return rc;
}

/* d.items(): a list of (key, value) tuples. */
omnic_status omnic__jdict_items(omnic__jrender *r, const omnic__jdict *d, omnic__jv *out)
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

/* ---- JSON input --------------------------------------------------------------------------- */

omnic_status omnic__jv_from_json(omnic__jrender *r, const json_t *j, int depth, omnic__jv *out)
{
    if (depth > r->lim.max_value_depth)
        return omnic__jfail(r, OMNIC_E_TOO_LARGE,
                            "input JSON nested deeper than %d (OMNIC_MAX_TEMPLATE_VALUE_DEPTH)",
                            r->lim.max_value_depth);
    switch (json_typeof(j)) {
    case JSON_NULL:
        *out = omnic__jv_none();
        return OMNIC_OK;
    case JSON_TRUE:
        *out = omnic__jv_bool(true);
        return OMNIC_OK;
    case JSON_FALSE:
        *out = omnic__jv_bool(false);
        return OMNIC_OK;
    case JSON_INTEGER:
        *out = omnic__jv_int((int64_t)json_integer_value(j));
        return OMNIC_OK;
    case JSON_REAL:
        *out = omnic__jv_float(json_real_value(j));
        return OMNIC_OK;
    case JSON_STRING:
        return omnic__jstr_borrow(r, json_string_value(j), json_string_length(j), out);
    case JSON_ARRAY: {
        omnic__jv l;
        OMNIC_TRY(omnic__jlist_new(r, json_array_size(j), false, &l));
        for (size_t i = 0; i < json_array_size(j); i++) {
            omnic__jv x;
            omnic_status rc = omnic__jv_from_json(r, json_array_get(j, i), depth + 1, &x);
            if (rc == OMNIC_OK) rc = omnic__jlist_push(r, OMNIC_JLIST(l), x);
            if (rc != OMNIC_OK) {
                omnic__jv_unref(r, l);
                return rc;
            }
        }
        *out = l;
        return OMNIC_OK;
    }
    case JSON_OBJECT: {
        omnic__jv d;
        OMNIC_TRY(omnic__jdict_new(r, false, &d));
        const char *key;
        size_t klen;
        json_t *val;
        void *it = json_object_iter((json_t *)(uintptr_t)j);
        for (; it; it = json_object_iter_next((json_t *)(uintptr_t)j, it)) {
            key = json_object_iter_key(it);
            klen = json_object_iter_key_len(it);
            val = json_object_iter_value(it);
            omnic__jv k, x = omnic__jv_none();
            omnic_status rc = omnic__jstr_borrow(r, key, klen, &k);
            if (rc == OMNIC_OK) {
                rc = omnic__jv_from_json(r, val, depth + 1, &x);
                if (rc == OMNIC_OK) rc = omnic__jdict_set(r, OMNIC_JDICT(d), OMNIC_JSTR(k), x);
                omnic__jv_unref(r, k);
            }
            if (rc != OMNIC_OK) {
                omnic__jv_unref(r, d);
                return rc;
            }
        }
        *out = d;
        return OMNIC_OK;
    }
    }
    *out = omnic__jv_none();
    return OMNIC_OK;
}

/* ---- predicates and names -------------------------------------------------------------------- */

bool omnic__jv_truthy(omnic__jv v)
{
    switch (v.kind) {
    case OMNIC_JV_UNDEF:
    case OMNIC_JV_NONE:
        return false;
    case OMNIC_JV_BOOL:
        return v.u.b;
    case OMNIC_JV_INT:
        return v.u.i != 0;
    case OMNIC_JV_FLOAT:
        return v.u.f != 0.0;
    case OMNIC_JV_STR:
        return OMNIC_JSTR(v)->len > 0;
    case OMNIC_JV_LIST:
        return OMNIC_JLIST(v)->n > 0;
    case OMNIC_JV_DICT:
        return OMNIC_JDICT(v)->n > 0;
    default:
        return true;
    }
}

const char *omnic__jkind_type(int kind)
{
    switch (kind) {
    case OMNIC_JV_UNDEF:
        return "Undefined";
    case OMNIC_JV_NONE:
        return "NoneType";
    case OMNIC_JV_BOOL:
        return "bool";
    case OMNIC_JV_INT:
        return "int";
    case OMNIC_JV_FLOAT:
        return "float";
    case OMNIC_JV_STR:
        return "str";
    case OMNIC_JV_LIST:
        return "list";
    case OMNIC_JV_DICT:
        return "dict";
    case OMNIC_JV_NS:
        return "Namespace";
    case OMNIC_JV_FUNC:
        return "function";
    case OMNIC_JV_LOOP:
        return "LoopContext";
    default:
        return "object";
    }
}

const char *omnic__jv_type(omnic__jv v)
{
    if (v.kind == OMNIC_JV_LIST && (v.u.o->flags & OMNIC_JLIST_TUPLE)) return "tuple";
    if (v.kind == OMNIC_JV_FUNC && OMNIC_JFUNC(v)->fkind == OMNIC_JF_MACRO) return "Macro";
    return omnic__jkind_type(v.kind);
}

/* ---- str / repr ---------------------------------------------------------------------------- */

void omnic__jfloat_repr(double f, char *buf, size_t n)
{
    if (isnan(f)) {
        snprintf(buf, n, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(buf, n, f < 0 ? "-inf" : "inf");
        return;
    }
    if (f == 0.0) {
        snprintf(buf, n, signbit(f) ? "-0.0" : "0.0");
        return;
    }
    char tmp[48];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    /* tmp: [-]d[.ddd]e[+-]XX */
    char digits[32];
    size_t nd = 0;
    const char *p = tmp;
    bool neg = *p == '-';
    if (neg) p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.' && nd < sizeof digits - 1) digits[nd++] = *p;
    digits[nd] = '\0';
    while (nd > 1 && digits[nd - 1] == '0')
        digits[--nd] = '\0';
    int e = *p == 'e' ? atoi(p + 1) : 0;
    char out[64];
    size_t o = 0;
    if (neg) out[o++] = '-';
    if (e >= -4 && e < 16) {
        int dp = e + 1; /* digits before the point */
        if (dp <= 0) {
            out[o++] = '0';
            out[o++] = '.';
            for (int k = 0; k < -dp; k++)
                out[o++] = '0';
            for (size_t k = 0; k < nd; k++)
                out[o++] = digits[k];
        } else if ((size_t)dp >= nd) {
            for (size_t k = 0; k < nd; k++)
                out[o++] = digits[k];
            for (size_t k = nd; k < (size_t)dp; k++)
                out[o++] = '0';
            out[o++] = '.';
            out[o++] = '0';
        } else {
            for (size_t k = 0; k < nd; k++) {
                if (k == (size_t)dp) out[o++] = '.';
                out[o++] = digits[k];
            }
        }
        out[o] = '\0';
    } else {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (size_t k = 1; k < nd; k++)
                out[o++] = digits[k];
        }
        snprintf(out + o, sizeof out - o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    snprintf(buf, n, "%s", out);
}

static bool printable(uint32_t cp)
{
    if (cp == ' ') return true;
    if (cp < 0x20 || cp == 0x7f) return false;
    if (cp < 0x7f) return true;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
        return false;
    default:
        return true;
    }
}

static omnic_status write_str_repr(omnic__jrender *r, omnic__jbuf *b, const omnic__jstr *s)
{
    char q = '\'';
    if (memchr(s->p, '\'', s->len) && !memchr(s->p, '"', s->len)) q = '"';
    OMNIC_TRY(omnic__jbuf_putc(r, b, q));
    size_t i = 0, run = 0;
    while (i < s->len) {
        size_t st = i;
        uint32_t cp = omnic__ju8_next(s->p, s->len, &i);
        char esc[16];
        int k = 0;
        if (cp == (uint32_t)q || cp == '\\')
            k = snprintf(esc, sizeof esc, "\\%c", (char)cp);
        else if (cp == '\t')
            k = snprintf(esc, sizeof esc, "\\t");
        else if (cp == '\n')
            k = snprintf(esc, sizeof esc, "\\n");
        else if (cp == '\r')
            k = snprintf(esc, sizeof esc, "\\r");
        else if (!printable(cp)) {
            if (cp <= 0xff)
                k = snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp);
            else if (cp <= 0xffff)
                k = snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
            else
                k = snprintf(esc, sizeof esc, "\\U%08x", (unsigned)cp);
        }
        if (k > 0) {
            OMNIC_TRY(omnic__jbuf_put(r, b, s->p + st - run, run));
            run = 0;
            OMNIC_TRY(omnic__jbuf_put(r, b, esc, (size_t)k));
        } else {
            run += i - st;
        }
    }
    OMNIC_TRY(omnic__jbuf_put(r, b, s->p + s->len - run, run));
    return omnic__jbuf_putc(r, b, q);
}

static omnic_status depth_fail(omnic__jrender *r)
{
    return omnic__jfail(r, OMNIC_E_TOO_LARGE, "value nested deeper than %d (OMNIC_MAX_TEMPLATE_VALUE_DEPTH)",
                        r->lim.max_value_depth);
}

/* str(v) (repr: false) or repr(v) (repr: true); depth counts the containers around v. */
static omnic_status write_value(omnic__jrender *r, omnic__jbuf *b, omnic__jv v, bool repr, int depth)
{
    char tmp[64];
    if (depth > r->lim.max_value_depth) return depth_fail(r);
    switch (v.kind) {
    case OMNIC_JV_UNDEF:
        return repr ? omnic__jbuf_put(r, b, "Undefined", 9) : OMNIC_OK;
    case OMNIC_JV_NONE:
        return omnic__jbuf_put(r, b, "None", 4);
    case OMNIC_JV_BOOL:
        return v.u.b ? omnic__jbuf_put(r, b, "True", 4) : omnic__jbuf_put(r, b, "False", 5);
    case OMNIC_JV_INT:
        return omnic__jbuf_printf(r, b, "%lld", (long long)v.u.i);
    case OMNIC_JV_FLOAT:
        omnic__jfloat_repr(v.u.f, tmp, sizeof tmp);
        return omnic__jbuf_put(r, b, tmp, strlen(tmp));
    case OMNIC_JV_STR:
        if (repr) return write_str_repr(r, b, OMNIC_JSTR(v));
        return omnic__jbuf_put(r, b, OMNIC_JSTR(v)->p, OMNIC_JSTR(v)->len);
    case OMNIC_JV_LIST: {
        const omnic__jlist *l = OMNIC_JLIST(v);
        bool tuple = v.u.o->flags & OMNIC_JLIST_TUPLE;
        OMNIC_TRY(omnic__jbuf_putc(r, b, tuple ? '(' : '['));
        for (size_t i = 0; i < l->n; i++) {
            if (i) OMNIC_TRY(omnic__jbuf_put(r, b, ", ", 2));
            OMNIC_TRY(write_value(r, b, l->v[i], true, depth + 1));
        }
        if (tuple && l->n == 1) OMNIC_TRY(omnic__jbuf_putc(r, b, ','));
        return omnic__jbuf_putc(r, b, tuple ? ')' : ']');
    }
    case OMNIC_JV_DICT:
    case OMNIC_JV_NS: {
        const omnic__jdict *d = OMNIC_JDICT(v);
        if (v.kind == OMNIC_JV_NS) OMNIC_TRY(omnic__jbuf_put(r, b, "<Namespace ", 11));
        OMNIC_TRY(omnic__jbuf_putc(r, b, '{'));
        for (size_t i = 0; i < d->n; i++) {
            if (i) OMNIC_TRY(omnic__jbuf_put(r, b, ", ", 2));
            OMNIC_TRY(write_str_repr(r, b, d->k[i]));
            OMNIC_TRY(omnic__jbuf_put(r, b, ": ", 2));
            OMNIC_TRY(write_value(r, b, d->v[i], true, depth + 1));
        }
        OMNIC_TRY(omnic__jbuf_putc(r, b, '}'));
        return v.kind == OMNIC_JV_NS ? omnic__jbuf_putc(r, b, '>') : OMNIC_OK;
    }
    case OMNIC_JV_FUNC: {
        const omnic__jfunc *f = OMNIC_JFUNC(v);
        if (f->fkind == OMNIC_JF_MACRO)
            return omnic__jbuf_printf(r, b, "<Macro '%.*s'>", (int)f->node->slen, f->node->s);
        if (f->fkind == OMNIC_JF_CALLER) return omnic__jbuf_put(r, b, "<Macro 'caller'>", 16);
        return omnic__jbuf_printf(r, b, "<built-in function %.*s>", (int)f->name_len, f->name);
    }
    case OMNIC_JV_LOOP:
        return omnic__jbuf_printf(r, b, "<LoopContext %zu/%zu>", OMNIC_JLOOP(v)->index0 + 1,
                                  OMNIC_JLOOP(v)->length);
    default:
        return OMNIC_OK;
    }
}

omnic_status omnic__jv_write_repr(omnic__jrender *r, omnic__jbuf *b, omnic__jv v, int depth)
{
    return write_value(r, b, v, true, depth);
}

omnic_status omnic__jv_write_str(omnic__jrender *r, omnic__jbuf *b, omnic__jv v)
{
    return write_value(r, b, v, false, 0);
}

omnic_status omnic__jv_to_str(omnic__jrender *r, omnic__jv v, omnic__jv *out)
{
    if (v.kind == OMNIC_JV_STR) {
        *out = omnic__jv_ref(v);
        return OMNIC_OK;
    }
    omnic__jbuf b = {0};
    omnic_status rc = omnic__jv_write_str(r, &b, v);
    if (rc == OMNIC_OK) return omnic__jstr_from_buf(r, &b, out);
    omnic__jbuf_free(r, &b);
    return rc;
}

/* ---- JSON output (json.dumps) --------------------------------------------------------------- */

static omnic_status write_json_str(omnic__jrender *r, omnic__jbuf *b, const char *s, size_t len, bool ascii)
{
    OMNIC_TRY(omnic__jbuf_putc(r, b, '"'));
    size_t i = 0, run = 0;
    while (i < len) {
        size_t st = i;
        uint32_t cp = omnic__ju8_next(s, len, &i);
        char esc[16];
        int k = 0;
        switch (cp) {
        case '"':
            k = snprintf(esc, sizeof esc, "\\\"");
            break;
        case '\\':
            k = snprintf(esc, sizeof esc, "\\\\");
            break;
        case '\n':
            k = snprintf(esc, sizeof esc, "\\n");
            break;
        case '\r':
            k = snprintf(esc, sizeof esc, "\\r");
            break;
        case '\t':
            k = snprintf(esc, sizeof esc, "\\t");
            break;
        case '\b':
            k = snprintf(esc, sizeof esc, "\\b");
            break;
        case '\f':
            k = snprintf(esc, sizeof esc, "\\f");
            break;
        default:
            if (cp < 0x20 || (ascii && cp >= 0x7f)) {
                if (cp > 0xffff) {
                    uint32_t c = cp - 0x10000;
                    k = snprintf(esc, sizeof esc, "\\u%04x\\u%04x", (unsigned)(0xD800 + (c >> 10)),
                                 (unsigned)(0xDC00 + (c & 0x3ff)));
                } else {
                    k = snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
                }
            }
        }
        if (k > 0) {
            OMNIC_TRY(omnic__jbuf_put(r, b, s + st - run, run));
            run = 0;
            OMNIC_TRY(omnic__jbuf_put(r, b, esc, (size_t)k));
        } else {
            run += i - st;
        }
    }
    OMNIC_TRY(omnic__jbuf_put(r, b, s + len - run, run));
    return omnic__jbuf_putc(r, b, '"');
}

static omnic_status json_newline(omnic__jrender *r, omnic__jbuf *b, const omnic__jjson_opts *o, int level)
{
    OMNIC_TRY(omnic__jbuf_putc(r, b, '\n'));
    for (int i = 0; i < level; i++)
        OMNIC_TRY(omnic__jbuf_put(r, b, o->indent, o->indent_len));
    return OMNIC_OK;
}

static int key_cmp(const void *a, const void *b)
{
    const omnic__jstr *x = *(omnic__jstr *const *)a, *y = *(omnic__jstr *const *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

omnic_status omnic__jv_write_json(omnic__jrender *r, omnic__jbuf *b, omnic__jv v, const omnic__jjson_opts *o,
                                  int depth)
{
    if (depth > r->lim.max_value_depth) return depth_fail(r);
    char tmp[64];
    switch (v.kind) {
    case OMNIC_JV_NONE:
        return omnic__jbuf_put(r, b, "null", 4);
    case OMNIC_JV_BOOL:
        return v.u.b ? omnic__jbuf_put(r, b, "true", 4) : omnic__jbuf_put(r, b, "false", 5);
    case OMNIC_JV_INT:
        return omnic__jbuf_printf(r, b, "%lld", (long long)v.u.i);
    case OMNIC_JV_FLOAT:
        if (isnan(v.u.f)) return omnic__jbuf_put(r, b, "NaN", 3);
        if (isinf(v.u.f))
            return v.u.f < 0 ? omnic__jbuf_put(r, b, "-Infinity", 9) : omnic__jbuf_put(r, b, "Infinity", 8);
        omnic__jfloat_repr(v.u.f, tmp, sizeof tmp);
        return omnic__jbuf_put(r, b, tmp, strlen(tmp));
    case OMNIC_JV_STR:
        return write_json_str(r, b, OMNIC_JSTR(v)->p, OMNIC_JSTR(v)->len, o->ensure_ascii);
    case OMNIC_JV_LIST: {
        const omnic__jlist *l = OMNIC_JLIST(v);
        if (l->n == 0) return omnic__jbuf_put(r, b, "[]", 2);
        OMNIC_TRY(omnic__jbuf_putc(r, b, '['));
        for (size_t i = 0; i < l->n; i++) {
            if (i) OMNIC_TRY(omnic__jbuf_put(r, b, o->item_sep, o->item_sep_len));
            if (o->indent) OMNIC_TRY(json_newline(r, b, o, depth + 1));
            OMNIC_TRY(omnic__jv_write_json(r, b, l->v[i], o, depth + 1));
        }
        if (o->indent) OMNIC_TRY(json_newline(r, b, o, depth));
        return omnic__jbuf_putc(r, b, ']');
    }
    case OMNIC_JV_DICT: {
        const omnic__jdict *d = OMNIC_JDICT(v);
        if (d->n == 0) return omnic__jbuf_put(r, b, "{}", 2);
        size_t *order = NULL;
        if (o->sort_keys) {
            void *p = NULL;
            OMNIC_TRY(omnic__jmem_array(r, d->n, sizeof(size_t) + sizeof(omnic__jstr *), &p));
            omnic__jstr **keys = p;
            memcpy(keys, d->k, d->n * sizeof *keys);
            qsort(keys, d->n, sizeof *keys, key_cmp);
            order = (size_t *)(keys + d->n);
            for (size_t i = 0; i < d->n; i++)
                order[i] = dict_find(d, keys[i]->p, keys[i]->len);
        }
        omnic_status rc = omnic__jbuf_putc(r, b, '{');
        for (size_t i = 0; i < d->n && rc == OMNIC_OK; i++) {
            size_t e = order ? order[i] : i;
            if (i) rc = omnic__jbuf_put(r, b, o->item_sep, o->item_sep_len);
            if (rc == OMNIC_OK && o->indent) rc = json_newline(r, b, o, depth + 1);
            if (rc == OMNIC_OK) rc = write_json_str(r, b, d->k[e]->p, d->k[e]->len, o->ensure_ascii);
            if (rc == OMNIC_OK) rc = omnic__jbuf_put(r, b, o->key_sep, o->key_sep_len);
            if (rc == OMNIC_OK) rc = omnic__jv_write_json(r, b, d->v[e], o, depth + 1);
        }
        if (rc == OMNIC_OK && o->indent) rc = json_newline(r, b, o, depth);
        if (rc == OMNIC_OK) rc = omnic__jbuf_putc(r, b, '}');
        if (order) omnic__jmem_free(r, (omnic__jstr **)order - d->n);
        return rc;
    }
    default:
        return omnic__jfail(r, OMNIC_E_INVALID, "Object of type %s is not JSON serializable",
                            omnic__jv_type(v));
    }
}

/* ---- comparisons ----------------------------------------------------------------------------- */

static bool numeric(omnic__jv v)
{
    return v.kind == OMNIC_JV_BOOL || v.kind == OMNIC_JV_INT || v.kind == OMNIC_JV_FLOAT;
}

/* a <=> b for numbers (bools as 0/1); NaN compares unordered (as not less, not greater). */
static int num_cmp(omnic__jv a, omnic__jv b)
{
    if (a.kind != OMNIC_JV_FLOAT && b.kind != OMNIC_JV_FLOAT) {
        int64_t x = a.kind == OMNIC_JV_BOOL ? a.u.b : a.u.i, y = b.kind == OMNIC_JV_BOOL ? b.u.b : b.u.i;
        return (x > y) - (x < y);
    }
    double x = a.kind == OMNIC_JV_FLOAT ? a.u.f : a.kind == OMNIC_JV_BOOL ? a.u.b : (double)a.u.i;
    double y = b.kind == OMNIC_JV_FLOAT ? b.u.f : b.kind == OMNIC_JV_BOOL ? b.u.b : (double)b.u.i;
    return (x > y) - (x < y);
}

omnic_status omnic__jv_eq(omnic__jrender *r, omnic__jv a, omnic__jv b, int depth, bool *out)
{
    if (depth > r->lim.max_value_depth) return depth_fail(r);
    if (numeric(a) && numeric(b)) {
        if (a.kind == OMNIC_JV_FLOAT && isnan(a.u.f))
            *out = false;
        else if (b.kind == OMNIC_JV_FLOAT && isnan(b.u.f))
            *out = false;
        else
            *out = num_cmp(a, b) == 0;
        return OMNIC_OK;
    }
    *out = false;
    if (a.kind != b.kind) return OMNIC_OK;
    switch (a.kind) {
    case OMNIC_JV_UNDEF:
    case OMNIC_JV_NONE:
        *out = true;
        return OMNIC_OK;
    case OMNIC_JV_STR:
        *out = OMNIC_JSTR(a)->len == OMNIC_JSTR(b)->len &&
               !memcmp(OMNIC_JSTR(a)->p, OMNIC_JSTR(b)->p, OMNIC_JSTR(a)->len);
        return OMNIC_OK;
    case OMNIC_JV_LIST: {
        const omnic__jlist *x = OMNIC_JLIST(a), *y = OMNIC_JLIST(b);
        if ((a.u.o->flags & OMNIC_JLIST_TUPLE) != (b.u.o->flags & OMNIC_JLIST_TUPLE) || x->n != y->n)
            return OMNIC_OK;
        for (size_t i = 0; i < x->n; i++) {
            bool e;
            OMNIC_TRY(omnic__jv_eq(r, x->v[i], y->v[i], depth + 1, &e));
            if (!e) return OMNIC_OK;
        }
        *out = true;
        return OMNIC_OK;
    }
    case OMNIC_JV_DICT: {
        const omnic__jdict *x = OMNIC_JDICT(a), *y = OMNIC_JDICT(b);
        if (x->n != y->n) return OMNIC_OK;
        for (size_t i = 0; i < x->n; i++) {
            const omnic__jv *w = omnic__jdict_get(y, x->k[i]->p, x->k[i]->len);
            bool e;
            if (!w) return OMNIC_OK;
            OMNIC_TRY(omnic__jv_eq(r, x->v[i], *w, depth + 1, &e));
            if (!e) return OMNIC_OK;
        }
        *out = true;
        return OMNIC_OK;
    }
    default:
        *out = a.u.o == b.u.o;
        return OMNIC_OK;
    }
}

static int str_cmp(const omnic__jstr *x, const omnic__jstr *y, bool ignore_case)
{
    if (!ignore_case) {
        size_t n = x->len < y->len ? x->len : y->len;
        int c = memcmp(x->p, y->p, n);
        return c ? (c > 0) - (c < 0) : (x->len > y->len) - (x->len < y->len);
    }
    size_t i = 0, j = 0;
    while (i < x->len && j < y->len) {
        uint32_t a = (uint32_t)utf8proc_tolower((utf8proc_int32_t)omnic__ju8_next(x->p, x->len, &i));
        uint32_t b = (uint32_t)utf8proc_tolower((utf8proc_int32_t)omnic__ju8_next(y->p, y->len, &j));
        if (a != b) return a < b ? -1 : 1;
    }
    return (i < x->len) - (j < y->len);
}

omnic_status omnic__jv_cmp(omnic__jrender *r, omnic__jv a, omnic__jv b, bool ignore_case, int depth, int *out)
{
    if (depth > r->lim.max_value_depth) return depth_fail(r);
    if (numeric(a) && numeric(b)) {
        *out = num_cmp(a, b);
        return OMNIC_OK;
    }
    if (a.kind == OMNIC_JV_STR && b.kind == OMNIC_JV_STR) {
        *out = str_cmp(OMNIC_JSTR(a), OMNIC_JSTR(b), ignore_case);
        return OMNIC_OK;
    }
    if (a.kind == OMNIC_JV_LIST && b.kind == OMNIC_JV_LIST &&
        (a.u.o->flags & OMNIC_JLIST_TUPLE) == (b.u.o->flags & OMNIC_JLIST_TUPLE)) {
        const omnic__jlist *x = OMNIC_JLIST(a), *y = OMNIC_JLIST(b);
        for (size_t i = 0; i < x->n && i < y->n; i++) {
            bool e;
            OMNIC_TRY(omnic__jv_eq(r, x->v[i], y->v[i], depth + 1, &e));
            if (!e) return omnic__jv_cmp(r, x->v[i], y->v[i], ignore_case, depth + 1, out);
        }
        *out = (x->n > y->n) - (x->n < y->n);
        return OMNIC_OK;
    }
    if (a.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, a);
    if (b.kind == OMNIC_JV_UNDEF) return omnic__jundef_fail(r, b);
    return omnic__jfail(r, OMNIC_E_INVALID, "'<' not supported between instances of '%s' and '%s'",
                        omnic__jv_type(a), omnic__jv_type(b));
}
