/* CLIP / SigLIP vision towers + the LLaVA projector: config, weights, vision.encode graph. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "io/json.h"
#include "models/config_keys.h"
#include "models/vision.h"
#include "models/weights.h"

/* ---- config ---- */

static omnic_status parse_act(const char *name, const char *what, const char *key, omnic__op *out,
                              omnic_err *err)
{
    if (!strcmp(name, "quick_gelu"))
        *out = OMNIC_OP_GELU_QUICK;
    else if (!strcmp(name, "gelu"))
        *out = OMNIC_OP_GELU; /* ACT2FN "gelu": exact erf */
    else if (!strcmp(name, "gelu_pytorch_tanh") || !strcmp(name, "gelu_new"))
        *out = OMNIC_OP_GELU_TANH;
    else if (!strcmp(name, "silu"))
        *out = OMNIC_OP_SILU;
    else
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: %s '%s' is not supported (quick_gelu, gelu, "
                          "gelu_pytorch_tanh, gelu_new, silu)",
                          what, key, name);
    return OMNIC_OK;
}

omnic_status omnic__vision_tower_config_parse(const json_t *cfg, omnic__vision_config *c, omnic_err *err)
{
    memset(c, 0, sizeof *c);
    c->boi_id = c->eoi_id = -1;
    const json_t *vc;
    OMNIC_TRY(omnic__json_get_obj(cfg, "vision_config", false, "config.json", &vc, err));
    const char *vw = "config.json vision_config", *type = "clip_vision_model", *act;
    if (vc) OMNIC_TRY(omnic__json_get_str(vc, "model_type", false, "clip_vision_model", vw, &type, err));
    const bool clip = !strcmp(type, "clip_vision_model");
    if (clip)
        c->arch = OMNIC_VISION_CLIP;
    else if (!strcmp(type, "siglip_vision_model"))
        c->arch = OMNIC_VISION_SIGLIP;
    else
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: model_type '%s' is not supported (clip_vision_model, siglip_vision_model)", vw,
                          type);
    /* HF CLIPVisionConfig / SiglipVisionConfig defaults; an absent vision_config is LlavaConfig's
     * CLIP ViT-L/14-336 (hidden 1024, 24 layers, 16 heads, MLP 4096, patch 14, image 336) */
    json_t *empty = NULL;
    if (!vc && !(vc = empty = json_object()))
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an empty vision_config");
    const bool llava_dflt = empty != NULL;
    /* keys without effect on the tower LLaVA runs: projection_dim (CLIP's projection head),
     * vision_use_head (SigLIP's pooling head), vocab_size (old LLaVA configs) */
    static const char *const vkeys[] = {"hidden_size",
                                        "intermediate_size",
                                        "num_hidden_layers",
                                        "num_attention_heads",
                                        "num_channels",
                                        "patch_size",
                                        "image_size",
                                        "layer_norm_eps",
                                        "hidden_act",
                                        "projection_dim",
                                        "vision_use_head",
                                        "vocab_size",
                                        NULL};
    const char *const *const lists[] = {omnic__config_keys_generic, vkeys, NULL};
    omnic_status s = omnic__config_check_generic(vc, vw, err);
    if (s == OMNIC_OK) s = omnic__json_check_keys(vc, vw, lists, err);
    if (s == OMNIC_OK)
        s = omnic__json_get_i64(vc, "hidden_size", false, llava_dflt ? 1024 : 768, 1, 1 << 16, vw, &c->hidden,
                                err);
    if (s == OMNIC_OK)
        s = omnic__json_get_i64(vc, "intermediate_size", false, llava_dflt ? 4096 : 3072, 1, 1 << 20, vw,
                                &c->intermediate, err);
    if (s == OMNIC_OK)
        s = omnic__json_get_i64(vc, "num_hidden_layers", false, llava_dflt ? 24 : 12, 1, OMNIC_MAX_LAYERS, vw,
                                &c->n_layers, err);
    if (s == OMNIC_OK)
        s = omnic__json_get_i64(vc, "num_attention_heads", false, llava_dflt ? 16 : 12, 1, 4096, vw,
                                &c->n_heads, err);
    if (s == OMNIC_OK) s = omnic__json_get_i64(vc, "num_channels", false, 3, 3, 3, vw, &c->channels, err);
    if (s == OMNIC_OK)
        s = omnic__json_get_i64(vc, "patch_size", false,
                                llava_dflt ? 14
                                : clip     ? 32
                                           : 16,
                                1, 1024, vw, &c->patch, err);
    if (s == OMNIC_OK)
        s = omnic__json_get_i64(vc, "image_size", false, llava_dflt ? 336 : 224, 1, 16384, vw, &c->image_size,
                                err);
    if (s == OMNIC_OK)
        s = omnic__json_get_f64(vc, "layer_norm_eps", false, clip ? 1e-5 : 1e-6, 0, 1, vw, &c->ln_eps, err);
    if (s == OMNIC_OK)
        s = omnic__json_get_str(vc, "hidden_act", false, clip ? "quick_gelu" : "gelu_pytorch_tanh", vw, &act,
                                err);
    if (s == OMNIC_OK) s = parse_act(act, vw, "hidden_act", &c->act, err);
    json_decref(empty);
    if (s != OMNIC_OK) return s;
    if (c->hidden % c->n_heads)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: hidden_size %lld is not a multiple of num_attention_heads %lld", vw,
                          (long long)c->hidden, (long long)c->n_heads);
    c->head_dim = c->hidden / c->n_heads;
    if (c->patch > c->image_size)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: patch_size %lld exceeds image_size %lld", vw,
                          (long long)c->patch, (long long)c->image_size);
    c->grid =
        c->image_size / c->patch; /* HF: (image_size // patch_size)^2 patches; the conv drops the rest */
    c->n_seq = c->grid * c->grid + (clip ? 1 : 0);
    return OMNIC_OK;
}

