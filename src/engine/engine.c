/* The continuous-batching scheduler: queue, slots, chunked prefill, batched decode,
 * sampling, streaming detokenization, stop strings, cancellation, metrics. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "engine/stop.h"
#include "io/json.h"
#include "tokenizer/detok_stream.h"

typedef struct request {
    uint64_t id;
    int32_t *prompt; /* owned [n_prompt] */
    size_t n_prompt;
    omnic__sampling_params sp;
    int64_t max_tokens;
    char **stops;    /* owned [n_stops] */
    size_t n_stops;
    double timeout_s, t_submit;
    bool skip_special, ignore_eos;
    omnic__event_cb cb;
    void *cb_ctx;
    omnic__prefill_cb on_prefill;
    atomic_bool cancel;
    struct request *next; /* queue link */
} request;

typedef enum slot_phase { SLOT_FREE, SLOT_PREFILL, SLOT_DECODE } slot_phase;

typedef struct slot {
    slot_phase phase;
    request *req;              /* owned while busy */
    int64_t prefilled;         /* prompt rows in the KV cache */
    int32_t next_token;        /* DECODE: sampled, fed at the next decode step */
    int64_t generated;
    omnic__sampler sampler;    /* buffers live as long as the engine */
    omnic__detok_stream detok; /* per request */
    omnic__stop_matcher stop;  /* per request */
    double t_last;             /* last token (for inter-token latency) */
} slot;

