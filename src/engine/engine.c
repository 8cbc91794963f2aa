/* The continuous-batching scheduler: queue, slots, chunked prefill, batched decode,
 * sampling, streaming detokenization, stop strings, cancellation, metrics. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/sync.h"
#include "engine/blob_cache.h"
#include "engine/engine.h"
#include "engine/media_memo.h"
#include "engine/modality.h"
#include "engine/prefix_cache.h"
#include "engine/stop.h"
#include "models/mrope.h"
#include "tokenizer/detok_stream.h"

typedef struct request {
    uint64_t id;
    int32_t *prompt; /* owned [n_prompt] */
    size_t n_prompt;
    omnic__sampling_params sp;
    int64_t max_tokens;
    char **stops; /* owned [n_stops] */
    size_t n_stops;
    double timeout_s, t_submit, t_start; /* t_start: what timeout_s counts from */
    uint64_t client;                     /* fairness key */
    bool skip_special, ignore_eos;
    omnic__event_cb cb;
    void *cb_ctx;
    omnic__prefill_cb on_prefill;
    omnic__encode_cb on_encode;
    /* media: the preprocessed items (owned copies, models/media.h), encoded one per step into
     * projected (owned [sum of rows, H]), then merged into pp */
    omnic__media_item *media;
    size_t n_media;
    float *projected;
    int64_t proj_rows; /* rows of projected filled */
    int64_t encoded;
    omnic__prepared_prefill pp;                   /* set once every item is encoded (n_rows 0 before) */
    int adapter;                                  /* the adapter id its rows run with (models/lora.h),
                                                   * from pp.adapter by the model's mode map; -1 none */
    int64_t media_rows[OMNIC_MAX_REQUEST_IMAGES]; /* rows each item expanded to (cached_tokens) */
    atomic_bool cancel;
    struct request *next; /* queue link */
} request;

typedef enum slot_phase { SLOT_FREE, SLOT_ENCODE, SLOT_PREFILL, SLOT_DECODE } slot_phase;

typedef struct slot {
    slot_phase phase;
    request *req;             /* owned while busy */
    int64_t prefilled;        /* rows of pf_tokens in the KV cache */
    const int32_t *pf_tokens; /* PREFILL: the rows to cache: the prompt, or the history (replay) */
    int64_t pf_len;
    /* LongRoPE models only (NULL otherwise): prompt + every token fed so far, owned. HF
     * recomputes the whole cache with the long factors when a sequence first grows past
     * original_max_position_embeddings; the slot then replays it as a prefill. */
    int32_t *seq;
    int64_t n_seq;
    bool replay;               /* PREFILL of seq (no prompt callbacks) */
    bool primed;               /* the prefix cache was consulted for this request */
    uint8_t (*pkeys)[32];      /* owned [capacity / block + 1]: the prompt's block keys (prefix cache) */
    int64_t n_pkeys, restored; /* keys computed; prompt rows restored from the prefix cache */
    int64_t rope_delta;        /* M-RoPE: decode coordinate = cache length + rope_delta */
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
    omnic__gen_defaults gen; /* generation_config.json's request defaults */
    slot *slots;             /* owned [n_slots] */
    int n_slots;
    int prefill_rr;                        /* round-robin cursor over prefilling slots */
    int32_t *dec_tok, *dec_pos, *dec_rows; /* [n_slots + step_tokens] decode-call inputs (positions
                                            * x3 for M-RoPE) */
    int32_t *pre_pos;                      /* [embed_rows] prefill positions (x3 for M-RoPE) */
    int32_t *pre_span;  /* [embed_rows, 2] prefill attention spans (models with bidirectional media) */
    int32_t *rope_long; /* [max(embed_rows, n_slots + step_tokens)] LongRoPE table per row */
    int32_t *adapter;   /* [max(embed_rows, n_slots + step_tokens)] adapter id per row (models with
                         * adapters) */
    float *dec_emb;     /* [n_slots + step_tokens, hidden] embeddings_decode rows (when planned) */
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    request *q_head, *q_tail;     /* waiting requests, FIFO (admitted fairly: next_fair) */
    int *admitted;                /* [n_slots] scheduler scratch, allocated before its thread starts */
    omnic__blob_cache *enc_cache; /* projected media rows by item key; NULL: off */
    omnic__media_memo *memo;      /* prepared items by source key (media workers' side); NULL: off */
    omnic__prefix_cache *prefix;  /* KV blocks of earlier prompts; NULL: off */
    /* The encode in progress, run in slices between decode steps (one at a time: the encoder
     * module is the model's): its slot (-1: none), module, output indices, start time. */
    int enc_slot;
    omnic__module *enc_mod;
    int enc_proj, enc_feat;
    double enc_t0;
    double step_ema;  /* seconds of a decode step alone, a moving average (the budgets' base) */
    int64_t mix_rows; /* prompt rows of the next mixed step (mix_adapt); 0: not yet sized */
    int mix_run;      /* mixed steps since the last decode step alone */
    int q_len, max_queue, busy;
    bool stopping, draining;
    uint64_t next_id;
    omnic__metrics metrics;
};

static int64_t cached_tokens(const omnic__engine *e, const slot *s);
static void prefix_metrics(omnic__engine *e);

const char *omnic__finish_name(omnic__finish f)
{
    static const char *const n[OMNIC_FINISH_COUNT] = {"none",      "stop",    "length",
                                                      "cancelled", "timeout", "error"};
    return (unsigned)f < OMNIC_FINISH_COUNT ? n[f] : "?";
}

static void request_free(request *r)
{
    if (!r) return;
    for (size_t i = 0; r->stops && i < r->n_stops; i++)
        omnic_free(r->stops[i]);
    omnic_free(r->stops);
    omnic_free(r->prompt);
    for (size_t i = 0; r->media && i < r->n_media; i++)
        omnic__media_item_deinit(&r->media[i]);
    omnic_free(r->media);
    omnic_free(r->projected);
    omnic__prepared_prefill_deinit(&r->pp);
    omnic_free(r);
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
                           .cached_tokens = cached_tokens(e, s),
                           .completion_tokens = s->generated,
                           .error = error};
    omnic__metrics_finish(&e->metrics, why, (int64_t)r->n_prompt, s->generated);
    omnic__metrics_observe(&e->metrics, OMNIC_H_E2E, omnic__now() - r->t_submit);
    omnic__detok_stream_deinit(&s->detok);
    omnic__stop_deinit(&s->stop);
    omnic__kv_pool_clear_slot(&e->model->kv, si);
    if (e->enc_slot == si) e->enc_slot = -1; /* its unfinished encode is abandoned */
    s->phase = SLOT_FREE;
    s->generated = s->prefilled = 0;
    omnic_free(s->seq);
    s->seq = NULL;
    s->n_seq = 0;
    s->pf_tokens = NULL;
    s->pf_len = 0;
    s->replay = false;
    s->rope_delta = 0;
    s->primed = false;
    s->n_pkeys = s->restored = 0;
    pthread_mutex_lock(&e->mu); /* omnic__engine_cancel reads s->req under mu */
    s->req = NULL;
    e->busy--;
    omnic__metrics_gauges(&e->metrics, e->busy, e->q_len); /* current even when the scheduler goes idle */
    pthread_cond_broadcast(&e->idle);
    pthread_mutex_unlock(&e->mu);
    r->cb(r->cb_ctx, &ev); /* last: a client that saw DONE sees it counted and its slot free */
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
    double now = omnic__now();
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

