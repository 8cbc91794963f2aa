/* Resource budgets, in one place: what one request may consume at each stage it passes
 * through (body -> JSON -> image decode -> processor -> chat template -> tokenizer), and its
 * deadline. A stage reads its fields; a zero field means the library cap of core/limits.h.
 * omnic__budget_server gives the HTTP server's defaults, stricter than those caps
 * (docs/server.md lists them; each is an `omnic serve` flag). Going over a field is
 * E_TOO_LARGE naming the budget and the number; a passed deadline is E_TIMEOUT naming the
 * stage. The audio decoder (issue 14) adds its samples field when it lands. */
#ifndef OMNIC_CORE_BUDGET_H
#define OMNIC_CORE_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct omnic__budget {
    size_t body_bytes;          /* request body (the server's --max-body) */
    size_t json_bytes;          /* heap a parse of the body may allocate (--max-json-memory) */
    int64_t image_pixels;       /* width x height of one decoded image (--max-decode-pixels) */
    int64_t jpeg_decoder_bytes; /* one JPEG decoder's working memory (--max-jpeg-memory) */
    uint64_t template_steps;    /* loop iterations, macro calls, filter items (--max-template-steps) */
    size_t template_work;       /* bytes a render builds in all (--max-template-bytes) */
    size_t template_output;     /* rendered bytes, and the longest string built */
    double deadline;            /* omnic__now() seconds after which the request is over; 0: none */
} omnic__budget;

/* The HTTP server's defaults (every field set; deadline 0). */
void omnic__budget_server(omnic__budget *b);

/* OMNIC_OK while b's deadline has not passed (b may be NULL); else E_TIMEOUT "... during
 * <stage>". */
omnic_status omnic__budget_time(const omnic__budget *b, const char *stage, omnic_err *err);

/* Heap charging for parsers that allocate through a hook (jansson): between begin and end,
 * omnic__budget_heap_charge counts the calling thread's allocations against max (0: no
 * bound) and refuses the one that would pass it. end returns the bytes charged and whether a
 * charge was refused. Scopes do not nest. */
void omnic__budget_heap_begin(size_t max);
bool omnic__budget_heap_charge(size_t n);
size_t omnic__budget_heap_end(bool *over);

#endif
