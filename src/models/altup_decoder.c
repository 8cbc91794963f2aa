/* Gemma 3n decoder: weights and graph (altup_decoder.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "models/altup_decoder.h"
#include "models/weights.h"

#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)

static omnic_status bind(omnic__text_decoder *d, const omnic__safetensors *st, const char *name, int ndim,
                         int64_t d0, int64_t d1, omnic__tensor *out, omnic_err *err)
{
    int64_t dims[2] = {d0, d1};
    return omnic__weight_bind(st, name, ndim, dims, out, &d->copies, err);
}

/* Element i of a bound float weight. */
static double ld(const omnic__tensor *t, int64_t i)
{
    if (t->dtype == OMNIC_DTYPE_BF16) return omnic__bf16_to_f32(((const uint16_t *)t->data)[i]);
    if (t->dtype == OMNIC_DTYPE_F16) return omnic__f16_to_f32(((const uint16_t *)t->data)[i]);
    return ((const float *)t->data)[i];
}

/* One Gemma3nMultimodalEmbedder's hard rows of ids [0, n) into out [n, H] f32, in double:
 * post( W . (E[i] / rms(E[i]) * w_hard) ), post = RMSNorm without weight. */
static omnic_status hard_rows(omnic__text_decoder *d, const omnic__safetensors *st, const char *prefix,
                              int64_t n, float *out, omnic_err *err)
{
    char name[256];
    const omnic__text_config *c = &d->cfg;
    const omnic__st_tensor *e = omnic__st_find(st, NAME("%sembedding.weight", prefix));
    if (!e || e->ndim != 2)
        return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "checkpoint: %sembedding.weight [%lld, D] is missing",
                          prefix, (long long)n);
    const int64_t D = e->dims[1], H = c->hidden;
    omnic__tensor emb, norm, proj;
    OMNIC_TRY(bind(d, st, name, 2, n, D, &emb, err));
    OMNIC_TRY(bind(d, st, NAME("%shard_embedding_norm.weight", prefix), 1, D, 0, &norm, err));
    OMNIC_TRY(bind(d, st, NAME("%sembedding_projection.weight", prefix), 2, H, D, &proj, err));
    double *x = omnic_alloc_array((size_t)(D > H ? D : H), sizeof *x);
    if (!x) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a hard embedding row");
    for (int64_t i = 0; i < n; i++) {
        double ss = 0;
        for (int64_t k = 0; k < D; k++) {
            x[k] = ld(&emb, i * D + k);
            ss += x[k] * x[k];
        }
        double inv = 1.0 / sqrt(ss / (double)D + c->mm_rms_eps);
        for (int64_t k = 0; k < D; k++)
            x[k] = (double)(float)(x[k] * inv) * ld(&norm, k);
        float *o = out + i * H;
        double so = 0;
        for (int64_t h = 0; h < H; h++) {
            double acc = 0;
            for (int64_t k = 0; k < D; k++)
                acc += (double)(float)x[k] * ld(&proj, h * D + k);
            o[h] = (float)acc;
            so += acc * acc;
        }
        double inv2 = 1.0 / sqrt(so / (double)H + c->mm_rms_eps);
        for (int64_t h = 0; h < H; h++)
            o[h] = (float)(o[h] * inv2);
    }
    omnic_free(x);
    return OMNIC_OK;
}

