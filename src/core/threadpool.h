/* Thread pool with ggml-style work splitting: a job runs fn(ctx, ith, nth) on every
 * thread (the caller is thread 0) and returns when all have finished. Row ranges
 * come from omnic__split_rows, so which thread computes which row depends only on
 * (n, ith, nth) and results are deterministic; kernels whose values do not depend on the
 * split may instead share chunks dynamically (omnic__chunks, as ggml's chunked matmul). */
#ifndef OMNIC_CORE_THREADPOOL_H
#define OMNIC_CORE_THREADPOOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/limits.h"

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
 * nodes). Spins briefly, then yields. A step is the work between two waits; `taken` counts the
 * chunks (omnic__chunks) taken in the current step from each thread's range, and the last
 * thread to arrive resets it while every other thread is inside the wait. */
typedef struct omnic__chunk_slot {
    _Alignas(64) _Atomic uint64_t taken; /* low 32 bits: from the front; high 32: from the back */
} omnic__chunk_slot;

typedef struct omnic__barrier {
    _Atomic int count;
    _Atomic int phase;
    int n;
    omnic__chunk_slot slot[OMNIC_MAX_THREADS];
} omnic__barrier;

void omnic__barrier_init(omnic__barrier *b, int n);
void omnic__barrier_wait(omnic__barrier *b);

/* Binds the calling thread to b for omnic__chunks (NULL unbinds). Graph execution binds every
 * thread of its job to the barrier between its nodes. */
void omnic__chunks_bind(omnic__barrier *b);

/* The chunks of [0, n) that virtual thread ith of nth computes in one step. Unbound, or when nth
 * is not a multiple of the bound barrier's thread count: omnic__split_rows's static range, in
 * order. Bound: thread ith runs part ith / b->n of nth / b->n (graph execution's virtual
 * threads); the part's range is split among its b->n threads as split_rows would, each takes
 * its own chunks from the front, in order, and then the others' remaining chunks from the back,
 * so a thread on a slower or interrupted core is relieved of its last chunks while each thread
 * still streams one contiguous range. Only for kernels whose values do not depend on which
 * thread computes a chunk; each thread of the step iterates to the end (a taken chunk is never
 * given back), at most once per step. */
typedef struct omnic__chunks {
    omnic__chunk_slot *slot; /* the part's threads' counters; NULL: static */
    int64_t lo, n;           /* the part's range [lo, lo + n) */
    int self, nth;           /* this thread among the part's nth */
    int victim;              /* threads after self whose chunks are exhausted (0: own first) */
    int64_t next, hi;        /* static: the range left */
} omnic__chunks;

void omnic__chunks_begin(omnic__chunks *c, int64_t n, int ith, int nth);
/* The next chunk in *i; false when there is none left for this thread. */
bool omnic__chunks_next(omnic__chunks *c, int64_t *i);

/* Number of hardware threads available to this process (>= 1). */
int omnic__cpu_count(void);

#endif
