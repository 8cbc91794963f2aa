/* cpu depthwise 2-D convolution over a channel-last map (semantics in backend.h). Each thread
 * widens the filters once into taps-major rows wt [kh * kw, C] (its part of the work buffer),
 * then computes its output rows: per output pixel, C accumulators start at the bias and take
 * one multiply-add per tap in (i, j) order, vectorised along the channels. */
#include <string.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec.h"
#include "core/threadpool.h"

/* A thread's part: the widened filters [taps, C], then one filter's taps widened from f16 / bf16. */
static size_t part_bytes(const omnic__node *n)
{
    const int64_t taps = (int64_t)n->ip[0] * n->ip[1], C = n->src[1]->dims[0];
    return omnic__cpu_walign((size_t)(taps * C + taps) * sizeof(float));
}

size_t omnic__cpu_dwconv2d_wsize(const omnic__node *n, int nth)
{
    return (size_t)nth * part_bytes(n);
}

void omnic__cpu_dwconv2d(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *x = n->src[0], *w = n->src[1], *b = n->src[2];
    const int64_t kh = n->ip[0], kw = n->ip[1], sh = n->ip[2], sw = n->ip[3], pt = n->ip[4], pl = n->ip[5],
                  Wi = n->ip[6], Ci = n->ip[7];
    const int64_t Ho = n->dst->dims[0], C = w->dims[0], Wo = n->dst->dims[1] / C, Hi = Ho * sh,
                  taps = kh * kw;
    int64_t lo, hi;
    omnic__split_rows(Ho, ith, nth, &lo, &hi);
    if (lo >= hi) return;
    float *wt = omnic__cpu_wpart(wdata, part_bytes(n), ith), *row = wt + taps * C;
    for (int64_t c = 0; c < C; c++) {
        if (w->dtype == OMNIC_DTYPE_F32) {
            const float *wc = (const float *)w->data + c * taps;
            for (int64_t k = 0; k < taps; k++)
                wt[k * C + c] = wc[k];
        } else {
            omnic__cpu_to_f32(w->dtype, (const uint16_t *)w->data + c * taps, row, taps);
            for (int64_t k = 0; k < taps; k++)
                wt[k * C + c] = row[k];
        }
    }
    const float *X = x->data, *B = b ? (const float *)b->data : NULL;
    const int32_t *seg = n->src[3] ? (const int32_t *)n->src[3]->data : NULL; /* [Ho] */
    float *D = n->dst->data;
    for (int64_t ho = lo; ho < hi; ho++)
        for (int64_t wo = 0; wo < Wo; wo++) {
            float *acc = D + (ho * Wo + wo) * C;
            if (B)
                memcpy(acc, B, (size_t)C * sizeof(float));
            else
                memset(acc, 0, (size_t)C * sizeof(float));
            for (int64_t i = 0; i < kh; i++) {
                int64_t r = ho * sh + i - pt;
                if (r < 0 || r >= Hi || (seg && r < seg[ho])) continue;
                for (int64_t j = 0; j < kw; j++) {
                    int64_t col = wo * sw + j - pl;
                    if (col < 0 || col >= Wi) continue;
                    const float *xp = X + (r * Wi + col) * Ci, *wk = wt + (i * kw + j) * C;
                    if (Ci == 1) {
                        v->axpy(xp[0], wk, acc, C);
                    } else {
                        for (int64_t c = 0; c < C; c++)
                            acc[c] += xp[c] * wk[c];
                    }
                }
            }
        }
}

/* Full 2-D convolution: per output row, its patches [Wo, kh * kw * Ci] gathered (im2col, the
 * filter's taps-major order) into the thread's part of the work buffer, then one sgemm
 * against all O filters. Each output row is one sgemm call whatever the thread count, so
 * results are bit-identical for any nth. */
static size_t conv2d_part(const omnic__node *n)
{
    const int64_t O = n->src[1]->dims[0], K = n->src[1]->dims[1], Wo = n->dst->dims[1] / O;
    return omnic__cpu_walign((size_t)(Wo * K) * sizeof(float));
}

size_t omnic__cpu_conv2d_wsize(const omnic__node *n, int nth)
{
    return (size_t)nth * conv2d_part(n);
}

void omnic__cpu_conv2d(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__tensor *x = n->src[0], *w = n->src[1], *b = n->src[2];
    const int64_t kh = n->ip[0], kw = n->ip[1], sh = n->ip[2], sw = n->ip[3], pt = n->ip[4], pl = n->ip[5],
                  Wi = n->ip[6], Ci = n->ip[7];
    const int64_t Ho = n->dst->dims[0], O = w->dims[0], K = w->dims[1], Wo = n->dst->dims[1] / O,
                  Hi = Ho * sh;
    int64_t lo, hi;
    omnic__split_rows(Ho, ith, nth, &lo, &hi);
    if (lo >= hi) return;
    float *col = omnic__cpu_wpart(wdata, conv2d_part(n), ith);
    const float *X = x->data, *B = b ? (const float *)b->data : NULL;
    float *D = n->dst->data;
    for (int64_t ho = lo; ho < hi; ho++) {
        for (int64_t wo = 0; wo < Wo; wo++) {
            float *p = col + wo * K;
            for (int64_t i = 0; i < kh; i++) {
                const int64_t r = ho * sh + i - pt;
                for (int64_t j = 0; j < kw; j++) {
                    const int64_t c0 = wo * sw + j - pl;
                    float *dst = p + (i * kw + j) * Ci;
                    if (r < 0 || r >= Hi || c0 < 0 || c0 >= Wi)
                        memset(dst, 0, (size_t)Ci * sizeof(float));
                    else
                        memcpy(dst, X + (r * Wi + c0) * Ci, (size_t)Ci * sizeof(float));
                }
            }
        }
        omnic__cpu_sgemm(col, K, Wo, w->data, O, D + ho * Wo * O, O, B);
    }
}
