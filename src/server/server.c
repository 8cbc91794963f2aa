/* The HTTP server: routing, authentication, request bodies, the generation channel between
 * libmicrohttpd and the engine, SSE streaming, the disconnect watchdog, metrics and
 * shutdown. See server.h for the threading and lifetime design. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "core/budget.h"
#include "core/job_pool.h"
#include "core/log.h"
#include "core/sha256.h"
#include "core/sync.h"
#include "engine/chat.h"
#include "engine/media.h"
#include "engine/media_memo.h"
#include "engine/modality.h"
#include "io/json.h"
#include "mm/audio.h"
#include "server/media.h"
#include "server/multipart.h"
#include "server/openai.h"
#include "server/server.h"
#include "server/trust.h"

/* ---- server-level counters ---- */

typedef enum http_reject {
    REJ_NONE = -1, /* a server-side failure, not a rejection */
    REJ_AUTH,
    REJ_BODY_TOO_LARGE,
    REJ_MALFORMED_JSON,
    REJ_INVALID,
    REJ_UNSUPPORTED,
    REJ_NOT_FOUND,
    REJ_MODEL_NOT_FOUND,
    REJ_METHOD,
    REJ_QUEUE_FULL,
    REJ_CAPACITY,
    REJ_LOADING,
    REJ_SHUTTING_DOWN,
    REJ_HOST,
    REJ_ORIGIN,
    REJ_CONTENT_TYPE,
    REJ_BODY_BUDGET,
    REJ_TIMEOUT,
    REJ_COUNT
} http_reject;

static const char *const reject_names[REJ_COUNT] = {
    "auth",        "body_too_large",  "malformed_json",     "invalid_request",    "unsupported",
    "not_found",   "model_not_found", "method_not_allowed", "queue_full",         "capacity",
    "loading",     "shutting_down",   "host_not_allowed",   "origin_not_allowed", "content_type",
    "body_budget", "timeout"};

#define STATUS_MIN 100
#define STATUS_MAX 599

typedef enum server_state { ST_LOADING, ST_READY, ST_DRAINING, ST_STOPPED } server_state;

typedef struct channel channel;

struct omnic__server {
    omnic__server_opts o;
    char model_id[256];
    char fingerprint[16];
    struct MHD_Daemon *d;
    int port;
    omnic__engine *_Atomic engine; /* NULL until loaded */
    omnic__chat *chat;             /* the parsed chat template; NULL: see chat_status */
    omnic_status chat_status;      /* why chat is NULL (E_NOT_FOUND: the model has none) */
    char chat_error[OMNIC_ERR_MSG_MAX];
    atomic_int state; /* server_state */
    bool have_key;
    /* Host header allow-list: --allowed-hosts, else the listen address and localhost names
     * ("*" when listening on every address) */
    const char *hosts[OMNIC_MAX_ALLOWED_HOSTS + 4];
    size_t n_hosts;
    char listen_host[256];
    uint8_t key_hash[32];
    size_t max_body, max_text;
    int64_t started; /* Unix seconds */
    atomic_uint_fast64_t rng;
    /* live channels (HTTP side still present), for the watchdog and shutdown */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    channel *live;
    int n_live;
    pthread_t watchdog;
    bool watchdog_started, watchdog_stop;
    /* counters */
    atomic_uint_fast64_t status[STATUS_MAX - STATUS_MIN + 1];
    atomic_uint_fast64_t rejected[REJ_COUNT];
    atomic_uint_fast64_t disconnects, slow_clients, read_timeouts, half_closes;
    /* budgets: the per-request one (deadline 0: set per request), and the bytes of request
     * bodies all connections hold */
    omnic__budget budget;
    size_t inflight_max;
    atomic_size_t inflight;
    double read_timeout_s;
    /* connections' read deadlines (conn_watch), under wmu */
    pthread_mutex_t wmu;
    struct conn_watch *watches;
    /* the request pool: body parse, templates, tokenization, submission */
    omnic__job_pool *requests;
    omnic__job_pool *small; /* bodies under OMNIC_SMALL_BODY_BYTES: their own worker, so big
                             * bodies cannot hold everyone's parse and template up */
    /* images (when the model takes them) */
    omnic__media_proc prep; /* the model's image processor (with --max-image-pixels) */
    bool images_ok;
    omnic__media_proc prep_audio; /* the model's audio processor (feature extractor) */
    bool audio_ok;
    omnic__job_pool *media;   /* the media stage's workers (images_ok or audio_ok) */
    char media_dir[PATH_MAX]; /* resolved --media-dir, "" when none */
};

static uint64_t rand64(omnic__server *s)
{
    uint64_t z = atomic_fetch_add(&s->rng, 0x9E3779B97F4A7C15ull) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static omnic__engine *engine_of(omnic__server *s)
{
    return atomic_load(&s->engine);
}

/* Whether chat content is rendered as lists of parts (a model that takes images or clips through
 * its template), not as strings carrying the media's text placeholders (models/media.h prompt_tag). */
static bool template_parts(omnic__server *s)
{
    const omnic__model *m = omnic__engine_model(engine_of(s));
    return (s->images_ok && !omnic__media_prompt_tag(m, OMNIC_MODALITY_IMAGE)) ||
           (s->audio_ok && !omnic__media_prompt_tag(m, OMNIC_MODALITY_AUDIO));
}

/* ---- the generation channel ---- */

typedef struct work work;

typedef struct choice {
    channel *ch;
    int index;   /* choice index in the response */
    int prompt;  /* prompt it belongs to */
    uint64_t id; /* engine request id (0 until submitted) */
    bool done;
    omnic__finish finish;
    int64_t prompt_tokens, completion_tokens, cached_tokens;
    int64_t tokens;  /* generated so far (TEXT events with a token) */
    omnic__buf text; /* engine side: stream backlog, or the whole non-streamed text */
    char error[256]; /* engine error message (OMNIC_FINISH_ERROR) */
} choice;

/* What the HTTP side, the request's preparation (workers) and its engine requests share. */
struct channel {
    pthread_mutex_t mu;
    int refs;                        /* HTTP side + the preparation + engine requests not yet DONE */
    omnic__engine *engine;           /* borrowed */
    size_t max_text;                 /* per choice (the server's max_text) */
    atomic_uint_fast64_t *overflows; /* the server's slow-client counter */
    struct MHD_Connection *conn;     /* NULL once the HTTP side completed */
    int fd;                          /* the connection's socket (watchdog) */
    atomic_bool cancel;              /* the HTTP side is gone or the server stops: stop preparing */
    bool prepared;                   /* the preparation finished: w's results are the HTTP side's to read */
    bool stream;                     /* set by the preparation */
    bool suspended;                  /* the connection waits for this channel */
    bool client_gone;                /* the watchdog saw the peer reset or close both ways */
    bool half_closed;                /* the peer shut its sending side (not a disconnect: see the watchdog) */
    bool probe;      /* the stream writes an SSE comment next (a half-closed peer's liveness) */
    double probe_at; /* when the last probe was asked for */
    bool overflow;   /* a choice's text passed OMNIC_MAX_CHOICE_TEXT */
    int n_choices, n_submitted, n_done;
    choice *choices;      /* [n_choices], set by the preparation under mu */
    work *w;              /* owned: the request's preparation and its results */
    channel *prev, *next; /* the server's live list */
};

static void work_free(work *w);

static channel *channel_create(omnic__engine *e)
{
    channel *ch = omnic_alloc_array(1, sizeof *ch);
    if (!ch) return NULL;
    pthread_mutex_init(&ch->mu, NULL);
    ch->refs = 1;
    ch->engine = e;
    ch->fd = -1;
    atomic_init(&ch->cancel, false);
    return ch;
}

/* The choices (preparation, before any is submitted). false: out of memory. */
static bool channel_set_choices(channel *ch, int n_choices, bool stream)
{
    choice *c = omnic_alloc_array((size_t)n_choices, sizeof *c);
    if (!c) return false;
    for (int i = 0; i < n_choices; i++)
        c[i].ch = ch, c[i].index = i;
    pthread_mutex_lock(&ch->mu);
    ch->choices = c;
    ch->n_choices = n_choices;
    ch->stream = stream;
    pthread_mutex_unlock(&ch->mu);
    return true;
}

static void channel_free(channel *ch)
{
    for (int i = 0; i < ch->n_choices; i++)
        omnic__buf_free(&ch->choices[i].text);
    omnic_free(ch->choices);
    work_free(ch->w);
    pthread_mutex_destroy(&ch->mu);
    omnic_free(ch);
}

/* Drops one reference (caller does not hold mu). */
static void channel_release(channel *ch)
{
    pthread_mutex_lock(&ch->mu);
    bool last = --ch->refs == 0;
    pthread_mutex_unlock(&ch->mu);
    if (last) channel_free(ch);
}

static void work_cancel(work *w);

/* Stops the preparation and cancels every submitted choice that has not finished. */
static void channel_cancel(channel *ch)
{
    uint64_t ids[OMNIC_MAX_CHOICES];
    int n = 0;
    atomic_store(&ch->cancel, true); /* before reading ids: a choice submitted after sees it */
    pthread_mutex_lock(&ch->mu);
    if (ch->w && !ch->prepared) work_cancel(ch->w);
    for (int i = 0; i < ch->n_choices && n < OMNIC_MAX_CHOICES; i++)
        if (ch->choices[i].id && !ch->choices[i].done) ids[n++] = ch->choices[i].id;
    pthread_mutex_unlock(&ch->mu);
    for (int i = 0; i < n; i++)
        omnic__engine_cancel(ch->engine, ids[i]);
}

/* Engine callback (scheduler thread): buffer, never block. */
static void on_engine_event(void *ctx, const omnic__gen_event *ev)
{
    choice *c = ctx;
    channel *ch = c->ch;
    struct MHD_Connection *resume = NULL;
    bool overflow_now = false, last = false;
    pthread_mutex_lock(&ch->mu);
    if (ev->kind == OMNIC_EV_TEXT) {
        if (ev->token >= 0) c->tokens++;
        if (ev->len && !ch->overflow) {
            if (c->text.len + ev->len > ch->max_text || !omnic__buf_put(&c->text, ev->text, ev->len))
                ch->overflow = overflow_now = true;
        }
        if (ch->suspended && ch->stream && (ev->len || overflow_now)) resume = ch->conn;
    } else {
        c->done = true;
        c->finish = ev->finish;
        c->prompt_tokens = ev->prompt_tokens;
        c->cached_tokens = ev->cached_tokens;
        c->completion_tokens = ev->completion_tokens;
        if (ev->error) snprintf(c->error, sizeof c->error, "%s", ev->error);
        ch->n_done++;
        if (ch->suspended && (ch->stream || ch->n_done >= ch->n_submitted)) resume = ch->conn;
        last = --ch->refs == 0;
    }
    if (resume) ch->suspended = false;
    pthread_mutex_unlock(&ch->mu);
    if (overflow_now) {
        atomic_fetch_add(ch->overflows, 1);
        channel_cancel(ch); /* siblings too; omnic__engine_cancel is allowed from a callback */
    }
    if (resume) MHD_resume_connection(resume);
    if (last) channel_free(ch);
}

/* ---- per-request state ---- */

typedef enum route {
    R_NONE,
    R_TRANSCRIBE, /* /v1/audio/transcriptions: a multipart form run as a chat completion */
    R_CHAT,
    R_COMPLETIONS,
    R_MODELS,
    R_MODEL_ONE,
    R_HEALTH,
    R_METRICS,
    R_TOKENIZE,
    R_DETOKENIZE,
} route;

typedef enum phase { PH_RECEIVING, PH_PREPARING, PH_WAITING, PH_STREAMING, PH_DONE } phase;

/* A connection's read deadline (slow-loris): from its start, or the end of its previous
 * request, until its request body is complete. fd is a dup of the socket, ours until the
 * connection closes, so the watchdog can shut it down without racing libmicrohttpd's close. */
typedef struct conn_watch {
    int fd;
    double t0;
    bool receiving;
    struct conn_watch *prev, *next;
} conn_watch;

/* A request's preparation, off the HTTP threads: body parse, validation, media (on the media
 * pool), chat template and tokenization (on the request pool), engine submission. Written
 * by the workers until the channel is marked prepared, read by the HTTP side afterwards. */
struct work {
    omnic__job job;       /* on the request pool */
    omnic__job media_job; /* the request's images, on the media pool */
    omnic__server *srv;
    channel *ch; /* holds a channel reference until the preparation finishes */
    route rt;
    omnic__buf body;   /* owned until parsed */
    size_t reserved;   /* bytes of the server's in-flight body budget held for body */
    omnic__budget bud; /* the request's budget (its deadline: started + --request-timeout) */
    double started;    /* omnic__now() at the request's first handler call (its headers read) */
    size_t parsed;     /* heap the body's parse took */
    uint64_t client;   /* the engine's fairness key: the peer's IPv4 address or IPv6 /64 */
    atomic_int parts;  /* stages still running (text, media) */
    bool has_crops;    /* some image was panned and scanned: crops[i] of image i (work_submit) */
    int64_t crops[OMNIC_MAX_REQUEST_IMAGES];
    json_t *json;
    char content_type[256]; /* the body's Content-Type (R_TRANSCRIBE: the form's boundary) */
    int transcribe;         /* R_TRANSCRIBE's response_format: 1 json, 2 text, 3 verbose_json; 0: none */
    char language[32];      /* R_TRANSCRIBE: the form's language, reported by verbose_json */
    omnic__api_request req;
    int64_t gen_max_tokens;
    size_t n_prompts;
    int32_t **ids; /* [n_prompts] owned prompt token ids */
    size_t *n_ids;
    omnic__media_item *media; /* [n_media] owned: the request's preprocessed images */
    size_t n_media, n_images;
    bool audio;                           /* some media parts are audio clips */
    const omnic__media_item **media_ptrs; /* [n_media] pointers into media */
    omnic__media_proc proc;               /* the server's image processor with the request's kwargs (owned) */
    omnic__media_proc proc_audio;         /* the server's audio processor (owned) */
    bool have_proc, have_proc_audio;
    omnic__image_limits lim;
    size_t failed; /* the image that failed */
    omnic_status img_st;
    omnic_err img_err;
    /* results */
    bool failed_text; /* err holds the text stage's error */
    bool generating;  /* choices were submitted: the HTTP side streams or waits */
    omnic__api_error err;
    http_reject why;
    unsigned status; /* a ready answer (tokenize, detokenize): status and resp */
    omnic__buf resp;
    char id[48];
    omnic__api_meta meta;
    char warning[256]; /* "" or what the response reports (an image resized by a user limit) */
};

typedef struct conn_state {
    char content_type[256]; /* R_TRANSCRIBE: the body's Content-Type (the form boundary) */
    omnic__server *srv;
    struct MHD_Connection *conn;
    route rt;
    phase ph;
    const char *origin; /* CORS: the Access-Control-Allow-Origin value, or NULL */
    double started;     /* omnic__now() at the first handler call */
    omnic__buf body;
    size_t reserved; /* bytes of the in-flight body budget this request holds */
    bool too_large, over_budget;
    channel *ch; /* a request with a preparation (generation, tokenize, detokenize) */
    /* streaming (HTTP side only) */
    omnic__buf out; /* formatted bytes not yet handed to MHD */
    size_t out_pos;
    int n_choices;
    omnic__buf *spare; /* [n_choices] text swapped out of the channel */
    int64_t *tokens;   /* [n_choices] tokens generated when the text was taken */
    bool *final_sent;  /* [n_choices] x 2 */
    bool roles_sent, stream_ended;
    char warning[256]; /* copied from the preparation */
} conn_state;

static void inflight_release(omnic__server *s, size_t *reserved);

static void conn_state_free(conn_state *cs)
{
    omnic__buf_free(&cs->body);
    inflight_release(cs->srv, &cs->reserved);
    omnic__buf_free(&cs->out);
    for (int i = 0; cs->spare && i < cs->n_choices; i++)
        omnic__buf_free(&cs->spare[i]);
    omnic_free(cs->spare);
    omnic_free(cs->final_sent);
    omnic_free(cs->tokens);
    omnic_free(cs);
}

static void work_free(work *w)
{
    if (!w) return;
    omnic__buf_free(&w->body);
    inflight_release(w->srv, &w->reserved);
    json_decref(w->json);
    omnic__api_request_deinit(&w->req);
    for (size_t i = 0; w->ids && i < w->n_prompts; i++)
        omnic_free(w->ids[i]);
    omnic_free(w->ids);
    omnic_free(w->n_ids);
    for (size_t i = 0; w->media && i < w->n_images; i++)
        omnic__media_item_deinit(&w->media[i]);
    omnic_free(w->media);
    omnic_free(w->media_ptrs);
    if (w->have_proc) omnic__media_proc_deinit(&w->proc);
    if (w->have_proc_audio) omnic__media_proc_deinit(&w->proc_audio);
    omnic__buf_free(&w->resp);
    bool trim = w->parsed > OMNIC_TRIM_AFTER_BYTES || w->n_images;
    omnic_free(w);
    /* a large body's tree or a request's images: return the heap they took to the system, so
     * one burst of big requests does not keep the process at its peak */
    if (trim) malloc_trim(0);
}

/* Called with ch->mu held. */
static void work_cancel(work *w)
{
    atomic_store(&w->job.cancel, true);
    atomic_store(&w->media_job.cancel, true);
}

static bool work_cancelled(const work *w)
{
    return atomic_load(&w->ch->cancel) || atomic_load(&w->job.cancel) || atomic_load(&w->media_job.cancel);
}

/* ---- responses ---- */

static void count_status(omnic__server *s, unsigned status)
{
    if (status >= STATUS_MIN && status <= STATUS_MAX) atomic_fetch_add(&s->status[status - STATUS_MIN], 1);
}

static void add_common_headers(conn_state *cs, struct MHD_Response *r)
{
    if (cs->origin) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", cs->origin);
        MHD_add_response_header(r, "Vary", "Origin");
    }
    if (cs->warning[0]) { /* RFC 7234 5.5 "199 Miscellaneous warning" (the text has no quotes) */
        char w[sizeof cs->warning + 32];
        snprintf(w, sizeof w, "199 omnic \"%s\"", cs->warning);
        MHD_add_response_header(r, "Warning", w);
    }
}

