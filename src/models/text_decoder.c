/* Llama-style text decoder: config parsing, weight binding, module graphs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "io/json.h"
#include "models/altup_decoder.h"
#include "models/lora.h"
#include "models/text_decoder.h"
#include "models/weights.h"

#define TRYJ(expr) OMNIC_TRY(expr)

static bool in_list(const char *const *list, const char *s)
{
    for (size_t i = 0; list && list[i]; i++)
        if (!strcmp(list[i], s)) return true;
    return false;
}

/* One RoPE dict as HF resolves it (4.x rope_scaling, or one 5.x rope_parameters entry: five)
 * into c's global table settings. theta is already set. */
static omnic_status parse_rope_dict(const json_t *cfg, const json_t *rs, const char *w, bool five,
                                    const omnic__text_defaults *d, omnic__text_config *c, omnic_err *err)
{
    const int64_t big = (int64_t)1 << 31;
    const char *type = NULL, *rtype = NULL;
    TRYJ(omnic__json_get_str(rs, "type", false, NULL, w, &type, err));
    TRYJ(omnic__json_get_str(rs, "rope_type", false, NULL, w, &rtype, err));
    for (size_t i = 0; d->rope_alias && d->rope_alias[i]; i += 2) { /* Phi3: su / yarn -> longrope */
        if (type && !strcmp(type, d->rope_alias[i])) type = d->rope_alias[i + 1];
        if (rtype && !strcmp(rtype, d->rope_alias[i])) rtype = d->rope_alias[i + 1];
    }
    /* both spelled: 4.x configs copy type over rope_type, 5.x keeps rope_type */
    if (type && rtype) type = five ? rtype : type;
    if (!type) type = rtype;
    if (!type) {
        if (!five) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: missing field 'rope_type'", w);
        type = "default"; /* 5.x standardize_rope_params */
    }
    static const char *const implemented[] = {"default", "linear", "llama3", "longrope", NULL};
    if (!in_list(d->rope_types ? d->rope_types : implemented, type))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: rope_scaling type '%s' is not supported by omnic's %s", w, type, d->family);
    /* every key of the dict must be one its type reads (others would be ignored) */
    static const char *const base[] = {"type", "rope_type", "rope_theta", "partial_rotary_factor", NULL};
    /* mrope_interleaved: read by Qwen3-VL only (which always interleaves); Qwen2-VL ignores it */
    static const char *const mrope_keys[] = {"mrope_section", "mrope_interleaved", NULL};
    static const char *const linear[] = {"factor", NULL};
    static const char *const llama3[] = {"factor", "low_freq_factor", "high_freq_factor",
                                         "original_max_position_embeddings", NULL};
    static const char *const longrope[] = {"short_factor",
                                           "long_factor",
                                           "factor",
                                           "attention_factor",
                                           "original_max_position_embeddings",
                                           NULL};
    const char *const *extra = !strcmp(type, "linear")     ? linear
                               : !strcmp(type, "llama3")   ? llama3
                               : !strcmp(type, "longrope") ? longrope
                               : d->mrope                  ? mrope_keys
                                                           : NULL;
    const char *const *const lists[] = {base, extra, NULL}; /* extra NULL ends the list early */
    TRYJ(omnic__json_check_keys(rs, w, lists, err));
    c->rope_type = OMNIC_ROPE_DEFAULT;
    if (!strcmp(type, "default")) {
        const json_t *ms = json_object_get(rs, "mrope_section");
        if (!ms || json_is_null(ms)) return OMNIC_OK;
        /* Qwen2-VL: default frequencies, 3-axis positions; HF renames type mrope to default */
        if (!json_is_array(ms) || json_array_size(ms) != 3)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: mrope_section must be a list of 3 integers", w);
        int64_t sum = 0;
        for (size_t k = 0; k < 3; k++) {
            const json_t *x = json_array_get(ms, k);
            if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                json_integer_value(x) > OMNIC_MAX_HEAD_DIM)
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: mrope_section[%zu] must be an integer in 0..%d",
                                  w, k, OMNIC_MAX_HEAD_DIM);
            c->mrope_section[k] = (int)json_integer_value(x);
            sum += c->mrope_section[k];
        }
        c->mrope = true;
        c->mrope_sum = sum;
        return OMNIC_OK;
    }
    if (!strcmp(type, "linear")) {
        c->rope_type = OMNIC_ROPE_LINEAR;
        TRYJ(omnic__json_get_f64(rs, "factor", true, 0, 1e-6, 1e6, w, &c->rope_factor, err));
        return OMNIC_OK;
    }
    if (!strcmp(type, "llama3")) {
        c->rope_type = OMNIC_ROPE_LLAMA3;
        TRYJ(omnic__json_get_f64(rs, "factor", true, 0, 1e-6, 1e6, w, &c->rope_factor, err));
        TRYJ(
            omnic__json_get_f64(rs, "low_freq_factor", true, 0, 1e-6, 1e6, w, &c->rope_low_freq_factor, err));
        TRYJ(omnic__json_get_f64(rs, "high_freq_factor", true, 0, 1e-6, 1e6, w, &c->rope_high_freq_factor,
                                 err));
        /* 4.x requires it in the dict; 5.x standardize_rope_params takes a top-level value
         * first, then the dict's, then max_position_embeddings */
        int64_t top = 0;
        if (five)
            TRYJ(omnic__json_get_i64(cfg, "original_max_position_embeddings", false, 0, 1, big, "config.json",
                                     &top, err));
        if (top > 0)
            c->rope_original_max_pos = top;
        else
            TRYJ(omnic__json_get_i64(rs, "original_max_position_embeddings", !five, c->max_pos, 1, big, w,
                                     &c->rope_original_max_pos, err));
        if (!(c->rope_high_freq_factor > c->rope_low_freq_factor))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: high_freq_factor %g must exceed low_freq_factor %g",
                              w, c->rope_high_freq_factor, c->rope_low_freq_factor);
        return OMNIC_OK;
    }
    /* longrope (HF _compute_longrope_parameters) */
    c->rope_type = OMNIC_ROPE_LONGROPE;
    int64_t orig = d->original_max_pos; /* a class attribute (Phi3) or a top-level key */
    TRYJ(omnic__json_get_i64(cfg, "original_max_position_embeddings", false, orig, 1, big, "config.json",
                             &orig, err));
    double factor = 0, af = 0;
    TRYJ(omnic__json_get_f64(rs, "factor", false, 0, 1e-6, 1e6, w, &factor, err));
    TRYJ(omnic__json_get_f64(rs, "attention_factor", false, 0, 1e-6, 1e3, w, &af, err));
    if (five) { /* 5.x: the top-level value wins, then the dict's, then max_position_embeddings */
        if (orig == 0)
            TRYJ(omnic__json_get_i64(rs, "original_max_position_embeddings", false, c->max_pos, 1, big, w,
                                     &orig, err));
        if (factor == 0) factor = (double)c->max_pos / (double)orig;
    } else if (orig > 0) { /* 4.57: the ratio overrides factor when the attribute exists */
        factor = (double)c->max_pos / (double)orig;
    } else {
        orig = c->max_pos;
        if (af == 0 && factor == 0)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: longrope needs factor or attention_factor", w);
    }
    c->rope_original_max_pos = orig;
    const char *names[2] = {"short_factor", "long_factor"};
    float *dst[2] = {c->longrope_short, c->longrope_long};
    for (int k = 0; k < 2; k++) {
        const json_t *a;
        TRYJ(omnic__json_get_array(rs, names[k], true, w, &a, err));
        if ((int64_t)json_array_size(a) != c->n_rot / 2)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %s has %zu entries, expected %lld (rotary dims / 2)",
                              w, names[k], json_array_size(a), (long long)(c->n_rot / 2));
        for (size_t i = 0; i < json_array_size(a); i++) {
            const json_t *x = json_array_get(a, i);
            double v = json_is_number(x) ? json_number_value(x) : -1;
            if (!(v > 0) || !isfinite(v))
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %s[%zu] must be a positive number", w, names[k],
                                  i);
            dst[k][i] = (float)v;
        }
    }
    if (af == 0) /* HF: sqrt(1 + log(factor) / log(original max)) when the context was extended */
        af = factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log((double)orig));
    c->rope_attn_factor = (float)af;
    return OMNIC_OK;
}

