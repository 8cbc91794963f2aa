/* Qwen2 (Qwen2ForCausalLM): the Llama decoder with q/k/v biases. */
#include "io/json.h"
#include "models/family.h"

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__text_config_parse(cfg, what, out, err));
    bool sliding;
    OMNIC_TRY(omnic__json_get_bool(cfg, "use_sliding_window", false, false, what, &sliding, err));
    if (sliding)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: qwen2 use_sliding_window=true is not supported", what);
    out->qkv_bias = true;
    return OMNIC_OK;
}

static const char *const types[] = {"qwen2", NULL};
const omnic__family omnic__family_qwen2 = {.name = "qwen2", .model_types = types, .parse_config = parse};
