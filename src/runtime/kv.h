/* The KV pool: every slot's cache in one tensor per layer, so one attention node can
 * serve a batch of rows from different slots. Layer l's K (and V) is
 * [n_slots * capacity, n_kv_heads, head_dim]; slot s owns rows [s * capacity, (s+1) * capacity),
 * of which [0, len[s]) hold its history. f16 by default, f32 option. */
#ifndef OMNIC_RUNTIME_KV_H
#define OMNIC_RUNTIME_KV_H

#include "core/tensor.h"

typedef struct omnic__kv_pool {
    int n_layers, n_slots;
    int64_t capacity; /* rows per slot (the context length) */
    int64_t n_kv, head_dim;
    omnic_dtype dtype;    /* f16 or f32 */
    omnic__tensor *k, *v; /* owned arrays [n_layers] of owned-data tensors */
    int64_t *len;         /* owned [n_slots]: rows of history per slot */
} omnic__kv_pool;

omnic_status omnic__kv_pool_init(omnic__kv_pool *p, int n_layers, int n_slots, int64_t capacity, int64_t n_kv,
                                 int64_t head_dim, omnic_dtype dtype, omnic_err *err);
void omnic__kv_pool_deinit(omnic__kv_pool *p);
/* Forgets slot s's history and zeroes the rows it had written (slot-scoped state). */
void omnic__kv_pool_clear_slot(omnic__kv_pool *p, int s);
/* Bytes for all layers' K and V of n_slots slots (overflow-checked). */
omnic_status omnic__kv_pool_bytes(int n_layers, int n_slots, int64_t capacity, int64_t n_kv, int64_t head_dim,
                                  omnic_dtype dtype, size_t *out, omnic_err *err);

#endif
