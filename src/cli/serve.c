/* `omnic serve`: options, model loading beside a listening server (/health is 503 until
 * the model is ready), and SIGINT/SIGTERM handling (stop taking work, drain, exit 0). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/limits.h"
#include "server/server.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: omnic serve -m DIR [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx C] [--threads T]\n"
        "                   [--api-key K | --api-key-file F] [--max-queue Q] [--request-timeout S]\n"
        "                   [--cors-origin O]... [--allowed-hosts H]... [--model-name NAME] [--chunk N]\n"
        "                   [--step-tokens N]\n"
        "                   [--kv f16|f32] [--backend cpu|ref] [--quant q8_0|q4_0] [--mmap]\n"
        "                   [--max-body BYTES] [--max-backlog BYTES]\n"
        "                   [--http-threads N] [--max-connections N] [--max-connections-per-ip N]\n"
        "                   [--idle-timeout S] [--shutdown-timeout S] [--media-dir DIR] [--max-images N]\n"
        "                   [--max-image-pixels N] [--max-decode-pixels N] [--media-workers N]\n"
        "                   [--allow-remote-media HOST]...\n"
        "                   [--allow-remote-media-port N]... [--media-proxy URL] [--remote-media-timeout S]\n"
        "                   [--generation-config auto|ignore] [--read-timeout S] [--max-inflight-body "
        "BYTES]\n"
        "                   [--request-workers N] [--max-json-memory BYTES] [--max-template-steps N]\n"
        "                   [--max-template-bytes BYTES] [--max-jpeg-memory BYTES] [--max-prompt-bytes "
        "BYTES]\n"
        "                   [--cancel-on-half-close] [--encoder-cache-mb N] [--prefix-cache-mb N]\n"
        "                   [--prefix-block N]\n"
        "  OpenAI-compatible HTTP server: POST /v1/chat/completions, POST /v1/completions,\n"
        "  GET /v1/models, GET /health, GET /metrics, POST /tokenize, POST /detokenize.\n"
        "  --parallel N       sequences decoded together (slots; default 4); n may go up to N\n"
        "  --ctx C            context per slot (default min(max_position_embeddings, 4096))\n"
        "  --quant q4_0       quantize linear weights at load (q8_0 or q4_0)\n"
        "  --mmap             unquantized text weights read in place from the file mapping (quicker load,\n"
        "                     pages shared between processes); default: copied onto huge pages at load,\n"
        "                     which decodes faster\n"
        "  --step-tokens N    mixed steps: while other slots decode, a prompt's rows ride in their decode\n"
        "                     call, as many as keep the step within 1.4x a decode step alone, at most N\n"
        "                     rows in all (default 64); alone, a prompt prefills a --chunk per call.\n"
        "                     Token prompts take the batch-invariant kernels (outputs never depend on the\n"
        "                     batch). 0: off (one --chunk of prefill per step, stalling the streams).\n"
        "  --max-queue Q      requests waiting for a slot before 429 (default 64)\n");
    fprintf(
        f,
        "  --request-timeout S  a request's wall time, from its headers to its last token: upload,\n"
        "                     queues, images, template and generation (default 600; 0: none); 504\n"
        "  --read-timeout S   a request's headers and body must arrive within S s of the connection's\n"
        "                     start or its previous request's end (default 30; slow clients are cut off)\n"
        "  --max-inflight-body BYTES  request bodies all connections may hold at once; more get 503\n"
        "                     (default 64 MiB)\n"
        "  --request-workers N  threads that parse bodies, render chat templates and tokenize (default\n"
        "                     2; at most 8 x N requests wait for them, more get 429)\n"
        "  --max-json-memory BYTES  memory one request body may take parsed (default 128 MiB)\n"
        "  --max-template-steps N  chat template loop iterations, macro calls and filter items per\n"
        "                     request (default 200000)\n"
        "  --max-template-bytes BYTES  bytes a chat template may build per request (default 256 MiB)\n"
        "  --max-jpeg-memory BYTES  a JPEG decoder's working memory (default 256 MiB)\n"
        "  --max-prompt-bytes BYTES  a rendered chat prompt, and the longest string its template\n"
        "                     builds (default 16 MiB)\n"
        "  --encoder-cache-mb N  projected rows of images kept for requests that repeat them: a\n"
        "                     repeated image skips its encoder (default 256; 0: off)\n"
        "  --prefix-cache-mb N  KV rows of earlier prompts kept for prompts that start the same way\n"
        "                     (system prompts, conversations, a leading image): reused in whole blocks\n"
        "                     (default 512; 0: off)\n"
        "  --prefix-block N   rows per prefix-cache block (default 32)\n"
        "  --cancel-on-half-close  treat a client that shuts its sending side as gone (for proxies that\n"
        "                     never half-close; default: a half-close is not a disconnect)\n"
        "  --api-key K        require 'Authorization: Bearer K' (all routes but /health)\n"
        "  --cors-origin O    allow browser requests from origin O ('*': any); repeatable. Requests\n"
        "                     naming another Origin (not this server's own) get 403\n"
        "  --allowed-hosts H  answer only requests whose Host header names H (repeatable; '*': any);\n"
        "                     default: the --host address and localhost names (any with --host\n"
        "                     0.0.0.0 or ::), so DNS rebinding cannot reach a local server\n"
        "  --port 0           any free port (printed on stderr)\n"
        "  --max-body BYTES   largest request body (default and cap: 8 MiB)\n"
        "  --max-backlog BYTES  generated text held for a client that stops reading (or for a\n"
        "                     non-streamed choice) before the request is cancelled (default and cap: 4 MiB)\n"
        "  --max-connections N  open connections (default 1024, kept below the file-descriptor limit)\n"
        "  --max-connections-per-ip N  open connections from one client address (default 64)\n"
        "  --idle-timeout S   close a connection without traffic for S s (default 30)\n"
        "  --shutdown-timeout S  on SIGINT/SIGTERM, let in-flight requests finish for S s (default 30)\n"
        "  --generation-config auto  generation_config.json's temperature, top_k, top_p, min_p,\n"
        "                     repetition_penalty, max_new_tokens (and do_sample false: greedy) are the\n"
        "                     defaults of a request that does not set them (vLLM's default); ignore:\n"
        "                     OpenAI's defaults (temperature 1, top_p 1)\n");
    fprintf(
        f, "  Image input (models that take it: /v1/models lists \"image\"): image_url parts carry data:\n"
           "  URLs (image/jpeg, image/png, image/webp), or file paths when --media-dir is given:\n"
           "  --media-dir DIR    image parts may name files inside DIR (nothing outside it); remote\n"
           "                     http(s) URLs are never fetched\n"
           "  --max-images N     images per request (default and cap: 16)\n"
           "  --max-image-pixels N  resize images to at most N pixels before the encoder, below the\n"
           "                     checkpoint's own max_pixels (default: the checkpoint's, as Hugging Face);\n"
           "                     responses whose image it resized say so in a Warning header\n"
           "  --max-decode-pixels N  width x height of one decoded image (default 40000000, cap 89478485)\n"
           "  --allow-remote-media HOST  fetch http(s) image URLs of HOST (exact name; repeatable; none by\n"
           "                     default); an address in a special-purpose range (loopback, private,\n"
           "                     link-local, NAT64 / 6to4 / IPv4-compatible, documentation, ...) is refused\n"
           "                     unless that address itself is listed; no redirects\n"
           "  --allow-remote-media-port N  fetch only from these ports (repeatable; default: any)\n"
           "  --media-proxy URL  fetch through this proxy (the proxy then owns the address check);\n"
           "                     proxies from the environment are never used\n"
           "  --remote-media-timeout S  per fetch (default 10)\n"
           "  --media-workers N  threads that fetch, decode and preprocess images (default 2; at most 4 x N\n"
           "                     requests wait for them, more get 429)\n");
}

static int read_key_file(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "omnic serve: --api-key-file %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t n = fread(out, 1, cap - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    out[n] = '\0';
    size_t line = strcspn(out, "\r\n"); /* the key is the first line */
    out[line] = '\0';
    while (line && (out[line - 1] == ' ' || out[line - 1] == '\t'))
        out[--line] = '\0';
    if (!line || line > OMNIC_MAX_API_KEY_BYTES || (more && line == n)) {
        fprintf(stderr, "omnic serve: --api-key-file %s: the key must be one line of 1..%d bytes\n", path,
                OMNIC_MAX_API_KEY_BYTES);
        return -1;
    }
    return 0;
}

