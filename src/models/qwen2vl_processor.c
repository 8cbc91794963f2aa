/* Qwen2-VL image processor: smart_resize, resize, rescale + normalise, temporal repeat and the
 * merge-block patch layout of Hugging Face Qwen2VLImageProcessor(Fast)._preprocess
 * (reference/families-qwen-llava.md 5.2). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "models/qwen2vl_processor.h"

/* smart_resize must round exactly as Python's float arithmetic: no fused multiply-add. GCC does
 * not contract in ISO C mode; clang needs to be told. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define PIXELS_MAX_EXACT ((int64_t)1 << 53) /* largest pixel bound that a double holds exactly */

static const double clip_mean[3] = {0.48145466, 0.4578275, 0.40821073};
static const double clip_std[3] = {0.26862954, 0.26130258, 0.27577711};

void omnic__qwen2vl_proc_params_defaults(omnic__qwen2vl_proc_params *p)
{
    memset(p, 0, sizeof *p);
    p->do_resize = true;
    p->min_pixels = 56 * 56;
    p->max_pixels = 28 * 28 * 1280;
    p->patch_size = 14;
    p->temporal_patch_size = 2;
    p->merge_size = 2;
    p->resample = OMNIC__RESAMPLE_BICUBIC;
    p->do_rescale = true;
    p->rescale_factor = 1.0 / 255.0;
    p->do_normalize = true;
    memcpy(p->image_mean, clip_mean, sizeof clip_mean);
    memcpy(p->image_std, clip_std, sizeof clip_std);
    p->numerics = OMNIC__NUMERICS_TORCHVISION;
}

static omnic_status check_range(const char *name, int64_t v, int64_t lo, int64_t hi, omnic_err *err)
{
    if (v < lo || v > hi)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "Qwen2-VL image processor: %s = %lld is outside [%lld, %lld]",
                          name, (long long)v, (long long)lo, (long long)hi);
    return OMNIC_OK;
}

omnic_status omnic__qwen2vl_proc_params_check(const omnic__qwen2vl_proc_params *p, omnic_err *err)
{
    OMNIC_TRY(check_range("patch_size", p->patch_size, 1, OMNIC_MAX_VISION_PATCH, err));
    OMNIC_TRY(
        check_range("temporal_patch_size", p->temporal_patch_size, 1, OMNIC_MAX_VISION_TEMPORAL_PATCH, err));
    OMNIC_TRY(check_range("merge_size", p->merge_size, 1, OMNIC_MAX_VISION_MERGE, err));
    OMNIC_TRY(check_range("min_pixels", p->min_pixels, 1, OMNIC_MAX_IMAGE_PIXELS, err));
    OMNIC_TRY(check_range("max_pixels", p->max_pixels, 1, PIXELS_MAX_EXACT, err));
    if (p->min_pixels > p->max_pixels)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "Qwen2-VL image processor: min_pixels %lld is above max_pixels %lld",
                          (long long)p->min_pixels, (long long)p->max_pixels);
    if (p->resample != OMNIC__RESAMPLE_BILINEAR && p->resample != OMNIC__RESAMPLE_BICUBIC)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "Qwen2-VL image processor: resample %d is not supported (2 bilinear, 3 bicubic)",
                          (int)p->resample);
    if (p->numerics != OMNIC__NUMERICS_PIL && p->numerics != OMNIC__NUMERICS_TORCHVISION)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "Qwen2-VL image processor: unknown numerics variant %d",
                          (int)p->numerics);
    omnic__norm_lut lut;
    return omnic__norm_lut_init(&lut, p->numerics, p->do_rescale, p->rescale_factor, p->do_normalize,
                                p->image_mean, p->image_std, err);
}

omnic_status omnic__qwen2vl_set_pixel_bounds(omnic__qwen2vl_proc_params *p, int64_t min_pixels,
                                             int64_t max_pixels, omnic_err *err)
{
    if (min_pixels != 0)
        OMNIC_TRY(check_range("min_pixels override", min_pixels, 1, OMNIC_MAX_IMAGE_PIXELS, err));
    if (max_pixels != 0)
        OMNIC_TRY(check_range("max_pixels override", max_pixels, 1, OMNIC_MAX_IMAGE_PIXELS, err));
    int64_t lo = min_pixels != 0 ? min_pixels : p->min_pixels,
            hi = max_pixels != 0 ? max_pixels : p->max_pixels;
    if (lo > hi)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "Qwen2-VL image processor: min_pixels %lld would be above max_pixels %lld",
                          (long long)lo, (long long)hi);
    p->min_pixels = lo;
    p->max_pixels = hi;
    return OMNIC_OK;
}

/* A smart_resize side (already a multiple-of-factor count times factor, as a double) -> int64,
 * refusing what no image may become. */
