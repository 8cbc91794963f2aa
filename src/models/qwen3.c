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

/* ---- Qwen3-MoE (Qwen3MoeForCausalLM): the same attention; MLPs of layer l are a mixture of
 * experts (Qwen3MoeSparseMoeBlock: router softmax, top num_experts_per_tok, renormalized when
 * norm_topk_prob, experts of moe_intermediate_size) unless l is in mlp_only_layers or
 * (l + 1) % decoder_sparse_step != 0 (then a dense MLP of intermediate_size). Qwen3MoeConfig's
 * defaults (transformers 4.57 configuration_qwen3_moe.py). */

static const omnic__text_defaults moe_defaults = {.family = "qwen3_moe",
                                                  .vocab = 151936,
                                                  .hidden = 2048,
                                                  .intermediate = 6144,
                                                  .n_layers = 24,
                                                  .n_heads = 32,
                                                  .n_kv_heads = 4,
                                                  .head_dim = 0, /* hidden / heads */
                                                  .max_pos = 32768,
                                                  .rms_eps = 1e-6,
                                                  .rope_theta = 10000.0,
                                                  .tie = false,
                                                  .act_key = "hidden_act",
                                                  .act = "silu"};

static const char *const moe_keys[] = {"hidden_act",           "attention_bias",
                                       "use_sliding_window",   "sliding_window",
                                       "max_window_layers",    "layer_types",
                                       "decoder_sparse_step",  "moe_intermediate_size",
                                       "num_experts_per_tok",  "num_experts",
                                       "norm_topk_prob",       "mlp_only_layers",
                                       "output_router_logits", /* training outputs only */
                                       "router_aux_loss_coef", NULL};

/* The MoE settings shared by Qwen3-MoE and Qwen3-VL-MoE text configs. */
omnic_status omnic__qwen3_moe_parse(const json_t *cfg, const char *what, const omnic__moe_defaults *d,
                                    omnic__text_config *c, omnic_err *err)
{
    OMNIC_TRY(omnic__json_get_i64(cfg, "num_experts", false, d->experts, 1, OMNIC_MAX_EXPERTS, what,
                                  &c->n_experts, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "num_experts_per_tok", false, d->per_tok, 1,
                                  OMNIC_MAX_EXPERTS_PER_TOKEN, what, &c->experts_per_tok, err));
    if (c->experts_per_tok > c->n_experts)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: num_experts_per_tok %lld exceeds num_experts %lld", what,
                          (long long)c->experts_per_tok, (long long)c->n_experts);
    OMNIC_TRY(omnic__json_get_i64(cfg, "moe_intermediate_size", false, d->intermediate, 1, 1 << 22, what,
                                  &c->moe_intermediate, err));
    OMNIC_TRY(omnic__json_get_bool(cfg, "norm_topk_prob", false, d->norm_topk, what, &c->norm_topk, err));
    int64_t step;
    OMNIC_TRY(omnic__json_get_i64(cfg, "decoder_sparse_step", false, 1, 1, 1 << 20, what, &step, err));
    for (int64_t l = 0; l < c->n_layers; l++)
        c->layer_moe[l] = (l + 1) % step == 0;
    const json_t *only;
    OMNIC_TRY(omnic__json_get_array(cfg, "mlp_only_layers", false, what, &only, err));
    for (size_t i = 0; only && i < json_array_size(only); i++) {
        const json_t *x = json_array_get(only, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= c->n_layers)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "%s: mlp_only_layers[%zu] must be a layer index below %lld", what, i,
                              (long long)c->n_layers);
        c->layer_moe[json_integer_value(x)] = 0;
    }
    return OMNIC_OK;
}

static omnic_status parse_moe(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_keys_for(cfg, what, moe_keys, err));
    OMNIC_TRY(omnic__text_config_parse(cfg, what, &moe_defaults, out, err));
    OMNIC_TRY(omnic__config_full_attention_only(cfg, what, out->n_layers, err));
    bool bias;
    OMNIC_TRY(omnic__json_get_bool(cfg, "attention_bias", false, false, what, &bias, err));
    out->qkv_bias = bias;
    out->o_bias = bias;
    out->qk_norm = true;
    static const omnic__moe_defaults md = {
        .experts = 128, .per_tok = 8, .intermediate = 768, .norm_topk = false};
    return omnic__qwen3_moe_parse(cfg, what, &md, out, err);
}

static const char *const moe_types[] = {"qwen3_moe", NULL};
const omnic__family omnic__family_qwen3_moe = {
    .name = "qwen3_moe", .model_types = moe_types, .parse_config = parse_moe};
