/* cpu matmul and patch embedding: dst[M,N] = a[M,K] . w[N,K]^T (+ bias), a f32, w f32/f16/bf16
 * (q8_0 / q4_0 weights go to matmul_q.c).
 *
 * Two regimes, chosen by M, the weight dtype and the ISA (never by the thread count):
 *  - M <= OMNIC_CPU_MV_MAX_M (decode): a matvec-style kernel that streams each weight row
 *    once and computes the dot products of all M activation rows with it (f16 widened by
 *    vcvtph2ps, bf16 by a 16-bit shift, FMA into f32 lanes). The threads share chunks of
 *    MV_CHUNK weight rows (output columns) dynamically (omnic__chunks: a thread takes the next
 *    chunk when it is free). Each output element is reduced in one fixed order
 *    that depends only on K and the ISA: element (i, n) is bit-identical for every M in
 *    1..OMNIC_CPU_MV_MAX_M, every thread count, and every position of row i in the batch.
 *  - M > OMNIC_CPU_MV_MAX_M, batch-invariant nodes (ip[0]) and 16-bit weights on AVX-512: the
 *    decode kernel over blocks of OMNIC_CPU_MV_MAX_M rows (blocks_of_rows), so bit-identical per
 *    row as above.
 *  - otherwise M > OMNIC_CPU_MV_MAX_M (prefill, encoders): a GEMM per task, called by every
 *    kernel thread on its own part. On AVX2 the GEMM is gemm_avx2.c: f16/bf16 widened inside
 *    its packing, element values that depend only on K (the same for every M, split and
 *    thread count), so the threads share chunks of GEMM_NC_AVX2 columns dynamically (rows,
 *    split evenly, when there are few columns). Elsewhere it is OpenBLAS sgemm,
 *    single-threaded, on a task grid (column chunks of w, and row blocks of a when there are few
 *    chunks) that depends only on (M, N, weight kind), so the call that produces an element is
 *    the same whatever nth is: bit-identical across thread counts; f16/bf16 weights are widened
 *    chunk by chunk into the thread's part of the work buffer first; rows are NOT bit-identical
 *    across M there (BLAS blocking depends on M). Neither is identical to the decode regime
 *    (different summation order; both within f32 rounding of the exact result).
 * OpenBLAS is safe to call from several threads at once when its own thread count is 1,
 * which omnic__cpu_isa_level() sets once: with 0.3.21 (pthread build), 200 overlapping calls
 * from two threads gave bitwise the results of serial calls, and the op contract test runs
 * this regime with 2 and 3 threads (also under TSan). */
#include <cblas.h>
#include <string.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/simd.h"
#include "backend/cpu/vec.h"
#include "core/dtype.h"
#include "core/threadpool.h"

/* Largest M that takes the row-independent decode kernel. */
#define OMNIC_CPU_MV_MAX_M 16
/* Target widths of the column chunks handed to one sgemm call (f32 weights / widened weights).
 * Every chunk re-packs the activations inside sgemm, so chunks are wide: at 512 the loss
 * against one whole-matrix call is a few percent (M = 64..512, K = 2048..4096, measured);
 * f16/bf16 chunks are narrower to bound the widened copy (nc * K f32 per thread): 128 measured
 * 13% faster than 256 (Qwen2-VL-2B tower, AVX-512 OpenBLAS, 2 threads) and halves the tasks an
 * encoder slice is cut into. */
#define GEMM_NC_F32 512
#define GEMM_NC_HALF 128
/* gemm_avx2.c packs its weights itself, f32 or 16-bit alike: 256-column calls measured 113-117
 * GFLOP/s, whole matrices 88-103 (its output rows stay in cache; Qwen2-1.5B shapes, M = 512);
 * 64-column calls as fast (100-105 GFLOP/s against 100-105 for 256, one thread, same sitting),
 * and as the chunks the threads share (omnic__chunks) they balance finer. */
#define GEMM_NC_AVX2 64
/* Weight rows per chunk of the decode kernel's work (omnic__chunks). */
#define MV_CHUNK 64
/* When w has fewer column chunks than this, a is also cut into row blocks (>= GEMM_MB_MIN rows). */
#define GEMM_MIN_TASKS 4
#define GEMM_MB_MIN 128
/* patch_embed: patches per task (im2col block). */
#define PATCH_BLOCK 64

