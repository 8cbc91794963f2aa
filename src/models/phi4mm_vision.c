/* Phi-4-multimodal's image encoder (models/phi4mm_vision.h): config, weights, the vision.encode
 * graph, the host inputs (patch rows, bucketized positions, orders) and the sub_glb assembly. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/json.h"
#include "models/config_keys.h"
#include "models/phi4mm_vision.h"
#include "runtime/graph.h"

/* ---- config ------------------------------------------------------------------------------- */

omnic_status omnic__p4v_config_parse(const json_t *vc, const char *what, int64_t text_hidden,
                                     omnic__p4v_config *c, omnic_err *err)
{
    static const char *const keys[] = {"hidden_size",       "intermediate_size",
                                       "num_hidden_layers", "num_attention_heads",
                                       "num_channels",      "image_size",
                                       "patch_size",        "hidden_act",
                                       "layer_norm_eps",    "attention_dropout",
                                       "crop_size",         "image_token_id",
                                       "feature_layer",     NULL};
    const char *const *const lists[] = {omnic__config_keys_generic, keys, NULL};
    memset(c, 0, sizeof *c);
    OMNIC_TRY(omnic__config_check_generic(vc, what, err));
    OMNIC_TRY(omnic__json_check_keys(vc, what, lists, err));
    /* HF Phi4MultimodalVisionConfig defaults */
    OMNIC_TRY(omnic__json_get_i64(vc, "hidden_size", false, 1152, 1, 1 << 16, what, &c->hidden, err));
    OMNIC_TRY(
        omnic__json_get_i64(vc, "intermediate_size", false, 4304, 1, 1 << 20, what, &c->intermediate, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "num_hidden_layers", false, 27, 1, OMNIC_MAX_LAYERS, what, &c->n_layers,
                                  err));
    OMNIC_TRY(omnic__json_get_i64(vc, "num_attention_heads", false, 16, 1, 1024, what, &c->n_heads, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "image_size", false, 448, 1, 4096, what, &c->image_size, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "patch_size", false, 14, 1, 256, what, &c->patch, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "crop_size", false, 448, 1, 4096, what, &c->crop_size, err));
    OMNIC_TRY(omnic__json_get_f64(vc, "layer_norm_eps", false, 1e-6, 0, 1, what, &c->ln_eps, err));
    OMNIC_TRY(omnic__json_expect(vc, "num_channels", "3", what, err));
    OMNIC_TRY(omnic__json_expect(vc, "attention_dropout", "0", what, err));
    int64_t id, fl;
    OMNIC_TRY(omnic__json_get_i64(vc, "image_token_id", false, 200010, 0, INT32_MAX, what, &id, err));
    OMNIC_TRY(omnic__json_get_i64(vc, "feature_layer", false, -2, -OMNIC_MAX_LAYERS, OMNIC_MAX_LAYERS, what,
                                  &fl, err));
    const char *act;
    OMNIC_TRY(omnic__json_get_str(vc, "hidden_act", false, "gelu_pytorch_tanh", what, &act, err));
    if (!strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_new"))
        c->act = OMNIC_OP_GELU_TANH;
    else if (!strcmp(act, "gelu"))
        c->act = OMNIC_OP_GELU;
    else
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: hidden_act '%s' is not supported (gelu_pytorch_tanh, gelu_new, gelu)", what,
                          act);
    if (c->hidden % c->n_heads)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: hidden_size %lld is not a multiple of %lld heads", what,
                          (long long)c->hidden, (long long)c->n_heads);
    c->head_dim = c->hidden / c->n_heads;
    c->grid = c->image_size / c->patch;
    if (c->image_size % c->patch || c->grid % 2 || c->grid > 64)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: image_size %lld / patch_size %lld must be an even whole grid up to 64 (the "
                          "published 448 / 14 = 32; odd grids reflection-pad before pooling)",
                          what, (long long)c->image_size, (long long)c->patch);
    if (c->crop_size != c->image_size)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: crop_size %lld differs from image_size %lld", what,
                          (long long)c->crop_size, (long long)c->image_size);
    c->layers_run = fl < 0 ? c->n_layers + 1 + fl : fl;
    if (c->layers_run < 0 || c->layers_run > c->n_layers)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: feature_layer %lld is outside the %lld layers' hidden states", what,
                          (long long)fl, (long long)c->n_layers);
    c->text_hidden = text_hidden;
    c->image_token_id = (int32_t)id;
    c->prefix = "model.embed_tokens_extend.image_embed.";
    return OMNIC_OK;
}

