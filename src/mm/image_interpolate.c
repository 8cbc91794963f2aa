/* ATen's bicubic interpolation of f32 planes (mm/image.h: omnic__image_bicubic_f32). The weights
 * and indices of each axis are computed once (HelperInterpCubic::compute_indices_weights), the
 * value is sum_i w_y[i] * (sum_j w_x[j] * src[y_i][x_j]) with sums from tap 0 up. */
#include <math.h>
#include <stdlib.h>

#include "mm/image.h"

typedef struct cubic_taps {
    int64_t idx[4];
    float w[4];
} cubic_taps;

static float conv1(float x, float A) /* |x| <= 1 */
{
    return ((A + 2) * x - (A + 3)) * x * x + 1;
}

static float conv2(float x, float A) /* 1 < |x| < 2 */
{
    return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

static void axis_taps(int64_t in, int64_t out, cubic_taps *t)
{
    const float A = -0.75f, scale = (float)in / (float)out;
    for (int64_t d = 0; d < out; d++) {
        const float real = scale * ((float)d + 0.5f) - 0.5f;
        int64_t i0 = (int64_t)floorf(real);
        if (i0 > in - 1) i0 = in - 1;
        float l = real - (float)i0;
        l = l < 0 ? 0 : l > 1 ? 1 : l;
        t[d].w[0] = conv2(l + 1.0f, A);
        t[d].w[1] = conv1(l, A);
        t[d].w[2] = conv1(1.0f - l, A);
        t[d].w[3] = conv2(1.0f - l + 1.0f, A);
        for (int j = 0; j < 4; j++) {
            int64_t k = i0 - 1 + j;
            t[d].idx[j] = k < 0 ? 0 : k > in - 1 ? in - 1 : k;
        }
    }
}

omnic_status omnic__image_bicubic_f32(const float *src, int64_t channels, int64_t height, int64_t width,
                                      int64_t out_h, int64_t out_w, float *dst, omnic_err *err)
{
    cubic_taps *ty = omnic_alloc_array((size_t)out_h, sizeof *ty);
    cubic_taps *tx = omnic_alloc_array((size_t)out_w, sizeof *tx);
    if (!ty || !tx) {
        omnic_free(ty);
        omnic_free(tx);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory resizing to %lld x %lld", (long long)out_w,
                          (long long)out_h);
    }
    {
        axis_taps(height, out_h, ty);
        axis_taps(width, out_w, tx);
        for (int64_t c = 0; c < channels; c++) {
            const float *p = src + c * height * width;
            float *o = dst + c * out_h * out_w;
            for (int64_t y = 0; y < out_h; y++)
                for (int64_t x = 0; x < out_w; x++) {
                    float acc = 0;
                    for (int i = 0; i < 4; i++) {
                        const float *r = p + ty[y].idx[i] * width;
                        float row = r[tx[x].idx[0]] * tx[x].w[0];
                        for (int j = 1; j < 4; j++)
                            row += r[tx[x].idx[j]] * tx[x].w[j];
                        acc = i ? acc + row * ty[y].w[i] : row * ty[y].w[0];
                    }
                    o[y * out_w + x] = acc;
                }
        }
    }
    omnic_free(ty);
    omnic_free(tx);
    return OMNIC_OK;
}
