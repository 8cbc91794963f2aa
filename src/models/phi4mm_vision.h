/* Phi-4-multimodal's image encoder (HF Phi4MultimodalImageEmbedding with its SigLIP-NaViT
 * Phi4MultimodalVisionModel; reference notes families-gemma-phi.md C2.1, C3.1, C4), in f32, as one
 * module vision.encode over the crops of one image (global crop first, then the HD tiles in
 * row-major order), n = crops x grid^2 patch rows:
 *   patches     Conv2d(3 -> C, p, stride p) as a matmul of the host's patch rows (c, ky, kx
 *               order) + bias, plus position_embedding[pos_id]: pos ids bucketized from the crop's
 *               valid patch rows / columns (HF's torch.arange(0, 1 - 1e-6, 1 / n) and
 *               bucketize(right=True) against k / grid), 0 on padding patches;
 *   order       each crop's valid patches (a top-left rectangle) come first, then its padding
 *               patches: a crop's rows attend to its first V = valid keys only (HF's key-padding
 *               mask; eager attention is bidirectional, the upstream SDPA/FA2 causal quirk is not
 *               reproduced), as a causal attention whose every row sits at the crop's last valid
 *               key; the layers are row-wise otherwise, so the order changes nothing else;
 *   layers      SigLIP: x += out(MHA(LN1 x)), x += fc2(act(fc1(LN2 x))), the first L + 1 +
 *               feature_layer of them (hidden_states[feature_layer], no post_layernorm);
 *   features    back to raster order per crop ("vision_features" [n, C]), AvgPool 2x2 over each
 *               crop's grid x grid map ([n / 4, C], (py, px) row-major), then
 *               img_projection_down(gelu_erf(img_projection_up(.))) ("projected" [n / 4, D]);
 *               the two separators projected likewise ("separators" [2, D]: sub, global).
 * omnic__p4v_assemble lays them out as HF's sub_glb order: the tile canvas cropped to the valid
 * pooled rows / columns with a sub separator after each row, the global separator, the global
 * crop with a sub separator after each of its rows. */
#ifndef OMNIC_MODELS_PHI4MM_VISION_H
#define OMNIC_MODELS_PHI4MM_VISION_H

#include <jansson.h>

#include "io/safetensors.h"
#include "models/vision.h"
#include "models/weights.h"
#include "runtime/module.h"

typedef struct omnic__p4v_config {
    int64_t hidden, intermediate, n_heads, head_dim;
    int64_t n_layers;                /* as configured */
    int64_t layers_run;              /* n_layers + 1 + feature_layer (negative) or feature_layer */
    int64_t patch, image_size, grid; /* grid = image_size / patch (even) */
    int64_t crop_size;               /* the processor's crop side (= image_size) */
    double ln_eps;
    omnic__op act;
    int64_t text_hidden;
    int32_t image_token_id;
    const char *prefix; /* "model.embed_tokens_extend.image_embed." */
} omnic__p4v_config;

typedef struct omnic__p4v {
    omnic__p4v_config cfg;
    omnic__tensor patch_w;       /* [C, 3 * p * p] (patch_embedding.weight [C, 3, p, p] viewed) */
    omnic__tensor *patch_b;      /* owned f32 [C] */
    omnic__tensor pos;           /* [grid^2, C] */
    omnic__vision_layer *layers; /* owned [layers_run] (models/vision.h: the SigLIP layer) */
    omnic__tensor *seps;         /* owned f32 [2, C]: sub_img_feature_extensor, global_img_feature_extensor */
    omnic__tensor up, down;
    omnic__tensor *up_b, *down_b;
    omnic__weight_copies copies;
} omnic__p4v;

/* vision_config (borrowed) of an HF-converted Phi-4-multimodal config.json (Phi4MultimodalVisionConfig
 * defaults for absent keys; unknown keys and values this encoder does not implement are errors
 * naming them) -> *out. */
omnic_status omnic__p4v_config_parse(const json_t *vision_config, const char *what, int64_t text_hidden,
                                     omnic__p4v_config *out, omnic_err *err);
omnic_status omnic__p4v_load(omnic__p4v *e, const omnic__p4v_config *cfg, const omnic__safetensors *st,
                             omnic_err *err);
void omnic__p4v_deinit(omnic__p4v *e);

/* Builds vision.encode into m (capacity: a multiple of grid^2): inputs "patches" f32 [n, 3 p p],
 * "pos_ids", "qpos", "kv_begin", "raster", "pool" i32 [n] (omnic__p4v_inputs_make); outputs
 * "vision_features" [n, C], "projected" [n / 4, D], "separators" [2, D]. */
omnic_status omnic__p4v_build(const omnic__p4v *e, omnic__module *m, omnic_err *err);

/* One image's crops: pixels f32 [crops, 3, S, S] (S = image_size; borrowed) with valid[2k],
 * valid[2k + 1] the valid patch rows and columns of crop k -> owned inputs. */
typedef struct omnic__p4v_inputs {
    int64_t n; /* crops x grid^2 */
    float *patches;
    int32_t *meta; /* [5, n]: pos_ids, qpos, kv_begin, raster, pool */
} omnic__p4v_inputs;

omnic_status omnic__p4v_inputs_make(const omnic__p4v *e, const float *pixels, int64_t crops,
                                    const int64_t *valid, omnic__p4v_inputs *in, omnic_err *err);
void omnic__p4v_inputs_free(omnic__p4v_inputs *in);
/* Tensor headers t[0..5] over in's arrays in the module's input order. */
void omnic__p4v_inputs_bind(const omnic__p4v *e, const omnic__p4v_inputs *in, omnic__tensor t[6]);

/* The image's rows from the finished module: rows_h x cols_w tiles, VR x VC valid patch rows /
 * columns of the tile canvas; projected [crops * (grid/2)^2, D] and separators [2, D] -> dst
 * [omnic__p4v_rows, D]. */
int64_t omnic__p4v_rows(const omnic__p4v_config *c, int64_t valid_rows, int64_t valid_cols);
void omnic__p4v_assemble(const omnic__p4v_config *c, int64_t tiles_w, int64_t valid_rows, int64_t valid_cols,
                         const float *projected, const float *separators, float *dst);

#endif
