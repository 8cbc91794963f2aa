/* Gemma 3n's audio encoder (models/gemma3n_audio.h): config, weights, the audio.encode graph and
 * its host inputs. */
#include <math.h>
#include <string.h>

#include "core/dtype.h"
#include "io/json.h"
#include "models/config_keys.h"
#include "models/gemma3n_audio.h"
#include "runtime/graph.h"

/* ---- config ------------------------------------------------------------------------------- */

/* A list key of n positive integers (pairs: n = 2, each a list of 2 when nested). */
static omnic_status int_list(const json_t *c, const char *key, int n, bool nested, const int64_t *dflt,
                             int64_t *out, const char *what, omnic_err *err)
{
    const json_t *v = json_object_get(c, key);
    if (!v || json_is_null(v)) {
        memcpy(out, dflt, sizeof(int64_t) * (size_t)(nested ? 2 * n : n));
        return OMNIC_OK;
    }
    if (!json_is_array(v) || (int)json_array_size(v) != n)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %s must be a list of %d %s", what, key, n,
                          nested ? "pairs" : "integers");
    for (int i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, (size_t)i);
        for (int j = 0; j < (nested ? 2 : 1); j++) {
            const json_t *x = nested ? json_array_get(e, (size_t)j) : e;
            if (nested && (!json_is_array(e) || json_array_size(e) != 2)) x = NULL;
            if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > 4096)
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %s[%d] must be %s in 1..4096", what, key, i,
                                  nested ? "a pair of integers" : "an integer");
            out[nested ? 2 * i + j : i] = json_integer_value(x);
        }
    }
    return OMNIC_OK;
}

omnic_status omnic__usm_config_parse(const json_t *ac, const char *what, int64_t text_hidden,
                                     omnic__usm_config *c, omnic_err *err)
{
    static const char *const keys[] = {"vocab_size",
                                       "vocab_offset",
                                       "input_feat_size",
                                       "hidden_size",
                                       "rms_norm_eps",
                                       "gradient_clipping",
                                       "conf_attention_chunk_size", /* the band HF computes in blocks of */
                                       "conf_attention_context_left",
                                       "conf_attention_context_right",
                                       "conf_attention_logit_cap",
                                       "conf_num_attention_heads",
                                       "conf_num_hidden_layers",
                                       "conf_conv_kernel_size",
                                       "conf_reduction_factor",
                                       "conf_residual_weight",
                                       "sscp_conv_channel_size",
                                       "sscp_conv_group_norm_eps",
                                       "sscp_conv_kernel_size",
                                       "sscp_conv_stride_size",
                                       NULL};
    const char *const *const lists[] = {omnic__config_keys_generic, keys, NULL};
    memset(c, 0, sizeof *c);
    OMNIC_TRY(omnic__config_check_generic(ac, what, err));
    OMNIC_TRY(omnic__json_check_keys(ac, what, lists, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "hidden_size", false, 1536, 1, 1 << 16, what, &c->hidden, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "input_feat_size", false, 128, 1, 4096, what, &c->input_size, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "conf_num_attention_heads", false, 8, 1, 1024, what, &c->n_heads, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "conf_num_hidden_layers", false, 12, 1, 256, what, &c->n_layers, err));
    int64_t chunk, left, right;
    OMNIC_TRY(omnic__json_get_i64(ac, "conf_attention_chunk_size", false, 12, 1, 1 << 16, what, &chunk, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "conf_attention_context_left", false, 13, 0, 512, what, &left, err));
    OMNIC_TRY(
        omnic__json_get_i64(ac, "conf_attention_context_right", false, 0, 0, 1 << 16, what, &right, err));
    if (right != 0)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: conf_attention_context_right %lld: omnic's audio attention is causal (0 only)",
                          what, (long long)right);
    c->context = left > 1 ? left : 1; /* max_past_horizon = max(0, left - 1) keys before the row */
    OMNIC_TRY(omnic__json_get_f64(ac, "conf_attention_logit_cap", false, 50.0, 1e-6, 1e30, what,
                                  &c->logit_cap, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "conf_conv_kernel_size", false, 5, 1, 256, what, &c->kernel_size, err));
    OMNIC_TRY(omnic__json_get_i64(ac, "conf_reduction_factor", false, 4, 1, 64, what, &c->reduction, err));
    OMNIC_TRY(omnic__json_get_f64(ac, "conf_residual_weight", false, 0.5, -1e6, 1e6, what,
                                  &c->residual_weight, err));
    OMNIC_TRY(omnic__json_get_f64(ac, "rms_norm_eps", false, 1e-6, 0, 1, what, &c->rms_eps, err));
    c->embed_eps = c->rms_eps;
    OMNIC_TRY(
        omnic__json_get_f64(ac, "sscp_conv_group_norm_eps", false, 1e-3, 1e-30, 1, what, &c->gn_eps, err));
    double clip;
    OMNIC_TRY(omnic__json_get_f64(ac, "gradient_clipping", false, 1e10, 0, 1e300, what, &clip, err));
    if (clip < 1e10)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: gradient_clipping %g: omnic does not clamp the conformer's activations, which "
                          "equals HF only for clamps >= 1e10",
                          what, clip);
    static const int64_t dch[2] = {128, 32}, dk[4] = {3, 3, 3, 3}, ds[4] = {2, 2, 2, 2};
    int64_t k[4], s[4];
    OMNIC_TRY(int_list(ac, "sscp_conv_channel_size", 2, false, dch, c->ch, what, err));
    OMNIC_TRY(int_list(ac, "sscp_conv_kernel_size", 2, true, dk, k, what, err));
    OMNIC_TRY(int_list(ac, "sscp_conv_stride_size", 2, true, ds, s, what, err));
    c->freq[0] = c->input_size;
    for (int i = 0; i < 2; i++) {
        c->kh[i] = k[2 * i], c->kw[i] = k[2 * i + 1], c->sh[i] = s[2 * i], c->sw[i] = s[2 * i + 1];
        const int64_t padded = c->freq[i] + 2; /* frequency padding (1, 1) */
        if (padded < c->kw[i])
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "%s: subsampling conv %d's kernel width %lld is wider than its %lld padded bins", what, i,
                (long long)c->kw[i], (long long)padded);
        c->freq[i + 1] = (padded - c->kw[i]) / c->sw[i] + 1;
    }
    if (c->hidden % c->n_heads)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: hidden_size %lld is not a multiple of %lld heads", what,
                          (long long)c->hidden, (long long)c->n_heads);
    if (c->hidden % 2)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: hidden_size %lld must be even (sin / cos timing)", what,
                          (long long)c->hidden);
    c->head_dim = c->hidden / c->n_heads;
    c->text_hidden = text_hidden;
    c->prefix = "model.audio_tower.";
    c->embed_prefix = "model.embed_audio.";
    (void)chunk;
    return OMNIC_OK;
}

