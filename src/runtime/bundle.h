/* Bundle identity: a SHA-256 over everything that fixes a loaded model's numerics and
 * layout (DESIGN.md §3). Saved state carries it and is refused when it differs. */
#ifndef OMNIC_RUNTIME_BUNDLE_H
#define OMNIC_RUNTIME_BUNDLE_H

#include "core/sha256.h"
#include "core/tensor.h"

#define OMNIC_BUNDLE_SCHEMA "omnic-bundle-v1"

typedef struct omnic__weight_desc {
    const char *name;
    omnic_dtype dtype;
    int ndim;
    const int64_t *dims;
    const char *transform; /* "as-stored", "f32", "q8_0", ... */
} omnic__weight_desc;

/* Each text field is a canonical string (empty when the bundle has none of it). */
typedef struct omnic__bundle_desc {
    const char *arch_config; /* canonical config JSON (sorted keys, compact) */
    const omnic__weight_desc *weights;
    size_t n_weights;
    const char *compute_dtypes; /* "act=f32;acc=f32" */
    int64_t capacity;
    const char *position_mode; /* "1d" or "mrope3" */
    const char *mask_mode;     /* "causal", "causal+bias", ... */
    const char *kv_layout;     /* "slot[cap,n_kv,head_dim]" */
    omnic_dtype kv_dtype;
    const char *encoder_buckets;
    const char *side_inputs;
    const char *adapters;
    const char *modules; /* module names and contract versions */
} omnic__bundle_desc;

/* Lowercase hex SHA-256 of the description into hex[65]. Every field is hashed as
 * "key=value" followed by a 0 byte, in a fixed order, after OMNIC_BUNDLE_SCHEMA. */
void omnic__bundle_identity(const omnic__bundle_desc *d, char hex[65]);

#endif
