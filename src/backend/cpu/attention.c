/* cpu scaled dot-product attention (semantics in backend.h): q [T, H, D] f32; k [S, Hkv, D],
 * v [S, Hkv, Dv] f32 or f16 (a KV pool layer); qpos i32 [T]; optional bias f32 [T, S] (or, ip[3] = M
 * > 0, a relative-position table [2M, H]);
 * optional kv_begin i32 [T]; optional span i32 [T, 2]; dst [T, H, Dv]. Row (t, h) visits only
 * the keys [max(kv_begin[t], qpos[t] - W + 1), causal ? qpos[t] + 1 : S), widened to hold its
 * span's keys when it has one.
 *
 * Rows (query position t, head h) are split contiguously across threads in a fixed order:
 * blocks of TB positions, inside a block by kv group, then position, then head, so a
 * thread's range falls into chunks of up to ATT_QB (tiled: ATT_QB_TILED) rows that share one kv head and
 * nearly the same key range (rows of different slots, or far-apart windows, never share). A chunk reads each
 * K/V row once for all its rows (widened from f16 in blocks of ATT_KB keys), and evaluates them one of two
 * ways:
 *  - two-pass (ip[2] = 0): scores of the chunk's whole key span by a blocked dot product,
 *    then per row a softmax over its own visible keys (scale -> softcap -> + bias, max, exp,
 *    sum), then the blocked weighted sum of V. Work buffer per thread: scores
 *    [ATT_QB, <= S] (row stride = the chunk's key span), accumulators [ATT_QB, Dv], widened
 *    K and V blocks [ATT_KB, D + Dv]: linear in S.
 *  - tiled (ip[2] = 1, long bidirectional ranges such as vision towers): key tiles of
 *    ATT_KB keys at multiples of ATT_KB (absolute key index), transposed once per tile so
 *    the scores are broadcast multiply-adds (dot_rows_t, no horizontal sums), an online softmax per row
 *    (running max m and sum l; when a tile raises m, acc and l are multiplied by
 *    exp(m_old - m_new); a tile that every row of the chunk sees whole, without soft cap or
 *    bias, takes one fused softmax_tile call), the tile's probabilities added into acc at
 *    once. Work buffer per thread: scores [ATT_QB_TILED, ATT_KB], accumulators [ATT_QB_TILED,
 *    Dv], the K tile [D, ATT_KB], the V tile [ATT_KB, Dv], a widened K tile [ATT_KB, D] and the
 *    chunk's q rows [ATT_QB_TILED, D], all packed (rows that sit H * D apart in the tensors
 *    would share a few L1 sets): independent of S and T.
 * Either way the arithmetic of one (t, h) never depends on which rows share its chunk (see
 * dot_rows/dot_rows_t/pv_rows in vec.h; keys outside a row's range get weight exactly 0; tiles sit at
 * fixed key indices), so results are bit-identical for every thread count and every batch
 * of query rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec.h"
#include "core/threadpool.h"

#define ATT_QB 32        /* rows (t, h) per chunk, two-pass */
#define ATT_QB_TILED 256 /* tiled: more rows share (and amortize) each transposed K tile */
#define ATT_KB 64        /* keys per widened K/V block (and per tile of the tiled form) */

typedef struct att_geom {
    int64_t T, H, D, S, Hkv, Dv, G, QB, TB; /* QB: rows per chunk; TB: positions per block */
} att_geom;

static att_geom geometry(const omnic__node *n)
{
    const omnic__tensor *q = n->src[0], *k = n->src[1], *v = n->src[2];
    att_geom g = {.T = q->dims[0],
                  .H = q->dims[1],
                  .D = q->dims[2],
                  .S = k->dims[0],
                  .Hkv = k->dims[1],
                  .Dv = v->dims[2]};
    g.G = g.Hkv > 0 ? g.H / g.Hkv : 1;
    g.QB = n->ip[2] ? ATT_QB_TILED : ATT_QB;
    g.TB = g.G < g.QB ? g.QB / g.G : 1;
    return g;
}

