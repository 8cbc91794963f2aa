/* Gemma 3 vision-language (Gemma3ForConditionalGeneration, model_type gemma3): a SigLIP tower
 * (models/vision.h, post_layernorm on the last layer) and Gemma3MultiModalProjector (average
 * pool to mm_tokens_per_image rows, (1 + w) RMSNorm, x . W) in front of the gemma3_text
 * decoder (text_config, parsed by that family). As HF's Gemma3Config builds them: absent
 * text_config / vision_config are Gemma3TextConfig() / SiglipVisionConfig(). Image rows replace
 * <image_soft_token> after the embedding scale, attend to each other both ways within an image
 * (token_type_ids; prefill only), and the processor writes each <start_of_image> as
 * "\n\n<start_of_image>" + soft tokens + "<end_of_image>\n\n". Gemma3ForConditionalGeneration
 * applies no final logit softcap (transformers 4.57 / 5.2), whatever text_config says. Weight
 * names: language_model.model.*, vision_tower.vision_model.*, multi_modal_projector.* on disk,
 * or the 5.x model.language_model.* / model.vision_tower.* / model.multi_modal_projector.*. */
#include <math.h>
#include <string.h>

#include "io/json.h"
#include "models/config_keys.h"
#include "models/family.h"

static const char *const keys[] = {
    "text_config",     "vision_config",     "mm_tokens_per_image", "boi_token_index",
    "eoi_token_index", "image_token_index", "tie_word_embeddings", NULL};

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_generic(cfg, what, err));
    const char *const *const lists[] = {omnic__config_keys_generic, keys, NULL};
    OMNIC_TRY(omnic__json_check_keys(cfg, what, lists, err));
    const json_t *tc;
    OMNIC_TRY(omnic__json_get_obj(cfg, "text_config", false, what, &tc, err));
    const char *type = "gemma3_text";
    if (tc)
        OMNIC_TRY(omnic__json_get_str(tc, "model_type", false, type, "config.json text_config", &type, err));
    if (strcmp(type, "gemma3_text") != 0)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: gemma3 text_config model_type '%s' is not supported (gemma3_text)", what,
                          type);
    json_t *empty = NULL;
    if (!tc && !(tc = empty = json_object()))
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an empty text_config");
    omnic_status s = omnic__family_gemma3_text.parse_config(tc, "config.json text_config", out, err);
    json_decref(empty);
    if (s != OMNIC_OK) return s;
    /* 4.x ties by text_config's flag (default true); 5.x by the top-level one (default true) */
    bool top_tie;
    OMNIC_TRY(omnic__json_get_bool(cfg, "tie_word_embeddings", false, true, what, &top_tie, err));
    if (top_tie != out->tie_embeddings)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: tie_word_embeddings is %s (or absent: true) but text_config's is %s "
                          "(transformers 4.x reads text_config's, 5.x the top-level one): ambiguous",
                          what, top_tie ? "true" : "false", out->tie_embeddings ? "true" : "false");
    out->final_softcap = 0; /* the conditional-generation head never caps */
    out->prefix = "language_model.model.";
    out->lm_head_name = "language_model.lm_head.weight";
    out->alt_prefix = "model.language_model.";
    out->alt_lm_head_name = "lm_head.weight";
    return OMNIC_OK;
}

static omnic_status token_index(const json_t *cfg, const char *key, int64_t dflt, const char *what,
                                const omnic__text_config *text, int32_t *out, omnic_err *err)
{
    int64_t v;
    OMNIC_TRY(omnic__json_get_i64(cfg, key, false, dflt, 0, INT32_MAX, what, &v, err));
    if (v >= text->vocab)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: %s %lld is outside the vocabulary of %lld", what, key,
                          (long long)v, (long long)text->vocab);
    *out = (int32_t)v;
    return OMNIC_OK;
}

static omnic_status parse_vision(const json_t *cfg, const char *what, const omnic__text_config *text,
                                 omnic__vision_config *c, omnic_err *err)
{
    const json_t *vc;
    OMNIC_TRY(omnic__json_get_obj(cfg, "vision_config", false, what, &vc, err));
    json_t *wrap = NULL; /* absent: SiglipVisionConfig() (not LLaVA's CLIP default) */
    if (!vc && !(wrap = json_pack("{s:{s:s}}", "vision_config", "model_type", "siglip_vision_model")))
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an empty vision_config");
    omnic_status s = omnic__vision_tower_config_parse(wrap ? wrap : cfg, c, err);
    json_decref(wrap);
    if (s != OMNIC_OK) return s;
    if (c->arch != OMNIC_VISION_SIGLIP)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: gemma3 vision_config must be siglip_vision_model",
                          what);
    int64_t tokens;
    OMNIC_TRY(omnic__json_get_i64(cfg, "mm_tokens_per_image", false, 256, 1, 1 << 20, what, &tokens, err));
    /* Gemma3MultiModalProjector: tokens_per_side = int(sqrt(tokens)), kernel = grid // side */
    const int64_t side = (int64_t)sqrt((double)tokens);
    if (side * side != tokens || c->grid % side)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: mm_tokens_per_image %lld must be a square whose side divides the %lld patches "
                          "per side (image_size %lld / patch_size %lld)",
                          what, (long long)tokens, (long long)c->grid, (long long)c->image_size,
                          (long long)c->patch);
    c->projector = OMNIC_PROJ_GEMMA3;
    c->pool = c->grid / side;
    c->feature_index = c->n_layers; /* last_hidden_state: every layer, then post_layernorm */
    c->keep_first = true;
    c->n_out = tokens;
    c->text_hidden = text->hidden;
    c->bidirectional = true;
    OMNIC_TRY(token_index(cfg, "image_token_index", 262144, what, text, &c->image_token_id, err));
    OMNIC_TRY(token_index(cfg, "boi_token_index", 255999, what, text, &c->boi_id, err));
    OMNIC_TRY(token_index(cfg, "eoi_token_index", 256000, what, text, &c->eoi_id, err));
    c->prefix = "vision_tower.vision_model.";
    c->alt_prefix = "model.vision_tower.vision_model.";
    c->proj_prefix = "multi_modal_projector.";
    c->alt_proj_prefix = "model.multi_modal_projector.";
    return OMNIC_OK;
}

static const char *const types[] = {"gemma3", NULL};
const omnic__family omnic__family_gemma3 = {.name = "gemma3",
                                            .model_types = types,
                                            .parse_config = parse,
                                            .parse_vision = parse_vision,
                                            .media = {[OMNIC_MODALITY_IMAGE] = &omnic__media_clip_image}};
