/* Image input through the Qwen2-VL / Qwen2.5-VL packed-patch towers (models/qwen2vl_vision.h):
 * any image size -> smart_resize -> pixel_values f32 [t*h*w, patch_dim] and the grid (t, h, w)
 * -> t*h*w / merge^2 rows, merged in place of one <|image_pad|> each, M-RoPE positions and a
 * rope delta. The family table is omnic__media_qwen2vl_image (models/family.h); this header
 * gives tests and tools the state behind it. */
#ifndef OMNIC_MODELS_QWEN2VL_MEDIA_H
#define OMNIC_MODELS_QWEN2VL_MEDIA_H

#include "models/mrope.h"
#include "models/qwen2vl_vision.h"

struct omnic__model;

typedef struct omnic__qwen2vl_media {
    omnic__qvit *qvit;       /* owned: the tower + merger */
    omnic__qvit_encoder enc; /* vision.encode planned for up to enc.capacity patch rows */
    omnic__mrope_spec spec;  /* the M-RoPE token ids and merge size */
} omnic__qwen2vl_media;

/* m's Qwen2-VL image state; NULL when m's image input is not this table's. */
const omnic__qwen2vl_media *omnic__qwen2vl_media_of(const struct omnic__model *m);

#endif
