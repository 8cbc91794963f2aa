/* Phi-4-multimodal's audio encoder (HF Phi4MultimodalAudioEmbedding with its
 * Phi4MultimodalAudioModel; reference notes families-gemma-phi.md C3.2, C4), the cascaded
 * Conformer and its two projections, in f32, as one module audio.encode over a call of n feature
 * rows (n a multiple of the time reduction r = 8; omnic__p4a_inputs_make prepares them):
 *   input       (x - global_mean) * global_invstd on the host, the clip's T rows padded with zero
 *               rows (what HF's conv padding sees);
 *   subsampling NemoConvSubsampling: Conv2d(1 -> C, 3, s2, p1) + ReLU, then per stage depthwise
 *               Conv2d(C, 3, s2, p1) + pointwise Conv2d(C, 1x1) + ReLU, each stage's rows past its
 *               own length zeroed again (stage_mask: the padded rows' ReLU(bias) never reaches a
 *               kept row), the per-time [C][F] map flattened c-major into Linear(C * F -> H):
 *               [n / r, H] ("embed");
 *   chunks      T' = ceil(T / r) rows are one sequence; over 500, HF pads them with zero rows to a
 *               multiple of 500 and runs each 500-row chunk as its own sequence (the padding
 *               rows attended, as HF does for one clip): attention within the chunk (a causal
 *               attention widened to the chunk's span) and the causal conv restarting at the
 *               chunk's first row (conv segments);
 *   blocks      x += 0.5 FF_in(x) (LayerNorm, Linear(H -> 2I), up = first I, gate = last I,
 *               up * silu(gate), Linear(I -> H)); x += o_proj(attention(LN_att x)) with 64^-1/2
 *               scores plus the T5 table (bias_values + 1: HF adds its all-true mask as 1.0) by
 *               clamped distance; x += conv(x) (LayerNorm, the GLU pointwise conv (a + b1) *
 *               silu(g + b2), causal depthwise conv k, pointwise conv, silu, ext pointwise conv);
 *               x += 0.5 FF_out(x); x = LayerNorm(x) ("block0" after the first, "encoded");
 *   projections Linear -> GELU (erf) -> Linear into the text model: "speech" (audio-only prompts)
 *               and "vision_speech" (prompts that also hold an image), [n / r, text hidden].
 * Every output has n / r rows; the clip's are the first omnic__p4a_rows(T). */
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

/* Builds audio.encode into m (initialised with capacity = the most feature rows per call, a
 * multiple of the time reduction): inputs "features" f32 [n, input_size] (normalised, padded),
 * "stage_mask" f32 [n, stages] and "row_info" i32 [n, 4] (omnic__p4a_inputs_make); outputs
 * "embed", "block0", "encoded" [n / r, H] and "speech", "vision_speech" [n / r, text hidden],
 * whose first omnic__p4a_rows(T) rows are the clip's (the rest: chunk padding). */
omnic_status omnic__p4a_build(const omnic__p4a *e, omnic__module *m, omnic_err *err);

/* Rows the encoder gives a clip of T feature frames: ceil(T / time_reduction). */
int64_t omnic__p4a_rows(const omnic__p4a_config *c, int64_t T);
/* Feature rows of the call for T frames: the rows rounded up to whole 500-row chunks when over
 * one chunk, times the time reduction. */
int64_t omnic__p4a_call_rows(const omnic__p4a_config *c, int64_t T);

/* The host-computed inputs of one call (owned arrays). */
typedef struct omnic__p4a_inputs {
    int64_t n;         /* feature rows of the call (omnic__p4a_call_rows) */
    int64_t rows;      /* the clip's output rows (omnic__p4a_rows) */
    float *features;   /* [n, input_size]: (x - global_mean) * global_invstd, zero rows after T */
    float *stage_mask; /* [n, stages]: column k - 1 at rows q * 2^k is 1 for q < ceil(T / 2^k) */
    int32_t *row_info; /* [n, 4]: at rows q * r, subsampled row q's position, its chunk's first
                        * row, and the chunk as [0, length) (one chunk of all rows up to 500) */
} omnic__p4a_inputs;

/* features [T, input_size] (borrowed, f32 log-mel) -> *in. E_INVALID (T < 1), E_NOMEM. */
omnic_status omnic__p4a_inputs_make(const omnic__p4a *e, const float *features, int64_t T,
                                    omnic__p4a_inputs *in, omnic_err *err);
void omnic__p4a_inputs_free(omnic__p4a_inputs *in);
/* Tensor headers t[0..2] over in's arrays, in the module's input order. */
omnic_status omnic__p4a_inputs_bind(const omnic__p4a *e, const omnic__p4a_inputs *in, omnic__tensor t[3],
                                    omnic_err *err);

/* One whole encode of features [T, input_size] through the finalized module m (outputs then
 * readable by name). E_INVALID (T < 1, over m's capacity), E_NOMEM, the module's errors. */
omnic_status omnic__p4a_encode(const omnic__p4a *e, omnic__module *m, const float *features, int64_t T,
                               omnic_err *err);

#endif