/* RoPE settings: 4.x rope_theta + rope_scaling, or 5.x rope_parameters (one dict, or one per
 * layer type when the family has local layers: full_attention / sliding_attention). */
static omnic_status parse_rope(const json_t *cfg, const char *what, const omnic__text_defaults *d,
                               omnic__text_config *c, omnic_err *err)
{
    const json_t *rp, *rs;
    TRYJ(omnic__json_get_obj(cfg, "rope_parameters", false, what, &rp, err));
    TRYJ(omnic__json_get_obj(cfg, "rope_scaling", false, what, &rs, err));
    if (rp && rs)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: both rope_parameters and rope_scaling are set", what);
    c->rope_type = OMNIC_ROPE_DEFAULT;
    c->rope_attn_factor = 1.0f;
    TRYJ(omnic__json_get_f64(cfg, "rope_theta", false, d->rope_theta, 1e-3, 1e12, what, &c->rope_theta, err));
    if (!d->rope_local) {
        if (rp)
            TRYJ(omnic__json_get_f64(rp, "rope_theta", false, c->rope_theta, 1e-3, 1e12, what, &c->rope_theta,
                                     err));
        const json_t *dict = rp ? rp : rs;
        return dict ? parse_rope_dict(cfg, dict,
                                      rp ? "config.json rope_parameters" : "config.json rope_scaling",
                                      rp != NULL, d, c, err)
                    : OMNIC_OK;
    }
    /* local (sliding) layers: their own base, default RoPE (Gemma3 rotary_emb_local) */
    TRYJ(omnic__json_get_f64(cfg, "rope_local_base_freq", false, d->rope_local_theta, 1e-3, 1e12, what,
                             &c->rope_local_theta, err));
    if (!rp) return rs ? parse_rope_dict(cfg, rs, "config.json rope_scaling", false, d, c, err) : OMNIC_OK;
    static const char *const layer_types[] = {"full_attention", "sliding_attention", NULL};
    TRYJ(omnic__json_check_keys(rp, "config.json rope_parameters",
                                (const char *const *const[]){layer_types, NULL}, err));
    const json_t *full, *local;
    const char *wf = "config.json rope_parameters.full_attention",
               *wl = "config.json rope_parameters.sliding_attention";
    TRYJ(omnic__json_get_obj(rp, "full_attention", false, what, &full, err));
    TRYJ(omnic__json_get_obj(rp, "sliding_attention", false, what, &local, err));
    if (local) {
        omnic__text_config tmp = *c;
        TRYJ(omnic__json_get_f64(local, "rope_theta", false, c->rope_local_theta, 1e-3, 1e12, wl,
                                 &c->rope_local_theta, err));
        TRYJ(parse_rope_dict(cfg, local, wl, true, d, &tmp, err));
        if (tmp.rope_type != OMNIC_ROPE_DEFAULT)
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                              "%s: only rope_type default is supported on sliding layers", wl);
    }
    if (!full) return OMNIC_OK;
    TRYJ(omnic__json_get_f64(full, "rope_theta", false, c->rope_theta, 1e-3, 1e12, wf, &c->rope_theta, err));
    return parse_rope_dict(cfg, full, wf, true, d, c, err);
}

omnic_status omnic__text_config_parse(const json_t *cfg, const char *what, const omnic__text_defaults *d,
                                      omnic__text_config *c, omnic_err *err)
{
    memset(c, 0, sizeof *c);
    const int64_t big = (int64_t)1 << 31;
    TRYJ(omnic__json_get_i64(cfg, "vocab_size", false, d->vocab, 1, big, what, &c->vocab, err));
    TRYJ(omnic__json_get_i64(cfg, "hidden_size", false, d->hidden, 1, 1 << 20, what, &c->hidden, err));
    TRYJ(omnic__json_get_i64(cfg, "num_hidden_layers", false, d->n_layers, 1, OMNIC_MAX_LAYERS, what,
                             &c->n_layers, err));
    TRYJ(omnic__json_get_i64(cfg, "num_attention_heads", false, d->n_heads, 1, 4096, what, &c->n_heads, err));
    TRYJ(omnic__json_get_i64(cfg, "num_key_value_heads", false, d->n_kv_heads ? d->n_kv_heads : c->n_heads, 1,
                             4096, what, &c->n_kv_heads, err));
    TRYJ(omnic__json_get_i64(cfg, "intermediate_size", false, d->intermediate, 1, 1 << 22, what,
                             &c->intermediate, err));
    TRYJ(omnic__json_get_i64(cfg, "max_position_embeddings", false, d->max_pos, 1, big - 1, what, &c->max_pos,
                             err));
    const json_t *hd = json_object_get(cfg, "head_dim");
    const bool derived =
        (!hd || json_is_null(hd)) && d->head_dim == 0; /* hidden_size // num_attention_heads */
    if (derived && c->hidden % c->n_heads)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: hidden_size %lld is not a multiple of num_attention_heads %lld", what,
                          (long long)c->hidden, (long long)c->n_heads);
    TRYJ(omnic__json_get_i64(cfg, "head_dim", false, derived ? c->hidden / c->n_heads : d->head_dim, 2,
                             OMNIC_MAX_HEAD_DIM, what, &c->head_dim, err));
    if (c->head_dim % 2)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: head_dim %lld is odd (RoPE rotates pairs)", what,
                          (long long)c->head_dim);
    if (c->n_heads % c->n_kv_heads)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld", what,
                          (long long)c->n_heads, (long long)c->n_kv_heads);
    /* partial rotary: 4.x top level, 5.x also inside rope_parameters */
    double partial = 1.0;
    const json_t *rp = json_object_get(cfg, "rope_parameters");
    if (json_is_object(rp))
        TRYJ(omnic__json_get_f64(rp, "partial_rotary_factor", false, 1.0, 1e-6, 1.0, what, &partial, err));
    TRYJ(omnic__json_get_f64(cfg, "partial_rotary_factor", false, partial, 1e-6, 1.0, what, &partial, err));
    if (partial != 1.0 && !d->partial_rotary)
        return OMNIC_FAIL(
            err, OMNIC_E_UNSUPPORTED,
            "%s: partial_rotary_factor %g is not supported by %s (its RoPE rotates the whole head)", what,
            partial, d->family);
    c->n_rot = (int64_t)((double)c->head_dim * partial); /* HF: int(head_dim * factor) */
    if (c->n_rot < 2 || c->n_rot % 2)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: partial_rotary_factor %g gives %lld rotary dims (must be even, >= 2)", what,
                          partial, (long long)c->n_rot);
    TRYJ(omnic__json_get_f64(cfg, "rms_norm_eps", false, d->rms_eps, 0, 1, what, &c->rms_eps, err));
    TRYJ(omnic__json_get_bool(cfg, "tie_word_embeddings", false, d->tie, what, &c->tie_embeddings, err));
    const char *act;
    TRYJ(omnic__json_get_str(cfg, d->act_key, false, d->act, what, &act, err));
    if (!strcmp(act, "silu"))
        c->act = OMNIC_ACT_SILU;
    else if (!strcmp(act, "gelu_pytorch_tanh"))
        c->act = OMNIC_ACT_GELU_TANH;
    else
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: %s '%s' is not supported (silu, gelu_pytorch_tanh)",
                          what, d->act_key, act);
    c->attn_scale = (float)(1.0 / sqrt((double)c->head_dim)); /* python float, then f32 */
    c->n_kv_layers = c->n_layers; /* every layer owns its cache unless the family shares */
    for (int64_t l = 0; l < c->n_layers; l++)
        c->kv_layer[l] = (int16_t)l;
    c->prefix = "model.";
    OMNIC_TRY(parse_rope(cfg, what, d, c, err));
    if (c->mrope && c->mrope_sum != c->n_rot / 2)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: mrope_section sums to %lld, expected %lld (rotary dims / 2)", what,
                          (long long)c->mrope_sum, (long long)(c->n_rot / 2));
    return OMNIC_OK;
}

