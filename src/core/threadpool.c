/* Thread pool: persistent workers woken per job; the caller works as thread 0. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "core/limits.h"
#include "core/panic.h"
#include "core/threadpool.h"

struct omnic__threadpool {
    int n_threads;
    pthread_t *threads; /* [n_threads - 1] */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* workers wait here for a new generation */
    pthread_cond_t done; /* the caller waits here for pending == 0 */
    uint64_t generation; /* bumped per job */
    int pending;         /* workers still running the current job */
    int job_nth;         /* threads taking part in the current job */
    bool stop;
    omnic__task_fn fn;
    void *ctx;
};

typedef struct worker_arg {
    omnic__threadpool *pool;
    int ith;
} worker_arg;

static void *worker_main(void *arg)
{
    omnic__threadpool *p = ((worker_arg *)arg)->pool;
    int ith = ((worker_arg *)arg)->ith;
    omnic_free(arg);
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        int nth = p->job_nth;
        omnic__task_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);
        if (ith < nth) fn(ctx, ith, nth);
        pthread_mutex_lock(&p->mu);
        if (ith < nth && --p->pending == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

omnic_status omnic__threadpool_create(omnic__threadpool **out, int n_threads, omnic_err *err)
{
    if (n_threads < 1 || n_threads > OMNIC_MAX_THREADS)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "thread count %d outside 1..%d", n_threads,
                          OMNIC_MAX_THREADS);
    omnic__threadpool *p = omnic_alloc_array(1, sizeof *p);
    if (!p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a thread pool");
    p->n_threads = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (n_threads > 1) {
        p->threads = omnic_alloc_array((size_t)n_threads - 1, sizeof *p->threads);
        if (!p->threads) goto nomem;
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *a = omnic_malloc(sizeof *a);
        if (!a) goto nomem;
        a->pool = p;
        a->ith = i;
        if (pthread_create(&p->threads[i - 1], NULL, worker_main, a) != 0) {
            omnic_free(a);
            omnic__threadpool_destroy(p);
            return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "could not start thread %d of %d", i, n_threads);
        }
        p->n_threads = i + 1;
    }
    *out = p;
    return OMNIC_OK;
nomem:
    omnic__threadpool_destroy(p);
    return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory starting %d threads", n_threads);
}

void omnic__threadpool_destroy(omnic__threadpool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++)
        pthread_join(p->threads[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    omnic_free(p->threads);
    omnic_free(p);
}

int omnic__threadpool_size(const omnic__threadpool *p)
{
    return p->n_threads;
}

void omnic__threadpool_run_n(omnic__threadpool *p, int nth, omnic__task_fn fn, void *ctx)
{
    OMNIC_CHECK(nth >= 1 && nth <= p->n_threads);
    if (nth == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->job_nth = nth;
    p->pending = nth - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    fn(ctx, 0, nth);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void omnic__threadpool_run(omnic__threadpool *p, omnic__task_fn fn, void *ctx)
{
    omnic__threadpool_run_n(p, p->n_threads, fn, ctx);
}

void omnic__barrier_init(omnic__barrier *b, int n)
{
    atomic_init(&b->count, 0);
    atomic_init(&b->phase, 0);
    b->n = n;
    for (int t = 0; t < n && t < OMNIC_MAX_THREADS; t++) /* chunks use slots [0, n) only */
        atomic_init(&b->slot[t].taken, 0);
}

/* Forgets the step's chunks; only while no thread of the barrier is taking any. */
static void chunks_reset(omnic__barrier *b)
{
    for (int t = 0; t < b->n; t++)
        atomic_store_explicit(&b->slot[t].taken, 0, memory_order_relaxed);
}

void omnic__barrier_wait(omnic__barrier *b)
{
    if (b->n <= 1) return; /* (one thread never shares chunks: no counters to reset) */
    int phase = atomic_load(&b->phase);
    if (atomic_fetch_add(&b->count, 1) == b->n - 1) {
        atomic_store(&b->count, 0);
        chunks_reset(b); /* every other thread is waiting: none is taking chunks */
        atomic_fetch_add(&b->phase, 1);
        return;
    }
    for (int spins = 0; atomic_load(&b->phase) == phase; spins++) {
        if (spins > 2000)
            sched_yield();
        else
            __builtin_ia32_pause();
    }
}

static _Thread_local omnic__barrier *chunks_barrier; /* omnic__chunks_bind */

void omnic__chunks_bind(omnic__barrier *b)
{
    chunks_barrier = b;
}

void omnic__chunks_begin(omnic__chunks *c, int64_t n, int ith, int nth)
{
    omnic__barrier *b = chunks_barrier;
    if (!b || b->n <= 1 || nth % b->n != 0 || n > INT32_MAX) { /* (counts are 32-bit) */
        omnic__split_rows(n, ith, nth, &c->next, &c->hi);
        c->slot = NULL;
        return;
    }
    int64_t hi;
    omnic__split_rows(n, ith / b->n, nth / b->n, &c->lo, &hi);
    c->n = hi - c->lo;
    c->slot = b->slot;
    c->self = ith % b->n;
    c->nth = b->n;
    c->victim = 0;
}

/* One chunk of thread t's range: from the front (its owner) or the back (another thread). */
static bool take(const omnic__chunks *c, int t, bool front, int64_t *i)
{
    int64_t lo, hi;
    omnic__split_rows(c->n, t, c->nth, &lo, &hi);
    _Atomic uint64_t *taken = &c->slot[t].taken;
    uint64_t w = atomic_load_explicit(taken, memory_order_relaxed);
    for (;;) {
        const int64_t f = (int64_t)(w & 0xffffffffu), bk = (int64_t)(w >> 32);
        if (lo + f >= hi - bk) return false;
        if (atomic_compare_exchange_weak_explicit(taken, &w, front ? w + 1 : w + ((uint64_t)1 << 32),
                                                  memory_order_relaxed, memory_order_relaxed)) {
            *i = c->lo + (front ? lo + f : hi - bk - 1);
            return true;
        }
    }
}

bool omnic__chunks_next(omnic__chunks *c, int64_t *i)
{
    if (!c->slot) {
        if (c->next >= c->hi) return false;
        *i = c->next++;
        return true;
    }
    if (c->victim == 0) {
        if (take(c, c->self, true, i)) return true;
        c->victim = 1;
    }
    for (; c->victim < c->nth; c->victim++) /* a range, once exhausted, stays so */
        if (take(c, (c->self + c->victim) % c->nth, false, i)) return true;
    return false;
}

int omnic__cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n >= 1) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)n : 1;
}
