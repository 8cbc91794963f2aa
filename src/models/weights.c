/* Weight binding shared by the families. */
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/mem.h"
#include "models/weights.h"

void omnic__weight_copies_free(omnic__weight_copies *c)
{
    for (size_t i = 0; i < c->n; i++)
        omnic__tensor_destroy(c->items[i]);
    omnic_free(c->items);
    for (size_t i = 0; i < c->n_blocks; i++)
        omnic_free(c->blocks[i]);
    omnic_free(c->blocks);
    memset(c, 0, sizeof *c);
}

omnic_status omnic__weight_block(omnic__weight_copies *c, const omnic__tensor *shapes, size_t n,
                                 omnic__tensor **outs, omnic_err *err)
{
    size_t total = 0, i = 0;
    for (size_t k = 0; k < n; k++) {
        size_t b, r;
        OMNIC_TRY(omnic__tensor_nbytes(&shapes[k], &b, err));
        if (!omnic__align_up(&r, b) || !omnic_size_add(&total, total, r))
            return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "weights of more than %zu bytes in one block",
                              SIZE_MAX);
    }
    if (n == 0) return OMNIC_OK;
    void **grown = omnic_realloc(c->blocks, (c->n_blocks + 1) * sizeof *grown);
    if (!grown) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a weight block");
    c->blocks = grown;
    uint8_t *block = total ? omnic__mem_huge_alloc(total) : NULL; /* none when every tensor is empty */
    if (total && !block)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %zu bytes of weights", total);
    size_t off = 0;
    omnic_status s = OMNIC_OK;
    for (; i < n; i++) {
        outs[i] = omnic_alloc_array(1, sizeof *outs[i]);
        if (!outs[i]) {
            s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a tensor header");
            break;
        }
        *outs[i] = shapes[i];
        outs[i]->name[0] = '\0';
        outs[i]->owns_data = false;
        outs[i]->data = block ? block + off : NULL;
        size_t r;
        (void)omnic__align_up(&r, omnic__tensor_bytes(&shapes[i]));
        off += r;
    }
    if (s != OMNIC_OK) {
        while (i-- > 0)
            omnic_free(outs[i]), outs[i] = NULL;
        omnic_free(block);
        return s;
    }
    if (block) c->blocks[c->n_blocks++] = block;
    return OMNIC_OK;
}

omnic_status omnic__weight_bind(const omnic__safetensors *st, const char *name, int ndim, const int64_t *dims,
                                omnic__tensor *out, omnic__weight_copies *copies, omnic_err *err)
{
    const omnic__st_tensor *t = omnic__st_find(st, name);
    if (!t) return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "weights: tensor '%s' is missing", name);
    bool ok = t->ndim == ndim &&
              (t->dtype == OMNIC_DTYPE_F32 || t->dtype == OMNIC_DTYPE_F16 || t->dtype == OMNIC_DTYPE_BF16);
    for (int i = 0; ok && i < ndim; i++)
        ok = t->dims[i] == dims[i];
    if (!ok) {
        char want[128], got[128];
        omnic__dims_str(want, sizeof want, ndim, dims);
        omnic__dims_str(got, sizeof got, t->ndim, t->dims);
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "weights: tensor '%s' is %s %s, expected a float %s", name,
                          omnic_dtype_name(t->dtype), got, want);
    }
    omnic__st_tensor_view(t, out);
    snprintf(out->name, sizeof out->name, "%.63s", name);
    if ((uintptr_t)out->data % omnic_dtype_size(out->dtype) == 0) return OMNIC_OK;
    omnic__tensor **grown = omnic_realloc(copies->items, (copies->n + 1) * sizeof *grown);
    if (!grown) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory copying weight %s", name);
    copies->items = grown;
    omnic__tensor *c;
    OMNIC_TRY(omnic__tensor_create(&c, out->dtype, out->ndim, out->dims, err));
    memcpy(c->data, out->data, omnic__tensor_bytes(out));
    memcpy(c->name, out->name, sizeof c->name);
    copies->items[copies->n++] = c;
    out->data = c->data;
    return OMNIC_OK;
}

omnic_status omnic__weight_f32(const omnic__tensor *w, int64_t first, int ndim, const int64_t *dims,
                               const char *name, omnic__tensor **out, omnic_err *err)
{
    OMNIC_TRY(omnic__tensor_create(out, OMNIC_DTYPE_F32, ndim, dims, err));
    float *dst = (*out)->data;
    const int64_t n = omnic__tensor_nelem(*out);
    for (int64_t i = 0, j = first; i < n; i++, j++) {
        if (w->dtype == OMNIC_DTYPE_F32)
            dst[i] = ((const float *)w->data)[j];
        else if (w->dtype == OMNIC_DTYPE_F16)
            dst[i] = omnic__f16_to_f32(((const uint16_t *)w->data)[j]);
        else
            dst[i] = omnic__bf16_to_f32(((const uint16_t *)w->data)[j]);
    }
    snprintf((*out)->name, sizeof(*out)->name, "%.63s", name);
    return OMNIC_OK;
}

