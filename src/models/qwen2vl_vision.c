/* Qwen2-VL / Qwen2.5-VL vision towers + PatchMerger: config, weights, grid metadata, the
 * vision.encode graph and a host-side encoder (semantics in qwen2vl_vision.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "io/json.h"
#include "models/config_keys.h"
#include "models/qwen2vl_vision.h"
#include "models/weights.h"

/* ---- config ---- */

omnic_status omnic__qvit_config_parse(const json_t *cfg, const char *what, int64_t text_hidden,
                                      omnic__qvit_config *c, omnic_err *err)
{
    memset(c, 0, sizeof *c);
    const char *type, *act;
    OMNIC_TRY(omnic__json_get_str(cfg, "model_type", true, NULL, what, &type, err));
    const bool v2 = !strcmp(type, "qwen2_vl"),
               v3 = !strcmp(type, "qwen3_vl") || !strcmp(type, "qwen3_vl_moe");
    if (v2)
        c->arch = OMNIC_QVIT_QWEN2_VL;
    else if (!strcmp(type, "qwen2_5_vl"))
        c->arch = OMNIC_QVIT_QWEN2_5_VL;
    else if (v3)
        c->arch = OMNIC_QVIT_QWEN3_VL;
    else
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: model_type '%s' is not a Qwen2-VL family (qwen2_vl, qwen2_5_vl, qwen3_vl)",
                          what, type);
    const json_t *vc;
    OMNIC_TRY(omnic__json_get_obj(cfg, "vision_config", false, what, &vc, err));
    const char *vw = "config.json vision_config";
    if (!vc) { /* an absent vision_config is the class defaults: parse a copy with {} there */
        json_t *copy = json_copy((json_t *)(uintptr_t)cfg);
        if (!copy || json_object_set_new(copy, "vision_config", json_object()) != 0) {
            json_decref(copy);
            return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an empty vision_config");
        }
        omnic_status s = omnic__qvit_config_parse(copy, what, text_hidden, c, err);
        json_decref(copy);
        return s;
    }
    /* HF Qwen2VLVisionConfig / Qwen2_5_VLVisionConfig keys; in_chans and spatial_patch_size are
     * old spellings HF does not read (it takes in_channels, patch_size); tokens_per_second only
     * scales video time positions. */
    static const char *const common[] = {"depth",
                                         "num_heads",
                                         "in_channels",
                                         "in_chans",
                                         "patch_size",
                                         "spatial_patch_size",
                                         "temporal_patch_size",
                                         "spatial_merge_size",
                                         "hidden_act",
                                         "hidden_size",
                                         NULL};
    static const char *const only_v2[] = {"embed_dim", "mlp_ratio", NULL};
    static const char *const only_v25[] = {"intermediate_size",     "out_hidden_size",   "window_size",
                                           "fullatt_block_indexes", "tokens_per_second", NULL};
    static const char *const only_v3[] = {"intermediate_size", "out_hidden_size", "num_position_embeddings",
                                          "deepstack_visual_indexes", NULL};
    const char *const *const lists[] = {omnic__config_keys_generic, common,
                                        v2   ? only_v2
                                        : v3 ? only_v3
                                             : only_v25,
                                        NULL};
    OMNIC_TRY(omnic__config_check_generic(vc, vw, err));
    OMNIC_TRY(omnic__json_check_keys(vc, vw, lists, err));
    /* HF Qwen2VLVisionConfig / Qwen2_5_VLVisionConfig defaults */
    OMNIC_TRY(omnic__json_get_i64(vc, "depth", false, v3 ? 27 : 32, 1, OMNIC_MAX_LAYERS, vw, &c->depth, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "num_heads", false, 16, 1, 4096, vw, &c->n_heads, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "in_channels", false, 3, 1, 16, vw, &c->channels, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "patch_size", false, v3 ? 16 : 14, 1, 1024, vw, &c->patch, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "temporal_patch_size", false, 2, 1, 64, vw, &c->temporal, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "spatial_merge_size", false, 2, 1, 64, vw, &c->merge, err));
    if (v2) {
        double ratio;
        OMNIC_TRY(omnic__json_get_i64(vc, "embed_dim", false, 1280, 1, 1 << 16, vw, &c->hidden, err));
        OMNIC_TRY(omnic__json_get_i64(vc, "hidden_size", false, 3584, 1, 1 << 20, vw, &c->out_hidden, err));
        OMNIC_TRY(omnic__json_get_f64(vc, "mlp_ratio", false, 4.0, 1e-3, 1024, vw, &ratio, err));
        c->intermediate = (int64_t)((double)c->hidden * ratio); /* HF: int(embed_dim * mlp_ratio) */
        if (c->intermediate < 1)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: mlp_ratio %g leaves an empty MLP for embed_dim %lld",
                              vw, ratio, (long long)c->hidden);
        OMNIC_TRY(omnic__json_get_str(vc, "hidden_act", false, "quick_gelu", vw, &act, err));
        if (!strcmp(act, "quick_gelu"))
            c->act = OMNIC_OP_GELU_QUICK;
        else if (!strcmp(act, "gelu"))
            c->act = OMNIC_OP_GELU;
        else if (!strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_new"))
            c->act = OMNIC_OP_GELU_TANH;
        else if (!strcmp(act, "silu"))
            c->act = OMNIC_OP_SILU;
        else
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                              "%s: hidden_act '%s' is not supported (quick_gelu, gelu, "
                              "gelu_pytorch_tanh, gelu_new, silu)",
                              vw, act);
    } else if (v3) { /* Qwen3VLVisionConfig */
        OMNIC_TRY(omnic__json_get_i64(vc, "hidden_size", false, 1152, 1, 1 << 16, vw, &c->hidden, err));
        OMNIC_TRY(
            omnic__json_get_i64(vc, "out_hidden_size", false, 3584, 1, 1 << 20, vw, &c->out_hidden, err));
        OMNIC_TRY(
            omnic__json_get_i64(vc, "intermediate_size", false, 4304, 1, 1 << 20, vw, &c->intermediate, err));
        OMNIC_TRY(omnic__json_get_str(vc, "hidden_act", false, "gelu_pytorch_tanh", vw, &act, err));
        if (!strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_new"))
            c->act = OMNIC_OP_GELU_TANH;
        else if (!strcmp(act, "gelu"))
            c->act = OMNIC_OP_GELU;
        else if (!strcmp(act, "silu"))
            c->act = OMNIC_OP_SILU;
        else
            return OMNIC_FAIL(
                err, OMNIC_E_UNSUPPORTED,
                "%s: hidden_act '%s' is not supported (gelu_pytorch_tanh, gelu_new, gelu, silu)", vw, act);
        OMNIC_TRY(
            omnic__json_get_i64(vc, "num_position_embeddings", false, 2304, 1, 1 << 24, vw, &c->n_pos, err));
        const int64_t side = (int64_t)sqrt((double)c->n_pos);
        if (side * side != c->n_pos)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: num_position_embeddings %lld is not a square", vw,
                              (long long)c->n_pos);
        const json_t *ds;
        OMNIC_TRY(omnic__json_get_array(vc, "deepstack_visual_indexes", false, vw, &ds, err));
        static const int64_t dflt[] = {8, 16, 24};
        c->n_deepstack = ds ? (int64_t)json_array_size(ds) : 3;
        if (c->n_deepstack > OMNIC_QVIT_MAX_DEEPSTACK)
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: %lld deepstack_visual_indexes (at most %d)", vw,
                              (long long)c->n_deepstack, OMNIC_QVIT_MAX_DEEPSTACK);
        for (int64_t k = 0; k < c->n_deepstack; k++) {
            const json_t *e = ds ? json_array_get(ds, (size_t)k) : NULL;
            c->deepstack_layer[k] = ds ? (json_is_integer(e) ? json_integer_value(e) : -1) : dflt[k];
            if (c->deepstack_layer[k] < 0 || c->deepstack_layer[k] >= c->depth)
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "%s: deepstack_visual_indexes[%lld] must be a block in 0..%lld", vw,
                                  (long long)k, (long long)c->depth - 1);
        }
    } else {
        OMNIC_TRY(omnic__json_get_i64(vc, "hidden_size", false, 3584, 1, 1 << 16, vw, &c->hidden, err));
        OMNIC_TRY(
            omnic__json_get_i64(vc, "out_hidden_size", false, 3584, 1, 1 << 20, vw, &c->out_hidden, err));
        OMNIC_TRY(
            omnic__json_get_i64(vc, "intermediate_size", false, 3420, 1, 1 << 20, vw, &c->intermediate, err));
        OMNIC_TRY(omnic__json_get_str(vc, "hidden_act", false, "silu", vw, &act, err));
        if (!strcmp(act, "silu"))
            c->act = OMNIC_OP_SWIGLU;
        else if (!strcmp(act, "gelu"))
            c->act = OMNIC_OP_GEGLU;
        else if (!strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_new"))
            c->act = OMNIC_OP_GEGLU, c->act_variant = 1;
        else
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                              "%s: hidden_act '%s' is not supported (silu, gelu, "
                              "gelu_pytorch_tanh, gelu_new)",
                              vw, act);
        OMNIC_TRY(omnic__json_get_i64(vc, "window_size", false, 112, 1, 1 << 20, vw, &c->window_size, err));
        c->window_merged = c->window_size / c->merge / c->patch; /* HF: window_size // merge // patch */
        if (c->window_merged < 1)
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "%s: window_size %lld is smaller than spatial_merge_size %lld x patch_size %lld", vw,
                (long long)c->window_size, (long long)c->merge, (long long)c->patch);
        const json_t *fa;
        OMNIC_TRY(omnic__json_get_array(vc, "fullatt_block_indexes", false, vw, &fa, err));
        if (!fa) {
            static const int64_t dflt[] = {7, 15, 23, 31};
            for (size_t i = 0; i < 4; i++)
                if (dflt[i] < c->depth) c->full_att[dflt[i]] = true;
        }
        for (size_t i = 0; fa && i < json_array_size(fa); i++) {
            const json_t *e = json_array_get(fa, i);
            if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) >= c->depth)
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "%s: fullatt_block_indexes[%zu] must be a block index in 0..%lld", vw, i,
                                  (long long)c->depth - 1);
            c->full_att[json_integer_value(e)] = true;
        }
    }
    if (c->hidden % c->n_heads || (c->hidden / c->n_heads) % 4)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "%s: width %lld over num_heads %lld must give a head_dim that is a multiple of 4 (2-D RoPE)", vw,
            (long long)c->hidden, (long long)c->n_heads);
    c->head_dim = c->hidden / c->n_heads;
    c->patch_dim = c->channels * c->temporal * c->patch * c->patch;
    c->unit = c->merge * c->merge;
    c->eps = 1e-6;
    c->rope_theta = 10000.0f;
    if (text_hidden > 0 && c->out_hidden != text_hidden)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID, "%s: %s %lld (the merger output) differs from the text hidden_size %lld",
            vw, v2 ? "hidden_size" : "out_hidden_size", (long long)c->out_hidden, (long long)text_hidden);
    if (v3) { /* Qwen3-VL: the weights are under model.visual. on disk */
        c->prefix = "model.visual.";
        c->alt_prefix = "visual.";
    }
    int64_t id;
    OMNIC_TRY(omnic__json_get_i64(cfg, "image_token_id", false, 151655, 0, INT32_MAX, what, &id, err));
    c->image_token_id = (int32_t)id;
    OMNIC_TRY(omnic__json_get_i64(cfg, "vision_start_token_id", false, 151652, 0, INT32_MAX, what, &id, err));
    c->vision_start_id = (int32_t)id;
    OMNIC_TRY(omnic__json_get_i64(cfg, "vision_end_token_id", false, 151653, 0, INT32_MAX, what, &id, err));
    c->vision_end_id = (int32_t)id;
    if (!v3) {
        c->prefix = "visual.";
        c->alt_prefix = "model.visual.";
    }
    return OMNIC_OK;
}

