/* Phi-4-multimodal, the Hugging Face conversion (Phi4MultimodalForCausalLM, model_type
 * phi4_multimodal): a Phi-3 style decoder (fused qkv_proj / gate_up_proj, partial rotary,
 * LongRoPE) at the top level of config.json beside audio_config and vision_config, weights under
 * model.* (lm_head tied unless present), and the audio encoder and its projections under
 * model.embed_tokens_extend.audio_embed.* (models/phi4mm_audio.h, the audio table in
 * models/phi4mm_media.c), the image encoder under model.embed_tokens_extend.image_embed.*
 * (models/phi4mm_vision.h, the image table in models/phi4mm_image.c). Absent keys take Phi4MultimodalConfig's
 * defaults (transformers 4.57 / 5.2 configuration_phi4_multimodal.py). The LoRA adapters the audio and image
 * modes run with come from the checkpoint's speech-lora/ and vision-lora/ folders (PEFT format,
 * models/lora.h), as the HF conversion writes them; audio prompts are served only when speech-lora/ loaded,
 * image prompts only when vision-lora/ did. Not built yet, refused by its model_type: the original
 * remote-code layout (model_type phi4mm, adapters inside the base weights). */
#include <stdio.h>
#include <sys/stat.h>

#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"
#include "models/lora.h"
#include "models/model.h"

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

/* speech-lora/ and vision-lora/ beside the weights: the speech adapter for audio-only prompts,
 * the vision one for prompts with an image (Phi4MMForCausalLM's InputMode rule). */
static omnic_status load_adapters(omnic__model *m, omnic_err *err)
{
    static const struct {
        const char *dir, *name;
        omnic__adapter_mode mode;
    } sets[] = {{"speech-lora", "speech", OMNIC_ADAPTER_SPEECH},
                {"vision-lora", "vision", OMNIC_ADAPTER_VISION}};
    char paths[2][4096];
    const char *dirs[2], *names[2];
    omnic__adapter_mode modes[2];
    int n = 0;
    for (int i = 0; i < 2; i++) {
        struct stat sb;
        snprintf(paths[n], sizeof paths[n], "%s/%s", m->ckpt->dir, sets[i].dir);
        if (stat(paths[n], &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
        dirs[n] = paths[n], names[n] = sets[i].name, modes[n] = sets[i].mode;
        n++;
    }
    if (!n) return OMNIC_OK;
    OMNIC_TRY(omnic__lora_load(&m->dec, dirs, names, n, &m->dec.lora, err));
    for (int i = 0; i < n; i++)
        m->adapter_of[modes[i]] = i;
    return OMNIC_OK;
}

static const char *const types[] = {"phi4_multimodal", NULL};
const omnic__family omnic__family_phi4mm = {.name = "phi4_multimodal",
                                            .model_types = types,
                                            .parse_config = parse,
                                            .media = {[OMNIC_MODALITY_IMAGE] = &omnic__media_phi4mm_image,
                                                      [OMNIC_MODALITY_AUDIO] = &omnic__media_phi4mm_audio},
                                            .load_adapters = load_adapters};