int64_t omnic__usm_row_multiple(const omnic__usm_config *c)
{
    return c->sh[0] * c->sh[1] * c->reduction;
}

int64_t omnic__usm_sub_rows(const omnic__usm_config *c, int64_t T)
{
    const int64_t t1 = T < 1 ? 0 : (T - 1) / c->sh[0] + 1;
    return t1 < 1 ? 0 : (t1 - 1) / c->sh[1] + 1;
}

int64_t omnic__usm_rows(const omnic__usm_config *c, int64_t T)
{
    return (omnic__usm_sub_rows(c, T) + c->reduction - 1) / c->reduction;
}

int64_t omnic__usm_valid_rows(const omnic__usm_config *c, int64_t T, int64_t V)
{
    const int64_t rows = omnic__usm_rows(c, T), step = c->sh[0] * c->sh[1] * c->reduction;
    int64_t v = 0;
    for (int64_t j = 0; j < rows; j++) {
        const int64_t f = j * step < T - 1 ? j * step : T - 1;
        v += f < V;
    }
    return v;
}

int64_t omnic__usm_call_rows(const omnic__usm_config *c, int64_t T)
{
    const int64_t m = omnic__usm_row_multiple(c);
    return (T + m - 1) / m * m;
}

/* ---- weights ------------------------------------------------------------------------------ */

typedef struct loader {
    omnic__usm *e;
    const omnic__safetensors *st;
    char name[256];
    omnic_err *err;
} loader;

#define NAME(...) snprintf(l->name, sizeof l->name, __VA_ARGS__)

static omnic_status bind(loader *l, int ndim, const int64_t *dims, omnic__tensor *out)
{
    return omnic__weight_bind(l->st, l->name, ndim, dims, out, &l->e->copies, l->err);
}

