/* Stop-string matching on streamed text: text that might be the start of a stop string
 * is held back until it is known not to be, so streamed output never shows any part of
 * a stop string. Feed complete UTF-8 text (the streaming detokenizer's output). */
#ifndef OMNIC_ENGINE_STOP_H
#define OMNIC_ENGINE_STOP_H

#include "core/err.h"

typedef struct omnic__stop_matcher {
    char **stops; /* owned copies */
    size_t *stop_len;
    size_t n_stops;
    char *buf; /* owned: text held back (a possible stop-string prefix) */
    size_t held, cap;
    char *out; /* owned: the text handed out by the last push */
    size_t out_cap;
    bool stopped;
} omnic__stop_matcher;

/* Copies the stop strings (each 1..OMNIC_MAX_STOP_LEN bytes, at most OMNIC_MAX_STOPS). */
omnic_status omnic__stop_init(omnic__stop_matcher *m, const char *const *stops, size_t n, omnic_err *err);
void omnic__stop_deinit(omnic__stop_matcher *m);

/* Adds text; *emit / *emit_len (borrowed, valid until the next call) is what may be shown
 * now. Returns true when a stop string matched: *emit ends right before it and every
 * later push emits nothing. */
bool omnic__stop_push(omnic__stop_matcher *m, const char *text, size_t len, const char **emit,
                      size_t *emit_len, omnic_err *err);
/* End of generation without a stop: everything still held (borrowed until the next call). */
void omnic__stop_flush(omnic__stop_matcher *m, const char **emit, size_t *emit_len);

#endif
