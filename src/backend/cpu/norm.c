/* cpu row normalizations: rmsnorm, layernorm, softmax. Thread ith takes a contiguous range
 * of rows; each row is reduced by the ISA's fixed-order primitives, so a row's result does
 * not depend on the thread count or on the other rows. f16/bf16 weights are widened in
 * stack chunks of NORM_CHUNK. */
#include <math.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec.h"
#include "core/threadpool.h"

#define NORM_CHUNK 512

/* y[0..n) op= (widen(w[0..n)) + off), op = mul or add. */
static void apply_w(const omnic__cpu_vec *v, const omnic__tensor *w, float off, float *y, int64_t n, bool mul)
{
    float tmp[NORM_CHUNK];
    size_t es = omnic_dtype_size(w->dtype);
    for (int64_t c = 0; c < n; c += NORM_CHUNK) {
        int64_t len = n - c < NORM_CHUNK ? n - c : NORM_CHUNK;
        omnic__cpu_to_f32(w->dtype, (const char *)w->data + (size_t)c * es, tmp, len);
        if (off != 0.0f) v->add1(tmp, off, tmp, len);
        if (mul)
            v->mul(y + c, tmp, y + c, len);
        else
            v->add(y + c, tmp, y + c, len);
    }
}

void omnic__cpu_rmsnorm(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *X = n->src[0], *W = n->src[1];
    int64_t cols = omnic__tensor_cols(X), r0, r1;
    omnic__split_rows(omnic__tensor_rows(X), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)X->data + r * cols;
        float *y = (float *)n->dst->data + r * cols;
        float ms = v->sumsq(x, cols) / (float)cols;
        v->mul1(x, 1.0f / sqrtf(ms + n->fp[0]), y, cols);
        if (W) apply_w(v, W, (float)n->ip[0], y, cols, true);
    }
}

void omnic__cpu_layernorm(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *X = n->src[0], *W = n->src[1], *B = n->src[2];
    int64_t cols = omnic__tensor_cols(X), r0, r1;
    omnic__split_rows(omnic__tensor_rows(X), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)X->data + r * cols;
        float *y = (float *)n->dst->data + r * cols;
        float mean = v->sum(x, cols) / (float)cols;
        v->add1(x, -mean, y, cols);
        /* The f32 mean is off by up to an ulp of |mean|; one correction pass removes the
         * bias that would otherwise scale with |mean| / std. */
        float corr = v->sum(y, cols) / (float)cols;
        if (corr != 0.0f) v->add1(y, -corr, y, cols);
        float var = v->sumsq(y, cols) / (float)cols;
        v->mul1(y, 1.0f / sqrtf(var + n->fp[0]), y, cols);
        if (W) apply_w(v, W, 0.0f, y, cols, true);
        if (B) apply_w(v, B, 0.0f, y, cols, false);
    }
}

void omnic__cpu_softmax(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *X = n->src[0];
    int64_t cols = omnic__tensor_cols(X), r0, r1;
    omnic__split_rows(omnic__tensor_rows(X), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)X->data + r * cols;
        float *y = (float *)n->dst->data + r * cols;
        v->mul1(x, n->fp[0], y, cols);
        float m = v->max(y, cols);
        if (m == -INFINITY) { /* every entry masked: no mass anywhere */
            for (int64_t i = 0; i < cols; i++)
                y[i] = 0.0f;
            continue;
        }
        float s = v->exp_sum(y, m, y, cols);
        v->mul1(y, 1.0f / s, y, cols);
    }
}

/* Gaussian top-k: the row's f32 mean (with layernorm's correction pass) and population
 * std, then max(0, x - cutoff). */
void omnic__cpu_gauss_topk(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *X = n->src[0];
    int64_t cols = omnic__tensor_cols(X), r0, r1;
    omnic__split_rows(omnic__tensor_rows(X), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)X->data + r * cols;
        float *y = (float *)n->dst->data + r * cols;
        float mean = v->sum(x, cols) / (float)cols;
        v->add1(x, -mean, y, cols);
        float corr = v->sum(y, cols) / (float)cols;
        if (corr != 0.0f) v->add1(y, -corr, y, cols);
        float sd = sqrtf(v->sumsq(y, cols) / (float)cols);
        float cut = mean + corr + n->fp[0] * sd;
        for (int64_t c = 0; c < cols; c++)
            y[c] = x[c] > cut ? x[c] - cut : 0.0f;
    }
}

void omnic__cpu_rms_match(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *X = n->src[0], *Ref = n->src[1];
    int64_t cols = omnic__tensor_cols(X), r0, r1;
    omnic__split_rows(omnic__tensor_rows(X), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)X->data + r * cols, *ref = (const float *)Ref->data + r * cols;
        float mx = v->sumsq(x, cols) / (float)cols, mr = v->sumsq(ref, cols) / (float)cols;
        v->mul1(x, sqrtf(mr) / sqrtf(mx > n->fp[0] ? mx : n->fp[0]), (float *)n->dst->data + r * cols, cols);
    }
}

/* Cumulative group norm: thread ith walks rows 0..hi-1 for the running statistics (the
 * prefix is recomputed by every thread, so results do not depend on nth) and writes rows
 * [lo, hi). Torch's numerics: f32 row sums, cumsums in double rounded to f32 per prefix, f32
 * mean and variance divisions; work buffer: one row of deviations per thread. */
size_t omnic__cpu_cum_groupnorm_wsize(const omnic__node *n, int nth)
{
    return (size_t)nth * omnic__cpu_walign((size_t)n->src[0]->dims[1] * sizeof(float));
}

void omnic__cpu_cum_groupnorm(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *x = n->src[0];
    const int64_t T = x->dims[0], K = x->dims[1], C = n->src[1]->dims[0];
    const float *X = x->data, *W = n->src[1]->data, eps = n->fp[0];
    float *D = n->dst->data;
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    if (lo >= hi) return;
    float *dev = omnic__cpu_wpart(wdata, omnic__cpu_walign((size_t)K * sizeof(float)), ith);
    double sum = 0, sq = 0;
    for (int64_t t = 0; t < hi; t++) {
        const float *xr = X + t * K;
        sum += v->sum(xr, K);
        const float cnt = (float)((double)(t + 1) * (double)K), mean = (float)sum / cnt;
        v->add1(xr, -mean, dev, K);
        sq += v->sumsq(dev, K);
        if (t < lo) continue;
        const float inv = 1.0f / sqrtf((float)sq / cnt + eps);
        float *y = D + t * K;
        v->mul1(dev, inv, y, K);
        for (int64_t g = 0; g < K; g += C)
            v->mul(y + g, W, y + g, C);
    }
}
