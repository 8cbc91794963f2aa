/* `omnic serve`: an OpenAI-compatible HTTP server over the engine, on libmicrohttpd.
 *
 * Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models[/ID], GET /health,
 * GET /metrics, POST /tokenize, POST /detokenize (OPTIONS everywhere for CORS preflight).
 * Wire format and validation: server/openai.h.
 *
 * Threads. libmicrohttpd runs its own polling threads (epoll, a small pool) with
 * suspend/resume: no handler or content reader ever blocks. A request with a body is handed,
 * once read, to the request pool (core/job_pool.h: parse within the JSON budget, validate,
 * chat template, tokenize, submit to the engine; its images go to the media pool meanwhile)
 * and its connection is suspended until that preparation resumes it; a full pool queue is a
 * 429. So /health, /metrics and /v1/models answer at once whatever the workers do. Generation requests talk
 * to the engine through a channel (a mutex, per-choice text buffers and a reference count shared by the HTTP
 * side and each engine request): the engine's callback (scheduler thread) only appends to those buffers and
 * resumes the connection; it never waits on a client. A stream's content reader drains the buffers into SSE
 * chunks and suspends the connection when nothing is ready; a non-streamed request suspends in its handler
 * until every choice is done. A client that stops reading lets its backlog grow to OMNIC_MAX_CHOICE_TEXT,
 * then the request is cancelled.
 *
 * Lifetime (STYLE.md rule 20). Per-request state is created on the first handler call and
 * freed only in the MHD_OPTION_NOTIFY_COMPLETED callback; any termination other than a
 * completed response cancels the request's engine work (its slots free at the next step).
 * The channel outlives the HTTP side while engine requests still hold it (their DONE event
 * drops the last reference). Suspended connections are invisible to libmicrohttpd, so a
 * watchdog thread polls their sockets every 100 ms and cancels the work of clients that
 * reset or closed while preparing, queued, prefilling or waiting for a non-streamed answer
 * (a half-close is not a disconnect: see watchdog_main). It also shuts down connections
 * still sending their request past --read-timeout (slow-loris).
 *
 * Shutdown: omnic__server_shutdown answers 503 to new work, lets in-flight requests finish
 * within a deadline (then cancels them), waits for their responses to go out, and stops. */
#ifndef OMNIC_SERVER_SERVER_H
#define OMNIC_SERVER_SERVER_H

#include <stddef.h>

#include "core/budget.h"
#include "core/err.h"
#include "engine/engine.h"
#include "server/media.h"

typedef struct omnic__server omnic__server;

typedef struct omnic__server_opts {
    const char *model_dir;            /* required; borrowed for the server's life */
    const char *model_id;             /* the served model's name; NULL: the directory's base name */
    const char *host;                 /* address to bind; NULL: "127.0.0.1" */
    int port;                         /* 0: any free port (see omnic__server_port) */
    omnic__engine_opts engine;        /* slots, ctx, threads, queue, ... */
    const char *api_key;              /* NULL: no authentication; else "Authorization: Bearer KEY" */
    const char *const *cors_origins;  /* borrowed; an entry "*" allows any origin */
    const char *const *allowed_hosts; /* Host header names answered (borrowed; "*": any); none: the
                                       * listen address and localhost names, or any when listening
                                       * on every address */
    size_t n_allowed_hosts;
    size_t n_cors_origins;
    double request_timeout_s;   /* per request, from its headers to its last token (queue, upload,
                                 * media, template and generation); 0: none */
    double read_timeout_s;      /* from a connection's (or keep-alive request's) start until its
                                 * request body is complete; 0: OMNIC_SERVER_READ_TIMEOUT_S */
    size_t max_inflight_body;   /* request body bytes all connections may hold; 0:
                                 * OMNIC_SERVER_INFLIGHT_BODY_BYTES */
    bool cancel_on_half_close;  /* a peer's half-close cancels its request (default: it does not) */
    int request_workers;        /* threads parsing bodies, rendering templates, tokenizing; 0:
                                 * OMNIC_SERVER_REQUEST_WORKERS (queue: 8 per worker) */
    omnic__budget budget;       /* per-request budgets (core/budget.h); a zero field: the server
                                 * default (omnic__budget_server); body_bytes: see max_body_bytes */
    size_t max_body_bytes;      /* 0: OMNIC_MAX_BODY_BYTES; larger is clamped to it */
    size_t max_backlog_bytes;   /* text held per choice; 0: OMNIC_MAX_CHOICE_TEXT (also the cap) */
    int http_threads;           /* polling threads; 0: 4 */
    int max_connections;        /* open connections; 0: OMNIC_MAX_CONNECTIONS; always kept below
                                 * the process's file-descriptor limit (RLIMIT_NOFILE) */
    int max_connections_per_ip; /* 0: OMNIC_MAX_CONNECTIONS_PER_IP */
    double idle_timeout_s;      /* a connection with no traffic for this long is closed; 0: 30 s */
    const char *media_dir;      /* image parts may name files under it; NULL: none */
    int max_images;             /* images per request; 0: OMNIC_MAX_REQUEST_IMAGES (also the cap) */
    int64_t max_decode_pixels;  /* width x height of one decoded image; 0: OMNIC_SERVER_IMAGE_PIXELS */
    int64_t max_image_pixels;   /* > 0: a user limit on the processor's output (pixels) below the
                                 * checkpoint's own max_pixels; images resized by it are reported */
    int media_workers;          /* threads decoding and preprocessing images; 0: 2 (queue: 4 per worker) */
    omnic__remote_media
        remote; /* http(s) image URLs: allowed hosts (borrowed) and time limit; none: never fetched */
} omnic__server_opts;

/* Binds and starts answering (every route but /health gives 503 until the model is
 * loaded). Returns owned *out. Errors: E_INVALID (options: names them), E_IO (cannot
 * bind: names the address and the reason), E_NOMEM. */
omnic_status omnic__server_create(const omnic__server_opts *o, omnic__server **out, omnic_err *err);

/* The bound TCP port. */
int omnic__server_port(const omnic__server *s);

/* Loads the model and its engine (blocking; call once). /health answers 200 afterwards.
 * Errors: whatever omnic__engine_create returns (the message names the problem). */
omnic_status omnic__server_load(omnic__server *s, omnic_err *err);

/* Stops taking work (503), waits up to deadline_s for in-flight requests to finish, cancels
 * the rest, waits briefly for their responses to be sent, and stops listening. */
void omnic__server_shutdown(omnic__server *s, double deadline_s);

/* Shuts down (deadline 0) if needed and frees everything. NULL ok. */
void omnic__server_destroy(omnic__server *s);

#endif
