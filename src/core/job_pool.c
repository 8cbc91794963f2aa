/* The bounded worker pool. */
#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/job_pool.h"
#include "core/limits.h"
#include "core/sync.h"

struct omnic__job_pool {
    pthread_t *threads; /* owned [n_threads] */
    int n_threads, max_queue, queued, running;
    omnic__job *head, *tail;
    omnic__job *active; /* running jobs, linked through next (at most n_threads) */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool stopping;
    int nice;
    char name[32];
};

void omnic__job_init(omnic__job *job, void (*run)(omnic__job *job), void (*on_done)(omnic__job *job))
{
    job->run = run;
    job->on_done = on_done;
    job->ran = false;
    atomic_init(&job->cancel, false);
    job->next = NULL;
}

static void *worker_main(void *arg)
{
    omnic__job_pool *p = arg;
    if (p->nice) { /* Linux: a thread's nice value is its own (best effort: never fatal) */
        errno = 0;
        int cur = getpriority(PRIO_PROCESS, 0);
        if (errno == 0) setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), cur + p->nice);
    }
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stopping && !p->head)
            pthread_cond_wait(&p->wake, &p->mu);
        if (!p->head) break; /* stopping and nothing queued */
        omnic__job *job = p->head;
        p->head = job->next;
        if (!p->head) p->tail = NULL;
        p->queued--;
        p->running++;
        job->next = p->active;
        p->active = job;
        pthread_mutex_unlock(&p->mu);
        job->ran = true;
        job->run(job);
        pthread_mutex_lock(&p->mu);
        for (omnic__job **a = &p->active; *a; a = &(*a)->next) /* off the list before done: */
            if (*a == job) {                                   /* the submitter may free it */
                *a = job->next;
                break;
            }
        p->running--;
        pthread_mutex_unlock(&p->mu);
        job->on_done(job); /* it may free the job */
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

omnic_status omnic__job_pool_create(const char *name, int workers, int max_queue, int nice,
                                    omnic__job_pool **out, omnic_err *err)
{
    if (workers < 1 || max_queue < 1)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s pool: %d workers and a queue of %d (need >= 1 each)",
                          name, workers, max_queue);
    omnic__job_pool *p = omnic_alloc_array(1, sizeof *p);
    if (!p || !(p->threads = omnic_alloc_array((size_t)workers, sizeof *p->threads))) {
        omnic_free(p);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a %s pool of %d workers", name, workers);
    }
    p->max_queue = max_queue;
    p->nice = nice > 0 ? nice : 0;
    snprintf(p->name, sizeof p->name, "%s", name);
    pthread_mutex_init(&p->mu, NULL);
    omnic__cond_init(&p->wake);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, OMNIC_JOB_STACK_BYTES);
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&p->threads[i], &attr, worker_main, p) != 0) {
            pthread_attr_destroy(&attr);
            omnic__job_pool_destroy(p);
            return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "could not start %s worker %d", name, i);
        }
        p->n_threads++;
    }
    pthread_attr_destroy(&attr);
    *out = p;
    return OMNIC_OK;
}

omnic_status omnic__job_pool_submit(omnic__job_pool *p, omnic__job *job, omnic_err *err)
{
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        return OMNIC_FAIL(err, OMNIC_E_CANCELLED, "the %s pool is shutting down", p->name);
    }
    if (p->queued >= p->max_queue) {
        pthread_mutex_unlock(&p->mu);
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "the %s queue is full (%d jobs waiting)", p->name,
                          p->max_queue);
    }
    job->next = NULL;
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    p->queued++;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    return OMNIC_OK;
}

int omnic__job_pool_pending(omnic__job_pool *p)
{
    pthread_mutex_lock(&p->mu);
    int n = p->queued + p->running;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void omnic__job_pool_cancel(omnic__job_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    omnic__job *q = p->head; /* never started: done without running */
    p->head = p->tail = NULL;
    p->queued = 0;
    for (omnic__job *a = p->active; a; a = a->next)
        atomic_store(&a->cancel, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (; q;) {
        omnic__job *next = q->next;
        atomic_store(&q->cancel, true);
        q->on_done(q);
        q = next;
    }
}

void omnic__job_pool_destroy(omnic__job_pool *p)
{
    if (!p) return;
    omnic__job_pool_cancel(p);
    for (int i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    omnic_free(p->threads);
    omnic_free(p);
}
