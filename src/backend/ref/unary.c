/* Reference elementwise ops: add/mul with broadcasting, scale, activations (the exact
 * formulas of backend.h evaluated in double), gated activations, logit softcap.
 * Each kernel serves several ops and reads n->op to pick the formula. */
#include <math.h>

#include "backend/ref/ref.h"

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static double silu(double x)
{
    return x * sigmoid(x);
}

static double gelu(double x)
{
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double gelu_tanh(double x)
{
    const double k = 0.79788456080286535588; /* sqrt(2 / pi) */
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

static double gelu_quick(double x)
{
    return x * sigmoid(1.702 * x);
}

/* ADD, MUL: dst[R, C] = a[R, C] op b, where b (w*) is [R, C], [C] (one row for every row)
 * or [R, 1] (one value per row). b is indexed by (row, col) with a size-1 dim pinned to 0. */
void omnic__ref_binary(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *a = n->src[0], *b = n->src[1];
    int64_t R = omnic__tensor_rows(a), C = omnic__tensor_cols(a);
    int64_t bR = omnic__tensor_rows(b), bC = omnic__tensor_cols(b);
    const float *A = a->data;
    float *D = n->dst->data;
    bool mul = n->op == OMNIC_OP_MUL;

    int64_t lo, hi;
    omnic__split_rows(R, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        for (int64_t c = 0; c < C; c++) {
            double x = A[r * C + c];
            double y = omnic__ref_ld(b->data, b->dtype, (bR == 1 ? 0 : r) * bC + (bC == 1 ? 0 : c));
            D[r * C + c] = (float)(mul ? x * y : x + y);
        }
    }
}

/* The formula of each one-input elementwise op, in double. */
static double unary_op(const omnic__node *n, double x)
{
    switch (n->op) {
    case OMNIC_OP_SCALE:
        return x * n->fp[0] + n->fp[1];
    case OMNIC_OP_SILU:
        return silu(x);
    case OMNIC_OP_GELU:
        return gelu(x);
    case OMNIC_OP_GELU_TANH:
        return gelu_tanh(x);
    case OMNIC_OP_GELU_QUICK:
        return gelu_quick(x);
    case OMNIC_OP_SOFTCAP:
        return tanh(x / n->fp[0]) * n->fp[0];
    case OMNIC_OP_RELU:
        return x < 0 ? 0.0 : x;
    case OMNIC_OP_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    default:
        return NAN; /* not a one-input elementwise op: the ops table never routes it here */
    }
}

/* SCALE, SILU, GELU, GELU_TANH, GELU_QUICK, SOFTCAP, RELU, SIGMOID: dst = f(src[0]), any shape, f32. */
void omnic__ref_unary(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const float *X = n->src[0]->data;
    float *D = n->dst->data;
    int64_t R = omnic__tensor_rows(n->src[0]), C = omnic__tensor_cols(n->src[0]);
    int64_t lo, hi;
    omnic__split_rows(R, ith, nth, &lo, &hi);
    for (int64_t i = lo * C; i < hi * C; i++)
        D[i] = (float)unary_op(n, X[i]);
}

/* SWIGLU (act = silu), GEGLU (act = exact gelu, or the tanh form when ip[0] = 1):
 * dst = act(gate) * up; gate = src[0], up = src[1], same shape, f32. */
void omnic__ref_gated(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const float *G = n->src[0]->data;
    const float *U = n->src[1]->data;
    float *D = n->dst->data;
    int64_t R = omnic__tensor_rows(n->src[0]), C = omnic__tensor_cols(n->src[0]);
    double (*act)(double) = n->op == OMNIC_OP_SWIGLU ? silu : n->ip[0] ? gelu_tanh : gelu;
    int64_t lo, hi;
    omnic__split_rows(R, ith, nth, &lo, &hi);
    for (int64_t i = lo * C; i < hi * C; i++)
        D[i] = (float)(act(G[i]) * (double)U[i]);
}
