/* cpu RoPE: dst = x rotated by position, x [T, n_heads, head_dim] f32, pos i32 [T].
 * Rows (t, head) are split across threads; cos/sin for a position are computed once per
 * run of rows with the same t into the thread's part of the work buffer, with the f32
 * roundings backend.h specifies (inv_freq, angle, cos/sin rounded from double, times the
 * attention factor); the rotation itself is done in double and rounded once, as in ref,
 * so cpu and ref agree bit for bit. */
#include <math.h>
#include <string.h>

#include "backend/cpu/ops.h"
#include "core/threadpool.h"

size_t omnic__cpu_rope_wsize(const omnic__node *n, int nth)
{
    return omnic__cpu_walign((size_t)(n->ip[0] > 0 ? n->ip[0] : 1) * sizeof(float)) * (size_t)nth;
}

void omnic__cpu_rope(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__tensor *X = n->src[0];
    const int32_t *pos = n->src[1]->data;
    const float *tables = n->src[2] ? (const float *)n->src[2]->data : NULL, *freqs = tables;
    const int32_t *sel = n->src[3] ? (const int32_t *)n->src[3]->data : NULL; /* row -> table row */
    int64_t T = X->dims[0], H = X->dims[1], D = X->dims[2];
    int64_t n_rot = n->ip[0], half = n_rot / 2;
    bool interleaved = n->ip[1] == 1;
    float base = n->fp[0], attn = n->fp[1];
    const bool mrope = n->src[1]->ndim == 2; /* [T, 3]: frequency i reads coordinate by section */
    float *cs = omnic__cpu_wpart(wdata, omnic__cpu_rope_wsize(n, nth) / (size_t)nth, ith);
    float *sn = cs + half;
    int64_t r0, r1, cur_t = -1;
    omnic__split_rows(T * H, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t t = r / H;
        if (t != cur_t) {
            if (sel) freqs = tables + sel[t] * half;
            for (int64_t i = 0; i < half; i++) {
                float p = mrope ? (float)pos[t * 3 + omnic__mrope_axis(n->ip, i)] : (float)pos[t];
                float inv = freqs ? freqs[i] : 1.0f / powf(base, (float)(2 * i) / (float)n_rot);
                float ang = p * inv;
                cs[i] = (float)cos((double)ang) * attn;
                sn[i] = (float)sin((double)ang) * attn;
            }
            cur_t = t;
        }
        const float *x = (const float *)X->data + r * D;
        float *y = (float *)n->dst->data + r * D;
        if (interleaved) {
            for (int64_t i = 0; i < half; i++) {
                double x0 = x[2 * i], x1 = x[2 * i + 1];
                y[2 * i] = (float)(x0 * cs[i] - x1 * sn[i]);
                y[2 * i + 1] = (float)(x1 * cs[i] + x0 * sn[i]);
            }
        } else {
            for (int64_t i = 0; i < half; i++) {
                double x0 = x[i], x1 = x[i + half];
                y[i] = (float)(x0 * cs[i] - x1 * sn[i]);
                y[i + half] = (float)(x1 * cs[i] + x0 * sn[i]);
            }
        }
        if (n_rot < D && x != y) memcpy(y + n_rot, x + n_rot, (size_t)(D - n_rot) * sizeof(float));
    }
}
