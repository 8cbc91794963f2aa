/* Reference mixture-of-experts ops (backend.h MOE_ROUTE, MOE_WEIGHTS, MATMUL_ID, MOE_SUM):
 * plain loops, sums in double, each result rounded once. */
#include <math.h>

#include "backend/ref/ref.h"

/* Top-k of a row by value (NaN loses; ties: lower index), then ascending by index. */
static void topk_row(const float *x, int64_t E, int k, int32_t *out)
{
    for (int j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t e = 0; e < E; e++) {
            bool taken = false;
            for (int q = 0; q < j && !taken; q++)
                taken = out[q] == e;
            if (taken) continue;
            if (best < 0 || (isnan((double)x[best]) && !isnan((double)x[e])) ||
                (!isnan((double)x[e]) && x[e] > x[best]))
                best = e;
        }
        out[j] = (int32_t)best;
    }
    for (int a = 1; a < k; a++) /* insertion sort ascending */
        for (int b = a; b > 0 && out[b - 1] > out[b]; b--) {
            int32_t t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
}

void omnic__ref_moe_route(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0];
    const int64_t T = omnic__tensor_rows(x), E = omnic__tensor_cols(x);
    const int k = n->ip[0];
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++)
        topk_row((const float *)x->data + t * E, E, k, (int32_t *)n->dst->data + t * k);
}

void omnic__ref_moe_weights(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0], *ids = n->src[1];
    const int64_t T = omnic__tensor_rows(x), E = omnic__tensor_cols(x), k = omnic__tensor_cols(ids);
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++) {
        const float *r = (const float *)x->data + t * E;
        const int32_t *id = (const int32_t *)ids->data + t * k;
        float *w = (float *)n->dst->data + t * k;
        double m = -INFINITY, s = 0, sel = 0;
        for (int64_t e = 0; e < E; e++)
            m = r[e] > m ? r[e] : m;
        for (int64_t e = 0; e < E; e++)
            s += exp((double)r[e] - m);
        for (int64_t j = 0; j < k; j++)
            sel += exp((double)r[id[j]] - m) / s;
        for (int64_t j = 0; j < k; j++) {
            double p = exp((double)r[id[j]] - m) / s;
            w[j] = (float)(n->ip[0] ? p / sel : p);
        }
    }
}

/* Bytes of one q8 activation row (K int8, then K / 32 f32 scales), as ref matmul keeps them. */
static size_t act_row_bytes(int64_t K)
{
    return (size_t)K + (size_t)(K / OMNIC_QK) * sizeof(float);
}

static bool is_quant(omnic_dtype t)
{
    return t == OMNIC_DTYPE_Q8_0 || t == OMNIC_DTYPE_Q4_0 || t == OMNIC_DTYPE_Q4_0X16 ||
           t == OMNIC_DTYPE_Q8_0X16;
}

/* wdata: one quantized activation row per thread (quantized weights). */
void omnic__ref_matmul_id(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__tensor *a = n->src[0], *w = n->src[1], *ids = n->src[2];
    const int64_t T = omnic__tensor_rows(ids), k = omnic__tensor_cols(ids), K = omnic__tensor_cols(a);
    const int64_t N = n->ip[0];
    const bool per_slot = n->ip[1] != 0, quant = is_quant(w->dtype);
    uint8_t *act = (uint8_t *)wdata + (size_t)ith * act_row_bytes(K);
    float *D = n->dst->data;
    int64_t lo, hi;
    omnic__split_rows(T * k, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *x = (const float *)a->data + (per_slot ? r : r / k) * K;
        const int64_t e = ((const int32_t *)ids->data)[r];
        if (e < 0) { /* routed nowhere */
            for (int64_t c = 0; c < N; c++)
                D[r * N + c] = 0.0f;
            continue;
        }
        if (quant) omnic__quantize_act_q8(x, (int8_t *)act, (float *)(act + K), K);
        for (int64_t c = 0; c < N; c++) {
            double acc = 0;
            for (int64_t q = 0; q < K; q++) {
                double xv = quant
                                ? (double)((const float *)(act + K))[q / OMNIC_QK] * ((const int8_t *)act)[q]
                                : (double)x[q];
                acc += xv * omnic__ref_ld_rc(w, e * N + c, q);
            }
            D[r * N + c] = (float)acc;
        }
    }
}

size_t omnic__ref_matmul_id_wsize(const omnic__node *n, int nth)
{
    return is_quant(n->src[1]->dtype) ? (size_t)nth * act_row_bytes(omnic__tensor_cols(n->src[0])) : 0;
}

void omnic__ref_moe_sum(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *y = n->src[0], *w = n->src[1];
    const int64_t T = omnic__tensor_rows(w), k = omnic__tensor_cols(w), H = omnic__tensor_cols(y);
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++)
        for (int64_t h = 0; h < H; h++) {
            double acc = 0;
            for (int64_t j = 0; j < k; j++)
                acc += (double)((const float *)w->data)[t * k + j] *
                       ((const float *)y->data)[(t * k + j) * H + h];
            ((float *)n->dst->data)[t * H + h] = (float)acc;
        }
}
