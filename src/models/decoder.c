/* Llama-style text decoder: config parsing, weight binding, module graphs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "io/json.h"
#include "models/decoder.h"

#define TRYJ(expr) OMNIC_TRY(expr)

omnic_status omnic__text_config_parse(const json_t *cfg, const char *what, omnic__text_config *c, omnic_err *err)
{
    memset(c, 0, sizeof *c);
    const int64_t big = (int64_t)1 << 31;
    TRYJ(omnic__json_get_i64(cfg, "vocab_size", true, 0, 1, big, what, &c->vocab, err));
    TRYJ(omnic__json_get_i64(cfg, "hidden_size", true, 0, 1, 1 << 20, what, &c->hidden, err));
    TRYJ(omnic__json_get_i64(cfg, "num_hidden_layers", true, 0, 1, 4096, what, &c->n_layers, err));
    TRYJ(omnic__json_get_i64(cfg, "num_attention_heads", true, 0, 1, 4096, what, &c->n_heads, err));
    TRYJ(omnic__json_get_i64(cfg, "num_key_value_heads", false, c->n_heads, 1, 4096, what, &c->n_kv_heads, err));
    TRYJ(omnic__json_get_i64(cfg, "intermediate_size", true, 0, 1, 1 << 22, what, &c->intermediate, err));
    TRYJ(omnic__json_get_i64(cfg, "max_position_embeddings", false, 4096, 1, big - 1, what, &c->max_pos, err));
    if (c->hidden % c->n_heads)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: hidden_size %lld is not a multiple of num_attention_heads %lld",
                          what, (long long)c->hidden, (long long)c->n_heads);
    TRYJ(omnic__json_get_i64(cfg, "head_dim", false, c->hidden / c->n_heads, 2, 4096, what, &c->head_dim, err));
    if (c->head_dim % 2)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: head_dim %lld is odd (RoPE rotates pairs)", what,
                          (long long)c->head_dim);
    if (c->n_heads % c->n_kv_heads)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld", what,
                          (long long)c->n_heads, (long long)c->n_kv_heads);
    TRYJ(omnic__json_get_f64(cfg, "rms_norm_eps", false, 1e-6, 0, 1, what, &c->rms_eps, err));
    TRYJ(omnic__json_get_f64(cfg, "rope_theta", false, 10000.0, 1e-3, 1e12, what, &c->rope_theta, err));
    TRYJ(omnic__json_get_bool(cfg, "tie_word_embeddings", false, false, what, &c->tie_embeddings, err));
    const char *act;
    TRYJ(omnic__json_get_str(cfg, "hidden_act", false, "silu", what, &act, err));
    if (strcmp(act, "silu") != 0)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: hidden_act '%s' is not supported (silu only)", what, act);
    const json_t *rs;
    TRYJ(omnic__json_get_obj(cfg, "rope_scaling", false, what, &rs, err));
    if (rs) {
        const char *type;
        if (omnic__json_get_str(rs, "rope_type", false, NULL, what, &type, NULL) != OMNIC_OK || !type)
            TRYJ(omnic__json_get_str(rs, "type", true, NULL, "config.json rope_scaling", &type, err));
        if (!strcmp(type, "llama3")) {
            const char *w = "config.json rope_scaling";
            c->rope_type = OMNIC_ROPE_LLAMA3;
            TRYJ(omnic__json_get_f64(rs, "factor", true, 0, 1e-6, 1e6, w, &c->rope_factor, err));
            TRYJ(omnic__json_get_f64(rs, "low_freq_factor", true, 0, 1e-6, 1e6, w, &c->rope_low_freq_factor, err));
            TRYJ(omnic__json_get_f64(rs, "high_freq_factor", true, 0, 1e-6, 1e6, w, &c->rope_high_freq_factor, err));
            TRYJ(omnic__json_get_i64(rs, "original_max_position_embeddings", true, 0, 1, big, w,
                                     &c->rope_original_max_pos, err));
            if (!(c->rope_high_freq_factor > c->rope_low_freq_factor))
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: high_freq_factor %g must exceed low_freq_factor %g", w,
                                  c->rope_high_freq_factor, c->rope_low_freq_factor);
        } else if (strcmp(type, "default") != 0) {
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: rope_scaling type '%s' is not supported", what, type);
        }
    }
    return OMNIC_OK;
}

/* ---- weights ---- */

/* safetensors does not promise aligned tensor data; kernels read elements through typed
 * pointers, so a misaligned weight is copied once into owned, aligned memory. */
