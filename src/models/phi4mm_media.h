/* What Phi-4-multimodal's two media tables share (models/phi4mm_media.c: audio,
 * models/phi4mm_image.c: images): the processor config keys of both (one preprocessor_config.json
 * holds the feature extractor's and the image processor's), the prompt rewrite of <|image_N|> /
 * <|audio_N|> placeholders, and the one merge of prompts with images, clips or both. */
#ifndef OMNIC_MODELS_PHI4MM_MEDIA_H
#define OMNIC_MODELS_PHI4MM_MEDIA_H

#include "models/media.h"

extern const char *const omnic__phi4mm_audio_keys[]; /* Phi4MultimodalFeatureExtractor's */
extern const char *const omnic__phi4mm_image_keys[]; /* Phi4MultimodalImageProcessorFast's */

/* Each `open`N|> (open: "<|image_" or "<|audio_") of text[0..len) becomes the text of modality
 * mod's placeholder token (one per item). *out NULL when text has none. */
omnic_status omnic__phi4mm_expand(const struct omnic__model *m, const struct omnic__tokenizer *tok,
                                  omnic__modality mod, const char *open, const char *text, size_t len,
                                  char **out, size_t *out_len, omnic_err *err);

/* The merge of both tables (models/media.h): the k-th image placeholder takes the k-th image's
 * rows, the k-th audio placeholder the k-th clip's speech rows, or its vision-speech rows when
 * the prompt holds an image (HF's audio_projection_mode); text rows are the decoder's embeddings,
 * positions 1-D; the adapter is the vision one with an image, else the speech one with a clip. */
omnic_status omnic__phi4mm_merge(const struct omnic__model *m, const int32_t *logical, int64_t n_logical,
                                 const omnic__media_item *const *items, int64_t n_items,
                                 const float *projected, omnic__prepared_prefill *out, omnic_err *err);

#endif
