/* Op contract tests: every op of backend.h runs on `cpu` with nth = 1, 2 and 3 threads
 * and is checked against `ref`, the numeric oracle; `ref` itself is checked against
 * hand-computed values; both kernel tables are walked for missing entries.
 *
 * Tolerances, cpu vs ref (ggml test-backend-ops style):
 *   NMSE   = sum (cpu - ref)^2 / max(sum ref^2, n * floor^2)
 *   MAXERR = max |cpu - ref| / max(1, max |ref|)
 * One row per op; the weight dtype (f32 / f16 / bf16 / q8_0 / q4_0, or the KV dtype for
 * attention) selects a column, and the columns are equal on purpose: f16 and bf16 widen to
 * f32 exactly, so a kernel that keeps activations in f32 differs from ref only by f32
 * rounding and summation order whatever the weight dtype. A kernel that rounds
 * activations to f16/bf16 (ggml's vec_dot_type) lands near NMSE 1e-8 and fails.
 * Quantized weights (q8_0, q4_0): the matmul contract (backend.h) quantizes each activation
 * row to q8 blocks first, and ref does exactly that (core/quant.h) before its exact double
 * dot, so cpu (int8 dot products per block, f32 scaled sums) is held to the same f32 budget;
 * the activation quantization itself (NMSE ~1e-5 against f32 activations) is measured in
 * tests/unit/test_quant.c, not budgeted here. A cpu kernel whose activation rounding differs
 * from ref's by one step anywhere fails MAXERR. Quantized get_rows dequantizes exactly.
 * floor is 0 (plain NMSE) except for the activations: f32 evaluation of 1 + erf(x/sqrt 2)
 * (and 1 + tanh, exp) cancels for x << 0, as it does in torch, so a tensor holding only a
 * few tiny outputs (gelu(-5) = -1.4e-6) carries a large relative but negligible absolute
 * error; its NMSE is taken against an RMS floor of 1e-3.
 *
 *   op                                    NMSE    MAXERR  what the budget covers
 *   matmul, patch_embed                   1e-10   1e-5    f32 sums, K up to 4103
 *   pool_avg                              1e-12   1e-6    f32 sums of k * k <= 64 values
 *   gauss_topk                            1e-10   1e-5    as layernorm: f32 mean and std of the row
 *                                                         move the cutoff by ~ |mean|/std ulp
 *   rms_match                             1e-10   1e-6    two f32 sums of squares per row
 *   moe_route                             exact   exact   a selection of the input logits
 *   moe_weights                           1e-12   1e-6    f32 exp and sums over <= 130 experts
 *   matmul_id                             1e-10   1e-5    as matmul (it runs the matmul kernel)
 *   moe_sum                               1e-13   1e-6    k <= 8 rounded products summed in f32
 *   attention                             1e-10   1e-5    f32 scores, exp, f32 sums
 *   rmsnorm, softmax                      1e-10   1e-6    one f32 sum per row, C up to 50021:
 *                                                         sum error ~ sqrt(C) ulp (softmax 2e-11)
 *   layernorm                             1e-10   1e-5    same; x - mean cancels: ~ |mean|/std ulp
 *   rope                                  1e-11   1e-6    same f32 angle; cos/sin 1 ulp
 *   silu, gelu, gelu_tanh, gelu_quick,
 *   swiglu, geglu, softcap                1e-11   1e-6    vector exp/erf/tanh, few ulp (floor 1e-3)
 *   add, mul, scale                       1e-13   1e-6    one or two f32 roundings
 *   get_rows, concat, slice, permute,
 *   cpy, argmax                           exact   exact   bytes must match
 *
 * Besides the tolerance, every case requires: cpu results bit-identical for nth = 1, 2,
 * 3 (rows are split, reductions never are; the threads are bound to a barrier as in graph
 * execution, so kernels that share chunks dynamically do so here); every output element written (outputs are
 * pre-filled with NaN bytes); inputs untouched; 64-byte canaries before and after every
 * output and work buffer intact (the work buffer is exactly wsize bytes, pre-filled
 * with NaN bytes, so a kernel that expects zeroed scratch fails too). The observed
 * worst NMSE/MAXERR per op is printed at the end. Inputs come from fixed seeds.
 * test_batch_invariance checks DESIGN.md 6 on cpu: a row computed alone is bit-identical
 * to the same row inside a batch (matmul up to the decode batch limit, row-wise ops). */
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/threadpool.h"

/* ---- tolerances --------------------------------------------------------------------- */

typedef struct op_tol {
    bool exact;                     /* output bytes must equal ref's */
    double nmse[OMNIC_DTYPE_COUNT]; /* by weight dtype: F32, F16, BF16, Q8_0, Q4_0, and the x16 layouts */
    double maxerr;
    double floor; /* RMS floor of the NMSE denominator (0: plain NMSE) */
} op_tol;

/* clang-format off */
#define TOL_F(n, m, f) {.nmse = {[OMNIC_DTYPE_F32] = (n), [OMNIC_DTYPE_F16] = (n), [OMNIC_DTYPE_BF16] = (n),\
                                 [OMNIC_DTYPE_Q8_0] = (n), [OMNIC_DTYPE_Q4_0] = (n), [OMNIC_DTYPE_Q4_0X16] = (n),\
                                 [OMNIC_DTYPE_Q8_0X16] = (n)},\
                        .maxerr = (m), .floor = (f)}
#define TOL(n, m) TOL_F(n, m, 0.0)  /* plain NMSE */
#define ACT(n, m) TOL_F(n, m, 1e-3) /* activations: NMSE against an RMS floor of 1e-3 */
#define EXACT {.exact = true}
/* clang-format on */

static const op_tol tolerances[OMNIC_OP_COUNT] = {
    [OMNIC_OP_NONE] = EXACT,
    [OMNIC_OP_MATMUL] = TOL(1e-10, 1e-5),
    [OMNIC_OP_ADD] = TOL(1e-13, 1e-6),
    [OMNIC_OP_MUL] = TOL(1e-13, 1e-6),
    [OMNIC_OP_SCALE] = TOL(1e-13, 1e-6),
    [OMNIC_OP_RMSNORM] = TOL(1e-10, 1e-6),
    [OMNIC_OP_LAYERNORM] = TOL(1e-10, 1e-5),
    [OMNIC_OP_SOFTMAX] = TOL(1e-10, 1e-6),
    [OMNIC_OP_ROPE] = TOL(1e-11, 1e-6),
    [OMNIC_OP_ATTENTION] = TOL(1e-10, 1e-5),
    [OMNIC_OP_SILU] = ACT(1e-11, 1e-6),
    [OMNIC_OP_GELU] = ACT(1e-11, 1e-6),
    [OMNIC_OP_GELU_TANH] = ACT(1e-11, 1e-6),
    [OMNIC_OP_GELU_QUICK] = ACT(1e-11, 1e-6),
    [OMNIC_OP_SWIGLU] = ACT(1e-11, 1e-6),
    [OMNIC_OP_GEGLU] = ACT(1e-11, 1e-6),
    [OMNIC_OP_GET_ROWS] = EXACT,
    [OMNIC_OP_PATCH_EMBED] = TOL(1e-10, 1e-5),
    [OMNIC_OP_CONCAT] = EXACT,
    [OMNIC_OP_SLICE] = EXACT,
    [OMNIC_OP_PERMUTE] = EXACT,
    [OMNIC_OP_ARGMAX] = EXACT,
    [OMNIC_OP_CPY] = EXACT,
    [OMNIC_OP_SOFTCAP] = ACT(1e-11, 1e-6),
    [OMNIC_OP_SET_ROWS] = EXACT,
    [OMNIC_OP_POOL_AVG] = TOL(1e-12, 1e-6),
    [OMNIC_OP_GAUSS_TOPK] = TOL(1e-10, 1e-5),
    [OMNIC_OP_RMS_MATCH] = TOL(1e-10, 1e-6),
    [OMNIC_OP_MOE_ROUTE] = EXACT,
    [OMNIC_OP_MOE_WEIGHTS] = TOL(1e-12, 1e-6),
    [OMNIC_OP_MATMUL_ID] = TOL(1e-10, 1e-5),
    [OMNIC_OP_MOE_SUM] = TOL(1e-13, 1e-6),
    [OMNIC_OP_RELU] = EXACT,
    [OMNIC_OP_DWCONV2D] = TOL(1e-11, 1e-5),
    [OMNIC_OP_CONV2D] = TOL(1e-10, 1e-5),
    [OMNIC_OP_CUM_GROUPNORM] = TOL(1e-10, 1e-5),
    [OMNIC_OP_ATTN_LOCAL] = TOL(1e-10, 1e-5),
    [OMNIC_OP_SIGMOID] = ACT(1e-11, 1e-6),
};
_Static_assert(sizeof tolerances / sizeof tolerances[0] == OMNIC_OP_COUNT,
               "tolerances out of step with omnic__op");
_Static_assert(OMNIC_OP_SIGMOID + 1 == OMNIC_OP_COUNT, "new op: add its tolerance and its cases here");

/* Worst values seen per op (printed at the end) and cases run per op. */
static double worst_nmse[OMNIC_OP_COUNT], worst_maxerr[OMNIC_OP_COUNT];
static int cases_run[OMNIC_OP_COUNT];

/* ---- deterministic random numbers (splitmix64) ------------------------------------- */

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
    rng_state = s;
}

static uint64_t rng_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng_u64() >> 11) * 0x1p-53;
}

static int64_t rng_int(int64_t n)
{
    return (int64_t)(rng_u64() % (uint64_t)n);
}

/* ---- guarded tensors ---------------------------------------------------------------- */

#define GUARD 64
#define MAX_BUFS 48

/* A tensor whose data sits between two canary blocks, 64-byte aligned. */
typedef struct tbuf {
    omnic__tensor t;
    uint8_t *raw; /* owned: [GUARD canary][nbytes data][GUARD canary] */
    size_t nbytes;
} tbuf;

static tbuf bufs[MAX_BUFS]; /* the current case's tensors, freed by bufs_free */
static int nbufs;

static void guard_fill(uint8_t *p)
{
    for (int i = 0; i < GUARD; i++)
        p[i] = (uint8_t)(0xa5 ^ (i * 37));
}

static bool guard_ok(const uint8_t *p)
{
    for (int i = 0; i < GUARD; i++)
        if (p[i] != (uint8_t)(0xa5 ^ (i * 37))) return false;
    return true;
}

/* Guarded block of n data bytes (n may be 0); data pre-filled with 0xff (NaN as f32/f16/bf16). */
static uint8_t *guarded_alloc(size_t n)
{
    size_t total = (GUARD + n + GUARD + 63) / 64 * 64;
    uint8_t *raw = aligned_alloc(64, total);
    if (!raw) return NULL;
    guard_fill(raw);
    memset(raw + GUARD, 0xff, n);
    guard_fill(raw + GUARD + n);
    return raw;
}

static bool guarded_ok(const uint8_t *raw, size_t n)
{
    return guard_ok(raw) && guard_ok(raw + GUARD + n);
}

static tbuf *tnew(omnic_dtype dt, int ndim, const int64_t *dims)
{
    if (nbufs == MAX_BUFS) fail_msg("more than %d tensors in one case", MAX_BUFS);
    tbuf *b = &bufs[nbufs++];
    memset(b, 0, sizeof *b);
    b->t.dtype = dt;
    b->t.ndim = ndim;
    for (int i = 0; i < OMNIC_MAX_DIMS; i++)
        b->t.dims[i] = i < ndim ? dims[i] : 1;
    b->nbytes = omnic__tensor_bytes(&b->t);
    b->raw = guarded_alloc(b->nbytes);
    assert_non_null(b->raw);
    b->t.data = b->raw + GUARD;
    return b;
}

#define NDIMS(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* T(dtype, d0, d1, ...) makes a guarded tensor of those dims. */
#define T(dt, ...) tnew((dt), NDIMS(__VA_ARGS__), (const int64_t[]){__VA_ARGS__})

static void bufs_free(void)
{
    for (int i = 0; i < nbufs; i++)
        free(bufs[i].raw);
    nbufs = 0;
}

/* Stores v (f32) as element i of b in b's dtype. */
static void tset(tbuf *b, int64_t i, float v)
{
    switch (b->t.dtype) {
    case OMNIC_DTYPE_F32:
        ((float *)b->t.data)[i] = v;
        break;
    case OMNIC_DTYPE_F16:
        ((uint16_t *)b->t.data)[i] = omnic__f32_to_f16(v);
        break;
    case OMNIC_DTYPE_BF16:
        ((uint16_t *)b->t.data)[i] = omnic__f32_to_bf16(v);
        break;
    case OMNIC_DTYPE_I32:
        ((int32_t *)b->t.data)[i] = (int32_t)v;
        break;
    default:
        fail_msg("tset: dtype %d", (int)b->t.dtype);
    }
}

static void fill_uniform(tbuf *b, double lo, double hi)
{
    int64_t n = omnic__tensor_nelem(&b->t);
    if (omnic__dtype_table[b->t.dtype].is_quant) { /* quantize uniform rows (ggml rounding) */
        int64_t K = omnic__tensor_cols(&b->t), rows = omnic__tensor_rows(&b->t);
        const bool x16 = omnic__x16_plain(b->t.dtype) != OMNIC_DTYPE_COUNT; /* plain groups of 16, packed */
        const omnic_dtype qt = x16 ? omnic__x16_plain(b->t.dtype) : b->t.dtype;
        const size_t rb = omnic__dtype_row_bytes(qt, K);
        float *row = malloc((size_t)K * sizeof *row);
        uint8_t *grp = malloc(OMNIC_X16_ROWS * rb);
        assert_non_null(row);
        assert_non_null(grp);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t k = 0; k < K; k++)
                row[k] = (float)rng_uniform(lo, hi);
            uint8_t *at = (uint8_t *)b->t.data + (size_t)r * rb;
            omnic__quantize_row(qt, row, x16 ? grp + (size_t)(r % OMNIC_X16_ROWS) * rb : at, K);
            if (x16 && r % OMNIC_X16_ROWS == OMNIC_X16_ROWS - 1)
                omnic__x16_pack(b->t.dtype, grp, at - (OMNIC_X16_ROWS - 1) * rb, K);
        }
        free(grp);
        free(row);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        tset(b, i, (float)rng_uniform(lo, hi));
}

/* Random bytes (for layout ops on any dtype); f16/bf16/f32 get finite values. */
static void fill_any(tbuf *b)
{
    if (b->t.dtype == OMNIC_DTYPE_I32) {
        for (int64_t i = 0; i < omnic__tensor_nelem(&b->t); i++)
            ((int32_t *)b->t.data)[i] = (int32_t)rng_u64();
        return;
    }
    fill_uniform(b, -100, 100);
}

static void fill_i32(tbuf *b, int64_t lo, int64_t hi) /* uniform in [lo, hi) */
{
    for (int64_t i = 0; i < omnic__tensor_nelem(&b->t); i++)
        ((int32_t *)b->t.data)[i] = (int32_t)(lo + rng_int(hi - lo));
}

static float *F(tbuf *b)
{
    return b->t.data;
}

/* ---- running a node on a backend ---------------------------------------------------- */

static omnic__threadpool *pool;
static const omnic__backend_ops *ref_b, *cpu_b;

typedef struct job {
    omnic__kernel_fn fn;
    const omnic__node *n;
    void *wdata;
    omnic__barrier barrier; /* as graph execution: kernels may share chunks dynamically */
} job;

static void job_run(void *ctx, int ith, int nth)
{
    job *j = ctx;
    omnic__chunks_bind(&j->barrier);
    if (ith == nth - 1 && nth > 1) sched_yield(); /* the others may take its chunks */
    j->fn(j->n, ith, nth, j->wdata);
    omnic__barrier_wait(&j->barrier);
    omnic__chunks_bind(NULL);
}

/* Runs proto (with dst = out) on backend b with nth threads through the thread pool.
 * Returns false (after printing why) when a canary was overwritten. */
static bool run_on(const omnic__backend_ops *b, const omnic__node *proto, int nth, tbuf *out,
                   const char *label)
{
    omnic__node n = *proto;
    n.dst = &out->t;
    if (!b->kernel[n.op]) {
        print_error("%s: backend %s has no kernel for %s\n", label, b->name, omnic__op_names[n.op]);
        return false;
    }
    size_t ws = omnic__backend_wsize(b, &n, nth);
    uint8_t *wraw = guarded_alloc(ws);
    assert_non_null(wraw);
    job j = {.fn = b->kernel[n.op], .n = &n, .wdata = wraw + GUARD};
    omnic__barrier_init(&j.barrier, nth);
    omnic__threadpool_run_n(pool, nth, job_run, &j);
    bool ok = true;
    if (!guarded_ok(out->raw, out->nbytes)) {
        print_error("%s: %s nth=%d wrote outside its output (%zu bytes)\n", label, b->name, nth, out->nbytes);
        ok = false;
    }
    if (!guarded_ok(wraw, ws)) {
        print_error("%s: %s nth=%d wrote outside its work buffer (%zu bytes)\n", label, b->name, nth, ws);
        ok = false;
    }
    free(wraw);
    return ok;
}

/* Runs proto on ref (nth 1) and cpu (nth 1, 2, 3), checks everything in the header
 * comment. wdt picks the tolerance column. Returns the number of failed checks. */
