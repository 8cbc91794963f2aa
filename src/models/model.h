/* A loaded model: checkpoint, family, decoder weights, the modules of its bundle
 * (planned on one backend with one thread pool) and the bundle identity. */
#ifndef OMNIC_MODELS_MODEL_H
#define OMNIC_MODELS_MODEL_H

#include "io/checkpoint.h"
#include "models/family.h"
#include "models/media.h"
#include "runtime/kv.h"
#include "runtime/module.h"

/* One modality of a model (models/media.h). */
#define OMNIC_MAX_SIDE 8 /* side outputs per modality */

typedef struct omnic__model_media {
    const omnic__media_ops *ops;  /* the family's table; NULL: not taken */
    void *state;                  /* the family's encoder state, owned (ops->close frees it) */
    int32_t placeholder_id;       /* the one id per item in logical prompts; -1 none */
    int64_t span_rows;            /* rows of the bidirectional span one item makes (its rows attend
                                   * to each other both ways: Gemma 3); 0: causal rows */
    int n_side;                   /* encoder outputs beside "projected", each [rows, text hidden]
                                   * (Qwen3-VL's DeepStack features): the engine keeps them after an
                                   * item's rows, in order, for the family's merge */
    int side_out[OMNIC_MAX_SIDE]; /* their module output indices */
} omnic__model_media;

typedef struct omnic__model_opts {
    const char *backend;  /* "cpu" (default) or "ref" */
    int threads;          /* 0: all available cores */
    int64_t ctx;          /* rows per slot; 0: min(max_position_embeddings, 4096) */
    int slots;            /* sequences decoded together; 0: 1 */
    int64_t chunk;        /* prefill rows per call; 0: min(ctx, 512) */
    int64_t step_tokens;  /* > 0: mixed steps (engine): text.decode takes up to this many rows,
                           * decode rows and a token prompt's rows together, and token prompts go
                           * through prefill_inv otherwise, so a row's result never depends on
                           * the step that computed it. 0: prompts only go through
                           * text.token_prefill. */
    omnic_dtype kv_dtype; /* f16 (default) or f32 */
    bool taps;            /* prefill also outputs inputs_embeds and hidden_l{i} (stage dumps) */
    const char *quant;    /* "q8_0" / "q4_0": quantize linear weights at load (models/quantize.h);
                           * NULL, "" or "none": run them as stored */
    bool mmap_weights;    /* unquantized weights read in place from the file mapping (quicker to
                           * load, pages shared with other processes); default: copied onto huge
                           * pages at load (omnic__weights_resident), which decodes faster */
} omnic__model_opts;

typedef struct omnic__model {
    omnic__checkpoint *ckpt; /* owned */
    const omnic__family *family;
    omnic__text_decoder dec;
    const omnic__backend_ops *backend;
    omnic__threadpool *pool; /* owned */
    int64_t capacity;        /* rows per slot */
    int n_slots;
    int64_t chunk; /* prefill rows per call */
    omnic_dtype kv_dtype;
    omnic__kv_pool kv;     /* every slot's KV cache */
    omnic__module prefill; /* text.token_prefill: one sequence, <= chunk rows */
    int prefill_logits;    /* index of its "logits" output */
    omnic__module decode;  /* text.decode: one row per slot */
    int64_t step_tokens;   /* 0: no mixed steps */
    /* Mixed steps (step_tokens > 0; not finalized otherwise): text.decode_body, text.decode
     * without its head over decode rows and up to step_tokens prompt rows (output "hidden"),
     * then text.head on the rows that sample (n_slots + 1 at most) */
    omnic__module decode_body, head;
    omnic__module prefill_inv; /* step_tokens > 0: text.token_prefill with batch-invariant
                                * matmuls (rows as text.decode computes them), for token
                                * prompts; not finalized otherwise */
    int prefill_inv_logits;
    /* text.embeddings_prefill: one sequence, <= chunk rows of post-scale embeddings
     * (omnic__text_decoder_build_embeddings has the inputs and the bias layout) */
    omnic__module embed_prefill;
    int embed_prefill_logits;    /* index of its "logits" output */
    omnic__mask_mode embed_mask; /* its mask mode (causal: no attn_bias input; spans: attn_span) */
    int64_t embed_rows;          /* its row capacity: chunk, or the longest media span when longer
                                  * (a span is never split across calls) */
    /* text.embeddings_decode (step_tokens > 0, media taken, causal mask): text.decode_body fed
     * rows, so mixed steps carry a prepared (media) prompt's rows beside the decode rows (then
     * text.head); not finalized otherwise */
    omnic__module embed_decode;
    /* The adapter id (models/lora.h, m->dec.lora) each prompt mode runs with
     * (mm/prepared.h omnic__adapter_mode); -1: the model has none for that mode. */
    int adapter_of[3];
    /* Media input, one entry per modality (models/media.h): the family's table and its
     * encoder state; ops NULL when the model does not take that modality. */
    omnic__model_media media[OMNIC_MODALITY_COUNT];
    char identity[65];
} omnic__model;

/* Opens dir (borrowed), binds weights, builds and plans every module. Returns owned *out. */
omnic_status omnic__model_open(const char *dir, const omnic__model_opts *opts, omnic__model **out,
                               omnic_err *err);
/* NULL ok. */
void omnic__model_close(omnic__model *m);

/* True only when m (borrowed; NULL: false) can take images: the family's encoder loaded and
 * a preprocessor_config.json is present (omnic__model_accepts is the full predicate). */
bool omnic__model_supports_image(const omnic__model *m);

/* Post-scale embedding rows of ids[0..n) into out [n, text hidden] f32, bit-identical to
 * the rows text.token_prefill computes (omnic__text_decoder_embed_rows on m's backend).
 * E_INVALID naming the index when an id is outside the vocabulary. */
omnic_status omnic__model_embed_tokens(const omnic__model *m, const int32_t *ids, int64_t n, float *out,
                                       omnic_err *err);

/* The prompt's post-scale embeddings out [n, text hidden] f32 (DESIGN.md 3, LLaVA's merge):
 * rows of ids equal to the image placeholder id are replaced, in order, by the rows of items[0],
 * items[1], ... (each f32 [rows, text hidden], e.g. omnic__media_encode's projected
 * output; borrowed); every other row is omnic__model_embed_tokens of its id. E_INVALID when
 * the number of image-token ids differs from the items' total rows (names both counts), or an
 * item has the wrong dtype/width, or an id is out of range; out is then unspecified. */
omnic_status omnic__model_merge_embeds(const omnic__model *m, const int32_t *ids, int64_t n,
                                       const omnic__tensor *const *items, int n_items, float *out,
                                       omnic_err *err);

/* Memory the model needs beyond its mapped weights: planned module memory, and the KV
 * pool (bytes). */
size_t omnic__model_planned_bytes(const omnic__model *m);
size_t omnic__model_kv_bytes(const omnic__model *m);

#endif
