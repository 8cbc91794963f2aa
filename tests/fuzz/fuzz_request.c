/* libFuzzer target for HTTP request bodies: JSON parsing plus the OpenAI request validation
 * of chat completions, completions, tokenize and detokenize (server/openai.h). Any input must
 * give OMNIC_OK or an OpenAI-shaped error (status 400..599, a message, valid JSON when
 * rendered), never a crash; the JSON string writer must turn arbitrary bytes into valid JSON. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/budget.h"
#include "io/json.h"
#include "server/openai.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A rendered body must parse back as JSON. */
static void check_json(const omnic__buf *b)
{
    if (b->oom) return;
    json_error_t je;
    json_t *j = json_loadb(b->p, b->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j) __builtin_trap();
    json_decref(j);
}

static void check_error(omnic_status rc, const omnic__api_error *e)
{
    if (rc == OMNIC_OK) return;
    if (e->status < 400 || e->status > 599 || !e->type || !e->message[0] ||
        memchr(e->message, '\0', sizeof e->message) == NULL)
        __builtin_trap();
    omnic__buf b = {0};
    omnic__api_error_body(&b, e);
    check_json(&b);
    omnic__buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the writer: arbitrary bytes -> a valid JSON string */
    omnic__buf b = {0};
    omnic__buf_json_str(&b, (const char *)data, size);
    check_json(&b);
    omnic__buf_free(&b);

    json_t *j = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    /* the server's parse: within its JSON heap budget */
    omnic__budget bud;
    omnic__budget_server(&bud);
    omnic__budget_heap_begin(bud.json_bytes);
    omnic_status prc = omnic__json_parse((const char *)data, size, "request body", &j, &err);
    omnic__budget_heap_end(NULL);
    if (prc != OMNIC_OK) return 0;
    omnic__api_error e;
    for (int k = 0; k < 2; k++) {
        omnic__api_request r;
        omnic_status rc = omnic__api_parse(k ? OMNIC_API_COMPLETION : OMNIC_API_CHAT, j, 4, &r, &e);
        check_error(rc, &e);
        if (rc == OMNIC_OK) {
            /* what the server relies on */
            if (r.n < 1 || r.n > 4 || r.n_stops > OMNIC_MAX_STOPS) __builtin_trap();
            if (k == 0 && (!json_is_array(r.messages) || json_array_size(r.messages) == 0)) __builtin_trap();
            if (k == 1 && (r.n_prompts == 0 || r.n_prompts > OMNIC_MAX_PROMPTS)) __builtin_trap();
            for (size_t i = 0; i < r.n_stops; i++)
                if (!r.stops[i][0] || strlen(r.stops[i]) > OMNIC_MAX_STOP_LEN) __builtin_trap();
            /* a response built from the request's own strings stays valid JSON */
            omnic__api_meta m = {.kind = r.kind, .id = "cmpl-x", .created = 1, .model = r.model ? r.model : "m",
                                 .fingerprint = "fp", .include_usage = r.include_usage};
            const char *t = r.n_stops ? r.stops[0] : "";
            omnic__api_choice_out c = {.text = t, .len = strlen(t), .finish_reason = "stop"};
            omnic__api_body(&b, &m, &c, 1, 1, 1);
            check_json(&b);
            omnic__buf_free(&b);
        }
        omnic__api_request_deinit(&r);
    }
    omnic__api_tokenize t;
    check_error(omnic__api_parse_tokenize(j, &t, &e), &e);
    omnic__api_tokenize_deinit(&t);
    omnic__api_detokenize d;
    check_error(omnic__api_parse_detokenize(j, &d, &e), &e);
    omnic__api_detokenize_deinit(&d);
    json_decref(j);
    return 0;
}
