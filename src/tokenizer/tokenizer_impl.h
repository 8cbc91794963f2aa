/* The tokenizer object's layout, shared by tokenizer.c and detok_stream.c (internal). */
#ifndef OMNIC_TOKENIZER_TOKENIZER_IMPL_H
#define OMNIC_TOKENIZER_TOKENIZER_IMPL_H

#include <pthread.h>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/postprocessor.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

/* Flags of an id's entry. */
#define OMNIC__TOKID_PRESENT 1u
#define OMNIC__TOKID_SPECIAL 2u
#define OMNIC__TOKID_BYTE 4u /* "<0xNN>", a ByteFallback byte token */

typedef struct omnic__tokid {
    uint64_t off; /* token string in t->pool (NUL-terminated) */
    uint32_t len;
    uint32_t flags;
} omnic__tokid;

#define OMNIC__TOK_POOL 4 /* idle scratches kept for reuse */

/* Idle scratches for reuse across calls (behind a pointer: a const tokenizer still locks it). */
typedef struct omnic__tok_pool {
    pthread_mutex_t mu;
    omnic__tok_scratch *idle[OMNIC__TOK_POOL];
    int n_idle;
} omnic__tok_pool;

struct omnic__tokenizer {
    omnic__bpe *bpe;
    omnic__normalizer *norm;    /* NULL: none */
    omnic__pretokenizer *pre;   /* NULL: none */
    omnic__postprocessor *post; /* NULL: none */
    omnic__decoder *dec;        /* NULL: join with spaces */
    omnic__decoder_traits dtraits;
    omnic__added_vocab *added;
    omnic__tokid *ids; /* owned, [n_ids]: id -> token string (added tokens first, then the model) */
    size_t n_ids;
    omnic__tbuf pool;
    omnic__tokenizer_specials specials;
    omnic__tbuf special_names; /* strings behind specials.*_token */
    omnic__tok_pool *spool;    /* owned */
};

/* Takes a scratch from t's pool (or creates one); give it back with omnic__tok_scratch_put. */
omnic_status omnic__tok_scratch_get(const omnic__tokenizer *t, omnic__tok_scratch **out, omnic_err *err);
void omnic__tok_scratch_put(const omnic__tokenizer *t, omnic__tok_scratch *s);

/* Decodes ids without range checks into out (appends); ids must all be present. */
omnic_status omnic__tokenizer_decode_into(const omnic__tokenizer *t, const int32_t *ids, size_t n,
                                          bool skip_special, omnic__tbuf *out, omnic__tok_scratch *sc,
                                          omnic_err *err);

#endif