static void free_buf_cb(void *p)
{
    omnic_free(p);
}

/* Queues body (taken) with status. extra_key/value: one more header or NULL. */
static enum MHD_Result respond(conn_state *cs, unsigned status, const char *ctype, omnic__buf *body,
                               const char *extra_key, const char *extra_value)
{
    cs->ph = PH_DONE;
    if (body->oom) {
        omnic__buf_free(body);
        status = 503;
        omnic__buf_puts(body,
                        "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,"
                        "\"code\":null}}");
        ctype = "application/json";
        if (body->oom) return MHD_NO;
    }
    struct MHD_Response *r =
        body->len ? MHD_create_response_from_buffer_with_free_callback(body->len, body->p, free_buf_cb)
                  : MHD_create_response_from_buffer(0, (void *)(uintptr_t) "", MHD_RESPMEM_PERSISTENT);
    if (!r) {
        omnic__buf_free(body);
        return MHD_NO;
    }
    memset(body, 0, sizeof *body); /* the response owns the bytes now */
    if (ctype) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (extra_key) MHD_add_response_header(r, extra_key, extra_value);
    add_common_headers(cs, r);
    count_status(cs->srv, status);
    enum MHD_Result ok = MHD_queue_response(cs->conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result respond_json(conn_state *cs, unsigned status, omnic__buf *body)
{
    return respond(cs, status, "application/json", body, NULL, NULL);
}

static enum MHD_Result respond_error(conn_state *cs, const omnic__api_error *e, http_reject why)
{
    if (why != REJ_NONE) atomic_fetch_add(&cs->srv->rejected[why], 1);
    omnic__buf b = {0};
    omnic__api_error_body(&b, e);
    const char *k = NULL, *v = NULL;
    if (e->status == 429 || e->status == 503) k = "Retry-After", v = "1";
    if (e->status == 405) {
        k = "Allow";
        v = cs->rt == R_CHAT || cs->rt == R_COMPLETIONS || cs->rt == R_TOKENIZE || cs->rt == R_DETOKENIZE ||
                    cs->rt == R_TRANSCRIBE
                ? "POST, OPTIONS"
                : "GET, HEAD, OPTIONS";
    }
    if (e->status == 500) OMNIC_LOG_W("HTTP %d: %s", e->status, e->message);
    return respond(cs, (unsigned)e->status, "application/json", &b, k, v);
}

#define FAIL_RESPONSE(cs, why, status, code, param, ...)                                                     \
    do {                                                                                                     \
        omnic__api_error e_;                                                                                 \
        omnic__api_fail(&e_, (status), NULL, (code), (param), __VA_ARGS__);                                  \
        return respond_error((cs), &e_, (why));                                                              \
    } while (0)

/* ---- authentication, CORS, routing ---- */

static bool auth_ok(omnic__server *s, struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return false;
    h += 7;
    while (*h == ' ')
        h++;
    uint8_t got[32];
    omnic__sha256 sh;
    omnic__sha256_init(&sh);
    omnic__sha256_update(&sh, h, strlen(h));
    omnic__sha256_final(&sh, got);
    /* constant time over the digests: the comparison leaks neither position nor length */
    volatile uint8_t diff = 0;
    for (int i = 0; i < 32; i++)
        diff = (uint8_t)(diff | (got[i] ^ s->key_hash[i]));
    return diff == 0;
}

static const char *cors_match(const omnic__server *s, const char *origin)
{
    if (!origin) return NULL;
    for (size_t i = 0; i < s->o.n_cors_origins; i++) {
        if (!strcmp(s->o.cors_origins[i], "*")) return "*";
        if (!strcmp(s->o.cors_origins[i], origin)) return s->o.cors_origins[i];
    }
    return NULL;
}

/* Maps url to a route; *post_route tells which method it takes. R_NONE: unknown. */
static route route_of(const char *url, bool *post_route)
{
    static const struct {
        const char *path;
        route rt;
        bool post;
    } t[] = {{"/v1/chat/completions", R_CHAT, true},
             {"/v1/completions", R_COMPLETIONS, true},
             {"/v1/audio/transcriptions", R_TRANSCRIBE, true},
             {"/v1/models", R_MODELS, false},
             {"/health", R_HEALTH, false},
             {"/metrics", R_METRICS, false},
             {"/tokenize", R_TOKENIZE, true},
             {"/detokenize", R_DETOKENIZE, true}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(url, t[i].path)) {
            *post_route = t[i].post;
            return t[i].rt;
        }
    if (!strncmp(url, "/v1/models/", 11) && url[11]) {
        *post_route = false;
        return R_MODEL_ONE;
    }
    return R_NONE;
}

/* ---- simple routes ---- */

static enum MHD_Result do_health(conn_state *cs)
{
    omnic__buf b = {0};
    int st = atomic_load(&cs->srv->state);
    if (st == ST_READY) {
        omnic__buf_puts(&b, "{\"status\":\"ok\"}");
        return respond_json(cs, 200, &b);
    }
    omnic__buf_puts(&b, st == ST_LOADING ? "{\"status\":\"loading\"}" : "{\"status\":\"shutting_down\"}");
    return respond(cs, 503, "application/json", &b, "Retry-After", "1");
}

static void model_object(omnic__buf *b, omnic__server *s, const omnic__model *m)
{
    omnic__buf_puts(b, "{\"id\":");
    omnic__buf_json_str(b, s->model_id, strlen(s->model_id));
    omnic__buf_printf(b,
                      ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"omnic\",\"context_length\":%lld,"
                      "\"max_model_len\":%lld,\"parallel\":%d,\"input_modalities\":[",
                      (long long)s->started, (long long)m->capacity, (long long)m->capacity, m->n_slots);
    bool first = true;
    for (int k = 0; k < OMNIC_MODALITY_COUNT; k++) {
        if (!omnic__model_accepts(m, (omnic__modality)k)) continue;
        omnic__buf_printf(b, "%s\"%s\"", first ? "" : ",", omnic__modality_name((omnic__modality)k));
        first = false;
    }
    omnic__buf_puts(b, "],\"output_modalities\":[\"text\"]");
    if (s->images_ok) { /* the largest image the processor makes (0: its fixed size), and any user limit */
        omnic__buf_printf(b, ",\"max_image_pixels\":%lld",
                          (long long)omnic__media_proc_max_pixels(&s->prep, false));
        if (s->o.max_image_pixels > 0)
            omnic__buf_printf(b, ",\"max_image_pixels_limit\":%lld", (long long)s->o.max_image_pixels);
    }
    omnic__buf_puts(b, "}");
}

static enum MHD_Result do_models(conn_state *cs, const char *url)
{
    omnic__server *s = cs->srv;
    const omnic__model *m = omnic__engine_model(engine_of(s));
    omnic__buf b = {0};
    if (cs->rt == R_MODEL_ONE) {
        const char *id = url + strlen("/v1/models/");
        if (strcmp(id, s->model_id))
            FAIL_RESPONSE(cs, REJ_MODEL_NOT_FOUND, 404, "model_not_found", "model",
                          "The model '%.128s' does not exist (this server serves '%s')", id, s->model_id);
        model_object(&b, s, m);
        return respond_json(cs, 200, &b);
    }
    omnic__buf_puts(&b, "{\"object\":\"list\",\"data\":[");
    model_object(&b, s, m);
    omnic__buf_puts(&b, "]}");
    return respond_json(cs, 200, &b);
}

static enum MHD_Result do_metrics(conn_state *cs)
{
    omnic__server *s = cs->srv;
    omnic__buf b = {0};
    omnic__engine *e = engine_of(s);
    if (e) {
        omnic__metrics snap;
        omnic__metrics_snapshot(omnic__engine_metrics(e), &snap);
        char *text = NULL;
        size_t len = 0;
        omnic_err err;
        if (omnic__metrics_render(&snap, &text, &len, &err) == OMNIC_OK) omnic__buf_put(&b, text, len);
        omnic_free(text);
    }
    omnic__buf_puts(&b, "# HELP omnic_http_responses_total HTTP responses by status code.\n"
                        "# TYPE omnic_http_responses_total counter\n");
    for (int i = 0; i <= STATUS_MAX - STATUS_MIN; i++) {
        uint64_t v = atomic_load(&s->status[i]);
        if (v)
            omnic__buf_printf(&b, "omnic_http_responses_total{code=\"%d\"} %llu\n", i + STATUS_MIN,
                              (unsigned long long)v);
    }
    omnic__buf_puts(&b, "# HELP omnic_http_rejected_total Requests the server refused, by reason.\n"
                        "# TYPE omnic_http_rejected_total counter\n");
    for (int i = 0; i < REJ_COUNT; i++)
        omnic__buf_printf(&b, "omnic_http_rejected_total{reason=\"%s\"} %llu\n", reject_names[i],
                          (unsigned long long)atomic_load(&s->rejected[i]));
    if (e) { /* the pools exist once the engine is published (server_load's order) */
        omnic__buf_puts(&b, "# HELP omnic_http_pool_pending Jobs queued or running on the server's worker "
                            "pools.\n# TYPE omnic_http_pool_pending gauge\n");
        const struct {
            const char *name;
            omnic__job_pool *p;
        } pools[] = {{"request", s->requests}, {"small_request", s->small}, {"media", s->media}};
        for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++)
            if (pools[i].p)
                omnic__buf_printf(&b, "omnic_http_pool_pending{pool=\"%s\"} %d\n", pools[i].name,
                                  omnic__job_pool_pending(pools[i].p));
    }
    pthread_mutex_lock(&s->mu);
    int live = s->n_live;
    pthread_mutex_unlock(&s->mu);
    omnic__buf_printf(
        &b,
        "# HELP omnic_http_client_disconnects_total Generation requests cancelled because the "
        "client went away.\n# TYPE omnic_http_client_disconnects_total counter\n"
        "omnic_http_client_disconnects_total %llu\n"
        "# HELP omnic_http_slow_client_cancels_total Requests cancelled because the client stopped "
        "reading (backlog over %zu bytes).\n# TYPE omnic_http_slow_client_cancels_total counter\n"
        "omnic_http_slow_client_cancels_total %llu\n"
        "# HELP omnic_http_read_timeouts_total Connections shut down for not sending their request "
        "within --read-timeout.\n# TYPE omnic_http_read_timeouts_total counter\n"
        "omnic_http_read_timeouts_total %llu\n"
        "# HELP omnic_http_half_closes_total Clients that shut down their sending side while waiting "
        "(not a disconnect).\n# TYPE omnic_http_half_closes_total counter\n"
        "omnic_http_half_closes_total %llu\n"
        "# HELP omnic_http_inflight_body_bytes Request body bytes held by all connections.\n"
        "# TYPE omnic_http_inflight_body_bytes gauge\nomnic_http_inflight_body_bytes %zu\n"
        "# HELP omnic_http_generation_requests_active Generation requests with a client attached.\n"
        "# TYPE omnic_http_generation_requests_active gauge\n"
        "omnic_http_generation_requests_active %d\n"
        "# HELP omnic_server_ready 1 when the model is loaded and the server takes requests.\n"
        "# TYPE omnic_server_ready gauge\nomnic_server_ready %d\n",
        (unsigned long long)atomic_load(&s->disconnects), s->max_text,
        (unsigned long long)atomic_load(&s->slow_clients), (unsigned long long)atomic_load(&s->read_timeouts),
        (unsigned long long)atomic_load(&s->half_closes), atomic_load(&s->inflight), live,
        atomic_load(&s->state) == ST_READY ? 1 : 0);
    return respond(cs, 200, "text/plain; version=0.0.4; charset=utf-8", &b, NULL, NULL);
}

/* ---- the preparation: text stage (request pool) ---- */

static void work_error(work *w, const omnic__api_error *e, http_reject why)
{
    w->err = *e;
    w->why = why;
    w->failed_text = true;
}

/* Records an error (the arguments of omnic__api_fail after the error). */
#define WORK_FAIL(w, why_, ...)                                                                              \
    do {                                                                                                     \
        omnic__api_error e_;                                                                                 \
        omnic__api_fail(&e_, __VA_ARGS__);                                                                   \
        work_error((w), &e_, (why_));                                                                        \
    } while (0)

static http_reject reject_of(const omnic__api_error *e)
{
    if (e->status == 404) return REJ_MODEL_NOT_FOUND;
    if (e->status == 504) return REJ_TIMEOUT;
    if (e->status >= 500) return REJ_NONE;
    return e->code && !strcmp(e->code, "unsupported_parameter") ? REJ_UNSUPPORTED : REJ_INVALID;
}

static void fail_timeout(work *w, const omnic_err *err)
{
    WORK_FAIL(w, REJ_TIMEOUT, 504, "timeout_error", "request_timeout", NULL,
              "The request ran past the server's --request-timeout of %g s: %s", w->srv->o.request_timeout_s,
              err->msg);
}

/* A /v1/audio/transcriptions form (file, model, prompt, language, response_format, temperature)
 * as the chat completion it runs: the clip as an input_audio part, then Phi-4-multimodal's
 * transcription instruction (with the language and the prompt as context when given). */
static bool transcription_json(work *w)
{
    omnic__form f;
    omnic_err err;
    if (omnic__form_parse(w->content_type, (const uint8_t *)w->body.p, w->body.len, &f, &err) != OMNIC_OK) {
        WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_value", NULL, "%s", err.msg);
        return false;
    }
    const omnic__form_part *file = omnic__form_get(&f, "file"), *model = omnic__form_get(&f, "model");
    const omnic__form_part *prompt = omnic__form_get(&f, "prompt"), *lang = omnic__form_get(&f, "language");
    const omnic__form_part *fmt = omnic__form_get(&f, "response_format"),
                           *temp = omnic__form_get(&f, "temperature");
    const omnic__form_part *stream = omnic__form_get(&f, "stream");
    if (!file || !file->len) {
        WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_value", "file", "Missing required parameter: 'file'");
        return false;
    }
    if (stream && !(stream->len == 5 && !memcmp(stream->data, "false", 5))) {
        WORK_FAIL(w, REJ_UNSUPPORTED, 400, NULL, "unsupported_parameter", "stream",
                  "Streamed transcriptions are not supported: leave 'stream' out");
        return false;
    }
    w->transcribe = 1;
    if (fmt) {
        static const char *const names[] = {"json", "text", "verbose_json"};
        w->transcribe = 0;
        for (int i = 0; i < 3; i++)
            if (fmt->len == strlen(names[i]) && !memcmp(fmt->data, names[i], fmt->len)) w->transcribe = i + 1;
        if (!w->transcribe) {
            WORK_FAIL(w, REJ_UNSUPPORTED, 400, NULL, "unsupported_value", "response_format",
                      "Invalid 'response_format': '%.*s' (json, text, verbose_json; srt and vtt need segment "
                      "times, which this model does not give)",
                      (int)(fmt->len < 32 ? fmt->len : 32), (const char *)fmt->data);
            return false;
        }
    }
    omnic__audio_format af = omnic__audio_sniff(file->data, file->len);
    const char *ext = omnic__audio_format_ext(af);
    if (!ext) {
        WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_audio", "file",
                  "Invalid 'file' (%.100s): audio format %s is not supported (wav, mp3, flac, ogg)",
                  file->filename, omnic__audio_format_name(af));
        return false;
    }
    if (lang)
        snprintf(w->language, sizeof w->language, "%.*s", (int)(lang->len < 31 ? lang->len : 31), lang->data);
    omnic__buf text = {0}, b64 = {0};
    omnic__buf_puts(&text, "Transcribe the audio clip into text.");
    if (lang && lang->len) omnic__buf_printf(&text, " The audio is in %s.", w->language);
    if (prompt && prompt->len) {
        omnic__buf_puts(&text, " Context: ");
        omnic__buf_put(&text, (const char *)prompt->data, prompt->len);
    }
    omnic__buf_base64(&b64, file->data, file->len);
    json_t *j = text.oom || b64.oom ? NULL
                                    : json_pack("{s:[{s:s, s:[{s:s, s:{s:s%, s:s}}, {s:s, s:s%}]}], s:b}",
                                                "messages", "role", "user", "content", "type", "input_audio",
                                                "input_audio", "data", b64.p, b64.len, "format", ext, "type",
                                                "text", "text", text.p, text.len, "stream", 0);
    omnic__buf_free(&text);
    omnic__buf_free(&b64);
    if (j && model)
        json_object_set_new(j, "model", json_stringn_nocheck((const char *)model->data, model->len));
    if (j && temp) {
        char tb[32];
        snprintf(tb, sizeof tb, "%.*s", (int)(temp->len < 31 ? temp->len : 31), temp->data);
        char *end;
        double t = strtod(tb, &end);
        if (end == tb || *end) {
            json_decref(j);
            WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_type", "temperature",
                      "Invalid 'temperature': '%s' is not a number", tb);
            return false;
        }
        json_object_set_new(j, "temperature", json_real(t));
    } else if (j) {
        json_object_set_new(j, "temperature", json_real(0)); /* OpenAI's default for transcriptions */
    }
    if (!j) {
        WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "out of memory");
        return false;
    }
    w->json = j;
    return true;
}