/* Row i's rope coordinates in a positions buffer: v, or (M-RoPE) v on all three axes. */
static void set_pos(const omnic__model *m, int32_t *buf, int64_t i, int64_t v)
{
    if (!m->dec.cfg.mrope) {
        buf[i] = (int32_t)v;
        return;
    }
    buf[3 * i] = buf[3 * i + 1] = buf[3 * i + 2] = (int32_t)v;
}

/* Rows of the next prefill call of a prompt with bidirectional spans, from row `at`: n (the
 * chunk) shrinks so no span is split, ending before the span it would cut; a span that starts
 * at `at` and is longer than n runs whole (the call may then hold up to `cap` rows). */
static omnic_status span_chunk(const omnic__prepared_prefill *pp, int64_t at, int64_t cap, int64_t *n,
                               omnic_err *err)
{
    const int64_t end = at + *n;
    for (int64_t i = 0; i < pp->n_spans; i++) {
        const omnic__row_span *sp = &pp->spans[i];
        if (sp->end <= at || sp->begin >= end) continue;
        if (sp->end <= end) continue; /* inside the call */
        if (sp->begin > at) {
            *n = sp->begin - at; /* stop before it; it starts the next call */
        } else {
            if (sp->end - at > cap)
                return OMNIC_FAIL(
                    err, OMNIC_E_INVALID,
                    "an attention span of %lld rows (rows %lld..%lld) exceeds the %lld rows one "
                    "prefill call takes",
                    (long long)(sp->end - sp->begin), (long long)sp->begin, (long long)sp->end - 1,
                    (long long)cap);
            *n = sp->end - at; /* the span whole, in one larger call */
        }
        break;
    }
    return OMNIC_OK;
}

/* attn_span rows [at, at + n) of pp: each row's span [b, e) (slot rows; prompt row r is slot
 * row r), (0, 0) outside every span. */
static void fill_spans(const omnic__prepared_prefill *pp, int64_t at, int64_t n, int32_t *out)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t r = at + i;
        while (k < pp->n_spans && pp->spans[k].end <= r)
            k++;
        const bool in = k < pp->n_spans && pp->spans[k].begin <= r;
        out[2 * i] = in ? (int32_t)pp->spans[k].begin : 0;
        out[2 * i + 1] = in ? (int32_t)pp->spans[k].end : 0;
    }
}

/* ---- prefix cache ---- */

/* Before a slot's first prefill row: its prompt's block keys, and the longest run of cached
 * blocks copied into its KV rows (never the last row: its logits are sampled). Not for replays
 * (LongRoPE recompute) or stage dumps (their taps want the whole prompt through the module). */
static void prefix_restore(omnic__engine *e, int si)
{
    slot *s = &e->slots[si];
    if (s->primed || !e->prefix || s->replay || s->prefilled || s->req->on_prefill) return;
    s->primed = true;
    const omnic__model *m = e->model;
    const omnic__prepared_prefill *pp = s->req->pp.n_rows ? &s->req->pp : NULL;
    /* what else decides the rows' K/V: the LongRoPE table and the adapter */
    const int32_t rope_long = m->dec.rope_switch ? omnic__rope_long(&m->dec.cfg, s->pf_len) : 0;
    const int32_t variant = rope_long + 2 * (s->req->adapter + 1);
    s->n_pkeys =
        omnic__prefix_cache_keys(e->prefix, pp ? NULL : s->pf_tokens, pp, s->pf_len, variant, s->pkeys);
    const int64_t B = omnic__prefix_cache_block(e->prefix), usable = (s->pf_len - 1) / B;
    s->restored =
        omnic__prefix_cache_restore(e->prefix, (const uint8_t(*)[32])s->pkeys, usable, &e->model->kv, si);
    s->prefilled = s->restored;
    prefix_metrics(e);
}

static void prefix_metrics(omnic__engine *e)
{
    omnic__prefix_stats ps;
    omnic__prefix_cache_stats_get(e->prefix, &ps);
    omnic__metrics_prefix_cache(&e->metrics, &ps);
}

/* After a prompt is in the KV cache: its whole blocks not restored go into the prefix cache. */
static void prefix_store(omnic__engine *e, int si)
{
    slot *s = &e->slots[si];
    if (!e->prefix || !s->primed || s->replay) return;
    const int64_t B = omnic__prefix_cache_block(e->prefix);
    omnic__prefix_cache_store(e->prefix, (const uint8_t(*)[32])s->pkeys, s->restored / B, s->n_pkeys,
                              &e->model->kv, si);
    prefix_metrics(e);
}

/* The logical prompt tokens whose rows were all restored: token prompts, the rows; media
 * prompts, text ids and placeholders (an item's rows) counted as they fit in the rows. */
static int64_t cached_tokens(const omnic__engine *e, const slot *s)
{
    const request *r = s->req;
    if (!s->restored || !r->pp.n_rows) return s->restored;
    const int32_t ph = r->n_prompt ? omnic__media_placeholder(e->model, OMNIC_MODALITY_IMAGE) : -1;
    int64_t rows = 0, n = 0, item = 0;
    for (size_t i = 0; i < r->n_prompt; i++) {
        int64_t w = r->prompt[i] == ph && item < OMNIC_MAX_REQUEST_IMAGES ? r->media_rows[item++] : 1;
        if (rows + w > s->restored) break;
        rows += w, n++;
    }
    return n;
}

/* The prepared rows slot s prefills (a media prompt), or NULL (token ids). */
static const omnic__prepared_prefill *prepared_of(const slot *s)
{
    return s->req->pp.n_rows && !s->replay ? &s->req->pp : NULL;
}

/* Whether slot s's prompt rows may ride in decode calls. With mixed steps the rows of every
 * prompt are computed with the batch-invariant kernels (inside decode calls while other streams
 * decode, prefill_inv or the invariant embed_prefill in chunks otherwise), so its tokens never
 * depend on the batch or on when it arrived; a media prompt needs text.embeddings_decode (not
 * planned for bidirectional spans: those prefill in chunks of their own). */
static bool mixed_prompt(const omnic__engine *e, const slot *s)
{
    return e->model->step_tokens > 0 && (!prepared_of(s) || e->model->embed_decode.finalized);
}

/* Sizes the next mixed step from the last one (k prompt rows in dt seconds) so that steps stay
 * near OMNIC_STEP_RISE times a decode step alone (d): one row more while under that, scaled
 * down in proportion (to the nearest row, at least one fewer when 10% over) when over it. A row's cost is not
 * linear in the rows (a few ride free in a memory-bound decode step, then each costs its compute), so the
 * size is probed, not solved for; the steps that probe one row too many overshoot by that row's cost. */
static void mix_adapt(omnic__engine *e, int64_t k, double dt)
{
    const double d = e->step_ema, target = OMNIC_STEP_RISE * d;
    if (d <= 0 || k <= 0) return;
    int64_t next = k + 1;
    if (dt > target) { /* in proportion, to the nearest row; at least one fewer when well over */
        next = (int64_t)((double)k * target / dt + 0.5);
        if (next >= k) next = dt > 1.1 * target ? k - 1 : k;
    }
    if (next < 1) next = 1;
    if (next > e->model->step_tokens) next = e->model->step_tokens;
    e->mix_rows = next;
    omnic__metrics_mixed_step(&e->metrics, target, next);
}

/* One chunk of slot si's pending rows through text.token_prefill (prefill_inv for a mixed
 * prompt), or text.embeddings_prefill for a prepared (image) prompt; samples the first
 * token after the last chunk. */
