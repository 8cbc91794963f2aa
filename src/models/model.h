/* A loaded model: checkpoint, family, decoder weights, the modules of its bundle
 * (planned on one backend with one thread pool) and the bundle identity. */
#ifndef OMNIC_MODELS_MODEL_H
#define OMNIC_MODELS_MODEL_H

#include "io/checkpoint.h"
#include "models/family.h"

typedef struct omnic__model_opts {
    const char *backend;  /* "cpu" (default) or "ref" */
    int threads;          /* 0: all available cores */
    int64_t ctx;          /* slot capacity; 0: min(max_position_embeddings, 4096) */
    omnic_dtype kv_dtype; /* f16 (default) or f32 */
} omnic__model_opts;

typedef struct omnic__model {
    omnic__checkpoint *ckpt;          /* owned */
    const omnic__family *family;
    omnic__decoder dec;
    const omnic__backend_ops *backend;
    omnic__threadpool *pool;          /* owned */
    int64_t capacity;
    omnic_dtype kv_dtype;
    omnic__module prefill;            /* text.token_prefill */
    char identity[65];
} omnic__model;

/* Opens dir (borrowed), binds weights, builds and plans every module. Returns owned *out. */
omnic_status omnic__model_open(const char *dir, const omnic__model_opts *opts, omnic__model **out, omnic_err *err);
/* NULL ok. */
void omnic__model_close(omnic__model *m);

/* Memory the model needs beyond its mapped weights: planned module memory plus one
 * slot's KV cache (bytes). */
size_t omnic__model_planned_bytes(const omnic__model *m);
size_t omnic__model_kv_slot_bytes(const omnic__model *m);

#endif
