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
#include <string.h>
#include <sys/stat.h>

#include "io/checkpoint.h"
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

/* Phi4MultimodalConfig keys beyond the shared decoder ones (speech_lora / vision_lora: kept from
 * an original layout's config for its adapters). */
static const char *const keys[] = {"hidden_act",     "original_max_position_embeddings",
                                   "sliding_window", "resid_pdrop",
                                   "embd_pdrop",     "vision_config",
                                   "audio_config",   "speech_lora",
                                   "vision_lora",    NULL};

static omnic_status parse(const json_t *cfg, const char *what, omnic__text_config *out, omnic_err *err)
{
    OMNIC_TRY(omnic__config_check_keys_for(cfg, what, keys, err));
    OMNIC_TRY(omnic__text_config_parse(cfg, what, &defaults, out, err));
    return omnic__phi3_layout(cfg, what, out, err);
}

/* The original layout's adapters: speech_lora / vision_lora {r, lora_alpha, dp, layer} of the
 * config and the base weights' <module>.lora_{A,B}.{speech,vision}.weight. */
/* The original layout's adapters: the base weights' <module>.lora_{A,B}.{speech,vision}.weight (an
 * adapter whose first layer's qkv_proj has none is absent), with r and lora_alpha of the config's
 * speech_lora / vision_lora {r, lora_alpha, dp, layer}, else the values the conversion script
 * writes (speech r 320, alpha 640; vision r 256, alpha 512). */
static omnic_status load_original_adapters(omnic__model *m, omnic_err *err)
{
    static const struct {
        const char *key, *name;
        omnic__adapter_mode mode;
        int64_t r;
        double alpha;
    } sets[] = {{"speech_lora", "speech", OMNIC_ADAPTER_SPEECH, 320, 640},
                {"vision_lora", "vision", OMNIC_ADAPTER_VISION, 256, 512}};
    static const char *const lora_keys[] = {"r", "lora_alpha", "dp", "layer", NULL};
    const char *const *const lists[] = {lora_keys, NULL};
    omnic__lora_source src[2];
    omnic__adapter_mode modes[2];
    int n = 0;
    for (int i = 0; i < 2; i++) {
        char what[64];
        snprintf(what, sizeof what, "model.layers.0.self_attn.qkv_proj.lora_A.%s.weight", sets[i].name);
        if (!omnic__st_find(m->ckpt->weights, what)) continue;
        src[n] = (omnic__lora_source){.name = sets[i].name,
                                      .st = m->ckpt->weights,
                                      .key = sets[i].name,
                                      .r = sets[i].r,
                                      .alpha = sets[i].alpha,
                                      .what = sets[i].key};
        const json_t *o = json_object_get(m->ckpt->config, sets[i].key);
        if (o) {
            snprintf(what, sizeof what, "config.json %s", sets[i].key);
            OMNIC_TRY(omnic__json_check_keys(o, what, lists, err));
            OMNIC_TRY(omnic__json_get_i64(o, "r", true, 0, 1, 4096, what, &src[n].r, err));
            OMNIC_TRY(omnic__json_get_f64(o, "lora_alpha", true, 0, 1e-6, 1e6, what, &src[n].alpha, err));
        }
        modes[n++] = sets[i].mode;
    }
    if (!n) return OMNIC_OK;
    OMNIC_TRY(omnic__lora_build(&m->dec, src, n, &m->dec.lora, err));
    for (int i = 0; i < n; i++)
        m->adapter_of[modes[i]] = i;
    return OMNIC_OK;
}

/* speech-lora/ and vision-lora/ beside the weights: the speech adapter for audio-only prompts,
 * the vision one for prompts with an image (Phi4MMForCausalLM's InputMode rule); the original
 * layout's come from its base weights. */
