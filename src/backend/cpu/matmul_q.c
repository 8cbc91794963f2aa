/* cpu matmul with q8_0 / q4_0 weights: dst[M,N] = a[M,K] . w[N,K]^T (+ bias), a f32 (contract in
 * backend/backend.h, formats in core/quant.h).
 *
 * Activations. Every thread quantizes the activation rows it works on (the q8 rule of core/quant.h,
 * bit for bit in every ISA: amax, d = amax / 127, id = 1 / d, x * id rounded half away from
 * zero) into its own part of the work buffer, in the layout its kernel reads. The work is
 * duplicated, not split (kernels have no barrier), and each row is quantized on its own, so a
 * row's result depends neither on the other rows nor on nth.
 *
 * Regimes, chosen by M, ip[0] and the CPU (never by nth), as for float weights (matmul.c):
 *  - M <= OMNIC_CPU_MQ_MAX_M, or ip[0] = 1 (then in blocks of that many rows): the decode
 *    kernel. The threads share chunks of MQ_CHUNK weight rows dynamically (omnic__chunks); each
 *    output element is one fixed reduction (depends only on K and the kernel), so rows are
 *    batch-invariant and the values do not depend on which thread takes a chunk.
 *      AVX-512 (VNNI + VBMI): four blocks per step, 4 int32 lanes per block. Byte permutes
 *        gather the weights into two u8 vectors (q8_0: q + 128; q4_0: low / high nibbles),
 *        two vpdpbusd(weights u8, activations s8) start from a per-block correction (-128 or
 *        -8 times the block's activation sum), so each block's lanes sum to its exact integer
 *        dot; lanes are converted and FMA'd with d_w * d_a into f32 accumulators, reduced
 *        once at the end.
 *      AVX2: one block per ymm; q8_0 by the sign trick (maddubs(|a|, sign(w, a))), q4_0 by
 *        maddubs(nibbles, a) plus the -8 * sum(a) correction; madd to i32, convert, FMA.
 *      scalar: integer block dots, f32 sum of (d_w * d_a) * dot.
 *    q4_0x16 / q8_0x16 weights (the cpu backend's load-time layouts of q4_0 / q8_0 on AVX2 and
 *      AVX-512 CPUs, core/quant.h): 16 weight rows per step, one lane each, so one block's dots
 *      need no horizontal sums and its scales convert at once (tile_x16; AVX2: tile_x16_avx2, 8
 *      rows per ymm, the group's two halves in two passes); scalar: the same sums one by one.
 *  - otherwise (prefill): AMX int8 tiles where the CPU has them (matmul_amx.c); else the
 *    decode kernel in blocks of rows as above (so prefill rows are batch-invariant there too);
 *    on CPUs with neither AVX2 nor AVX-512, weight chunks and activation row blocks dequantized
 *    to f32 and multiplied by OpenBLAS sgemm.
 * Every path computes the exact integer (or exactly dequantized) block dots and differs from
 * the ref backend only by f32 rounding of the scaled sums. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/matmul_q.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/simd.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/threadpool.h"

/* Weight rows per chunk of the integer kernels' work (omnic__chunks; a multiple of 16). */
#define MQ_CHUNK 64
/* Weight rows dequantized per task, and activation rows per sgemm call (sgemm fallback). */
#define QG_NC 256
#define QG_MB 128

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}
static size_t align64(size_t n)
{
    return (n + 63) / 64 * 64;
}

omnic__mq_kind omnic__mq_kind_get(void)
{
    omnic__cpu_isa isa = omnic__cpu_isa_level();
    unsigned f = omnic__cpu_features();
    if (isa == OMNIC_CPU_ISA_AVX512 && (f & OMNIC_CPU_VNNI) && (f & OMNIC_CPU_VBMI)) return OMNIC_MQ_VNNI;
    if (isa >= OMNIC_CPU_ISA_AVX2) return OMNIC_MQ_AVX2;
    return OMNIC_MQ_SCALAR;
}

omnic__mq_layout omnic__mq_layout_of(omnic__mq_kind kind, omnic_dtype wdt, int64_t K)
{
    omnic__mq_layout L = {0};
    if (omnic__x16_plain(wdt) != OMNIC_DTYPE_COUNT) { /* q, d, corr (one int32 per block) or abs */
        const size_t nbk = (size_t)(K / OMNIC_QK);
        L.d = align64((size_t)K);
        const size_t off = L.d + align64(nbk * sizeof(float));
        if (kind == OMNIC_MQ_AVX2 && wdt == OMNIC_DTYPE_Q8_0X16) { /* the sign trick: |q|, no corr */
            L.abs = off;
            L.bytes = off + align64((size_t)K);
        } else {
            L.corr = off;
            L.bytes = off + align64(nbk * sizeof(int32_t));
        }
        return L;
    }
    const size_t nb = (size_t)(K / OMNIC_QK), spb = 4, ns = (nb + spb - 1) / spb;
    const size_t kp = kind == OMNIC_MQ_VNNI ? ns * spb * OMNIC_QK : align64((size_t)K); /* q bytes */
    size_t off = align64(kp);                                                           /* q at 0 */
    if (kind == OMNIC_MQ_AVX2) {
        L.abs = off;
        off += kp;
    }
    L.d = off;
    off += align64(ns * spb * sizeof(float));
    if (kind == OMNIC_MQ_AVX2) {
        L.corr = off;
        off += nb * 32;
    } else if (kind == OMNIC_MQ_VNNI) {
        L.corr = off;
        off += ns * 64;
        L.dv = off;
        off += ns * 64;
    }
    L.bytes = align64(off);
    return L;
}

/* ------------------------------------------------------------------------------------------
 * Activation quantization: row x[K] -> q[K] int8 + d[K/32] f32, bit-identical to
 * omnic__quantize_act_q8 in every ISA. */

OMNIC_INLINE OMNIC_AVX512 __m512 round_away16(__m512 v)
{
    __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_sub_ps(v, t); /* exact */
    t = _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(r, _mm512_set1_ps(0.5f), _CMP_GE_OQ), t,
                           _mm512_set1_ps(1.0f));
    return _mm512_mask_sub_ps(t, _mm512_cmp_ps_mask(r, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), t,
                              _mm512_set1_ps(1.0f));
}

static OMNIC_AVX512 void quant_row_avx512(const float *x, int8_t *q, float *d, int64_t K)
{
    for (int64_t b = 0; b < K / OMNIC_QK; b++, x += OMNIC_QK, q += OMNIC_QK) {
        __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
        const float di = amax / 127.0f;
        const float id = di != 0.0f ? 1.0f / di : 0.0f;
        d[b] = di;
        __m512 vid = _mm512_set1_ps(id);
        __m512i i0 = _mm512_cvtps_epi32(round_away16(_mm512_mul_ps(x0, vid)));
        __m512i i1 = _mm512_cvtps_epi32(round_away16(_mm512_mul_ps(x1, vid)));
        _mm_storeu_si128((__m128i *)q, _mm512_cvtepi32_epi8(i0));
        _mm_storeu_si128((__m128i *)(q + 16), _mm512_cvtepi32_epi8(i1));
    }
}

OMNIC_INLINE OMNIC_AVX2 __m256i round_away8(__m256 v)
{
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_sub_ps(v, t);
    t = _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(r, _mm256_set1_ps(0.5f), _CMP_GE_OQ), one));
    t = _mm256_sub_ps(t, _mm256_and_ps(_mm256_cmp_ps(r, _mm256_set1_ps(-0.5f), _CMP_LE_OQ), one));
    return _mm256_cvtps_epi32(t);
}