struct omnic__engine {
    omnic__model *model;
    omnic__tokenizer *tok;
    int32_t *eos; /* owned [n_eos] */
    size_t n_eos;
    slot *slots;  /* owned [n_slots] */
    int n_slots;
    int prefill_rr; /* round-robin cursor over prefilling slots */
    int32_t *dec_tok, *dec_pos, *dec_rows; /* [n_slots] decode inputs */
    int32_t *pre_pos;                      /* [chunk] prefill positions */
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    request *q_head, *q_tail; /* waiting requests, FIFO */
    int q_len, max_queue, busy;
    bool stopping, draining;
    uint64_t next_id;
    omnic__metrics metrics;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *omnic__finish_name(omnic__finish f)
{
    static const char *const n[OMNIC_FINISH_COUNT] = {"none", "stop", "length", "cancelled", "timeout", "error"};
    return (unsigned)f < OMNIC_FINISH_COUNT ? n[f] : "?";
}

static void request_free(request *r)
{
    if (!r) return;
    for (size_t i = 0; r->stops && i < r->n_stops; i++) omnic_free(r->stops[i]);
    omnic_free(r->stops);
    omnic_free(r->prompt);
    omnic_free(r);
}

/* ---- EOS ids: generation_config.json, config.json, tokenizer_config.json ---- */

static omnic_status add_eos(omnic__engine *e, int64_t id)
{
    if (id < 0 || id >= (int64_t)omnic__tokenizer_vocab_size(e->tok)) return OMNIC_OK;
    for (size_t i = 0; i < e->n_eos; i++)
        if (e->eos[i] == id) return OMNIC_OK;
    int32_t *n = omnic_realloc(e->eos, (e->n_eos + 1) * sizeof *n);
    if (!n) return OMNIC_E_NOMEM;
    e->eos = n;
    e->eos[e->n_eos++] = (int32_t)id;
    return OMNIC_OK;
}

static omnic_status add_eos_json(omnic__engine *e, const json_t *cfg)
{
    const json_t *v = cfg ? json_object_get(cfg, "eos_token_id") : NULL;
    if (json_is_integer(v)) return add_eos(e, json_integer_value(v));
    if (json_is_array(v))
        for (size_t i = 0; i < json_array_size(v); i++)
            if (json_is_integer(json_array_get(v, i))) OMNIC_TRY(add_eos(e, json_integer_value(json_array_get(v, i))));
    return OMNIC_OK;
}

/* ---- events ---- */

static void emit_text(slot *s, int32_t token, const char *text, size_t len)
{
    omnic__gen_event ev = {.kind = OMNIC_EV_TEXT, .id = s->req->id, .token = token, .text = text, .len = len};
    s->req->cb(s->req->cb_ctx, &ev);
}

/* Ends the slot's request: releases held text (unless a stop string ended it), reports
 * DONE, records metrics and clears every slot-scoped buffer. */
static void finish(omnic__engine *e, int si, omnic__finish why, const char *error)
{
    slot *s = &e->slots[si];
    request *r = s->req;
    omnic_err err;
    if (why == OMNIC_FINISH_LENGTH || (why == OMNIC_FINISH_STOP && !s->stop.stopped)) {
        const char *t;
        size_t n;
        bool stopped = false;
        if (omnic__detok_stream_flush(&s->detok, &t, &n, &err) == OMNIC_OK && n) {
            const char *o;
            size_t on;
            stopped = omnic__stop_push(&s->stop, t, n, &o, &on, &err);
            if (on) emit_text(s, -1, o, on);
        }
        if (!stopped) {
            const char *o;
            size_t on;
            omnic__stop_flush(&s->stop, &o, &on);
            if (on) emit_text(s, -1, o, on);
        }
    }
    omnic__gen_event ev = {.kind = OMNIC_EV_DONE,
                           .id = r->id,
                           .token = -1,
                           .finish = why,
                           .prompt_tokens = (int64_t)r->n_prompt,
                           .completion_tokens = s->generated,
                           .error = error};
    omnic__metrics_finish(&e->metrics, why, (int64_t)r->n_prompt, s->generated);
    omnic__metrics_observe(&e->metrics, OMNIC_H_E2E, now_s() - r->t_submit);
    r->cb(r->cb_ctx, &ev); /* after the metrics: a client that saw DONE sees them counted */
    omnic__detok_stream_deinit(&s->detok);
    omnic__stop_deinit(&s->stop);
    omnic__kv_pool_clear_slot(&e->model->kv, si);
    s->phase = SLOT_FREE;
    s->generated = s->prefilled = 0;
    pthread_mutex_lock(&e->mu); /* omnic__engine_cancel reads s->req under mu */
    s->req = NULL;
    e->busy--;
    omnic__metrics_gauges(&e->metrics, e->busy, e->q_len); /* current even when the scheduler goes idle */
    pthread_cond_broadcast(&e->idle);
    pthread_mutex_unlock(&e->mu);
    request_free(r);
}

static bool is_eos(const omnic__engine *e, int32_t t)
{
    for (size_t i = 0; i < e->n_eos; i++)
        if (e->eos[i] == t) return true;
    return false;
}

/* A token was sampled for slot si: report it, then finish or queue it for decoding. */
static void on_token(omnic__engine *e, int si, int32_t t)
{
    slot *s = &e->slots[si];
    request *r = s->req;
    double now = now_s();
    omnic__metrics_observe(&e->metrics, s->generated == 0 ? OMNIC_H_TTFT : OMNIC_H_ITL,
                           s->generated == 0 ? now - r->t_submit : now - s->t_last);
    s->t_last = now;
    s->generated++;
    if (!r->ignore_eos && is_eos(e, t)) {
        finish(e, si, OMNIC_FINISH_STOP, NULL);
        return;
    }
    omnic_err err;
    const char *text;
    size_t len;
    if (omnic__detok_stream_push(&s->detok, t, &text, &len, &err) != OMNIC_OK) {
        finish(e, si, OMNIC_FINISH_ERROR, err.msg);
        return;
    }
    const char *o;
    size_t on;
    bool stopped = omnic__stop_push(&s->stop, text, len, &o, &on, &err);
    emit_text(s, t, o, on);
    if (stopped) {
        finish(e, si, OMNIC_FINISH_STOP, NULL);
        return;
    }
    if (s->generated >= r->max_tokens) {
        finish(e, si, OMNIC_FINISH_LENGTH, NULL);
        return;
    }
    s->next_token = t;
    s->phase = SLOT_DECODE;
}

/* ---- scheduler ---- */

static omnic_status prefill_chunk(omnic__engine *e, int si, omnic_err *err)
{
    slot *s = &e->slots[si];
    omnic__model *m = e->model;
    int64_t left = (int64_t)s->req->n_prompt - s->prefilled, n = left < m->chunk ? left : m->chunk;
    for (int64_t i = 0; i < n; i++) e->pre_pos[i] = (int32_t)(s->prefilled + i);
    omnic__tensor tok, pos;
    int64_t d[1] = {n};
    omnic__tensor_init(&tok, OMNIC_DTYPE_I32, 1, d, err);
    omnic__tensor_init(&pos, OMNIC_DTYPE_I32, 1, d, err);
    tok.data = s->req->prompt + s->prefilled;
    pos.data = e->pre_pos;
    const omnic__tensor *in[2] = {&tok, &pos};
    omnic__call c = {.n = n, .inputs = in, .n_inputs = 2, .kv = &m->kv, .slot = si, .kv_start = s->prefilled,
                     .cancel = &s->req->cancel};
    OMNIC_TRY(omnic__module_call(&m->prefill, &c, err));
    s->prefilled += n;
    omnic__metrics_steps(&e->metrics, 1, 0, 0);
    if (s->prefilled == (int64_t)s->req->n_prompt) {
        if (s->req->on_prefill) s->req->on_prefill(s->req->cb_ctx, m, si);
        const float *logits = omnic__module_output(&m->prefill, m->prefill_logits)->data;
        on_token(e, si, omnic__sampler_sample(&s->sampler, logits));
    }
    return OMNIC_OK;
}

static void decode_step(omnic__engine *e)
{
    omnic__model *m = e->model;
    int n = 0;
    for (int si = 0; si < e->n_slots; si++) {
        if (e->slots[si].phase != SLOT_DECODE) continue;
        e->dec_rows[n] = si;
        e->dec_tok[n] = e->slots[si].next_token;
        e->dec_pos[n] = (int32_t)m->kv.len[si];
        n++;
    }
    if (!n) return;
    omnic_err err;
    omnic__tensor tok, pos;
    int64_t d[1] = {n};
    omnic__tensor_init(&tok, OMNIC_DTYPE_I32, 1, d, &err);
    omnic__tensor_init(&pos, OMNIC_DTYPE_I32, 1, d, &err);
    tok.data = e->dec_tok;
    pos.data = e->dec_pos;
    const omnic__tensor *in[2] = {&tok, &pos};
    omnic__call c = {.n = n, .inputs = in, .n_inputs = 2, .kv = &m->kv, .row_slots = e->dec_rows};
    if (omnic__module_call(&m->decode, &c, &err) != OMNIC_OK) {
        for (int b = 0; b < n; b++) finish(e, e->dec_rows[b], OMNIC_FINISH_ERROR, err.msg);
        return;
    }
    omnic__metrics_steps(&e->metrics, 0, 1, (uint64_t)n);
    const float *logits = omnic__module_output(&m->decode, 0)->data;
    const int64_t V = m->dec.cfg.vocab;
    for (int b = 0; b < n; b++) {
        int si = e->dec_rows[b];
        on_token(e, si, omnic__sampler_sample(&e->slots[si].sampler, logits + (int64_t)b * V));
    }
}

/* Moves queued requests into free slots (called with mu held). Returns how many. */
static int admit_locked(omnic__engine *e, int *admitted)
{
    int k = 0;
    for (int si = 0; si < e->n_slots && e->q_head; si++) {
        slot *s = &e->slots[si];
        if (s->phase != SLOT_FREE) continue;
        request *r = e->q_head;
        e->q_head = r->next;
        if (!e->q_head) e->q_tail = NULL;
        e->q_len--;
        r->next = NULL;
        s->req = r;
        s->phase = SLOT_PREFILL;
        s->prefilled = s->generated = 0;
        e->busy++;
        admitted[k++] = si;
    }
    return k;
}

/* Per-request slot state that allocates; on failure the request finishes with an error. */
static void start_slot(omnic__engine *e, int si)
{
    slot *s = &e->slots[si];
    request *r = s->req;
    omnic_err err;
    omnic__metrics_observe(&e->metrics, OMNIC_H_QUEUE, now_s() - r->t_submit);
    omnic__sampler_reset(&s->sampler, &r->sp);
    omnic__sampler_add_prompt(&s->sampler, r->prompt, r->n_prompt);
    memset(&s->detok, 0, sizeof s->detok);
    memset(&s->stop, 0, sizeof s->stop);
    if (omnic__detok_stream_init(&s->detok, e->tok, r->skip_special, &err) != OMNIC_OK ||
        omnic__stop_init(&s->stop, (const char *const *)r->stops, r->n_stops, &err) != OMNIC_OK)
        finish(e, si, OMNIC_FINISH_ERROR, err.msg);
}

static void *scheduler_main(void *arg)
{
    omnic__engine *e = arg;
    int *admitted = omnic_alloc_array((size_t)e->n_slots, sizeof *admitted);
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->stopping && e->busy == 0 && !e->q_head) pthread_cond_wait(&e->wake, &e->mu);
        bool stopping = e->stopping;
        int k = admitted ? admit_locked(e, admitted) : 0;
        omnic__metrics_gauges(&e->metrics, e->busy, e->q_len);
        pthread_mutex_unlock(&e->mu);
        for (int i = 0; i < k; i++) start_slot(e, admitted[i]);
        /* cancellations and timeouts first: they free slots this very step */
        double now = now_s();
        for (int si = 0; si < e->n_slots; si++) {
            slot *s = &e->slots[si];
            if (s->phase == SLOT_FREE) continue;
            if (stopping || atomic_load(&s->req->cancel)) finish(e, si, OMNIC_FINISH_CANCELLED, NULL);
            else if (s->req->timeout_s > 0 && now - s->req->t_submit > s->req->timeout_s)
                finish(e, si, OMNIC_FINISH_TIMEOUT, NULL);
        }
        if (stopping) {
            pthread_mutex_lock(&e->mu);
            bool done = e->busy == 0 && !e->q_head;
            pthread_mutex_unlock(&e->mu);
            if (done) break;
            continue;
        }
        /* one prefill chunk per step, round robin over prefilling slots */
        for (int i = 0; i < e->n_slots; i++) {
            int si = (e->prefill_rr + i) % e->n_slots;
            if (e->slots[si].phase != SLOT_PREFILL) continue;
            omnic_err err;
            omnic_status st = prefill_chunk(e, si, &err);
            if (st == OMNIC_E_CANCELLED) finish(e, si, OMNIC_FINISH_CANCELLED, NULL);
            else if (st != OMNIC_OK) finish(e, si, OMNIC_FINISH_ERROR, err.msg);
            e->prefill_rr = (si + 1) % e->n_slots;
            break;
        }
        decode_step(e);
    }
    omnic_free(admitted);
    return NULL;
}

