/* Gemma 3 text (Gemma3ForCausalLM, model_type gemma3_text): (1 + w) RMSNorms in a
 * sandwich around attention and MLP, q/k norms, sqrt(H) embedding scale in the
 * embedding dtype, query_pre_attn_scalar, GeGLU (tanh), sliding-window layers with their
 * own RoPE base beside global layers (linear scaling there), optional soft caps. Absent keys
 * take Gemma3TextConfig's defaults (transformers 4.57 / 5.2 configuration_gemma3.py). */
#include <math.h>
#include <string.h>

#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"

static const omnic__text_defaults defaults = {.family = "gemma3_text",
                                              .vocab = 262208,
                                              .hidden = 2304,
                                              .intermediate = 9216,
                                              .n_layers = 26,
                                              .n_heads = 8,
                                              .n_kv_heads = 4,
                                              .head_dim = 256,
                                              .max_pos = 131072,
                                              .rms_eps = 1e-6,
                                              .rope_theta = 1000000.0,
                                              .tie = true,
                                              .act_key = "hidden_activation",
                                              .act = "gelu_pytorch_tanh",
                                              .rope_local = true,
                                              .rope_local_theta = 10000.0,
                                              .rope_types = (const char *const[]){"default", "linear", NULL}};

/* Gemma3TextConfig keys; hidden_act is not read by HF's Gemma3 (its MLP uses hidden_activation). */
static const char *const keys[] = {"hidden_activation",
                                   "hidden_act",
                                   "query_pre_attn_scalar",
                                   "sliding_window",
                                   "layer_types",
                                   "sliding_window_pattern",
                                   "final_logit_softcapping",
                                   "attn_logit_softcapping",
                                   "rope_local_base_freq",
                                   "attention_bias",
                                   "use_bidirectional_attention",
                                   "_sliding_window_pattern", /* 5.x writes it; nothing reads it back */
                                   NULL};

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *c, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_keys_for(cfg, what, keys, err));
    OMNIC_TRY(omnic__text_config_parse(cfg, what, &defaults, c, err));
    if (c->act != OMNIC_ACT_GELU_TANH)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: hidden_activation must be gelu_pytorch_tanh", what);
    /* bidirectional attention also halves the window (HF: sliding_window // 2 + 1) */
    OMNIC_TRY(omnic__json_expect(cfg, "use_bidirectional_attention", "false", what, err));
    bool bias;
    OMNIC_TRY(omnic__json_get_bool(cfg, "attention_bias", false, false, what, &bias, err));
    c->qkv_bias = bias; /* Gemma3Attention: bias on q, k, v and o */
    c->o_bias = bias;
    c->norm_one_plus = true;
    c->sandwich_norms = true;
    c->qk_norm = true;
    c->embed_scale = (float)sqrt((double)c->hidden);
    double qpas, softcap, attn_softcap;
    OMNIC_TRY(omnic__json_get_f64(cfg, "query_pre_attn_scalar", false, 256.0, 1e-6, 1e9, what, &qpas, err));
    c->attn_scale = (float)pow(qpas, -0.5);
    OMNIC_TRY(omnic__json_get_f64(cfg, "final_logit_softcapping", false, 0, 1e-6, 1e9, what, &softcap, err));
    OMNIC_TRY(
        omnic__json_get_f64(cfg, "attn_logit_softcapping", false, 0, 1e-6, 1e9, what, &attn_softcap, err));
    c->final_softcap = (float)softcap;
    c->attn_softcap = (float)attn_softcap;
    OMNIC_TRY(omnic__json_get_i64(cfg, "sliding_window", false, 4096, 1, (int64_t)1 << 31, what,
                                  &c->sliding_window, err));
    /* Which layers slide: layer_types when present, else every sliding_window_pattern-th layer is global. */
    const json_t *types;
    OMNIC_TRY(omnic__json_get_array(cfg, "layer_types", false, what, &types, err));
    if (types) {
        if ((int64_t)json_array_size(types) != c->n_layers)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: layer_types has %zu entries for %lld layers", what,
                              json_array_size(types), (long long)c->n_layers);
        for (int64_t l = 0; l < c->n_layers; l++) {
            const char *t = json_string_value(json_array_get(types, (size_t)l));
            if (t && !strcmp(t, "sliding_attention"))
                c->layer_sliding[l] = 1;
            else if (t && !strcmp(t, "full_attention"))
                c->layer_sliding[l] = 0;
            else
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "%s: layer_types[%lld] must be sliding_attention or full_attention", what,
                                  (long long)l);
        }
    } else {
        int64_t pattern;
        OMNIC_TRY(
            omnic__json_get_i64(cfg, "sliding_window_pattern", false, 6, 1, 1 << 20, what, &pattern, err));
        for (int64_t l = 0; l < c->n_layers; l++)
            c->layer_sliding[l] = (l + 1) % pattern != 0;
    }
    return OMNIC_OK;
}

static const char *const types[] = {"gemma3_text", NULL};
const omnic__family omnic__family_gemma3_text = {
    .name = "gemma3_text", .model_types = types, .parse_config = parse};
