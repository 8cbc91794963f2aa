/* The AVX2 GEMM: dst[M, N] = a[M, K] . w[N, K]^T (+ bias), a f32, w f32 / f16 / bf16 rows.
 *
 * A 6 x 16 register tile (12 ymm accumulators: 6 rows of a broadcast, 16 weight rows across two
 * ymm), the shape BLIS uses on Haswell and Zen. The weights are packed per micro-panel of 16
 * rows and KC columns into a [KC][16] f32 buffer on the stack (an 8x8 transpose per 8 columns;
 * f16 / bf16 are widened there, so the 16-bit weights need no separate widening pass and no
 * widened copy), and each packed panel serves every row of a. a is read in place. While the
 * tiles of one panel run, the weight lines of the next panel are prefetched a few per tile:
 * the packing reads 16 short row streams that the hardware prefetchers do not pick up.
 *
 * Summation order: element (i, n) is a[i, 0..K) . w[n, 0..K) in blocks of KC, each block
 * accumulated k by k in one FMA chain, blocks added in order. It depends only on K: the same
 * for every M, every position of row i, every n, and every task split (bit-identical across
 * thread counts and batch shapes).
 *
 * Measured on AMD EPYC (Zen 5, AVX2 capped), one thread, M = 512, K = 1536, 256-column calls:
 * 113-117 GFLOP/s against OpenBLAS 0.3.21 Haswell sgemm 105-109 (whole matrix) and the FMA peak
 * of 120 (7.5 G FMA/s at 2 per cycle). */
#include <string.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/simd.h"
#include "core/dtype.h"

#define GEMM_MR 6   /* rows of a per tile */
#define GEMM_NR 16  /* weight rows per tile and per packed panel */
#define GEMM_KC 256 /* columns per packed panel: 16 KiB of f32, in L1 */
#define GEMM_MC 512 /* rows of a per pass over the panels: 512 KiB of a per KC block, in L2 */

/* r[i] = row i of an 8x8 block -> r[k] = the 8 rows' values at column k. */
OMNIC_INLINE OMNIC_AVX2 void transpose8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* 8 weights from element i of w, widened to f32. */
OMNIC_INLINE OMNIC_AVX2 __m256 load8(omnic_dtype wdt, const void *w, int64_t i)
{
    if (wdt == OMNIC_DTYPE_F32) return _mm256_loadu_ps((const float *)w + i);
    const uint16_t *h = (const uint16_t *)w + i;
    return wdt == OMNIC_DTYPE_F16 ? omnic__ld_f16x8(h) : omnic__ld_bf16x8(h);
}

static float load1(omnic_dtype wdt, const void *w, int64_t i)
{
    if (wdt == OMNIC_DTYPE_F32) return ((const float *)w)[i];
    const uint16_t h = ((const uint16_t *)w)[i];
    return wdt == OMNIC_DTYPE_F16 ? omnic__f16_to_f32(h) : omnic__bf16_to_f32(h);
}

/* p[kc][16] = w[n0 + j, k0 + k] for j < nr (0 for nr <= j < 16), k < kc; w rows have K columns.
 * Inlined with wdt and nr constant for the full panels of each dtype (pack_panel), so that the
 * 8x8 blocks stay in registers and no load tests the dtype or the row. */
OMNIC_INLINE OMNIC_AVX2 void pack_rows(omnic_dtype wdt, const void *w, int64_t K, int64_t n0, int nr,
                                       int64_t k0, int64_t kc, float *p)
{
    const int64_t k8 = kc & ~(int64_t)7;
    for (int h = 0; h < GEMM_NR / 8; h++) {
        for (int64_t k = 0; k < k8; k += 8) {
            __m256 r[8];
            OMNIC_UNROLL for (int i = 0; i < 8; i++)
            {
                const int j = h * 8 + i;
                r[i] = j < nr ? load8(wdt, w, (n0 + j) * K + k0 + k) : _mm256_setzero_ps();
            }
            transpose8(r);
            OMNIC_UNROLL for (int i = 0; i < 8; i++) _mm256_store_ps(p + (k + i) * GEMM_NR + h * 8, r[i]);
        }
    }
    for (int64_t k = k8; k < kc; k++)
        for (int j = 0; j < GEMM_NR; j++)
            p[k * GEMM_NR + j] = j < nr ? load1(wdt, w, (n0 + j) * K + k0 + k) : 0.0f;
}