/* ---- weights ------------------------------------------------------------------------------ */

typedef struct loader {
    omnic__p4v *e;
    const omnic__safetensors *st;
    char name[256];
    omnic_err *err;
} loader;

static omnic_status bind(loader *l, int ndim, const int64_t *dims, omnic__tensor *out)
{
    return omnic__weight_bind(l->st, l->name, ndim, dims, out, &l->e->copies, l->err);
}

static omnic_status bind_f32(loader *l, int ndim, const int64_t *dims, omnic__tensor **out)
{
    return omnic__weight_bind_f32(l->st, l->name, ndim, dims, out, &l->e->copies, l->err);
}

/* l with its name set (bind reads it). */
__attribute__((format(printf, 2, 3))) static loader *named(loader *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->name, sizeof l->name, fmt, ap);
    va_end(ap);
    return l;
}

static omnic_status linear(loader *l, const char *stem, int64_t out, int64_t in, omnic__tensor *w,
                           omnic__tensor **b)
{
    const int64_t wd[2] = {out, in}, bd[1] = {out};
    OMNIC_TRY(bind(named(l, "%s.weight", stem), 2, wd, w));
    return bind_f32(named(l, "%s.bias", stem), 1, bd, b);
}

static omnic_status load_all(loader *l)
{
    omnic__p4v *e = l->e;
    const omnic__p4v_config *c = &e->cfg;
    const char *P = c->prefix;
    const int64_t C = c->hidden, D = c->text_hidden, p = c->patch;
    const int64_t pw[4] = {C, 3, p, p}, bc[1] = {C}, pos[2] = {c->grid * c->grid, C};
    OMNIC_TRY(bind(named(l, "%simg_processor.embeddings.patch_embedding.weight", P), 4, pw, &e->patch_w));
    e->patch_w.ndim = 2; /* [C, 3, p, p] as the matmul's [C, 3 p p]: (c, ky, kx) columns */
    e->patch_w.dims[1] = 3 * p * p;
    e->patch_w.dims[2] = e->patch_w.dims[3] = 1;
    OMNIC_TRY(bind_f32(named(l, "%simg_processor.embeddings.patch_embedding.bias", P), 1, bc, &e->patch_b));
    OMNIC_TRY(bind(named(l, "%simg_processor.embeddings.position_embedding.weight", P), 2, pos, &e->pos));
    e->layers = omnic_alloc_array((size_t)c->layers_run + 1, sizeof *e->layers);
    if (!e->layers) return OMNIC_FAIL(l->err, OMNIC_E_NOMEM, "out of memory for vision layers");
    memset(e->layers, 0, ((size_t)c->layers_run + 1) * sizeof *e->layers);
    char layers[200];
    snprintf(layers, sizeof layers, "%simg_processor.", P);
    for (int64_t i = 0; i < c->layers_run; i++)
        OMNIC_TRY(omnic__vision_layer_load(l->st, layers, i, C, c->intermediate, &e->layers[i], &e->copies,
                                           l->err));
    /* the separators [1, 1, C] / [1, 1, 1, C] as one owned f32 [2, C] (sub, global) */
    const int64_t s2[2] = {2, C}, g3[3] = {1, 1, C}, s4[4] = {1, 1, 1, C};
    OMNIC_TRY(omnic__tensor_create(&e->seps, OMNIC_DTYPE_F32, 2, s2, l->err));
    snprintf(e->seps->name, sizeof e->seps->name, "image_separators");
    const char *sep_names[2] = {"sub_img_feature_extensor", "global_img_feature_extensor"};
    for (int k = 0; k < 2; k++) {
        omnic__tensor *f;
        named(l, "%s%s", P, sep_names[k]);
        OMNIC_TRY(k ? bind_f32(l, 3, g3, &f) : bind_f32(l, 4, s4, &f));
        memcpy((float *)e->seps->data + k * C, f->data, (size_t)C * sizeof(float));
        omnic__tensor_destroy(f);
    }
    char stem[200];
    snprintf(stem, sizeof stem, "%simg_projection_up", P);
    OMNIC_TRY(linear(l, stem, D, C, &e->up, &e->up_b));
    snprintf(stem, sizeof stem, "%simg_projection_down", P);
    return linear(l, stem, D, D, &e->down, &e->down_b);
}