/* ---- public ---- */

omnic_status omnic__engine_create(const char *dir, const omnic__engine_opts *opts, omnic__engine **out,
                                  omnic_err *err)
{
    omnic__engine *e = omnic_alloc_array(1, sizeof *e);
    if (!e) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for an engine");
    omnic_status s;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->wake, NULL);
    pthread_cond_init(&e->idle, NULL);
    e->max_queue = opts && opts->max_queue > 0 ? opts->max_queue : 64;
    e->next_id = 1;
    omnic__model_opts mo = opts ? opts->model : (omnic__model_opts){0};
    if ((s = omnic__model_open(dir, &mo, &e->model, err)) != OMNIC_OK) goto fail;
    if ((s = omnic__tokenizer_load(dir, &e->tok, err)) != OMNIC_OK) goto fail;
    if ((int64_t)omnic__tokenizer_vocab_size(e->tok) > e->model->dec.cfg.vocab) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "tokenizer has %zu tokens, more than the model's vocab_size %lld",
                       omnic__tokenizer_vocab_size(e->tok), (long long)e->model->dec.cfg.vocab);
        goto fail;
    }
    if ((s = add_eos_json(e, e->model->ckpt->generation_config)) != OMNIC_OK ||
        (s = add_eos_json(e, e->model->ckpt->config)) != OMNIC_OK ||
        (s = add_eos(e, omnic__tokenizer_get_specials(e->tok)->eos_id)) != OMNIC_OK) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for EOS ids");
        goto fail;
    }
    e->n_slots = e->model->n_slots;
    e->slots = omnic_alloc_array((size_t)e->n_slots, sizeof *e->slots);
    e->dec_tok = omnic_alloc_array((size_t)e->n_slots, sizeof *e->dec_tok);
    e->dec_pos = omnic_alloc_array((size_t)e->n_slots, sizeof *e->dec_pos);
    e->dec_rows = omnic_alloc_array((size_t)e->n_slots, sizeof *e->dec_rows);
    e->pre_pos = omnic_alloc_array((size_t)e->model->chunk, sizeof *e->pre_pos);
    if (!e->slots || !e->dec_tok || !e->dec_pos || !e->dec_rows || !e->pre_pos) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %d slots", e->n_slots);
        goto fail;
    }
    omnic__sampling_params dp = omnic__sampling_defaults();
    /* Samplers see the first tokenizer-vocab logits of each row: ids past the tokenizer
     * (padding rows of lm_head) could not be detokenized, so they are never sampled. */
    const int64_t sample_vocab = (int64_t)omnic__tokenizer_vocab_size(e->tok);
    for (int i = 0; i < e->n_slots; i++)
        if ((s = omnic__sampler_init(&e->slots[i].sampler, &dp, sample_vocab, err)) != OMNIC_OK) goto fail;
    omnic__metrics_init(&e->metrics, e->n_slots);
    if (pthread_create(&e->thread, NULL, scheduler_main, e) != 0) {
        s = OMNIC_FAIL(err, OMNIC_E_INTERNAL, "could not start the scheduler thread");
        goto fail;
    }
    e->thread_started = true;
    *out = e;
    return OMNIC_OK;