static OMNIC_AVX2 void quant_row_avx2(const float *x, int8_t *q, float *d, int64_t K)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < K / OMNIC_QK; b++, x += OMNIC_QK, q += OMNIC_QK) {
        __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8), x2 = _mm256_loadu_ps(x + 16),
               x3 = _mm256_loadu_ps(x + 24);
        __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, x0), _mm256_andnot_ps(sign, x1)),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, x2), _mm256_andnot_ps(sign, x3)));
        const float amax = omnic__hmax256(m);
        const float di = amax / 127.0f;
        const float id = di != 0.0f ? 1.0f / di : 0.0f;
        d[b] = di;
        __m256 vid = _mm256_set1_ps(id);
        __m256i i0 = round_away8(_mm256_mul_ps(x0, vid)), i1 = round_away8(_mm256_mul_ps(x1, vid));
        __m256i i2 = round_away8(_mm256_mul_ps(x2, vid)), i3 = round_away8(_mm256_mul_ps(x3, vid));
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)q, p);
    }
}

void omnic__mq_quant_row(omnic__mq_kind kind, const float *x, int8_t *q, float *d, int64_t K)
{
    if (kind == OMNIC_MQ_VNNI)
        quant_row_avx512(x, q, d, K);
    else if (kind == OMNIC_MQ_AVX2)
        quant_row_avx2(x, q, d, K);
    else
        omnic__quantize_act_q8(x, q, d, K);
}

static int32_t block_sum(const int8_t *q)
{
    int32_t s = 0;
    for (int j = 0; j < OMNIC_QK; j++)
        s += q[j];
    return s;
}

/* ab[k] = |q[k]|, K a multiple of 32 (whole blocks) */
static OMNIC_AVX2 void abs_row_avx2(const int8_t *q, uint8_t *ab, int64_t K)
{
    for (int64_t k = 0; k < K; k += 32)
        _mm256_storeu_si256((__m256i *)(ab + k),
                            _mm256_abs_epi8(_mm256_loadu_si256((const __m256i *)(q + k))));
}

/* Rows a[rows, K] into buf (stride L->bytes) with the extras kernel `kind` reads for weights wdt
 * (layouts: matmul_q.h). */
