/* Per-slot KV cache storage. */
#include <stdio.h>
#include <string.h>

#include "runtime/kv.h"

omnic_status omnic__kv_slot_bytes(int n_layers, int64_t capacity, int64_t n_kv, int64_t head_dim, omnic_dtype dtype,
                                  size_t *out, omnic_err *err)
{
    size_t n = 2 * omnic_dtype_size(dtype);
    if (n_layers < 0 || capacity < 0 || n_kv < 0 || head_dim < 0 || !omnic_size_mul(&n, n, (size_t)n_layers) ||
        !omnic_size_mul(&n, n, (size_t)capacity) || !omnic_size_mul(&n, n, (size_t)n_kv) ||
        !omnic_size_mul(&n, n, (size_t)head_dim))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "KV cache of %d layers x %lld rows x %lld heads x %lld overflows",
                          n_layers, (long long)capacity, (long long)n_kv, (long long)head_dim);
    *out = n;
    return OMNIC_OK;
}

omnic_status omnic__kv_slot_init(omnic__kv_slot *s, int n_layers, int64_t capacity, int64_t n_kv, int64_t head_dim,
                                 omnic_dtype dtype, omnic_err *err)
{
    memset(s, 0, sizeof *s);
    size_t total;
    if (dtype != OMNIC_DTYPE_F16 && dtype != OMNIC_DTYPE_F32)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "KV cache dtype %s is not f16 or f32", omnic_dtype_name(dtype));
    if (n_layers < 1) return OMNIC_FAIL(err, OMNIC_E_INVALID, "KV cache needs at least 1 layer, got %d", n_layers);
    OMNIC_TRY(omnic__kv_slot_bytes(n_layers, capacity, n_kv, head_dim, dtype, &total, err));
    s->n_layers = n_layers;
    s->capacity = capacity;
    s->n_kv = n_kv;
    s->head_dim = head_dim;
    s->dtype = dtype;
    s->k = omnic_alloc_array((size_t)n_layers, sizeof *s->k);
    s->v = omnic_alloc_array((size_t)n_layers, sizeof *s->v);
    if (!s->k || !s->v) goto nomem;
    int64_t dims[3] = {capacity, n_kv, head_dim};
    size_t bytes = total / 2 / (size_t)n_layers;
    for (int l = 0; l < n_layers; l++) {
        for (int kv = 0; kv < 2; kv++) {
            omnic__tensor *t = kv ? &s->v[l] : &s->k[l];
            OMNIC_TRY(omnic__tensor_init(t, dtype, 3, dims, err));
            snprintf(t->name, sizeof t->name, "kv_l%d_%c", l, kv ? 'v' : 'k');
            t->owns_data = true;
            t->data = omnic_alloc_array(bytes ? bytes : 1, 1);
            if (!t->data) goto nomem;
        }
    }
    return OMNIC_OK;
nomem:
    omnic__kv_slot_deinit(s);
    return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a KV cache of %zu bytes", total);
}

void omnic__kv_slot_deinit(omnic__kv_slot *s)
{
    for (int l = 0; s->k && l < s->n_layers; l++) omnic_free(s->k[l].data);
    for (int l = 0; s->v && l < s->n_layers; l++) omnic_free(s->v[l].data);
    omnic_free(s->k);
    omnic_free(s->v);
    memset(s, 0, sizeof *s);
}

void omnic__kv_slot_clear(omnic__kv_slot *s)
{
    size_t row = (size_t)(s->n_kv * s->head_dim) * omnic_dtype_size(s->dtype);
    for (int l = 0; l < s->n_layers; l++) {
        memset(s->k[l].data, 0, row * (size_t)s->len);
        memset(s->v[l].data, 0, row * (size_t)s->len);
    }
    s->len = 0;
}