static int check(const char *label, const omnic__node *proto, omnic_dtype wdt)
{
    const op_tol *tol = &tolerances[proto->op];
    const omnic__tensor *tmpl = proto->dst;
    int fails = 0;
    cases_run[proto->op]++;

    /* Snapshot inputs. */
    uint8_t *snap[OMNIC_MAX_SRC] = {0};
    for (int i = 0; i < OMNIC_MAX_SRC; i++) {
        if (!proto->src[i]) continue;
        size_t nb = omnic__tensor_bytes(proto->src[i]);
        snap[i] = malloc(nb ? nb : 1);
        assert_non_null(snap[i]);
        memcpy(snap[i], proto->src[i]->data, nb);
    }

    tbuf *ref_out = tnew(tmpl->dtype, tmpl->ndim, tmpl->dims);
    if (!run_on(ref_b, proto, 1, ref_out, label)) fails++;
    int max_nth = cpu_b->single_threaded ? 1 : 3;
    tbuf *cpu_out[3] = {0};
    for (int nth = 1; nth <= max_nth; nth++) {
        cpu_out[nth - 1] = tnew(tmpl->dtype, tmpl->ndim, tmpl->dims);
        if (!run_on(cpu_b, proto, nth, cpu_out[nth - 1], label)) fails++;
        if (nth > 1 && memcmp(cpu_out[0]->t.data, cpu_out[nth - 1]->t.data, ref_out->nbytes) != 0) {
            print_error("%s: cpu nth=%d differs from nth=1 (not bit-identical)\n", label, nth);
            fails++;
        }
    }

    for (int i = 0; i < OMNIC_MAX_SRC; i++) {
        if (!snap[i]) continue;
        if (memcmp(snap[i], proto->src[i]->data, omnic__tensor_bytes(proto->src[i])) != 0) {
            print_error("%s: src[%d] was modified\n", label, i);
            fails++;
        }
        free(snap[i]);
    }

    const tbuf *got = cpu_out[0];
    if (tol->exact || tmpl->dtype != OMNIC_DTYPE_F32) {
        if (memcmp(got->t.data, ref_out->t.data, ref_out->nbytes) != 0) {
            size_t es = omnic_dtype_size(tmpl->dtype), k = 0;
            while (k < ref_out->nbytes && ((uint8_t *)got->t.data)[k] == ((uint8_t *)ref_out->t.data)[k])
                k++;
            print_error("%s: cpu differs from ref at element %zu (exact op)\n", label, k / es);
            fails++;
        }
        return fails;
    }

    const float *a = got->t.data, *b = ref_out->t.data;
    int64_t n = omnic__tensor_nelem(tmpl);
    double se = 0.0, sb = 0.0, bmax = 0.0, emax = 0.0;
    int64_t emax_i = 0, nonfinite = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(b[i])) nonfinite++;
        double d = (double)a[i] - (double)b[i];
        se += d * d;
        sb += (double)b[i] * b[i];
        if (fabs(b[i]) > bmax) bmax = fabs(b[i]);
        if (!(fabs(d) <= emax)) { /* NaN lands here too */
            emax = fabs(d);
            emax_i = i;
        }
    }
    if (nonfinite) {
        print_error("%s: ref produced %lld non-finite values\n", label, (long long)nonfinite);
        fails++;
    }
    double den = fmax(sb, (double)n * tol->floor * tol->floor);
    double nmse = den > 0 ? se / den : se;
    double maxerr = emax / (bmax > 1 ? bmax : 1);
    if (!(nmse <= worst_nmse[proto->op])) worst_nmse[proto->op] = nmse;
    if (!(maxerr <= worst_maxerr[proto->op])) worst_maxerr[proto->op] = maxerr;
    if (!(nmse <= tol->nmse[wdt]) || !(maxerr <= tol->maxerr)) {
        print_error(
            "%s: NMSE %.3g (limit %.3g), MAXERR %.3g (limit %.3g) at element %lld: cpu %.9g ref %.9g\n",
            label, nmse, tol->nmse[wdt], maxerr, tol->maxerr, (long long)emax_i, (double)a[emax_i],
            (double)b[emax_i]);
        fails++;
    }
    return fails;
}

/* Node with op, dst and up to 5 sources; parameters are set by the caller. */
static omnic__node mknode(omnic__op op, tbuf *dst, tbuf *s0, tbuf *s1, tbuf *s2, tbuf *s3, tbuf *s4)
{
    omnic__node n = {.op = op, .dst = &dst->t};
    tbuf *s[OMNIC_MAX_SRC] = {s0, s1, s2, s3, s4};
    for (int i = 0; i < OMNIC_MAX_SRC; i++)
        n.src[i] = s[i] ? &s[i]->t : NULL;
    return n;
}

static const char *dtn(omnic_dtype d)
{
    return omnic_dtype_name(d);
}

static const omnic_dtype wdtypes[3] = {OMNIC_DTYPE_F32, OMNIC_DTYPE_F16, OMNIC_DTYPE_BF16};

/* ---- cases: one test per op family ------------------------------------------------- */

static void test_matmul(void **state)
{
    (void)state;
    static const int64_t Ms[] = {1, 2, 5, 64, 67};
    static const int64_t NK[][2] = {{1, 1}, {3, 17}, {17, 33}, {33, 67}, {67, 257}, {257, 3}, {16, 130}};
    int fails = 0, id = 0;
    char label[160];
    for (int d = 0; d < 3; d++) {
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
            for (size_t k = 0; k < sizeof NK / sizeof NK[0]; k++) {
                int64_t M = Ms[mi], N = NK[k][0], K = NK[k][1];
                bool bias = (mi + k) % 2 == 0;
                rng_seed(1000 + (uint64_t)id++);
                tbuf *a = T(OMNIC_DTYPE_F32, M, K), *w = T(wdtypes[d], N, K);
                tbuf *b = bias ? T(OMNIC_DTYPE_F32, N) : NULL, *dst = T(OMNIC_DTYPE_F32, M, N);
                fill_uniform(a, -1, 1);
                fill_uniform(w, -1, 1);
                if (b) fill_uniform(b, -1, 1);
                omnic__node n = mknode(OMNIC_OP_MATMUL, dst, a, w, b, NULL, NULL);
                n.ip[0] = k % 3 == 1; /* batch-invariant blocking on some cases */
                snprintf(label, sizeof label, "matmul w=%s M=%lld N=%lld K=%lld bias=%d inv=%d",
                         dtn(wdtypes[d]), (long long)M, (long long)N, (long long)K, bias, n.ip[0]);
                fails += check(label, &n, wdtypes[d]);
                bufs_free();
            }
        }
        /* cpu regime edges: M = 16 / 17 around the decode kernel's limit, M = 130 (sgemm row
         * blocks), N = 2100 (many sgemm column chunks), K past the AVX2 GEMM's 256-column panels
         * (not a multiple of 8), M past its 512-row passes. */
        static const int64_t big[][3] = {{16, 33, 67},   {17, 31, 45},   {130, 67, 33},
                                         {17, 2100, 19}, {67, 33, 1031}, {531, 37, 263}};
        for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
            int64_t M = big[k][0], N = big[k][1], K = big[k][2];
            rng_seed(1500 + (uint64_t)id++);
            tbuf *a = T(OMNIC_DTYPE_F32, M, K), *w = T(wdtypes[d], N, K), *b = T(OMNIC_DTYPE_F32, N);
            tbuf *dst = T(OMNIC_DTYPE_F32, M, N);
            fill_uniform(a, -1, 1);
            fill_uniform(w, -1, 1);
            fill_uniform(b, -1, 1);
            omnic__node n = mknode(OMNIC_OP_MATMUL, dst, a, w, b, NULL, NULL);
            snprintf(label, sizeof label, "matmul w=%s M=%lld N=%lld K=%lld bias=1", dtn(wdtypes[d]),
                     (long long)M, (long long)N, (long long)K);
            fails += check(label, &n, wdtypes[d]);
            bufs_free();
        }
        /* Long K (not a multiple of any vector width) and a 3-D activation [2, 3, K]. */
        rng_seed(2000 + (uint64_t)d);
        tbuf *a = T(OMNIC_DTYPE_F32, 3, 4103), *w = T(wdtypes[d], 5, 4103), *dst = T(OMNIC_DTYPE_F32, 3, 5);
        fill_uniform(a, -1, 1);
        fill_uniform(w, -1, 1);
        omnic__node n = mknode(OMNIC_OP_MATMUL, dst, a, w, NULL, NULL, NULL);
        snprintf(label, sizeof label, "matmul w=%s M=3 N=5 K=4103", dtn(wdtypes[d]));
        fails += check(label, &n, wdtypes[d]);
        bufs_free();
        a = T(OMNIC_DTYPE_F32, 2, 3, 37);
        w = T(wdtypes[d], 19, 37);
        tbuf *b = T(OMNIC_DTYPE_F32, 19);
        dst = T(OMNIC_DTYPE_F32, 2, 3, 19);
        fill_uniform(a, -1, 1);
        fill_uniform(w, -1, 1);
        fill_uniform(b, -1, 1);
        n = mknode(OMNIC_OP_MATMUL, dst, a, w, b, NULL, NULL);
        snprintf(label, sizeof label, "matmul w=%s a=[2,3,37] N=19 bias", dtn(wdtypes[d]));
        fails += check(label, &n, wdtypes[d]);
        bufs_free();
    }
    assert_int_equal(fails, 0);
}

/* q8_0 / q4_0 / q4_0x16 weights: every M regime (decode kernel M <= 16 in tiles of up to 8
 * rows, prefill kernel M > 16, the batch-invariant flag past 16), odd N (q4_0x16: whole groups
 * of 16), K = 32..4128 (odd block counts included), bias. */
static void test_matmul_quant(void **state)
{
    (void)state;
    static const omnic_dtype qdts[4] = {OMNIC_DTYPE_Q8_0, OMNIC_DTYPE_Q4_0, OMNIC_DTYPE_Q4_0X16,
                                        OMNIC_DTYPE_Q8_0X16};
    static const int64_t Ms[] = {1, 2, 3, 4, 5, 8, 9, 16, 17, 33, 64, 67, 130};
    static const int64_t NK[][2] = {{1, 32}, {3, 64}, {17, 96}, {33, 160}, {67, 256}, {16, 512}, {5, 4128}};
    static const int64_t NK16[][2] = {{16, 32},  {32, 64},  {48, 96},  {16, 160},
                                      {80, 256}, {16, 512}, {32, 4128}};
    int fails = 0, id = 0;
    char label[160];
    for (int d = 0; d < 4; d++) {
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
            for (size_t k = 0; k < sizeof NK / sizeof NK[0]; k++) {
                const int64_t(*nk)[2] = omnic__x16_plain(qdts[d]) != OMNIC_DTYPE_COUNT ? NK16 : NK;
                int64_t M = Ms[mi], N = nk[k][0], K = nk[k][1];
                bool bias = (mi + k) % 2 == 0;
                rng_seed(20000 + (uint64_t)id++);
                tbuf *a = T(OMNIC_DTYPE_F32, M, K), *w = T(qdts[d], N, K);
                tbuf *b = bias ? T(OMNIC_DTYPE_F32, N) : NULL, *dst = T(OMNIC_DTYPE_F32, M, N);
                fill_uniform(a, -1, 1);
                fill_uniform(w, -1, 1);
                if (b) fill_uniform(b, -1, 1);
                if (k == 3) /* a few all-zero activation blocks (d = 0) and one large row */
                    for (int64_t i = 0; i < M; i++) {
                        for (int64_t j = 32; j < 64; j++)
                            F(a)[i * K + j] = 0.0f;
                        if (i == M / 2) F(a)[i * K] = 300.0f;
                    }
                omnic__node n = mknode(OMNIC_OP_MATMUL, dst, a, w, b, NULL, NULL);
                n.ip[0] = k % 3 == 1; /* batch-invariant blocking on some cases */
                snprintf(label, sizeof label, "matmul w=%s M=%lld N=%lld K=%lld bias=%d inv=%d", dtn(qdts[d]),
                         (long long)M, (long long)N, (long long)K, bias, n.ip[0]);
                fails += check(label, &n, qdts[d]);
                bufs_free();
            }
        }
        /* many prefill chunks (N = 2100, q4_0x16 2096), a 3-D activation */
        const bool x16 = omnic__x16_plain(qdts[d]) != OMNIC_DTYPE_COUNT;
        const int64_t NL = x16 ? 2096 : 2100, NS = x16 ? 32 : 19;
        rng_seed(20500 + (uint64_t)d);
        tbuf *a = T(OMNIC_DTYPE_F32, 40, 96), *w = T(qdts[d], NL, 96), *b = T(OMNIC_DTYPE_F32, NL);
        tbuf *dst = T(OMNIC_DTYPE_F32, 40, NL);
        fill_uniform(a, -1, 1);
        fill_uniform(w, -1, 1);
        fill_uniform(b, -1, 1);
        omnic__node n = mknode(OMNIC_OP_MATMUL, dst, a, w, b, NULL, NULL);
        snprintf(label, sizeof label, "matmul w=%s M=40 N=%lld K=96 bias=1", dtn(qdts[d]), (long long)NL);
        fails += check(label, &n, qdts[d]);
        bufs_free();
        a = T(OMNIC_DTYPE_F32, 2, 3, 64);
        w = T(qdts[d], NS, 64);
        dst = T(OMNIC_DTYPE_F32, 2, 3, NS);
        fill_uniform(a, -1, 1);
        fill_uniform(w, -1, 1);
        n = mknode(OMNIC_OP_MATMUL, dst, a, w, NULL, NULL, NULL);
        snprintf(label, sizeof label, "matmul w=%s a=[2,3,64] N=%lld", dtn(qdts[d]), (long long)NS);
        fails += check(label, &n, qdts[d]);
        bufs_free();
    }
    assert_int_equal(fails, 0);
}

static void test_add_mul_scale(void **state)
{
    (void)state;
    static const int64_t RC[][2] = {{1, 1}, {3, 17}, {17, 33}, {67, 257}, {2, 3}};
    int fails = 0, id = 0;
    char label[160];
    for (int op = 0; op < 2; op++) {
        omnic__op o = op ? OMNIC_OP_MUL : OMNIC_OP_ADD;
        for (size_t k = 0; k < sizeof RC / sizeof RC[0]; k++) {
            int64_t R = RC[k][0], C = RC[k][1];
            /* b forms: same shape f32; [C] in f32/f16/bf16; [R, 1] f32; 3-D a with [C] b;
             * same shape f16 */
            for (int form = 0; form < 7; form++) {
                rng_seed(3000 + (uint64_t)id++);
                tbuf *a = form == 5 ? T(OMNIC_DTYPE_F32, 2, R, C) : T(OMNIC_DTYPE_F32, R, C);
                tbuf *b;
                omnic_dtype bdt = OMNIC_DTYPE_F32;
                const char *bs;
                switch (form) {
                case 0:
                    b = T(OMNIC_DTYPE_F32, R, C);
                    bs = "[R,C]";
                    break;
                case 1:
                case 2:
                case 3:
                    bdt = wdtypes[form - 1];
                    b = T(bdt, C);
                    bs = "[C]";
                    break;
                case 4:
                    b = T(OMNIC_DTYPE_F32, R, 1);
                    bs = "[R,1]";
                    break;
                case 5:
                    b = T(OMNIC_DTYPE_F32, C);
                    bs = "[C] on 3-D a";
                    break;
                default:
                    bdt = OMNIC_DTYPE_F16;
                    b = T(bdt, R, C);
                    bs = "[R,C]";
                    break;
                }
                tbuf *dst = tnew(OMNIC_DTYPE_F32, a->t.ndim, a->t.dims);
                fill_uniform(a, -4, 4);
                fill_uniform(b, -4, 4);
                omnic__node n = mknode(o, dst, a, b, NULL, NULL, NULL);
                snprintf(label, sizeof label, "%s R=%lld C=%lld b=%s %s", omnic__op_names[o], (long long)R,
                         (long long)C, bs, dtn(bdt));
                fails += check(label, &n, bdt);
                bufs_free();
            }
        }
    }
    static const float sc[][2] = {{0.125f, 0.0f}, {-3.0f, 0.5f}, {1.0f / 3.0f, -1.25f}};
    for (size_t k = 0; k < sizeof RC / sizeof RC[0]; k++) {
        for (int s = 0; s < 3; s++) {
            rng_seed(3500 + (uint64_t)id++);
            tbuf *a = T(OMNIC_DTYPE_F32, RC[k][0], RC[k][1]), *dst = T(OMNIC_DTYPE_F32, RC[k][0], RC[k][1]);
            fill_uniform(a, -10, 10);
            omnic__node n = mknode(OMNIC_OP_SCALE, dst, a, NULL, NULL, NULL, NULL);
            n.fp[0] = sc[s][0];
            n.fp[1] = sc[s][1];
            snprintf(label, sizeof label, "scale R=%lld C=%lld s=%g b=%g", (long long)RC[k][0],
                     (long long)RC[k][1], (double)sc[s][0], (double)sc[s][1]);
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
        }
    }
    assert_int_equal(fails, 0);
}