/* ---- weights ---- */

static omnic_status bind(omnic__qvit *v, const omnic__safetensors *st, const char *name, int ndim,
                         const int64_t *dims, omnic__tensor *out, omnic_err *err)
{
    return omnic__weight_bind(st, name, ndim, dims, out, &v->copies, err);
}

/* Owned f32 copies of `parts` (1 or 3) equal blocks of a float vector [parts * n] (biases; the
 * fused qkv bias is three blocks: q, k, v). */
static omnic_status bind_f32(omnic__qvit *v, const omnic__safetensors *st, const char *name, int64_t n,
                             int parts, omnic__tensor **out, omnic_err *err)
{
    omnic__tensor view;
    int64_t all[1] = {n * parts}, one[1] = {n};
    OMNIC_TRY(bind(v, st, name, 1, all, &view, err));
    for (int p = 0; p < parts; p++) {
        char part[72];
        if (parts == 1)
            snprintf(part, sizeof part, "%.63s", name);
        else
            snprintf(part, sizeof part, "%.56s[%c]", name, "qkv"[p % 3]);
        OMNIC_TRY(omnic__weight_f32(&view, p * n, 1, one, part, &out[p], err));
    }
    return OMNIC_OK;
}

/* Rows [r0, r0 + rows) of a bound 2-D weight as its own tensor header (no copy). */
static void row_block(const omnic__tensor *w, int64_t r0, int64_t rows, const char *tag, omnic__tensor *out)
{
    *out = *w;
    out->dims[0] = rows;
    out->data = (uint8_t *)w->data + (size_t)(r0 * w->dims[1]) * omnic_dtype_size(w->dtype);
    snprintf(out->name, sizeof out->name, "%.56s[%s]", w->name, tag);
}

