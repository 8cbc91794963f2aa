/* cpu scaled dot-product attention (semantics in backend.h): q [T, H, D] f32; k [S, Hkv, D],
 * v [S, Hkv, Dv] f32 or f16 (a KV pool layer); qpos i32 [T]; optional bias f32 [T, S];
 * optional kv_begin i32 [T]; dst [T, H, Dv]. Row (t, h) visits only the keys
 * [max(kv_begin[t], qpos[t] - W + 1), causal ? qpos[t] + 1 : S).
 *
 * Rows (query position t, head h) are split contiguously across threads in a fixed order:
 * blocks of TB positions, inside a block by kv group, then position, then head, so a
 * thread's range falls into chunks of up to ATT_QB rows that share one kv head and nearly
 * the same key range (rows of different slots, or far-apart windows, never share). A chunk
 * reads each K/V row once for all its rows (widened from f16 in blocks of ATT_KB keys):
 * scores by a blocked dot product, then per row a two-pass softmax over its own visible
 * keys (scale -> softcap -> + bias, max, exp, sum), then the blocked weighted sum of V.
 * The arithmetic of one (t, h) never depends on which rows share its chunk (see
 * dot_rows/pv_rows in vec.h; keys outside a row's range get weight exactly 0), so results
 * are bit-identical for every thread count and every batch of query rows.
 * Work buffer per thread: scores [ATT_QB, <= S] (row stride = the chunk's key span), accumulators [ATT_QB, Dv], widened K and V
 * blocks [ATT_KB, D + Dv]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec.h"
#include "core/threadpool.h"

#define ATT_QB 32 /* rows (t, h) per chunk */
#define ATT_KB 64 /* keys per widened K/V block */

typedef struct att_geom {
    int64_t T, H, D, S, Hkv, Dv, G, TB;
} att_geom;

static att_geom geometry(const omnic__node *n)
{
    const omnic__tensor *q = n->src[0], *k = n->src[1], *v = n->src[2];
    att_geom g = {.T = q->dims[0], .H = q->dims[1], .D = q->dims[2], .S = k->dims[0], .Hkv = k->dims[1],
                  .Dv = v->dims[2]};
    g.G = g.Hkv > 0 ? g.H / g.Hkv : 1;
    g.TB = g.G < ATT_QB ? ATT_QB / g.G : 1;
    return g;
}

size_t omnic__cpu_attention_wsize(const omnic__node *n, int nth)
{
    att_geom g = geometry(n);
    size_t f = (size_t)(ATT_QB * g.S + ATT_QB * g.Dv + ATT_KB * (g.D + g.Dv));
    return omnic__cpu_walign(f * sizeof(float)) * (size_t)nth;
}

/* Row r of the split order -> (t, h); *key identifies its (position block, kv group). */
static void row_of(const att_geom *g, int64_t r, int64_t *t, int64_t *h, int64_t *key)
{
    int64_t blk = r / (g->TB * g->H), rem = r % (g->TB * g->H);
    int64_t t0 = blk * g->TB, tbn = g->T - t0 < g->TB ? g->T - t0 : g->TB;
    int64_t grp = rem / (tbn * g->G), r2 = rem % (tbn * g->G);
    *t = t0 + r2 / g->G;
    *h = grp * g->G + r2 % g->G;
    *key = blk * g->Hkv + grp;
}

/* Keys [j0, j0 + nk) of kv head grp as f32 rows: in place (f32, stride Hkv*D) or widened into buf. */
static const float *kv_block(const omnic__tensor *t, int64_t j0, int64_t nk, int64_t grp, int64_t Hkv, int64_t D,
                             float *buf, int64_t *ld)
{
    if (t->dtype == OMNIC_DTYPE_F32) {
        *ld = Hkv * D;
        return (const float *)t->data + (j0 * Hkv + grp) * D;
    }
    for (int64_t j = 0; j < nk; j++)
        omnic__cpu_to_f32(t->dtype, (const uint16_t *)t->data + ((j0 + j) * Hkv + grp) * D, buf + j * D, D);
    *ld = D;
    return buf;
}