/* Parses the body (within the JSON memory budget) into w->json and frees it. */
static bool work_parse(work *w)
{
    if (w->rt == R_TRANSCRIBE) {
        bool ok = transcription_json(w);
        omnic__buf_free(&w->body);
        inflight_release(w->srv, &w->reserved);
        if (ok) w->rt = R_CHAT;
        return ok;
    }
    omnic_err err;
    omnic_err_clear(&err);
    size_t len = w->body.len;
    omnic__budget_heap_begin(w->bud.json_bytes);
    omnic_status st = omnic__json_parse(w->body.p ? w->body.p : "", len, "request body", &w->json, &err);
    bool over = false;
    w->parsed = omnic__budget_heap_end(&over);
    omnic__buf_free(&w->body);
    inflight_release(w->srv, &w->reserved);
    if (st == OMNIC_OK) return true;
    if (w->parsed > OMNIC_TRIM_AFTER_BYTES) malloc_trim(0); /* jansson freed it all: give it back */
    if (over)
        WORK_FAIL(w, REJ_BODY_TOO_LARGE, 413, NULL, "request_too_large", NULL,
                  "The request body of %zu bytes needs more than %zu bytes of memory to parse "
                  "(--max-json-memory)",
                  len, w->bud.json_bytes);
    else if (st == OMNIC_E_NOMEM)
        WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "out of memory parsing the body");
    else
        WORK_FAIL(w, REJ_MALFORMED_JSON, 400, NULL, "invalid_json", NULL,
                  "We could not parse the JSON body of your request: %s", err.msg);
    return false;
}

/* Renders and tokenizes messages with the chat template, within the request's budget. */
static omnic_status chat_ids(work *w, const json_t *msgs, bool add_generation_prompt, int32_t **ids,
                             size_t *n, omnic__api_error *e)
{
    omnic__server *s = w->srv;
    if (!s->chat) {
        if (s->chat_status == OMNIC_E_NOT_FOUND)
            return omnic__api_fail(e, 400, NULL, "no_chat_template", "messages",
                                   "This model has no chat template; use /v1/completions with a prompt");
        /* the checkpoint's template does not parse: the model's fault, not the request's */
        return omnic__api_fail(e, s->chat_status == OMNIC_E_UNSUPPORTED ? 501 : 500, NULL, "chat_template",
                               NULL, "The model's chat template cannot be used: %s", s->chat_error);
    }
    char *text = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    /* pan-and-scan crops are known once the images are prepared (work_submit renders again) */
    omnic_status st = omnic__chat_apply(s->chat, omnic__engine_tokenizer(engine_of(s)), msgs,
                                        add_generation_prompt, NULL, &w->bud, w->has_crops ? w->crops : NULL,
                                        w->has_crops ? w->n_media : 0, &text, ids, n, &err);
    omnic_free(text);
    switch (st) {
    case OMNIC_OK:
        return OMNIC_OK;
    case OMNIC_E_NOMEM:
        return omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory applying the chat template");
    case OMNIC_E_UNSUPPORTED:
        return omnic__api_fail(e, 501, NULL, "chat_template", "messages", "%s", err.msg);
    case OMNIC_E_TIMEOUT:
        return omnic__api_fail(e, 504, "timeout_error", "request_timeout", NULL,
                               "The request ran past the server's --request-timeout of %g s in the chat "
                               "template: %s",
                               s->o.request_timeout_s, err.msg);
    default:
        /* raise_exception ("roles must alternate"), budgets, invalid text: the conversation's fault */
        return omnic__api_fail(e, 400, NULL, "invalid_value", "messages", "The chat template failed: %s",
                               err.msg);
    }
}

static void work_tokenize(work *w)
{
    if (!work_parse(w)) return;
    omnic__server *s = w->srv;
    omnic__engine *eng = engine_of(s);
    omnic__api_tokenize t;
    omnic__api_error e;
    if (omnic__api_parse_tokenize(w->json, &t, &e) != OMNIC_OK) {
        work_error(w, &e, reject_of(&e));
        return;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    if (t.messages) { /* the ids a chat completion of these messages would run on */
        if (template_parts(s) && omnic__chat_content_parts(t.messages) != OMNIC_OK) {
            omnic__api_tokenize_deinit(&t);
            WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "out of memory");
            return;
        }
        if (chat_ids(w, t.messages, t.add_generation_prompt, &ids, &n, &e) != OMNIC_OK) {
            omnic__api_tokenize_deinit(&t);
            work_error(w, &e, reject_of(&e));
            return;
        }
    } else {
        omnic_err err;
        omnic_status st = omnic__tokenizer_encode(omnic__engine_tokenizer(eng), t.text, t.len, t.add_special,
                                                  &ids, &n, &err);
        if (st != OMNIC_OK) {
            omnic__api_tokenize_deinit(&t);
            if (st == OMNIC_E_NOMEM)
                WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "%s", err.msg);
            else
                WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_value", "content", "%s", err.msg);
            return;
        }
    }
    omnic__api_tokenize_deinit(&t);
    omnic__buf *b = &w->resp;
    omnic__buf_puts(b, "{\"tokens\":[");
    for (size_t i = 0; i < n; i++)
        omnic__buf_printf(b, "%s%d", i ? "," : "", ids[i]);
    omnic__buf_printf(b, "],\"count\":%zu,\"max_model_len\":%lld}", n,
                      (long long)omnic__engine_model(eng)->capacity);
    omnic_free(ids);
    w->status = 200;
}

