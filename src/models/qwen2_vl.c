/* Qwen2-VL and Qwen2.5-VL (Qwen2VLForConditionalGeneration, model_type qwen2_vl /
 * qwen2_5_vl): the ViT tower and PatchMerger of models/qwen2vl_vision.h in front of a qwen2
 * text model with M-RoPE (rope_scaling mrope_section). As Qwen2VLConfig builds it: the text
 * model is text_config when that is an object (transformers 5.x; the top-level text keys
 * are then not read), else the top-level keys (4.x), with Qwen2VLTextConfig's defaults
 * (Qwen2_5_VLTextConfig has the same). Weight names in both spellings: model.* /
 * lm_head.weight / visual.* on disk, model.language_model.* / model.visual.* re-rooted. */
#include "io/json.h"
#include "models/family.h"
#include "models/qwen2.h"

static const omnic__text_defaults defaults = {.family = "qwen2_vl",
                                              .vocab = 152064,
                                              .hidden = 8192,
                                              .intermediate = 29568,
                                              .n_layers = 80,
                                              .n_heads = 64,
                                              .n_kv_heads = 8,
                                              .max_pos = 32768,
                                              .rms_eps = 1e-5,
                                              .rope_theta = 1000000.0,
                                              .tie = false,
                                              .act_key = "hidden_act",
                                              .act = "silu",
                                              .mrope = true,
                                              .rope_types = (const char *const[]){"default", NULL},
                                              .rope_alias = (const char *const[]){"mrope", "default", NULL}};

/* Qwen2VLConfig's own keys (the tower's: models/qwen2vl_vision.c); vision_token_id is an
 * old spelling nothing reads. */
static const char *const top_keys[] = {
    "text_config",           "vision_config",       "image_token_id",  "video_token_id",
    "vision_start_token_id", "vision_end_token_id", "vision_token_id", NULL};

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    const json_t *tc;
    OMNIC_TRY(omnic__json_get_obj(cfg, "text_config", false, what, &tc, err));
    if (tc) { /* the top level may repeat text keys (inert); the text model reads text_config only */
        /* 4.57 saves every top-level key it was given into text_config too: the token ids are inert there */
        static const char *const text_keys[] = {"image_token_id",      "video_token_id",
                                                "vision_token_id",     "vision_start_token_id",
                                                "vision_end_token_id", NULL};
        OMNIC_TRY(omnic__qwen2_check_keys(cfg, what, top_keys, err));
        OMNIC_TRY(omnic__qwen2_parse_text(tc, "config.json text_config", &defaults, text_keys, out, err));
        /* tying: 5.x reads the top-level flag, 4.x text_config's: they must not disagree */
        const json_t *top = json_object_get(cfg, "tie_word_embeddings"),
                     *inner = json_object_get(tc, "tie_word_embeddings");
        if (top && !json_is_null(top)) {
            bool tie;
            OMNIC_TRY(omnic__json_get_bool(cfg, "tie_word_embeddings", false, false, what, &tie, err));
            if (inner && !json_is_null(inner) && tie != out->tie_embeddings)
                return OMNIC_FAIL(
                    err, OMNIC_E_INVALID,
                    "%s: tie_word_embeddings and text_config's disagree (transformers 4.x reads "
                    "text_config's, 5.x the top level): ambiguous",
                    what);
            out->tie_embeddings = tie;
        }
    } else {
        OMNIC_TRY(omnic__qwen2_parse_text(cfg, what, &defaults, top_keys, out, err));
    }
    if (!out->mrope)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: a %s checkpoint needs rope_scaling with mrope_section",
                          what, "qwen2_vl");
    out->prefix = "model.";
    out->alt_prefix = "model.language_model.";
    out->lm_head_name = "lm_head.weight";
    out->alt_lm_head_name = "lm_head.weight";
    return OMNIC_OK;
}

static const char *const types[] = {"qwen2_vl", "qwen2_5_vl", NULL};
const omnic__family omnic__family_qwen2_vl = {
    .name = "qwen2_vl",
    .model_types = types,
    .parse_config = parse,
    .media = {[OMNIC_MODALITY_IMAGE] = &omnic__media_qwen2vl_image}};
