/* Phi-4-multimodal's audio encoder (HF Phi4MultimodalAudioModel; reference notes
 * families-gemma-phi.md C3.2), the cascaded Conformer, in f32 as two modules:
 *   audio.embed   features [n, 80] (n a multiple of the time reduction r = 8; the host has
 *                 applied (x - global_mean) * global_invstd and padded the clip's T rows with
 *                 zero rows, as HF's conv padding sees them) and stage masks [n, s - 1]
 *                 (s = log2 r conv stages; column k, read at rows multiple of 2^(k+1), is 1 for
 *                 the rows stage k + 1 really has: the padded rows' ReLU(bias) never reaches a
 *                 kept row) -> NemoConvSubsampling: Conv2d(1 -> C, 3, s2, p1) + ReLU, then per
 *                 stage depthwise Conv2d(C, 3, s2, p1) + pointwise Conv2d(C, 1x1) + ReLU, each
 *                 per-time [C][F] map flattened c-major into Linear(C * F -> H): [n / r, H];
 *   audio.encode  one sequence of n <= 500 rows [n, H] and positions 0..n-1 -> the conformer
 *                 blocks: x += 0.5 FF_in(x) (LayerNorm, Linear(H -> 2I), up = first I, gate =
 *                 last I, up * silu(gate), Linear(I -> H)); x += o_proj(attention(LN_att x))
 *                 with 64^-1/2 scores plus the T5 table (bias_values + 1: HF adds its all-true
 *                 mask as 1.0) by clamped distance; x += conv(x) (LayerNorm, the GLU pointwise
 *                 conv (a + b1) * silu(g + b2), causal depthwise conv k, pointwise conv, silu,
 *                 ext pointwise conv); x += 0.5 FF_out(x); x = LayerNorm(x); then both
 *                 projections into the text model, Linear -> GELU (erf) -> Linear: "speech"
 *                 (up/down_proj_for_speech: audio-only prompts) and "vision_speech" (for prompts
 *                 that also hold an image), each [n, text hidden]; also "encoded" [n, H] and
 *                 "block0" (block 0's output), golden stages.
 * omnic__p4a_encode runs both: T' = ceil(T / r) rows; longer than 500, the rows are zero-padded
 * to a multiple of 500 and each 500-row chunk is its own sequence (padding rows attended, as HF
 * does for one clip), the padding dropped after. */
#ifndef OMNIC_MODELS_PHI4MM_AUDIO_H
#define OMNIC_MODELS_PHI4MM_AUDIO_H

#include <jansson.h>

#include "core/threadpool.h"
#include "io/safetensors.h"
#include "models/weights.h"
#include "runtime/module.h"

/* HF's fixed chunk of the conformer (max_seq_len in Phi4MultimodalAudioModel.forward). */
#define OMNIC_P4A_CHUNK 500
#define OMNIC_P4A_MAX_STAGES 4

typedef struct omnic__p4a_config {
    int64_t hidden, intermediate, n_blocks, n_heads, head_dim;
    int64_t input_size;      /* mel bins (80) */
    int64_t time_reduction;  /* 2^stages (8) */
    int64_t stages;          /* conv stages: log2 time_reduction */
    int64_t conv_channels;   /* NeMo channels C (1024) */
    int64_t final_size;      /* frequency width after the stages (80 -> 10) */
    int64_t kernel_size;     /* depthwise conv1d taps (3) */
    int64_t max_distance;    /* T5 bias_max_distance M (500 in the published checkpoint) */
    int64_t text_hidden;     /* the projections' output: the text model's hidden size */
    const char *prefix;      /* the encoder's weights: "model.embed_tokens_extend.audio_embed.encoder." */
    const char *proj_prefix; /* the projections': "model.embed_tokens_extend.audio_embed." */
} omnic__p4a_config;