static omnic_status prefill_chunk(omnic__engine *e, int si, omnic_err *err)
{
    slot *s = &e->slots[si];
    omnic__model *m = e->model;
    const omnic__prepared_prefill *pp = prepared_of(s);
    omnic__module *mod = pp ? &m->embed_prefill : mixed_prompt(e, s) ? &m->prefill_inv : &m->prefill;
    int64_t left = s->pf_len - s->prefilled, n = left < m->chunk ? left : m->chunk;
    if (pp && pp->n_spans) OMNIC_TRY(span_chunk(pp, s->prefilled, m->embed_rows, &n, err));
    const bool mrope = m->dec.cfg.mrope;
    if (pp && (pp->pos_mode == OMNIC_POS_MROPE) != mrope)
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "the prepared prompt's position mode (%s) is not the model's (%s)",
                          pp->pos_mode == OMNIC_POS_MROPE ? "mrope" : "1d", mrope ? "mrope" : "1d");
    for (int64_t i = 0, r = s->prefilled; i < n; i++, r++) {
        if (!pp)
            set_pos(m, e->pre_pos, i, r);
        else if (!mrope)
            e->pre_pos[i] = pp->positions[r];
        else
            for (int a = 0; a < 3; a++)
                e->pre_pos[3 * i + a] = pp->positions[a * pp->n_rows + r]; /* [3, T] -> [n, 3] */
    }
    omnic__tensor rows, pos, sel;
    int64_t d[1] = {n}, d2[2] = {n, m->dec.cfg.hidden}, d3[2] = {n, 3};
    omnic__tensor_init(&pos, OMNIC_DTYPE_I32, mrope ? 2 : 1, mrope ? d3 : d, err);
    omnic__tensor_init(&sel, OMNIC_DTYPE_I32, 1, d, err);
    if (pp) {
        omnic__tensor_init(&rows, OMNIC_DTYPE_F32, 2, d2, err);
        rows.data = pp->embeds + s->prefilled * pp->hidden;
    } else {
        omnic__tensor_init(&rows, OMNIC_DTYPE_I32, 1, d, err);
        rows.data = (void *)(uintptr_t)(s->pf_tokens + s->prefilled);
    }
    pos.data = e->pre_pos;
    sel.data = e->rope_long; /* LongRoPE: every prompt row is of a forward of the whole prompt (HF) */
    for (int64_t i = 0; m->dec.rope_switch && i < n; i++)
        e->rope_long[i] = omnic__rope_long(&m->dec.cfg, s->pf_len);
    const omnic__tensor *in[7] = {&rows, &pos};
    int n_in = 2;
    omnic__tensor ple; /* Gemma 3n: the rows' ids for the per-layer embeddings */
    if (pp && m->dec.altup) {
        if (!pp->row_ids)
            return OMNIC_FAIL(err, OMNIC_E_INVALID,
                              "the prepared prompt has no row ids for the per-layer embeddings");
        omnic__tensor_init(&ple, OMNIC_DTYPE_I32, 1, d, err);
        ple.data = pp->row_ids + s->prefilled;
        in[n_in++] = &ple;
    }
    omnic__tensor span;
    if (pp && m->embed_mask == OMNIC_MASK_SPANS) { /* attn_span [n, 2]: each row's span in slot rows */
        int64_t d4[2] = {n, 2};
        omnic__tensor_init(&span, OMNIC_DTYPE_I32, 2, d4, err);
        span.data = e->pre_span;
        fill_spans(pp, s->prefilled, n, e->pre_span);
        in[n_in++] = &span;
    }
    omnic__tensor side;
    if (pp && pp->n_side) { /* DeepStack: this chunk's rows of the side input */
        int64_t d5[2] = {n, pp->n_side * pp->hidden};
        omnic__tensor_init(&side, OMNIC_DTYPE_F32, 2, d5, err);
        side.data = pp->side + s->prefilled * pp->n_side * pp->hidden;
        in[n_in++] = &side;
    }
    if (m->dec.rope_switch) in[n_in++] = &sel;
    omnic__tensor adt; /* adapters: every row of the slot's prompt with its adapter */
    if (m->dec.lora) {
        int64_t da[2] = {n, 1};
        omnic__tensor_init(&adt, OMNIC_DTYPE_I32, 2, da, err);
        for (int64_t i = 0; i < n; i++)
            e->adapter[i] = s->req->adapter;
        adt.data = e->adapter;
        in[n_in++] = &adt;
    }
    omnic__call c = {.n = n,
                     .inputs = in,
                     .n_inputs = n_in,
                     .kv = &m->kv,
                     .slot = si,
                     .kv_start = s->prefilled,
                     .cancel = &s->req->cancel};
    if (pp && pp->bias)
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "%s: this model's mask mode takes no attention bias",
                          mod->name);
    OMNIC_TRY(omnic__module_call(mod, &c, err));
    s->prefilled += n;
    omnic__metrics_steps(&e->metrics, 1, 0, 0, 0);
    if (s->prefilled == s->pf_len) {
        prefix_store(e, si);
        if (s->req->on_prefill && !s->replay) {
            omnic__prefill_info info = {.model = m, .slot = si, .module = mod, .prepared = pp};
            s->req->on_prefill(s->req->cb_ctx, &info);
        }
        const int li = pp                       ? m->embed_prefill_logits
                       : mod == &m->prefill_inv ? m->prefill_inv_logits
                                                : m->prefill_logits;
        on_token(e, si, omnic__sampler_sample(&s->sampler, omnic__module_output(mod, li)->data));
    }
    return OMNIC_OK;
}

/* Works on the next image of slot si: its rows from the encoder cache, or the encoder run for
 * about budget seconds (0: to the end; a started encode continues in the next steps, holding
 * the encoder); once an image's rows are in, the next image waits for the next step. After the
 * last one, merges them into the request's PreparedPrefill and moves the slot to PREFILL. */
