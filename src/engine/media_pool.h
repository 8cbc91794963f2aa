/* The media stage's worker pool (DESIGN.md 1, 6): a fixed number of threads and a bounded
 * queue of jobs that decode and preprocess media outside the scheduler thread. A full queue
 * is refused at once (the server answers 429), never waited on. Jobs are cancellable: the
 * submitter sets job->cancel and the job stops between its stages. */
#ifndef OMNIC_ENGINE_MEDIA_POOL_H
#define OMNIC_ENGINE_MEDIA_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "core/err.h"

typedef struct omnic__media_pool omnic__media_pool;

/* One job: the submitter fills run (called once on a worker) and its own fields around the
 * struct, initializes it with omnic__media_job_init, and keeps it alive until done. */
typedef struct omnic__media_job {
    void (*run)(struct omnic__media_job *job);
    atomic_bool cancel; /* set by the submitter; run() checks it between stages */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done; /* under mu: run() returned (or the pool was destroyed first) */
    struct omnic__media_job *next;
} omnic__media_job;

void omnic__media_job_init(omnic__media_job *job, void (*run)(omnic__media_job *job));
void omnic__media_job_deinit(omnic__media_job *job);
/* Waits up to timeout_s for the job; true when it is done. */
bool omnic__media_job_wait(omnic__media_job *job, double timeout_s);

/* workers >= 1 threads, at most max_queue >= 1 jobs waiting. Returns owned *out. */
omnic_status omnic__media_pool_create(int workers, int max_queue, omnic__media_pool **out, omnic_err *err);
/* Queues job (borrowed until done). E_TOO_LARGE (names the queue size) when max_queue jobs
 * wait, E_CANCELLED when the pool is shutting down. */
omnic_status omnic__media_pool_submit(omnic__media_pool *p, omnic__media_job *job, omnic_err *err);
/* Jobs queued or running (for metrics). */
int omnic__media_pool_pending(omnic__media_pool *p);
/* Shutdown: refuses new jobs, marks queued ones done without running them and sets cancel on
 * the running ones (they stop at their next stage). Returns at once. NULL ok. */
void omnic__media_pool_cancel(omnic__media_pool *p);
/* Cancels as above, waits for running jobs, joins the workers, frees. NULL ok. */
void omnic__media_pool_destroy(omnic__media_pool *p);

#endif
