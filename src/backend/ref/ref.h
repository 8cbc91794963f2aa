/* The reference backend's kernels (one per op) and the small helpers they share.
 * Plain C, one thread (single_threaded), every reduction accumulated in double and
 * each result rounded to f32 once. Kernels still honour (ith, nth) by splitting rows
 * with omnic__split_rows, so they stay correct if ever called with nth > 1. */
#ifndef OMNIC_BACKEND_REF_REF_H
#define OMNIC_BACKEND_REF_REF_H

#include "backend/backend.h"
#include <string.h>

#include "core/dtype.h"
#include "core/quant.h"
#include "core/threadpool.h"

/* Element i of a float or quantized tensor's data (f32, f16, bf16, q8_0, q4_0), widened
 * or dequantized exactly (i counts elements; blocks are 32 elements). */
static inline double omnic__ref_ld(const void *data, omnic_dtype dt, int64_t i)
{
    const uint8_t *blk;
    uint16_t d;
    int j = (int)(i % OMNIC_QK);
    switch (dt) {
    case OMNIC_DTYPE_F16:
        return omnic__f16_to_f32(((const uint16_t *)data)[i]);
    case OMNIC_DTYPE_BF16:
        return omnic__bf16_to_f32(((const uint16_t *)data)[i]);
    case OMNIC_DTYPE_Q8_0:
        blk = (const uint8_t *)data + (size_t)(i / OMNIC_QK) * sizeof(omnic__block_q8_0);
        memcpy(&d, blk, 2);
        return (double)omnic__f16_to_f32(d) * (double)(int8_t)blk[2 + j];
    case OMNIC_DTYPE_Q4_0:
        blk = (const uint8_t *)data + (size_t)(i / OMNIC_QK) * sizeof(omnic__block_q4_0);
        memcpy(&d, blk, 2);
        return (double)omnic__f16_to_f32(d) *
               (double)((j < OMNIC_QK / 2 ? blk[2 + j] & 0x0f : blk[2 + j - OMNIC_QK / 2] >> 4) - 8);
    default:
        return ((const float *)data)[i];
    }
}

/* Element k of row n of a 2-D weight or table w [N, K] (any dtype omnic__ref_ld reads, or
 * q4_0x16 / q8_0x16: layouts in core/quant.h), exactly. */
static inline double omnic__ref_ld_rc(const omnic__tensor *w, int64_t n, int64_t k)
{
    const int64_t K = w->dims[1];
    const int64_t nb = K / OMNIC_QK, r = n % OMNIC_X16_ROWS, b = k / OMNIC_QK, j = k % OMNIC_QK;
    if (w->dtype == OMNIC_DTYPE_Q8_0X16) {
        const uint8_t *gb = (const uint8_t *)w->data +
                            (size_t)(n - r) * (size_t)nb * sizeof(omnic__block_q8_0) +
                            (size_t)b * OMNIC_Q8X16_BLOCK;
        uint16_t d;
        memcpy(&d, gb + 512 + 2 * r, 2);
        return (double)omnic__f16_to_f32(d) * (double)(int8_t)gb[64 * (j / 4) + 4 * r + j % 4];
    }
    if (w->dtype != OMNIC_DTYPE_Q4_0X16) return omnic__ref_ld(w->data, w->dtype, n * K + k);
    const uint8_t *gb = (const uint8_t *)w->data + (size_t)(n - r) * (size_t)nb * sizeof(omnic__block_q4_0) +
                        (size_t)b * OMNIC_Q4X16_BLOCK;
    uint16_t d;
    memcpy(&d, gb + 256 + 2 * r, 2);
    const uint8_t byte = gb[64 * ((j % 16) / 4) + 4 * r + j % 4];
    return (double)omnic__f16_to_f32(d) * (double)((j < 16 ? byte & 0x0f : byte >> 4) - 8);
}

/* dst[0..n-1] = elements off..off+n-1 of a float tensor's data, widened exactly. */
static inline void omnic__ref_widen(const void *data, omnic_dtype dt, int64_t off, int64_t n, double *dst)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = omnic__ref_ld(data, dt, off + i);
}

/* matmul.c */
void omnic__ref_matmul(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__ref_matmul_wsize(const omnic__node *n, int nth);
void omnic__ref_patch_embed(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_pool_avg(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__ref_patch_embed_wsize(const omnic__node *n, int nth);

/* conv.c */
void omnic__ref_dwconv2d(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_conv2d(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_cum_groupnorm(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_attn_local(const omnic__node *n, int ith, int nth, void *wdata);

/* unary.c: elementwise ops; each kernel reads n->op */
void omnic__ref_binary(const omnic__node *n, int ith, int nth, void *wdata); /* ADD, MUL */
/* SCALE, SILU, GELU, GELU_TANH, GELU_QUICK, SOFTCAP, RELU */
void omnic__ref_unary(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_gated(const omnic__node *n, int ith, int nth, void *wdata); /* SWIGLU, GEGLU */

/* norm.c: row reductions */
void omnic__ref_rmsnorm(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_gauss_topk(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_rms_match(const omnic__node *n, int ith, int nth, void *wdata);
/* moe.c */
void omnic__ref_moe_route(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_moe_weights(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_matmul_id(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__ref_matmul_id_wsize(const omnic__node *n, int nth);
void omnic__ref_moe_sum(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_layernorm(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_softmax(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_argmax(const omnic__node *n, int ith, int nth, void *wdata);

/* rope.c */
void omnic__ref_rope(const omnic__node *n, int ith, int nth, void *wdata);

/* attention.c */
void omnic__ref_attention(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__ref_attention_wsize(const omnic__node *n, int nth);

/* layout.c: gathers, copies and conversions (bit-exact) */
void omnic__ref_get_rows(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_concat(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_slice(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_permute(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_cpy(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__ref_set_rows(const omnic__node *n, int ith, int nth, void *wdata);

#endif
