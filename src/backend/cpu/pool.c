/* cpu average pooling over a square grid of rows (backend.h OMNIC_OP_POOL_AVG): output rows
 * split across threads; each row accumulates its k * k source rows in f32 in (i, j) order
 * (as torch's float kernel), then divides by k * k once. */
#include <string.h>

#include "backend/cpu/ops.h"
#include "core/threadpool.h"

void omnic__cpu_pool_avg(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const float *X = n->src[0]->data; /* [G * G, C] */
    float *Y = n->dst->data;          /* [(G/k)^2, C] */
    const int64_t G = n->ip[0], k = n->ip[1], C = n->src[0]->dims[1], P = G / k;
    const float div = (float)(k * k);
    int64_t lo, hi;
    omnic__split_rows(P * P, ith, nth, &lo, &hi);
    for (int64_t o = lo; o < hi; o++) {
        const int64_t r0 = o / P * k, c0 = o % P * k;
        float *y = Y + o * C;
        memset(y, 0, (size_t)C * sizeof *y);
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < k; j++) {
                const float *x = X + ((r0 + i) * G + c0 + j) * C;
                for (int64_t ch = 0; ch < C; ch++)
                    y[ch] += x[ch];
            }
        for (int64_t ch = 0; ch < C; ch++)
            y[ch] /= div;
    }
}