static int parse_seconds(const char *opt, const char *v, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= 0 && x <= 1e9)) {
        fprintf(stderr, "omnic serve: %s needs seconds in [0, 1e9], got '%s'\n", opt, v);
        return -1;
    }
    *out = x;
    return 0;
}

typedef struct loader {
    omnic__server *srv;
    omnic_err err;
    omnic_status status;
    atomic_bool done;
} loader;

static void *load_main(void *arg)
{
    loader *ld = arg;
    ld->status = omnic__server_load(ld->srv, &ld->err);
    atomic_store(&ld->done, true);
    return NULL;
}

int omnic__cli_serve(int argc, char **argv)
{
    static char key_buf[OMNIC_MAX_API_KEY_BYTES + 2];
    static const char *cors[OMNIC_MAX_CORS_ORIGINS], *remote_hosts[OMNIC_MAX_REMOTE_MEDIA_HOSTS];
    static long remote_ports[OMNIC_MAX_REMOTE_MEDIA_HOSTS];
    static const char *allowed_hosts[OMNIC_MAX_ALLOWED_HOSTS];
    static loader ld; /* static: the loader thread may outlive this function on an interrupted load */
    omnic__server_opts o = {
        .host = "127.0.0.1",
        .port = 8080,
        .engine = {.model = {.kv_dtype = OMNIC_DTYPE_F16, .slots = 4, .step_tokens = OMNIC_STEP_TOKENS}}};
    o.request_timeout_s = OMNIC_SERVER_REQUEST_TIMEOUT_S;
    const char *key_file = NULL;
    double shutdown_s = 30;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int64_t x;
        int r;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
#define STR_OPT(s, l, dst)                                                                                   \
    if ((r = omnic__arg_str(argc, argv, &i, s, l, &(dst))) != 0) {                                           \
        if (r < 0) return 2;                                                                                 \
        continue;                                                                                            \
    }
#define INT_OPT(s, l, lo, hi, stmt)                                                                          \
    if ((r = omnic__arg_i64(argc, argv, &i, s, l, lo, hi, &x)) != 0) {                                       \
        if (r < 0) return 2;                                                                                 \
        stmt;                                                                                                \
        continue;                                                                                            \
    }
        STR_OPT("-m", "--model", o.model_dir)
        STR_OPT(NULL, "--model-name", o.model_id)
        STR_OPT(NULL, "--host", o.host)
        STR_OPT(NULL, "--api-key", o.api_key)
        STR_OPT(NULL, "--api-key-file", key_file)
        STR_OPT(NULL, "--backend", o.engine.model.backend)
        STR_OPT(NULL, "--media-dir", o.media_dir)
        INT_OPT(NULL, "--port", 0, 65535, o.port = (int)x)
        INT_OPT("-np", "--parallel", 1, 256, o.engine.model.slots = (int)x)
        INT_OPT("-c", "--ctx", 1, INT32_MAX, o.engine.model.ctx = x)
        INT_OPT("-t", "--threads", 1, 256, o.engine.model.threads = (int)x)
        INT_OPT(NULL, "--chunk", 1, INT32_MAX, o.engine.model.chunk = x)
        INT_OPT(NULL, "--step-tokens", 0, 1 << 16, o.engine.model.step_tokens = x)
        INT_OPT(NULL, "--max-queue", 1, 1 << 20, o.engine.max_queue = (int)x)
        INT_OPT(NULL, "--max-body", 1, (int64_t)OMNIC_MAX_BODY_BYTES, o.max_body_bytes = (size_t)x)
        INT_OPT(NULL, "--max-backlog", 1, (int64_t)OMNIC_MAX_CHOICE_TEXT, o.max_backlog_bytes = (size_t)x)
        INT_OPT(NULL, "--http-threads", 1, 64, o.http_threads = (int)x)
        INT_OPT(NULL, "--max-connections", 1, 1 << 20, o.max_connections = (int)x)
        INT_OPT(NULL, "--max-connections-per-ip", 1, 1 << 20, o.max_connections_per_ip = (int)x)
        INT_OPT(NULL, "--max-images", 1, OMNIC_MAX_REQUEST_IMAGES, o.max_images = (int)x)
        INT_OPT(NULL, "--media-workers", 1, 64, o.media_workers = (int)x)
        INT_OPT(NULL, "--max-image-pixels", 1, OMNIC_MAX_IMAGE_PIXELS, o.max_image_pixels = x)
        INT_OPT(NULL, "--max-decode-pixels", 1, OMNIC_MAX_IMAGE_PIXELS, o.max_decode_pixels = x)
        INT_OPT(NULL, "--max-inflight-body", 1, (int64_t)1 << 40, o.max_inflight_body = (size_t)x)
        INT_OPT(NULL, "--request-workers", 1, 256, o.request_workers = (int)x)
        INT_OPT(NULL, "--encoder-cache-mb", 0, 1 << 20, o.engine.encoder_cache_bytes = x ? x << 20 : -1)
        INT_OPT(NULL, "--prefix-cache-mb", 0, 1 << 20, o.engine.prefix_cache_bytes = x ? x << 20 : -1)
        INT_OPT(NULL, "--prefix-block", 1, 1 << 16, o.engine.prefix_block = x)
        INT_OPT(NULL, "--max-json-memory", 4096, (int64_t)OMNIC_MAX_JSON_BYTES,
                o.budget.json_bytes = (size_t)x)
        INT_OPT(NULL, "--max-template-steps", 1, OMNIC_MAX_TEMPLATE_ITERATIONS,
                o.budget.template_steps = (uint64_t)x)
        INT_OPT(NULL, "--max-template-bytes", 4096, (int64_t)OMNIC_MAX_TEMPLATE_WORK_BYTES,
                o.budget.template_work = (size_t)x)
        INT_OPT(NULL, "--max-jpeg-memory", 1 << 20, OMNIC_MAX_JPEG_DECODER_BYTES,
                o.budget.jpeg_decoder_bytes = x)
#undef STR_OPT
#undef INT_OPT
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--idle-timeout", &v)) != 0) {
            if (r < 0 || parse_seconds("--idle-timeout", v, &o.idle_timeout_s) < 0) return 2;
            continue;
        }
        if (!strcmp(a, "--cancel-on-half-close")) {
            o.cancel_on_half_close = true;
            continue;
        }
        if (!strcmp(a, "--mmap")) {
            o.engine.model.mmap_weights = true;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--read-timeout", &v)) != 0) {
            if (r < 0 || parse_seconds("--read-timeout", v, &o.read_timeout_s) < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--request-timeout", &v)) != 0) {
            if (r < 0 || parse_seconds("--request-timeout", v, &o.request_timeout_s) < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--shutdown-timeout", &v)) != 0) {
            if (r < 0 || parse_seconds("--shutdown-timeout", v, &shutdown_s) < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--allow-remote-media", &v)) != 0) {
            if (r < 0) return 2;
            if (o.remote.n_hosts == OMNIC_MAX_REMOTE_MEDIA_HOSTS) {
                fprintf(stderr, "omnic serve: at most %d --allow-remote-media hosts\n",
                        OMNIC_MAX_REMOTE_MEDIA_HOSTS);
                return 2;
            }
            remote_hosts[o.remote.n_hosts++] = v;
            continue;
        }
        if ((r = omnic__arg_i64(argc, argv, &i, NULL, "--allow-remote-media-port", 1, 65535, &x)) != 0) {
            if (r < 0) return 2;
            if (o.remote.n_ports == OMNIC_MAX_REMOTE_MEDIA_HOSTS) {
                fprintf(stderr, "omnic serve: at most %d --allow-remote-media-port values\n",
                        OMNIC_MAX_REMOTE_MEDIA_HOSTS);
                return 2;
            }
            remote_ports[o.remote.n_ports++] = (long)x;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--allowed-hosts", &v)) != 0) {
            if (r < 0) return 2;
            if (o.n_allowed_hosts == OMNIC_MAX_ALLOWED_HOSTS) {
                fprintf(stderr, "omnic serve: at most %d --allowed-hosts values\n", OMNIC_MAX_ALLOWED_HOSTS);
                return 2;
            }
            allowed_hosts[o.n_allowed_hosts++] = v;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--media-proxy", &o.remote.proxy)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--remote-media-timeout", &v)) != 0) {
            if (r < 0 || parse_seconds("--remote-media-timeout", v, &o.remote.timeout_s) < 0) return 2;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--cors-origin", &v)) != 0) {
            if (r < 0) return 2;
            if (o.n_cors_origins == OMNIC_MAX_CORS_ORIGINS) {
                fprintf(stderr, "omnic serve: at most %d --cors-origin values\n", OMNIC_MAX_CORS_ORIGINS);
                return 2;
            }
            cors[o.n_cors_origins++] = v;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--quant", &v)) != 0) {
            if (r < 0 || (strcmp(v, "q8_0") && strcmp(v, "q4_0") && strcmp(v, "none"))) {
                fprintf(stderr, "omnic serve: --quant must be q8_0, q4_0 or none\n");
                return 2;
            }
            o.engine.model.quant = v;
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--generation-config", &v)) != 0) {
            if (r < 0 || !omnic__gen_config_mode_parse(v, &o.engine.generation_config)) {
                fprintf(stderr, "omnic serve: --generation-config must be auto or ignore\n");
                return 2;
            }
            continue;
        }
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--kv", &v)) != 0) {
            if (r < 0 || (strcmp(v, "f16") && strcmp(v, "f32"))) {
                fprintf(stderr, "omnic serve: --kv must be f16 or f32\n");
                return 2;
            }
            o.engine.model.kv_dtype = strcmp(v, "f32") ? OMNIC_DTYPE_F16 : OMNIC_DTYPE_F32;
            continue;
        }
        fprintf(stderr, "omnic serve: unknown option '%s'\n", a);
        usage(stderr);
        return 2;
    }
    if (!o.model_dir) {
        fprintf(stderr, "omnic serve: -m DIR is required\n");
        usage(stderr);
        return 2;
    }
    if (o.api_key && key_file) {
        fprintf(stderr, "omnic serve: give --api-key or --api-key-file, not both\n");
        return 2;
    }
    if (key_file) {
        if (read_key_file(key_file, key_buf, sizeof key_buf) < 0) return 2;
        o.api_key = key_buf;
    }
    o.cors_origins = cors;
    o.remote.hosts = remote_hosts;
    o.remote.ports = remote_ports;
    o.allowed_hosts = allowed_hosts;

    /* SIGINT/SIGTERM are taken by sigtimedwait below; block them before any thread starts
     * so that every thread inherits the mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    omnic_err err;
    omnic_err_clear(&err);
    omnic__server *srv = NULL;
    if (omnic__server_create(&o, &srv, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic serve: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "omnic serve: listening on http://%s:%d (loading %s)\n", o.host, omnic__server_port(srv),
            o.model_dir);
    fflush(stderr);
    ld.srv = srv;
    atomic_init(&ld.done, false);
    pthread_t th;
    if (pthread_create(&th, NULL, load_main, &ld) != 0) {
        fprintf(stderr, "omnic serve: cannot start the loader thread\n");
        omnic__server_destroy(srv);
        return 1;
    }
    bool loaded = false;
    for (;;) {
        struct timespec to = {.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000};
        int sig = sigtimedwait(&sigs, NULL, &to);
        if (sig == SIGINT || sig == SIGTERM) {
            if (!loaded && !atomic_load(&ld.done)) {
                /* the load cannot be interrupted; the process exits around it */
                fprintf(stderr, "omnic serve: %s while loading the model; exiting\n",
                        sig == SIGINT ? "SIGINT" : "SIGTERM");
                return 1;
            }
            if (!loaded) pthread_join(th, NULL);
            fprintf(stderr, "omnic serve: %s: no new requests; draining in-flight ones (up to %g s)\n",
                    sig == SIGINT ? "SIGINT" : "SIGTERM", shutdown_s);
            fflush(stderr);
            break;
        }
        if (!loaded && atomic_load(&ld.done)) {
            pthread_join(th, NULL);
            if (ld.status != OMNIC_OK) {
                fprintf(stderr, "omnic serve: cannot load the model in %s: %s\n", o.model_dir, ld.err.msg);
                omnic__server_destroy(srv);
                return 1;
            }
            loaded = true;
            fprintf(stderr, "omnic serve: ready on http://%s:%d\n", o.host, omnic__server_port(srv));
            fflush(stderr);
        }
    }
    omnic__server_shutdown(srv, shutdown_s);
    omnic__server_destroy(srv);
    fprintf(stderr, "omnic serve: stopped\n");
    return 0;
}