enum { DT_F32, DT_F16, DT_BF16 };

static int wkind(omnic_dtype t)
{
    return t == OMNIC_DTYPE_F32 ? DT_F32 : t == OMNIC_DTYPE_F16 ? DT_F16 : DT_BF16;
}

void omnic__cpu_to_f32(omnic_dtype dt, const void *src, float *dst, int64_t n)
{
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    if (dt == OMNIC_DTYPE_F32)
        memcpy(dst, src, (size_t)n * sizeof(float));
    else if (dt == OMNIC_DTYPE_F16)
        v->f16_to_f32(src, dst, n);
    else
        v->bf16_to_f32(src, dst, n);
}

/* ------------------------------------------------------------------------------------------
 * Decode kernel. mv_<isa>(a, M, K, w, dt, n0, n1, dst, N): dst[i, n] for i < M, n in [n0, n1).
 * Tiles of MR activation rows x NR weight rows keep MR*NR accumulators in registers; the tile
 * shape changes only how many elements are computed together, never one element's order. */

#define MV_NR 4

OMNIC_INLINE OMNIC_AVX512 __m512 ldw16(const void *w, int64_t k, int dt)
{
    if (dt == DT_F32) return _mm512_loadu_ps((const float *)w + k);
    if (dt == DT_F16) return omnic__ld_f16x16((const uint16_t *)w + k);
    return omnic__ld_bf16x16((const uint16_t *)w + k);
}
OMNIC_INLINE OMNIC_AVX512 __m512 ldw16_m(const void *w, int64_t k, __mmask16 m, int dt)
{
    if (dt == DT_F32) return _mm512_maskz_loadu_ps(m, (const float *)w + k);
    if (dt == DT_F16) return omnic__ld_f16x16_m((const uint16_t *)w + k, m);
    return omnic__ld_bf16x16_m((const uint16_t *)w + k, m);
}

/* out[i*ldo + j] = a_i . w_j for i < mr, j < nr (mr <= 4, nr <= 4). While a tile streams,
 * the same rows of the next tile are prefetched (the hardware prefetcher restarts on every
 * short row otherwise): ~0.90 -> ~0.98 of the 1-thread read bandwidth for bf16 M = 1. */
OMNIC_INLINE OMNIC_AVX512 void tile16(const float *a, int64_t K, const char *w, size_t ldw, float *out,
                                      int64_t ldo, int mr, int nr, int dt)
{
    __m512 acc[4][MV_NR];
    const char *wr[MV_NR];
    OMNIC_UNROLL for (int j = 0; j < nr; j++) wr[j] = w + (size_t)j * ldw;
    OMNIC_UNROLL for (int i = 0; i < mr; i++) OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[i][j] =
        _mm512_setzero_ps();
    int64_t k = 0;
    size_t es = dt == DT_F32 ? 4 : 2, pf = (size_t)nr * ldw; /* same row of the next tile */
    for (; k + 16 <= K; k += 16) {
        __m512 wv[MV_NR];
        OMNIC_UNROLL for (int j = 0; j < nr; j++) _mm_prefetch(wr[j] + pf + (size_t)k * es, _MM_HINT_T0);
        OMNIC_UNROLL for (int j = 0; j < nr; j++) wv[j] = ldw16(wr[j], k, dt);
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
        {
            __m512 av = _mm512_loadu_ps(a + i * K + k);
            OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[i][j] = _mm512_fmadd_ps(av, wv[j], acc[i][j]);
        }
    }
    if (k < K) {
        __mmask16 m = omnic__mask16(K - k);
        __m512 wv[MV_NR];
        OMNIC_UNROLL for (int j = 0; j < nr; j++) wv[j] = ldw16_m(wr[j], k, m, dt);
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
        {
            __m512 av = _mm512_maskz_loadu_ps(m, a + i * K + k);
            OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[i][j] = _mm512_fmadd_ps(av, wv[j], acc[i][j]);
        }
    }
    OMNIC_UNROLL for (int i = 0; i < mr; i++) OMNIC_UNROLL for (int j = 0; j < nr; j++) out[i * ldo + j] =
        _mm512_reduce_add_ps(acc[i][j]);
}