static void work_detokenize(work *w)
{
    if (!work_parse(w)) return;
    omnic__engine *eng = engine_of(w->srv);
    omnic__api_detokenize d;
    omnic__api_error e;
    if (omnic__api_parse_detokenize(w->json, &d, &e) != OMNIC_OK) {
        work_error(w, &e, reject_of(&e));
        return;
    }
    char *text = NULL;
    size_t len = 0;
    omnic_err err;
    static const int32_t none[1] = {0};
    omnic_status st = omnic__tokenizer_decode(omnic__engine_tokenizer(eng), d.ids ? d.ids : none, d.n,
                                              d.skip_special, &text, &len, &err);
    omnic__api_detokenize_deinit(&d);
    if (st == OMNIC_E_NOMEM) {
        WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "%s", err.msg);
        return;
    }
    if (st != OMNIC_OK) {
        WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_value", "tokens", "%s", err.msg);
        return;
    }
    omnic__buf *b = &w->resp;
    /* "prompt" as vLLM answers, "content" as llama.cpp does */
    omnic__buf_puts(b, "{\"prompt\":");
    omnic__buf_json_str(b, text, len);
    omnic__buf_puts(b, ",\"content\":");
    omnic__buf_json_str(b, text, len);
    omnic__buf_puts(b, "}");
    omnic_free(text);
    w->status = 200;
}

/* ---- generation: the HTTP side ---- */

static const char *finish_reason(omnic__finish f)
{
    return f == OMNIC_FINISH_LENGTH ? "length" : "stop";
}

/* The error a choice that did not finish normally turns into. */
static void finish_error(const omnic__server *s, const choice *c, omnic__api_error *e)
{
    switch (c->finish) {
    case OMNIC_FINISH_TIMEOUT:
        omnic__api_fail(e, 504, "timeout_error", "request_timeout", NULL,
                        "The request ran past the server's --request-timeout of %g s (%lld tokens generated)",
                        s->o.request_timeout_s, (long long)c->completion_tokens);
        break;
    case OMNIC_FINISH_CANCELLED:
        omnic__api_fail(e, 503, NULL, "shutting_down", NULL,
                        "The request was cancelled: the server is shutting down");
        break;
    default:
        omnic__api_fail(e, 500, NULL, NULL, NULL, "Generation failed: %s",
                        c->error[0] ? c->error : "unknown error");
        break;
    }
}

static bool finished_ok(const choice *c)
{
    return c->finish == OMNIC_FINISH_STOP || c->finish == OMNIC_FINISH_LENGTH;
}

/* Non-streamed: waits (suspended) until every choice is done, then answers. */
static enum MHD_Result finish_nonstream(conn_state *cs)
{
    channel *ch = cs->ch;
    const work *w = ch->w;
    pthread_mutex_lock(&ch->mu);
    if (ch->client_gone) {
        pthread_mutex_unlock(&ch->mu);
        return MHD_NO;
    }
    if (ch->n_done < ch->n_submitted) {
        ch->suspended = true;
        MHD_suspend_connection(cs->conn);
        pthread_mutex_unlock(&ch->mu);
        cs->ph = PH_WAITING;
        return MHD_YES;
    }
    bool overflow = ch->overflow;
    pthread_mutex_unlock(&ch->mu);
    /* every choice is done: the engine no longer touches them */
    omnic__api_error e;
    if (overflow) {
        FAIL_RESPONSE(cs, REJ_NONE, 500, NULL, NULL,
                      "The generated text passed the server's limit of %zu bytes per choice",
                      cs->srv->max_text);
    }
    for (int i = 0; i < ch->n_choices; i++)
        if (!finished_ok(&ch->choices[i])) {
            finish_error(cs->srv, &ch->choices[i], &e);
            return respond_error(cs, &e, REJ_NONE);
        }
    omnic__api_choice_out *out = omnic_alloc_array((size_t)ch->n_choices, sizeof *out);
    if (!out) FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "out of memory");
    int64_t prompt = 0, completion = 0, cached = 0;
    for (int i = 0; i < ch->n_choices; i++) {
        const choice *c = &ch->choices[i];
        out[i] = (omnic__api_choice_out){
            .text = c->text.p, .len = c->text.len, .finish_reason = finish_reason(c->finish)};
        if (i % w->req.n == 0) prompt += c->prompt_tokens; /* a prompt counts once, whatever n */
        if (i % w->req.n == 0) cached += c->cached_tokens;
        completion += c->completion_tokens;
    }
    omnic__buf b = {0};
    omnic__api_meta meta = w->meta;
    meta.cached_tokens = cached;
    if (w->transcribe) { /* OpenAI's transcription bodies: {"text"}, the text itself, or verbose */
        const omnic__media_item *it = w->n_media ? &w->media[0] : NULL;
        const double seconds = it && it->out_w > 0 ? (double)it->out_h / (double)it->out_w : 0;
        if (w->transcribe == 2) {
            omnic__buf_put(&b, out[0].text ? out[0].text : "", out[0].len);
            omnic_free(out);
            return respond(cs, 200, "text/plain; charset=utf-8", &b, NULL, NULL);
        }
        omnic__buf_puts(&b, w->transcribe == 3 ? "{\"task\":\"transcribe\",\"language\":" : "{");
        if (w->transcribe == 3) {
            omnic__buf_json_str(&b, w->language, strlen(w->language));
            omnic__buf_printf(&b, ",\"duration\":%.3f,", seconds);
        }
        omnic__buf_puts(&b, "\"text\":");
        omnic__buf_json_str(&b, out[0].text ? out[0].text : "", out[0].len);
        if (w->transcribe == 3) omnic__buf_puts(&b, ",\"segments\":[]");
        omnic__buf_printf(&b,
                          ",\"usage\":{\"type\":\"tokens\",\"input_tokens\":%lld,\"output_tokens\":%lld,"
                          "\"total_tokens\":%lld}}",
                          (long long)prompt, (long long)completion, (long long)(prompt + completion));
        omnic_free(out);
        return respond_json(cs, 200, &b);
    }
    omnic__api_body(&b, &meta, out, ch->n_choices, prompt, completion);
    omnic_free(out);
    return respond_json(cs, 200, &b);
}

/* Prompt tokens of choice i (logical, as usage reports them). */
static int64_t prompt_of(const work *w, int i)
{
    return (int64_t)w->n_ids[(size_t)(i / w->req.n)];
}

/* An SSE comment: clients ignore it; a peer that closed (not just half-closed) answers it
 * with a reset, which the watchdog then sees. */
static const char probe_comment[] = ": keep-alive\n\n";

/* SSE content reader (MHD polling thread): never blocks. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    conn_state *cs = cls;
    channel *ch = cs->ch;
    const work *w = ch->w;
    (void)pos;
    for (;;) {
        if (cs->out_pos < cs->out.len) {
            size_t n = cs->out.len - cs->out_pos;
            if (n > max) n = max;
            memcpy(buf, cs->out.p + cs->out_pos, n);
            cs->out_pos += n;
            return (ssize_t)n;
        }
        omnic__buf_clear(&cs->out);
        cs->out_pos = 0;
        if (cs->stream_ended) return MHD_CONTENT_READER_END_OF_STREAM;
        int nc = ch->n_choices;
        bool *done_now = cs->final_sent + nc; /* scratch: second half of the allocation */
        bool any = !cs->roles_sent && w->meta.kind == OMNIC_API_CHAT, overflow, probe;
        pthread_mutex_lock(&ch->mu);
        if (ch->client_gone) {
            pthread_mutex_unlock(&ch->mu);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        for (int i = 0; i < nc; i++) {
            choice *c = &ch->choices[i];
            if (c->text.len) {
                omnic__buf t = c->text;
                c->text = cs->spare[i];
                cs->spare[i] = t;
                any = true;
            }
            cs->tokens[i] = c->done ? c->completion_tokens : c->tokens;
            done_now[i] = c->done && !cs->final_sent[i];
            any |= done_now[i];
        }
        overflow = ch->overflow;
        probe = ch->probe;
        ch->probe = false;
        if (!any && !overflow && !probe) {
            ch->suspended = true;
            MHD_suspend_connection(cs->conn);
            pthread_mutex_unlock(&ch->mu);
            return 0;
        }
        pthread_mutex_unlock(&ch->mu);
        if (probe) omnic__buf_puts(&cs->out, probe_comment);
        /* format outside the lock: done choices are no longer written by the engine */
        if (!cs->roles_sent && w->meta.kind == OMNIC_API_CHAT)
            for (int i = 0; i < nc; i++)
                omnic__api_chunk_role(&cs->out, &w->meta, i, prompt_of(w, i));
        cs->roles_sent = true;
        omnic__api_error e;
        memset(&e, 0, sizeof e);
        bool failed = false;
        for (int i = 0; i < nc; i++) {
            if (cs->spare[i].len) {
                omnic__api_chunk_text(&cs->out, &w->meta, i, cs->spare[i].p, cs->spare[i].len,
                                      prompt_of(w, i), cs->tokens[i]);
                omnic__buf_clear(&cs->spare[i]);
            }
            if (!done_now[i] || failed) continue;
            cs->final_sent[i] = true;
            const choice *c = &ch->choices[i];
            if (finished_ok(c)) {
                omnic__api_chunk_finish(&cs->out, &w->meta, i, finish_reason(c->finish), prompt_of(w, i),
                                        cs->tokens[i]);
            } else {
                finish_error(cs->srv, c, &e);
                failed = true;
            }
        }
        if (overflow) return MHD_CONTENT_READER_END_WITH_ERROR; /* the client is not reading anyway */
        if (failed) {
            omnic__api_sse_error(&cs->out, &e);
            cs->stream_ended = true; /* the completion callback cancels the other choices */
        } else {
            bool all = true;
            for (int i = 0; i < nc; i++)
                all &= cs->final_sent[i];
            if (all) {
                if (w->meta.include_usage) {
                    int64_t prompt = 0, completion = 0;
                    omnic__api_meta meta = w->meta;
                    for (int i = 0; i < nc; i++) {
                        if (i % w->req.n == 0) prompt += ch->choices[i].prompt_tokens;
                        if (i % w->req.n == 0) meta.cached_tokens += ch->choices[i].cached_tokens;
                        completion += ch->choices[i].completion_tokens;
                    }
                    omnic__api_chunk_usage(&cs->out, &meta, prompt, completion);
                }
                omnic__api_sse_done(&cs->out);
                cs->stream_ended = true;
            }
        }
        if (cs->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

static void make_id(omnic__server *s, char *out, size_t n, const char *prefix)
{
    snprintf(out, n, "%s%016llx%08llx", prefix, (unsigned long long)rand64(s),
             (unsigned long long)(rand64(s) & 0xffffffffull));
}

static void live_add(omnic__server *s, channel *ch)
{
    pthread_mutex_lock(&s->mu);
    ch->next = s->live;
    if (s->live) s->live->prev = ch;
    s->live = ch;
    s->n_live++;
    pthread_mutex_unlock(&s->mu);
}

static void live_remove(omnic__server *s, channel *ch)
{
    pthread_mutex_lock(&s->mu);
    if (ch->prev)
        ch->prev->next = ch->next;
    else
        s->live = ch->next;
    if (ch->next) ch->next->prev = ch->prev;
    ch->prev = ch->next = NULL;
    s->n_live--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* ---- the preparation: media stage (media pool) ---- */

/* On a media worker: fetch, decode and preprocess each image in order (stops at the first
 * failure, when cancelled or when the request's time runs out). */
static void media_run(omnic__job *job)
{
    work *w = (work *)((char *)job - offsetof(work, media_job));
    omnic__server *s = w->srv;
    const json_t *urls = w->req.images;
    double t0 = omnic__now();
    for (size_t i = 0; i < w->n_images && w->img_st == OMNIC_OK; i++) {
        const json_t *u = json_object_get(json_array_get(urls, i), "url");
        uint8_t *bytes = NULL;
        size_t len = 0;
        w->failed = i;
        if (work_cancelled(w)) w->img_st = OMNIC_FAIL(&w->img_err, OMNIC_E_CANCELLED, "cancelled");
        if (w->img_st == OMNIC_OK) w->img_st = omnic__budget_time(&w->bud, "image preparation", &w->img_err);
        omnic__metrics *met = omnic__engine_metrics(engine_of(s));
        const bool audio = json_object_get(json_array_get(urls, i), "kind") != NULL;
        const omnic__media_proc *proc = audio ? &w->proc_audio : &w->proc;
        const int mod = audio ? OMNIC_MODALITY_AUDIO : OMNIC_MODALITY_IMAGE;
        if (w->img_st == OMNIC_OK) {
            double tf = omnic__now();
            w->img_st = (audio ? omnic__media_fetch_audio : omnic__media_fetch)(
                json_string_value(u), json_string_length(u), s->media_dir[0] ? s->media_dir : NULL,
                &s->o.remote, OMNIC_MAX_MEDIA_BYTES, &bytes, &len, &w->img_err);
            omnic__metrics_observe_media(met, OMNIC_MS_FETCH, mod, omnic__now() - tf);
        }
        if (w->img_st == OMNIC_OK) {
            omnic__media_times mt;
            omnic__media_memo *memo = omnic__engine_media_memo(engine_of(s));
            bool hit = false;
            w->img_st = omnic__media_prepare_memo(memo, proc, bytes, len, &w->lim, &w->media_job.cancel,
                                                  &w->media[i], &mt, &hit, &w->img_err);
            if (w->img_st == OMNIC_OK && !hit) { /* the stages of items that ran them */
                omnic__metrics_observe_media(met, OMNIC_MS_DECODE, mod, mt.decode);
                omnic__metrics_observe_media(met, OMNIC_MS_PREPROCESS, mod, mt.preprocess);
            }
            if (memo) {
                omnic__blob_cache_stats ms;
                omnic__media_memo_stats(memo, &ms);
                omnic__metrics_media_memo(met, ms.hits, ms.misses, ms.bytes);
            }
        }
        omnic_free(bytes);
        if (w->img_st == OMNIC_OK) w->n_media = i + 1;
    }
    omnic__metrics_observe(omnic__engine_metrics(engine_of(s)), OMNIC_H_MEDIA, omnic__now() - t0);
}

static void part_done(work *w);

static void media_done(omnic__job *job)
{
    work *w = (work *)((char *)job - offsetof(work, media_job));
    if (!job->ran) w->img_st = OMNIC_FAIL(&w->img_err, OMNIC_E_CANCELLED, "cancelled");
    part_done(w);
}

/* Validates the request's image parts and queues them on the media pool (they are prepared
 * while the chat template runs). false: w's error is set. */
static bool media_start(work *w)
{
    omnic__server *s = w->srv;
    const json_t *urls = w->req.images;
    size_t n = json_array_size(urls), clips = 0;
    for (size_t i = 0; i < n; i++)
        clips += json_object_get(json_array_get(urls, i), "kind") != NULL;
    const char *param0 = json_string_value(json_object_get(json_array_get(urls, 0), "param"));
    w->audio = clips > 0;
    for (int a = 0; a < 2; a++) { /* each modality the request holds must be served */
        const bool audio = a == 1;
        if (!(audio ? clips : n - clips) || (audio ? s->audio_ok : s->images_ok)) continue;
        size_t first = 0; /* the first part of that modality names the problem */
        while (first < n && (json_object_get(json_array_get(urls, first), "kind") != NULL) != audio)
            first++;
        const char *param = json_string_value(json_object_get(json_array_get(urls, first), "param"));
        const omnic__model *m = omnic__engine_model(engine_of(s));
        const char *why = omnic__model_refusal(m, audio ? OMNIC_MODALITY_AUDIO : OMNIC_MODALITY_IMAGE);
        WORK_FAIL(w, REJ_UNSUPPORTED, 400, NULL, "unsupported_parameter", param ? param : param0,
                  "This model does not accept '%s' content (its input modalities: text%s%s)%s%s",
                  audio ? "input_audio" : "image_url", s->images_ok ? ", image" : "",
                  s->audio_ok ? ", audio" : "", why ? ": " : "", why ? why : "");
        return false;
    }
    int max = s->o.max_images > 0 && s->o.max_images < OMNIC_MAX_REQUEST_IMAGES ? s->o.max_images
                                                                                : OMNIC_MAX_REQUEST_IMAGES;
    if (n > (size_t)max) {
        WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_value", "messages",
                  "The request has %zu images, over the limit of %d per request", n, max);
        return false;
    }
    w->media = omnic_alloc_array(n, sizeof *w->media);
    w->media_ptrs = omnic_alloc_array(n, sizeof *w->media_ptrs);
    if (!w->media || !w->media_ptrs) {
        WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "out of memory");
        return false;
    }
    w->n_images = n;
    w->lim = (omnic__image_limits){.max_pixels = w->bud.image_pixels,
                                   .max_decoder_bytes = w->bud.jpeg_decoder_bytes};
    /* a request's min_pixels / max_pixels, within what the server's processor allows */
    const omnic__media_kwargs kw = {.min_pixels = w->req.min_pixels,
                                    .max_pixels = w->req.max_pixels,
                                    .pan_and_scan = w->req.pan_and_scan,
                                    .pas_min_crop = w->req.pas_min_crop,
                                    .pas_max_crops = w->req.pas_max_crops,
                                    .pas_min_ratio = w->req.pas_min_ratio};
    omnic_err err;
    omnic_status st = OMNIC_OK;
    if (clips < n && (st = omnic__media_proc_with(&w->proc, &s->prep, &kw, &err)) == OMNIC_OK)
        w->have_proc = true;
    if (st == OMNIC_OK && clips &&
        (st = omnic__media_proc_with(&w->proc_audio, &s->prep_audio, &kw, &err)) == OMNIC_OK)
        w->have_proc_audio = true;
    if (st != OMNIC_OK) {
        if (st == OMNIC_E_NOMEM)
            WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "out of memory");
        else
            WORK_FAIL(w, st == OMNIC_E_UNSUPPORTED ? REJ_UNSUPPORTED : REJ_INVALID, 400, NULL,
                      st == OMNIC_E_UNSUPPORTED ? "unsupported_parameter" : "invalid_value",
                      "mm_processor_kwargs", "%s", err.msg);
        return false;
    }
    atomic_fetch_add(&w->parts, 1);
    st = omnic__job_pool_submit(s->media, &w->media_job, &err);
    if (st != OMNIC_OK) {
        atomic_fetch_sub(&w->parts, 1); /* the text stage still holds one: never the last */
        if (st == OMNIC_E_TOO_LARGE)
            WORK_FAIL(w, REJ_QUEUE_FULL, 429, "rate_limit_error", "media_queue_full", NULL,
                      "The server is busy preparing images (%s); retry later", err.msg);
        else
            WORK_FAIL(w, REJ_SHUTTING_DOWN, 503, NULL, "shutting_down", NULL, "The server is shutting down");
        return false;
    }
    return true;
}