static void test_norms(void **state)
{
    (void)state;
    static const int64_t RC[][2] = {{1, 1}, {3, 3}, {17, 17}, {5, 33}, {67, 257}, {2, 4097}, {2, 50021}};
    int fails = 0, id = 0;
    char label[160];
    for (size_t k = 0; k < sizeof RC / sizeof RC[0]; k++) {
        int64_t R = RC[k][0], C = RC[k][1];
        /* rmsnorm: weight none / f32 / f16 / bf16, plain and Gemma (1 + w) */
        for (int wi = 0; wi < 4; wi++) {
            for (int gemma = 0; gemma < 2; gemma++) {
                if (wi == 0 && gemma) continue;
                rng_seed(4000 + (uint64_t)id++);
                omnic_dtype wdt = wi ? wdtypes[wi - 1] : OMNIC_DTYPE_F32;
                tbuf *x = T(OMNIC_DTYPE_F32, R, C), *dst = T(OMNIC_DTYPE_F32, R, C);
                tbuf *w = wi ? T(wdt, C) : NULL;
                fill_uniform(x, -3, 3);
                if (w) fill_uniform(w, gemma ? -0.5 : 0.5, gemma ? 0.5 : 1.5);
                omnic__node n = mknode(OMNIC_OP_RMSNORM, dst, x, w, NULL, NULL, NULL);
                n.fp[0] = gemma ? 1e-6f : 1e-5f;
                n.ip[0] = gemma;
                snprintf(label, sizeof label, "rmsnorm R=%lld C=%lld w=%s gemma=%d", (long long)R,
                         (long long)C, wi ? dtn(wdt) : "none", gemma);
                fails += check(label, &n, wdt);
                bufs_free();
            }
        }
        /* layernorm: w/b none / f32 / f16 / bf16; inputs offset from 0 (two-pass matters) */
        for (int wi = 0; wi < 4; wi++) {
            for (int bi = 0; bi < 2; bi++) {
                rng_seed(4500 + (uint64_t)id++);
                omnic_dtype wdt = wi ? wdtypes[wi - 1] : OMNIC_DTYPE_F32;
                tbuf *x = T(OMNIC_DTYPE_F32, R, C), *dst = T(OMNIC_DTYPE_F32, R, C);
                tbuf *w = wi ? T(wdt, C) : NULL, *b = bi ? T(wdt, C) : NULL;
                fill_uniform(x, 1, 4);
                if (w) fill_uniform(w, 0.5, 1.5);
                if (b) fill_uniform(b, -1, 1);
                omnic__node n = mknode(OMNIC_OP_LAYERNORM, dst, x, w, b, NULL, NULL);
                n.fp[0] = 1e-5f;
                snprintf(label, sizeof label, "layernorm R=%lld C=%lld w=%s b=%s", (long long)R, (long long)C,
                         w ? dtn(wdt) : "none", b ? dtn(wdt) : "none");
                fails += check(label, &n, wdt);
                bufs_free();
            }
        }
        /* softmax: scale 1 and 0.125; some rows with -inf entries (never all) */
        for (int v = 0; v < 3; v++) {
            rng_seed(4800 + (uint64_t)id++);
            tbuf *x = T(OMNIC_DTYPE_F32, R, C), *dst = T(OMNIC_DTYPE_F32, R, C);
            fill_uniform(x, -10, 10);
            if (v == 2)
                for (int64_t r = 0; r < R; r++)
                    for (int64_t c = 1; c < C; c++)
                        if (rng_int(4) == 0) F(x)[r * C + c] = -INFINITY;
            omnic__node n = mknode(OMNIC_OP_SOFTMAX, dst, x, NULL, NULL, NULL, NULL);
            n.fp[0] = v == 1 ? 0.125f : 1.0f;
            snprintf(label, sizeof label, "softmax R=%lld C=%lld scale=%g%s", (long long)R, (long long)C,
                     (double)n.fp[0], v == 2 ? " with -inf" : "");
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
        }
    }
    assert_int_equal(fails, 0);
}

static void test_rope(void **state)
{
    static _Alignas(64) float rope_work[4096]; /* the cpu kernel's cos/sin buffer (one thread) */
    (void)state;
    /* T, H, head_dim, n_rot */
    static const int64_t shapes[][4] = {{1, 1, 2, 2},   {3, 2, 8, 8},   {17, 5, 64, 64}, {5, 3, 64, 32},
                                        {2, 4, 80, 80}, {7, 2, 96, 24}, {1, 8, 128, 128}};
    int fails = 0, id = 0;
    char label[200];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int64_t T_ = shapes[k][0], H = shapes[k][1], D = shapes[k][2], n_rot = shapes[k][3];
        for (int mode = 0; mode < 2; mode++) {
            /* v: 0 base 1e4 pos < 4096; 1 base 1e6, factor 1.2, pos < 32768;
             * 2 explicit inv_freq table, pos < 131072 (f32 angle rounding dominates);
             * 3 two tables [2, n_rot/2] and a per-row selector (LongRoPE short / long);
             * 4 M-RoPE coordinates [T, 3] with sections (rotate-half only); 5 the same with the
             * interleaved layout (Qwen3-VL) */
            for (int v = 0; v < 6; v++) {
                if (v >= 4 && mode != 0) continue;
                rng_seed(5000 + (uint64_t)id++);
                tbuf *x = T(OMNIC_DTYPE_F32, T_, H, D),
                     *pos = v >= 4 ? T(OMNIC_DTYPE_I32, T_, 3) : T(OMNIC_DTYPE_I32, T_),
                     *dst = T(OMNIC_DTYPE_F32, T_, H, D);
                tbuf *tbl = v == 2   ? T(OMNIC_DTYPE_F32, n_rot / 2)
                            : v == 3 ? T(OMNIC_DTYPE_F32, 2, n_rot / 2)
                                     : NULL;
                tbuf *sel = v == 3 ? T(OMNIC_DTYPE_I32, T_) : NULL;
                fill_uniform(x, -2, 2);
                fill_i32(pos, 0, v == 0 ? 4096 : v == 1 ? 32768 : 131072);
                if (sel) fill_i32(sel, 0, 2);
                /* llama3-like table: base^(-2i/n) with a wavelength ramp; the second table
                 * (v 3) stretched per dim as LongRoPE's long factors do */
                float *inv = tbl ? tbl->t.data : NULL;
                for (int64_t i = 0; inv && i < n_rot / 2; i++)
                    inv[i] =
                        (float)(pow(500000.0, -2.0 * (double)i / (double)n_rot) / (1.0 + (double)(i % 3)));
                for (int64_t i = 0; sel && i < n_rot / 2; i++)
                    inv[n_rot / 2 + i] = inv[i] / (float)(1 + i);
                omnic__node n = mknode(OMNIC_OP_ROPE, dst, x, pos, tbl, sel, NULL);
                n.ip[0] = (int32_t)n_rot;
                n.ip[1] = mode;
                n.fp[0] = v == 1 ? 1e6f : 1e4f;
                n.fp[1] = v == 1 ? 1.2f : 1.0f;
                const int64_t half = n_rot / 2, s0 = half / 4, s1 = (half - s0) / 2;
                if (v == 4) n.ip[2] = (int32_t)s0, n.ip[3] = (int32_t)s1, n.ip[4] = (int32_t)(half - s0 - s1);
                if (v == 5) /* Qwen3-VL-like: H and W each a third (rounded down), T the rest */
                    n.ip[3] = n.ip[4] = (int32_t)(half / 3), n.ip[2] = (int32_t)(half - 2 * (half / 3)),
                    n.ip[5] = 1;
                snprintf(label, sizeof label, "rope T=%lld H=%lld D=%lld n_rot=%lld mode=%d %s",
                         (long long)T_, (long long)H, (long long)D, (long long)n_rot, mode,
                         v == 0   ? "base=1e4"
                         : v == 1 ? "base=1e6 factor=1.2"
                         : v == 2 ? "inv_freq table, pos<131072"
                         : v == 3 ? "two tables + selector"
                         : v == 4 ? "M-RoPE [T, 3] positions"
                                  : "M-RoPE interleaved");
                fails += check(label, &n, OMNIC_DTYPE_F32);
                if (v >= 4) { /* equal coordinates: exactly the 1-D op; else each section its own axis */
                    int32_t *pv = pos->t.data;
                    tbuf *p1 = T(OMNIC_DTYPE_I32, T_), *d1 = T(OMNIC_DTYPE_F32, T_, H, D),
                         *d3 = T(OMNIC_DTYPE_F32, T_, H, D);
                    for (int64_t t = 0; t < T_; t++)
                        pv[3 * t + 1] = pv[3 * t + 2] = pv[3 * t], ((int32_t *)p1->t.data)[t] = pv[3 * t];
                    omnic__node n3 = n, n1 = n;
                    n3.dst = &d3->t;
                    n1.src[1] = &p1->t, n1.dst = &d1->t, n1.ip[2] = n1.ip[3] = n1.ip[4] = n1.ip[5] = 0;
                    for (int b = 0; b < 2; b++) {
                        const omnic__backend_ops *be = b ? cpu_b : ref_b;
                        be->kernel[OMNIC_OP_ROPE](&n3, 0, 1, rope_work);
                        be->kernel[OMNIC_OP_ROPE](&n1, 0, 1, rope_work);
                        if (memcmp(d1->t.data, d3->t.data, (size_t)(T_ * H * D) * sizeof(float))) {
                            fprintf(stderr, "FAIL %s: equal coordinates differ from 1-D positions (%s)\n",
                                    label, be->name);
                            fails++;
                        }
                    }
                }
                if (sel) { /* each row equals the plain op with its own table (ref backend) */
                    tbuf *one = T(OMNIC_DTYPE_F32, n_rot / 2), *d1 = T(OMNIC_DTYPE_F32, T_, H, D);
                    const int32_t *sv = sel->t.data;
                    for (int k2 = 0; k2 < 2; k2++) {
                        memcpy(one->t.data, inv + k2 * (n_rot / 2), (size_t)(n_rot / 2) * sizeof(float));
                        omnic__node n1 = n;
                        n1.src[2] = &one->t, n1.src[3] = NULL, n1.dst = &d1->t;
                        ref_b->kernel[OMNIC_OP_ROPE](&n1, 0, 1, NULL);
                        omnic__node n2 = n;
                        ref_b->kernel[OMNIC_OP_ROPE](&n2, 0, 1, NULL);
                        for (int64_t t = 0; t < T_; t++)
                            if (sv[t] == k2 &&
                                memcmp((float *)d1->t.data + t * H * D, (float *)dst->t.data + t * H * D,
                                       (size_t)(H * D) * sizeof(float))) {
                                fprintf(stderr,
                                        "FAIL %s: row %lld (table %d) differs from the one-table op\n", label,
                                        (long long)t, k2);
                                fails++;
                            }
                    }
                }
                bufs_free();
            }
        }
    }
    assert_int_equal(fails, 0);
}

static void test_attention(void **state)
{
    (void)state;
    /* T, S, H, Hkv, D */
    static const int64_t shapes[][5] = {
        {1, 1, 1, 1, 8},   {1, 33, 4, 4, 64},  {1, 67, 8, 2, 64},  {3, 5, 2, 1, 8},     {17, 17, 4, 1, 80},
        {5, 67, 6, 3, 64}, {17, 33, 2, 2, 17}, {7, 20, 8, 2, 128}, {33, 300, 8, 2, 64}, {1, 300, 16, 4, 128},
    };
    int fails = 0, id = 0;
    char label[200];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int64_t T_ = shapes[k][0], S = shapes[k][1], H = shapes[k][2], Hkv = shapes[k][3], D = shapes[k][4];
        for (int kvi = 0; kvi < 2; kvi++) {
            omnic_dtype kvdt = kvi ? OMNIC_DTYPE_F16 : OMNIC_DTYPE_F32;
            /* variants: 0 causal; 1 causal + window 4; 2 bidirectional + bias;
             * 3 causal + softcap 5 + bias; 4 bidirectional, scattered qpos;
             * 5 causal + window 17 + softcap 50, scattered qpos;
             * 6 causal, scattered qpos, each row from its own kv_begin (KV pool slots);
             * 7 causal + window 3 + kv_begin, rows in bidirectional spans (some longer than
             *   the window, some empty) */
            for (int v = 0; v < 16; v++) { /* v >= 8: the same variant tiled (ip[2] = 1) */
                const bool tiled = v >= 8;
                rng_seed(6000 + (uint64_t)id++);
                const int var = v % 8;
                tbuf *q = T(OMNIC_DTYPE_F32, T_, H, D), *kk = T(kvdt, S, Hkv, D), *vv = T(kvdt, S, Hkv, D);
                tbuf *qpos = T(OMNIC_DTYPE_I32, T_), *dst = T(OMNIC_DTYPE_F32, T_, H, D);
                tbuf *bias = (var == 2 || var == 3) ? T(OMNIC_DTYPE_F32, T_, S) : NULL;
                fill_uniform(q, -3, 3);
                fill_uniform(kk, -1, 1);
                fill_uniform(vv, -1, 1);
                int32_t *qp = qpos->t.data;
                for (int64_t t = 0; t < T_; t++)
                    qp[t] = (int32_t)(var >= 4 ? rng_int(S) : S - T_ + t);
                if (bias) {
                    fill_uniform(bias, -2, 0);
                    for (int64_t i = 0; i < T_ * S; i++)
                        if (rng_int(5) == 0) F(bias)[i] = -1e9f; /* a large finite negative masks */
                    /* every row keeps its own key: a row whose visible keys are all at -1e9
                     * is undefined in f32 (the scores round to one value; ref keeps them) */
                    for (int64_t t = 0; t < T_; t++)
                        F(bias)[t * S + qp[t]] = -0.5f;
                }
                omnic__node n = mknode(OMNIC_OP_ATTENTION, dst, q, kk, vv, qpos, bias);
                tbuf *kvb = var >= 6 ? T(OMNIC_DTYPE_I32, T_) : NULL;
                if (kvb) {
                    for (int64_t t = 0; t < T_; t++) {
                        int32_t *b = kvb->t.data;
                        b[t] = (int32_t)rng_int(qp[t] + 1); /* 0 <= kv_begin <= qpos */
                    }
                    n.src[5] = &kvb->t;
                }
                tbuf *span = var == 7 ? T(OMNIC_DTYPE_I32, T_, 2) : NULL;
                if (span) { /* [b, e) relative to kv_begin, holding the row (or empty) */
                    const int32_t *b = kvb->t.data;
                    int32_t *sp = span->t.data;
                    for (int64_t t = 0; t < T_; t++) {
                        int32_t rel = qp[t] - b[t];
                        if (rng_int(4) == 0) {
                            sp[2 * t] = sp[2 * t + 1] = 0;
                            continue;
                        }
                        sp[2 * t] = rel - (int32_t)rng_int(rel + 1);
                        sp[2 * t + 1] = rel + 1 + (int32_t)rng_int(S - qp[t]);
                    }
                    n.src[6] = &span->t;
                }
                n.fp[0] = (float)(1.0 / sqrt((double)D));
                n.fp[1] = var == 3 ? 5.0f : var == 5 ? 50.0f : 0.0f;
                n.ip[0] = var <= 1 || var == 3 || var >= 5;
                n.ip[1] = var == 1 ? 4 : var == 5 ? 17 : var == 7 ? 3 : 0;
                n.ip[2] = tiled;
                static const char *const vn[] = {"causal",
                                                 "causal window=4",
                                                 "bidirectional bias",
                                                 "causal softcap=5 bias",
                                                 "bidirectional random qpos",
                                                 "causal window=17 softcap=50 random qpos",
                                                 "causal random qpos kv_begin",
                                                 "causal window=3 kv_begin spans"};
                snprintf(label, sizeof label, "attention T=%lld S=%lld H=%lld Hkv=%lld D=%lld kv=%s %s%s",
                         (long long)T_, (long long)S, (long long)H, (long long)Hkv, (long long)D, dtn(kvdt),
                         vn[var], tiled ? " tiled" : "");
                fails += check(label, &n, kvdt);
                bufs_free();
            }
        }
    }
    assert_int_equal(fails, 0);
}

/* Attention with a T5-style relative-position table (Phi-4-mm's audio conformer): bidirectional
 * over all keys, the table [2M, H] read by clamp(j - qpos[t], -M, M - 1) + M, with distances past
 * M (clamped), scattered qpos, GQA, f16 K/V, and the tiled form. */
static void test_attention_relpos(void **state)
{
    (void)state;
    /* T, S, H, Hkv, D, M */
    static const int64_t shapes[][6] = {{1, 1, 1, 1, 8, 1},
                                        {13, 13, 4, 4, 16, 4},
                                        {37, 37, 2, 1, 64, 500},
                                        {70, 70, 4, 2, 32, 8},
                                        {5, 300, 8, 8, 64, 20}};
    int fails = 0, id = 0;
    char label[200];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int64_t T_ = shapes[k][0], S = shapes[k][1], H = shapes[k][2], Hkv = shapes[k][3], D = shapes[k][4],
                M = shapes[k][5];
        for (int v = 0; v < 4; v++) {
            const bool tiled = v & 1, f16 = v & 2, scattered = k == 4;
            omnic_dtype kvdt = f16 ? OMNIC_DTYPE_F16 : OMNIC_DTYPE_F32;
            rng_seed(6800 + (uint64_t)id++);
            tbuf *q = T(OMNIC_DTYPE_F32, T_, H, D), *kk = T(kvdt, S, Hkv, D), *vv = T(kvdt, S, Hkv, D);
            tbuf *qpos = T(OMNIC_DTYPE_I32, T_), *dst = T(OMNIC_DTYPE_F32, T_, H, D);
            tbuf *table = T(OMNIC_DTYPE_F32, 2 * M, H);
            fill_uniform(q, -3, 3);
            fill_uniform(kk, -1, 1);
            fill_uniform(vv, -1, 1);
            fill_uniform(table, -2, 3);
            int32_t *qp = qpos->t.data;
            for (int64_t t = 0; t < T_; t++)
                qp[t] = (int32_t)(scattered ? rng_int(S) : t);
            omnic__node n = mknode(OMNIC_OP_ATTENTION, dst, q, kk, vv, qpos, table);
            n.fp[0] = (float)(1.0 / sqrt((double)D));
            n.ip[0] = 0;
            n.ip[2] = tiled;
            n.ip[3] = (int32_t)M;
            snprintf(label, sizeof label,
                     "attention relpos T=%lld S=%lld H=%lld Hkv=%lld D=%lld M=%lld kv=%s%s", (long long)T_,
                     (long long)S, (long long)H, (long long)Hkv, (long long)D, (long long)M, dtn(kvdt),
                     tiled ? " tiled" : "");
            fails += check(label, &n, kvdt);
            bufs_free();
        }
    }
    assert_int_equal(fails, 0);
}