omnic_status omnic__qvit_load(omnic__qvit *v, const omnic__qvit_config *c, const omnic__safetensors *st,
                              omnic_err *err)
{
    memset(v, 0, sizeof *v);
    v->cfg = *c;
    const bool v3 = c->arch == OMNIC_QVIT_QWEN3_VL,
               v2 = c->arch == OMNIC_QVIT_QWEN2_VL || v3; /* v2: LayerNorm
                                                           * + fc1/fc2 blocks */
    const int64_t C = c->hidden, I = c->intermediate, U = c->unit * c->hidden, D = c->out_hidden;
    char name[192];
    omnic_status s;
#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)
    const char *P = c->prefix;
    if (!omnic__st_find(st, NAME("%spatch_embed.proj.weight", P)) &&
        omnic__st_find(st, NAME("%spatch_embed.proj.weight", c->alt_prefix)))
        P = v->cfg.prefix = c->alt_prefix;
    const int64_t pw[5] = {C, c->channels, c->temporal, c->patch, c->patch};
    if ((s = bind(v, st, NAME("%spatch_embed.proj.weight", P), 5, pw, &v->patch_w, err)) != OMNIC_OK)
        goto fail;
    v->patch_w.ndim = 2; /* [C, C_in, t, p, p] row-major = [C, K] with K in (c, t, y, x) order */
    v->patch_w.dims[1] = c->patch_dim;
    for (int i = 2; i < OMNIC_MAX_DIMS; i++)
        v->patch_w.dims[i] = 1;
    if (v3) {
        const int64_t pe[2] = {c->n_pos, C};
        if ((s = bind_f32(v, st, NAME("%spatch_embed.proj.bias", P), C, 1, &v->patch_b, err)) != OMNIC_OK ||
            (s = bind(v, st, NAME("%spos_embed.weight", P), 2, pe, &v->pos_embed, err)) != OMNIC_OK)
            goto fail;
    }
    v->layers = omnic_alloc_array((size_t)c->depth, sizeof *v->layers);
    if (!v->layers) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld vision blocks", (long long)c->depth);
        goto fail;
    }
    for (int64_t l = 0; l < c->depth; l++) {
        omnic__qvit_layer *L = &v->layers[l];
        const int64_t vc[1] = {C}, qkv[2] = {3 * C, C}, cc[2] = {C, C}, ic[2] = {I, C}, ci[2] = {C, I};
        omnic__tensor w;
        omnic__tensor *b3[3] = {NULL, NULL, NULL};
#define BLK(...) NAME("%sblocks.%lld." __VA_ARGS__, P, (long long)l)
        if ((s = bind(v, st, BLK("norm1.weight"), 1, vc, &L->n1_w, err)) != OMNIC_OK ||
            (s = bind(v, st, BLK("norm2.weight"), 1, vc, &L->n2_w, err)) != OMNIC_OK)
            goto fail;
        if (v2 && ((s = bind(v, st, BLK("norm1.bias"), 1, vc, &L->n1_b, err)) != OMNIC_OK ||
                   (s = bind(v, st, BLK("norm2.bias"), 1, vc, &L->n2_b, err)) != OMNIC_OK))
            goto fail;
        if ((s = bind(v, st, BLK("attn.qkv.weight"), 2, qkv, &w, err)) != OMNIC_OK) goto fail;
        row_block(&w, 0, C, "q", &L->wq);
        row_block(&w, C, C, "k", &L->wk);
        row_block(&w, 2 * C, C, "v", &L->wv);
        s = bind_f32(v, st, BLK("attn.qkv.bias"), C, 3, b3, err);
        L->bq = b3[0], L->bk = b3[1], L->bv = b3[2];
        if (s != OMNIC_OK) goto fail;
        if ((s = bind(v, st, BLK("attn.proj.weight"), 2, cc, &L->wo, err)) != OMNIC_OK ||
            (s = bind_f32(v, st, BLK("attn.proj.bias"), C, 1, &L->bo, err)) != OMNIC_OK)
            goto fail;
        if (v2) {
            const char *f1 = v3 ? "linear_fc1" : "fc1", *f2 = v3 ? "linear_fc2" : "fc2";
#define MLP(fc, what) NAME("%sblocks.%lld.mlp.%s." what, P, (long long)l, fc)
            if ((s = bind(v, st, MLP(f1, "weight"), 2, ic, &L->w1, err)) != OMNIC_OK ||
                (s = bind_f32(v, st, MLP(f1, "bias"), I, 1, &L->b1, err)) != OMNIC_OK ||
                (s = bind(v, st, MLP(f2, "weight"), 2, ci, &L->w2, err)) != OMNIC_OK ||
                (s = bind_f32(v, st, MLP(f2, "bias"), C, 1, &L->b2, err)) != OMNIC_OK)
                goto fail;
#undef MLP
        } else if ((s = bind(v, st, BLK("mlp.gate_proj.weight"), 2, ic, &L->w1, err)) != OMNIC_OK ||
                   (s = bind_f32(v, st, BLK("mlp.gate_proj.bias"), I, 1, &L->b1, err)) != OMNIC_OK ||
                   (s = bind(v, st, BLK("mlp.up_proj.weight"), 2, ic, &L->w3, err)) != OMNIC_OK ||
                   (s = bind_f32(v, st, BLK("mlp.up_proj.bias"), I, 1, &L->b3, err)) != OMNIC_OK ||
                   (s = bind(v, st, BLK("mlp.down_proj.weight"), 2, ci, &L->w2, err)) != OMNIC_OK ||
                   (s = bind_f32(v, st, BLK("mlp.down_proj.bias"), C, 1, &L->b2, err)) != OMNIC_OK) {
            goto fail;
        }
#undef BLK
    }
    const int64_t vc[1] = {C}, m0[2] = {U, U}, m2[2] = {D, U}, uc[1] = {U};
    /* Qwen3-VL names its merger norm / linear_fc1 / linear_fc2 (same shapes and roles) */
    const char *ln = v3 ? "norm" : "ln_q", *l0 = v3 ? "linear_fc1" : "mlp.0",
               *l2 = v3 ? "linear_fc2" : "mlp.2";
    if ((s = bind(v, st, NAME("%smerger.%s.weight", P, ln), 1, vc, &v->lnq_w, err)) != OMNIC_OK) goto fail;
    if (v2 && (s = bind(v, st, NAME("%smerger.%s.bias", P, ln), 1, vc, &v->lnq_b, err)) != OMNIC_OK)
        goto fail;
    if ((s = bind(v, st, NAME("%smerger.%s.weight", P, l0), 2, m0, &v->m0, err)) != OMNIC_OK ||
        (s = bind_f32(v, st, NAME("%smerger.%s.bias", P, l0), U, 1, &v->m0_b, err)) != OMNIC_OK ||
        (s = bind(v, st, NAME("%smerger.%s.weight", P, l2), 2, m2, &v->m2, err)) != OMNIC_OK ||
        (s = bind_f32(v, st, NAME("%smerger.%s.bias", P, l2), D, 1, &v->m2_b, err)) != OMNIC_OK)
        goto fail;
    for (int64_t k = 0; k < c->n_deepstack; k++) { /* Qwen3-VL: the post-shuffle-norm mergers */
        omnic__qvit_deepstack *q = &v->ds[k];
#define DSN(x) NAME("%sdeepstack_merger_list.%lld." x, P, (long long)k)
        if ((s = bind(v, st, DSN("norm.weight"), 1, uc, &q->norm_w, err)) != OMNIC_OK ||
            (s = bind(v, st, DSN("norm.bias"), 1, uc, &q->norm_b, err)) != OMNIC_OK ||
            (s = bind(v, st, DSN("linear_fc1.weight"), 2, m0, &q->fc1, err)) != OMNIC_OK ||
            (s = bind_f32(v, st, DSN("linear_fc1.bias"), U, 1, &q->fc1_b, err)) != OMNIC_OK ||
            (s = bind(v, st, DSN("linear_fc2.weight"), 2, m2, &q->fc2, err)) != OMNIC_OK ||
            (s = bind_f32(v, st, DSN("linear_fc2.bias"), D, 1, &q->fc2_b, err)) != OMNIC_OK)
            goto fail;
#undef DSN
    }
