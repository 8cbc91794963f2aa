/* The family registry: which code handles a checkpoint, chosen from config.json's
 * model_type. Each family is one file (models/<family>.c) defining one descriptor. */
#ifndef OMNIC_MODELS_FAMILY_H
#define OMNIC_MODELS_FAMILY_H

#include "models/media.h"
#include "models/text_decoder.h"
#include "models/vision.h"

struct omnic__model;
struct omnic__checkpoint;

typedef struct omnic__family {
    const char *name;               /* "llama" */
    const char *const *model_types; /* NULL-terminated config.json model_type values */
    /* (optional) Reads a checkpoint of an original (pre-conversion) layout as Hugging Face's
     * conversion script converts it: rewrites ck->config into the converted config.json in
     * memory and sets the weights' rename to the original names. Called right after the family
     * is found, before anything reads the config. */
    omnic_status (*convert)(struct omnic__checkpoint *ck, omnic_err *err);
    /* Parses config.json into the decoder's config (what: file name for messages). */
    omnic_status (*parse_config)(const json_t *cfg, const char *what, omnic__text_config *out,
                                 omnic_err *err);
    /* (optional) Parses the vision tower and projector settings (text: the parsed text
     * config), for families whose image table is omnic__media_clip_image. */
    omnic_status (*parse_vision)(const json_t *cfg, const char *what, const omnic__text_config *text,
                                 omnic__vision_config *out, omnic_err *err);
    /* Media input by modality (models/media.h); NULL: the family does not take it. */
    const omnic__media_ops *media[OMNIC_MODALITY_COUNT];
    /* (optional) Loads the checkpoint's low-rank adapters into m->dec.lora and sets
     * m->adapter_of (the adapter each prompt mode runs with), after the decoder's weights and
     * before its modules are built; a checkpoint without adapters is not an error. */
    omnic_status (*load_adapters)(struct omnic__model *m, omnic_err *err);
} omnic__family;

extern const omnic__family omnic__family_llama;
extern const omnic__family omnic__family_qwen2;
extern const omnic__family omnic__family_qwen3;
extern const omnic__family omnic__family_qwen3_moe;
extern const omnic__family omnic__family_qwen3_vl;
extern const omnic__family omnic__family_phi3;
extern const omnic__family omnic__family_gemma3_text;
extern const omnic__family omnic__family_llava;
extern const omnic__family omnic__family_qwen2_vl;
extern const omnic__family omnic__family_gemma3;
extern const omnic__family omnic__family_gemma3n_text;
extern const omnic__family omnic__family_gemma3n;
extern const omnic__family omnic__family_phi4mm;
extern const omnic__family omnic__family_phi4mm_original;

/* The Phi-3 decoder layout (fused qkv_proj / gate_up_proj, sliding_window on every layer when
 * set) into c, for the families built on it (phi3, phi4_multimodal). */
omnic_status omnic__phi3_layout(const json_t *cfg, const char *what, omnic__text_config *c, omnic_err *err);

/* Qwen3-MoE's expert settings into c (num_experts, num_experts_per_tok, moe_intermediate_size,
 * norm_topk_prob, decoder_sparse_step, mlp_only_layers), for the families that have them. */
typedef struct omnic__moe_defaults { /* the config class's defaults of the expert keys */
    int64_t experts, per_tok, intermediate;
    bool norm_topk;
} omnic__moe_defaults;
omnic_status omnic__qwen3_moe_parse(const json_t *cfg, const char *what, const omnic__moe_defaults *d,
                                    omnic__text_config *c, omnic_err *err);

/* Media tables (models/clip_media.c: a CLIP / SigLIP tower + projector, fixed-size images,
 * 1-D positions; models/qwen2vl_media.c: the packed-patch Qwen2-VL towers, M-RoPE). */
extern const omnic__media_ops omnic__media_clip_image;
extern const omnic__media_ops omnic__media_qwen2vl_image;
/* models/phi4mm_media.c: Phi-4-multimodal's audio (conformer, speech / vision-speech projections);
 * models/phi4mm_image.c: its images (HD crops, SigLIP-NaViT, separators, projection). */
extern const omnic__media_ops omnic__media_phi4mm_audio;
extern const omnic__media_ops omnic__media_phi4mm_image;
/* models/gemma3n_media.c: Gemma 3n's audio (the USM conformer and the audio embedder) and images
 * (MobileNetV5 and the vision embedder). */
extern const omnic__media_ops omnic__media_gemma3n_audio;
extern const omnic__media_ops omnic__media_gemma3n_image;

/* The family for config's model_type; E_UNSUPPORTED naming the model_type and the
 * supported list when none matches. */
omnic_status omnic__family_find(const json_t *config, const omnic__family **out, omnic_err *err);

#endif
