/* Centre crop (Hugging Face's floor variant and torchvision's round-half-even one, both padding
 * with zeros) and rescale + normalise of RGB8 to f32 CHW through per-channel lookup tables, with
 * the PIL/numpy and the fused torchvision formulas (reference/families-qwen-llava.md 2.3, 2.4). */
#include <math.h>
#include <string.h>

#include "core/limits.h"
#include "mm/image.h"

/* Bit-exactness needs every product rounded on its own (no fused multiply-add); GCC does not
 * contract in ISO C mode, clang needs to be told. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* floor(a / 2) for any sign. */
static int64_t floor_half(int64_t a)
{
    return a >= 0 ? a / 2 : -((-a + 1) / 2);
}

/* Row (or column) of the source that output 0 comes from; negative when the crop pads. */
static int64_t crop_offset(int64_t size, int64_t crop, omnic__crop_rounding rounding)
{
    int64_t d = size - crop;
    if (rounding == OMNIC__CROP_FLOOR) return floor_half(d);
    /* torchvision: pads floor((crop - size) / 2) before, then crops at round((size - crop) / 2.0)
     * with Python's round (ties to even). */
    if (d < 0) return -((-d) / 2);
    int64_t q = d / 2;
    if (d % 2 == 1 && q % 2 == 1) q++; /* x.5 rounds to the even neighbour */
    return q;
}

omnic_status omnic__image_center_crop(const omnic__image *src, int64_t crop_w, int64_t crop_h,
                                      omnic__crop_rounding rounding, omnic__image *out, omnic_err *err)
{
    if (crop_w < 1 || crop_h < 1)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "center crop: size %lldx%lld must be >= 1x1",
                          (long long)crop_w, (long long)crop_h);
    if (crop_w > OMNIC_MAX_IMAGE_SIDE || crop_h > OMNIC_MAX_IMAGE_SIDE)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "center crop: size %lldx%lld is over the %d pixel limit per side",
                          (long long)crop_w, (long long)crop_h, OMNIC_MAX_IMAGE_SIDE);
    omnic__image res = {0};
    OMNIC_TRY(omnic__image_alloc(&res, crop_w, crop_h, err)); /* zeroed: the padding */
    int64_t top = crop_offset(src->height, crop_h, rounding),
            left = crop_offset(src->width, crop_w, rounding);
    /* Output columns [x0, x1) map to source columns x + left inside [0, width). */
    int64_t x0 = left < 0 ? -left : 0, x1 = src->width - left < crop_w ? src->width - left : crop_w;
    for (int64_t y = 0; y < crop_h; y++) {
        int64_t sy = y + top;
        if (sy < 0 || sy >= src->height || x1 <= x0) continue;
        memcpy(res.data + (size_t)((y * crop_w + x0) * 3),
               src->data + (size_t)((sy * src->width + x0 + left) * 3), (size_t)((x1 - x0) * 3));
    }
    *out = res;
    return OMNIC_OK;
}

omnic_status omnic__norm_lut_init(omnic__norm_lut *lut, omnic__image_numerics numerics, bool do_rescale,
                                  double rescale_factor, bool do_normalize, const double mean[3],
                                  const double std[3], omnic_err *err)
{
    if (numerics != OMNIC__NUMERICS_PIL && numerics != OMNIC__NUMERICS_TORCHVISION)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "normalize: unknown numerics variant %d", (int)numerics);
    if (do_rescale && (!isfinite(rescale_factor) || rescale_factor == 0.0))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "normalize: rescale_factor %g must be finite and non-zero",
                          rescale_factor);
    if (do_normalize) {
        if (!mean || !std) return OMNIC_FAIL(err, OMNIC_E_INVALID, "normalize: mean and std are required");
        for (int c = 0; c < 3; c++) {
            if (!isfinite(mean[c]) || !isfinite(std[c]) || (float)std[c] == 0.0f ||
                !isfinite((float)std[c]) || !isfinite((float)mean[c]))
                return OMNIC_FAIL(err, OMNIC_E_INVALID,
                                  "normalize: channel %d has mean %g, std %g (need finite values, std != 0)",
                                  c, mean[c], std[c]);
        }
    }
    for (int c = 0; c < 3; c++) {
        float m = do_normalize ? (float)mean[c] : 0.0f, s = do_normalize ? (float)std[c] : 1.0f;
        if (numerics == OMNIC__NUMERICS_TORCHVISION && do_rescale && do_normalize) {
            /* torch.tensor(mean) * (1.0 / rescale_factor): f32 tensor times a scalar cast to f32. */
            float inv = (float)(1.0 / rescale_factor);
            m = m * inv;
            s = s * inv;
        }
        for (int u = 0; u < 256; u++) {
            float x;
            if (numerics == OMNIC__NUMERICS_PIL) {
                /* numpy: image.astype(float64) * scale, then astype(float32). */
                x = do_rescale ? (float)((double)u * rescale_factor) : (float)u;
                if (do_normalize) x = (x - m) / s;
            } else if (do_rescale && do_normalize) {
                x = ((float)u - m) / s;
            } else if (do_rescale) {
                x = (float)u * (float)rescale_factor;
            } else {
                x = (float)u;
                if (do_normalize) x = (x - m) / s;
            }
            lut->v[c][u] = x;
        }
    }
    return OMNIC_OK;
}

void omnic__image_to_chw(const omnic__image *img, const omnic__norm_lut *lut, float *out)
{
    size_t n = (size_t)(img->width * img->height);
    for (size_t c = 0; c < 3; c++) {
        const float *t = lut->v[c];
        float *o = out + c * n;
        for (size_t i = 0; i < n; i++)
            o[i] = t[img->data[3 * i + c]];
    }
}