omnic_status omnic__altup_load(omnic__text_decoder *d, const omnic__safetensors *st, const char *mm_prefix,
                               omnic_err *err)
{
    const omnic__text_config *c = &d->cfg;
    const int64_t H = c->hidden, L = c->n_layers, P = c->ple_dim, n = c->altup, r = c->laurel_rank;
    const char *pre = c->prefix;
    char name[256];
    omnic__altup *a = omnic_alloc_array(1, sizeof *a);
    if (!a) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for the AltUp weights");
    d->altup = a;
    a->layers = omnic_alloc_array((size_t)L, sizeof *a->layers);
    if (!a->layers)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld AltUp layers", (long long)L);
    OMNIC_TRY(bind(d, st, NAME("%sembed_tokens_per_layer.weight", pre), 2, c->ple_vocab, L * P, &a->ple_embed,
                   err));
    OMNIC_TRY(
        bind(d, st, NAME("%sper_layer_model_projection.weight", pre), 2, L * P, H, &a->ple_model_proj, err));
    OMNIC_TRY(bind(d, st, NAME("%sper_layer_projection_norm.weight", pre), 1, P, 0, &a->ple_proj_norm, err));
    for (int64_t i = 0; i + 1 < n; i++) {
        OMNIC_TRY(bind(d, st, NAME("%saltup_projections.%lld.weight", pre, (long long)i), 2, H, H,
                       &a->proj[i], err));
        OMNIC_TRY(bind(d, st, NAME("%saltup_unembed_projections.%lld.weight", pre, (long long)i), 2, H, H,
                       &a->unembed[i], err));
    }
    /* HF multiplies by the scale cast to the table dtype (Gemma3nTextScaledWordEmbedding) */
    a->ple_scale = sqrtf((float)P);
    if (a->ple_embed.dtype == OMNIC_DTYPE_BF16)
        a->ple_scale = omnic__bf16_to_f32(omnic__f32_to_bf16(a->ple_scale));
    if (a->ple_embed.dtype == OMNIC_DTYPE_F16)
        a->ple_scale = omnic__f16_to_f32(omnic__f32_to_f16(a->ple_scale));
    for (int64_t l = 0; l < L; l++) {
        omnic__altup_layer *y = &a->layers[l];
        char p[128];
        snprintf(p, sizeof p, "%slayers.%lld.", pre, (long long)l);
        struct {
            const char *suffix;
            int ndim;
            int64_t d0, d1;
            omnic__tensor *out;
        } ws[] = {
            {"altup.router_norm.weight", 1, H, 0, &y->router_norm},
            {"altup.modality_router.weight", 2, n, H, &y->router},
            {"altup.prediction_coefs.weight", 2, n * n, n, &y->pred_coefs},
            {"altup.correct_output_scale", 1, H, 0, &y->out_scale},
            {"laurel.linear_left.weight", 2, r, H, &y->laurel_left},
            {"laurel.linear_right.weight", 2, H, r, &y->laurel_right},
            {"laurel.post_laurel_norm.weight", 1, H, 0, &y->laurel_norm},
            {"per_layer_input_gate.weight", 2, P, H, &y->ple_gate},
            {"per_layer_projection.weight", 2, H, P, &y->ple_proj},
            {"post_per_layer_input_norm.weight", 1, H, 0, &y->ple_norm},
        };
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            OMNIC_TRY(
                bind(d, st, NAME("%s%s", p, ws[i].suffix), ws[i].ndim, ws[i].d0, ws[i].d1, ws[i].out, err));
        omnic__tensor cc;
        int64_t nn[2] = {n, n};
        OMNIC_TRY(bind(d, st, NAME("%saltup.correction_coefs.weight", p), 2, n, n, &cc, err));
        OMNIC_TRY(omnic__weight_f32(&cc, 0, 2, nn, name, &y->corr_coefs, err));
        float *w = y->corr_coefs->data; /* HF clamps them in place before every correct() */
        for (int64_t i = 0; c->altup_coef_clip > 0 && i < n * n; i++)
            w[i] = fminf(fmaxf(w[i], -c->altup_coef_clip), c->altup_coef_clip);
    }
    if (c->mm_vocab_offset > 0) {
        const int64_t rows = c->vocab - c->mm_vocab_offset, dims[2] = {rows, H};
        OMNIC_TRY(omnic__tensor_create(&a->hard, OMNIC_DTYPE_F32, 2, dims, err));
        snprintf(a->hard->name, sizeof a->hard->name, "hard_multimodal_embeddings");
        char vp[128], ap[128];
        snprintf(vp, sizeof vp, "%sembed_vision.", mm_prefix);
        snprintf(ap, sizeof ap, "%sembed_audio.", mm_prefix);
        const omnic__st_tensor *ve = omnic__st_find(st, NAME("%sembedding.weight", vp));
        const int64_t n_vision = ve && ve->ndim == 2 ? ve->dims[0] : 0;
        if (n_vision < 1 || n_vision >= rows)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "checkpoint: %s [%lld, D] must hold fewer than the %lld multimodal ids", name,
                              (long long)n_vision, (long long)rows);
        OMNIC_TRY(hard_rows(d, st, vp, n_vision, a->hard->data, err));
        OMNIC_TRY(hard_rows(d, st, ap, rows - n_vision, (float *)a->hard->data + n_vision * H, err));
    }
    return OMNIC_OK;
}