#undef NAME
    /* 2-D RoPE tables (HF VisionRotaryEmbedding(head_dim / 2), theta 10000, f32):
     * inv_freq_j = 1 / theta^((2j) / (hd/2)), j < hd/4 */
    const int64_t half = c->head_dim / 2, quarter = c->head_dim / 4, hd2[1] = {half};
    if ((s = omnic__tensor_create(&v->inv_h, OMNIC_DTYPE_F32, 1, hd2, err)) != OMNIC_OK ||
        (s = omnic__tensor_create(&v->inv_w, OMNIC_DTYPE_F32, 1, hd2, err)) != OMNIC_OK)
        goto fail;
    for (int64_t j = 0; j < quarter; j++) {
        float f = 1.0f / powf(c->rope_theta, (float)(2 * j) / (float)half);
        ((float *)v->inv_h->data)[j] = f;           /* dims [0, hd/4): row position */
        ((float *)v->inv_w->data)[quarter + j] = f; /* dims [hd/4, hd/2): column position */
    }
    snprintf(v->inv_h->name, sizeof v->inv_h->name, "vision_rope_inv_freq_h");
    snprintf(v->inv_w->name, sizeof v->inv_w->name, "vision_rope_inv_freq_w");
    return OMNIC_OK;
fail:
    omnic__qvit_deinit(v);
    return s;
}

void omnic__qvit_deinit(omnic__qvit *v)
{
    if (!v) return;
    for (int64_t l = 0; v->layers && l < v->cfg.depth; l++) {
        omnic__qvit_layer *L = &v->layers[l];
        omnic__tensor *ts[] = {L->bq, L->bk, L->bv, L->bo, L->b1, L->b2, L->b3};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            omnic__tensor_destroy(ts[i]);
    }
    omnic_free(v->layers);
    omnic__tensor *ts[] = {v->m0_b, v->m2_b, v->inv_h, v->inv_w, v->patch_b};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        omnic__tensor_destroy(ts[i]);
    for (int k = 0; k < OMNIC_QVIT_MAX_DEEPSTACK; k++) {
        omnic__tensor_destroy(v->ds[k].fc1_b);
        omnic__tensor_destroy(v->ds[k].fc2_b);
    }
    omnic__weight_copies_free(&v->copies);
    memset(v, 0, sizeof *v);
}

omnic_status omnic__qvit_create(const json_t *config, const omnic__safetensors *st, int64_t text_hidden,
                                omnic__qvit **out, omnic_err *err)
{
    omnic__qvit_config c;
    OMNIC_TRY(omnic__qvit_config_parse(config, "config.json", text_hidden, &c, err));
    omnic__qvit *v = omnic_alloc_array(1, sizeof *v);
    if (!v) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a vision tower");
    omnic_status s = omnic__qvit_load(v, &c, st, err);
    if (s != OMNIC_OK) {
        omnic_free(v);
        return s;
    }
    *out = v;
    return OMNIC_OK;
}

void omnic__qvit_destroy(omnic__qvit *v)
{
    omnic__qvit_deinit(v);
    omnic_free(v);
}

