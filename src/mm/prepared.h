/* PreparedPrefill (DESIGN.md 3): the owned, backend-neutral result of multimodal
 * preparation that seeds a slot. Logical token ids (one placeholder per media item) serve
 * usage, penalties and stop matching; the expanded rows (text rows and media rows, post
 * scale) own admission and positions. Validated once, on construction. */
#ifndef OMNIC_MM_PREPARED_H
#define OMNIC_MM_PREPARED_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

typedef enum omnic__pos_mode {
    OMNIC_POS_1D = 0, /* positions [n_rows] */
    OMNIC_POS_MROPE,  /* positions [3, n_rows] (temporal, height, width) and a rope delta */
} omnic__pos_mode;

/* Which low-rank adapter set a request's rows run with (Phi-4-multimodal's rule: image ->
 * vision, audio only -> speech, text -> none). Slot-scoped. */
typedef enum omnic__adapter_mode {
    OMNIC_ADAPTER_NONE = 0,
    OMNIC_ADAPTER_SPEECH,
    OMNIC_ADAPTER_VISION,
} omnic__adapter_mode;

/* Rows [begin, end) of a prompt that attend to each other in both directions (Gemma 3's image
 * tokens): every row of the span sees all of it, on top of the causal / sliding-window mask. */
typedef struct omnic__row_span {
    int64_t begin, end;
} omnic__row_span;

typedef struct omnic__prepared_prefill {
    int32_t *logical; /* owned [n_logical] */
    int64_t n_logical;
    float *embeds; /* owned [n_rows, hidden] f32, finite */
    int64_t n_rows, hidden;
    omnic__pos_mode pos_mode;
    int32_t *positions;     /* owned: 1-D [n_rows] strictly increasing from >= 0; M-RoPE [3, n_rows] */
    int64_t rope_delta;     /* M-RoPE: decode coordinate = cache length + rope_delta; 0 for 1-D */
    float *bias;            /* owned [n_rows, n_rows] additive (0 visible, large finite negative
                             * masked), or NULL: causal only */
    omnic__row_span *spans; /* owned [n_spans], sorted and disjoint, each of >= 1 row; NULL: none.
                             * The engine never splits one across prefill chunks. */
    int64_t n_spans;
    int64_t n_images;            /* media items (placeholders in logical) */
    int64_t image_rows;          /* rows they expanded to, in all */
    omnic__adapter_mode adapter; /* NONE unless the family's merge sets it */
    int n_side;                  /* side input blocks (Qwen3-VL DeepStack: one per merger) */
    float *side;                 /* owned [n_rows, n_side * hidden] (zero on text rows), or NULL:
                                  * the embeddings prefill's "deepstack" input, chunk by chunk */
    int32_t *row_ids;            /* owned [n_rows] >= 0, or NULL: each row's token id for a decoder
                                  * with per-layer embeddings (Gemma 3n: the text rows' ids, 0 on
                                  * media rows), its embeddings prefill's "ple_ids" input */
} omnic__prepared_prefill;

/* Moves the arrays of *src into *out after validating them: counts >= 1, n_rows ==
 * n_logical - n_images + image_rows, every embedding and bias value finite, 1-D positions
 * strictly increasing from >= 0 (M-RoPE: each axis >= 0), spans sorted, disjoint, non-empty
 * and inside the rows. On success *src is zeroed (its
 * arrays now belong to out); on failure *src keeps them and E_INVALID names the field,
 * index and value. */
omnic_status omnic__prepared_prefill_init(omnic__prepared_prefill *out, omnic__prepared_prefill *src,
                                          omnic_err *err);
/* Frees the arrays; NULL ok. */
void omnic__prepared_prefill_deinit(omnic__prepared_prefill *p);

#endif
