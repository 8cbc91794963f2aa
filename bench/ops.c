/* bench_ops: the cpu backend's matmul against OpenBLAS and against the machine's memory
 * read bandwidth, printed as markdown tables.
 *
 *   (i)  f32 GEMM, K = N = 2048, M in {1, 8, 64, 512}: omnic cpu matmul (driven through the
 *        runtime's thread pool, nth threads) vs cblas_sgemm with OpenBLAS set to nth threads;
 *        the two are sampled alternately so both see the same machine load. Then the same
 *        shapes with f16/bf16 weights (cpu only).
 *   (ii) weight-streaming matvec, M = 1, w [8192, 4096] bf16 and f16: achieved weight-read
 *        GB/s vs a read-bandwidth probe (each thread sums its share of a 1 GiB f32 buffer
 *        with the widest vector ISA), sampled alternately. The matvec cycles through 16
 *        distinct weight matrices (1 GiB) so the weights come from DRAM, not from the L3.
 * Targets are judged best sample vs best sample (the machine is shared; means are noisy).
 *
 * Usage: bench_ops [-t max_threads (2)] [-r repetitions (5)] [-s all|gemm|mv]
 * Threads 1..max_threads are measured; mean ± sd over the repetitions (after a warm-up). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu/read_probe.h"
#include "backend/cpu/simd.h"
#include "core/dtype.h"
#include "core/mem.h"
#include "core/quant.h"
#include "core/threadpool.h"

#define GEMM_K 2048
#define GEMM_N 2048
#define MV_N 8192
#define MV_K 4096
#define BW_BYTES ((size_t)1 << 30)    /* bandwidth probe buffer */
#define MAX_REPS 100

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct stats {
    double mean, sd, best;
} stats;

static stats stats_of(const double *v, int n)
{
    stats s = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        s.mean += v[i];
        if (v[i] > s.best) s.best = v[i];
    }
    s.mean /= n;
    for (int i = 0; i < n; i++) s.sd += (v[i] - s.mean) * (v[i] - s.mean);
    s.sd = n > 1 ? sqrt(s.sd / (n - 1)) : 0.0;
    return s;
}

static void *xalloc(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_ops: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static uint64_t rng = 0x1234567887654321ull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1p-52 - 1.0);
}

/* ---- running a node on the cpu backend through the pool ---- */

typedef struct job {
    omnic__kernel_fn fn;
    const omnic__node *n;
    void *wdata;
} job;

static void job_run(void *ctx, int ith, int nth)
{
    const job *j = ctx;
    j->fn(j->n, ith, nth, j->wdata);
}

static void tensor2(omnic__tensor *t, omnic_dtype dt, int64_t d0, int64_t d1, void *data)
{
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->ndim = 2;
    for (int i = 0; i < OMNIC_MAX_DIMS; i++) t->dims[i] = 1;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->data = data;
}

/* ---- read-bandwidth probe ---- */

/* One read-bandwidth sample in GB/s (1e9 bytes). */
static double bandwidth_once(omnic__threadpool *pool, int nth, const void *buf)
{
    return (double)BW_BYTES / omnic__cpu_read_probe(pool, nth, buf, BW_BYTES) * 1e-9;
}

/* ---- GEMM: cpu backend vs OpenBLAS, measured alternately so both see the same load ---- */

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void blas_gemm(int64_t M, const float *a, const float *w, float *c)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, GEMM_N, GEMM_K, 1.0f, a, GEMM_K, w, GEMM_K, 0.0f, c,
                GEMM_N);
}

/* GFLOP/s samples of the cpu matmul alone, weights of dtype wdt. */
static stats gemm_cpu(omnic__threadpool *pool, int nth, int64_t M, omnic_dtype wdt, float *a, void *w, float *c,
                      int reps)
{
    const omnic__backend_ops *cpu = omnic__backend_cpu();
    omnic__tensor ta, tw, td;
    tensor2(&ta, OMNIC_DTYPE_F32, M, GEMM_K, a);
    tensor2(&tw, wdt, GEMM_N, GEMM_K, w);
    tensor2(&td, OMNIC_DTYPE_F32, M, GEMM_N, c);
    omnic__node n = {.op = OMNIC_OP_MATMUL, .src = {&ta, &tw}, .dst = &td};
    size_t ws = omnic__backend_wsize(cpu, &n, nth);
    void *wd = ws ? xalloc(ws) : NULL;
    job j = {.fn = cpu->kernel[OMNIC_OP_MATMUL], .n = &n, .wdata = wd};
    double v[MAX_REPS], flops = 2.0 * (double)M * GEMM_N * GEMM_K;
    int inner = M <= 8 ? 20 : M <= 64 ? 5 : 2;
    omnic__threadpool_run_n(pool, nth, job_run, &j);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (int i = 0; i < inner; i++) omnic__threadpool_run_n(pool, nth, job_run, &j);
        v[r] = flops * inner / (now_s() - t0) * 1e-9;
    }
    free(wd);
    return stats_of(v, reps);
}