static omnic_status bind_f32(loader *l, int ndim, const int64_t *dims, omnic__tensor **out)
{
    return omnic__weight_bind_f32(l->st, l->name, ndim, dims, out, &l->e->copies, l->err);
}

/* pos_proj(timing(d)) for d = 0..context-1 as HF's Gemma3nAudioRelativePositionEmbedding makes it in
 * f32 (omnic's activation dtype: a bf16 checkpoint computes as HF does with the weights upcast):
 * inv_timescales exp(i * -ln(1e4) / (H/2 - 1)) in f32, timing [sin(d inv), cos(d inv)] in f32, the
 * Linear summed in double -> owned f32 [context, heads, head_dim]. */
static omnic_status rel_terms(loader *l, const omnic__tensor *pos_proj, omnic__tensor **out)
{
    const omnic__usm_config *c = &l->e->cfg;
    const int64_t H = c->hidden, half = H / 2, L = c->context;
    const int64_t dims[3] = {L, c->n_heads, c->head_dim}, all[1] = {H * H};
    omnic__tensor *wf = NULL; /* the Linear widened once */
    OMNIC_TRY(omnic__weight_f32(pos_proj, 0, 1, all, pos_proj->name, &wf, l->err));
    float *timing = omnic_alloc_array((size_t)H, sizeof(float));
    omnic_status s = timing ? omnic__tensor_create(out, OMNIC_DTYPE_F32, 3, dims, l->err)
                            : OMNIC_FAIL(l->err, OMNIC_E_NOMEM, "out of memory for the audio relative terms");
    if (s == OMNIC_OK) {
        snprintf((*out)->name, sizeof(*out)->name, "%.50s[rel]", pos_proj->name);
        const float inc = (float)(-(log(1.0e4) / (double)(half > 1 ? half - 1 : 1)));
        const float *W = wf->data;
        float *R = (*out)->data;
        for (int64_t d = 0; d < L; d++) {
            for (int64_t i = 0; i < half; i++) {
                const float inv = expf((float)i * inc), st = (float)d * inv;
                timing[i] = sinf(st), timing[half + i] = cosf(st);
            }
            for (int64_t o = 0; o < H; o++) {
                double acc = 0;
                for (int64_t k = 0; k < H; k++)
                    acc += (double)W[o * H + k] * timing[k];
                R[d * H + o] = (float)acc;
            }
        }
    }
    omnic_free(timing);
    omnic__tensor_destroy(wf);
    return s;
}

/* head_dim^-1/2 * (1 / softplus(0)) * softplus(per_dim_scale), repeated for every head. */
static omnic_status q_scale(loader *l, omnic__tensor **out)
{
    const omnic__usm_config *c = &l->e->cfg;
    const int64_t D = c->head_dim, pd[1] = {D}, hd[1] = {c->hidden};
    omnic__tensor *pds = NULL;
    OMNIC_TRY(bind_f32(l, 1, pd, &pds));
    omnic_status s = omnic__tensor_create(out, OMNIC_DTYPE_F32, 1, hd, l->err);
    if (s == OMNIC_OK) {
        snprintf((*out)->name, sizeof(*out)->name, "%.50s[q]", pds->name);
        const float base = (float)pow((double)D, -0.5) * (1.0f / log1pf(expf(0.0f)));
        const float *p = pds->data;
        float *q = (*out)->data;
        for (int64_t h = 0; h < c->n_heads; h++)
            for (int64_t d = 0; d < D; d++) { /* torch softplus: x past 20 is itself */
                const float sp = p[d] > 20.0f ? p[d] : log1pf(expf(p[d]));
                q[h * D + d] = base * sp;
            }
    }
    omnic__tensor_destroy(pds);
    return s;
}