static omnic_status side_from_double(double v, const char *which, int64_t in_h, int64_t in_w, int64_t *out,
                                     omnic_err *err)
{
    if (!(v >= 0.0) || v > (double)OMNIC_MAX_IMAGE_SIDE)
        return OMNIC_FAIL(
            err, OMNIC_E_TOO_LARGE,
            "Qwen2-VL smart_resize: a %lldx%lld (HxW) image would get %s %.0f, over the %d pixel limit "
            "per side",
            (long long)in_h, (long long)in_w, which, v, OMNIC_MAX_IMAGE_SIDE);
    *out = (int64_t)v;
    return OMNIC_OK;
}

omnic_status omnic__qwen2vl_smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                         int64_t max_pixels, int64_t *out_height, int64_t *out_width,
                                         omnic_err *err)
{
    if (factor < 1 || factor > OMNIC_MAX_IMAGE_SIDE)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "Qwen2-VL smart_resize: factor %lld is outside [1, %d]",
                          (long long)factor, OMNIC_MAX_IMAGE_SIDE);
    if (min_pixels < 1 || max_pixels < 1 || min_pixels > PIXELS_MAX_EXACT || max_pixels > PIXELS_MAX_EXACT)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "Qwen2-VL smart_resize: pixel bounds [%lld, %lld] must lie in [1, 2^53]",
                          (long long)min_pixels, (long long)max_pixels);
    if (height < 1 || width < 1)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "Qwen2-VL smart_resize: image size %lldx%lld (HxW) is invalid", (long long)height,
                          (long long)width);
    if (height > OMNIC_MAX_IMAGE_SIDE || width > OMNIC_MAX_IMAGE_SIDE)
        return OMNIC_FAIL(
            err, OMNIC_E_TOO_LARGE,
            "Qwen2-VL smart_resize: image size %lldx%lld (HxW) is over the %d pixel limit per side",
            (long long)height, (long long)width, OMNIC_MAX_IMAGE_SIDE);
    if (height < factor || width < factor)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "Qwen2-VL smart_resize: a %lldx%lld (HxW) image is too small: height and width must be "
            ">= %lld (patch_size * merge_size)",
            (long long)height, (long long)width, (long long)factor);
    const double fh = (double)height, fw = (double)width, ff = (double)factor;
    const double ratio = (height > width ? fh : fw) / (height > width ? fw : fh);
    if (ratio > 200.0)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "Qwen2-VL smart_resize: a %lldx%lld (HxW) image has aspect ratio %.6g, over the limit of 200",
            (long long)height, (long long)width, ratio);
    /* Python round() is ties-to-even: nearbyint in the default rounding mode. Sides <= 2^15, so
     * every product below is exact in int64 and every int -> double conversion is exact. */
    int64_t hb = (int64_t)nearbyint(fh / ff) * factor, wb = (int64_t)nearbyint(fw / ff) * factor;
    if (hb * wb > max_pixels) {
        const double beta = sqrt((double)(height * width) / (double)max_pixels);
        OMNIC_TRY(side_from_double(floor(fh / beta / ff) * ff, "height", height, width, &hb, err));
        OMNIC_TRY(side_from_double(floor(fw / beta / ff) * ff, "width", height, width, &wb, err));
    } else if (hb * wb < min_pixels) {
        const double beta = sqrt((double)min_pixels / (double)(height * width));
        OMNIC_TRY(side_from_double(ceil(fh * beta / ff) * ff, "height", height, width, &hb, err));
        OMNIC_TRY(side_from_double(ceil(fw * beta / ff) * ff, "width", height, width, &wb, err));
    }
    if (hb < 1 || wb < 1)
        return OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "Qwen2-VL smart_resize: a %lldx%lld (HxW) image would become %lldx%lld under max_pixels "
            "%lld (a side below factor %lld)",
            (long long)height, (long long)width, (long long)hb, (long long)wb, (long long)max_pixels,
            (long long)factor);
    if (hb > OMNIC_MAX_IMAGE_SIDE || wb > OMNIC_MAX_IMAGE_SIDE || hb * wb > OMNIC_MAX_IMAGE_PIXELS)
        return OMNIC_FAIL(
            err, OMNIC_E_TOO_LARGE,
            "Qwen2-VL smart_resize: a %lldx%lld (HxW) image would become %lldx%lld, over the limits "
            "(%d per side, %d pixels)",
            (long long)height, (long long)width, (long long)hb, (long long)wb, OMNIC_MAX_IMAGE_SIDE,
            OMNIC_MAX_IMAGE_PIXELS);
    *out_height = hb;
    *out_width = wb;
    return OMNIC_OK;
}

