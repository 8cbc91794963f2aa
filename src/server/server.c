/* The HTTP server: routing, authentication, request bodies, the generation channel between
 * libmicrohttpd and the engine, SSE streaming, the disconnect watchdog, metrics and
 * shutdown. See server.h for the threading and lifetime design. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
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

#include "core/log.h"
#include "core/sha256.h"
#include "core/sync.h"
#include "engine/chat.h"
#include "engine/media.h"
#include "engine/media_pool.h"
#include "engine/modality.h"
#include "io/json.h"
#include "server/media.h"
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
    REJ_COUNT
} http_reject;

static const char *const reject_names[REJ_COUNT] = {
    "auth",      "body_too_large",  "malformed_json",     "invalid_request",    "unsupported",
    "not_found", "model_not_found", "method_not_allowed", "queue_full",         "capacity",
    "loading",   "shutting_down",   "host_not_allowed",   "origin_not_allowed", "content_type"};

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
    atomic_uint_fast64_t disconnects, slow_clients;
    /* images (when the model takes them) */
    omnic__media_proc prep; /* the model's image processor (with --max-image-pixels) */
    bool images_ok;
    omnic__media_pool *media; /* the media stage's workers (images_ok) */
    char media_dir[PATH_MAX]; /* resolved --media-dir, "" when none */
};

static double now_s(void);

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

/* ---- the generation channel ---- */

typedef struct choice {
    channel *ch;
    int index;   /* choice index in the response */
    int prompt;  /* prompt it belongs to */
    uint64_t id; /* engine request id (0 until submitted) */
    bool done;
    omnic__finish finish;
    int64_t prompt_tokens, completion_tokens;
    int64_t tokens;  /* generated so far (TEXT events with a token) */
    omnic__buf text; /* engine side: stream backlog, or the whole non-streamed text */
    char error[256]; /* engine error message (OMNIC_FINISH_ERROR) */
} choice;

struct channel {
    pthread_mutex_t mu;
    int refs;                        /* HTTP side + engine requests not yet DONE */
    omnic__engine *engine;           /* borrowed */
    size_t max_text;                 /* per choice (the server's max_text) */
    atomic_uint_fast64_t *overflows; /* the server's slow-client counter */
    struct MHD_Connection *conn;     /* NULL once the HTTP side completed */
    int fd;                          /* the connection's socket (watchdog) */
    bool stream;
    bool suspended;   /* the connection waits for this channel */
    bool client_gone; /* the watchdog saw the peer close */
    bool overflow;    /* a choice's text passed OMNIC_MAX_CHOICE_TEXT */
    int n_choices, n_submitted, n_done;
    choice *choices;      /* [n_choices] */
    channel *prev, *next; /* the server's live list */
};

static channel *channel_create(omnic__engine *e, int n_choices, bool stream)
{
    channel *ch = omnic_alloc_array(1, sizeof *ch);
    if (!ch) return NULL;
    ch->choices = omnic_alloc_array((size_t)n_choices, sizeof *ch->choices);
    if (!ch->choices) {
        omnic_free(ch);
        return NULL;
    }
    pthread_mutex_init(&ch->mu, NULL);
    ch->refs = 1;
    ch->engine = e;
    ch->fd = -1;
    ch->stream = stream;
    ch->n_choices = n_choices;
    for (int i = 0; i < n_choices; i++)
        ch->choices[i].ch = ch, ch->choices[i].index = i;
    return ch;
}

