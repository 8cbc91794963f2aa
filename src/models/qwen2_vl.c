/* Qwen2-VL and Qwen2.5-VL (Qwen2VLForConditionalGeneration, model_type qwen2_vl /
 * qwen2_5_vl): the ViT tower and PatchMerger of models/qwen2vl_vision.h in front of a qwen2
 * text model with M-RoPE (rope_scaling mrope_section). The text keys are at the top level of
 * config.json (transformers 4.x) or under text_config (5.x); weight names in both spellings:
 * model.* / lm_head.weight / visual.* on disk, model.language_model.* / model.visual.*
 * re-rooted. */
#include "io/json.h"
#include "models/family.h"

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    const json_t *tc = json_object_get(cfg, "text_config");
    const json_t *text = json_is_object(tc) && json_object_get(tc, "hidden_size") ? tc : cfg;
    OMNIC_TRY(omnic__family_qwen2.parse_config(text, text == cfg ? what : "config.json text_config", out, err));
    if (!out->mrope)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: a %s checkpoint needs rope_scaling with mrope_section", what,
                          "qwen2_vl");
    out->prefix = "model.";
    out->alt_prefix = "model.language_model.";
    out->lm_head_name = "lm_head.weight";
    out->alt_lm_head_name = "lm_head.weight";
    return OMNIC_OK;
}

static const char *const types[] = {"qwen2_vl", "qwen2_5_vl", NULL};
const omnic__family omnic__family_qwen2_vl = {
    .name = "qwen2_vl", .model_types = types, .parse_config = parse,
    .media = {[OMNIC_MODALITY_IMAGE] = &omnic__media_qwen2vl_image}};