static void quant_rows(omnic__mq_kind kind, omnic_dtype wdt, const float *a, int64_t rows, int64_t K,
                       uint8_t *buf, const omnic__mq_layout *L)
{
    const bool q4 = wdt == OMNIC_DTYPE_Q4_0;
    const int64_t nb = K / OMNIC_QK, spb = 4, ns = (nb + spb - 1) / spb;
    const int32_t c =
        q4 ? 8 : 128; /* offset the unsigned weight operand carries (q4_0 nibbles, q8_0 q + 128) */
    for (int64_t i = 0; i < rows; i++) {
        uint8_t *r = buf + (size_t)i * L->bytes;
        int8_t *q = (int8_t *)r;
        float *d = (float *)(r + L->d);
        omnic__mq_quant_row(kind, a + i * K, q, d, K);
        if (omnic__x16_plain(wdt) != OMNIC_DTYPE_COUNT) {
            if (L->abs) {
                abs_row_avx2(q, r + L->abs, K);
                continue;
            }
            int32_t *corr = (int32_t *)(r + L->corr);
            const int32_t cx = wdt == OMNIC_DTYPE_Q8_0X16 ? 128 : 8; /* q8_0x16 weights enter as q + 128 */
            for (int64_t b = 0; b < nb; b++)
                corr[b] = -cx * block_sum(q + b * OMNIC_QK);
        } else if (kind == OMNIC_MQ_AVX2) {
            abs_row_avx2(q, r + L->abs, K);
            int32_t *corr = (int32_t *)(r + L->corr);
            for (int64_t b = 0; q4 && b < nb; b++) { /* q8_0 uses the sign trick instead */
                memset(corr + 8 * b, 0, 32);
                corr[8 * b] = -c * block_sum(q + b * OMNIC_QK);
            }
        } else if (kind == OMNIC_MQ_VNNI) {
            memset(r + K, 0, (size_t)(ns * spb * OMNIC_QK - K)); /* whole steps: padded blocks q = 0, d = 0 */
            for (int64_t b = nb; b < ns * spb; b++)
                d[b] = 0.0f;
            int32_t *corr = (int32_t *)(r + L->corr);
            float *dv = (float *)(r + L->dv);
            const int lanes = 16 / (int)spb; /* int32 lanes per block */
            for (int64_t st = 0; st < ns; st++) {
                memset(corr + 16 * st, 0, 64);
                for (int64_t h = 0; h < spb; h++) {
                    int64_t b = st * spb + h;
                    corr[16 * st + lanes * h] = -c * block_sum(q + b * OMNIC_QK);
                    for (int l = 0; l < lanes; l++)
                        dv[16 * st + lanes * h + l] = d[b];
                }
                { /* the quad's elements 0-15 of each block, then 16-31 */
                    int8_t tmp[4 * OMNIC_QK];
                    int8_t *qs = q + st * 4 * OMNIC_QK;
                    for (int h = 0; h < 4; h++) {
                        memcpy(tmp + 16 * h, qs + OMNIC_QK * h, 16);
                        memcpy(tmp + 64 + 16 * h, qs + OMNIC_QK * h + 16, 16);
                    }
                    memcpy(qs, tmp, sizeof tmp);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------------------------------
 * Decode kernels: dst[i, n] for i < M, n in [n0, n1); act rows at stride L->bytes. */

typedef void (*mq_fn)(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K, const void *w,
                      int64_t n0, int64_t n1, float *dst, int64_t N);

#define MQ_NR 4
/* Decode kernels prefetch the same rows of the next tile into L1 and, further ahead, the bytes
 * MQ_PF_L2 past the current position into L2: L1 prefetches alone are capped by the L1 miss
 * buffers, and with short rows (K = 1536: 1.6 KB in q8_0) the L2 streamer keeps restarting.
 * Measured on the Qwen2-1.5B shapes, 2 threads: q8_0 N = 8960, K = 1536 18.1 -> 20.2-21.1 GB/s,
 * q4_0 16.2 -> 19.2 GB/s; K = 8960 unchanged. Prefetches never fault, so reaching past the
 * weights is harmless. */
#define MQ_PF_L2 16384

/* ---- scalar ---- */

static void mq_scalar(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K, const void *w,
                      int64_t n0, int64_t n1, float *dst, int64_t N, bool q4)
{
    const int64_t nb = K / OMNIC_QK;
    const size_t bb = q4 ? sizeof(omnic__block_q4_0) : sizeof(omnic__block_q8_0);
    for (int64_t n = n0; n < n1; n++) {
        const uint8_t *wr = (const uint8_t *)w + (size_t)n * (size_t)nb * bb;
        for (int64_t i = 0; i < M; i++) {
            const uint8_t *r = act + (size_t)i * L->bytes;
            const int8_t *q = (const int8_t *)r;
            const float *d = (const float *)(r + L->d);
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *blk = wr + (size_t)b * bb;
                const int8_t *qa = q + b * OMNIC_QK;
                uint16_t dh;
                memcpy(&dh, blk, 2);
                int32_t s = 0;
                if (q4) {
                    for (int j = 0; j < OMNIC_QK / 2; j++) {
                        s += ((blk[2 + j] & 0x0f) - 8) * qa[j];
                        s += ((blk[2 + j] >> 4) - 8) * qa[j + OMNIC_QK / 2];
                    }
                } else {
                    for (int j = 0; j < OMNIC_QK; j++)
                        s += (int8_t)blk[2 + j] * qa[j];
                }
                acc += omnic__f16_to_f32(dh) * d[b] * (float)s;
            }
            dst[i * N + n] = acc;
        }
    }
}

static void mq_scalar_q8(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K, const void *w,
                         int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_scalar(act, L, M, K, w, n0, n1, dst, N, false);
}
static void mq_scalar_q4(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K, const void *w,
                         int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_scalar(act, L, M, K, w, n0, n1, dst, N, true);
}

/* ---- AVX2: one block per step; tiles of mr <= 2 activation rows x nr <= 4 weight rows ---- */

OMNIC_INLINE OMNIC_AVX2 float f16_scalar(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

OMNIC_INLINE OMNIC_AVX2 void tile_avx2(const uint8_t *act, const omnic__mq_layout *L, int mr,
                                       const uint8_t *w, size_t ldw, int nr, int64_t nb, bool q4, float *out,
                                       int64_t ldo)
{
    const size_t bb = q4 ? sizeof(omnic__block_q4_0) : sizeof(omnic__block_q8_0);
    const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0f);
    __m256 acc[2][MQ_NR];
    OMNIC_UNROLL for (int i = 0; i < mr; i++) OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[i][j] =
        _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i wv[MQ_NR];
        float dw[MQ_NR];
        OMNIC_UNROLL for (int j = 0; j < nr; j++)
        {
            const uint8_t *blk = w + (size_t)j * ldw + (size_t)b * bb;
            _mm_prefetch((const char *)blk + (size_t)nr * ldw, _MM_HINT_T0);
            _mm_prefetch((const char *)blk + MQ_PF_L2, _MM_HINT_T1);
            dw[j] = f16_scalar(blk);
            if (q4) {
                __m128i x = _mm_loadu_si128((const __m128i *)(blk + 2));
                __m256i xx = _mm256_set_m128i(_mm_srli_epi16(x, 4), x);
                wv[j] = _mm256_and_si256(xx, low4);
            } else {
                wv[j] = _mm256_loadu_si256((const __m256i *)(blk + 2));
            }
        }
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
        {
            const uint8_t *r = act + (size_t)i * L->bytes;
            __m256i a = _mm256_loadu_si256((const __m256i *)(r + b * OMNIC_QK));
            float da = ((const float *)(r + L->d))[b];
            __m256i aa = q4 ? _mm256_setzero_si256()
                            : _mm256_loadu_si256((const __m256i *)(r + L->abs + b * OMNIC_QK));
            __m256i corr =
                q4 ? _mm256_loadu_si256((const __m256i *)(r + L->corr + b * 32)) : _mm256_setzero_si256();
            OMNIC_UNROLL for (int j = 0; j < nr; j++)
            {
                __m256i p16 = q4 ? _mm256_maddubs_epi16(wv[j], a)
                                 : _mm256_maddubs_epi16(aa, _mm256_sign_epi8(wv[j], a));
                __m256i p32 = _mm256_madd_epi16(p16, ones);
                if (q4) p32 = _mm256_add_epi32(p32, corr);
                acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p32), _mm256_set1_ps(dw[j] * da), acc[i][j]);
            }
        }
    }
    OMNIC_UNROLL for (int i = 0; i < mr; i++) OMNIC_UNROLL for (int j = 0; j < nr; j++) out[i * ldo + j] =
        omnic__hsum256(acc[i][j]);
}

OMNIC_INLINE OMNIC_AVX2 void mq_avx2(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                     const void *w, int64_t n0, int64_t n1, float *dst, int64_t N, bool q4)
{
    const int64_t nb = K / OMNIC_QK;
    const size_t ldw = (size_t)nb * (q4 ? sizeof(omnic__block_q4_0) : sizeof(omnic__block_q8_0));
    const uint8_t *wb = w;
    int64_t n = n0;
    for (; n + MQ_NR <= n1; n += MQ_NR) {
        int64_t i = 0;
        for (; i + 2 <= M; i += 2)
            tile_avx2(act + (size_t)i * L->bytes, L, 2, wb + (size_t)n * ldw, ldw, MQ_NR, nb, q4,
                      dst + i * N + n, N);
        if (i < M)
            tile_avx2(act + (size_t)i * L->bytes, L, 1, wb + (size_t)n * ldw, ldw, MQ_NR, nb, q4,
                      dst + i * N + n, N);
    }
    for (; n < n1; n++) {
        int64_t i = 0;
        for (; i + 2 <= M; i += 2)
            tile_avx2(act + (size_t)i * L->bytes, L, 2, wb + (size_t)n * ldw, ldw, 1, nb, q4, dst + i * N + n,
                      N);
        if (i < M)
            tile_avx2(act + (size_t)i * L->bytes, L, 1, wb + (size_t)n * ldw, ldw, 1, nb, q4, dst + i * N + n,
                      N);
    }
}

static OMNIC_AVX2 void mq_avx2_q8(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                  const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_avx2(act, L, M, K, w, n0, n1, dst, N, false);
}
static OMNIC_AVX2 void mq_avx2_q4(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                  const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_avx2(act, L, M, K, w, n0, n1, dst, N, true);
}

/* ---- AVX-512 VNNI + VBMI; tiles of mr <= 4 activation rows x nr <= 4 weight rows ----
 * A step is a quad of blocks (128 elements). Its weights become two u8 vectors with 4 lanes
 * (16 bytes) per block: w0 = elements 0-15 of each block, w1 = elements 16-31, matched by the
 * activation layout (q_lo, q_hi; matmul_q.h), so two vpdpbusd leave each block's integer dot
 * (plus the correction the activation row carries) in its 4 lanes.
 *   q4_0 (72 bytes: a 64-byte load + a broadcast qword): one vpermt2b gathers the 64 nibble
 *        bytes; low and high nibbles are w0 and w1.
 *   q8_0 (136 bytes: two 64-byte loads + a broadcast qword): vpermt2b gathers w0; w1 takes a
 *        vpermt2b plus a masked vpermb for its last 8 bytes; xor 0x80 makes both unsigned.
 * Scales: vpermt2w + vcvtph2ps, each block's d over its 4 lanes. Whole quads never read past
 * their own bytes; a partial quad at the end of a row is loaded under byte masks and its
 * missing blocks read as zeros (zero activations and scales pad them). */

typedef struct vnni_consts {
    __m512i idx_lo, idx_hi; /* bytes of w0 / w1 from (z0, z1) */
    __m512i idx_hi2;        /* q8_0: bytes of w1 from z2 (lanes in hi2_mask) */
    __mmask64 hi2_mask;
    __m512i idx_d;                /* words: each block's f16 scale over its 4 lanes, from (z0, z1) */
    __mmask64 part0[4], part1[4]; /* byte masks of z0 / z1 for a partial quad of 0..3 blocks */
} vnni_consts;

static OMNIC_VNNI vnni_consts vnni_setup(bool q4)
{
    vnni_consts c;
    uint8_t lo[64], hi[64], hi2[64] = {0};
    uint16_t id[32] = {0};
    const int bb = q4 ? (int)sizeof(omnic__block_q4_0) : (int)sizeof(omnic__block_q8_0);
    c.hi2_mask = 0;
    for (int k = 0; k < 64; k++) { /* indices >= 64 pick the second source */
        const int b = k / 16, e = k % 16;
        lo[k] = (uint8_t)(bb * b + 2 + e);
        int h = q4 ? bb * b + 2 + e : bb * b + 18 + e; /* q4_0: the same bytes, high nibbles */
        if (h >= 128) {
            hi2[k] = (uint8_t)(h - 128);
            c.hi2_mask |= (__mmask64)1 << k;
            h = 0;
        }
        hi[k] = (uint8_t)h;
    }
    for (int k = 0; k < 16; k++)
        id[k] = (uint16_t)((bb / 2) * (k / 4));
    c.idx_lo = _mm512_loadu_si512(lo);
    c.idx_hi = _mm512_loadu_si512(hi);
    c.idx_hi2 = _mm512_loadu_si512(hi2);
    c.idx_d = _mm512_loadu_si512(id);
    for (int r = 0; r < 4; r++) {
        const int n = bb * r; /* bytes of r blocks */
        c.part0[r] = n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
        c.part1[r] = n <= 64 ? 0 : n >= 128 ? ~(__mmask64)0 : (((__mmask64)1 << (n - 64)) - 1);
    }
    return c;
}

/* Weight quad at p with nblk blocks (4, or fewer at a row's end) -> w0, w1 (u8), dw. */
OMNIC_INLINE OMNIC_VNNI void ldw_quad(const uint8_t *p, int nblk, bool q4, const vnni_consts *c, __m512i *w0,
                                      __m512i *w1, __m512 *dw)
{
    __m512i z0, z1, z2 = _mm512_setzero_si512();
    if (nblk == 4) {
        int64_t t;
        z0 = _mm512_loadu_si512(p);
        if (q4) {
            memcpy(&t, p + 64, 8);
            z1 = _mm512_set1_epi64(t);
        } else {
            z1 = _mm512_loadu_si512(p + 64);
            memcpy(&t, p + 128, 8);
            z2 = _mm512_set1_epi64(t);
        }
    } else {
        z0 = _mm512_maskz_loadu_epi8(c->part0[nblk], p);
        z1 = _mm512_maskz_loadu_epi8(c->part1[nblk], p + 64);
    }
    if (q4) {
        const __m512i low4 = _mm512_set1_epi8(0x0f);
        __m512i g = _mm512_permutex2var_epi8(z0, c->idx_lo, z1);
        *w0 = _mm512_and_si512(g, low4);
        *w1 = _mm512_and_si512(_mm512_srli_epi16(g, 4), low4);
    } else {
        const __m512i bias = _mm512_set1_epi8((char)0x80);
        __m512i h = _mm512_permutex2var_epi8(z0, c->idx_hi, z1);
        h = _mm512_mask_permutexvar_epi8(h, c->hi2_mask, c->idx_hi2, z2);
        *w0 = _mm512_xor_si512(_mm512_permutex2var_epi8(z0, c->idx_lo, z1), bias);
        *w1 = _mm512_xor_si512(h, bias);
    }
    *dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(z0, c->idx_d, z1)));
}

