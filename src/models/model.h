/* A loaded model: checkpoint, family, decoder weights, the modules of its bundle
 * (planned on one backend with one thread pool) and the bundle identity. */
#ifndef OMNIC_MODELS_MODEL_H
#define OMNIC_MODELS_MODEL_H

#include "io/checkpoint.h"
#include "models/family.h"

typedef struct omnic__model_opts {
    const char *backend;  /* "cpu" (default) or "ref" */
    int threads;          /* 0: all available cores */
    int64_t ctx;          /* rows per slot; 0: min(max_position_embeddings, 4096) */
    int slots;            /* sequences decoded together; 0: 1 */
    int64_t chunk;        /* prefill rows per call; 0: min(ctx, 512) */
    omnic_dtype kv_dtype; /* f16 (default) or f32 */
    bool taps;            /* prefill also outputs inputs_embeds and hidden_l{i} (stage dumps) */
    const char *quant;    /* "q8_0" / "q4_0": quantize linear weights at load (models/quantize.h);
                           * NULL, "" or "none": run them as stored */
} omnic__model_opts;

typedef struct omnic__model {
    omnic__checkpoint *ckpt;          /* owned */
    const omnic__family *family;
    omnic__text_decoder dec;
    const omnic__backend_ops *backend;
    omnic__threadpool *pool;          /* owned */
    int64_t capacity;                 /* rows per slot */
    int n_slots;
    int64_t chunk;                    /* prefill rows per call */
    omnic_dtype kv_dtype;
    omnic__kv_pool kv;                /* every slot's KV cache */
    omnic__module prefill;            /* text.token_prefill: one sequence, <= chunk rows */
    int prefill_logits;               /* index of its "logits" output */
    omnic__module decode;             /* text.decode: one row per slot, <= n_slots rows */
    char identity[65];
} omnic__model;

/* Opens dir (borrowed), binds weights, builds and plans every module. Returns owned *out. */
omnic_status omnic__model_open(const char *dir, const omnic__model_opts *opts, omnic__model **out, omnic_err *err);
/* NULL ok. */
void omnic__model_close(omnic__model *m);

/* Memory the model needs beyond its mapped weights: planned module memory, and the KV
 * pool (bytes). */
size_t omnic__model_planned_bytes(const omnic__model *m);
size_t omnic__model_kv_bytes(const omnic__model *m);

#endif
