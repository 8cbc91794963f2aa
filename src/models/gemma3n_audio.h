/* Gemma 3n's audio encoder (HF Gemma3nAudioEncoder, the USM conformer) and the soft path of its
 * audio embedder (Gemma3nMultimodalEmbedder), in f32, as one module audio.encode over a call of
 * n feature rows (n a multiple of S * r, S the product of the two subsampling time strides, r
 * the reduction factor; omnic__usm_inputs_make prepares them). Reference notes:
 * families-gemma-phi.md B3b, B4; semantics transformers 4.57.6 modeling_gemma3n.py.
 *   subsampling two convs over the [T, mels] map (time padded 0 above / kh - 1 below, frequency
 *               (1, 1)): the first 1 -> C0 channels (a one-input-channel depthwise conv), the
 *               second C0 -> C1 (im2col + GEMM), each followed by a cumulative group norm and
 *               ReLU; the first's rows past its own length zeroed again (HF's padding of the
 *               second conv); the per-time [F, C1] map flattened f-major into input_proj_linear:
 *               [n / S, H] ("sscp");
 *   blocks      x += w_res * post_ln(W2 silu(W1 pre_ln(x))); x += post_norm(post(attention(
 *               pre_attn_norm(x)))) with q scaled by head_dim^-1/2 / ln 2 * softplus(per_dim_scale),
 *               keys the row itself and context - 1 before it that are valid, logits plus the
 *               relative term q . pos_proj(timing(distance)), softcap; x *= valid; x += linear_end(
 *               silu(conv_norm(causal depthwise conv k (GLU(linear_start(pre_ln x)))))); the end
 *               feed-forward; x = norm(x) ("block0" after the first);
 *   reduction   every r-th row: [n / (S r), H] ("encoded", the tower's output);
 *   embedder    RMSNorm(w) -> embedding_projection -> RMSNorm (no weight): [n / (S r), text
 *               hidden] ("projected").
 * The clip's rows are the first ceil(T2 / r) (T2 = its subsampled length); gradient clipping
 * (a clamp at 1e10) is the identity on finite f32 rows and is not applied. */
#ifndef OMNIC_MODELS_GEMMA3N_AUDIO_H
#define OMNIC_MODELS_GEMMA3N_AUDIO_H

#include <jansson.h>

#include "io/safetensors.h"
#include "models/weights.h"
#include "runtime/module.h"

typedef struct omnic__usm_config {
    int64_t hidden, n_heads, head_dim, n_layers;
    int64_t input_size;                        /* mel bins (128) */
    int64_t context;                           /* keys a row sees: itself and context - 1 before (13) */
    int64_t kernel_size;                       /* light conv taps (5) */
    int64_t reduction;                         /* conf_reduction_factor (4) */
    int64_t ch[2], kh[2], kw[2], sh[2], sw[2]; /* the two subsampling convs */
    int64_t freq[3];                           /* frequency width in, after conv 0, after conv 1 */
    double rms_eps, gn_eps, logit_cap, residual_weight, embed_eps;
    int64_t text_hidden;
    const char *prefix;       /* "model.audio_tower." */
    const char *embed_prefix; /* "model.embed_audio." */
} omnic__usm_config;

typedef struct omnic__usm_block {
    omnic__tensor ff_pre[2], ff_w1[2], ff_w2[2], ff_post[2]; /* [0] ffw_layer_start, [1] _end */
    omnic__tensor att_pre, wq, wk, wv, post, post_norm;
    omnic__tensor *qscale; /* owned f32 [H]: head_dim^-1/2 / ln 2 * softplus(per_dim_scale), per head */
    omnic__tensor *rel;    /* owned f32 [context, heads, head_dim]: pos_proj(timing(d)) */
    omnic__tensor lc_pre, lc_start, lc_end, lc_norm;
    omnic__tensor lc_dw; /* [H, 1, k] depthwise_conv1d */
    omnic__tensor norm;
} omnic__usm_block;

typedef struct omnic__usm {
    omnic__usm_config cfg;
    omnic__tensor conv0;           /* [C0, 1, kh, kw] */
    omnic__tensor *conv1;          /* owned f32 [C1, kh * kw * C0] (taps-major) */
    omnic__tensor *gn[2];          /* owned f32 [C0], [C1] */
    omnic__tensor in_proj;         /* [H, F2 * C1] */
    omnic__usm_block *blocks;      /* owned [n_layers] */
    omnic__tensor soft_norm, proj; /* embedder: [H], [text hidden, H] */
    omnic__weight_copies copies;
} omnic__usm;

/* audio_config (borrowed) of a Gemma 3n config.json (Gemma3nAudioConfig defaults for absent
 * keys; a key that changes numerics and is not understood, or a value this encoder does not
 * implement, is an error naming it) and the text model's hidden size -> *out. */
omnic_status omnic__usm_config_parse(const json_t *audio_config, const char *what, int64_t text_hidden,
                                     omnic__usm_config *out, omnic_err *err);

/* Binds every weight from st (borrowed; must outlive e), checking shapes. On failure e is cleared. */
omnic_status omnic__usm_load(omnic__usm *e, const omnic__usm_config *cfg, const omnic__safetensors *st,
                             omnic_err *err);
void omnic__usm_deinit(omnic__usm *e);

/* Builds audio.encode into m (capacity: a multiple of omnic__usm_row_multiple): inputs "features"
 * f32 [n, input_size], "row_mask" f32 [n, 2], "key_valid" i32 [n, 1] (omnic__usm_inputs_make);
 * outputs "sscp", "block0" [n / S, H], "encoded" [n / (S r), H], "projected" [n / (S r), text
 * hidden]. */
omnic_status omnic__usm_build(const omnic__usm *e, omnic__module *m, omnic_err *err);

/* S * r: a call's rows are a multiple of it. */
int64_t omnic__usm_row_multiple(const omnic__usm_config *c);
/* The subsampled length of T frames and the encoder's rows for them (ceil(T2 / r)). */
int64_t omnic__usm_sub_rows(const omnic__usm_config *c, int64_t T);
int64_t omnic__usm_rows(const omnic__usm_config *c, int64_t T);
/* Rows among those whose frame is valid (the others take the padding embedding): row j is valid
 * when frame min(j * S * r, T - 1) is one of the V valid frames. */
int64_t omnic__usm_valid_rows(const omnic__usm_config *c, int64_t T, int64_t V);
/* Feature rows of the call for T frames: the smallest multiple of S * r >= T. */
int64_t omnic__usm_call_rows(const omnic__usm_config *c, int64_t T);

typedef struct omnic__usm_inputs {
    int64_t n;          /* feature rows of the call */
    float *features;    /* [n, input_size]: the clip's T frames, zero rows after */
    float *row_mask;    /* [n, 2]: col 0 at rows q * sh0: q < T1; col 1 at rows s * S: sub-row s valid */
    int32_t *key_valid; /* [n, 1]: at rows s * S: sub-row s valid (a key attention may read) */
} omnic__usm_inputs;

/* features [T, input_size] (borrowed) with V valid frames -> owned *in. E_INVALID (T < 1 or V > T),
 * E_NOMEM. */
omnic_status omnic__usm_inputs_make(const omnic__usm *e, const float *features, int64_t T, int64_t V,
                                    omnic__usm_inputs *in, omnic_err *err);
void omnic__usm_inputs_free(omnic__usm_inputs *in);
/* Tensor headers t[3] over in's arrays, in the module's input order. */
omnic_status omnic__usm_inputs_bind(const omnic__usm *e, const omnic__usm_inputs *in, omnic__tensor t[3],
                                    omnic_err *err);

#endif
