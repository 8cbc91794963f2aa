/* Row primitives for AVX2 + FMA + F16C (8 lanes). Tails use masked loads and stores
 * (f32) or the exact scalar conversions (f16/bf16), so results never depend on where a
 * row is cut. Every function here runs only when omnic__cpu_isa_level() >= AVX2. */
#include <math.h>

#include "backend/cpu/vec.h"
#include "core/dtype.h"

/* Lanes [0, r) set, r in 0..8. */
OMNIC_INLINE OMNIC_AVX2 __m256i tail8(int64_t r)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* y[i] = EXPR, with v = x[i] (8 lanes). */
#define MAP1(NAME, EXPR, ...)                                                                                \
    static OMNIC_AVX2 void NAME(const float *x, __VA_ARGS__ float *y, int64_t n)                             \
    {                                                                                                        \
        int64_t i = 0;                                                                                       \
        for (; i + 8 <= n; i += 8) {                                                                         \
            __m256 v = _mm256_loadu_ps(x + i);                                                               \
            _mm256_storeu_ps(y + i, (EXPR));                                                                 \
        }                                                                                                    \
        if (i < n) {                                                                                         \
            __m256i m = tail8(n - i);                                                                        \
            __m256 v = _mm256_maskload_ps(x + i, m);                                                         \
            _mm256_maskstore_ps(y + i, m, (EXPR));                                                           \
        }                                                                                                    \
    }

/* y[i] = EXPR, with va = a[i], vb = b[i]. */
#define MAP2(NAME, EXPR)                                                                                     \
    static OMNIC_AVX2 void NAME(const float *a, const float *b, float *y, int64_t n)                         \
    {                                                                                                        \
        int64_t i = 0;                                                                                       \
        for (; i + 8 <= n; i += 8) {                                                                         \
            __m256 va = _mm256_loadu_ps(a + i), vb = _mm256_loadu_ps(b + i);                                 \
            _mm256_storeu_ps(y + i, (EXPR));                                                                 \
        }                                                                                                    \
        if (i < n) {                                                                                         \
            __m256i m = tail8(n - i);                                                                        \
            __m256 va = _mm256_maskload_ps(a + i, m), vb = _mm256_maskload_ps(b + i, m);                     \
            _mm256_maskstore_ps(y + i, m, (EXPR));                                                           \
        }                                                                                                    \
    }

OMNIC_INLINE OMNIC_AVX2 __m256 neg8(__m256 v)
{
    return _mm256_xor_ps(v, _mm256_set1_ps(-0.0f));
}
OMNIC_INLINE OMNIC_AVX2 __m256 one8(void)
{
    return _mm256_set1_ps(1.0f);
}

OMNIC_INLINE OMNIC_AVX2 __m256 silu8(__m256 v)
{
    return _mm256_div_ps(v, _mm256_add_ps(one8(), omnic__exp256(neg8(v))));
}
OMNIC_INLINE OMNIC_AVX2 __m256 gelu_tanh8(__m256 v)
{
    __m256 c3 = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), v), v), v);
    __m256 t = omnic__tanh256(_mm256_mul_ps(_mm256_set1_ps(OMNIC_GELU_K), _mm256_add_ps(v, c3)));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(one8(), t));
}
OMNIC_INLINE OMNIC_AVX2 __m256 gelu_quick8(__m256 v)
{
    return _mm256_div_ps(v, _mm256_add_ps(one8(), omnic__exp256(_mm256_mul_ps(_mm256_set1_ps(-1.702f), v))));
}

MAP2(add_v, _mm256_add_ps(va, vb))
MAP2(mul_v, _mm256_mul_ps(va, vb))
MAP2(swiglu_v, _mm256_mul_ps(silu8(va), vb))
MAP2(geglu_tanh_v, _mm256_mul_ps(gelu_tanh8(va), vb))
MAP1(add1_v, _mm256_add_ps(v, _mm256_set1_ps(b)), float b, )
MAP1(mul1_v, _mm256_mul_ps(v, _mm256_set1_ps(b)), float b, )
MAP1(scale_v, _mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps(s)), _mm256_set1_ps(b)), float s, float b, )
MAP1(silu_v, silu8(v), )
MAP1(gelu_tanh_v, gelu_tanh8(v), )
MAP1(gelu_quick_v, gelu_quick8(v), )
MAP1(softcap_v, _mm256_mul_ps(omnic__tanh256(_mm256_div_ps(v, _mm256_set1_ps(c))), _mm256_set1_ps(c)),
     float c, )