/* GFLOP/s samples of the cpu matmul (sc) and of cblas_sgemm with OpenBLAS at nth threads (sb). */
static void gemm_pair(omnic__threadpool *pool, int nth, int64_t M, float *a, float *w, float *c, int reps, stats *sc,
                      stats *sb)
{
    const omnic__backend_ops *cpu = omnic__backend_cpu();
    omnic__tensor ta, tw, td;
    tensor2(&ta, OMNIC_DTYPE_F32, M, GEMM_K, a);
    tensor2(&tw, OMNIC_DTYPE_F32, GEMM_N, GEMM_K, w);
    tensor2(&td, OMNIC_DTYPE_F32, M, GEMM_N, c);
    omnic__node n = {.op = OMNIC_OP_MATMUL, .src = {&ta, &tw}, .dst = &td};
    size_t ws = omnic__backend_wsize(cpu, &n, nth);
    void *wd = ws ? xalloc(ws) : NULL;
    job j = {.fn = cpu->kernel[OMNIC_OP_MATMUL], .n = &n, .wdata = wd};
    double vc[MAX_REPS], vb[MAX_REPS], flops = 2.0 * (double)M * GEMM_N * GEMM_K;
    int inner = M <= 8 ? 20 : M <= 64 ? 5 : 2; /* each sample >= a few ms */
    omnic__threadpool_run_n(pool, nth, job_run, &j);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (int i = 0; i < inner; i++) omnic__threadpool_run_n(pool, nth, job_run, &j);
        vc[r] = flops * inner / (now_s() - t0) * 1e-9;
        openblas_set_num_threads(nth);
        blas_gemm(M, a, w, c); /* warm-up (wakes OpenBLAS's threads) */
        t0 = now_s();
        for (int i = 0; i < inner; i++) blas_gemm(M, a, w, c);
        vb[r] = flops * inner / (now_s() - t0) * 1e-9;
        openblas_set_num_threads(1); /* what the cpu backend expects */
        /* OpenBLAS's idle threads spin for a while after a call; let them settle so they
         * do not steal a core from the next cpu sample. */
        if (nth > 1) sleep_ms(200);
    }
    free(wd);
    *sc = stats_of(vc, reps);
    *sb = stats_of(vb, reps);
}

/* ---- matvec: weight-read GB/s, alternating with the bandwidth probe ---- */

/* Samples of the matvec's weight-read GB/s (sm) and of the probe (sb), taken alternately.
 * The weight matrices [MV_N, MV_K] of dtype dt lie back to back in wpool; as many are cycled
 * as fit in its 1 GiB (16 for bf16/f16, 29 for q8_0 (x16), 56 for q4_0 (x16), capped at MV_MATS_MAX). */
#define MV_MATS_MAX 64
static void matvec_pair(omnic__threadpool *pool, int nth, omnic_dtype dt, void *wpool, float *x, float *y, int reps,
                        stats *sm, stats *sb)
{
    const omnic__backend_ops *cpu = omnic__backend_cpu();
    const size_t mat_bytes = omnic__dtype_row_bytes(dt, MV_K) * MV_N;
    int mats = (int)(BW_BYTES / mat_bytes);
    if (mats > MV_MATS_MAX) mats = MV_MATS_MAX;
    omnic__tensor ta, tw[MV_MATS_MAX], td;
    omnic__node n[MV_MATS_MAX];
    job j[MV_MATS_MAX];
    tensor2(&ta, OMNIC_DTYPE_F32, 1, MV_K, x);
    tensor2(&td, OMNIC_DTYPE_F32, 1, MV_N, y);
    size_t ws = 0;
    for (int m = 0; m < mats; m++) {
        tensor2(&tw[m], dt, MV_N, MV_K, (uint8_t *)wpool + (size_t)m * mat_bytes);
        n[m] = (omnic__node){.op = OMNIC_OP_MATMUL, .src = {&ta, &tw[m]}, .dst = &td};
        size_t w = omnic__backend_wsize(cpu, &n[m], nth);
        ws = w > ws ? w : ws;
    }
    void *wd = ws ? xalloc(ws) : NULL;
    for (int m = 0; m < mats; m++) j[m] = (job){.fn = cpu->kernel[OMNIC_OP_MATMUL], .n = &n[m], .wdata = wd};
    double vm[MAX_REPS], vb[MAX_REPS], bytes = (double)mats * (double)mat_bytes;
    for (int m = 0; m < mats; m++) omnic__threadpool_run_n(pool, nth, job_run, &j[m]);
    (void)bandwidth_once(pool, nth, wpool);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (int m = 0; m < mats; m++) omnic__threadpool_run_n(pool, nth, job_run, &j[m]);
        vm[r] = bytes / (now_s() - t0) * 1e-9;
        vb[r] = bandwidth_once(pool, nth, wpool);
    }
    free(wd);
    *sm = stats_of(vm, reps);
    *sb = stats_of(vb, reps);
}

