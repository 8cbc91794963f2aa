/* Row primitives of the cpu backend, one table per ISA (vec_scalar.c, vec_avx2.c,
 * vec_avx512.c). Op kernels (norm.c, elementwise.c, attention.c, layout.c) are written once
 * against this table and split work by rows; only the primitives differ per ISA.
 *
 * Determinism: every primitive's result for element i (maps) or for the whole call
 * (reductions) depends only on its inputs and n, never on alignment or on where a caller's
 * range starts; tails use masked (or zero-padded) vector steps with the same arithmetic as
 * the body. So a row gives the same bits whatever the thread count or batch. */
#ifndef OMNIC_BACKEND_CPU_VEC_H
#define OMNIC_BACKEND_CPU_VEC_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/simd.h"

typedef struct omnic__cpu_vec {
    const char *name; /* ISA name */
    /* Reductions over n f32 (n may be 0: sum 0, max -inf). */
    float (*dot)(const float *a, const float *b, int64_t n);
    float (*sum)(const float *x, int64_t n);
    float (*sumsq)(const float *x, int64_t n);
    float (*max)(const float *x, int64_t n);
    /* Maps; y may alias an input. */
    void (*add)(const float *a, const float *b, float *y, int64_t n);     /* y = a + b */
    void (*mul)(const float *a, const float *b, float *y, int64_t n);     /* y = a * b */
    void (*add1)(const float *a, float b, float *y, int64_t n);           /* y = a + b */
    void (*mul1)(const float *a, float b, float *y, int64_t n);           /* y = a * b */
    void (*scale)(const float *x, float s, float b, float *y, int64_t n); /* y = x * s + b (no FMA) */
    void (*axpy)(float a, const float *x, float *y, int64_t n);           /* y += a * x */
    /* Blocked attention products (per element, the order never depends on nq or nk):
     * s[u*lds + j] = q[u] . k[j*ldk ..] (D floats each), one accumulator chain per pair;
     * acc[u*lda + d] += sum_j p[u*ldp + j] * v[j*ldv + d], j ascending, one multiply-add
     * per term exactly as axpy does it, so a row blocked with others equals it alone. */
    void (*dot_rows)(const float *const *q, int64_t nq, const float *k, int64_t ldk, int64_t nk, int64_t D,
                     float *s, int64_t lds);
    void (*pv_rows)(const float *p, int64_t ldp, int64_t nq, const float *v, int64_t ldv, int64_t nk,
                    int64_t Dv, float *acc, int64_t lda);
    /* The scores with the keys transposed (the tiled attention): s[u*lds + j] = sum_d q[u][d] *
     * kt[d*ldk + j] for j < nk (key j = column j of kt [D, ldk]), one multiply-add chain per
     * element over d ascending, so the order never depends on nq or nk either. */
    void (*dot_rows_t)(const float *const *q, int64_t nq, const float *kt, int64_t ldk, int64_t nk, int64_t D,
                       float *s, int64_t lds);
    /* y = exp(x - m); returns the sum of y (fixed lane order). */
    float (*exp_sum)(const float *x, float m, float *y, int64_t n);
    /* The tiled attention's online-softmax step over a tile of nq rows of n scores s[u*lds + j]
     * whose every key is visible, without soft cap or bias (omnic__softmax_tile below). */
    bool (*softmax_tile)(float *s, int64_t lds, int64_t nq, int64_t n, float scale, float *m, float *l,
                         float *r);
    void (*silu)(const float *x, float *y, int64_t n);       /* x / (1 + exp(-x)) */
    void (*gelu_tanh)(const float *x, float *y, int64_t n);  /* 0.5 x (1 + tanh(k (x + 0.044715 x^3))) */
    void (*gelu_quick)(const float *x, float *y, int64_t n); /* x / (1 + exp(-1.702 x)) */
    void (*softcap)(const float *x, float c, float *y, int64_t n);           /* tanh(x / c) * c */
    void (*swiglu)(const float *g, const float *u, float *y, int64_t n);     /* silu(g) * u */
    void (*geglu_tanh)(const float *g, const float *u, float *y, int64_t n); /* gelu_tanh(g) * u */
    /* Conversions (exact widening; narrowing rounds to nearest even like core/dtype.h). */
    void (*f16_to_f32)(const uint16_t *x, float *y, int64_t n);
    void (*bf16_to_f32)(const uint16_t *x, float *y, int64_t n);
    void (*f32_to_f16)(const float *x, uint16_t *y, int64_t n);
    void (*f32_to_bf16)(const float *x, uint16_t *y, int64_t n);
} omnic__cpu_vec;

/* One row's online-softmax state after a tile whose (scaled, capped, biased) scores peak at bm >
 * -inf: when bm > *m, *m = bm and, unless *m was -inf, *l *= exp(m_old - bm); returns the factor
 * the row's accumulator takes (1: none). */
OMNIC_INLINE float omnic__softmax_rescale(float bm, float *m, float *l)
{
    float r = 1.0f;
    if (bm > *m) {
        if (*m != -INFINITY) {
            r = expf(*m - bm);
            *l *= r;
        }
        *m = bm;
    }
    return r;
}

/* The online-softmax step, per row u of the tile: x = s * scale; bm = max x. A row whose bm is
 * -inf is zeroed and keeps its state. Otherwise, when bm > m[u], r[u] = exp(m[u] - bm) (1 while
 * m[u] is -inf) and m[u] = bm, else r[u] = 1; then s = exp(x - m[u]) and l[u] = l[u] * r[u] +
 * sum s. Returns whether any row saw a key. The same operations, in the same order, as mul1, max,
 * exp_sum and expf called one by one (the general path of attention.c), so the same bits; each
 * ISA passes its own scale_max (x *= scale in place, returns the max) and exp_sum, which the
 * compiler inlines. */
OMNIC_INLINE bool omnic__softmax_tile(float *s, int64_t lds, int64_t nq, int64_t n, float scale, float *m,
                                      float *l, float *r, float (*scale_max)(float *, float, int64_t),
                                      float (*exp_sum)(const float *, float, float *, int64_t))
{
    bool any = false;
    for (int64_t u = 0; u < nq; u++) {
        float *x = s + u * lds;
        const float bm = scale_max(x, scale, n);
        r[u] = 1.0f;
        if (bm == -INFINITY) {
            memset(x, 0, (size_t)n * sizeof(float));
            continue;
        }
        r[u] = omnic__softmax_rescale(bm, &m[u], &l[u]);
        l[u] += exp_sum(x, m[u], x, n);
        any = true;
    }
    return any;
}

extern const omnic__cpu_vec omnic__cpu_vec_scalar;
extern const omnic__cpu_vec omnic__cpu_vec_avx2;
extern const omnic__cpu_vec omnic__cpu_vec_avx512;

/* The table for omnic__cpu_isa_level(). */
const omnic__cpu_vec *omnic__cpu_vec_get(void);

/* sqrt(2/pi) for gelu_tanh. */
#define OMNIC_GELU_K 0.7978845608028654f

#endif