static omnic_status load_adapters(omnic__model *m, omnic_err *err)
{
    if (m->family == &omnic__family_phi4mm_original) return load_original_adapters(m, err);
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

/* ---- the original remote-code layout (model_type phi4mm) ------------------------------------------ */

/* The name an original checkpoint stores a converted name under (the conversion script's
 * STATE_DICT_MAPPING read backwards; the decoder's linears carry their LoRA as base_layer.). */
static bool original_name(const char *name, char *out, size_t cap)
{
    static const char AE[] = "model.embed_tokens_extend.audio_embed.",
                      IE[] = "model.embed_tokens_extend.image_embed.",
                      ENC[] = "model.embed_tokens_extend.audio_embed.encoder.encoders.";
    static const struct {
        const char *scope, *hf, *orig;
    } rules[] = {
        {ENC, ".feed_forward_in.gate_up_proj.", ".feed_forward_in.net.0.linear."},
        {ENC, ".feed_forward_out.gate_up_proj.", ".feed_forward_out.net.0.linear."},
        {ENC, ".feed_forward_in.down_proj.", ".feed_forward_in.net.2."},
        {ENC, ".feed_forward_out.down_proj.", ".feed_forward_out.net.2."},
        {ENC, ".self_attn.q_proj.", ".self_attn.linear_q."},
        {ENC, ".self_attn.k_proj.", ".self_attn.linear_k."},
        {ENC, ".self_attn.v_proj.", ".self_attn.linear_v."},
        {ENC, ".self_attn.o_proj.", ".self_attn.linear_out."},
        {IE, "image_embed.img_projection_up.", "image_embed.img_projection.0."},
        {IE, "image_embed.img_projection_down.", "image_embed.img_projection.2."},
        {IE, "image_embed.global_img_feature_extensor", "image_embed.glb_GN"},
        {IE, "image_embed.sub_img_feature_extensor", "image_embed.sub_GN"},
        {AE, "audio_embed.up_proj_for_speech.", "audio_embed.audio_projection.speech.0."},
        {AE, "audio_embed.down_proj_for_speech.", "audio_embed.audio_projection.speech.2."},
        {AE, "audio_embed.up_proj_for_vision_speech.", "audio_embed.audio_projection.vision.0."},
        {AE, "audio_embed.down_proj_for_vision_speech.", "audio_embed.audio_projection.vision.2."},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const char *at;
        if (strncmp(name, rules[i].scope, strlen(rules[i].scope)) || !(at = strstr(name, rules[i].hf)))
            continue;
        int n =
            snprintf(out, cap, "%.*s%s%s", (int)(at - name), name, rules[i].orig, at + strlen(rules[i].hf));
        return n > 0 && (size_t)n < cap;
    }
    static const char layers[] = "model.layers.", tail[] = "_proj.weight";
    const size_t len = strlen(name);
    if (!strncmp(name, layers, sizeof layers - 1) && len > sizeof tail &&
        !strcmp(name + len - (sizeof tail - 1), tail)) { /* ..._proj.weight -> ..._proj.base_layer.weight */
        int n = snprintf(out, cap, "%.*sbase_layer.weight", (int)(len - 6), name);
        return n > 0 && (size_t)n < cap;
    }
    return false;
}

static omnic_status set_new(json_t *o, const char *key, json_t *v, omnic_err *err)
{
    if (!v || json_object_set_new(o, key, v))
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory converting config.json");
    return OMNIC_OK;
}

/* embd_layer (checked: the layout the conversion supports) -> vision_config {crop_size}, and the
 * audio embedding's downsample_rate into audio. */
static omnic_status convert_embd(const json_t *e, json_t *out, json_t *audio, omnic_err *err)
{
    static const char *const top[] = {"embedding_cls", "image_embd_layer", "audio_embd_layer", NULL};
    static const char *const img[] = {"crop_size",
                                      "embedding_cls",
                                      "enable_gradient_checkpointing",
                                      "hd_transform_order",
                                      "image_token_compression_cls",
                                      "projection_cls",
                                      "use_hd_transform",
                                      "with_learnable_separator",
                                      NULL};
    static const char *const aud[] = {
        "compression_rate", "downsample_rate",     "embedding_cls", "enable_gradient_checkpointing",
        "projection_cls",   "use_conv_downsample", "use_qformer",   NULL};
    const char *const *const lt[] = {top, NULL}, *const *const li[] = {img, NULL},
                             *const *const la[] = {aud, NULL};
    const char *W = "config.json embd_layer", *WI = "config.json embd_layer.image_embd_layer",
               *WA = "config.json embd_layer.audio_embd_layer";
    if (!json_is_object(e)) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: an object is required", W);
    OMNIC_TRY(omnic__json_check_keys(e, W, lt, err));
    OMNIC_TRY(omnic__json_expect(e, "embedding_cls", "\"image_audio\"", W, err));
    const json_t *i = json_object_get(e, "image_embd_layer"), *a = json_object_get(e, "audio_embd_layer");
    if (!json_is_object(i) || !json_is_object(a))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "%s: image_embd_layer and audio_embd_layer objects are required", W);
    OMNIC_TRY(omnic__json_check_keys(i, WI, li, err));
    OMNIC_TRY(omnic__json_check_keys(a, WA, la, err));
    OMNIC_TRY(omnic__json_expect(i, "embedding_cls", "\"tune_image\"", WI, err));
    OMNIC_TRY(omnic__json_expect(i, "hd_transform_order", "\"sub_glb\"", WI, err));
    OMNIC_TRY(omnic__json_expect(i, "image_token_compression_cls", "\"avg_pool_2d\"", WI, err));
    OMNIC_TRY(omnic__json_expect(i, "projection_cls", "\"mlp\"", WI, err));
    OMNIC_TRY(omnic__json_expect(i, "use_hd_transform", "true", WI, err));
    OMNIC_TRY(omnic__json_expect(i, "with_learnable_separator", "true", WI, err));
    OMNIC_TRY(omnic__json_expect(a, "embedding_cls", "\"audio\"", WA, err));
    OMNIC_TRY(omnic__json_expect(a, "projection_cls", "\"mlp\"", WA, err));
    OMNIC_TRY(omnic__json_expect(a, "use_conv_downsample", "false", WA, err));
    OMNIC_TRY(omnic__json_expect(a, "use_qformer", "false", WA, err));
    int64_t crop, down;
    OMNIC_TRY(omnic__json_get_i64(i, "crop_size", false, 448, 1, 4096, WI, &crop, err));
    OMNIC_TRY(omnic__json_get_i64(a, "downsample_rate", false, 1, 1, 64, WA, &down, err));
    json_t *v = json_object();
    OMNIC_TRY(set_new(out, "vision_config", v, err));
    OMNIC_TRY(set_new(v, "crop_size", json_integer(crop), err));
    return set_new(audio, "downsample_rate", json_integer(down), err);
}

