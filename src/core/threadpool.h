/* Thread pool with ggml-style work splitting: a job runs fn(ctx, ith, nth) on every
 * thread (the caller is thread 0) and returns when all have finished. Row ranges
 * come from omnic__split_rows, so which thread computes which row depends only on
 * (n, ith, nth) and results are deterministic. */
#ifndef OMNIC_CORE_THREADPOOL_H
#define OMNIC_CORE_THREADPOOL_H

#include <stdatomic.h>

#include "core/err.h"

typedef struct omnic__threadpool omnic__threadpool;
typedef void (*omnic__task_fn)(void *ctx, int ith, int nth);

/* n_threads in 1..OMNIC_MAX_THREADS (1: no worker threads). Returns owned. */
omnic_status omnic__threadpool_create(omnic__threadpool **out, int n_threads, omnic_err *err);
/* Joins workers and frees; accepts NULL. */
void omnic__threadpool_destroy(omnic__threadpool *p);
int omnic__threadpool_size(const omnic__threadpool *p);
/* Runs fn on all threads and waits. Not reentrant: one job at a time per pool. */
void omnic__threadpool_run(omnic__threadpool *p, omnic__task_fn fn, void *ctx);
/* Same, on only the first nth threads (1 <= nth <= size). */
void omnic__threadpool_run_n(omnic__threadpool *p, int nth, omnic__task_fn fn, void *ctx);

/* Rows [*lo, *hi) of n for thread ith of nth: contiguous, balanced, deterministic. */
static inline void omnic__split_rows(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi)
{
    int64_t per = n / nth, rem = n % nth;
    *lo = ith * per + (ith < rem ? ith : rem);
    *hi = *lo + per + (ith < rem ? 1 : 0);
}

/* A reusable barrier for the threads of one job (graph execution places one between
 * nodes). Spins briefly, then yields. */
typedef struct omnic__barrier {
    _Atomic int count;
    _Atomic int phase;
    int n;
} omnic__barrier;

void omnic__barrier_init(omnic__barrier *b, int n);
void omnic__barrier_wait(omnic__barrier *b);

/* Number of hardware threads available to this process (>= 1). */
int omnic__cpu_count(void);

#endif