static OMNIC_AVX2 void axpy_v(float a, const float *x, float *y, int64_t n)
{
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    if (i < n) {
        __m256i m = tail8(n - i);
        _mm256_maskstore_ps(y + i, m,
                            _mm256_fmadd_ps(va, _mm256_maskload_ps(x + i, m), _mm256_maskload_ps(y + i, m)));
    }
}

static OMNIC_AVX2 float dot_v(const float *a, const float *b, int64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(),
           s3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    if (i < n) {
        __m256i m = tail8(n - i);
        s0 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s0);
    }
    return omnic__hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

static OMNIC_AVX2 float sum_v(const float *x, int64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
    if (i < n) s0 = _mm256_add_ps(s0, _mm256_maskload_ps(x + i, tail8(n - i)));
    return omnic__hsum256(_mm256_add_ps(s0, s1));
}

static OMNIC_AVX2 float sumsq_v(const float *x, int64_t n)
{
    return dot_v(x, x, n);
}

static OMNIC_AVX2 float max_v(const float *x, int64_t n)
{
    __m256 mx = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + i));
    if (i < n) {
        __m256i m = tail8(n - i);
        __m256 v =
            _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m));
        mx = _mm256_max_ps(mx, v);
    }
    return omnic__hmax256(mx);
}

/* s[u*lds + j] = q[u] . k_j for u < mr (<= 2), j < nr (<= 4); one 8-lane chain per pair. */
OMNIC_INLINE OMNIC_AVX2 void dot_tile(const float *const *q, const float *k, int64_t ldk, int64_t D, float *s,
                                      int64_t lds, int mr, int nr)
{
    __m256 acc[2][4];
    OMNIC_UNROLL for (int u = 0; u < mr; u++) OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[u][j] =
        _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
        __m256 kv[4];
        OMNIC_UNROLL for (int j = 0; j < nr; j++) kv[j] = _mm256_loadu_ps(k + j * ldk + d);
        OMNIC_UNROLL for (int u = 0; u < mr; u++)
        {
            __m256 qv = _mm256_loadu_ps(q[u] + d);
            OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[u][j] = _mm256_fmadd_ps(qv, kv[j], acc[u][j]);
        }
    }
    if (d < D) {
        __m256i m = tail8(D - d);
        __m256 kv[4];
        OMNIC_UNROLL for (int j = 0; j < nr; j++) kv[j] = _mm256_maskload_ps(k + j * ldk + d, m);
        OMNIC_UNROLL for (int u = 0; u < mr; u++)
        {
            __m256 qv = _mm256_maskload_ps(q[u] + d, m);
            OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[u][j] = _mm256_fmadd_ps(qv, kv[j], acc[u][j]);
        }
    }
    OMNIC_UNROLL for (int u = 0; u < mr; u++) OMNIC_UNROLL for (int j = 0; j < nr; j++) s[u * lds + j] =
        omnic__hsum256(acc[u][j]);
}

#define DOT_TILE_CASES(q, k, mr)                                                                             \
    do {                                                                                                     \
        int64_t j = 0;                                                                                       \
        for (; j + 4 <= nk; j += 4)                                                                          \
            dot_tile(q, k + j * ldk, ldk, D, s + j, lds, mr, 4);                                             \
        for (; j < nk; j++)                                                                                  \
            dot_tile(q, k + j * ldk, ldk, D, s + j, lds, mr, 1);                                             \
    } while (0)

static OMNIC_AVX2 void dot_rows_v(const float *const *q, int64_t nq, const float *k, int64_t ldk, int64_t nk,
                                  int64_t D, float *s0, int64_t lds)
{
    int64_t u = 0;
    for (; u + 2 <= nq; u += 2) {
        float *s = s0 + u * lds;
        DOT_TILE_CASES(q + u, k, 2);
    }
    for (; u < nq; u++) {
        float *s = s0 + u * lds;
        DOT_TILE_CASES(q + u, k, 1);
    }
}

/* acc rows u < mr (<= 6), columns [d, d + 16) under masks m0, m1: += p[u][j] * v_j, j ascending.
 * 6 rows: 12 accumulators + 2 V vectors + a broadcast fill the 16 ymm registers (12 FMAs per 2
 * loads); full column blocks load unmasked. */