static OMNIC_AVX2 void pack_panel(omnic_dtype wdt, const void *w, int64_t K, int64_t n0, int nr, int64_t k0,
                                  int64_t kc, float *p)
{
    if (nr == GEMM_NR && wdt == OMNIC_DTYPE_BF16)
        pack_rows(OMNIC_DTYPE_BF16, w, K, n0, GEMM_NR, k0, kc, p);
    else if (nr == GEMM_NR && wdt == OMNIC_DTYPE_F16)
        pack_rows(OMNIC_DTYPE_F16, w, K, n0, GEMM_NR, k0, kc, p);
    else if (nr == GEMM_NR && wdt == OMNIC_DTYPE_F32)
        pack_rows(OMNIC_DTYPE_F32, w, K, n0, GEMM_NR, k0, kc, p);
    else
        pack_rows(wdt, w, K, n0, nr, k0, kc, p);
}

/* c[mr, 16] (leading dim ldc) = (acc ? c : 0) + a[mr, kc] (leading dim lda) . p[kc][16], then
 * + bias[16] when bias is not NULL (the last KC block: the sum plus the bias, as a separate add
 * would do it, without another pass over dst). */
OMNIC_INLINE OMNIC_AVX2 void tile(const int mr, int64_t kc, const float *a, int64_t lda, const float *p,
                                  float *c, int64_t ldc, bool acc, const float *bias)
{
    __m256 c0[GEMM_MR], c1[GEMM_MR];
    OMNIC_UNROLL for (int i = 0; i < GEMM_MR; i++)
    {
        c0[i] = i < mr && acc ? _mm256_loadu_ps(c + i * ldc) : _mm256_setzero_ps();
        c1[i] = i < mr && acc ? _mm256_loadu_ps(c + i * ldc + 8) : _mm256_setzero_ps();
    }
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_load_ps(p + k * GEMM_NR), b1 = _mm256_load_ps(p + k * GEMM_NR + 8);
        OMNIC_UNROLL for (int i = 0; i < GEMM_MR; i++)
        {
            if (i >= mr) continue;
            const __m256 x = _mm256_broadcast_ss(a + i * lda + k);
            c0[i] = _mm256_fmadd_ps(x, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(x, b1, c1[i]);
        }
    }
    if (bias) {
        const __m256 b0 = _mm256_loadu_ps(bias), b1 = _mm256_loadu_ps(bias + 8);
        OMNIC_UNROLL for (int i = 0; i < GEMM_MR; i++)
        {
            c0[i] = _mm256_add_ps(c0[i], b0);
            c1[i] = _mm256_add_ps(c1[i], b1);
        }
    }
    OMNIC_UNROLL for (int i = 0; i < GEMM_MR; i++)
    {
        if (i >= mr) continue;
        _mm256_storeu_ps(c + i * ldc, c0[i]);
        _mm256_storeu_ps(c + i * ldc + 8, c1[i]);
    }
}

typedef void (*tile_fn)(int64_t kc, const float *a, int64_t lda, const float *p, float *c, int64_t ldc,
                        bool acc, const float *bias);
#define TILE(m)                                                                                              \
    static OMNIC_AVX2 void tile##m(int64_t kc, const float *a, int64_t lda, const float *p, float *c,        \
                                   int64_t ldc, bool acc, const float *bias)                                 \
    {                                                                                                        \
        tile(m, kc, a, lda, p, c, ldc, acc, bias);                                                           \
    }
TILE(1)
TILE(2)
TILE(3)
TILE(4)
TILE(5)
TILE(6)
static const tile_fn tiles[GEMM_MR + 1] = {NULL, tile1, tile2, tile3, tile4, tile5, tile6};

/* Prefetches lines [l0, l1) of the panel (n0, k0) into L1: lpr lines per weight row of es bytes
 * per element, line l at row l / lpr, line l % lpr of it (counted, not divided: a 64-bit idiv per
 * line cost about a sixth of the packing's time). */
