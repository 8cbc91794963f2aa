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

#include <stdint.h>

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

extern const omnic__cpu_vec omnic__cpu_vec_scalar;
extern const omnic__cpu_vec omnic__cpu_vec_avx2;
extern const omnic__cpu_vec omnic__cpu_vec_avx512;

/* The table for omnic__cpu_isa_level(). */
const omnic__cpu_vec *omnic__cpu_vec_get(void);

/* sqrt(2/pi) for gelu_tanh. */
#define OMNIC_GELU_K 0.7978845608028654f

#endif