omnic_status omnic__p4v_load(omnic__p4v *e, const omnic__p4v_config *cfg, const omnic__safetensors *st,
                             omnic_err *err)
{
    memset(e, 0, sizeof *e);
    e->cfg = *cfg;
    loader l = {.e = e, .st = st, .err = err};
    omnic_status s = load_all(&l);
    if (s != OMNIC_OK) omnic__p4v_deinit(e);
    return s;
}

void omnic__p4v_deinit(omnic__p4v *e)
{
    if (!e) return;
    for (int64_t i = 0; e->layers && i < e->cfg.layers_run; i++)
        omnic__vision_layer_deinit(&e->layers[i]);
    omnic_free(e->layers);
    omnic__tensor *ts[] = {e->patch_b, e->seps, e->up_b, e->down_b};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        omnic__tensor_destroy(ts[k]);
    omnic__weight_copies_free(&e->copies);
    memset(e, 0, sizeof *e);
}

/* ---- graph -------------------------------------------------------------------------------- */

static const char *const META[5] = {"pos_ids", "qpos", "kv_begin", "raster", "pool"};

static omnic__tensor *project(omnic__graph *g, const omnic__p4v *e, omnic__tensor *x)
{
    x = omnic__g_matmul(g, x, omnic__g_weight(g, &e->up), omnic__g_weight(g, e->up_b));
    x = omnic__g_unary(g, OMNIC_OP_GELU, x); /* nn.functional.gelu: erf */
    return omnic__g_matmul(g, x, omnic__g_weight(g, &e->down), omnic__g_weight(g, e->down_b));
}

omnic_status omnic__p4v_build(const omnic__p4v *e, omnic__module *m, omnic_err *err)
{
    const omnic__p4v_config *c = &e->cfg;
    omnic__graph *g = &m->graph;
    const int64_t N = g->capacity, C = c->hidden, p = c->patch;
    if (N % (c->grid * c->grid))
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "vision.encode capacity %lld is not whole crops",
                          (long long)N);
    const float eps = (float)c->ln_eps;
    const int64_t pd[2] = {N, 3 * p * p}, nd[1] = {N};
    omnic__tensor *patches = omnic__g_input(g, "patches", OMNIC_DTYPE_F32, 2, pd, OMNIC_VAR_T);
    omnic__tensor *meta[5];
    for (int k = 0; k < 5; k++)
        meta[k] = omnic__g_input(g, META[k], OMNIC_DTYPE_I32, 1, nd, OMNIC_VAR_T);
    omnic__tensor *x =
        omnic__g_matmul(g, patches, omnic__g_weight(g, &e->patch_w), omnic__g_weight(g, e->patch_b));
    x = omnic__g_add(g, x, omnic__g_get_rows(g, omnic__g_weight(g, &e->pos), meta[0]));
    for (int64_t l = 0; l < c->layers_run; l++) /* each row sees its crop's valid keys [kv_begin, qpos] */
        x = omnic__vision_layer_graph(g, &e->layers[l], x, c->n_heads, c->head_dim, eps, c->act, meta[1],
                                      meta[2]);
    omnic__tensor *f = omnic__g_get_rows(g, x, meta[3]); /* raster order per crop */
    omnic__g_mark_output(g, f, "vision_features");
    /* AvgPool 2x2: the window's four cells as consecutive rows, ((a + b) + c) + d, / 4 */
    omnic__tensor *w = omnic__g_group_rows(g, omnic__g_get_rows(g, f, meta[4]), 4);
    omnic__tensor *s = omnic__g_slice(g, w, 1, 0, C);
    for (int64_t j = 1; j < 4; j++)
        s = omnic__g_add(g, s, omnic__g_slice(g, w, 1, j * C, C));
    s = omnic__g_scale(g, s, 0.25f, 0.0f);
    omnic__g_mark_output(g, project(g, e, s), "projected");
    omnic__g_mark_output(g, project(g, e, omnic__g_weight(g, e->seps)), "separators");
    return omnic__graph_status(g, err);
}

