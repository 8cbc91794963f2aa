/* Qwen M-RoPE position ids for a prefill of text and images (Hugging Face get_rope_index of
 * Qwen2-VL, transformers 4.5x; images give the same positions in Qwen2.5-VL and Qwen3-VL) and
 * the decode rule. See reference/families-qwen-llava.md 8.1. Videos are not handled here: the
 * caller refuses them (a video placeholder in the ids is an error). */
#ifndef OMNIC_MODELS_MROPE_H
#define OMNIC_MODELS_MROPE_H

#include <stdint.h>

#include "core/err.h"

typedef struct omnic__mrope_spec {
    int32_t image_token_id;        /* <|image_pad|>: 151655 in the Qwen2/2.5/3-VL checkpoints */
    int32_t vision_start_token_id; /* <|vision_start|>: 151652 */
    int32_t video_token_id;        /* <|video_pad|>: 151656, refused where it occurs; < 0: no check */
    int64_t spatial_merge_size;    /* vision_config.spatial_merge_size: 2 */
} omnic__mrope_spec;

/* Writes the 3-axis positions of the expanded prompt ids[0..n_ids) (borrowed) into
 * positions[3 * n_ids] (caller-sized; axis a of token i at a * n_ids + i: temporal, height,
 * width) and *rope_delta = max position + 1 - n_ids (<= 0; 0 for text only).
 * Each image is one `<|vision_start|>` followed by exactly N = t * (h/m) * (w/m) `<|image_pad|>`
 * tokens, where grid_thw[3k..3k+2] (borrowed, n_images rows, in prompt order) is image k's
 * (t, h, w) in patches (image_grid_thw) and m the merge size. Text tokens (vision_start and
 * vision_end included) take cur, cur+1, ... on all three axes; image token (tt, r, c) in
 * row-major order takes (cur + tt, cur + r, cur + c) and the next token starts at cur + max(t,
 * h/m, w/m), exactly as HF's segment walk (st_idx = previous segment's max + 1).
 * Errors (E_INVALID, naming the numbers): n_ids outside [1, INT32_MAX], n_images < 0, a grid
 * entry < 1 or h, w not a multiple of m, a pad run not right after `<|vision_start|>`, a run whose
 * length differs from its image's N, more runs than grids or fewer (names both counts), a video
 * placeholder. Nothing written on failure is meaningful. */
omnic_status omnic__mrope_positions(const int32_t *ids, int64_t n_ids, const int64_t *grid_thw,
                                    int64_t n_images, const omnic__mrope_spec *spec, int32_t *positions,
                                    int64_t *rope_delta, omnic_err *err);

/* The processor's prompt expansion (HF Qwen2VLProcessor): logical[0..n_logical) (borrowed) holds
 * one image_token_id per image; *expanded (returns owned, omnic_free) is the same ids with image
 * k's placeholder repeated n_tokens[k] times (the grid's t * h * w / merge^2, as
 * omnic__qwen2vl_grid.n_tokens), *n_expanded its length. Errors: E_INVALID when the placeholder
 * count differs from n_images (names both) or an n_tokens[k] is < 1 (names k and the value),
 * E_TOO_LARGE when the expanded length would pass INT32_MAX, E_NOMEM. Outputs untouched on
 * failure. */
omnic_status omnic__mrope_expand_image_pads(const int32_t *logical, int64_t n_logical,
                                            const int64_t *n_tokens, int64_t n_images, int32_t image_token_id,
                                            int32_t **expanded, int64_t *n_expanded, omnic_err *err);

/* The decode rule (DESIGN.md 3): the token written at KV index cache_len (the slot's current
 * length) takes cache_len + rope_delta on all three axes; out[3] = that value. E_INVALID when
 * cache_len < 0 or the result falls outside [0, INT32_MAX] (names both numbers). */
omnic_status omnic__mrope_decode_position(int64_t cache_len, int64_t rope_delta, int32_t out[3],
                                          omnic_err *err);

#endif