OMNIC_INLINE OMNIC_AVX512 void mv16(const float *a, int64_t M, int64_t K, const void *w, int64_t n0,
                                    int64_t n1, float *dst, int64_t N, int dt)
{
    size_t ldw = (size_t)K * (dt == DT_F32 ? 4 : 2);
    const char *wb = w;
    int64_t n = n0;
    for (; n + MV_NR <= n1; n += MV_NR) {
        int64_t i = 0;
        for (; i + 4 <= M; i += 4)
            tile16(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 4, MV_NR, dt);
        switch (M - i) {
        case 3:
            tile16(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 3, MV_NR, dt);
            break;
        case 2:
            tile16(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 2, MV_NR, dt);
            break;
        case 1:
            tile16(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 1, MV_NR, dt);
            break;
        default:
            break;
        }
    }
    for (; n < n1; n++) {
        int64_t i = 0;
        for (; i + 4 <= M; i += 4)
            tile16(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 4, 1, dt);
        for (; i < M; i++)
            tile16(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 1, 1, dt);
    }
}

static OMNIC_AVX512 void mv_avx512_f32(const float *a, int64_t M, int64_t K, const void *w, int64_t n0,
                                       int64_t n1, float *dst, int64_t N)
{
    mv16(a, M, K, w, n0, n1, dst, N, DT_F32);
}
static OMNIC_AVX512 void mv_avx512_f16(const float *a, int64_t M, int64_t K, const void *w, int64_t n0,
                                       int64_t n1, float *dst, int64_t N)
{
    mv16(a, M, K, w, n0, n1, dst, N, DT_F16);
}
static OMNIC_AVX512 void mv_avx512_bf16(const float *a, int64_t M, int64_t K, const void *w, int64_t n0,
                                        int64_t n1, float *dst, int64_t N)
{
    mv16(a, M, K, w, n0, n1, dst, N, DT_BF16);
}

/* AVX2: 16 ymm registers allow 2 x 4 accumulators, or 1 x 8 (MV_NR1) for one activation row:
 * eight weight rows in flight hide the FMA latency of the eight chains and keep eight lines of
 * the next tile prefetched. Harness on huge pages (AMD EPYC Zen 5, bf16, M = 1, read probe
 * alternated), 1 x 8 against 1 x 4: N x K = 8960 x 1536 0.81-0.86 / 0.71-0.75 of the 1-thread
 * probe, 2 threads 0.84-0.85 / 0.71-0.73; 1536 x 8960 0.73-0.75 / 0.68-0.71; 8192 x 4128 0.82 /
 * 0.77, 2 threads 0.84 / 0.77. Not when a row is a multiple of 4 KiB (K = 4096 bf16: 0.70 /
 * 0.76): then the 16 lines in flight fall into one L1 set of 12 ways. */
#define MV_NR1 8
#define MV_ALIAS 4096 /* the L1's set stride */
OMNIC_INLINE OMNIC_AVX2 __m256i tail8(int64_t r)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
OMNIC_INLINE OMNIC_AVX2 __m256 ldw8(const void *w, int64_t k, int dt)
{
    if (dt == DT_F32) return _mm256_loadu_ps((const float *)w + k);
    if (dt == DT_F16) return omnic__ld_f16x8((const uint16_t *)w + k);
    return omnic__ld_bf16x8((const uint16_t *)w + k);
}
OMNIC_INLINE OMNIC_AVX2 __m256 ldw8_tail(const void *w, int64_t k, int64_t r, int dt)
{
    if (dt == DT_F32) return _mm256_maskload_ps((const float *)w + k, tail8(r));
    uint16_t t[8] = {0};
    memcpy(t, (const uint16_t *)w + k, (size_t)r * 2);
    return dt == DT_F16 ? omnic__ld_f16x8(t) : omnic__ld_bf16x8(t);
}

