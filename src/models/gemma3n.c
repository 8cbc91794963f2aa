/* Gemma 3n text (Gemma3nForCausalLM, model_type gemma3n_text) and the text part of
 * Gemma3nForConditionalGeneration (model_type gemma3n): the decoder of models/altup_decoder.h.
 * Absent keys take Gemma3nTextConfig's / Gemma3nConfig's defaults (transformers 4.57.6
 * configuration_gemma3n.py). Weight names: model.* (gemma3n_text), model.language_model.* and
 * model.embed_vision.* / model.embed_audio.* (gemma3n). The audio tower of gemma3n is the
 * family's audio table and its vision tower (MobileNetV5) the image table (models/gemma3n_media.c). */
#include <math.h>
#include <string.h>

#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"

static const omnic__text_defaults defaults = {.family = "gemma3n_text",
                                              .vocab = 262400,
                                              .hidden = 2048,
                                              .intermediate = 16384,
                                              .n_layers = 35,
                                              .n_heads = 8,
                                              .n_kv_heads = 2,
                                              .head_dim = 256,
                                              .max_pos = 32768,
                                              .rms_eps = 1e-6,
                                              .rope_theta = 1000000.0,
                                              .tie = true,
                                              .act_key = "hidden_activation",
                                              .act = "gelu_pytorch_tanh",
                                              .rope_local = true,
                                              .rope_local_theta = 10000.0,
                                              .rope_types = (const char *const[]){"default", "linear", NULL}};

static const char *const keys[] = {"hidden_activation",
                                   "query_pre_attn_scalar", /* unused: Gemma3nTextAttention scales by 1 */
                                   "sliding_window",
                                   "layer_types",
                                   "final_logit_softcapping",
                                   "rope_local_base_freq",
                                   "attention_bias",
                                   "vocab_size_per_layer_input",
                                   "hidden_size_per_layer_input",
                                   "num_kv_shared_layers",
                                   "laurel_rank",
                                   "altup_active_idx",
                                   "altup_coef_clip",
                                   "altup_correct_scale",
                                   "altup_num_inputs",
                                   "altup_lr_multiplier", /* training only */
                                   "activation_sparsity_pattern",
                                   NULL};

/* The standard-normal quantile of p in (0, 1), as torch's Normal(0, 1).icdf in f32:
 * sqrt(2) * erfinv(2p - 1), here by bisection on erf in double, then rounded. */
static float normal_icdf(double p)
{
    double lo = -40, hi = 40, y = 2 * p - 1;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (erf(mid) < y)
            lo = mid;
        else
            hi = mid;
    }
    return (float)(sqrt(2.0) * 0.5 * (lo + hi));
}

/* A per-layer list key: a number for every layer, or a list of n_layers numbers. */
static omnic_status per_layer(const json_t *cfg, const char *key, const char *what, int64_t n, double *out,
                              bool *present, omnic_err *err)
{
    const json_t *v = json_object_get(cfg, key);
    *present = v && !json_is_null(v);
    if (!*present) return OMNIC_OK;
    if (json_is_number(v)) {
        for (int64_t l = 0; l < n; l++)
            out[l] = json_number_value(v);
        return OMNIC_OK;
    }
    if (!json_is_array(v) || (int64_t)json_array_size(v) != n)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %s must be a number or a list of %lld numbers", what,
                          key, (long long)n);
    for (int64_t l = 0; l < n; l++) {
        const json_t *x = json_array_get(v, (size_t)l);
        if (!json_is_number(x))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %s[%lld] is not a number", what, key, (long long)l);
        out[l] = json_number_value(x);
    }
    return OMNIC_OK;
}

