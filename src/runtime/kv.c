/* KV pool storage. */
#include <stdio.h>
#include <string.h>

#include "runtime/kv.h"

omnic_status omnic__kv_pool_bytes(int n_layers, int n_slots, int64_t capacity, int64_t n_kv, int64_t head_dim,
                                  omnic_dtype dtype, size_t *out, omnic_err *err)
{
    size_t n = 2 * omnic_dtype_size(dtype);
    if (n_layers < 0 || n_slots < 0 || capacity < 0 || n_kv < 0 || head_dim < 0 ||
        !omnic_size_mul(&n, n, (size_t)n_layers) || !omnic_size_mul(&n, n, (size_t)n_slots) ||
        !omnic_size_mul(&n, n, (size_t)capacity) || !omnic_size_mul(&n, n, (size_t)n_kv) ||
        !omnic_size_mul(&n, n, (size_t)head_dim))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "KV cache of %d layers x %d slots x %lld rows x %lld heads x %lld overflows",
                          n_layers, n_slots, (long long)capacity, (long long)n_kv, (long long)head_dim);
    *out = n;
    return OMNIC_OK;
}

omnic_status omnic__kv_pool_init(omnic__kv_pool *p, int n_layers, int n_slots, int64_t capacity, int64_t n_kv,
                                 int64_t head_dim, omnic_dtype dtype, omnic_err *err)
{
    memset(p, 0, sizeof *p);
    size_t total;
    if (dtype != OMNIC_DTYPE_F16 && dtype != OMNIC_DTYPE_F32)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "KV cache dtype %s is not f16 or f32",
                          omnic_dtype_name(dtype));
    if (n_layers < 1 || n_slots < 1 || capacity < 1 || capacity > INT32_MAX / n_slots)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "KV pool of %d layers x %d slots x %lld rows is not allowed",
                          n_layers, n_slots, (long long)capacity);
    OMNIC_TRY(omnic__kv_pool_bytes(n_layers, n_slots, capacity, n_kv, head_dim, dtype, &total, err));
    p->n_layers = n_layers;
    p->n_slots = n_slots;
    p->capacity = capacity;
    p->n_kv = n_kv;
    p->head_dim = head_dim;
    p->dtype = dtype;
    p->k = omnic_alloc_array((size_t)n_layers, sizeof *p->k);
    p->v = omnic_alloc_array((size_t)n_layers, sizeof *p->v);
    p->len = omnic_alloc_array((size_t)n_slots, sizeof *p->len);
    if (!p->k || !p->v || !p->len) goto nomem;
    int64_t dims[3] = {(int64_t)n_slots * capacity, n_kv, head_dim};
    size_t bytes = total / 2 / (size_t)n_layers;
    for (int l = 0; l < n_layers; l++) {
        for (int kv = 0; kv < 2; kv++) {
            omnic__tensor *t = kv ? &p->v[l] : &p->k[l];
            OMNIC_TRY(omnic__tensor_init(t, dtype, 3, dims, err));
            snprintf(t->name, sizeof t->name, "kv_l%d_%c", l, kv ? 'v' : 'k');
            t->owns_data = true;
            t->data = omnic_alloc_array(bytes ? bytes : 1, 1);
            if (!t->data) goto nomem;
        }
    }
    return OMNIC_OK;
nomem:
    omnic__kv_pool_deinit(p);
    return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a KV cache of %zu bytes", total);
}

void omnic__kv_pool_deinit(omnic__kv_pool *p)
{
    for (int l = 0; p->k && l < p->n_layers; l++)
        omnic_free(p->k[l].data);
    for (int l = 0; p->v && l < p->n_layers; l++)
        omnic_free(p->v[l].data);
    omnic_free(p->k);
    omnic_free(p->v);
    omnic_free(p->len);
    memset(p, 0, sizeof *p);
}

void omnic__kv_pool_clear_slot(omnic__kv_pool *p, int s)
{
    size_t row = (size_t)(p->n_kv * p->head_dim) * omnic_dtype_size(p->dtype);
    size_t off = (size_t)s * (size_t)p->capacity * row;
    for (int l = 0; l < p->n_layers; l++) {
        memset((uint8_t *)p->k[l].data + off, 0, row * (size_t)p->len[s]);
        memset((uint8_t *)p->v[l].data + off, 0, row * (size_t)p->len[s]);
    }
    p->len[s] = 0;
}