/* ---- weights ---- */

static omnic_status bind(omnic__text_decoder *d, const omnic__safetensors *st, const char *name, int ndim,
                         const int64_t *dims, omnic__tensor *out, omnic_err *err)
{
    return omnic__weight_bind(st, name, ndim, dims, out, &d->copies, err);
}

/* rows [r0, r0 + n) of a 2-D weight, sharing its storage (fused projections). */
static void row_view(const omnic__tensor *w, int64_t r0, int64_t n, omnic__tensor *out)
{
    *out = *w;
    out->dims[0] = n;
    out->data = (uint8_t *)w->data + (size_t)r0 * omnic__dtype_row_bytes(w->dtype, w->dims[1]);
    out->owns_data = false;
}

/* An owned f32 copy of a float vector weight (biases are f32 by the matmul contract). */
static omnic_status bind_f32(omnic__text_decoder *d, const omnic__safetensors *st, const char *name,
                             int64_t n, omnic__tensor **out, omnic_err *err)
{
    omnic__tensor view;
    OMNIC_TRY(bind(d, st, name, 1, &n, &view, err));
    return omnic__weight_f32(&view, 0, 1, &n, name, out, err);
}

/* RoPE inverse frequencies [n_rot/2] in f32, as HF computes them (float32 tensor ops):
 * base table 1 / base^(2i/n_rot), then the scaling of `type`; ext: LongRoPE factors. */
static void rope_freqs(const omnic__text_config *c, double theta, omnic__rope_type type, const float *ext,
                       float *f)
{
    const int64_t half = c->n_rot / 2;
    const float base = (float)theta;
    for (int64_t i = 0; i < half; i++) {
        float expo = (float)(2 * i) / (float)c->n_rot;
        f[i] = type == OMNIC_ROPE_LONGROPE ? 1.0f / (ext[i] * powf(base, expo)) : 1.0f / powf(base, expo);
    }
    if (type == OMNIC_ROPE_LINEAR)
        for (int64_t i = 0; i < half; i++)
            f[i] /= (float)c->rope_factor;
    if (type == OMNIC_ROPE_LLAMA3) {
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
}

void omnic__text_rope_freqs(const omnic__text_config *c, int which, float *out)
{
    if (which == 2)
        rope_freqs(c, c->rope_local_theta, OMNIC_ROPE_DEFAULT, NULL, out);
    else
        rope_freqs(c, c->rope_theta, c->rope_type, which == 1 ? c->longrope_long : c->longrope_short, out);
}

/* rope_freqs into an owned f32 [n_rot/2] tensor named name. */
static omnic_status rope_table(const omnic__text_config *c, double theta, omnic__rope_type type,
                               const float *ext, const char *name, omnic__tensor **out, omnic_err *err)
{
    int64_t half = c->n_rot / 2;
    OMNIC_TRY(omnic__tensor_create(out, OMNIC_DTYPE_F32, 1, &half, err));
    snprintf((*out)->name, sizeof(*out)->name, "%s", name);
    rope_freqs(c, theta, type, ext, (*out)->data);
    return OMNIC_OK;
}

/* Layer l's experts, stored one tensor per expert (mlp.experts.{e}.{gate,up,down}_proj.weight,
 * Qwen3-MoE): bound as views (mapped), stacked later (omnic__text_decoder_stack_experts, or
 * quantized straight into a stacked tensor). */
static omnic_status bind_experts(omnic__text_decoder *d, const omnic__safetensors *st, int64_t l,
                                 omnic_err *err)
{
    const omnic__text_config *c = &d->cfg;
    const int64_t E = c->n_experts, Im = c->moe_intermediate, H = c->hidden;
    static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
    omnic__text_decoder_layer *L = &d->layers[l];
    L->expert_views = omnic_alloc_array((size_t)(3 * E), sizeof *L->expert_views);
    if (!L->expert_views)
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld experts", (long long)E);
    char name[192];
    if (c->experts_fused) { /* [E, H, 2 Im] and [E, Im, H] (x . W): transposed when opened */
        const int64_t gd[3] = {E, H, 2 * Im}, dd[3] = {E, Im, H};
        snprintf(name, sizeof name, "%slayers.%lld.mlp.experts.gate_up_proj", c->prefix, (long long)l);
        OMNIC_TRY(bind(d, st, name, 3, gd, &L->fused_gu, err));
        snprintf(name, sizeof name, "%slayers.%lld.mlp.experts.down_proj", c->prefix, (long long)l);
        OMNIC_TRY(bind(d, st, name, 3, dd, &L->fused_dn, err));
        if (L->fused_gu.dtype != L->fused_dn.dtype)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s is %s, gate_up_proj is %s: one dtype for the experts",
                              name, omnic_dtype_name(L->fused_dn.dtype), omnic_dtype_name(L->fused_gu.dtype));
        for (int64_t e = 0; e < E; e++)
            for (int p = 0; p < 3; p++) {
                const int64_t dims[2] = {p == 2 ? H : Im, p == 2 ? Im : H};
                omnic__tensor *v = &L->expert_views[3 * e + p];
                OMNIC_TRY(omnic__tensor_init(v, L->fused_gu.dtype, 2, dims, err));
                snprintf(v->name, sizeof v->name, "%slayers.%lld.mlp.experts.%lld.%s", c->prefix,
                         (long long)l, (long long)e, proj[p]);
            }
        return OMNIC_OK;
    }
    for (int64_t e = 0; e < E; e++)
        for (int p = 0; p < 3; p++) {
            const int64_t dims[2] = {p == 2 ? H : Im, p == 2 ? Im : H};
            snprintf(name, sizeof name, "%slayers.%lld.mlp.experts.%lld.%s.weight", c->prefix, (long long)l,
                     (long long)e, proj[p]);
            omnic__tensor *v = &L->expert_views[3 * e + p];
            OMNIC_TRY(bind(d, st, name, 2, dims, v, err));
            if (v->dtype != L->expert_views[p].dtype)
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "%s is %s, expert 0's is %s: one dtype for all experts", name,
                                  omnic_dtype_name(v->dtype), omnic_dtype_name(L->expert_views[p].dtype));
        }
    return OMNIC_OK;
}

/* dst [cols, rows] = src [rows, cols]^T, src rows `stride` elements apart; elements of es bytes,
 * in 64 x 64 tiles (both sides stay in cache). */