static void prefetch_panel(const void *w, int64_t es, int64_t K, int64_t n0, int64_t k0, int64_t lpr,
                           int64_t l0, int64_t l1)
{
    int64_t row = l0 / lpr, line = l0 % lpr;
    const char *p = (const char *)w + ((n0 + row) * K + k0) * es;
    for (int64_t l = l0; l < l1; l++) {
        _mm_prefetch(p + line * 64, _MM_HINT_T0);
        if (++line == lpr) line = 0, p += K * es;
    }
}

OMNIC_AVX2 void omnic__cpu_gemm_avx2(const float *a, int64_t lda, int64_t M, int64_t K, const void *w,
                                     omnic_dtype wdt, int64_t N, float *dst, int64_t ldd, const float *bias)
{
    _Alignas(32) float p[GEMM_KC * GEMM_NR];
    float t[GEMM_MR * GEMM_NR]; /* a tile of a panel narrower than 16 */
    const int64_t es = (int64_t)omnic__dtype_table[wdt].size;
    if (K <= 0) {
        for (int64_t i = 0; i < M; i++)
            memset(dst + i * ldd, 0, (size_t)N * sizeof(float));
        if (bias) omnic__cpu_add_bias(bias, dst, ldd, M, N);
    }
    for (int64_t i0 = 0; i0 < M; i0 += GEMM_MC) {
        const int64_t mc = M - i0 < GEMM_MC ? M - i0 : GEMM_MC, ntiles = (mc + GEMM_MR - 1) / GEMM_MR;
        for (int64_t k0 = 0; k0 < K; k0 += GEMM_KC) {
            const int64_t kc = K - k0 < GEMM_KC ? K - k0 : GEMM_KC;
            const bool last = k0 + kc == K; /* the bias joins the last block's sums */
            for (int64_t n0 = 0; n0 < N; n0 += GEMM_NR) {
                const int nr = N - n0 < GEMM_NR ? (int)(N - n0) : GEMM_NR;
                pack_panel(wdt, w, K, n0, nr, k0, kc, p);
                /* the next panel: the next 16 rows, else the next KC block's first */
                int64_t pn = n0 + GEMM_NR, pk = k0;
                if (pn >= N) pn = 0, pk = k0 + GEMM_KC;
                const int64_t pkc = pk < K ? (K - pk < GEMM_KC ? K - pk : GEMM_KC) : 0;
                const int64_t lpr = (pkc * es + 63) / 64; /* lines per weight row */
                const int64_t nl = lpr * (N - pn < GEMM_NR ? N - pn : GEMM_NR);
                const int64_t per = (nl + ntiles - 1) / ntiles;
                int64_t l = 0;
                for (int64_t m0 = i0; m0 < i0 + mc; m0 += GEMM_MR) {
                    const int mr = i0 + mc - m0 < GEMM_MR ? (int)(i0 + mc - m0) : GEMM_MR;
                    if (l < nl) {
                        const int64_t l1 = l + per < nl ? l + per : nl;
                        prefetch_panel(w, es, K, pn, pk, lpr, l, l1);
                        l = l1;
                    }
                    const float *ai = a + m0 * lda + k0;
                    float *c = dst + m0 * ldd + n0;
                    if (nr == GEMM_NR) {
                        tiles[mr](kc, ai, lda, p, c, ldd, k0 > 0, last && bias ? bias + n0 : NULL);
                        continue;
                    }
                    for (int i = 0; i < mr; i++)
                        for (int j = 0; j < GEMM_NR; j++)
                            t[i * GEMM_NR + j] = k0 > 0 && j < nr ? c[i * ldd + j] : 0.0f;
                    tiles[mr](kc, ai, lda, p, t, GEMM_NR, true, NULL);
                    for (int i = 0; i < mr; i++) {
                        memcpy(c + i * ldd, t + i * GEMM_NR, (size_t)nr * sizeof(float));
                        if (last && bias)
                            for (int j = 0; j < nr; j++)
                                c[i * ldd + j] += bias[n0 + j];
                    }
                }
            }
        }
    }
}