OMNIC_INLINE OMNIC_AVX2 void tile8(const float *a, int64_t K, const char *w, size_t ldw, float *out,
                                   int64_t ldo, int mr, int nr, int dt)
{
    __m256 acc[2][MV_NR1]; /* mr * nr <= 8 */
    const char *wr[MV_NR1];
    OMNIC_UNROLL for (int j = 0; j < nr; j++) wr[j] = w + (size_t)j * ldw;
    OMNIC_UNROLL for (int i = 0; i < mr; i++) OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[i][j] =
        _mm256_setzero_ps();
    int64_t k = 0;
    size_t es = dt == DT_F32 ? 4 : 2, pf = (size_t)nr * ldw; /* same row of the next tile */
    for (; k + 8 <= K; k += 8) {
        __m256 wv[MV_NR1];
        OMNIC_UNROLL for (int j = 0; j < nr; j++) _mm_prefetch(wr[j] + pf + (size_t)k * es, _MM_HINT_T0);
        OMNIC_UNROLL for (int j = 0; j < nr; j++) wv[j] = ldw8(wr[j], k, dt);
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
        {
            __m256 av = _mm256_loadu_ps(a + i * K + k);
            OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[i][j] = _mm256_fmadd_ps(av, wv[j], acc[i][j]);
        }
    }
    if (k < K) {
        __m256i m = tail8(K - k);
        __m256 wv[MV_NR1];
        OMNIC_UNROLL for (int j = 0; j < nr; j++) wv[j] = ldw8_tail(wr[j], k, K - k, dt);
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
        {
            __m256 av = _mm256_maskload_ps(a + i * K + k, m);
            OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[i][j] = _mm256_fmadd_ps(av, wv[j], acc[i][j]);
        }
    }
    OMNIC_UNROLL for (int i = 0; i < mr; i++) OMNIC_UNROLL for (int j = 0; j < nr; j++) out[i * ldo + j] =
        omnic__hsum256(acc[i][j]);
}

OMNIC_INLINE OMNIC_AVX2 void mv8(const float *a, int64_t M, int64_t K, const void *w, int64_t n0, int64_t n1,
                                 float *dst, int64_t N, int dt)
{
    size_t ldw = (size_t)K * (dt == DT_F32 ? 4 : 2);
    const char *wb = w;
    int64_t n = n0;
    if (M == 1 && ldw % MV_ALIAS != 0)
        for (; n + MV_NR1 <= n1; n += MV_NR1)
            tile8(a, K, wb + n * ldw, ldw, dst + n, N, 1, MV_NR1, dt);
    for (; n + MV_NR <= n1; n += MV_NR) {
        int64_t i = 0;
        for (; i + 2 <= M; i += 2)
            tile8(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 2, MV_NR, dt);
        if (i < M) tile8(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 1, MV_NR, dt);
    }
    for (; n < n1; n++) {
        int64_t i = 0;
        for (; i + 2 <= M; i += 2)
            tile8(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 2, 1, dt);
        if (i < M) tile8(a + i * K, K, wb + n * ldw, ldw, dst + i * N + n, N, 1, 1, dt);
    }
}

static OMNIC_AVX2 void mv_avx2_f32(const float *a, int64_t M, int64_t K, const void *w, int64_t n0,
                                   int64_t n1, float *dst, int64_t N)
{
    mv8(a, M, K, w, n0, n1, dst, N, DT_F32);
}
static OMNIC_AVX2 void mv_avx2_f16(const float *a, int64_t M, int64_t K, const void *w, int64_t n0,
                                   int64_t n1, float *dst, int64_t N)
{
    mv8(a, M, K, w, n0, n1, dst, N, DT_F16);
}
static OMNIC_AVX2 void mv_avx2_bf16(const float *a, int64_t M, int64_t K, const void *w, int64_t n0,
                                    int64_t n1, float *dst, int64_t N)
{
    mv8(a, M, K, w, n0, n1, dst, N, DT_BF16);
}