static omnic_status encode_next(omnic__engine *e, int si, double budget, omnic_err *err)
{
    slot *s = &e->slots[si];
    request *r = s->req;
    omnic__model *m = e->model;
    const int64_t H = m->dec.cfg.hidden, k = r->encoded;
    const omnic__tensor *feat;
    int64_t R;
    const omnic__media_item *it = &r->media[k];
    OMNIC_TRY(omnic__media_item_rows(m, it, &R, err));
    const omnic__model_media *md = &m->media[it->modality];
    const int64_t RT = R * (1 + md->n_side); /* the item's rows, then its side outputs' (DeepStack) */
    float *dst = r->projected + r->proj_rows * H;
    /* the same input encoded before: its rows (a stage dump wants the encoder's own outputs) */
    bool cached = e->enc_slot != si && e->enc_cache && it->has_key && !r->on_encode &&
                  omnic__blob_cache_get(e->enc_cache, it->key, (size_t)(RT * H) * sizeof *dst, dst);
    if (!cached) {
        if (e->enc_slot != si) { /* start it: inputs bound into the encoder module */
            OMNIC_TRY(omnic__media_encode_start(m, it, &e->enc_mod, &e->enc_proj, &e->enc_feat, err));
            e->enc_slot = si;
            e->enc_t0 = omnic__now();
        }
        bool done = false;
        omnic_status rs = omnic__module_run(e->enc_mod, budget, &r->cancel, &done, err);
        omnic__metrics_encode_slice(&e->metrics, budget);
        if (rs != OMNIC_OK || !done) {
            if (rs != OMNIC_OK) e->enc_slot = -1;
            return rs; /* the rest in the next steps */
        }
        e->enc_slot = -1;
        feat = e->enc_feat >= 0 ? omnic__module_output(e->enc_mod, e->enc_feat) : NULL;
        omnic__metrics_observe_media(&e->metrics, OMNIC_MS_ENCODE, (int)it->modality,
                                     omnic__now() - e->enc_t0);
        OMNIC_TRY(omnic__media_encode_rows(m, it, e->enc_mod, e->enc_proj, dst, err));
        if (e->enc_cache && it->has_key)
            omnic__blob_cache_put(e->enc_cache, it->key, (size_t)(RT * H) * sizeof *dst, dst);
        if (r->on_encode) { /* the item's rows as merged: [R, H] views of dst */
            omnic__tensor rows[1 + OMNIC_MAX_SIDE];
            const omnic__tensor *side[OMNIC_MAX_SIDE];
            const char *names[OMNIC_MAX_SIDE];
            for (int j = 0; j <= md->n_side; j++) {
                rows[j] =
                    (omnic__tensor){.dtype = OMNIC_DTYPE_F32, .ndim = 2, .data = dst + (size_t)(j * R * H)};
                for (int d = 0; d < OMNIC_MAX_DIMS; d++)
                    rows[j].dims[d] = 1;
                rows[j].dims[0] = R, rows[j].dims[1] = H;
                if (j)
                    side[j - 1] = &rows[j],
                             names[j - 1] = omnic__module_output_name(e->enc_mod, md->side_out[j - 1]);
            }
            r->on_encode(r->cb_ctx, k, feat, &rows[0], md->n_side, side, names);
        }
    }
    if (e->enc_cache) {
        omnic__blob_cache_stats cs;
        omnic__blob_cache_stats_get(e->enc_cache, &cs);
        omnic__metrics_encoder_cache(&e->metrics, cs.hits, cs.misses, cs.evictions, cs.bytes, cs.entries);
    }
    r->proj_rows += RT;
    r->media_rows[k] = R;
    r->encoded++;
    omnic__metrics_steps(&e->metrics, 1, 0, 0, 0);
    if (r->encoded < (int64_t)r->n_media) return OMNIC_OK;
    const omnic__media_item **items = omnic_alloc_array(r->n_media, sizeof *items);
    if (!items) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory merging %zu media items", r->n_media);
    for (size_t i = 0; i < r->n_media; i++)
        items[i] = &r->media[i];
    double t0 = omnic__now();
    omnic_status st = omnic__media_merge(m, r->prompt, (int64_t)r->n_prompt, items, (int64_t)r->n_media,
                                         r->projected, &r->pp, err);
    omnic__metrics_observe_media(&e->metrics, OMNIC_MS_MERGE, (int)r->media[0].modality, omnic__now() - t0);
    omnic_free(items);
    OMNIC_TRY(st);
    if ((unsigned)r->pp.adapter > OMNIC_ADAPTER_VISION ||
        (r->pp.adapter != OMNIC_ADAPTER_NONE && m->adapter_of[r->pp.adapter] < 0))
        return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                          "the prompt needs the %s adapter, which this model has not loaded",
                          r->pp.adapter == OMNIC_ADAPTER_SPEECH ? "speech" : "vision");
    r->adapter = r->pp.adapter == OMNIC_ADAPTER_NONE ? -1 : m->adapter_of[r->pp.adapter];
    if (r->pp.n_side != (int)m->dec.cfg.n_deepstack)
        return OMNIC_FAIL(err, OMNIC_E_INTERNAL, "the prompt has %d side input blocks, the model takes %lld",
                          r->pp.n_side, (long long)m->dec.cfg.n_deepstack);
    for (size_t i = 0; i < r->n_media; i++)
        omnic__media_item_deinit(&r->media[i]);
    omnic_free(r->media), r->media = NULL;
    r->n_media = 0;
    omnic_free(r->projected), r->projected = NULL;
    s->pf_len = r->pp.n_rows;
    s->rope_delta = r->pp.rope_delta;
    s->phase = SLOT_PREFILL;
    return OMNIC_OK;
}

/* Rows of every generating slot into dec_tok / dec_pos / dec_rows; returns how many. */
static int gather_decode_rows(omnic__engine *e)
{
    int n = 0;
    const omnic__text_config *cfg = &e->model->dec.cfg;
    for (int si = 0; si < e->n_slots; si++) {
        slot *s = &e->slots[si];
        if (s->phase != SLOT_DECODE) continue;
        if (s->seq && e->model->kv.len[si] == cfg->rope_original_max_pos) {
            /* LongRoPE crossing: the sequence becomes longer than original_max_position_embeddings;
             * recompute every row with the long factors, as HF's generate does */
            s->seq[s->n_seq++] = s->next_token;
            omnic__kv_pool_clear_slot(&e->model->kv, si);
            s->pf_tokens = s->seq;
            s->pf_len = s->n_seq;
            s->prefilled = 0;
            s->replay = true;
            s->phase = SLOT_PREFILL;
            continue;
        }
        e->dec_rows[n] = si;
        e->dec_tok[n] = e->slots[si].next_token;
        set_pos(e->model, e->dec_pos, n, e->model->kv.len[si] + s->rope_delta);
        n++;
    }
    return n;
}

/* One text.decode call over n_dec decode rows, then (mixed steps) the prompt rows of slot
 * pf (pf_rows of them, -1 / 0: none). Decode rows sample; the prefill slot samples its
 * first token when its prompt is complete. */
static void decode_run(omnic__engine *e, int n_dec, int pf, int64_t pf_rows);

/* decode_run, its time observed in OMNIC_H_STEP. */
static void decode_call(omnic__engine *e, int n_dec, int pf, int64_t pf_rows)
{
    if (!n_dec && pf < 0) return;
    double t0 = omnic__now();
    decode_run(e, n_dec, pf, pf_rows);
    double dt = omnic__now() - t0;
    omnic__metrics_observe(&e->metrics, OMNIC_H_STEP, dt);
    if (pf < 0) e->step_ema = e->step_ema > 0 ? 0.8 * e->step_ema + 0.2 * dt : dt;
}

/* The logits of a mixed step's rows that sample, through text.head: body's "hidden" rows
 * [0, n_dec) (the decode rows) and, when the prompt completes (done), its last row n - 1, moved
 * to row n_dec. *logits: [n_dec + done, V]. */
static omnic_status head_rows(omnic__engine *e, omnic__module *body, int n_dec, int64_t n, bool done,
                              const float **logits, omnic_err *err)
{
    omnic__model *m = e->model;
    const int64_t H = m->dec.cfg.hidden, L = n_dec + (done ? 1 : 0);
    float *hid = omnic__module_output(body, 0)->data; /* [n, H], ours until the next call */
    if (done && n - 1 != n_dec) memcpy(hid + (int64_t)n_dec * H, hid + (n - 1) * H, (size_t)H * sizeof *hid);
    omnic__tensor in;
    int64_t d[2] = {L, H};
    OMNIC_TRY(omnic__tensor_init(&in, OMNIC_DTYPE_F32, 2, d, err));
    in.data = hid;
    const omnic__tensor *ins[1] = {&in};
    omnic__call c = {.n = L, .inputs = ins, .n_inputs = 1};
    OMNIC_TRY(omnic__module_call(&m->head, &c, err));
    *logits = omnic__module_output(&m->head, 0)->data;
    return OMNIC_OK;
}

