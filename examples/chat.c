/* A chat completion through the public C API alone (omnic.h + libomnic.so):
 *
 *   example_chat MODEL_DIR "your question" [IMAGE_FILE] [MAX_TOKENS]
 *
 * loads the checkpoint, prints what it takes, sends one user message (the image, if given,
 * before the text), streams the reply to stdout as it is generated and prints the finish
 * reason and token counts to stderr. Greedy unless the checkpoint's generation_config.json
 * samples. Build: cc chat.c $(pkg-config --cflags --libs omnic) -lpthread */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omnic/omnic.h>

typedef struct reply {
    pthread_mutex_t mu;
    pthread_cond_t done_cv;
    int done;
    int failed;
} reply;

/* Runs on the model's scheduler thread: print, and wake main on the last event. */
static void on_event(void *user, const omnic_event *ev)
{
    reply *r = user;
    if (ev->kind == OMNIC_EVENT_TEXT) {
        fwrite(ev->text, 1, ev->len, stdout);
        fflush(stdout);
        return;
    }
    fprintf(stderr, "\nfinish: %s%s%s; prompt %lld tokens, completion %lld tokens\n", ev->finish,
            ev->error ? ": " : "", ev->error ? ev->error : "", (long long)ev->prompt_tokens,
            (long long)ev->completion_tokens);
    pthread_mutex_lock(&r->mu);
    r->done = 1;
    r->failed = strcmp(ev->finish, "stop") != 0 && strcmp(ev->finish, "length") != 0;
    pthread_cond_signal(&r->done_cv);
    pthread_mutex_unlock(&r->mu);
}

/* The whole file into a malloc'd buffer; NULL on failure. */
static void *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            char *nb = realloc(buf, cap = cap ? 2 * cap : 1 << 16);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

/* s as a JSON string literal into out[cap] (quotes, backslashes and control characters escaped). */
static int json_string(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    out[o++] = '"';
    for (; *s && o + 8 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            out[o++] = '\\', out[o++] = (char)c;
        else if (c < 0x20)
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
        else
            out[o++] = (char)c;
    }
    if (*s || o + 2 > cap) return -1;
    out[o++] = '"';
    out[o] = '\0';
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR QUESTION [IMAGE_FILE] [MAX_TOKENS]\n", argv[0]);
        return 2;
    }
    if (omnic_api_version() < OMNIC_API_VERSION) {
        fprintf(stderr, "libomnic API %d is older than this program's %d\n", omnic_api_version(),
                OMNIC_API_VERSION);
        return 1;
    }
    omnic_err err;
    omnic_err_clear(&err);
    omnic_model_params mp = omnic_model_params_default();
    mp.kv_f32 = 1;
    omnic_model *model = NULL;
    if (omnic_model_load(argv[1], &mp, &model, &err) != OMNIC_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], err.msg);
        return 1;
    }
    omnic_model_info info = omnic_model_get_info(model);
    fprintf(stderr, "model: %s, %lld layers, ctx %lld, inputs: text%s, identity %.16s...\n", info.family,
            (long long)info.layers, (long long)info.ctx, info.image_input ? " image" : "", info.identity);

    const char *image = argc > 3 && argv[3][0] ? argv[3] : NULL;
    omnic_media media = {0};
    void *bytes = NULL;
    if (image && !(bytes = read_file(image, &media.len))) {
        fprintf(stderr, "cannot read %s\n", image);
        omnic_model_free(model);
        return 1;
    }
    media.data = bytes;
    char text[4096], messages[8192];
    if (json_string(argv[2], text, sizeof text) != 0) {
        fprintf(stderr, "the question is too long\n");
        free(bytes);
        omnic_model_free(model);
        return 2;
    }
    snprintf(messages, sizeof messages, "[{\"role\": \"user\", \"content\": [%s{\"type\": \"text\", \"text\": %s}]}]",
             image ? "{\"type\": \"image\"}, " : "", text);

    reply r = {.mu = PTHREAD_MUTEX_INITIALIZER, .done_cv = PTHREAD_COND_INITIALIZER};
    omnic_request req = {.api_version = OMNIC_API_VERSION,
                         .messages_json = messages,
                         .images = image ? &media : NULL,
                         .n_images = image ? 1 : 0,
                         .max_tokens = argc > 4 ? atoll(argv[4]) : 32,
                         .on_event = on_event,
                         .user = &r};
    uint64_t id;
    omnic_status s = omnic_submit(model, &req, &id, &err);
    free(bytes); /* the request copied what it needs */
    if (s != OMNIC_OK) {
        fprintf(stderr, "submit: %s: %s\n", omnic_status_name(s), err.msg);
        omnic_model_free(model);
        return 1;
    }
    pthread_mutex_lock(&r.mu);
    while (!r.done)
        pthread_cond_wait(&r.done_cv, &r.mu);
    pthread_mutex_unlock(&r.mu);
    omnic_model_free(model);
    return r.failed;
}
