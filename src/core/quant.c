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

void omnic__q4_0x16_pack(const void *rows, void *group, int64_t K)
{
    const int64_t nb = K / OMNIC_QK;
    const uint8_t *src = rows;
    for (int r = 0; r < OMNIC_X16_ROWS; r++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = src + ((size_t)r * (size_t)nb + (size_t)b) * sizeof(omnic__block_q4_0);
            uint8_t *gb = (uint8_t *)group + (size_t)b * OMNIC_Q4X16_BLOCK;
            memcpy(gb + 256 + 2 * r, blk, 2);
            for (int j = 0; j < 4; j++)
                memcpy(gb + 64 * j + 4 * r, blk + 2 + 4 * j, 4);
        }
}

void omnic__q8_0x16_pack(const void *rows, void *group, int64_t K)
{
    const int64_t nb = K / OMNIC_QK;
    const uint8_t *src = rows;
    for (int r = 0; r < OMNIC_X16_ROWS; r++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = src + ((size_t)r * (size_t)nb + (size_t)b) * sizeof(omnic__block_q8_0);
            uint8_t *gb = (uint8_t *)group + (size_t)b * OMNIC_Q8X16_BLOCK;
            memcpy(gb + 512 + 2 * r, blk, 2);
            for (int j = 0; j < 8; j++)
                memcpy(gb + 64 * j + 4 * r, blk + 2 + 4 * j, 4);
        }
}

omnic_dtype omnic__x16_plain(omnic_dtype t)
{
    return t == OMNIC_DTYPE_Q4_0X16 ? OMNIC_DTYPE_Q4_0 : t == OMNIC_DTYPE_Q8_0X16 ? OMNIC_DTYPE_Q8_0 : OMNIC_DTYPE_COUNT;
}

void omnic__x16_pack(omnic_dtype t, const void *rows, void *group, int64_t K)
{
    if (t == OMNIC_DTYPE_Q8_0X16)
        omnic__q8_0x16_pack(rows, group, K);
    else
        omnic__q4_0x16_pack(rows, group, K);
}

/* Block b of row n of a q8_0x16 weight [N, K] as a plain q8_0 block. */
static void q8_0x16_block(const void *w, int64_t n, int64_t K, int64_t b, omnic__block_q8_0 *out)
{
    const int64_t nb = K / OMNIC_QK, r = n % OMNIC_X16_ROWS;
    const uint8_t *gb = (const uint8_t *)w + (size_t)(n - r) * (size_t)nb * sizeof(omnic__block_q8_0) +
                        (size_t)b * OMNIC_Q8X16_BLOCK;
    memcpy(&out->d, gb + 512 + 2 * r, 2);
    for (int j = 0; j < 8; j++)
        memcpy(out->qs + 4 * j, gb + 64 * j + 4 * r, 4);
}

/* Block b of row n of a q4_0x16 weight [N, K] as a plain q4_0 block. */
static void q4_0x16_block(const void *w, int64_t n, int64_t K, int64_t b, omnic__block_q4_0 *out)
{
    const int64_t nb = K / OMNIC_QK, r = n % OMNIC_X16_ROWS;
    const uint8_t *gb = (const uint8_t *)w + (size_t)(n - r) * (size_t)nb * sizeof(omnic__block_q4_0) +
                        (size_t)b * OMNIC_Q4X16_BLOCK;
    memcpy(&out->d, gb + 256 + 2 * r, 2);
    for (int j = 0; j < 4; j++)
        memcpy(out->qs + 4 * j, gb + 64 * j + 4 * r, 4);
}

void omnic__dequantize_weight_row(omnic_dtype t, const void *w, int64_t n, int64_t K, float *y)
{
    if (t == OMNIC_DTYPE_Q4_0X16) {
        for (int64_t b = 0; b < K / OMNIC_QK; b++) {
            omnic__block_q4_0 blk;
            q4_0x16_block(w, n, K, b, &blk);
            omnic__dequantize_row_q4_0(&blk, y + b * OMNIC_QK, OMNIC_QK);
        }
        return;
    }
    if (t == OMNIC_DTYPE_Q8_0X16) {
        for (int64_t b = 0; b < K / OMNIC_QK; b++) {
            omnic__block_q8_0 blk;
            q8_0x16_block(w, n, K, b, &blk);
            omnic__dequantize_row_q8_0(&blk, y + b * OMNIC_QK, OMNIC_QK);
        }
        return;
    }
    omnic__dequantize_row(t, (const uint8_t *)w + omnic__dtype_row_bytes(t, n * K), y, K);
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
