/* Kernels of the cpu backend, one per op (semantics in backend/backend.h), and their
 * work-buffer sizes. cpu.c puts them into the backend's table; each file named below owns
 * its group. Every kernel is (node, ith, nth, wdata): it computes the rows that
 * omnic__split_rows gives thread ith and writes only those. */
#ifndef OMNIC_BACKEND_CPU_OPS_H
#define OMNIC_BACKEND_CPU_OPS_H

#include "backend/backend.h"

/* matmul.c */
void omnic__cpu_matmul(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_matmul_wsize(const omnic__node *n, int nth);
void omnic__cpu_patch_embed(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_pool_avg(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_patch_embed_wsize(const omnic__node *n, int nth);
/* conv.c */
void omnic__cpu_dwconv2d(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_dwconv2d_wsize(const omnic__node *n, int nth);
void omnic__cpu_conv2d(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_conv2d_wsize(const omnic__node *n, int nth);
/* attn_local.c */
void omnic__cpu_attn_local(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_attn_local_wsize(const omnic__node *n, int nth);
/* dst[mr, nc] (leading dim ldd) = a[mr, K] . wf[nc, K]^T (+ bias[nc]): gemm_avx2.c on the AVX2
 * level, OpenBLAS otherwise. */
void omnic__cpu_sgemm(const float *a, int64_t K, int64_t mr, const float *wf, int64_t nc, float *dst,
                      int64_t ldd, const float *bias);
/* gemm_avx2.c (AVX2 level only): dst[M, N] (leading dim ldd) = a[M, K] (leading dim lda) .
 * w[N, K]^T (+ bias[N]), w f32 / f16 / bf16 rows of K; f16 / bf16 widened while packing. */
void omnic__cpu_gemm_avx2(const float *a, int64_t lda, int64_t M, int64_t K, const void *w, omnic_dtype wdt,
                          int64_t N, float *dst, int64_t ldd, const float *bias);
/* dst[rows, cols] (leading dim ldd) += bias[cols] on every row. */
void omnic__cpu_add_bias(const float *bias, float *dst, int64_t ldd, int64_t rows, int64_t cols);

/* matmul_q.c: matmul with q8_0 / q4_0 weights (omnic__cpu_matmul dispatches here). */
void omnic__cpu_matmul_q(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_matmul_q_wsize(const omnic__node *n, int nth);

/* attention.c */
void omnic__cpu_attention(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_attention_wsize(const omnic__node *n, int nth);

/* rope.c */
void omnic__cpu_rope(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_rope_wsize(const omnic__node *n, int nth);

/* norm.c */
void omnic__cpu_rmsnorm(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_gauss_topk(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_rms_match(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_cum_groupnorm(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_cum_groupnorm_wsize(const omnic__node *n, int nth);

/* moe.c: mixture-of-experts routing, the grouped expert matmul, the weighted sum */
void omnic__cpu_moe_route(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_moe_weights(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_matmul_id(const omnic__node *n, int ith, int nth, void *wdata);
size_t omnic__cpu_matmul_id_wsize(const omnic__node *n, int nth);
void omnic__cpu_moe_sum(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_layernorm(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_softmax(const omnic__node *n, int ith, int nth, void *wdata);

/* elementwise.c */
void omnic__cpu_add(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_mul(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_scale(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_unary(const omnic__node *n, int ith, int nth, void *wdata); /* silu, gelu*, softcap, relu */
void omnic__cpu_gated(const omnic__node *n, int ith, int nth, void *wdata); /* swiglu, geglu */

/* layout.c */
void omnic__cpu_get_rows(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_concat(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_slice(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_permute(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_argmax(const omnic__node *n, int ith, int nth, void *wdata);
void omnic__cpu_cpy(const omnic__node *n, int ith, int nth, void *wdata);

/* kv.c */
void omnic__cpu_set_rows(const omnic__node *n, int ith, int nth, void *wdata);

/* Widens n elements of a f32/f16/bf16 row to f32 (a copy for f32). */
void omnic__cpu_to_f32(omnic_dtype dt, const void *src, float *dst, int64_t n);

/* Work buffers are cut into per-thread parts at this alignment (bytes). */
#define OMNIC_CPU_WALIGN 64
/* Start of thread ith's part when each part is `part` bytes (a multiple of OMNIC_CPU_WALIGN). */
static inline void *omnic__cpu_wpart(void *wdata, size_t part, int ith)
{
    return (char *)wdata + (size_t)ith * part;
}
static inline size_t omnic__cpu_walign(size_t n)
{
    return (n + OMNIC_CPU_WALIGN - 1) / OMNIC_CPU_WALIGN * OMNIC_CPU_WALIGN;
}

/* The decode kernels' work, dst[M, N] by blocks of bm activation rows times chunks of cw weight
 * rows, numbered block-major (a thread's chunks of one block come in a row): chunk c is block
 * blk, rows [i0, i0 + mb), weight rows [n0, n1). ncc = chunks per block, cdiv(N, cw). */
typedef struct omnic__cpu_tile {
    int64_t blk, i0, mb, n0, n1;
} omnic__cpu_tile;
static inline omnic__cpu_tile omnic__cpu_tile_at(int64_t c, int64_t M, int64_t bm, int64_t N, int64_t cw,
                                                 int64_t ncc)
{
    omnic__cpu_tile t;
    t.blk = c / ncc;
    t.i0 = t.blk * bm;
    t.mb = M - t.i0 < bm ? M - t.i0 : bm;
    t.n0 = c % ncc * cw;
    t.n1 = N - t.n0 < cw ? N : t.n0 + cw;
    return t;
}

#endif
