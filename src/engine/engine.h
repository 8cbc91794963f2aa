/* The engine: one scheduler thread owns N slots of a loaded model and runs requests
 * through them with continuous batching. Each step it admits queued requests into free
 * slots, runs at most one prefill chunk (so a long prompt delays other streams by one
 * chunk), then one batched decode over every generating slot — or, with mixed steps
 * (omnic__model_opts.step_tokens), one decode call that also carries rows of one token
 * prompt, as many as keep the step near OMNIC_STEP_RISE times a decode step alone, so a
 * prompt delays other streams by those rows only. Each slot samples,
 * detokenizes (streaming, UTF-8 safe), matches stop strings and reports text through
 * its request's callback. Slot-scoped state (KV rows, sampler, detokenizer, stop
 * matcher) is cleared on finish, cancel, error and reuse.
 *
 * An image's encoder runs in slices of about OMNIC_SLICE_SHARE of a decode step while other
 * slots decode (whole when nothing does), so streams never wait for a whole encode. A prompt
 * starting with whole blocks of an earlier prompt's rows restores their K/V from the prefix
 * cache (engine/prefix_cache.h) instead of prefilling them.
 *
 * Thread safety: submit, cancel, metrics and drain may be called from any thread.
 * Callbacks run on the scheduler thread and must not block or call back into the engine
 * except omnic__engine_cancel. */
#ifndef OMNIC_ENGINE_ENGINE_H
#define OMNIC_ENGINE_ENGINE_H

#include "engine/gen_config.h"
#include "engine/metrics.h"
#include "engine/sampling.h"
#include "mm/prepared.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

typedef struct omnic__engine omnic__engine;

typedef struct omnic__engine_opts {
    omnic__model_opts model; /* backend, threads, ctx (per slot), slots (= parallel), chunk, kv dtype */
    int max_queue;           /* requests waiting for a slot; 0: 64 */
    omnic__gen_config_mode generation_config; /* AUTO: generation_config.json's sampling defaults
                                               * are read (and checked) at load */
    int64_t encoder_cache_bytes;              /* projected media rows kept for repeats (engine/blob_cache.h);
                                               * 0: OMNIC_ENCODER_CACHE_BYTES; < 0: no cache */
    int64_t prefix_cache_bytes;               /* KV blocks of earlier prompts (engine/prefix_cache.h);
                                               * 0: OMNIC_PREFIX_CACHE_BYTES; < 0: no cache */
    int64_t prefix_block;                     /* rows per prefix-cache block; 0: OMNIC_PREFIX_BLOCK */
} omnic__engine_opts;

typedef enum omnic__finish {
    OMNIC_FINISH_NONE = 0,
    OMNIC_FINISH_STOP,      /* EOS token or stop string */
    OMNIC_FINISH_LENGTH,    /* max_tokens reached */
    OMNIC_FINISH_CANCELLED, /* omnic__engine_cancel (client gone) or shutdown */
    OMNIC_FINISH_TIMEOUT,   /* the request's timeout passed */
    OMNIC_FINISH_ERROR,     /* a module call failed; message in the event */
    OMNIC_FINISH_COUNT
} omnic__finish;

/* "stop", "length", "cancelled", "timeout", "error". */
const char *omnic__finish_name(omnic__finish f);

typedef enum omnic__event_kind {
    OMNIC_EV_TEXT, /* text became final (may be empty when a token produced none) */
    OMNIC_EV_DONE, /* last event of a request: finish reason and usage */
} omnic__event_kind;

typedef struct omnic__gen_event {
    omnic__event_kind kind;
    uint64_t id;      /* request id */
    int32_t token;    /* TEXT: the token just generated (-1 for text released at the end) */
    const char *text; /* TEXT: borrowed until the callback returns */
    size_t len;
    omnic__finish finish;  /* DONE */
    int64_t prompt_tokens; /* DONE: logical prompt tokens */
    int64_t cached_tokens; /* DONE: logical prompt tokens whose rows came from the prefix cache */
    int64_t completion_tokens;
    const char *error; /* DONE with OMNIC_FINISH_ERROR: message */
} omnic__gen_event;

typedef void (*omnic__event_cb)(void *ctx, const omnic__gen_event *ev);

