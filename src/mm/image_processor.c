/* CLIP / SigLIP image processor: resize, centre crop, rescale + normalise to f32 CHW. Order and
 * size rules of Hugging Face CLIPImageProcessor / SiglipImageProcessor.preprocess
 * (reference/families-qwen-llava.md 3.2 and 4.1). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "mm/image_processor.h"

static const double clip_mean[3] = {0.48145466, 0.4578275, 0.40821073};
static const double clip_std[3] = {0.26862954, 0.26130258, 0.27577711};

static void common_defaults(omnic__image_proc_params *p)
{
    memset(p, 0, sizeof *p);
    p->do_resize = true;
    p->resample = OMNIC__RESAMPLE_BICUBIC;
    p->do_rescale = true;
    p->rescale_factor = 1.0 / 255.0;
    p->do_normalize = true;
    p->numerics = OMNIC__NUMERICS_PIL;
    p->crop_rounding = OMNIC__CROP_FLOOR;
}

void omnic__image_proc_params_clip_defaults(omnic__image_proc_params *p)
{
    common_defaults(p);
    p->resize_mode = OMNIC__RESIZE_SHORTEST_EDGE;
    p->shortest_edge = 224;
    p->do_center_crop = true;
    p->crop_height = p->crop_width = 224;
    memcpy(p->image_mean, clip_mean, sizeof clip_mean);
    memcpy(p->image_std, clip_std, sizeof clip_std);
}

void omnic__image_proc_params_siglip_defaults(omnic__image_proc_params *p)
{
    common_defaults(p);
    p->resize_mode = OMNIC__RESIZE_EXACT;
    p->height = p->width = 224;
    for (int c = 0; c < 3; c++)
        p->image_mean[c] = p->image_std[c] = 0.5;
}

static omnic_status check_side(const char *name, int64_t v, omnic_err *err)
{
    if (v < 1 || v > OMNIC_MAX_IMAGE_SIDE)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "image processor: %s = %lld is outside [1, %d]", name,
                          (long long)v, OMNIC_MAX_IMAGE_SIDE);
    return OMNIC_OK;
}

omnic_status omnic__image_proc_params_check(const omnic__image_proc_params *p, omnic_err *err)
{
    if (p->do_resize) {
        if (p->resize_mode == OMNIC__RESIZE_SHORTEST_EDGE) {
            OMNIC_TRY(check_side("shortest_edge", p->shortest_edge, err));
        } else if (p->resize_mode == OMNIC__RESIZE_EXACT) {
            OMNIC_TRY(check_side("height", p->height, err));
            OMNIC_TRY(check_side("width", p->width, err));
        } else {
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "image processor: unknown resize mode %d",
                              (int)p->resize_mode);
        }
        if (p->resample != OMNIC__RESAMPLE_BILINEAR && p->resample != OMNIC__RESAMPLE_BICUBIC)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "image processor: resample %d is not supported (2 bilinear, 3 bicubic)",
                              (int)p->resample);
    }
    if (p->do_center_crop) {
        OMNIC_TRY(check_side("crop height", p->crop_height, err));
        OMNIC_TRY(check_side("crop width", p->crop_width, err));
        if (p->crop_rounding != OMNIC__CROP_FLOOR && p->crop_rounding != OMNIC__CROP_ROUND_HALF_EVEN)
            return OMNIC_FAIL(err, OMNIC_E_INVALID, "image processor: unknown crop rounding %d",
                              (int)p->crop_rounding);
    }
    if (p->numerics != OMNIC__NUMERICS_PIL && p->numerics != OMNIC__NUMERICS_TORCHVISION)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "image processor: unknown numerics variant %d",
                          (int)p->numerics);
    omnic__norm_lut lut;
    return omnic__norm_lut_init(&lut, p->numerics, p->do_rescale, p->rescale_factor, p->do_normalize,
                                p->image_mean, p->image_std, err);
}

/* Size after the resize step (Hugging Face get_resize_output_image_size, default_to_square=False
 * for shortest_edge: new_long = int(n * long / short), Python true division then truncation). */
