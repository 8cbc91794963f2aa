/* Image input through a CLIP or SigLIP tower and a projector (LLaVA; models/vision.h): one
 * fixed-size image -> pixel_values f32 [3, S, S] -> a fixed number of rows, merged in place of
 * one placeholder id, 1-D positions, causal. The family table is omnic__media_clip_image
 * (models/family.h); this header gives tests and tools the state behind it. */
#ifndef OMNIC_MODELS_CLIP_MEDIA_H
#define OMNIC_MODELS_CLIP_MEDIA_H

#include "models/vision.h"
#include "runtime/module.h"

struct omnic__model;

typedef struct omnic__clip_media {
    omnic__vision_tower tower;
    /* vision.encode: pixel_values f32 [3, image_size, image_size] (finite) -> "vision_features"
     * f32 [image_tokens, vision hidden] (the selected hidden state) and "projected" f32
     * [image_tokens, text hidden] (the rows that replace the placeholder) */
    omnic__module encode;
    int features, projected; /* output indices */
    int64_t image_tokens;    /* rows per image */
    int64_t image_size;      /* pixel_values height = width */
} omnic__clip_media;

/* m's CLIP / SigLIP image state; NULL when m's image input is not this table's. */
const omnic__clip_media *omnic__clip_media_of(const struct omnic__model *m);

#endif
