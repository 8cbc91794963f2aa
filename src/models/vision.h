/* ViT vision towers of the LLaVA family (CLIP and SigLIP) with the LLaVA projector, and
 * their vision.encode module: pixel_values f32 [3, S, S] -> the selected hidden state ->
 * projector -> rows that replace the image placeholders ([N, H_text]). Semantics follow
 * HF modeling_clip / modeling_siglip / modeling_llava (reference notes §3, §4):
 *   CLIP:   patch conv (no bias), CLS token, position embeddings, pre_layrnorm;
 *   SigLIP: patch conv with bias, no CLS, position embeddings, no pre-norm;
 *   layers: h += out(MHA(LN1(h))) (q/k/v/out biases, non-causal); h += fc2(act(fc1(LN2(h))));
 *   feature = hidden_states[vision_feature_layer] (index 0 = embeddings, k = output of layer
 *   k - 1; post_layernorm never applies: LLaVA reads the encoder's hidden_states), strategy
 *   "default" drops row 0 (the CLS for CLIP; HF drops it for SigLIP too), "full" keeps it;
 *   projector: linear_2(act(linear_1(feature))) (biases when multimodal_projector_bias).
 * Only the layers up to the feature layer are loaded and run. */
#ifndef OMNIC_MODELS_VISION_H
#define OMNIC_MODELS_VISION_H

#include <jansson.h>

#include "io/safetensors.h"
#include "models/weights.h"
#include "runtime/graph.h"
#include "runtime/module.h"

typedef enum omnic__vision_arch {
    OMNIC_VISION_CLIP = 0, /* vision_config.model_type clip_vision_model */
    OMNIC_VISION_SIGLIP,   /* siglip_vision_model */
} omnic__vision_arch;

/* What turns the tower's features into text rows. */
typedef enum omnic__projector_kind {
    OMNIC_PROJ_MLP = 0, /* LLaVA: linear_2(act(linear_1(feature))) over the selected hidden state */
    OMNIC_PROJ_GEMMA3,  /* Gemma 3 (Gemma3MultiModalProjector): post_layernorm on the last layer,
                         * pool x pool average pooling of the patch grid, mm_soft_emb_norm
                         * ((1 + w) RMSNorm, eps ln_eps), then x . mm_input_projection_weight
                         * (stored [C, D], in -> out) */
} omnic__projector_kind;

typedef struct omnic__vision_config {
    omnic__vision_arch arch;
    int64_t hidden, intermediate, n_layers, n_heads, head_dim; /* n_layers: as configured */
    int64_t patch, image_size, channels;
    int64_t grid;  /* image_size / patch (patches per side) */
    int64_t n_seq; /* tokens through the encoder: grid^2 (+1 CLS for CLIP) */
    int64_t n_out; /* rows out: n_seq, minus 1 for strategy "default" */
    double ln_eps;
    omnic__op act;         /* encoder MLP activation: GELU_QUICK / GELU_TANH / GELU / SILU */
    int64_t feature_index; /* hidden_states index in [0, n_layers]: layers run */
    bool keep_first;       /* strategy "full" */
    int64_t text_hidden;   /* projector width (the text model's hidden size) */
    omnic__op proj_act;
    bool proj_bias;
    int32_t image_token_id; /* placeholder id in the prompt */
    omnic__projector_kind projector;
    bool bidirectional;     /* an image's rows attend to each other both ways (Gemma 3) */
    int32_t boi_id, eoi_id; /* >= 0: the processor rewrites each boi token of a prompt into
                             * "\n\n" boi <image> eoi "\n\n" (Gemma3Processor); -1: none */
    int64_t pool;           /* GEMMA3: pooling kernel (grid / tokens per side); n_out = (grid / pool)^2 */
    /* Weight-name spellings: old (vision_tower.vision_model., multi_modal_projector.) and
     * new (model.vision_tower.vision_model., model.multi_modal_projector.); the loader takes
     * whichever the checkpoint has. */
    const char *prefix, *alt_prefix, *proj_prefix, *alt_proj_prefix;
} omnic__vision_config;

typedef struct omnic__vision_layer {
    omnic__tensor ln1_w, ln1_b, ln2_w, ln2_b; /* [C] */
    omnic__tensor wq, wk, wv, wo;             /* [C, C] */
    omnic__tensor *bq, *bk, *bv, *bo;         /* owned f32 [C] */
    omnic__tensor fc1, fc2;                   /* [I, C], [C, I] */
    omnic__tensor *fc1_b, *fc2_b;             /* owned f32 [I], [C] */
} omnic__vision_layer;