/* Depthwise 2-D convolution, channel-last (NeMo conv subsampling: the one-channel first conv
 * and the depthwise stride-2 convs; the conformer's causal conv1d as kh = 3, kw = 1, pt = 2; more
 * taps than filters;
 * an odd geometry), f32 / bf16 / f16 filters, with and without bias. */
static void test_dwconv2d(void **state)
{
    (void)state;
    /* Ho, C, kh, kw, sh, sw, pt, pl, Wi, Ci, Wo */
    static const int64_t cases[][11] = {
        {5, 16, 3, 3, 2, 2, 1, 1, 80, 1, 40},
        {4, 16, 3, 3, 2, 2, 1, 1, 40, 16, 20},
        {37, 24, 3, 1, 1, 1, 2, 0, 1, 24, 1},
        {7, 5, 2, 5, 3, 2, 0, 2, 11, 5, 6},
        {1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},
        {9, 33, 3, 3, 2, 2, 1, 1, 10, 33, 5},
        /* more taps than filters (Gemma 3n's first subsampling conv at 8 channels: pad 0 above) */
        {6, 8, 3, 3, 2, 2, 0, 1, 128, 1, 64},
    };
    static const omnic_dtype wdts[] = {OMNIC_DTYPE_F32, OMNIC_DTYPE_BF16, OMNIC_DTYPE_F16};
    int fails = 0, id = 0;
    char label[200];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int64_t *c = cases[k];
        int64_t Ho = c[0], C = c[1], kh = c[2], kw = c[3], sh = c[4], Wi = c[8], Ci = c[9], Wo = c[10];
        for (size_t wi = 0; wi < sizeof wdts / sizeof wdts[0]; wi++)
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                rng_seed(8300 + (uint64_t)id++);
                tbuf *x = T(OMNIC_DTYPE_F32, Ho, sh * Wi * Ci), *w = T(wdts[wi], C, kh * kw);
                tbuf *b = with_bias ? T(OMNIC_DTYPE_F32, C) : NULL, *dst = T(OMNIC_DTYPE_F32, Ho, Wo * C);
                fill_uniform(x, -2, 2);
                fill_uniform(w, -1, 1);
                if (b) fill_uniform(b, -1, 1);
                /* with segments (every other case): rows start over at multiples of 3 */
                tbuf *seg = (id & 1) ? T(OMNIC_DTYPE_I32, Ho) : NULL;
                if (seg)
                    for (int64_t r = 0; r < Ho; r++)
                        ((int32_t *)seg->t.data)[r] = (int32_t)(r / 3 * 3 * sh);
                omnic__node n = mknode(OMNIC_OP_DWCONV2D, dst, x, w, b, seg, NULL);
                for (int i = 0; i < 8; i++)
                    n.ip[i] = (int32_t)c[2 + i];
                snprintf(label, sizeof label,
                         "dwconv2d%s Ho=%lld C=%lld k=%lldx%lld s=%lldx%lld p=%lldx%lld Wi=%lld Ci=%lld "
                         "Wo=%lld w=%s%s",
                         seg ? " segments" : "", (long long)Ho, (long long)C, (long long)kh, (long long)kw,
                         (long long)sh, (long long)c[5], (long long)c[6], (long long)c[7], (long long)Wi,
                         (long long)Ci, (long long)Wo, dtn(wdts[wi]), b ? " bias" : "");
                fails += check(label, &n, wdts[wi]);
                bufs_free();
            }
    }
    assert_int_equal(fails, 0);
}

/* Full 2-D convolution, channel-last, f32 filters in taps-major order, with and without bias:
 * Gemma 3n's second audio subsampling conv (3x3 s2, pad (0, 1) above / left, zero rows below),
 * a stride-1 same conv, a 1x1, an odd geometry. */
static void test_conv2d(void **state)
{
    (void)state;
    /* Ho, O, kh, kw, sh, sw, pt, pl, Wi, Ci, Wo */
    static const int64_t cases[][11] = {
        {6, 4, 3, 3, 2, 2, 0, 1, 8, 8, 4},   {5, 7, 3, 3, 1, 1, 1, 1, 6, 3, 6},
        {4, 16, 1, 1, 1, 1, 0, 0, 5, 12, 5}, {7, 5, 2, 5, 3, 2, 0, 2, 11, 5, 6},
        {1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},   {9, 32, 3, 3, 2, 2, 1, 1, 10, 33, 5},
    };
    int fails = 0, id = 0;
    char label[200];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int64_t *c = cases[k];
        int64_t Ho = c[0], O = c[1], kh = c[2], kw = c[3], sh = c[4], Wi = c[8], Ci = c[9], Wo = c[10];
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            rng_seed(9100 + (uint64_t)id++);
            tbuf *x = T(OMNIC_DTYPE_F32, Ho, sh * Wi * Ci), *w = T(OMNIC_DTYPE_F32, O, kh * kw * Ci);
            tbuf *b = with_bias ? T(OMNIC_DTYPE_F32, O) : NULL, *dst = T(OMNIC_DTYPE_F32, Ho, Wo * O);
            fill_uniform(x, -2, 2);
            fill_uniform(w, -1, 1);
            if (b) fill_uniform(b, -1, 1);
            omnic__node n = mknode(OMNIC_OP_CONV2D, dst, x, w, b, NULL, NULL);
            for (int i = 0; i < 8; i++)
                n.ip[i] = (int32_t)c[2 + i];
            snprintf(label, sizeof label,
                     "conv2d Ho=%lld O=%lld k=%lldx%lld s=%lldx%lld p=%lldx%lld Wi=%lld Ci=%lld%s",
                     (long long)Ho, (long long)O, (long long)kh, (long long)kw, (long long)sh,
                     (long long)c[5], (long long)c[6], (long long)c[7], (long long)Wi, (long long)Ci,
                     b ? " bias" : "");
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
        }
    }
    assert_int_equal(fails, 0);
}

/* Cumulative group norm: Gemma 3n's subsampling maps (64 x 128, 32 x 32 per row, here
 * smaller), one channel, inputs with an offset (the running mean matters). */
static void test_cum_groupnorm(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {{1, 1, 1}, {9, 16, 8}, {40, 32, 4}, {7, 5, 1}, {300, 64, 16}};
    int fails = 0, id = 0;
    char label[120];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int64_t Tn = shapes[k][0], G = shapes[k][1], C = shapes[k][2];
        rng_seed(9200 + (uint64_t)id++);
        tbuf *x = T(OMNIC_DTYPE_F32, Tn, G * C), *w = T(OMNIC_DTYPE_F32, C),
             *dst = T(OMNIC_DTYPE_F32, Tn, G * C);
        fill_uniform(x, -1, 3);
        fill_uniform(w, -2, 2);
        omnic__node n = mknode(OMNIC_OP_CUM_GROUPNORM, dst, x, w, NULL, NULL, NULL);
        n.fp[0] = 1e-3f;
        snprintf(label, sizeof label, "cum_groupnorm T=%lld G=%lld C=%lld", (long long)Tn, (long long)G,
                 (long long)C);
        fails += check(label, &n, OMNIC_DTYPE_F32);
        bufs_free();
    }
    assert_int_equal(fails, 0);
}

/* Local relative attention: the USM conformer's shape (13 keys, softcap 50), a context longer
 * than the rows, padded keys at the end and in the middle, a row without a visible key. */
static void test_attn_local(void **state)
{
    (void)state;
    /* T, H, D, L */
    static const int64_t shapes[][4] = {{1, 1, 4, 1}, {30, 2, 16, 13}, {5, 4, 8, 13}, {64, 8, 48, 7}};
    int fails = 0, id = 0;
    char label[120];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int pad = 0; pad < 2; pad++) {
            const int64_t Tn = shapes[k][0], H = shapes[k][1], D = shapes[k][2], L = shapes[k][3];
            rng_seed(9300 + (uint64_t)id++);
            tbuf *q = T(OMNIC_DTYPE_F32, Tn, H, D), *kk = T(OMNIC_DTYPE_F32, Tn, H, D);
            tbuf *vv = T(OMNIC_DTYPE_F32, Tn, H, D), *rel = T(OMNIC_DTYPE_F32, L, H, D);
            tbuf *valid = T(OMNIC_DTYPE_I32, Tn), *dst = T(OMNIC_DTYPE_F32, Tn, H, D);
            fill_uniform(q, -2, 2);
            fill_uniform(kk, -2, 2);
            fill_uniform(vv, -1, 1);
            fill_uniform(rel, -1, 1);
            int32_t *va = valid->t.data;
            for (int64_t t = 0; t < Tn; t++) /* pad: the last third and every 7th row masked */
                va[t] = !pad || (t < Tn - Tn / 3 && t % 7 != 3);
            omnic__node n = mknode(OMNIC_OP_ATTN_LOCAL, dst, q, kk, vv, rel, valid);
            n.fp[0] = k == 3 ? 3.0f : 50.0f;
            snprintf(label, sizeof label, "attn_local T=%lld H=%lld D=%lld L=%lld%s", (long long)Tn,
                     (long long)H, (long long)D, (long long)L, pad ? " padded" : "");
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
        }
    assert_int_equal(fails, 0);
}

/* Long key ranges as the vision towers make them (thousands of patches per attention block),
 * two-pass and tiled: T = S = 3000 rows (full: T = 1000) in
 *   blocks   row-range blocks (kv_begin = the block's first row, causal with qpos = its last):
 *            block-diagonal bidirectional attention, Qwen2-VL's per-image blocks;
 *   windows  the same with 64-row windows cut at the block edges (Qwen2.5-VL window layers);
 *   causal   qpos = t, kv_begin = the row's slot start (two slots of 1500 rows);
 *   full     bidirectional over all 3000 keys, no kv_begin.
 * For the tiled form also: a row computed alone is bit-identical to the same row in the
 * whole call, and the work buffer does not grow with S (or T). */
static void test_attention_long(void **state)
{
    (void)state;
    enum { BLOCKS, WINDOWS, CAUSAL, FULL };
    /* mode, H, Hkv, D, kv f16, tiled */
    static const int cases[][6] = {
        {BLOCKS, 2, 2, 80, 0, 1}, {BLOCKS, 1, 1, 80, 0, 0}, {WINDOWS, 4, 2, 80, 1, 1},
        {CAUSAL, 2, 1, 80, 1, 1}, {CAUSAL, 1, 1, 64, 0, 0}, {FULL, 1, 1, 80, 0, 1},
    };
    static const char *const mn[] = {"blocks", "windows", "causal kv_begin", "full bidirectional"};
    static const int32_t block_len[] = {1000, 700, 1100, 200}; /* sums to T */
    const int64_t S = 3000;
    int fails = 0;
    char label[200];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int mode = cases[k][0];
        const int64_t H = cases[k][1], Hkv = cases[k][2], D = cases[k][3];
        const omnic_dtype kvdt = cases[k][4] ? OMNIC_DTYPE_F16 : OMNIC_DTYPE_F32;
        const bool tiled = cases[k][5];
        const int64_t T_ = mode == FULL ? 1000 : 3000; /* full: 1000 queries over all 3000 keys (ref cost) */
        rng_seed(6900 + (uint64_t)k);
        tbuf *q = T(OMNIC_DTYPE_F32, T_, H, D), *kk = T(kvdt, S, Hkv, D), *vv = T(kvdt, S, Hkv, D);
        tbuf *qpos = T(OMNIC_DTYPE_I32, T_), *dst = T(OMNIC_DTYPE_F32, T_, H, D);
        tbuf *kvb = mode == FULL ? NULL : T(OMNIC_DTYPE_I32, T_);
        fill_uniform(q, -3, 3);
        fill_uniform(kk, -1, 1);
        fill_uniform(vv, -1, 1);
        int32_t *qp = qpos->t.data, *kb = kvb ? kvb->t.data : NULL;
        for (int64_t t = 0, b0 = 0, blk = 0; t < T_; t++) {
            if (t == b0 + block_len[blk]) b0 += block_len[blk++];
            int64_t first = b0, last = b0 + block_len[blk] - 1;
            if (mode == WINDOWS) { /* 64-row windows from the block's start, the last one cut */
                first = b0 + (t - b0) / 64 * 64;
                last = first + 63 < last ? first + 63 : last;
            }
            qp[t] = (int32_t)(mode == CAUSAL ? t : mode == FULL ? 0 : last);
            if (kb) kb[t] = (int32_t)(mode == CAUSAL ? t / 1500 * 1500 : first);
        }
        omnic__node n = mknode(OMNIC_OP_ATTENTION, dst, q, kk, vv, qpos, NULL);
        if (kvb) n.src[5] = &kvb->t;
        n.fp[0] = (float)(1.0 / sqrt((double)D));
        n.ip[0] = mode != FULL;
        n.ip[2] = tiled;
        snprintf(label, sizeof label, "attention T=%lld S=%lld H=%lld Hkv=%lld D=%lld kv=%s %s%s",
                 (long long)T_, (long long)S, (long long)H, (long long)Hkv, (long long)D, dtn(kvdt), mn[mode],
                 tiled ? " tiled" : "");
        fails += check(label, &n, kvdt);
        if (tiled) {
            tbuf *whole = T(OMNIC_DTYPE_F32, T_, H, D);
            if (!run_on(cpu_b, &n, 2, whole, label)) fails++;
            static const int64_t rows[] = {0, 999, 1000, 1777, 2999};
            for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
                const int64_t t = rows[i] % T_;
                tbuf *q1 = T(OMNIC_DTYPE_F32, 1, H, D), *p1 = T(OMNIC_DTYPE_I32, 1),
                     *o1 = T(OMNIC_DTYPE_F32, 1, H, D);
                tbuf *b1 = kvb ? T(OMNIC_DTYPE_I32, 1) : NULL;
                memcpy(F(q1), F(q) + t * H * D, (size_t)(H * D) * sizeof(float));
                ((int32_t *)p1->t.data)[0] = qp[t];
                if (b1) ((int32_t *)b1->t.data)[0] = kb[t];
                omnic__node n1 = n;
                n1.src[0] = &q1->t;
                n1.src[3] = &p1->t;
                n1.src[5] = b1 ? &b1->t : NULL;
                if (!run_on(cpu_b, &n1, 1, o1, label)) fails++;
                if (memcmp(F(o1), F(whole) + t * H * D, (size_t)(H * D) * sizeof(float))) {
                    print_error("%s: row %lld alone differs from the same row in the call\n", label,
                                (long long)t);
                    fails++;
                }
            }
            /* the work buffer: the same for 16384 keys and rows as for 3000 */
            omnic__tensor q16 = q->t, k16 = kk->t, v16 = vv->t, p16 = qpos->t;
            q16.dims[0] = k16.dims[0] = v16.dims[0] = p16.dims[0] = 16384;
            omnic__node n16 = n;
            n16.src[0] = &q16, n16.src[1] = &k16, n16.src[2] = &v16, n16.src[3] = &p16, n16.src[5] = NULL;
            size_t w3k = omnic__backend_wsize(cpu_b, &n, 2), w16k = omnic__backend_wsize(cpu_b, &n16, 2);
            if (w3k != w16k || w16k > ((size_t)1 << 20)) {
                print_error(
                    "%s: tiled work buffer %zu bytes at S = 3000, %zu at S = 16384 (want equal, < 1 MiB)\n",
                    label, w3k, w16k);
                fails++;
            }
        }
        bufs_free();
    }
    assert_int_equal(fails, 0);
}

static void test_activations(void **state)
{
    (void)state;
    static const int64_t RC[][2] = {{1, 1}, {3, 17}, {17, 33}, {67, 257}};
    static const omnic__op unary[] = {OMNIC_OP_SILU,       OMNIC_OP_GELU,    OMNIC_OP_GELU_TANH,
                                      OMNIC_OP_GELU_QUICK, OMNIC_OP_SOFTCAP, OMNIC_OP_RELU,
                                      OMNIC_OP_SIGMOID};
    int fails = 0, id = 0;
    char label[160];
    for (size_t k = 0; k < sizeof RC / sizeof RC[0]; k++) {
        int64_t R = RC[k][0], C = RC[k][1];
        for (size_t u = 0; u < sizeof unary / sizeof unary[0]; u++) {
            rng_seed(7000 + (uint64_t)id++);
            tbuf *x = T(OMNIC_DTYPE_F32, R, C), *dst = T(OMNIC_DTYPE_F32, R, C);
            bool cap = unary[u] == OMNIC_OP_SOFTCAP;
            fill_uniform(x, cap ? -100 : -8, cap ? 100 : 8);
            omnic__node n = mknode(unary[u], dst, x, NULL, NULL, NULL, NULL);
            if (cap) n.fp[0] = 30.0f;
            snprintf(label, sizeof label, "%s R=%lld C=%lld", omnic__op_names[unary[u]], (long long)R,
                     (long long)C);
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
        }
        for (int g = 0; g < 3; g++) {
            rng_seed(7500 + (uint64_t)id++);
            tbuf *gate = T(OMNIC_DTYPE_F32, R, C), *up = T(OMNIC_DTYPE_F32, R, C),
                 *dst = T(OMNIC_DTYPE_F32, R, C);
            fill_uniform(gate, -8, 8);
            fill_uniform(up, -2, 2);
            omnic__node n = mknode(g ? OMNIC_OP_GEGLU : OMNIC_OP_SWIGLU, dst, gate, up, NULL, NULL, NULL);
            n.ip[0] = g == 2;
            snprintf(label, sizeof label, "%s%s R=%lld C=%lld", omnic__op_names[n.op],
                     g == 2 ? " (tanh)" : "", (long long)R, (long long)C);
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
        }
    }
    assert_int_equal(fails, 0);
}