/* After the media stage: the item list and the warning, or the error of the image that failed. */
static bool media_result(work *w)
{
    omnic__server *s = w->srv;
    if (w->img_st == OMNIC_OK) {
        for (size_t i = 0; i < w->n_media; i++) {
            const omnic__media_item *it = &w->media[i];
            w->media_ptrs[i] = it;
            if (it->modality == OMNIC_MODALITY_AUDIO && it->limited) { /* truncated by the processor */
                const double kept = (double)it->out_h / (double)it->out_w;
                if (!w->warning[0])
                    snprintf(
                        w->warning, sizeof w->warning,
                        "audio %zu was truncated to its first %.0f s (%lld samples at %lld Hz): the model's "
                        "feature extractor keeps no more",
                        i, kept, (long long)it->out_h, (long long)it->out_w);
                OMNIC_LOG_W("request: audio %zu truncated to its first %.0f s", i, kept);
            }
            if (it->modality == OMNIC_MODALITY_AUDIO && it->in_w != it->out_w) { /* in_w / out_w: the rates */
                if (!w->warning[0])
                    snprintf(w->warning, sizeof w->warning,
                             "audio %zu was resampled from %lld Hz to %lld Hz (soxr, high quality)", i,
                             (long long)it->in_w, (long long)it->out_w);
                OMNIC_LOG_W("request: audio %zu resampled from %lld Hz to %lld Hz", i, (long long)it->in_w,
                            (long long)it->out_w);
            }
            if (it->modality == OMNIC_MODALITY_AUDIO) continue;
            if (!it->limited || w->warning[0]) continue; /* the first resized image is reported */
            snprintf(
                w->warning, sizeof w->warning,
                "image %zu was resized from %lldx%lld to %lldx%lld by %s of %lld pixels (the checkpoint's "
                "max_pixels is higher)",
                i, (long long)it->in_w, (long long)it->in_h, (long long)it->out_w, (long long)it->out_h,
                s->o.max_image_pixels > 0 ? "this server's --max-image-pixels limit"
                                          : "the encoder's capacity",
                (long long)omnic__media_proc_max_pixels(&s->prep, false));
            OMNIC_LOG_W("request: %s", w->warning);
        }
        return true;
    }
    const char *param =
        w->transcribe ? "file"
                      : json_string_value(json_object_get(json_array_get(w->req.images, w->failed), "param"));
    if (w->img_st == OMNIC_E_CANCELLED)
        WORK_FAIL(w, REJ_SHUTTING_DOWN, 503, NULL, "shutting_down", NULL,
                  atomic_load(&s->state) != ST_READY ? "The server is shutting down"
                                                     : "The request was cancelled");
    else if (w->img_st == OMNIC_E_TIMEOUT)
        fail_timeout(w, &w->img_err);
    else if (w->img_st == OMNIC_E_NOMEM)
        WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "image %zu: %s", w->failed, w->img_err.msg);
    else if (w->transcribe || json_object_get(json_array_get(w->req.images, w->failed), "kind"))
        WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_audio", param, "Invalid audio in '%s': %s", param,
                  w->img_err.msg);
    else
        WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_image", param, "Invalid image in '%s': %s", param,
                  w->img_err.msg);
    return false;
}

/* ---- the preparation: generation requests ---- */

static void work_generate(work *w)
{
    if (!work_parse(w)) return;
    omnic__server *s = w->srv;
    omnic__engine *eng = engine_of(s);
    const omnic__model *m = omnic__engine_model(eng);
    omnic__api_kind kind = w->rt == R_CHAT ? OMNIC_API_CHAT : OMNIC_API_COMPLETION;
    omnic__api_error e;
    omnic__api_request *rq = &w->req;
    if (omnic__api_parse_tagged(kind, w->json, m->n_slots, omnic__media_prompt_tag(m, OMNIC_MODALITY_IMAGE),
                                omnic__media_prompt_tag(m, OMNIC_MODALITY_AUDIO), rq, &e) != OMNIC_OK) {
        work_error(w, &e, reject_of(&e));
        return;
    }
    if (rq->model && strcmp(rq->model, s->model_id)) {
        WORK_FAIL(w, REJ_MODEL_NOT_FOUND, 404, NULL, "model_not_found", "model",
                  "The model '%.128s' does not exist (this server serves '%s')", rq->model, s->model_id);
        return;
    }
    /* generation_config.json's defaults for what the body left out (max_tokens: at most what fits) */
    w->gen_max_tokens = -1;
    omnic__gen_defaults_apply(omnic__engine_gen_defaults(eng), rq->sampling_given, &rq->sampling,
                              &w->gen_max_tokens);
    /* prompts -> token ids */
    w->n_prompts = kind == OMNIC_API_CHAT ? 1 : rq->n_prompts;
    w->ids = omnic_alloc_array(w->n_prompts, sizeof *w->ids);
    w->n_ids = omnic_alloc_array(w->n_prompts, sizeof *w->n_ids);
    if (!w->ids || !w->n_ids) {
        WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "out of memory");
        return;
    }
    if (kind == OMNIC_API_CHAT) {
        /* images before the template: a text-only model says so first; they are prepared on the
         * media pool while the template runs here */
        if (rq->images && !media_start(w)) return;
        if (template_parts(s) && omnic__chat_content_parts(rq->messages) != OMNIC_OK) {
            WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "out of memory");
            return;
        }
        if (chat_ids(w, rq->messages, true, &w->ids[0], &w->n_ids[0], &e) != OMNIC_OK) {
            work_error(w, &e, reject_of(&e));
            return;
        }
        return;
    }
    for (size_t p = 0; p < w->n_prompts; p++) {
        const omnic__api_prompt *pr = &rq->prompts[p];
        if (pr->ids) {
            w->ids[p] = omnic_alloc_array(pr->n_ids, sizeof *w->ids[p]);
            if (!w->ids[p]) {
                WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "out of memory");
                return;
            }
            memcpy(w->ids[p], pr->ids, pr->n_ids * sizeof *pr->ids);
            w->n_ids[p] = pr->n_ids;
            continue;
        }
        omnic_err err;
        omnic_status st = omnic__tokenizer_encode(omnic__engine_tokenizer(eng), pr->text, pr->len, true,
                                                  &w->ids[p], &w->n_ids[p], &err);
        if (st != OMNIC_OK) {
            if (st == OMNIC_E_NOMEM)
                WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "%s", err.msg);
            else
                WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_value", "prompt", "%s", err.msg);
            return;
        }
    }
}

/* Maps an engine submit failure to the request's error. */
static void submit_failed(work *w, omnic_status st, const omnic_err *err)
{
    switch (st) {
    case OMNIC_E_CAPACITY:
        WORK_FAIL(w, REJ_CAPACITY, 400, NULL, "context_length_exceeded", "max_tokens", "%s", err->msg);
        break;
    case OMNIC_E_TOO_LARGE:
        WORK_FAIL(w, REJ_QUEUE_FULL, 429, "rate_limit_error", "queue_full", NULL,
                  "The server is busy: %s; retry later", err->msg);
        break;
    case OMNIC_E_CANCELLED:
        WORK_FAIL(w, REJ_SHUTTING_DOWN, 503, NULL, "shutting_down", NULL, "The server is shutting down");
        break;
    case OMNIC_E_INVALID:
        WORK_FAIL(w, REJ_INVALID, 400, NULL, "invalid_value", NULL, "%s", err->msg);
        break;
    case OMNIC_E_NOMEM:
        WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "%s", err->msg);
        break;
    default:
        WORK_FAIL(w, REJ_NONE, 500, NULL, NULL, NULL, "%s", err->msg);
        break;
    }
}

