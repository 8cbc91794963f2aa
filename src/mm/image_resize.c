/* Separable antialiased resampling of RGB8 images, uint8 in and out, bit-exact with two
 * implementations: Pillow's src/libImaging/Resample.c (int32 weights, precision 22) and ATen's
 * uint8 antialias kernels behind torchvision resize (int16 weights, per-axis precision;
 * aten/src/ATen/native/cpu/UpSampleKernel.cpp, _compute_index_ranges_int16_weights). */
#include <math.h>
#include <string.h>

#include "core/limits.h"
#include "mm/image.h"

/* Bit-exactness needs every product rounded on its own (no fused multiply-add); GCC does not
 * contract in ISO C mode, clang needs to be told. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* Pillow's PRECISION_BITS (32 - 8 - 2); also ATen's upper bound on its per-axis precision. */
#define PIL_PRECISION 22

/* One axis: for each output index, the first source index, the number of taps, and ksize
 * integer weights (only the first `size` used) at `precision` fractional bits. */
typedef struct axis_coeffs {
    int64_t ksize;
    int precision;
    int64_t *xmin; /* [out] */
    int64_t *size; /* [out] */
    int32_t *k;    /* [out, ksize] */
} axis_coeffs;

static void coeffs_free(axis_coeffs *c)
{
    omnic_free(c->xmin);
    omnic_free(c->size);
    omnic_free(c->k);
    memset(c, 0, sizeof *c);
}

/* Pillow filters (Resample.c): bicubic with a = -0.5 written as Pillow writes it. */
static double pil_bicubic(double x)
{
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

/* ATen HelperInterpCubic::aa_filter (Keys, A = -0.5) through cubic_convolution1/2 of UpSample.h:
 * the same polynomial, evaluated in a different order (so rounded differently). */
static double aten_bicubic(double x)
{
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
}

/* Both libraries: triangle filter. */
static double bilinear(double x)
{
    if (x < 0.0) x = -x;
    if (x < 1.0) return 1.0 - x;
    return 0.0;
}

/* Rounds w * 2^p half away from zero, as both libraries do ((int)(v +- 0.5)). */
static int32_t quantize(double w, int p)
{
    double v = w * (double)(1 << p);
    return v < 0 ? (int32_t)(-0.5 + v) : (int32_t)(0.5 + v);
}

/* Computes one axis's taps for in -> out. Geometry (both libraries): scale = in / out,
 * support = filter support * max(scale, 1), center = (i + 0.5) * scale, xmin = (int)(center -
 * support + 0.5) clamped at 0, xmax = (int)(center + support + 0.5) clamped at in, weights
 * K((j + xmin - center + 0.5) / max(scale, 1)) divided by their sum when it is not 0. */
static omnic_status coeffs_init(axis_coeffs *c, int64_t in, int64_t out, omnic__resample filter,
                                omnic__image_numerics numerics, omnic_err *err)
{
    double (*fn)(double) = filter == OMNIC__RESAMPLE_BILINEAR ? bilinear
                           : numerics == OMNIC__NUMERICS_PIL  ? pil_bicubic
                                                              : aten_bicubic;
    double fsupport = filter == OMNIC__RESAMPLE_BILINEAR ? 1.0 : 2.0;
    double scale = (double)in / (double)out;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = fsupport * filterscale;
    double ss = 1.0 / filterscale;
    memset(c, 0, sizeof *c);
    c->ksize = (int64_t)ceil(support) * 2 + 1;
    size_t nout = (size_t)out, ks = (size_t)c->ksize, nk;
    double *w = NULL;
    if (!omnic_size_mul(&nk, nout, ks))
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "resize: %lld -> %lld taps overflow", (long long)in,
                          (long long)out);
    c->xmin = omnic_alloc_array(nout, sizeof *c->xmin);
    c->size = omnic_alloc_array(nout, sizeof *c->size);
    c->k = omnic_alloc_array(nk, sizeof *c->k);
    w = omnic_alloc_array(nk, sizeof *w);
    if (!c->xmin || !c->size || !c->k || !w) {
        omnic_free(w);
        coeffs_free(c);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "resize: out of memory for %lld x %lld weights", (long long)out,
                          (long long)c->ksize);
    }
    double wmax = 0.0;
    for (size_t i = 0; i < nout; i++) {
        double center = ((double)i + 0.5) * scale;
        int64_t xmin = (int64_t)(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int64_t xmax = (int64_t)(center + support + 0.5);
        if (xmax > in) xmax = in;
        int64_t n = xmax - xmin;
        /* ATen clamps to ksize (rounding can make it one larger); Pillow never gets there. */
        if (n < 0) n = 0;
        if (n > c->ksize) n = c->ksize;
        double *k = w + i * ks, total = 0.0;
        for (int64_t j = 0; j < n; j++) {
            k[j] = fn(((double)(j + xmin) - center + 0.5) * ss);
            total += k[j];
        }
        if (total != 0.0) {
            for (int64_t j = 0; j < n; j++) {
                k[j] /= total;
                if (k[j] > wmax) wmax = k[j];
            }
        }
        c->xmin[i] = xmin;
        c->size[i] = n;
    }
    if (numerics == OMNIC__NUMERICS_PIL) {
        c->precision = PIL_PRECISION;
    } else {
        /* ATen: the largest p (< 22) at which the largest weight still fits int16 at p + 1... as
         * written: stop at the first p where round(wmax * 2^(p+1)) >= 2^15. */
        int p = 0;
        for (p = 0; p < PIL_PRECISION; p++)
            if ((int64_t)(0.5 + wmax * (double)(1 << (p + 1))) >= (1 << 15)) break;
        c->precision = p;
    }
    for (size_t i = 0; i < nk; i++) {
        int32_t q = quantize(w[i], c->precision);
        c->k[i] = numerics == OMNIC__NUMERICS_PIL ? q : (int32_t)(int16_t)q; /* ATen stores int16 */
    }
    omnic_free(w);
    return OMNIC_OK;
}