/* ---- host inputs -------------------------------------------------------------------------- */

/* HF's bucketized coordinate of index a of n valid patches on a grid of G: torch.arange(0, 1 - 1e-6,
 * 1 / n) in f32 (step f32(1 / n), values start + a * step in double, rounded to f32), counted
 * against the boundaries k / G, k = 1 .. G - 1 (bucketize right=True: boundaries <= v). */
static int64_t bucket(int64_t a, int64_t n, int64_t G)
{
    const float step = 1.0f / (float)n;
    const float v = (float)((double)a * (double)step);
    int64_t b = 0;
    for (int64_t k = 1; k < G; k++)
        b += (float)((double)k * (double)(1.0f / (float)G)) <= v;
    return b;
}

omnic_status omnic__p4v_inputs_make(const omnic__p4v *e, const float *pixels, int64_t crops,
                                    const int64_t *valid, omnic__p4v_inputs *in, omnic_err *err)
{
    const omnic__p4v_config *c = &e->cfg;
    const int64_t G = c->grid, GG = G * G, p = c->patch, S = c->image_size, K = 3 * p * p;
    memset(in, 0, sizeof *in);
    if (crops < 1) return OMNIC_FAIL(err, OMNIC_E_INVALID, "an image of %lld crops", (long long)crops);
    const int64_t n = crops * GG;
    in->n = n;
    in->patches = omnic_alloc_array((size_t)(n * K), sizeof *in->patches);
    in->meta = omnic_alloc_array((size_t)(5 * n), sizeof *in->meta);
    int32_t *slot = omnic_alloc_array((size_t)GG, sizeof *slot);
    if (!in->patches || !in->meta || !slot) {
        omnic_free(slot);
        omnic__p4v_inputs_free(in);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for the patches of %lld crops",
                          (long long)crops);
    }
    int32_t *pos = in->meta, *qpos = in->meta + n, *kvb = in->meta + 2 * n, *raster = in->meta + 3 * n,
            *pool = in->meta + 4 * n;
    for (int64_t k = 0; k < crops; k++) {
        const int64_t vr = valid[2 * k], vc = valid[2 * k + 1], V = vr * vc, base = k * GG;
        /* slot of each raster patch: valid ones first (raster order), then the padding ones */
        int64_t nv = 0, np = V;
        for (int64_t r = 0; r < G; r++)
            for (int64_t q = 0; q < G; q++)
                slot[r * G + q] = (int32_t)(r < vr && q < vc ? nv++ : np++);
        for (int64_t r = 0; r < G; r++)
            for (int64_t q = 0; q < G; q++) {
                const int64_t row = base + slot[r * G + q];
                pos[row] = r < vr && q < vc ? (int32_t)(bucket(r, vr, G) * G + bucket(q, vc, G)) : 0;
                qpos[row] = (int32_t)(base + V - 1); /* V = 0: no visible key (rows of zeros) */
                kvb[row] = (int32_t)base;
                raster[base + r * G + q] = (int32_t)row;
                float *dst = in->patches + row * K;
                const float *img = pixels + k * 3 * S * S;
                for (int64_t ch = 0; ch < 3; ch++)
                    for (int64_t y = 0; y < p; y++)
                        memcpy(dst + (ch * p + y) * p, img + (ch * S + r * p + y) * S + q * p,
                               (size_t)p * sizeof(float));
            }
        /* pooling windows (py, px) row-major, each window's cells (a, b) row-major, raster rows */
        int64_t w = base;
        for (int64_t py = 0; py < G / 2; py++)
            for (int64_t px = 0; px < G / 2; px++)
                for (int64_t a = 0; a < 2; a++)
                    for (int64_t b = 0; b < 2; b++)
                        pool[w++] = (int32_t)(base + (2 * py + a) * G + 2 * px + b);
    }
    omnic_free(slot);
    return OMNIC_OK;
}

