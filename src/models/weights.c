/* Weight binding shared by the families. */
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "models/weights.h"

void omnic__weight_copies_free(omnic__weight_copies *c)
{
    for (size_t i = 0; i < c->n; i++)
        omnic__tensor_destroy(c->items[i]);
    omnic_free(c->items);
    memset(c, 0, sizeof *c);
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