static void test_get_rows_patch_embed(void **state)
{
    (void)state;
    static const int64_t VHT[][3] = {{1, 1, 1}, {17, 3, 5}, {257, 67, 17}, {33, 257, 3}};
    int fails = 0, id = 0;
    char label[160];
    for (int d = 0; d < 3; d++) {
        for (size_t k = 0; k < sizeof VHT / sizeof VHT[0]; k++) {
            int64_t V = VHT[k][0], H = VHT[k][1], T_ = VHT[k][2];
            rng_seed(8000 + (uint64_t)id++);
            tbuf *tbl = T(wdtypes[d], V, H), *ids = T(OMNIC_DTYPE_I32, T_), *dst = T(OMNIC_DTYPE_F32, T_, H);
            fill_uniform(tbl, -1, 1);
            fill_i32(ids, 0, V);
            omnic__node n = mknode(OMNIC_OP_GET_ROWS, dst, tbl, ids, NULL, NULL, NULL);
            snprintf(label, sizeof label, "get_rows table=%s V=%lld H=%lld T=%lld", dtn(wdtypes[d]),
                     (long long)V, (long long)H, (long long)T_);
            fails += check(label, &n, wdtypes[d]);
            bufs_free();
            /* ids past the table (row 0), and an offset table over base rows (Gemma 3n) */
            for (int over = 0; over < 2; over++) {
                rng_seed(8100 + (uint64_t)id++);
                tbuf *t2 = T(wdtypes[d], V, H), *i2 = T(OMNIC_DTYPE_I32, T_), *d2 = T(OMNIC_DTYPE_F32, T_, H);
                tbuf *base = over ? T(OMNIC_DTYPE_F32, T_, H) : NULL;
                fill_uniform(t2, -1, 1);
                if (base) fill_uniform(base, -2, 2);
                fill_i32(i2, 0, 3 * V);
                omnic__node m = mknode(OMNIC_OP_GET_ROWS, d2, t2, i2, base, NULL, NULL);
                m.ip[0] = over ? (int32_t)V : 0;
                snprintf(label, sizeof label, "get_rows table=%s V=%lld H=%lld T=%lld %s", dtn(wdtypes[d]),
                         (long long)V, (long long)H, (long long)T_,
                         over ? "offset V over base" : "ids past V");
                fails += check(label, &m, wdtypes[d]);
                bufs_free();
            }
        }
        if (d == 0) /* quantized tables (rows of whole 32-element blocks) */
            for (int qd = 0; qd < 4; qd++) {
                static const int64_t QVHT[][3] = {{1, 32, 1}, {17, 32, 5}, {257, 96, 17}, {33, 256, 3}};
                static const omnic_dtype qdts[4] = {OMNIC_DTYPE_Q8_0, OMNIC_DTYPE_Q4_0, OMNIC_DTYPE_Q4_0X16,
                                                    OMNIC_DTYPE_Q8_0X16};
                omnic_dtype qdt = qdts[qd];
                for (size_t k = 0; k < sizeof QVHT / sizeof QVHT[0]; k++) {
                    int64_t H = QVHT[k][1], T_ = QVHT[k][2];
                    int64_t V =
                        omnic__x16_plain(qdt) != OMNIC_DTYPE_COUNT ? (QVHT[k][0] + 15) / 16 * 16 : QVHT[k][0];
                    rng_seed(8300 + (uint64_t)id++);
                    tbuf *tbl = T(qdt, V, H), *ids = T(OMNIC_DTYPE_I32, T_), *dst = T(OMNIC_DTYPE_F32, T_, H);
                    fill_uniform(tbl, -1, 1);
                    fill_i32(ids, 0, V);
                    omnic__node n = mknode(OMNIC_OP_GET_ROWS, dst, tbl, ids, NULL, NULL, NULL);
                    snprintf(label, sizeof label, "get_rows table=%s V=%lld H=%lld T=%lld", dtn(qdt),
                             (long long)V, (long long)H, (long long)T_);
                    fails += check(label, &n, qdt);
                    bufs_free();
                }
            }
        /* C, Hi, Wi, O, ph, pw */
        static const int64_t pe[][6] = {
            {3, 28, 42, 17, 14, 14}, {1, 4, 9, 5, 2, 3}, {3, 32, 16, 64, 16, 16}, {2, 3, 3, 1, 3, 3}};
        for (size_t k = 0; k < sizeof pe / sizeof pe[0]; k++) {
            int64_t C = pe[k][0], Hi = pe[k][1], Wi = pe[k][2], O = pe[k][3], ph = pe[k][4], pw = pe[k][5];
            int64_t P = (Hi / ph) * (Wi / pw);
            bool bias = k % 2 == 0;
            rng_seed(8500 + (uint64_t)id++);
            tbuf *img = T(OMNIC_DTYPE_F32, C, Hi, Wi), *w = T(wdtypes[d], O, C, ph, pw);
            tbuf *b = bias ? T(OMNIC_DTYPE_F32, O) : NULL, *dst = T(OMNIC_DTYPE_F32, P, O);
            fill_uniform(img, -1, 1);
            fill_uniform(w, -0.2, 0.2);
            if (b) fill_uniform(b, -1, 1);
            omnic__node n = mknode(OMNIC_OP_PATCH_EMBED, dst, img, w, b, NULL, NULL);
            snprintf(label, sizeof label, "patch_embed w=%s C=%lld %lldx%lld O=%lld patch %lldx%lld bias=%d",
                     dtn(wdtypes[d]), (long long)C, (long long)Hi, (long long)Wi, (long long)O, (long long)ph,
                     (long long)pw, bias);
            fails += check(label, &n, wdtypes[d]);
            bufs_free();
        }
    }
    assert_int_equal(fails, 0);
}

static void test_layout(void **state)
{
    (void)state;
    static const omnic_dtype dts[] = {OMNIC_DTYPE_F32, OMNIC_DTYPE_F16, OMNIC_DTYPE_I32};
    /* shapes of a (ndim, dims) with the concat/slice dim */
    static const struct {
        int nd;
        int64_t dims[4];
        int axis;
        int64_t other; /* concat: b's size along axis; slice: start */
    } cs[] = {
        {2, {3, 17}, 0, 5},        {2, {3, 17}, 1, 1}, {3, {2, 5, 7}, 1, 3},
        {4, {2, 3, 4, 33}, 3, 16}, {1, {67}, 0, 66},
    };
    int fails = 0, id = 0;
    char label[160];
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
        omnic_dtype dt = dts[di];
        for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
            int nd = cs[k].nd, ax = cs[k].axis;
            int64_t bd[4], dd[4];
            memcpy(bd, cs[k].dims, sizeof bd);
            memcpy(dd, cs[k].dims, sizeof dd);
            bd[ax] = cs[k].other;
            dd[ax] = cs[k].dims[ax] + cs[k].other;
            rng_seed(9000 + (uint64_t)id++);
            tbuf *a = tnew(dt, nd, cs[k].dims), *b = tnew(dt, nd, bd), *dst = tnew(dt, nd, dd);
            fill_any(a);
            fill_any(b);
            omnic__node n = mknode(OMNIC_OP_CONCAT, dst, a, b, NULL, NULL, NULL);
            n.ip[0] = ax;
            snprintf(label, sizeof label, "concat %s nd=%d axis=%d", dtn(dt), nd, ax);
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();

            /* slice the same shape: from start s, length dims[ax] - s (at least 1) */
            int64_t start = cs[k].other % cs[k].dims[ax];
            memcpy(dd, cs[k].dims, sizeof dd);
            dd[ax] = cs[k].dims[ax] - start;
            a = tnew(dt, nd, cs[k].dims);
            dst = tnew(dt, nd, dd);
            fill_any(a);
            n = mknode(OMNIC_OP_SLICE, dst, a, NULL, NULL, NULL, NULL);
            n.ip[0] = ax;
            n.ip[1] = (int32_t)start;
            snprintf(label, sizeof label, "slice %s nd=%d axis=%d start=%lld len=%lld", dtn(dt), nd, ax,
                     (long long)start, (long long)dd[ax]);
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
            if (dd[ax] > 1) { /* and a middle piece */
                dd[ax] = dd[ax] / 2;
                a = tnew(dt, nd, cs[k].dims);
                dst = tnew(dt, nd, dd);
                fill_any(a);
                n = mknode(OMNIC_OP_SLICE, dst, a, NULL, NULL, NULL, NULL);
                n.ip[0] = ax;
                n.ip[1] = (int32_t)start;
                snprintf(label, sizeof label, "slice %s nd=%d axis=%d start=%lld len=%lld", dtn(dt), nd, ax,
                         (long long)start, (long long)dd[ax]);
                fails += check(label, &n, OMNIC_DTYPE_F32);
                bufs_free();
            }
        }
        static const struct {
            int nd;
            int64_t dims[5];
            int perm[5];
        } ps[] = {
            {2, {3, 17}, {1, 0}},
            {3, {5, 3, 7}, {1, 0, 2}},
            {3, {4, 6, 33}, {2, 0, 1}},
            {4, {2, 3, 5, 7}, {0, 2, 1, 3}},
            {4, {2, 3, 5, 7}, {3, 1, 0, 2}},
            {5, {2, 1, 3, 4, 5}, {4, 2, 0, 3, 1}},
            {3, {1, 67, 1}, {2, 1, 0}},
        };
        for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
            int nd = ps[k].nd;
            int64_t dd[5];
            for (int i = 0; i < nd; i++)
                dd[i] = ps[k].dims[ps[k].perm[i]];
            rng_seed(9500 + (uint64_t)id++);
            tbuf *a = tnew(dt, nd, ps[k].dims), *dst = tnew(dt, nd, dd);
            fill_any(a);
            omnic__node n = mknode(OMNIC_OP_PERMUTE, dst, a, NULL, NULL, NULL, NULL);
            for (int i = 0; i < nd; i++)
                n.ip[i] = ps[k].perm[i];
            snprintf(label, sizeof label, "permute %s nd=%d perm=%d%d%d%d%d", dtn(dt), nd, ps[k].perm[0],
                     ps[k].perm[1], nd > 2 ? ps[k].perm[2] : 0, nd > 3 ? ps[k].perm[3] : 0,
                     nd > 4 ? ps[k].perm[4] : 0);
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
        }
    }
    assert_int_equal(fails, 0);
}

/* Values that exercise f16/bf16 rounding: ties, subnormals, overflow, infinities. */
static float cpy_value(int64_t i)
{
    static const float special[] = {0.0f,
                                    -0.0f,
                                    1.0f + 0x1p-11f,
                                    1.0f + 3 * 0x1p-11f,
                                    65504.0f,
                                    65520.0f,
                                    1e6f,
                                    -1e6f,
                                    0x1p-24f,
                                    0x1p-25f,
                                    0x1.8p-25f,
                                    3e-8f,
                                    1e-40f,
                                    INFINITY,
                                    -INFINITY,
                                    1.0f + 0x1p-8f,
                                    1.0f + 0x1.8p-8f,
                                    3.4e38f};
    int64_t ns = (int64_t)(sizeof special / sizeof special[0]);
    if (i < ns) return special[i];
    double mag = pow(2.0, rng_uniform(-30, 20));
    return (float)(rng_int(2) ? mag : -mag);
}

static void test_argmax_cpy(void **state)
{
    (void)state;
    static const int64_t RC[][2] = {{1, 1}, {3, 17}, {17, 33}, {67, 257}, {2, 50021}};
    int fails = 0, id = 0;
    char label[160];
    for (size_t k = 0; k < sizeof RC / sizeof RC[0]; k++) {
        int64_t R = RC[k][0], C = RC[k][1];
        for (int v = 0; v < 2; v++) {
            rng_seed(10000 + (uint64_t)id++);
            tbuf *x = T(OMNIC_DTYPE_F32, R, C), *dst = T(OMNIC_DTYPE_I32, R);
            if (v == 0) {
                fill_uniform(x, -1, 1);
            } else { /* few levels (many ties), NaNs, an all-NaN row, a -inf row */
                for (int64_t i = 0; i < R * C; i++) {
                    int64_t r = rng_int(8);
                    F(x)[i] = r == 0 ? NAN : (float)(r % 3);
                }
                for (int64_t c = 0; c < C; c++)
                    F(x)[c] = NAN;
                if (R > 1)
                    for (int64_t c = 0; c < C; c++)
                        F(x)[C + c] = -INFINITY;
            }
            omnic__node n = mknode(OMNIC_OP_ARGMAX, dst, x, NULL, NULL, NULL, NULL);
            snprintf(label, sizeof label, "argmax R=%lld C=%lld %s", (long long)R, (long long)C,
                     v ? "ties/NaN/-inf" : "uniform");
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
        }
    }
    for (int s = 0; s < 3; s++) {
        for (int d = 0; d < 3; d++) {
            for (int shape = 0; shape < 3; shape++) {
                static const int64_t sh[][2] = {{1, 1}, {3, 17}, {67, 257}};
                rng_seed(10500 + (uint64_t)id++);
                tbuf *x = T(wdtypes[s], sh[shape][0], sh[shape][1]);
                tbuf *dst = T(wdtypes[d], sh[shape][0] * sh[shape][1]); /* same count, other shape */
                for (int64_t i = 0; i < sh[shape][0] * sh[shape][1]; i++)
                    tset(x, i, cpy_value(i));
                omnic__node n = mknode(OMNIC_OP_CPY, dst, x, NULL, NULL, NULL, NULL);
                snprintf(label, sizeof label, "cpy %s->%s %lldx%lld", dtn(wdtypes[s]), dtn(wdtypes[d]),
                         (long long)sh[shape][0], (long long)sh[shape][1]);
                fails += check(label, &n, OMNIC_DTYPE_F32);
                bufs_free();
            }
        }
    }
    assert_int_equal(fails, 0);
}

/* set_rows scatters f32 rows into a KV-pool-like tensor of each float dtype. */
static void test_set_rows(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {{1, 1, 1}, {3, 10, 17}, {17, 40, 64}, {5, 300, 2 * 67}}; /* T, R, C */
    int fails = 0, id = 0;
    char label[160];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int64_t T_ = shapes[k][0], R = shapes[k][1], C = shapes[k][2];
        for (int d = 0; d < 3; d++) {
            rng_seed(11000 + (uint64_t)id++);
            tbuf *src = T(OMNIC_DTYPE_F32, T_, C), *idx = T(OMNIC_DTYPE_I32, T_), *dst = T(wdtypes[d], R, C);
            fill_uniform(src, -4, 4);
            int32_t *ix = idx->t.data;
            for (int64_t t = 0; t < T_; t++) { /* distinct rows */
                bool dup;
                do {
                    ix[t] = (int32_t)rng_int(R);
                    dup = false;
                    for (int64_t u = 0; u < t; u++)
                        dup |= ix[u] == ix[t];
                } while (dup);
            }
            omnic__node n = mknode(OMNIC_OP_SET_ROWS, dst, src, idx, NULL, NULL, NULL);
            snprintf(label, sizeof label, "set_rows T=%lld into %lldx%lld %s", (long long)T_, (long long)R,
                     (long long)C, dtn(wdtypes[d]));
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
        }
    }
    assert_int_equal(fails, 0);
}

/* ---- batch invariance (DESIGN.md 6) ------------------------------------------------------ */

/* Largest decode batch whose matmul rows the cpu backend keeps bit-identical to a lone row
 * (its decode kernel's limit, OMNIC_CPU_MV_MAX_M in cpu/matmul.c; above it sgemm blocking
 * depends on M). */
#define DECODE_MAX_M 16

/* Runs proto on cpu (nth threads) and then each of its rows alone: row r of src[0] (and of
 * src[1] when row_src1, and pos/qpos rows) as a one-row batch. Every row must come out
 * bit-identical. rows = dims[0] of src[0] and dst. */