void omnic__p4v_inputs_free(omnic__p4v_inputs *in)
{
    omnic_free(in->patches);
    omnic_free(in->meta);
    memset(in, 0, sizeof *in);
}

void omnic__p4v_inputs_bind(const omnic__p4v *e, const omnic__p4v_inputs *in, omnic__tensor t[6])
{
    const int64_t K = 3 * e->cfg.patch * e->cfg.patch;
    memset(t, 0, 6 * sizeof *t);
    t[0].dtype = OMNIC_DTYPE_F32, t[0].ndim = 2, t[0].dims[0] = in->n, t[0].dims[1] = K;
    t[0].data = in->patches;
    snprintf(t[0].name, sizeof t[0].name, "patches");
    for (int k = 0; k < 5; k++) {
        omnic__tensor *u = &t[1 + k];
        u->dtype = OMNIC_DTYPE_I32, u->ndim = 1, u->dims[0] = in->n;
        for (int d = 1; d < OMNIC_MAX_DIMS; d++)
            u->dims[d] = 1;
        u->data = in->meta + k * in->n;
        snprintf(u->name, sizeof u->name, "%s", META[k]);
    }
    for (int d = 2; d < OMNIC_MAX_DIMS; d++)
        t[0].dims[d] = 1;
}

/* ---- assembly ----------------------------------------------------------------------------- */

int64_t omnic__p4v_rows(const omnic__p4v_config *c, int64_t vr, int64_t vc)
{
    const int64_t g = c->grid / 2, uh = (vr + 1) / 2, uw = (vc + 1) / 2;
    return uh * (uw + 1) + 1 + g * (g + 1);
}

void omnic__p4v_assemble(const omnic__p4v_config *c, int64_t tiles_w, int64_t vr, int64_t vc,
                         const float *projected, const float *separators, float *dst)
{
    const int64_t g = c->grid / 2, gg = g * g, D = c->text_hidden, uh = (vr + 1) / 2, uw = (vc + 1) / 2;
    const size_t row = (size_t)D * sizeof(float);
    const float *sub = separators, *glb = separators + D;
    for (int64_t y = 0; y < uh; y++) { /* the tile canvas [g rows, g tiles_w cols], cropped */
        for (int64_t x = 0; x < uw; x++) {
            const int64_t crop = 1 + (y / g) * tiles_w + x / g;
            memcpy(dst, projected + (crop * gg + (y % g) * g + x % g) * D, row), dst += D;
        }
        memcpy(dst, sub, row), dst += D;
    }
    memcpy(dst, glb, row), dst += D;
    for (int64_t y = 0; y < g; y++) { /* the global crop */
        memcpy(dst, projected + y * g * D, (size_t)g * row), dst += g * D;
        memcpy(dst, sub, row), dst += D;
    }
}
