/* The input-modality predicate. */
#include "engine/modality.h"

const char *omnic__modality_name(omnic__modality m)
{
    static const char *const n[OMNIC_MODALITY_COUNT] = {"text", "image", "audio"};
    return (unsigned)m < OMNIC_MODALITY_COUNT ? n[m] : "?";
}

bool omnic__model_accepts(const omnic__model *m, omnic__modality mod)
{
    if (!m) return false;
    switch (mod) {
    case OMNIC_MODALITY_TEXT: return m->prefill.finalized && m->decode.finalized;
    case OMNIC_MODALITY_IMAGE: /* weights, vision.encode, processor config, embeddings prefill */
        return omnic__model_supports_image(m) && m->embed_prefill.finalized;
    case OMNIC_MODALITY_AUDIO: /* no audio.encode module in omnic__model yet */
    default: return false;
    }
}
