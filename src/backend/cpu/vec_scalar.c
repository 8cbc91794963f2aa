/* Row primitives in portable C (no intrinsics): the cpu backend's fallback ISA and the
 * one OMNIC_CPU_ISA=scalar selects. Reductions keep 8 partial sums so the compiler may
 * vectorize without changing the order. */
#include <math.h>

#include "backend/cpu/vec.h"
#include "core/dtype.h"

static float dot_s(const float *a, const float *b, int64_t n)
{
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += a[i] * b[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static float sum_s(const float *x, int64_t n)
{
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += x[i + l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += x[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static float sumsq_s(const float *x, int64_t n)
{
    return dot_s(x, x, n);
}

static float max_s(const float *x, int64_t n)
{
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

static void add_s(const float *a, const float *b, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}
static void mul_s(const float *a, const float *b, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = a[i] * b[i];
}
static void add1_s(const float *a, float b, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = a[i] + b;
}
static void mul1_s(const float *a, float b, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = a[i] * b;
}
static void scale_s(const float *x, float s, float b, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * s + b;
}
static void axpy_s(float a, const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* One pair: 8 partial sums, lane l takes d = l mod 8 (as dot_s). */
static void dot_rows_s(const float *const *q, int64_t nq, const float *k, int64_t ldk, int64_t nk, int64_t D,
                       float *s, int64_t lds)
{
    for (int64_t u = 0; u < nq; u++)
        for (int64_t j = 0; j < nk; j++)
            s[u * lds + j] = dot_s(q[u], k + j * ldk, D);
}

static void pv_rows_s(const float *p, int64_t ldp, int64_t nq, const float *v, int64_t ldv, int64_t nk,
                      int64_t Dv, float *acc, int64_t lda)
{
    for (int64_t u = 0; u < nq; u++)
        for (int64_t j = 0; j < nk; j++)
            axpy_s(p[u * ldp + j], v + j * ldv, acc + u * lda, Dv);
}

static void dot_rows_t_s(const float *const *q, int64_t nq, const float *kt, int64_t ldk, int64_t nk,
                         int64_t D, float *s, int64_t lds)
{
    for (int64_t u = 0; u < nq; u++)
        for (int64_t j = 0; j < nk; j++) {
            float acc = 0.0f;
            for (int64_t d = 0; d < D; d++)
                acc += q[u][d] * kt[d * ldk + j];
            s[u * lds + j] = acc;
        }
}

static float exp_sum_s(const float *x, float m, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = expf(x[i] - m);
    return sum_s(y, n);
}

static void silu_s(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] / (1.0f + expf(-x[i]));
}
static float gelu_tanh1(float x)
{
    return 0.5f * x * (1.0f + tanhf(OMNIC_GELU_K * (x + 0.044715f * x * x * x)));
}
static void gelu_tanh_s(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = gelu_tanh1(x[i]);
}
static void gelu_quick_s(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] / (1.0f + expf(-1.702f * x[i]));
}
static void softcap_s(const float *x, float c, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = tanhf(x[i] / c) * c;
}
static void swiglu_s(const float *g, const float *u, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}
static void geglu_tanh_s(const float *g, const float *u, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = gelu_tanh1(g[i]) * u[i];
}

static void f16_to_f32_s(const uint16_t *x, float *y, int64_t n)
{
    omnic__f16_to_f32_row(x, y, (size_t)n);
}
static void bf16_to_f32_s(const uint16_t *x, float *y, int64_t n)
{
    omnic__bf16_to_f32_row(x, y, (size_t)n);
}
static void f32_to_f16_s(const float *x, uint16_t *y, int64_t n)
{
    omnic__f32_to_f16_row(x, y, (size_t)n);
}
static void f32_to_bf16_s(const float *x, uint16_t *y, int64_t n)
{
    omnic__f32_to_bf16_row(x, y, (size_t)n);
}

static float scale_max_s(float *x, float s, int64_t n)
{
    mul1_s(x, s, x, n);
    return max_s(x, n);
}
static bool softmax_tile_s(float *s, int64_t lds, int64_t nq, int64_t n, float scale, float *m, float *l,
                           float *r)
{
    return omnic__softmax_tile(s, lds, nq, n, scale, m, l, r, scale_max_s, exp_sum_s);
}

const omnic__cpu_vec omnic__cpu_vec_scalar = {
    .name = "scalar",
    .dot = dot_s,
    .sum = sum_s,
    .sumsq = sumsq_s,
    .max = max_s,
    .add = add_s,
    .mul = mul_s,
    .add1 = add1_s,
    .mul1 = mul1_s,
    .scale = scale_s,
    .axpy = axpy_s,
    .dot_rows = dot_rows_s,
    .pv_rows = pv_rows_s,
    .dot_rows_t = dot_rows_t_s,
    .exp_sum = exp_sum_s,
    .softmax_tile = softmax_tile_s,
    .silu = silu_s,
    .gelu_tanh = gelu_tanh_s,
    .gelu_quick = gelu_quick_s,
    .softcap = softcap_s,
    .swiglu = swiglu_s,
    .geglu_tanh = geglu_tanh_s,
    .f16_to_f32 = f16_to_f32_s,
    .bf16_to_f32 = bf16_to_f32_s,
    .f32_to_f16 = f32_to_f16_s,
    .f32_to_bf16 = f32_to_bf16_s,
};
