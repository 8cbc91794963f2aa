/* The input-modality predicate. */
#include "engine/modality.h"

bool omnic__model_accepts(const omnic__model *m, omnic__modality mod)
{
    if (!m || (unsigned)mod >= OMNIC_MODALITY_COUNT) return false;
    if (mod == OMNIC_MODALITY_TEXT) return m->prefill.finalized && m->decode.finalized;
    const omnic__model_media *md = &m->media[mod];
    return md->ops && md->ops->ready(m) && (!md->ops->unserved || !md->ops->unserved(m)) &&
           md->placeholder_id >= 0 && m->ckpt->preprocessor_config && m->embed_prefill.finalized;
}

const char *omnic__model_refusal(const omnic__model *m, omnic__modality mod)
{
    if (!m || (unsigned)mod >= OMNIC_MODALITY_COUNT || mod == OMNIC_MODALITY_TEXT) return NULL;
    const omnic__model_media *md = &m->media[mod];
    return md->ops && md->ops->unserved ? md->ops->unserved(m) : NULL;
}
