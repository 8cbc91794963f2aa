/* Per-call working memory of the tokenizer pipeline. One scratch serves one thread at a time; the
 * tokenizer keeps a few in a pool so repeated calls reuse buffers and a warm BPE word cache. */
#ifndef OMNIC_TOKENIZER_SCRATCH_H
#define OMNIC_TOKENIZER_SCRATCH_H

#include "tokenizer/bpe.h"
#include "tokenizer/regex.h"

typedef struct omnic__tok_scratch {
    omnic__rx_scratch rx; /* PCRE2 match state */
    omnic__tsegs segs;    /* pattern segments */
    omnic__tbuf nb[2];    /* normalizer steps (ping-pong) */
    int32_t *u32;         /* [u32_cap] code points for Unicode normalization */
    size_t u32_cap;
    omnic__tbuf text;     /* encode: every text of one call (input, normalized, pre-tokenized) */
    omnic__tsplits sp[2]; /* encode: split lists (ping-pong between stages) */
    omnic__tbuf piece;    /* encode: one piece being normalized */
    omnic__bpe_work bpe;  /* BPE merge state and word cache */
} omnic__tok_scratch;

/* Creates the regex state; the rest grows on demand. */
omnic_status omnic__tok_scratch_init(omnic__tok_scratch *s, omnic_err *err);
/* Frees the buffers that grew past `keep` bytes (after an unusually large call), keeping the
 * small ones and the BPE word cache for reuse. */
void omnic__tok_scratch_trim(omnic__tok_scratch *s, size_t keep);
/* Releases everything; accepts a zeroed or partly initialized scratch. */
void omnic__tok_scratch_deinit(omnic__tok_scratch *s);

#endif