fail:
    omnic__engine_destroy(e);
    return s;
}

void omnic__engine_destroy(omnic__engine *e)
{
    if (!e) return;
    if (e->thread_started) {
        pthread_mutex_lock(&e->mu);
        e->stopping = true;
        /* queued requests never reached a slot: report them cancelled */
        request *q = e->q_head;
        e->q_head = e->q_tail = NULL;
        e->q_len = 0;
        pthread_cond_broadcast(&e->wake);
        pthread_mutex_unlock(&e->mu);
        for (request *r = q, *next; r; r = next) {
            next = r->next;
            omnic__gen_event ev = {.kind = OMNIC_EV_DONE, .id = r->id, .token = -1, .finish = OMNIC_FINISH_CANCELLED,
                                   .prompt_tokens = (int64_t)r->n_prompt};
            r->cb(r->cb_ctx, &ev);
            request_free(r);
        }
        pthread_join(e->thread, NULL);
        omnic__metrics_deinit(&e->metrics);
    }
    for (int i = 0; e->slots && i < e->n_slots; i++) omnic__sampler_deinit(&e->slots[i].sampler);
    omnic_free(e->slots);
    omnic_free(e->dec_tok);
    omnic_free(e->dec_pos);
    omnic_free(e->dec_rows);
    omnic_free(e->pre_pos);
    omnic_free(e->eos);
    omnic__tokenizer_free(e->tok);
    omnic__model_close(e->model);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->wake);
    pthread_cond_destroy(&e->idle);
    omnic_free(e);
}