/* Activation quad s of a row: q_lo, q_hi (128 bytes), corr, dv (64 bytes each). */
OMNIC_INLINE OMNIC_VNNI void tile_vnni(const uint8_t *act, const omnic__mq_layout *L, int mr,
                                       const uint8_t *w, size_t ldw, size_t pf, int nr, int64_t nb, bool q4,
                                       const vnni_consts *c, float *out, int64_t ldo)
{
    const size_t sb =
        4 * (q4 ? sizeof(omnic__block_q4_0) : sizeof(omnic__block_q8_0)); /* weight bytes per quad */
    __m512 acc[4][MQ_NR];
    OMNIC_UNROLL for (int i = 0; i < mr; i++) OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[i][j] =
        _mm512_setzero_ps();
    const int64_t ns = (nb + 3) / 4;
    for (int64_t s = 0; s < ns; s++) {
        const int nblk = nb - s * 4 < 4 ? (int)(nb - s * 4) : 4;
        __m512i w0[MQ_NR], w1[MQ_NR];
        __m512 dw[MQ_NR];
        OMNIC_UNROLL for (int j = 0; j < nr; j++)
        {
            const uint8_t *wp = w + (size_t)j * ldw + (size_t)s * sb;
            _mm_prefetch((const char *)wp + pf, _MM_HINT_T0);
            _mm_prefetch((const char *)wp + pf + 64, _MM_HINT_T0);
            _mm_prefetch((const char *)wp + MQ_PF_L2, _MM_HINT_T1);
            _mm_prefetch((const char *)wp + MQ_PF_L2 + 64, _MM_HINT_T1);
            if (!q4) {
                _mm_prefetch((const char *)wp + pf + 128, _MM_HINT_T0);
                _mm_prefetch((const char *)wp + MQ_PF_L2 + 128, _MM_HINT_T1);
            }
            ldw_quad(wp, nblk, q4, c, &w0[j], &w1[j], &dw[j]);
        }
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
        {
            const uint8_t *r = act + (size_t)i * L->bytes;
            const __m512i a0 = _mm512_loadu_si512(r + (size_t)s * 128);
            const __m512i a1 = _mm512_loadu_si512(r + (size_t)s * 128 + 64);
            const __m512i corr = _mm512_loadu_si512(r + L->corr + (size_t)s * 64);
            const __m512 dv = _mm512_loadu_ps((const float *)(r + L->dv + (size_t)s * 64));
            OMNIC_UNROLL for (int j = 0; j < nr; j++)
            {
                const __m512i t = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(corr, w0[j], a0), w1[j], a1);
                acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_mul_ps(dw[j], dv), acc[i][j]);
            }
        }
    }
    OMNIC_UNROLL for (int i = 0; i < mr; i++) OMNIC_UNROLL for (int j = 0; j < nr; j++) out[i * ldo + j] =
        _mm512_reduce_add_ps(acc[i][j]);
}

/* Tiles: 4 weight rows per step of n (prefetching the same rows of the next step); activation
 * rows in blocks of 4 (3, 2, 1 at the end). Blocks of 3 or 4 rows take the 4 weight rows as two
 * tiles of 2 (keeps the accumulators and weights in the 32 zmm registers). The tile shape only
 * groups elements; each element's own sequence of operations is the same in every tile. */
OMNIC_INLINE OMNIC_VNNI void mq_vnni(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                     const void *w, int64_t n0, int64_t n1, float *dst, int64_t N, bool q4)
{
    const int64_t nb = K / OMNIC_QK;
    const size_t ldw = (size_t)nb * (q4 ? sizeof(omnic__block_q4_0) : sizeof(omnic__block_q8_0));
    const size_t pf = (size_t)MQ_NR * ldw;
    const uint8_t *wb = w;
    const vnni_consts c = vnni_setup(q4);
    const size_t as = L->bytes;
#define TILE(MR, NR, DN)                                                                                     \
    tile_vnni(act + i * as, L, MR, wt + (DN)*ldw, ldw, pf, NR, nb, q4, &c, dst + i * N + n + (DN), N)
    int64_t n = n0;
    for (; n + MQ_NR <= n1; n += MQ_NR) {
        const uint8_t *wt = wb + (size_t)n * ldw;
        int64_t i = 0;
        for (; i + 4 <= M; i += 4) {
            TILE(4, 2, 0);
            TILE(4, 2, 2);
        }
        switch (M - i) {
        case 3:
            TILE(3, 2, 0);
            TILE(3, 2, 2);
            break;
        case 2:
            TILE(2, 4, 0);
            break;
        case 1:
            TILE(1, 4, 0);
            break;
        default:
            break;
        }
    }
    for (; n < n1; n++) {
        const uint8_t *wt = wb + (size_t)n * ldw;
        int64_t i = 0;
        for (; i + 4 <= M; i += 4)
            TILE(4, 1, 0);
        for (; i < M; i++)
            TILE(1, 1, 0);
    }
#undef TILE
}