static omnic_status parse_text(const json_t *cfg, const char *what, omnic__text_config *c, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_keys_for(cfg, what, keys, err));
    /* intermediate_size: one number or one per layer (omnic: all layers alike) */
    int64_t n_layers;
    OMNIC_TRY(omnic__json_get_i64(cfg, "num_hidden_layers", false, defaults.n_layers, 1, OMNIC_MAX_LAYERS,
                                  what, &n_layers, err));
    double vals[OMNIC_MAX_LAYERS];
    bool has;
    OMNIC_TRY(per_layer(cfg, "intermediate_size", what, n_layers, vals, &has, err));
    json_t *flat = json_deep_copy(cfg);
    if (!flat) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory copying %s", what);
    if (has) {
        for (int64_t l = 1; l < n_layers; l++)
            if (vals[l] != vals[0]) {
                json_decref(flat);
                return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                                  "%s: intermediate_size differs between layers (%g at 0, %g at %lld): omnic "
                                  "supports one size for every layer",
                                  what, vals[0], vals[l], (long long)l);
            }
        json_object_set_new(flat, "intermediate_size", json_integer((json_int_t)vals[0]));
    }
    omnic_status s = omnic__text_config_parse(flat, what, &defaults, c, err);
    json_decref(flat);
    OMNIC_TRY(s);
    if (c->act != OMNIC_ACT_GELU_TANH)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: hidden_activation must be gelu_pytorch_tanh", what);
    OMNIC_TRY(omnic__json_expect(cfg, "attention_bias", "false", what, err));
    c->norm_one_plus = false; /* Gemma3nRMSNorm: x / rms * w */
    c->sandwich_norms = true;
    c->qk_norm = true;
    c->v_norm = true;
    c->attn_scale = 1.0f; /* Gemma3nTextAttention: scaling=1.0 (query_pre_attn_scalar unused) */
    c->embed_scale = (float)sqrt((double)c->hidden);
    double softcap;
    OMNIC_TRY(
        omnic__json_get_f64(cfg, "final_logit_softcapping", false, 30.0, 1e-6, 1e9, what, &softcap, err));
    c->final_softcap = (float)softcap;
    OMNIC_TRY(omnic__json_get_i64(cfg, "sliding_window", false, 512, 1, (int64_t)1 << 31, what,
                                  &c->sliding_window, err));
    const json_t *types;
    OMNIC_TRY(omnic__json_get_array(cfg, "layer_types", false, what, &types, err));
    if (types && (int64_t)json_array_size(types) != c->n_layers)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: layer_types has %zu entries for %lld layers", what,
                          json_array_size(types), (long long)c->n_layers);
    for (int64_t l = 0; l < c->n_layers; l++) {
        const char *t = types ? json_string_value(json_array_get(types, (size_t)l)) : NULL;
        if (!types)
            c->layer_sliding[l] = (l + 1) % 5 != 0; /* Gemma3nTextConfig's default pattern */
        else if (t && !strcmp(t, "sliding_attention"))
            c->layer_sliding[l] = 1;
        else if (t && !strcmp(t, "full_attention"))
            c->layer_sliding[l] = 0;
        else
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "%s: layer_types[%lld] must be sliding_attention or full_attention", what,
                              (long long)l);
    }
    const int64_t big = (int64_t)1 << 31;
    OMNIC_TRY(omnic__json_get_i64(cfg, "altup_num_inputs", false, 4, 1, big, what, &c->altup, err));
    if (c->altup > 4)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: altup_num_inputs %lld: omnic supports 1..4", what,
                          (long long)c->altup);
    OMNIC_TRY(
        omnic__json_get_i64(cfg, "altup_active_idx", false, 0, 0, c->altup - 1, what, &c->altup_active, err));
    double clip;
    const json_t *cj = json_object_get(cfg, "altup_coef_clip");
    if (cj && json_is_null(cj))
        clip = 0; /* None: no clamp */
    else
        OMNIC_TRY(omnic__json_get_f64(cfg, "altup_coef_clip", false, 120.0, 1e-9, 1e30, what, &clip, err));
    c->altup_coef_clip = (float)clip;
    OMNIC_TRY(
        omnic__json_get_bool(cfg, "altup_correct_scale", false, true, what, &c->altup_correct_scale, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "laurel_rank", false, 64, 1, 1 << 20, what, &c->laurel_rank, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "hidden_size_per_layer_input", false, 256, 1, 1 << 20, what,
                                  &c->ple_dim, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "vocab_size_per_layer_input", false, 262144, 1, big, what,
                                  &c->ple_vocab, err));
    if ((double)c->n_layers * (double)c->ple_dim > (double)(1 << 24))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: %lld layers x hidden_size_per_layer_input %lld is too wide", what,
                          (long long)c->n_layers, (long long)c->ple_dim);
    /* activation sparsity: default 0.95 on the first 10 layers when there are more than 10 */
    double sp[OMNIC_MAX_LAYERS];
    OMNIC_TRY(per_layer(cfg, "activation_sparsity_pattern", what, c->n_layers, sp, &has, err));
    for (int64_t l = 0; l < c->n_layers; l++) {
        double p = has ? sp[l] : (c->n_layers > 10 && l < 10 ? 0.95 : 0.0);
        if (!(p >= 0 && p < 1))
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "%s: activation_sparsity_pattern[%lld] = %g is outside [0, 1)", what,
                              (long long)l, p);
        c->sparsity_z[l] = p > 0 ? normal_icdf(p) : 0.0f;
        if (p > 0 && c->sparsity_z[l] == 0.0f) c->sparsity_z[l] = 1e-30f; /* p = 0.5: cut at the mean */
    }
    /* KV sharing: layers from n - shared on attend over the last earlier layer of their type */
    int64_t shared;
    OMNIC_TRY(
        omnic__json_get_i64(cfg, "num_kv_shared_layers", false, 15, 0, c->n_layers, what, &shared, err));
    const int64_t first = c->n_layers - shared;
    c->n_kv_layers = first > 0 ? first : c->n_layers;
    for (int64_t l = c->n_kv_layers; l < c->n_layers; l++) {
        int64_t src = -1;
        for (int64_t k = first - 1; k >= 0 && src < 0; k--)
            if (c->layer_sliding[k] == c->layer_sliding[l]) src = k;
        if (src < 0)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "%s: layer %lld shares the KV cache of an earlier %s layer, but layers 0..%lld "
                              "have none (num_kv_shared_layers %lld)",
                              what, (long long)l, c->layer_sliding[l] ? "sliding" : "full",
                              (long long)first - 1, (long long)shared);
        c->kv_layer[l] = (int16_t)src;
    }
    c->mm_rms_eps = c->rms_eps;
    return OMNIC_OK;
}