static int check_rows_alone(const char *label, const omnic__node *proto, bool row_src1, int nth)
{
    const omnic__tensor *dt = proto->dst;
    tbuf *full = tnew(dt->dtype, dt->ndim, dt->dims);
    int fails = run_on(cpu_b, proto, nth, full, label) ? 0 : 1;
    int64_t rows = dt->dims[0];
    size_t drow = full->nbytes / (size_t)rows;
    for (int64_t r = 0; r < rows; r++) {
        omnic__tensor s0 = *proto->src[0], s1, dst1 = *dt;
        size_t srow = omnic__tensor_bytes(&s0) / (size_t)s0.dims[0];
        s0.dims[0] = 1;
        s0.data = (uint8_t *)proto->src[0]->data + (size_t)r * srow;
        omnic__node n = *proto;
        n.src[0] = &s0;
        if (row_src1) {
            s1 = *proto->src[1];
            size_t s1row = omnic__tensor_bytes(&s1) / (size_t)s1.dims[0];
            s1.dims[0] = 1;
            s1.data = (uint8_t *)proto->src[1]->data + (size_t)r * s1row;
            n.src[1] = &s1;
        }
        dst1.dims[0] = 1;
        tbuf *one = tnew(dst1.dtype, dst1.ndim, dst1.dims);
        if (!run_on(cpu_b, &n, 1, one, label)) fails++;
        if (memcmp(one->t.data, (uint8_t *)full->t.data + (size_t)r * drow, drow) != 0) {
            print_error("%s: row %lld computed alone differs from the batch of %lld\n", label, (long long)r,
                        (long long)rows);
            fails++;
        }
    }
    return fails;
}

static void test_batch_invariance(void **state)
{
    (void)state;
    /* up to DECODE_MAX_M rows any matmul is row-independent; past it, only nodes flagged
     * batch-invariant (ip[0] = 1, what the decode module sets) must be */
    static const int64_t Ms[] = {2, 5, DECODE_MAX_M, 25}; /* 25: two blocks of the decode kernel */
    int fails = 0, id = 0;
    char label[160];
    for (int d = 0; d < 3; d++) {
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
            int64_t M = Ms[mi], N = 37, K = 67;
            rng_seed(11000 + (uint64_t)id++);
            tbuf *a = T(OMNIC_DTYPE_F32, M, K), *w = T(wdtypes[d], N, K), *b = T(OMNIC_DTYPE_F32, N);
            tbuf *dst = T(OMNIC_DTYPE_F32, M, N);
            fill_uniform(a, -1, 1);
            fill_uniform(w, -1, 1);
            fill_uniform(b, -1, 1);
            omnic__node n = mknode(OMNIC_OP_MATMUL, dst, a, w, b, NULL, NULL);
            n.ip[0] = M > DECODE_MAX_M;
            snprintf(label, sizeof label, "batch invariance: matmul w=%s M=%lld", dtn(wdtypes[d]),
                     (long long)M);
            fails += check_rows_alone(label, &n, false, 3);
            bufs_free();
        }
    }
    /* The same with q8_0 / q4_0 / q4_0x16 / q8_0x16 weights (K = 160: an odd number of blocks;
     * M = 9: a full and a partial tile of the x16 kernels). */
    static const int64_t Mq[] = {2, 5, 9, DECODE_MAX_M, 25};
    for (int d = 0; d < 4; d++) {
        for (size_t mi = 0; mi < sizeof Mq / sizeof Mq[0]; mi++) {
            static const omnic_dtype qdts[4] = {OMNIC_DTYPE_Q8_0, OMNIC_DTYPE_Q4_0, OMNIC_DTYPE_Q4_0X16,
                                                OMNIC_DTYPE_Q8_0X16};
            omnic_dtype qdt = qdts[d];
            int64_t M = Mq[mi], N = omnic__x16_plain(qdt) != OMNIC_DTYPE_COUNT ? 48 : 37, K = 160;
            rng_seed(11200 + (uint64_t)id++);
            tbuf *a = T(OMNIC_DTYPE_F32, M, K), *w = T(qdt, N, K), *b = T(OMNIC_DTYPE_F32, N);
            tbuf *dst = T(OMNIC_DTYPE_F32, M, N);
            fill_uniform(a, -1, 1);
            fill_uniform(w, -1, 1);
            fill_uniform(b, -1, 1);
            omnic__node n = mknode(OMNIC_OP_MATMUL, dst, a, w, b, NULL, NULL);
            n.ip[0] = M > DECODE_MAX_M;
            snprintf(label, sizeof label, "batch invariance: matmul w=%s M=%lld", dtn(qdt), (long long)M);
            fails += check_rows_alone(label, &n, false, 3);
            bufs_free();
        }
    }
    /* Row-wise ops: rmsnorm, layernorm, softmax, silu, swiglu, rope. */
    static const omnic__op rowwise[] = {OMNIC_OP_RMSNORM, OMNIC_OP_LAYERNORM, OMNIC_OP_SOFTMAX,
                                        OMNIC_OP_SILU,    OMNIC_OP_SWIGLU,    OMNIC_OP_ROPE};
    for (size_t k = 0; k < sizeof rowwise / sizeof rowwise[0]; k++) {
        omnic__op op = rowwise[k];
        rng_seed(11500 + (uint64_t)id++);
        tbuf *x, *src1 = NULL, *dst;
        if (op == OMNIC_OP_ROPE) {
            x = T(OMNIC_DTYPE_F32, 7, 4, 64);
            dst = T(OMNIC_DTYPE_F32, 7, 4, 64);
            src1 = T(OMNIC_DTYPE_I32, 7);
            fill_i32(src1, 0, 8192);
        } else {
            x = T(OMNIC_DTYPE_F32, 7, 257);
            dst = T(OMNIC_DTYPE_F32, 7, 257);
            if (op == OMNIC_OP_SWIGLU) {
                src1 = T(OMNIC_DTYPE_F32, 7, 257);
                fill_uniform(src1, -2, 2);
            } else if (op == OMNIC_OP_RMSNORM || op == OMNIC_OP_LAYERNORM) {
                src1 = T(OMNIC_DTYPE_BF16, 257);
                fill_uniform(src1, 0.5, 1.5);
            }
        }
        fill_uniform(x, -3, 3);
        omnic__node n = mknode(op, dst, x, src1, NULL, NULL, NULL);
        n.fp[0] = op == OMNIC_OP_ROPE ? 1e4f : op == OMNIC_OP_SOFTMAX ? 1.0f : 1e-6f;
        n.fp[1] = 1.0f;
        n.ip[0] = op == OMNIC_OP_ROPE ? 64 : 0;
        snprintf(label, sizeof label, "batch invariance: %s rows=7", omnic__op_names[op]);
        fails += check_rows_alone(label, &n, op == OMNIC_OP_SWIGLU || op == OMNIC_OP_ROPE, 3);
        bufs_free();
    }
    assert_int_equal(fails, 0);
}

/* ---- kernel tables ------------------------------------------------------------------ */

static void test_tables(void **state)
{
    (void)state;
    const omnic__backend_ops *bs[2] = {omnic__backend_ref(), omnic__backend_cpu()};
    const char *names[2] = {"ref", "cpu"};
    for (int i = 0; i < 2; i++) {
        assert_non_null(bs[i]);
        assert_int_equal(bs[i]->version, OMNIC_BACKEND_OPS_VERSION);
        assert_string_equal(bs[i]->name, names[i]);
        assert_ptr_equal(omnic__backend_by_name(names[i]), bs[i]);
        assert_null(bs[i]->kernel[OMNIC_OP_NONE]);
        for (int op = 1; op < OMNIC_OP_COUNT; op++) {
            if (!bs[i]->kernel[op])
                fail_msg("backend %s: no kernel for op %d (%s)", names[i], op, omnic__op_names[op]);
        }
    }
    assert_true(omnic__backend_ref()->single_threaded);
    assert_null(omnic__backend_by_name("cuda"));
    assert_null(omnic__backend_by_name(""));
    assert_null(omnic__backend_by_name(NULL));
    for (int op = 0; op < OMNIC_OP_COUNT; op++) {
        if (!omnic__op_names[op] || !omnic__op_names[op][0]) fail_msg("op %d has no name", op);
        for (int o2 = 0; o2 < op; o2++)
            if (!strcmp(omnic__op_names[op], omnic__op_names[o2]))
                fail_msg("ops %d and %d share a name", o2, op);
        if (tolerances[op].nmse[OMNIC_DTYPE_F32] <= 0 && !tolerances[op].exact)
            fail_msg("op %d: no tolerance", op);
    }
    /* An op without a work buffer reports 0 bytes. */
    omnic__node n = {.op = OMNIC_OP_SILU};
    assert_int_equal(omnic__backend_wsize(omnic__backend_ref(), &n, 1), 0);
}

/* ---- ref against hand-computed values ---------------------------------------------- */

static void run_ref(omnic__node *n)
{
    size_t ws = omnic__backend_wsize(ref_b, n, 1);
    uint8_t *w = guarded_alloc(ws);
    assert_non_null(w);
    ref_b->kernel[n->op](n, 0, 1, w + GUARD);
    assert_true(guarded_ok(w, ws));
    free(w);
}

static void expect_near(const char *what, int i, double got, double want, double tol)
{
    if (!(fabs(got - want) <= tol * (fabs(want) > 1 ? fabs(want) : 1)))
        fail_msg("%s[%d]: got %.9g, want %.9g (tol %g)", what, i, got, want, tol);
}

static void expect_vec(const char *what, const float *got, const double *want, int n, double tol)
{
    for (int i = 0; i < n; i++)
        expect_near(what, i, got[i], want[i], tol);
}

static void set_f32(tbuf *b, const float *v, int n)
{
    memcpy(b->t.data, v, (size_t)n * sizeof(float));
}

