/* Engine metrics: counters, gauges and histograms, rendered as Prometheus text.
 * All updates take one mutex (a handful per generated token: no contention to speak of). */
#ifndef OMNIC_ENGINE_METRICS_H
#define OMNIC_ENGINE_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "core/err.h"
#include "engine/prefix_cache.h"

typedef enum omnic__hist_id {
    OMNIC_H_TTFT,    /* time to first token (s): submit -> first token sampled */
    OMNIC_H_ITL,     /* inter-token latency (s) */
    OMNIC_H_E2E,     /* end-to-end request latency (s) */
    OMNIC_H_QUEUE,   /* queue time (s): submit -> admitted to a slot */
    OMNIC_H_MEDIA,   /* media stage (s): one request's images fetched, decoded and preprocessed */
    OMNIC_H_PREFILL, /* one prefill module call (a chunk of a prompt), scheduler thread */
    OMNIC_H_STEP,    /* one batched decode call (with any prompt rows it carries) */
    OMNIC_H_COUNT
} omnic__hist_id;

/* The stages one media item goes through, each observed per modality. */
typedef enum omnic__media_stage {
    OMNIC_MS_FETCH,      /* bytes of one item: data: URL, file or remote fetch (media worker) */
    OMNIC_MS_DECODE,     /* container -> pixels (media worker) */
    OMNIC_MS_PREPROCESS, /* the family's processor (media worker) */
    OMNIC_MS_ENCODE,     /* the encoder, when not served by the encoder cache (scheduler) */
    OMNIC_MS_MERGE,      /* a request's items merged into its PreparedPrefill (scheduler) */
    OMNIC_MS_COUNT
} omnic__media_stage;
#define OMNIC_METRIC_MODALITIES 3 /* omnic__modality values (models/media.h) */

typedef enum omnic__reject_reason {
    OMNIC_REJECT_INVALID,  /* bad request fields */
    OMNIC_REJECT_CAPACITY, /* prompt + max_tokens over the context */
    OMNIC_REJECT_QUEUE_FULL,
    OMNIC_REJECT_DRAINING, /* shutting down */
    OMNIC_REJECT_COUNT
} omnic__reject_reason;

#define OMNIC_HIST_BUCKETS 14
#define OMNIC_FINISH_LABELS 6 /* omnic__finish values */

typedef struct omnic__histogram {
    uint64_t counts[OMNIC_HIST_BUCKETS + 1]; /* last: +Inf */
    double sum;
    uint64_t count;
} omnic__histogram;

typedef struct omnic__metrics {
    pthread_mutex_t mu;
    uint64_t requests[OMNIC_FINISH_LABELS]; /* by finish reason */
    uint64_t rejected[OMNIC_REJECT_COUNT];
    uint64_t prompt_tokens, generated_tokens;                       /* logical tokens */
    uint64_t prefill_chunks, decode_steps, decode_rows;             /* decode_rows: generating rows only */
    uint64_t mixed_prompt_rows;                                     /* prompt rows carried by decode calls */
    uint64_t enc_cache_hits, enc_cache_misses, enc_cache_evictions; /* engine/blob_cache.h */
    int64_t enc_cache_bytes, enc_cache_entries;
    uint64_t memo_hits, memo_misses; /* engine/media_memo.h: repeats that skipped decode + preprocess */
    int64_t memo_bytes;
    omnic__prefix_stats prefix; /* engine/prefix_cache.h */
    uint64_t encode_slices;     /* encoder runs between decode steps */
    double slice_budget_s;      /* the last slice's time budget (0: unbounded, nothing decoding) */
    double step_budget_s;       /* the last mixed step's target time (OMNIC_STEP_RISE x a decode step) */
    int64_t step_prompt_rows;   /* prompt rows the next mixed step carries */
    int64_t slots_busy, slots_total, queue_depth;
    omnic__histogram hist[OMNIC_H_COUNT];
    omnic__histogram media[OMNIC_MS_COUNT][OMNIC_METRIC_MODALITIES];
} omnic__metrics;

void omnic__metrics_init(omnic__metrics *m, int64_t slots_total);
void omnic__metrics_deinit(omnic__metrics *m);
void omnic__metrics_observe(omnic__metrics *m, omnic__hist_id h, double seconds);
/* One media item's time in stage st; modality: an omnic__modality (others are ignored). */
void omnic__metrics_observe_media(omnic__metrics *m, omnic__media_stage st, int modality, double seconds);
void omnic__metrics_finish(omnic__metrics *m, int finish, int64_t prompt_tokens, int64_t generated_tokens);
void omnic__metrics_reject(omnic__metrics *m, omnic__reject_reason r);
void omnic__metrics_gauges(omnic__metrics *m, int64_t slots_busy, int64_t queue_depth);
void omnic__metrics_steps(omnic__metrics *m, uint64_t prefill_chunks, uint64_t decode_steps,
                          uint64_t decode_rows, uint64_t mixed_prompt_rows);
/* The encoder cache's counters (totals, as the cache keeps them). */
void omnic__metrics_encoder_cache(omnic__metrics *m, uint64_t hits, uint64_t misses, uint64_t evictions,
                                  size_t bytes, size_t entries);
/* The media memo's counters (totals, as the memo keeps them). */
void omnic__metrics_media_memo(omnic__metrics *m, uint64_t hits, uint64_t misses, size_t bytes);
/* One encoder slice ran with this budget (seconds; 0: to the end). */
void omnic__metrics_encode_slice(omnic__metrics *m, double budget_s);
/* A mixed step was sized: its target time (seconds) and the next one's prompt rows. */
void omnic__metrics_mixed_step(omnic__metrics *m, double budget_s, int64_t next_rows);
/* The prefix cache's counters (totals, as the cache keeps them). */
void omnic__metrics_prefix_cache(omnic__metrics *m, const omnic__prefix_stats *s);
/* A consistent copy. */
void omnic__metrics_snapshot(omnic__metrics *m, omnic__metrics *out);

/* Prometheus text exposition of a snapshot into an owned, NUL-terminated buffer. */
omnic_status omnic__metrics_render(const omnic__metrics *snap, char **out, size_t *len, omnic_err *err);

#endif
