/* Gemma 3n's vision tower (timm MobileNetV5Encoder, mobilenetv5_300m_enc, loaded by HF's
 * TimmWrapper with do_pooling=False) and the soft path of its vision embedder, in f32, as one
 * module vision.encode over one image (fixed shape: the processor's S x S, 768 published). Reference
 * notes: families-gemma-phi.md B3a, B4; semantics timm 1.0.24 mobilenetv5.py, _efficientnet_blocks.py,
 * layers/attention2d.py. Activations are channel-last pixel rows [H * W, C].
 *   stem        conv 3 -> C0 (k3, s2, bias), RmsNorm2d, gelu_tanh;
 *   blocks      stages of EdgeResidual (conv_exp kxk -> norm + act -> 1x1 -> norm, + x), Universal
 *               Inverted Residual (optional depthwise start (norm, no act), 1x1 expansion (norm + act),
 *               optional depthwise middle (norm + act), 1x1 projection (norm), layer scale, + x) and
 *               mobile multi-query attention (RmsNorm2d, q 1x1 -> heads x key_dim, k / v each an optional
 *               depthwise strided conv + norm then 1x1 to one shared head, softmax(q k^T / sqrt(kd)) v,
 *               1x1 out, layer scale, + x); the block kinds and widths come from the checkpoint's keys,
 *               the first block of each stage strides 2 (mobilenetv5_300m_enc's layout), a key /
 *               value down_conv strides 2; every conv pads TF-"same" (P = max((ceil(i/s) - 1) s + k - i,
 *               0), P / 2 above and left);
 *   MSFA        the last two stages' outputs, the lower resolution upsampled (nearest) to the higher,
 *               concatenated, a UIR without skip or layer scale (1x1 -> norm + act -> 1x1 -> norm),
 *               average pooling to 16 x 16, RmsNorm2d: [256, hidden] ("features", HF's
 *               last_hidden_state as [h * w, C]);
 *   embedder    x * sqrt(hidden), RMSNorm(w) -> embedding_projection -> RMSNorm (no weight):
 *               [256, text hidden] ("projected").
 * Outputs "stem", "stage0".."stage3" (each stage's end), "features", "projected". */
#ifndef OMNIC_MODELS_GEMMA3N_VISION_H
#define OMNIC_MODELS_GEMMA3N_VISION_H

#include <jansson.h>

#include "io/safetensors.h"
#include "models/weights.h"
#include "runtime/module.h"

#define OMNIC_MNV5_MAX_STAGES 8

typedef enum omnic__mnv5_kind { OMNIC_MNV5_ER, OMNIC_MNV5_UIR, OMNIC_MNV5_MQA } omnic__mnv5_kind;

/* One conv with its norm: weight (depthwise [C, 1, k, k] bound; full / 1x1 as noted), norm weight [O]. */
typedef struct omnic__mnv5_conv {
    omnic__tensor w;     /* bound: depthwise [C, 1, k, k] or 1x1 viewed [O, C] */
    omnic__tensor *taps; /* owned f32 [O, k * k * C] for a full k x k conv (stem, ER), else NULL */
    omnic__tensor norm;  /* [O] */
    int k, stride;       /* 0: absent */
} omnic__mnv5_conv;

typedef struct omnic__mnv5_block {
    omnic__mnv5_kind kind;
    int64_t in_c, out_c, mid_c;
    int stride;
    bool skip;
    omnic__mnv5_conv a, b, c, d; /* ER: conv_exp, conv_pwl; UIR: dw_start, pw_exp, dw_mid, pw_proj */
    omnic__tensor gamma;         /* layer_scale.gamma [out] (UIR, MQA; absent: none) */
    bool has_gamma;
    /* MQA */
    omnic__tensor norm, q, k, v, o;  /* norm [C]; q [h * kd, C]; k [kd, C]; v [vd, C]; o [C, h * vd] */
    omnic__mnv5_conv k_down, v_down; /* depthwise strided conv + norm, or absent */
    int64_t heads, key_dim, value_dim;
} omnic__mnv5_block;

typedef struct omnic__mnv5_config {
    int64_t image;  /* input side S */
    int64_t hidden; /* MSFA output channels (vision_config.hidden_size, 2048) */
    int64_t text_hidden;
    int64_t out_res;          /* MSFA output resolution (16) */
    double embed_eps;         /* vision_config.rms_norm_eps (the embedder's) */
    const char *prefix;       /* "model.vision_tower.timm_model." */
    const char *embed_prefix; /* "model.embed_vision." */
} omnic__mnv5_config;

typedef struct omnic__mnv5 {
    omnic__mnv5_config cfg;
    omnic__mnv5_conv stem;
    omnic__tensor *stem_b; /* owned f32 [C0] */
    int n_stages;
    int stage_len[OMNIC_MNV5_MAX_STAGES];
    omnic__mnv5_block *blocks; /* owned, every stage's blocks in order */
    int n_blocks;
    omnic__mnv5_conv msfa_exp, msfa_proj;
    omnic__tensor msfa_norm;
    omnic__tensor soft_norm, proj; /* embedder: [hidden], [text hidden, hidden] */
    omnic__tensor **consts;        /* owned i32 tables (query positions, the upsampling rows) */
    int n_consts;
    omnic__weight_copies copies;
} omnic__mnv5;

/* vision_config (borrowed) of a Gemma 3n config.json: architecture mobilenetv5_300m_enc, model_args
 * only a channel_multiplier (the widths come from the weights anyway), hidden_size; image: the
 * processor's side. */
omnic_status omnic__mnv5_config_parse(const json_t *vision_config, const char *what, int64_t text_hidden,
                                      int64_t image, omnic__mnv5_config *out, omnic_err *err);
/* Binds the tower from st's keys (stages and blocks as the checkpoint has them), checking every shape
 * against its neighbours. On failure e is cleared. */
omnic_status omnic__mnv5_load(omnic__mnv5 *e, const omnic__mnv5_config *cfg, const omnic__safetensors *st,
                              omnic_err *err);
void omnic__mnv5_deinit(omnic__mnv5 *e);
/* Builds vision.encode into m (capacity 1): input "pixels" f32 [S * S, 3] (the processor's
 * pixel_values [3, S, S] as channel-last pixel rows). */
omnic_status omnic__mnv5_build(omnic__mnv5 *e, omnic__module *m, omnic_err *err);
/* Multiply-accumulates of one image and the dominant matmul shape (benchmarks). */
void omnic__mnv5_cost(const omnic__mnv5 *e, double *macs, int64_t *rows, int64_t *width, int64_t *inter);

#endif
