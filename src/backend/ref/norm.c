/* Reference row reductions: RMSNorm, LayerNorm, softmax (sums in double), argmax. */
#include <math.h>

#include "backend/ref/ref.h"

/* per row: x / sqrt(mean(x^2) + eps) * (w + ip[0]); w optional (src[1]). */
void omnic__ref_rmsnorm(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0]; /* [R, C] f32 */
    const omnic__tensor *w = n->src[1]; /* [C] w* or NULL */
    int64_t R = omnic__tensor_rows(x), C = omnic__tensor_cols(x);
    const float *X = x->data;
    float *D = n->dst->data; /* [R, C] */
    double eps = n->fp[0], wadd = n->ip[0];

    int64_t lo, hi;
    omnic__split_rows(R, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = X + r * C;
        double ss = 0.0;
        for (int64_t c = 0; c < C; c++)
            ss += (double)xr[c] * xr[c];
        double inv = 1.0 / sqrt(ss / (double)C + eps);
        for (int64_t c = 0; c < C; c++) {
            double y = xr[c] * inv;
            if (w) y *= omnic__ref_ld(w->data, w->dtype, c) + wadd;
            D[r * C + c] = (float)y;
        }
    }
}

/* per row: (x - mean) / sqrt(var + eps) * w + b; var is the biased (population)
 * variance, computed in two passes; w (src[1]) and b (src[2]) optional. */
void omnic__ref_layernorm(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0]; /* [R, C] f32 */
    const omnic__tensor *w = n->src[1]; /* [C] w* or NULL */
    const omnic__tensor *b = n->src[2]; /* [C] w* or NULL */
    int64_t R = omnic__tensor_rows(x), C = omnic__tensor_cols(x);
    const float *X = x->data;
    float *D = n->dst->data; /* [R, C] */

    int64_t lo, hi;
    omnic__split_rows(R, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = X + r * C;
        double sum = 0.0;
        for (int64_t c = 0; c < C; c++)
            sum += xr[c];
        double mean = sum / (double)C, var = 0.0;
        for (int64_t c = 0; c < C; c++)
            var += (xr[c] - mean) * (xr[c] - mean);
        double inv = 1.0 / sqrt(var / (double)C + n->fp[0]);
        for (int64_t c = 0; c < C; c++) {
            double y = (xr[c] - mean) * inv;
            if (w) y *= omnic__ref_ld(w->data, w->dtype, c);
            if (b) y += omnic__ref_ld(b->data, b->dtype, c);
            D[r * C + c] = (float)y;
        }
    }
}

/* per row: softmax(x * fp[0]), max-subtracted, in double. A row that is all -inf
 * (nothing to attend to) yields zeros rather than NaN. */
void omnic__ref_softmax(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0]; /* [R, C] f32 */
    int64_t R = omnic__tensor_rows(x), C = omnic__tensor_cols(x);
    const float *X = x->data;
    float *D = n->dst->data; /* [R, C] */
    double scale = n->fp[0];

    int64_t lo, hi;
    omnic__split_rows(R, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = X + r * C;
        double mx = -INFINITY;
        for (int64_t c = 0; c < C; c++)
            mx = fmax(mx, xr[c] * scale);
        if (mx == -INFINITY) {
            for (int64_t c = 0; c < C; c++)
                D[r * C + c] = 0.0f;
            continue;
        }
        double sum = 0.0;
        for (int64_t c = 0; c < C; c++)
            sum += exp(xr[c] * scale - mx);
        for (int64_t c = 0; c < C; c++)
            D[r * C + c] = (float)(exp(xr[c] * scale - mx) / sum);
    }
}

/* dst i32 [R] = index of each row's max; ties: lowest index; NaN never chosen unless
 * the row is all NaN (then 0). */
void omnic__ref_argmax(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0]; /* [R, C] f32 */
    int64_t R = omnic__tensor_rows(x), C = omnic__tensor_cols(x);
    const float *X = x->data;
    int32_t *D = n->dst->data; /* [R] i32 */

    int64_t lo, hi;
    omnic__split_rows(R, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = X + r * C;
        int64_t best = -1;
        for (int64_t c = 0; c < C; c++) {
            if (isnan(xr[c])) continue;
            if (best < 0 || xr[c] > xr[best]) best = c;
        }
        D[r] = (int32_t)(best < 0 ? 0 : best);
    }
}

/* per row: max(0, x - (mean + fp[0] * std)), population std, sums in double. */
void omnic__ref_gauss_topk(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0]; /* [R, C] f32 */
    int64_t R = omnic__tensor_rows(x), C = omnic__tensor_cols(x), lo, hi;
    const float *X = x->data;
    float *D = n->dst->data;
    omnic__split_rows(R, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = X + r * C;
        double sum = 0.0, var = 0.0;
        for (int64_t c = 0; c < C; c++)
            sum += xr[c];
        double mean = sum / (double)C;
        for (int64_t c = 0; c < C; c++)
            var += (xr[c] - mean) * (xr[c] - mean);
        double cut = mean + (double)n->fp[0] * sqrt(var / (double)C);
        for (int64_t c = 0; c < C; c++)
            D[r * C + c] = xr[c] > cut ? (float)(xr[c] - cut) : 0.0f;
    }
}

/* per row: x * sqrt(mean(ref^2)) / sqrt(max(mean(x^2), fp[0])), sums in double. */
void omnic__ref_rms_match(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0], *ref = n->src[1]; /* [R, C] f32 each */
    int64_t R = omnic__tensor_rows(x), C = omnic__tensor_cols(x), lo, hi;
    const float *X = x->data, *Y = ref->data;
    float *D = n->dst->data;
    omnic__split_rows(R, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        double sx = 0.0, sy = 0.0;
        for (int64_t c = 0; c < C; c++) {
            sx += (double)X[r * C + c] * X[r * C + c];
            sy += (double)Y[r * C + c] * Y[r * C + c];
        }
        double mx = sx / (double)C, floor = n->fp[0];
        double k = sqrt(sy / (double)C) / sqrt(mx > floor ? mx : floor);
        for (int64_t c = 0; c < C; c++)
            D[r * C + c] = (float)(X[r * C + c] * k);
    }
}

/* Cumulative group norm: the statistics of rows 0..t in double (each row's mean squared
 * deviation taken from its own running mean, as the contract says), rounded to f32 once. */
void omnic__ref_cum_groupnorm(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0], *w = n->src[1];
    const int64_t T = x->dims[0], K = x->dims[1], C = w->dims[0];
    const float *X = x->data, *W = w->data;
    float *D = n->dst->data;
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    double sum = 0, sq = 0;
    for (int64_t t = 0; t < hi; t++) {
        const float *xr = X + t * K;
        for (int64_t k = 0; k < K; k++)
            sum += xr[k];
        const double cnt = (double)(t + 1) * (double)K, mean = sum / cnt;
        for (int64_t k = 0; k < K; k++)
            sq += (xr[k] - mean) * (xr[k] - mean);
        if (t < lo) continue;
        const double inv = 1.0 / sqrt(sq / cnt + n->fp[0]);
        for (int64_t k = 0; k < K; k++)
            D[t * K + k] = (float)((xr[k] - mean) * inv * W[k % C]);
    }
}
