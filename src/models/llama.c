/* Llama 2/3 (LlamaForCausalLM): the plain decoder, llama3 rope scaling. */
#include "io/json.h"
#include "models/family.h"

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__text_config_parse(cfg, what, out, err));
    bool attention_bias, mlp_bias;
    OMNIC_TRY(omnic__json_get_bool(cfg, "attention_bias", false, false, what, &attention_bias, err));
    OMNIC_TRY(omnic__json_get_bool(cfg, "mlp_bias", false, false, what, &mlp_bias, err));
    if (mlp_bias) return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: llama with mlp_bias is not supported", what);
    out->qkv_bias = attention_bias; /* LlamaAttention: attention_bias on q, k, v and o */
    out->o_bias = attention_bias;
    return OMNIC_OK;
}

static const char *const types[] = {"llama", NULL};
const omnic__family omnic__family_llama = {.name = "llama", .model_types = types, .parse_config = parse};
