/* Row primitives for AVX-512 F/BW/VL/DQ (16 lanes). Tails use masked loads and stores,
 * so results never depend on where a row is cut. Every function here runs only when
 * omnic__cpu_isa_level() == AVX512. */
#include <math.h>

#include "backend/cpu/vec.h"
#include "core/dtype.h"

/* y[i] = EXPR, with v = x[i] (16 lanes). */
#define MAP1(NAME, EXPR, ...)                                                                                \
    static OMNIC_AVX512 void NAME(const float *x, __VA_ARGS__ float *y, int64_t n)                           \
    {                                                                                                        \
        int64_t i = 0;                                                                                       \
        for (; i + 16 <= n; i += 16) {                                                                       \
            __m512 v = _mm512_loadu_ps(x + i);                                                               \
            _mm512_storeu_ps(y + i, (EXPR));                                                                 \
        }                                                                                                    \
        if (i < n) {                                                                                         \
            __mmask16 m = omnic__mask16(n - i);                                                              \
            __m512 v = _mm512_maskz_loadu_ps(m, x + i);                                                      \
            _mm512_mask_storeu_ps(y + i, m, (EXPR));                                                         \
        }                                                                                                    \
    }

/* y[i] = EXPR, with va = a[i], vb = b[i]. */
#define MAP2(NAME, EXPR)                                                                                     \
    static OMNIC_AVX512 void NAME(const float *a, const float *b, float *y, int64_t n)                       \
    {                                                                                                        \
        int64_t i = 0;                                                                                       \
        for (; i + 16 <= n; i += 16) {                                                                       \
            __m512 va = _mm512_loadu_ps(a + i), vb = _mm512_loadu_ps(b + i);                                 \
            _mm512_storeu_ps(y + i, (EXPR));                                                                 \
        }                                                                                                    \
        if (i < n) {                                                                                         \
            __mmask16 m = omnic__mask16(n - i);                                                              \
            __m512 va = _mm512_maskz_loadu_ps(m, a + i), vb = _mm512_maskz_loadu_ps(m, b + i);               \
            _mm512_mask_storeu_ps(y + i, m, (EXPR));                                                         \
        }                                                                                                    \
    }

OMNIC_INLINE OMNIC_AVX512 __m512 neg16(__m512 v)
{
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u)));
}
OMNIC_INLINE OMNIC_AVX512 __m512 one16(void)
{
    return _mm512_set1_ps(1.0f);
}

OMNIC_INLINE OMNIC_AVX512 __m512 silu16(__m512 v)
{
    return _mm512_div_ps(v, _mm512_add_ps(one16(), omnic__exp512(neg16(v))));
}
OMNIC_INLINE OMNIC_AVX512 __m512 gelu_tanh16(__m512 v)
{
    __m512 c3 = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.044715f), v), v), v);
    __m512 t = omnic__tanh512(_mm512_mul_ps(_mm512_set1_ps(OMNIC_GELU_K), _mm512_add_ps(v, c3)));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(one16(), t));
}
OMNIC_INLINE OMNIC_AVX512 __m512 gelu_quick16(__m512 v)
{
    return _mm512_div_ps(v, _mm512_add_ps(one16(), omnic__exp512(_mm512_mul_ps(_mm512_set1_ps(-1.702f), v))));
}

MAP2(add_v, _mm512_add_ps(va, vb))
MAP2(mul_v, _mm512_mul_ps(va, vb))
MAP2(swiglu_v, _mm512_mul_ps(silu16(va), vb))
MAP2(geglu_tanh_v, _mm512_mul_ps(gelu_tanh16(va), vb))
MAP1(add1_v, _mm512_add_ps(v, _mm512_set1_ps(b)), float b, )
MAP1(mul1_v, _mm512_mul_ps(v, _mm512_set1_ps(b)), float b, )
MAP1(scale_v, _mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(s)), _mm512_set1_ps(b)), float s, float b, )
MAP1(silu_v, silu16(v), )
MAP1(gelu_tanh_v, gelu_tanh16(v), )
MAP1(gelu_quick_v, gelu_quick16(v), )
MAP1(softcap_v, _mm512_mul_ps(omnic__tanh512(_mm512_div_ps(v, _mm512_set1_ps(c))), _mm512_set1_ps(c)),
     float c, )

