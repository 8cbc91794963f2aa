/* Qwen2-VL and Qwen2.5-VL vision towers with their PatchMerger, as a vision.encode module
 * (reference notes families-qwen-llava.md §5.3, §6.2, §6.3; HF modeling_qwen2_vl.py
 * Qwen2VisionTransformerPretrainedModel, modeling_qwen2_5_vl.py
 * Qwen2_5_VisionTransformerPretrainedModel):
 *   patch_embed  Conv3d(C_in -> C, kernel = stride = (temporal, patch, patch), no bias) on the
 *                processor's flattened patches = one matmul with the weight viewed [C, K],
 *                K = C_in * temporal * patch * patch;
 *   block        h += proj(Attn(norm1(h))); h += MLP(norm2(h)). Qwen2-VL: LayerNorm (eps 1e-6,
 *                with bias), MLP fc2(quick_gelu(fc1)); Qwen2.5-VL: RMSNorm (eps 1e-6), MLP
 *                down(silu(gate) * up), all with biases. Attn: fused qkv Linear with bias
 *                (q = rows [0, C), k = [C, 2C), v = [2C, 3C) of the weight), 2-D vision RoPE,
 *                softmax(q k^T / sqrt(head_dim)) v inside each attention block, proj with bias;
 *   2-D RoPE     inv_freq_j = 1 / 10000^(2j / (hd/2)), j < hd/4 (f32); head dims i < hd/4 rotate
 *                with angle h_pos * inv_freq_i, dims hd/4 <= i < hd/2 with w_pos * inv_freq_{i-hd/4}
 *                (rotate-half pairs (i, i + hd/2)); h_pos / w_pos: the patch's row / column in
 *                its image's grid;
 *   blocks of    Qwen2-VL: every (image, frame) of the call attends within itself (cu_seqlens);
 *   attention    Qwen2.5-VL: layers in fullatt_block_indexes likewise, the others within
 *                windows of (window_size / merge / patch)^2 merged tokens (get_window_index);
 *   window order Qwen2.5-VL runs the blocks on the patches reordered window by window (whole
 *                merge groups of merge^2 patches move together); the rows go back to the
 *                processor's order (the inverse permutation, argsort(window_index)) before the
 *                merger, which is the same as HF's reorder after it since both act on whole groups;
 *   merger       ln_q (LayerNorm / RMSNorm, eps 1e-6) per patch, merge^2 consecutive rows as one
 *                row [N / merge^2, merge^2 * C] -> Linear -> GELU (erf) -> Linear -> [., out_hidden].
 *
 * The vision.encode module (contract omnic.vision.encode.qwen2vl/2: tiled attention) takes a call of n patch
 * rows (n <= capacity, a multiple of merge^2) and host-computed grid metadata, every per-row
 * input in *processing order* (the processor's order for Qwen2-VL, the window order for
 * Qwen2.5-VL):
 *   patches     f32 [n, K] (finite)   the processor's flattened patches, processing order
 *   pos_h/pos_w i32 [n]               each row's row / column in its image's patch grid
 *   attn_begin  i32 [n]               first row of the row's attention block (image frame)
 *   attn_last   i32 [n]               last row of that block (inclusive)
 *   win_begin   i32 [n]  (Qwen2.5-VL) first row of the row's window
 *   win_last    i32 [n]  (Qwen2.5-VL) last row of the row's window
 *   unperm      i32 [n]  (Qwen2.5-VL) processor-order row p is processing row unperm[p]
 * Blocks are given as row ranges, not as an additive [n, n] mask: the attention op visits keys
 * [kv_begin, qpos] when causal, so kv_begin = attn_begin and qpos = attn_last give exact
 * block-diagonal attention at the cost of the block, not of n^2. Several images in one call
 * are simply consecutive blocks (each with its own positions); results equal encoding each
 * image alone. Outputs: "vision_features" f32 [n, C] (last block, processor order) and
 * "projected" f32 [n / merge^2, out_hidden] (rows for the <|image_pad|> tokens, in order).
 * omnic__qvit_encode computes the metadata from the grids and runs the module. */
#ifndef OMNIC_MODELS_QWEN2VL_VISION_H
#define OMNIC_MODELS_QWEN2VL_VISION_H

#include <jansson.h>

#include "core/threadpool.h"
#include "io/safetensors.h"
#include "models/weights.h"
#include "runtime/module.h"

typedef enum omnic__qvit_arch {
    OMNIC_QVIT_QWEN2_VL = 0, /* config.json model_type qwen2_vl */
    OMNIC_QVIT_QWEN2_5_VL,   /* qwen2_5_vl */
    OMNIC_QVIT_QWEN3_VL,     /* qwen3_vl: patch bias, learned position embedding interpolated per
                              * grid (input pos_embeds, host-computed), fc1/fc2 blocks with
                              * LayerNorm, and DeepStack mergers after deepstack_visual_indexes */
} omnic__qvit_arch;

#define OMNIC_QVIT_MAX_DEEPSTACK 8

