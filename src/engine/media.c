/* Media preparation: decode + the model's processor. */
#include "engine/media.h"
#include "core/sync.h"
#include "mm/audio.h"

omnic_status omnic__media_prepare_timed(const omnic__media_proc *p, const uint8_t *bytes, size_t len,
                                        const omnic__image_limits *limits, const atomic_bool *cancel,
                                        omnic__media_item *out, omnic__media_times *times, omnic_err *err)
{
    *out = (omnic__media_item){0};
    if (times) *times = (omnic__media_times){0};
    if (!p || !p->ops) return OMNIC_FAIL(err, OMNIC_E_INVALID, "no media processor");
    const omnic__modality mod = p->ops->modality;
    const char *what = omnic__modality_name(mod);
    if (mod != OMNIC_MODALITY_IMAGE && mod != OMNIC_MODALITY_AUDIO)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "decoding %s input is not built yet", what);
    if (cancel && atomic_load(cancel))
        return OMNIC_FAIL(err, OMNIC_E_CANCELLED, "%s preparation cancelled", what);
    omnic__image img = {0};
    omnic__audio clip = {0};
    double t0 = omnic__now();
    if (mod == OMNIC_MODALITY_IMAGE)
        OMNIC_TRY(omnic__image_decode(bytes, len, limits, &img, err));
    else /* at the file's rate: the processor resamples to its own */
        OMNIC_TRY(omnic__audio_decode(bytes, len, NULL, 0, cancel, &clip, err));
    double t1 = omnic__now();
    omnic_status s = OMNIC_OK;
    if (cancel && atomic_load(cancel))
        s = OMNIC_FAIL(err, OMNIC_E_CANCELLED, "%s preparation cancelled", what);
    if (s == OMNIC_OK)
        s = omnic__media_preprocess(p, &(omnic__decoded_media){.image = &img, .audio = &clip}, out, err);
    omnic__image_deinit(&img);
    omnic__audio_deinit(&clip);
    if (s == OMNIC_OK) omnic__media_item_key(out); /* the engine's encoder cache */
    if (times) *times = (omnic__media_times){.decode = t1 - t0, .preprocess = omnic__now() - t1};
    return s;
}

omnic_status omnic__media_prepare(const omnic__media_proc *p, const uint8_t *bytes, size_t len,
                                  const omnic__image_limits *limits, const atomic_bool *cancel,
                                  omnic__media_item *out, omnic_err *err)
{
    return omnic__media_prepare_timed(p, bytes, len, limits, cancel, out, NULL, err);
}
