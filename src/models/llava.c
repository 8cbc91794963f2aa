/* LLaVA (LlavaForConditionalGeneration, model_type llava): a CLIP or SigLIP vision tower
 * (models/vision.h) and a two-layer projector in front of a llama or qwen2 text model
 * (text_config, parsed by that family). As LlavaConfig builds them: text_config's
 * model_type defaults to llama and an absent text_config is that class's defaults (the
 * published llava-hf/llava-1.5-7b-hf text_config names no dimension: Llama 7B's).
 * Weight names in both spellings: the old on-disk language_model.model.* /
 * language_model.lm_head.weight and the re-rooted (transformers >= 4.52)
 * model.language_model.* / lm_head.weight. */
#include <string.h>

#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"

/* LlavaConfig's own keys (read by omnic__vision_config_parse), and top-level keys it
 * carries without effect: ignore_index (training), vocab_size and tie_word_embeddings (HF
 * reads both from text_config), use_image_newline_parameter (LLaVA-NeXT only). */
static const char *const keys[] = {"vision_config",
                                   "text_config",
                                   "image_token_index",
                                   "image_token_id",
                                   "projector_hidden_act",
                                   "vision_feature_select_strategy",
                                   "vision_feature_layer",
                                   "image_seq_length",
                                   "multimodal_projector_bias",
                                   "ignore_index",
                                   "vocab_size",
                                   "tie_word_embeddings",
                                   "use_image_newline_parameter",
                                   NULL};

static omnic_status text_family(const json_t *cfg, const char *what, const json_t **tc,
                                const omnic__family **fam, omnic_err *err)
{
    OMNIC_TRY(omnic__json_get_obj(cfg, "text_config", false, what, tc, err));
    const char *type = "llama";
    if (*tc)
        OMNIC_TRY(
            omnic__json_get_str(*tc, "model_type", false, "llama", "config.json text_config", &type, err));
    if (!strcmp(type, "llama"))
        *fam = &omnic__family_llama;
    else if (!strcmp(type, "qwen2"))
        *fam = &omnic__family_qwen2;
    else
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: llava text_config model_type '%s' is not supported (llama, qwen2)", what,
                          type);
    return OMNIC_OK;
}

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_generic(cfg, what, err));
    const char *const *const lists[] = {omnic__config_keys_generic, keys, NULL};
    OMNIC_TRY(omnic__json_check_keys(cfg, what, lists, err));
    const json_t *tc = NULL;
    const omnic__family *fam = NULL;
    OMNIC_TRY(text_family(cfg, what, &tc, &fam, err));
    json_t *empty = NULL;
    if (!tc && !(tc = empty = json_object()))
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an empty text_config");
    omnic_status s = fam->parse_config(tc, "config.json text_config", out, err);
    json_decref(empty);
    if (s != OMNIC_OK) return s;
    /* tying: 4.x reads text_config's flag, 5.x ties when either says so */
    bool top_tie;
    OMNIC_TRY(omnic__json_get_bool(cfg, "tie_word_embeddings", false, false, what, &top_tie, err));
    if (top_tie && !out->tie_embeddings)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "%s: tie_word_embeddings is true but text_config's is false (transformers 4.x unties, 5.x "
            "ties): ambiguous",
            what);
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
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: image_token_index %d is outside the vocabulary of %lld",
                          what, out->image_token_id, (long long)text->vocab);
    return OMNIC_OK;
}

static const char *const types[] = {"llava", NULL};
const omnic__family omnic__family_llava = {.name = "llava",
                                           .model_types = types,
                                           .parse_config = parse,
                                           .parse_vision = parse_vision,
                                           .media = {[OMNIC_MODALITY_IMAGE] = &omnic__media_clip_image}};
