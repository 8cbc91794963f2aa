/* Reference depthwise 2-D convolution over a channel-last map (semantics in backend.h): every
 * output summed in double in (i, j) order, rounded to f32 once. */
#include "backend/ref/ref.h"

void omnic__ref_dwconv2d(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0], *w = n->src[1], *b = n->src[2];
    const int64_t kh = n->ip[0], kw = n->ip[1], sh = n->ip[2], sw = n->ip[3], pt = n->ip[4], pl = n->ip[5],
                  Wi = n->ip[6], Ci = n->ip[7];
    const int64_t Ho = n->dst->dims[0], C = w->dims[0], Wo = n->dst->dims[1] / C, Hi = Ho * sh;
    const float *X = x->data, *B = b ? (const float *)b->data : NULL;
    const int32_t *seg = n->src[3] ? (const int32_t *)n->src[3]->data : NULL; /* [Ho] */
    float *D = n->dst->data;
    int64_t lo, hi;
    omnic__split_rows(Ho, ith, nth, &lo, &hi);
    for (int64_t ho = lo; ho < hi; ho++)
        for (int64_t wo = 0; wo < Wo; wo++)
            for (int64_t c = 0; c < C; c++) {
                double acc = B ? B[c] : 0.0;
                for (int64_t i = 0; i < kh; i++) {
                    int64_t r = ho * sh + i - pt;
                    if (r < 0 || r >= Hi || (seg && r < seg[ho])) continue;
                    for (int64_t j = 0; j < kw; j++) {
                        int64_t col = wo * sw + j - pl;
                        if (col < 0 || col >= Wi) continue;
                        double xv = X[(r * Wi + col) * Ci + (Ci == 1 ? 0 : c)];
                        acc += xv * omnic__ref_ld(w->data, w->dtype, c * kh * kw + i * kw + j);
                    }
                }
                D[(ho * Wo + wo) * C + c] = (float)acc;
            }
}

/* Full convolution, the same geometry: every output summed in double over (i, j, c), rounded
 * to f32 once. */
void omnic__ref_conv2d(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0], *w = n->src[1], *b = n->src[2];
    const int64_t kh = n->ip[0], kw = n->ip[1], sh = n->ip[2], sw = n->ip[3], pt = n->ip[4], pl = n->ip[5],
                  Wi = n->ip[6], Ci = n->ip[7];
    const int64_t Ho = n->dst->dims[0], O = w->dims[0], Wo = n->dst->dims[1] / O, Hi = Ho * sh;
    const float *X = x->data, *W = w->data, *B = b ? (const float *)b->data : NULL;
    float *D = n->dst->data;
    int64_t lo, hi;
    omnic__split_rows(Ho, ith, nth, &lo, &hi);
    for (int64_t ho = lo; ho < hi; ho++)
        for (int64_t wo = 0; wo < Wo; wo++)
            for (int64_t o = 0; o < O; o++) {
                double acc = B ? B[o] : 0.0;
                for (int64_t i = 0; i < kh; i++) {
                    int64_t r = ho * sh + i - pt;
                    if (r < 0 || r >= Hi) continue;
                    for (int64_t j = 0; j < kw; j++) {
                        int64_t col = wo * sw + j - pl;
                        if (col < 0 || col >= Wi) continue;
                        const float *xp = X + (r * Wi + col) * Ci, *wp = W + (o * kh * kw + i * kw + j) * Ci;
                        for (int64_t c = 0; c < Ci; c++)
                            acc += (double)xp[c] * wp[c];
                    }
                }
                D[(ho * Wo + wo) * O + o] = (float)acc;
            }
}