/* audio_processor {config, name "cascades"} -> audio_config (the script's renames; the keys it
 * drops must be what the converted encoder computes). */
static omnic_status convert_audio(const json_t *ap, json_t **audio, omnic_err *err)
{
    const char *W = "config.json audio_processor", *WC = "config.json audio_processor.config";
    static const char *const top[] = {"config", "name", NULL};
    const char *const *const lt[] = {top, NULL};
    if (!json_is_object(ap)) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: an object is required", W);
    OMNIC_TRY(omnic__json_check_keys(ap, W, lt, err));
    OMNIC_TRY(omnic__json_expect(ap, "name", "\"cascades\"", W, err));
    const json_t *c = json_object_get(ap, "config");
    if (!json_is_object(c)) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: a config object is required", W);
    OMNIC_TRY(omnic__json_expect(c, "batch_norm", "false", WC, err));
    OMNIC_TRY(omnic__json_expect(c, "bias_in_glu", "true", WC, err));
    OMNIC_TRY(omnic__json_expect(c, "causal", "true", WC, err));
    OMNIC_TRY(omnic__json_expect(c, "cnn_layer_norm", "true", WC, err));
    OMNIC_TRY(omnic__json_expect(c, "ext_pw_kernel_size", "1", WC, err));
    OMNIC_TRY(omnic__json_expect(c, "input_layer", "\"nemo_conv\"", WC, err));
    json_t *a = json_deep_copy(c);
    *audio = a;
    if (!a) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory converting config.json");
    static const char *const drop[] = {
        "activation_checkpointing", "cnn_layer_norm",     "input_layer", "batch_norm",
        "encoder_embedding_config", "ext_pw_kernel_size", "bias_in_glu", "causal"};
    const json_t *ee = json_object_get(c, "encoder_embedding_config");
    if (ee && !json_equal(json_object_get(ee, "input_size"), json_object_get(c, "input_size")))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: encoder_embedding_config.input_size differs from input_size", WC);
    for (size_t k = 0; k < sizeof drop / sizeof drop[0]; k++)
        json_object_del(a, drop[k]);
    static const char *const renames[][2] = {
        {"attention_dim", "hidden_size"},
        {"attention_heads", "num_attention_heads"},
        {"linear_units", "intermediate_size"},
        {"depthwise_seperable_out_channel", "depthwise_separable_out_channel"}};
    for (size_t k = 0; k < sizeof renames / sizeof renames[0]; k++) {
        json_t *v = json_object_get(a, renames[k][0]);
        if (!v) continue;
        OMNIC_TRY(set_new(a, renames[k][1], json_incref(v), err));
        json_object_del(a, renames[k][0]);
    }
    static const char *const nemo_keys[] = {"conv_channels", NULL}, *const rel_keys[] = {
                                                                        "type", "t5_bias_max_distance", NULL};
    const char *const *const ln[] = {nemo_keys, NULL}, *const *const lr[] = {rel_keys, NULL};
    const json_t *nemo = json_object_get(c, "nemo_conv_settings"),
                 *rel = json_object_get(c, "relative_attention_bias_args");
    if (nemo) {
        OMNIC_TRY(
            omnic__json_check_keys(nemo, "config.json audio_processor.config.nemo_conv_settings", ln, err));
        if (json_object_get(nemo, "conv_channels"))
            OMNIC_TRY(
                set_new(a, "nemo_conv_channels", json_incref(json_object_get(nemo, "conv_channels")), err));
        json_object_del(a, "nemo_conv_settings");
    }
    if (rel) {
        const char *WR = "config.json audio_processor.config.relative_attention_bias_args";
        OMNIC_TRY(omnic__json_check_keys(rel, WR, lr, err));
        OMNIC_TRY(omnic__json_expect(rel, "type", "\"t5\"", WR, err));
        if (json_object_get(rel, "t5_bias_max_distance"))
            OMNIC_TRY(set_new(a, "bias_max_distance",
                              json_incref(json_object_get(rel, "t5_bias_max_distance")), err));
        json_object_del(a, "relative_attention_bias_args");
    }
    return OMNIC_OK;
}

