/* Bundle identity hashing. */
#include <stdio.h>

#include "runtime/bundle.h"

static void field(omnic__sha256 *s, const char *key, const char *value)
{
    omnic__sha256_update(s, key, __builtin_strlen(key));
    omnic__sha256_update(s, "=", 1);
    omnic__sha256_field(s, value ? value : "");
}

void omnic__bundle_identity(const omnic__bundle_desc *d, char hex[65])
{
    omnic__sha256 s;
    char buf[256];
    omnic__sha256_init(&s);
    omnic__sha256_field(&s, OMNIC_BUNDLE_SCHEMA);
    field(&s, "arch_config", d->arch_config);
    snprintf(buf, sizeof buf, "%zu", d->n_weights);
    field(&s, "weights", buf);
    for (size_t i = 0; i < d->n_weights; i++) {
        const omnic__weight_desc *w = &d->weights[i];
        char dims[160];
        omnic__dims_str(dims, sizeof dims, w->ndim, w->dims);
        snprintf(buf, sizeof buf, "%s:%s:%s", omnic_dtype_name(w->dtype), dims,
                 w->transform ? w->transform : "");
        field(&s, w->name, buf);
    }
    field(&s, "compute_dtypes", d->compute_dtypes);
    snprintf(buf, sizeof buf, "%lld", (long long)d->capacity);
    field(&s, "capacity", buf);
    field(&s, "position_mode", d->position_mode);
    field(&s, "mask_mode", d->mask_mode);
    field(&s, "kv_layout", d->kv_layout);
    field(&s, "kv_dtype", omnic_dtype_name(d->kv_dtype));
    field(&s, "encoder_buckets", d->encoder_buckets);
    field(&s, "side_inputs", d->side_inputs);
    field(&s, "adapters", d->adapters);
    field(&s, "modules", d->modules);
    uint8_t digest[32];
    omnic__sha256_final(&s, digest);
    omnic__sha256_hex(digest, hex);
}