/* What a prefill callback may read (all borrowed, valid during the callback). */
typedef struct omnic__prefill_info {
    const omnic__model *model;
    int slot;                                /* its KV rows hold the prompt */
    const omnic__module *module;             /* the prefill module that ran the last chunk: its
                                              * outputs are readable (text.token_prefill or
                                              * text.embeddings_prefill) */
    const omnic__prepared_prefill *prepared; /* image requests: the expanded rows; NULL otherwise */
} omnic__prefill_info;
/* Called once the prompt is in the cache, before the first token is sampled. */
typedef void (*omnic__prefill_cb)(void *ctx, const omnic__prefill_info *info);
/* Called after media item i is encoded: the encoder's selected features and projected rows. */
/* features may be NULL; side: the encoder's n_side side outputs (DeepStack), named in names. */
typedef void (*omnic__encode_cb)(void *ctx, int64_t image, const omnic__tensor *features,
                                 const omnic__tensor *projected, int n_side, const omnic__tensor *const *side,
                                 const char *const *names);

typedef struct omnic__gen_request {
    const int32_t *prompt; /* borrowed for the call; copied */
    size_t n_prompt;       /* >= 1 */
    omnic__sampling_params sampling;
    int64_t max_tokens;       /* >= 1 */
    const char *const *stops; /* borrowed for the call; copied */
    size_t n_stops;
    double timeout_s;   /* 0: none; counted from started_s, queued time included */
    double started_s;   /* omnic__now() when the request began (a server: its first byte); 0: at submit */
    uint64_t client;    /* fairness key (a server: the client's address); requests of the same key
                         * queue FIFO, and a free slot goes to the queued request whose client
                         * holds the fewest slots; the last quarter of the queue is kept for
                         * clients with nothing queued; 0: no key (fairness as key 0, no
                         * reserve: direct engine users) */
    bool skip_special;  /* detokenize without special tokens (the usual) */
    bool ignore_eos;    /* generate past EOS (benchmarks) */
    omnic__event_cb cb; /* required */
    void *cb_ctx;
    omnic__prefill_cb on_prefill; /* optional (stage dumps); gets cb_ctx */
    omnic__encode_cb on_encode;   /* optional (stage dumps); gets cb_ctx */
    /* Media: one preprocessed item per placeholder id of its modality in prompt, in order
     * (omnic__media_prepare; borrowed for the call, copied). The prompt stays the logical ids
     * (usage, penalties, stop matching); each placeholder expands to its item's rows for
     * admission and positions. */
    const omnic__media_item *const *media;
    size_t n_media;
} omnic__gen_request;

/* Loads the model and tokenizer in dir (borrowed) and starts the scheduler. Returns owned.
 * Errors include E_INVALID for generation_config.json: an out-of-range or wrong-typed sampling
 * key (with opts->generation_config AUTO) or a bad eos_token_id, naming the key and value. */
omnic_status omnic__engine_create(const char *dir, const omnic__engine_opts *opts, omnic__engine **out,
                                  omnic_err *err);
/* Cancels everything in flight (callbacks get DONE/cancelled), stops the thread, frees. NULL ok. */
void omnic__engine_destroy(omnic__engine *e);

/* Validates and queues a request; *id identifies it. Nothing is queued on failure.
 * Errors: E_INVALID (empty prompt, bad sampling or stop strings, max_tokens < 1, media that
 * do not match the placeholders or the encoder's input: names the field), E_UNSUPPORTED (media
 * of a modality the model does not take), E_CAPACITY (expanded prompt + max_tokens over the slot
 * capacity: names the three numbers),
 * E_TOO_LARGE (the queue is full: names its size), E_CANCELLED (the engine is draining). */
omnic_status omnic__engine_submit(omnic__engine *e, const omnic__gen_request *r, uint64_t *id,
                                  omnic_err *err);
/* Asks for request id to stop; its slot is freed at the next step. Unknown ids are ignored. */
void omnic__engine_cancel(omnic__engine *e, uint64_t id);
/* Stops accepting requests, waits up to deadline_s for the in-flight ones, cancels the
 * rest. Returns once nothing is in flight. */
void omnic__engine_drain(omnic__engine *e, double deadline_s);

/* Borrowed views. */
const omnic__model *omnic__engine_model(const omnic__engine *e);
const omnic__tokenizer *omnic__engine_tokenizer(const omnic__engine *e);
omnic__metrics *omnic__engine_metrics(omnic__engine *e);
/* The memo of prepared media items (engine/media_memo.h; thread-safe), or NULL (off: no
 * encoder cache, or a text-only model). */
struct omnic__media_memo *omnic__engine_media_memo(omnic__engine *e);
/* EOS ids (generation_config.json, else config.json; and tokenizer_config.json's eos_token:
 * omnic__gen_eos_ids), borrowed. */
const int32_t *omnic__engine_eos(const omnic__engine *e, size_t *n);
/* generation_config.json's sampling defaults (nothing set under OMNIC_GEN_CONFIG_IGNORE),
 * borrowed: callers apply them to each request with omnic__gen_defaults_apply. */
const omnic__gen_defaults *omnic__engine_gen_defaults(const omnic__engine *e);

#endif
