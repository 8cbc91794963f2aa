/* Qwen3-VL (Qwen3VLForConditionalGeneration, model_type qwen3_vl): the Qwen3-VL tower of
 * models/qwen2vl_vision.h (DeepStack mergers) in front of a Qwen3 text model (q/k norms,
 * explicit head_dim) with interleaved M-RoPE (Qwen3VLTextRotaryEmbedding always interleaves,
 * whatever mrope_interleaved says) and DeepStack: the mergers' features are added to the image
 * rows after the first layers (text.embeddings_prefill's "deepstack" input). Absent keys take
 * Qwen3VLTextConfig's defaults (transformers 4.57.6). Weights: model.language_model.*,
 * lm_head.weight (tied: absent), model.visual.*. */
#include <string.h>

#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"
#include "models/qwen2vl_vision.h"

static const omnic__text_defaults defaults = {.family = "qwen3_vl",
                                              .vocab = 151936,
                                              .hidden = 4096,
                                              .intermediate = 22016,
                                              .n_layers = 32,
                                              .n_heads = 32,
                                              .n_kv_heads = 32,
                                              .head_dim = 128,
                                              .max_pos = 128000,
                                              .rms_eps = 1e-6,
                                              .rope_theta = 5000000.0,
                                              .tie = false,
                                              .act_key = "hidden_act",
                                              .act = "silu",
                                              .mrope = true,
                                              .rope_types = (const char *const[]){"default", NULL}};

static const char *const text_keys[] = {"hidden_act", "attention_bias", NULL};
/* Qwen3VLMoeTextConfig: the same with experts (HF normalizes the top-k weights whatever
 * norm_topk_prob says, and stores the experts fused) */
static const omnic__text_defaults moe_defaults = {.family = "qwen3_vl_moe",
                                                  .vocab = 151936,
                                                  .hidden = 2048,
                                                  .intermediate = 5632,
                                                  .n_layers = 24,
                                                  .n_heads = 16,
                                                  .n_kv_heads = 16,
                                                  .head_dim = 0,
                                                  .max_pos = 128000,
                                                  .rms_eps = 1e-6,
                                                  .rope_theta = 5000000.0,
                                                  .tie = false,
                                                  .act_key = "hidden_act",
                                                  .act = "silu",
                                                  .mrope = true,
                                                  .rope_types = (const char *const[]){"default", NULL}};
static const char *const moe_text_keys[] = {
    "hidden_act",  "attention_bias", "decoder_sparse_step",  "moe_intermediate_size", "num_experts_per_tok",
    "num_experts", "norm_topk_prob", "router_aux_loss_coef", "mlp_only_layers",       NULL};
static const char *const top_keys[] = {
    "text_config",           "vision_config",       "image_token_id",      "video_token_id",
    "vision_start_token_id", "vision_end_token_id", "tie_word_embeddings", NULL};

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_generic(cfg, what, err));
    const char *const *const lists[] = {omnic__config_keys_generic, top_keys, NULL};
    OMNIC_TRY(omnic__json_check_keys(cfg, what, lists, err));
    const json_t *tc;
    OMNIC_TRY(omnic__json_get_obj(cfg, "text_config", true, what, &tc, err));
    const char *top_type;
    OMNIC_TRY(omnic__json_get_str(cfg, "model_type", true, NULL, what, &top_type, err));
    const bool moe = !strcmp(top_type, "qwen3_vl_moe");
    const char *tw = "config.json text_config", *want = moe ? "qwen3_vl_moe_text" : "qwen3_vl_text",
               *type = want;
    OMNIC_TRY(omnic__json_get_str(tc, "model_type", false, type, tw, &type, err));
    if (strcmp(type, want) != 0)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: text_config model_type '%s' is not supported (%s)",
                          what, type, want);
    OMNIC_TRY(omnic__config_check_keys_for(tc, tw, moe ? moe_text_keys : text_keys, err));
    OMNIC_TRY(omnic__text_config_parse(tc, tw, moe ? &moe_defaults : &defaults, out, err));
    if (moe) {
        static const omnic__moe_defaults md = {
            .experts = 60, .per_tok = 4, .intermediate = 1408, .norm_topk = true};
        OMNIC_TRY(omnic__qwen3_moe_parse(tc, tw, &md, out, err));
        out->norm_topk = true; /* Qwen3VLMoeTextSparseMoeBlock always renormalizes */
        out->experts_fused = true;
    }
    bool bias;
    OMNIC_TRY(omnic__json_get_bool(tc, "attention_bias", false, false, tw, &bias, err));
    out->qkv_bias = out->o_bias = bias;
    out->qk_norm = true;
    if (!out->mrope) /* HF reads rope_scaling["mrope_section"] unconditionally */
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: Qwen3-VL needs rope_scaling with mrope_section", tw);
    out->mrope_interleaved = true;
    bool top_tie;
    OMNIC_TRY(omnic__json_get_bool(cfg, "tie_word_embeddings", false, false, what, &top_tie, err));
    if (top_tie != out->tie_embeddings)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: tie_word_embeddings is %s but text_config's is %s (transformers 4.x reads "
                          "text_config's, 5.x the top-level one): ambiguous",
                          what, top_tie ? "true" : "false", out->tie_embeddings ? "true" : "false");
    omnic__qvit_config vc; /* the DeepStack count comes from the tower */
    OMNIC_TRY(omnic__qvit_config_parse(cfg, what, out->hidden, &vc, err));
    out->n_deepstack = vc.n_deepstack;
    if (out->n_deepstack > out->n_layers)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %lld DeepStack mergers for %lld text layers", what,
                          (long long)out->n_deepstack, (long long)out->n_layers);
    out->prefix = "model.language_model.";
    out->lm_head_name = "lm_head.weight";
    return OMNIC_OK;
}

static const char *const types[] = {"qwen3_vl", "qwen3_vl_moe", NULL};
const omnic__family omnic__family_qwen3_vl = {
    .name = "qwen3_vl",
    .model_types = types,
    .parse_config = parse,
    .media = {[OMNIC_MODALITY_IMAGE] = &omnic__media_qwen2vl_image}};