static OMNIC_VNNI void mq_vnni_q8(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                  const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_vnni(act, L, M, K, w, n0, n1, dst, N, false);
}
static OMNIC_VNNI void mq_vnni_q4(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                  const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_vnni(act, L, M, K, w, n0, n1, dst, N, true);
}

/* ---- q4_0x16 / q8_0x16 weights: one group of 16 weight rows x mr activation rows ----
 * Scalar: per output, the exact block dot (u8 weights as the VNNI tile sees them: nibbles, or
 * q + 128) plus the correction, then acc = fmaf(dot, d_w * d_a, acc) block by block: the same
 * sums as the VNNI tile, one lane at a time. */
static void mq_x16_scalar(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K, const void *w,
                          int64_t n0, int64_t n1, float *dst, int64_t N, bool q8)
{
    const int64_t nb = K / OMNIC_QK;
    const size_t rb = q8 ? sizeof(omnic__block_q8_0) : sizeof(omnic__block_q4_0);
    const size_t bsz = q8 ? OMNIC_Q8X16_BLOCK : OMNIC_Q4X16_BLOCK, soff = q8 ? 512 : 256;
    for (int64_t n = n0; n < n1; n++) {
        const int64_t r = n % OMNIC_X16_ROWS;
        const uint8_t *grp = (const uint8_t *)w + (size_t)(n - r) * (size_t)nb * rb;
        for (int64_t i = 0; i < M; i++) {
            const uint8_t *ar = act + (size_t)i * L->bytes;
            const int8_t *q = (const int8_t *)ar;
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *gb = grp + (size_t)b * bsz;
                const int8_t *qb = q + b * OMNIC_QK;
                int32_t dot;
                memcpy(&dot, ar + L->corr + (size_t)b * 4, 4);
                for (int j = 0; j < (q8 ? 8 : 4); j++)
                    for (int e = 0; e < 4; e++) {
                        const uint8_t byte = gb[64 * j + 4 * r + e];
                        if (q8)
                            dot += (byte ^ 0x80) * qb[4 * j + e];
                        else
                            dot += (byte & 0x0f) * qb[4 * j + e] + (byte >> 4) * qb[16 + 4 * j + e];
                    }
                uint16_t h;
                memcpy(&h, gb + soff + 2 * r, 2);
                float da;
                memcpy(&da, ar + L->d + (size_t)b * 4, 4);
                acc = fmaf((float)dot, omnic__f16_to_f32(h) * da, acc);
            }
            dst[i * N + n] = acc;
        }
    }
}

static void mq_x16_scalar_q4(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                             const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_x16_scalar(act, L, M, K, w, n0, n1, dst, N, false);
}
static void mq_x16_scalar_q8(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                             const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_x16_scalar(act, L, M, K, w, n0, n1, dst, N, true);
}

/* Prefetch distances of the VNNI tile (bytes ahead in the group's one stream). */
#define X16_PF_L1 1024
#define X16_PF_L2 MQ_PF_L2 /* 512 to 2048 and 16 to 64 KB measured alike (Qwen2-1.5B, tg64 x1, x4) */
#define X16_MR 8           /* activation rows per tile: 8 accumulators + 8 weight vectors in registers */

/* VNNI: a q4_0x16 block's 256 nibble bytes are four 64-byte loads (its 16 scales follow them);
 * their low and high nibbles are eight u8 vectors v[c] whose lane r holds elements 4c..4c+3 of
 * weight row r (q8_0x16: eight loads of q, xor 0x80 makes them u8 = q + 128). For each activation row, eight
 * vpdpbusd with its broadcast dwords (elements 4c..4c+3), in two chains started from the block's correction
 * (-8 sum q) and from 0, leave the 16 rows' exact block dots in 16 lanes; acc = fma(f32(dot), d_w * d_a, acc)
 * with the 16 scales converted at once. One stream per group (scales beside their nibbles) measured 8% faster
 * at M = 1 than the scales in a separate run; two chains beat one (latency) and four (more adds) at 4 rows by
 * 8% and 5%. An output's operations are the same whatever mr, M or the split of groups over threads. */
OMNIC_INLINE OMNIC_VNNI void tile_x16(const uint8_t *act, const omnic__mq_layout *L, int mr,
                                      const uint8_t *grp, int64_t nb, float *out, int64_t ldo, bool q8)
{
    const __m512i low4 = _mm512_set1_epi8(0x0f), bias = _mm512_set1_epi8((char)0x80);
    const size_t bsz = q8 ? OMNIC_Q8X16_BLOCK : OMNIC_Q4X16_BLOCK, soff = q8 ? 512 : 256;
    __m512 acc[X16_MR];
    OMNIC_UNROLL for (int i = 0; i < mr; i++) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = grp + (size_t)b * bsz;
        OMNIC_UNROLL for (int z = 0; z < 9; z++) /* with the next block's, every line */
        {
            if (z >= 5 && !q8) break; /* q4_0x16: 5 lines */
            _mm_prefetch((const char *)p + X16_PF_L1 + 64 * z, _MM_HINT_T0);
            _mm_prefetch((const char *)p + X16_PF_L2 + 64 * z, _MM_HINT_T1);
        }
        __m512i v[8];
        if (q8) {
            OMNIC_UNROLL for (int c = 0; c < 8; c++) v[c] =
                _mm512_xor_si512(_mm512_loadu_si512(p + 64 * c), bias);
        } else {
            OMNIC_UNROLL for (int c = 0; c < 4; c++)
            {
                const __m512i x = _mm512_loadu_si512(p + 64 * c);
                v[c] = _mm512_and_si512(x, low4);
                v[c + 4] = _mm512_and_si512(_mm512_srli_epi16(x, 4), low4);
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + soff)));
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
        {
            const uint8_t *ar = act + (size_t)i * L->bytes;
            int32_t a4[8], corr;
            float da;
            memcpy(a4, ar + (size_t)b * OMNIC_QK, sizeof a4);
            memcpy(&corr, ar + L->corr + (size_t)b * 4, 4);
            memcpy(&da, ar + L->d + (size_t)b * 4, 4);
            __m512i s0 = _mm512_set1_epi32(corr), s1 = _mm512_setzero_si512();
            OMNIC_UNROLL for (int c = 0; c < 8; c += 2)
            {
                s0 = _mm512_dpbusd_epi32(s0, v[c], _mm512_set1_epi32(a4[c]));
                s1 = _mm512_dpbusd_epi32(s1, v[c + 1], _mm512_set1_epi32(a4[c + 1]));
            }
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)),
                                     _mm512_mul_ps(dw, _mm512_set1_ps(da)), acc[i]);
        }
    }
    OMNIC_UNROLL for (int i = 0; i < mr; i++) _mm512_storeu_ps(out + i * ldo, acc[i]);
}