typedef struct omnic__qvit_config {
    omnic__qvit_arch arch;
    int64_t depth, hidden, n_heads, head_dim; /* hidden: ViT width (Qwen2-VL embed_dim) */
    int64_t intermediate;                     /* MLP width (Qwen2-VL: int(embed_dim * mlp_ratio)) */
    int64_t out_hidden;                       /* merger output = text hidden (Qwen2-VL
                                               * vision hidden_size, Qwen2.5-VL out_hidden_size) */
    int64_t channels, patch, temporal, merge;
    int64_t patch_dim;                                      /* channels * temporal * patch * patch */
    int64_t unit;                                           /* merge * merge patches per merged token */
    omnic__op act;                                          /* Qwen2-VL: fc1 activation (GELU_QUICK, ...);
                                                             * Qwen2.5-VL: the gated unit (SWIGLU or GEGLU) */
    int act_variant;                                        /* GEGLU: 0 erf, 1 tanh */
    double eps;                                             /* norms: 1e-6 (hard-coded in HF) */
    float rope_theta;                                       /* 10000 (hard-coded in HF) */
    int64_t window_size;                                    /* Qwen2.5-VL: window side in pixels */
    int64_t window_merged;                                  /* window side in merged tokens */
    bool full_att[OMNIC_MAX_LAYERS];                        /* Qwen2.5-VL: layer attends per image frame */
    int32_t image_token_id, vision_start_id, vision_end_id; /* -1 when absent */
    int64_t n_pos;                                          /* Qwen3-VL: num_position_embeddings (a square) */
    int64_t n_deepstack;                                    /* Qwen3-VL: DeepStack mergers */
    int64_t deepstack_layer[OMNIC_QVIT_MAX_DEEPSTACK];      /* the block after which each one reads */
    const char *prefix, *alt_prefix;                        /* "visual.", "model.visual." */
} omnic__qvit_config;

typedef struct omnic__qvit_layer {
    omnic__tensor n1_w, n1_b, n2_w, n2_b; /* [C]; biases Qwen2-VL only */
    omnic__tensor wq, wk, wv;             /* [C, C] row blocks of attn.qkv.weight [3C, C] */
    omnic__tensor *bq, *bk, *bv;          /* owned f32 [C] (attn.qkv.bias blocks) */
    omnic__tensor wo;                     /* [C, C] attn.proj.weight */
    omnic__tensor *bo;                    /* owned f32 [C] */
    omnic__tensor w1, w3, w2;             /* Qwen2-VL: fc1 [I, C], -, fc2 [C, I];
                                           * Qwen2.5-VL: gate [I, C], up [I, C], down [C, I] */
    omnic__tensor *b1, *b3, *b2;          /* owned f32 [I], [I] (2.5 only), [C] */
} omnic__qvit_layer;

/* A DeepStack merger (Qwen3VLVisionPatchMerger with the post-shuffle norm): merge^2 rows as one,
 * LayerNorm over them, fc1, GELU, fc2. */
typedef struct omnic__qvit_deepstack {
    omnic__tensor norm_w, norm_b; /* [U * C] */
    omnic__tensor fc1, fc2;       /* [U * C, U * C], [out_hidden, U * C] */
    omnic__tensor *fc1_b, *fc2_b; /* owned f32 */
} omnic__qvit_deepstack;

typedef struct omnic__qvit {
    omnic__qvit_config cfg;
    omnic__tensor patch_w;   /* [C, K]: patch_embed.proj.weight [C, C_in, t, p, p] viewed */
    omnic__tensor *patch_b;  /* Qwen3-VL: owned f32 [C] */
    omnic__tensor pos_embed; /* Qwen3-VL: [n_pos, C] */
    omnic__qvit_deepstack ds[OMNIC_QVIT_MAX_DEEPSTACK];
    omnic__qvit_layer *layers;    /* owned [depth] */
    omnic__tensor lnq_w, lnq_b;   /* [C] merger.ln_q (bias: Qwen2-VL only) */
    omnic__tensor m0, m2;         /* [U*C, U*C], [out_hidden, U*C] merger.mlp.0 / .2 */
    omnic__tensor *m0_b, *m2_b;   /* owned f32 */
    omnic__tensor *inv_h, *inv_w; /* owned f32 [head_dim / 2]: the RoPE tables of the
                                   * row and column halves (zeros elsewhere) */
    omnic__weight_copies copies;  /* aligned copies of weights the file left misaligned */
} omnic__qvit;

/* config.json (cfg: the top object; model_type qwen2_vl or qwen2_5_vl) -> *out from
 * vision_config (HF class defaults for absent keys) and the top-level token ids.
 * text_hidden > 0: the text model's hidden size, which the merger output must equal.
 * Errors name the key and the value. */
omnic_status omnic__qvit_config_parse(const json_t *cfg, const char *what, int64_t text_hidden,
                                      omnic__qvit_config *out, omnic_err *err);

/* Binds the tower and merger weights from st (borrowed; must outlive v), either spelling
 * (visual.* or model.visual.*), checking every shape. On failure v is cleared. */
omnic_status omnic__qvit_load(omnic__qvit *v, const omnic__qvit_config *cfg, const omnic__safetensors *st,
                              omnic_err *err);
