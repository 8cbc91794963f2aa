/* Phi-3 / Phi-4-mini (Phi3ForCausalLM): fused qkv_proj and gate_up_proj, partial rotary,
 * LongRoPE short/long factors with an attention factor, optional sliding window. */
#include "io/json.h"
#include "models/family.h"

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__text_config_parse(cfg, what, out, err));
    int64_t window;
    OMNIC_TRY(omnic__json_get_i64(cfg, "sliding_window", false, 0, 0, (int64_t)1 << 31, what, &window, err));
    out->fused_qkv = true;
    out->fused_gate_up = true;
    out->sliding_window = window;
    for (int64_t l = 0; l < out->n_layers; l++) out->layer_sliding[l] = window > 0;
    return OMNIC_OK;
}

static const char *const types[] = {"phi3", NULL};
const omnic__family omnic__family_phi3 = {.name = "phi3", .model_types = types, .parse_config = parse};
