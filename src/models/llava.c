/* LLaVA (LlavaForConditionalGeneration, model_type llava): a CLIP or SigLIP vision tower
 * (models/vision.h) and a two-layer projector in front of a llama or qwen2 text model
 * (text_config, parsed by that family). Weight names in both spellings: the old on-disk
 * language_model.model.* / language_model.lm_head.weight and the re-rooted (transformers
 * >= 4.52) model.language_model.* / lm_head.weight. */
#include <string.h>

#include "io/json.h"
#include "models/family.h"

static omnic_status text_family(const json_t *cfg, const char *what, const json_t **tc, const omnic__family **fam,
                                omnic_err *err)
{
    OMNIC_TRY(omnic__json_get_obj(cfg, "text_config", true, what, tc, err));
    const char *type;
    OMNIC_TRY(omnic__json_get_str(*tc, "model_type", false, "llama", "config.json text_config", &type, err));
    if (!strcmp(type, "llama")) *fam = &omnic__family_llama;
    else if (!strcmp(type, "qwen2")) *fam = &omnic__family_qwen2;
    else
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: llava text_config model_type '%s' is not supported (llama, qwen2)", what, type);
    return OMNIC_OK;
}

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    const json_t *tc = NULL;
    const omnic__family *fam = NULL;
    OMNIC_TRY(text_family(cfg, what, &tc, &fam, err));
    OMNIC_TRY(fam->parse_config(tc, "config.json text_config", out, err));
    out->prefix = "language_model.model.";
    out->lm_head_name = "language_model.lm_head.weight";
    out->alt_prefix = "model.language_model.";
    out->alt_lm_head_name = "lm_head.weight";
    return OMNIC_OK;
}

static omnic_status parse_vision(const json_t *cfg, const char *what, const omnic__text_config *text,
                                 omnic__vision_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__vision_config_parse(cfg, what, text->hidden, out, err));
    if (out->image_token_id >= text->vocab)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: image_token_index %d is outside the vocabulary of %lld", what,
                          out->image_token_id, (long long)text->vocab);
    return OMNIC_OK;
}

static const char *const types[] = {"llava", NULL};
const omnic__family omnic__family_llava = {
    .name = "llava", .model_types = types, .parse_config = parse, .parse_vision = parse_vision,
    .media = {[OMNIC_MODALITY_IMAGE] = &omnic__media_clip_image}};
