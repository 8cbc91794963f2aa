/* preprocessor_config.json for CLIP / SigLIP image processors -> omnic__image_proc_params. */
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "io/json.h"
#include "models/image_processor_config.h"

typedef enum proc_kind { KIND_CLIP, KIND_SIGLIP, KIND_GEMMA3 } proc_kind;

static const struct {
    const char *name;
    proc_kind kind;
    omnic__image_numerics numerics;
} proc_types[] = {
    {"CLIPImageProcessor", KIND_CLIP, OMNIC__NUMERICS_PIL},
    {"CLIPImageProcessorFast", KIND_CLIP, OMNIC__NUMERICS_TORCHVISION},
    {"SiglipImageProcessor", KIND_SIGLIP, OMNIC__NUMERICS_PIL},
    {"SiglipImageProcessorFast", KIND_SIGLIP, OMNIC__NUMERICS_TORCHVISION},
    {"Gemma3ImageProcessor", KIND_GEMMA3, OMNIC__NUMERICS_PIL},
    {"Gemma3ImageProcessorFast", KIND_GEMMA3, OMNIC__NUMERICS_TORCHVISION},
};

/* An int size, or a dict with shortest_edge or height+width. allow_shortest: CLIP's `size`;
 * int_is_shortest: how a bare int is read. */
static omnic_status parse_size(const json_t *cfg, const char *key, const char *what, bool allow_shortest,
                               bool int_is_shortest, omnic__image_proc_params *p, bool is_crop,
                               omnic_err *err)
{
    const json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) return OMNIC_OK; /* class default stays */
    int64_t n;
    if (json_is_integer(v) || json_is_real(v)) {
        OMNIC_TRY(omnic__json_get_i64(cfg, key, true, 0, 1, OMNIC_MAX_IMAGE_SIDE, what, &n, err));
        if (is_crop) {
            p->crop_height = p->crop_width = n;
        } else if (int_is_shortest) {
            p->resize_mode = OMNIC__RESIZE_SHORTEST_EDGE;
            p->shortest_edge = n;
        } else {
            p->resize_mode = OMNIC__RESIZE_EXACT;
            p->height = p->width = n;
        }
        return OMNIC_OK;
    }
    if (!json_is_object(v))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field '%s' must be an integer or an object, got %s",
                          what, key, omnic__json_type_phrase(v));
    char sub[96];
    snprintf(sub, sizeof sub, "%s: %s", what, key);
    const json_t *se = json_object_get(v, "shortest_edge");
    bool has_hw = json_object_get(v, "height") || json_object_get(v, "width");
    if (se && !json_is_null(se) && !has_hw) {
        if (!allow_shortest)
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                              "%s: field '%s' needs height and width, not shortest_edge", what, key);
        OMNIC_TRY(omnic__json_get_i64(v, "shortest_edge", true, 0, 1, OMNIC_MAX_IMAGE_SIDE, sub, &n, err));
        if (json_object_get(v, "longest_edge") && !json_is_null(json_object_get(v, "longest_edge")))
            return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: field '%s': longest_edge is not supported", what,
                              key);
        p->resize_mode = OMNIC__RESIZE_SHORTEST_EDGE;
        p->shortest_edge = n;
        return OMNIC_OK;
    }
    int64_t h, w;
    OMNIC_TRY(omnic__json_get_i64(v, "height", true, 0, 1, OMNIC_MAX_IMAGE_SIDE, sub, &h, err));
    OMNIC_TRY(omnic__json_get_i64(v, "width", true, 0, 1, OMNIC_MAX_IMAGE_SIDE, sub, &w, err));
    if (is_crop) {
        p->crop_height = h;
        p->crop_width = w;
    } else {
        p->resize_mode = OMNIC__RESIZE_EXACT;
        p->height = h;
        p->width = w;
    }
    return OMNIC_OK;
}

/* image_mean / image_std style field `key` of cfg into out (untouched when absent or null). */
static omnic_status config_triple(const json_t *cfg, const char *key, const char *what, double out[3],
                                  omnic_err *err)
{
    const json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) return OMNIC_OK;
    if (json_is_number(v)) {
        double d;
        OMNIC_TRY(omnic__json_get_f64(cfg, key, true, 0, -1e30, 1e30, what, &d, err));
        out[0] = out[1] = out[2] = d;
        return OMNIC_OK;
    }
    if (!json_is_array(v) || json_array_size(v) != 3)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field '%s' must be a list of 3 numbers, got %s%s", what,
                          key, omnic__json_type_phrase(v), json_is_array(v) ? " of another length" : "");
    for (size_t i = 0; i < 3; i++) {
        const json_t *e = json_array_get(v, i);
        if (!json_is_number(e))
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: field '%s'[%zu] must be a number, got %s", what, key,
                              i, omnic__json_type_phrase(e));
        out[i] = json_number_value(e);
    }
    return OMNIC_OK;
}