static void channel_free(channel *ch)
{
    for (int i = 0; i < ch->n_choices; i++)
        omnic__buf_free(&ch->choices[i].text);
    omnic_free(ch->choices);
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

/* Cancels every submitted choice that has not finished. */
static void channel_cancel(channel *ch)
{
    uint64_t ids[OMNIC_MAX_CHOICES];
    int n = 0;
    pthread_mutex_lock(&ch->mu);
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
    R_CHAT,
    R_COMPLETIONS,
    R_MODELS,
    R_MODEL_ONE,
    R_HEALTH,
    R_METRICS,
    R_TOKENIZE,
    R_DETOKENIZE,
} route;

typedef enum phase { PH_RECEIVING, PH_WAITING, PH_STREAMING, PH_DONE } phase;

typedef struct conn_state {
    omnic__server *srv;
    struct MHD_Connection *conn;
    route rt;
    phase ph;
    const char *origin; /* CORS: the Access-Control-Allow-Origin value, or NULL */
    omnic__buf body;
    bool too_large;
    json_t *json;
    omnic__api_request req;
    /* generation */
    channel *ch;
    size_t n_prompts;
    int32_t **ids; /* [n_prompts] owned prompt token ids */
    size_t *n_ids;
    char id[48];
    omnic__api_meta meta;
    /* streaming (HTTP side only) */
    omnic__buf out; /* formatted bytes not yet handed to MHD */
    size_t out_pos;
    int n_choices;
    omnic__buf *spare; /* [n_choices] text swapped out of the channel */
    int64_t *tokens;   /* [n_choices] tokens generated when the text was taken */
    bool *final_sent;  /* [n_choices] */
    bool roles_sent, stream_ended;
    omnic__media_item *media; /* [n_media] owned: the request's preprocessed images */
    size_t n_media;
    const omnic__media_item **media_ptrs; /* [n_media] pointers into media (the engine request's list) */
    char warning[256]; /* "" or what the response reports (an image resized by a user limit) */
} conn_state;

static void conn_state_free(conn_state *cs)
{
    omnic__buf_free(&cs->body);
    json_decref(cs->json);
    omnic__api_request_deinit(&cs->req);
    for (size_t i = 0; cs->ids && i < cs->n_prompts; i++)
        omnic_free(cs->ids[i]);
    omnic_free(cs->ids);
    omnic_free(cs->n_ids);
    omnic__buf_free(&cs->out);
    for (int i = 0; cs->spare && i < cs->n_choices; i++)
        omnic__buf_free(&cs->spare[i]);
    omnic_free(cs->spare);
    omnic_free(cs->final_sent);
    omnic_free(cs->tokens);
    for (size_t i = 0; cs->media && i < cs->n_media; i++)
        omnic__media_item_deinit(&cs->media[i]);
    omnic_free(cs->media);
    omnic_free(cs->media_ptrs);
    omnic_free(cs);
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
        v = cs->rt == R_CHAT || cs->rt == R_COMPLETIONS || cs->rt == R_TOKENIZE || cs->rt == R_DETOKENIZE
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
    } t[] = {{"/v1/chat/completions", R_CHAT, true}, {"/v1/completions", R_COMPLETIONS, true},
             {"/v1/models", R_MODELS, false},        {"/health", R_HEALTH, false},
             {"/metrics", R_METRICS, false},         {"/tokenize", R_TOKENIZE, true},
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
        "# HELP omnic_http_generation_requests_active Generation requests with a client attached.\n"
        "# TYPE omnic_http_generation_requests_active gauge\n"
        "omnic_http_generation_requests_active %d\n"
        "# HELP omnic_server_ready 1 when the model is loaded and the server takes requests.\n"
        "# TYPE omnic_server_ready gauge\nomnic_server_ready %d\n",
        (unsigned long long)atomic_load(&s->disconnects), s->max_text,
        (unsigned long long)atomic_load(&s->slow_clients), live, atomic_load(&s->state) == ST_READY ? 1 : 0);
    return respond(cs, 200, "text/plain; version=0.0.4; charset=utf-8", &b, NULL, NULL);
}

/* Parses the body as a JSON object into cs->json; on failure responds 400 and returns false. */
static bool parse_body(conn_state *cs, enum MHD_Result *res)
{
    omnic_err err;
    omnic_err_clear(&err);
    if (omnic__json_parse(cs->body.p ? cs->body.p : "", cs->body.len, "request body", &cs->json, &err) ==
        OMNIC_OK)
        return true;
    omnic__api_error e;
    if (err.code == OMNIC_E_NOMEM)
        omnic__api_fail(&e, 503, NULL, NULL, NULL, "out of memory parsing the body");
    else
        omnic__api_fail(&e, 400, NULL, "invalid_json", NULL,
                        "We could not parse the JSON body of your request: %s", err.msg);
    *res = respond_error(cs, &e, REJ_MALFORMED_JSON);
    return false;
}

static http_reject reject_of(const omnic__api_error *e)
{
    if (e->status == 404) return REJ_MODEL_NOT_FOUND;
    if (e->status >= 500) return REJ_NONE;
    return e->code && !strcmp(e->code, "unsupported_parameter") ? REJ_UNSUPPORTED : REJ_INVALID;
}

/* Renders and tokenizes messages with the chat template. */
static omnic_status chat_ids(omnic__server *s, omnic__engine *eng, const json_t *msgs,
                             bool add_generation_prompt, int32_t **ids, size_t *n, omnic__api_error *e)
{
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
    omnic_status st = omnic__chat_apply(s->chat, omnic__engine_tokenizer(eng), msgs, add_generation_prompt,
                                        NULL, &text, ids, n, &err);
    omnic_free(text);
    switch (st) {
    case OMNIC_OK:
        return OMNIC_OK;
    case OMNIC_E_NOMEM:
        return omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory applying the chat template");
    case OMNIC_E_UNSUPPORTED:
        return omnic__api_fail(e, 501, NULL, "chat_template", "messages", "%s", err.msg);
    default:
        /* raise_exception ("roles must alternate"), limits, invalid text: the conversation's fault */
        return omnic__api_fail(e, 400, NULL, "invalid_value", "messages", "The chat template failed: %s",
                               err.msg);
    }
}

