/* cpu mixture-of-experts ops (backend.h MOE_ROUTE, MOE_WEIGHTS, MATMUL_ID, MOE_SUM).
 *
 * matmul_id: per expert, the rows routed to it are gathered and multiplied by that expert's
 * [N, K] weights with the matmul kernel itself (one thread, a fixed chunk of MOE_CHUNK output
 * columns per task), then scattered. Thread ith takes tasks ith, ith + nth, ... of every expert
 * that has rows: a task's rows, chunk and kernel call are the same whatever nth is, so results
 * are bit-identical across thread counts; with ip[2] (batch-invariant) the matmul kernel takes
 * its row-independent path, so a row's result does not depend on the other rows routed with it.
 * Experts with no rows are never touched (no weight read, no compute); rows with a negative id
 * are zeros. */
#include <math.h>
#include <string.h>

#include "backend/cpu/ops.h"
#include "core/dtype.h"
#include "core/threadpool.h"

/* Output columns per matmul_id task (a multiple of 16 for the x16 weight layouts). */
#define MOE_CHUNK 128

void omnic__cpu_moe_route(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0];
    const int64_t T = omnic__tensor_rows(x), E = omnic__tensor_cols(x);
    const int k = n->ip[0];
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++) {
        const float *r = (const float *)x->data + t * E;
        int32_t *out = (int32_t *)n->dst->data + t * k;
        int have = 0; /* out[0..have) by value descending, ties by index ascending */
        for (int64_t e = 0; e < E; e++) {
            const float v = r[e];
            int pos = have;
            while (pos > 0) { /* NaN ranks below every number; equal values keep index order */
                const float u = r[out[pos - 1]];
                const bool above = isnan(u) ? !isnan(v) : !isnan(v) && v > u;
                if (!above) break;
                pos--;
            }
            if (pos >= k) continue;
            for (int q = (have < k ? have : k - 1); q > pos; q--)
                out[q] = out[q - 1];
            out[pos] = (int32_t)e;
            if (have < k) have++;
        }
        for (int a = 1; a < k; a++) /* ascending expert order */
            for (int b = a; b > 0 && out[b - 1] > out[b]; b--) {
                int32_t s = out[b];
                out[b] = out[b - 1];
                out[b - 1] = s;
            }
    }
}

void omnic__cpu_moe_weights(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *x = n->src[0], *ids = n->src[1];
    const int64_t T = omnic__tensor_rows(x), E = omnic__tensor_cols(x), k = omnic__tensor_cols(ids);
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++) {
        const float *r = (const float *)x->data + t * E;
        const int32_t *id = (const int32_t *)ids->data + t * k;
        float *w = (float *)n->dst->data + t * k;
        float m = -INFINITY, s = 0, sel = 0;
        for (int64_t e = 0; e < E; e++)
            m = r[e] > m ? r[e] : m;
        for (int64_t e = 0; e < E; e++)
            s += expf(r[e] - m);
        for (int64_t j = 0; j < k; j++)
            sel += w[j] = expf(r[id[j]] - m) / s;
        if (n->ip[0])
            for (int64_t j = 0; j < k; j++)
                w[j] /= sel;
    }
}

/* The matmul sub-node of one task: rows g [R, K] times rows [row0, row0 + nc) of w into tmp. */
static void task_node(const omnic__node *n, omnic__tensor *g, omnic__tensor *wv, omnic__tensor *tmp,
                      omnic__node *out)
{
    *out = (omnic__node){.op = OMNIC_OP_MATMUL, .src = {g, wv}, .dst = tmp};
    out->ip[0] = n->ip[2];
}

/* Per-thread work: gathered rows [T, K] f32, their (t, j) indices [T], the task's output
 * [T, MOE_CHUNK] f32, and the matmul kernel's own buffer for such a task. */
static size_t sub_wsize(const omnic__node *n, int64_t T)
{
    const omnic__tensor *w = n->src[1];
    const int64_t K = omnic__tensor_cols(n->src[0]), nc = n->ip[0] < MOE_CHUNK ? n->ip[0] : MOE_CHUNK;
    omnic__tensor g, wv, tmp;
    int64_t gd[2] = {T, K}, wd[2] = {nc, K}, td[2] = {T, nc};
    omnic_err err;
    if (omnic__tensor_init(&g, OMNIC_DTYPE_F32, 2, gd, &err) != OMNIC_OK ||
        omnic__tensor_init(&wv, w->dtype, 2, wd, &err) != OMNIC_OK ||
        omnic__tensor_init(&tmp, OMNIC_DTYPE_F32, 2, td, &err) != OMNIC_OK)
        return 0;
    omnic__node sub;
    task_node(n, &g, &wv, &tmp, &sub);
    return omnic__cpu_matmul_wsize(&sub, 1);
}