static OMNIC_AVX512 void axpy_v(float a, const float *x, float *y, int64_t n)
{
    __m512 va = _mm512_set1_ps(a);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        __mmask16 m = omnic__mask16(n - i);
        _mm512_mask_storeu_ps(
            y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
    }
}

static OMNIC_AVX512 float dot_v(const float *a, const float *b, int64_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(),
           s3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i + 16 <= n; i += 16)
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    if (i < n) {
        __mmask16 m = omnic__mask16(n - i);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static OMNIC_AVX512 float sum_v(const float *x, int64_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
        s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + i + 16));
    }
    for (; i + 16 <= n; i += 16)
        s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
    if (i < n) s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(omnic__mask16(n - i), x + i));
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static OMNIC_AVX512 float sumsq_v(const float *x, int64_t n)
{
    return dot_v(x, x, n);
}

static OMNIC_AVX512 float max_v(const float *x, int64_t n)
{
    __m512 mx = _mm512_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        mx = _mm512_max_ps(mx, _mm512_loadu_ps(x + i));
    if (i < n)
        mx = _mm512_mask_max_ps(mx, omnic__mask16(n - i), mx,
                                _mm512_maskz_loadu_ps(omnic__mask16(n - i), x + i));
    return _mm512_reduce_max_ps(mx);
}

/* s[u*lds + j] = q[u] . k_j for u < mr, j < nr (<= 4 each); one 16-lane chain per pair. */
OMNIC_INLINE OMNIC_AVX512 void dot_tile(const float *const *q, const float *k, int64_t ldk, int64_t D,
                                        float *s, int64_t lds, int mr, int nr)
{
    __m512 acc[4][4];
    OMNIC_UNROLL for (int u = 0; u < mr; u++) OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[u][j] =
        _mm512_setzero_ps();
    int64_t d = 0;
    for (; d + 16 <= D; d += 16) {
        __m512 kv[4];
        OMNIC_UNROLL for (int j = 0; j < nr; j++) kv[j] = _mm512_loadu_ps(k + j * ldk + d);
        OMNIC_UNROLL for (int u = 0; u < mr; u++)
        {
            __m512 qv = _mm512_loadu_ps(q[u] + d);
            OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[u][j] = _mm512_fmadd_ps(qv, kv[j], acc[u][j]);
        }
    }
    if (d < D) {
        __mmask16 m = omnic__mask16(D - d);
        __m512 kv[4];
        OMNIC_UNROLL for (int j = 0; j < nr; j++) kv[j] = _mm512_maskz_loadu_ps(m, k + j * ldk + d);
        OMNIC_UNROLL for (int u = 0; u < mr; u++)
        {
            __m512 qv = _mm512_maskz_loadu_ps(m, q[u] + d);
            OMNIC_UNROLL for (int j = 0; j < nr; j++) acc[u][j] = _mm512_fmadd_ps(qv, kv[j], acc[u][j]);
        }
    }
    OMNIC_UNROLL for (int u = 0; u < mr; u++) OMNIC_UNROLL for (int j = 0; j < nr; j++) s[u * lds + j] =
        _mm512_reduce_add_ps(acc[u][j]);
}

#define DOT_TILE_CASES(q, k, mr)                                                                             \
    do {                                                                                                     \
        int64_t j = 0;                                                                                       \
        for (; j + 4 <= nk; j += 4)                                                                          \
            dot_tile(q, k + j * ldk, ldk, D, s + j, lds, mr, 4);                                             \
        for (; j < nk; j++)                                                                                  \
            dot_tile(q, k + j * ldk, ldk, D, s + j, lds, mr, 1);                                             \
    } while (0)

static OMNIC_AVX512 void dot_rows_v(const float *const *q, int64_t nq, const float *k, int64_t ldk,
                                    int64_t nk, int64_t D, float *s0, int64_t lds)
{
    int64_t u = 0;
    for (; u + 4 <= nq; u += 4) {
        float *s = s0 + u * lds;
        DOT_TILE_CASES(q + u, k, 4);
    }
    for (; u < nq; u++) {
        float *s = s0 + u * lds;
        DOT_TILE_CASES(q + u, k, 1);
    }
}

