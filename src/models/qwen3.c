/* Qwen3 (Qwen3ForCausalLM): the Llama decoder with per-head q/k RMSNorm and an explicit
 * head_dim that need not equal hidden / heads. */
#include "io/json.h"
#include "models/family.h"

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__text_config_parse(cfg, what, out, err));
    bool bias, sliding;
    OMNIC_TRY(omnic__json_get_bool(cfg, "attention_bias", false, false, what, &bias, err));
    OMNIC_TRY(omnic__json_get_bool(cfg, "use_sliding_window", false, false, what, &sliding, err));
    if (sliding)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: qwen3 use_sliding_window=true is not supported", what);
    out->qkv_bias = bias; /* Qwen3Attention: attention_bias puts biases on q, k, v and o */
    out->o_bias = bias;
    out->qk_norm = true;
    return OMNIC_OK;
}

static const char *const types[] = {"qwen3", NULL};
const omnic__family omnic__family_qwen3 = {.name = "qwen3", .model_types = types, .parse_config = parse};