static omnic_status resized_size(const omnic__image_proc_params *p, int64_t w, int64_t h, int64_t *rw,
                                 int64_t *rh, omnic_err *err)
{
    if (!p->do_resize) {
        *rw = w;
        *rh = h;
        return OMNIC_OK;
    }
    if (p->resize_mode == OMNIC__RESIZE_EXACT) {
        *rw = p->width;
        *rh = p->height;
        return OMNIC_OK;
    }
    int64_t s = w <= h ? w : h, l = w <= h ? h : w, n = p->shortest_edge;
    /* n <= 32768 and l <= 2^32: n * l is exact in a double, so is the quotient's rounding. */
    double q = (double)(n * l) / (double)s;
    if (q > (double)OMNIC_MAX_IMAGE_SIDE)
        return OMNIC_FAIL(
            err, OMNIC_E_TOO_LARGE,
            "image processor: a %lldx%lld image resized to shortest edge %lld would be %.0f pixels "
            "long, over the %d pixel limit per side",
            (long long)w, (long long)h, (long long)n, q, OMNIC_MAX_IMAGE_SIDE);
    int64_t nl = (int64_t)q;
    if (nl < 1) nl = 1; /* n >= 1 and l >= s: cannot happen, kept for the invariant */
    if (w <= h) {
        *rw = n;
        *rh = nl;
    } else {
        *rw = nl;
        *rh = n;
    }
    if (*rw * *rh > OMNIC_MAX_IMAGE_PIXELS)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "image processor: resized size %lldx%lld is over the %d pixel limit",
                          (long long)*rw, (long long)*rh, OMNIC_MAX_IMAGE_PIXELS);
    return OMNIC_OK;
}

omnic_status omnic__image_proc_output_size(const omnic__image_proc_params *p, int64_t in_w, int64_t in_h,
                                           int64_t *out_w, int64_t *out_h, omnic_err *err)
{
    OMNIC_TRY(omnic__image_proc_params_check(p, err));
    if (in_w < 1 || in_h < 1 || in_w > ((int64_t)1 << 32) || in_h > ((int64_t)1 << 32))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "image processor: input size %lldx%lld is invalid",
                          (long long)in_w, (long long)in_h);
    int64_t w, h;
    OMNIC_TRY(resized_size(p, in_w, in_h, &w, &h, err));
    if (p->do_center_crop) {
        w = p->crop_width;
        h = p->crop_height;
    }
    *out_w = w;
    *out_h = h;
    return OMNIC_OK;
}

omnic_status omnic__image_preprocess(const omnic__image *img, const omnic__image_proc_params *p,
                                     omnic__tensor **pixel_values, omnic_err *err)
{
    int64_t ow, oh, rw, rh;
    OMNIC_TRY(omnic__image_proc_output_size(p, img->width, img->height, &ow, &oh, err));
    OMNIC_TRY(resized_size(p, img->width, img->height, &rw, &rh, err));
    omnic__norm_lut lut;
    OMNIC_TRY(omnic__norm_lut_init(&lut, p->numerics, p->do_rescale, p->rescale_factor, p->do_normalize,
                                   p->image_mean, p->image_std, err));

    omnic__image resized = {0}, cropped = {0};
    const omnic__image *cur = img;
    omnic__tensor *t = NULL;
    omnic_status rc = OMNIC_OK;
    if (rw != img->width || rh != img->height) {
        rc = omnic__image_resize(img, rw, rh, p->resample, p->numerics, &resized, err);
        if (rc != OMNIC_OK) goto out;
        cur = &resized;
    }
    if (p->do_center_crop && (cur->width != p->crop_width || cur->height != p->crop_height)) {
        rc = omnic__image_center_crop(cur, p->crop_width, p->crop_height, p->crop_rounding, &cropped, err);
        if (rc != OMNIC_OK) goto out;
        cur = &cropped;
    }
    int64_t dims[3] = {3, cur->height, cur->width};
    rc = omnic__tensor_create(&t, OMNIC_DTYPE_F32, 3, dims, err);
    if (rc != OMNIC_OK) goto out;
    snprintf(t->name, sizeof t->name, "pixel_values");
    omnic__image_to_chw(cur, &lut, t->data);
    *pixel_values = t;
out:
    omnic__image_deinit(&resized);
    omnic__image_deinit(&cropped);
    return rc;
}
