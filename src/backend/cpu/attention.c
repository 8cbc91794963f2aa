/* cpu scaled dot-product attention over one slot's KV (semantics in backend.h):
 * q [T, H, D] f32; k [S, Hkv, D], v [S, Hkv, Dv] f32 or f16; qpos i32 [T]; optional bias
 * f32 [T, S]; dst [T, H, Dv].
 *
 * Work items are (query row t, head h) pairs, split contiguously across threads. A thread
 * handles the heads of one GQA group together so each K/V row is read (and widened from
 * f16) once for all of them. Per head it is a two-pass softmax over the visible keys:
 * scores = dot(q, k) * scale -> softcap -> + bias, max, exp and sum, then the weighted sum
 * of V rows in key order. The arithmetic of one (t, h) never depends on which heads share
 * its group pass, so results are bit-identical for every thread count.
 * Work buffer per thread: scores [G, S], accumulators [G, Dv], widened K and V rows [D + Dv]. */
#include <math.h>
#include <string.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec.h"
#include "core/threadpool.h"

static size_t part_floats(const omnic__node *n)
{
    const omnic__tensor *q = n->src[0], *k = n->src[1], *v = n->src[2];
    int64_t H = q->dims[1], D = q->dims[2], S = k->dims[0], Hkv = k->dims[1], Dv = v->dims[2];
    int64_t G = Hkv > 0 ? H / Hkv : 1;
    return (size_t)(G * S + G * Dv + D + Dv);
}

size_t omnic__cpu_attention_wsize(const omnic__node *n, int nth)
{
    return omnic__cpu_walign(part_floats(n) * sizeof(float)) * (size_t)nth;
}

/* Row j, kv head g of a [S, Hkv, D] cache as f32: the row itself, or widened into buf. */
static const float *kv_row(const omnic__tensor *t, int64_t j, int64_t g, int64_t Hkv, int64_t D, float *buf)
{
    size_t off = (size_t)((j * Hkv + g) * D);
    if (t->dtype == OMNIC_DTYPE_F32) return (const float *)t->data + off;
    omnic__cpu_to_f32(t->dtype, (const uint16_t *)t->data + off, buf, D);
    return buf;
}

void omnic__cpu_attention(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *Q = n->src[0], *K = n->src[1], *V = n->src[2];
    const int32_t *qpos = n->src[3]->data;
    const float *bias = n->src[4] ? (const float *)n->src[4]->data : NULL;
    int64_t T = Q->dims[0], H = Q->dims[1], D = Q->dims[2], S = K->dims[0], Hkv = K->dims[1], Dv = V->dims[2];
    int64_t G = H / Hkv;
    float scale = n->fp[0], cap = n->fp[1];
    bool causal = n->ip[0] != 0;
    int64_t win = n->ip[1];
    float *sc = omnic__cpu_wpart(wdata, omnic__cpu_attention_wsize(n, nth) / (size_t)nth, ith);
    float *acc = sc + G * S, *kbuf = acc + G * Dv, *vbuf = kbuf + D;
    float inv_sum[64];
    int64_t r0, r1;
    omnic__split_rows(T * H, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1;) {
        int64_t t = r / H, h = r % H, g = h / G;
        int64_t hend = (g + 1) * G;
        if (t * H + hend > r1) hend = r1 - t * H;
        if (hend - h > 64) hend = h + 64; /* inv_sum capacity */
        int64_t nh = hend - h;
        const float *q = (const float *)Q->data + (t * H + h) * D;
        float *out = (float *)n->dst->data + (t * H + h) * Dv;
        int64_t p = qpos[t];
        int64_t j_lo = 0, j_hi = S;
        if (causal && p + 1 < j_hi) j_hi = p + 1 < 0 ? 0 : p + 1;
        if (win > 0 && p - win + 1 > j_lo) j_lo = p - win + 1;
        int64_t nv = j_hi - j_lo;
        r = t * H + hend;
        if (nv <= 0) {
            memset(out, 0, (size_t)(nh * Dv) * sizeof(float));
            continue;
        }
        for (int64_t j = j_lo; j < j_hi; j++) {
            const float *kr = kv_row(K, j, g, Hkv, D, kbuf);
            for (int64_t u = 0; u < nh; u++) sc[u * S + (j - j_lo)] = v->dot(q + u * D, kr, D);
        }
        for (int64_t u = 0; u < nh; u++) {
            float *s = sc + u * S;
            v->mul1(s, scale, s, nv);
            if (cap != 0.0f) v->softcap(s, cap, s, nv);
            if (bias) v->add(s, bias + t * S + j_lo, s, nv);
            float m = v->max(s, nv);
            if (m == -INFINITY) { /* bias masked every key */
                memset(s, 0, (size_t)nv * sizeof(float));
                inv_sum[u] = 0.0f;
            } else {
                inv_sum[u] = 1.0f / v->exp_sum(s, m, s, nv);
            }
        }
        memset(acc, 0, (size_t)(nh * Dv) * sizeof(float));
        for (int64_t j = j_lo; j < j_hi; j++) {
            const float *vr = kv_row(V, j, g, Hkv, Dv, vbuf);
            for (int64_t u = 0; u < nh; u++) v->axpy(sc[u * S + (j - j_lo)], vr, acc + u * Dv, Dv);
        }
        for (int64_t u = 0; u < nh; u++) v->mul1(acc + u * Dv, inv_sum[u], out + u * Dv, Dv);
    }
}