static enum MHD_Result do_tokenize(conn_state *cs)
{
    enum MHD_Result res;
    if (!parse_body(cs, &res)) return res;
    omnic__engine *eng = engine_of(cs->srv);
    omnic__api_tokenize t;
    omnic__api_error e;
    if (omnic__api_parse_tokenize(cs->json, &t, &e) != OMNIC_OK) return respond_error(cs, &e, reject_of(&e));
    int32_t *ids = NULL;
    size_t n = 0;
    if (t.messages) { /* the ids a chat completion of these messages would run on */
        if (cs->srv->images_ok && omnic__chat_content_parts(t.messages) != OMNIC_OK) {
            omnic__api_tokenize_deinit(&t);
            FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "out of memory");
        }
        if (chat_ids(cs->srv, eng, t.messages, t.add_generation_prompt, &ids, &n, &e) != OMNIC_OK) {
            omnic__api_tokenize_deinit(&t);
            return respond_error(cs, &e, reject_of(&e));
        }
    } else {
        omnic_err err;
        omnic_status st = omnic__tokenizer_encode(omnic__engine_tokenizer(eng), t.text, t.len, t.add_special,
                                                  &ids, &n, &err);
        if (st != OMNIC_OK) {
            omnic__api_tokenize_deinit(&t);
            if (st == OMNIC_E_NOMEM) FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "%s", err.msg);
            FAIL_RESPONSE(cs, REJ_INVALID, 400, "invalid_value", "content", "%s", err.msg);
        }
    }
    omnic__api_tokenize_deinit(&t);
    omnic__buf b = {0};
    omnic__buf_puts(&b, "{\"tokens\":[");
    for (size_t i = 0; i < n; i++)
        omnic__buf_printf(&b, "%s%d", i ? "," : "", ids[i]);
    omnic__buf_printf(&b, "],\"count\":%zu,\"max_model_len\":%lld}", n,
                      (long long)omnic__engine_model(eng)->capacity);
    omnic_free(ids);
    return respond_json(cs, 200, &b);
}

static enum MHD_Result do_detokenize(conn_state *cs)
{
    enum MHD_Result res;
    if (!parse_body(cs, &res)) return res;
    omnic__engine *eng = engine_of(cs->srv);
    omnic__api_detokenize d;
    omnic__api_error e;
    if (omnic__api_parse_detokenize(cs->json, &d, &e) != OMNIC_OK)
        return respond_error(cs, &e, reject_of(&e));
    char *text = NULL;
    size_t len = 0;
    omnic_err err;
    static const int32_t none[1] = {0};
    omnic_status st = omnic__tokenizer_decode(omnic__engine_tokenizer(eng), d.ids ? d.ids : none, d.n,
                                              d.skip_special, &text, &len, &err);
    omnic__api_detokenize_deinit(&d);
    if (st == OMNIC_E_NOMEM) FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "%s", err.msg);
    if (st != OMNIC_OK) FAIL_RESPONSE(cs, REJ_INVALID, 400, "invalid_value", "tokens", "%s", err.msg);
    omnic__buf b = {0};
    /* "prompt" as vLLM answers, "content" as llama.cpp does */
    omnic__buf_puts(&b, "{\"prompt\":");
    omnic__buf_json_str(&b, text, len);
    omnic__buf_puts(&b, ",\"content\":");
    omnic__buf_json_str(&b, text, len);
    omnic__buf_puts(&b, "}");
    omnic_free(text);
    return respond_json(cs, 200, &b);
}

/* ---- generation ---- */

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
    int64_t prompt = 0, completion = 0;
    for (int i = 0; i < ch->n_choices; i++) {
        const choice *c = &ch->choices[i];
        out[i] = (omnic__api_choice_out){
            .text = c->text.p, .len = c->text.len, .finish_reason = finish_reason(c->finish)};
        if (i % cs->req.n == 0) prompt += c->prompt_tokens; /* a prompt counts once, whatever n */
        completion += c->completion_tokens;
    }
    omnic__buf b = {0};
    omnic__api_body(&b, &cs->meta, out, ch->n_choices, prompt, completion);
    omnic_free(out);
    return respond_json(cs, 200, &b);
}

/* Prompt tokens of choice i (logical, as usage reports them). */
static int64_t prompt_of(const conn_state *cs, int i)
{
    return (int64_t)cs->n_ids[(size_t)(i / cs->req.n)];
}

