/* Streaming detokenizer: token ids in, text out as soon as it is final. Each push returns only
 * complete UTF-8 (never part of a code point), and the concatenation of every push and the final
 * flush equals omnic__tokenizer_decode of all the ids.
 *
 * Like Hugging Face's DecodeStream it decodes a small window (the tokens of the previous output
 * as context, plus the new ones) and returns what the new tokens add, so decoders with
 * first-token rules (Metaspace, Strip) behave as in a full decode. Unlike it, text is held back
 * until no later token can change it: a run of <0xNN> byte tokens (ByteFallback decodes a run as a
 * whole, and one stray byte turns the whole run into U+FFFD) waits for the next non-byte token,
 * and a byte-level tail that is an incomplete UTF-8 sequence waits for the bytes that complete or
 * break it. A Strip decoder with stop > 0 (trailing characters) is not prefix-stable; its trailing
 * characters may differ from a full decode. */
#ifndef OMNIC_TOKENIZER_DETOK_STREAM_H
#define OMNIC_TOKENIZER_DETOK_STREAM_H

#include "tokenizer/tok_util.h"
#include "tokenizer/tokenizer.h"

typedef struct omnic__tok_scratch omnic__tok_scratch;

/* Caller-allocated; init before use, deinit after. */
typedef struct omnic__detok_stream {
    const omnic__tokenizer *tok; /* borrowed; must outlive the stream */
    bool skip_special;
    omnic__ivec win; /* ids: [0, ctx) already returned (context), [ctx, n) pending */
    size_t ctx;
    omnic__tbuf prefix; /* decode(win[0, ctx)) */
    omnic__tbuf dec;    /* decode of the window */
    omnic__tbuf out;    /* text handed back by the last push/flush */
    omnic__tok_scratch *sc;
} omnic__detok_stream;

/* Prepares s for tok (borrowed). skip_special as in omnic__tokenizer_decode. Errors: E_NOMEM. */
omnic_status omnic__detok_stream_init(omnic__detok_stream *s, const omnic__tokenizer *tok, bool skip_special,
                                      omnic_err *err);
/* Releases s's memory; accepts a zeroed stream. */
void omnic__detok_stream_deinit(omnic__detok_stream *s);

/* Adds one id. *text (borrowed, valid until the next call on s) gets the text that became final,
 * *len its bytes (often 0). Errors: E_INVALID (id out of range: names it and the vocabulary size;
 * the stream is unchanged), E_NOMEM. */
omnic_status omnic__detok_stream_push(omnic__detok_stream *s, int32_t id, const char **text, size_t *len,
                                      omnic_err *err);

/* Returns the text still held back and starts over (the next push is the start of a new text). */
omnic_status omnic__detok_stream_flush(omnic__detok_stream *s, const char **text, size_t *len,
                                       omnic_err *err);

#endif