static omnic_status load_block(loader *l, int64_t i, omnic__usm_block *B)
{
    const omnic__usm_config *c = &l->e->cfg;
    const int64_t H = c->hidden, I = 4 * H, k = c->kernel_size;
    const int64_t v[1] = {H}, hh[2] = {H, H}, w1[2] = {I, H}, w2[2] = {H, I}, st[2] = {2 * H, H},
                  dw[3] = {H, 1, k};
    char p[160];
    snprintf(p, sizeof p, "%sconformer.%lld.", c->prefix, (long long)i);
    static const char *const ffn[2] = {"ffw_layer_start", "ffw_layer_end"};
    for (int f = 0; f < 2; f++) {
        OMNIC_TRY((NAME("%s%s.pre_layer_norm.weight", p, ffn[f]), bind(l, 1, v, &B->ff_pre[f])));
        OMNIC_TRY((NAME("%s%s.ffw_layer_1.weight", p, ffn[f]), bind(l, 2, w1, &B->ff_w1[f])));
        OMNIC_TRY((NAME("%s%s.ffw_layer_2.weight", p, ffn[f]), bind(l, 2, w2, &B->ff_w2[f])));
        OMNIC_TRY((NAME("%s%s.post_layer_norm.weight", p, ffn[f]), bind(l, 1, v, &B->ff_post[f])));
    }
    OMNIC_TRY((NAME("%sattention.pre_attn_norm.weight", p), bind(l, 1, v, &B->att_pre)));
    OMNIC_TRY((NAME("%sattention.attn.q_proj.weight", p), bind(l, 2, hh, &B->wq)));
    OMNIC_TRY((NAME("%sattention.attn.k_proj.weight", p), bind(l, 2, hh, &B->wk)));
    OMNIC_TRY((NAME("%sattention.attn.v_proj.weight", p), bind(l, 2, hh, &B->wv)));
    OMNIC_TRY((NAME("%sattention.attn.per_dim_scale", p), q_scale(l, &B->qscale)));
    omnic__tensor pp;
    OMNIC_TRY((NAME("%sattention.attn.relative_position_embedding.pos_proj.weight", p), bind(l, 2, hh, &pp)));
    OMNIC_TRY(rel_terms(l, &pp, &B->rel));
    OMNIC_TRY((NAME("%sattention.post.weight", p), bind(l, 2, hh, &B->post)));
    OMNIC_TRY((NAME("%sattention.post_norm.weight", p), bind(l, 1, v, &B->post_norm)));
    OMNIC_TRY((NAME("%slconv1d.pre_layer_norm.weight", p), bind(l, 1, v, &B->lc_pre)));
    OMNIC_TRY((NAME("%slconv1d.linear_start.weight", p), bind(l, 2, st, &B->lc_start)));
    OMNIC_TRY((NAME("%slconv1d.depthwise_conv1d.weight", p), bind(l, 3, dw, &B->lc_dw)));
    OMNIC_TRY((NAME("%slconv1d.conv_norm.weight", p), bind(l, 1, v, &B->lc_norm)));
    OMNIC_TRY((NAME("%slconv1d.linear_end.weight", p), bind(l, 2, hh, &B->lc_end)));
    return (NAME("%snorm.weight", p), bind(l, 1, v, &B->norm));
}

/* conv_1.conv.weight [C1, C0, kh, kw] -> owned f32 [C1, kh * kw * C0] (element (i * kw + j) * C0 + c). */
static omnic_status conv_taps_major(loader *l, const omnic__tensor *w, omnic__tensor **out)
{
    const int64_t O = w->dims[0], C = w->dims[1], kh = w->dims[2], kw = w->dims[3], K = kh * kw * C;
    const int64_t all[1] = {O * K}, dims[2] = {O, K};
    omnic__tensor *f = NULL;
    OMNIC_TRY(omnic__weight_f32(w, 0, 1, all, w->name, &f, l->err));
    omnic_status s = omnic__tensor_create(out, OMNIC_DTYPE_F32, 2, dims, l->err);
    if (s == OMNIC_OK) {
        snprintf((*out)->name, sizeof(*out)->name, "%.50s[taps]", w->name);
        const float *src = f->data;
        float *dst = (*out)->data;
        for (int64_t o = 0; o < O; o++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t t = 0; t < kh * kw; t++)
                    dst[o * K + t * C + c] = src[(o * C + c) * kh * kw + t];
    }
    omnic__tensor_destroy(f);
    return s;
}