/* Fills buf (BW_BYTES) with valid dt blocks: f16 scale 0.01, pseudo-random quants in -127..127.
 * Every byte at an offset = 3 mod 4 is 0x3c or a scale byte, so the probe's f32 view of the
 * same buffer holds normal numbers only (no denormal assists). */
static void fill_quant(uint8_t *buf, omnic_dtype dt)
{
    const size_t bb = omnic_dtype_size(dt), nblk = BW_BYTES / bb;
    const uint16_t d = omnic__f32_to_f16(0.01f); /* bytes 0x1f, 0x21: normal exponents either way */
    for (size_t i = 0; i < BW_BYTES; i++) {
        uint8_t v = (uint8_t)((i * 2654435761u) >> 13);
        buf[i] = i % 4 == 3 ? 0x3c : v == 0x80 ? 0x81 : v;
    }
    for (size_t b = 0; b < nblk; b++) memcpy(buf + b * bb, &d, 2);
    if (omnic__x16_plain(dt) == OMNIC_DTYPE_COUNT) return;
    /* x16 layouts: each block of 16 rows (16 x bb bytes) ends with their 16 scales */
    for (size_t b = 0; b + 16 * bb <= BW_BYTES; b += 16 * bb)
        for (size_t i = 0; i < 16; i++) memcpy(buf + b + 16 * (bb - 2) + 2 * i, &d, 2);
}

/* ---- sections ---- */

static bool section_gemm(omnic__threadpool *pool, int max_t, int reps)
{
    static const int64_t Ms[] = {1, 8, 64, 512};
    float *a = xalloc(sizeof(float) * 512 * GEMM_K), *w = xalloc(sizeof(float) * GEMM_N * GEMM_K);
    float *c = xalloc(sizeof(float) * 512 * GEMM_N);
    for (size_t i = 0; i < (size_t)512 * GEMM_K; i++) a[i] = frand();
    for (size_t i = 0; i < (size_t)GEMM_N * GEMM_K; i++) w[i] = frand();
    printf("## f32 matmul, K = N = %d (GFLOP/s, mean ± sd; cpu and BLAS samples alternate)\n\n", GEMM_K);
    printf("| M | threads | omnic cpu | OpenBLAS sgemm | cpu / BLAS (means) | cpu / BLAS (best) |\n");
    printf("|---:|---:|---:|---:|---:|---:|\n");
    bool ok = true;
    for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
        for (int t = 1; t <= max_t; t++) {
            stats sc, sb;
            gemm_pair(pool, t, Ms[mi], a, w, c, reps, &sc, &sb);
            double ratio = sc.mean / sb.mean, rbest = sc.best / sb.best;
            if (Ms[mi] >= 64 && rbest < 0.90) ok = false;
            printf("| %lld | %d | %.1f ± %.1f | %.1f ± %.1f | %.2f | %.2f |\n", (long long)Ms[mi], t, sc.mean, sc.sd,
                   sb.mean, sb.sd, ratio, rbest);
        }
    }
    /* Informational: the same shapes with f16/bf16 weights (widened per chunk, then sgemm). */
    uint16_t *wh = xalloc(sizeof(uint16_t) * GEMM_N * GEMM_K);
    printf("\n### Same matmul with f16 / bf16 weights (omnic cpu only; GFLOP/s)\n\n");
    printf("| weights | M | threads | omnic cpu | best |\n|---|---:|---:|---:|---:|\n");
    static const omnic_dtype hdts[] = {OMNIC_DTYPE_BF16, OMNIC_DTYPE_F16};
    static const int64_t hMs[] = {1, 64, 512};
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < (size_t)GEMM_N * GEMM_K; i++)
            wh[i] = hdts[d] == OMNIC_DTYPE_BF16 ? omnic__f32_to_bf16(w[i]) : omnic__f32_to_f16(w[i]);
        for (size_t mi = 0; mi < sizeof hMs / sizeof hMs[0]; mi++) {
            for (int t = 1; t <= max_t; t++) {
                stats sc = gemm_cpu(pool, t, hMs[mi], hdts[d], a, wh, c, reps);
                printf("| %s | %lld | %d | %.1f ± %.1f | %.1f |\n", omnic_dtype_name(hdts[d]), (long long)hMs[mi], t,
                       sc.mean, sc.sd, sc.best);
            }
        }
    }
    free(wh);
    free(a);
    free(w);
    free(c);
    return ok;
}