/* SSE content reader (MHD polling thread): never blocks. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    conn_state *cs = cls;
    channel *ch = cs->ch;
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
        bool any = !cs->roles_sent && cs->meta.kind == OMNIC_API_CHAT, overflow;
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
        if (!any && !overflow) {
            ch->suspended = true;
            MHD_suspend_connection(cs->conn);
            pthread_mutex_unlock(&ch->mu);
            return 0;
        }
        pthread_mutex_unlock(&ch->mu);
        /* format outside the lock: done choices are no longer written by the engine */
        if (!cs->roles_sent && cs->meta.kind == OMNIC_API_CHAT)
            for (int i = 0; i < nc; i++)
                omnic__api_chunk_role(&cs->out, &cs->meta, i, prompt_of(cs, i));
        cs->roles_sent = true;
        omnic__api_error e;
        memset(&e, 0, sizeof e);
        bool failed = false;
        for (int i = 0; i < nc; i++) {
            if (cs->spare[i].len) {
                omnic__api_chunk_text(&cs->out, &cs->meta, i, cs->spare[i].p, cs->spare[i].len,
                                      prompt_of(cs, i), cs->tokens[i]);
                omnic__buf_clear(&cs->spare[i]);
            }
            if (!done_now[i] || failed) continue;
            cs->final_sent[i] = true;
            const choice *c = &ch->choices[i];
            if (finished_ok(c)) {
                omnic__api_chunk_finish(&cs->out, &cs->meta, i, finish_reason(c->finish), prompt_of(cs, i),
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
                if (cs->meta.include_usage) {
                    int64_t prompt = 0, completion = 0;
                    for (int i = 0; i < nc; i++) {
                        if (i % cs->req.n == 0) prompt += ch->choices[i].prompt_tokens;
                        completion += ch->choices[i].completion_tokens;
                    }
                    omnic__api_chunk_usage(&cs->out, &cs->meta, prompt, completion);
                }
                omnic__api_sse_done(&cs->out);
                cs->stream_ended = true;
            }
        }
        if (cs->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

/* Maps an engine submit failure to an HTTP error. */
static enum MHD_Result submit_failed(conn_state *cs, omnic_status st, const omnic_err *err)
{
    switch (st) {
    case OMNIC_E_CAPACITY:
        FAIL_RESPONSE(cs, REJ_CAPACITY, 400, "context_length_exceeded", "max_tokens", "%s", err->msg);
    case OMNIC_E_TOO_LARGE:
        FAIL_RESPONSE(cs, REJ_QUEUE_FULL, 429, "queue_full", NULL, "The server is busy: %s; retry later",
                      err->msg);
    case OMNIC_E_CANCELLED:
        FAIL_RESPONSE(cs, REJ_SHUTTING_DOWN, 503, "shutting_down", NULL, "The server is shutting down");
    case OMNIC_E_INVALID:
        FAIL_RESPONSE(cs, REJ_INVALID, 400, "invalid_value", NULL, "%s", err->msg);
    case OMNIC_E_NOMEM:
        FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "%s", err->msg);
    default:
        FAIL_RESPONSE(cs, REJ_NONE, 500, NULL, NULL, "%s", err->msg);
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

/* A request's images, prepared on the media pool. */
typedef struct image_job {
    omnic__media_job base; /* first: the pool hands this back */
    conn_state *cs;
    omnic__media_proc prep; /* the server's, with the request's pixel bounds (owned copy) */
    omnic__image_limits lim;
    size_t failed; /* the image that failed */
    omnic_status st;
    omnic_err err;
} image_job;

/* On a media worker: fetch, decode and preprocess each image in order (stops at the first
 * failure or when cancelled). */
static void image_job_run(omnic__media_job *base)
{
    image_job *j = (image_job *)base;
    conn_state *cs = j->cs;
    omnic__server *s = cs->srv;
    const json_t *urls = cs->req.images;
    double t0 = now_s();
    for (size_t i = 0; i < json_array_size(urls) && j->st == OMNIC_OK; i++) {
        const json_t *u = json_object_get(json_array_get(urls, i), "url");
        uint8_t *bytes = NULL;
        size_t len = 0;
        j->failed = i;
        if (atomic_load(&base->cancel)) j->st = OMNIC_FAIL(&j->err, OMNIC_E_CANCELLED, "cancelled");
        if (j->st == OMNIC_OK)
            j->st = omnic__media_fetch(json_string_value(u), json_string_length(u),
                                       s->media_dir[0] ? s->media_dir : NULL, &s->o.remote,
                                       OMNIC_MAX_MEDIA_BYTES, &bytes, &len, &j->err);
        if (j->st == OMNIC_OK)
            j->st =
                omnic__media_prepare(&j->prep, bytes, len, &j->lim, &base->cancel, &cs->media[i], &j->err);
        omnic_free(bytes);
        if (j->st == OMNIC_OK) cs->n_media = i + 1;
    }
    omnic__metrics_observe(omnic__engine_metrics(engine_of(s)), OMNIC_H_MEDIA, now_s() - t0);
}

/* True when the client behind fd hung up (the socket is ours until we return to MHD). */
static bool client_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The request's image parts -> pixel_values on the bounded media pool (never the scheduler
 * thread): fetched (data: URL or a file under --media-dir), decoded with the per-request
 * pixel limit and run through the model's processor. This HTTP thread waits, and cancels
 * the job if the client hangs up meanwhile. Errors name the image part and the problem;
 * a full media queue is a 429. E_CANCELLED (e untouched): the client hung up. */
static omnic_status prepare_images(conn_state *cs, omnic__api_error *e)
{
    omnic__server *s = cs->srv;
    const json_t *urls = cs->req.images;
    size_t n = json_array_size(urls);
    const char *param0 = json_string_value(json_object_get(json_array_get(urls, 0), "param"));
    if (!s->images_ok)
        return omnic__api_fail(e, 400, NULL, "unsupported_parameter", param0,
                               "This model does not accept 'image_url' content (its input modalities: text)");
    int max = s->o.max_images > 0 && s->o.max_images < OMNIC_MAX_REQUEST_IMAGES ? s->o.max_images
                                                                                : OMNIC_MAX_REQUEST_IMAGES;
    if (n > (size_t)max)
        return omnic__api_fail(e, 400, NULL, "invalid_value", "messages",
                               "The request has %zu images, over the limit of %d per request", n, max);
    cs->media = omnic_alloc_array(n, sizeof *cs->media);
    cs->media_ptrs = omnic_alloc_array(n, sizeof *cs->media_ptrs);
    if (!cs->media || !cs->media_ptrs) return omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
    image_job j = {.cs = cs, .lim = {.max_pixels = s->o.max_decode_pixels}};
    const omnic__api_request *rq = &cs->req;
    /* a request's min_pixels / max_pixels, within what the server's processor allows */
    const omnic__media_kwargs kw = {.min_pixels = rq->min_pixels, .max_pixels = rq->max_pixels};
    omnic_err berr;
    omnic_status bst = omnic__media_proc_with(&j.prep, &s->prep, &kw, &berr);
    if (bst == OMNIC_E_NOMEM) return omnic__api_fail(e, 503, NULL, NULL, NULL, "out of memory");
    if (bst != OMNIC_OK)
        return omnic__api_fail(e, 400, NULL,
                               bst == OMNIC_E_UNSUPPORTED ? "unsupported_parameter" : "invalid_value",
                               "mm_processor_kwargs", "%s", berr.msg);
    omnic_err_clear(&j.err);
    omnic__media_job_init(&j.base, image_job_run);
    omnic_err err;
    omnic_status st = omnic__media_pool_submit(s->media, &j.base, &err);
    if (st != OMNIC_OK) {
        omnic__media_job_deinit(&j.base);
        omnic__media_proc_deinit(&j.prep);
        if (st == OMNIC_E_TOO_LARGE)
            return omnic__api_fail(e, 429, "rate_limit_error", "media_queue_full", NULL,
                                   "The server is busy preparing images (%s); retry later", err.msg);
        return omnic__api_fail(e, 503, NULL, "shutting_down", NULL, "The server is shutting down");
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(cs->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = ci ? ci->connect_fd : -1;
    while (!omnic__media_job_wait(&j.base, 0.05))
        if (!atomic_load(&j.base.cancel) && client_gone(fd)) {
            atomic_store(&j.base.cancel, true);
            atomic_fetch_add(&s->disconnects, 1);
        }
    omnic__media_job_deinit(&j.base);
    omnic__media_proc_deinit(&j.prep);
    if (atomic_load(&j.base.cancel) && j.st == OMNIC_OK && cs->n_media < n)
        j.st = OMNIC_FAIL(&j.err, OMNIC_E_CANCELLED, "cancelled"); /* the pool stopped before running it */
    if (j.st == OMNIC_OK) {
        for (size_t i = 0; i < cs->n_media; i++) {
            const omnic__media_item *it = &cs->media[i];
            cs->media_ptrs[i] = it;
            if (!it->limited || cs->warning[0]) continue; /* the first resized image is reported */
            snprintf(
                cs->warning, sizeof cs->warning,
                "image %zu was resized from %lldx%lld to %lldx%lld by %s of %lld pixels (the checkpoint's "
                "max_pixels is higher)",
                i, (long long)it->in_w, (long long)it->in_h, (long long)it->out_w, (long long)it->out_h,
                s->o.max_image_pixels > 0 ? "this server's --max-image-pixels limit"
                                          : "the encoder's capacity",
                (long long)omnic__media_proc_max_pixels(&s->prep, false));
            OMNIC_LOG_W("request: %s", cs->warning);
        }
        return OMNIC_OK;
    }
    const char *param = json_string_value(json_object_get(json_array_get(urls, j.failed), "param"));
    if (j.st == OMNIC_E_CANCELLED && atomic_load(&s->state) != ST_READY)
        return omnic__api_fail(e, 503, NULL, "shutting_down", NULL, "The server is shutting down");
    if (j.st == OMNIC_E_CANCELLED) return OMNIC_E_CANCELLED; /* the client is gone: no response */
    if (j.st == OMNIC_E_NOMEM)
        return omnic__api_fail(e, 503, NULL, NULL, NULL, "image %zu: %s", j.failed, j.err.msg);
    return omnic__api_fail(e, 400, NULL, "invalid_image", param, "Invalid image in '%s': %s", param,
                           j.err.msg);
}

static enum MHD_Result do_generate(conn_state *cs)
{
    omnic__server *s = cs->srv;
    enum MHD_Result res;
    if (!parse_body(cs, &res)) return res;
    omnic__engine *eng = engine_of(s);
    const omnic__model *m = omnic__engine_model(eng);
    omnic__api_kind kind = cs->rt == R_CHAT ? OMNIC_API_CHAT : OMNIC_API_COMPLETION;
    omnic__api_error e;
    omnic__api_request *rq = &cs->req;
    if (omnic__api_parse(kind, cs->json, m->n_slots, rq, &e) != OMNIC_OK)
        return respond_error(cs, &e, reject_of(&e));
    if (rq->model && strcmp(rq->model, s->model_id))
        FAIL_RESPONSE(cs, REJ_MODEL_NOT_FOUND, 404, "model_not_found", "model",
                      "The model '%.128s' does not exist (this server serves '%s')", rq->model, s->model_id);
    /* generation_config.json's defaults for what the body left out (max_tokens: at most what fits) */
    int64_t gen_max_tokens = -1;
    omnic__gen_defaults_apply(omnic__engine_gen_defaults(eng), rq->sampling_given, &rq->sampling,
                              &gen_max_tokens);
    /* prompts -> token ids */
    cs->n_prompts = kind == OMNIC_API_CHAT ? 1 : rq->n_prompts;
    cs->ids = omnic_alloc_array(cs->n_prompts, sizeof *cs->ids);
    cs->n_ids = omnic_alloc_array(cs->n_prompts, sizeof *cs->n_ids);
    if (!cs->ids || !cs->n_ids) FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "out of memory");
    if (kind == OMNIC_API_CHAT) {
        if (rq->images) { /* before the template: a text-only model says so first */
            omnic_status st = prepare_images(cs, &e);
            if (st == OMNIC_E_CANCELLED) return MHD_NO;
            if (st != OMNIC_OK)
                return respond_error(cs, &e, e.status == 429 ? REJ_QUEUE_FULL : reject_of(&e));
        }
        if (s->images_ok && omnic__chat_content_parts(rq->messages) != OMNIC_OK)
            FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "out of memory");
        if (chat_ids(s, eng, rq->messages, true, &cs->ids[0], &cs->n_ids[0], &e) != OMNIC_OK)
            return respond_error(cs, &e, reject_of(&e));
    } else {
        for (size_t p = 0; p < cs->n_prompts; p++) {
            const omnic__api_prompt *pr = &rq->prompts[p];
            if (pr->ids) {
                cs->ids[p] = omnic_alloc_array(pr->n_ids, sizeof *cs->ids[p]);
                if (!cs->ids[p]) FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "out of memory");
                memcpy(cs->ids[p], pr->ids, pr->n_ids * sizeof *pr->ids);
                cs->n_ids[p] = pr->n_ids;
                continue;
            }
            omnic_err err;
            omnic_status st = omnic__tokenizer_encode(omnic__engine_tokenizer(eng), pr->text, pr->len, true,
                                                      &cs->ids[p], &cs->n_ids[p], &err);
            if (st == OMNIC_E_NOMEM) FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "%s", err.msg);
            if (st != OMNIC_OK) FAIL_RESPONSE(cs, REJ_INVALID, 400, "invalid_value", "prompt", "%s", err.msg);
        }
    }
    /* max_tokens: as given (the engine checks it against the context), else what fits
     * (chat) or OpenAI's legacy default of 16 (completions) */
    const int64_t cap = m->capacity;
    for (size_t p = 0; p < cs->n_prompts; p++) {
        if (rq->max_tokens < 0 && (int64_t)cs->n_ids[p] >= cap)
            FAIL_RESPONSE(cs, REJ_CAPACITY, 400, "context_length_exceeded", "messages",
                          "The prompt of %zu tokens leaves no room to generate in the context of %lld tokens",
                          cs->n_ids[p], (long long)cap);
    }
    /* the channel, then one engine request per choice */
    int n_choices = (int)cs->n_prompts * rq->n;
    cs->spare = omnic_alloc_array((size_t)n_choices, sizeof *cs->spare);
    cs->n_choices = n_choices;
    cs->final_sent = omnic_alloc_array((size_t)n_choices * 2, sizeof *cs->final_sent);
    cs->tokens = omnic_alloc_array((size_t)n_choices, sizeof *cs->tokens);
    channel *ch =
        cs->spare && cs->final_sent && cs->tokens ? channel_create(eng, n_choices, rq->stream) : NULL;
    if (!ch) FAIL_RESPONSE(cs, REJ_NONE, 503, NULL, NULL, "out of memory");
    cs->ch = ch;
    ch->conn = cs->conn;
    ch->max_text = s->max_text;
    ch->overflows = &s->slow_clients;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(cs->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    ch->fd = ci ? ci->connect_fd : -1;
    live_add(s, ch);
    make_id(s, cs->id, sizeof cs->id, kind == OMNIC_API_CHAT ? "chatcmpl-" : "cmpl-");
    cs->meta = (omnic__api_meta){.kind = kind,
                                 .id = cs->id,
                                 .created = (int64_t)time(NULL),
                                 .model = s->model_id,
                                 .fingerprint = s->fingerprint,
                                 .include_usage = rq->include_usage,
                                 .continuous_usage = rq->continuous_usage,
                                 .warning = cs->warning};
    for (int i = 0; i < n_choices; i++) {
        size_t p = (size_t)(i / rq->n);
        int j = i % rq->n;
        int64_t room = cap - (int64_t)cs->n_ids[p];
        int64_t max_tokens = rq->max_tokens > 0       ? rq->max_tokens
                             : gen_max_tokens > 0     ? (room < gen_max_tokens ? room : gen_max_tokens)
                             : kind == OMNIC_API_CHAT ? room
                                                      : (room < 16 ? room : 16);
        omnic__gen_request r = {.prompt = cs->ids[p],
                                .n_prompt = cs->n_ids[p],
                                .sampling = rq->sampling,
                                .max_tokens = max_tokens,
                                .stops = rq->stops,
                                .n_stops = rq->n_stops,
                                .timeout_s = s->o.request_timeout_s,
                                .skip_special = true,
                                .ignore_eos = rq->ignore_eos,
                                .cb = on_engine_event,
                                .cb_ctx = &ch->choices[i],
                                .media = cs->media_ptrs,
                                .n_media = cs->n_media};
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
            return submit_failed(cs, st, &err);
        }
    }
    if (!rq->stream) return finish_nonstream(cs);
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
    count_status(s, 200);
    cs->ph = PH_STREAMING;
    enum MHD_Result ok = MHD_queue_response(cs->conn, 200, resp);
    MHD_destroy_response(resp);
    return ok;
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
    if (post && ct &&
        !omnic__content_type_json(ct)) /* form and text/plain posts are what browsers send cross-site */
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
    bool generate = cs->rt == R_CHAT || cs->rt == R_COMPLETIONS;
    if (st != ST_READY || (generate && !engine_of(s)))
        FAIL_RESPONSE(cs, REJ_SHUTTING_DOWN, 503, "shutting_down", NULL, "The server is shutting down");
    if (cs->too_large)
        FAIL_RESPONSE(cs, REJ_BODY_TOO_LARGE, 413, "request_too_large", NULL,
                      "The request body is over the server's limit of %zu bytes", s->max_body);
    switch (cs->rt) {
    case R_MODELS:
    case R_MODEL_ONE:
        return do_models(cs, url);
    case R_TOKENIZE:
        return do_tokenize(cs);
    case R_DETOKENIZE:
        return do_detokenize(cs);
    case R_CHAT:
    case R_COMPLETIONS:
        return do_generate(cs);
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
        *con_cls = cs;
        return first_call(cs, url, method);
    }
    switch (cs->ph) {
    case PH_RECEIVING:
        if (*upload_data_size) {
            size_t n = *upload_data_size;
            *upload_data_size = 0;
            if (cs->too_large) return MHD_YES; /* discard; 413 once the upload ends */
            if (cs->body.len + n > s->max_body) {
                cs->too_large = true;
                omnic__buf_free(&cs->body);
                return MHD_YES;
            }
            if (!omnic__buf_put(&cs->body, upload_data, n)) return MHD_NO;
            return MHD_YES;
        }
        return dispatch(cs, url);
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
    (void)c;
    conn_state *cs = *con_cls;
    if (!cs) return;
    *con_cls = NULL;
    channel *ch = cs->ch;
    if (ch) {
        live_remove(s, ch);
        pthread_mutex_lock(&ch->mu);
        ch->conn = NULL;
        ch->suspended = false;
        bool unfinished = ch->n_done < ch->n_submitted, gone = ch->client_gone;
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

/* A new connection: bound the kernel's send buffer (OMNIC_HTTP_SNDBUF). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)cls, (void)socket_context;
    if (code != MHD_CONNECTION_NOTIFY_STARTED) return;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    int v = OMNIC_HTTP_SNDBUF;
    if (ci) setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}

/* ---- watchdog: disconnects of suspended connections ---- */

static void *watchdog_main(void *arg)
{
    omnic__server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->watchdog_stop) {
        struct timespec ts;
        omnic__deadline(&ts, 0.100);
        omnic__cond_wait_until(&s->cv, &s->mu, &ts);
        if (s->watchdog_stop) break;
        struct MHD_Connection *resume[64];
        channel *gone[64];
        int n = 0;
        for (channel *ch = s->live; ch && n < 64; ch = ch->next) {
            /* never wait on a channel while holding s->mu (a busy one is looked at next time) */
            if (pthread_mutex_trylock(&ch->mu) != 0) continue;
            if (ch->suspended && ch->fd >= 0) {
                /* suspended: libmicrohttpd will not close the socket under us */
                struct pollfd p = {.fd = ch->fd, .events = POLLRDHUP};
                if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
                    ch->client_gone = true;
                    ch->suspended = false;
                    resume[n] = ch->conn;
                    gone[n++] = ch;
                }
            }
            pthread_mutex_unlock(&ch->mu);
        }
        pthread_mutex_unlock(&s->mu);
        /* the channels stay alive: their connections are suspended until we resume them */
        for (int i = 0; i < n; i++) {
            channel_cancel(gone[i]);
            MHD_resume_connection(resume[i]);
        }
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
 * limit (the soft RLIMIT_NOFILE, raised to the hard one first) less OMNIC_RESERVED_FDS.
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
            if (rl.rlim_cur < OMNIC_RESERVED_FDS + 16)
                return OMNIC_FAIL(
                    err, OMNIC_E_INVALID,
                    "the file-descriptor limit (RLIMIT_NOFILE) is %llu: the server needs at least %d",
                    (unsigned long long)rl.rlim_cur, OMNIC_RESERVED_FDS + 16);
            if (cap > rl.rlim_cur - OMNIC_RESERVED_FDS) {
                OMNIC_LOG_W(
                    "connections capped at %llu by the file-descriptor limit of %llu (asked for %llu)",
                    (unsigned long long)(rl.rlim_cur - OMNIC_RESERVED_FDS), (unsigned long long)rl.rlim_cur,
                    (unsigned long long)cap);
                cap = rl.rlim_cur - OMNIC_RESERVED_FDS;
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
        omnic__chat_create(m->ckpt, omnic__model_accepts(m, OMNIC_MODALITY_IMAGE), &s->chat, &cerr);
    if (s->chat_status != OMNIC_OK) {
        snprintf(s->chat_error, sizeof s->chat_error, "%s", cerr.msg);
        if (s->chat_status != OMNIC_E_NOT_FOUND) OMNIC_LOG_W("chat completions disabled: %s", cerr.msg);
    }
    if (omnic__model_accepts(m, OMNIC_MODALITY_IMAGE)) {
        omnic_status st =
            omnic__media_proc_init(&s->prep, m, OMNIC_MODALITY_IMAGE, s->o.max_image_pixels, err);
        if (st != OMNIC_OK) {
            omnic__engine_destroy(e);
            return st;
        }
        int workers = s->o.media_workers > 0 ? s->o.media_workers : 2;
        st = omnic__media_pool_create(workers, 4 * workers, &s->media, err);
        if (st != OMNIC_OK) {
            omnic__engine_destroy(e);
            return st;
        }
        s->images_ok = true;
    }
    atomic_store(&s->engine, e);
    int expect = ST_LOADING;
    atomic_compare_exchange_strong(&s->state, &expect, ST_READY);
    return OMNIC_OK;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void omnic__server_shutdown(omnic__server *s, double deadline_s)
{
    if (!s || atomic_load(&s->state) == ST_STOPPED) return;
    atomic_store(&s->state, ST_DRAINING);
    /* media jobs are not in flight in the engine yet: cancel them now (their requests get an
     * error), so the drain is bounded by its deadline, not by queued decodes */
    omnic__media_pool_cancel(s->media);
    omnic__engine *e = engine_of(s);
    if (e) omnic__engine_drain(e, deadline_s > 0 ? deadline_s : 0);
    /* every engine request is done: let the responses go out (bounded) */
    double end = now_s() + 5.0;
    pthread_mutex_lock(&s->mu);
    while (s->n_live > 0 && now_s() < end) {
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
    omnic__media_pool_destroy(s->media); /* after the HTTP threads that wait on it */
    omnic__media_proc_deinit(&s->prep);
    omnic__chat_destroy(s->chat);
    omnic__engine_destroy(atomic_load(&s->engine));
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    omnic_free(s);
}