omnic_status omnic__vision_config_parse(const json_t *cfg, const char *what, int64_t text_hidden,
                                        omnic__vision_config *c, omnic_err *err)
{
    OMNIC_TRY(omnic__vision_tower_config_parse(cfg, c, err));
    const bool clip = c->arch == OMNIC_VISION_CLIP;

    /* LLaVA top-level keys */
    const json_t *fl = json_object_get(cfg, "vision_feature_layer");
    int64_t layer = -2;
    if (fl && json_is_array(fl))
        return OMNIC_FAIL(
            err, OMNIC_E_UNSUPPORTED,
            "%s: vision_feature_layer is a list of %zu layers (concatenated features are not supported)",
            what, json_array_size(fl));
    OMNIC_TRY(omnic__json_get_i64(cfg, "vision_feature_layer", false, -2, -(c->n_layers + 1), c->n_layers,
                                  what, &layer, err));
    c->feature_index = layer < 0 ? c->n_layers + 1 + layer : layer;
    const char *strategy, *pact;
    OMNIC_TRY(
        omnic__json_get_str(cfg, "vision_feature_select_strategy", false, "default", what, &strategy, err));
    if (!strcmp(strategy, "full"))
        c->keep_first = true;
    else if (strcmp(strategy, "default") != 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: vision_feature_select_strategy '%s' must be default or full", what, strategy);
    c->n_out = c->n_seq - (c->keep_first ? 0 : 1);
    if (c->n_out < 1)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: strategy '%s' leaves no image rows (%lld tokens)", what,
                          strategy, (long long)c->n_seq);
    OMNIC_TRY(omnic__json_get_str(cfg, "projector_hidden_act", false, "gelu", what, &pact, err));
    OMNIC_TRY(parse_act(pact, what, "projector_hidden_act", &c->proj_act, err));
    OMNIC_TRY(omnic__json_get_bool(cfg, "multimodal_projector_bias", false, true, what, &c->proj_bias, err));
    int64_t tok = -1;
    const char *tok_key = json_object_get(cfg, "image_token_index") ? "image_token_index" : "image_token_id";
    OMNIC_TRY(omnic__json_get_i64(cfg, tok_key, false, 32000, 0, INT32_MAX, what, &tok, err));
    c->image_token_id = (int32_t)tok;
    int64_t seq_len;
    OMNIC_TRY(
        omnic__json_get_i64(cfg, "image_seq_length", false, c->n_out, 1, INT32_MAX, what, &seq_len, err));
    if (seq_len != c->n_out)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "%s: image_seq_length %lld does not match the tower's %lld rows per image ((%lld / %lld)^2%s, "
            "strategy %s)",
            what, (long long)seq_len, (long long)c->n_out, (long long)c->image_size, (long long)c->patch,
            clip ? " + CLS" : "", strategy);
    c->text_hidden = text_hidden;
    c->prefix = "vision_tower.vision_model.";
    c->alt_prefix = "model.vision_tower.vision_model.";
    c->proj_prefix = "multi_modal_projector.";
    c->alt_proj_prefix = "model.multi_modal_projector.";
    return OMNIC_OK;
}