#define ATT_MR 6

OMNIC_INLINE OMNIC_AVX2 void pv_tile(const float *p, int64_t ldp, const float *v, int64_t ldv, int64_t nk,
                                     float *acc, int64_t lda, __m256i m0, __m256i m1, bool full, int mr)
{
    __m256 a0[ATT_MR], a1[ATT_MR];
    OMNIC_UNROLL for (int u = 0; u < mr; u++)
    {
        a0[u] = _mm256_maskload_ps(acc + u * lda, m0);
        a1[u] = _mm256_maskload_ps(acc + u * lda + 8, m1);
    }
    for (int64_t j = 0; j < nk; j++) {
        __m256 v0, v1;
        if (full) {
            v0 = _mm256_loadu_ps(v + j * ldv);
            v1 = _mm256_loadu_ps(v + j * ldv + 8);
        } else {
            v0 = _mm256_maskload_ps(v + j * ldv, m0);
            v1 = _mm256_maskload_ps(v + j * ldv + 8, m1);
        }
        OMNIC_UNROLL for (int u = 0; u < mr; u++)
        {
            __m256 pb = _mm256_set1_ps(p[u * ldp + j]);
            a0[u] = _mm256_fmadd_ps(pb, v0, a0[u]);
            a1[u] = _mm256_fmadd_ps(pb, v1, a1[u]);
        }
    }
    OMNIC_UNROLL for (int u = 0; u < mr; u++)
    {
        _mm256_maskstore_ps(acc + u * lda, m0, a0[u]);
        _mm256_maskstore_ps(acc + u * lda + 8, m1, a1[u]);
    }
}

static OMNIC_AVX2 void pv_rows_v(const float *p, int64_t ldp, int64_t nq, const float *v, int64_t ldv,
                                 int64_t nk, int64_t Dv, float *acc, int64_t lda)
{
    for (int64_t d = 0; d < Dv; d += 16) {
        __m256i m0 = tail8(Dv - d >= 8 ? 8 : Dv - d);
        __m256i m1 = tail8(Dv - d > 8 ? (Dv - d - 8 >= 8 ? 8 : Dv - d - 8) : 0);
        const bool full = Dv - d >= 16;
        int64_t u = 0;
        for (; u + ATT_MR <= nq; u += ATT_MR)
            pv_tile(p + u * ldp, ldp, v + d, ldv, nk, acc + u * lda + d, lda, m0, m1, full, ATT_MR);
        for (; u < nq; u++)
            pv_tile(p + u * ldp, ldp, v + d, ldv, nk, acc + u * lda + d, lda, m0, m1, full, 1);
    }
}

/* s rows u < mr (<= 6), keys [0, 16) under masks m0, m1: += q[u][d] * kt[d][j], d ascending. */
OMNIC_INLINE OMNIC_AVX2 void dot_t_tile(const float *const *q, const float *kt, int64_t ldk, int64_t D,
                                        float *s, int64_t lds, __m256i m0, __m256i m1, bool full, int mr)
{
    __m256 a0[ATT_MR], a1[ATT_MR];
    OMNIC_UNROLL for (int u = 0; u < mr; u++) a0[u] = a1[u] = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; d++) {
        __m256 k0, k1;
        if (full) {
            k0 = _mm256_loadu_ps(kt + d * ldk);
            k1 = _mm256_loadu_ps(kt + d * ldk + 8);
        } else {
            k0 = _mm256_maskload_ps(kt + d * ldk, m0);
            k1 = _mm256_maskload_ps(kt + d * ldk + 8, m1);
        }
        OMNIC_UNROLL for (int u = 0; u < mr; u++)
        {
            __m256 qb = _mm256_broadcast_ss(q[u] + d);
            a0[u] = _mm256_fmadd_ps(qb, k0, a0[u]);
            a1[u] = _mm256_fmadd_ps(qb, k1, a1[u]);
        }
    }
    OMNIC_UNROLL for (int u = 0; u < mr; u++)
    {
        _mm256_maskstore_ps(s + u * lds, m0, a0[u]);
        _mm256_maskstore_ps(s + u * lds + 8, m1, a1[u]);
    }
}