omnic_status omnic__qwen2vl_grid_for_size(const omnic__qwen2vl_proc_params *p, int64_t in_w, int64_t in_h,
                                          omnic__qwen2vl_grid *grid, omnic_err *err)
{
    OMNIC_TRY(omnic__qwen2vl_proc_params_check(p, err));
    const int64_t factor = p->patch_size * p->merge_size;
    int64_t rh, rw;
    if (p->do_resize) {
        OMNIC_TRY(
            omnic__qwen2vl_smart_resize(in_h, in_w, factor, p->min_pixels, p->max_pixels, &rh, &rw, err));
    } else {
        if (in_w < 1 || in_h < 1 || in_w > OMNIC_MAX_IMAGE_SIDE || in_h > OMNIC_MAX_IMAGE_SIDE)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "Qwen2-VL image processor: image size %lldx%lld (HxW) is invalid",
                              (long long)in_h, (long long)in_w);
        if (in_h % factor != 0 || in_w % factor != 0)
            return OMNIC_FAIL(
                err, OMNIC_E_INVALID,
                "Qwen2-VL image processor: with do_resize false, a %lldx%lld (HxW) image must be a "
                "multiple of %lld (patch_size * merge_size) on both sides",
                (long long)in_h, (long long)in_w, (long long)factor);
        rh = in_h;
        rw = in_w;
    }
    omnic__qwen2vl_grid g;
    g.t = 1; /* one frame, repeated up to temporal_patch_size frames: one temporal patch */
    g.h = rh / p->patch_size;
    g.w = rw / p->patch_size;
    g.resized_height = rh;
    g.resized_width = rw;
    g.n_patches = g.t * g.h * g.w;
    g.row_len = 3 * p->temporal_patch_size * p->patch_size * p->patch_size;
    g.n_tokens = g.n_patches / (p->merge_size * p->merge_size);
    *grid = g;
    return OMNIC_OK;
}

/* Writes the patch rows of img (already at the grid's size) through lut into out
 * [n_patches, row_len]: the permute (t, h/m, w/m, m, m, c, temporal, p, p) of Hugging Face's
 * reshape, each frame a copy of the image. */
static void write_patches(const omnic__image *img, const omnic__norm_lut *lut,
                          const omnic__qwen2vl_proc_params *p, const omnic__qwen2vl_grid *g, float *out)
{
    const size_t P = (size_t)p->patch_size, M = (size_t)p->merge_size, TP = (size_t)p->temporal_patch_size;
    const size_t W = (size_t)img->width, bh_n = (size_t)g->h / M, bw_n = (size_t)g->w / M;
    const size_t row_len = (size_t)g->row_len, frame = P * P;
    float *row = out;
    for (size_t tt = 0; tt < (size_t)g->t; tt++)
        for (size_t by = 0; by < bh_n; by++)
            for (size_t bx = 0; bx < bw_n; bx++)
                for (size_t iy = 0; iy < M; iy++)
                    for (size_t ix = 0; ix < M; ix++, row += row_len) {
                        const size_t y0 = (by * M + iy) * P, x0 = (bx * M + ix) * P;
                        for (size_t c = 0; c < 3; c++) {
                            float *dst = row + c * TP * frame;
                            for (size_t dy = 0; dy < P; dy++) {
                                const uint8_t *src = img->data + ((y0 + dy) * W + x0) * 3 + c;
                                for (size_t dx = 0; dx < P; dx++)
                                    dst[dy * P + dx] = lut->v[c][src[dx * 3]];
                            }
                            for (size_t f = 1; f < TP; f++)
                                memcpy(dst + f * frame, dst, frame * sizeof(float));
                        }
                    }
}

omnic_status omnic__qwen2vl_preprocess(const omnic__image *img, const omnic__qwen2vl_proc_params *p,
                                       omnic__tensor **pixel_values, omnic__qwen2vl_grid *grid,
                                       omnic_err *err)
{
    omnic__qwen2vl_grid g;
    OMNIC_TRY(omnic__qwen2vl_grid_for_size(p, img->width, img->height, &g, err));
    omnic__norm_lut lut;
    OMNIC_TRY(omnic__norm_lut_init(&lut, p->numerics, p->do_rescale, p->rescale_factor, p->do_normalize,
                                   p->image_mean, p->image_std, err));
    omnic__image resized = {0};
    const omnic__image *cur = img;
    omnic__tensor *t = NULL;
    omnic_status rc = OMNIC_OK;
    if (g.resized_width != img->width || g.resized_height != img->height) {
        rc = omnic__image_resize(img, g.resized_width, g.resized_height, p->resample, p->numerics, &resized,
                                 err);
        if (rc != OMNIC_OK) goto out;
        cur = &resized;
    }
    int64_t dims[2] = {g.n_patches, g.row_len};
    rc = omnic__tensor_create(&t, OMNIC_DTYPE_F32, 2, dims, err);
    if (rc != OMNIC_OK) goto out;
    snprintf(t->name, sizeof t->name, "pixel_values");
    write_patches(cur, &lut, p, &g, t->data);
    *pixel_values = t;
    *grid = g;
out:
    omnic__image_deinit(&resized);
    return rc;
}