omnic_status omnic__engine_submit(omnic__engine *e, const omnic__gen_request *r, uint64_t *id, omnic_err *err)
{
    omnic__reject_reason why = OMNIC_REJECT_INVALID;
    omnic_status s = OMNIC_OK;
    request *q = NULL;
    const int64_t cap = e->model->capacity, V = (int64_t)omnic__tokenizer_vocab_size(e->tok);
    int64_t total;
    if (!r->cb) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "request has no callback");
        goto reject;
    }
    if (r->n_prompt < 1) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "the prompt is empty (0 tokens)");
        goto reject;
    }
    if (r->max_tokens < 1) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "max_tokens %lld must be at least 1", (long long)r->max_tokens);
        goto reject;
    }
    if ((s = omnic__sampling_validate(&r->sampling, err)) != OMNIC_OK) goto reject;
    if (r->n_stops > OMNIC_MAX_STOPS) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "%zu stop strings is over the limit of %d", r->n_stops, OMNIC_MAX_STOPS);
        goto reject;
    }
    for (size_t i = 0; i < r->n_stops; i++) {
        size_t n = strlen(r->stops[i]);
        if (n == 0 || n > OMNIC_MAX_STOP_LEN) {
            s = OMNIC_FAIL(err, OMNIC_E_INVALID, "stop string %zu is %zu bytes (allowed 1..%d)", i, n,
                           OMNIC_MAX_STOP_LEN);
            goto reject;
        }
    }
    for (size_t i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= V) {
            s = OMNIC_FAIL(err, OMNIC_E_INVALID, "prompt token %zu is %d, outside the vocabulary 0..%lld", i,
                           r->prompt[i], (long long)V - 1);
            goto reject;
        }
    if (r->timeout_s < 0 || !isfinite(r->timeout_s)) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "timeout %g must be >= 0", r->timeout_s);
        goto reject;
    }
    if (__builtin_add_overflow((int64_t)r->n_prompt, r->max_tokens, &total) || total > cap) {
        why = OMNIC_REJECT_CAPACITY;
        s = OMNIC_FAIL(err, OMNIC_E_CAPACITY,
                       "prompt of %zu tokens + max_tokens %lld exceeds the context of %lld tokens", r->n_prompt,
                       (long long)r->max_tokens, (long long)cap);
        goto reject;
    }
    q = omnic_alloc_array(1, sizeof *q);
    if (!q || !(q->prompt = omnic_alloc_array(r->n_prompt, sizeof *q->prompt))) goto nomem;
    memcpy(q->prompt, r->prompt, r->n_prompt * sizeof *q->prompt);
    q->n_prompt = r->n_prompt;
    if (r->n_stops) {
        if (!(q->stops = omnic_alloc_array(r->n_stops, sizeof *q->stops))) goto nomem;
        for (size_t i = 0; i < r->n_stops; i++, q->n_stops++)
            if (!(q->stops[i] = omnic_strdup(r->stops[i]))) goto nomem;
    }
    q->sp = r->sampling;
    q->max_tokens = r->max_tokens;
    q->timeout_s = r->timeout_s;
    q->skip_special = r->skip_special;
    q->ignore_eos = r->ignore_eos;
    q->cb = r->cb;
    q->cb_ctx = r->cb_ctx;
    q->on_prefill = r->on_prefill;
    q->t_submit = now_s();
    atomic_init(&q->cancel, false);
    pthread_mutex_lock(&e->mu);
    if (e->draining || e->stopping) {
        pthread_mutex_unlock(&e->mu);
        why = OMNIC_REJECT_DRAINING;
        s = OMNIC_FAIL(err, OMNIC_E_CANCELLED, "the server is shutting down");
        goto reject;
    }
    if (e->q_len >= e->max_queue) {
        pthread_mutex_unlock(&e->mu);
        why = OMNIC_REJECT_QUEUE_FULL;
        s = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "the queue is full (%d requests waiting)", e->max_queue);
        goto reject;
    }
    q->id = e->next_id++;
    if (e->q_tail) e->q_tail->next = q;
    else e->q_head = q;
    e->q_tail = q;
    e->q_len++;
    omnic__metrics_gauges(&e->metrics, e->busy, e->q_len);
    *id = q->id;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    return OMNIC_OK;