/* Weight rows [n0, n1) (whole groups) x all M activation rows, X16_MR rows per tile. */
OMNIC_INLINE OMNIC_VNNI void mq_x16_vnni(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                         const void *w, int64_t n0, int64_t n1, float *dst, int64_t N,
                                         bool q8)
{
    const int64_t nb = K / OMNIC_QK;
    const size_t ldw = (size_t)nb * (q8 ? sizeof(omnic__block_q8_0) : sizeof(omnic__block_q4_0));
    for (int64_t n = n0; n < n1; n += OMNIC_X16_ROWS) {
        const uint8_t *grp = (const uint8_t *)w + (size_t)n * ldw;
        for (int64_t i = 0; i < M; i += X16_MR) {
            const uint8_t *a = act + (size_t)i * L->bytes;
            float *o = dst + i * N + n;
            switch (M - i < X16_MR ? M - i : X16_MR) {
#define X16_TILE(R)                                                                                          \
    case R:                                                                                                  \
        tile_x16(a, L, R, grp, nb, o, N, q8);                                                                \
        break;
                X16_TILE(1)
                X16_TILE(2)
                X16_TILE(3)
                X16_TILE(4)
                X16_TILE(5)
                X16_TILE(6)
                X16_TILE(7)
                X16_TILE(8)
#undef X16_TILE
            default:
                break;
            }
        }
    }
}

static OMNIC_VNNI void mq_x16_vnni_q4(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                      const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_x16_vnni(act, L, M, K, w, n0, n1, dst, N, false);
}
static OMNIC_VNNI void mq_x16_vnni_q8(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                      const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_x16_vnni(act, L, M, K, w, n0, n1, dst, N, true);
}

/* AVX2 over the same x16 groups: the two 32-byte halves of each 64-byte line are rows 0-7 and
 * 8-15, one int32 lane per weight row. A group runs as two passes over K, one per half (8
 * weight vectors + X16A_MR accumulators fit the 16 ymm registers; the second pass finds the
 * group's bytes in L2). Per block and activation row: q4_0x16, eight vpmaddubsw (nibbles u8 x
 * broadcast activation dwords s8; each i16 lane sums at most 8 x 2 x 15 x 127 = 30480, no
 * saturation), one vpmaddwd, plus the block's correction (-8 sum q) = the exact block dot;
 * q8_0x16, the sign trick (vpmaddubsw(|a|, sign(w, a)), |a| read from the row's abs: at most
 * 2 x 127 x 128 per i16) and a vpmaddwd per dword column, summed in i32 = the exact dot (no
 * correction). Then acc = fma(f32(dot), d_w * d_a, acc) block by block: the scalar x16 kernel's
 * operations, so every path gives the same bits. */
#define X16A_MR 4

OMNIC_INLINE OMNIC_AVX2 __m256i bcast4(const uint8_t *p) /* the dword at p in every lane */
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

OMNIC_INLINE OMNIC_AVX2 void tile_x16_avx2(const uint8_t *act, const omnic__mq_layout *L, int mr,
                                           const uint8_t *grp, int half, int64_t nb, float *out, int64_t ldo,
                                           bool q8)
{
    const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const size_t bsz = q8 ? OMNIC_Q8X16_BLOCK : OMNIC_Q4X16_BLOCK, soff = q8 ? 512 : 256;
    __m256 acc[X16A_MR];
    OMNIC_UNROLL for (int i = 0; i < mr; i++) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = grp + (size_t)b * bsz + 32 * (size_t)half;
        OMNIC_UNROLL for (int z = 0; z < 9; z++) /* the next blocks' lines (first pass: from memory) */
        {
            if (z >= 5 && !q8) break;
            _mm_prefetch((const char *)p + X16_PF_L1 + 64 * z, _MM_HINT_T0);
            _mm_prefetch((const char *)p + X16_PF_L2 + 64 * z, _MM_HINT_T1);
        }
        __m256i v[8];
        if (q8) {
            OMNIC_UNROLL for (int c = 0; c < 8; c++) v[c] = _mm256_loadu_si256((const __m256i *)(p + 64 * c));
        } else {
            OMNIC_UNROLL for (int c = 0; c < 4; c++)
            {
                const __m256i x = _mm256_loadu_si256((const __m256i *)(p + 64 * c));
                v[c] = _mm256_and_si256(x, low4);
                v[c + 4] = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4);
            }
        }
        const __m256 dw = _mm256_cvtph_ps(
            _mm_loadu_si128((const __m128i *)(grp + (size_t)b * bsz + soff + 16 * (size_t)half)));
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
        {
            const uint8_t *ar = act + (size_t)i * L->bytes;
            int32_t a4[8];
            float da;
            if (!q8) memcpy(a4, ar + (size_t)b * OMNIC_QK, sizeof a4);
            memcpy(&da, ar + L->d + (size_t)b * 4, 4);
            __m256i dot;
            if (q8) {
                __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
                OMNIC_UNROLL for (int c = 0; c < 8; c += 2)
                {
                    const uint8_t *ac = ar + (size_t)b * OMNIC_QK + 4 * c;
                    const __m256i a0 = bcast4(ac), a1 = bcast4(ac + 4);
                    const __m256i aa0 = bcast4(ac + L->abs), aa1 = bcast4(ac + L->abs + 4);
                    s0 = _mm256_add_epi32(
                        s0, _mm256_madd_epi16(_mm256_maddubs_epi16(aa0, _mm256_sign_epi8(v[c], a0)), ones));
                    s1 = _mm256_add_epi32(
                        s1,
                        _mm256_madd_epi16(_mm256_maddubs_epi16(aa1, _mm256_sign_epi8(v[c + 1], a1)), ones));
                }
                dot = _mm256_add_epi32(s0, s1);
            } else {
                int32_t corr;
                memcpy(&corr, ar + L->corr + (size_t)b * 4, 4);
                __m256i s0 = _mm256_maddubs_epi16(v[0], _mm256_set1_epi32(a4[0]));
                __m256i s1 = _mm256_maddubs_epi16(v[1], _mm256_set1_epi32(a4[1]));
                OMNIC_UNROLL for (int c = 2; c < 8; c += 2)
                {
                    s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(v[c], _mm256_set1_epi32(a4[c])));
                    s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(v[c + 1], _mm256_set1_epi32(a4[c + 1])));
                }
                dot = _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(s0, s1), ones),
                                       _mm256_set1_epi32(corr));
            }
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, _mm256_set1_ps(da)), acc[i]);
        }
    }
    OMNIC_UNROLL for (int i = 0; i < mr; i++) _mm256_storeu_ps(out + i * ldo + 8 * half, acc[i]);
}

/* The same sums for mr <= 2 activation rows in one pass over K: both halves of every line at
 * once (4 accumulators per row fit), so each weight line is read once, from memory, instead of
 * once per half (decode at M = 1: matvec 0.58 -> 0.92 of the read probe for q4_0x16, 0.60 ->
 * 0.74 for q8_0x16, 1 thread). Integer block dots are exact in
 * any order, and acc = fma(f32(dot), d_w * d_a, acc) runs block by block as above: the same bits.
 * q8_0x16 computes |a| here (one vpabsb per line for both halves) rather than reading the row's
 * abs: reading it was 8-10% faster with the weights in L2 but 2-9% slower in whole-model decode
 * (tg256, 2 threads, alternated). */
