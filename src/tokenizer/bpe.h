/* The BPE model of tokenizer.json: vocabulary, merge ranks (an open-addressing map from an id
 * pair to rank and merged id), Hugging Face's merge_word (continuing_subword_prefix,
 * end_of_word_suffix, byte_fallback to <0xNN> tokens, unk_token with fuse_unk, ignore_merges) and
 * the lowest-rank-first merge loop, with a bounded per-thread word cache. */
#ifndef OMNIC_TOKENIZER_BPE_H
#define OMNIC_TOKENIZER_BPE_H

#include <jansson.h>

#include "tokenizer/tok_map.h"

typedef struct omnic__bpe omnic__bpe;

/* Per-thread work state for omnic__bpe_tokenize: merge arrays and the word cache. Zero-initialized
 * is valid and empty; release with omnic__bpe_work_deinit. A work state may serve several models
 * (the cache remembers which one filled it). */
typedef struct omnic__bpe_work {
    int32_t *sym_id; /* [sym_cap] symbol ids */
    int32_t *prev;   /* [sym_cap] linked list of live symbols */
    int32_t *next;   /* [sym_cap] */
    uint32_t *rank;  /* [sym_cap] rank of the pair starting at a symbol (UINT32_MAX: none) */
    int32_t *pnew;   /* [sym_cap] merged id of that pair */
    size_t sym_cap;
    uint64_t *heap; /* [heap_cap] (rank << 32 | pos) for long words */
    size_t heap_cap;
    omnic__tbuf word; /* one symbol's string with prefix/suffix */
    /* word cache */
    const omnic__bpe *cache_owner;
    struct omnic__bpe_cache_ent *cache; /* [OMNIC__BPE_CACHE_SLOTS] */
    size_t cache_n;
    omnic__tbuf cache_keys;
    omnic__ivec cache_ids;
} omnic__bpe_work;

void omnic__bpe_work_deinit(omnic__bpe_work *w);
/* Frees the merge arrays when they grew past `keep` bytes (the word cache stays). */
void omnic__bpe_work_trim(omnic__bpe_work *w, size_t keep);

/* Builds the model from the "model" object of tokenizer.json (borrowed). `path` names it in messages.
 * Errors: E_INVALID (missing or wrong-typed field: vocab, merges and their entries, flags; a merge
 * whose parts or result are not in the vocabulary; dropout other than null/0), E_TOO_LARGE (over
 * OMNIC_MAX_VOCAB / OMNIC_MAX_MERGES / OMNIC_MAX_TOKEN_BYTES), E_NOMEM. */
omnic_status omnic__bpe_load(const json_t *model, const char *path, omnic__bpe **out, omnic_err *err);
void omnic__bpe_free(omnic__bpe *m);

/* The vocabulary (token string -> id); Hugging Face's get_vocab_size is its entry count. */
const omnic__strmap *omnic__bpe_vocab(const omnic__bpe *m);

/* Tokenizes one pre-tokenized word w[0..n) (valid UTF-8, n > 0) and appends its ids to out.
 * Errors: E_INVALID (the unk_token is needed but is not in the vocabulary), E_NOMEM. */
omnic_status omnic__bpe_tokenize(const omnic__bpe *m, const char *w, size_t n, omnic__bpe_work *wk,
                                 omnic__ivec *out, omnic_err *err);

#endif