static void transpose(const uint8_t *src, int64_t stride, uint8_t *dst, int64_t rows, int64_t cols, size_t es)
{
    enum { B = 64 };
    for (int64_t r0 = 0; r0 < rows; r0 += B)
        for (int64_t c0 = 0; c0 < cols; c0 += B) {
            const int64_t r1 = r0 + B < rows ? r0 + B : rows, c1 = c0 + B < cols ? c0 + B : cols;
            for (int64_t r = r0; r < r1; r++) {
                const uint8_t *s = src + (size_t)(r * stride) * es;
                if (es == 2)
                    for (int64_t c = c0; c < c1; c++)
                        ((uint16_t *)dst)[c * rows + r] = ((const uint16_t *)s)[c];
                else if (es == 4)
                    for (int64_t c = c0; c < c1; c++)
                        ((uint32_t *)dst)[c * rows + r] = ((const uint32_t *)s)[c];
                else
                    for (int64_t c = c0; c < c1; c++)
                        memcpy(dst + (size_t)(c * rows + r) * es, s + (size_t)c * es, es);
            }
        }
}

omnic_status omnic__text_decoder_experts_open(omnic__text_decoder *d, const omnic__safetensors *st, int64_t l,
                                              omnic_err *err)
{
    omnic__text_decoder_layer *L = &d->layers[l];
    if (!L->expert_views || !L->fused_gu.data || L->expert_block) return OMNIC_OK;
    const int64_t E = d->cfg.n_experts, Im = d->cfg.moe_intermediate, H = d->cfg.hidden;
    const size_t es = omnic_dtype_size(L->fused_gu.dtype), per = (size_t)(Im * H) * es;
    uint8_t *blk = omnic_alloc_array((size_t)(3 * E), per);
    if (!blk) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory transposing %lld experts", (long long)E);
    L->expert_block = blk;
    for (int64_t e = 0; e < E; e++) {
        const uint8_t *g = (const uint8_t *)L->fused_gu.data + (size_t)(e * H) * (size_t)(2 * Im) * es,
                      *dw = (const uint8_t *)L->fused_dn.data + (size_t)(e * Im) * (size_t)H * es;
        uint8_t *pg = blk + (size_t)(3 * e) * per, *pu = pg + per, *pd = pu + per;
        /* gate_up [H, 2 Im]: gate = columns [0, Im), up = [Im, 2 Im), each transposed to [Im, H];
         * down [Im, H] transposed to [H, Im] */
        transpose(g, 2 * Im, pg, H, Im, es);
        transpose(g + (size_t)Im * es, 2 * Im, pu, H, Im, es);
        transpose(dw, H, pd, Im, H, es);
        omnic__st_release(st, g, (size_t)(H * 2 * Im) * es);
        omnic__st_release(st, dw, (size_t)(Im * H) * es);
        for (int p = 0; p < 3; p++)
            L->expert_views[3 * e + p].data = blk + (size_t)(3 * e + p) * per;
    }
    return OMNIC_OK;
}

void omnic__text_decoder_experts_close(omnic__text_decoder *d, int64_t l)
{
    omnic__text_decoder_layer *L = &d->layers[l];
    if (!L->expert_block) return;
    omnic_free(L->expert_block);
    L->expert_block = NULL;
    for (int64_t i = 0; i < 3 * d->cfg.n_experts; i++)
        L->expert_views[i].data = NULL;
}

omnic_status omnic__text_decoder_stack_experts(omnic__text_decoder *d, const omnic__safetensors *st,
                                               omnic_err *err)
{
    const omnic__text_config *c = &d->cfg;
    static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
    for (int64_t l = 0; l < c->n_layers; l++) {
        omnic__text_decoder_layer *L = &d->layers[l];
        if (!L->expert_views) continue;
        omnic__tensor **out[3] = {&L->experts_gate, &L->experts_up, &L->experts_down};
        if (L->experts_gate && L->experts_up && L->experts_down) continue; /* stacked by quantization */
        OMNIC_TRY(omnic__text_decoder_experts_open(d, st, l, err));
        for (int p = 0; p < 3; p++) {
            if (*out[p]) continue; /* stacked by quantization */
            const omnic__tensor *v0 = &L->expert_views[p];
            int64_t all[2] = {c->n_experts * v0->dims[0], v0->dims[1]};
            OMNIC_TRY(omnic__tensor_create(out[p], v0->dtype, 2, all, err));
            snprintf((*out[p])->name, sizeof(*out[p])->name, "%slayers.%lld.mlp.experts.%s", c->prefix,
                     (long long)l, proj[p]);
            const size_t bytes = omnic__tensor_bytes(v0);
            for (int64_t e = 0; e < c->n_experts; e++) {
                const omnic__tensor *v = &L->expert_views[3 * e + p];
                memcpy((char *)(*out[p])->data + (size_t)e * bytes, v->data, bytes);
                omnic__st_release(st, v->data, bytes);
            }
        }
        omnic__text_decoder_experts_close(d, l); /* fused storage: in the stacked tensors now */
    }
    return OMNIC_OK;
}