/* acc rows u < mr (<= 4), columns [d, d + 16 nv) (nv <= 5 vectors, masks m[0..nv-1]):
 * += p[u][j] * v_j, j ascending. */
OMNIC_INLINE OMNIC_AVX512 void pv_tile(const float *p, int64_t ldp, const float *v, int64_t ldv, int64_t nk,
                                       float *acc, int64_t lda, const __mmask16 *m, int nv, int mr)
{
    __m512 a[4][5];
    OMNIC_UNROLL for (int u = 0; u < mr; u++) OMNIC_UNROLL for (int c = 0; c < nv; c++) a[u][c] =
        _mm512_maskz_loadu_ps(m[c], acc + u * lda + 16 * c);
    for (int64_t j = 0; j < nk; j++) {
        __m512 vv[5];
        OMNIC_UNROLL for (int c = 0; c < nv; c++) vv[c] = _mm512_maskz_loadu_ps(m[c], v + j * ldv + 16 * c);
        OMNIC_UNROLL for (int u = 0; u < mr; u++)
        {
            __m512 pb = _mm512_set1_ps(p[u * ldp + j]);
            OMNIC_UNROLL for (int c = 0; c < nv; c++) a[u][c] = _mm512_fmadd_ps(pb, vv[c], a[u][c]);
        }
    }
    OMNIC_UNROLL for (int u = 0; u < mr; u++) OMNIC_UNROLL for (int c = 0; c < nv; c++)
        _mm512_mask_storeu_ps(acc + u * lda + 16 * c, m[c], a[u][c]);
}

#define PV_TILE_ROWS(NV)                                                                                     \
    do {                                                                                                     \
        int64_t u = 0;                                                                                       \
        for (; u + 4 <= nq; u += 4)                                                                          \
            pv_tile(p + u * ldp, ldp, v + d, ldv, nk, acc + u * lda + d, lda, m, NV, 4);                     \
        for (; u < nq; u++)                                                                                  \
            pv_tile(p + u * ldp, ldp, v + d, ldv, nk, acc + u * lda + d, lda, m, NV, 1);                     \
    } while (0)

/* Columns in passes of up to 5 vectors (80 floats), the vectors spread evenly over the passes
 * (Dv 80: one pass of 5; 128: two of 4), so each V row is loaded once per pass. */
static OMNIC_AVX512 void pv_rows_v(const float *p, int64_t ldp, int64_t nq, const float *v, int64_t ldv,
                                   int64_t nk, int64_t Dv, float *acc, int64_t lda)
{
    const int64_t nvec = (Dv + 15) / 16, passes = (nvec + 4) / 5;
    for (int64_t d = 0, left = nvec, pass = 0; d < Dv; pass++) {
        const int nv = (int)((left + (passes - pass) - 1) / (passes - pass)); /* ceil(left / passes left) */
        __mmask16 m[5];
        for (int c = 0; c < 5; c++) {
            int64_t r = Dv - d - 16 * c;
            m[c] = c >= nv || r <= 0 ? 0 : r >= 16 ? (__mmask16)0xffff : omnic__mask16(r);
        }
        switch (nv) {
        case 1:
            PV_TILE_ROWS(1);
            break;
        case 2:
            PV_TILE_ROWS(2);
            break;
        case 3:
            PV_TILE_ROWS(3);
            break;
        case 4:
            PV_TILE_ROWS(4);
            break;
        default:
            PV_TILE_ROWS(5);
            break;
        }
        d += 16 * nv;
        left -= nv;
    }
}

