/* Block quantization (ggml's q8_0 / q4_0 layouts and rounding) and the q8 activation
 * quantization that matmuls with quantized weights apply to their activation rows.
 *
 * Weights, 32 elements per block along a row (reference rounding of ggml's
 * quantize_row_q8_0_ref / quantize_row_q4_0_ref, bit for bit):
 *   q8_0: amax = max |x|; d = amax / 127; id = d ? 1 / d : 0; q = roundf(x * id) (ties away
 *         from zero), |q| <= 127; stored d = f16(d) (nearest even). x ~ f16(d) * q.
 *   q4_0: m = the x of largest |x| (first one on ties); d = m / -8; id = d ? 1 / d : 0;
 *         q = min(15, (int)(x * id + 8.5f)) (the f32 sum truncated: ties round up);
 *         element j in the low nibble of byte j, element j + 16 in the high nibble;
 *         x ~ f16(d) * (q - 8).
 * Dequantization is exact: f16(d) * q fits in f32.
 *
 * Activations (the matmul contract, backend.h): each activation row is cut into 32-element
 * blocks, each with an f32 scale: d = amax / 127; id = d ? 1 / d : 0; q = roundf(x * id)
 * (the q8_0 rule with an f32 scale). A backend multiplies the dequantized weights by
 * these dequantized activations (d * q, exact in double); all backends quantize
 * activations bit-identically, so they differ only by their summation rounding. */
#ifndef OMNIC_CORE_QUANT_H
#define OMNIC_CORE_QUANT_H

#include <stdint.h>

#include "omnic/omnic.h"

#define OMNIC_QK 32 /* elements per block of every quantized type */

typedef struct omnic__block_q8_0 {
    uint16_t d; /* f16 scale */
    int8_t qs[OMNIC_QK];
} omnic__block_q8_0;

typedef struct omnic__block_q4_0 {
    uint16_t d;               /* f16 scale */
    uint8_t qs[OMNIC_QK / 2]; /* element j: low nibble of qs[j]; element j + 16: high nibble */
} omnic__block_q4_0;

_Static_assert(sizeof(omnic__block_q8_0) == 34, "q8_0 block is 34 bytes");
_Static_assert(sizeof(omnic__block_q4_0) == 18, "q4_0 block is 18 bytes");

/* k elements (a multiple of OMNIC_QK) of x into k / 32 blocks at y (y need not be aligned). */
void omnic__quantize_row_q8_0(const float *x, void *y, int64_t k);
void omnic__quantize_row_q4_0(const float *x, void *y, int64_t k);
/* k elements (a multiple of OMNIC_QK) of blocks x into y, exactly. */
void omnic__dequantize_row_q8_0(const void *x, float *y, int64_t k);
void omnic__dequantize_row_q4_0(const void *x, float *y, int64_t k);

/* q4_0x16 (OMNIC_DTYPE_Q4_0X16): a q4_0 weight [N, K], N a multiple of 16, whose rows
 * 16g..16g+15 (a group) keep their bytes (16 * K / 32 * 18, at the same offset as in q4_0)
 * but regrouped by block, so that one 64-byte load holds 4 nibble bytes of each of 16 rows.
 * A group is K / 32 blocks of OMNIC_Q4X16_BLOCK (288) bytes, block b of the 16 rows each:
 *   bytes 0..255:   byte 64 j + 4 r + i (j, i < 4) is byte 4 j + i of row r's q4_0 block b (qs);
 *   bytes 256..287: 16 f16, entry r is row r's d.
 * Row r's 32 values of block b are thus the low nibbles (elements 4j..4j+3) and high nibbles
 * (elements 16 + 4j..) of the 4 bytes at 64 j + 4 r, j < 4; values equal q4_0's exactly. */
#define OMNIC_X16_ROWS 16
#define OMNIC_Q4X16_BLOCK 288
/* q8_0x16 (OMNIC_DTYPE_Q8_0X16): the same for a q8_0 weight; a group is K / 32 blocks of
 * OMNIC_Q8X16_BLOCK (544) bytes:
 *   bytes 0..511:   byte 64 j + 4 r + i (j < 8, i < 4) is q[4 j + i] of row r's q8_0 block b;
 *   bytes 512..543: 16 f16, entry r is row r's d. */
#define OMNIC_Q8X16_BLOCK 544
/* The plain type x16 layout t regroups (q4_0 / q8_0), or OMNIC_DTYPE_COUNT when t is not one. */
omnic_dtype omnic__x16_plain(omnic_dtype t);
/* 16 plain rows of K elements (contiguous) -> one group of x16 layout t (OMNIC_DTYPE_Q4_0X16 or
 * OMNIC_DTYPE_Q8_0X16) at group (no overlap). */
void omnic__x16_pack(omnic_dtype t, const void *rows, void *group, int64_t K);
/* Row n of a quantized weight w [N, K] (q8_0, q4_0, q4_0x16 or q8_0x16) dequantized exactly. */
void omnic__dequantize_weight_row(omnic_dtype t, const void *w, int64_t n, int64_t K, float *y);

/* By dtype (t must be OMNIC_DTYPE_Q8_0 or OMNIC_DTYPE_Q4_0). */
void omnic__quantize_row(omnic_dtype t, const float *x, void *y, int64_t k);
void omnic__dequantize_row(omnic_dtype t, const void *x, float *y, int64_t k);

/* The activation quantization of the matmul contract, for k elements (a multiple of
 * OMNIC_QK): q[k] int8 and d[k / 32] f32 scales as described above. */
void omnic__quantize_act_q8(const float *x, int8_t *q, float *d, int64_t k);

#endif
