/* Metrics storage and Prometheus rendering. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/metrics.h"

/* Bucket upper bounds in seconds, shared by every histogram. */
static const double bounds[OMNIC_HIST_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                  1,     2.5,  5,     10,   30,  60,   120};

void omnic__metrics_init(omnic__metrics *m, int64_t slots_total)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->slots_total = slots_total;
}

void omnic__metrics_deinit(omnic__metrics *m)
{
    pthread_mutex_destroy(&m->mu);
}

static void add(omnic__histogram *x, double s)
{
    int b = 0;
    while (b < OMNIC_HIST_BUCKETS && s > bounds[b])
        b++;
    x->counts[b]++;
    x->sum += s;
    x->count++;
}

void omnic__metrics_observe(omnic__metrics *m, omnic__hist_id h, double s)
{
    pthread_mutex_lock(&m->mu);
    add(&m->hist[h], s);
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_observe_media(omnic__metrics *m, omnic__media_stage st, int modality, double s)
{
    if (st < 0 || st >= OMNIC_MS_COUNT || modality < 0 || modality >= OMNIC_METRIC_MODALITIES) return;
    pthread_mutex_lock(&m->mu);
    add(&m->media[st][modality], s);
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_finish(omnic__metrics *m, int finish, int64_t prompt_tokens, int64_t generated_tokens)
{
    pthread_mutex_lock(&m->mu);
    if (finish >= 0 && finish < OMNIC_FINISH_LABELS) m->requests[finish]++;
    m->prompt_tokens += (uint64_t)prompt_tokens;
    m->generated_tokens += (uint64_t)generated_tokens;
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_reject(omnic__metrics *m, omnic__reject_reason r)
{
    pthread_mutex_lock(&m->mu);
    m->rejected[r]++;
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_gauges(omnic__metrics *m, int64_t slots_busy, int64_t queue_depth)
{
    pthread_mutex_lock(&m->mu);
    m->slots_busy = slots_busy;
    m->queue_depth = queue_depth;
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_steps(omnic__metrics *m, uint64_t prefill_chunks, uint64_t decode_steps,
                          uint64_t decode_rows, uint64_t mixed_prompt_rows)
{
    pthread_mutex_lock(&m->mu);
    m->mixed_prompt_rows += mixed_prompt_rows;
    m->prefill_chunks += prefill_chunks;
    m->decode_steps += decode_steps;
    m->decode_rows += decode_rows;
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_snapshot(omnic__metrics *m, omnic__metrics *out)
{
    pthread_mutex_lock(&m->mu);
    memcpy(out, m, sizeof *out);
    pthread_mutex_unlock(&m->mu);
    memset(&out->mu, 0, sizeof out->mu); /* the copy's mutex is never used */
}

typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

__attribute__((format(printf, 2, 3))) static void put(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *q = omnic_realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

/* One histogram's series; label: "" or `key="value",` put before le (and alone on sum and count). */
static void hist_series(sbuf *b, const char *name, const char *label, const omnic__histogram *h)
{
    uint64_t cum = 0;
    for (int i = 0; i < OMNIC_HIST_BUCKETS; i++) {
        cum += h->counts[i];
        put(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, label, bounds[i], (unsigned long long)cum);
    }
    cum += h->counts[OMNIC_HIST_BUCKETS];
    size_t ll = strlen(label);
    int n = ll ? (int)ll - 1 : 0; /* the label without its trailing comma */
    put(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, label, (unsigned long long)cum);
    put(b, "%s_sum%s%.*s%s %.6f\n%s_count%s%.*s%s %llu\n", name, ll ? "{" : "", n, label, ll ? "}" : "",
        h->sum, name, ll ? "{" : "", n, label, ll ? "}" : "", (unsigned long long)h->count);
}

static void hist(sbuf *b, const char *name, const char *help, const omnic__histogram *h)
{
    put(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    hist_series(b, name, "", h);
}

/* A media stage's histogram, one series per modality that takes media (image, audio). */
static void hist_media(sbuf *b, const char *name, const char *help, const omnic__histogram *h)
{
    static const char *const mod[OMNIC_METRIC_MODALITIES] = {"text", "image", "audio"};
    put(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int k = 1; k < OMNIC_METRIC_MODALITIES; k++) {
        char label[32];
        snprintf(label, sizeof label, "modality=\"%s\",", mod[k]);
        hist_series(b, name, label, &h[k]);
    }
}

void omnic__metrics_encoder_cache(omnic__metrics *m, uint64_t hits, uint64_t misses, uint64_t evictions,
                                  size_t bytes, size_t entries)
{
    pthread_mutex_lock(&m->mu);
    m->enc_cache_hits = hits;
    m->enc_cache_misses = misses;
    m->enc_cache_evictions = evictions;
    m->enc_cache_bytes = (int64_t)bytes;
    m->enc_cache_entries = (int64_t)entries;
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_media_memo(omnic__metrics *m, uint64_t hits, uint64_t misses, size_t bytes)
{
    pthread_mutex_lock(&m->mu);
    m->memo_hits = hits;
    m->memo_misses = misses;
    m->memo_bytes = (int64_t)bytes;
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_encode_slice(omnic__metrics *m, double budget_s)
{
    pthread_mutex_lock(&m->mu);
    m->encode_slices++;
    m->slice_budget_s = budget_s;
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_mixed_step(omnic__metrics *m, double budget_s, int64_t next_rows)
{
    pthread_mutex_lock(&m->mu);
    m->step_budget_s = budget_s;
    m->step_prompt_rows = next_rows;
    pthread_mutex_unlock(&m->mu);
}

void omnic__metrics_prefix_cache(omnic__metrics *m, const omnic__prefix_stats *s)
{
    pthread_mutex_lock(&m->mu);
    m->prefix = *s;
    pthread_mutex_unlock(&m->mu);
}

omnic_status omnic__metrics_render(const omnic__metrics *s, char **out, size_t *len, omnic_err *err)
{
    static const char *const finish[OMNIC_FINISH_LABELS] = {"none",      "stop",    "length",
                                                            "cancelled", "timeout", "error"};
    static const char *const reject[OMNIC_REJECT_COUNT] = {"invalid", "capacity", "queue_full", "draining"};
    sbuf b = {.p = omnic_malloc(4096), .cap = 4096};
    if (!b.p) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory rendering metrics");
    b.p[0] = '\0';
    put(&b, "# HELP omnic_requests_total Finished requests by finish reason.\n# TYPE omnic_requests_total "
            "counter\n");
    for (int i = 1; i < OMNIC_FINISH_LABELS; i++)
        put(&b, "omnic_requests_total{finish_reason=\"%s\"} %llu\n", finish[i],
            (unsigned long long)s->requests[i]);
    put(&b, "# HELP omnic_rejected_total Requests refused before admission, by reason.\n"
            "# TYPE omnic_rejected_total counter\n");
    for (int i = 0; i < OMNIC_REJECT_COUNT; i++)
        put(&b, "omnic_rejected_total{reason=\"%s\"} %llu\n", reject[i], (unsigned long long)s->rejected[i]);
    put(&b,
        "# HELP omnic_prompt_tokens_total Prompt tokens of finished requests (logical, as in usage).\n"
        "# TYPE omnic_prompt_tokens_total counter\nomnic_prompt_tokens_total %llu\n",
        (unsigned long long)s->prompt_tokens);
    put(&b,
        "# HELP omnic_generated_tokens_total Generated tokens of finished requests.\n"
        "# TYPE omnic_generated_tokens_total counter\nomnic_generated_tokens_total %llu\n",
        (unsigned long long)s->generated_tokens);
    put(&b,
        "# HELP omnic_prefill_chunks_total Prefill module calls.\n# TYPE omnic_prefill_chunks_total counter\n"
        "omnic_prefill_chunks_total %llu\n",
        (unsigned long long)s->prefill_chunks);
    put(&b,
        "# HELP omnic_decode_steps_total Batched decode calls.\n# TYPE omnic_decode_steps_total counter\n"
        "omnic_decode_steps_total %llu\n",
        (unsigned long long)s->decode_steps);
    put(&b,
        "# HELP omnic_decode_rows_total Rows (sequences) over all decode calls.\n"
        "# TYPE omnic_decode_rows_total counter\nomnic_decode_rows_total %llu\n",
        (unsigned long long)s->decode_rows);
    put(&b,
        "# HELP omnic_mixed_prompt_rows_total Prompt rows prefilled inside decode calls (mixed steps).\n"
        "# TYPE omnic_mixed_prompt_rows_total counter\nomnic_mixed_prompt_rows_total %llu\n",
        (unsigned long long)s->mixed_prompt_rows);
    put(&b,
        "# HELP omnic_encoder_cache_hits_total Media items whose projected rows came from the encoder "
        "cache.\n"
        "# TYPE omnic_encoder_cache_hits_total counter\nomnic_encoder_cache_hits_total %llu\n"
        "# HELP omnic_encoder_cache_misses_total Media items encoded (not in the cache).\n"
        "# TYPE omnic_encoder_cache_misses_total counter\nomnic_encoder_cache_misses_total %llu\n"
        "# HELP omnic_encoder_cache_evictions_total Entries dropped to fit the budget.\n"
        "# TYPE omnic_encoder_cache_evictions_total counter\nomnic_encoder_cache_evictions_total %llu\n"
        "# HELP omnic_encoder_cache_bytes Bytes of projected rows held.\n"
        "# TYPE omnic_encoder_cache_bytes gauge\nomnic_encoder_cache_bytes %lld\n"
        "# HELP omnic_encoder_cache_entries Media items held.\n"
        "# TYPE omnic_encoder_cache_entries gauge\nomnic_encoder_cache_entries %lld\n",
        (unsigned long long)s->enc_cache_hits, (unsigned long long)s->enc_cache_misses,
        (unsigned long long)s->enc_cache_evictions, (long long)s->enc_cache_bytes,
        (long long)s->enc_cache_entries);
    put(&b,
        "# HELP omnic_media_memo_hits_total Media items whose decode and preprocessing were skipped "
        "(the same bytes and processor as a kept item).\n"
        "# TYPE omnic_media_memo_hits_total counter\nomnic_media_memo_hits_total %llu\n"
        "# HELP omnic_media_memo_misses_total Media items decoded and preprocessed.\n"
        "# TYPE omnic_media_memo_misses_total counter\nomnic_media_memo_misses_total %llu\n"
        "# HELP omnic_media_memo_bytes Bytes of prepared items kept.\n"
        "# TYPE omnic_media_memo_bytes gauge\nomnic_media_memo_bytes %lld\n",
        (unsigned long long)s->memo_hits, (unsigned long long)s->memo_misses, (long long)s->memo_bytes);
    put(&b,
        "# HELP omnic_encode_slices_total Encoder runs between decode steps (an image takes one when "
        "nothing decodes, more while streams decode).\n"
        "# TYPE omnic_encode_slices_total counter\nomnic_encode_slices_total %llu\n"
        "# HELP omnic_encode_slice_budget_seconds The last encoder slice's time budget (0: unbounded).\n"
        "# TYPE omnic_encode_slice_budget_seconds gauge\nomnic_encode_slice_budget_seconds %.6f\n",
        (unsigned long long)s->encode_slices, s->slice_budget_s);
    put(&b,
        "# HELP omnic_step_budget_seconds Target time of a decode step carrying prompt rows (mixed "
        "steps: a decode step alone times the allowed rise; 0: none yet).\n"
        "# TYPE omnic_step_budget_seconds gauge\nomnic_step_budget_seconds %.6f\n"
        "# HELP omnic_step_prompt_rows Prompt rows the next mixed step carries (sized to the budget).\n"
        "# TYPE omnic_step_prompt_rows gauge\nomnic_step_prompt_rows %lld\n",
        s->step_budget_s, (long long)s->step_prompt_rows);
    put(&b,
        "# HELP omnic_prefix_cache_hits_total Prompt blocks whose KV rows came from the prefix cache.\n"
        "# TYPE omnic_prefix_cache_hits_total counter\nomnic_prefix_cache_hits_total %llu\n"
        "# HELP omnic_prefix_cache_misses_total Prompt block lookups that found nothing (one per prompt "
        "at most).\n"
        "# TYPE omnic_prefix_cache_misses_total counter\nomnic_prefix_cache_misses_total %llu\n"
        "# HELP omnic_prefix_cache_evictions_total Blocks dropped to fit the budget.\n"
        "# TYPE omnic_prefix_cache_evictions_total counter\nomnic_prefix_cache_evictions_total %llu\n"
        "# HELP omnic_prefix_cache_reused_rows_total Prompt rows restored instead of prefilled (expanded "
        "rows).\n"
        "# TYPE omnic_prefix_cache_reused_rows_total counter\nomnic_prefix_cache_reused_rows_total %llu\n"
        "# HELP omnic_prefix_cache_bytes Bytes of KV blocks held.\n"
        "# TYPE omnic_prefix_cache_bytes gauge\nomnic_prefix_cache_bytes %lld\n"
        "# HELP omnic_prefix_cache_blocks KV blocks held.\n"
        "# TYPE omnic_prefix_cache_blocks gauge\nomnic_prefix_cache_blocks %lld\n",
        (unsigned long long)s->prefix.hits, (unsigned long long)s->prefix.misses,
        (unsigned long long)s->prefix.evictions, (unsigned long long)s->prefix.reused_rows,
        (long long)s->prefix.bytes, (long long)s->prefix.entries);
    put(&b,
        "# HELP omnic_slots_busy Slots holding a request.\n# TYPE omnic_slots_busy gauge\nomnic_slots_busy "
        "%lld\n",
        (long long)s->slots_busy);
    put(&b, "# HELP omnic_slots_total Slots.\n# TYPE omnic_slots_total gauge\nomnic_slots_total %lld\n",
        (long long)s->slots_total);
    put(&b,
        "# HELP omnic_queue_depth Requests waiting for a slot.\n# TYPE omnic_queue_depth gauge\n"
        "omnic_queue_depth %lld\n",
        (long long)s->queue_depth);
    hist(&b, "omnic_time_to_first_token_seconds", "Submit to first generated token.", &s->hist[OMNIC_H_TTFT]);
    hist(&b, "omnic_inter_token_latency_seconds", "Time between generated tokens of a request.",
         &s->hist[OMNIC_H_ITL]);
    hist(&b, "omnic_e2e_request_latency_seconds", "Submit to finish.", &s->hist[OMNIC_H_E2E]);
    hist(&b, "omnic_queue_time_seconds", "Submit to admission into a slot.", &s->hist[OMNIC_H_QUEUE]);
    hist(&b, "omnic_media_preprocess_seconds",
         "Fetch, decode and preprocess of one request's images (media workers).", &s->hist[OMNIC_H_MEDIA]);
    hist(&b, "omnic_prefill_chunk_seconds", "One prefill module call (a chunk of a prompt).",
         &s->hist[OMNIC_H_PREFILL]);
    hist(&b, "omnic_decode_step_seconds", "One batched decode call, with any prompt rows it carries.",
         &s->hist[OMNIC_H_STEP]);
    hist_media(&b, "omnic_media_fetch_seconds", "Reading one media item's bytes (data: URL, file, fetch).",
               s->media[OMNIC_MS_FETCH]);
    hist_media(&b, "omnic_media_decode_seconds", "Decoding one media item's container.",
               s->media[OMNIC_MS_DECODE]);
    hist_media(&b, "omnic_media_processor_seconds", "The family's processor on one decoded item.",
               s->media[OMNIC_MS_PREPROCESS]);
    hist_media(&b, "omnic_media_encode_seconds", "The encoder on one item (encoder cache misses).",
               s->media[OMNIC_MS_ENCODE]);
    hist_media(&b, "omnic_media_merge_seconds", "Merging a request's items into its prefill rows.",
               s->media[OMNIC_MS_MERGE]);
    if (b.oom) {
        omnic_free(b.p);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory rendering metrics");
    }
    *out = b.p;
    *len = b.len;
    return OMNIC_OK;
}
