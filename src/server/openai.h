/* The OpenAI wire format: parsing and validating request bodies (chat completions,
 * completions, tokenize, detokenize) into plain structs, OpenAI-shaped errors, and the
 * response bodies and SSE chunks. No HTTP and no engine here: the fuzz target
 * (tests/fuzz/fuzz_request.c) drives the parsers directly.
 *
 * What is accepted, and what is refused with a 400 naming the field:
 *   messages (chat; roles system, developer, user, assistant; content a string or an array
 *     of {"type":"text"} parts, joined with "\n"), prompt (completions: a string, an array of
 *     strings, an array of token ids or an array of such arrays), model, stream,
 *     stream_options.include_usage (and vLLM's continuous_usage_stats: usage so far in every
 *     chunk), max_tokens / max_completion_tokens, temperature [0, 2],
 *     top_p [0, 1] (0: greedy), seed, stop (a string or up to OMNIC_MAX_STOPS strings),
 *     presence_penalty / frequency_penalty [-2, 2], n (1..max_n), and the extensions
 *     top_k (-1 or 0: off), min_p [0, 1], repetition_penalty (0, 10], ignore_eos.
 *   Refused as not supported (yet): logprobs / top_logprobs, tools / tool_choice / functions /
 *     tool messages, response_format other than text, logit_bias, audio output, echo,
 *     suffix, best_of != n, video and file content parts (image and audio parts are accepted
 *     here; the server refuses them for a model without that input).
 *   Other fields (user, metadata, store, ...) are ignored, as OpenAI-compatible servers do.
 *   The sampling values a body leaves out are OpenAI's defaults here; the server then applies
 *   the checkpoint's generation_config.json to them (sampling_given; engine/gen_config.h). */
#ifndef OMNIC_SERVER_OPENAI_H
#define OMNIC_SERVER_OPENAI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/limits.h"
#include "engine/gen_config.h"
#include "engine/sampling.h"
#include "server/buf.h"

/* ---- errors ---- */

typedef struct omnic__api_error {
    int status;       /* HTTP status: 400, 401, 404, 405, 413, 429, 500, 501, 503, 504 */
    const char *type; /* static: "invalid_request_error", "rate_limit_error", "server_error", ... */
    const char *code; /* static or NULL (JSON null): "invalid_value", "model_not_found", ... */
    char param[96];   /* the offending field ("messages[2].role"), "" for null */
    char message[OMNIC_ERR_MSG_MAX];
} omnic__api_error;

/* Fills *e and returns the omnic_status matching status (400: E_INVALID, 404: E_NOT_FOUND,
 * 413/429: E_TOO_LARGE, 501: E_UNSUPPORTED, 503/504: E_CANCELLED, else E_INTERNAL).
 * type NULL: derived from status. param may be NULL. */