void omnic__qvit_param_stats(const omnic__qvit *v, int64_t *params, int64_t *bytes)
{
    int64_t p = 0, b = 0;
    const bool v3 = v->cfg.arch == OMNIC_QVIT_QWEN3_VL, v2 = v->cfg.arch == OMNIC_QVIT_QWEN2_VL || v3;
    const omnic__tensor *top[] = {&v->patch_w, &v->lnq_w,  v2 ? &v->lnq_b : NULL,    &v->m0, v->m0_b, &v->m2,
                                  v->m2_b,     v->patch_b, v3 ? &v->pos_embed : NULL};
    for (int64_t k = 0; k < v->cfg.n_deepstack; k++) {
        const omnic__qvit_deepstack *q = &v->ds[k];
        const omnic__tensor *dt[] = {&q->norm_w, &q->norm_b, &q->fc1, q->fc1_b, &q->fc2, q->fc2_b};
        for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++)
            p += omnic__tensor_nelem(dt[i]), b += (int64_t)omnic__tensor_bytes(dt[i]);
    }
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (top[i]) p += omnic__tensor_nelem(top[i]), b += (int64_t)omnic__tensor_bytes(top[i]);
    for (int64_t l = 0; l < v->cfg.depth; l++) {
        const omnic__qvit_layer *L = &v->layers[l];
        const omnic__tensor *ts[] = {&L->n1_w,
                                     v2 ? &L->n1_b : NULL,
                                     &L->n2_w,
                                     v2 ? &L->n2_b : NULL,
                                     &L->wq,
                                     &L->wk,
                                     &L->wv,
                                     L->bq,
                                     L->bk,
                                     L->bv,
                                     &L->wo,
                                     L->bo,
                                     &L->w1,
                                     L->b1,
                                     &L->w2,
                                     L->b2,
                                     v2 ? NULL : &L->w3,
                                     L->b3};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if (ts[i]) p += omnic__tensor_nelem(ts[i]), b += (int64_t)omnic__tensor_bytes(ts[i]);
    }
    *params = p;
    *bytes = b;
}

/* ---- grid metadata ---- */

void omnic__qvit_meta_deinit(omnic__qvit_meta *m)
{
    if (!m) return;
    omnic_free(m->order); /* one block holds every array */
    memset(m, 0, sizeof *m);
}

omnic_status omnic__qvit_meta_init(omnic__qvit_meta *out, const omnic__qvit_config *c, const int64_t *grids,
                                   int n_images, int64_t max_rows, omnic_err *err)
{
    memset(out, 0, sizeof *out);
    if (n_images < 1)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "vision: %d images in a call (need >= 1)", n_images);
    int64_t n = 0;
    for (int i = 0; i < n_images; i++) {
        const int64_t t = grids[3 * i], h = grids[3 * i + 1], w = grids[3 * i + 2];
        if (t < 1 || h < 1 || w < 1 || h % c->merge || w % c->merge || t > INT32_MAX || h > INT32_MAX ||
            w > INT32_MAX)
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "vision: image %d grid (t, h, w) = (%lld, %lld, %lld): each must be >= 1 and h, w "
                "multiples of spatial_merge_size %lld",
                i, (long long)t, (long long)h, (long long)w, (long long)c->merge);
        int64_t rows;
        if (__builtin_mul_overflow(t, h, &rows) || __builtin_mul_overflow(rows, w, &rows) ||
            __builtin_add_overflow(n, rows, &n) || n > INT32_MAX)
            return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                              "vision: the grids up to image %d hold more than %d patches", i, INT32_MAX);
    }
    if (n > max_rows)
        return OMNIC_FAIL(err, OMNIC_E_CAPACITY,
                          "vision: %lld patches in one call exceed the encoder's capacity of %lld",
                          (long long)n, (long long)max_rows);
    int32_t *block = omnic_alloc_array((size_t)n * 10, sizeof *block);
    if (!block)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "vision: out of memory for %lld patch rows of metadata",
                          (long long)n);
    out->n = n;
    out->order = block;
    out->unperm = block + n;
    out->pos_h = block + 2 * n;
    out->pos_w = block + 3 * n;
    out->attn_begin = block + 4 * n;
    out->attn_last = block + 5 * n;
    out->win_begin = block + 6 * n;
    out->win_last = block + 7 * n;
    int32_t *nat_h = block + 8 * n, *nat_w = block + 9 * n; /* processor order */
    const int64_t m = c->merge, U = c->unit, S = c->window_merged;
    const bool windows = c->arch == OMNIC_QVIT_QWEN2_5_VL;
    int64_t base = 0, r = 0;
    for (int i = 0; i < n_images; i++) {
        const int64_t t = grids[3 * i], h = grids[3 * i + 1], w = grids[3 * i + 2], mh = h / m, mw = w / m;
        /* processor order: (frame, block row, block col, in-block row, in-block col) */
        for (int64_t f = 0, p = base; f < t; f++)
            for (int64_t bh = 0; bh < mh; bh++)
                for (int64_t bw = 0; bw < mw; bw++)
                    for (int64_t ih = 0; ih < m; ih++)
                        for (int64_t iw = 0; iw < m; iw++, p++) {
                            nat_h[p] = (int32_t)(bh * m + ih);
                            nat_w[p] = (int32_t)(bw * m + iw);
                        }
        for (int64_t f = 0; f < t; f++) {
            const int64_t f0 = base + f * h * w, f1 = f0 + h * w; /* the frame's rows, either order */
            if (!windows) {
                for (int64_t q = f0; q < f1; q++) {
                    out->order[q] = (int32_t)q;
                    out->win_begin[q] = out->attn_begin[q] = (int32_t)f0;
                    out->win_last[q] = out->attn_last[q] = (int32_t)(f1 - 1);
                }
                r = f1;
                continue;
            }
            /* get_window_index: windows of S x S merged tokens, row-major; cut at the grid edge */
            for (int64_t a = 0; a * S < mh; a++)
                for (int64_t b = 0; b * S < mw; b++) {
                    const int64_t w0 = r;
                    for (int64_t rr = a * S; rr < mh && rr < (a + 1) * S; rr++)
                        for (int64_t cc = b * S; cc < mw && cc < (b + 1) * S; cc++)
                            for (int64_t u = 0; u < U; u++)
                                out->order[r++] = (int32_t)(f0 + (rr * mw + cc) * U + u);
                    for (int64_t q = w0; q < r; q++) {
                        out->win_begin[q] = (int32_t)w0;
                        out->win_last[q] = (int32_t)(r - 1);
                        out->attn_begin[q] = (int32_t)f0;
                        out->attn_last[q] = (int32_t)(f1 - 1);
                    }
                }
        }
        base += t * h * w;
    }
    for (int64_t q = 0; q < n; q++) {
        out->unperm[out->order[q]] = (int32_t)q;
        out->pos_h[q] = nat_h[out->order[q]];
        out->pos_w[q] = nat_w[out->order[q]];
    }
    return OMNIC_OK;
}