typedef struct omnic__p4a_block {
    omnic__tensor ffi_ln_w, ffi_ln_b, ffi_up, ffi_gate, ffi_down; /* up/gate: row blocks of gate_up */
    omnic__tensor *ffi_up_b, *ffi_gate_b, *ffi_down_b;            /* owned f32 */
    omnic__tensor ffo_ln_w, ffo_ln_b, ffo_up, ffo_gate, ffo_down;
    omnic__tensor *ffo_up_b, *ffo_gate_b, *ffo_down_b;
    omnic__tensor att_ln_w, att_ln_b, wq, wk, wv, wo;
    omnic__tensor *bq, *bk, *bv, *bo;
    omnic__tensor conv_ln_w, conv_ln_b, glu_a, glu_g; /* row blocks of glu.ext_pw_conv_1d [2H, H, 1] */
    omnic__tensor *glu_a_b, *glu_g_b, *glu_b1, *glu_b2;
    omnic__tensor dw_w;        /* [H, k] (dw_conv [H, 1, k]) */
    omnic__tensor *dw_b;       /* owned f32 [H] */
    omnic__tensor pw_w, ext_w; /* [H, H] (pw_conv, ext_pw_conv_1d [H, H, 1]) */
    omnic__tensor *pw_b, *ext_b;
    omnic__tensor out_ln_w, out_ln_b; /* layer_norm */
} omnic__p4a_block;

typedef struct omnic__p4a {
    omnic__p4a_config cfg;
    float *mean, *invstd;                           /* owned f32 [input_size] */
    omnic__tensor conv_w[2 * OMNIC_P4A_MAX_STAGES]; /* conv.0, then per stage depthwise, pointwise */
    omnic__tensor *conv_b[2 * OMNIC_P4A_MAX_STAGES];
    omnic__tensor *out_w; /* owned: embed.out.weight with its columns in
                           * (f, c) order, the graph's channel-last flatten */
    omnic__tensor *out_b;
    omnic__tensor *rel_table;               /* owned f32 [2M, heads]: bias_values + 1 */
    omnic__p4a_block *blocks;               /* owned [n_blocks] */
    omnic__tensor proj_up[2], proj_down[2]; /* [0] speech, [1] vision-speech */
    omnic__tensor *proj_up_b[2], *proj_down_b[2];
    omnic__weight_copies copies;
} omnic__p4a;

/* audio_config (the object, borrowed) of an HF-converted Phi-4-multimodal config.json (HF class
 * defaults for absent keys; a key that would change numerics and is not understood, or a value
 * this encoder does not implement, is E_UNSUPPORTED naming it) and the text model's hidden size
 * -> *out. */
omnic_status omnic__p4a_config_parse(const json_t *audio_config, const char *what, int64_t text_hidden,
                                     omnic__p4a_config *out, omnic_err *err);

/* Binds every weight of the encoder from st (borrowed; must outlive e), checking shapes. On
 * failure e is cleared. */
omnic_status omnic__p4a_load(omnic__p4a *e, const omnic__p4a_config *cfg, const omnic__safetensors *st,
                             omnic_err *err);
void omnic__p4a_deinit(omnic__p4a *e);

/* Builds audio.embed into m (initialised with capacity = padded feature rows, a multiple of the
 * time reduction) and audio.encode into m2 (capacity <= OMNIC_P4A_CHUNK). */
omnic_status omnic__p4a_build_embed(const omnic__p4a *e, omnic__module *m, omnic_err *err);
omnic_status omnic__p4a_build_encode(const omnic__p4a *e, omnic__module *m, omnic_err *err);

/* Rows the encoder gives a clip of T feature frames: ceil(T / time_reduction). */
int64_t omnic__p4a_rows(const omnic__p4a_config *c, int64_t T);

/* What one encode gave besides its output (golden stages). */
typedef struct omnic__p4a_stages {
    float *embed;  /* owned [rows, H]: audio.embed's output, or NULL when not asked */
    float *block0; /* owned [rows, H]: block 0's output (one sequence only: rows <= 500), or NULL */
} omnic__p4a_stages;

/* The rows for a clip's placeholder: projected [rows, text hidden] by the speech or the
 * vision-speech projection. */
typedef enum omnic__p4a_proj { OMNIC_P4A_SPEECH = 0, OMNIC_P4A_VISION_SPEECH = 1 } omnic__p4a_proj;

/* features [T, input_size] (borrowed, f32 log-mel, finite) -> out[p] [rows, text hidden] (caller
 * sized; NULL: not wanted) for each projection p, through the two finalized modules (embed with
 * capacity >= T rounded up to the time reduction). encoded (optional) [rows, H]: the encoder's
 * output; stages (optional) receives owned copies of the golden stages. E_INVALID (T < 1, over
 * the embed module's capacity), E_NOMEM, the modules' errors. */
omnic_status omnic__p4a_encode(const omnic__p4a *e, omnic__module *embed, omnic__module *encode,
                               const float *features, int64_t T, float *const out[2], float *encoded,
                               omnic__p4a_stages *stages, omnic_err *err);

#endif
