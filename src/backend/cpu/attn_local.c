/* cpu local relative attention (backend.h OMNIC_OP_ATTN_LOCAL, Gemma 3n's audio conformer):
 * thread ith takes a range of (row, head) pairs; per pair, the at most L logits are two f32
 * dot products (content, then relative term, added as HF adds its two score matrices), soft-
 * capped, exponentiated by the ISA's exp_sum, and the values accumulated by axpy in key order.
 * Work buffer: L floats per thread. */
#include <math.h>
#include <string.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec.h"
#include "core/threadpool.h"

size_t omnic__cpu_attn_local_wsize(const omnic__node *n, int nth)
{
    return (size_t)nth * omnic__cpu_walign((size_t)n->src[3]->dims[0] * sizeof(float));
}

void omnic__cpu_attn_local(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *q = n->src[0];
    const int32_t *valid = n->src[4]->data;
    const int64_t T = q->dims[0], H = q->dims[1], Dh = q->dims[2], L = n->src[3]->dims[0];
    const float cap = n->fp[0];
    const float *Q = q->data, *K = n->src[1]->data, *V = n->src[2]->data, *R = n->src[3]->data;
    float *O = n->dst->data;
    int64_t lo, hi;
    omnic__split_rows(T * H, ith, nth, &lo, &hi);
    if (lo >= hi) return;
    float *lg = omnic__cpu_wpart(wdata, omnic__cpu_walign((size_t)L * sizeof(float)), ith);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t t = r / H, h = r % H, s0 = t - L + 1 > 0 ? t - L + 1 : 0, ns = t - s0 + 1;
        const float *qr = Q + (t * H + h) * Dh;
        float *out = O + (t * H + h) * Dh;
        float mx = -INFINITY;
        for (int64_t s = s0; s <= t; s++) {
            float a = v->dot(qr, K + (s * H + h) * Dh, Dh) + v->dot(qr, R + ((t - s) * H + h) * Dh, Dh);
            a = cap * tanhf(a / cap);
            lg[s - s0] = valid[s] ? a : -INFINITY;
            if (lg[s - s0] > mx) mx = lg[s - s0];
        }
        memset(out, 0, (size_t)Dh * sizeof(float));
        if (mx == -INFINITY) continue;
        const float z = v->exp_sum(lg, mx, lg, ns);
        for (int64_t s = s0; s <= t; s++)
            if (lg[s - s0] != 0.0f) v->axpy(lg[s - s0] / z, V + (s * H + h) * Dh, out, Dh);
    }
}