/* ---- graph ---- */

static omnic__tensor *w_or_null(omnic__graph *g, const omnic__tensor *t)
{
    return t ? omnic__g_weight(g, t) : NULL;
}

static omnic__tensor *norm(omnic__graph *g, const omnic__qvit_config *c, omnic__tensor *x,
                           const omnic__tensor *w, const omnic__tensor *b)
{
    if (c->arch != OMNIC_QVIT_QWEN2_5_VL) /* Qwen2-VL, Qwen3-VL: LayerNorm with bias */
        return omnic__g_layernorm(g, x, omnic__g_weight(g, w), omnic__g_weight(g, b), (float)c->eps);
    return omnic__g_rmsnorm(g, x, omnic__g_weight(g, w), (float)c->eps, false);
}

omnic_status omnic__qvit_build(const omnic__qvit *v, omnic__module *m, omnic_err *err)
{
    const omnic__qvit_config *c = &v->cfg;
    omnic__graph *g = &m->graph;
    const int64_t N = g->capacity, C = c->hidden, H = c->n_heads, hd = c->head_dim;
    const bool v3 = c->arch == OMNIC_QVIT_QWEN3_VL, v2 = c->arch == OMNIC_QVIT_QWEN2_VL || v3;
    if (N % c->unit)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "vision.encode: capacity %lld is not a multiple of %lld patches per token",
                          (long long)N, (long long)c->unit);
    const float scale = (float)(1.0 / sqrt((double)hd)); /* HF: head_dim**-0.5 */
    const int64_t pd[2] = {N, c->patch_dim}, rd[1] = {N}, hs[3] = {N, H, hd}, flat[2] = {N, C};
    omnic__tensor *pix = omnic__g_input(g, "patches", OMNIC_DTYPE_F32, 2, pd, OMNIC_VAR_T);
    omnic__tensor *pos_h = omnic__g_input(g, "pos_h", OMNIC_DTYPE_I32, 1, rd, OMNIC_VAR_T);
    omnic__tensor *pos_w = omnic__g_input(g, "pos_w", OMNIC_DTYPE_I32, 1, rd, OMNIC_VAR_T);
    omnic__tensor *ab = omnic__g_input(g, "attn_begin", OMNIC_DTYPE_I32, 1, rd, OMNIC_VAR_T);
    omnic__tensor *al = omnic__g_input(g, "attn_last", OMNIC_DTYPE_I32, 1, rd, OMNIC_VAR_T);
    omnic__tensor *wb = NULL, *wl = NULL, *unperm = NULL;
    if (!v2) {
        wb = omnic__g_input(g, "win_begin", OMNIC_DTYPE_I32, 1, rd, OMNIC_VAR_T);
        wl = omnic__g_input(g, "win_last", OMNIC_DTYPE_I32, 1, rd, OMNIC_VAR_T);
        unperm = omnic__g_input(g, "unperm", OMNIC_DTYPE_I32, 1, rd, OMNIC_VAR_T);
    }
    omnic__tensor *x = omnic__g_matmul(g, pix, omnic__g_weight(g, &v->patch_w), w_or_null(g, v->patch_b));
    if (v3) { /* the learned position embedding, interpolated to the grid on the host */
        omnic__tensor *pe = omnic__g_input(g, "pos_embeds", OMNIC_DTYPE_F32, 2, flat, OMNIC_VAR_T);
        x = omnic__g_add(g, x, pe);
    }
    omnic__tensor *inv_h = omnic__g_weight(g, v->inv_h), *inv_w = omnic__g_weight(g, v->inv_w);
    for (int64_t l = 0; l < c->depth; l++) {
        const omnic__qvit_layer *L = &v->layers[l];
        omnic__tensor *h = norm(g, c, x, &L->n1_w, v2 ? &L->n1_b : NULL);
        omnic__tensor *q = omnic__g_reshape(
            g, omnic__g_matmul(g, h, omnic__g_weight(g, &L->wq), omnic__g_weight(g, L->bq)), 3, hs);
        omnic__tensor *k = omnic__g_reshape(
            g, omnic__g_matmul(g, h, omnic__g_weight(g, &L->wk), omnic__g_weight(g, L->bk)), 3, hs);
        omnic__tensor *vv = omnic__g_reshape(
            g, omnic__g_matmul(g, h, omnic__g_weight(g, &L->wv), omnic__g_weight(g, L->bv)), 3, hs);
        /* 2-D RoPE as two rotations over disjoint pairs: the row table is zero on the column
         * dims and vice versa, and a zero angle leaves a pair exactly as it was */
        q = omnic__g_rope(g, omnic__g_rope(g, q, pos_h, (int)hd, 0, c->rope_theta, inv_h, 1.0f), pos_w,
                          (int)hd, 0, c->rope_theta, inv_w, 1.0f);
        k = omnic__g_rope(g, omnic__g_rope(g, k, pos_h, (int)hd, 0, c->rope_theta, inv_h, 1.0f), pos_w,
                          (int)hd, 0, c->rope_theta, inv_w, 1.0f);
        /* block-diagonal attention: causal over [begin, last] with qpos = last sees exactly the block;
         * tiled, so work memory stays O(tile) for blocks of thousands of patches */
        const bool full = v2 || c->full_att[l];
        omnic__tensor *a = omnic__g_attention_tiled(g, q, k, vv, full ? al : wl, full ? ab : wb, scale, true);
        omnic__tensor *o = omnic__g_matmul(g, omnic__g_reshape(g, a, 2, flat), omnic__g_weight(g, &L->wo),
                                           omnic__g_weight(g, L->bo));
        x = omnic__g_add(g, x, o);
        h = norm(g, c, x, &L->n2_w, v2 ? &L->n2_b : NULL);
        if (v2) {
            h = omnic__g_unary(g, c->act,
                               omnic__g_matmul(g, h, omnic__g_weight(g, &L->w1), omnic__g_weight(g, L->b1)));
        } else {
            omnic__tensor *gate =
                omnic__g_matmul(g, h, omnic__g_weight(g, &L->w1), omnic__g_weight(g, L->b1));
            omnic__tensor *up = omnic__g_matmul(g, h, omnic__g_weight(g, &L->w3), omnic__g_weight(g, L->b3));
            h = omnic__g_glu(g, c->act, gate, up, c->act_variant);
        }
        h = omnic__g_matmul(g, h, omnic__g_weight(g, &L->w2), omnic__g_weight(g, L->b2));
        x = omnic__g_add(g, x, h);
        for (int64_t di = 0; di < c->n_deepstack; di++) { /* DeepStack: merge^2 rows, then the norm */
            if (c->deepstack_layer[di] != l) continue;
            const omnic__qvit_deepstack *dm = &v->ds[di];
            omnic__tensor *z = omnic__g_group_rows(g, x, c->unit);
            z = omnic__g_layernorm(g, z, omnic__g_weight(g, &dm->norm_w), omnic__g_weight(g, &dm->norm_b),
                                   (float)c->eps);
            z = omnic__g_unary(g, OMNIC_OP_GELU,
                               omnic__g_matmul(g, z, omnic__g_weight(g, &dm->fc1), w_or_null(g, dm->fc1_b)));
            z = omnic__g_matmul(g, z, omnic__g_weight(g, &dm->fc2), w_or_null(g, dm->fc2_b));
            char name[32];
            snprintf(name, sizeof name, "deepstack_%lld", (long long)di);
            omnic__g_mark_output(g, z, name);
        }
    }
    if (!v2) x = omnic__g_get_rows(g, x, unperm); /* back to the processor's order */
    omnic__g_mark_output(g, x, "vision_features");
    omnic__tensor *y = norm(g, c, x, &v->lnq_w, v2 ? &v->lnq_b : NULL);
    y = omnic__g_group_rows(g, y, c->unit); /* [n / U, U * C]: one merged token per row */
    y = omnic__g_matmul(g, y, omnic__g_weight(g, &v->m0), w_or_null(g, v->m0_b));
    y = omnic__g_unary(g, OMNIC_OP_GELU, y); /* nn.GELU(): erf */
    y = omnic__g_matmul(g, y, omnic__g_weight(g, &v->m2), w_or_null(g, v->m2_b));
    omnic__g_mark_output(g, y, "projected");
    return omnic__graph_status(g, err);
}