/* ---- weights ---- */

static omnic_status bind(omnic__vision_tower *v, const omnic__safetensors *st, const char *name, int ndim,
                         const int64_t *dims, omnic__tensor *out, omnic_err *err)
{
    return omnic__weight_bind(st, name, ndim, dims, out, &v->copies, err);
}

/* An owned f32 copy of a float weight with `ndim` dims (biases, the CLS row). */
static omnic_status bind_f32(omnic__vision_tower *v, const omnic__safetensors *st, const char *name, int ndim,
                             const int64_t *dims, omnic__tensor **out, omnic_err *err)
{
    return omnic__weight_bind_f32(st, name, ndim, dims, out, &v->copies, err);
}

omnic_status omnic__vision_layer_load(const omnic__safetensors *st, const char *prefix, int64_t l, int64_t C,
                                      int64_t I, omnic__vision_layer *L, omnic__weight_copies *copies,
                                      omnic_err *err)
{
    const int64_t cc[2] = {C, C}, ic[2] = {I, C}, ci[2] = {C, I}, vc[1] = {C}, vi[1] = {I};
    struct {
        const char *suffix;
        int ndim;
        const int64_t *dims;
        omnic__tensor *out;
        omnic__tensor **f32;
    } ws[] = {
        {"layer_norm1.weight", 1, vc, &L->ln1_w, NULL},     {"layer_norm1.bias", 1, vc, &L->ln1_b, NULL},
        {"layer_norm2.weight", 1, vc, &L->ln2_w, NULL},     {"layer_norm2.bias", 1, vc, &L->ln2_b, NULL},
        {"self_attn.q_proj.weight", 2, cc, &L->wq, NULL},   {"self_attn.q_proj.bias", 1, vc, NULL, &L->bq},
        {"self_attn.k_proj.weight", 2, cc, &L->wk, NULL},   {"self_attn.k_proj.bias", 1, vc, NULL, &L->bk},
        {"self_attn.v_proj.weight", 2, cc, &L->wv, NULL},   {"self_attn.v_proj.bias", 1, vc, NULL, &L->bv},
        {"self_attn.out_proj.weight", 2, cc, &L->wo, NULL}, {"self_attn.out_proj.bias", 1, vc, NULL, &L->bo},
        {"mlp.fc1.weight", 2, ic, &L->fc1, NULL},           {"mlp.fc1.bias", 1, vi, NULL, &L->fc1_b},
        {"mlp.fc2.weight", 2, ci, &L->fc2, NULL},           {"mlp.fc2.bias", 1, vc, NULL, &L->fc2_b},
    };
    char name[256];
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
        snprintf(name, sizeof name, "%sencoder.layers.%lld.%s", prefix, (long long)l, ws[i].suffix);
        OMNIC_TRY(ws[i].out
                      ? omnic__weight_bind(st, name, ws[i].ndim, ws[i].dims, ws[i].out, copies, err)
                      : omnic__weight_bind_f32(st, name, ws[i].ndim, ws[i].dims, ws[i].f32, copies, err));
    }
    return OMNIC_OK;
}

void omnic__vision_layer_deinit(omnic__vision_layer *L)
{
    omnic__tensor *ts[] = {L->bq, L->bk, L->bv, L->bo, L->fc1_b, L->fc2_b};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        omnic__tensor_destroy(ts[i]);
    memset(L, 0, sizeof *L);
}