/* Scalar: 8 partial sums per element (lane l takes k = l mod 8), weights widened in chunks. */
#define MV_SCALAR_CHUNK 512
static void mv_scalar(const float *a, int64_t M, int64_t K, const void *w, int64_t n0, int64_t n1, float *dst,
                      int64_t N, int dt)
{
    size_t ldw = (size_t)K * (dt == DT_F32 ? 4 : 2);
    float wf[MV_SCALAR_CHUNK];
    float acc[OMNIC_CPU_MV_MAX_M][8];
    for (int64_t n = n0; n < n1; n++) {
        const char *wr = (const char *)w + (size_t)n * ldw;
        memset(acc, 0, sizeof acc);
        for (int64_t k0 = 0; k0 < K; k0 += MV_SCALAR_CHUNK) {
            int64_t kn = K - k0 < MV_SCALAR_CHUNK ? K - k0 : MV_SCALAR_CHUNK;
            if (dt == DT_F32)
                memcpy(wf, (const float *)wr + k0, (size_t)kn * 4);
            else if (dt == DT_F16)
                omnic__f16_to_f32_row((const uint16_t *)wr + k0, wf, (size_t)kn);
            else
                omnic__bf16_to_f32_row((const uint16_t *)wr + k0, wf, (size_t)kn);
            for (int64_t i = 0; i < M; i++) {
                const float *ar = a + i * K + k0;
                for (int64_t k = 0; k < kn; k++)
                    acc[i][k & 7] += ar[k] * wf[k];
            }
        }
        for (int64_t i = 0; i < M; i++) {
            const float *s = acc[i];
            dst[i * N + n] = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
        }
    }
}
static void mv_scalar_f32(const float *a, int64_t M, int64_t K, const void *w, int64_t n0, int64_t n1,
                          float *dst, int64_t N)
{
    mv_scalar(a, M, K, w, n0, n1, dst, N, DT_F32);
}
static void mv_scalar_f16(const float *a, int64_t M, int64_t K, const void *w, int64_t n0, int64_t n1,
                          float *dst, int64_t N)
{
    mv_scalar(a, M, K, w, n0, n1, dst, N, DT_F16);
}
static void mv_scalar_bf16(const float *a, int64_t M, int64_t K, const void *w, int64_t n0, int64_t n1,
                           float *dst, int64_t N)
{
    mv_scalar(a, M, K, w, n0, n1, dst, N, DT_BF16);
}

typedef void (*mv_fn)(const float *a, int64_t M, int64_t K, const void *w, int64_t n0, int64_t n1, float *dst,
                      int64_t N);

static const mv_fn mv_table[OMNIC_CPU_ISA_COUNT][3] = {
    [OMNIC_CPU_ISA_SCALAR] = {[DT_F32] = mv_scalar_f32, [DT_F16] = mv_scalar_f16, [DT_BF16] = mv_scalar_bf16},
    [OMNIC_CPU_ISA_AVX2] = {[DT_F32] = mv_avx2_f32, [DT_F16] = mv_avx2_f16, [DT_BF16] = mv_avx2_bf16},
    [OMNIC_CPU_ISA_AVX512] = {[DT_F32] = mv_avx512_f32, [DT_F16] = mv_avx512_f16, [DT_BF16] = mv_avx512_bf16},
};
_Static_assert(sizeof mv_table / sizeof mv_table[0] == OMNIC_CPU_ISA_COUNT, "mv_table out of step with ISAs");

/* ------------------------------------------------------------------------------------------
 * sgemm regime. */

typedef struct gemm_plan {
    int64_t nc, cn; /* column chunk width and count */
    int64_t mb, cm; /* row block height and count */
} gemm_plan;

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* The AVX2 level has its own GEMM (gemm_avx2.c). */
static bool own_gemm(void)
{
    return omnic__cpu_isa_level() == OMNIC_CPU_ISA_AVX2;
}