static void decode_run(omnic__engine *e, int n_dec, int pf, int64_t pf_rows)
{
    omnic__model *m = e->model;
    int64_t n = n_dec + (pf >= 0 ? pf_rows : 0);
    if (!n) return;
    const bool mrope = m->dec.cfg.mrope;
    const omnic__prepared_prefill *pp = pf >= 0 ? prepared_of(&e->slots[pf]) : NULL;
    const int64_t H = m->dec.cfg.hidden;
    omnic_err err;
    if (pf >= 0) {
        slot *s = &e->slots[pf];
        for (int64_t i = 0, r = s->prefilled; i < pf_rows; i++, r++) {
            e->dec_rows[n_dec + i] = pf;
            if (!pp) {
                e->dec_tok[n_dec + i] = s->pf_tokens[r];
                set_pos(m, e->dec_pos, n_dec + i, r);
            } else if (!mrope) {
                e->dec_pos[n_dec + i] = pp->positions[r];
            } else {
                for (int a = 0; a < 3; a++)
                    e->dec_pos[3 * (n_dec + i) + a] =
                        pp->positions[a * pp->n_rows + r]; /* [3, T] -> [n, 3] */
            }
        }
    }
    /* decode rows alone: text.decode; with a prompt's rows: text.decode_body, or for a media
     * prompt text.embeddings_decode (every row as embeddings, the decode rows' looked up exactly
     * as text.decode does), then text.head on the rows that sample */
    omnic__module *mod = pf < 0 ? &m->decode : pp ? &m->embed_decode : &m->decode_body;
    if (pp) {
        if (omnic__text_decoder_embed_rows(&m->dec, m->backend, e->dec_tok, n_dec, e->dec_emb, &err) !=
            OMNIC_OK) {
            for (int b = 0; b < n_dec; b++)
                finish(e, e->dec_rows[b], OMNIC_FINISH_ERROR, err.msg);
            finish(e, pf, OMNIC_FINISH_ERROR, err.msg);
            return;
        }
        memcpy(e->dec_emb + (int64_t)n_dec * H, pp->embeds + e->slots[pf].prefilled * pp->hidden,
               (size_t)(pf_rows * H) * sizeof *e->dec_emb);
    }
    omnic__tensor tok, pos;
    int64_t d[1] = {n}, d2[2] = {n, H}, d3[2] = {n, 3};
    if (pp) {
        omnic__tensor_init(&tok, OMNIC_DTYPE_F32, 2, d2, &err);
        tok.data = e->dec_emb;
    } else {
        omnic__tensor_init(&tok, OMNIC_DTYPE_I32, 1, d, &err);
        tok.data = e->dec_tok;
    }
    omnic__tensor_init(&pos, OMNIC_DTYPE_I32, mrope ? 2 : 1, mrope ? d3 : d, &err);
    pos.data = e->dec_pos;
    omnic__tensor sel; /* LongRoPE: a decode row's forward ends at its position */
    omnic__tensor_init(&sel, OMNIC_DTYPE_I32, 1, d, &err);
    sel.data = e->rope_long;
    for (int64_t b = 0; m->dec.rope_switch && b < n; b++)
        e->rope_long[b] =
            omnic__rope_long(&m->dec.cfg, b < n_dec ? m->kv.len[e->dec_rows[b]] + 1 : e->slots[pf].pf_len);
    omnic__tensor adt; /* adapters: each row with its slot's */
    int64_t da[2] = {n, 1};
    omnic__tensor_init(&adt, OMNIC_DTYPE_I32, 2, da, &err);
    adt.data = e->adapter;
    for (int64_t b = 0; m->dec.lora && b < n; b++)
        e->adapter[b] = e->slots[e->dec_rows[b]].req->adapter;
    const omnic__tensor *in[4] = {&tok, &pos};
    int n_in = 2;
    if (m->dec.rope_switch) in[n_in++] = &sel;
    if (m->dec.lora) in[n_in++] = &adt;
    omnic__call c = {.n = n, .inputs = in, .n_inputs = n_in, .kv = &m->kv, .row_slots = e->dec_rows};
    if (omnic__module_call(mod, &c, &err) != OMNIC_OK) {
        for (int b = 0; b < n_dec; b++)
            finish(e, e->dec_rows[b], OMNIC_FINISH_ERROR, err.msg);
        if (pf >= 0) finish(e, pf, OMNIC_FINISH_ERROR, err.msg);
        return;
    }
    const bool done = pf >= 0 && e->slots[pf].prefilled + pf_rows == e->slots[pf].pf_len;
    const float *logits = omnic__module_output(mod, 0)->data;
    if (pf >= 0 && head_rows(e, mod, n_dec, n, done, &logits, &err) != OMNIC_OK) {
        for (int b = 0; b < n_dec; b++)
            finish(e, e->dec_rows[b], OMNIC_FINISH_ERROR, err.msg);
        finish(e, pf, OMNIC_FINISH_ERROR, err.msg);
        return;
    }
    omnic__metrics_steps(&e->metrics, 0, n_dec > 0, (uint64_t)n_dec, pf >= 0 ? (uint64_t)pf_rows : 0);
    const int64_t V = m->dec.cfg.vocab;
    for (int b = 0; b < n_dec; b++) {
        slot *ds = &e->slots[e->dec_rows[b]];
        if (ds->seq) ds->seq[ds->n_seq++] = e->dec_tok[b];
        on_token(e, e->dec_rows[b], omnic__sampler_sample(&ds->sampler, logits + (int64_t)b * V));
    }
    if (pf >= 0) {
        slot *s = &e->slots[pf];
        s->prefilled += pf_rows;
        if (done) {
            prefix_store(e, pf);
            on_token(e, pf, omnic__sampler_sample(&s->sampler, logits + (int64_t)n_dec * V));
        }
    }
}

/* One scheduler step's compute: the next prefilling slot (round robin) gets one chunk of
 * text.token_prefill, then one batched decode; or, with mixed steps (step_tokens > 0) while
 * other slots decode, its next prompt rows ride in the decode call itself (mix_adapt sizes
 * them), so the decoding streams wait for those rows only.
 * A request that dumps its prefill stages (on_prefill) always takes text.token_prefill, and
 * an image request's rows take text.embeddings_prefill (after its images are encoded, one
 * per step). */
static void step(omnic__engine *e)
{
    omnic__model *m = e->model;
    int pf = -1;
    for (int i = 0; i < e->n_slots; i++) {
        int si = (e->prefill_rr + i) % e->n_slots;
        if (e->slots[si].phase != SLOT_PREFILL && e->slots[si].phase != SLOT_ENCODE) continue;
        if (e->slots[si].phase == SLOT_ENCODE && e->enc_slot >= 0 && e->enc_slot != si)
            continue; /* the encoder is busy with another slot's image */
        pf = si;
        e->prefill_rr = (si + 1) % e->n_slots;
        break;
    }
    if (pf >= 0 && e->slots[pf].phase == SLOT_ENCODE) { /* this step's prefill work: an encoder slice */
        omnic_err err;
        bool decoding = false;
        for (int i = 0; i < e->n_slots; i++)
            decoding |= e->slots[i].phase == SLOT_DECODE;
        /* with streams decoding, a slice of OMNIC_SLICE_SHARE of their step; alone, all of it */
        double budget =
            !decoding ? 0 : OMNIC_SLICE_SHARE * (e->step_ema > 0 ? e->step_ema : OMNIC_SLICE_FIRST_S);
        omnic_status st = encode_next(e, pf, budget, &err);
        if (st == OMNIC_E_CANCELLED)
            finish(e, pf, OMNIC_FINISH_CANCELLED, NULL);
        else if (st != OMNIC_OK)
            finish(e, pf, OMNIC_FINISH_ERROR, err.msg);
        decode_call(e, gather_decode_rows(e), -1, 0);
        return;
    }
    if (pf >= 0) prefix_restore(e, pf);
    int n_dec = gather_decode_rows(e);
    const bool mixed =
        pf >= 0 && n_dec > 0 && mixed_prompt(e, &e->slots[pf]) && !e->slots[pf].req->on_prefill;
    if (mixed && ++e->mix_run > OMNIC_STEP_PROBE) { /* a decode step alone now and then: d as it is now */
        e->mix_run = 0;
        decode_call(e, n_dec, -1, 0);
        return;
    }
    if (mixed) {
        int64_t left = e->slots[pf].pf_len - e->slots[pf].prefilled;
        int64_t room = m->step_tokens - n_dec > 1 ? m->step_tokens - n_dec : 1;
        int64_t k = e->mix_rows > 0 ? e->mix_rows : OMNIC_STEP_FIRST_ROWS;
        k = k < room ? k : room;
        k = k < left ? k : left;
        double t0 = omnic__now();
        decode_call(e, n_dec, pf, k);
        mix_adapt(e, k, omnic__now() - t0);
        return;
    }
    if (pf >= 0) {
        omnic_err err;
        double t0 = omnic__now();
        omnic_status st = prefill_chunk(e, pf, &err);
        omnic__metrics_observe(&e->metrics, OMNIC_H_PREFILL, omnic__now() - t0);
        if (st == OMNIC_E_CANCELLED)
            finish(e, pf, OMNIC_FINISH_CANCELLED, NULL);
        else if (st != OMNIC_OK)
            finish(e, pf, OMNIC_FINISH_ERROR, err.msg);
        n_dec = gather_decode_rows(e); /* the prompt may have completed: it decodes this step */
    }
    decode_call(e, n_dec, -1, 0);
}

