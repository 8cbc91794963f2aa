/* A slot's KV cache: for each layer K and V of [capacity, n_kv_heads, head_dim]
 * (f16 by default, f32 option). Rows [0, len) hold the slot's history. */
#ifndef OMNIC_RUNTIME_KV_H
#define OMNIC_RUNTIME_KV_H

#include "core/tensor.h"

typedef struct omnic__kv_slot {
    int n_layers;
    int64_t capacity, n_kv, head_dim;
    omnic_dtype dtype;     /* f16 or f32 */
    omnic__tensor *k, *v;  /* owned arrays [n_layers] of owned-data tensors */
    int64_t len;           /* rows written (the slot's cache length) */
} omnic__kv_slot;

omnic_status omnic__kv_slot_init(omnic__kv_slot *s, int n_layers, int64_t capacity, int64_t n_kv, int64_t head_dim,
                                 omnic_dtype dtype, omnic_err *err);
void omnic__kv_slot_deinit(omnic__kv_slot *s);
/* Forgets the history (len = 0) and zeroes the rows that were written. */
void omnic__kv_slot_clear(omnic__kv_slot *s);
/* Bytes for all layers' K and V (overflow-checked). */
omnic_status omnic__kv_slot_bytes(int n_layers, int64_t capacity, int64_t n_kv, int64_t head_dim, omnic_dtype dtype,
                                  size_t *out, omnic_err *err);

#endif