static omnic_status align_weight(omnic__decoder *d, omnic__tensor *w, omnic_err *err)
{
    if ((uintptr_t)w->data % omnic_dtype_size(w->dtype) == 0) return OMNIC_OK;
    omnic__tensor **grown = omnic_realloc(d->copies, (d->n_copies + 1) * sizeof *grown);
    if (!grown) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory copying weight %s", w->name);
    d->copies = grown;
    omnic__tensor *c;
    OMNIC_TRY(omnic__tensor_create(&c, w->dtype, w->ndim, w->dims, err));
    memcpy(c->data, w->data, omnic__tensor_bytes(w));
    memcpy(c->name, w->name, sizeof c->name);
    d->copies[d->n_copies++] = c;
    w->data = c->data;
    return OMNIC_OK;
}

static omnic_status bind(omnic__decoder *d, const omnic__safetensors *st, const char *name, int ndim,
                         const int64_t *dims, omnic__tensor *out, omnic_err *err)
{
    const omnic__st_tensor *t = omnic__st_find(st, name);
    if (!t) return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "weights: tensor '%s' is missing", name);
    bool ok = t->ndim == ndim && (t->dtype == OMNIC_DTYPE_F32 || t->dtype == OMNIC_DTYPE_F16 || t->dtype == OMNIC_DTYPE_BF16);
    for (int i = 0; ok && i < ndim; i++) ok = t->dims[i] == dims[i];
    if (!ok) {
        char want[128], got[128];
        omnic__dims_str(want, sizeof want, ndim, dims);
        omnic__dims_str(got, sizeof got, t->ndim, t->dims);
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "weights: tensor '%s' is %s %s, expected a float %s", name,
                          omnic_dtype_name(t->dtype), got, want);
    }
    omnic__st_tensor_view(t, out);
    snprintf(out->name, sizeof out->name, "%.63s", name);
    return align_weight(d, out, err);
}

/* An owned f32 copy of a float vector weight (biases are f32 by the matmul contract). */
static omnic_status bind_f32(omnic__decoder *d, const omnic__safetensors *st, const char *name, int64_t n, omnic__tensor **out,
                             omnic_err *err)
{
    omnic__tensor view;
    OMNIC_TRY(bind(d, st, name, 1, &n, &view, err));
    OMNIC_TRY(omnic__tensor_create(out, OMNIC_DTYPE_F32, 1, &n, err));
    float *dst = (*out)->data;
    for (int64_t i = 0; i < n; i++) {
        if (view.dtype == OMNIC_DTYPE_F32) dst[i] = ((const float *)view.data)[i];
        else if (view.dtype == OMNIC_DTYPE_F16) dst[i] = omnic__f16_to_f32(((const uint16_t *)view.data)[i]);
        else dst[i] = omnic__bf16_to_f32(((const uint16_t *)view.data)[i]);
    }
    snprintf((*out)->name, sizeof (*out)->name, "%.63s", name);
    return OMNIC_OK;
}

/* RoPE inverse frequencies [head_dim/2] in f32, as HF computes them (float32 tensor ops). */
static omnic_status rope_table(const omnic__text_config *c, omnic__tensor **out, omnic_err *err)
{
    int64_t half = c->head_dim / 2;
    OMNIC_TRY(omnic__tensor_create(out, OMNIC_DTYPE_F32, 1, &half, err));
    snprintf((*out)->name, sizeof (*out)->name, "rope_inv_freq");
    float *f = (*out)->data;
    const float base = (float)c->rope_theta;
    for (int64_t i = 0; i < half; i++) f[i] = 1.0f / powf(base, (float)(2 * i) / (float)c->head_dim);
    if (c->rope_type == OMNIC_ROPE_LLAMA3) {
        const float factor = (float)c->rope_factor, lo = (float)c->rope_low_freq_factor,
                    hi = (float)c->rope_high_freq_factor, old = (float)c->rope_original_max_pos;
        const float lo_wavelen = old / lo, hi_wavelen = old / hi;
        for (int64_t i = 0; i < half; i++) {
            float wavelen = 2.0f * (float)M_PI / f[i];
            float scaled = wavelen > lo_wavelen ? f[i] / factor : f[i];
            if (!(wavelen < hi_wavelen) && !(wavelen > lo_wavelen)) {
                float smooth = (old / wavelen - lo) / (hi - lo);
                scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
            }
            f[i] = scaled;
        }
    }
    return OMNIC_OK;
}

