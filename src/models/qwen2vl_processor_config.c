/* preprocessor_config.json for Qwen2VLImageProcessor(Fast) -> omnic__qwen2vl_proc_params. */
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "io/json.h"
#include "models/image_processor_config.h"
#include "models/qwen2vl_processor_config.h"

#define PIXELS_MAX_EXACT ((int64_t)1 << 53)

static const struct {
    const char *name;
    omnic__image_numerics numerics;
} qwen_types[] = {
    {"Qwen2VLImageProcessor", OMNIC__NUMERICS_TORCHVISION}, /* forced fast in HF 4.5x */
    {"Qwen2VLImageProcessorFast", OMNIC__NUMERICS_TORCHVISION},
    {"Qwen2VLImageProcessorPil", OMNIC__NUMERICS_PIL}, /* HF v5's explicit PIL backend */
};
#define N_QWEN_TYPES (sizeof qwen_types / sizeof qwen_types[0])

static size_t type_index(const json_t *cfg)
{
    char buf[128];
    const char *type = json_is_object(cfg) ? omnic__processor_config_type(cfg, buf, sizeof buf) : NULL;
    size_t k = 0;
    while (type && k < N_QWEN_TYPES && strcmp(qwen_types[k].name, type) != 0)
        k++;
    return type ? k : N_QWEN_TYPES;
}

bool omnic__qwen2vl_processor_config_matches(const json_t *cfg)
{
    return type_index(cfg) < N_QWEN_TYPES;
}

omnic_status omnic__qwen2vl_processor_config_parse(const json_t *cfg, const char *what,
                                                   omnic__qwen2vl_proc_params *out, omnic_err *err)
{
    if (!json_is_object(cfg)) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: not a JSON object", what);
    size_t k = type_index(cfg);
    if (k == N_QWEN_TYPES) {
        char buf[128];
        const char *type = omnic__processor_config_type(cfg, buf, sizeof buf);
        return OMNIC_FAIL(
            err, OMNIC_E_UNSUPPORTED,
            "%s: image_processor_type '%s' is not a Qwen2-VL image processor (Qwen2VLImageProcessor, "
            "Qwen2VLImageProcessorFast)",
            what, type ? type : "(none)");
    }
    omnic__qwen2vl_proc_params p;
    omnic__qwen2vl_proc_params_defaults(&p);
    p.numerics = qwen_types[k].numerics;

    const json_t *size = NULL;
    OMNIC_TRY(omnic__json_get_obj(cfg, "size", false, what, &size, err));
    if (size) {
        char sub[160];
        snprintf(sub, sizeof sub, "%s: size", what);
        if (!json_object_get(size, "shortest_edge") || !json_object_get(size, "longest_edge"))
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "%s: field 'size' must contain 'shortest_edge' and 'longest_edge'", what);
        OMNIC_TRY(omnic__json_get_i64(size, "shortest_edge", true, 0, 1, PIXELS_MAX_EXACT, sub, &p.min_pixels,
                                      err));
        OMNIC_TRY(
            omnic__json_get_i64(size, "longest_edge", true, 0, 1, PIXELS_MAX_EXACT, sub, &p.max_pixels, err));
    }
    OMNIC_TRY(omnic__json_get_i64(cfg, "min_pixels", false, p.min_pixels, 1, PIXELS_MAX_EXACT, what,
                                  &p.min_pixels, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "max_pixels", false, p.max_pixels, 1, PIXELS_MAX_EXACT, what,
                                  &p.max_pixels, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "patch_size", false, p.patch_size, 1, OMNIC_MAX_VISION_PATCH, what,
                                  &p.patch_size, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "temporal_patch_size", false, p.temporal_patch_size, 1,
                                  OMNIC_MAX_VISION_TEMPORAL_PATCH, what, &p.temporal_patch_size, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "merge_size", false, p.merge_size, 1, OMNIC_MAX_VISION_MERGE, what,
                                  &p.merge_size, err));
    int64_t resample;
    OMNIC_TRY(omnic__json_get_i64(cfg, "resample", false, p.resample, 2, 3, what, &resample, err));
    p.resample = (omnic__resample)resample;
    OMNIC_TRY(omnic__json_get_bool(cfg, "do_resize", false, p.do_resize, what, &p.do_resize, err));
    OMNIC_TRY(omnic__processor_config_pixels(cfg, what, &p.do_rescale, &p.rescale_factor, &p.do_normalize,
                                             p.image_mean, p.image_std, err));
    omnic_status rc = omnic__qwen2vl_proc_params_check(&p, err);
    if (rc != OMNIC_OK) {
        omnic__err_prefix(err, "%s", what);
        return rc;
    }
    *out = p;
    return OMNIC_OK;
}