/* acc carries the rounding bias 2^(p-1); the result is clamped to 0..255 (Pillow's clip8 and
 * ATen's clamp(acc >> p) agree for every acc). */
static uint8_t clip8(int64_t acc, int p)
{
    int64_t v = acc >> p; /* arithmetic shift: floor */
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static void pass_horizontal(const uint8_t *src, int64_t in_w, int64_t h, const axis_coeffs *c, int64_t out_w,
                            uint8_t *dst)
{
    int64_t bias = (int64_t)1 << (c->precision - 1);
    for (int64_t y = 0; y < h; y++) {
        const uint8_t *row = src + (size_t)(y * in_w * 3);
        uint8_t *o = dst + (size_t)(y * out_w * 3);
        for (int64_t x = 0; x < out_w; x++) {
            const int32_t *k = c->k + x * c->ksize;
            const uint8_t *s = row + c->xmin[x] * 3;
            int64_t a0 = bias, a1 = bias, a2 = bias;
            for (int64_t j = 0; j < c->size[x]; j++) {
                a0 += (int64_t)s[3 * j] * k[j];
                a1 += (int64_t)s[3 * j + 1] * k[j];
                a2 += (int64_t)s[3 * j + 2] * k[j];
            }
            o[3 * x] = clip8(a0, c->precision);
            o[3 * x + 1] = clip8(a1, c->precision);
            o[3 * x + 2] = clip8(a2, c->precision);
        }
    }
}

static void pass_vertical(const uint8_t *src, int64_t w, const axis_coeffs *c, int64_t out_h, uint8_t *dst)
{
    int64_t bias = (int64_t)1 << (c->precision - 1), stride = w * 3;
    for (int64_t y = 0; y < out_h; y++) {
        const int32_t *k = c->k + y * c->ksize;
        const uint8_t *s = src + (size_t)(c->xmin[y] * stride);
        uint8_t *o = dst + (size_t)(y * stride);
        for (int64_t x = 0; x < stride; x++) {
            int64_t a = bias;
            for (int64_t j = 0; j < c->size[y]; j++)
                a += (int64_t)s[j * stride + x] * k[j];
            o[x] = clip8(a, c->precision);
        }
    }
}

omnic_status omnic__image_resize(const omnic__image *src, int64_t out_w, int64_t out_h,
                                 omnic__resample filter, omnic__image_numerics numerics, omnic__image *out,
                                 omnic_err *err)
{
    if (out_w < 1 || out_h < 1)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "resize: target size %lldx%lld must be >= 1x1",
                          (long long)out_w, (long long)out_h);
    if (filter != OMNIC__RESAMPLE_BILINEAR && filter != OMNIC__RESAMPLE_BICUBIC)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "resize: resample filter %d is not supported (2 bilinear, 3 bicubic)", (int)filter);
    if (numerics != OMNIC__NUMERICS_PIL && numerics != OMNIC__NUMERICS_TORCHVISION)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "resize: unknown numerics variant %d", (int)numerics);
    if (out_w > OMNIC_MAX_IMAGE_SIDE || out_h > OMNIC_MAX_IMAGE_SIDE ||
        out_w * out_h > OMNIC_MAX_IMAGE_PIXELS)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE,
                          "resize: target size %lldx%lld is over the limits (%d per side, %d pixels)",
                          (long long)out_w, (long long)out_h, OMNIC_MAX_IMAGE_SIDE, OMNIC_MAX_IMAGE_PIXELS);
    int64_t in_w = src->width, in_h = src->height;
    bool need_h = out_w != in_w, need_v = out_h != in_h;
    omnic__image res = {0}, tmp = {0};
    axis_coeffs ch = {0}, cv = {0};
    omnic_status rc = omnic__image_alloc(&res, out_w, out_h, err);
    if (rc != OMNIC_OK) goto fail;
    if (!need_h && !need_v) {
        memcpy(res.data, src->data, (size_t)(in_w * in_h * 3));
        *out = res;
        return OMNIC_OK;
    }
    if (need_h && (rc = coeffs_init(&ch, in_w, out_w, filter, numerics, err)) != OMNIC_OK) goto fail;
    if (need_v && (rc = coeffs_init(&cv, in_h, out_h, filter, numerics, err)) != OMNIC_OK) goto fail;
    if (need_h && need_v) {
        /* Horizontal pass over every source row (Pillow limits it to the rows the vertical pass
         * reads; the values are the same), then vertical into the result. */
        if ((rc = omnic__image_alloc(&tmp, out_w, in_h, err)) != OMNIC_OK) goto fail;
        pass_horizontal(src->data, in_w, in_h, &ch, out_w, tmp.data);
        pass_vertical(tmp.data, out_w, &cv, out_h, res.data);
    } else if (need_h) {
        pass_horizontal(src->data, in_w, in_h, &ch, out_w, res.data);
    } else {
        pass_vertical(src->data, in_w, &cv, out_h, res.data);
    }
    coeffs_free(&ch);
    coeffs_free(&cv);
    omnic__image_deinit(&tmp);
    *out = res;
    return OMNIC_OK;
fail:
    coeffs_free(&ch);
    coeffs_free(&cv);
    omnic__image_deinit(&tmp);
    omnic__image_deinit(&res);
    return rc;
}