omnic_status omnic__text_decoder_load(omnic__text_decoder *d, const omnic__text_config *c,
                                      const omnic__safetensors *st, omnic_err *err)
{
    memset(d, 0, sizeof *d);
    d->cfg = *c;
    const int64_t H = c->hidden, hd = c->head_dim, qd = c->n_heads * hd, kvd = c->n_kv_heads * hd,
                  I = c->intermediate;
    const char *P = c->prefix, *head = c->lm_head_name ? c->lm_head_name : "lm_head.weight";
    char name[192];
    omnic_status s;
    int64_t emb[2] = {c->vocab, H};
#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)
    if (c->alt_prefix && !omnic__st_find(st, NAME("%sembed_tokens.weight", P)) &&
        omnic__st_find(st, NAME("%sembed_tokens.weight", c->alt_prefix))) { /* the other spelling */
        P = d->cfg.prefix = c->alt_prefix;
        head = d->cfg.lm_head_name = c->alt_lm_head_name ? c->alt_lm_head_name : "lm_head.weight";
    }
    if ((s = bind(d, st, NAME("%sembed_tokens.weight", P), 2, emb, &d->embed, err)) != OMNIC_OK) goto fail;
    if ((s = bind(d, st, NAME("%snorm.weight", P), 1, &H, &d->norm, err)) != OMNIC_OK) goto fail;
    if (c->tie_embeddings) {
        d->lm_head = d->embed;
    } else if ((s = bind(d, st, head, 2, emb, &d->lm_head, err)) != OMNIC_OK) {
        goto fail;
    }
    if (c->embed_scale > 0) { /* HF casts the scale to the embedding dtype before multiplying */
        if (d->embed.dtype == OMNIC_DTYPE_BF16)
            d->cfg.embed_scale = omnic__bf16_to_f32(omnic__f32_to_bf16(c->embed_scale));
        if (d->embed.dtype == OMNIC_DTYPE_F16)
            d->cfg.embed_scale = omnic__f16_to_f32(omnic__f32_to_f16(c->embed_scale));
    }
    d->layers = omnic_alloc_array((size_t)c->n_layers, sizeof *d->layers);
    if (!d->layers) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %lld layers", (long long)c->n_layers);
        goto fail;
    }
    for (int64_t l = 0; l < c->n_layers; l++) {
        omnic__text_decoder_layer *L = &d->layers[l];
        const bool moe = c->n_experts > 0 && c->layer_moe[l];
        struct w {
            const char *suffix;
            int ndim;
            int64_t dims[2];
            omnic__tensor *out;
            bool want;
        };
        const struct w ws[] = {
            {"input_layernorm.weight", 1, {H, 0}, &L->attn_norm, true},
            {"self_attn.q_proj.weight", 2, {qd, H}, &L->wq, !c->fused_qkv},
            {"self_attn.k_proj.weight", 2, {kvd, H}, &L->wk, !c->fused_qkv},
            {"self_attn.v_proj.weight", 2, {kvd, H}, &L->wv, !c->fused_qkv},
            {"self_attn.o_proj.weight", 2, {H, qd}, &L->wo, true},
            {"self_attn.q_norm.weight", 1, {hd, 0}, &L->q_norm, c->qk_norm},
            {"self_attn.k_norm.weight", 1, {hd, 0}, &L->k_norm, c->qk_norm},
            {"post_attention_layernorm.weight",
             1,
             {H, 0},
             c->sandwich_norms ? &L->post_attn_norm : &L->mlp_norm,
             true},
            {"pre_feedforward_layernorm.weight", 1, {H, 0}, &L->mlp_norm, c->sandwich_norms},
            {"post_feedforward_layernorm.weight", 1, {H, 0}, &L->post_mlp_norm, c->sandwich_norms},
            {"mlp.gate_proj.weight", 2, {I, H}, &L->w_gate, !c->fused_gate_up && !moe},
            {"mlp.up_proj.weight", 2, {I, H}, &L->w_up, !c->fused_gate_up && !moe},
            {"mlp.down_proj.weight", 2, {H, I}, &L->w_down, !moe},
            {"mlp.gate.weight", 2, {c->n_experts, H}, &L->router, moe},
        };
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
            if (!ws[i].want) continue;
            NAME("%slayers.%lld.%s", P, (long long)l, ws[i].suffix);
            if ((s = bind(d, st, name, ws[i].ndim, ws[i].dims, ws[i].out, err)) != OMNIC_OK) goto fail;
        }
        if (moe && (s = bind_experts(d, st, l, err)) != OMNIC_OK) goto fail;
        if (c->fused_qkv) { /* q, k, v are consecutive row blocks of qkv_proj */
            omnic__tensor qkv;
            int64_t dims[2] = {qd + 2 * kvd, H};
            if ((s = bind(d, st, NAME("%slayers.%lld.self_attn.qkv_proj.weight", P, (long long)l), 2, dims,
                          &qkv, err)) != OMNIC_OK)
                goto fail;
            row_view(&qkv, 0, qd, &L->wq);
            row_view(&qkv, qd, kvd, &L->wk);
            row_view(&qkv, qd + kvd, kvd, &L->wv);
        }
        if (c->fused_gate_up) { /* gate is the first half of gate_up_proj, up the second */
            omnic__tensor gu;
            int64_t dims[2] = {2 * I, H};
            if ((s = bind(d, st, NAME("%slayers.%lld.mlp.gate_up_proj.weight", P, (long long)l), 2, dims, &gu,
                          err)) != OMNIC_OK)
                goto fail;
            row_view(&gu, 0, I, &L->w_gate);
            row_view(&gu, I, I, &L->w_up);
        }
        if (c->qkv_bias || c->o_bias) {
            struct {
                const char *p;
                int64_t n;
                omnic__tensor **out;
                bool want;
            } b[] = {{"q", qd, &L->bq, c->qkv_bias},
                     {"k", kvd, &L->bk, c->qkv_bias},
                     {"v", kvd, &L->bv, c->qkv_bias},
                     {"o", H, &L->bo, c->o_bias}};
            for (size_t i = 0; i < 4; i++) {
                if (!b[i].want) continue;
                NAME("%slayers.%lld.self_attn.%s_proj.bias", P, (long long)l, b[i].p);
                if ((s = bind_f32(d, st, name, b[i].n, b[i].out, err)) != OMNIC_OK) goto fail;
            }
        }
    }
#undef NAME
    if (c->altup > 0 && (s = omnic__altup_load(d, st, c->mm_prefix, err)) != OMNIC_OK) goto fail;
    if (c->rope_type == OMNIC_ROPE_LONGROPE) { /* short factors, and [short; long] for rope_switch */
        omnic__tensor *lt = NULL;
        int64_t two[2] = {2, c->n_rot / 2};
        if ((s = rope_table(c, c->rope_theta, c->rope_type, c->longrope_short, "rope_inv_freq",
                            &d->rope_global, err)) != OMNIC_OK ||
            (s = rope_table(c, c->rope_theta, c->rope_type, c->longrope_long, "rope_inv_freq_long", &lt,
                            err)) != OMNIC_OK ||
            (s = omnic__tensor_create(&d->rope_two, OMNIC_DTYPE_F32, 2, two, err)) != OMNIC_OK) {
            omnic__tensor_destroy(lt);
            goto fail;
        }
        snprintf(d->rope_two->name, sizeof d->rope_two->name, "rope_inv_freq_short_long");
        memcpy(d->rope_two->data, d->rope_global->data, (size_t)two[1] * sizeof(float));
        memcpy((float *)d->rope_two->data + two[1], lt->data, (size_t)two[1] * sizeof(float));
        omnic__tensor_destroy(lt);
    } else if ((s = rope_table(c, c->rope_theta, c->rope_type, NULL, "rope_inv_freq", &d->rope_global,
                               err)) != OMNIC_OK) {
        goto fail;
    }
    if (c->rope_local_theta > 0 && (s = rope_table(c, c->rope_local_theta, OMNIC_ROPE_DEFAULT, NULL,
                                                   "rope_inv_freq_local", &d->rope_local, err)) != OMNIC_OK)
        goto fail;
    return OMNIC_OK;
fail:
    omnic__text_decoder_deinit(d);
    return s;
}

void omnic__text_decoder_deinit(omnic__text_decoder *d)
{
    omnic__lora_free(d->lora);
    d->lora = NULL;
    for (int64_t l = 0; d->layers && l < d->cfg.n_layers; l++) {
        omnic__tensor_destroy(d->layers[l].bq);
        omnic__tensor_destroy(d->layers[l].bk);
        omnic__tensor_destroy(d->layers[l].bv);
        omnic__tensor_destroy(d->layers[l].bo);
        omnic__tensor_destroy(d->layers[l].experts_gate);
        omnic__tensor_destroy(d->layers[l].experts_up);
        omnic__tensor_destroy(d->layers[l].experts_down);
        omnic_free(d->layers[l].expert_views);
        omnic_free(d->layers[l].expert_block);
    }
    omnic_free(d->layers);
    omnic__tensor_destroy(d->rope_global);
    omnic__tensor_destroy(d->rope_two);
    omnic__tensor_destroy(d->rope_local);
    omnic__altup_free(d);
    omnic__weight_copies_free(&d->copies);
    for (size_t i = 0; i < d->n_qweights; i++)
        omnic__tensor_destroy(d->qweights[i]);
    omnic_free(d->qweights);
    memset(d, 0, sizeof *d);
}