omnic_status omnic__decoder_load(omnic__decoder *d, const omnic__text_config *c, const omnic__safetensors *st,
                                 omnic_err *err)
{
    memset(d, 0, sizeof *d);
    d->cfg = *c;
    const int64_t H = c->hidden, hd = c->head_dim, qd = c->n_heads * hd, kvd = c->n_kv_heads * hd;
    char name[160];
    omnic_status s;
    int64_t emb[2] = {c->vocab, H};
    if ((s = bind(d, st, "model.embed_tokens.weight", 2, emb, &d->embed, err)) != OMNIC_OK) goto fail;
    if ((s = bind(d, st, "model.norm.weight", 1, &H, &d->norm, err)) != OMNIC_OK) goto fail;
    if (c->tie_embeddings) {
        d->lm_head = d->embed;
    } else if ((s = bind(d, st, "lm_head.weight", 2, emb, &d->lm_head, err)) != OMNIC_OK) {
        goto fail;
    }
    d->layers = omnic_alloc_array((size_t)c->n_layers, sizeof *d->layers);
    if (!d->layers) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld layers", (long long)c->n_layers);
        goto fail;
    }
    for (int64_t l = 0; l < c->n_layers; l++) {
        omnic__decoder_layer *L = &d->layers[l];
        struct { const char *suffix; int ndim; int64_t dims[2]; omnic__tensor *out; } w[] = {
            {"input_layernorm.weight", 1, {H, 0}, &L->attn_norm},
            {"self_attn.q_proj.weight", 2, {qd, H}, &L->wq},
            {"self_attn.k_proj.weight", 2, {kvd, H}, &L->wk},
            {"self_attn.v_proj.weight", 2, {kvd, H}, &L->wv},
            {"self_attn.o_proj.weight", 2, {H, qd}, &L->wo},
            {"post_attention_layernorm.weight", 1, {H, 0}, &L->mlp_norm},
            {"mlp.gate_proj.weight", 2, {c->intermediate, H}, &L->w_gate},
            {"mlp.up_proj.weight", 2, {c->intermediate, H}, &L->w_up},
            {"mlp.down_proj.weight", 2, {H, c->intermediate}, &L->w_down},
        };
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
            snprintf(name, sizeof name, "model.layers.%lld.%s", (long long)l, w[i].suffix);
            if ((s = bind(d, st, name, w[i].ndim, w[i].dims, w[i].out, err)) != OMNIC_OK) goto fail;
        }
        if (c->qkv_bias) {
            struct { const char *p; int64_t n; omnic__tensor **out; } b[] = {
                {"q", qd, &L->bq}, {"k", kvd, &L->bk}, {"v", kvd, &L->bv}};
            for (size_t i = 0; i < 3; i++) {
                snprintf(name, sizeof name, "model.layers.%lld.self_attn.%s_proj.bias", (long long)l, b[i].p);
                if ((s = bind_f32(d, st, name, b[i].n, b[i].out, err)) != OMNIC_OK) goto fail;
            }
        }
    }
    if ((s = rope_table(c, &d->inv_freq, err)) != OMNIC_OK) goto fail;
    return OMNIC_OK;
fail:
    omnic__decoder_deinit(d);
    return s;
}

void omnic__decoder_deinit(omnic__decoder *d)
{
    for (int64_t l = 0; d->layers && l < d->cfg.n_layers; l++) {
        omnic__tensor_destroy(d->layers[l].bq);
        omnic__tensor_destroy(d->layers[l].bk);
        omnic__tensor_destroy(d->layers[l].bv);
    }
    omnic_free(d->layers);
    omnic__tensor_destroy(d->inv_freq);
    for (size_t i = 0; i < d->n_copies; i++) omnic__tensor_destroy(d->copies[i]);
    omnic_free(d->copies);
    memset(d, 0, sizeof *d);
}

void omnic__decoder_param_stats(const omnic__decoder *d, int64_t *params, int64_t *bytes)
{
    int64_t p = 0, b = 0;
#define COUNT(t)                                                                                            \
    do {                                                                                                    \
        p += omnic__tensor_nelem(t);                                                                        \
        b += (int64_t)omnic__tensor_bytes(t);                                                               \
    } while (0)
    COUNT(&d->embed);
    COUNT(&d->norm);
    if (!d->cfg.tie_embeddings) COUNT(&d->lm_head);
    for (int64_t l = 0; l < d->cfg.n_layers; l++) {
        const omnic__decoder_layer *L = &d->layers[l];
        const omnic__tensor *ws[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo,
                                     &L->mlp_norm, &L->w_gate, &L->w_up, &L->w_down, L->bq, L->bk, L->bv};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            if (ws[i]) COUNT(ws[i]);
    }
#undef COUNT
    *params = p;
    *bytes = b;
}