void omnic__qvit_deinit(omnic__qvit *v);
/* Both steps for a checkpoint: parse config (the config.json object, borrowed) and bind the
 * weights of st (borrowed; must outlive *out). Returns owned *out (omnic__qvit_destroy);
 * *out unchanged on failure. */
omnic_status omnic__qvit_create(const json_t *config, const omnic__safetensors *st, int64_t text_hidden,
                                omnic__qvit **out, omnic_err *err);
void omnic__qvit_destroy(omnic__qvit *v); /* NULL ok */
void omnic__qvit_param_stats(const omnic__qvit *v, int64_t *params, int64_t *bytes);

/* Builds the vision.encode graph into m (initialized with capacity = the most patch rows per
 * call, a multiple of merge^2); inputs and outputs as described above. */
omnic_status omnic__qvit_build(const omnic__qvit *v, omnic__module *m, omnic_err *err);

/* Host-side metadata of one call: n patch rows of n_images images with grids
 * grids[3 i + {0, 1, 2}] = (t, h, w), packed in order. */
typedef struct omnic__qvit_meta {
    int64_t n;                       /* patch rows: sum of t * h * w */
    int32_t *order;                  /* [n] processing row r = processor row order[r] */
    int32_t *unperm;                 /* [n] processor row p = processing row unperm[p] */
    int32_t *pos_h, *pos_w;          /* [n] processing order */
    int32_t *attn_begin, *attn_last; /* [n] processing order: the (image, frame) block */
    int32_t *win_begin, *win_last;   /* [n] processing order: the window (Qwen2.5-VL; for
                                      * Qwen2-VL equal to the frame block) */
} omnic__qvit_meta;

/* Computes *out (owned arrays; omnic__qvit_meta_deinit) for the grids. E_INVALID naming the
 * image and the numbers when a grid entry is < 1, h or w is not a multiple of merge, or the
 * total overflows / exceeds max_rows (pass INT32_MAX for no limit; E_CAPACITY then). */
omnic_status omnic__qvit_meta_init(omnic__qvit_meta *out, const omnic__qvit_config *c, const int64_t *grids,
                                   int n_images, int64_t max_rows, omnic_err *err);
void omnic__qvit_meta_deinit(omnic__qvit_meta *m);

/* Qwen3-VL's learned position embedding for the grids (Qwen3VLVisionModel.fast_pos_embed_
 * interpolate, f32 as HF runs it): each image's h x w patch grid samples the sqrt(n_pos)-sided
 * table bilinearly at torch.linspace(0, side - 1, h) x linspace(0, side - 1, w), repeated per
 * frame, rows in the processor's (merge-block) order, into out [sum t*h*w, C]. */
void omnic__qvit_pos_embeds(const omnic__qvit *v, const int64_t *grids, int n_images, float *out);

/* A ready-to-call encoder: the module planned on one backend for up to capacity patch rows,
 * and host buffers for its inputs. */
typedef struct omnic__qvit_encoder {
    const omnic__qvit *v;                        /* borrowed */
    omnic__module m;                             /* vision.encode */
    int out_features, out_projected;             /* output indices */
    int out_deepstack[OMNIC_QVIT_MAX_DEEPSTACK]; /* Qwen3-VL: "deepstack_{k}" [n / U, out_hidden] */
    int64_t capacity;                            /* patch rows per call */
    float *patches;                              /* owned [capacity, K]: processing-order copy */
    float *pos; /* Qwen3-VL: owned [capacity, C], the interpolated positions */
} omnic__qvit_encoder;

/* Builds and finalizes the module for capacity patch rows (rounded down to a multiple of
 * merge^2; must leave >= merge^2) on backend b with pool (borrowed; may be NULL). */
omnic_status omnic__qvit_encoder_init(omnic__qvit_encoder *e, const omnic__qvit *v, int64_t capacity,
                                      const omnic__backend_ops *b, omnic__threadpool *pool, omnic_err *err);
void omnic__qvit_encoder_deinit(omnic__qvit_encoder *e);

/* Encodes the images whose flattened patches are stacked in patches (f32 [N, K], borrowed;
 * the processor's pixel_values of several images concatenated) with grids as above.
 * On success *projected [N / merge^2, out_hidden] (rows of image 0, then image 1, ...) and,
 * when features is not NULL, *features [N, C] point at the module's outputs, valid until the
 * next call. Errors (nothing run): E_INVALID when patches is not f32 [N, K], N differs from
 * the grids' sum (names both), a value is not finite (names row and column), or a grid is
 * bad; E_CAPACITY when N exceeds the encoder's capacity (names both). */
omnic_status omnic__qvit_encode(omnic__qvit_encoder *e, const omnic__tensor *patches, const int64_t *grids,
                                int n_images, const omnic__tensor **projected, const omnic__tensor **features,
                                omnic_err *err);
/* The same, started only (omnic__module_start on e->m): the caller runs e->m (omnic__module_run)
 * and reads outputs out_projected / out_features. */
omnic_status omnic__qvit_encode_start(omnic__qvit_encoder *e, const omnic__tensor *patches,
                                      const int64_t *grids, int n_images, omnic_err *err);

#endif