static omnic_status load(loader *l)
{
    omnic__usm *e = l->e;
    const omnic__usm_config *c = &e->cfg;
    const char *P = c->prefix;
    const int64_t H = c->hidden, C0 = c->ch[0], C1 = c->ch[1];
    const int64_t c0[4] = {C0, 1, c->kh[0], c->kw[0]}, c1[4] = {C1, C0, c->kh[1], c->kw[1]}, n0[1] = {C0},
                  n1[1] = {C1}, ip[2] = {H, c->freq[2] * C1};
    OMNIC_TRY((NAME("%ssubsample_conv_projection.conv_0.conv.weight", P), bind(l, 4, c0, &e->conv0)));
    OMNIC_TRY((NAME("%ssubsample_conv_projection.conv_0.norm.weight", P), bind_f32(l, 1, n0, &e->gn[0])));
    omnic__tensor w1;
    OMNIC_TRY((NAME("%ssubsample_conv_projection.conv_1.conv.weight", P), bind(l, 4, c1, &w1)));
    OMNIC_TRY(conv_taps_major(l, &w1, &e->conv1));
    OMNIC_TRY((NAME("%ssubsample_conv_projection.conv_1.norm.weight", P), bind_f32(l, 1, n1, &e->gn[1])));
    OMNIC_TRY((NAME("%ssubsample_conv_projection.input_proj_linear.weight", P), bind(l, 2, ip, &e->in_proj)));
    e->blocks = omnic_alloc_array((size_t)c->n_layers, sizeof *e->blocks);
    if (!e->blocks)
        return OMNIC_FAIL(l->err, OMNIC_E_NOMEM, "out of memory for %lld conformer blocks",
                          (long long)c->n_layers);
    memset(e->blocks, 0, (size_t)c->n_layers * sizeof *e->blocks);
    for (int64_t i = 0; i < c->n_layers; i++)
        OMNIC_TRY(load_block(l, i, &e->blocks[i]));
    const int64_t v[1] = {H}, pj[2] = {c->text_hidden, H};
    OMNIC_TRY((NAME("%ssoft_embedding_norm.weight", c->embed_prefix), bind(l, 1, v, &e->soft_norm)));
    return (NAME("%sembedding_projection.weight", c->embed_prefix), bind(l, 2, pj, &e->proj));
}

void omnic__usm_deinit(omnic__usm *e)
{
    if (!e) return;
    omnic__tensor_destroy(e->conv1);
    omnic__tensor_destroy(e->gn[0]);
    omnic__tensor_destroy(e->gn[1]);
    if (e->blocks)
        for (int64_t i = 0; i < e->cfg.n_layers; i++) {
            omnic__tensor_destroy(e->blocks[i].qscale);
            omnic__tensor_destroy(e->blocks[i].rel);
        }
    omnic_free(e->blocks);
    omnic__weight_copies_free(&e->copies);
    memset(e, 0, sizeof *e);
}

omnic_status omnic__usm_load(omnic__usm *e, const omnic__usm_config *cfg, const omnic__safetensors *st,
                             omnic_err *err)
{
    memset(e, 0, sizeof *e);
    e->cfg = *cfg;
    loader l = {.e = e, .st = st, .err = err};
    omnic_status rc = load(&l);
    if (rc != OMNIC_OK) omnic__usm_deinit(e);
    return rc;
}

#undef NAME

/* ---- graph -------------------------------------------------------------------------------- */

#define W(t) omnic__g_weight(g, (t))

static omnic__tensor *rms(omnic__graph *g, omnic__tensor *x, const omnic__tensor *w, double eps)
{
    return omnic__g_rmsnorm(g, x, w ? W(w) : NULL, (float)eps, false);
}

/* Column col of an input grouped r rows per row: [n / r, len], the values at rows 0, r, 2r, ... */
static omnic__tensor *every_rth(omnic__graph *g, omnic__tensor *in, int64_t r, int64_t col, int64_t len)
{
    return omnic__g_slice(g, r > 1 ? omnic__g_group_rows(g, in, r) : in, 1, col, len);
}

/* x + w_res * post_ln(W2 silu(W1 pre_ln(x))) */
static omnic__tensor *ffw(omnic__graph *g, const omnic__usm_config *c, const omnic__usm_block *B, int f,
                          omnic__tensor *x)
{
    omnic__tensor *t = rms(g, x, &B->ff_pre[f], c->rms_eps);
    t = omnic__g_unary(g, OMNIC_OP_SILU, omnic__g_matmul(g, t, W(&B->ff_w1[f]), NULL));
    t = rms(g, omnic__g_matmul(g, t, W(&B->ff_w2[f]), NULL), &B->ff_post[f], c->rms_eps);
    return omnic__g_add(g, x, omnic__g_scale(g, t, (float)c->residual_weight, 0.0f));
}

