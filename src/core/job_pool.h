/* A bounded worker pool (DESIGN.md 1, 6): a fixed number of threads and a bounded queue of
 * jobs, for work that must not run on an HTTP polling thread or the scheduler thread
 * (request parsing, chat templates, tokenization, media decode and preprocessing). A full
 * queue is refused at once (the server answers 429), never waited on. Jobs are
 * cancellable: the submitter sets job->cancel and the job stops between its stages.
 *
 * Completion: a job's done callback is called once, on the worker after run(), or on the
 * canceller's thread for a job that never ran; it may free the job. Workers run on an
 * OMNIC_JOB_STACK_BYTES stack (the template interpreter's depth limits need ~2 MB). */
#ifndef OMNIC_CORE_JOB_POOL_H
#define OMNIC_CORE_JOB_POOL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "core/err.h"

typedef struct omnic__job_pool omnic__job_pool;

/* One job: the submitter fills its own fields around the struct and initializes it with
 * omnic__job_init; it must stay alive from submit until its on_done. */
typedef struct omnic__job {
    void (*run)(struct omnic__job *job);
    void (*on_done)(struct omnic__job *job); /* required */
    atomic_bool cancel;                      /* set by the submitter; run() checks it between stages */
    bool ran;                                /* run() was called (false: cancelled while queued) */
    struct omnic__job *next;
} omnic__job;

void omnic__job_init(omnic__job *job, void (*run)(omnic__job *job), void (*on_done)(omnic__job *job));

/* workers >= 1 threads, at most max_queue >= 1 jobs waiting; name says what the pool does in
 * messages ("media", "request"). nice > 0 lowers the workers' CPU priority by that much
 * (setpriority on each thread): batch work that must not slow latency-critical threads (the
 * engine's decode steps, the HTTP threads) when the cores are short. Returns owned *out. */
omnic_status omnic__job_pool_create(const char *name, int workers, int max_queue, int nice,
                                    omnic__job_pool **out, omnic_err *err);
/* Queues job (borrowed until done). E_TOO_LARGE (names the pool and its queue size) when
 * max_queue jobs wait, E_CANCELLED when the pool is shutting down. */
omnic_status omnic__job_pool_submit(omnic__job_pool *p, omnic__job *job, omnic_err *err);
/* Jobs queued or running (for metrics). */
int omnic__job_pool_pending(omnic__job_pool *p);
/* Shutdown: refuses new jobs, finishes queued ones without running them (cancel set, ran
 * false) and sets cancel on the running ones (they stop at their next stage). Returns at
 * once. NULL ok. */
void omnic__job_pool_cancel(omnic__job_pool *p);
/* Cancels as above, waits for running jobs, joins the workers, frees. NULL ok. */
void omnic__job_pool_destroy(omnic__job_pool *p);

#endif
