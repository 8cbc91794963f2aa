/* Phi-4-multimodal, the Hugging Face conversion (Phi4MultimodalForCausalLM, model_type
 * phi4_multimodal): a Phi-3 style decoder (fused qkv_proj / gate_up_proj, partial rotary,
 * LongRoPE) at the top level of config.json beside audio_config and vision_config, weights under
 * model.* (lm_head tied unless present), and the audio encoder and its projections under
 * model.embed_tokens_extend.audio_embed.* (models/phi4mm_audio.h, the audio table in
 * models/phi4mm_media.c). Absent keys take Phi4MultimodalConfig's defaults (transformers 4.57 /
 * 5.2 configuration_phi4_multimodal.py). Not built yet, each refused by name where it would
 * matter: the vision tower (image input), the original remote-code layout (model_type phi4mm),
 * and the LoRA adapters the audio and image modes run with (a prompt that needs them is refused
 * by the engine). */
#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"

static const omnic__text_defaults defaults = {
    .family = "phi4_multimodal",
    .vocab = 200064,
    .hidden = 3072,
    .intermediate = 8192,
    .n_layers = 32,
    .n_heads = 32,
    .n_kv_heads = 8,
    .max_pos = 131072,
    .rms_eps = 1e-5,
    .rope_theta = 10000.0,
    .tie = false,
    .act_key = "hidden_act",
    .act = "silu",
    .partial_rotary = true,
    .original_max_pos = 4096,
    .rope_types = (const char *const[]){"longrope", "default", NULL},
    .rope_alias = (const char *const[]){"su", "longrope", "yarn", "longrope", NULL}};

/* Phi4MultimodalConfig keys beyond the shared decoder ones. */
static const char *const keys[] = {"hidden_act",     "original_max_position_embeddings",
                                   "sliding_window", "resid_pdrop",
                                   "embd_pdrop",     "vision_config",
                                   "audio_config",   NULL};

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_keys_for(cfg, what, keys, err));
    OMNIC_TRY(omnic__text_config_parse(cfg, what, &defaults, out, err));
    return omnic__phi3_layout(cfg, what, out, err);
}

static const char *const types[] = {"phi4_multimodal", NULL};
const omnic__family omnic__family_phi4mm = {.name = "phi4_multimodal",
                                            .model_types = types,
                                            .parse_config = parse,
                                            .media = {[OMNIC_MODALITY_AUDIO] = &omnic__media_phi4mm_audio}};