static void test_ref_hand_norms(void **state)
{
    (void)state;
    static const float x4[] = {1, 2, 3, 4};
    tbuf *x = T(OMNIC_DTYPE_F32, 1, 4), *w = T(OMNIC_DTYPE_F16, 4), *b = T(OMNIC_DTYPE_BF16, 4);
    tbuf *y = T(OMNIC_DTYPE_F32, 1, 4);
    set_f32(x, x4, 4);
    /* rmsnorm: mean(x^2) = 7.5, x / sqrt(7.5) */
    omnic__node n = mknode(OMNIC_OP_RMSNORM, y, x, NULL, NULL, NULL, NULL);
    run_ref(&n);
    const double r = 1.0 / sqrt(7.5);
    expect_vec("rmsnorm", F(y), (const double[]){r, 2 * r, 3 * r, 4 * r}, 4, 1e-7);
    for (int i = 0; i < 4; i++)
        tset(w, i, (float)i * 0.5f); /* w = 0, .5, 1, 1.5 */
    n = mknode(OMNIC_OP_RMSNORM, y, x, w, NULL, NULL, NULL);
    run_ref(&n);
    expect_vec("rmsnorm w", F(y), (const double[]){0, 2 * r * 0.5, 3 * r, 4 * r * 1.5}, 4, 1e-7);
    n.ip[0] = 1; /* Gemma: (1 + w) */
    run_ref(&n);
    expect_vec("rmsnorm 1+w", F(y), (const double[]){r, 2 * r * 1.5, 3 * r * 2, 4 * r * 2.5}, 4, 1e-7);
    n.fp[0] = 0.5f; /* eps: mean 7.5 + 0.5 = 8 */
    n.ip[0] = 0;
    n.src[1] = NULL;
    run_ref(&n);
    const double r8 = 1.0 / sqrt(8.0);
    expect_vec("rmsnorm eps", F(y), (const double[]){r8, 2 * r8, 3 * r8, 4 * r8}, 4, 1e-7);

    /* layernorm: mean 2.5, var 1.25 */
    const double s = 1.0 / sqrt(1.25);
    n = mknode(OMNIC_OP_LAYERNORM, y, x, NULL, NULL, NULL, NULL);
    run_ref(&n);
    expect_vec("layernorm", F(y), (const double[]){-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 4, 1e-7);
    for (int i = 0; i < 4; i++) {
        tset(w, i, 2.0f);
        tset(b, i, 1.0f);
    }
    n = mknode(OMNIC_OP_LAYERNORM, y, x, w, b, NULL, NULL);
    run_ref(&n);
    expect_vec("layernorm w b", F(y), (const double[]){1 - 3 * s, 1 - s, 1 + s, 1 + 3 * s}, 4, 1e-7);
    /* a large common offset must not disturb the variance (two-pass) */
    static const float xo[] = {10001, 10002, 10003, 10004};
    set_f32(x, xo, 4);
    n = mknode(OMNIC_OP_LAYERNORM, y, x, NULL, NULL, NULL, NULL);
    run_ref(&n);
    expect_vec("layernorm offset", F(y), (const double[]){-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 4, 1e-7);

    /* softmax [1, 2, 3]; with scale 2 equals softmax [2, 4, 6]; a -inf entry gets 0 */
    tbuf *x3 = T(OMNIC_DTYPE_F32, 3, 3), *y3 = T(OMNIC_DTYPE_F32, 3, 3);
    set_f32(x3, (const float[]){1, 2, 3, 1, 2, 3, -INFINITY, 0, 0}, 9);
    n = mknode(OMNIC_OP_SOFTMAX, y3, x3, NULL, NULL, NULL, NULL);
    n.fp[0] = 1.0f;
    run_ref(&n);
    expect_vec("softmax", F(y3),
               (const double[]){0.09003057317038046, 0.24472847105479767, 0.6652409557748219,
                                0.09003057317038046, 0.24472847105479767, 0.6652409557748219, 0, 0.5, 0.5},
               9, 1e-7);
    n.fp[0] = 2.0f;
    run_ref(&n);
    const double e2 = exp(2), e4 = exp(4), e6 = exp(6), z = e2 + e4 + e6;
    expect_vec("softmax scale", F(y3), (const double[]){e2 / z, e4 / z, e6 / z}, 3, 1e-7);
    /* ref-only convention: an all -inf row yields zeros, not NaN */
    set_f32(x3, (const float[]){-INFINITY, -INFINITY, -INFINITY}, 3);
    run_ref(&n);
    expect_vec("softmax all -inf", F(y3), (const double[]){0, 0, 0}, 3, 0);
    bufs_free();
}

static void test_ref_hand_activations(void **state)
{
    (void)state;
    tbuf *x = T(OMNIC_DTYPE_F32, 4), *y = T(OMNIC_DTYPE_F32, 4), *up = T(OMNIC_DTYPE_F32, 4);
    set_f32(x, (const float[]){1.0f, -1.0f, 2.5f, -3.0f}, 4);
    set_f32(up, (const float[]){2.0f, 2.0f, 2.0f, 2.0f}, 4);
    omnic__node n = mknode(OMNIC_OP_GELU, y, x, NULL, NULL, NULL, NULL);
    run_ref(&n);
    const double gelu[] = {0.8413447460685429, -0.15865525393145707, 2.4844758366855597,
                           -0.00404969409489031};
    expect_vec("gelu", F(y), gelu, 4, 1e-7);
    n.op = OMNIC_OP_GELU_TANH;
    run_ref(&n);
    expect_vec("gelu_tanh", F(y),
               (const double[]){0.8411919906082768, -0.15880800939172324, 2.484915733910001}, 3, 1e-7);
    n.op = OMNIC_OP_SILU;
    run_ref(&n);
    expect_vec("silu", F(y), (const double[]){0.7310585786300049, -0.2689414213699951}, 2, 1e-7);
    n.op = OMNIC_OP_GELU_QUICK;
    run_ref(&n);
    expect_vec("gelu_quick", F(y), (const double[]){0.8457957659328212, -0.15420423406717886}, 2, 1e-7);
    n.op = OMNIC_OP_SOFTCAP;
    n.fp[0] = 2.0f;
    run_ref(&n);
    expect_vec("softcap", F(y), (const double[]){2 * tanh(0.5), 2 * tanh(-0.5), 2 * tanh(1.25)}, 3, 1e-7);
    n = mknode(OMNIC_OP_GEGLU, y, x, up, NULL, NULL, NULL);
    run_ref(&n);
    expect_vec("geglu", F(y), (const double[]){2 * gelu[0], 2 * gelu[1], 2 * gelu[2], 2 * gelu[3]}, 4, 1e-7);
    n.op = OMNIC_OP_SWIGLU;
    run_ref(&n);
    expect_vec("swiglu", F(y), (const double[]){2 * 0.7310585786300049, 2 * -0.2689414213699951}, 2, 1e-7);

    /* scale and the three broadcast forms of add/mul */
    n = mknode(OMNIC_OP_SCALE, y, x, NULL, NULL, NULL, NULL);
    n.fp[0] = 2.0f;
    n.fp[1] = 1.0f;
    run_ref(&n);
    expect_vec("scale", F(y), (const double[]){3, -1, 6, -5}, 4, 0);
    tbuf *a = T(OMNIC_DTYPE_F32, 2, 2), *bc = T(OMNIC_DTYPE_BF16, 2), *br = T(OMNIC_DTYPE_F32, 2, 1);
    tbuf *y2 = T(OMNIC_DTYPE_F32, 2, 2);
    set_f32(a, (const float[]){1, 2, 3, 4}, 4);
    tset(bc, 0, 10);
    tset(bc, 1, 20);
    set_f32(br, (const float[]){100, 200}, 2);
    n = mknode(OMNIC_OP_ADD, y2, a, bc, NULL, NULL, NULL);
    run_ref(&n);
    expect_vec("add [C]", F(y2), (const double[]){11, 22, 13, 24}, 4, 0);
    n = mknode(OMNIC_OP_MUL, y2, a, br, NULL, NULL, NULL);
    run_ref(&n);
    expect_vec("mul [R,1]", F(y2), (const double[]){100, 200, 600, 800}, 4, 0);
    n = mknode(OMNIC_OP_MUL, y2, a, a, NULL, NULL, NULL);
    run_ref(&n);
    expect_vec("mul [R,C]", F(y2), (const double[]){1, 4, 9, 16}, 4, 0);
    bufs_free();
}

static void test_ref_hand_matmul_layout(void **state)
{
    (void)state;
    /* [1,2,3] . [[1,0,-1],[.5,.5,.5]]^T + [1,-1] = [-1, 2] */
    tbuf *a = T(OMNIC_DTYPE_F32, 1, 3), *w = T(OMNIC_DTYPE_F16, 2, 3), *b = T(OMNIC_DTYPE_F32, 2);
    tbuf *y = T(OMNIC_DTYPE_F32, 1, 2);
    set_f32(a, (const float[]){1, 2, 3}, 3);
    const float wv[] = {1, 0, -1, 0.5f, 0.5f, 0.5f};
    for (int i = 0; i < 6; i++)
        tset(w, i, wv[i]);
    set_f32(b, (const float[]){1, -1}, 2);
    omnic__node n = mknode(OMNIC_OP_MATMUL, y, a, w, b, NULL, NULL);
    run_ref(&n);
    expect_vec("matmul", F(y), (const double[]){-1, 2}, 2, 0);

    /* patch_embed: 1 channel 2x4 image, 2x2 patches, one output channel of ones: patch sums */
    tbuf *img = T(OMNIC_DTYPE_F32, 1, 2, 4), *pw = T(OMNIC_DTYPE_BF16, 1, 1, 2, 2),
         *pe = T(OMNIC_DTYPE_F32, 2, 1);
    set_f32(img, (const float[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    for (int i = 0; i < 4; i++)
        tset(pw, i, 1.0f);
    n = mknode(OMNIC_OP_PATCH_EMBED, pe, img, pw, NULL, NULL, NULL);
    run_ref(&n);
    expect_vec("patch_embed", F(pe), (const double[]){1 + 2 + 5 + 6, 3 + 4 + 7 + 8}, 2, 0);

    /* get_rows from a bf16 table */
    tbuf *tbl = T(OMNIC_DTYPE_BF16, 3, 2), *ids = T(OMNIC_DTYPE_I32, 2), *g = T(OMNIC_DTYPE_F32, 2, 2);
    for (int i = 0; i < 6; i++)
        tset(tbl, i, (float)i);
    tset(ids, 0, 2);
    tset(ids, 1, 0);
    n = mknode(OMNIC_OP_GET_ROWS, g, tbl, ids, NULL, NULL, NULL);
    run_ref(&n);
    expect_vec("get_rows", F(g), (const double[]){4, 5, 0, 1}, 4, 0);

    /* permute [2,3] -> [3,2] is a transpose; concat and slice along dim 1 */
    tbuf *m = T(OMNIC_DTYPE_F32, 2, 3), *mt = T(OMNIC_DTYPE_F32, 3, 2), *cc = T(OMNIC_DTYPE_F32, 2, 6);
    tbuf *sl = T(OMNIC_DTYPE_F32, 2, 2);
    set_f32(m, (const float[]){1, 2, 3, 4, 5, 6}, 6);
    n = mknode(OMNIC_OP_PERMUTE, mt, m, NULL, NULL, NULL, NULL);
    n.ip[0] = 1;
    n.ip[1] = 0;
    run_ref(&n);
    expect_vec("permute", F(mt), (const double[]){1, 4, 2, 5, 3, 6}, 6, 0);
    n = mknode(OMNIC_OP_CONCAT, cc, m, m, NULL, NULL, NULL);
    n.ip[0] = 1;
    run_ref(&n);
    expect_vec("concat", F(cc), (const double[]){1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}, 12, 0);
    n = mknode(OMNIC_OP_SLICE, sl, m, NULL, NULL, NULL, NULL);
    n.ip[0] = 1;
    n.ip[1] = 1;
    run_ref(&n);
    expect_vec("slice", F(sl), (const double[]){2, 3, 5, 6}, 4, 0);

    /* argmax: ties take the lowest index; NaN never wins unless the row is all NaN */
    tbuf *ax = T(OMNIC_DTYPE_F32, 5, 4), *am = T(OMNIC_DTYPE_I32, 5);
    set_f32(ax,
            (const float[]){1,   3,   3,         2,         NAN,       2,         NAN, 5,         NAN, NAN,
                            NAN, NAN, -INFINITY, -INFINITY, -INFINITY, -INFINITY, NAN, -INFINITY, NAN, NAN},
            20);
    n = mknode(OMNIC_OP_ARGMAX, am, ax, NULL, NULL, NULL, NULL);
    run_ref(&n);
    const int32_t want[] = {1, 3, 0, 0, 1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(((int32_t *)am->t.data)[i], want[i]);

    /* cpy f32 -> f16 / bf16: round to nearest even, overflow to inf */
    tbuf *cs = T(OMNIC_DTYPE_F32, 5), *ch = T(OMNIC_DTYPE_F16, 5), *cb = T(OMNIC_DTYPE_BF16, 5);
    set_f32(cs, (const float[]){1.0f / 3.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, -2.0f}, 5);
    n = mknode(OMNIC_OP_CPY, ch, cs, NULL, NULL, NULL, NULL);
    run_ref(&n);
    const uint16_t wh[] = {0x3555, 0x3c00, 0x3c02, 0x7c00, 0xc000};
    for (int i = 0; i < 5; i++)
        assert_int_equal(((uint16_t *)ch->t.data)[i], wh[i]);
    n = mknode(OMNIC_OP_CPY, cb, cs, NULL, NULL, NULL, NULL);
    run_ref(&n);
    const uint16_t wb[] = {0x3eab, 0x3f80, 0x3f80, 0x4780, 0xc000};
    for (int i = 0; i < 5; i++)
        assert_int_equal(((uint16_t *)cb->t.data)[i], wb[i]);
    bufs_free();
}

static void test_ref_hand_rope(void **state)
{
    (void)state;
    tbuf *x = T(OMNIC_DTYPE_F32, 1, 1, 4), *pos = T(OMNIC_DTYPE_I32, 1), *y = T(OMNIC_DTYPE_F32, 1, 1, 4);
    set_f32(x, (const float[]){1, 2, 3, 4}, 4);
    tset(pos, 0, 1);
    /* base 1e4, n_rot 4: inv_freq = {1, 0.01f}; pos 1. Values computed with f32 angles. */
    omnic__node n = mknode(OMNIC_OP_ROPE, y, x, pos, NULL, NULL, NULL);
    n.ip[0] = 4;
    n.fp[0] = 10000.0f;
    n.fp[1] = 1.0f;
    run_ref(&n); /* rotate-half: pairs (0,2), (1,3) */
    expect_vec("rope neox", F(y),
               (const double[]){-1.9841105937957764, 1.9599006511271, 2.4623777866363525, 4.019799632951617},
               4, 1e-6);
    n.ip[1] = 1; /* interleaved: pairs (0,1), (2,3) */
    run_ref(&n);
    expect_vec(
        "rope gptj", F(y),
        (const double[]){-1.1426396369934082, 1.9220755100250244, 2.9598506428301334, 4.029799466021359}, 4,
        1e-6);
    n.ip[0] = 2; /* partial rotary: only dims 0,1 rotate (inv_freq {1}), 2,3 pass through */
    run_ref(&n);
    expect_vec("rope partial", F(y), (const double[]){-1.1426396369934082, 1.9220755100250244, 3, 4}, 4,
               1e-6);
    n.ip[0] = 4;
    n.ip[1] = 0;
    n.fp[1] = 0.5f; /* attention factor halves cos and sin */
    run_ref(&n);
    expect_vec("rope factor", F(y),
               (const double[]){-1.9841105937957764 / 2, 1.9599006511271 / 2, 2.4623777866363525 / 2,
                                4.019799632951617 / 2},
               4, 1e-6);
    tset(pos, 0, 0); /* position 0 is the identity */
    n.fp[1] = 1.0f;
    run_ref(&n);
    expect_vec("rope pos 0", F(y), (const double[]){1, 2, 3, 4}, 4, 0);

    /* f32 angle: pos 100000 * 0.1f = 10000.000149 in exact arithmetic, 10000 in f32.
     * HF (and ref) rotate by exactly 10000 rad: cos = -0.95215537, whereas the exact
     * angle would give -0.95210982. */
    tbuf *x2 = T(OMNIC_DTYPE_F32, 1, 1, 2), *y2 = T(OMNIC_DTYPE_F32, 1, 1, 2), *tbl = T(OMNIC_DTYPE_F32, 1);
    set_f32(x2, (const float[]){1, 0}, 2);
    tset(pos, 0, 100000);
    set_f32(tbl, (const float[]){0.1f}, 1);
    n = mknode(OMNIC_OP_ROPE, y2, x2, pos, tbl, NULL, NULL);
    n.ip[0] = 2;
    n.fp[0] = 10000.0f;
    n.fp[1] = 1.0f;
    run_ref(&n);
    expect_vec("rope f32 angle", F(y2), (const double[]){-0.9521553682590148, -0.30561438888825215}, 2, 1e-7);
    bufs_free();
}

static void test_ref_hand_attention(void **state)
{
    (void)state;
    /* H=1, D=2, S=2: q=[1,0], k=[[1,0],[0,0]], v=[[1,2],[3,4]]; scores [1, 0];
     * p = [e/(1+e), 1/(1+e)], out = v0 + p1 (v1 - v0) = [1 + 2 p1, 2 + 2 p1]. */
    tbuf *q = T(OMNIC_DTYPE_F32, 1, 1, 2), *k = T(OMNIC_DTYPE_F16, 2, 1, 2), *v = T(OMNIC_DTYPE_F32, 2, 1, 2);
    tbuf *qpos = T(OMNIC_DTYPE_I32, 1), *o = T(OMNIC_DTYPE_F32, 1, 1, 2), *bias = T(OMNIC_DTYPE_F32, 1, 2);
    set_f32(q, (const float[]){1, 0}, 2);
    const float kv[] = {1, 0, 0, 0};
    for (int i = 0; i < 4; i++)
        tset(k, i, kv[i]);
    set_f32(v, (const float[]){1, 2, 3, 4}, 4);
    tset(qpos, 0, 1);
    omnic__node n = mknode(OMNIC_OP_ATTENTION, o, q, k, v, qpos, NULL);
    n.fp[0] = 1.0f;
    run_ref(&n);
    const double p1 = 1.0 / (1.0 + exp(1.0));
    expect_vec("attn", F(o), (const double[]){1 + 2 * p1, 2 + 2 * p1}, 2, 1e-7);
    n.ip[0] = 1; /* causal, qpos 1: both keys visible, same result */
    run_ref(&n);
    expect_vec("attn causal", F(o), (const double[]){1 + 2 * p1, 2 + 2 * p1}, 2, 1e-7);
    tset(qpos, 0, 0); /* causal, qpos 0: only key 0 */
    run_ref(&n);
    expect_vec("attn causal qpos 0", F(o), (const double[]){1, 2}, 2, 0);
    tset(qpos, 0, 1);
    n.ip[1] = 1; /* window 1: only key qpos itself */
    run_ref(&n);
    expect_vec("attn window", F(o), (const double[]){3, 4}, 2, 0);
    n.ip[1] = 0;
    n.fp[0] = 2.0f; /* scale 2: scores [2, 0] */
    run_ref(&n);
    const double p1s = 1.0 / (1.0 + exp(2.0));
    expect_vec("attn scale", F(o), (const double[]){1 + 2 * p1s, 2 + 2 * p1s}, 2, 1e-7);
    n.fp[1] = 1.0f; /* softcap 1 after scaling: scores [tanh(2), 0] */
    run_ref(&n);
    const double p1c = 1.0 / (1.0 + exp(tanh(2.0)));
    expect_vec("attn softcap", F(o), (const double[]){1 + 2 * p1c, 2 + 2 * p1c}, 2, 1e-7);
    set_f32(bias, (const float[]){0.0f, (float)tanh(2.0)}, 2); /* bias after softcap: equal scores */
    n.src[4] = &bias->t;
    run_ref(&n);
    expect_vec("attn softcap bias", F(o), (const double[]){2, 3}, 2, 1e-6);
    set_f32(bias, (const float[]){-1e30f, 0.0f}, 2); /* large finite negative masks key 0 */
    n.fp[1] = 0.0f;
    run_ref(&n);
    expect_vec("attn bias mask", F(o), (const double[]){3, 4}, 2, 0);
    set_f32(bias, (const float[]){-INFINITY, -INFINITY}, 2); /* nothing visible: zeros */
    run_ref(&n);
    expect_vec("attn no key", F(o), (const double[]){0, 0}, 2, 0);

    /* GQA 4 query heads over 2 kv heads: heads 0,1 read kv 0; heads 2,3 read kv 1.
     * q = 0 gives uniform weights, so each head returns the mean of its kv head's values. */
    tbuf *q4 = T(OMNIC_DTYPE_F32, 1, 4, 1), *k2 = T(OMNIC_DTYPE_F32, 2, 2, 1),
         *v2 = T(OMNIC_DTYPE_F32, 2, 2, 1);
    tbuf *o4 = T(OMNIC_DTYPE_F32, 1, 4, 1);
    set_f32(q4, (const float[]){0, 0, 0, 0}, 4);
    set_f32(k2, (const float[]){1, 2, 3, 4}, 4);
    set_f32(v2, (const float[]){10, 20, 30, 40}, 4); /* [s][kvh]: kv0 = {10, 30}, kv1 = {20, 40} */
    tset(qpos, 0, 1);
    n = mknode(OMNIC_OP_ATTENTION, o4, q4, k2, v2, qpos, NULL);
    n.fp[0] = 1.0f;
    run_ref(&n);
    expect_vec("attn gqa", F(o4), (const double[]){20, 20, 30, 30}, 4, 1e-7);

    /* Spans: q = 0 (uniform weights), values 0..5, kv_begin 1, causal, window 1. Query at
     * qpos 3 alone sees key 3; with span [1, 4) relative to kv_begin (keys 2..4) it sees
     * keys 2, 3, 4 (the window does not cut a span); span [0, 3) (keys 1..3) widens the
     * range to the front only; an empty span changes nothing. */
    tbuf *q1 = T(OMNIC_DTYPE_F32, 1, 1, 1), *k6 = T(OMNIC_DTYPE_F32, 6, 1, 1),
         *v6 = T(OMNIC_DTYPE_F32, 6, 1, 1);
    tbuf *kb = T(OMNIC_DTYPE_I32, 1), *sp = T(OMNIC_DTYPE_I32, 1, 2), *o1 = T(OMNIC_DTYPE_F32, 1, 1, 1);
    set_f32(q1, (const float[]){0}, 1);
    set_f32(k6, (const float[]){1, 2, 3, 4, 5, 6}, 6);
    set_f32(v6, (const float[]){0, 1, 2, 3, 4, 5}, 6);
    tset(qpos, 0, 3);
    tset(kb, 0, 1);
    n = mknode(OMNIC_OP_ATTENTION, o1, q1, k6, v6, qpos, NULL);
    n.src[5] = &kb->t;
    n.src[6] = &sp->t;
    n.fp[0] = 1.0f;
    n.ip[0] = 1;
    n.ip[1] = 1;
    const struct {
        int32_t b, e;
        double want;
        const char *label;
    } spans[] = {{0, 0, 3.0, "attn span empty"},
                 {1, 4, 3.0, "attn span 2..4"},
                 {0, 3, 2.0, "attn span 1..3"},
                 {2, 5, 4.0, "attn span 3..5"}};
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++) {
        tset(sp, 0, spans[i].b);
        tset(sp, 1, spans[i].e);
        run_ref(&n);
        expect_vec(spans[i].label, F(o1), (const double[]){spans[i].want}, 1, 1e-6);
    }
    bufs_free();
}

/* pool_avg: grids G x G pooled by k (Gemma 3's 64 -> 16 at k 4, odd channel counts), then a
 * hand case: a 4x4 grid of one channel pooled by 2 gives the four 2x2 block means. */
static void test_pool_avg(void **state)
{
    (void)state;
    static const int64_t cases[][3] = {{1, 1, 1}, {4, 2, 3}, {8, 4, 17}, {64, 4, 33}, {6, 3, 65}, {16, 8, 8}};
    int fails = 0;
    char label[120];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int64_t G = cases[k][0], K = cases[k][1], C = cases[k][2], P = G / K;
        rng_seed(8700 + (uint64_t)k);
        tbuf *x = T(OMNIC_DTYPE_F32, G * G, C), *dst = T(OMNIC_DTYPE_F32, P * P, C);
        fill_uniform(x, -3, 3);
        omnic__node n = mknode(OMNIC_OP_POOL_AVG, dst, x, NULL, NULL, NULL, NULL);
        n.ip[0] = (int32_t)G;
        n.ip[1] = (int32_t)K;
        snprintf(label, sizeof label, "pool_avg grid=%lld k=%lld C=%lld", (long long)G, (long long)K,
                 (long long)C);
        fails += check(label, &n, OMNIC_DTYPE_F32);
        bufs_free();
    }
    tbuf *x = T(OMNIC_DTYPE_F32, 16, 1), *y = T(OMNIC_DTYPE_F32, 4, 1);
    for (int i = 0; i < 16; i++)
        tset(x, i, (float)i); /* cell (r, c) = 4r + c */
    omnic__node n = mknode(OMNIC_OP_POOL_AVG, y, x, NULL, NULL, NULL, NULL);
    n.ip[0] = 4;
    n.ip[1] = 2;
    run_ref(&n);
    expect_vec("pool_avg ref 4x4/2", F(y), (const double[]){2.5, 4.5, 10.5, 12.5}, 4, 0);
    bufs_free();
    assert_int_equal(fails, 0);
}

/* gauss_topk (Gemma 3n sparsity: z = 1.6448536, rows of up to 8192+ features, offset means)
 * and rms_match (AltUp magnitudes: ref rows of another scale, the floor reached by tiny rows),
 * then hand cases on ref. */
static void test_sparsity_magnitude(void **state)
{
    (void)state;
    static const int64_t RC[][2] = {{1, 1}, {3, 5}, {17, 64}, {5, 257}, {2, 8192}, {3, 16387}};
    int fails = 0;
    char label[120];
    for (size_t k = 0; k < sizeof RC / sizeof RC[0]; k++) {
        int64_t R = RC[k][0], C = RC[k][1];
        for (int v = 0; v < 2; v++) {
            rng_seed(8800 + 2 * (uint64_t)k + (uint64_t)v);
            tbuf *x = T(OMNIC_DTYPE_F32, R, C), *dst = T(OMNIC_DTYPE_F32, R, C);
            fill_uniform(x, v ? 0.5 : -3, v ? 4 : 3);
            omnic__node n = mknode(OMNIC_OP_GAUSS_TOPK, dst, x, NULL, NULL, NULL, NULL);
            n.fp[0] = v ? 0.0f : 1.6448536f;
            snprintf(label, sizeof label, "gauss_topk R=%lld C=%lld z=%g", (long long)R, (long long)C,
                     (double)n.fp[0]);
            fails += check(label, &n, OMNIC_DTYPE_F32);
            bufs_free();
            rng_seed(8900 + 2 * (uint64_t)k + (uint64_t)v);
            tbuf *a = T(OMNIC_DTYPE_F32, R, C), *ref = T(OMNIC_DTYPE_F32, R, C),
                 *o = T(OMNIC_DTYPE_F32, R, C);
            fill_uniform(a, v ? -1e-3 : -3, v ? 1e-3 : 3); /* v 1: mean(x^2) under the floor */
            fill_uniform(ref, -40, 40);
            omnic__node m = mknode(OMNIC_OP_RMS_MATCH, o, a, ref, NULL, NULL, NULL);
            m.fp[0] = 1e-5f;
            snprintf(label, sizeof label, "rms_match R=%lld C=%lld%s", (long long)R, (long long)C,
                     v ? " under the floor" : "");
            fails += check(label, &m, OMNIC_DTYPE_F32);
            bufs_free();
        }
    }
    tbuf *x = T(OMNIC_DTYPE_F32, 1, 4), *y = T(OMNIC_DTYPE_F32, 1, 4);
    for (int i = 0; i < 4; i++)
        tset(x, i, (float)(i + 1)); /* mean 2.5, std sqrt(1.25) */
    omnic__node n = mknode(OMNIC_OP_GAUSS_TOPK, y, x, NULL, NULL, NULL, NULL);
    n.fp[0] = 1.0f; /* cutoff 2.5 + 1.1180340 */
    run_ref(&n);
    expect_vec("gauss_topk ref", F(y), (const double[]){0, 0, 0, 4 - 2.5 - sqrt(1.25)}, 4, 1e-6);
    bufs_free();
    tbuf *a = T(OMNIC_DTYPE_F32, 2, 2), *r = T(OMNIC_DTYPE_F32, 2, 2), *o = T(OMNIC_DTYPE_F32, 2, 2);
    set_f32(a, (const float[]){3, 4, 1e-3f, 0}, 4);
    set_f32(r, (const float[]){1, 1, 2, 2}, 4);
    omnic__node m = mknode(OMNIC_OP_RMS_MATCH, o, a, r, NULL, NULL, NULL);
    m.fp[0] = 1.0f; /* row 0: mean(x^2) 12.5 > 1; row 1: the floor 1 */
    run_ref(&m);
    expect_vec("rms_match ref", F(o), (const double[]){3 / sqrt(12.5), 4 / sqrt(12.5), 2e-3, 0}, 4, 1e-6);
    bufs_free();
    /* get_rows over a base: table [2, 1] at offset 5; ids 5, 6 read it, 0 and 7 keep base */
    tbuf *tb = T(OMNIC_DTYPE_F32, 2, 1), *ix = T(OMNIC_DTYPE_I32, 4), *bs = T(OMNIC_DTYPE_F32, 4, 1),
         *go = T(OMNIC_DTYPE_F32, 4, 1);
    set_f32(tb, (const float[]){10, 20}, 2);
    set_f32(bs, (const float[]){1, 2, 3, 4}, 4);
    const int32_t iv[4] = {5, 0, 6, 7};
    memcpy(ix->t.data, iv, sizeof iv);
    omnic__node gr = mknode(OMNIC_OP_GET_ROWS, go, tb, ix, bs, NULL, NULL);
    gr.ip[0] = 5;
    run_ref(&gr);
    expect_vec("get_rows over base ref", F(go), (const double[]){10, 2, 20, 4}, 4, 0);
    gr.src[2] = NULL; /* no base: outside rows read table row 0 */
    run_ref(&gr);
    expect_vec("get_rows past the table ref", F(go), (const double[]){10, 10, 20, 10}, 4, 0);
    bufs_free();
    assert_int_equal(fails, 0);
}

/* Mixture of experts: routing (ties, NaN, k = 1..8 of 4..130 experts, 1..130 rows), routing
 * weights (normalized or not), the grouped expert matmul over every weight dtype (shared and
 * per-slot activations, experts with no rows, N past one 128-column task, the batch-invariant
 * flag) and the weighted sum; then hand cases on ref. */
static void test_moe(void **state)
{
    (void)state;
    static const int64_t TEK[][3] = {{1, 4, 1},    {5, 8, 2},    {17, 16, 4},
                                     {130, 60, 8}, {33, 130, 8}, {9, 6, 6}};
    int fails = 0;
    char label[160];
    for (size_t c = 0; c < sizeof TEK / sizeof TEK[0]; c++) {
        const int64_t T_ = TEK[c][0], E = TEK[c][1], k = TEK[c][2];
        for (int wi = -1; wi < 7; wi++) { /* -1: routing and weights; 0..6: matmul_id per dtype */
            rng_seed(9100 + (uint64_t)c); /* the same logits and ids for every wi */
            tbuf *lg = T(OMNIC_DTYPE_F32, T_, E), *ids = T(OMNIC_DTYPE_I32, T_, k),
                 *w = T(OMNIC_DTYPE_F32, T_, k);
            fill_uniform(lg, -4, 4);
            for (int64_t i = 0; i < T_ * E; i++) /* ties and a NaN now and then */
                if (rng_int(5) == 0) F(lg)[i] = (float)(int)F(lg)[i];
            if (c == 4) F(lg)[3] = NAN;
            omnic__node r = mknode(OMNIC_OP_MOE_ROUTE, ids, lg, NULL, NULL, NULL, NULL);
            r.ip[0] = (int32_t)k;
            if (wi < 0) {
                snprintf(label, sizeof label, "moe_route T=%lld E=%lld k=%lld", (long long)T_, (long long)E,
                         (long long)k);
                fails += check(label, &r, OMNIC_DTYPE_F32);
            }
            if (c == 4) F(lg)[3] = 0.0f; /* the NaN was the router's case; weights would be NaN too */
            run_ref(&r);                 /* ids for the next ops: ref's (cpu's are equal) */
            for (int norm = 0; wi < 0 && norm < 2; norm++) {
                omnic__node m = mknode(OMNIC_OP_MOE_WEIGHTS, w, lg, ids, NULL, NULL, NULL);
                m.ip[0] = norm;
                snprintf(label, sizeof label, "moe_weights T=%lld E=%lld k=%lld norm=%d", (long long)T_,
                         (long long)E, (long long)k, norm);
                fails += check(label, &m, OMNIC_DTYPE_F32);
            }
            if (wi >= 0) {
                static const omnic_dtype wdts[7] = {OMNIC_DTYPE_F32,    OMNIC_DTYPE_F16,  OMNIC_DTYPE_BF16,
                                                    OMNIC_DTYPE_Q8_0,   OMNIC_DTYPE_Q4_0, OMNIC_DTYPE_Q4_0X16,
                                                    OMNIC_DTYPE_Q8_0X16};
                const omnic_dtype wdt = wdts[wi];
                const int64_t N = wi % 3 == 0 ? 144 : 48, K = wi % 2 ? 96 : 64; /* 144: two column tasks */
                const int per_slot = (int)((c + (size_t)wi) % 2);
                tbuf *a = per_slot ? T(OMNIC_DTYPE_F32, T_, k, K) : T(OMNIC_DTYPE_F32, T_, K);
                tbuf *wt = T(wdt, E * N, K), *y = T(OMNIC_DTYPE_F32, T_, k, N);
                fill_uniform(a, -1, 1);
                fill_uniform(wt, -1, 1);
                /* some rows routed nowhere (id -1: zeros), as adapters route prompts without one */
                tbuf *ids2 = T(OMNIC_DTYPE_I32, T_, k);
                memcpy(ids2->t.data, ids->t.data, (size_t)(T_ * k) * sizeof(int32_t));
                for (int64_t q = 0; wi == 2 && q < T_ * k; q += 3)
                    ((int32_t *)ids2->t.data)[q] = -1;
                omnic__node mm = mknode(OMNIC_OP_MATMUL_ID, y, a, wt, ids2, NULL, NULL);
                mm.ip[0] = (int32_t)N;
                mm.ip[1] = per_slot;
                mm.ip[2] = wi % 2;
                snprintf(label, sizeof label,
                         "matmul_id w=%s T=%lld E=%lld k=%lld N=%lld K=%lld per_slot=%d inv=%d", dtn(wdt),
                         (long long)T_, (long long)E, (long long)k, (long long)N, (long long)K, per_slot,
                         mm.ip[2]);
                fails += check(label, &mm, wdt);
                if (wi == 0) {
                    tbuf *o = T(OMNIC_DTYPE_F32, T_, N);
                    fill_uniform(w, 0, 1);
                    omnic__node sm = mknode(OMNIC_OP_MOE_SUM, o, y, w, NULL, NULL, NULL);
                    run_ref(&mm);
                    snprintf(label, sizeof label, "moe_sum T=%lld k=%lld H=%lld", (long long)T_, (long long)k,
                             (long long)N);
                    fails += check(label, &sm, OMNIC_DTYPE_F32);
                }
            }
            bufs_free();
        }
    }
    /* batch invariance of matmul_id (ip[2] = 1): 25 rows over 4 experts, each row alone */
    for (int d = 0; d < 2; d++) {
        const omnic_dtype wdt = d ? OMNIC_DTYPE_Q4_0X16 : OMNIC_DTYPE_BF16;
        const int64_t T_ = 25, E = 4, k = 2, N = 32, K = 64;
        rng_seed(9300 + (uint64_t)d);
        tbuf *lg = T(OMNIC_DTYPE_F32, T_, E), *ids = T(OMNIC_DTYPE_I32, T_, k),
             *a = T(OMNIC_DTYPE_F32, T_, K);
        tbuf *wt = T(wdt, E * N, K), *y = T(OMNIC_DTYPE_F32, T_, k, N), *one = T(OMNIC_DTYPE_F32, 1, k, N);
        fill_uniform(lg, -1, 1);
        fill_uniform(a, -1, 1);
        fill_uniform(wt, -1, 1);
        omnic__node r = mknode(OMNIC_OP_MOE_ROUTE, ids, lg, NULL, NULL, NULL, NULL);
        r.ip[0] = (int32_t)k;
        run_ref(&r);
        omnic__node mm = mknode(OMNIC_OP_MATMUL_ID, y, a, wt, ids, NULL, NULL);
        mm.ip[0] = (int32_t)N;
        mm.ip[2] = 1;
        snprintf(label, sizeof label, "batch invariance: matmul_id w=%s T=25", dtn(wdt));
        fails += run_on(cpu_b, &mm, 3, y, label) ? 0 : 1;
        for (int64_t t = 0; t < T_; t++) {
            omnic__tensor a1 = a->t, i1 = ids->t;
            a1.dims[0] = i1.dims[0] = 1;
            a1.data = F(a) + t * K;
            i1.data = (int32_t *)ids->t.data + t * k;
            omnic__node n1 = mm;
            n1.src[0] = &a1, n1.src[2] = &i1, n1.dst = &one->t;
            fails += run_on(cpu_b, &n1, 1, one, label) ? 0 : 1;
            if (memcmp(one->t.data, F(y) + t * k * N, (size_t)(k * N) * sizeof(float))) {
                print_error("%s: row %lld alone differs from the batch\n", label, (long long)t);
                fails++;
            }
        }
        bufs_free();
    }
    /* hand cases: route and weights of one row, a 2-expert matmul, the sum */
    tbuf *lg = T(OMNIC_DTYPE_F32, 1, 4), *ids = T(OMNIC_DTYPE_I32, 1, 2), *w = T(OMNIC_DTYPE_F32, 1, 2);
    set_f32(lg, (const float[]){0.5f, 2.0f, 2.0f, 1.0f}, 4); /* tie at 2.0: experts 1 and 2 */
    omnic__node r = mknode(OMNIC_OP_MOE_ROUTE, ids, lg, NULL, NULL, NULL, NULL);
    r.ip[0] = 2;
    run_ref(&r);
    assert_int_equal(((int32_t *)ids->t.data)[0], 1);
    assert_int_equal(((int32_t *)ids->t.data)[1], 2);
    omnic__node m = mknode(OMNIC_OP_MOE_WEIGHTS, w, lg, ids, NULL, NULL, NULL);
    m.ip[0] = 1;
    run_ref(&m);
    expect_vec("moe_weights ref norm", F(w), (const double[]){0.5, 0.5}, 2, 1e-7);
    m.ip[0] = 0;
    run_ref(&m);
    const double z = exp(0.5) + 2 * exp(2.0) + exp(1.0);
    expect_vec("moe_weights ref", F(w), (const double[]){exp(2.0) / z, exp(2.0) / z}, 2, 1e-7);
    tbuf *a = T(OMNIC_DTYPE_F32, 1, 2), *wt = T(OMNIC_DTYPE_F32, 4, 2), *y = T(OMNIC_DTYPE_F32, 1, 2, 1);
    set_f32(a, (const float[]){1, 2}, 2);
    set_f32(wt, (const float[]){1, 0, 0, 1, 3, 4, 5, 6}, 8); /* experts of one [1, 2] row each */
    omnic__node mm = mknode(OMNIC_OP_MATMUL_ID, y, a, wt, ids, NULL, NULL);
    mm.ip[0] = 1;
    run_ref(&mm);
    expect_vec("matmul_id ref", F(y), (const double[]){2, 11}, 2, 0); /* experts 1 and 2 */
    tbuf *o = T(OMNIC_DTYPE_F32, 1, 1);
    set_f32(w, (const float[]){0.25f, 0.75f}, 2);
    omnic__node sm = mknode(OMNIC_OP_MOE_SUM, o, y, w, NULL, NULL, NULL);
    run_ref(&sm);
    expect_vec("moe_sum ref", F(o), (const double[]){0.5 + 8.25}, 1, 1e-7);
    bufs_free();
    assert_int_equal(fails, 0);
}

/* The M-RoPE axis of each frequency: Qwen2-VL's chunked sections [16, 24, 24], Qwen3-VL's
 * interleaved [24, 20, 20] (HF apply_interleaved_mrope: H at 1, 4, .., 58; W at 2, 5, .., 59). */
static void test_mrope_axes(void **state)
{
    (void)state;
    const int32_t chunked[8] = {0, 0, 16, 24, 24, 0}, inter[8] = {0, 0, 24, 20, 20, 1};
    for (int64_t i = 0; i < 64; i++) {
        assert_int_equal(omnic__mrope_axis(chunked, i), i < 16 ? 0 : i < 40 ? 1 : 2);
        int want = i < 60 && i % 3 == 1 ? 1 : i < 60 && i % 3 == 2 ? 2 : 0;
        assert_int_equal(omnic__mrope_axis(inter, i), want);
    }
}

/* ---- main --------------------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    ref_b = omnic__backend_ref();
    cpu_b = omnic__backend_cpu();
    if (ref_b->init) ref_b->init();
    if (cpu_b->init) cpu_b->init();
    return omnic__threadpool_create(&pool, 3, NULL) == OMNIC_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    omnic__threadpool_destroy(pool);
    print_message("op           cases  worst NMSE  worst MAXERR  (cpu vs ref)\n");
    for (int op = 1; op < OMNIC_OP_COUNT; op++)
        print_message("%-12s %5d  %10.3g  %12.3g%s\n", omnic__op_names[op], cases_run[op], worst_nmse[op],
                      worst_maxerr[op], tolerances[op].exact ? "  (exact)" : "");
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_ref_hand_norms),
        cmocka_unit_test(test_ref_hand_activations),
        cmocka_unit_test(test_ref_hand_matmul_layout),
        cmocka_unit_test(test_ref_hand_rope),
        cmocka_unit_test(test_ref_hand_attention),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_matmul_quant),
        cmocka_unit_test(test_add_mul_scale),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_long),
        cmocka_unit_test(test_attention_relpos),
        cmocka_unit_test(test_dwconv2d),
        cmocka_unit_test(test_conv2d),
        cmocka_unit_test(test_cum_groupnorm),
        cmocka_unit_test(test_attn_local),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_get_rows_patch_embed),
        cmocka_unit_test(test_pool_avg),
        cmocka_unit_test(test_sparsity_magnitude),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_mrope_axes),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_argmax_cpy),
        cmocka_unit_test(test_set_rows),
        cmocka_unit_test(test_batch_invariance),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
