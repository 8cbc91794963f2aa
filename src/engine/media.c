/* Image preparation: decode + the checkpoint's processor. */
#include "engine/media.h"
#include "models/image_processor_config.h"

omnic_status omnic__image_prep_init(omnic__image_prep *p, const omnic__model *m, omnic_err *err)
{
    if (!omnic__model_supports_image(m))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "this model does not take image input");
    OMNIC_TRY(omnic__image_processor_config_parse(m->ckpt->preprocessor_config, "preprocessor_config.json",
                                                  &p->params, err));
    p->size = m->image_size;
    int64_t w, h; /* any input size: the processor must end at the encoder's square */
    OMNIC_TRY(omnic__image_proc_output_size(&p->params, 640, 480, &w, &h, err));
    if (w != p->size || h != p->size)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "preprocessor_config.json makes %lldx%lld pixel_values, the vision tower takes %lldx%lld",
                          (long long)w, (long long)h, (long long)p->size, (long long)p->size);
    return OMNIC_OK;
}

omnic_status omnic__image_prep_run(const omnic__image_prep *p, const uint8_t *bytes, size_t len,
                                   const omnic__image_limits *limits, const atomic_bool *cancel,
                                   omnic__tensor **pixel_values, omnic_err *err)
{
    omnic__image img = {0};
    if (cancel && atomic_load(cancel)) return OMNIC_FAIL(err, OMNIC_E_CANCELLED, "image preparation cancelled");
    OMNIC_TRY(omnic__image_decode(bytes, len, limits, &img, err));
    int64_t w, h;
    omnic_status s = omnic__image_proc_output_size(&p->params, img.width, img.height, &w, &h, err);
    if (s == OMNIC_OK && cancel && atomic_load(cancel))
        s = OMNIC_FAIL(err, OMNIC_E_CANCELLED, "image preparation cancelled");
    if (s == OMNIC_OK && (w != p->size || h != p->size))
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "a %lldx%lld image gives %lldx%lld pixel_values, the model takes %lldx%lld",
                       (long long)img.width, (long long)img.height, (long long)w, (long long)h, (long long)p->size,
                       (long long)p->size);
    if (s == OMNIC_OK) s = omnic__image_preprocess(&img, &p->params, pixel_values, err);
    omnic__image_deinit(&img);
    return s;
}