omnic_status omnic__usm_build(const omnic__usm *e, omnic__module *m, omnic_err *err)
{
    const omnic__usm_config *c = &e->cfg;
    omnic__graph *g = &m->graph;
    const int64_t cap = g->capacity, mult = omnic__usm_row_multiple(c), S = c->sh[0] * c->sh[1],
                  H = c->hidden, nh = c->n_heads, hd = c->head_dim;
    if (cap % mult)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "audio.encode capacity %lld is not a multiple of %lld",
                          (long long)cap, (long long)mult);
    const int64_t xd[2] = {cap, c->input_size}, md[2] = {cap, 2}, kd[2] = {cap, 1};
    omnic__tensor *x = omnic__g_input(g, "features", OMNIC_DTYPE_F32, 2, xd, OMNIC_VAR_T);
    omnic__tensor *mask = omnic__g_input(g, "row_mask", OMNIC_DTYPE_F32, 2, md, OMNIC_VAR_T);
    omnic__tensor *keys = omnic__g_input(g, "key_valid", OMNIC_DTYPE_I32, 2, kd, OMNIC_VAR_T);
    const int64_t R = cap / S, d1[1] = {R};
    omnic__tensor *valid = omnic__g_reshape(g, every_rth(g, keys, S, 0, 1), 1, d1);
    omnic__tensor *vmask = every_rth(g, mask, S, 1, 1);
    /* subsampling: conv 0 (one input channel), cumulative group norm, ReLU, rows past T1 zeroed */
    const omnic__dwconv2d_geom g0 = {
        (int)c->kh[0],  (int)c->kw[0], (int)c->sh[0], (int)c->sw[0], 0, 1, (int)c->freq[0], 1,
        (int)c->freq[1]};
    omnic__tensor *h = omnic__g_dwconv2d(g, omnic__g_group_rows(g, x, c->sh[0]), W(&e->conv0), NULL, &g0);
    h = omnic__g_unary(g, OMNIC_OP_RELU, omnic__g_cum_groupnorm(g, h, W(e->gn[0]), (float)c->gn_eps));
    h = omnic__g_mul(g, h, every_rth(g, mask, c->sh[0], 0, 1));
    const omnic__dwconv2d_geom g1 = {(int)c->kh[1],   (int)c->kw[1], (int)c->sh[1],  (int)c->sw[1], 0, 1,
                                     (int)c->freq[1], (int)c->ch[0], (int)c->freq[2]};
    h = omnic__g_conv2d(g, omnic__g_group_rows(g, h, c->sh[1]), W(e->conv1), NULL, &g1);
    h = omnic__g_unary(g, OMNIC_OP_RELU, omnic__g_cum_groupnorm(g, h, W(e->gn[1]), (float)c->gn_eps));
    x = omnic__g_matmul(g, h, W(&e->in_proj), NULL);
    if (x) omnic__g_mark_output(g, x, "sscp");
    const int kk = (int)c->kernel_size;
    const omnic__dwconv2d_geom cg = {kk, 1, 1, 1, kk - 1, 0, 1, (int)H, 1};
    for (int64_t i = 0; i < c->n_layers && x; i++) {
        const omnic__usm_block *B = &e->blocks[i];
        x = ffw(g, c, B, 0, x);
        omnic__tensor *t = rms(g, x, &B->att_pre, c->rms_eps);
        const int64_t d3[3] = {R, nh, hd}, d2[2] = {R, H};
        omnic__tensor *q = omnic__g_mul(g, omnic__g_matmul(g, t, W(&B->wq), NULL), W(B->qscale));
        q = omnic__g_reshape(g, q, 3, d3);
        omnic__tensor *k = omnic__g_reshape(g, omnic__g_matmul(g, t, W(&B->wk), NULL), 3, d3);
        omnic__tensor *v = omnic__g_reshape(g, omnic__g_matmul(g, t, W(&B->wv), NULL), 3, d3);
        omnic__tensor *o = omnic__g_attn_local(g, q, k, v, W(B->rel), valid, (float)c->logit_cap);
        o = omnic__g_matmul(g, omnic__g_reshape(g, o, 2, d2), W(&B->post), NULL);
        x = omnic__g_add(g, x, rms(g, o, &B->post_norm, c->rms_eps));
        /* light conv over the valid rows: GLU, causal depthwise conv, norm, silu, linear */
        x = omnic__g_mul(g, x, vmask);
        t = omnic__g_matmul(g, rms(g, x, &B->lc_pre, c->rms_eps), W(&B->lc_start), NULL);
        t = omnic__g_mul(g, omnic__g_slice(g, t, 1, 0, H),
                         omnic__g_unary(g, OMNIC_OP_SIGMOID, omnic__g_slice(g, t, 1, H, H)));
        t = omnic__g_dwconv2d(g, t, W(&B->lc_dw), NULL, &cg);
        t = omnic__g_unary(g, OMNIC_OP_SILU, rms(g, t, &B->lc_norm, c->rms_eps));
        x = omnic__g_add(g, omnic__g_matmul(g, t, W(&B->lc_end), NULL), x);
        x = ffw(g, c, B, 1, x);
        x = rms(g, x, &B->norm, c->rms_eps);
        if (i == 0 && x) omnic__g_mark_output(g, x, "block0");
    }
    x = every_rth(g, x, c->reduction, 0, H);
    if (x) omnic__g_mark_output(g, x, "encoded");
    omnic__tensor *y = omnic__g_matmul(g, rms(g, x, &e->soft_norm, c->embed_eps), W(&e->proj), NULL);
    y = rms(g, y, NULL, c->embed_eps);
    if (y) omnic__g_mark_output(g, y, "projected");
    return omnic__graph_status(g, err);
}