void omnic__altup_free(omnic__text_decoder *d)
{
    omnic__altup *a = d->altup;
    if (!a) return;
    for (int64_t l = 0; a->layers && l < d->cfg.n_layers; l++)
        omnic__tensor_destroy(a->layers[l].corr_coefs);
    omnic_free(a->layers);
    omnic__tensor_destroy(a->hard);
    omnic_free(a);
    d->altup = NULL;
}

void omnic__altup_param_stats(const omnic__text_decoder *d, int64_t *params, int64_t *bytes)
{
    const omnic__altup *a = d->altup;
    int64_t p = 0, b = 0;
#define COUNT(t)                                                                                             \
    do {                                                                                                     \
        p += omnic__tensor_nelem(t);                                                                         \
        b += (int64_t)omnic__tensor_bytes(t);                                                                \
    } while (0)
    COUNT(&a->ple_embed);
    COUNT(&a->ple_model_proj);
    COUNT(&a->ple_proj_norm);
    for (int64_t i = 0; i + 1 < d->cfg.altup; i++) {
        COUNT(&a->proj[i]);
        COUNT(&a->unembed[i]);
    }
    for (int64_t l = 0; l < d->cfg.n_layers; l++) {
        const omnic__altup_layer *y = &a->layers[l];
        const omnic__tensor *ws[] = {&y->router_norm, &y->router,      &y->pred_coefs,   y->corr_coefs,
                                     &y->out_scale,   &y->laurel_left, &y->laurel_right, &y->laurel_norm,
                                     &y->ple_gate,    &y->ple_proj,    &y->ple_norm};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            COUNT(ws[i]);
    }
#undef COUNT
    *params += p;
    *bytes += b;
}

/* ---- graph ---- */

static omnic__tensor *W(omnic__graph *g, const omnic__tensor *w)
{
    return omnic__g_weight(g, w);
}

static omnic__tensor *rms(omnic__graph *g, const omnic__text_decoder *d, omnic__tensor *x,
                          const omnic__tensor *w)
{
    return omnic__g_rmsnorm(g, x, w ? W(g, w) : NULL, (float)d->cfg.rms_eps, false);
}

/* tanh(router(router_norm(x) / H)) [T, n]: Gemma3nTextAltUp.compute_router_modalities */
static omnic__tensor *modalities(omnic__graph *g, const omnic__text_decoder *d, const omnic__altup_layer *y,
                                 omnic__tensor *x)
{
    omnic__tensor *r = omnic__g_scale(g, rms(g, d, x, &y->router_norm), 1.0f / (float)d->cfg.hidden, 0.0f);
    return omnic__g_softcap(g, omnic__g_matmul(g, r, W(g, &y->router), NULL), 1.0f);
}

/* Column j of c [T, k] as [T, 1] (one coefficient per row). */
static omnic__tensor *col(omnic__graph *g, omnic__tensor *c, int64_t j)
{
    return omnic__g_slice(g, c, 1, j, 1);
}