typedef struct omnic__vision_tower {
    omnic__vision_config cfg;
    omnic__tensor patch_w;            /* [C, 3, p, p] */
    omnic__tensor *patch_b;           /* owned f32 [C] (SigLIP) or NULL */
    omnic__tensor *cls;               /* owned f32 [1, C] (CLIP) or NULL */
    omnic__tensor pos;                /* [n_seq, C] position_embedding.weight */
    omnic__tensor pre_w, pre_b;       /* [C] pre_layrnorm (CLIP only) */
    omnic__vision_layer *layers;      /* owned [feature_index] */
    omnic__tensor proj1, proj2;       /* MLP: [D, C], [D, D] */
    omnic__tensor *proj1_b, *proj2_b; /* owned f32 [D] or NULL */
    omnic__tensor post_w, post_b;     /* GEMMA3: [C] post_layernorm */
    omnic__tensor soft_norm;          /* GEMMA3: [C] mm_soft_emb_norm.weight (used as 1 + w) */
    omnic__tensor *proj_in;           /* GEMMA3: owned [D, C], mm_input_projection_weight transposed */
    omnic__tensor *qpos;              /* owned i32 [n_seq] zeros: attention rows' positions (unused
                                       * by non-causal attention, required by the op) */
    omnic__weight_copies copies;      /* aligned copies of weights the file left misaligned */
} omnic__vision_tower;

/* LLaVA config.json (cfg: the top object) -> *out: vision_config (model_type
 * clip_vision_model or siglip_vision_model, HF class defaults for absent keys),
 * vision_feature_layer (an int; a list is E_UNSUPPORTED), vision_feature_select_strategy,
 * projector_hidden_act, multimodal_projector_bias, image_token_index (or image_token_id),
 * image_seq_length (checked against the computed row count when present). text_hidden:
 * the text model's hidden size. Errors name the key and the value. */
omnic_status omnic__vision_config_parse(const json_t *cfg, const char *what, int64_t text_hidden,
                                        omnic__vision_config *out, omnic_err *err);

/* The tower part of the above: cfg's vision_config (HF CLIPVisionConfig / SiglipVisionConfig
 * defaults for absent keys; an absent vision_config is LlavaConfig's CLIP ViT-L/14-336) into
 * arch, dimensions, eps, activation, grid and n_seq; out is zeroed first. For families that
 * wrap the tower with their own top-level keys. */
omnic_status omnic__vision_tower_config_parse(const json_t *cfg, omnic__vision_config *out, omnic_err *err);

/* Binds the tower's weights (only layers < feature_index) and the projector from st
 * (borrowed; must outlive v), checking every shape. On failure v is cleared. */
omnic_status omnic__vision_tower_load(omnic__vision_tower *v, const omnic__vision_config *cfg,
                                      const omnic__safetensors *st, omnic_err *err);
void omnic__vision_tower_deinit(omnic__vision_tower *v);

/* Builds vision.encode into m (initialized with capacity 1: one image per call, n = 1):
 * input pixel_values f32 [channels, image_size, image_size]; outputs "vision_features"
 * f32 (MLP: [n_out, hidden], the selected rows; GEMMA3: [n_seq, hidden], the post-LN last
 * hidden state the projector reads) and "projected" f32 [n_out, text_hidden]. */
omnic_status omnic__vision_tower_build(const omnic__vision_tower *v, omnic__module *m, omnic_err *err);

/* One CLIP / SigLIP encoder layer (HF <prefix>encoder.layers.<l>.*: layer_norm1/2, self_attn q/k/v/out
 * with biases, mlp fc1/fc2), hidden C, MLP width I, bound from st (copies: aligned copies the file
 * needs) into *L; the biases are owned f32 (omnic__vision_layer_deinit frees them). Shared by the towers
 * built on these layers (this file's, Phi-4-multimodal's). */
omnic_status omnic__vision_layer_load(const omnic__safetensors *st, const char *prefix, int64_t l, int64_t C,
                                      int64_t I, omnic__vision_layer *L, omnic__weight_copies *copies,
                                      omnic_err *err);
void omnic__vision_layer_deinit(omnic__vision_layer *L);
/* x + out(MHA(LN1 x)), then + fc2(act(fc1(LN2 x))) over x [N, C] (fixed or varying rows). Without
 * kv_begin every row attends to all N keys (qpos unused by the non-causal op); with it, the tiled
 * attention, row t seeing keys [kv_begin[t], qpos[t]] (blocks of rows, Phi-4's crops). */
omnic__tensor *omnic__vision_layer_graph(omnic__graph *g, const omnic__vision_layer *L, omnic__tensor *x,
                                         int64_t n_heads, int64_t head_dim, float eps, omnic__op act,
                                         omnic__tensor *qpos, omnic__tensor *kv_begin);

/* Parameter count and bytes of the bound weights. */
void omnic__vision_tower_param_stats(const omnic__vision_tower *v, int64_t *params, int64_t *bytes);

#endif
