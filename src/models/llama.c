/* Llama 2/3 (LlamaForCausalLM): the plain decoder, llama3 rope scaling. Absent keys take
 * LlamaConfig's defaults (transformers 4.57 / 5.2 configuration_llama.py). */
#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"

static const omnic__text_defaults defaults = {.family = "llama",
                                              .vocab = 32000,
                                              .hidden = 4096,
                                              .intermediate = 11008,
                                              .n_layers = 32,
                                              .n_heads = 32,
                                              .max_pos = 2048,
                                              .rms_eps = 1e-6,
                                              .rope_theta = 10000.0,
                                              .tie = false,
                                              .act_key = "hidden_act",
                                              .act = "silu"};

/* LlamaConfig keys beyond the shared decoder ones; pretraining_tp is unused by the 4.57 model. */
static const char *const keys[] = {"hidden_act", "attention_bias", "mlp_bias", "pretraining_tp", NULL};

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_keys_for(cfg, what, keys, err));
    OMNIC_TRY(omnic__text_config_parse(cfg, what, &defaults, out, err));
    bool attention_bias;
    OMNIC_TRY(omnic__json_get_bool(cfg, "attention_bias", false, false, what, &attention_bias, err));
    OMNIC_TRY(omnic__json_expect(cfg, "mlp_bias", "false", what, err));
    out->qkv_bias = attention_bias; /* LlamaAttention: attention_bias on q, k, v and o */
    out->o_bias = attention_bias;
    return OMNIC_OK;
}

static const char *const types[] = {"llama", NULL};
const omnic__family omnic__family_llama = {.name = "llama", .model_types = types, .parse_config = parse};