static OMNIC_AVX2 void dot_rows_t_v(const float *const *q, int64_t nq, const float *kt, int64_t ldk,
                                    int64_t nk, int64_t D, float *s, int64_t lds)
{
    for (int64_t j = 0; j < nk; j += 16) {
        int64_t r = nk - j;
        __m256i m0 = tail8(r >= 8 ? 8 : r), m1 = tail8(r >= 16 ? 8 : r > 8 ? r - 8 : 0);
        int64_t u = 0;
        for (; u + ATT_MR <= nq; u += ATT_MR)
            dot_t_tile(q + u, kt + j, ldk, D, s + u * lds + j, lds, m0, m1, r >= 16, ATT_MR);
        for (; u < nq; u++)
            dot_t_tile(q + u, kt + j, ldk, D, s + u * lds + j, lds, m0, m1, r >= 16, 1);
    }
}

static OMNIC_AVX2 float exp_sum_v(const float *x, float mval, float *y, int64_t n)
{
    __m256 vm = _mm256_set1_ps(mval), s = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = omnic__exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(y + i, e);
        s = _mm256_add_ps(s, e);
    }
    if (i < n) {
        __m256i m = tail8(n - i);
        __m256 e = omnic__exp256(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), vm));
        e = _mm256_and_ps(e, _mm256_castsi256_ps(m));
        _mm256_maskstore_ps(y + i, m, e);
        s = _mm256_add_ps(s, e);
    }
    return omnic__hsum256(s);
}

/* mul1 then max in one pass: the same products and the same max chain as the two calls. */
static OMNIC_AVX2 float scale_max_v(float *x, float s, int64_t n)
{
    const __m256 vs = _mm256_set1_ps(s);
    __m256 mx = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
        _mm256_storeu_ps(x + i, v);
        mx = _mm256_max_ps(mx, v);
    }
    if (i < n) {
        const __m256i m = tail8(n - i);
        const __m256 v = _mm256_mul_ps(_mm256_maskload_ps(x + i, m), vs);
        _mm256_maskstore_ps(x + i, m, v);
        mx = _mm256_max_ps(mx, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), v, _mm256_castsi256_ps(m)));
    }
    return omnic__hmax256(mx);
}
static OMNIC_AVX2 bool softmax_tile_v(float *s, int64_t lds, int64_t nq, int64_t n, float scale, float *m,
                                      float *l, float *r)
{
    return omnic__softmax_tile(s, lds, nq, n, scale, m, l, r, scale_max_v, exp_sum_v);
}

static OMNIC_AVX2 void f16_to_f32_v(const uint16_t *x, float *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, omnic__ld_f16x8(x + i));
    for (; i < n; i++)
        y[i] = omnic__f16_to_f32(x[i]);
}
static OMNIC_AVX2 void bf16_to_f32_v(const uint16_t *x, float *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, omnic__ld_bf16x8(x + i));
    for (; i < n; i++)
        y[i] = omnic__bf16_to_f32(x[i]);
}
static OMNIC_AVX2 void f32_to_f16_v(const float *x, uint16_t *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        y[i] = omnic__f32_to_f16(x[i]);
}
static OMNIC_AVX2 void f32_to_bf16_v(const float *x, uint16_t *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), omnic__cvt_bf16x8(_mm256_loadu_ps(x + i)));
    for (; i < n; i++)
        y[i] = omnic__f32_to_bf16(x[i]);
}

const omnic__cpu_vec omnic__cpu_vec_avx2 = {
    .name = "avx2",
    .dot = dot_v,
    .sum = sum_v,
    .sumsq = sumsq_v,
    .max = max_v,
    .add = add_v,
    .mul = mul_v,
    .add1 = add1_v,
    .mul1 = mul1_v,
    .scale = scale_v,
    .axpy = axpy_v,
    .dot_rows = dot_rows_v,
    .pv_rows = pv_rows_v,
    .dot_rows_t = dot_rows_t_v,
    .exp_sum = exp_sum_v,
    .softmax_tile = softmax_tile_v,
    .silu = silu_v,
    .gelu_tanh = gelu_tanh_v,
    .gelu_quick = gelu_quick_v,
    .softcap = softcap_v,
    .swiglu = swiglu_v,
    .geglu_tanh = geglu_tanh_v,
    .f16_to_f32 = f16_to_f32_v,
    .bf16_to_f32 = bf16_to_f32_v,
    .f32_to_f16 = f32_to_f16_v,
    .f32_to_bf16 = f32_to_bf16_v,
};
