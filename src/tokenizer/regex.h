/* Pattern matching for normalizers, pre-tokenizers and decoders: PCRE2 (UTF + UCP, JIT when
 * available) behind Hugging Face's Pattern::find_matches contract, and literal string patterns.
 * Oniguruma patterns (what tokenizer.json holds) are translated where PCRE2 differs: \w and \W
 * (Oniguruma: Letter | Mark | Decimal_Number | Connector_Punctuation), \h and \H (hex digits),
 * \uHHHH, and ^/$ as line anchors (Ruby syntax). \s, \p{..}, (?i:..) and lookarounds agree. */
#ifndef OMNIC_TOKENIZER_REGEX_H
#define OMNIC_TOKENIZER_REGEX_H

#include "tokenizer/tok_util.h"

typedef enum omnic__rx_dialect {
    OMNIC__RX_ONIG, /* a pattern from tokenizer.json (Oniguruma, Ruby syntax) */
    OMNIC__RX_PCRE, /* a pattern written for PCRE2 by omnic itself */
} omnic__rx_dialect;

typedef struct omnic__regex omnic__regex;

/* Compiles pat[0..len) (borrowed). `what` names the owner in messages ("pre_tokenizer.Split").
 * Returns owned *out (omnic__regex_free). Errors: E_INVALID (does not compile: names the pattern,
 * offset and PCRE2's message), E_TOO_LARGE (pattern over OMNIC_MAX_TOKENIZER_REGEX), E_NOMEM. */
omnic_status omnic__regex_compile(const char *pat, size_t len, omnic__rx_dialect d, const char *what,
                                  omnic__regex **out, omnic_err *err);
void omnic__regex_free(omnic__regex *re);

/* Per-thread matching state (match data, JIT stack). Zero-initialized is "not yet created";
 * omnic__rx_scratch_deinit accepts both. */
typedef struct omnic__rx_scratch {
    void *md;    /* pcre2_match_data * */
    void *mctx;  /* pcre2_match_context * */
    void *stack; /* pcre2_jit_stack * */
} omnic__rx_scratch;

omnic_status omnic__rx_scratch_init(omnic__rx_scratch *s, omnic_err *err);
void omnic__rx_scratch_deinit(omnic__rx_scratch *s);

/* Appends to segs the segmentation of text[0..len) (valid UTF-8) by the matches of re, iterated
 * as the onig crate's find_iter does (an empty match right after the previous match is skipped).
 * An empty text gives one empty non-match segment. Errors: E_INVALID (match failure such as a
 * match or JIT stack limit, naming PCRE2's message), E_NOMEM. */
omnic_status omnic__regex_segments(const omnic__regex *re, omnic__rx_scratch *s, const char *text, size_t len,
                                   omnic__tsegs *segs, omnic_err *err);

/* The same for a literal pattern pat[0..plen) (non-overlapping, leftmost). An empty pattern never
 * matches. */
omnic_status omnic__literal_segments(const char *pat, size_t plen, const char *text, size_t len,
                                     omnic__tsegs *segs, omnic_err *err);

#endif