OMNIC_INLINE OMNIC_AVX2 void tile_x16_avx2_1pass(const uint8_t *act, const omnic__mq_layout *L, int mr,
                                                 const uint8_t *grp, int64_t nb, float *out, int64_t ldo,
                                                 bool q8)
{
    const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const size_t bsz = q8 ? OMNIC_Q8X16_BLOCK : OMNIC_Q4X16_BLOCK, soff = q8 ? 512 : 256;
    __m256 acc[2][2]; /* [row][half] */
    OMNIC_UNROLL for (int i = 0; i < 2; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = grp + (size_t)b * bsz;
        OMNIC_UNROLL for (int z = 0; z < 9; z++) /* the next blocks' lines */
        {
            if (z >= 5 && !q8) break;
            _mm_prefetch((const char *)p + X16_PF_L1 + 64 * z, _MM_HINT_T0);
            _mm_prefetch((const char *)p + X16_PF_L2 + 64 * z, _MM_HINT_T1);
        }
        const __m256 dw0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + soff)));
        const __m256 dw1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + soff + 16)));
        __m256i s[2][2]; /* [row][half]: i32 (q8) or i16 (q4) sums */
        OMNIC_UNROLL for (int i = 0; i < 2; i++) s[i][0] = s[i][1] = _mm256_setzero_si256();
        int32_t a4[2][8];
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
            memcpy(a4[i], act + (size_t)i * L->bytes + (size_t)b * OMNIC_QK, 32);
        if (q8) {
            OMNIC_UNROLL for (int c = 0; c < 8; c++)
            {
                const __m256i w0 = _mm256_loadu_si256((const __m256i *)(p + 64 * c));
                const __m256i w1 = _mm256_loadu_si256((const __m256i *)(p + 64 * c + 32));
                OMNIC_UNROLL for (int i = 0; i < mr; i++)
                {
                    const __m256i a = _mm256_set1_epi32(a4[i][c]), aa = _mm256_abs_epi8(a);
                    s[i][0] = _mm256_add_epi32(
                        s[i][0], _mm256_madd_epi16(_mm256_maddubs_epi16(aa, _mm256_sign_epi8(w0, a)), ones));
                    s[i][1] = _mm256_add_epi32(
                        s[i][1], _mm256_madd_epi16(_mm256_maddubs_epi16(aa, _mm256_sign_epi8(w1, a)), ones));
                }
            }
        } else {
            OMNIC_UNROLL for (int c = 0; c < 4; c++)
            {
                const __m256i x0 = _mm256_loadu_si256((const __m256i *)(p + 64 * c));
                const __m256i x1 = _mm256_loadu_si256((const __m256i *)(p + 64 * c + 32));
                const __m256i l0 = _mm256_and_si256(x0, low4),
                              h0 = _mm256_and_si256(_mm256_srli_epi16(x0, 4), low4);
                const __m256i l1 = _mm256_and_si256(x1, low4),
                              h1 = _mm256_and_si256(_mm256_srli_epi16(x1, 4), low4);
                OMNIC_UNROLL for (int i = 0; i < mr; i++)
                {
                    const __m256i al = _mm256_set1_epi32(a4[i][c]), ah = _mm256_set1_epi32(a4[i][c + 4]);
                    s[i][0] = _mm256_add_epi16(s[i][0], _mm256_add_epi16(_mm256_maddubs_epi16(l0, al),
                                                                         _mm256_maddubs_epi16(h0, ah)));
                    s[i][1] = _mm256_add_epi16(s[i][1], _mm256_add_epi16(_mm256_maddubs_epi16(l1, al),
                                                                         _mm256_maddubs_epi16(h1, ah)));
                }
            }
        }
        OMNIC_UNROLL for (int i = 0; i < mr; i++)
        {
            const uint8_t *ar = act + (size_t)i * L->bytes;
            float da;
            memcpy(&da, ar + L->d + (size_t)b * 4, 4);
            __m256i d0 = s[i][0], d1 = s[i][1];
            if (!q8) {
                int32_t corr;
                memcpy(&corr, ar + L->corr + (size_t)b * 4, 4);
                d0 = _mm256_add_epi32(_mm256_madd_epi16(d0, ones), _mm256_set1_epi32(corr));
                d1 = _mm256_add_epi32(_mm256_madd_epi16(d1, ones), _mm256_set1_epi32(corr));
            }
            const __m256 vda = _mm256_set1_ps(da);
            acc[i][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d0), _mm256_mul_ps(dw0, vda), acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d1), _mm256_mul_ps(dw1, vda), acc[i][1]);
        }
    }
    OMNIC_UNROLL for (int i = 0; i < mr; i++)
    {
        _mm256_storeu_ps(out + i * ldo, acc[i][0]);
        _mm256_storeu_ps(out + i * ldo + 8, acc[i][1]);
    }
}

OMNIC_INLINE OMNIC_AVX2 void mq_x16_avx2(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                         const void *w, int64_t n0, int64_t n1, float *dst, int64_t N,
                                         bool q8)
{
    const int64_t nb = K / OMNIC_QK;
    const size_t ldw = (size_t)nb * (q8 ? sizeof(omnic__block_q8_0) : sizeof(omnic__block_q4_0));
    for (int64_t n = n0; n < n1; n += OMNIC_X16_ROWS) {
        const uint8_t *grp = (const uint8_t *)w + (size_t)n * ldw;
        for (int64_t i = 0; i < M; i += X16A_MR) {
            const uint8_t *a = act + (size_t)i * L->bytes;
            float *o = dst + i * N + n;
            /* one pass for the last 1-2 rows; q4_0x16 also for 3-4 (in pairs: measured 4-8% faster for
             * 4 sequences, q8_0x16 9% slower) */
            if (M - i <= (q8 ? 2 : 4)) {
                for (int64_t j = i; j < M; j += 2) {
                    const uint8_t *aj = act + (size_t)j * L->bytes;
                    if (M - j == 1)
                        tile_x16_avx2_1pass(aj, L, 1, grp, nb, dst + j * N + n, N, q8);
                    else
                        tile_x16_avx2_1pass(aj, L, 2, grp, nb, dst + j * N + n, N, q8);
                }
                continue;
            }
            for (int half = 0; half < 2; half++)
                switch (M - i < X16A_MR ? M - i : X16A_MR) {
#define X16A_TILE(R)                                                                                         \
    case R:                                                                                                  \
        tile_x16_avx2(a, L, R, grp, half, nb, o, N, q8);                                                     \
        break;
                    X16A_TILE(1)
                    X16A_TILE(2)
                    X16A_TILE(3)
                    X16A_TILE(4)
#undef X16A_TILE
                default:
                    break;
                }
        }
    }
}

static OMNIC_AVX2 void mq_x16_avx2_q4(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                      const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_x16_avx2(act, L, M, K, w, n0, n1, dst, N, false);
}
static OMNIC_AVX2 void mq_x16_avx2_q8(const uint8_t *act, const omnic__mq_layout *L, int64_t M, int64_t K,
                                      const void *w, int64_t n0, int64_t n1, float *dst, int64_t N)
{
    mq_x16_avx2(act, L, M, K, w, n0, n1, dst, N, true);
}

omnic_dtype omnic__cpu_weight_dtype(omnic_dtype dt, int64_t N, int64_t K)
{
    (void)K;
    const char *env = getenv("OMNIC_CPU_X16"); /* "0": plain q4_0 / q8_0 (benchmarks, tests) */
    if ((dt != OMNIC_DTYPE_Q4_0 && dt != OMNIC_DTYPE_Q8_0) || N % OMNIC_X16_ROWS != 0 ||
        omnic__mq_kind_get() == OMNIC_MQ_SCALAR || (env && !strcmp(env, "0")))
        return dt;
    return dt == OMNIC_DTYPE_Q4_0 ? OMNIC_DTYPE_Q4_0X16 : OMNIC_DTYPE_Q8_0X16;
}

static const mq_fn mq_table[OMNIC_MQ_KIND_COUNT][2] = {
    [OMNIC_MQ_SCALAR] = {mq_scalar_q8, mq_scalar_q4},
    [OMNIC_MQ_AVX2] = {mq_avx2_q8, mq_avx2_q4},
    [OMNIC_MQ_VNNI] = {mq_vnni_q8, mq_vnni_q4},
};
_Static_assert(sizeof mq_table / sizeof mq_table[0] == OMNIC_MQ_KIND_COUNT,
               "mq_table out of step with kinds");