omnic_status omnic__vision_tower_load(omnic__vision_tower *v, const omnic__vision_config *c,
                                      const omnic__safetensors *st, omnic_err *err)
{
    memset(v, 0, sizeof *v);
    v->cfg = *c;
    const int64_t C = c->hidden, I = c->intermediate, D = c->text_hidden, p = c->patch;
    char name[192];
    omnic_status s;
#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)
    const char *P = c->prefix, *Q = c->proj_prefix;
    if (!omnic__st_find(st, NAME("%sembeddings.patch_embedding.weight", P)) &&
        omnic__st_find(st, NAME("%sembeddings.patch_embedding.weight", c->alt_prefix)))
        P = v->cfg.prefix = c->alt_prefix;
    const bool gemma3 = c->projector == OMNIC_PROJ_GEMMA3;
    const char *probe = gemma3 ? "mm_soft_emb_norm.weight" : "linear_1.weight";
    if (!omnic__st_find(st, NAME("%s%s", Q, probe)) &&
        omnic__st_find(st, NAME("%s%s", c->alt_proj_prefix, probe)))
        Q = v->cfg.proj_prefix = c->alt_proj_prefix;
    const bool clip = c->arch == OMNIC_VISION_CLIP;
    int64_t pw[4] = {C, c->channels, p, p}, pos[2] = {c->n_seq, C}, cls[1] = {C}, cls2[2] = {1, C};
    if ((s = bind(v, st, NAME("%sembeddings.patch_embedding.weight", P), 4, pw, &v->patch_w, err)) !=
            OMNIC_OK ||
        (s = bind(v, st, NAME("%sembeddings.position_embedding.weight", P), 2, pos, &v->pos, err)) !=
            OMNIC_OK)
        goto fail;
    if (clip) {
        omnic__tensor *t = NULL;
        if ((s = bind_f32(v, st, NAME("%sembeddings.class_embedding", P), 1, cls, &t, err)) != OMNIC_OK)
            goto fail;
        memcpy(t->dims, cls2, sizeof cls2); /* [C] -> [1, C] for the concat */
        t->ndim = 2;
        v->cls = t;
        if ((s = bind(v, st, NAME("%spre_layrnorm.weight", P), 1, cls, &v->pre_w, err)) != OMNIC_OK ||
            (s = bind(v, st, NAME("%spre_layrnorm.bias", P), 1, cls, &v->pre_b, err)) != OMNIC_OK)
            goto fail;
    } else if ((s = bind_f32(v, st, NAME("%sembeddings.patch_embedding.bias", P), 1, cls, &v->patch_b,
                             err)) != OMNIC_OK) {
        goto fail;
    }
    if (c->feature_index > 0) {
        v->layers = omnic_alloc_array((size_t)c->feature_index, sizeof *v->layers);
        if (!v->layers) {
            s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld vision layers",
                           (long long)c->feature_index);
            goto fail;
        }
    }
    for (int64_t l = 0; l < c->feature_index; l++)
        if ((s = omnic__vision_layer_load(st, P, l, C, I, &v->layers[l], &v->copies, err)) != OMNIC_OK)
            goto fail;
    int64_t p1[2] = {D, C}, p2[2] = {D, D}, pb[1] = {D}, cd[2] = {C, D};
    if (gemma3) {
        omnic__tensor w;
        if ((s = bind(v, st, NAME("%spost_layernorm.weight", P), 1, cls, &v->post_w, err)) != OMNIC_OK ||
            (s = bind(v, st, NAME("%spost_layernorm.bias", P), 1, cls, &v->post_b, err)) != OMNIC_OK ||
            (s = bind(v, st, NAME("%smm_soft_emb_norm.weight", Q), 1, cls, &v->soft_norm, err)) != OMNIC_OK ||
            (s = bind(v, st, NAME("%smm_input_projection_weight", Q), 2, cd, &w, err)) != OMNIC_OK ||
            (s = omnic__weight_transpose(&w, name, &v->proj_in, err)) != OMNIC_OK)
            goto fail;
    } else if ((s = bind(v, st, NAME("%slinear_1.weight", Q), 2, p1, &v->proj1, err)) != OMNIC_OK ||
               (s = bind(v, st, NAME("%slinear_2.weight", Q), 2, p2, &v->proj2, err)) != OMNIC_OK) {
        goto fail;
    }
    if (!gemma3 && c->proj_bias &&
        ((s = bind_f32(v, st, NAME("%slinear_1.bias", Q), 1, pb, &v->proj1_b, err)) != OMNIC_OK ||
         (s = bind_f32(v, st, NAME("%slinear_2.bias", Q), 1, pb, &v->proj2_b, err)) != OMNIC_OK))
        goto fail;