/* The attention block of layer l on the normed active stream an [T, H] -> o_proj output. */
static omnic__tensor *attention(const omnic__text_decoder *d, omnic__graph *g, int64_t l, omnic__tensor *an,
                                omnic__tensor *pos, omnic__tensor *kv[][2], omnic_dtype kv_dtype,
                                int64_t kv_rows)
{
    const omnic__text_config *c = &d->cfg;
    const omnic__text_decoder_layer *L = &d->layers[l];
    const int64_t T = g->capacity, hd = c->head_dim;
    const bool sliding = c->layer_sliding[l] != 0;
    omnic__tensor *table = W(g, sliding && d->rope_local ? d->rope_local : d->rope_global);
    const float theta = (float)(sliding && d->rope_local ? c->rope_local_theta : c->rope_theta);
    int64_t qs[3] = {T, c->n_heads, hd}, ks[3] = {T, c->n_kv_heads, hd};
    omnic__tensor *q = omnic__g_reshape(g, omnic__g_matmul(g, an, W(g, &L->wq), NULL), 3, qs);
    q = omnic__g_rope(g, rms(g, d, q, &L->q_norm), pos, (int)c->n_rot, 0, theta, table, 1.0f);
    omnic__tensor *kvi = omnic__g_kv_index(g), *kvb = omnic__g_kv_begin(g);
    const int src = c->kv_layer[l];
    if (l < c->n_kv_layers) { /* owns its cache: k, v of this layer into it */
        omnic__tensor *k = omnic__g_reshape(g, omnic__g_matmul(g, an, W(g, &L->wk), NULL), 3, ks);
        omnic__tensor *v = omnic__g_reshape(g, omnic__g_matmul(g, an, W(g, &L->wv), NULL), 3, ks);
        k = omnic__g_rope(g, rms(g, d, k, &L->k_norm), pos, (int)c->n_rot, 0, theta, table, 1.0f);
        if (c->v_norm) v = rms(g, d, v, NULL);
        omnic__tensor *kc = omnic__g_kv_layer(g, false, (int)l, kv_dtype, kv_rows, c->n_kv_heads, hd);
        omnic__tensor *vc = omnic__g_kv_layer(g, true, (int)l, kv_dtype, kv_rows, c->n_kv_heads, hd);
        kv[l][0] = omnic__g_set_rows(g, kc, k, kvi);
        kv[l][1] = omnic__g_set_rows(g, vc, v, kvi);
    }
    /* shared layers read the cache of kv_layer[l] as written above in this call */
    omnic__tensor *a = omnic__g_attention(g, q, kv[src][0], kv[src][1], kvi, NULL, kvb, c->attn_scale, true,
                                          sliding ? (int)c->sliding_window : 0, c->attn_softcap);
    int64_t flat[2] = {T, c->n_heads * hd};
    return omnic__g_matmul(g, omnic__g_reshape(g, a, 2, flat), W(g, &L->wo), NULL);
}

