/* Reference scaled dot-product attention, each query over its visible KV range: scores, softmax and the
 * weighted sum of values all in double, each output rounded to f32 once. */
#include <math.h>

#include "backend/ref/ref.h"

/* Row (t, h) of dst [T, H, Dv]:
 *   s_j = q[t,h,:] . k[j,g,:] * scale        (g = h / (H / Hkv), GQA)
 *   s_j = tanh(s_j / cap) * cap              (when cap = fp[1] != 0)
 *   s_j += bias[t, j]                        (when src[4]; with ip[3] = M > 0 the table
 *                                             bias[clamp(j - qpos[t], -M, M - 1) + M, h])
 *   keys j < kv_begin[t] (src[5]) are not visited; causal rows stop at j = qpos[t]
 *   key j masked (s_j = -inf) when causal and j > qpos[t], or when a window W is set
 *   and qpos[t] - j >= W; a bias of -inf masks too; with a span (src[6]) keys in the hull
 *   of that range and [kv_begin[t] + span[t][0], kv_begin[t] + span[t][1]) are visible.
 *   dst[t,h,:] = sum_j softmax(s)_j v[j,g,:], or zeros when every key is masked.
 * wdata: per thread S scores + Dv accumulators, doubles. */
void omnic__ref_attention(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__tensor *q = n->src[0];                                    /* [T, H, D] f32 */
    const omnic__tensor *k = n->src[1];                                    /* [S, Hkv, D] f32 or f16 */
    const omnic__tensor *v = n->src[2];                                    /* [S, Hkv, Dv] f32 or f16 */
    const int32_t *qpos = n->src[3]->data;                                 /* [T] i32 */
    const float *bias = n->src[4] ? (const float *)n->src[4]->data : NULL; /* [T, S] or [2M, H] f32 */
    const int32_t *kv_begin = n->src[5] ? (const int32_t *)n->src[5]->data : NULL; /* [T] i32 */
    const int32_t *span = n->src[6] ? (const int32_t *)n->src[6]->data : NULL;     /* [T, 2] i32 */
    int64_t T = q->dims[0], H = q->dims[1], D = q->dims[2];
    int64_t S = k->dims[0], Hkv = k->dims[1], Dv = v->dims[2];
    int64_t group = H / Hkv;
    double scale = n->fp[0], cap = n->fp[1];
    bool causal = n->ip[0] != 0;
    int64_t window = n->ip[1], rel_max = n->ip[3];
    const float *Q = q->data;
    float *O = n->dst->data;                                      /* [T, H, Dv] */
    double *s = (double *)wdata + (size_t)ith * (size_t)(S + Dv); /* [S] */
    double *acc = s + S;                                          /* [Dv] */

    int64_t lo, hi;
    omnic__split_rows(T * H, ith, nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        int64_t t = row / H, h = row % H, g = h / group;
        int64_t p = qpos[t];
        const float *qr = Q + row * D;
        int64_t j0 = kv_begin ? kv_begin[t] : 0, j1 = causal && p + 1 < S ? p + 1 : S;
        int64_t w0 = window && p - window + 1 > j0 ? p - window + 1 : j0; /* first key in the window */
        if (span && span[2 * t] < span[2 * t + 1]) {
            int64_t b = j0 + span[2 * t], e = j0 + span[2 * t + 1];
            w0 = b < w0 ? b : w0;
            j1 = e > j1 ? (e < S ? e : S) : j1;
        }
        double mx = -INFINITY;
        for (int64_t j = j0; j < j1; j++) {
            bool visible = j >= w0;
            if (!visible) {
                s[j] = -INFINITY;
                continue;
            }
            double dot = 0.0;
            for (int64_t d = 0; d < D; d++)
                dot += (double)qr[d] * omnic__ref_ld(k->data, k->dtype, (j * Hkv + g) * D + d);
            double sj = dot * scale;
            if (cap != 0.0) sj = tanh(sj / cap) * cap;
            if (bias && rel_max) { /* T5-style table [2M, H] by clamped distance */
                int64_t r = j - p < -rel_max ? -rel_max : j - p > rel_max - 1 ? rel_max - 1 : j - p;
                sj += bias[(r + rel_max) * H + h];
            } else if (bias) {
                sj += bias[t * S + j];
            }
            s[j] = sj;
            mx = fmax(mx, sj);
        }
        float *out = O + row * Dv;
        if (mx == -INFINITY) { /* no visible key */
            for (int64_t d = 0; d < Dv; d++)
                out[d] = 0.0f;
            continue;
        }
        double sum = 0.0;
        for (int64_t d = 0; d < Dv; d++)
            acc[d] = 0.0;
        for (int64_t j = j0; j < j1; j++) {
            if (s[j] == -INFINITY) continue;
            double e = exp(s[j] - mx);
            sum += e;
            for (int64_t d = 0; d < Dv; d++)
                acc[d] += e * omnic__ref_ld(v->data, v->dtype, (j * Hkv + g) * Dv + d);
        }
        for (int64_t d = 0; d < Dv; d++)
            out[d] = (float)(acc[d] / sum);
    }
}

size_t omnic__ref_attention_wsize(const omnic__node *n, int nth)
{
    int64_t S = n->src[1]->dims[0], Dv = n->src[2]->dims[2];
    return (size_t)nth * (size_t)(S + Dv) * sizeof(double);
}

/* Local relative attention (backend.h OMNIC_OP_ATTN_LOCAL) in double: logits, softcap,
 * softmax and the weighted sum, rounded to f32 once. */
void omnic__ref_attn_local(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *q = n->src[0], *k = n->src[1], *v = n->src[2], *rel = n->src[3];
    const int32_t *valid = n->src[4]->data;
    const int64_t T = q->dims[0], H = q->dims[1], Dh = q->dims[2], L = rel->dims[0];
    const double cap = n->fp[0];
    const float *Q = q->data, *K = k->data, *V = v->data, *R = rel->data;
    float *O = n->dst->data;
    int64_t lo, hi;
    omnic__split_rows(T * H, ith, nth, &lo, &hi);
    double lg[512];
    for (int64_t r = lo; r < hi; r++) {
        const int64_t t = r / H, h = r % H, s0 = t - L + 1 > 0 ? t - L + 1 : 0;
        const float *qr = Q + (t * H + h) * Dh;
        double mx = -INFINITY, z = 0;
        for (int64_t s = s0; s <= t; s++) {
            double a = 0;
            const float *kr = K + (s * H + h) * Dh, *rr = R + ((t - s) * H + h) * Dh;
            for (int64_t d = 0; d < Dh; d++)
                a += (double)qr[d] * kr[d] + (double)qr[d] * rr[d];
            lg[s - s0] = valid[s] ? cap * tanh(a / cap) : -INFINITY;
            if (lg[s - s0] > mx) mx = lg[s - s0];
        }
        float *out = O + (t * H + h) * Dh;
        for (int64_t d = 0; d < Dh; d++)
            out[d] = 0.0f;
        if (mx == -INFINITY) continue;
        for (int64_t s = s0; s <= t; s++)
            z += lg[s - s0] = exp(lg[s - s0] - mx);
        for (int64_t d = 0; d < Dh; d++) {
            double acc = 0;
            for (int64_t s = s0; s <= t; s++)
                acc += lg[s - s0] / z * V[(s * H + h) * Dh + d];
            out[d] = (float)acc;
        }
    }
}
