/* Merging encoded media rows into a prompt: the PreparedPrefill of a request. */
#ifndef OMNIC_MODELS_MERGE_H
#define OMNIC_MODELS_MERGE_H

#include "mm/prepared.h"
#include "models/model.h"

/* LLaVA-style merge: logical [n_logical] prompt ids with one m->image_token_id per image;
 * projected f32 [n_images, m->image_tokens, text hidden] (the encoder's rows, in order).
 * Text rows are m's own embedding rows (bit-identical to text.token_prefill's lookup and
 * scale), each placeholder becomes its image's rows, positions run 0..n_rows-1, causal
 * (no bias). E_INVALID when the placeholder count differs from n_images (names both). */
omnic_status omnic__model_merge_images(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                                       const float *projected, int64_t n_images, omnic__prepared_prefill *out,
                                       omnic_err *err);

/* Qwen2-VL-style merge: logical [n_logical] prompt ids with one image pad per image (between
 * <|vision_start|> and <|vision_end|>, as the chat template writes them); grid_thw
 * [n_images * 3] each image's (t, h, w) in patches; projected f32 rows of all images in order
 * ([sum of N_k, text hidden], N_k = t * h * w / merge^2). Each pad expands to N_k rows (its
 * image's), text rows are m's own embedding rows, positions are HF get_rope_index's [3, T]
 * M-RoPE coordinates with rope_delta (spec: the token ids and merge size). Errors name the
 * numbers (placeholder / image counts, grids). */
struct omnic__mrope_spec;
omnic_status omnic__model_merge_mrope(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                                      const int64_t *grid_thw, const float *projected, int64_t n_images,
                                      const struct omnic__mrope_spec *spec, omnic__prepared_prefill *out,
                                      omnic_err *err);

/* The merge m's family uses: omnic__model_merge_mrope for Qwen2-VL-style towers (grid_thw
 * required), else omnic__model_merge_images (grid_thw ignored). */
omnic_status omnic__model_merge(const omnic__model *m, const int32_t *logical, int64_t n_logical,
                                const int64_t *grid_thw, const float *projected, int64_t n_images,
                                omnic__prepared_prefill *out, omnic_err *err);

#endif