omnic__tensor *omnic__altup_build_layers(const omnic__text_decoder *d, omnic__graph *g, omnic__tensor *x,
                                         omnic__tensor *ple_ids, omnic__tensor *pos, omnic_dtype kv_dtype,
                                         int64_t kv_rows, bool taps)
{
    const omnic__text_config *c = &d->cfg;
    const omnic__altup *a = d->altup;
    const int64_t T = g->capacity, H = c->hidden, Lc = c->n_layers, P = c->ple_dim, n = c->altup;
    const int act = (int)c->altup_active;
    const float rsqrt2 = 1.0f / sqrtf(2.0f); /* torch.rsqrt(2.0) in f32 */
    /* PLE [T, L * P]: (norm(proj(x) / sqrt(H)) + table[id] * sqrt(P)) / sqrt(2) */
    omnic__tensor *praw =
        omnic__g_scale(g, omnic__g_get_rows(g, W(g, &a->ple_embed), ple_ids), a->ple_scale, 0);
    omnic__tensor *pp = omnic__g_scale(g, omnic__g_matmul(g, x, W(g, &a->ple_model_proj), NULL),
                                       1.0f / sqrtf((float)H), 0.0f);
    int64_t split[3] = {T, Lc, P}, flat[2] = {T, Lc * P};
    pp = omnic__g_reshape(g, rms(g, d, omnic__g_reshape(g, pp, 3, split), &a->ple_proj_norm), 2, flat);
    omnic__tensor *ple = omnic__g_scale(g, omnic__g_add(g, pp, praw), rsqrt2, 0.0f);
    if (taps && ple) omnic__g_mark_output(g, ple, "per_layer_inputs"); /* HF's [T, L, P] flattened */
    /* streams: x, then each projection of x rescaled to x's RMS */
    omnic__tensor *S[4] = {x};
    for (int64_t i = 1; i < n; i++)
        S[i] = omnic__g_rms_match(g, omnic__g_matmul(g, x, W(g, &a->proj[i - 1]), NULL), x, 1e-5f);
    omnic__tensor *kv[OMNIC_MAX_LAYERS][2] = {{NULL}};
    for (int64_t l = 0; l < Lc; l++) {
        const omnic__text_decoder_layer *L = &d->layers[l];
        const omnic__altup_layer *y = &a->layers[l];
        /* predict: pred_j = S_j + sum_i C[j * n + i] S_i, C = prediction_coefs(modalities(S_act)) */
        omnic__tensor *C = omnic__g_matmul(g, modalities(g, d, y, S[act]), W(g, &y->pred_coefs), NULL);
        omnic__tensor *pred[4];
        for (int64_t j = 0; j < n; j++) {
            pred[j] = S[j];
            for (int64_t i = 0; i < n; i++)
                pred[j] = omnic__g_add(g, pred[j], omnic__g_mul(g, S[i], col(g, C, j * n + i)));
        }
        omnic__tensor *pa = pred[act], *an = rms(g, d, pa, &L->attn_norm);
        omnic__tensor *lr = omnic__g_matmul(g, omnic__g_matmul(g, an, W(g, &y->laurel_left), NULL),
                                            W(g, &y->laurel_right), NULL);
        omnic__tensor *laurel = omnic__g_add(g, an, rms(g, d, lr, &y->laurel_norm));
        omnic__tensor *o = rms(g, d, attention(d, g, l, an, pos, kv, kv_dtype, kv_rows), &L->post_attn_norm);
        omnic__tensor *x1 = omnic__g_scale(g, omnic__g_add(g, omnic__g_add(g, pa, o), laurel), rsqrt2, 0.0f);
        omnic__tensor *h = rms(g, d, x1, &L->mlp_norm);
        omnic__tensor *gate = omnic__g_matmul(g, h, W(g, &L->w_gate), NULL);
        if (c->sparsity_z[l] != 0) gate = omnic__g_gauss_topk(g, gate, c->sparsity_z[l]);
        omnic__tensor *up = omnic__g_matmul(g, h, W(g, &L->w_up), NULL);
        omnic__tensor *down =
            omnic__g_matmul(g, omnic__g_glu(g, OMNIC_OP_GEGLU, gate, up, 1), W(g, &L->w_down), NULL);
        omnic__tensor *yv = omnic__g_add(g, x1, rms(g, d, down, &L->post_mlp_norm));
        /* correct: out_j = pred_j + (correction_coefs(modalities(y)) + 1)_j * (y - pred_act) */
        omnic__tensor *gc = omnic__g_scale(
            g, omnic__g_matmul(g, modalities(g, d, y, yv), W(g, y->corr_coefs), NULL), 1.0f, 1.0f);
        omnic__tensor *delta = omnic__g_add(g, yv, omnic__g_scale(g, pa, -1.0f, 0.0f));
        for (int64_t j = 0; j < n; j++)
            S[j] = omnic__g_add(g, pred[j], omnic__g_mul(g, delta, col(g, gc, j)));
        /* the layer's per-layer input, gated by the active stream, into streams 1.. (HF: [1:]) */
        omnic__tensor *f = S[act];
        if (c->altup_correct_scale) f = omnic__g_mul(g, f, W(g, &y->out_scale));
        f = omnic__g_matmul(g, f, W(g, &y->ple_gate), NULL);
        f = omnic__g_glu(g, OMNIC_OP_GEGLU, f, omnic__g_slice(g, ple, 1, l * P, P), 1);
        f = rms(g, d, omnic__g_matmul(g, f, W(g, &y->ple_proj), NULL), &y->ple_norm);
        for (int64_t j = 1; j < n; j++)
            S[j] = omnic__g_add(g, S[j], f);
        if (taps) {
            char name[32];
            snprintf(name, sizeof name, "hidden_l%lld", (long long)l);
            omnic__g_mark_output(g, S[0], name);
        }
    }
    /* merge: the mean of stream 0 and each unembedded stream rescaled to stream 0's RMS */
    omnic__tensor *sum = S[0];
    for (int64_t i = 1; i < n; i++)
        sum = omnic__g_add(
            g, sum,
            omnic__g_rms_match(g, omnic__g_matmul(g, S[i], W(g, &a->unembed[i - 1]), NULL), S[0], 1e-5f));
    return omnic__g_scale(g, sum, 1.0f / (float)n, 0.0f);
}