/* ---- encoder ---- */

static const char *const META_INPUTS[] = {"pos_h",     "pos_w",    "attn_begin", "attn_last",
                                          "win_begin", "win_last", "unperm"};

omnic_status omnic__qvit_encoder_init(omnic__qvit_encoder *e, const omnic__qvit *v, int64_t capacity,
                                      const omnic__backend_ops *b, omnic__threadpool *pool, omnic_err *err)
{
    memset(e, 0, sizeof *e);
    const omnic__qvit_config *c = &v->cfg;
    capacity -= capacity % c->unit;
    if (capacity < c->unit || capacity > INT32_MAX)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "vision.encode: capacity %lld patches outside %lld..%d",
                          (long long)capacity, (long long)c->unit, INT32_MAX);
    e->v = v;
    e->capacity = capacity;
    omnic_status s;
    if ((s = omnic__module_init(&e->m, "vision.encode", "omnic.vision.encode.qwen2vl/2", capacity, err)) !=
            OMNIC_OK ||
        (s = omnic__qvit_build(v, &e->m, err)) != OMNIC_OK ||
        (s = omnic__module_finalize(&e->m, b, pool, err)) != OMNIC_OK ||
        (s = omnic__module_constrain(&e->m, "patches", 0, true, err)) != OMNIC_OK)
        goto fail;
    const int n_meta = c->arch == OMNIC_QVIT_QWEN2_5_VL ? 7 : 4;
    for (int i = 0; i < n_meta; i++)
        if ((s = omnic__module_constrain(&e->m, META_INPUTS[i], capacity, false, err)) != OMNIC_OK) goto fail;
    e->out_features = omnic__module_find_output(&e->m, "vision_features");
    e->out_projected = omnic__module_find_output(&e->m, "projected");
    for (int64_t k = 0; k < c->n_deepstack; k++) {
        char name[32];
        snprintf(name, sizeof name, "deepstack_%lld", (long long)k);
        e->out_deepstack[k] = omnic__module_find_output(&e->m, name);
    }
    e->patches = omnic_alloc_array((size_t)(capacity * c->patch_dim), sizeof *e->patches);
    if (c->arch == OMNIC_QVIT_QWEN3_VL)
        e->pos = omnic_alloc_array((size_t)(capacity * c->hidden), sizeof *e->pos);
    if (!e->patches || (c->arch == OMNIC_QVIT_QWEN3_VL && !e->pos)) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "vision.encode: out of memory for %lld patch rows",
                       (long long)capacity);
        goto fail;
    }
    return OMNIC_OK;
fail:
    omnic__qvit_encoder_deinit(e);
    return s;
}

void omnic__qvit_encoder_deinit(omnic__qvit_encoder *e)
{
    if (!e) return;
    omnic__module_deinit(&e->m);
    omnic_free(e->patches);
    omnic_free(e->pos);
    memset(e, 0, sizeof *e);
}

omnic_status omnic__qvit_encode(omnic__qvit_encoder *e, const omnic__tensor *patches, const int64_t *grids,
                                int n_images, const omnic__tensor **projected, const omnic__tensor **features,
                                omnic_err *err)
{
    OMNIC_TRY(omnic__qvit_encode_start(e, patches, grids, n_images, err));
    bool done;
    OMNIC_TRY(omnic__module_run(&e->m, 0, NULL, &done, err));
    *projected = omnic__module_output(&e->m, e->out_projected);
    if (features) *features = omnic__module_output(&e->m, e->out_features);
    return OMNIC_OK;
}