#undef NAME
    int64_t nq[1] = {c->n_seq};
    if ((s = omnic__tensor_create(&v->qpos, OMNIC_DTYPE_I32, 1, nq, err)) != OMNIC_OK) goto fail;
    snprintf(v->qpos->name, sizeof v->qpos->name, "vision_qpos");
    return OMNIC_OK;
fail:
    omnic__vision_tower_deinit(v);
    return s;
}

void omnic__vision_tower_deinit(omnic__vision_tower *v)
{
    if (!v) return;
    for (int64_t l = 0; v->layers && l < v->cfg.feature_index; l++)
        omnic__vision_layer_deinit(&v->layers[l]);
    omnic_free(v->layers);
    omnic__tensor *ts[] = {v->patch_b, v->cls, v->proj1_b, v->proj2_b, v->qpos, v->proj_in};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        omnic__tensor_destroy(ts[i]);
    omnic__weight_copies_free(&v->copies);
    memset(v, 0, sizeof *v);
}

void omnic__vision_tower_param_stats(const omnic__vision_tower *v, int64_t *params, int64_t *bytes)
{
    int64_t p = 0, b = 0;
    const bool clip = v->cfg.arch == OMNIC_VISION_CLIP;
    const bool gemma3 = v->cfg.projector == OMNIC_PROJ_GEMMA3;
    const omnic__tensor *top[] = {&v->patch_w,
                                  v->patch_b,
                                  v->cls,
                                  &v->pos,
                                  clip ? &v->pre_w : NULL,
                                  clip ? &v->pre_b : NULL,
                                  gemma3 ? NULL : &v->proj1,
                                  gemma3 ? NULL : &v->proj2,
                                  v->proj1_b,
                                  v->proj2_b,
                                  gemma3 ? &v->post_w : NULL,
                                  gemma3 ? &v->post_b : NULL,
                                  gemma3 ? &v->soft_norm : NULL,
                                  v->proj_in};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (top[i]) p += omnic__tensor_nelem(top[i]), b += (int64_t)omnic__tensor_bytes(top[i]);
    for (int64_t l = 0; l < v->cfg.feature_index; l++) {
        const omnic__vision_layer *L = &v->layers[l];
        const omnic__tensor *ts[] = {&L->ln1_w, &L->ln1_b, &L->ln2_w, &L->ln2_b, &L->wq, &L->wk,
                                     &L->wv,    &L->wo,    L->bq,     L->bk,     L->bv,  L->bo,
                                     &L->fc1,   &L->fc2,   L->fc1_b,  L->fc2_b};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            p += omnic__tensor_nelem(ts[i]), b += (int64_t)omnic__tensor_bytes(ts[i]);
    }
    *params = p;
    *bytes = b;
}

/* ---- graph ---- */

static omnic__tensor *w_or_null(omnic__graph *g, const omnic__tensor *t)
{
    return t ? omnic__g_weight(g, t) : NULL;
}