/* s rows u < mr (<= 4), keys [0, 64) under masks m[0..3]: += q[u][d] * kt[d][j], d ascending. */
OMNIC_INLINE OMNIC_AVX512 void dot_t_tile(const float *const *q, const float *kt, int64_t ldk, int64_t D,
                                          float *s, int64_t lds, const __mmask16 *m, int mr)
{
    __m512 acc[4][4];
    OMNIC_UNROLL for (int u = 0; u < mr; u++) OMNIC_UNROLL for (int c = 0; c < 4; c++) acc[u][c] =
        _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d++) {
        __m512 kv[4];
        OMNIC_UNROLL for (int c = 0; c < 4; c++) kv[c] = _mm512_maskz_loadu_ps(m[c], kt + d * ldk + 16 * c);
        OMNIC_UNROLL for (int u = 0; u < mr; u++)
        {
            __m512 qb = _mm512_set1_ps(q[u][d]);
            OMNIC_UNROLL for (int c = 0; c < 4; c++) acc[u][c] = _mm512_fmadd_ps(qb, kv[c], acc[u][c]);
        }
    }
    OMNIC_UNROLL for (int u = 0; u < mr; u++) OMNIC_UNROLL for (int c = 0; c < 4; c++)
        _mm512_mask_storeu_ps(s + u * lds + 16 * c, m[c], acc[u][c]);
}

static OMNIC_AVX512 void dot_rows_t_v(const float *const *q, int64_t nq, const float *kt, int64_t ldk,
                                      int64_t nk, int64_t D, float *s, int64_t lds)
{
    for (int64_t j = 0; j < nk; j += 64) {
        __mmask16 m[4];
        for (int c = 0; c < 4; c++) {
            int64_t r = nk - j - 16 * c;
            m[c] = r >= 16 ? (__mmask16)0xffff : r > 0 ? omnic__mask16(r) : 0;
        }
        int64_t u = 0;
        for (; u + 4 <= nq; u += 4)
            dot_t_tile(q + u, kt + j, ldk, D, s + u * lds + j, lds, m, 4);
        for (; u < nq; u++)
            dot_t_tile(q + u, kt + j, ldk, D, s + u * lds + j, lds, m, 1);
    }
}

static OMNIC_AVX512 float exp_sum_v(const float *x, float mval, float *y, int64_t n)
{
    __m512 vm = _mm512_set1_ps(mval), s = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 e = omnic__exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
        _mm512_storeu_ps(y + i, e);
        s = _mm512_add_ps(s, e);
    }
    if (i < n) {
        __mmask16 m = omnic__mask16(n - i);
        __m512 e = _mm512_maskz_mov_ps(m, omnic__exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm)));
        _mm512_mask_storeu_ps(y + i, m, e);
        s = _mm512_add_ps(s, e);
    }
    return _mm512_reduce_add_ps(s);
}

static OMNIC_AVX512 void f16_to_f32_v(const uint16_t *x, float *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, omnic__ld_f16x16(x + i));
    if (i < n)
        _mm512_mask_storeu_ps(y + i, omnic__mask16(n - i), omnic__ld_f16x16_m(x + i, omnic__mask16(n - i)));
}
static OMNIC_AVX512 void bf16_to_f32_v(const uint16_t *x, float *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, omnic__ld_bf16x16(x + i));
    if (i < n)
        _mm512_mask_storeu_ps(y + i, omnic__mask16(n - i), omnic__ld_bf16x16_m(x + i, omnic__mask16(n - i)));
}
static OMNIC_AVX512 void f32_to_f16_v(const float *x, uint16_t *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {
        __mmask16 m = omnic__mask16(n - i);
        _mm256_mask_storeu_epi16(y + i, m,
                                 _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
    }
}
static OMNIC_AVX512 void f32_to_bf16_v(const float *x, uint16_t *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i), omnic__cvt_bf16x16(_mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 m = omnic__mask16(n - i);
        _mm256_mask_storeu_epi16(y + i, m, omnic__cvt_bf16x16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

static OMNIC_AVX512 float scale_max_v(float *x, float s, int64_t n)
{
    mul1_v(x, s, x, n);
    return max_v(x, n);
}
static OMNIC_AVX512 bool softmax_tile_v(float *s, int64_t lds, int64_t nq, int64_t n, float scale, float *m,
                                        float *l, float *r)
{
    return omnic__softmax_tile(s, lds, nq, n, scale, m, l, r, scale_max_v, exp_sum_v);
}

const omnic__cpu_vec omnic__cpu_vec_avx512 = {
    .name = "avx512",
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