/* Every stage is done and succeeded: one engine request per choice. */
static void work_submit(work *w)
{
    omnic__server *s = w->srv;
    channel *ch = w->ch;
    omnic__engine *eng = engine_of(s);
    const omnic__model *m = omnic__engine_model(eng);
    const omnic__api_request *rq = &w->req;
    omnic__api_kind kind = w->rt == R_CHAT ? OMNIC_API_CHAT : OMNIC_API_COMPLETION;
    omnic_err terr;
    if (omnic__budget_time(&w->bud, "the request's preparation", &terr) != OMNIC_OK) {
        fail_timeout(w, &terr);
        return;
    }
    /* Gemma 3 pan-and-scan: the crops change the prompt's text (Gemma3Processor writes each such
     * image as "Here is the original image ... and here are some crops ..."): render it again */
    for (size_t i = 0; kind == OMNIC_API_CHAT && i < w->n_media; i++)
        w->has_crops |= (w->crops[i] = w->media[i].crops) > 0;
    if (w->has_crops) {
        omnic__api_error e;
        omnic_free(w->ids[0]), w->ids[0] = NULL;
        if (chat_ids(w, rq->messages, true, &w->ids[0], &w->n_ids[0], &e) != OMNIC_OK) {
            work_error(w, &e, reject_of(&e));
            return;
        }
    }
    /* max_tokens: as given (the engine checks it against the context), else what fits
     * (chat) or OpenAI's legacy default of 16 (completions) */
    const int64_t cap = m->capacity;
    for (size_t p = 0; p < w->n_prompts; p++)
        if (rq->max_tokens < 0 && (int64_t)w->n_ids[p] >= cap) {
            WORK_FAIL(w, REJ_CAPACITY, 400, NULL, "context_length_exceeded", "messages",
                      "The prompt of %zu tokens leaves no room to generate in the context of %lld tokens",
                      w->n_ids[p], (long long)cap);
            return;
        }
    int n_choices = (int)w->n_prompts * rq->n;
    if (!channel_set_choices(ch, n_choices, rq->stream)) {
        WORK_FAIL(w, REJ_NONE, 503, NULL, NULL, NULL, "out of memory");
        return;
    }
    make_id(s, w->id, sizeof w->id, kind == OMNIC_API_CHAT ? "chatcmpl-" : "cmpl-");
    w->meta = (omnic__api_meta){.kind = kind,
                                .id = w->id,
                                .created = (int64_t)time(NULL),
                                .model = s->model_id,
                                .fingerprint = s->fingerprint,
                                .include_usage = rq->include_usage,
                                .continuous_usage = rq->continuous_usage,
                                .warning = w->warning};
    int64_t media_rows = 0; /* a chat's media items: the rows their placeholders expand to */
    for (size_t k = 0; k < w->n_media; k++) {
        int64_t r = 0;
        omnic_err rerr;
        if (omnic__media_item_rows(m, &w->media[k], &r, &rerr) == OMNIC_OK)
            media_rows += r - omnic__media_item_parts(&w->media[k]);
    }
    for (int i = 0; i < n_choices; i++) {
        size_t p = (size_t)(i / rq->n);
        int j = i % rq->n;
        int64_t room = cap - (int64_t)w->n_ids[p] - media_rows;
        /* LongRoPE: a media prompt's cache is not recomputed with the long factors, so a default
         * length stops where it would need that (an explicit max_tokens past it is refused) */
        const int64_t orig = m->dec.cfg.rope_original_max_pos, rows = (int64_t)w->n_ids[p] + media_rows;
        if (w->n_media && m->dec.rope_switch && rows < orig && room > orig - rows) room = orig - rows;
        int64_t max_tokens = rq->max_tokens > 0       ? rq->max_tokens
                             : w->gen_max_tokens > 0  ? (room < w->gen_max_tokens ? room : w->gen_max_tokens)
                             : kind == OMNIC_API_CHAT ? room
                                                      : (room < 16 ? room : 16);
        omnic__gen_request r = {.prompt = w->ids[p],
                                .n_prompt = w->n_ids[p],
                                .sampling = rq->sampling,
                                .max_tokens = max_tokens,
                                .stops = rq->stops,
                                .n_stops = rq->n_stops,
                                .timeout_s = s->o.request_timeout_s,
                                .started_s = w->started,
                                .client = w->client,
                                .skip_special = true,
                                .ignore_eos = rq->ignore_eos,
                                .cb = on_engine_event,
                                .cb_ctx = &ch->choices[i],
                                .media = w->media_ptrs,
                                .n_media = w->n_media};
        /* n > 1: choice j samples with seed + j (reproducible), or a fresh random seed */
        r.sampling.seed = rq->has_seed ? rq->sampling.seed + (uint64_t)j : rand64(s);
        ch->choices[i].prompt = (int)p;
        pthread_mutex_lock(&ch->mu);
        ch->refs++; /* the engine request's reference, dropped by its DONE event */
        ch->n_submitted++;
        pthread_mutex_unlock(&ch->mu);
        uint64_t id = 0;
        omnic_err err;
        omnic_status st = omnic__engine_submit(eng, &r, &id, &err);
        pthread_mutex_lock(&ch->mu);
        if (st != OMNIC_OK) {
            ch->refs--;
            ch->n_submitted--;
        } else {
            ch->choices[i].id = id;
        }
        pthread_mutex_unlock(&ch->mu);
        if (st != OMNIC_OK) {
            channel_cancel(ch); /* the ones already queued */
            submit_failed(w, st, &err);
            return;
        }
        /* the HTTP side left meanwhile: channel_cancel may have missed this id */
        if (atomic_load(&ch->cancel)) omnic__engine_cancel(eng, id);
    }
    w->generating = true;
}

/* The last stage to finish: combine the stages' results, submit, and hand the request back
 * to its connection. */
static void work_finish(work *w)
{
    channel *ch = w->ch;
    bool generation = w->rt == R_CHAT || w->rt == R_COMPLETIONS;
    bool media_failed = w->n_images && w->img_st != OMNIC_OK;
    /* an image's own error comes first (as when images were prepared before the template);
     * images the text stage's failure cancelled say nothing */
    if (media_failed && !(w->failed_text && w->img_st == OMNIC_E_CANCELLED))
        media_result(w);
    else if (generation && !w->failed_text && media_result(w) && !work_cancelled(w))
        work_submit(w);
    struct MHD_Connection *resume = NULL;
    pthread_mutex_lock(&ch->mu);
    ch->prepared = true;
    if (ch->suspended && ch->conn) {
        ch->suspended = false;
        resume = ch->conn;
    }
    pthread_mutex_unlock(&ch->mu);
    if (resume) MHD_resume_connection(resume);
    channel_release(ch); /* the preparation's reference */
}

static void part_done(work *w)
{
    if (atomic_fetch_sub(&w->parts, 1) == 1) work_finish(w);
}

/* The text stage, on a request worker. */
static void work_run(omnic__job *job)
{
    work *w = (work *)job;
    omnic_err err;
    if (work_cancelled(w)) {
        WORK_FAIL(w, REJ_NONE, 503, NULL, "shutting_down", NULL, "The request was cancelled");
        return;
    }
    if (omnic__budget_time(&w->bud, "the wait for a request worker", &err) != OMNIC_OK) {
        fail_timeout(w, &err);
        return;
    }
    if (w->rt == R_TOKENIZE)
        work_tokenize(w);
    else if (w->rt == R_DETOKENIZE)
        work_detokenize(w);
    else
        work_generate(w);
    if (w->failed_text) atomic_store(&w->media_job.cancel, true); /* images no one will use */
}

static void work_done(omnic__job *job)
{
    work *w = (work *)job;
    if (!job->ran) /* the pool stopped first */
        WORK_FAIL(w, REJ_SHUTTING_DOWN, 503, NULL, "shutting_down", NULL, "The server is shutting down");
    part_done(w);
}

/* ---- generation and token routes: the HTTP side ---- */

/* The preparation is done: its answer, or the start of the generation's response. */
static enum MHD_Result answer_prepared(conn_state *cs)
{
    channel *ch = cs->ch;
    work *w = ch->w;
    snprintf(cs->warning, sizeof cs->warning, "%s", w->warning);
    if (!w->generating) {
        if (!w->failed_text) return respond(cs, w->status, "application/json", &w->resp, NULL, NULL);
        return respond_error(cs, &w->err, w->why);
    }
    int n = ch->n_choices;
    cs->n_choices = n;
    cs->spare = omnic_alloc_array((size_t)n, sizeof *cs->spare);
    cs->final_sent = omnic_alloc_array((size_t)n * 2, sizeof *cs->final_sent);
    cs->tokens = omnic_alloc_array((size_t)n, sizeof *cs->tokens);
    if (!cs->spare || !cs->final_sent || !cs->tokens) {
        channel_cancel(ch);
        FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "out of memory");
    }
    if (!w->req.stream) return finish_nonstream(cs);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_reader, cs, NULL);
    if (!resp) {
        channel_cancel(ch);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    add_common_headers(cs, resp);
    count_status(cs->srv, 200);
    cs->ph = PH_STREAMING;
    enum MHD_Result ok = MHD_queue_response(cs->conn, 200, resp);
    MHD_destroy_response(resp);
    return ok;
}

/* Suspends until the preparation is done (its completion resumes the connection). */
static enum MHD_Result wait_prepared(conn_state *cs)
{
    channel *ch = cs->ch;
    pthread_mutex_lock(&ch->mu);
    if (ch->client_gone) {
        pthread_mutex_unlock(&ch->mu);
        return MHD_NO;
    }
    if (!ch->prepared) {
        ch->suspended = true;
        MHD_suspend_connection(cs->conn);
        pthread_mutex_unlock(&ch->mu);
        cs->ph = PH_PREPARING;
        return MHD_YES;
    }
    pthread_mutex_unlock(&ch->mu);
    return answer_prepared(cs);
}

/* The engine's fairness key of c's peer: its IPv4 address, or its IPv6 /64 (what one host
 * usually gets), tagged by family. */
static uint64_t client_key(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr) return 0;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        return (1ull << 32) | ntohl(a->sin_addr.s_addr);
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) { /* an IPv4 client of a [::] listener */
            uint32_t v4;
            memcpy(&v4, a->sin6_addr.s6_addr + 12, 4);
            return (1ull << 32) | ntohl(v4);
        }
        uint64_t k = 0;
        memcpy(&k, a->sin6_addr.s6_addr, 8);
        return k ^ (2ull << 62);
    }
    return 0;
}

/* The body is complete: hand the request to the request pool (a full queue is a 429). */
static enum MHD_Result start_work(conn_state *cs)
{
    omnic__server *s = cs->srv;
    channel *ch = channel_create(engine_of(s));
    work *w = ch ? omnic_alloc_array(1, sizeof *w) : NULL;
    if (!w) {
        if (ch) channel_free(ch);
        FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "out of memory");
    }
    w->srv = s;
    w->ch = ch;
    w->rt = cs->rt;
    snprintf(w->content_type, sizeof w->content_type, "%s", cs->content_type);
    w->started = cs->started;
    w->client = client_key(cs->conn);
    w->body = cs->body;
    memset(&cs->body, 0, sizeof cs->body);
    w->reserved = cs->reserved;
    cs->reserved = 0;
    w->bud = s->budget;
    if (s->o.request_timeout_s > 0) w->bud.deadline = cs->started + s->o.request_timeout_s;
    atomic_init(&w->parts, 1);
    omnic__job_init(&w->job, work_run, work_done);
    omnic__job_init(&w->media_job, media_run, media_done);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(cs->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    ch->w = w;
    ch->conn = cs->conn;
    ch->fd = ci ? ci->connect_fd : -1;
    ch->max_text = s->max_text;
    ch->overflows = &s->slow_clients;
    ch->refs++; /* the preparation's */
    cs->ch = ch;
    live_add(s, ch);
    omnic_err err;
    omnic__job_pool *pool = w->body.len < OMNIC_SMALL_BODY_BYTES ? s->small : s->requests;
    omnic_status st = omnic__job_pool_submit(pool, &w->job, &err);
    if (st != OMNIC_OK) {
        pthread_mutex_lock(&ch->mu);
        ch->refs--;
        ch->prepared = true; /* nothing runs: the HTTP side answers */
        pthread_mutex_unlock(&ch->mu);
        if (st == OMNIC_E_TOO_LARGE)
            FAIL_RESPONSE(cs, REJ_QUEUE_FULL, 429, "request_queue_full", NULL,
                          "The server is busy (%s); retry later", err.msg);
        FAIL_RESPONSE(cs, REJ_SHUTTING_DOWN, 503, "shutting_down", NULL, "The server is shutting down");
    }
    return wait_prepared(cs);
}

/* ---- the in-flight body budget and read deadlines ---- */

/* Takes n more bytes of the server's in-flight body budget into *reserved; false when they
 * do not fit. */
static bool inflight_take(omnic__server *s, size_t n, size_t *reserved)
{
    size_t cur = atomic_load(&s->inflight);
    do {
        if (n > s->inflight_max || cur > s->inflight_max - n) return false;
    } while (!atomic_compare_exchange_weak(&s->inflight, &cur, cur + n));
    *reserved += n;
    return true;
}

static void inflight_release(omnic__server *s, size_t *reserved)
{
    if (*reserved) atomic_fetch_sub(&s->inflight, *reserved);
    *reserved = 0;
}

static conn_watch *watch_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The connection's request is read (receiving false) or a new one may start (true). */
static void watch_mark(omnic__server *s, struct MHD_Connection *c, bool receiving)
{
    conn_watch *wt = watch_of(c);
    if (!wt) return;
    pthread_mutex_lock(&s->wmu);
    wt->receiving = receiving;
    wt->t0 = omnic__now();
    pthread_mutex_unlock(&s->wmu);
}

/* ---- libmicrohttpd callbacks ---- */