/* ---- graphs ---- */

omnic_status omnic__decoder_build_token_prefill(const omnic__decoder *d, omnic__module *m, omnic_dtype kv_dtype,
                                                omnic_err *err)
{
    const omnic__text_config *c = &d->cfg;
    omnic__graph *g = &m->graph;
    const int64_t cap = g->capacity, T = cap, hd = c->head_dim;
    int64_t one[1] = {cap};
    omnic__tensor *tokens = omnic__g_input(g, "tokens", OMNIC_DTYPE_I32, 1, one, OMNIC_VAR_T);
    omnic__tensor *pos = omnic__g_input(g, "positions", OMNIC_DTYPE_I32, 1, one, OMNIC_VAR_T);
    omnic__tensor *kvi = omnic__g_kv_index(g);
    omnic__tensor *inv_freq = omnic__g_weight(g, d->inv_freq);
    omnic__tensor *x = omnic__g_get_rows(g, omnic__g_weight(g, &d->embed), tokens);
    const float scale = 1.0f / sqrtf((float)hd);
    for (int64_t l = 0; l < c->n_layers; l++) {
        const omnic__decoder_layer *L = &d->layers[l];
        omnic__tensor *h = omnic__g_rmsnorm(g, x, omnic__g_weight(g, &L->attn_norm), (float)c->rms_eps, false);
        omnic__tensor *q = omnic__g_matmul(g, h, omnic__g_weight(g, &L->wq), L->bq ? omnic__g_weight(g, L->bq) : NULL);
        omnic__tensor *k = omnic__g_matmul(g, h, omnic__g_weight(g, &L->wk), L->bk ? omnic__g_weight(g, L->bk) : NULL);
        omnic__tensor *v = omnic__g_matmul(g, h, omnic__g_weight(g, &L->wv), L->bv ? omnic__g_weight(g, L->bv) : NULL);
        int64_t qs[3] = {T, c->n_heads, hd}, ks[3] = {T, c->n_kv_heads, hd};
        q = omnic__g_rope(g, omnic__g_reshape(g, q, 3, qs), pos, (int)hd, 0, (float)c->rope_theta, inv_freq, 1.0f);
        k = omnic__g_rope(g, omnic__g_reshape(g, k, 3, ks), pos, (int)hd, 0, (float)c->rope_theta, inv_freq, 1.0f);
        v = omnic__g_reshape(g, v, 3, ks);
        omnic__tensor *kc = omnic__g_slot_kv(g, false, (int)l, kv_dtype, c->n_kv_heads, hd);
        omnic__tensor *vc = omnic__g_slot_kv(g, true, (int)l, kv_dtype, c->n_kv_heads, hd);
        omnic__g_cpy(g, k, omnic__g_view_rows(g, kc, 0, true, OMNIC_VAR_T, 0));
        omnic__g_cpy(g, v, omnic__g_view_rows(g, vc, 0, true, OMNIC_VAR_T, 0));
        omnic__tensor *a = omnic__g_attention(g, q, omnic__g_view_rows(g, kc, 0, false, OMNIC_VAR_KV, 0),
                                              omnic__g_view_rows(g, vc, 0, false, OMNIC_VAR_KV, 0), kvi, NULL, scale,
                                              true, 0, 0.0f);
        int64_t flat[2] = {T, c->n_heads * hd};
        x = omnic__g_add(g, x, omnic__g_matmul(g, omnic__g_reshape(g, a, 2, flat), omnic__g_weight(g, &L->wo), NULL));
        h = omnic__g_rmsnorm(g, x, omnic__g_weight(g, &L->mlp_norm), (float)c->rms_eps, false);
        omnic__tensor *act = omnic__g_glu(g, OMNIC_OP_SWIGLU, omnic__g_matmul(g, h, omnic__g_weight(g, &L->w_gate), NULL),
                                          omnic__g_matmul(g, h, omnic__g_weight(g, &L->w_up), NULL), 0);
        x = omnic__g_add(g, x, omnic__g_matmul(g, act, omnic__g_weight(g, &L->w_down), NULL));
    }
    omnic__tensor *last = omnic__g_rmsnorm(g, omnic__g_slice_last_rows(g, x, 1), omnic__g_weight(g, &d->norm),
                                           (float)c->rms_eps, false);
    omnic__g_mark_output(g, omnic__g_matmul(g, last, omnic__g_weight(g, &d->lm_head), NULL), "logits");
    OMNIC_TRY(omnic__graph_status(g, err));
    return OMNIC_OK;
}
