/* The text decoder shared by the Llama-style families (llama, qwen2, and later qwen3,
 * phi3, gemma3_text): its configuration, its weights, and the graph of each module.
 * A family file parses its config.json into omnic__text_config and names its weights;
 * everything after that is here. */
#ifndef OMNIC_MODELS_DECODER_H
#define OMNIC_MODELS_DECODER_H

#include <jansson.h>

#include "io/safetensors.h"
#include "runtime/module.h"

typedef enum omnic__rope_type {
    OMNIC_ROPE_DEFAULT = 0, /* inv_freq[i] = theta^(-2i/n_rot) */
    OMNIC_ROPE_LLAMA3 = 1,  /* Llama 3.1 wavelength-banded scaling of the default table */
} omnic__rope_type;

typedef struct omnic__text_config {
    int64_t vocab, hidden, n_layers, n_heads, n_kv_heads, head_dim, intermediate, max_pos;
    double rms_eps, rope_theta;
    omnic__rope_type rope_type;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor; /* llama3 */
    int64_t rope_original_max_pos;                                   /* llama3 */
    bool tie_embeddings;
    bool qkv_bias; /* q/k/v projections carry biases (qwen2) */
} omnic__text_config;

typedef struct omnic__decoder_layer {
    omnic__tensor attn_norm;          /* [H] */
    omnic__tensor wq, wk, wv, wo;     /* [n_heads*hd, H], [n_kv*hd, H] x2, [H, n_heads*hd] */
    omnic__tensor *bq, *bk, *bv;      /* f32 [out] converted at load, or NULL */
    omnic__tensor mlp_norm;           /* [H] */
    omnic__tensor w_gate, w_up, w_down; /* [I, H], [I, H], [H, I] */
} omnic__decoder_layer;

typedef struct omnic__decoder {
    omnic__text_config cfg;
    omnic__tensor embed;              /* [V, H] */
    omnic__tensor norm;               /* [H] */
    omnic__tensor lm_head;            /* [V, H]; the embedding when tied */
    omnic__decoder_layer *layers;     /* owned [n_layers] */
    omnic__tensor *inv_freq;          /* owned f32 [head_dim/2] rope table */
    omnic__tensor **copies;           /* owned: aligned copies of weights the file left misaligned */
    size_t n_copies;
} omnic__decoder;

/* Parses the Llama-style keys of a config.json object (what: "config.json").
 * Every dimension is range-checked and cross-checked (heads divide, head_dim even). */
omnic_status omnic__text_config_parse(const json_t *cfg, const char *what, omnic__text_config *out,
                                      omnic_err *err);

/* Binds and checks HF weight names (model.embed_tokens.weight, model.layers.{i}.*, ...)
 * against the config: every tensor present with the expected shape and a float dtype. */
omnic_status omnic__decoder_load(omnic__decoder *d, const omnic__text_config *cfg, const omnic__safetensors *st,
                                 omnic_err *err);
void omnic__decoder_deinit(omnic__decoder *d);

/* Builds text.token_prefill into m (initialized with the capacity): inputs tokens i32 [n],
 * positions i32 [n] (rope coordinates); K/V of rows [kv_start, kv_start+n) written to
 * the slot (kv_dtype); output logits f32 [1, V] of the last row. */
omnic_status omnic__decoder_build_token_prefill(const omnic__decoder *d, omnic__module *m, omnic_dtype kv_dtype,
                                                omnic_err *err);

/* Parameter count and bytes of the bound weights (tied head counted once). */
void omnic__decoder_param_stats(const omnic__decoder *d, int64_t *params, int64_t *bytes);

#endif