/* First call of a request: route, method, CORS preflight, auth and declared body size. */
static enum MHD_Result first_call(conn_state *cs, const char *url, const char *method)
{
    omnic__server *s = cs->srv;
    struct MHD_Connection *c = cs->conn;
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    cs->origin = cors_match(s, origin);
    bool post = false;
    cs->rt = route_of(url, &post);
    /* DNS rebinding: a name that is not this server's is refused (but /health, for probes) */
    if (cs->rt != R_HEALTH && !omnic__host_allowed(host, s->hosts, s->n_hosts))
        FAIL_RESPONSE(cs, REJ_HOST, 403, "host_not_allowed", NULL,
                      "The Host header '%.100s' is not one this server answers to (--allowed-hosts)",
                      host ? host : "");
    /* cross-site requests: a browser names the page's origin; only listed ones, or our own */
    if (origin && !cs->origin && !omnic__origin_is_host(origin, host))
        FAIL_RESPONSE(cs, REJ_ORIGIN, 403, "origin_not_allowed", NULL,
                      "Requests from the origin '%.100s' are not allowed (--cors-origin)", origin);
    if (cs->rt == R_NONE)
        FAIL_RESPONSE(cs, REJ_NOT_FOUND, 404, "unknown_url", NULL, "Unknown request URL: %.16s %.256s",
                      method, url);
    if (!strcmp(method, MHD_HTTP_METHOD_OPTIONS)) {
        const char *allow = post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
        cs->ph = PH_DONE;
        struct MHD_Response *r =
            MHD_create_response_from_buffer(0, (void *)(uintptr_t) "", MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, "Allow", allow);
        if (cs->origin) {
            MHD_add_response_header(r, "Access-Control-Allow-Methods", allow);
            MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
            MHD_add_response_header(r, "Access-Control-Max-Age", "600");
        }
        add_common_headers(cs, r);
        count_status(s, 204);
        enum MHD_Result ok = MHD_queue_response(c, 204, r);
        MHD_destroy_response(r);
        return ok;
    }
    bool method_ok = post ? !strcmp(method, MHD_HTTP_METHOD_POST)
                          : !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    if (!method_ok)
        FAIL_RESPONSE(cs, REJ_METHOD, 405, "method_not_allowed", NULL,
                      "Method %.16s is not allowed for %s (use %s)", method, url, post ? "POST" : "GET");
    if (s->have_key && cs->rt != R_HEALTH && !auth_ok(s, c)) {
        omnic__api_error e;
        omnic__api_fail(&e, 401, NULL, "invalid_api_key", NULL,
                        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION)
                            ? "Incorrect API key provided"
                            : "You didn't provide an API key: send 'Authorization: Bearer YOUR_KEY'");
        return respond_error(cs, &e, REJ_AUTH);
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (cs->rt == R_TRANSCRIBE) { /* OpenAI's form; the browser guard is the API key and CORS */
        if (!ct || strncasecmp(ct, "multipart/form-data", 19) != 0)
            FAIL_RESPONSE(cs, REJ_CONTENT_TYPE, 415, "unsupported_media_type", NULL,
                          "/v1/audio/transcriptions takes multipart/form-data (the body's Content-Type is "
                          "'%.100s')",
                          ct ? ct : "");
        snprintf(cs->content_type, sizeof cs->content_type, "%s", ct);
    } else if (post && ct &&
               !omnic__content_type_json(
                   ct)) /* form and text/plain posts are what browsers send cross-site */
        FAIL_RESPONSE(cs, REJ_CONTENT_TYPE, 415, "unsupported_media_type", NULL,
                      "The request body's Content-Type '%.100s' is not JSON: send application/json", ct);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(cl, &end, 10);
        if (!errno && end != cl && v > s->max_body) {
            cs->too_large = true;
            FAIL_RESPONSE(cs, REJ_BODY_TOO_LARGE, 413, "request_too_large", NULL,
                          "The request body of %s bytes is over the server's limit of %zu bytes", cl,
                          s->max_body);
        }
        /* the declared body is reserved up front: a full budget is refused before reading it.
         * Small bodies are not counted (at most OMNIC_SMALL_BODY_BYTES per connection), so
         * stalled big uploads cannot lock out everyone's small requests */
        if (!errno && end != cl && v >= OMNIC_SMALL_BODY_BYTES && !inflight_take(s, (size_t)v, &cs->reserved))
            FAIL_RESPONSE(cs, REJ_BODY_BUDGET, 503, "server_busy", NULL,
                          "The server holds its limit of %zu bytes of request bodies in flight "
                          "(--max-inflight-body); retry later",
                          s->inflight_max);
    }
    return MHD_YES;
}

static enum MHD_Result dispatch(conn_state *cs, const char *url)
{
    omnic__server *s = cs->srv;
    if (cs->rt == R_HEALTH) return do_health(cs);
    if (cs->rt == R_METRICS) return do_metrics(cs);
    int st = atomic_load(&s->state);
    if (st == ST_LOADING)
        FAIL_RESPONSE(cs, REJ_LOADING, 503, "model_loading", NULL,
                      "The model is still loading; retry shortly");
    bool generate = cs->rt == R_CHAT || cs->rt == R_COMPLETIONS || cs->rt == R_TRANSCRIBE;
    if (st != ST_READY || (generate && !engine_of(s)))
        FAIL_RESPONSE(cs, REJ_SHUTTING_DOWN, 503, "shutting_down", NULL, "The server is shutting down");
    if (cs->too_large)
        FAIL_RESPONSE(cs, REJ_BODY_TOO_LARGE, 413, "request_too_large", NULL,
                      "The request body is over the server's limit of %zu bytes", s->max_body);
    if (cs->over_budget)
        FAIL_RESPONSE(cs, REJ_BODY_BUDGET, 503, "server_busy", NULL,
                      "The server holds its limit of %zu bytes of request bodies in flight "
                      "(--max-inflight-body); retry later",
                      s->inflight_max);
    switch (cs->rt) {
    case R_MODELS:
    case R_MODEL_ONE:
        return do_models(cs, url);
    case R_TOKENIZE:
    case R_DETOKENIZE:
    case R_CHAT:
    case R_COMPLETIONS:
    case R_TRANSCRIBE:
        return start_work(cs);
    default:
        FAIL_RESPONSE(cs, REJ_NOT_FOUND, 404, "unknown_url", NULL, "Unknown request URL: %.256s", url);
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    omnic__server *s = cls;
    conn_state *cs = *con_cls;
    if (!cs) {
        cs = omnic_alloc_array(1, sizeof *cs);
        if (!cs) return MHD_NO;
        cs->srv = s;
        cs->conn = c;
        cs->started = omnic__now();
        *con_cls = cs;
        return first_call(cs, url, method);
    }
    switch (cs->ph) {
    case PH_RECEIVING:
        if (*upload_data_size) {
            size_t n = *upload_data_size;
            *upload_data_size = 0;
            if (cs->too_large || cs->over_budget)
                return MHD_YES; /* discard; the error once the upload ends */
            if (cs->body.len + n > s->max_body) {
                cs->too_large = true;
                omnic__buf_free(&cs->body);
                inflight_release(s, &cs->reserved);
                return MHD_YES;
            }
            size_t need = cs->body.len + n > cs->reserved ? cs->body.len + n - cs->reserved : 0;
            if (cs->body.len + n < OMNIC_SMALL_BODY_BYTES) need = 0; /* small: not counted (above) */
            if (need && !inflight_take(s, need, &cs->reserved)) {    /* an undeclared (chunked) body */
                cs->over_budget = true;
                omnic__buf_free(&cs->body);
                inflight_release(s, &cs->reserved);
                return MHD_YES;
            }
            if (!omnic__buf_put(&cs->body, upload_data, n)) return MHD_NO;
            return MHD_YES;
        }
        watch_mark(s, c, false);
        return dispatch(cs, url);
    case PH_PREPARING:
        return wait_prepared(cs);
    case PH_WAITING:
        return finish_nonstream(cs);
    default:
        return MHD_YES;
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    omnic__server *s = cls;
    conn_state *cs = *con_cls;
    if (!cs) return;
    *con_cls = NULL;
    watch_mark(s, c, true); /* a keep-alive connection's next request starts its read deadline */
    channel *ch = cs->ch;
    if (ch) {
        live_remove(s, ch);
        pthread_mutex_lock(&ch->mu);
        ch->conn = NULL;
        ch->suspended = false;
        bool unfinished = !ch->prepared || ch->n_done < ch->n_submitted, gone = ch->client_gone;
        pthread_mutex_unlock(&ch->mu);
        if (unfinished || gone) {
            if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK || gone) atomic_fetch_add(&s->disconnects, 1);
            channel_cancel(ch);
        }
        cs->ch = NULL;
        channel_release(ch);
    }
    conn_state_free(cs);
}

/* A new connection: bound the kernel's send buffer (OMNIC_HTTP_SNDBUF) and start its read
 * deadline; a closed one stops it. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    omnic__server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_watch *wt = *socket_context;
        if (!wt) return;
        pthread_mutex_lock(&s->wmu);
        if (wt->prev)
            wt->prev->next = wt->next;
        else
            s->watches = wt->next;
        if (wt->next) wt->next->prev = wt->prev;
        pthread_mutex_unlock(&s->wmu);
        close(wt->fd);
        omnic_free(wt);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return;
    int v = OMNIC_HTTP_SNDBUF;
    setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    conn_watch *wt = omnic_alloc_array(1, sizeof *wt);
    if (!wt) return;
    wt->fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0);
    if (wt->fd < 0) {
        omnic_free(wt);
        return;
    }
    wt->t0 = omnic__now();
    wt->receiving = true;
    pthread_mutex_lock(&s->wmu);
    wt->next = s->watches;
    if (s->watches) s->watches->prev = wt;
    s->watches = wt;
    pthread_mutex_unlock(&s->wmu);
    *socket_context = wt;
}

/* ---- watchdog: disconnects of suspended connections, read deadlines ---- */

/* Shuts down the connections still reading their request past --read-timeout (libmicrohttpd
 * then sees the socket fail and closes it). */
static void read_deadlines(omnic__server *s, double now)
{
    if (!(s->read_timeout_s > 0)) return;
    pthread_mutex_lock(&s->wmu);
    for (conn_watch *wt = s->watches; wt; wt = wt->next)
        if (wt->receiving && now - wt->t0 > s->read_timeout_s) {
            shutdown(wt->fd, SHUT_RDWR);
            wt->receiving = false;
            atomic_fetch_add(&s->read_timeouts, 1);
        }
    pthread_mutex_unlock(&s->wmu);
}

/* A suspended connection's peer: reset or closed both ways is gone. A half-close (the peer
 * shut only its sending side: POLLRDHUP alone) is not a disconnect: the request goes on.
 * A peer that close()d looks the same until we write, so a half-closed stream gets an SSE
 * comment once a second; a closed peer answers it with a reset. */
static void *watchdog_main(void *arg)
{
    omnic__server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->watchdog_stop) {
        struct timespec ts;
        omnic__deadline(&ts, 0.100);
        omnic__cond_wait_until(&s->cv, &s->mu, &ts);
        if (s->watchdog_stop) break;
        double now = omnic__now();
        struct MHD_Connection *resume[64];
        channel *gone[64];
        int n = 0, n_gone = 0;
        for (channel *ch = s->live; ch && n < 64; ch = ch->next) {
            /* never wait on a channel while holding s->mu (a busy one is looked at next time) */
            if (pthread_mutex_trylock(&ch->mu) != 0) continue;
            if (ch->suspended && ch->fd >= 0) {
                /* suspended: libmicrohttpd will not close the socket under us */
                struct pollfd p = {.fd = ch->fd, .events = POLLRDHUP};
                short ev = poll(&p, 1, 0) > 0 ? p.revents : 0;
                if ((ev & (POLLHUP | POLLERR)) || ((ev & POLLRDHUP) && s->o.cancel_on_half_close)) {
                    ch->client_gone = true;
                    ch->suspended = false;
                    resume[n++] = ch->conn;
                    gone[n_gone++] = ch;
                } else if (ev & POLLRDHUP) {
                    if (!ch->half_closed) atomic_fetch_add(&s->half_closes, 1);
                    ch->half_closed = true;
                    if (ch->prepared && ch->stream && ch->w && ch->w->generating &&
                        now - ch->probe_at >= 1.0) {
                        ch->probe = true;
                        ch->probe_at = now;
                        ch->suspended = false;
                        resume[n++] = ch->conn;
                    }
                }
            }
            pthread_mutex_unlock(&ch->mu);
        }
        pthread_mutex_unlock(&s->mu);
        /* the channels stay alive: their connections are suspended until we resume them */
        for (int i = 0; i < n_gone; i++)
            channel_cancel(gone[i]);
        for (int i = 0; i < n; i++)
            MHD_resume_connection(resume[i]);
        read_deadlines(s, now);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- lifecycle ---- */

/* libmicrohttpd's own messages (mostly clients that went away) go to the info log. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    OMNIC_LOG_I("http: %s", msg);
}

static void base_name(const char *dir, char *out, size_t n)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    snprintf(out, n, "%.*s", (int)(len - start), dir + start);
}

/* The connection cap: want (0: OMNIC_MAX_CONNECTIONS), lowered to fit the file-descriptor
 * limit (the soft RLIMIT_NOFILE, raised to the hard one first) less OMNIC_RESERVED_FDS; each
 * connection takes two descriptors (its socket and the read-deadline watch's duplicate).
 * E_INVALID naming the limit when not even 16 connections fit. */
static omnic_status connection_cap(int want, unsigned int *out, omnic_err *err)
{
    rlim_t cap = want > 0 ? (rlim_t)want : (rlim_t)OMNIC_MAX_CONNECTIONS;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            struct rlimit up = {rl.rlim_max, rl.rlim_max};
            if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl = up;
        }
        if (rl.rlim_cur != RLIM_INFINITY) {
            if (rl.rlim_cur < OMNIC_RESERVED_FDS + 2 * 16)
                return OMNIC_FAIL(
                    err, OMNIC_E_INVALID,
                    "the file-descriptor limit (RLIMIT_NOFILE) is %llu: the server needs at least %d",
                    (unsigned long long)rl.rlim_cur, OMNIC_RESERVED_FDS + 2 * 16);
            rlim_t fit = (rl.rlim_cur - OMNIC_RESERVED_FDS) / 2;
            if (cap > fit) {
                OMNIC_LOG_W(
                    "connections capped at %llu by the file-descriptor limit of %llu (asked for %llu)",
                    (unsigned long long)fit, (unsigned long long)rl.rlim_cur, (unsigned long long)cap);
                cap = fit;
            }
        }
    }
    *out = (unsigned int)cap;
    return OMNIC_OK;
}

