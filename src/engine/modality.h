/* Input modalities a loaded model really accepts. One predicate serves every report and
 * check (DESIGN.md 6, "capability truth"): /v1/models, request validation in the server,
 * and `omnic inspect`. A modality counts only when its weights, processor, modules and
 * dispatch all loaded. */
#ifndef OMNIC_ENGINE_MODALITY_H
#define OMNIC_ENGINE_MODALITY_H

#include <stdbool.h>

#include "models/model.h"

typedef enum omnic__modality {
    OMNIC_MODALITY_TEXT,
    OMNIC_MODALITY_IMAGE,
    OMNIC_MODALITY_AUDIO,
    OMNIC_MODALITY_COUNT
} omnic__modality;

/* "text", "image", "audio"; "?" out of range. */
const char *omnic__modality_name(omnic__modality m);

/* Whether m (borrowed; NULL: false) accepts input of modality mod. Text: the token prefill
 * and decode modules are planned. Image: the vision tower, its vision.encode module, the
 * processor config and text.embeddings_prefill (omnic__model_supports_image). Audio: no
 * family wires an audio encoder yet, so false. */
bool omnic__model_accepts(const omnic__model *m, omnic__modality mod);

#endif