/* ------------------------------------------------------------------------------------------
 * Planning and dispatch. */

typedef enum { PATH_DECODE, PATH_AMX, PATH_SGEMM } mq_path;

static mq_path path_of(const omnic__node *n)
{
    int64_t M = omnic__tensor_rows(n->src[0]);
    if (M <= OMNIC_CPU_MQ_MAX_M || n->ip[0]) return PATH_DECODE;
    if (omnic__cpu_features() & OMNIC_CPU_AMX) return PATH_AMX;
    /* without AMX, the integer decode kernel in row blocks beats dequantize + sgemm (Qwen2-1.5B
     * q4_0 pp512, AMD EPYC AVX-512 VNNI, 2 threads: 295 vs 67 tokens/s; capped to AVX2: 61 vs 65
     * with AVX-512 sgemm) */
    if (omnic__mq_kind_get() != OMNIC_MQ_SCALAR) return PATH_DECODE;
    return PATH_SGEMM;
}

/* Bytes of one thread's part of the work buffer. */
static size_t part_bytes(const omnic__node *n, mq_path path)
{
    int64_t M = omnic__tensor_rows(n->src[0]), K = omnic__tensor_cols(n->src[0]);
    if (path == PATH_DECODE) {
        omnic__mq_layout L = omnic__mq_layout_of(omnic__mq_kind_get(), n->src[1]->dtype, K);
        int64_t rows = M < OMNIC_CPU_MQ_MAX_M ? M : OMNIC_CPU_MQ_MAX_M;
        return (size_t)rows * L.bytes;
    }
    if (path == PATH_AMX) return omnic__cpu_matmul_amx_part(M, K, n->src[1]->dtype);
    omnic__mq_layout L = omnic__mq_layout_of(OMNIC_MQ_SCALAR, n->src[1]->dtype, K);
    return (size_t)M * L.bytes + align64((size_t)QG_MB * (size_t)K * sizeof(float)) +
           align64((size_t)QG_NC * (size_t)K * sizeof(float));
}

size_t omnic__cpu_matmul_q_wsize(const omnic__node *n, int nth)
{
    return part_bytes(n, path_of(n)) * (size_t)nth;
}

/* Prefill without AMX: dequantized weight chunks x dequantized activation row blocks, sgemm. */
static void sgemm_path(const omnic__node *n, int ith, int nth, uint8_t *part)
{
    const omnic__tensor *a = n->src[0], *w = n->src[1], *b = n->src[2];
    const int64_t M = omnic__tensor_rows(a), K = omnic__tensor_cols(a), N = w->dims[0];
    const float *bias = b ? (const float *)b->data : NULL;
    float *dst = n->dst->data;
    const omnic__mq_kind kind = omnic__mq_kind_get();
    const omnic__mq_layout L = omnic__mq_layout_of(OMNIC_MQ_SCALAR, w->dtype, K); /* plain q + d rows */
    float *af = (float *)(part + (size_t)M * L.bytes);
    float *wf = (float *)((uint8_t *)af + align64((size_t)QG_MB * (size_t)K * sizeof(float)));
    for (int64_t i = 0; i < M; i++) {
        uint8_t *r = part + (size_t)i * L.bytes;
        omnic__mq_quant_row(kind, (const float *)a->data + i * K, (int8_t *)r, (float *)(r + L.d), K);
    }
    int64_t c0, c1;
    omnic__split_rows(cdiv(N, QG_NC), ith, nth, &c0, &c1);
    for (int64_t ci = c0; ci < c1; ci++) {
        int64_t n0 = ci * QG_NC, nc = N - n0 < QG_NC ? N - n0 : QG_NC;
        for (int64_t j = 0; j < nc; j++)
            omnic__dequantize_weight_row(w->dtype, w->data, n0 + j, K, wf + j * K);
        for (int64_t m0 = 0; m0 < M; m0 += QG_MB) {
            int64_t mb = M - m0 < QG_MB ? M - m0 : QG_MB;
            for (int64_t i = 0; i < mb; i++) {
                const uint8_t *r = part + (size_t)(m0 + i) * L.bytes;
                const int8_t *q = (const int8_t *)r;
                const float *d = (const float *)(r + L.d);
                for (int64_t k = 0; k < K; k++)
                    af[i * K + k] = d[k / OMNIC_QK] * (float)q[k];
            }
            omnic__cpu_sgemm(af, K, mb, wf, nc, dst + m0 * N + n0, N, bias ? bias + n0 : NULL);
        }
    }
}

void omnic__cpu_matmul_q(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__tensor *a = n->src[0], *w = n->src[1], *b = n->src[2];
    const int64_t M = omnic__tensor_rows(a), K = omnic__tensor_cols(a), N = w->dims[0];
    const mq_path path = path_of(n);
    uint8_t *part = omnic__cpu_wpart(wdata, part_bytes(n, path), ith);
    if (path == PATH_AMX) {
        omnic__cpu_matmul_amx(n, ith, nth, part);
        return;
    }
    if (path == PATH_SGEMM) {
        sgemm_path(n, ith, nth, part);
        return;
    }
    const omnic__mq_kind kind = omnic__mq_kind_get();
    const omnic__mq_layout L = omnic__mq_layout_of(kind, w->dtype, K);
    const float *bias = b ? (const float *)b->data : NULL;
    const bool x16 = omnic__x16_plain(w->dtype) != OMNIC_DTYPE_COUNT; /* threads take whole groups */
    const bool q8x = w->dtype == OMNIC_DTYPE_Q8_0X16;
    const int64_t unit = x16 ? OMNIC_X16_ROWS : 1;
    const mq_fn fn = !x16                    ? mq_table[kind][w->dtype == OMNIC_DTYPE_Q4_0]
                     : kind == OMNIC_MQ_VNNI ? (q8x ? mq_x16_vnni_q8 : mq_x16_vnni_q4)
                     : kind == OMNIC_MQ_AVX2 ? (q8x ? mq_x16_avx2_q8 : mq_x16_avx2_q4)
                                             : (q8x ? mq_x16_scalar_q8 : mq_x16_scalar_q4);
    /* chunks of MQ_CHUNK weight rows (whole groups) by blocks of activation rows, block-major; a
     * thread quantizes a block's rows when it takes its first chunk of it (its chunks come in
     * order) */
    const int64_t cw = MQ_CHUNK / unit * unit, ncc = cdiv(N, cw), nblk = cdiv(M, OMNIC_CPU_MQ_MAX_M);
    omnic__chunks ch;
    int64_t c, cur = -1;
    omnic__chunks_begin(&ch, nblk * ncc, ith, nth);
    while (omnic__chunks_next(&ch, &c)) {
        const omnic__cpu_tile t = omnic__cpu_tile_at(c, M, OMNIC_CPU_MQ_MAX_M, N, cw, ncc);
        float *d = (float *)n->dst->data + t.i0 * N;
        if (t.blk != cur) {
            quant_rows(kind, w->dtype, (const float *)a->data + t.i0 * K, t.mb, K, part, &L);
            cur = t.blk;
        }
        fn(part, &L, t.mb, K, w->data, t.n0, t.n1, d, N);
        if (bias) omnic__cpu_add_bias(bias + t.n0, d + t.n0, N, t.mb, t.n1 - t.n0);
    }
}