static bool section_mv(omnic__threadpool *pool, int max_t, int reps)
{
    /* One 1 GiB buffer serves both: its 16-bit values are finite as bf16 and as f16
     * (exponent bits kept small), and its f32 view is finite for the probe. */
    /* on huge pages, as the model's weights are (docs/runtime.md, "Weight placement") */
    uint16_t *wpool = omnic__mem_huge_alloc(BW_BYTES);
    if (!wpool) {
        fprintf(stderr, "bench_ops: out of memory (%zu bytes)\n", BW_BYTES);
        return false;
    }
    for (size_t i = 0; i < BW_BYTES / 2; i++) wpool[i] = (uint16_t)(0x3800u | (i * 2654435761u >> 22 & 0x3ffu));
    float *x = xalloc(sizeof(float) * MV_K), *y = xalloc(sizeof(float) * MV_N);
    for (int i = 0; i < MV_K; i++) x[i] = frand();
    printf("\n## Matvec M = 1, w [%d, %d], 1 GiB of matrices cycled: weight-read GB/s vs read bandwidth\n\n",
           MV_N, MV_K);
    printf("Read bandwidth probe: each thread sums its share of a 1 GiB f32 buffer with %s loads; probe and\n"
           "matvec samples alternate.\n\n",
           omnic__cpu_isa_name(omnic__cpu_isa_level()));
    printf("| weights | threads | matvec GB/s | matvec best | probe GB/s | probe best | matvec / probe (best) |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    bool ok = true;
    static const omnic_dtype dts[] = {OMNIC_DTYPE_BF16,    OMNIC_DTYPE_F16,    OMNIC_DTYPE_Q8_0,
                                      OMNIC_DTYPE_Q8_0X16, OMNIC_DTYPE_Q4_0, OMNIC_DTYPE_Q4_0X16};
    for (int d = 0; d < (int)(sizeof dts / sizeof dts[0]); d++) {
        if (omnic__dtype_table[dts[d]].is_quant) fill_quant((uint8_t *)wpool, dts[d]);
        for (int t = 1; t <= max_t; t++) {
            stats sm, sb;
            matvec_pair(pool, t, dts[d], wpool, x, y, reps, &sm, &sb);
            double ratio = sm.best / sb.best;
            if (t == 2 && ratio < 0.85) ok = false;
            printf("| %s | %d | %.1f ± %.1f | %.1f | %.1f ± %.1f | %.1f | %.2f |\n", omnic_dtype_name(dts[d]), t,
                   sm.mean, sm.sd, sm.best, sb.mean, sb.sd, sb.best, ratio);
        }
    }
    free(wpool);
    free(x);
    free(y);
    return ok;
}

/* ---- main ---- */

static void usage(void)
{
    fprintf(stderr, "usage: bench_ops [-t max_threads] [-r repetitions] [-s all|gemm|mv]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int max_t = 2, reps = 5;
    const char *sect = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) max_t = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) sect = argv[++i];
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else usage();
    }
    if (max_t < 1 || max_t > OMNIC_MAX_THREADS || reps < 1 || reps > MAX_REPS) usage();
    bool do_gemm = !strcmp(sect, "all") || !strcmp(sect, "gemm"), do_mv = !strcmp(sect, "all") || !strcmp(sect, "mv");
    if (!do_gemm && !do_mv) usage();

    omnic__cpu_isa isa = omnic__cpu_isa_level(); /* also sets OpenBLAS to 1 thread */
    omnic__threadpool *pool = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    if (omnic__threadpool_create(&pool, max_t, &err) != OMNIC_OK) {
        fprintf(stderr, "bench_ops: %s\n", err.msg);
        return 1;
    }
    printf("# bench_ops: cpu backend isa %s, OpenBLAS %s (%s), threads 1..%d, %d reps\n\n", omnic__cpu_isa_name(isa),
           openblas_get_config(), openblas_get_corename(), max_t, reps);

    bool gemm_ok = do_gemm ? section_gemm(pool, max_t, reps) : false;
    bool mv_ok = do_mv ? section_mv(pool, max_t, reps) : false;
    printf("\n## Targets\n\n");
    if (do_gemm) printf("- f32 GEMM >= 90%% of OpenBLAS for M >= 64 (best vs best): %s\n", gemm_ok ? "met" : "NOT met");
    if (do_mv && max_t >= 2)
        printf("- bf16/f16/q8_0(x16)/q4_0(x16) matvec (M = 1) >= 85%% of read bandwidth at 2 threads (best vs best): %s\n",
               mv_ok ? "met" : "NOT met");
    omnic__threadpool_destroy(pool);
    return 0;
}