omnic_status omnic__qvit_encode_start(omnic__qvit_encoder *e, const omnic__tensor *patches,
                                      const int64_t *grids, int n_images, omnic_err *err)
{
    const omnic__qvit_config *c = &e->v->cfg;
    const int64_t K = c->patch_dim;
    if (!patches || patches->dtype != OMNIC_DTYPE_F32 || patches->ndim != 2 || patches->dims[1] != K ||
        !patches->data) {
        char got[128] = "(none)";
        if (patches) omnic__dims_str(got, sizeof got, patches->ndim, patches->dims);
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "vision.encode: patches must be f32 [N, %lld] (channels %lld x temporal "
                          "%lld x patch %lld^2), got %s %s",
                          (long long)K, (long long)c->channels, (long long)c->temporal, (long long)c->patch,
                          patches ? omnic_dtype_name(patches->dtype) : "", got);
    }
    omnic__qvit_meta meta;
    OMNIC_TRY(omnic__qvit_meta_init(&meta, c, grids, n_images, INT32_MAX, err));
    omnic_status s = OMNIC_OK;
    const int64_t n = meta.n;
    const float *src = patches->data;
    if (patches->dims[0] != n) {
        s = OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "vision.encode: patches has %lld rows, the %d image grid(s) need sum(t * h * w) = %lld",
            (long long)patches->dims[0], n_images, (long long)n);
        goto out;
    }
    if (n > e->capacity) {
        s = OMNIC_FAIL(err, OMNIC_E_CAPACITY,
                       "vision.encode: %lld patches in one call exceed the capacity of %lld", (long long)n,
                       (long long)e->capacity);
        goto out;
    }
    for (int64_t i = 0; i < n * K; i++)
        if (!isfinite(src[i])) {
            s = OMNIC_FAIL(err, OMNIC_E_INVALID, "vision.encode: patches[%lld][%lld] is not finite",
                           (long long)(i / K), (long long)(i % K));
            goto out;
        }
    if (c->arch == OMNIC_QVIT_QWEN2_5_VL) { /* processing (window) order */
        for (int64_t r = 0; r < n; r++)
            memcpy(e->patches + r * K, src + (int64_t)meta.order[r] * K, (size_t)K * sizeof(float));
        src = e->patches;
    }
    omnic__tensor in[8];
    const omnic__tensor *ins[8];
    const int32_t *arrays[7] = {meta.pos_h,     meta.pos_w,    meta.attn_begin, meta.attn_last,
                                meta.win_begin, meta.win_last, meta.unperm};
    const bool v3 = c->arch == OMNIC_QVIT_QWEN3_VL;
    const int n_meta = c->arch == OMNIC_QVIT_QWEN2_5_VL ? 7 : 4, n_in = 1 + n_meta + v3;
    const int64_t pd[2] = {n, K}, rd[1] = {n}, ed[2] = {n, c->hidden};
    if ((s = omnic__tensor_init(&in[0], OMNIC_DTYPE_F32, 2, pd, err)) != OMNIC_OK) goto out;
    in[0].data = (void *)(uintptr_t)src;
    ins[0] = &in[0];
    for (int i = 1; i <= n_meta; i++) {
        if ((s = omnic__tensor_init(&in[i], OMNIC_DTYPE_I32, 1, rd, err)) != OMNIC_OK) goto out;
        in[i].data = (void *)(uintptr_t)arrays[i - 1];
        ins[i] = &in[i];
    }
    if (v3) { /* Qwen3-VL: the interpolated position embedding, the graph's last input */
        omnic__qvit_pos_embeds(e->v, grids, n_images, e->pos);
        if ((s = omnic__tensor_init(&in[n_meta + 1], OMNIC_DTYPE_F32, 2, ed, err)) != OMNIC_OK) goto out;
        in[n_meta + 1].data = e->pos;
        ins[n_meta + 1] = &in[n_meta + 1];
    }
    omnic__call call = {.n = n, .inputs = ins, .n_inputs = n_in};
    s = omnic__module_start(&e->m, &call, err); /* the inputs are copied: meta may go */
out:
    omnic__qvit_meta_deinit(&meta);
    return s;
}

/* ---- Qwen3-VL position embedding ---- */

/* torch.linspace(0, end, n) in float32 on the CPU: step in f32, the first half counted from
 * the start, the second half back from the end. */
static float linspace_f32(float end, int64_t n, int64_t i)
{
    if (n == 1) return 0.0f;
    const float step = end / (float)(n - 1);
    return i < n / 2 ? 0.0f + step * (float)i : end - step * (float)(n - 1 - i);
}

static float ld_f32(const omnic__tensor *t, int64_t i)
{
    if (t->dtype == OMNIC_DTYPE_BF16) return omnic__bf16_to_f32(((const uint16_t *)t->data)[i]);
    if (t->dtype == OMNIC_DTYPE_F16) return omnic__f16_to_f32(((const uint16_t *)t->data)[i]);
    return ((const float *)t->data)[i];
}

void omnic__qvit_pos_embeds(const omnic__qvit *v, const int64_t *grids, int n_images, float *out)
{
    const omnic__qvit_config *c = &v->cfg;
    const int64_t G = (int64_t)sqrt((double)c->n_pos), C = c->hidden, m = c->merge;
    int64_t row = 0;
    for (int i = 0; i < n_images; i++) {
        const int64_t t = grids[3 * i], h = grids[3 * i + 1], w = grids[3 * i + 2];
        for (int64_t f = 0; f < t; f++) /* every frame the same; rows in merge-block order */
            for (int64_t bh = 0; bh < h / m; bh++)
                for (int64_t bw = 0; bw < w / m; bw++)
                    for (int64_t ih = 0; ih < m; ih++)
                        for (int64_t iw = 0; iw < m; iw++, row++) {
                            const int64_t y = bh * m + ih, x = bw * m + iw;
                            const float hy = linspace_f32((float)(G - 1), h, y),
                                        wx = linspace_f32((float)(G - 1), w, x);
                            const int64_t h0 = (int64_t)hy, w0 = (int64_t)wx; /* .int(): truncation */
                            const int64_t h1 = h0 + 1 < G ? h0 + 1 : G - 1, w1 = w0 + 1 < G ? w0 + 1 : G - 1;
                            const float dh = hy - (float)h0, dw = wx - (float)w0;
                            const float wt[4] = {(1 - dh) * (1 - dw), (1 - dh) * dw, dh * (1 - dw), dh * dw};
                            const int64_t idx[4] = {h0 * G + w0, h0 * G + w1, h1 * G + w0, h1 * G + w1};
                            float *o = out + row * C;
                            for (int64_t ch = 0; ch < C; ch++) { /* (p0 + p1) + p2 + p3, each product f32 */
                                float acc = ld_f32(&v->pos_embed, idx[0] * C + ch) * wt[0];
                                for (int q = 1; q < 4; q++)
                                    acc += ld_f32(&v->pos_embed, idx[q] * C + ch) * wt[q];
                                o[ch] = acc;
                            }
                        }
    }
}