omnic__tensor *omnic__vision_layer_graph(omnic__graph *g, const omnic__vision_layer *L, omnic__tensor *x,
                                         int64_t n_heads, int64_t head_dim, float eps, omnic__op act,
                                         omnic__tensor *qpos, omnic__tensor *kv_begin)
{
    if (!x) return NULL;
    const int64_t N = x->dims[0], C = n_heads * head_dim;
    const float scale = (float)(1.0 / sqrt((double)head_dim)); /* HF: head_dim**-0.5 */
    omnic__tensor *h =
        omnic__g_layernorm(g, x, omnic__g_weight(g, &L->ln1_w), omnic__g_weight(g, &L->ln1_b), eps);
    int64_t hs[3] = {N, n_heads, head_dim}, flat[2] = {N, C};
    omnic__tensor *q = omnic__g_reshape(
        g, omnic__g_matmul(g, h, omnic__g_weight(g, &L->wq), omnic__g_weight(g, L->bq)), 3, hs);
    omnic__tensor *k = omnic__g_reshape(
        g, omnic__g_matmul(g, h, omnic__g_weight(g, &L->wk), omnic__g_weight(g, L->bk)), 3, hs);
    omnic__tensor *vv = omnic__g_reshape(
        g, omnic__g_matmul(g, h, omnic__g_weight(g, &L->wv), omnic__g_weight(g, L->bv)), 3, hs);
    omnic__tensor *a = kv_begin ? omnic__g_attention_tiled(g, q, k, vv, qpos, kv_begin, scale, true)
                                : omnic__g_attention(g, q, k, vv, qpos, NULL, NULL, scale, false, 0, 0.0f);
    omnic__tensor *o = omnic__g_matmul(g, omnic__g_reshape(g, a, 2, flat), omnic__g_weight(g, &L->wo),
                                       omnic__g_weight(g, L->bo));
    x = omnic__g_add(g, x, o);
    h = omnic__g_layernorm(g, x, omnic__g_weight(g, &L->ln2_w), omnic__g_weight(g, &L->ln2_b), eps);
    h = omnic__g_matmul(g, h, omnic__g_weight(g, &L->fc1), omnic__g_weight(g, L->fc1_b));
    h = omnic__g_unary(g, act, h);
    h = omnic__g_matmul(g, h, omnic__g_weight(g, &L->fc2), omnic__g_weight(g, L->fc2_b));
    return omnic__g_add(g, x, h);
}

omnic_status omnic__vision_tower_build(const omnic__vision_tower *v, omnic__module *m, omnic_err *err)
{
    const omnic__vision_config *c = &v->cfg;
    omnic__graph *g = &m->graph;
    const float eps = (float)c->ln_eps;
    int64_t img[3] = {c->channels, c->image_size, c->image_size};
    omnic__tensor *pix = omnic__g_input(g, "pixel_values", OMNIC_DTYPE_F32, 3, img, OMNIC_VAR_NONE);
    omnic__tensor *x =
        omnic__g_patch_embed(g, pix, omnic__g_weight(g, &v->patch_w), w_or_null(g, v->patch_b));
    if (v->cls) x = omnic__g_concat(g, omnic__g_weight(g, v->cls), x, 0); /* CLS is row 0 */
    x = omnic__g_add(g, x, omnic__g_weight(g, &v->pos));
    if (c->arch == OMNIC_VISION_CLIP)
        x = omnic__g_layernorm(g, x, omnic__g_weight(g, &v->pre_w), omnic__g_weight(g, &v->pre_b), eps);
    omnic__tensor *qpos = omnic__g_weight(g, v->qpos);
    for (int64_t l = 0; l < c->feature_index; l++)
        x = omnic__vision_layer_graph(g, &v->layers[l], x, c->n_heads, c->head_dim, eps, c->act, qpos, NULL);
    if (c->projector == OMNIC_PROJ_GEMMA3) { /* last_hidden_state -> Gemma3MultiModalProjector */
        x = omnic__g_layernorm(g, x, omnic__g_weight(g, &v->post_w), omnic__g_weight(g, &v->post_b), eps);
        omnic__g_mark_output(g, x, "vision_features");
        omnic__tensor *z = omnic__g_pool_avg(g, x, c->grid, c->pool);
        z = omnic__g_rmsnorm(g, z, omnic__g_weight(g, &v->soft_norm), eps, true);
        z = omnic__g_matmul(g, z, omnic__g_weight(g, v->proj_in), NULL);
        omnic__g_mark_output(g, z, "projected");
        return omnic__graph_status(g, err);
    }
    omnic__tensor *feat = c->keep_first ? x : omnic__g_slice_last_rows(g, x, c->n_out);
    omnic__g_mark_output(g, feat, "vision_features");
    omnic__tensor *z = omnic__g_matmul(g, feat, omnic__g_weight(g, &v->proj1), w_or_null(g, v->proj1_b));
    z = omnic__g_unary(g, c->proj_act, z);
    z = omnic__g_matmul(g, z, omnic__g_weight(g, &v->proj2), w_or_null(g, v->proj2_b));
    omnic__g_mark_output(g, z, "projected");
    return omnic__graph_status(g, err);
}
