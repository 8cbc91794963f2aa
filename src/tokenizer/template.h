/* Chat templates: a Jinja2 interpreter for the Hugging Face chat templates (the subset
 * transformers' apply_chat_template runs: ImmutableSandboxedEnvironment with trim_blocks,
 * lstrip_blocks and loop controls, its tojson/raise_exception/strftime_now, and the
 * {% generation %} tag). Semantics follow Python jinja2; see docs in template_internal.h.
 *
 * A parsed template is immutable: several threads may render it at once. */
#ifndef OMNIC_TOKENIZER_TEMPLATE_H
#define OMNIC_TOKENIZER_TEMPLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/limits.h"

/* Bounds and knobs for parsing and rendering. A zero field means the OMNIC_MAX_TEMPLATE_*
 * default from core/limits.h. Hitting a limit gives OMNIC_E_TOO_LARGE naming it and the number. */
typedef struct omnic__template_opts {
    size_t max_bytes;  /* template source size (OMNIC_MAX_TEMPLATE_BYTES) */
    int max_nesting;   /* parser nesting of blocks and expressions (OMNIC_MAX_TEMPLATE_NESTING) */
    size_t max_output; /* rendered bytes; also the longest string built (OMNIC_MAX_TEMPLATE_OUTPUT) */
    size_t max_memory; /* bytes of values live during a render (OMNIC_MAX_TEMPLATE_MEMORY) */
    size_t max_work;   /* bytes allocated by a render in all (OMNIC_MAX_TEMPLATE_WORK_BYTES) */
    uint64_t
        max_iterations;  /* loop iterations + macro calls + filter items (OMNIC_MAX_TEMPLATE_ITERATIONS) */
    int max_call_depth;  /* nested macro/caller calls (OMNIC_MAX_TEMPLATE_CALL_DEPTH) */
    int64_t max_range;   /* items one range() may produce (OMNIC_MAX_TEMPLATE_RANGE) */
    int max_value_depth; /* nesting of values converted, printed, compared (OMNIC_MAX_TEMPLATE_VALUE_DEPTH) */
    int64_t now;         /* strftime_now's clock (Unix seconds, local time); 0: the current time */
    double deadline;     /* omnic__now() seconds after which a render stops with E_TIMEOUT; 0: none */
} omnic__template_opts;

typedef struct omnic__template omnic__template;

/* Parses len bytes of src (borrows; need not be NUL-terminated; must be UTF-8). opts may be NULL.
 * Returns owned *out (omnic__template_destroy); *out unchanged on failure.
 * Errors: E_INVALID (syntax: "line L, column C: ..."), E_UNSUPPORTED (include/import/extends ...),
 * E_TOO_LARGE (source over max_bytes, nesting over max_nesting), E_NOMEM. */
omnic_status omnic__template_parse(const char *src, size_t len, const omnic__template_opts *opts,
                                   omnic__template **out, omnic_err *err);

/* Frees a parsed template; NULL is a no-op. */
void omnic__template_destroy(omnic__template *t);

/* Renders t with the variables of the JSON object vars (borrowed; every key becomes a
 * template variable). opts may be NULL. Returns an owned NUL-terminated *out (omnic_free) of
 * *out_len bytes (out_len may be NULL); both unchanged on failure.
 * Errors: E_INVALID (runtime errors, "line L: ...", raise_exception's message), E_TOO_LARGE
 * (a limit: names it and the number), E_TIMEOUT (opts->deadline passed), E_NOMEM. */
omnic_status omnic__template_render(const omnic__template *t, const json_t *vars,
                                    const omnic__template_opts *opts, char **out, size_t *out_len,
                                    omnic_err *err);

/* The variables transformers' apply_chat_template passes, as a new JSON object (owned,
 * json_decref): the special tokens of tokenizer_config (bos_token, eos_token, unk_token,
 * sep_token, pad_token, cls_token, mask_token: a string or an {"content": ...} object;
 * additional_special_tokens), then tools = null and documents = null, then every key of
 * extra (may be NULL; an object), then messages (borrowed array, referenced) and
 * add_generation_prompt (true when add_generation_prompt, else extra's value, else false).
 * tokenizer_config may be NULL. Errors: E_INVALID (wrong types), E_NOMEM. */
omnic_status omnic__template_chat_vars(const json_t *tokenizer_config, const json_t *messages,
                                       const json_t *extra, bool add_generation_prompt, json_t **out,
                                       omnic_err *err);

#endif
