/* Image preparation: decode + the checkpoint's processor. */
#include "engine/media.h"
#include "models/image_processor_config.h"
#include "models/qwen2vl_processor_config.h"

omnic_status omnic__image_prep_init(omnic__image_prep *p, const omnic__model *m, omnic_err *err)
{
    if (!omnic__model_supports_image(m))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "this model does not take image input");
    *p = (omnic__image_prep){0};
    if (m->qvit) {
        const omnic__qvit_config *c = &m->qvit->cfg;
        p->qwen = true;
        OMNIC_TRY(omnic__qwen2vl_processor_config_parse(m->ckpt->preprocessor_config, "preprocessor_config.json",
                                                        &p->qparams, err));
        if (p->qparams.patch_size != c->patch || p->qparams.temporal_patch_size != c->temporal ||
            p->qparams.merge_size != c->merge)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "preprocessor_config.json patch %lld / temporal %lld / merge %lld do not match the vision "
                              "tower's %lld / %lld / %lld",
                              (long long)p->qparams.patch_size, (long long)p->qparams.temporal_patch_size,
                              (long long)p->qparams.merge_size, (long long)c->patch, (long long)c->temporal,
                              (long long)c->merge);
        int64_t cap_pixels = m->qenc.capacity * c->patch * c->patch; /* the encoder's largest image */
        if (p->qparams.max_pixels > cap_pixels) p->qparams.max_pixels = cap_pixels;
        if (p->qparams.min_pixels > p->qparams.max_pixels) p->qparams.min_pixels = p->qparams.max_pixels;
        return OMNIC_OK;
    }
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
                                   omnic__tensor **pixel_values, int64_t grid[3], omnic_err *err)
{
    omnic__image img = {0};
    if (cancel && atomic_load(cancel)) return OMNIC_FAIL(err, OMNIC_E_CANCELLED, "image preparation cancelled");
    OMNIC_TRY(omnic__image_decode(bytes, len, limits, &img, err));
    omnic_status s = OMNIC_OK;
    if (cancel && atomic_load(cancel)) s = OMNIC_FAIL(err, OMNIC_E_CANCELLED, "image preparation cancelled");
    if (s == OMNIC_OK && p->qwen) {
        omnic__qwen2vl_grid g;
        s = omnic__qwen2vl_preprocess(&img, &p->qparams, pixel_values, &g, err);
        if (s == OMNIC_OK && grid) grid[0] = g.t, grid[1] = g.h, grid[2] = g.w;
        omnic__image_deinit(&img);
        return s;
    }
    int64_t w, h;
    if (s == OMNIC_OK) s = omnic__image_proc_output_size(&p->params, img.width, img.height, &w, &h, err);
    if (s == OMNIC_OK && (w != p->size || h != p->size))
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "a %lldx%lld image gives %lldx%lld pixel_values, the model takes %lldx%lld",
                       (long long)img.width, (long long)img.height, (long long)w, (long long)h, (long long)p->size,
                       (long long)p->size);
    if (s == OMNIC_OK) s = omnic__image_preprocess(&img, &p->params, pixel_values, err);
    if (s == OMNIC_OK && grid) grid[0] = grid[1] = grid[2] = 1;
    omnic__image_deinit(&img);
    return s;
}