omnic_status omnic__api_fail(omnic__api_error *e, int status, const char *type, const char *code,
                             const char *param, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* {"error":{"message":...,"type":...,"param":...,"code":...}} */
bool omnic__api_error_body(omnic__buf *b, const omnic__api_error *e);

/* ---- requests ---- */

typedef enum omnic__api_kind { OMNIC_API_CHAT, OMNIC_API_COMPLETION } omnic__api_kind;

/* One completions prompt: text (borrowed from the body) or token ids (owned). */
typedef struct omnic__api_prompt {
    const char *text; /* NULL when ids are given */
    size_t len;
    int32_t *ids; /* owned [n_ids] */
    size_t n_ids;
} omnic__api_prompt;

typedef struct omnic__api_request {
    omnic__api_kind kind;
    const char *model;          /* borrowed from the body; NULL when absent */
    json_t *messages;           /* CHAT: owned, normalized [{"role", "content"[, "name"]}]: content a
                                 * string, or (with images) [{"type": "text", "text"} | {"type": "image"}] */
    json_t *images;             /* CHAT: owned array of the image parts in order, {"url": string,
                                 * "param": "messages[i].content[j]"}, or NULL */
    omnic__api_prompt *prompts; /* COMPLETION: owned [n_prompts] */
    size_t n_prompts;
    bool stream, include_usage, continuous_usage, ignore_eos;
    int64_t min_pixels, max_pixels; /* mm_processor_kwargs (Qwen2-VL image processors); 0: not given */
    int pan_and_scan;               /* mm_processor_kwargs.do_pan_and_scan (Gemma 3): 0 not given,
                                     * 1 false, 2 true; and its settings (0: not given) */
    int64_t pas_min_crop, pas_max_crops;
    double pas_min_ratio;
    int64_t max_tokens; /* -1: not given */
    int n;              /* choices per prompt */
    omnic__sampling_params sampling;
    unsigned sampling_given;            /* OMNIC_GEN_* bits of the values the body set (temperature, top_k,
                                         * top_p, min_p, repetition_penalty, max_tokens): generation_config.json
                                         * fills the others */
    bool has_seed;                      /* seed given (else the server draws one per choice) */
    const char *stops[OMNIC_MAX_STOPS]; /* borrowed from the body */
    size_t n_stops;
} omnic__api_request;

/* Validates body (a JSON object, borrowed; must outlive *out) as a request of kind.
 * max_n bounds n (the server's slot count). On failure *e names the field and the value or
 * the limit, and *out is left empty (deinit is still safe). Errors: E_INVALID (400),
 * E_UNSUPPORTED (a recognized feature this build lacks; still a 400), E_NOMEM (503). */
omnic_status omnic__api_parse(omnic__api_kind kind, const json_t *body, int max_n, omnic__api_request *out,
                              omnic__api_error *e);
/* The same for a model whose prompts carry their media as text: image_tag / audio_tag (a printf
 * format with one %zu, "<|image_%zu|>"; NULL: content parts the template writes) is written for
 * each image / audio part. omnic__api_parse: no image tag, Phi-4-multimodal's "<|audio_%zu|>". */
omnic_status omnic__api_parse_tagged(omnic__api_kind kind, const json_t *body, int max_n,
                                     const char *image_tag, const char *audio_tag, omnic__api_request *out,
                                     omnic__api_error *e);
/* Frees what the request owns; the struct is zeroed. */
void omnic__api_request_deinit(omnic__api_request *r);

/* POST /tokenize: {"content" | "prompt": string, "add_special" | "add_special_tokens": bool}
 * or {"messages": [...], "add_generation_prompt": bool} (chat template). */
typedef struct omnic__api_tokenize {
    const char *text; /* borrowed; NULL when messages are given */
    size_t len;
    json_t *messages;           /* owned, normalized as in chat requests */
    bool add_special;           /* default: true for text, false for messages */
    bool add_generation_prompt; /* default false */
} omnic__api_tokenize;
omnic_status omnic__api_parse_tokenize(const json_t *body, omnic__api_tokenize *out, omnic__api_error *e);
void omnic__api_tokenize_deinit(omnic__api_tokenize *t);

/* POST /detokenize: {"tokens": [ids], "skip_special_tokens": bool (default false)}. */
typedef struct omnic__api_detokenize {
    int32_t *ids; /* owned [n] */
    size_t n;
    bool skip_special;
} omnic__api_detokenize;
omnic_status omnic__api_parse_detokenize(const json_t *body, omnic__api_detokenize *out, omnic__api_error *e);
void omnic__api_detokenize_deinit(omnic__api_detokenize *d);

/* ---- responses ---- */

/* What every body and chunk of one response repeats. */
typedef struct omnic__api_meta {
    omnic__api_kind kind;
    const char *id;  /* "chatcmpl-..." / "cmpl-..." */
    int64_t created; /* Unix seconds */
    const char *model;
    const char *fingerprint; /* system_fingerprint; NULL: omitted */
    bool include_usage;      /* stream_options.include_usage: "usage": null in each chunk */
    bool continuous_usage;   /* stream_options.continuous_usage_stats: usage so far in each chunk */
    const char *warning;     /* NULL or "": none; else the non-streamed body's "warnings": [warning]
                              * (both kinds also carry it in a Warning header) */
    int64_t cached_tokens;   /* final usage: prompt tokens served from the prefix cache (written as
                              * usage.prompt_tokens_details.cached_tokens) */
} omnic__api_meta;

/* SSE events, each "data: {...}\n\n". prompt_tokens / completion_tokens: the choice's usage
 * so far, written only with continuous_usage. */
bool omnic__api_chunk_role(omnic__buf *b, const omnic__api_meta *m, int index,
                           int64_t prompt_tokens); /* chat */
bool omnic__api_chunk_text(omnic__buf *b, const omnic__api_meta *m, int index, const char *text, size_t len,
                           int64_t prompt_tokens, int64_t completion_tokens);
bool omnic__api_chunk_finish(omnic__buf *b, const omnic__api_meta *m, int index, const char *finish_reason,
                             int64_t prompt_tokens, int64_t completion_tokens);
bool omnic__api_chunk_usage(omnic__buf *b, const omnic__api_meta *m, int64_t prompt_tokens,
                            int64_t completion_tokens);
bool omnic__api_sse_error(omnic__buf *b, const omnic__api_error *e);
bool omnic__api_sse_done(omnic__buf *b);

/* One finished choice of a non-streamed response. */
typedef struct omnic__api_choice_out {
    const char *text; /* borrowed */
    size_t len;
    const char *finish_reason; /* "stop" / "length" */
} omnic__api_choice_out;

/* The whole chat.completion / text_completion object. */
bool omnic__api_body(omnic__buf *b, const omnic__api_meta *m, const omnic__api_choice_out *choices,
                     int n_choices, int64_t prompt_tokens, int64_t completion_tokens);

#endif