static omnic_status convert_original(omnic__checkpoint *ck, omnic_err *err)
{
    const json_t *o = ck->config;
    const char *W = "config.json";
    /* what HF's Phi4Multimodal classes never read must be at the value they compute */
    OMNIC_TRY(omnic__json_expect(o, "attention_bias", "false", W, err));
    OMNIC_TRY(omnic__json_expect(o, "mlp_bias", "false", W, err));
    OMNIC_TRY(omnic__json_expect(o, "lm_head_bias", "false", W, err));
    OMNIC_TRY(omnic__json_expect(o, "full_attn_mod", "1", W, err));
    OMNIC_TRY(omnic__json_expect(o, "interpolate_factor", "1", W, err));
    OMNIC_TRY(omnic__json_expect(o, "img_processor", "null", W, err));
    json_t *c = json_deep_copy(o), *audio = NULL;
    if (!c) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory converting config.json");
    omnic_status s = convert_audio(json_object_get(o, "audio_processor"), &audio, err);
    if (s == OMNIC_OK) s = convert_embd(json_object_get(o, "embd_layer"), c, audio, err);
    if (s == OMNIC_OK) s = set_new(c, "audio_config", audio, err), audio = NULL;
    static const char *const drop[] = {"audio_processor", "embd_layer",          "img_processor",
                                       "auto_map",        "attention_bias",      "mlp_bias",
                                       "lm_head_bias",    "full_attn_mod",       "interpolate_factor",
                                       "_name_or_path",   "_attn_implementation"};
    for (size_t k = 0; s == OMNIC_OK && k < sizeof drop / sizeof drop[0]; k++)
        json_object_del(c, drop[k]);
    if (s == OMNIC_OK) s = set_new(c, "model_type", json_string("phi4_multimodal"), err);
    if (s == OMNIC_OK) s = set_new(c, "architectures", json_pack("[s]", "Phi4MultimodalForCausalLM"), err);
    if (s == OMNIC_OK)
        s = set_new(c, "eos_token_id", json_pack("[i, i]", 199999, 200020), err); /* the script's */
    json_decref(audio);
    if (s != OMNIC_OK) {
        json_decref(c);
        return s;
    }
    json_decref(ck->config);
    ck->config = c;
    omnic__st_set_rename(ck->weights, original_name);
    return OMNIC_OK;
}

static const char *const original_types[] = {"phi4mm", NULL};
const omnic__family omnic__family_phi4mm_original = {
    .name = "phi4_multimodal",
    .model_types = original_types,
    .convert = convert_original,
    .parse_config = parse, /* of the converted config */
    .media = {[OMNIC_MODALITY_IMAGE] = &omnic__media_phi4mm_image,
              [OMNIC_MODALITY_AUDIO] = &omnic__media_phi4mm_audio},
    .load_adapters = load_adapters};
