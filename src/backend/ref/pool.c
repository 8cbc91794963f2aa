/* Reference average pooling over a square grid of rows (backend.h OMNIC_OP_POOL_AVG): each
 * output element is the sum of its k * k cells in double, divided by k * k, rounded once. */
#include "backend/ref/ref.h"

void omnic__ref_pool_avg(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const float *X = n->src[0]->data; /* [G * G, C] */
    float *Y = n->dst->data;          /* [(G/k)^2, C] */
    const int64_t G = n->ip[0], k = n->ip[1], C = n->src[0]->dims[1], P = G / k;
    int64_t lo, hi;
    omnic__split_rows(P * P, ith, nth, &lo, &hi);
    for (int64_t o = lo; o < hi; o++) {
        const int64_t r0 = o / P * k, c0 = o % P * k;
        for (int64_t ch = 0; ch < C; ch++) {
            double sum = 0.0;
            for (int64_t i = 0; i < k; i++)
                for (int64_t j = 0; j < k; j++)
                    sum += X[((r0 + i) * G + c0 + j) * C + ch];
            Y[o * C + ch] = (float)(sum / (double)(k * k));
        }
    }
}