static const char *const text_types[] = {"gemma3n_text", NULL};
const omnic__family omnic__family_gemma3n_text = {
    .name = "gemma3n_text", .model_types = text_types, .parse_config = parse_text};

/* ---- Gemma3nForConditionalGeneration (text only) ---- */

static const char *const top_keys[] = {"text_config",
                                       "vision_config",
                                       "audio_config",
                                       "audio_soft_tokens_per_image",
                                       "vision_soft_tokens_per_image",
                                       "boi_token_id",
                                       "eoi_token_id",
                                       "image_token_id",
                                       "boa_token_id",
                                       "eoa_token_id",
                                       "audio_token_id",
                                       "tie_word_embeddings",
                                       NULL};

/* A multimodal sub-config's embedder settings (Gemma3nVisionConfig / Gemma3nAudioConfig). */
static omnic_status embedder(const json_t *cfg, const char *key, int64_t d_offset, int64_t d_vocab,
                             int64_t *offset, int64_t *vocab, double *eps, omnic_err *err)
{
    const json_t *sc;
    char w[64];
    snprintf(w, sizeof w, "config.json %s", key);
    OMNIC_TRY(omnic__json_get_obj(cfg, key, false, "config.json", &sc, err));
    json_t *empty = NULL;
    if (!sc && !(sc = empty = json_object())) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory");
    omnic_status s = omnic__json_get_i64(sc, "vocab_offset", false, d_offset, 0, INT32_MAX, w, offset, err);
    if (s == OMNIC_OK) s = omnic__json_get_i64(sc, "vocab_size", false, d_vocab, 1, 1 << 20, w, vocab, err);
    if (s == OMNIC_OK) s = omnic__json_get_f64(sc, "rms_norm_eps", false, 1e-6, 0, 1, w, eps, err);
    json_decref(empty);
    return s;
}

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_generic(cfg, what, err));
    const char *const *const lists[] = {omnic__config_keys_generic, top_keys, NULL};
    OMNIC_TRY(omnic__json_check_keys(cfg, what, lists, err));
    const json_t *tc;
    OMNIC_TRY(omnic__json_get_obj(cfg, "text_config", false, what, &tc, err));
    const char *type = "gemma3n_text";
    if (tc)
        OMNIC_TRY(omnic__json_get_str(tc, "model_type", false, type, "config.json text_config", &type, err));
    if (strcmp(type, "gemma3n_text") != 0)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: gemma3n text_config model_type '%s' is not supported (gemma3n_text)", what,
                          type);
    json_t *empty = NULL;
    if (!tc && !(tc = empty = json_object()))
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an empty text_config");
    omnic_status s = parse_text(tc, "config.json text_config", out, err);
    json_decref(empty);
    OMNIC_TRY(s);
    bool top_tie;
    OMNIC_TRY(omnic__json_get_bool(cfg, "tie_word_embeddings", false, true, what, &top_tie, err));
    if (!top_tie || !out->tie_embeddings)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: Gemma3nForConditionalGeneration ties lm_head to the embeddings; "
                          "tie_word_embeddings false is not supported",
                          what);
    int64_t vo, vv, ao, av;
    double veps, aeps;
    OMNIC_TRY(embedder(cfg, "vision_config", 262144, 128, &vo, &vv, &veps, err));
    OMNIC_TRY(embedder(cfg, "audio_config", 262272, 128, &ao, &av, &aeps, err));
    if (ao != vo + vv || ao + av != out->vocab || vo < out->ple_vocab)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "%s: the multimodal ids must follow the text ones: vision [%lld, %lld), audio [%lld, "
            "%lld), vocab_size %lld, vocab_size_per_layer_input %lld",
            what, (long long)vo, (long long)(vo + vv), (long long)ao, (long long)(ao + av),
            (long long)out->vocab, (long long)out->ple_vocab);
    if (veps != aeps)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: vision and audio rms_norm_eps differ (%g, %g)", what,
                          veps, aeps);
    out->mm_vocab_offset = vo;
    out->mm_rms_eps = veps;
    out->prefix = "model.language_model.";
    out->mm_prefix = "model.";
    return OMNIC_OK;
}

static const char *const types[] = {"gemma3n", NULL};
const omnic__family omnic__family_gemma3n = {.name = "gemma3n",
                                             .model_types = types,
                                             .parse_config = parse,
                                             .media = {[OMNIC_MODALITY_IMAGE] = &omnic__media_gemma3n_image,
                                                       [OMNIC_MODALITY_AUDIO] = &omnic__media_gemma3n_audio}};