#undef W

/* ---- host inputs -------------------------------------------------------------------------- */

void omnic__usm_inputs_free(omnic__usm_inputs *in)
{
    if (!in) return;
    omnic_free(in->features);
    omnic_free(in->row_mask);
    omnic_free(in->key_valid);
    memset(in, 0, sizeof *in);
}

omnic_status omnic__usm_inputs_make(const omnic__usm *e, const float *features, int64_t T, int64_t V,
                                    omnic__usm_inputs *in, omnic_err *err)
{
    const omnic__usm_config *c = &e->cfg;
    const int64_t In = c->input_size, S = c->sh[0] * c->sh[1];
    memset(in, 0, sizeof *in);
    if (T < 1 || V < 0 || V > T)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "audio of %lld feature frames (%lld valid)", (long long)T,
                          (long long)V);
    const int64_t n = omnic__usm_call_rows(c, T), T1 = (T - 1) / c->sh[0] + 1, T2 = omnic__usm_sub_rows(c, T);
    in->n = n;
    in->features = omnic_alloc_array((size_t)(n * In), sizeof(float));
    in->row_mask = omnic_alloc_array((size_t)(n * 2), sizeof(float));
    in->key_valid = omnic_alloc_array((size_t)n, sizeof(int32_t));
    if (!in->features || !in->row_mask || !in->key_valid) {
        omnic__usm_inputs_free(in);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld audio frames", (long long)n);
    }
    memcpy(in->features, features, (size_t)(T * In) * sizeof(float));
    memset(in->features + T * In, 0, (size_t)((n - T) * In) * sizeof(float));
    memset(in->row_mask, 0, (size_t)(n * 2) * sizeof(float));
    memset(in->key_valid, 0, (size_t)n * sizeof(int32_t));
    for (int64_t q = 0; q < n / c->sh[0]; q++)
        in->row_mask[q * c->sh[0] * 2] = q < T1 ? 1.0f : 0.0f;
    for (int64_t s = 0; s < n / S; s++) { /* HF's mask gather: frame min(s * S, T - 1) */
        const int64_t f = s * S < T - 1 ? s * S : T - 1;
        const bool ok = s < T2 && f < V;
        in->row_mask[s * S * 2 + 1] = ok ? 1.0f : 0.0f;
        in->key_valid[s * S] = ok;
    }
    return OMNIC_OK;
}

omnic_status omnic__usm_inputs_bind(const omnic__usm *e, const omnic__usm_inputs *in, omnic__tensor t[3],
                                    omnic_err *err)
{
    const int64_t xd[2] = {in->n, e->cfg.input_size}, md[2] = {in->n, 2}, kd[2] = {in->n, 1};
    OMNIC_TRY(omnic__tensor_init(&t[0], OMNIC_DTYPE_F32, 2, xd, err));
    OMNIC_TRY(omnic__tensor_init(&t[1], OMNIC_DTYPE_F32, 2, md, err));
    OMNIC_TRY(omnic__tensor_init(&t[2], OMNIC_DTYPE_I32, 2, kd, err));
    t[0].data = in->features;
    t[1].data = in->row_mask;
    t[2].data = in->key_valid;
    return OMNIC_OK;
}