/* OpenBLAS: depends only on (M, N, weight kind), the grid every thread count shares. */
static gemm_plan plan_gemm(int64_t M, int64_t N, int dt)
{
    gemm_plan p;
    int64_t nc_max = dt == DT_F32 ? GEMM_NC_F32 : GEMM_NC_HALF;
    p.cn = cdiv(N, nc_max);
    p.nc = cdiv(cdiv(N, p.cn), 16) * 16; /* even chunks, multiple of 16 */
    if (p.nc > N) p.nc = N;
    p.cn = cdiv(N, p.nc);
    p.cm = 1;
    if (p.cn < GEMM_MIN_TASKS && M >= 2 * GEMM_MB_MIN) {
        p.cm = cdiv(GEMM_MIN_TASKS, p.cn);
        if (p.cm > M / GEMM_MB_MIN) p.cm = M / GEMM_MB_MIN;
    }
    p.mb = cdiv(M, p.cm);
    p.cm = cdiv(M, p.mb);
    return p;
}

void omnic__cpu_add_bias(const float *bias, float *dst, int64_t ldd, int64_t rows, int64_t cols)
{
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    for (int64_t i = 0; i < rows; i++)
        v->add(dst + i * ldd, bias, dst + i * ldd, cols);
}

/* dst[mr, nc] (leading dim ldd) = a[mr, K] . wf[nc, K]^T (+ bias[nc]). */
void omnic__cpu_sgemm(const float *a, int64_t K, int64_t mr, const float *wf, int64_t nc, float *dst,
                      int64_t ldd, const float *bias)
{
    if (own_gemm()) {
        omnic__cpu_gemm_avx2(a, K, mr, K, wf, OMNIC_DTYPE_F32, nc, dst, ldd, bias);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mr, (int)nc, (int)K, 1.0f, a, (int)K, wf,
                (int)K, 0.0f, dst, (int)ldd);
    if (bias) omnic__cpu_add_bias(bias, dst, ldd, mr, nc);
}

static const float *widen_rows(const void *w, omnic_dtype wdt, int64_t K, int64_t n0, int64_t nc, float *buf)
{
    if (wdt == OMNIC_DTYPE_F32) return (const float *)w + n0 * K;
    omnic__cpu_to_f32(wdt, (const uint16_t *)w + n0 * K, buf, nc * K);
    return buf;
}

/* dst[M, N] (+ bias) by the decode kernel for thread ith of nth: chunks of MV_CHUNK weight rows
 * by blocks of OMNIC_CPU_MV_MAX_M activation rows, block-major. */
static void decode_rows(const float *a, int64_t M, int64_t K, const void *w, omnic_dtype wdt, int64_t N,
                        const float *bias, float *dst, int ith, int nth)
{
    const mv_fn mv = mv_table[omnic__cpu_isa_level()][wkind(wdt)];
    const int64_t ncc = cdiv(N, MV_CHUNK);
    omnic__chunks ch;
    int64_t c;
    omnic__chunks_begin(&ch, cdiv(M, OMNIC_CPU_MV_MAX_M) * ncc, ith, nth);
    while (omnic__chunks_next(&ch, &c)) {
        const omnic__cpu_tile t = omnic__cpu_tile_at(c, M, OMNIC_CPU_MV_MAX_M, N, MV_CHUNK, ncc);
        mv(a + t.i0 * K, t.mb, K, w, t.n0, t.n1, dst + t.i0 * N, N);
        if (bias) omnic__cpu_add_bias(bias + t.n0, dst + t.i0 * N + t.n0, N, t.mb, t.n1 - t.n0);
    }
}

/* dst[M, N] (+ bias), M > OMNIC_CPU_MV_MAX_M, for thread ith of nth; wbuf: this thread's nc*K
 * floats (f16/bf16 only). */