omnic_status omnic__server_create(const omnic__server_opts *o, omnic__server **out, omnic_err *err)
{
    if (!o->model_dir) return OMNIC_FAIL(err, OMNIC_E_INVALID, "no model directory");
    if (o->port < 0 || o->port > 65535)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "port %d is not in 0..65535", o->port);
    if (o->n_cors_origins > OMNIC_MAX_CORS_ORIGINS)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%zu CORS origins is over the limit of %d", o->n_cors_origins,
                          OMNIC_MAX_CORS_ORIGINS);
    if (!(o->request_timeout_s >= 0) || !isfinite(o->request_timeout_s))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "request timeout %g must be >= 0", o->request_timeout_s);
    if (!(o->read_timeout_s >= 0) || !isfinite(o->read_timeout_s))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "read timeout %g must be >= 0", o->read_timeout_s);
    if (o->request_workers < 0 || o->request_workers > 256)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%d request workers (0..256)", o->request_workers);
    if (o->api_key && (!o->api_key[0] || strlen(o->api_key) > OMNIC_MAX_API_KEY_BYTES))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "the API key must be 1..%d bytes", OMNIC_MAX_API_KEY_BYTES);
    if (o->max_images < 0 || o->max_image_pixels < 0 || o->max_decode_pixels < 0)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "image limits must be >= 0");
    if (o->n_allowed_hosts > OMNIC_MAX_ALLOWED_HOSTS || (o->n_allowed_hosts && !o->allowed_hosts))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%zu allowed hosts (at most %d)", o->n_allowed_hosts,
                          OMNIC_MAX_ALLOWED_HOSTS);
    if (o->remote.n_hosts > OMNIC_MAX_REMOTE_MEDIA_HOSTS || (o->remote.n_hosts && !o->remote.hosts))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%zu remote media hosts (at most %d)", o->remote.n_hosts,
                          OMNIC_MAX_REMOTE_MEDIA_HOSTS);
    OMNIC_TRY(omnic__media_global_init(err));
    char media_dir[PATH_MAX] = "";
    if (o->media_dir && !realpath(o->media_dir, media_dir))
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "--media-dir %s: %s", o->media_dir, strerror(errno));
    omnic__server *s = omnic_alloc_array(1, sizeof *s);
    if (!s) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for the server");
    s->o = *o;
    snprintf(s->media_dir, sizeof s->media_dir, "%s", media_dir);
    s->max_body = o->max_body_bytes && o->max_body_bytes < OMNIC_MAX_BODY_BYTES ? o->max_body_bytes
                                                                                : OMNIC_MAX_BODY_BYTES;
    omnic__budget_server(&s->budget);
    {
        const omnic__budget *b = &o->budget;
        if (b->json_bytes)
            s->budget.json_bytes =
                b->json_bytes < OMNIC_MAX_JSON_BYTES ? b->json_bytes : OMNIC_MAX_JSON_BYTES;
        if (b->template_steps) s->budget.template_steps = b->template_steps;
        if (b->template_work) s->budget.template_work = b->template_work;
        if (b->template_output) s->budget.template_output = b->template_output;
        if (s->budget.template_output > OMNIC_MAX_TEMPLATE_OUTPUT)
            s->budget.template_output = OMNIC_MAX_TEMPLATE_OUTPUT;
        if (s->budget.template_work > OMNIC_MAX_TEMPLATE_WORK_BYTES)
            s->budget.template_work = OMNIC_MAX_TEMPLATE_WORK_BYTES;
        if (s->budget.template_steps > OMNIC_MAX_TEMPLATE_ITERATIONS)
            s->budget.template_steps = OMNIC_MAX_TEMPLATE_ITERATIONS;
        if (b->jpeg_decoder_bytes > 0) s->budget.jpeg_decoder_bytes = b->jpeg_decoder_bytes;
        if (o->max_decode_pixels > 0) s->budget.image_pixels = o->max_decode_pixels;
        s->budget.body_bytes = s->max_body;
        s->budget.deadline = 0;
    }
    s->inflight_max = o->max_inflight_body ? o->max_inflight_body : OMNIC_SERVER_INFLIGHT_BODY_BYTES;
    if (s->inflight_max < s->max_body) s->inflight_max = s->max_body; /* one largest body always fits */
    atomic_init(&s->inflight, 0);
    s->read_timeout_s = o->read_timeout_s > 0 ? o->read_timeout_s : OMNIC_SERVER_READ_TIMEOUT_S;
    pthread_mutex_init(&s->wmu, NULL);
    s->max_text = o->max_backlog_bytes && o->max_backlog_bytes < OMNIC_MAX_CHOICE_TEXT
                      ? o->max_backlog_bytes
                      : OMNIC_MAX_CHOICE_TEXT;
    if (o->model_id)
        snprintf(s->model_id, sizeof s->model_id, "%s", o->model_id);
    else
        base_name(o->model_dir, s->model_id, sizeof s->model_id);
    s->started = (int64_t)time(NULL);
    uint64_t seed;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
        seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    atomic_init(&s->rng, seed);
    atomic_init(&s->state, ST_LOADING);
    atomic_init(&s->engine, NULL);
    if (o->api_key) {
        omnic__sha256 sh;
        omnic__sha256_init(&sh);
        omnic__sha256_update(&sh, o->api_key, strlen(o->api_key));
        omnic__sha256_final(&sh, s->key_hash);
        s->have_key = true;
    }
    pthread_mutex_init(&s->mu, NULL);
    omnic__cond_init(&s->cv);
    omnic_status st;
    /* resolve the listen address */
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    const char *host = o->host ? o->host : "127.0.0.1";
    if (o->n_allowed_hosts) {
        for (size_t i = 0; i < o->n_allowed_hosts; i++)
            s->hosts[s->n_hosts++] = o->allowed_hosts[i];
    } else if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !strcmp(host, "[::]") || !host[0]) {
        s->hosts[s->n_hosts++] = "*"; /* every address: any name may reach it */
    } else {
        snprintf(s->listen_host, sizeof s->listen_host, "%s", host);
        static const char *const local[] = {"localhost", "127.0.0.1", "::1"};
        s->hosts[s->n_hosts++] = s->listen_host;
        for (size_t i = 0; i < 3; i++)
            s->hosts[s->n_hosts++] = local[i];
    }
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai != 0 || !ai) {
        st = OMNIC_FAIL(err, OMNIC_E_INVALID, "cannot resolve --host %s: %s", host, gai_strerror(gai));
        goto fail;
    }
    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof addr);
    memcpy(&addr, ai->ai_addr, ai->ai_addrlen < sizeof addr ? ai->ai_addrlen : sizeof addr);
    bool v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (v6) flags |= MHD_USE_IPv6;
    unsigned int threads = o->http_threads > 0 ? (unsigned)o->http_threads : 4u;
    unsigned int conns = 0, per_ip = o->max_connections_per_ip > 0 ? (unsigned)o->max_connections_per_ip
                                                                   : (unsigned)OMNIC_MAX_CONNECTIONS_PER_IP;
    if ((st = connection_cap(o->max_connections, &conns, err)) != OMNIC_OK) goto fail;
    const unsigned int idle = o->idle_timeout_s > 0 ? (unsigned)ceil(o->idle_timeout_s) : 30u;
    OMNIC_LOG_I("connections: at most %u (%u per client address), closed after %u s without traffic", conns,
                per_ip, idle);
    errno = 0;
    s->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_THREAD_POOL_SIZE,
                            threads, MHD_OPTION_CONNECTION_LIMIT, conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                            per_ip, MHD_OPTION_CONNECTION_TIMEOUT, idle, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
                            NULL, MHD_OPTION_END);
    if (!s->d) {
        st = OMNIC_FAIL(err, OMNIC_E_IO, "cannot listen on %s:%d: %s", host, o->port,
                        errno ? strerror(errno) : "libmicrohttpd failed to start");
        goto fail;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    if (di && getsockname(di->listen_fd, (struct sockaddr *)&bound, &bl) == 0)
        s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    else
        s->port = o->port;
    if (pthread_create(&s->watchdog, NULL, watchdog_main, s) != 0) {
        st = OMNIC_FAIL(err, OMNIC_E_INTERNAL, "cannot start the watchdog thread");
        goto fail;
    }
    s->watchdog_started = true;
    *out = s;
    return OMNIC_OK;
fail:
    omnic__server_destroy(s);
    return st;
}

int omnic__server_port(const omnic__server *s)
{
    return s->port;
}

omnic_status omnic__server_load(omnic__server *s, omnic_err *err)
{
    omnic__engine *e = NULL;
    OMNIC_TRY(omnic__engine_create(s->o.model_dir, &s->o.engine, &e, err));
    const omnic__model *m = omnic__engine_model(e);
    snprintf(s->fingerprint, sizeof s->fingerprint, "fp_%.10s", m->identity);
    omnic_err cerr;
    omnic_err_clear(&cerr);
    s->chat_status =
        omnic__chat_create(m->ckpt, m, omnic__model_accepts(m, OMNIC_MODALITY_IMAGE), &s->chat, &cerr);
    if (s->chat_status != OMNIC_OK) {
        snprintf(s->chat_error, sizeof s->chat_error, "%s", cerr.msg);
        if (s->chat_status != OMNIC_E_NOT_FOUND) OMNIC_LOG_W("chat completions disabled: %s", cerr.msg);
    }
    int rw = s->o.request_workers > 0 ? s->o.request_workers : OMNIC_SERVER_REQUEST_WORKERS;
    omnic_status pst = omnic__job_pool_create("request", rw, OMNIC_SERVER_REQUEST_QUEUE_PER_WORKER * rw,
                                              OMNIC_BATCH_NICE, &s->requests, err);
    if (pst == OMNIC_OK)
        pst = omnic__job_pool_create("small request", OMNIC_SMALL_REQUEST_WORKERS,
                                     OMNIC_SERVER_REQUEST_QUEUE_PER_WORKER * OMNIC_SMALL_REQUEST_WORKERS, 0,
                                     &s->small, err);
    if (pst != OMNIC_OK) {
        omnic__job_pool_destroy(s->requests);
        s->requests = NULL;
        omnic__engine_destroy(e);
        return pst;
    }
    if (omnic__model_accepts(m, OMNIC_MODALITY_AUDIO)) {
        omnic_status st = omnic__media_proc_init(&s->prep_audio, m, OMNIC_MODALITY_AUDIO, 0, err);
        if (st != OMNIC_OK) {
            omnic__engine_destroy(e);
            return st;
        }
        s->audio_ok = true;
    }
    if (omnic__model_accepts(m, OMNIC_MODALITY_IMAGE) || s->audio_ok) {
        omnic_status st =
            omnic__model_accepts(m, OMNIC_MODALITY_IMAGE)
                ? omnic__media_proc_init(&s->prep, m, OMNIC_MODALITY_IMAGE, s->o.max_image_pixels, err)
                : OMNIC_OK;
        if (st != OMNIC_OK) {
            omnic__engine_destroy(e);
            return st;
        }
        int workers = s->o.media_workers > 0 ? s->o.media_workers : 2;
        st = omnic__job_pool_create("media", workers, 4 * workers, OMNIC_BATCH_NICE, &s->media, err);
        if (st != OMNIC_OK) {
            omnic__engine_destroy(e);
            return st;
        }
        s->images_ok = omnic__model_accepts(m, OMNIC_MODALITY_IMAGE);
    }
    atomic_store(&s->engine, e);
    int expect = ST_LOADING;
    atomic_compare_exchange_strong(&s->state, &expect, ST_READY);
    return OMNIC_OK;
}

void omnic__server_shutdown(omnic__server *s, double deadline_s)
{
    if (!s || atomic_load(&s->state) == ST_STOPPED) return;
    atomic_store(&s->state, ST_DRAINING);
    /* media jobs are not in flight in the engine yet: cancel them now (their requests get an
     * error), so the drain is bounded by its deadline, not by queued decodes */
    omnic__job_pool_cancel(s->requests);
    omnic__job_pool_cancel(s->small);
    omnic__job_pool_cancel(s->media);
    omnic__engine *e = engine_of(s);
    if (e) omnic__engine_drain(e, deadline_s > 0 ? deadline_s : 0);
    /* every engine request is done: let the responses go out (bounded) */
    double end = omnic__now() + 5.0;
    pthread_mutex_lock(&s->mu);
    while (s->n_live > 0 && omnic__now() < end) {
        struct timespec ts;
        omnic__deadline(&ts, 0.050);
        omnic__cond_wait_until(&s->cv, &s->mu, &ts);
    }
    /* MHD_stop_daemon must not find suspended connections. Resume them one at a time with
     * s->mu released (libmicrohttpd may be completing other requests, which takes s->mu); a
     * suspended connection cannot complete, so its channel stays valid until resumed. */
    for (;;) {
        struct MHD_Connection *c = NULL;
        bool busy = false;
        for (channel *ch = s->live; ch && !c; ch = ch->next) {
            if (pthread_mutex_trylock(&ch->mu) != 0) {
                busy = true;
                continue;
            }
            if (ch->suspended) {
                c = ch->conn;
                ch->suspended = false;
                ch->client_gone = true;
            }
            pthread_mutex_unlock(&ch->mu);
        }
        if (!c && !busy) break;
        pthread_mutex_unlock(&s->mu);
        if (c)
            MHD_resume_connection(c);
        else
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        pthread_mutex_lock(&s->mu);
    }
    s->watchdog_stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->watchdog_started) pthread_join(s->watchdog, NULL);
    s->watchdog_started = false;
    if (s->d) MHD_stop_daemon(s->d);
    s->d = NULL;
    atomic_store(&s->state, ST_STOPPED);
}

void omnic__server_destroy(omnic__server *s)
{
    if (!s) return;
    omnic__server_shutdown(s, 0);
    omnic__job_pool_destroy(s->requests); /* their jobs may queue media jobs: first */
    omnic__job_pool_destroy(s->small);
    omnic__job_pool_destroy(s->media);
    omnic__media_proc_deinit(&s->prep);
    omnic__media_proc_deinit(&s->prep_audio);
    omnic__chat_destroy(s->chat);
    omnic__engine_destroy(atomic_load(&s->engine));
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->wmu);
    pthread_cond_destroy(&s->cv);
    omnic_free(s);
}
