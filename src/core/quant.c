/* Block quantization: ggml's q8_0 / q4_0 reference rounding, exact dequantization, and the
 * q8 activation quantization of the matmul contract (rules in core/quant.h). */
#include <math.h>
#include <string.h>

#include "core/dtype.h"
#include "core/quant.h"

/* roundf(v) for |v| < 2^23 (ties away from zero), without a libm call so loops vectorize:
 * v - trunc(v) is exact there. */
static inline int round_away(float v)
{
    int t = (int)v;
    float r = v - (float)t;
    return t + (r >= 0.5f) - (r <= -0.5f);
}

void omnic__quantize_row_q8_0(const float *x, void *y, int64_t k)
{
    omnic__block_q8_0 *b = y;
    for (int64_t i = 0; i < k / OMNIC_QK; i++, x += OMNIC_QK) {
        float amax = 0.0f;
        for (int j = 0; j < OMNIC_QK; j++) {
            const float a = fabsf(x[j]);
            amax = amax > a ? amax : a; /* ggml's MAX(amax, fabsf(v)) */
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        omnic__block_q8_0 blk;
        blk.d = omnic__f32_to_f16(d);
        for (int j = 0; j < OMNIC_QK; j++)
            blk.qs[j] = (int8_t)round_away(x[j] * id); /* |x * id| <= 127 */
        memcpy(&b[i], &blk, sizeof blk);               /* y need not be aligned */
    }
}

void omnic__quantize_row_q4_0(const float *x, void *y, int64_t k)
{
    omnic__block_q4_0 *b = y;
    for (int64_t i = 0; i < k / OMNIC_QK; i++, x += OMNIC_QK) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < OMNIC_QK; j++) {
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        omnic__block_q4_0 blk;
        blk.d = omnic__f32_to_f16(d);
        for (int j = 0; j < OMNIC_QK / 2; j++) {
            const float x0 = x[j] * id, x1 = x[j + OMNIC_QK / 2] * id;
            int q0 = (int8_t)(x0 + 8.5f), q1 = (int8_t)(x1 + 8.5f);
            q0 = q0 < 15 ? q0 : 15;
            q1 = q1 < 15 ? q1 : 15;
            blk.qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
        memcpy(&b[i], &blk, sizeof blk);
    }
}

void omnic__dequantize_row_q8_0(const void *x, float *y, int64_t k)
{
    const omnic__block_q8_0 *b = x;
    for (int64_t i = 0; i < k / OMNIC_QK; i++, y += OMNIC_QK) {
        omnic__block_q8_0 blk;
        memcpy(&blk, &b[i], sizeof blk);
        const float d = omnic__f16_to_f32(blk.d);
        for (int j = 0; j < OMNIC_QK; j++)
            y[j] = d * (float)blk.qs[j];
    }
}

void omnic__dequantize_row_q4_0(const void *x, float *y, int64_t k)
{
    const omnic__block_q4_0 *b = x;
    for (int64_t i = 0; i < k / OMNIC_QK; i++, y += OMNIC_QK) {
        omnic__block_q4_0 blk;
        memcpy(&blk, &b[i], sizeof blk);
        const float d = omnic__f16_to_f32(blk.d);
        for (int j = 0; j < OMNIC_QK / 2; j++) {
            y[j] = d * (float)((blk.qs[j] & 0x0f) - 8);
            y[j + OMNIC_QK / 2] = d * (float)((blk.qs[j] >> 4) - 8);
        }
    }
}

void omnic__quantize_row(omnic_dtype t, const float *x, void *y, int64_t k)
{
    if (t == OMNIC_DTYPE_Q8_0)
        omnic__quantize_row_q8_0(x, y, k);
    else
        omnic__quantize_row_q4_0(x, y, k);
}

void omnic__dequantize_row(omnic_dtype t, const void *x, float *y, int64_t k)
{
    if (t == OMNIC_DTYPE_Q8_0)
        omnic__dequantize_row_q8_0(x, y, k);
    else
        omnic__dequantize_row_q4_0(x, y, k);
}

omnic_dtype omnic__x16_plain(omnic_dtype t)
{
    return t == OMNIC_DTYPE_Q4_0X16   ? OMNIC_DTYPE_Q4_0
           : t == OMNIC_DTYPE_Q8_0X16 ? OMNIC_DTYPE_Q8_0
                                      : OMNIC_DTYPE_COUNT;
}

/* Bytes of one plain block of x16 layout t's type: 18 (q4_0) or 34 (q8_0); a block of a group
 * is 16 of them: 16 x (bb - 2) quant bytes, then 16 scales. */
static size_t x16_bb(omnic_dtype t)
{
    return t == OMNIC_DTYPE_Q8_0X16 ? sizeof(omnic__block_q8_0) : sizeof(omnic__block_q4_0);
}

void omnic__x16_pack(omnic_dtype t, const void *rows, void *group, int64_t K)
{
    const int64_t nb = K / OMNIC_QK;
    const size_t bb = x16_bb(t), qb = bb - 2;
    const uint8_t *src = rows;
    for (int r = 0; r < OMNIC_X16_ROWS; r++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = src + ((size_t)r * (size_t)nb + (size_t)b) * bb;
            uint8_t *gb = (uint8_t *)group + (size_t)b * OMNIC_X16_ROWS * bb;
            memcpy(gb + OMNIC_X16_ROWS * qb + 2 * (size_t)r, blk, 2);
            for (size_t j = 0; j < qb / 4; j++)
                memcpy(gb + 64 * j + 4 * (size_t)r, blk + 2 + 4 * j, 4);
        }
}

void omnic__dequantize_weight_row(omnic_dtype t, const void *w, int64_t n, int64_t K, float *y)
{
    const omnic_dtype pt = omnic__x16_plain(t);
    if (pt == OMNIC_DTYPE_COUNT) {
        omnic__dequantize_row(t, (const uint8_t *)w + omnic__dtype_row_bytes(t, n * K), y, K);
        return;
    }
    const int64_t nb = K / OMNIC_QK, r = n % OMNIC_X16_ROWS;
    const size_t bb = x16_bb(t), qb = bb - 2;
    const uint8_t *grp = (const uint8_t *)w + (size_t)(n - r) * (size_t)nb * bb;
    for (int64_t b = 0; b < nb; b++) { /* gather row r's block b back into plain bytes */
        const uint8_t *gb = grp + (size_t)b * OMNIC_X16_ROWS * bb;
        uint8_t blk[sizeof(omnic__block_q8_0)];
        memcpy(blk, gb + OMNIC_X16_ROWS * qb + 2 * (size_t)r, 2);
        for (size_t j = 0; j < qb / 4; j++)
            memcpy(blk + 2 + 4 * j, gb + 64 * j + 4 * (size_t)r, 4);
        omnic__dequantize_row(pt, blk, y + b * OMNIC_QK, OMNIC_QK);
    }
}

void omnic__quantize_act_q8(const float *x, int8_t *q, float *d, int64_t k)
{
    for (int64_t i = 0; i < k / OMNIC_QK; i++, x += OMNIC_QK, q += OMNIC_QK) {
        float amax = 0.0f;
        for (int j = 0; j < OMNIC_QK; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        const float di = amax / 127.0f;
        const float id = di != 0.0f ? 1.0f / di : 0.0f;
        d[i] = di;
        for (int j = 0; j < OMNIC_QK; j++)
            q[j] = (int8_t)round_away(x[j] * id);
    }
}