/* Whether client has a request in the queue (mu held). */
static bool client_queued(const omnic__engine *e, uint64_t client)
{
    for (const request *r = e->q_head; r; r = r->next)
        if (r->client == client) return true;
    return false;
}

/* Slots held by client's requests (mu held). */
static int client_slots(const omnic__engine *e, uint64_t client)
{
    int n = 0;
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i].phase != SLOT_FREE && e->slots[i].req && e->slots[i].req->client == client) n++;
    return n;
}

/* The queued request to admit next (mu held): the first whose client holds the fewest slots
 * (FIFO among equals, so one client's requests keep their order), among the first
 * OMNIC_FAIR_SCAN queued. *prev: its predecessor in the queue (NULL: the head). */
static request *next_fair(omnic__engine *e, request **prev)
{
    request *best = NULL, *best_prev = NULL, *p = NULL;
    int best_n = 0, scanned = 0;
    for (request *r = e->q_head; r && scanned < OMNIC_FAIR_SCAN; p = r, r = r->next, scanned++) {
        int n = client_slots(e, r->client);
        if (!best || n < best_n) {
            best = r, best_prev = p, best_n = n;
            if (n == 0) break;
        }
    }
    *prev = best_prev;
    return best;
}

/* Moves queued requests into free slots (called with mu held). Returns how many. */
static int admit_locked(omnic__engine *e, int *admitted)
{
    int k = 0;
    for (int si = 0; si < e->n_slots && e->q_head; si++) {
        slot *s = &e->slots[si];
        if (s->phase != SLOT_FREE) continue;
        request *prev = NULL, *r = next_fair(e, &prev);
        if (prev)
            prev->next = r->next;
        else
            e->q_head = r->next;
        if (e->q_tail == r) e->q_tail = prev;
        e->q_len--;
        r->next = NULL;
        s->req = r;
        s->phase = SLOT_PREFILL;
        s->prefilled = s->generated = 0;
        s->pf_tokens = r->prompt;
        s->pf_len = (int64_t)r->n_prompt;
        s->replay = false;
        s->rope_delta = 0;
        s->primed = false;
        s->n_pkeys = s->restored = 0;
        if (r->n_media) s->phase = SLOT_ENCODE;
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
    omnic__metrics_observe(&e->metrics, OMNIC_H_QUEUE, omnic__now() - r->t_submit);
    omnic__sampler_reset(&s->sampler, &r->sp);
    omnic__sampler_add_prompt(&s->sampler, r->prompt, r->n_prompt);
    memset(&s->detok, 0, sizeof s->detok);
    memset(&s->stop, 0, sizeof s->stop);
    if (omnic__detok_stream_init(&s->detok, e->tok, r->skip_special, &err) != OMNIC_OK ||
        omnic__stop_init(&s->stop, (const char *const *)r->stops, r->n_stops, &err) != OMNIC_OK) {
        finish(e, si, OMNIC_FINISH_ERROR, err.msg);
        return;
    }
    const omnic__model *m = e->model;
    const int64_t orig = m->dec.cfg.rope_original_max_pos;
    if (m->dec.rope_switch && !r->pp.n_rows && !r->n_media && (int64_t)r->n_prompt <= orig &&
        (int64_t)r->n_prompt + r->max_tokens > orig) {
        /* the sequence may cross original_max_position_embeddings: keep it for the replay */
        s->seq = omnic_alloc_array((size_t)r->n_prompt + (size_t)r->max_tokens, sizeof *s->seq);
        if (!s->seq) {
            finish(e, si, OMNIC_FINISH_ERROR, "out of memory for the token history of a LongRoPE sequence");
            return;
        }
        memcpy(s->seq, r->prompt, r->n_prompt * sizeof *s->seq);
        s->n_seq = (int64_t)r->n_prompt;
    }
}

/* Queued requests that were cancelled or ran out of time finish without a slot. */
static void expire_queued(omnic__engine *e, double now)
{
    request *gone[2] = {NULL, NULL}; /* [0] cancelled, [1] timed out */
    pthread_mutex_lock(&e->mu);
    for (request **p = &e->q_head, *prev = NULL; *p;) {
        request *r = *p;
        bool timeout = r->timeout_s > 0 && now - r->t_start > r->timeout_s;
        if (!timeout && !atomic_load(&r->cancel)) {
            prev = r;
            p = &r->next;
            continue;
        }
        *p = r->next;
        if (e->q_tail == r) e->q_tail = prev;
        e->q_len--;
        r->next = gone[timeout];
        gone[timeout] = r;
    }
    if (gone[0] || gone[1]) {
        omnic__metrics_gauges(&e->metrics, e->busy, e->q_len);
        pthread_cond_broadcast(&e->idle);
    }
    pthread_mutex_unlock(&e->mu);
    for (int k = 0; k < 2; k++)
        for (request *r = gone[k], *next; r; r = next) {
            next = r->next;
            omnic__finish why = k ? OMNIC_FINISH_TIMEOUT : OMNIC_FINISH_CANCELLED;
            omnic__gen_event ev = {.kind = OMNIC_EV_DONE,
                                   .id = r->id,
                                   .token = -1,
                                   .finish = why,
                                   .prompt_tokens = (int64_t)r->n_prompt};
            omnic__metrics_finish(&e->metrics, why, (int64_t)r->n_prompt, 0);
            r->cb(r->cb_ctx, &ev);
            request_free(r);
        }
}

static void *scheduler_main(void *arg)
{
    omnic__engine *e = arg;
    int *admitted = e->admitted;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->stopping && e->busy == 0 && !e->q_head)
            pthread_cond_wait(&e->wake, &e->mu);
        bool stopping = e->stopping;
        int k = admit_locked(e, admitted);
        omnic__metrics_gauges(&e->metrics, e->busy, e->q_len);
        pthread_mutex_unlock(&e->mu);
        for (int i = 0; i < k; i++)
            start_slot(e, admitted[i]);
        /* cancellations and timeouts first: they free slots this very step */
        double now = omnic__now();
        if (!stopping) expire_queued(e, now);
        for (int si = 0; si < e->n_slots; si++) {
            slot *s = &e->slots[si];
            if (s->phase == SLOT_FREE) continue;
            if (stopping || atomic_load(&s->req->cancel))
                finish(e, si, OMNIC_FINISH_CANCELLED, NULL);
            else if (s->req->timeout_s > 0 && now - s->req->t_start > s->req->timeout_s)
                finish(e, si, OMNIC_FINISH_TIMEOUT, NULL);
        }
        if (stopping) {
            pthread_mutex_lock(&e->mu);
            bool done = e->busy == 0 && !e->q_head;
            pthread_mutex_unlock(&e->mu);
            if (done) break;
            continue;
        }
        step(e);
    }
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
    omnic__cond_init(&e->wake);
    omnic__cond_init(&e->idle);
    e->max_queue = opts && opts->max_queue > 0 ? opts->max_queue : 64;
    e->next_id = 1;
    omnic__model_opts mo = opts ? opts->model : (omnic__model_opts){0};
    if ((s = omnic__model_open(dir, &mo, &e->model, err)) != OMNIC_OK) goto fail;
    if ((s = omnic__tokenizer_load(dir, &e->tok, err)) != OMNIC_OK) goto fail;
    if ((int64_t)omnic__tokenizer_vocab_size(e->tok) > e->model->dec.cfg.vocab) {
        s = OMNIC_FAIL(err, OMNIC_E_INVALID,
                       "tokenizer has %zu tokens, more than the model's vocab_size %lld",
                       omnic__tokenizer_vocab_size(e->tok), (long long)e->model->dec.cfg.vocab);
        goto fail;
    }
    const omnic__checkpoint *ck = e->model->ckpt;
    if ((s = omnic__gen_eos_ids(ck->generation_config, ck->config,
                                omnic__tokenizer_get_specials(e->tok)->eos_id, e->model->dec.cfg.vocab,
                                &e->eos, &e->n_eos, err)) != OMNIC_OK)
        goto fail;
    if (opts && opts->generation_config == OMNIC_GEN_CONFIG_IGNORE) {
        memset(&e->gen, 0, sizeof e->gen);
    } else {
        if ((s = omnic__gen_defaults_parse(ck->generation_config, &e->gen, err)) != OMNIC_OK) goto fail;
        char what[256];
        if (e->gen.set) /* vLLM warns the same way: the defaults change what a plain request does */
            OMNIC_LOG_W("generation_config.json sets request defaults: %s (a request's own values win; "
                        "--generation-config ignore turns them off)",
                        omnic__gen_defaults_describe(&e->gen, what, sizeof what));
    }
    e->n_slots = e->model->n_slots;
    e->enc_slot = -1;
    e->slots = omnic_alloc_array((size_t)e->n_slots, sizeof *e->slots);
    const size_t step_rows = (size_t)e->n_slots + (size_t)e->model->step_tokens;
    e->dec_tok = omnic_alloc_array(step_rows, sizeof *e->dec_tok);
    e->dec_pos = omnic_alloc_array(3 * step_rows, sizeof *e->dec_pos);
    e->dec_rows = omnic_alloc_array(step_rows, sizeof *e->dec_rows);
    const size_t pre_rows = (size_t)e->model->embed_rows; /* >= chunk */
    e->pre_pos = omnic_alloc_array(3 * pre_rows, sizeof *e->pre_pos);
    e->pre_span = omnic_alloc_array(2 * pre_rows, sizeof *e->pre_span);
    e->rope_long = omnic_alloc_array(pre_rows > step_rows ? pre_rows : step_rows, sizeof *e->rope_long);
    e->adapter = omnic_alloc_array(pre_rows > step_rows ? pre_rows : step_rows, sizeof *e->adapter);
    if (e->model->embed_decode.finalized)
        e->dec_emb = omnic_alloc_array(step_rows * (size_t)e->model->dec.cfg.hidden, sizeof *e->dec_emb);
    if (!e->slots || !e->dec_tok || !e->dec_pos || !e->dec_rows || !e->pre_pos || !e->pre_span ||
        !e->rope_long || !e->adapter || (e->model->embed_decode.finalized && !e->dec_emb)) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %d slots", e->n_slots);
        goto fail;
    }
    omnic__sampling_params dp = omnic__sampling_defaults();
    /* Samplers see the first tokenizer-vocab logits of each row: ids past the tokenizer
     * (padding rows of lm_head) could not be detokenized, so they are never sampled. */
    const int64_t sample_vocab = (int64_t)omnic__tokenizer_vocab_size(e->tok);
    for (int i = 0; i < e->n_slots; i++)
        if ((s = omnic__sampler_init(&e->slots[i].sampler, &dp, sample_vocab, err)) != OMNIC_OK) goto fail;
    {
        int64_t cb =
            opts && opts->encoder_cache_bytes ? opts->encoder_cache_bytes : OMNIC_ENCODER_CACHE_BYTES;
        if (cb > 0 && (s = omnic__blob_cache_create((size_t)cb, &e->enc_cache, err)) != OMNIC_OK) goto fail;
        /* the prepared items behind those rows: a quarter of the encoder cache's budget */
        if (cb > 0 && omnic__model_accepts(e->model, OMNIC_MODALITY_IMAGE) &&
            (s = omnic__media_memo_create((size_t)cb / 4, &e->memo, err)) != OMNIC_OK)
            goto fail;
        int64_t pb = opts && opts->prefix_cache_bytes ? opts->prefix_cache_bytes : OMNIC_PREFIX_CACHE_BYTES;
        int64_t block = opts && opts->prefix_block > 0 ? opts->prefix_block : OMNIC_PREFIX_BLOCK;
        if (block > e->model->capacity) block = e->model->capacity;
        if (pb > 0 && (s = omnic__prefix_cache_create((size_t)pb, block, &e->model->kv, e->model->identity,
                                                      &e->prefix, err)) != OMNIC_OK)
            goto fail;
        for (int i = 0; e->prefix && i < e->n_slots; i++)
            if (!(e->slots[i].pkeys = omnic_alloc_array((size_t)(e->model->capacity / block + 1), 32))) {
                s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for the prefix cache's keys");
                goto fail;
            }
    }
    /* the scheduler's scratch, here: an allocation failure on its thread would leave it unable
     * to admit anything */
    if (!(e->admitted = omnic_alloc_array((size_t)e->n_slots, sizeof *e->admitted))) {
        s = OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for the scheduler of %d slots", e->n_slots);
        goto fail;
    }
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
            omnic__gen_event ev = {.kind = OMNIC_EV_DONE,
                                   .id = r->id,
                                   .token = -1,
                                   .finish = OMNIC_FINISH_CANCELLED,
                                   .prompt_tokens = (int64_t)r->n_prompt};
            r->cb(r->cb_ctx, &ev);
            request_free(r);
        }
        pthread_join(e->thread, NULL);
        omnic__metrics_deinit(&e->metrics);
    }
    for (int i = 0; e->slots && i < e->n_slots; i++) {
        omnic__sampler_deinit(&e->slots[i].sampler);
        omnic_free(e->slots[i].pkeys);
    }
    omnic_free(e->slots);
    omnic_free(e->admitted);
    omnic__blob_cache_destroy(e->enc_cache);
    omnic__media_memo_destroy(e->memo);
    omnic__prefix_cache_destroy(e->prefix);
    omnic_free(e->dec_tok);
    omnic_free(e->dec_pos);
    omnic_free(e->dec_rows);
    omnic_free(e->pre_pos);
    omnic_free(e->adapter);
    omnic_free(e->pre_span);
    omnic_free(e->rope_long);
    omnic_free(e->dec_emb);
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
        s = OMNIC_FAIL(err, OMNIC_E_INVALID, "%zu stop strings is over the limit of %d", r->n_stops,
                       OMNIC_MAX_STOPS);
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
    /* media: one item per placeholder of its modality, each checked against the model's
     * encoder; the expanded length is admitted */
    const omnic__model *m = e->model;
    int64_t expanded = (int64_t)r->n_prompt, media_rows = 0;
    size_t given[OMNIC_MODALITY_COUNT] = {0};
    for (size_t i = 0; i < r->n_media; i++) {
        const omnic__media_item *it = r->media[i];
        if ((unsigned)it->modality >= OMNIC_MODALITY_COUNT || it->modality == OMNIC_MODALITY_TEXT) {
            s = OMNIC_FAIL(err, OMNIC_E_INVALID, "media item %zu has no media modality", i);
            goto reject;
        }
        given[it->modality] +=
            (size_t)omnic__media_item_parts(it); /* a panned-and-scanned image: its parts */
    }
    size_t all_parts = 0;
    for (int k = OMNIC_MODALITY_TEXT + 1; k < OMNIC_MODALITY_COUNT; k++)
        all_parts += given[k];
    if (all_parts > OMNIC_MAX_REQUEST_IMAGES) {
        s = OMNIC_FAIL(
            err, OMNIC_E_INVALID,
            "%zu media items make %zu encoder inputs (pan-and-scan crops included), over the limit "
            "of %d per request",
            r->n_media, all_parts, OMNIC_MAX_REQUEST_IMAGES);
        goto reject;
    }
    for (int k = OMNIC_MODALITY_TEXT + 1; k < OMNIC_MODALITY_COUNT; k++) {
        const int32_t pad = omnic__media_placeholder(m, (omnic__modality)k);
        int64_t placeholders = 0;
        for (size_t i = 0; pad >= 0 && i < r->n_prompt; i++)
            placeholders += r->prompt[i] == pad;
        const char *name = omnic__modality_name((omnic__modality)k);
        if (given[k] && !omnic__model_accepts(m, (omnic__modality)k)) {
            const char *refusal = omnic__model_refusal(m, (omnic__modality)k);
            s = OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED, "this model does not take %s input (%zu %s%s given)%s%s",
                           name, given[k], name, given[k] == 1 ? "" : "s", refusal ? ": " : "",
                           refusal ? refusal : "");
            goto reject;
        }
        if (placeholders != (int64_t)given[k]) {
            s = OMNIC_FAIL(err, OMNIC_E_INVALID, "the prompt has %lld %s placeholders but %zu %ss were given",
                           (long long)placeholders, name, given[k], name);
            goto reject;
        }
    }
    for (size_t i = 0; i < r->n_media; i++) {
        int64_t rows;
        if ((s = omnic__media_item_rows(m, r->media[i], &rows, err)) != OMNIC_OK) {
            omnic__err_prefix(err, "%s %zu", omnic__modality_name(r->media[i]->modality), i);
            goto reject;
        }
        media_rows +=
            omnic__media_item_parts(r->media[i]) * rows * (1 + m->media[r->media[i]->modality].n_side);
        expanded += omnic__media_item_parts(r->media[i]) * (rows - 1);
    }
    if (__builtin_add_overflow(expanded, r->max_tokens, &total) || total > cap) {
        why = OMNIC_REJECT_CAPACITY;
        s = OMNIC_FAIL(err, OMNIC_E_CAPACITY,
                       "prompt of %lld tokens + max_tokens %lld exceeds the context of %lld tokens",
                       (long long)expanded, (long long)r->max_tokens, (long long)cap);
        goto reject;
    }
    const int64_t orig = m->dec.cfg.rope_original_max_pos;
    if (r->n_media && m->dec.rope_switch && expanded <= orig && total > orig) {
        s = OMNIC_FAIL(
            err, OMNIC_E_UNSUPPORTED,
            "a media prompt of %lld rows + max_tokens %lld would cross original_max_position_embeddings "
            "%lld, whose cache recomputation is not supported for media prompts",
            (long long)expanded, (long long)r->max_tokens, (long long)orig);
        goto reject;
    }
    q = omnic_alloc_array(1, sizeof *q);
    if (!q || !(q->prompt = omnic_alloc_array(r->n_prompt, sizeof *q->prompt))) goto nomem;
    q->adapter = -1; /* token prompts: none; a media prompt's merge says which */
    if (r->n_media) {
        size_t parts = 0; /* one item per placeholder: panned-and-scanned images split into theirs */
        for (size_t i = 0; i < r->n_media; i++)
            parts += (size_t)omnic__media_item_parts(r->media[i]);
        if (!(q->media = omnic_alloc_array(parts, sizeof *q->media)) ||
            !(q->projected =
                  omnic_alloc_array((size_t)media_rows * (size_t)m->dec.cfg.hidden, sizeof *q->projected)))
            goto nomem;
        for (size_t i = 0; i < r->n_media; i++)
            for (int64_t j = 0; j < omnic__media_item_parts(r->media[i]); j++, q->n_media++) {
                omnic_err cerr;
                if (omnic__media_item_part(r->media[i], j, &q->media[q->n_media], &cerr) != OMNIC_OK)
                    goto nomem;
            }
    }
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
    q->on_encode = r->on_encode;
    q->t_submit = omnic__now();
    q->t_start = r->started_s > 0 && r->started_s <= q->t_submit ? r->started_s : q->t_submit;
    q->client = r->client;
    atomic_init(&q->cancel, false);
    pthread_mutex_lock(&e->mu);
    if (e->draining || e->stopping) {
        pthread_mutex_unlock(&e->mu);
        why = OMNIC_REJECT_DRAINING;
        s = OMNIC_FAIL(err, OMNIC_E_CANCELLED, "the server is shutting down");
        goto reject;
    }
    /* the last quarter of the queue is kept for clients with nothing queued yet, so one
     * client's flood cannot fill it for everyone (key 0, direct engine users: no reserve) */
    bool full = e->q_len >= e->max_queue;
    bool reserve =
        !full && q->client && e->q_len >= e->max_queue - e->max_queue / 4 && client_queued(e, q->client);
    if (full || reserve) {
        const int waiting = e->q_len; /* read under the lock: the scheduler changes it */
        pthread_mutex_unlock(&e->mu);
        why = OMNIC_REJECT_QUEUE_FULL;
        s = full ? OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "the queue is full (%d requests waiting)", e->max_queue)
                 : OMNIC_FAIL(
                       err, OMNIC_E_TOO_LARGE,
                       "the queue is nearly full (%d of %d requests waiting; the rest is kept for other "
                       "clients)",
                       waiting, e->max_queue);
        goto reject;
    }
    q->id = e->next_id++;
    if (e->q_tail)
        e->q_tail->next = q;
    else
        e->q_head = q;
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
    double end = omnic__now() + deadline_s;
    pthread_mutex_lock(&e->mu);
    e->draining = true;
    while ((e->busy > 0 || e->q_head) && omnic__now() < end) {
        struct timespec ts;
        omnic__deadline(&ts, 0.050);
        omnic__cond_wait_until(&e->idle, &e->mu, &ts);
    }
    for (request *r = e->q_head; r; r = r->next)
        atomic_store(&r->cancel, true);
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i].req) atomic_store(&e->slots[i].req->cancel, true);
    pthread_cond_signal(&e->wake);
    while (e->busy > 0 || e->q_head)
        pthread_cond_wait(&e->idle, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

const omnic__model *omnic__engine_model(const omnic__engine *e)
{
    return e->model;
}
const omnic__tokenizer *omnic__engine_tokenizer(const omnic__engine *e)
{
    return e->tok;
}
omnic__metrics *omnic__engine_metrics(omnic__engine *e)
{
    return &e->metrics;
}

omnic__media_memo *omnic__engine_media_memo(omnic__engine *e)
{
    return e->memo;
}

const omnic__gen_defaults *omnic__engine_gen_defaults(const omnic__engine *e)
{
    return &e->gen;
}

const int32_t *omnic__engine_eos(const omnic__engine *e, size_t *n)
{
    *n = e->n_eos;
    return e->eos;
}