static void gemm_mt(const float *a, int64_t M, int64_t K, const void *w, omnic_dtype wdt, int64_t N,
                    const float *bias, float *dst, int ith, int nth, float *wbuf)
{
    int dt = wkind(wdt);
    if (own_gemm()) { /* its values do not depend on the split: chunks of GEMM_NC_AVX2 columns */
        const int64_t P = cdiv(N, 16);
        int64_t lo, hi;
        if (P >= 4 * nth) {
            omnic__chunks ch;
            int64_t c;
            omnic__chunks_begin(&ch, cdiv(N, GEMM_NC_AVX2), ith, nth);
            while (omnic__chunks_next(&ch, &c)) {
                const int64_t n0 = c * GEMM_NC_AVX2, nc = N - n0 < GEMM_NC_AVX2 ? N - n0 : GEMM_NC_AVX2;
                omnic__cpu_gemm_avx2(a, K, M, K, (const uint8_t *)w + n0 * K * omnic__dtype_table[wdt].size,
                                     wdt, nc, dst + n0, N, bias ? bias + n0 : NULL);
            }
        } else { /* few columns: rows */
            omnic__split_rows(M, ith, nth, &lo, &hi);
            if (lo < hi) omnic__cpu_gemm_avx2(a + lo * K, K, hi - lo, K, w, wdt, N, dst + lo * N, N, bias);
        }
        return;
    }
    gemm_plan p = plan_gemm(M, N, dt);
    int64_t t0, t1, cur = -1;
    const float *wf = NULL;
    omnic__split_rows(p.cn * p.cm, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        int64_t ci = t / p.cm, mi = t % p.cm;
        int64_t n0 = ci * p.nc, nc = N - n0 < p.nc ? N - n0 : p.nc;
        int64_t m0 = mi * p.mb, mr = M - m0 < p.mb ? M - m0 : p.mb;
        if (ci != cur) {
            wf = widen_rows(w, wdt, K, n0, nc, wbuf);
            cur = ci;
        }
        omnic__cpu_sgemm(a + m0 * K, K, mr, wf, nc, dst + m0 * N + n0, N, bias ? bias + n0 : NULL);
    }
}

/* Whether M > OMNIC_CPU_MV_MAX_M rows take the decode kernel in blocks of rows instead of the
 * GEMM: batch-invariant nodes (ip[0]), and 16-bit weights on AVX-512, where widening each weight
 * row once per block beats widening chunks for sgemm (Qwen2-VL-2B tower, bf16, 1024 patches, AMD
 * EPYC 2 threads: 5.3 s against 7.2 s; Qwen2-1.5B bf16 pp512: 96 against 69 tokens/s; f32
 * weights measured alike). AVX2 has its own GEMM, faster than both there. */
static bool blocks_of_rows(const omnic__node *n)
{
    const omnic_dtype wt = n->src[1]->dtype;
    return n->ip[0] || ((wt == OMNIC_DTYPE_BF16 || wt == OMNIC_DTYPE_F16) &&
                        omnic__cpu_isa_level() == OMNIC_CPU_ISA_AVX512);
}

void omnic__cpu_matmul(const omnic__node *n, int ith, int nth, void *wdata)
{
    if (omnic__dtype_table[n->src[1]->dtype].is_quant) {
        omnic__cpu_matmul_q(n, ith, nth, wdata);
        return;
    }
    const omnic__tensor *a = n->src[0], *w = n->src[1], *b = n->src[2];
    int64_t M = omnic__tensor_rows(a), K = omnic__tensor_cols(a), N = w->dims[0];
    const float *bias = b ? (const float *)b->data : NULL;
    if (M <= OMNIC_CPU_MV_MAX_M || blocks_of_rows(n)) {
        decode_rows(a->data, M, K, w->data, w->dtype, N, bias, n->dst->data, ith, nth);
        return;
    }
    size_t part = omnic__cpu_matmul_wsize(n, nth) / (size_t)nth;
    float *wbuf = part ? omnic__cpu_wpart(wdata, part, ith) : NULL;
    gemm_mt(a->data, M, K, w->data, w->dtype, N, bias, n->dst->data, ith, nth, wbuf);
}

size_t omnic__cpu_matmul_wsize(const omnic__node *n, int nth)
{
    if (omnic__dtype_table[n->src[1]->dtype].is_quant) return omnic__cpu_matmul_q_wsize(n, nth);
    const omnic__tensor *a = n->src[0], *w = n->src[1];
    int64_t M = omnic__tensor_rows(a), K = omnic__tensor_cols(a), N = w->dims[0];
    if (w->dtype == OMNIC_DTYPE_F32 || M <= OMNIC_CPU_MV_MAX_M || blocks_of_rows(n) || own_gemm()) return 0;
    gemm_plan p = plan_gemm(M, N, wkind(w->dtype));
    return omnic__cpu_walign((size_t)p.nc * (size_t)K * sizeof(float)) * (size_t)nth;
}