omnic_status omnic__processor_config_pixels(const json_t *cfg, const char *what, bool *do_rescale,
                                            double *rescale_factor, bool *do_normalize, double mean[3],
                                            double std[3], omnic_err *err)
{
    bool convert_rgb;
    OMNIC_TRY(omnic__json_get_bool(cfg, "do_rescale", false, *do_rescale, what, do_rescale, err));
    OMNIC_TRY(omnic__json_get_f64(cfg, "rescale_factor", false, *rescale_factor, 1e-30, 1e30, what,
                                  rescale_factor, err));
    OMNIC_TRY(omnic__json_get_bool(cfg, "do_normalize", false, *do_normalize, what, do_normalize, err));
    OMNIC_TRY(config_triple(cfg, "image_mean", what, mean, err));
    OMNIC_TRY(config_triple(cfg, "image_std", what, std, err));
    return omnic__json_get_bool(cfg, "do_convert_rgb", false, true, what, &convert_rgb, err);
}

const char *omnic__processor_config_type(const json_t *cfg, char *buf, size_t cap)
{
    const json_t *v = json_object_get(cfg, "image_processor_type");
    if (json_is_string(v)) return json_string_value(v);
    v = json_object_get(cfg, "feature_extractor_type");
    if (!json_is_string(v)) return NULL;
    const char *fe = json_string_value(v);
    size_t n = strlen(fe), sl = strlen("FeatureExtractor");
    if (n > sl && !strcmp(fe + n - sl, "FeatureExtractor") && n - sl + strlen("ImageProcessor") < cap) {
        snprintf(buf, cap, "%.*sImageProcessor", (int)(n - sl), fe);
        return buf;
    }
    return fe;
}

omnic_status omnic__image_processor_config_parse(const json_t *cfg, const char *what,
                                                 omnic__image_proc_params *out, omnic_err *err)
{
    if (!json_is_object(cfg)) return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: not a JSON object", what);
    const char *type = NULL, *fe = NULL; /* both must be strings when present */
    OMNIC_TRY(omnic__json_get_str(cfg, "image_processor_type", false, NULL, what, &type, err));
    if (!type) OMNIC_TRY(omnic__json_get_str(cfg, "feature_extractor_type", false, NULL, what, &fe, err));
    char buf[128];
    type = omnic__processor_config_type(cfg, buf, sizeof buf);
    if (!type)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: no image_processor_type (supported: CLIPImageProcessor, SiglipImageProcessor "
                          "and their Fast variants)",
                          what);
    size_t k = 0, nt = sizeof proc_types / sizeof proc_types[0];
    while (k < nt && strcmp(proc_types[k].name, type) != 0)
        k++;
    if (k == nt)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "%s: image_processor_type '%s' is not supported (supported: CLIPImageProcessor, "
                          "SiglipImageProcessor and their Fast variants)",
                          what, type);

    omnic__image_proc_params p;
    bool clip = proc_types[k].kind == KIND_CLIP;
    if (clip)
        omnic__image_proc_params_clip_defaults(&p);
    else
        omnic__image_proc_params_siglip_defaults(&p);
    if (proc_types[k].kind == KIND_GEMMA3) /* Gemma3ImageProcessor: SigLIP's, but BILINEAR; its
                                            * pan-and-scan keys are the media table's (clip_media.c) */
        p.resample = OMNIC__RESAMPLE_BILINEAR;
    p.numerics = proc_types[k].numerics;
    p.crop_rounding =
        p.numerics == OMNIC__NUMERICS_TORCHVISION ? OMNIC__CROP_ROUND_HALF_EVEN : OMNIC__CROP_FLOOR;

    int64_t resample;
    OMNIC_TRY(omnic__json_get_bool(cfg, "do_resize", false, p.do_resize, what, &p.do_resize, err));
    OMNIC_TRY(parse_size(cfg, "size", what, clip, clip, &p, false, err));
    OMNIC_TRY(omnic__json_get_i64(cfg, "resample", false, p.resample, 2, 3, what, &resample, err));
    p.resample = (omnic__resample)resample;
    OMNIC_TRY(
        omnic__json_get_bool(cfg, "do_center_crop", false, p.do_center_crop, what, &p.do_center_crop, err));
    OMNIC_TRY(parse_size(cfg, "crop_size", what, false, false, &p, true, err));
    OMNIC_TRY(omnic__processor_config_pixels(cfg, what, &p.do_rescale, &p.rescale_factor, &p.do_normalize,
                                             p.image_mean, p.image_std, err));
    omnic_status rc = omnic__image_proc_params_check(&p, err);
    if (rc != OMNIC_OK) {
        omnic__err_prefix(err, "%s", what);
        return rc;
    }
    *out = p;
    return OMNIC_OK;
}
