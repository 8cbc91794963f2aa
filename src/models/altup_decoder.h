/* The Gemma 3n text decoder (Gemma3nTextModel; omnic__text_config.altup > 0): the residual
 * stream is `altup` parallel streams (AltUp predict / correct around each layer, which
 * computes on the active stream), a Laurel low-rank residual beside attention, per-layer
 * embeddings (PLE: a [ple_vocab, L * P] table looked up by token id plus a projection of the
 * merged embeddings, gated into every layer), gaussian top-k sparsity in the first layers'
 * MLPs, v_norm, attention scale 1, and the last layers attending over the KV cache of the last
 * earlier layer of their type (kv_layer). text_decoder.c owns the config, the shared layer
 * weights and the module entry points; this file owns the rest. Semantics: transformers 4.57
 * modeling_gemma3n.py (../shared/reference/families-gemma-phi.md §B5). */
#ifndef OMNIC_MODELS_ALTUP_DECODER_H
#define OMNIC_MODELS_ALTUP_DECODER_H

#include "models/text_decoder.h"

typedef struct omnic__altup_layer {
    omnic__tensor router_norm;  /* [H] altup.router_norm */
    omnic__tensor router;       /* [n, H] altup.modality_router */
    omnic__tensor pred_coefs;   /* [n * n, n] altup.prediction_coefs */
    omnic__tensor *corr_coefs;  /* owned f32 [n, n] altup.correction_coefs, clamped */
    omnic__tensor out_scale;    /* [H] altup.correct_output_scale */
    omnic__tensor laurel_left;  /* [r, H] */
    omnic__tensor laurel_right; /* [H, r] */
    omnic__tensor laurel_norm;  /* [H] post_laurel_norm */
    omnic__tensor ple_gate;     /* [P, H] per_layer_input_gate */
    omnic__tensor ple_proj;     /* [H, P] per_layer_projection */
    omnic__tensor ple_norm;     /* [H] post_per_layer_input_norm */
} omnic__altup_layer;

typedef struct omnic__altup {
    omnic__altup_layer *layers;   /* owned [n_layers] */
    omnic__tensor ple_embed;      /* [ple_vocab, L * P] embed_tokens_per_layer */
    omnic__tensor ple_model_proj; /* [L * P, H] per_layer_model_projection */
    omnic__tensor ple_proj_norm;  /* [P] per_layer_projection_norm */
    omnic__tensor proj[3];        /* [H, H] altup_projections (streams 1..n-1) */
    omnic__tensor unembed[3];     /* [H, H] altup_unembed_projections */
    float ple_scale;              /* sqrt(P) rounded to the table dtype (as HF's scaled embedding) */
    /* Gemma3nForConditionalGeneration: the hard embeddings of the multimodal ids
     * [mm_vocab_offset, vocab) (vision then audio), computed at load; NULL otherwise */
    omnic__tensor *hard; /* owned f32 [vocab - mm_vocab_offset, H] */
} omnic__altup;

/* Binds the Gemma 3n weights under d->cfg.prefix (layers already bound by the caller) into
 * an owned d->altup; with mm_vocab_offset, also builds the hard embedding rows from
 * mm_prefix + "embed_vision." / "embed_audio." (each Gemma3nMultimodalEmbedder: RMSNorm with
 * weight, projection, RMSNorm without weight; vision ids first, as many as its table has). */
omnic_status omnic__altup_load(omnic__text_decoder *d, const omnic__safetensors *st, const char *mm_prefix,
                               omnic_err *err);
void omnic__altup_free(omnic__text_decoder *d);

/* The decoder layers over post-scale (merged) embeddings x [T, H] and the logical ids
 * ple_ids i32 [T] (the per-layer table's lookup; ids past it read row 0): returns the rows
 * before the final norm [T, H] (the streams merged back), or NULL with the graph's error set.
 * taps: per_layer_inputs [T, L * P] (the per-layer embeddings every layer gates in), hidden_l{i} =
 * stream 0 after layer i. */
omnic__tensor *omnic__altup_build_layers(const omnic__text_decoder *d, omnic__graph *g, omnic__tensor *x,
                                         omnic__tensor *ple_ids, omnic__tensor *pos, omnic_dtype kv_dtype,
                                         int64_t kv_rows, bool taps);

/* Parameters and bytes of the Gemma 3n weights beyond the shared layer weights. */
void omnic__altup_param_stats(const omnic__text_decoder *d, int64_t *params, int64_t *bytes);

#endif