omnic_status omnic__weight_transpose(const omnic__tensor *w, const char *name, omnic__tensor **out,
                                     omnic_err *err)
{
    if (w->ndim != 2)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: a transposed weight must be 2-D (is %d-D)", name,
                          w->ndim);
    const int64_t R = w->dims[0], C = w->dims[1], dims[2] = {C, R};
    OMNIC_TRY(omnic__tensor_create(out, w->dtype, 2, dims, err));
    const size_t es = omnic_dtype_size(w->dtype);
    const uint8_t *src = w->data;
    uint8_t *dst = (*out)->data;
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            memcpy(dst + ((size_t)c * (size_t)R + (size_t)r) * es,
                   src + ((size_t)r * (size_t)C + (size_t)c) * es, es);
    snprintf((*out)->name, sizeof(*out)->name, "%.63s", name);
    return OMNIC_OK;
}

omnic_status omnic__weight_bind_f32(const omnic__safetensors *st, const char *name, int ndim,
                                    const int64_t *dims, omnic__tensor **out, omnic__weight_copies *copies,
                                    omnic_err *err)
{
    omnic__tensor view;
    OMNIC_TRY(omnic__weight_bind(st, name, ndim, dims, &view, copies, err));
    return omnic__weight_f32(&view, 0, ndim, dims, name, out, err);
}

/* Rows copied per step of a thread; the step's source pages are released after it. */
#define RESIDENT_ROWS 64

typedef struct resident_job {
    const omnic__tensor *src; /* [N, ...] as mapped */
    omnic__tensor *dst;       /* the same dtype and dims, owned */
    const omnic__safetensors *st;
} resident_job;

static void resident_task(void *ctx, int ith, int nth)
{
    const resident_job *j = ctx;
    const int64_t N = j->src->dims[0];
    const size_t rb = omnic__tensor_bytes(j->src) / (size_t)N;
    int64_t lo, hi;
    omnic__split_rows(N, ith, nth, &lo, &hi);
    for (int64_t r0 = lo; r0 < hi; r0 += RESIDENT_ROWS) {
        const int64_t r1 = hi - r0 < RESIDENT_ROWS ? hi : r0 + RESIDENT_ROWS;
        const size_t off = (size_t)r0 * rb, n = (size_t)(r1 - r0) * rb;
        memcpy((uint8_t *)j->dst->data + off, (const uint8_t *)j->src->data + off, n);
        omnic__st_release(j->st, (const uint8_t *)j->src->data + off, n);
    }
}

omnic_status omnic__weights_resident(omnic__tensor *const *ws, size_t n, const omnic__safetensors *st,
                                     omnic__threadpool *pool, omnic__weight_copies *copies, omnic_err *err)
{
    omnic__tensor *shapes = omnic_alloc_array(n + 1, sizeof *shapes),
                  **outs = omnic_alloc_array(n + 1, sizeof *outs);
    size_t *which = omnic_alloc_array(n + 1, sizeof *which); /* + 1: never a 0-byte request */
    omnic__tensor **grown = omnic_realloc(copies->items, (copies->n + n + 1) * sizeof *grown);
    omnic_status s = OMNIC_OK;
    if (grown) copies->items = grown;
    if (!shapes || !outs || !which || !grown) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory listing %zu weights to copy", n);
        goto out;
    }
    size_t m = 0; /* the mapped ones */
    for (size_t i = 0; i < n; i++) {
        const size_t bytes = ws[i]->data ? omnic__tensor_bytes(ws[i]) : 0;
        if (bytes > 0 && ws[i]->dims[0] > 0 && omnic__st_mapped(st, ws[i]->data, bytes))
            shapes[m] = *ws[i], which[m++] = i;
    }
    if ((s = omnic__weight_block(copies, shapes, m, outs, err)) != OMNIC_OK) goto out;
    for (size_t k = 0; k < m; k++) {
        omnic__tensor *w = ws[which[k]], *r = outs[k];
        memcpy(r->name, w->name, sizeof r->name);
        resident_job j = {.src = w, .dst = r, .st = st};
        omnic__threadpool_run(pool, resident_task, &j);
        copies->items[copies->n++] = r;
        w->data = r->data;
    }
out:
    omnic_free(shapes);
    omnic_free(outs);
    omnic_free(which);
    return s;
}
