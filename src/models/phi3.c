/* Phi-3 / Phi-4-mini (Phi3ForCausalLM): fused qkv_proj and gate_up_proj, partial rotary,
 * LongRoPE short/long factors with an attention factor, optional sliding window (every
 * layer). Absent keys take Phi3Config's defaults (transformers 4.57 / 5.2
 * configuration_phi3.py: eps 1e-5, original_max_position_embeddings 4096, rope_scaling
 * types "su" and "yarn" renamed longrope). */
#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"

static const omnic__text_defaults defaults = {
    .family = "phi3",
    .vocab = 32064,
    .hidden = 3072,
    .intermediate = 8192,
    .n_layers = 32,
    .n_heads = 32,
    .max_pos = 4096,
    .rms_eps = 1e-5,
    .rope_theta = 10000.0,
    .tie = false,
    .act_key = "hidden_act",
    .act = "silu",
    .partial_rotary = true,
    .original_max_pos = 4096,
    .rope_types = (const char *const[]){"longrope", "default", NULL},
    .rope_alias = (const char *const[]){"su", "longrope", "yarn", "longrope", NULL}};

/* Phi3Config keys, and keys of the checkpoints' remote-code config (Phi-4-mini) that HF's
 * Phi3 ignores: accepted only at the value that matches what HF computes. */
static const char *const keys[] = {"hidden_act",
                                   "original_max_position_embeddings",
                                   "sliding_window",
                                   "resid_pdrop",
                                   "embd_pdrop",
                                   "attention_bias",
                                   "mlp_bias",
                                   "lm_head_bias",
                                   "full_attn_mod",
                                   "interpolate_factor",
                                   NULL};

omnic_status omnic__phi3_layout(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    int64_t window;
    OMNIC_TRY(omnic__json_get_i64(cfg, "sliding_window", false, 0, 1, (int64_t)1 << 31, what, &window, err));
    out->fused_qkv = true;
    out->fused_gate_up = true;
    out->sliding_window = window;
    for (int64_t l = 0; l < out->n_layers; l++)
        out->layer_sliding[l] = window > 0;
    return OMNIC_OK;
}

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_keys_for(cfg, what, keys, err));
    OMNIC_TRY(omnic__text_config_parse(cfg, what, &defaults, out, err));
    OMNIC_TRY(omnic__json_expect(cfg, "attention_bias", "false", what, err));
    OMNIC_TRY(omnic__json_expect(cfg, "mlp_bias", "false", what, err));
    OMNIC_TRY(omnic__json_expect(cfg, "lm_head_bias", "false", what, err));
    OMNIC_TRY(omnic__json_expect(cfg, "full_attn_mod", "1", what, err));
    OMNIC_TRY(omnic__json_expect(cfg, "interpolate_factor", "1", what, err));
    return omnic__phi3_layout(cfg, what, out, err);
}

static const char *const types[] = {"phi3", NULL};
const omnic__family omnic__family_phi3 = {.name = "phi3", .model_types = types, .parse_config = parse};