void omnic__text_decoder_param_stats(const omnic__text_decoder *d, int64_t *params, int64_t *bytes)
{
    int64_t p = 0, b = 0;
#define COUNT(t)                                                                                             \
    do {                                                                                                     \
        p += omnic__tensor_nelem(t);                                                                         \
        b += (int64_t)omnic__tensor_bytes(t);                                                                \
    } while (0)
    COUNT(&d->embed);
    COUNT(&d->norm);
    if (!d->cfg.tie_embeddings) COUNT(&d->lm_head);
    for (int64_t l = 0; l < d->cfg.n_layers; l++) {
        const omnic__text_decoder_layer *L = &d->layers[l];
        const bool c_qk = d->cfg.qk_norm, c_sw = d->cfg.sandwich_norms;
        const omnic__tensor *ws[] = {&L->attn_norm,
                                     &L->wq,
                                     &L->wk,
                                     &L->wv,
                                     &L->wo,
                                     &L->mlp_norm,
                                     &L->w_gate,
                                     &L->w_up,
                                     &L->w_down,
                                     L->bq,
                                     L->bk,
                                     L->bv,
                                     L->bo,
                                     c_qk ? &L->q_norm : NULL,
                                     c_qk ? &L->k_norm : NULL,
                                     c_sw ? &L->post_attn_norm : NULL,
                                     c_sw ? &L->post_mlp_norm : NULL};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            if (ws[i] && ws[i]->data) COUNT(ws[i]);
        if (L->expert_views) { /* stacked, or still the per-expert views */
            COUNT(&L->router);
            omnic__tensor *stacked[3] = {L->experts_gate, L->experts_up, L->experts_down};
            for (int k = 0; k < 3; k++)
                for (int64_t e = 0; e < (stacked[k] ? 1 : d->cfg.n_experts); e++)
                    COUNT(stacked[k] ? stacked[k] : &L->expert_views[3 * e + k]);
        }
    }
#undef COUNT
    if (d->altup) omnic__altup_param_stats(d, &p, &b);
    *params = p;
    *bytes = b;
}

/* ---- graphs ---- */

/* RMSNorm with this decoder's flavour (plain w or 1 + w). */
static omnic__tensor *norm(omnic__graph *g, const omnic__text_decoder *d, omnic__tensor *x,
                           const omnic__tensor *w)
{
    return omnic__g_rmsnorm(g, x, omnic__g_weight(g, w), (float)d->cfg.rms_eps, d->cfg.norm_one_plus);
}

/* The decoder layers, final norm and head over post-scale rows x [T, H]; bias: the explicit
 * additive attention bias (or NULL), causal: the causal flag of every attention. */
/* logits f32 [n, V] of final-normed rows h [n, H]: lm_head, then the final softcap if any. */
static void lm_head(const omnic__text_decoder *d, omnic__graph *g, omnic__tensor *h)
{
    omnic__tensor *logits = omnic__g_matmul(g, h, omnic__g_weight(g, &d->lm_head), NULL);
    if (d->cfg.final_softcap > 0) logits = omnic__g_softcap(g, logits, d->cfg.final_softcap);
    omnic__g_mark_output(g, logits, "logits");
}

/* The final norm and head over the last layer's rows x [T, H]. */
static omnic_status finish(const omnic__text_decoder *d, omnic__graph *g, omnic__tensor *x,
                           omnic__text_head head, omnic_err *err)
{
    omnic__tensor *last =
        norm(g, d, head == OMNIC_HEAD_LAST ? omnic__g_slice_last_rows(g, x, 1) : x, &d->norm);
    if (head == OMNIC_HEAD_NONE)
        omnic__g_mark_output(g, last, "hidden");
    else
        lm_head(d, g, last);
    return omnic__graph_status(g, err);
}

/* The adapters' delta on a target's output for every row: B_id (A_id x) ([T, out]; zero rows
 * for id -1), the A product shared by the targets that read the same input (qkv: ta). */
static omnic__tensor *lora_a(omnic__graph *g, const omnic__lora *l, omnic__tensor *x, const omnic__tensor *A,
                             omnic__tensor *ids)
{
    const int64_t T = g->capacity, d2[2] = {T, l->rank};
    return omnic__g_reshape(g, omnic__g_matmul_id(g, x, omnic__g_weight(g, A), ids, l->rank, false), 2, d2);
}

static omnic__tensor *lora_b(omnic__graph *g, omnic__tensor *y, omnic__tensor *ta, const omnic__tensor *B,
                             omnic__tensor *ids, int64_t out)
{
    const int64_t T = g->capacity, d2[2] = {T, out};
    omnic__tensor *dl =
        omnic__g_reshape(g, omnic__g_matmul_id(g, ta, omnic__g_weight(g, B), ids, out, true), 2, d2);
    return omnic__g_add(g, y, dl);
}

