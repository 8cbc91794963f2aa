/* Input modalities a loaded model really accepts. One predicate serves every report and
 * check (DESIGN.md 6, "capability truth"): /v1/models, request validation in the server,
 * and `omnic inspect`. A modality counts only when its weights, processor, modules and
 * dispatch all loaded. (The modality enum itself is models/media.h's.) */
#ifndef OMNIC_ENGINE_MODALITY_H
#define OMNIC_ENGINE_MODALITY_H

#include <stdbool.h>

#include "models/model.h"

/* Whether m (borrowed; NULL: false) accepts input of modality mod. Text: the token prefill
 * and decode modules are planned. Media: the family's table for mod is set, its encoder's
 * weights and modules loaded (ops->ready), nothing the family needs is missing (ops->unserved),
 * the processor config is present and text.embeddings_prefill is planned. */
bool omnic__model_accepts(const omnic__model *m, omnic__modality mod);
/* Why m does not accept mod: the family's unserved reason when it gives one, else NULL. */
const char *omnic__model_refusal(const omnic__model *m, omnic__modality mod);

#endif