static size_t part_bytes(const omnic__node *n)
{
    const int64_t T = omnic__tensor_rows(n->src[2]), K = omnic__tensor_cols(n->src[0]);
    return omnic__cpu_walign((size_t)(T * K) * sizeof(float)) +
           omnic__cpu_walign((size_t)T * sizeof(int64_t)) +
           omnic__cpu_walign((size_t)(T * MOE_CHUNK) * sizeof(float)) + omnic__cpu_walign(sub_wsize(n, T));
}

size_t omnic__cpu_matmul_id_wsize(const omnic__node *n, int nth)
{
    return part_bytes(n) * (size_t)nth;
}

void omnic__cpu_matmul_id(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__tensor *a = n->src[0], *w = n->src[1], *ids = n->src[2];
    const int64_t T = omnic__tensor_rows(ids), k = omnic__tensor_cols(ids), K = omnic__tensor_cols(a);
    const int64_t N = n->ip[0], E = w->dims[0] / N, tasks = (N + MOE_CHUNK - 1) / MOE_CHUNK;
    const bool per_slot = n->ip[1] != 0;
    const int32_t *id = ids->data;
    const size_t row_bytes = omnic__dtype_row_bytes(w->dtype, K);
    char *part = omnic__cpu_wpart(wdata, part_bytes(n), ith);
    float *gbuf = (float *)part;
    int64_t *slot = (int64_t *)(part + omnic__cpu_walign((size_t)(T * K) * sizeof(float)));
    float *tbuf = (float *)((char *)slot + omnic__cpu_walign((size_t)T * sizeof(int64_t)));
    void *sw = (char *)tbuf + omnic__cpu_walign((size_t)(T * MOE_CHUNK) * sizeof(float));
    float *D = n->dst->data;
    int64_t r0, r1; /* rows routed nowhere (id < 0): zeros, by the thread that owns them */
    omnic__split_rows(T * k, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++)
        if (id[r] < 0) memset(D + r * N, 0, (size_t)N * sizeof(float));
    int64_t task0 = 0; /* tasks are numbered across experts so threads share every expert's */
    for (int64_t e = 0; e < E; e++) {
        int64_t R = 0;
        for (int64_t r = 0; r < T * k; r++)
            if (id[r] == e) slot[R++] = r; /* a token routes to an expert at most once */
        if (!R) continue;
        bool gathered = false;
        for (int64_t task = 0; task < tasks; task++) {
            if ((task0 + task) % nth != ith) continue;
            if (!gathered) {
                for (int64_t i = 0; i < R; i++) {
                    const int64_t src = per_slot ? slot[i] : slot[i] / k;
                    memcpy(gbuf + i * K, (const float *)a->data + src * K, (size_t)K * sizeof(float));
                }
                gathered = true;
            }
            const int64_t c0 = task * MOE_CHUNK, nc = N - c0 < MOE_CHUNK ? N - c0 : MOE_CHUNK;
            omnic__tensor g, wv, tmp;
            int64_t gd[2] = {R, K}, wd[2] = {nc, K}, td[2] = {R, nc};
            omnic_err err;
            omnic__tensor_init(&g, OMNIC_DTYPE_F32, 2, gd, &err);
            omnic__tensor_init(&wv, w->dtype, 2, wd, &err);
            omnic__tensor_init(&tmp, OMNIC_DTYPE_F32, 2, td, &err);
            g.data = gbuf;
            wv.data = (char *)w->data + (size_t)(e * N + c0) * row_bytes;
            tmp.data = tbuf;
            omnic__node sub;
            task_node(n, &g, &wv, &tmp, &sub);
            omnic__cpu_matmul(&sub, 0, 1, sw);
            for (int64_t i = 0; i < R; i++)
                memcpy(D + slot[i] * N + c0, tbuf + i * nc, (size_t)nc * sizeof(float));
        }
        task0 += tasks;
    }
}

void omnic__cpu_moe_sum(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *y = n->src[0], *w = n->src[1];
    const int64_t T = omnic__tensor_rows(w), k = omnic__tensor_cols(w), H = omnic__tensor_cols(y);
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++) {
        float *d = (float *)n->dst->data + t * H;
        const float *wt = (const float *)w->data + t * k;
        for (int64_t h = 0; h < H; h++)
            d[h] = 0.0f;
        for (int64_t j = 0; j < k; j++) { /* product rounded, then added: HF's index_add_ */
            const float *yr = (const float *)y->data + (t * k + j) * H;
            for (int64_t h = 0; h < H; h++)
                d[h] += wt[j] * yr[h];
        }
    }
}