static omnic_status build_body(const omnic__text_decoder *d, omnic__graph *g, omnic__tensor *x,
                               omnic__tensor *ids, omnic__tensor *pos, omnic__tensor *bias,
                               omnic__tensor *span, omnic__tensor *deepstack, bool causal,
                               omnic_dtype kv_dtype, int64_t kv_rows, omnic__text_head head, bool taps,
                               omnic_err *err)
{
    if (d->altup) /* Gemma 3n: its own layers (no bias or span masks) */
        return finish(d, g, omnic__altup_build_layers(d, g, x, ids, pos, kv_dtype, kv_rows, taps), head, err);
    const omnic__text_config *c = &d->cfg;
    const int64_t T = g->capacity, hd = c->head_dim;
    omnic__tensor *kvi = omnic__g_kv_index(g), *kvb = omnic__g_kv_begin(g);
    omnic__tensor *rope_global = omnic__g_weight(g, d->rope_global);
    omnic__tensor *rope_local = d->rope_local ? omnic__g_weight(g, d->rope_local) : NULL;
    /* LongRoPE past original_max_position_embeddings: per-row short / long table (last input) */
    int64_t rows[1] = {T};
    omnic__tensor *rope_sel =
        d->rope_switch ? omnic__g_input(g, "rope_long", OMNIC_DTYPE_I32, 1, rows, OMNIC_VAR_T) : NULL;
    omnic__tensor *rope_two = rope_sel ? omnic__g_weight(g, d->rope_two) : NULL;
    /* adapters: each row's id (-1: none), the last input */
    const omnic__lora *lo = d->lora;
    int64_t ad[2] = {T, 1};
    omnic__tensor *aid = lo ? omnic__g_input(g, "adapter", OMNIC_DTYPE_I32, 2, ad, OMNIC_VAR_T) : NULL;
    for (int64_t l = 0; l < c->n_layers; l++) {
        const omnic__text_decoder_layer *L = &d->layers[l];
        const omnic__lora_layer *A = lo ? &lo->layers[l] : NULL;
        const bool sliding = c->layer_sliding[l] != 0;
        omnic__tensor *h = norm(g, d, x, &L->attn_norm);
        omnic__tensor *q =
            omnic__g_matmul(g, h, omnic__g_weight(g, &L->wq), L->bq ? omnic__g_weight(g, L->bq) : NULL);
        omnic__tensor *k =
            omnic__g_matmul(g, h, omnic__g_weight(g, &L->wk), L->bk ? omnic__g_weight(g, L->bk) : NULL);
        omnic__tensor *v =
            omnic__g_matmul(g, h, omnic__g_weight(g, &L->wv), L->bv ? omnic__g_weight(g, L->bv) : NULL);
        if (A) {
            omnic__tensor *ta = lora_a(g, lo, h, A->a_qkv, aid);
            q = lora_b(g, q, ta, A->b_q, aid, c->n_heads * hd);
            k = lora_b(g, k, ta, A->b_k, aid, c->n_kv_heads * hd);
            v = lora_b(g, v, ta, A->b_v, aid, c->n_kv_heads * hd);
            if (taps) { /* stage dumps: the adapter-adjusted projections (HF: qkv_proj's output, split) */
                char name[32];
                omnic__tensor *const qkv[3] = {q, k, v};
                for (int j = 0; j < 3; j++) {
                    snprintf(name, sizeof name, "%c_l%lld", "qkv"[j], (long long)l);
                    omnic__g_mark_output(g, qkv[j], name);
                }
            }
        }
        int64_t qs[3] = {T, c->n_heads, hd}, ks[3] = {T, c->n_kv_heads, hd};
        q = omnic__g_reshape(g, q, 3, qs);
        k = omnic__g_reshape(g, k, 3, ks);
        v = omnic__g_reshape(g, v, 3, ks);
        if (c->qk_norm) {
            q = norm(g, d, q, &L->q_norm);
            k = norm(g, d, k, &L->k_norm);
        }
        omnic__tensor *table = sliding && rope_local ? rope_local : rope_global;
        float theta = (float)(sliding && rope_local ? c->rope_local_theta : c->rope_theta);
        float af = sliding && rope_local ? 1.0f : c->rope_attn_factor;
        if (c->mrope) { /* positions [T, 3]: default frequencies split by mrope_section */
            q = omnic__g_rope_mrope(g, q, pos, (int)c->n_rot, theta, table, c->mrope_section,
                                    c->mrope_interleaved, af);
            k = omnic__g_rope_mrope(g, k, pos, (int)c->n_rot, theta, table, c->mrope_section,
                                    c->mrope_interleaved, af);
        } else if (rope_sel && table == rope_global) {
            q = omnic__g_rope_select(g, q, pos, (int)c->n_rot, 0, theta, rope_two, rope_sel, af);
            k = omnic__g_rope_select(g, k, pos, (int)c->n_rot, 0, theta, rope_two, rope_sel, af);
        } else {
            q = omnic__g_rope(g, q, pos, (int)c->n_rot, 0, theta, table, af);
            k = omnic__g_rope(g, k, pos, (int)c->n_rot, 0, theta, table, af);
        }
        omnic__tensor *kc = omnic__g_kv_layer(g, false, (int)l, kv_dtype, kv_rows, c->n_kv_heads, hd);
        omnic__tensor *vc = omnic__g_kv_layer(g, true, (int)l, kv_dtype, kv_rows, c->n_kv_heads, hd);
        kc = omnic__g_set_rows(g, kc, k, kvi);
        vc = omnic__g_set_rows(g, vc, v, kvi);
        const int window = sliding ? (int)c->sliding_window : 0;
        omnic__tensor *a = span ? omnic__g_attention_spans(g, q, kc, vc, kvi, kvb, span, c->attn_scale,
                                                           window, c->attn_softcap)
                                : omnic__g_attention(g, q, kc, vc, kvi, bias, kvb, c->attn_scale, causal,
                                                     window, c->attn_softcap);
        int64_t flat[2] = {T, c->n_heads * hd};
        omnic__tensor *ao = omnic__g_reshape(g, a, 2, flat);
        omnic__tensor *o =
            omnic__g_matmul(g, ao, omnic__g_weight(g, &L->wo), L->bo ? omnic__g_weight(g, L->bo) : NULL);
        if (A) o = lora_b(g, o, lora_a(g, lo, ao, A->a_o, aid), A->b_o, aid, c->hidden);
        if (c->sandwich_norms) o = norm(g, d, o, &L->post_attn_norm);
        x = omnic__g_add(g, x, o);
        h = norm(g, d, x, &L->mlp_norm);
        omnic__tensor *down;
        if (L->experts_gate) { /* routed: each row through its top-k experts, weighted */
            omnic__tensor *logits = omnic__g_matmul(g, h, omnic__g_weight(g, &L->router), NULL);
            omnic__tensor *routed = omnic__g_moe_route(g, logits, (int)c->experts_per_tok);
            if (taps) { /* stage dumps: the router's logits and the experts each row chose */
                char name[40];
                snprintf(name, sizeof name, "router_logits_l%lld", (long long)l);
                omnic__g_mark_output(g, logits, name);
                snprintf(name, sizeof name, "experts_l%lld", (long long)l);
                omnic__g_mark_output(g, routed, name);
            }
            omnic__tensor *rw = omnic__g_moe_weights(g, logits, routed, c->norm_topk);
            const int64_t Im = c->moe_intermediate;
            omnic__tensor *eg =
                omnic__g_matmul_id(g, h, omnic__g_weight(g, L->experts_gate), routed, Im, false);
            omnic__tensor *eu =
                omnic__g_matmul_id(g, h, omnic__g_weight(g, L->experts_up), routed, Im, false);
            omnic__tensor *ea = omnic__g_glu(g, OMNIC_OP_SWIGLU, eg, eu, 0);
            omnic__tensor *ed =
                omnic__g_matmul_id(g, ea, omnic__g_weight(g, L->experts_down), routed, c->hidden, true);
            down = omnic__g_moe_sum(g, ed, rw);
        } else {
            omnic__tensor *gate = omnic__g_matmul(g, h, omnic__g_weight(g, &L->w_gate), NULL);
            omnic__tensor *up = omnic__g_matmul(g, h, omnic__g_weight(g, &L->w_up), NULL);
            if (A) {
                omnic__tensor *ta = lora_a(g, lo, h, A->a_gu, aid);
                gate = lora_b(g, gate, ta, A->b_gate, aid, c->intermediate);
                up = lora_b(g, up, ta, A->b_up, aid, c->intermediate);
            }
            omnic__tensor *act = c->act == OMNIC_ACT_SILU ? omnic__g_glu(g, OMNIC_OP_SWIGLU, gate, up, 0)
                                                          : omnic__g_glu(g, OMNIC_OP_GEGLU, gate, up, 1);
            down = omnic__g_matmul(g, act, omnic__g_weight(g, &L->w_down), NULL);
            if (A) down = lora_b(g, down, lora_a(g, lo, act, A->a_down, aid), A->b_down, aid, c->hidden);
            if (A && taps) { /* the adapter-adjusted MLP output (HF: the mlp module's) */
                char name[32];
                snprintf(name, sizeof name, "mlp_l%lld", (long long)l);
                omnic__g_mark_output(g, down, name);
            }
        }
        if (c->sandwich_norms) down = norm(g, d, down, &L->post_mlp_norm);
        x = omnic__g_add(g, x, down);
        if (deepstack && l < c->n_deepstack) /* Qwen3-VL: the layer's visual features, added to its
                                              * output (in place in HF: its tap sees them too) */
            x = omnic__g_add(g, x, omnic__g_slice(g, deepstack, 1, l * c->hidden, c->hidden));
        if (taps) {
            char name[32];
            snprintf(name, sizeof name, "hidden_l%lld", (long long)l);
            omnic__g_mark_output(g, x, name);
        }
    }
    return finish(d, g, x, head, err);
}

/* The rope coordinates input: i32 [n] or, for M-RoPE, [n, 3] (temporal, height, width). */
static omnic__tensor *positions_input(omnic__graph *g, const omnic__text_config *c)
{
    int64_t dims[2] = {g->capacity, 3};
    return omnic__g_input(g, "positions", OMNIC_DTYPE_I32, c->mrope ? 2 : 1, dims, OMNIC_VAR_T);
}

omnic_status omnic__text_decoder_build(const omnic__text_decoder *d, omnic__module *m, omnic_dtype kv_dtype,
                                       int64_t kv_rows, omnic__text_head head, bool taps, omnic_err *err)
{
    const omnic__text_config *c = &d->cfg;
    omnic__graph *g = &m->graph;
    /* decode (and a prefill the caller asked to match it): a row's result never depends on
     * the other rows of the call */
    g->batch_invariant = head != OMNIC_HEAD_LAST || g->batch_invariant;
    int64_t one[1] = {g->capacity};
    omnic__tensor *tokens = omnic__g_input(g, "tokens", OMNIC_DTYPE_I32, 1, one, OMNIC_VAR_T);
    omnic__tensor *pos = positions_input(g, c);
    omnic__tensor *x = omnic__g_get_rows(g, omnic__g_weight(g, &d->embed), tokens);
    if (c->embed_scale > 0) x = omnic__g_scale(g, x, c->embed_scale, 0.0f);
    if (d->altup && d->altup->hard) /* Gemma 3n: multimodal ids take their hard embeddings */
        x = omnic__g_get_rows_over(g, omnic__g_weight(g, d->altup->hard), tokens, x,
                                   (int32_t)c->mm_vocab_offset);
    if (taps) omnic__g_mark_output(g, x, "inputs_embeds");
    return build_body(d, g, x, tokens, pos, NULL, NULL, NULL, true, kv_dtype, kv_rows, head, taps, err);
}

