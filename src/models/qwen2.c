/* Qwen2 (Qwen2ForCausalLM): the Llama decoder with q/k/v biases. Absent keys take
 * Qwen2Config's defaults (transformers 4.57 / 5.2 configuration_qwen2.py). */
#include "models/qwen2.h"
#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"

static const omnic__text_defaults defaults = {
    .family = "qwen2",
    .vocab = 151936,
    .hidden = 4096,
    .intermediate = 22016,
    .n_layers = 32,
    .n_heads = 32,
    .n_kv_heads = 32,
    .max_pos = 32768,
    .rms_eps = 1e-6,
    .rope_theta = 10000.0,
    .tie = false,
    .act_key = "hidden_act",
    .act = "silu",
    /* not HF: omnic's M-RoPE text path on a plain qwen2 (HF's Qwen2 has no mrope type) */
    .mrope = true,
    .rope_alias = (const char *const[]){"mrope", "default", NULL}};

/* sliding_window / max_window_layers only act with use_sliding_window (refused). */
static const char *const keys[] = {"hidden_act",        "use_sliding_window", "sliding_window",
                                   "max_window_layers", "layer_types",        NULL};

omnic_status omnic__qwen2_check_keys(const json_t *cfg, const char *what, const char *const *extra_keys,
                                     omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_generic(cfg, what, err));
    const char *const *const lists[] = {omnic__config_keys_generic, omnic__config_keys_decoder, keys,
                                        extra_keys, NULL};
    return omnic__json_check_keys(cfg, what, lists, err);
}

omnic_status omnic__qwen2_parse_text(const json_t *cfg, const char *what, const omnic__text_defaults *d,
                                     const char *const *extra_keys, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__qwen2_check_keys(cfg, what, extra_keys, err));
    OMNIC_TRY(omnic__text_config_parse(cfg, what, d, out, err));
    OMNIC_TRY(omnic__config_full_attention_only(cfg, what, out->n_layers, err));
    out->qkv_bias = true; /* Qwen2Attention: q, k, v with bias, o without */
    return OMNIC_OK;
}

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    return omnic__qwen2_parse_text(cfg, what, &defaults, NULL, out, err);
}

static const char *const types[] = {"qwen2", NULL};
const omnic__family omnic__family_qwen2 = {.name = "qwen2", .model_types = types, .parse_config = parse};