void omnic__cpu_attention(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *Q = n->src[0], *K = n->src[1], *V = n->src[2];
    const int32_t *qpos = n->src[3]->data;
    const float *bias = n->src[4] ? (const float *)n->src[4]->data : NULL;
    const int32_t *kv_begin = n->src[5] ? (const int32_t *)n->src[5]->data : NULL; /* [T]: first visible row */
    att_geom g = geometry(n);
    float scale = n->fp[0], cap = n->fp[1];
    bool causal = n->ip[0] != 0;
    int64_t win = n->ip[1];
    float *sc = omnic__cpu_wpart(wdata, omnic__cpu_attention_wsize(n, nth) / (size_t)nth, ith);
    float *acc = sc + ATT_QB * g.S, *kbuf = acc + ATT_QB * g.Dv, *vbuf = kbuf + ATT_KB * g.D;
    const float *qrow[ATT_QB];
    float *orow[ATT_QB], inv_sum[ATT_QB];
    int64_t tq[ATT_QB], jlo[ATT_QB], jhi[ATT_QB];
    int64_t r0, r1;
    omnic__split_rows(g.T * g.H, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1;) {
        /* gather one chunk: consecutive rows sharing (position block, kv group) */
        int64_t nq = 0, key0 = -1, grp = 0, J0 = g.S, J1 = 0;
        for (; r < r1 && nq < ATT_QB; r++, nq++) {
            int64_t t, h, key;
            row_of(&g, r, &t, &h, &key);
            int64_t p = qpos[t], lo = kv_begin ? kv_begin[t] : 0, hi = g.S;
            if (causal && p + 1 < hi) hi = p + 1 < 0 ? 0 : p + 1;
            if (win > 0 && p - win + 1 > lo) lo = p - win + 1;
            if (hi < lo) hi = lo;
            if (nq == 0) {
                key0 = key;
                grp = h / g.G;
            } else if (key != key0) {
                break;
            } else if (hi > lo && J1 > J0 && (llabs(lo - J0) > ATT_KB || llabs(hi - J1) > ATT_KB)) {
                break; /* key range far from the chunk's (another slot, a distant window) */
            }
            tq[nq] = t;
            jlo[nq] = lo;
            jhi[nq] = hi;
            qrow[nq] = (const float *)Q->data + (t * g.H + h) * g.D;
            orow[nq] = (float *)n->dst->data + (t * g.H + h) * g.Dv;
            if (hi > lo && lo < J0) J0 = lo;
            if (hi > lo && hi > J1) J1 = hi;
        }
        if (J1 <= J0) { /* no row of the chunk sees any key */
            for (int64_t u = 0; u < nq; u++) memset(orow[u], 0, (size_t)g.Dv * sizeof(float));
            continue;
        }
        int64_t nv = J1 - J0;
        for (int64_t j0 = J0; j0 < J1; j0 += ATT_KB) {
            int64_t nk = J1 - j0 < ATT_KB ? J1 - j0 : ATT_KB, ldk;
            const float *kb = kv_block(K, j0, nk, grp, g.Hkv, g.D, kbuf, &ldk);
            v->dot_rows(qrow, nq, kb, ldk, nk, g.D, sc + (j0 - J0), nv);
        }
        for (int64_t u = 0; u < nq; u++) {
            float *row = sc + u * nv;
            int64_t a = jlo[u] - J0, b = jhi[u] - J0, cnt = b - a;
            inv_sum[u] = 0.0f; /* output zeros unless some key gets weight */
            if (cnt > 0) {
                float *s = row + a;
                v->mul1(s, scale, s, cnt);
                if (cap != 0.0f) v->softcap(s, cap, s, cnt);
                if (bias) v->add(s, bias + tq[u] * g.S + jlo[u], s, cnt);
                float m = v->max(s, cnt);
                if (m == -INFINITY) memset(s, 0, (size_t)cnt * sizeof(float)); /* bias masked every key */
                else inv_sum[u] = 1.0f / v->exp_sum(s, m, s, cnt);
            } else {
                a = b = 0;
            }
            /* keys outside the row's range weigh exactly 0 */
            memset(row, 0, (size_t)a * sizeof(float));
            memset(row + b, 0, (size_t)(nv - b) * sizeof(float));
        }
        memset(acc, 0, (size_t)(nq * g.Dv) * sizeof(float));
        for (int64_t j0 = J0; j0 < J1; j0 += ATT_KB) {
            int64_t nk = J1 - j0 < ATT_KB ? J1 - j0 : ATT_KB, ldv;
            const float *vb = kv_block(V, j0, nk, grp, g.Hkv, g.Dv, vbuf, &ldv);
            v->pv_rows(sc + (j0 - J0), nv, nq, vb, ldv, nk, g.Dv, acc, g.Dv);
        }
        for (int64_t u = 0; u < nq; u++) v->mul1(acc + u * g.Dv, inv_sum[u], orow[u], g.Dv);
    }
}