omnic_status omnic__text_decoder_build_embeddings(const omnic__text_decoder *d, omnic__module *m,
                                                  omnic_dtype kv_dtype, int64_t kv_rows,
                                                  omnic__mask_mode mask, omnic__text_head head, bool taps,
                                                  omnic_err *err)
{
    omnic__graph *g = &m->graph; /* batch_invariant: as the caller set it */
    int64_t emb[2] = {g->capacity, d->cfg.hidden}, bd[2] = {g->capacity, kv_rows};
    omnic__tensor *x = omnic__g_input(g, "inputs_embeds", OMNIC_DTYPE_F32, 2, emb, OMNIC_VAR_T);
    omnic__tensor *pos = positions_input(g, &d->cfg);
    int64_t sd[2] = {g->capacity, 2};
    const bool with_bias = mask == OMNIC_MASK_CAUSAL_BIAS || mask == OMNIC_MASK_BIAS;
    omnic__tensor *bias =
        with_bias ? omnic__g_input(g, "attn_bias", OMNIC_DTYPE_F32, 2, bd, OMNIC_VAR_T) : NULL;
    omnic__tensor *span =
        mask == OMNIC_MASK_SPANS ? omnic__g_input(g, "attn_span", OMNIC_DTYPE_I32, 2, sd, OMNIC_VAR_T) : NULL;
    /* Gemma 3n: the per-layer embeddings' side input, the prompt's logical ids (the
     * projection part is computed here from the merged rows, as HF orders it) */
    omnic__tensor *ids = d->altup ? omnic__g_input(g, "ple_ids", OMNIC_DTYPE_I32, 1, sd, OMNIC_VAR_T) : NULL;
    if (d->altup && (bias || span))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "gemma3n embeddings prefill: only the causal mask");
    /* Qwen3-VL: DeepStack, the visual features added after the first layers (zero on text rows) */
    int64_t dsd[2] = {g->capacity, d->cfg.n_deepstack * d->cfg.hidden};
    omnic__tensor *deepstack =
        d->cfg.n_deepstack > 0 ? omnic__g_input(g, "deepstack", OMNIC_DTYPE_F32, 2, dsd, OMNIC_VAR_T) : NULL;
    return build_body(d, g, x, ids, pos, bias, span, deepstack, mask != OMNIC_MASK_BIAS, kv_dtype, kv_rows,
                      head, taps, err);
}

omnic_status omnic__text_decoder_build_head(const omnic__text_decoder *d, omnic__module *m, omnic_err *err)
{
    omnic__graph *g = &m->graph;
    g->batch_invariant = true;
    int64_t dims[2] = {g->capacity, d->cfg.hidden};
    lm_head(d, g, omnic__g_input(g, "hidden", OMNIC_DTYPE_F32, 2, dims, OMNIC_VAR_T));
    return omnic__graph_status(g, err);
}

omnic_status omnic__text_decoder_embed_rows(const omnic__text_decoder *d, const omnic__backend_ops *b,
                                            const int32_t *ids, int64_t n, float *out, omnic_err *err)
{
    const omnic__text_config *c = &d->cfg;
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "embedding rows: token id [%lld] = %d is outside [0, %lld)", (long long)i,
                              ids[i], (long long)c->vocab);
    if (n <= 0) return OMNIC_OK;
    omnic__tensor idt, dst;
    int64_t id_dims[1] = {n}, out_dims[2] = {n, c->hidden};
    OMNIC_TRY(omnic__tensor_init(&idt, OMNIC_DTYPE_I32, 1, id_dims, err));
    OMNIC_TRY(omnic__tensor_init(&dst, OMNIC_DTYPE_F32, 2, out_dims, err));
    idt.data = (void *)(uintptr_t)ids;
    dst.data = out;
    /* The very kernels the token prefill runs (one thread: both ops are exact per element). */
    omnic__node get = {.op = OMNIC_OP_GET_ROWS, .src = {&d->embed, &idt}, .dst = &dst};
    b->kernel[OMNIC_OP_GET_ROWS](&get, 0, 1, NULL);
    if (c->embed_scale > 0) {
        omnic__node sc = {.op = OMNIC_OP_SCALE, .src = {&dst}, .dst = &dst, .fp = {c->embed_scale, 0.0f}};
        b->kernel[OMNIC_OP_SCALE](&sc, 0, 1, NULL);
    }
    if (d->altup && d->altup->hard) { /* over the text rows, as the graph does */
        omnic__node hr = {.op = OMNIC_OP_GET_ROWS, .src = {d->altup->hard, &idt, &dst}, .dst = &dst};
        hr.ip[0] = (int32_t)c->mm_vocab_offset;
        b->kernel[OMNIC_OP_GET_ROWS](&hr, 0, 1, NULL);
    }
    return OMNIC_OK;
}

omnic_status omnic__text_bias_rows(const float *pb, int64_t T, int64_t kv_start, int64_t n, int slot,
                                   int64_t capacity, int64_t kv_rows, float *out, omnic_err *err)
{
    int64_t end, slot_end;
    if (T < 1 || n < 1 || kv_start < 0 || slot < 0 || capacity < 1 ||
        __builtin_add_overflow(kv_start, n, &end) || end > T || end > capacity ||
        __builtin_mul_overflow((int64_t)slot + 1, capacity, &slot_end) || slot_end > kv_rows)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "attention bias: rows %lld..%lld of a %lld-row prompt into slot %d (%lld rows each, pool "
            "of %lld) do not fit",
            (long long)kv_start, (long long)kv_start + n - 1, (long long)T, slot, (long long)capacity,
            (long long)kv_rows);
    const int64_t base = (int64_t)slot * capacity;
    for (int64_t i = 0; i < n; i++) {
        const float *src = pb + (size_t)(kv_start + i) * (size_t)T;
        float *dst = out + (size_t)i * (size_t)kv_rows;
        for (int64_t j = 0; j < kv_rows; j++)
            dst[j] = OMNIC_MASK_NEG;
        for (int64_t k = 0; k < T; k++) {
            if (!isfinite(src[k]))
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "attention bias [%lld, %lld] is not finite",
                                  (long long)(kv_start + i), (long long)k);
            if (k < end)
                dst[base + k] = src[k];
            else if (src[k] > OMNIC_MASK_NEG / 2)
                return OMNIC_FAIL(
                    err, OMNIC_E_INVALID,
                    "attention bias: row %lld sees key %lld of a later chunk (the chunk ends at %lld; a "
                    "bidirectional span must not be split across prefill chunks)",
                    (long long)(kv_start + i), (long long)k, (long long)end);
        }
    }
    return OMNIC_OK;
}

void omnic__text_mask_visible(const omnic__text_config *c, bool sliding, const omnic__row_span *spans,
                              int64_t n_spans, int64_t T, int32_t *out)
{
    const int64_t W = sliding ? c->sliding_window : 0;
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = 0; j < T; j++)
            out[i * T + j] = j <= i && (W == 0 || i - j < W);
    for (int64_t k = 0; k < n_spans; k++)
        for (int64_t i = spans[k].begin; i < spans[k].end; i++)
            for (int64_t j = spans[k].begin; j < spans[k].end; j++)
                out[i * T + j] = 1;
}