nomem:
    s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory queueing a request of %zu tokens", r->n_prompt);
reject:
    request_free(q);
    omnic__metrics_reject(&e->metrics, why);
    return s;
}

void omnic__engine_cancel(omnic__engine *e, uint64_t id)
{
    pthread_mutex_lock(&e->mu);
    for (request *r = e->q_head; r; r = r->next)
        if (r->id == id) atomic_store(&r->cancel, true);
    for (int i = 0; i < e->n_slots; i++) {
        request *r = e->slots[i].req; /* read under mu: slots change hands only in admit/finish */
        if (r && r->id == id) atomic_store(&r->cancel, true);
    }
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
}

void omnic__engine_drain(omnic__engine *e, double deadline_s)
{
    double end = now_s() + deadline_s;
    pthread_mutex_lock(&e->mu);
    e->draining = true;
    while ((e->busy > 0 || e->q_head) && now_s() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&e->idle, &e->mu, &ts);
    }
    for (request *r = e->q_head; r; r = r->next) atomic_store(&r->cancel, true);
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i].req) atomic_store(&e->slots[i].req->cancel, true);
    pthread_cond_signal(&e->wake);
    while (e->busy > 0 || e->q_head) pthread_cond_wait(&e->idle, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

const omnic__model *omnic__engine_model(const omnic__engine *e) { return e->model; }
const omnic__tokenizer *omnic__engine_tokenizer(const omnic__engine *e) { return e->tok; }
omnic__metrics *omnic__engine_metrics(omnic__engine *e) { return &e->metrics; }

const int32_t *omnic__engine_eos(const omnic__engine *e, size_t *n)
{
    *n = e->n_eos;
    return e->eos;
}
