/* Gemma 3 text (Gemma3ForCausalLM, model_type gemma3_text): (1 + w) RMSNorms in a
 * sandwich around attention and MLP, q/k norms, sqrt(H) embedding scale in the
 * embedding dtype, query_pre_attn_scalar, GeGLU (tanh), sliding-window layers with their
 * own RoPE base beside global layers (linear scaling there), optional soft caps. */
#include <math.h>
#include <string.h>

#include "io/json.h"
#include "models/family.h"

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *c, omnic_err *err)
{
    /* Gemma's defaults differ from Llama's where config.json may omit keys. */
    OMNIC_TRY(omnic__text_config_parse(cfg, what, c, err));
    const char *act;
    OMNIC_TRY(omnic__json_get_str(cfg, "hidden_activation", false, "gelu_pytorch_tanh", what, &act, err));
    if (strcmp(act, "gelu_pytorch_tanh") != 0)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: hidden_activation '%s' is not supported", what, act);
    c->act = OMNIC_ACT_GELU_TANH;
    c->norm_one_plus = true;
    c->sandwich_norms = true;
    c->qk_norm = true;
    c->tie_embeddings = true;
    OMNIC_TRY(omnic__json_get_bool(cfg, "tie_word_embeddings", false, true, what, &c->tie_embeddings, err));
    c->embed_scale = (float)sqrt((double)c->hidden);
    double qpas, softcap, attn_softcap, local_theta;
    OMNIC_TRY(omnic__json_get_f64(cfg, "query_pre_attn_scalar", false, (double)c->head_dim, 1e-6, 1e9, what, &qpas, err));
    c->attn_scale = (float)pow(qpas, -0.5);
    OMNIC_TRY(omnic__json_get_f64(cfg, "final_logit_softcapping", false, 0, 0, 1e9, what, &softcap, err));
    OMNIC_TRY(omnic__json_get_f64(cfg, "attn_logit_softcapping", false, 0, 0, 1e9, what, &attn_softcap, err));
    c->final_softcap = (float)softcap;
    c->attn_softcap = (float)attn_softcap;
    OMNIC_TRY(omnic__json_get_f64(cfg, "rope_local_base_freq", false, 10000.0, 1e-3, 1e12, what, &local_theta, err));
    c->rope_local_theta = local_theta;
    OMNIC_TRY(omnic__json_get_i64(cfg, "sliding_window", false, 4096, 1, (int64_t)1 << 31, what, &c->sliding_window, err));
    if (c->rope_type != OMNIC_ROPE_DEFAULT && c->rope_type != OMNIC_ROPE_LINEAR)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: gemma3 rope_scaling must be linear or absent", what);
    /* Which layers slide: layer_types when present, else every sliding_window_pattern-th layer is global. */
    const json_t *types;
    OMNIC_TRY(omnic__json_get_array(cfg, "layer_types", false, what, &types, err));
    if (types) {
        if ((int64_t)json_array_size(types) != c->n_layers)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: layer_types has %zu entries for %lld layers", what,
                              json_array_size(types), (long long)c->n_layers);
        for (int64_t l = 0; l < c->n_layers; l++) {
            const char *t = json_string_value(json_array_get(types, (size_t)l));
            if (t && !strcmp(t, "sliding_attention")) c->layer_sliding[l] = 1;
            else if (t && !strcmp(t, "full_attention")) c->layer_sliding[l] = 0;
            else
                return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: layer_types[%lld] must be sliding_attention or full_attention",
                                  what, (long long)l);
        }
    } else {
        int64_t pattern;
        OMNIC_TRY(omnic__json_get_i64(cfg, "sliding_window_pattern", false, 6, 1, 1 << 20, what, &pattern, err));
        for (int64_t l = 0; l < c->n_layers; l++) c->layer_sliding[l] = (l + 1) % pattern != 0;
    }
    return OMNIC_OK;
}

static const char *const types[] = {"gemma3_text", NULL};
const omnic__family omnic__family_gemma3_text = {.name = "gemma3_text", .model_types = types, .parse_config = parse};