/* floats of one thread's part of the work buffer: scores, accumulators, K (tiled: transposed)
 * and V blocks, and (tiled) a widened K tile and the chunk's q rows */
static size_t part_floats(const omnic__node *n, const att_geom *g)
{
    int64_t span = n->ip[2] ? ATT_KB : g->S; /* scores per row */
    return (size_t)(g->QB * span + g->QB * g->Dv + ATT_KB * (g->D + g->Dv) +
                    (n->ip[2] ? ATT_KB * g->D + g->QB * g->D : 0));
}

size_t omnic__cpu_attention_wsize(const omnic__node *n, int nth)
{
    att_geom g = geometry(n);
    return omnic__cpu_walign(part_floats(n, &g) * sizeof(float)) * (size_t)nth;
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
static const float *kv_block(const omnic__tensor *t, int64_t j0, int64_t nk, int64_t grp, int64_t Hkv,
                             int64_t D, float *buf, int64_t *ld)
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

/* Rows [j0, j0 + nk) of kv head grp as f32 rows [nk, D] in buf (widened when f16 / bf16). */
static const float *kv_tile(const omnic__tensor *t, int64_t j0, int64_t nk, int64_t grp, int64_t Hkv,
                            int64_t D, float *buf)
{
    for (int64_t j = 0; j < nk; j++) {
        if (t->dtype == OMNIC_DTYPE_F32)
            memcpy(buf + j * D, (const float *)t->data + ((j0 + j) * Hkv + grp) * D,
                   (size_t)D * sizeof(float));
        else
            omnic__cpu_to_f32(t->dtype, (const uint16_t *)t->data + ((j0 + j) * Hkv + grp) * D, buf + j * D,
                              D);
    }
    return buf;
}

/* Keys [j0, j0 + nk) of kv head grp transposed into kt [D, ATT_KB] (key j = column j - j0).
 * f16 / bf16 caches are widened first, into wide [nk, D]. Written in store order, each store
 * beside the last: key by key, the stores ATT_KB floats apart stalled behind the loads (Qwen2-VL
 * tower shape, 3996 patches, AVX2, 2 threads: 0.67 -> 0.59 s a layer). */
static void k_tile_t(const omnic__tensor *t, int64_t j0, int64_t nk, int64_t grp, int64_t Hkv, int64_t D,
                     float *wide, float *kt)
{
    const float *src[ATT_KB];
    for (int64_t j = 0; j < nk; j++) {
        src[j] = (const float *)t->data + ((j0 + j) * Hkv + grp) * D;
        if (t->dtype != OMNIC_DTYPE_F32) {
            omnic__cpu_to_f32(t->dtype, (const uint16_t *)t->data + ((j0 + j) * Hkv + grp) * D, wide + j * D,
                              D);
            src[j] = wide + j * D;
        }
    }
    for (int64_t d = 0; d < D; d++)
        for (int64_t j = 0; j < nk; j++)
            kt[d * ATT_KB + j] = src[j][d];
}

/* Up to QB rows of one kv group with nearby key ranges; [J0, J1) spans every visible one. */
typedef struct att_chunk {
    int64_t nq, grp, J0, J1;
    const float *qrow[ATT_QB_TILED];
    float *orow[ATT_QB_TILED];
    int64_t tq[ATT_QB_TILED], jlo[ATT_QB_TILED], jhi[ATT_QB_TILED]; /* position, visible keys [jlo, jhi) */
    int64_t hq[ATT_QB_TILED];                                       /* head */
} att_chunk;

/* Gathers the chunk that starts at split row r (< r1); returns the row after it. */
static int64_t gather_chunk(const omnic__node *n, const att_geom *g, int64_t r, int64_t r1, att_chunk *c)
{
    const int32_t *qpos = n->src[3]->data;
    const int32_t *kv_begin =
        n->src[5] ? (const int32_t *)n->src[5]->data : NULL;                   /* [T]: first visible row */
    const int32_t *span = n->src[6] ? (const int32_t *)n->src[6]->data : NULL; /* [T, 2] */
    const bool causal = n->ip[0] != 0;
    const int64_t win = n->ip[1];
    /* tiled: every row pays for the chunk's whole span, so adjacent 64-row windows stay apart */
    const int64_t near = n->ip[2] ? ATT_KB / 2 : ATT_KB;
    int64_t nq = 0, key0 = -1;
    c->grp = 0, c->J0 = g->S, c->J1 = 0;
    for (; r < r1 && nq < g->QB; r++, nq++) {
        int64_t t, h, key;
        row_of(g, r, &t, &h, &key);
        int64_t p = qpos[t], lo = kv_begin ? kv_begin[t] : 0, hi = g->S;
        if (causal && p + 1 < hi) hi = p + 1 < 0 ? 0 : p + 1;
        if (win > 0 && p - win + 1 > lo) lo = p - win + 1;
        if (span && span[2 * t] < span[2 * t + 1]) { /* a bidirectional block holding the row */
            int64_t base = kv_begin ? kv_begin[t] : 0, b = base + span[2 * t], e = base + span[2 * t + 1];
            if (b < lo) lo = b;
            if (e > hi) hi = e < g->S ? e : g->S;
        }
        if (hi < lo) hi = lo;
        if (nq == 0) {
            key0 = key;
            c->grp = h / g->G;
        } else if (key != key0) {
            break;
        } else if (hi > lo && c->J1 > c->J0 && (llabs(lo - c->J0) > near || llabs(hi - c->J1) > near)) {
            break; /* key range far from the chunk's (another slot, a distant window) */
        }
        c->tq[nq] = t;
        c->hq[nq] = h;
        c->jlo[nq] = lo;
        c->jhi[nq] = hi;
        c->qrow[nq] = (const float *)n->src[0]->data + (t * g->H + h) * g->D;
        c->orow[nq] = (float *)n->dst->data + (t * g->H + h) * g->Dv;
        if (hi > lo && lo < c->J0) c->J0 = lo;
        if (hi > lo && hi > c->J1) c->J1 = hi;
    }
    c->nq = nq;
    return r;
}

/* Scores s[0, cnt) of row u of chunk c for keys from j: scale -> softcap -> + bias (a [T, S]
 * row, or a relative-position table [2M, H] read by clamped distance); returns their max. */
static float adjust_scores(const omnic__cpu_vec *v, const omnic__node *n, const att_geom *g,
                           const att_chunk *c, int64_t u, int64_t j, float *s, int64_t cnt)
{
    const float *bias = n->src[4] ? (const float *)n->src[4]->data : NULL;
    const int64_t t = c->tq[u], M = n->ip[3];
    v->mul1(s, n->fp[0], s, cnt);
    if (n->fp[1] != 0.0f) v->softcap(s, n->fp[1], s, cnt);
    if (bias && M > 0) {
        const int64_t p = ((const int32_t *)n->src[3]->data)[t], h = c->hq[u];
        for (int64_t i = 0; i < cnt; i++) {
            int64_t r = j + i - p;
            r = r < -M ? -M : r > M - 1 ? M - 1 : r;
            s[i] += bias[(r + M) * g->H + h];
        }
    } else if (bias) {
        v->add(s, bias + t * g->S + j, s, cnt);
    }
    return v->max(s, cnt);
}

static void two_pass(const omnic__cpu_vec *v, const omnic__node *n, const att_geom *g, const att_chunk *c,
                     float *sc, float *acc, float *kbuf, float *vbuf)
{
    const int64_t nq = c->nq, J0 = c->J0, J1 = c->J1, nv = J1 - J0;
    float inv_sum[ATT_QB_TILED];
    for (int64_t j0 = J0; j0 < J1; j0 += ATT_KB) {
        int64_t nk = J1 - j0 < ATT_KB ? J1 - j0 : ATT_KB, ldk;
        const float *kb = kv_block(n->src[1], j0, nk, c->grp, g->Hkv, g->D, kbuf, &ldk);
        v->dot_rows(c->qrow, nq, kb, ldk, nk, g->D, sc + (j0 - J0), nv);
    }
    for (int64_t u = 0; u < nq; u++) {
        float *row = sc + u * nv;
        int64_t a = c->jlo[u] - J0, b = c->jhi[u] - J0, cnt = b - a;
        inv_sum[u] = 0.0f; /* output zeros unless some key gets weight */
        if (cnt > 0) {
            float *s = row + a;
            float m = adjust_scores(v, n, g, c, u, c->jlo[u], s, cnt);
            if (m == -INFINITY)
                memset(s, 0, (size_t)cnt * sizeof(float)); /* bias masked every key */
            else
                inv_sum[u] = 1.0f / v->exp_sum(s, m, s, cnt);
        } else {
            a = b = 0;
        }
        /* keys outside the row's range weigh exactly 0 */
        memset(row, 0, (size_t)a * sizeof(float));
        memset(row + b, 0, (size_t)(nv - b) * sizeof(float));
    }
    memset(acc, 0, (size_t)(nq * g->Dv) * sizeof(float));
    for (int64_t j0 = J0; j0 < J1; j0 += ATT_KB) {
        int64_t nk = J1 - j0 < ATT_KB ? J1 - j0 : ATT_KB, ldv;
        const float *vb = kv_block(n->src[2], j0, nk, c->grp, g->Hkv, g->Dv, vbuf, &ldv);
        v->pv_rows(sc + (j0 - J0), nv, nq, vb, ldv, nk, g->Dv, acc, g->Dv);
    }
    for (int64_t u = 0; u < nq; u++)
        v->mul1(acc + u * g->Dv, inv_sum[u], c->orow[u], g->Dv);
}

/* The online-softmax step of tile [b0, b1) for every row of chunk c, rows seeing part of it or
 * with a soft cap or bias: scores sc [nq, ATT_KB] become the tile's probabilities (0 for keys a
 * row does not see), running max m and sum l updated, acc rescaled where m rose. Returns whether
 * any row saw a key. */
static bool softmax_rows(const omnic__cpu_vec *v, const omnic__node *n, const att_geom *g, const att_chunk *c,
                         int64_t b0, int64_t b1, float *sc, float *m, float *l, float *acc)
{
    const int64_t nk = b1 - b0;
    bool any = false;
    for (int64_t u = 0; u < c->nq; u++) {
        float *row = sc + u * ATT_KB;
        int64_t a = (c->jlo[u] > b0 ? c->jlo[u] : b0) - b0, b = (c->jhi[u] < b1 ? c->jhi[u] : b1) - b0;
        float bm = -INFINITY;
        if (b > a) bm = adjust_scores(v, n, g, c, u, b0 + a, row + a, b - a);
        if (bm == -INFINITY) { /* the row sees no key of this tile (range, or bias masked all) */
            memset(row, 0, (size_t)nk * sizeof(float));
            continue;
        }
        const float r = omnic__softmax_rescale(bm, &m[u], &l[u]);
        if (r != 1.0f) v->mul1(acc + u * g->Dv, r, acc + u * g->Dv, g->Dv);
        l[u] += v->exp_sum(row + a, m[u], row + a, b - a);
        memset(row, 0, (size_t)a * sizeof(float));
        memset(row + b, 0, (size_t)(nk - b) * sizeof(float));
        any = true;
    }
    return any;
}

/* Online softmax over key tiles [j0, j0 + ATT_KB) at multiples of ATT_KB, clipped to [J0, J1). */
static void tiled(const omnic__cpu_vec *v, const omnic__node *n, const att_geom *g, const att_chunk *c,
                  float *sc, float *acc, float *kbuf, float *vbuf, float *qbuf)
{
    const int64_t nq = c->nq;
    const float *qrow[ATT_QB_TILED]; /* the chunk's q rows packed: read once per tile, they stay cached */
    for (int64_t u = 0; u < nq; u++) {
        memcpy(qbuf + u * g->D, c->qrow[u], (size_t)g->D * sizeof(float));
        qrow[u] = qbuf + u * g->D;
    }
    float m[ATT_QB_TILED], l[ATT_QB_TILED]; /* running max and sum of exp(s - m) per row */
    for (int64_t u = 0; u < nq; u++)
        m[u] = -INFINITY, l[u] = 0.0f;
    memset(acc, 0, (size_t)(nq * g->Dv) * sizeof(float));
    /* [all_lo, all_hi): the keys every row sees. Tiles inside it, without soft cap or bias, take
     * the fused step (one call for the tile, not five per row; the same bits) */
    int64_t all_lo = c->J0, all_hi = c->J1;
    for (int64_t u = 0; u < nq; u++) {
        all_lo = c->jlo[u] > all_lo ? c->jlo[u] : all_lo;
        all_hi = c->jhi[u] < all_hi ? c->jhi[u] : all_hi;
    }
    const bool plain = n->fp[1] == 0.0f && !n->src[4];
    for (int64_t t0 = c->J0 / ATT_KB * ATT_KB; t0 < c->J1; t0 += ATT_KB) {
        const int64_t b0 = t0 > c->J0 ? t0 : c->J0, b1 = t0 + ATT_KB < c->J1 ? t0 + ATT_KB : c->J1,
                      nk = b1 - b0;
        k_tile_t(n->src[1], b0, nk, c->grp, g->Hkv, g->D, vbuf + ATT_KB * g->Dv, kbuf);
        v->dot_rows_t(qrow, nq, kbuf, ATT_KB, nk, g->D, sc, ATT_KB);
        bool any;
        if (plain && all_lo <= b0 && b1 <= all_hi) {
            float r[ATT_QB_TILED]; /* each row's rescale of acc */
            any = v->softmax_tile(sc, ATT_KB, nq, nk, n->fp[0], m, l, r);
            for (int64_t u = 0; u < nq; u++)
                if (r[u] != 1.0f) v->mul1(acc + u * g->Dv, r[u], acc + u * g->Dv, g->Dv);
        } else {
            any = softmax_rows(v, n, g, c, b0, b1, sc, m, l, acc);
        }
        if (!any) continue;
        /* V rows sit Hkv * Dv apart in the layer; copied contiguous, the tile stays in cache
         * (at strides like 16 * 80 floats its rows would share a few L1 sets) */
        const float *vb = kv_tile(n->src[2], b0, nk, c->grp, g->Hkv, g->Dv, vbuf);
        v->pv_rows(sc, ATT_KB, nq, vb, g->Dv, nk, g->Dv, acc, g->Dv);
    }
    for (int64_t u = 0; u < nq; u++)
        v->mul1(acc + u * g->Dv, l[u] > 0.0f ? 1.0f / l[u] : 0.0f, c->orow[u], g->Dv);
}

void omnic__cpu_attention(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    att_geom g = geometry(n);
    const int64_t span = n->ip[2] ? ATT_KB : g.S;
    float *sc = omnic__cpu_wpart(wdata, omnic__cpu_attention_wsize(n, nth) / (size_t)nth, ith);
    float *acc = sc + g.QB * span, *kbuf = acc + g.QB * g.Dv, *vbuf = kbuf + ATT_KB * g.D;
    att_chunk c;
    int64_t r0, r1;
    omnic__split_rows(g.T * g.H, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1;) {
        r = gather_chunk(n, &g, r, r1, &c);
        if (c.J1 <= c.J0) { /* no row of the chunk sees any key */
            for (int64_t u = 0; u < c.nq; u++)
                memset(c.orow[u], 0, (size_t)g.Dv * sizeof(float));
            continue;
        }
        if (n->ip[2])
            tiled(v, n, &g, &c, sc, acc, kbuf, vbuf, vbuf + ATT_KB * (g.Dv + g.D));
        else
            two_pass(v, n, &g, &c, sc, acc, kbuf, vbuf);
    }
}
