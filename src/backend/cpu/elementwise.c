/* cpu elementwise ops: add, mul (with broadcasts and f16/bf16 b), scale, the unary
 * activations and the gated ones. Work is split as a flat element range cut into fixed
 * blocks; every primitive is per element, so the cut never changes a result. Exact GELU
 * uses libm erff per element (correctness over speed). */
#include <math.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec.h"
#include "core/threadpool.h"

/* Elements per work block and per f16/bf16 widening step (stack buffer). */
#define EW_BLOCK 1024

static void elem_range(int64_t ne, int ith, int nth, int64_t *lo, int64_t *hi)
{
    omnic__split_rows((ne + EW_BLOCK - 1) / EW_BLOCK, ith, nth, lo, hi);
    *lo *= EW_BLOCK;
    *hi *= EW_BLOCK;
    if (*hi > ne) *hi = ne;
}

static float elem_f32(const omnic__tensor *t, int64_t i)
{
    float f;
    omnic__cpu_to_f32(t->dtype, (const char *)t->data + (size_t)i * omnic_dtype_size(t->dtype), &f, 1);
    return f;
}

/* add / mul: b is [rows, cols] like a, [cols] or [1, cols] (one row for every row), or
 * [rows, 1] / [1, 1] (one value per row / for all): b is indexed by (row, col) with a
 * size-1 dim pinned to 0, as in ref. */
static void binary(const omnic__node *n, int ith, int nth, bool is_mul)
{
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *A = n->src[0], *B = n->src[1];
    const float *a = A->data;
    float *y = n->dst->data;
    int64_t ne = omnic__tensor_nelem(A), cols = omnic__tensor_cols(A);
    int64_t bR = omnic__tensor_rows(B), bC = omnic__tensor_cols(B);
    size_t bes = omnic_dtype_size(B->dtype);
    float tmp[EW_BLOCK];
    int64_t lo, hi;
    elem_range(ne, ith, nth, &lo, &hi);
    for (int64_t e = lo; e < hi;) {
        int64_t row = e / cols, c = e % cols;
        int64_t len = hi - e;
        if (len > cols - c) len = cols - c;
        if (len > EW_BLOCK) len = EW_BLOCK;
        int64_t brow = bR == 1 ? 0 : row;
        if (bC == 1) {
            float s = elem_f32(B, brow);
            if (is_mul)
                v->mul1(a + e, s, y + e, len);
            else
                v->add1(a + e, s, y + e, len);
        } else {
            int64_t bi = brow * bC + c;
            const float *bp;
            if (B->dtype == OMNIC_DTYPE_F32) {
                bp = (const float *)B->data + bi;
            } else {
                omnic__cpu_to_f32(B->dtype, (const char *)B->data + (size_t)bi * bes, tmp, len);
                bp = tmp;
            }
            if (is_mul)
                v->mul(a + e, bp, y + e, len);
            else
                v->add(a + e, bp, y + e, len);
        }
        e += len;
    }
}

void omnic__cpu_add(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    binary(n, ith, nth, false);
}

void omnic__cpu_mul(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    binary(n, ith, nth, true);
}

void omnic__cpu_scale(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const float *x = n->src[0]->data;
    float *y = n->dst->data;
    int64_t lo, hi;
    elem_range(omnic__tensor_nelem(n->src[0]), ith, nth, &lo, &hi);
    if (lo < hi) omnic__cpu_vec_get()->scale(x + lo, n->fp[0], n->fp[1], y + lo, hi - lo);
}

static float gelu_erf(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

void omnic__cpu_unary(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const float *x = n->src[0]->data;
    float *y = n->dst->data;
    int64_t lo, hi;
    elem_range(omnic__tensor_nelem(n->src[0]), ith, nth, &lo, &hi);
    if (lo >= hi) return;
    x += lo;
    y += lo;
    int64_t len = hi - lo;
    switch (n->op) {
    case OMNIC_OP_SILU:
        v->silu(x, y, len);
        break;
    case OMNIC_OP_GELU_TANH:
        v->gelu_tanh(x, y, len);
        break;
    case OMNIC_OP_GELU_QUICK:
        v->gelu_quick(x, y, len);
        break;
    case OMNIC_OP_SOFTCAP:
        v->softcap(x, n->fp[0], y, len);
        break;
    case OMNIC_OP_GELU:
        for (int64_t i = 0; i < len; i++)
            y[i] = gelu_erf(x[i]);
        break;
    case OMNIC_OP_RELU:
        for (int64_t i = 0; i < len; i++)
            y[i] = x[i] < 0.0f ? 0.0f : x[i];
        break;
    case OMNIC_OP_SIGMOID:
        for (int64_t i = 0; i < len; i++)
            y[i] = 1.0f / (1.0f + expf(-x[i]));
        break;
    default:
        break;
    }
}

void omnic__cpu_gated(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const float *g = n->src[0]->data, *u = n->src[1]->data;
    float *y = n->dst->data;
    int64_t lo, hi;
    elem_range(omnic__tensor_nelem(n->src[0]), ith, nth, &lo, &hi);
    if (lo >= hi) return;
    int64_t len = hi - lo;
    if (n->op == OMNIC_OP_SWIGLU) {
        v->swiglu(g + lo, u + lo, y + lo, len);
    } else if (n->ip[0] == 1) {
        v->geglu_tanh(g + lo, u + lo, y + lo, len);
    } else {
        for (int64_t i = lo; i < hi; i++)
            y[i] = gelu_erf(g[i]) * u[i];
    }
}
