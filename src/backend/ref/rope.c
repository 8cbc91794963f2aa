/* Reference RoPE (rotate-half and interleaved, partial rotary, explicit frequency
 * tables, attention factor).
 *
 * Rounding that matters for Hugging Face parity: HF builds the rotation in f32,
 *     inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))     (f32)
 *     freqs    = inv_freq[None, :, None] @ position_ids[:, None, :].float()  (f32)
 *     cos, sin = freqs.cos() * attention_scaling, freqs.sin() * attention_scaling
 * so the angle pos * inv_freq is rounded to f32 before cos/sin. At pos ~ 1e4 one f32
 * ulp of the angle is ~1e-3 rad, far above f32 noise in the result: computing the
 * angle in double would be more accurate and yet disagree with HF. We therefore
 * reproduce each f32 rounding: the exponent (2i)/n_rot, powf, the reciprocal, the
 * angle product, cos/sin (evaluated in double from the f32 angle and rounded, i.e.
 * the correctly rounded f32 cos/sin in all but rare ties) and the attention factor
 * product. Only the final rotation x*cos -/+ x'*sin is done in double, rounded once. */
#include <math.h>

#include "backend/ref/ref.h"

/* inv_freq[i] exactly as HF's float32 arithmetic produces it. */
static float rope_inv_freq(float base, int64_t i, int64_t n_rot)
{
    float expo = (float)(2 * i) / (float)n_rot;
    return 1.0f / powf(base, expo);
}

/* dst [T, H, D] = x rotated by position pos[t]; x f32 [T, H, D] (src[0]), pos i32 [T]
 * (src[1]) or M-RoPE coordinates i32 [T, 3] with sections ip[2..4], optional inv_freq f32
 * [n_rot/2] (src[2]), or [2, n_rot/2] with a per-row table selector i32 [T] (src[3]). ip[0] = n_rot, ip[1] =
 * mode (0 rotate-half: pairs (i, i + n_rot/2); 1 interleaved: pairs (2i, 2i+1)). fp[0] = theta base, fp[1] =
 * attention factor. Rows are (t, h) pairs. */
void omnic__ref_rope(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0];
    const int32_t *pos = n->src[1]->data;
    const float *tables = n->src[2] ? (const float *)n->src[2]->data : NULL;
    const int32_t *sel = n->src[3] ? (const int32_t *)n->src[3]->data : NULL; /* row -> table row */
    int64_t T = x->dims[0], H = x->dims[1], D = x->dims[2];
    int64_t n_rot = n->ip[0], half = n_rot / 2;
    bool interleaved = n->ip[1] == 1;
    const float *X = x->data;
    float *Y = n->dst->data;

    int64_t lo, hi;
    omnic__split_rows(T * H, ith, nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        const float *xr = X + row * D;
        float *yr = Y + row * D;
        const int64_t t = row / H;
        const float *tbl = tables && sel ? tables + sel[t] * (n_rot / 2) : tables;
        for (int64_t i = 0; i < half; i++) {
            /* M-RoPE: pos [T, 3], frequency i reads the coordinate of its section */
            int axis = omnic__mrope_axis(n->ip, i);
            float p = n->src[1]->ndim == 2 ? (float)pos[t * 3 + axis] : (float)pos[t];
            float inv = tbl ? tbl[i] : rope_inv_freq(n->fp[0], i, n_rot);
            float angle = p * inv;                          /* f32 product, as HF */
            float c = (float)cos((double)angle) * n->fp[1]; /* f32 cos, f32 product */
            float s = (float)sin((double)angle) * n->fp[1];
            int64_t i0 = interleaved ? 2 * i : i;
            int64_t i1 = interleaved ? 2 * i + 1 : i + half;
            double x0 = xr[i0], x1 = xr[i1];
            yr[i0] = (float)(x0 * c - x1 * s);
            yr[i1] = (float)(x1 * c + x0 * s);
        }
        for (int64_t d = n_rot; d < D; d++)
            yr[d] = xr[d];
    }
}
