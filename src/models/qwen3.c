/* Qwen3 (Qwen3ForCausalLM): the Llama decoder with per-head q/k RMSNorm and an explicit
 * head_dim (Qwen3Config default 128) that need not equal hidden / heads. Absent keys take
 * Qwen3Config's defaults (transformers 4.57 / 5.2 configuration_qwen3.py). */
#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"

static const omnic__text_defaults defaults = {.family = "qwen3",
                                              .vocab = 151936,
                                              .hidden = 4096,
                                              .intermediate = 22016,
                                              .n_layers = 32,
                                              .n_heads = 32,
                                              .n_kv_heads = 32,
                                              .head_dim = 128,
                                              .max_pos = 32768,
                                              .rms_eps = 1e-6,
                                              .rope_theta = 10000.0,
                                              .tie = false,
                                              .act_key = "hidden_act",
                                              .act = "silu"};

static const char *const keys[] = {"hidden_act",
                                   "attention_bias",
                                   "use_sliding_window",
                                   "sliding_window",
                                   "max_window_layers",
                                   "layer_types",
                                   NULL};

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_keys_for(cfg, what, keys, err));
    OMNIC_TRY(omnic__text_config_parse(cfg, what, &defaults, out, err));
    OMNIC_TRY(omnic__config_full_attention_only(cfg, what, out->n_layers, err));
    bool bias;
    OMNIC_TRY(omnic__json_get_bool(cfg, "attention_bias", false, false, what, &bias, err));
    out->qkv_bias = bias; /* Qwen3Attention: attention_bias puts biases on q, k, v and o */
    out->o_bias = bias;
    out->qk_norm = true;
    return OMNIC_OK;
}

static const char *const types[] = {"qwen3", NULL};
const omnic__family omnic__family_qwen3 = {.name = "qwen3", .model_types = types, .parse_config = parse};