/* ------------------------------------------------------------------------------------------
 * patch_embed: image [C, Hi, Wi], weight [O, C, ph, pw] -> dst [(Hi/ph)(Wi/pw), O].
 * Tasks are fixed blocks of PATCH_BLOCK patches: im2col into the thread's buffer, then sgemm
 * against all O filters (OpenBLAS: widened GEMM_NC_HALF filters at a time for f16/bf16). */

typedef struct patch_geom {
    int64_t C, Hi, Wi, O, ph, pw, gw, P, K;
} patch_geom;

static patch_geom patch_geometry(const omnic__node *n)
{
    const omnic__tensor *img = n->src[0], *w = n->src[1];
    patch_geom g;
    g.C = img->dims[0];
    g.Hi = img->dims[1];
    g.Wi = img->dims[2];
    g.O = w->dims[0];
    g.ph = w->dims[2];
    g.pw = w->dims[3];
    g.gw = g.Wi / g.pw;
    g.P = (g.Hi / g.ph) * g.gw;
    g.K = g.C * g.ph * g.pw;
    return g;
}

size_t omnic__cpu_patch_embed_wsize(const omnic__node *n, int nth)
{
    patch_geom g = patch_geometry(n);
    size_t col = omnic__cpu_walign((size_t)PATCH_BLOCK * (size_t)g.K * sizeof(float));
    size_t wb = n->src[1]->dtype == OMNIC_DTYPE_F32 || own_gemm()
                    ? 0
                    : omnic__cpu_walign((size_t)GEMM_NC_HALF * (size_t)g.K * sizeof(float));
    return (col + wb) * (size_t)nth;
}

void omnic__cpu_patch_embed(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__tensor *w = n->src[1], *b = n->src[2];
    const float *img = n->src[0]->data, *bias = b ? (const float *)b->data : NULL;
    float *dst = n->dst->data;
    patch_geom g = patch_geometry(n);
    size_t part = omnic__cpu_patch_embed_wsize(n, nth) / (size_t)nth;
    float *col = omnic__cpu_wpart(wdata, part, ith);
    float *wbuf =
        (float *)((char *)col + omnic__cpu_walign((size_t)PATCH_BLOCK * (size_t)g.K * sizeof(float)));
    int64_t b0, b1;
    omnic__split_rows(cdiv(g.P, PATCH_BLOCK), ith, nth, &b0, &b1);
    for (int64_t blk = b0; blk < b1; blk++) {
        int64_t p0 = blk * PATCH_BLOCK, np = g.P - p0 < PATCH_BLOCK ? g.P - p0 : PATCH_BLOCK;
        for (int64_t p = 0; p < np; p++) { /* row p of the block: (c, y, x) flattened like the filter */
            int64_t py = (p0 + p) / g.gw, px = (p0 + p) % g.gw;
            float *row = col + p * g.K;
            for (int64_t c = 0; c < g.C; c++)
                for (int64_t y = 0; y < g.ph; y++)
                    memcpy(row + (c * g.ph + y) * g.pw, img + (c * g.Hi + py * g.ph + y) * g.Wi + px * g.pw,
                           (size_t)g.pw * sizeof(float));
        }
        float *out = dst + p0 * g.O;
        if (own_gemm()) { /* 16-bit filters widened inside its packing */
            omnic__cpu_gemm_avx2(col, g.K, np, g.K, w->data, w->dtype, g.O, out, g.O, bias);
            continue;
        }
        if (w->dtype == OMNIC_DTYPE_F32) {
            omnic__cpu_sgemm(col, g.K, np, w->data, g.O, out, g.O, bias);
            continue;
        }
        for (int64_t o0 = 0; o0 < g.O; o0 += GEMM_NC_HALF) {
            int64_t no = g.O - o0 < GEMM_NC_HALF ? g.O - o0 : GEMM_NC_HALF;
            const float *wf = widen_rows(w->data, w->dtype, g.K, o0, no, wbuf);
            omnic__cpu_sgemm(col, g.K, np, wf, no, out + o0, g.O, bias ? bias + o0 : NULL);
        }
    }
}
