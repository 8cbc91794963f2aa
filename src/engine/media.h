/* Image preparation for a loaded model, on the caller's thread (the CLI, or the server's
 * media workers; never the scheduler): decode the bytes (JPEG / PNG / WebP, limits checked
 * against the header before any pixel memory) and run the checkpoint's image processor
 * (preprocessor_config.json) into the pixel_values the model's vision.encode takes:
 *   CLIP / SigLIP (LLaVA): f32 [3, S, S] at the tower's size;
 *   Qwen2-VL: f32 [t*h*w, 3*temporal*patch^2] flattened patches and the grid (t, h, w). */
#ifndef OMNIC_ENGINE_MEDIA_H
#define OMNIC_ENGINE_MEDIA_H

#include <stdatomic.h>

#include "mm/image.h"
#include "mm/image_processor.h"
#include "mm/qwen2vl_processor.h"
#include "models/model.h"

typedef struct omnic__image_prep {
    bool qwen;                            /* Qwen2-VL processor (else CLIP / SigLIP) */
    omnic__image_proc_params params;      /* CLIP / SigLIP, from preprocessor_config.json */
    int64_t size;                         /* CLIP / SigLIP: pixel_values height = width */
    omnic__qwen2vl_proc_params qparams;   /* Qwen2-VL; max_pixels lowered to the encoder's capacity */
} omnic__image_prep;

/* For a model that takes images (omnic__model_supports_image): parses its processor config
 * and checks it against the encoder (CLIP / SigLIP: the output size; Qwen2-VL: patch size,
 * temporal patch and merge). E_UNSUPPORTED for a model without image input; the config
 * parser's errors otherwise. */
omnic_status omnic__image_prep_init(omnic__image_prep *p, const omnic__model *m, omnic_err *err);

/* bytes[0..len) (borrowed) -> owned *pixel_values (see above); grid (may be NULL for CLIP /
 * SigLIP) gets (t, h, w) for Qwen2-VL, (1, 1, 1) otherwise. limits: NULL for the defaults
 * (core/limits.h). cancel (optional) is checked between decode and processing. Errors name
 * the problem: E_UNSUPPORTED (format), E_TOO_LARGE (dimensions vs the limit), E_CORRUPT
 * (truncated / malformed), E_INVALID, E_CANCELLED, E_NOMEM. */
omnic_status omnic__image_prep_run(const omnic__image_prep *p, const uint8_t *bytes, size_t len,
                                   const omnic__image_limits *limits, const atomic_bool *cancel,
                                   omnic__tensor **pixel_values, int64_t grid[3], omnic_err *err);

#endif
